//! [`GraphSnapshot`]: the whole graph of one commit in memory, indexed for
//! the read tools, built once from all graph files and then kept current
//! from each call's [`GraphChanges`].
//!
//! The core caches one snapshot per commit: `build` (or `from_files`) for a
//! commit it has not seen, `apply` to move a cached snapshot to the commit
//! that a write produced. Every file is a unit: applying a change re-reads
//! only the changed files, so the cost of an update does not grow with the
//! graph.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::error::GraphError;
use super::files::{GraphChanges, GraphFiles, GraphProblem, ProblemKind};
use super::key::{FileKind, GRAPH_DIR};
use super::model::{Entity, Relation};
use super::record::{EntityFile, IncomingFile, NamedRecord, RawLine, RelationsFile, UnknownFile};

/// Order of records: `(seq, path, index in file)`. Records without a seq
/// (hand-written files) sort last; the path breaks ties deterministically.
pub(crate) type Key = (u64, Arc<str>, u32);

/// One entity file in the snapshot.
#[derive(Debug, Clone)]
pub(crate) struct EntitySlot {
    /// The parsed file.
    pub file: EntityFile,
    /// Lower-cased name, type and observations joined by `\0`, for search.
    pub folded: String,
    /// False when another file with the same name sorts first.
    pub visible: bool,
}

/// One relation in the snapshot.
#[derive(Debug, Clone)]
pub(crate) struct RelationSlot {
    /// The relation.
    pub relation: Relation,
    /// Its extra fields, for the JSONL export.
    pub extra: Map<String, Value>,
    /// Its order key.
    pub seq: Option<u64>,
    /// Positions of identical copies from an import.
    pub dup_seqs: Vec<u64>,
}

/// What one relations file contributed.
#[derive(Debug, Clone)]
struct RelationsInfo {
    from: String,
    keys: Vec<Key>,
}

/// The graph of one commit, indexed for reads.
#[derive(Debug, Clone, Default)]
pub struct GraphSnapshot {
    pub(crate) entities: BTreeMap<Key, EntitySlot>,
    entity_paths: HashMap<Arc<str>, Key>,
    pub(crate) by_name: HashMap<String, BTreeSet<Key>>,
    pub(crate) relations: BTreeMap<Key, RelationSlot>,
    relation_paths: HashMap<Arc<str>, RelationsInfo>,
    pub(crate) by_from: HashMap<String, BTreeSet<Key>>,
    pub(crate) by_to: HashMap<String, BTreeSet<Key>>,
    incoming: HashMap<Arc<str>, IncomingFile>,
    pub(crate) unknown: HashMap<Arc<str>, RawLine>,
    bad: BTreeMap<Arc<str>, ProblemKind>,
}

/// Returns the search text of an entity: each field lower-cased as JS
/// `toLowerCase` does (full Unicode mapping, final sigma included), joined
/// by `\0` so that a query without `\0` can only match inside one field.
pub(crate) fn fold(entity: &Entity) -> String {
    let mut out = String::with_capacity(
        entity.name.len()
            + entity.entity_type.len()
            + entity.observations.iter().map(|o| o.len() + 1).sum::<usize>()
            + 1,
    );
    out.push_str(&entity.name.to_lowercase());
    out.push('\0');
    out.push_str(&entity.entity_type.to_lowercase());
    for observation in &entity.observations {
        out.push('\0');
        out.push_str(&observation.to_lowercase());
    }
    out
}

impl GraphSnapshot {
    /// Returns an empty snapshot.
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds the snapshot of every file below `graph/`.
    pub fn build(files: &dyn GraphFiles) -> Result<Self, GraphError> {
        let mut paths = files.list(GRAPH_DIR)?;
        paths.sort();
        let mut snapshot = Self::new();
        for path in paths {
            if let Some(content) = files.read(&path)? {
                snapshot.insert(&path, &content);
            }
        }
        Ok(snapshot)
    }

    /// Builds the snapshot from `(path, content)` pairs of the files below
    /// `graph/` (for a core that already holds the blobs).
    pub fn from_files<P: AsRef<str>, C: AsRef<str>>(files: impl IntoIterator<Item = (P, C)>) -> Self {
        let mut snapshot = Self::new();
        for (path, content) in files {
            snapshot.insert(path.as_ref(), content.as_ref());
        }
        snapshot
    }

    /// Updates the snapshot with changes that were committed on top of the
    /// commit it describes.
    pub fn apply(&mut self, changes: &GraphChanges) {
        for path in &changes.removes {
            self.remove(path);
        }
        for (path, content) in &changes.writes {
            self.remove(path);
            self.insert(path, content);
        }
    }

    /// Returns the number of entities the tools show.
    pub fn entity_count(&self) -> usize {
        self.by_name.len()
    }

