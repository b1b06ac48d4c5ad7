//! `read_graph`: the whole graph, in pages for large graphs.

use crate::graph::args::{DEFAULT_READ_LIMIT, ReadGraphArgs};
use crate::graph::output::ToolOutput;
use crate::graph::snapshot::GraphSnapshot;

/// Returns `{entities, relations}` in graph order.
///
/// A graph of up to `limit` (default [`DEFAULT_READ_LIMIT`] = 500) entities
/// comes back whole, exactly as the reference. A larger one comes back one
/// page at a time (see [`GraphSnapshot::page`] for which relations go on
/// which page), with a second text item saying how to get the next page;
/// the first text item and `structuredContent` keep the reference's shape.
pub fn read_graph(snapshot: &GraphSnapshot, args: &ReadGraphArgs) -> ToolOutput {
    let offset = usize::try_from(args.offset.unwrap_or(0)).unwrap_or(usize::MAX);
    let limit = usize::try_from(args.limit.unwrap_or(DEFAULT_READ_LIMIT)).unwrap_or(usize::MAX);
    let page = snapshot.page(offset, limit);
    let mut output = page.view.to_output();
    let end = offset.saturating_add(page.view.entities.len());
    if end < page.total {
        output.content.push(format!(
            "Partial graph: entities {} to {end} of {} (limit {limit}), with their relations. \
             Call read_graph with {{\"offset\": {end}}} for the next page, or use search_nodes / open_nodes.",
            offset + 1,
            page.total
        ));
    }
    output
}

/// Returns the text of the `memory://knowledge-graph` resource: the whole
/// graph as pretty JSON, unpaged, as the reference serves it.
pub fn read_resource(snapshot: &GraphSnapshot) -> String {
    snapshot.page(0, usize::MAX).view.to_output().content.into_iter().next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::graph::tools::testing::Harness;

    fn setup(n: usize) -> Harness {
        let mut h = Harness::new();
        let entities: Vec<_> =
            (0..n).map(|i| json!({"name": format!("e{i}"), "entityType": "t", "observations": []})).collect();
        h.call("create_entities", json!({ "entities": entities }));
        h
    }

    #[test]
    fn small_graph_reads_like_the_reference() {
        let mut h = setup(2);
        h.call(
            "create_relations",
            json!({"relations": [
                {"from": "e0", "to": "e1", "relationType": "r"},
                {"from": "Nobody", "to": "Nowhere", "relationType": "dangling"}
            ]}),
        );
        let out = h.call("read_graph", json!({}));
        assert_eq!(out.content.len(), 1);
        assert_eq!(
            out.text(),
            "{\n  \"entities\": [\n    {\n      \"name\": \"e0\",\n      \"entityType\": \"t\",\n      \"observations\": []\n    },\n    {\n      \"name\": \"e1\",\n      \"entityType\": \"t\",\n      \"observations\": []\n    }\n  ],\n  \"relations\": [\n    {\n      \"from\": \"e0\",\n      \"to\": \"e1\",\n      \"relationType\": \"r\"\n    },\n    {\n      \"from\": \"Nobody\",\n      \"to\": \"Nowhere\",\n      \"relationType\": \"dangling\"\n    }\n  ]\n}"
        );
        assert_eq!(
            out.structured_content.as_ref().map(super::super::super::output::pretty).as_deref(),
            Some(out.text())
        );
        let empty = Harness::new().call("read_graph", json!({}));
        assert_eq!(empty.text(), "{\n  \"entities\": [],\n  \"relations\": []\n}");
    }

    #[test]
    fn pages_cover_everything_once() {
        let mut h = setup(7);
        h.call(
            "create_relations",
            json!({"relations": [
                {"from": "e0", "to": "e6", "relationType": "r"},
                {"from": "Ghost", "to": "e3", "relationType": "in"},
                {"from": "Nobody", "to": "Nowhere", "relationType": "dangling"}
            ]}),
        );
        let mut names = Vec::new();
        let mut relations = Vec::new();
        let mut offset = 0;
        loop {
            let out = h.call("read_graph", json!({"offset": offset, "limit": 3}));
            let value = out.structured_content.clone().unwrap_or_default();
            let page: Vec<String> = value["entities"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| e["name"].as_str().map(str::to_owned))
                .collect();
            relations.extend(
                value["relations"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|r| r["relationType"].as_str().map(str::to_owned)),
            );
            offset += page.len();
            names.extend(page);
            if out.content.len() == 1 {
                break;
            }
            assert!(out.content[1].contains(&format!("{{\"offset\": {offset}}}")), "{}", out.content[1]);
        }
        assert_eq!(names, (0..7).map(|i| format!("e{i}")).collect::<Vec<_>>());
        relations.sort();
        assert_eq!(relations, vec!["dangling", "in", "r"]);
    }

    #[test]
    fn default_cap_and_bad_paging_arguments() {
        let mut h = setup(501);
        let out = h.call("read_graph", json!({}));
        assert_eq!(
            out.structured_content.as_ref().and_then(|v| v["entities"].as_array()).map(Vec::len),
            Some(500)
        );
        assert_eq!(out.content.len(), 2);
        let out = h.call("read_graph", json!({"offset": 500}));
        assert_eq!(
            out.structured_content.as_ref().and_then(|v| v["entities"].as_array()).map(Vec::len),
            Some(1)
        );
        let out = h.call("read_graph", json!({"limit": "10"}));
        assert_eq!(
            out.text(),
            "MCP error -32602: Input validation error: Invalid arguments for tool read_graph: Invalid input: expected number, received string at limit"
        );
        let out = h.call("read_graph", json!({"offset": -1}));
        assert!(out.is_error);
        let out = h.call_raw("read_graph", None);
        assert!(!out.is_error);
    }
}
