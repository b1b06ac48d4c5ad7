//! The reference's JSON Lines file: import into the graph layout and export
//! from a snapshot, byte-identical for a file the reference wrote.
//!
//! The format: one compact `JSON.stringify` record per line, keys in the
//! order `type, name, entityType, observations` (entities) and
//! `type, from, to, relationType` (relations), non-ASCII written raw; all
//! entity lines first, then all relation lines, joined by `\n` with **no**
//! trailing newline; an empty graph is an empty file. The reference reads
//! it by splitting on `\n`, skipping blank lines and dropping any line that
//! is not an entity or relation.
//!
//! engram instead keeps every line: a line that is not a valid entity or
//! relation (another `type`, a missing field, unparsable JSON) is stored
//! verbatim under `graph/unknown/` and written back at its place; a repeated
//! entity (the reference could store duplicates) is kept in the first
//! copy's file as a hidden duplicate line; a repeated relation is stored
//! once with the positions of its copies. Extra fields of a record are kept
//! and written after the known ones. Import records each line's number as
//! its order key, so the export reproduces the file; records created later
//! sort after imported ones. Export writes canonical records, so a file not
//! written by the reference (other key order, escapes, blank lines, a
//! trailing newline) comes back normalised.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{Map, Value};

use super::files::GraphChanges;
use super::key::FileKind;
use super::layout::FreshLayout;
use super::model::Entity;
use super::record::{
    EntityFile, IncomingFile, NamedRecord, RawLine, RelationEntry, RelationsFile, UnknownFile,
    is_reserved_entity_key, is_reserved_relation_key,
};
use super::snapshot::GraphSnapshot;

/// The files of an imported JSONL text and what the import found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphImport {
    /// The complete graph directory for the text (writes only). To replace
    /// an existing graph, the core also removes the files below `graph/`
    /// that are not written here.
    pub changes: GraphChanges,
    /// Counts and the line numbers worth telling the user about.
    pub report: ImportReport,
}

/// What [`import_jsonl`] found. Line numbers are 1-based.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// Distinct entities imported.
    pub entities: usize,
    /// Distinct relations imported.
    pub relations: usize,
    /// Lines repeating an entity name (kept hidden in the first copy's file).
    pub duplicate_entity_lines: Vec<usize>,
    /// Lines repeating a relation (stored once, written back on export).
    pub duplicate_relation_lines: Vec<usize>,
    /// Lines that are not valid records (kept under `graph/unknown/`).
    pub unknown_lines: Vec<usize>,
}

/// A classified JSONL line.
enum Line {
    Entity(Entity),
    Relation { from: String, to: String, relation_type: String, extra: Map<String, Value> },
    Unknown,
}

fn take_str(map: &mut Map<String, Value>, key: &str) -> Option<String> {
    match map.shift_remove(key)? {
        Value::String(s) => Some(s),
        _ => None,
    }
}

fn classify(line: &str) -> Line {
    let Ok(Value::Object(mut map)) = serde_json::from_str::<Value>(line) else {
        return Line::Unknown;
    };
    let kind = map.shift_remove("type");
    match kind.as_ref().and_then(Value::as_str) {
        Some("entity") => {
            let (Some(name), Some(entity_type)) =
                (take_str(&mut map, "name"), take_str(&mut map, "entityType"))
            else {
                return Line::Unknown;
            };
            let Some(Value::Array(items)) = map.shift_remove("observations") else {
                return Line::Unknown;
            };
            let Some(observations) =
                items.into_iter().map(|v| if let Value::String(s) = v { Some(s) } else { None }).collect()
            else {
                return Line::Unknown;
            };
            if map.keys().any(|k| is_reserved_entity_key(k)) {
                return Line::Unknown;
            }
            Line::Entity(Entity { name, entity_type, observations, extra: map })
        }
        Some("relation") => {
            let (Some(from), Some(to), Some(relation_type)) =
                (take_str(&mut map, "from"), take_str(&mut map, "to"), take_str(&mut map, "relationType"))
            else {
                return Line::Unknown;
            };
            if map.keys().any(|k| is_reserved_relation_key(k)) {
                return Line::Unknown;
            }
            Line::Relation { from, to, relation_type, extra: map }
        }
        _ => Line::Unknown,
    }
}

/// Returns true for a line the reference skips: empty or only whitespace
/// (JS `trim` also strips U+FEFF).
fn is_blank(line: &str) -> bool {
    line.chars().all(|c| c.is_whitespace() || c == '\u{feff}')
}

