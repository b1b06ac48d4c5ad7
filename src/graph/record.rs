//! The content of each kind of graph file: parsing (strict about the fields
//! the tools need, keeping every other field) and rendering (pretty JSON with
//! one observation, relation or name per line, ending in a newline).

use serde_json::{Map, Value};

use super::model::Entity;

/// Keys of an entity file that are not entity fields.
const ENTITY_META_KEYS: [&str; 2] = ["seq", "duplicateLines"];
/// Keys of a relation entry that are not relation fields.
const RELATION_META_KEYS: [&str; 2] = ["seq", "dupSeqs"];

/// A JSONL line kept verbatim together with its position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawLine {
    /// The order key of the line (its position in the imported file).
    pub seq: u64,
    /// The line, without its line break.
    pub line: String,
}

/// `graph/entities/…`: one entity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntityFile {
    /// The entity, with its extra fields.
    pub entity: Entity,
    /// Order key (import position, or creation time × 1000 + index);
    /// `None` for hand-written files, which sort last.
    pub seq: Option<u64>,
    /// Later copies of this entity found in an imported JSONL file (the
    /// reference could store duplicates); hidden from the tools, written back
    /// by the JSONL export so that a round trip is byte-identical.
    pub duplicate_lines: Vec<RawLine>,
}

/// One outgoing relation inside a [`RelationsFile`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelationEntry {
    /// The name where the relation ends.
    pub to: String,
    /// The type of the relation.
    pub relation_type: String,
    /// Fields beyond the reference's three, in order.
    pub extra: Map<String, Value>,
    /// Order key, as for entities.
    pub seq: Option<u64>,
    /// Positions of identical copies in an imported JSONL file.
    pub dup_seqs: Vec<u64>,
}

/// `graph/relations/…`: the outgoing relations of one `from` name, sorted by
/// `(to, relationType)` so that two devices adding different relations
/// usually edit different lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelationsFile {
    /// The name all these relations start from.
    pub from: String,
    /// The relations, sorted, each `(to, relationType)` once.
    pub relations: Vec<RelationEntry>,
    /// Entries that are not valid relations, kept verbatim.
    pub invalid: Vec<Value>,
}

/// `graph/incoming/…`: the names that have at least one relation to `to`.
/// A derived index, only used to find the relations a cascading
/// `delete_entities` must remove without scanning every relation file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncomingFile {
    /// The name the relations point at.
    pub to: String,
    /// The `from` names, sorted, each once.
    pub from: Vec<String>,
}

/// `graph/unknown/…`: an imported line that is not a valid record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownFile {
    /// The line and its position.
    pub raw: RawLine,
}

/// A parsed graph file that belongs to one name.
pub trait NamedRecord: Sized {
    /// Parses the file content, or says why it is corrupt.
    fn parse(content: &str) -> Result<Self, String>;
    /// Returns the name the file belongs to.
    fn name(&self) -> &str;
    /// Renders the file content.
    fn render(&self) -> String;
}

fn parse_object(content: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(content) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err("not a JSON object".to_owned()),
        Err(err) => Err(err.to_string()),
    }
}

fn take_string(map: &mut Map<String, Value>, key: &str) -> Result<String, String> {
    match map.shift_remove(key) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(format!("{key:?} is not a string")),
        None => Err(format!("{key:?} is missing")),
    }
}

fn take_strings(map: &mut Map<String, Value>, key: &str) -> Result<Vec<String>, String> {
    match map.shift_remove(key) {
        Some(Value::Array(items)) => items
            .into_iter()
            .map(|item| match item {
                Value::String(s) => Ok(s),
                _ => Err(format!("{key:?} holds a non-string")),
            })
            .collect(),
        Some(_) => Err(format!("{key:?} is not an array")),
        None => Err(format!("{key:?} is missing")),
    }
}

fn take_seq(map: &mut Map<String, Value>) -> Result<Option<u64>, String> {
    match map.shift_remove("seq") {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value.as_u64().map(Some).ok_or_else(|| "\"seq\" is not an integer".into()),
    }
}

fn take_raw_lines(map: &mut Map<String, Value>, key: &str) -> Result<Vec<RawLine>, String> {
    let Some(value) = map.shift_remove(key) else {
        return Ok(Vec::new());
    };
    let Value::Array(items) = value else {
        return Err(format!("{key:?} is not an array"));
    };
    items.into_iter().map(|item| parse_raw_line(item).ok_or_else(|| format!("bad {key:?}"))).collect()
}

fn parse_raw_line(value: Value) -> Option<RawLine> {
    let Value::Object(mut map) = value else { return None };
    let seq = map.get("seq")?.as_u64()?;
    let Value::String(line) = map.shift_remove("line")? else { return None };
    Some(RawLine { seq, line })
}