    /// Returns the number of relations.
    pub fn relation_count(&self) -> usize {
        self.relations.len()
    }

    /// Returns the entity named `name`, if any.
    pub fn entity(&self, name: &str) -> Option<&Entity> {
        let key = self.by_name.get(name)?.first()?;
        self.entities.get(key).map(|slot| &slot.file.entity)
    }

    /// Returns the entities the tools show, in graph order.
    pub fn entities(&self) -> impl Iterator<Item = &Entity> {
        self.entities.values().filter(|slot| slot.visible).map(|slot| &slot.file.entity)
    }

    /// Returns every relation, in graph order.
    pub fn relations(&self) -> impl Iterator<Item = &Relation> {
        self.relations.values().map(|slot| &slot.relation)
    }

    /// Returns every problem: corrupt and stray files, files hidden by a
    /// duplicate name, and stale entries of the incoming-relation index.
    pub fn problems(&self) -> Vec<GraphProblem> {
        let mut problems: Vec<GraphProblem> = self
            .bad
            .iter()
            .map(|(path, kind)| GraphProblem { path: path.to_string(), kind: kind.clone() })
            .collect();
        for (name, keys) in &self.by_name {
            for key in keys.iter().skip(1) {
                problems.push(GraphProblem {
                    path: key.1.to_string(),
                    kind: ProblemKind::DuplicateName(name.clone()),
                });
            }
        }
        let mut seen_from: HashMap<&str, usize> = HashMap::new();
        let mut relation_paths: Vec<(&Arc<str>, &RelationsInfo)> = self.relation_paths.iter().collect();
        relation_paths.sort_by(|a, b| a.0.cmp(b.0));
        for (path, info) in relation_paths {
            let seen = seen_from.entry(info.from.as_str()).or_default();
            *seen += 1;
            if *seen > 1 {
                problems.push(GraphProblem {
                    path: path.to_string(),
                    kind: ProblemKind::DuplicateName(info.from.clone()),
                });
            }
        }
        let stored = self.incoming_by_name();
        let expected = self.expected_incoming();
        for (to, from) in &expected {
            if stored.get(to.as_str()).map(|(_, file)| &file.from) != Some(from) {
                let path = stored.get(to.as_str()).map_or_else(String::new, |(path, _)| path.to_string());
                problems.push(GraphProblem { path, kind: ProblemKind::StaleIndex(to.clone()) });
            }
        }
        for (to, (path, _)) in &stored {
            if !expected.contains_key(*to) {
                problems.push(GraphProblem {
                    path: path.to_string(),
                    kind: ProblemKind::StaleIndex((*to).to_owned()),
                });
            }
        }
        problems.sort_by(|a, b| a.path.cmp(&b.path));
        problems
    }

    /// Returns the stored incoming-index files by name (the first file of a
    /// name wins).
    fn incoming_by_name(&self) -> BTreeMap<&str, (&Arc<str>, &IncomingFile)> {
        let mut by_name = BTreeMap::new();
        let mut paths: Vec<_> = self.incoming.iter().collect();
        paths.sort_by(|a, b| a.0.cmp(b.0));
        for (path, file) in paths {
            by_name.entry(file.to.as_str()).or_insert((path, file));
        }
        by_name
    }

    /// Returns the incoming index the relation files imply.
    pub(crate) fn expected_incoming(&self) -> BTreeMap<String, Vec<String>> {
        let mut expected: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (to, keys) in &self.by_to {
            let mut from: Vec<String> = keys
                .iter()
                .filter_map(|key| self.relations.get(key))
                .map(|s| s.relation.from.clone())
                .collect();
            from.sort();
            from.dedup();
            expected.insert(to.clone(), from);
        }
        expected
    }

    /// Returns the paths of the stored incoming-index files.
    pub(crate) fn incoming_paths(&self) -> impl Iterator<Item = (&str, &IncomingFile)> {
        self.incoming.iter().map(|(path, file)| (path.as_ref(), file))
    }

    fn insert(&mut self, path: &str, content: &str) {
        let path: Arc<str> = Arc::from(path);
        let Some(kind) = FileKind::of_path(&path) else {
            self.bad.insert(path, ProblemKind::Stray);
            return;
        };
        let result = match kind {
            FileKind::Entity => EntityFile::parse(content).map(|file| self.insert_entity(path.clone(), file)),
            FileKind::Relations => {
                RelationsFile::parse(content).map(|file| self.insert_relations(path.clone(), file))
            }
            FileKind::Incoming => IncomingFile::parse(content).map(|file| {
                self.incoming.insert(path.clone(), file);
            }),
            FileKind::Unknown => UnknownFile::parse(content).map(|file| {
                self.unknown.insert(path.clone(), file.raw);
            }),
        };
        if let Err(why) = result {
            self.bad.insert(path, ProblemKind::Corrupt(why));
        }
    }