/// Imports the reference's JSONL text as a fresh graph directory.
///
/// Never fails: every line ends up somewhere (see the module docs).
pub fn import_jsonl(text: &str) -> GraphImport {
    let mut report = ImportReport::default();
    let mut entities: Vec<EntityFile> = Vec::new();
    let mut entity_index: HashMap<String, usize> = HashMap::new();
    let mut relations: BTreeMap<String, RelationsFile> = BTreeMap::new();
    let mut unknown: Vec<RawLine> = Vec::new();
    for (index, line) in text.split('\n').enumerate() {
        if is_blank(line) {
            continue;
        }
        let seq = u64::try_from(index).unwrap_or(u64::MAX);
        match classify(line) {
            Line::Entity(entity) => {
                if let Some(&first) = entity_index.get(&entity.name) {
                    entities[first].duplicate_lines.push(RawLine { seq, line: line.to_owned() });
                    report.duplicate_entity_lines.push(index + 1);
                } else {
                    entity_index.insert(entity.name.clone(), entities.len());
                    entities.push(EntityFile { entity, seq: Some(seq), duplicate_lines: Vec::new() });
                }
            }
            Line::Relation { from, to, relation_type, extra } => {
                let file = relations.entry(from.clone()).or_insert_with(|| RelationsFile::new(&from));
                match file.position(&to, &relation_type) {
                    Ok(at) if file.relations[at].extra == extra => {
                        file.relations[at].dup_seqs.push(seq);
                        report.duplicate_relation_lines.push(index + 1);
                    }
                    Ok(_) => {
                        // Same relation, different extra fields: keep the line as is.
                        unknown.push(RawLine { seq, line: line.to_owned() });
                        report.unknown_lines.push(index + 1);
                    }
                    Err(at) => file.relations.insert(
                        at,
                        RelationEntry { to, relation_type, extra, seq: Some(seq), dup_seqs: Vec::new() },
                    ),
                }
            }
            Line::Unknown => {
                unknown.push(RawLine { seq, line: line.to_owned() });
                report.unknown_lines.push(index + 1);
            }
        }
    }
    report.entities = entities.len();
    report.relations = relations.values().map(|f| f.relations.len()).sum();

    let mut layout = FreshLayout::new();
    let mut changes = GraphChanges::default();
    for file in &entities {
        changes.writes.push((layout.place(FileKind::Entity, &file.entity.name), file.render()));
    }
    let mut incoming: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (from, file) in &relations {
        changes.writes.push((layout.place(FileKind::Relations, from), file.render()));
        for entry in &file.relations {
            incoming.entry(entry.to.as_str()).or_default().insert(from.as_str());
        }
    }
    for (to, froms) in incoming {
        let file = IncomingFile { to: to.to_owned(), from: froms.into_iter().map(str::to_owned).collect() };
        changes.writes.push((layout.place(FileKind::Incoming, to), file.render()));
    }
    for raw in unknown {
        let path = layout.place_unknown(raw.seq, &raw.line);
        changes.writes.push((path, UnknownFile { raw }.render()));
    }
    GraphImport { changes, report }
}

fn compact(map: Map<String, Value>) -> String {
    // Serialising a `Value` to a `String` cannot fail.
    serde_json::to_string(&Value::Object(map)).unwrap_or_default()
}

fn entity_line(entity: &Entity) -> String {
    let mut map = Map::with_capacity(4 + entity.extra.len());
    map.insert("type".into(), "entity".into());
    map.insert("name".into(), entity.name.clone().into());
    map.insert("entityType".into(), entity.entity_type.clone().into());
    map.insert("observations".into(), entity.observations.clone().into());
    let extra = entity.extra.iter().filter(|(k, _)| !is_reserved_entity_key(k));
    map.extend(extra.map(|(k, v)| (k.clone(), v.clone())));
    compact(map)
}

fn relation_line(from: &str, to: &str, relation_type: &str, extra: &Map<String, Value>) -> String {
    let mut map = Map::with_capacity(4 + extra.len());
    map.insert("type".into(), "relation".into());
    map.insert("from".into(), from.into());
    map.insert("to".into(), to.into());
    map.insert("relationType".into(), relation_type.into());
    let extra = extra.iter().filter(|(k, _)| !is_reserved_relation_key(k));
    map.extend(extra.map(|(k, v)| (k.clone(), v.clone())));
    compact(map)
}

