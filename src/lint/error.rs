//! Errors of the lint module's fallible functions.

/// Errors returned by [`super::finalize_template_meta`]. Linting itself never fails: problems
/// become [`super::LintMessage`]s.
#[derive(Debug, thiserror::Error)]
pub enum LintError {
    /// The template `meta.json` is not valid JSON.
    #[error("模板 meta.json 无法解析 / template meta.json is not valid JSON: {0}")]
    TemplateMetaJson(#[from] serde_json::Error),
    /// The template `meta.json` is valid JSON but not an object.
    #[error("模板 meta.json 顶层不是 JSON 对象 / template meta.json is not a JSON object")]
    TemplateMetaNotObject,
}
