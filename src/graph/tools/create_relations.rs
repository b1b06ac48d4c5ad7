//! `create_relations`: add relations that do not exist yet.

use serde_json::Map;

use super::{creation_seq, incoming};
use crate::graph::args::CreateRelationsArgs;
use crate::graph::error::GraphError;
use crate::graph::files::{GraphChanges, GraphFiles};
use crate::graph::key::FileKind;
use crate::graph::output::ToolOutput;
use crate::graph::record::{RelationEntry, RelationsFile};
use crate::graph::tx::{Slot, Tx};

/// Creates the relations whose exact `(from, to, relationType)` does not
/// exist yet, in the relation file of `from`, and indexes them under `to`.
///
/// As the reference: endpoints need not be entities, self-relations are
/// allowed, comparison is exact. Fixed: a relation repeated in one call is
/// stored once. Touches at most two files per new relation.
pub fn create_relations(
    files: &dyn GraphFiles,
    args: CreateRelationsArgs,
    now_ms: u64,
) -> Result<(ToolOutput, GraphChanges), GraphError> {
    let mut tx = Tx::new(files);
    let mut added = Vec::new();
    for (index, relation) in args.relations.into_iter().enumerate() {
        let (path, mut file) = match tx.find::<RelationsFile>(FileKind::Relations, &relation.from)? {
            Slot::Found { path, record, .. } => (path, record),
            Slot::Vacant { path } => (path, RelationsFile::new(&relation.from)),
        };
        let Err(at) = file.position(&relation.to, &relation.relation_type) else {
            continue;
        };
        file.relations.insert(
            at,
            RelationEntry {
                to: relation.to.clone(),
                relation_type: relation.relation_type.clone(),
                extra: Map::new(),
                seq: Some(creation_seq(now_ms, index)),
                dup_seqs: Vec::new(),
            },
        );
        tx.put(&path, &file);
        incoming::add(&mut tx, &relation.to, &relation.from)?;
        added.push(relation.to_reference_json());
    }
    Ok((ToolOutput::list("relations", added), tx.into_changes()?))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::graph::tools::testing::Harness;

    #[test]
    fn creates_skips_and_dedupes() {
        let mut h = Harness::new();
        let out = h.call(
            "create_relations",
            json!({"relations": [
                {"from": "张伟", "to": "Alice_Chen", "relationType": "认识"},
                {"from": "张伟", "to": "Alice_Chen", "relationType": "认识"},
                {"from": "Bob", "to": "Ghost", "relationType": "WORKS_AT"},
                {"from": "Bob", "to": "Bob", "relationType": "self"}
            ]}),
        );
        assert_eq!(
            out.text(),
            "[\n  {\n    \"from\": \"张伟\",\n    \"to\": \"Alice_Chen\",\n    \"relationType\": \"认识\"\n  },\n  {\n    \"from\": \"Bob\",\n    \"to\": \"Ghost\",\n    \"relationType\": \"WORKS_AT\"\n  },\n  {\n    \"from\": \"Bob\",\n    \"to\": \"Bob\",\n    \"relationType\": \"self\"\n  }\n]"
        );
        assert_eq!(
            out.structured_content.as_ref().map(|v| v["relations"].as_array().map(Vec::len)),
            Some(Some(3))
        );
        let out = h.call(
            "create_relations",
            json!({"relations": [
                {"from": "Bob", "to": "Ghost", "relationType": "WORKS_AT"},
                {"from": "Bob", "to": "Ghost", "relationType": "works_at"}
            ]}),
        );
        assert_eq!(
            out.structured_content,
            Some(json!({"relations": [{"from": "Bob", "to": "Ghost", "relationType": "works_at"}]}))
        );
        assert_eq!(h.snapshot.relation_count(), 4);
        assert!(h.snapshot.problems().is_empty(), "{:?}", h.snapshot.problems());
    }

    #[test]
    fn a_write_touches_a_bounded_number_of_files() {
        let mut h = Harness::new();
        for i in 0..50 {
            h.call(
                "create_relations",
                json!({"relations": [{"from": format!("n{i}"), "to": "hub", "relationType": "r"}]}),
            );
        }
        let (_, changes) = h.write(
            "create_relations",
            json!({"relations": [{"from": "n1", "to": "n2", "relationType": "r"}]}),
        );
        assert_eq!(changes.writes.len(), 2);
        assert!(changes.removes.is_empty());
    }

    #[test]
    fn validation_error() {
        let mut h = Harness::new();
        let out = h.call("create_relations", json!({"relations": [{"from": "a", "to": 3}]}));
        assert_eq!(
            out.text(),
            "MCP error -32602: Input validation error: Invalid arguments for tool create_relations: Invalid input: expected string, received number at relations[0].to\nInvalid input: expected string, received undefined at relations[0].relationType"
        );
    }
}
