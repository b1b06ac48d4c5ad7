//! Tool results in the reference's exact shape: the text content, the
//! `structuredContent` value and the error flag.

use serde_json::{Map, Value};

/// The result of one tool call, ready for the MCP layer.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// Text content items. The first is exactly the reference's text; a
    /// second one appears only when engram adds a note (a truncated
    /// `read_graph` page).
    pub content: Vec<String>,
    /// The `structuredContent`, `None` on errors (as the reference).
    pub structured_content: Option<Value>,
    /// True for an error result (`isError: true`).
    pub is_error: bool,
}

impl ToolOutput {
    /// Returns an error result with `message` as its only text.
    pub fn error(message: impl Into<String>) -> Self {
        Self { content: vec![message.into()], structured_content: None, is_error: true }
    }

    /// Returns the first text item (the reference's whole text).
    pub fn text(&self) -> &str {
        self.content.first().map_or("", String::as_str)
    }

    /// Returns the result as an MCP `CallToolResult` JSON object:
    /// `{"content":[{"type":"text","text":…}], "structuredContent":…}` plus
    /// `"isError": true` on errors.
    pub fn to_call_tool_result(&self) -> Value {
        let mut map = Map::new();
        let content = self
            .content
            .iter()
            .map(|text| {
                let mut item = Map::new();
                item.insert("type".into(), "text".into());
                item.insert("text".into(), text.clone().into());
                Value::Object(item)
            })
            .collect();
        map.insert("content".into(), Value::Array(content));
        if let Some(structured) = &self.structured_content {
            map.insert("structuredContent".into(), structured.clone());
        }
        if self.is_error {
            map.insert("isError".into(), true.into());
        }
        Value::Object(map)
    }

    /// Returns a create/add result: the text is the bare pretty array, the
    /// structured content wraps it as `{key: array}`.
    pub(crate) fn list(key: &str, items: Vec<Value>) -> Self {
        let array = Value::Array(items);
        let text = pretty(&array);
        let mut map = Map::new();
        map.insert(key.into(), array);
        Self { content: vec![text], structured_content: Some(Value::Object(map)), is_error: false }
    }

    /// Returns a read/search/open result: text and structured content are
    /// both `{"entities": […], "relations": […]}`.
    pub(crate) fn graph(entities: Vec<Value>, relations: Vec<Value>) -> Self {
        let mut map = Map::new();
        map.insert("entities".into(), Value::Array(entities));
        map.insert("relations".into(), Value::Array(relations));
        let value = Value::Object(map);
        Self { content: vec![pretty(&value)], structured_content: Some(value), is_error: false }
    }

    /// Returns a delete result: the fixed sentence and
    /// `{"success": true, "message": sentence}`.
    pub(crate) fn message(sentence: &str) -> Self {
        let mut map = Map::new();
        map.insert("success".into(), true.into());
        map.insert("message".into(), sentence.into());
        Self {
            content: vec![sentence.to_owned()],
            structured_content: Some(Value::Object(map)),
            is_error: false,
        }
    }
}

/// Returns `value` as JS `JSON.stringify(value, null, 2)` writes it: two
/// spaces of indentation, `": "` after keys, `[]`/`{}` for empty containers,
/// non-ASCII characters unescaped.
pub fn pretty(value: &Value) -> String {
    // Serialising a `Value` to a `String` cannot fail.
    serde_json::to_string_pretty(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pretty_matches_js_stringify() {
        let value = json!({"a": [], "b": {}, "c": ["张伟", "tab\there", "q\"", "\u{1}"], "d": [{"x": true}]});
        let expected = "{\n  \"a\": [],\n  \"b\": {},\n  \"c\": [\n    \"张伟\",\n    \"tab\\there\",\n    \"q\\\"\",\n    \"\\u0001\"\n  ],\n  \"d\": [\n    {\n      \"x\": true\n    }\n  ]\n}";
        assert_eq!(pretty(&value), expected);
        assert_eq!(pretty(&json!([])), "[]");
    }

    #[test]
    fn call_tool_result_shape() {
        let out = ToolOutput::message("Relations deleted successfully");
        assert_eq!(
            out.to_call_tool_result(),
            json!({"content":[{"type":"text","text":"Relations deleted successfully"}],
                   "structuredContent":{"success":true,"message":"Relations deleted successfully"}})
        );
        assert_eq!(
            ToolOutput::error("x").to_call_tool_result(),
            json!({"content":[{"type":"text","text":"x"}],"isError":true})
        );
    }
}
