//! The nine tool definitions of `tools/list` and the knowledge-graph
//! resource, as JSON values identical to the reference's, except for the two
//! optional paging properties engram adds to `read_graph`'s input schema.

use serde_json::{Map, Value};

use super::args::{
    AddObservationsArgs, CreateEntitiesArgs, CreateRelationsArgs, DeleteEntitiesArgs, DeleteObservationsArgs,
    DeleteRelationsArgs, OpenNodesArgs, ReadGraphArgs, SearchNodesArgs, ToolArgs, entity_shape,
    relation_shape,
};
use super::schema::{Shape, array, field};

/// The URI of the knowledge-graph resource.
pub const GRAPH_RESOURCE_URI: &str = "memory://knowledge-graph";

/// Tool annotation hints: read-only, destructive, idempotent.
#[derive(Clone, Copy)]
struct Hints(bool, bool, bool);

fn output_graph() -> Shape {
    Shape::Object(vec![
        field("entities", array(entity_shape()), None),
        field("relations", array(relation_shape()), None),
    ])
}

fn output_message() -> Shape {
    Shape::Object(vec![field("success", Shape::Boolean, None), field("message", Shape::String, None)])
}

fn definition<A: ToolArgs>(title: &str, description: &str, output: &Shape, hints: Hints) -> Value {
    let mut map = Map::new();
    map.insert("name".into(), A::TOOL.into());
    map.insert("title".into(), title.into());
    map.insert("description".into(), description.into());
    map.insert("inputSchema".into(), A::shape().to_root_schema(false));
    let mut execution = Map::new();
    execution.insert("taskSupport".into(), "forbidden".into());
    map.insert("execution".into(), Value::Object(execution));
    map.insert("outputSchema".into(), output.to_root_schema(true));
    let mut annotations = Map::new();
    annotations.insert("readOnlyHint".into(), hints.0.into());
    annotations.insert("destructiveHint".into(), hints.1.into());
    annotations.insert("idempotentHint".into(), hints.2.into());
    annotations.insert("openWorldHint".into(), false.into());
    map.insert("annotations".into(), Value::Object(annotations));
    Value::Object(map)
}

/// Returns the nine tool definitions in the reference's order, each with
/// `name`, `title`, `description`, `inputSchema`, `execution`,
/// `outputSchema` and `annotations`, as the reference's `tools/list` shows
/// them. The only difference: `read_graph`'s input schema lists the optional
/// `offset` and `limit` properties (none are required, so old clients are
/// unaffected).
pub fn tool_definitions() -> Vec<Value> {
    let write = Hints(false, false, false);
    let delete = || Hints(false, true, true);
    let read = || Hints(true, false, true);
    vec![
        definition::<CreateEntitiesArgs>(
            "Create Entities",
            "Create multiple new entities in the knowledge graph",
            &Shape::Object(vec![field("entities", array(entity_shape()), None)]),
            write,
        ),
        definition::<CreateRelationsArgs>(
            "Create Relations",
            "Create multiple new relations between entities in the knowledge graph. Relations should be in active voice",
            &Shape::Object(vec![field("relations", array(relation_shape()), None)]),
            write,
        ),
        definition::<AddObservationsArgs>(
            "Add Observations",
            "Add new observations to existing entities in the knowledge graph",
            &Shape::Object(vec![field(
                "results",
                array(Shape::Object(vec![
                    field("entityName", Shape::String, None),
                    field("addedObservations", array(Shape::String), None),
                ])),
                None,
            )]),
            write,
        ),
        definition::<DeleteEntitiesArgs>(
            "Delete Entities",
            "Delete multiple entities and their associated relations from the knowledge graph",
            &output_message(),
            delete(),
        ),
        definition::<DeleteObservationsArgs>(
            "Delete Observations",
            "Delete specific observations from entities in the knowledge graph",
            &output_message(),
            delete(),
        ),
        definition::<DeleteRelationsArgs>(
            "Delete Relations",
            "Delete multiple relations from the knowledge graph",
            &output_message(),
            delete(),
        ),
        definition::<ReadGraphArgs>("Read Graph", "Read the entire knowledge graph", &output_graph(), read()),
        definition::<SearchNodesArgs>(
            "Search Nodes",
            "Search for nodes in the knowledge graph based on a query",
            &output_graph(),
            read(),
        ),
        definition::<OpenNodesArgs>(
            "Open Nodes",
            "Open specific nodes in the knowledge graph by their names",
            &output_graph(),
            read(),
        ),
    ]
}