    fn insert_entity(&mut self, path: Arc<str>, file: EntityFile) {
        let key: Key = (file.seq.unwrap_or(u64::MAX), path.clone(), 0);
        let name = file.entity.name.clone();
        let folded = fold(&file.entity);
        self.entities.insert(key.clone(), EntitySlot { file, folded, visible: false });
        self.entity_paths.insert(path, key.clone());
        self.by_name.entry(name.clone()).or_default().insert(key);
        self.refresh_visibility(&name);
    }

    fn insert_relations(&mut self, path: Arc<str>, file: RelationsFile) {
        if !file.invalid.is_empty() {
            self.bad.insert(
                path.clone(),
                ProblemKind::Corrupt(format!(
                    "{} invalid relation entries kept but ignored",
                    file.invalid.len()
                )),
            );
        }
        let mut keys = Vec::with_capacity(file.relations.len());
        for (index, entry) in file.relations.into_iter().enumerate() {
            let index = u32::try_from(index).unwrap_or(u32::MAX);
            let key: Key = (entry.seq.unwrap_or(u64::MAX), path.clone(), index);
            let relation =
                Relation { from: file.from.clone(), to: entry.to, relation_type: entry.relation_type };
            self.by_from.entry(relation.from.clone()).or_default().insert(key.clone());
            self.by_to.entry(relation.to.clone()).or_default().insert(key.clone());
            self.relations.insert(
                key.clone(),
                RelationSlot { relation, extra: entry.extra, seq: entry.seq, dup_seqs: entry.dup_seqs },
            );
            keys.push(key);
        }
        self.relation_paths.insert(path, RelationsInfo { from: file.from, keys });
    }

    fn remove(&mut self, path: &str) {
        self.bad.remove(path);
        self.incoming.remove(path);
        self.unknown.remove(path);
        if let Some(key) = self.entity_paths.remove(path)
            && let Some(slot) = self.entities.remove(&key)
        {
            let name = slot.file.entity.name;
            if let Some(keys) = self.by_name.get_mut(&name) {
                keys.remove(&key);
                if keys.is_empty() {
                    self.by_name.remove(&name);
                }
            }
            self.refresh_visibility(&name);
        }
        if let Some(info) = self.relation_paths.remove(path) {
            for key in info.keys {
                if let Some(slot) = self.relations.remove(&key) {
                    remove_key(&mut self.by_from, &slot.relation.from, &key);
                    remove_key(&mut self.by_to, &slot.relation.to, &key);
                }
            }
        }
    }

    fn refresh_visibility(&mut self, name: &str) {
        let Some(keys) = self.by_name.get(name) else { return };
        for (index, key) in keys.iter().enumerate() {
            if let Some(slot) = self.entities.get_mut(key) {
                slot.visible = index == 0;
            }
        }
    }
}

