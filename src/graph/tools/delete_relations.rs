//! `delete_relations`: remove exact relations.

use super::incoming;
use crate::graph::args::DeleteRelationsArgs;
use crate::graph::error::GraphError;
use crate::graph::files::{GraphChanges, GraphFiles};
use crate::graph::key::FileKind;
use crate::graph::output::ToolOutput;
use crate::graph::record::RelationsFile;
use crate::graph::tx::{Slot, Tx};

/// The reference's fixed result sentence.
const DONE: &str = "Relations deleted successfully";

/// Removes each listed `(from, to, relationType)`; unknown ones succeed
/// silently, as the reference. Touches at most two files per relation.
pub fn delete_relations(
    files: &dyn GraphFiles,
    args: DeleteRelationsArgs,
) -> Result<(ToolOutput, GraphChanges), GraphError> {
    let mut tx = Tx::new(files);
    for relation in args.relations {
        let Slot::Found { path, probe, mut record } =
            tx.find::<RelationsFile>(FileKind::Relations, &relation.from)?
        else {
            continue;
        };
        let Ok(at) = record.position(&relation.to, &relation.relation_type) else {
            continue;
        };
        record.relations.remove(at);
        if record.is_empty() {
            tx.remove(FileKind::Relations, &relation.from, probe)?;
        } else {
            tx.put(&path, &record);
        }
        if !record.points_at(&relation.to) {
            incoming::remove(&mut tx, &relation.to, &relation.from)?;
        }
    }
    Ok((ToolOutput::message(DONE), tx.into_changes()?))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::graph::tools::testing::Harness;

    #[test]
    fn removes_exact_relations_and_index_entries() {
        let mut h = Harness::new();
        h.call(
            "create_relations",
            json!({"relations": [
                {"from": "张伟", "to": "Bob", "relationType": "knows"},
                {"from": "张伟", "to": "Bob", "relationType": "likes"},
                {"from": "Bob", "to": "🐱", "relationType": "owns"}
            ]}),
        );
        let out = h.call(
            "delete_relations",
            json!({"relations": [
                {"from": "张伟", "to": "Bob", "relationType": "knows"},
                {"from": "张伟", "to": "Bob", "relationType": "KNOWS"},
                {"from": "Bob", "to": "🐱", "relationType": "owns"}
            ]}),
        );
        assert_eq!(out.text(), "Relations deleted successfully");
        assert_eq!(
            out.structured_content,
            Some(json!({"success": true, "message": "Relations deleted successfully"}))
        );
        let left: Vec<&str> = h.snapshot.relations().map(|r| r.relation_type.as_str()).collect();
        assert_eq!(left, vec!["likes"]);
        assert!(h.snapshot.problems().is_empty(), "{:?}", h.snapshot.problems());
        // Only 张伟's relation file and Bob's index remain.
        assert_eq!(h.files.files.len(), 2, "{:?}", h.files.files.keys());
        let (_, changes) = h
            .write("delete_relations", json!({"relations": [{"from": "x", "to": "y", "relationType": "z"}]}));
        assert!(changes.is_empty());
        let out = h.call("delete_relations", json!({}));
        assert_eq!(
            out.text(),
            "MCP error -32602: Input validation error: Invalid arguments for tool delete_relations: Invalid input: expected array, received undefined at relations"
        );
    }
}