/// Returns the definition of the `memory://knowledge-graph` resource, as
/// the reference's `resources/list` shows it.
pub fn resource_definition() -> Value {
    let mut map = Map::new();
    map.insert("name".into(), "knowledge-graph".into());
    map.insert("title".into(), "Knowledge Graph".into());
    map.insert("uri".into(), GRAPH_RESOURCE_URI.into());
    map.insert("description".into(), "The full knowledge graph with all entities and relations".into());
    map.insert("mimeType".into(), "application/json".into());
    Value::Object(map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::call::TOOL_NAMES;

    #[test]
    fn nine_tools_in_reference_order_with_reference_keys() {
        let tools = tool_definitions();
        let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
        assert_eq!(names, TOOL_NAMES);
        for tool in &tools {
            let keys: Vec<&str> =
                tool.as_object().map(|m| m.keys().map(String::as_str).collect()).unwrap_or_default();
            assert_eq!(
                keys,
                ["name", "title", "description", "inputSchema", "execution", "outputSchema", "annotations"]
            );
        }
    }

    #[test]
    fn delete_entities_definition_is_exact() {
        // Written from the reference's documented `tools/list`; compared as
        // text so that key order counts too.
        let expected = r#"{"name":"delete_entities","title":"Delete Entities","description":"Delete multiple entities and their associated relations from the knowledge graph","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"entityNames":{"type":"array","items":{"type":"string"},"description":"An array of entity names to delete"}},"required":["entityNames"]},"execution":{"taskSupport":"forbidden"},"outputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"success":{"type":"boolean"},"message":{"type":"string"}},"required":["success","message"],"additionalProperties":false},"annotations":{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":true,"openWorldHint":false}}"#;
        let tools = tool_definitions();
        assert_eq!(serde_json::to_string(&tools[3]).unwrap_or_default(), expected);
    }

    #[test]
    fn create_entities_schemas_are_exact() {
        let entity = r#"{"type":"object","properties":{"name":{"type":"string","description":"The name of the entity"},"entityType":{"type":"string","description":"The type of the entity"},"observations":{"type":"array","items":{"type":"string"},"description":"An array of observation contents associated with the entity"}},"required":["name","entityType","observations"]"#;
        let input = format!(
            r#"{{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{{"entities":{{"type":"array","items":{entity}}}}}}},"required":["entities"]}}"#
        );
        let output = format!(
            r#"{{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{{"entities":{{"type":"array","items":{entity},"additionalProperties":false}}}}}},"required":["entities"],"additionalProperties":false}}"#
        );
        let tools = tool_definitions();
        assert_eq!(serde_json::to_string(&tools[0]["inputSchema"]).unwrap_or_default(), input);
        assert_eq!(serde_json::to_string(&tools[0]["outputSchema"]).unwrap_or_default(), output);
        let annotations =
            r#"{"readOnlyHint":false,"destructiveHint":false,"idempotentHint":false,"openWorldHint":false}"#;
        assert_eq!(serde_json::to_string(&tools[0]["annotations"]).unwrap_or_default(), annotations);
    }

    #[test]
    fn read_graph_adds_only_optional_paging() {
        let tools = tool_definitions();
        let input = &tools[6]["inputSchema"];
        assert_eq!(input["type"], "object");
        assert!(input.get("required").is_none());
        let keys: Vec<&str> = input["properties"]
            .as_object()
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        assert_eq!(keys, ["offset", "limit"]);
        assert_eq!(tools[6]["annotations"]["readOnlyHint"], true);
        assert_eq!(resource_definition()["uri"], GRAPH_RESOURCE_URI);
    }
}
