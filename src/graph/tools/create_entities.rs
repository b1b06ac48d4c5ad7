//! `create_entities`: add entities whose names are new.

use serde_json::Map;

use super::{creation_seq, dedup_keep_order};
use crate::graph::args::CreateEntitiesArgs;
use crate::graph::error::GraphError;
use crate::graph::files::{GraphChanges, GraphFiles};
use crate::graph::key::FileKind;
use crate::graph::model::Entity;
use crate::graph::output::ToolOutput;
use crate::graph::record::EntityFile;
use crate::graph::tx::{Slot, Tx};

/// Creates the entities whose names do not exist yet, one file each.
///
/// As the reference: an existing name is skipped entirely (its type and
/// observations are not merged); the result lists the entities added.
/// Fixed: a name repeated in one call is created once (the first copy), and
/// repeated observations inside a new entity are stored once. Extra fields
/// in the arguments are dropped, as the reference's schema strips them.
/// Touches one file per new entity.
pub fn create_entities(
    files: &dyn GraphFiles,
    args: CreateEntitiesArgs,
    now_ms: u64,
) -> Result<(ToolOutput, GraphChanges), GraphError> {
    let mut tx = Tx::new(files);
    let mut added = Vec::new();
    for (index, entity) in args.entities.into_iter().enumerate() {
        // A repeat of a name created earlier in this call is `Found` here,
        // because the transaction reads its own writes.
        let Slot::Vacant { path } = tx.find::<EntityFile>(FileKind::Entity, &entity.name)? else {
            continue;
        };
        let entity = Entity {
            name: entity.name,
            entity_type: entity.entity_type,
            observations: dedup_keep_order(entity.observations),
            extra: Map::new(),
        };
        added.push(entity.to_reference_json());
        let file = EntityFile { entity, seq: Some(creation_seq(now_ms, index)), duplicate_lines: Vec::new() };
        tx.put(&path, &file);
    }
    Ok((ToolOutput::list("entities", added), tx.into_changes()?))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::graph::tools::testing::Harness;

    #[test]
    fn creates_chinese_and_emoji_entities() {
        let mut h = Harness::new();
        let out = h.call(
            "create_entities",
            json!({"entities": [
                {"name": "张伟", "entityType": "person", "observations": ["在上海工作", "喜欢喝咖啡"]},
                {"name": "🐱 Mimi", "entityType": "pet", "observations": []},
                {"name": "../../etc/passwd", "entityType": "path", "observations": ["x"]}
            ]}),
        );
        assert!(!out.is_error);
        assert_eq!(
            out.text(),
            "[\n  {\n    \"name\": \"张伟\",\n    \"entityType\": \"person\",\n    \"observations\": [\n      \"在上海工作\",\n      \"喜欢喝咖啡\"\n    ]\n  },\n  {\n    \"name\": \"🐱 Mimi\",\n    \"entityType\": \"pet\",\n    \"observations\": []\n  },\n  {\n    \"name\": \"../../etc/passwd\",\n    \"entityType\": \"path\",\n    \"observations\": [\n      \"x\"\n    ]\n  }\n]"
        );
        assert_eq!(
            out.structured_content.as_ref().and_then(|v| v["entities"].as_array()).map(Vec::len),
            Some(3)
        );
        assert_eq!(h.files.files.len(), 3);
        assert!(h.files.files.keys().all(|p| p.starts_with("graph/entities/") && !p.contains("..")));
        assert_eq!(h.snapshot.entity("张伟").map(|e| e.observations.len()), Some(2));
    }

    #[test]
    fn skips_existing_and_dedupes_within_call() {
        let mut h = Harness::new();
        h.call(
            "create_entities",
            json!({"entities": [{"name": "Alice", "entityType": "person", "observations": ["a"]}]}),
        );
        let out = h.call(
            "create_entities",
            json!({"entities": [
                {"name": "Alice", "entityType": "robot", "observations": ["b"]},
                {"name": "Bob", "entityType": "person", "observations": ["x", "x", "y"]},
                {"name": "Bob", "entityType": "other", "observations": ["z"]},
                {"name": "alice", "entityType": "person", "observations": []}
            ]}),
        );
        assert_eq!(
            out.structured_content,
            Some(json!({"entities": [
                {"name": "Bob", "entityType": "person", "observations": ["x", "y"]},
                {"name": "alice", "entityType": "person", "observations": []}
            ]}))
        );
        assert_eq!(h.snapshot.entity("Alice").map(|e| e.entity_type.as_str()), Some("person"));
        assert_eq!(h.snapshot.entity_count(), 3);
    }

    #[test]
    fn nothing_new_means_no_changes() {
        let mut h = Harness::new();
        h.call(
            "create_entities",
            json!({"entities": [{"name": "A", "entityType": "t", "observations": []}]}),
        );
        let (out, changes) = h.write(
            "create_entities",
            json!({"entities": [{"name": "A", "entityType": "t", "observations": []}]}),
        );
        assert_eq!(out.text(), "[]");
        assert_eq!(out.structured_content, Some(json!({"entities": []})));
        assert!(changes.is_empty());
        let (out, changes) = h.write("create_entities", json!({"entities": []}));
        assert_eq!(out.text(), "[]");
        assert!(changes.is_empty());
    }

    #[test]
    fn validation_errors_match_reference() {
        let mut h = Harness::new();
        let out = h.call("create_entities", json!({"entities": [{"name": "A", "entityType": "t"}]}));
        assert!(out.is_error);
        assert_eq!(out.structured_content, None);
        assert_eq!(
            out.text(),
            "MCP error -32602: Input validation error: Invalid arguments for tool create_entities: Invalid input: expected array, received undefined at entities[0].observations"
        );
        let out = h.call("create_entities", json!({"entities": "A"}));
        assert_eq!(
            out.text(),
            "MCP error -32602: Input validation error: Invalid arguments for tool create_entities: Invalid input: expected array, received string at entities"
        );
        assert!(h.files.files.is_empty());
    }

    #[test]
    fn extra_argument_fields_are_stripped() {
        let mut h = Harness::new();
        let out = h.call(
            "create_entities",
            json!({"entities": [
            {"name": "A", "entityType": "t", "observations": [], "extraField": 1, "type": "entity"}
        ], "bogus": true}),
        );
        assert_eq!(
            out.structured_content,
            Some(json!({"entities": [{"name": "A", "entityType": "t", "observations": []}]}))
        );
        assert!(h.files.files.values().all(|c| !c.contains("extraField")));
    }
}
