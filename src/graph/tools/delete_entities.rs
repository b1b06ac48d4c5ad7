//! `delete_entities`: remove entities and every relation touching them.

use std::collections::BTreeSet;

use super::{dedup_keep_order, incoming};
use crate::graph::args::DeleteEntitiesArgs;
use crate::graph::error::GraphError;
use crate::graph::files::{GraphChanges, GraphFiles};
use crate::graph::key::FileKind;
use crate::graph::output::ToolOutput;
use crate::graph::record::{EntityFile, IncomingFile, RelationsFile};
use crate::graph::tx::{Slot, Tx};

/// The reference's fixed result sentence.
const DONE: &str = "Entities deleted successfully";

/// Deletes each named entity, its outgoing relations and (through the
/// incoming index) every relation pointing at it, including dangling ones
/// whose endpoint was never an entity. Unknown names succeed silently.
///
/// Touches the name's own three files, the index files of its outgoing
/// targets and the relation files of the names pointing at it: O(affected).
pub fn delete_entities(
    files: &dyn GraphFiles,
    args: DeleteEntitiesArgs,
) -> Result<(ToolOutput, GraphChanges), GraphError> {
    let mut tx = Tx::new(files);
    for name in dedup_keep_order(args.entity_names) {
        if let Slot::Found { probe, .. } = tx.find::<EntityFile>(FileKind::Entity, &name)? {
            tx.remove(FileKind::Entity, &name, probe)?;
        }
        if let Slot::Found { probe, record, .. } = tx.find::<RelationsFile>(FileKind::Relations, &name)? {
            let targets: BTreeSet<&str> = record.relations.iter().map(|e| e.to.as_str()).collect();
            for to in targets.into_iter().filter(|&to| to != name) {
                incoming::remove(&mut tx, to, &name)?;
            }
            tx.remove(FileKind::Relations, &name, probe)?;
        }
        if let Slot::Found { probe, record, .. } = tx.find::<IncomingFile>(FileKind::Incoming, &name)? {
            for from in record.from.iter().filter(|&from| *from != name) {
                let Slot::Found { path, probe, mut record } =
                    tx.find::<RelationsFile>(FileKind::Relations, from)?
                else {
                    continue;
                };
                record.relations.retain(|e| e.to != name);
                if record.is_empty() {
                    tx.remove(FileKind::Relations, from, probe)?;
                } else {
                    tx.put(&path, &record);
                }
            }
            tx.remove(FileKind::Incoming, &name, probe)?;
        }
    }
    Ok((ToolOutput::message(DONE), tx.into_changes()?))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::graph::tools::testing::Harness;

    fn setup() -> Harness {
        let mut h = Harness::new();
        h.call(
            "create_entities",
            json!({"entities": [
                {"name": "张伟", "entityType": "person", "observations": ["Bob 的朋友"]},
                {"name": "Bob", "entityType": "person", "observations": []},
                {"name": "Carol", "entityType": "person", "observations": []}
            ]}),
        );
        h.call(
            "create_relations",
            json!({"relations": [
                {"from": "张伟", "to": "Bob", "relationType": "knows"},
                {"from": "Bob", "to": "张伟", "relationType": "knows"},
                {"from": "Bob", "to": "Bob", "relationType": "self"},
                {"from": "Bob", "to": "Carol", "relationType": "knows"},
                {"from": "Carol", "to": "张伟", "relationType": "knows"},
                {"from": "Nobody", "to": "Bob", "relationType": "dangling"},
                {"from": "Bob", "to": "Ghost", "relationType": "dangling"}
            ]}),
        );
        h
    }

    #[test]
    fn cascades_to_every_touching_relation() {
        let mut h = setup();
        let out = h.call("delete_entities", json!({"entityNames": ["Bob", "Bob", "Unknown"]}));
        assert_eq!(out.text(), "Entities deleted successfully");
        assert_eq!(
            out.structured_content,
            Some(json!({"success": true, "message": "Entities deleted successfully"}))
        );
        assert!(h.snapshot.entity("Bob").is_none());
        let left: Vec<String> =
            h.snapshot.relations().map(|r| format!("{}>{}:{}", r.from, r.to, r.relation_type)).collect();
        assert_eq!(left, vec!["Carol>张伟:knows".to_owned()]);
        // Observations mentioning the name are untouched.
        assert_eq!(h.snapshot.entity("张伟").map(|e| e.observations.len()), Some(1));
        assert!(h.snapshot.problems().is_empty(), "{:?}", h.snapshot.problems());
        assert!(h.files.files.keys().all(|p| !p.contains("/bob-")), "{:?}", h.files.files.keys());
    }

    #[test]
    fn deleting_a_non_entity_endpoint_removes_dangling_relations() {
        let mut h = setup();
        h.call("delete_entities", json!({"entityNames": ["Ghost", "Nobody"]}));
        assert_eq!(h.snapshot.relation_count(), 5);
        assert!(h.snapshot.relations().all(|r| r.relation_type != "dangling"));
        assert!(h.snapshot.problems().is_empty(), "{:?}", h.snapshot.problems());
    }

    #[test]
    fn unknown_names_change_nothing() {
        let mut h = setup();
        let (out, changes) = h.write("delete_entities", json!({"entityNames": ["nobody here", ""]}));
        assert_eq!(out.text(), "Entities deleted successfully");
        assert!(changes.is_empty());
        let out = h.call("delete_entities", json!({"entityNames": [1]}));
        assert_eq!(
            out.text(),
            "MCP error -32602: Input validation error: Invalid arguments for tool delete_entities: Invalid input: expected string, received number at entityNames[0]"
        );
    }
}
