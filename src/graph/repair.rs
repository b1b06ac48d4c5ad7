//! Rebuilding the incoming-relation index from the relation files, for a
//! graph edited by hand or merged in a way that left the index stale.

use std::collections::BTreeMap;

use super::files::GraphChanges;
use super::key::FileKind;
use super::layout::FreshLayout;
use super::record::{IncomingFile, NamedRecord};
use super::snapshot::GraphSnapshot;

impl GraphSnapshot {
    /// Returns the changes that make `graph/incoming/` match the relation
    /// files exactly (empty when it already does). Corrupt index files are
    /// replaced: the index is derived data.
    pub fn index_repair(&self) -> GraphChanges {
        let mut layout = FreshLayout::new();
        let mut desired: BTreeMap<String, IncomingFile> = BTreeMap::new();
        for (to, from) in self.expected_incoming() {
            let path = layout.place(FileKind::Incoming, &to);
            desired.insert(path, IncomingFile { to, from });
        }
        let mut changes = GraphChanges::default();
        let existing: BTreeMap<&str, &IncomingFile> = self.incoming_paths().collect();
        for (path, file) in &desired {
            if existing.get(path.as_str()) != Some(&file) {
                changes.writes.push((path.clone(), file.render()));
            }
        }
        let corrupt = self.problems().into_iter().map(|p| p.path).filter(|path| {
            FileKind::of_path(path) == Some(FileKind::Incoming) && !existing.contains_key(path.as_str())
        });
        for path in existing.keys().map(|p| (*p).to_owned()).chain(corrupt) {
            if !desired.contains_key(&path) && !changes.removes.contains(&path) {
                changes.removes.push(path);
            }
        }
        changes
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::graph::files::ProblemKind;
    use crate::graph::tools::testing::Harness;

    #[test]
    fn stale_index_is_reported_and_repaired() {
        let mut h = Harness::new();
        h.call(
            "create_relations",
            json!({"relations": [
                {"from": "A", "to": "B", "relationType": "r"},
                {"from": "C", "to": "B", "relationType": "r"}
            ]}),
        );
        assert!(h.snapshot.index_repair().is_empty());
        // Lose the index as a bad merge or hand edit could.
        let index: Vec<String> =
            h.files.files.keys().filter(|p| p.starts_with("graph/incoming/")).cloned().collect();
        for path in &index {
            h.files.files.insert(path.clone(), "{\"to\":\"B\",\"from\":[\"A\"]}\n".to_owned());
        }
        h.snapshot = crate::graph::GraphSnapshot::build(&h.files).expect("memory");
        assert!(h.snapshot.problems().iter().any(|p| matches!(p.kind, ProblemKind::StaleIndex(_))));
        let repair = h.snapshot.index_repair();
        assert_eq!(repair.writes.len(), 1);
        h.files.apply(&repair);
        h.snapshot.apply(&repair);
        assert!(h.snapshot.problems().is_empty());
        // The cascade now finds both relations.
        h.call("delete_entities", json!({"entityNames": ["B"]}));
        assert_eq!(h.snapshot.relation_count(), 0);
    }
}