fn raw_line_value(raw: &RawLine) -> Value {
    let mut map = Map::new();
    map.insert("seq".into(), raw.seq.into());
    map.insert("line".into(), raw.line.clone().into());
    Value::Object(map)
}

fn render_value(map: Map<String, Value>) -> String {
    // Rendering a map of strings, numbers and arrays cannot fail.
    let mut out = serde_json::to_string_pretty(&Value::Object(map)).unwrap_or_default();
    out.push('\n');
    out
}

/// Returns true for a key that an entity's extra fields may not use.
pub fn is_reserved_entity_key(key: &str) -> bool {
    matches!(key, "type" | "name" | "entityType" | "observations") || ENTITY_META_KEYS.contains(&key)
}

/// Returns true for a key that a relation's extra fields may not use.
pub fn is_reserved_relation_key(key: &str) -> bool {
    matches!(key, "type" | "from" | "to" | "relationType") || RELATION_META_KEYS.contains(&key)
}

impl NamedRecord for EntityFile {
    fn parse(content: &str) -> Result<Self, String> {
        let mut map = parse_object(content)?;
        let name = take_string(&mut map, "name")?;
        let entity_type = take_string(&mut map, "entityType")?;
        let observations = take_strings(&mut map, "observations")?;
        let seq = take_seq(&mut map)?;
        let duplicate_lines = take_raw_lines(&mut map, "duplicateLines")?;
        Ok(Self { entity: Entity { name, entity_type, observations, extra: map }, seq, duplicate_lines })
    }

    fn name(&self) -> &str {
        &self.entity.name
    }

    fn render(&self) -> String {
        let mut map = Map::new();
        map.insert("name".into(), self.entity.name.clone().into());
        map.insert("entityType".into(), self.entity.entity_type.clone().into());
        map.insert("observations".into(), self.entity.observations.clone().into());
        for (key, value) in self.entity.extra.iter().filter(|(k, _)| !is_reserved_entity_key(k)) {
            map.insert(key.clone(), value.clone());
        }
        if let Some(seq) = self.seq {
            map.insert("seq".into(), seq.into());
        }
        if !self.duplicate_lines.is_empty() {
            map.insert(
                "duplicateLines".into(),
                Value::Array(self.duplicate_lines.iter().map(raw_line_value).collect()),
            );
        }
        render_value(map)
    }
}

impl RelationEntry {
    fn parse(value: &Value) -> Option<Self> {
        let Value::Object(map) = value else { return None };
        let mut map = map.clone();
        let to = take_string(&mut map, "to").ok()?;
        let relation_type = take_string(&mut map, "relationType").ok()?;
        let seq = take_seq(&mut map).ok()?;
        let dup_seqs = match map.shift_remove("dupSeqs") {
            None => Vec::new(),
            Some(Value::Array(items)) => items.iter().map(Value::as_u64).collect::<Option<Vec<_>>>()?,
            Some(_) => return None,
        };
        Some(Self { to, relation_type, extra: map, seq, dup_seqs })
    }

    fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert("to".into(), self.to.clone().into());
        map.insert("relationType".into(), self.relation_type.clone().into());
        for (key, value) in self.extra.iter().filter(|(k, _)| !is_reserved_relation_key(k)) {
            map.insert(key.clone(), value.clone());
        }
        if let Some(seq) = self.seq {
            map.insert("seq".into(), seq.into());
        }
        if !self.dup_seqs.is_empty() {
            map.insert("dupSeqs".into(), self.dup_seqs.clone().into());
        }
        Value::Object(map)
    }
}

impl RelationsFile {
    /// Returns an empty relation list for `from`.
    pub fn new(from: &str) -> Self {
        Self { from: from.to_owned(), relations: Vec::new(), invalid: Vec::new() }
    }

    /// Returns the position of `(to, relation_type)`, or where to insert it.
    pub fn position(&self, to: &str, relation_type: &str) -> Result<usize, usize> {
        self.relations
            .binary_search_by(|e| (e.to.as_str(), e.relation_type.as_str()).cmp(&(to, relation_type)))
    }

    /// Returns true if some relation of this file points at `to`.
    pub fn points_at(&self, to: &str) -> bool {
        let start = self.relations.partition_point(|e| e.to.as_str() < to);
        self.relations.get(start).is_some_and(|e| e.to == to)
    }

    /// Returns true when the file holds nothing worth keeping.
    pub fn is_empty(&self) -> bool {
        self.relations.is_empty() && self.invalid.is_empty()
    }
}