fn remove_key(index: &mut HashMap<String, BTreeSet<Key>>, name: &str, key: &Key) {
    if let Some(keys) = index.get_mut(name) {
        keys.remove(key);
        if keys.is_empty() {
            index.remove(name);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::graph::files::ProblemKind;
    use crate::graph::key::{FileKind, record_path};
    use crate::graph::mem_files::MemFiles;
    use crate::graph::tools::testing::Harness;

    fn graph_with_corruption() -> (Harness, String) {
        let mut h = Harness::new();
        h.call(
            "create_entities",
            json!({"entities": [
                {"name": "Good", "entityType": "t", "observations": ["fine"]},
                {"name": "Broken", "entityType": "t", "observations": ["was fine"]}
            ]}),
        );
        h.call(
            "create_relations",
            json!({"relations": [{"from": "Good", "to": "Broken", "relationType": "r"}]}),
        );
        let broken = record_path(FileKind::Entity, "Broken", 0);
        // A truncated write, as the reference's torn files.
        h.files.files.insert(broken.clone(), "{\"name\":\"Broken\",\"entityType\":\"t\",\"observ".to_owned());
        // An entity without entityType (the reference's #2044 crash).
        h.files.files.insert(
            record_path(FileKind::Entity, "NoType", 0),
            "{\"name\":\"NoType\",\"observations\":[]}\n".to_owned(),
        );
        h.files.files.insert("graph/notes.txt".to_owned(), "hello".to_owned());
        h.snapshot = crate::graph::GraphSnapshot::build(&h.files).expect("memory");
        (h, broken)
    }

    #[test]
    fn corrupt_files_are_skipped_and_reported() {
        let (mut h, broken) = graph_with_corruption();
        let problems = h.snapshot.problems();
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems.iter().any(|p| p.path == broken && matches!(p.kind, ProblemKind::Corrupt(_))));
        assert!(problems.iter().any(|p| p.path == "graph/notes.txt" && p.kind == ProblemKind::Stray));
        assert!(problems.iter().all(|p| !p.to_string().is_empty()));

        let all = h.call("read_graph", json!({}));
        assert!(!all.is_error);
        assert_eq!(
            all.structured_content.as_ref().and_then(|v| v["entities"].as_array()).map(Vec::len),
            Some(1)
        );
        let found = h.call("search_nodes", json!({"query": "fine"}));
        assert_eq!(
            found.structured_content.as_ref().and_then(|v| v["entities"].as_array()).map(Vec::len),
            Some(1)
        );
        let out = h.call(
            "add_observations",
            json!({"observations": [{"entityName": "Good", "contents": ["still works"]}]}),
        );
        assert!(!out.is_error);
        let out = h
            .call("add_observations", json!({"observations": [{"entityName": "Broken", "contents": ["x"]}]}));
        assert_eq!(out.text(), "Entity with name Broken not found");
    }

    #[test]
    fn writes_step_over_corrupt_files_and_keep_them() {
        let (mut h, broken) = graph_with_corruption();
        let before = h.files.files.get(&broken).cloned();
        let (out, changes) = h.write(
            "create_entities",
            json!({"entities": [
                {"name": "Broken", "entityType": "t", "observations": ["recreated"]}
            ]}),
        );
        assert!(!out.is_error);
        assert!(changes.problems.iter().any(|p| p.path == broken));
        assert_eq!(changes.writes.len(), 1);
        assert_eq!(changes.writes[0].0, record_path(FileKind::Entity, "Broken", 1));
        assert_eq!(h.files.files.get(&broken), before.as_ref());
        assert_eq!(
            h.snapshot.entity("Broken").map(|e| e.observations.clone()),
            Some(vec!["recreated".to_owned()])
        );
        // The cascade still reaches the relation pointing at it.
        h.call("delete_entities", json!({"entityNames": ["Broken"]}));
        assert_eq!(h.snapshot.relation_count(), 0);
        assert_eq!(h.files.files.get(&broken), before.as_ref());
    }

    #[test]
    fn hash_collisions_use_a_gap_free_probe_chain() {
        // Simulate two names whose hash equals Alice's by putting their
        // files on Alice's chain.
        let mut files = MemFiles::new();
        let p0 = record_path(FileKind::Entity, "Alice", 0);
        let p1 = record_path(FileKind::Entity, "Alice", 1);
        let p2 = record_path(FileKind::Entity, "Alice", 2);
        files
            .files
            .insert(p0.clone(), "{\"name\":\"X\",\"entityType\":\"t\",\"observations\":[]}\n".to_owned());
        let mut h = Harness::with_files(files);
        h.call(
            "create_entities",
            json!({"entities": [{"name": "Alice", "entityType": "t", "observations": []}]}),
        );
        assert!(h.files.files.contains_key(&p1));
        h.files
            .files
            .insert(p2.clone(), "{\"name\":\"Y\",\"entityType\":\"t\",\"observations\":[]}\n".to_owned());
        h.snapshot = crate::graph::GraphSnapshot::build(&h.files).expect("memory");
        let out =
            h.call("add_observations", json!({"observations": [{"entityName": "Alice", "contents": ["a"]}]}));
        assert!(!out.is_error);
        h.call("delete_entities", json!({"entityNames": ["Alice"]}));
        // Y moved into Alice's hole; the chain has no gap.
        assert!(h.files.files.get(&p1).is_some_and(|c| c.contains("\"Y\"")));
        assert!(!h.files.files.contains_key(&p2));
        let names: Vec<&str> = h.snapshot.entities().map(|e| e.name.as_str()).collect();
        assert_eq!(names.len(), 2);
        assert!(names.contains(&"X") && names.contains(&"Y"));
    }

    #[test]
    fn duplicate_entity_files_show_one_and_report_the_other() {
        let mut h = Harness::new();
        h.call(
            "create_entities",
            json!({"entities": [{"name": "A", "entityType": "first", "observations": []}]}),
        );
        h.files.files.insert(
            "graph/entities/zz/copy.json".to_owned(),
            "{\"name\":\"A\",\"entityType\":\"copy\",\"observations\":[]}\n".to_owned(),
        );
        h.snapshot = crate::graph::GraphSnapshot::build(&h.files).expect("memory");
        assert_eq!(h.snapshot.entity("A").map(|e| e.entity_type.as_str()), Some("first"));
        assert_eq!(h.snapshot.entities().count(), 1);
        assert!(h.snapshot.problems().iter().any(|p| p.kind == ProblemKind::DuplicateName("A".into())));
    }
}
