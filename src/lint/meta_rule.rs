//! Lint rules for `meta.json` (existence, JSON validity, `name`, `description`, `extends`).

use std::fs;
use std::path::Path;

use serde_json::Value;

use super::message::LintMessage;
use super::packfs::{PackFs, Probe, ReadOutcome};
use super::pytext::py_strip;
use super::texts;

const META: &str = "meta.json";

/// Check `meta.json` and append findings in the reference order.
///
/// `packs_root` is where a parent named by `extends` must exist as a directory (the
/// reference checks the pack's sibling directory only).
pub(crate) fn lint_meta(fs: &PackFs, packs_root: &Path, msgs: &mut Vec<LintMessage>) {
    match fs.probe(Path::new(META)) {
        Probe::File => {}
        Probe::Outside => {
            msgs.push(LintMessage::error(META, texts::outside_symlink_not_read()));
            return;
        }
        Probe::Error(e) => {
            msgs.push(LintMessage::error(META, texts::cannot_access(&e)));
            return;
        }
        Probe::Missing | Probe::Dir | Probe::Other => {
            msgs.push(LintMessage::error(META, texts::meta_missing()));
            return;
        }
    }

    let text = match fs.read_text(Path::new(META)) {
        ReadOutcome::Text(decoded) if decoded.valid_utf8 => decoded.text,
        ReadOutcome::Text(_) => {
            msgs.push(LintMessage::error(META, texts::meta_not_utf8()));
            return;
        }
        ReadOutcome::Outside => {
            msgs.push(LintMessage::error(META, texts::outside_symlink_not_read()));
            return;
        }
        // The reference catches OSError together with JSONDecodeError here.
        ReadOutcome::Failed(_) => {
            msgs.push(LintMessage::error(META, texts::meta_not_json()));
            return;
        }
    };

    let Some(meta) = parse_python_json(&text) else {
        msgs.push(LintMessage::error(META, texts::meta_not_json()));
        return;
    };
    let Value::Object(map) = meta else {
        msgs.push(LintMessage::error(META, texts::meta_not_object()));
        return;
    };

    if !map.get("name").is_some_and(py_truthy) {
        msgs.push(LintMessage::error(META, texts::meta_no_name()));
    } else if let Some(problem) = crate::pack::meta_name_problem(&map) {
        msgs.push(LintMessage::error(META, texts::meta_name_ignored(&problem)));
    }
    if !map.get("description").is_some_and(py_truthy) {
        msgs.push(LintMessage::error(META, texts::meta_no_description()));
    }
    if let Some(Value::String(parent)) = map.get("extends")
        && !py_strip(parent).is_empty()
    {
        let parent_is_dir = fs::metadata(packs_root.join(parent)).is_ok_and(|m| m.is_dir());
        if !parent_is_dir {
            msgs.push(LintMessage::error(META, texts::extends_missing(parent)));
        }
    }
}

/// Python truthiness of a decoded JSON value (`None`, `False`, `0`, `""`, `[]`, `{}` are falsy).
pub(crate) fn py_truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Parse JSON the way Python's `json.loads` accepts it: standard JSON plus the bare constants
/// `NaN`, `Infinity` and `-Infinity` (which are truthy numbers; they are read as `1` here, since
/// only validity and truthiness matter to the linter).
pub(crate) fn parse_python_json(text: &str) -> Option<Value> {
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        return Some(value);
    }
    let replaced = replace_python_constants(text)?;
    serde_json::from_str::<Value>(&replaced).ok()
}

/// Replace `NaN` / `Infinity` / `-Infinity` outside strings by `1`; `None` if there is none.
fn replace_python_constants(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    let mut changed = false;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            rest = &rest[c.len_utf8()..];
            continue;
        }
        if let Some(token) = ["-Infinity", "Infinity", "NaN"].into_iter().find(|t| rest.starts_with(t)) {
            out.push('1');
            rest = &rest[token.len()..];
            changed = true;
            continue;
        }
        if c == '"' {
            in_string = true;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truthiness_matches_python() {
        for (json, truthy) in [
            ("null", false),
            ("false", false),
            ("0", false),
            ("0.0", false),
            ("\"\"", false),
            ("[]", false),
            ("{}", false),
            ("\" \"", true),
            ("1", true),
            ("-0.5", true),
            ("[0]", true),
            ("true", true),
        ] {
            let v: Value = serde_json::from_str(json).expect("test json");
            assert_eq!(py_truthy(&v), truthy, "{json}");
        }
    }

    #[test]
    fn python_constants_are_accepted() {
        let v = parse_python_json("{\"name\": NaN, \"d\": \"NaN\", \"x\": -Infinity}");
        let v = v.expect("python accepts NaN");
        assert_eq!(v["d"], Value::String("NaN".into()));
        assert!(py_truthy(&v["name"]));
        assert!(parse_python_json("{\"name\": nan}").is_none());
    }
}
