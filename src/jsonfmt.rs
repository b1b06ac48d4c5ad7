//! JSON rendering that matches what the reference servers print.

use serde_json::Value;

/// Python's `json.dumps(v, ensure_ascii=False, indent=2)` (also JavaScript's
/// `JSON.stringify(v, null, 2)` for the values we print): two-space indent,
/// `": "` after keys, `[]`/`{}` for empty containers, non-ASCII kept raw.
pub fn python_pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_python_indent_two() {
        let v: Value = serde_json::from_str(r#"{"name":"健身","tags":[],"n":{"a":[1,2]}}"#).expect("json");
        assert_eq!(
            python_pretty(&v),
            "{\n  \"name\": \"健身\",\n  \"tags\": [],\n  \"n\": {\n    \"a\": [\n      1,\n      2\n    ]\n  }\n}"
        );
    }
}
