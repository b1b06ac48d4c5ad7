//! Finishing the template's `meta.json` after `init` copied the template.

use serde_json::Value;

use super::error::LintError;
use super::meta_rule::py_truthy;
use crate::jsonfmt::dumps_indent2;

/// Set `name` and (when empty) `description` in a template `meta.json`, like the reference
/// `init`: `meta["name"] = name`; if `description` is missing or falsy it becomes
/// `"<name> 专家记忆包"`. Key order is kept (new keys go last). The result is
/// `json.dumps(meta, ensure_ascii=False, indent=2) + "\n"`.
///
/// The name itself is not validated here (the caller checks it before copying).
///
/// # Errors
/// [`LintError::TemplateMetaJson`] if the text is not JSON, [`LintError::TemplateMetaNotObject`]
/// if it is not a JSON object.
pub fn finalize_template_meta(meta_json: &str, name: &str) -> Result<String, LintError> {
    finalize_template_meta_with(meta_json, name, &format!("{name} 专家记忆包"))
}

/// [`finalize_template_meta`] with another default `description` (the English template's).
///
/// # Errors
/// As [`finalize_template_meta`].
pub fn finalize_template_meta_with(
    meta_json: &str,
    name: &str,
    description: &str,
) -> Result<String, LintError> {
    let value: Value = serde_json::from_str(meta_json)?;
    let Value::Object(mut meta) = value else {
        return Err(LintError::TemplateMetaNotObject);
    };
    meta.insert("name".to_string(), Value::String(name.to_string()));
    if !meta.get("description").is_some_and(py_truthy) {
        meta.insert("description".to_string(), Value::String(description.to_owned()));
    }
    let mut out = dumps_indent2(&Value::Object(meta));
    out.push('\n');
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_name_and_default_description_keeping_order() {
        let template = r#"{"name": "", "author": "", "version": "1.0.0", "description": "", "tags": [], "knowledge_count": 0, "examples_count": 0}"#;
        let out = finalize_template_meta(template, "my-pack").expect("valid template");
        assert_eq!(
            out,
            "{\n  \"name\": \"my-pack\",\n  \"author\": \"\",\n  \"version\": \"1.0.0\",\n  \"description\": \"my-pack 专家记忆包\",\n  \"tags\": [],\n  \"knowledge_count\": 0,\n  \"examples_count\": 0\n}\n"
        );
    }

    #[test]
    fn keeps_existing_description_and_appends_missing_keys() {
        let out =
            finalize_template_meta(r#"{"description": "已有", "x": [1]}"#, "p").expect("valid template");
        assert_eq!(out, "{\n  \"description\": \"已有\",\n  \"x\": [\n    1\n  ],\n  \"name\": \"p\"\n}\n");
        let out = finalize_template_meta("{}", "p").expect("valid template");
        assert_eq!(out, "{\n  \"name\": \"p\",\n  \"description\": \"p 专家记忆包\"\n}\n");
    }

    #[test]
    fn rejects_bad_templates() {
        assert!(matches!(finalize_template_meta("{", "p"), Err(LintError::TemplateMetaJson(_))));
        assert!(matches!(finalize_template_meta("[]", "p"), Err(LintError::TemplateMetaNotObject)));
    }
}
