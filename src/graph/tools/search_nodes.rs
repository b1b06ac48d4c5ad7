//! `search_nodes`: case-insensitive substring search.

use crate::graph::args::SearchNodesArgs;
use crate::graph::output::ToolOutput;
use crate::graph::snapshot::GraphSnapshot;

/// Returns the entities whose name, type or an observation contains the
/// query case-insensitively, and the relations with either endpoint among
/// them, as the reference (see [`GraphSnapshot::search`]).
pub fn search_nodes(snapshot: &GraphSnapshot, args: &SearchNodesArgs) -> ToolOutput {
    snapshot.search(&args.query).to_output()
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::graph::tools::testing::Harness;

    fn setup() -> Harness {
        let mut h = Harness::new();
        h.call(
            "create_entities",
            json!({"entities": [
                {"name": "张伟", "entityType": "person", "observations": ["在上海工作", "喜欢喝咖啡"]},
                {"name": "Café Owner", "entityType": "person", "observations": ["drinks green tea"]},
                {"name": "Mimi 🐱", "entityType": "PET", "observations": ["ΟΔΥΣΣΕΥΣ fan"]},
                {"name": "Bob", "entityType": "person", "observations": []}
            ]}),
        );
        h.call(
            "create_relations",
            json!({"relations": [
                {"from": "Bob", "to": "张伟", "relationType": "works_at"},
                {"from": "Bob", "to": "Ghost", "relationType": "knows"},
                {"from": "Nobody", "to": "Nowhere", "relationType": "x"}
            ]}),
        );
        h
    }

    fn names(out: &crate::graph::output::ToolOutput) -> Vec<String> {
        let value = out.structured_content.clone().unwrap_or(Value::Null);
        value["entities"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e["name"].as_str().map(str::to_owned))
            .collect()
    }

    fn relations(out: &crate::graph::output::ToolOutput) -> usize {
        out.structured_content.as_ref().and_then(|v| v["relations"].as_array()).map_or(0, Vec::len)
    }

    #[test]
    fn substring_case_insensitive_over_all_fields() {
        let mut h = setup();
        assert_eq!(names(&h.call("search_nodes", json!({"query": "咖啡"}))), vec!["张伟"]);
        assert_eq!(names(&h.call("search_nodes", json!({"query": "张"}))), vec!["张伟"]);
        assert_eq!(names(&h.call("search_nodes", json!({"query": "CAFÉ"}))), vec!["Café Owner"]);
        assert_eq!(names(&h.call("search_nodes", json!({"query": "green tea"}))), vec!["Café Owner"]);
        assert!(names(&h.call("search_nodes", json!({"query": "tea green"}))).is_empty());
        assert_eq!(names(&h.call("search_nodes", json!({"query": "pet"}))), vec!["Mimi 🐱"]);
        assert_eq!(names(&h.call("search_nodes", json!({"query": "🐱"}))), vec!["Mimi 🐱"]);
        assert_eq!(names(&h.call("search_nodes", json!({"query": "οδυσσευς"}))), vec!["Mimi 🐱"]);
        assert!(names(&h.call("search_nodes", json!({"query": "works_at"}))).is_empty());
        assert!(names(&h.call("search_nodes", json!({"query": "Ghost"}))).is_empty());
        assert!(names(&h.call("search_nodes", json!({"query": "person\u{0}在"}))).is_empty());
    }

    #[test]
    fn relations_with_either_endpoint_in_result() {
        let mut h = setup();
        let out = h.call("search_nodes", json!({"query": "张伟"}));
        assert_eq!(relations(&out), 1);
        let out = h.call("search_nodes", json!({"query": "bob"}));
        assert_eq!(relations(&out), 2);
        let all = h.call("search_nodes", json!({"query": ""}));
        assert_eq!(names(&all).len(), 4);
        assert_eq!(relations(&all), 2, "Nobody->Nowhere is never returned");
        assert_eq!(
            h.call("search_nodes", json!({"query": "nothing matches"})).text(),
            "{\n  \"entities\": [],\n  \"relations\": []\n}"
        );
        let out = h.call("search_nodes", json!({"query": 5}));
        assert_eq!(
            out.text(),
            "MCP error -32602: Input validation error: Invalid arguments for tool search_nodes: Invalid input: expected string, received number at query"
        );
    }
}