impl NamedRecord for RelationsFile {
    fn parse(content: &str) -> Result<Self, String> {
        let mut map = parse_object(content)?;
        let from = take_string(&mut map, "from")?;
        let Some(Value::Array(items)) = map.shift_remove("relations") else {
            return Err("\"relations\" is not an array".to_owned());
        };
        let mut relations = Vec::with_capacity(items.len());
        let mut invalid = Vec::new();
        for item in items {
            match RelationEntry::parse(&item) {
                Some(entry) => relations.push(entry),
                None => invalid.push(item),
            }
        }
        // Hand edits may break the order or repeat a pair: restore both.
        relations.sort_by(|a, b| (&a.to, &a.relation_type).cmp(&(&b.to, &b.relation_type)));
        relations.dedup_by(|later, first| later.to == first.to && later.relation_type == first.relation_type);
        Ok(Self { from, relations, invalid })
    }

    fn name(&self) -> &str {
        &self.from
    }

    fn render(&self) -> String {
        let mut map = Map::new();
        map.insert("from".into(), self.from.clone().into());
        let mut items: Vec<Value> = self.relations.iter().map(RelationEntry::to_value).collect();
        items.extend(self.invalid.iter().cloned());
        map.insert("relations".into(), Value::Array(items));
        render_value(map)
    }
}

impl IncomingFile {
    /// Returns an empty index for `to`.
    pub fn new(to: &str) -> Self {
        Self { to: to.to_owned(), from: Vec::new() }
    }

    /// Adds `from`; returns true if it was not there.
    pub fn insert(&mut self, from: &str) -> bool {
        match self.from.binary_search_by(|f| f.as_str().cmp(from)) {
            Ok(_) => false,
            Err(at) => {
                self.from.insert(at, from.to_owned());
                true
            }
        }
    }

    /// Removes `from`; returns true if it was there.
    pub fn remove(&mut self, from: &str) -> bool {
        match self.from.binary_search_by(|f| f.as_str().cmp(from)) {
            Ok(at) => {
                self.from.remove(at);
                true
            }
            Err(_) => false,
        }
    }
}

impl NamedRecord for IncomingFile {
    fn parse(content: &str) -> Result<Self, String> {
        let mut map = parse_object(content)?;
        let to = take_string(&mut map, "to")?;
        let mut from = take_strings(&mut map, "from")?;
        from.sort();
        from.dedup();
        Ok(Self { to, from })
    }

    fn name(&self) -> &str {
        &self.to
    }

    fn render(&self) -> String {
        let mut map = Map::new();
        map.insert("to".into(), self.to.clone().into());
        map.insert("from".into(), self.from.clone().into());
        render_value(map)
    }
}

impl UnknownFile {
    /// Parses the content of an unknown-line file.
    pub fn parse(content: &str) -> Result<Self, String> {
        let map = parse_object(content)?;
        parse_raw_line(Value::Object(map)).map(|raw| Self { raw }).ok_or_else(|| "bad unknown line".into())
    }

    /// Renders the content of an unknown-line file.
    pub fn render(&self) -> String {
        match raw_line_value(&self.raw) {
            Value::Object(map) => render_value(map),
            _ => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entity_file_round_trips_with_extras() {
        let mut entity = Entity::new("张伟", "person", &["在上海工作", "喜欢喝咖啡"]);
        entity.extra.insert("id".into(), "p-1".into());
        entity.extra.insert("attributes".into(), serde_json::json!({"born": 1990}));
        let file =
            EntityFile { entity, seq: Some(3), duplicate_lines: vec![RawLine { seq: 9, line: "{}".into() }] };
        let text = file.render();
        assert!(text.ends_with("}\n"));
        assert!(text.contains("\n    \"在上海工作\",\n"), "{text}");
        assert_eq!(EntityFile::parse(&text), Ok(file));
    }

    #[test]
    fn entity_file_rejects_bad_types() {
        assert!(EntityFile::parse("{\"name\":\"a\",\"entityType\":\"t\"}").is_err());
        assert!(EntityFile::parse("{\"name\":1,\"entityType\":\"t\",\"observations\":[]}").is_err());
        assert!(EntityFile::parse("{\"name\":\"a\",\"entityType\":\"t\",\"observations\":[1]}").is_err());
        assert!(EntityFile::parse("{\"name\":\"a\",").is_err());
        assert!(EntityFile::parse("[]").is_err());
    }

    #[test]
    fn relations_file_sorts_keeps_invalid_entries() {
        let text = r#"{"from":"Bob","relations":[{"to":"Z","relationType":"b"},{"to":"A","relationType":"x","seq":4},{"oops":1},{"to":"Z","relationType":"b"}]}"#;
        let file = RelationsFile::parse(text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(file.relations.len(), 2);
        assert_eq!(file.relations[0].to, "A");
        assert_eq!(file.invalid.len(), 1);
        assert!(file.points_at("Z") && !file.points_at("Q"));
        assert_eq!(RelationsFile::parse(&file.render()), Ok(file));
    }
}
