//! `open_nodes`: entities by exact name.

use crate::graph::args::OpenNodesArgs;
use crate::graph::output::ToolOutput;
use crate::graph::snapshot::GraphSnapshot;

/// Returns the entities with exactly these names (unknown names skipped)
/// and the relations with either endpoint among those found, as the
/// reference (see [`GraphSnapshot::open`]).
pub fn open_nodes(snapshot: &GraphSnapshot, args: &OpenNodesArgs) -> ToolOutput {
    snapshot.open(&args.names).to_output()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::graph::tools::testing::Harness;

    #[test]
    fn opens_exact_names_in_graph_order() {
        let mut h = Harness::new();
        h.call(
            "create_entities",
            json!({"entities": [
                {"name": "张伟", "entityType": "person", "observations": []},
                {"name": "Bob", "entityType": "person", "observations": ["x"]},
                {"name": "Carol", "entityType": "person", "observations": []}
            ]}),
        );
        h.call(
            "create_relations",
            json!({"relations": [
                {"from": "Bob", "to": "Ghost", "relationType": "knows"},
                {"from": "Carol", "to": "Bob", "relationType": "knows"},
                {"from": "Carol", "to": "张伟", "relationType": "knows"}
            ]}),
        );
        let out = h.call("open_nodes", json!({"names": ["Bob", "张伟", "bob", "Ghost", "Bob"]}));
        assert_eq!(
            out.structured_content,
            Some(json!({
                "entities": [
                    {"name": "张伟", "entityType": "person", "observations": []},
                    {"name": "Bob", "entityType": "person", "observations": ["x"]}
                ],
                "relations": [
                    {"from": "Bob", "to": "Ghost", "relationType": "knows"},
                    {"from": "Carol", "to": "Bob", "relationType": "knows"},
                    {"from": "Carol", "to": "张伟", "relationType": "knows"}
                ]
            }))
        );
        let ghost = h.call("open_nodes", json!({"names": ["Ghost"]}));
        assert_eq!(ghost.text(), "{\n  \"entities\": [],\n  \"relations\": []\n}");
        let out = h.call("open_nodes", json!({"names": null}));
        assert_eq!(
            out.text(),
            "MCP error -32602: Input validation error: Invalid arguments for tool open_nodes: Invalid input: expected array, received null at names"
        );
    }
}