/// Exports the snapshot as the reference's JSONL text: entity lines, then
/// relation lines, each group in order, with preserved lines put back
/// before the first line that followed them; no trailing newline.
pub fn export_jsonl(snapshot: &GraphSnapshot) -> String {
    let mut entity_lines: Vec<(u64, String)> = Vec::with_capacity(snapshot.entities.len());
    for slot in snapshot.entities.values() {
        entity_lines.push((slot.file.seq.unwrap_or(u64::MAX), entity_line(&slot.file.entity)));
        entity_lines.extend(slot.file.duplicate_lines.iter().map(|raw| (raw.seq, raw.line.clone())));
    }
    entity_lines.sort_by_key(|(seq, _)| *seq);
    let mut relation_lines: Vec<(u64, String)> = Vec::with_capacity(snapshot.relations.len());
    for slot in snapshot.relations.values() {
        let r = &slot.relation;
        let line = relation_line(&r.from, &r.to, &r.relation_type, &slot.extra);
        relation_lines.extend(slot.dup_seqs.iter().map(|&seq| (seq, line.clone())));
        relation_lines.push((slot.seq.unwrap_or(u64::MAX), line));
    }
    relation_lines.sort_by_key(|(seq, _)| *seq);
    let mut stream = entity_lines;
    stream.extend(relation_lines);

    let mut unknown: Vec<&RawLine> = snapshot.unknown.values().collect();
    unknown.sort_by(|a, b| (a.seq, &a.line).cmp(&(b.seq, &b.line)));
    // A preserved line goes before the first line with a larger order key;
    // the running maximum of the keys is sorted, so a binary search finds it.
    let mut running_max = Vec::with_capacity(stream.len());
    let mut max = 0;
    for (seq, _) in &stream {
        max = max.max(*seq);
        running_max.push(max);
    }
    let mut out: Vec<&str> = Vec::with_capacity(stream.len() + unknown.len());
    let mut next = 0;
    for raw in unknown {
        let at = running_max.partition_point(|&m| m <= raw.seq);
        out.extend(stream[next..at.max(next)].iter().map(|(_, line)| line.as_str()));
        next = at.max(next);
        out.push(&raw.line);
    }
    out.extend(stream[next..].iter().map(|(_, line)| line.as_str()));
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::mem_files::MemFiles;
    use crate::graph::tools::testing::Harness;
    use serde_json::json;

    /// A file as the reference writes it: entities, then relations, no
    /// trailing newline; escapes, CJK, emoji and an empty observation list.
    const REFERENCE_FILE: &str = concat!(
        r#"{"type":"entity","name":"张伟","entityType":"person","observations":["在上海工作","喜欢喝咖啡"]}"#,
        "\n",
        r#"{"type":"entity","name":"Alice_Chen","entityType":"person","observations":["says \"hi\"\n\ttwice","back\\slash","\u0001ctl"]}"#,
        "\n",
        r#"{"type":"entity","name":"🐱 Mimi","entityType":"pet","observations":[]}"#,
        "\n",
        r#"{"type":"entity","name":"../../etc/passwd","entityType":"path","observations":["x"]}"#,
        "\n",
        r#"{"type":"relation","from":"张伟","to":"Alice_Chen","relationType":"认识"}"#,
        "\n",
        r#"{"type":"relation","from":"Alice_Chen","to":"🐱 Mimi","relationType":"owns"}"#,
        "\n",
        r#"{"type":"relation","from":"Bob","to":"Ghost","relationType":"knows"}"#,
        "\n",
        r#"{"type":"relation","from":"张伟","to":"Alice_Chen","relationType":"WORKS_WITH"}"#
    );

    fn round_trip(text: &str) -> (String, ImportReport) {
        let import = import_jsonl(text);
        let mut files = MemFiles::new();
        files.apply(&import.changes);
        let snapshot = GraphSnapshot::build(&files).expect("memory files never fail");
        assert!(snapshot.problems().is_empty(), "{:?}", snapshot.problems());
        (export_jsonl(&snapshot), import.report)
    }

    #[test]
    fn reference_file_round_trips_byte_identically() {
        let (out, report) = round_trip(REFERENCE_FILE);
        assert_eq!(out, REFERENCE_FILE);
        assert_eq!((report.entities, report.relations), (4, 4));
        assert!(report.unknown_lines.is_empty());
        assert_eq!(round_trip("").0, "");
    }

    #[test]
    fn reference_duplicates_round_trip_but_are_hidden() {
        let text = concat!(
            r#"{"type":"entity","name":"A","entityType":"t","observations":["1"]}"#,
            "\n",
            r#"{"type":"entity","name":"B","entityType":"t","observations":[]}"#,
            "\n",
            r#"{"type":"entity","name":"A","entityType":"other","observations":["2"]}"#,
            "\n",
            r#"{"type":"relation","from":"A","to":"B","relationType":"r"}"#,
            "\n",
            r#"{"type":"relation","from":"A","to":"B","relationType":"r"}"#
        );
        let (out, report) = round_trip(text);
        assert_eq!(out, text);
        assert_eq!(report.duplicate_entity_lines, vec![3]);
        assert_eq!(report.duplicate_relation_lines, vec![5]);
        let mut files = MemFiles::new();
        files.apply(&import_jsonl(text).changes);
        let mut h = Harness::with_files(files);
        let all = h.call("read_graph", json!({}));
        assert_eq!(
            all.structured_content,
            Some(json!({
                "entities": [
                    {"name": "A", "entityType": "t", "observations": ["1"]},
                    {"name": "B", "entityType": "t", "observations": []}
                ],
                "relations": [{"from": "A", "to": "B", "relationType": "r"}]
            }))
        );
        // Deleting the entity deletes its hidden copy and both relation lines.
        h.call("delete_entities", json!({"entityNames": ["A"]}));
        assert_eq!(
            export_jsonl(&h.snapshot),
            r#"{"type":"entity","name":"B","entityType":"t","observations":[]}"#
        );
    }

    #[test]
    fn unknown_and_bad_lines_are_kept_in_place() {
        let text = concat!(
            r#"{"type":"entity","name":"A","entityType":"t","observations":[],"createdAt":"2026-01-01"}"#,
            "\n",
            r#"{"type":"note","text":"keep me"}"#,
            "\n",
            r#"{"type":"entity","name":"NoType","observations":[]}"#,
            "\n",
            r#"[{"type":"entity","name":"array"}]"#,
            "\n",
            r#"{"type":"relation","from":"A","to":"B","relationType":"r"}"#,
            "\n",
            r#"{"type":"entity","name":"trunc"#
        );
        let (out, report) = round_trip(text);
        assert_eq!(out, text);
        assert_eq!(report.unknown_lines, vec![2, 3, 4, 6]);
        assert_eq!((report.entities, report.relations), (1, 1));
        // Blank lines and a trailing newline are what the reference skips.
        let (out, _) = round_trip(&format!("\n{REFERENCE_FILE}\n\n"));
        assert_eq!(out, REFERENCE_FILE);
    }

    #[test]
    fn imported_graph_works_with_the_tools_and_keeps_extras() {
        let text = concat!(
            r#"{"type":"entity","name":"Rex","entityType":"pet","observations":["dog"],"id":"pet-1","attributes":{"born":2020}}"#,
            "\n",
            r#"{"type":"relation","from":"Me","to":"Rex","relationType":"owns"}"#
        );
        let mut files = MemFiles::new();
        files.apply(&import_jsonl(text).changes);
        let mut h = Harness::with_files(files);
        assert_eq!(h.snapshot.entity("Rex").and_then(|e| e.id()), Some("pet-1"));
        assert_eq!(
            h.snapshot.entity("Rex").and_then(|e| e.attributes()).map(|a| a["born"].clone()),
            Some(json!(2020))
        );
        let out = h.call("open_nodes", json!({"names": ["Rex"]}));
        assert_eq!(
            out.structured_content,
            Some(json!({"entities": [{"name": "Rex", "entityType": "pet", "observations": ["dog"]}],
                        "relations": [{"from": "Me", "to": "Rex", "relationType": "owns"}]}))
        );
        h.call(
            "add_observations",
            json!({"observations": [{"entityName": "Rex", "contents": ["good boy"]}]}),
        );
        h.call(
            "create_entities",
            json!({"entities": [{"name": "New", "entityType": "t", "observations": []}]}),
        );
        assert_eq!(
            export_jsonl(&h.snapshot),
            concat!(
                r#"{"type":"entity","name":"Rex","entityType":"pet","observations":["dog","good boy"],"id":"pet-1","attributes":{"born":2020}}"#,
                "\n",
                r#"{"type":"entity","name":"New","entityType":"t","observations":[]}"#,
                "\n",
                r#"{"type":"relation","from":"Me","to":"Rex","relationType":"owns"}"#
            )
        );
        h.call("delete_entities", json!({"entityNames": ["Rex"]}));
        assert_eq!(h.snapshot.relation_count(), 0);
    }
}
