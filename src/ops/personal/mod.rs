//! The personal toolset: one user's profile, entities and events, as files
//! in the graph pack next to that user's knowledge graph.
//!
//! ```text
//! users/<user>/profile/<key>.json             one profile key (history: git log of the file)
//! users/<user>/events/<YYYY>/<MM>/<id>.json   one event, filed by its timestamp
//! users/<user>/graph/entities/…               entities: graph entities with `id`, `attributes`, `status`
//! ```
//!
//! Entities are graph entities (see `ARCHITECTURE.md`, "Structured memory"):
//! `entity_type` is the `entityType`, the name is the graph name, each
//! attribute is also an observation `key: value` (so `search_nodes` finds
//! it), and `id`, `attributes`, `status`, `created_at`, `updated_at` are
//! extra fields of the entity file that the nine graph tools keep but do not
//! show. Every tool only ever builds paths below `users/<user>/`.
//!
//! [`user_graph`] is one user's knowledge graph (the `graph` toolset).

pub(super) mod user_graph;

use std::collections::BTreeMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, SecondsFormat, TimeZone, Utc};
use serde_json::{Map, Value, json};

use super::{Caller, EngramError, Result};
use crate::graph::{Entity, GraphChanges, read_entity, upsert_entity};
use crate::store::{Changes, LogQuery};
use crate::timerange;
use user_graph::{UserFiles, UserGraph};

/// Profile categories.
pub const PROFILE_CATEGORIES: [&str; 3] = ["basic_info", "preferences", "habits"];
/// Event types.
pub const EVENT_TYPES: [&str; 6] = ["purchase", "illness", "maintenance", "activity", "milestone", "other"];
/// The URI of the event templates resource.
pub const EVENT_TEMPLATES_URI: &str = "memory://event-templates";

/// Longest profile key, entity type or name (characters).
const MAX_LABEL_CHARS: usize = 200;
/// Largest JSON value (profile value, attributes, metadata) in bytes.
const MAX_VALUE_BYTES: usize = 64 * 1024;

fn invalid(field: &'static str, reason: impl Into<String>) -> EngramError {
    EngramError::Invalid { field, reason: reason.into() }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

fn file_text(value: &Value) -> String {
    let mut s = pretty(value);
    s.push('\n');
    s
}

fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Parses an ISO 8601 timestamp; a date alone is that day's start; no offset means UTC.
fn parse_timestamp(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    for fmt in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%d %H:%M"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(s, fmt) {
            return Some(Utc.from_utc_datetime(&t));
        }
    }
    let date = NaiveDate::parse_from_str(s, "%Y-%m-%d").ok().filter(|_| s.len() == 10)?;
    Some(Utc.from_utc_datetime(&date.and_hms_opt(0, 0, 0)?))
}

fn check_label(field: &'static str, s: &str) -> Result<()> {
    if s.trim().is_empty() {
        return Err(invalid(field, "must not be empty"));
    }
    if s.chars().count() > MAX_LABEL_CHARS {
        return Err(invalid(field, format!("longer than {MAX_LABEL_CHARS} characters")));
    }
    Ok(())
}

fn check_size(field: &'static str, v: &Value) -> Result<()> {
    if serde_json::to_string(v).map(|s| s.len()).unwrap_or(0) > MAX_VALUE_BYTES {
        return Err(invalid(field, format!("larger than {MAX_VALUE_BYTES} bytes of JSON")));
    }
    Ok(())
}

/// A profile key becomes a file name: no separators, control characters or leading dot.
fn check_key(key: &str) -> Result<()> {
    check_label("key", key)?;
    if key != key.trim()
        || key.starts_with('.')
        || key.chars().any(|c| c == '/' || c == '\\' || c.is_control())
    {
        return Err(invalid(
            "key",
            format!(
                "{key:?} cannot be a profile key: no `/`, `\\`, control characters, surrounding spaces or leading `.`"
            ),
        ));
    }
    Ok(())
}

fn check_category(category: &str) -> Result<()> {
    if PROFILE_CATEGORIES.contains(&category) {
        Ok(())
    } else {
        Err(invalid(
            "category",
            format!("{category:?} is not a profile category; use one of {}", PROFILE_CATEGORIES.join(", ")),
        ))
    }
}

static ID_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A new id: `<prefix>_` and 12 hex digits from a randomly keyed hash of the
/// time, the process and a counter.
fn new_id(prefix: &str) -> String {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0),
    );
    h.write_u32(std::process::id());
    h.write_u64(ID_COUNTER.fetch_add(1, Ordering::Relaxed));
    format!("{prefix}_{:012x}", h.finish() & 0xffff_ffff_ffff)
}

fn attribute_observation(key: &str, value: &Value) -> String {
    match value {
        Value::String(s) => format!("{key}: {s}"),
        other => format!("{key}: {other}"),
    }
}

fn attribute_observations(attributes: &Map<String, Value>) -> Vec<String> {
    attributes.iter().map(|(k, v)| attribute_observation(k, v)).collect()
}

/// The personal-toolset view of a graph entity that has an id.
fn entity_json(e: &Entity) -> Value {
    let get = |k: &str| e.extra.get(k).cloned().unwrap_or(Value::Null);
    json!({
        "id": get("id"),
        "name": e.name,
        "entity_type": e.entity_type,
        "attributes": e.extra.get("attributes").cloned().unwrap_or_else(|| json!({})),
        "status": e.extra.get("status").cloned().unwrap_or_else(|| "active".into()),
        "observations": e.observations,
        "created_at": get("created_at"),
        "updated_at": get("updated_at"),
    })
}

fn status_of(e: &Entity) -> &str {
    e.extra.get("status").and_then(Value::as_str).unwrap_or("active")
}

/// The profile, entity and event tools of one user.
pub struct Personal {
    graph: Arc<UserGraph>,
}

impl Personal {
    /// The personal tools over `graph` (its user and pack).
    pub fn new(graph: Arc<UserGraph>) -> Self {
        Self { graph }
    }

    fn now(&self) -> DateTime<Utc> {
        self.graph.engram().now()
    }

    fn path(&self, rest: &str) -> String {
        format!("{}{rest}", self.graph.prefix())
    }

    fn profile_path(&self, key: &str) -> String {
        self.path(&format!("profile/{key}.json"))
    }

    /// Reads every file below `dir` (relative to the user's directory) at HEAD.
    fn read_dir(&self, dir: &str) -> Result<Vec<(String, String)>> {
        let full = self.path(dir);
        if !crate::store::PackRepo::is_repository(&self.graph.pack_dir()) {
            return Ok(Vec::new());
        }
        self.graph.with_repo(|repo| repo.read_current(|snap| Ok(snap.read_files_recursive(&full)?)))
    }

    // ----- profile -----

    /// `update_profile`: sets a key. The answer carries the seed contract's keys
    /// (`updated`: the key now holds the value; `had_previous_value`; `previous_value`,
    /// `null` when there was none) and engram's own (`replaced`, `changed`, `commit`).
    pub fn update_profile(
        &self,
        key: &str,
        value: &Value,
        category: Option<&str>,
        caller: &Caller,
    ) -> Result<String> {
        check_key(key)?;
        if let Err(e) = crate::pack_path::PackPath::check_component(&format!("{key}.json")) {
            return Err(invalid("key", format!("{e}; a profile key becomes the file name <key>.json")));
        }
        check_size("value", value)?;
        if let Some(c) = category {
            check_category(c)?;
        }
        let path = self.profile_path(key);
        let now = iso(self.now());
        let (committed, (previous, category)) = self.graph.write(caller, |_, snap| {
            let previous: Option<Value> = snap.read_text(&path)?.and_then(|t| serde_json::from_str(&t).ok());
            let category = category
                .map(str::to_owned)
                .or_else(|| previous.as_ref().and_then(|p| p["category"].as_str().map(str::to_owned)))
                .unwrap_or_else(|| "basic_info".to_owned());
            let mut changes = Changes::default();
            let same =
                previous.as_ref().is_some_and(|p| &p["value"] == value && p["category"] == category.as_str());
            if !same {
                let record = json!({"key": key, "value": value, "category": category, "updated_at": now});
                changes.put(path.clone(), file_text(&record));
            }
            let subject = format!("profile: {key} = {}", crate::memory::single_line(&value.to_string()));
            Ok((GraphChanges::default(), changes, subject, (previous, category)))
        })?;
        let replaced = previous.as_ref().is_some_and(|p| &p["value"] != value);
        Ok(pretty(&json!({
            "key": key,
            "value": value,
            "category": category,
            "updated": true,
            "had_previous_value": previous.is_some(),
            "replaced": replaced,
            "previous_value": previous.as_ref().map(|p| p["value"].clone()).unwrap_or(Value::Null),
            "previous_updated_at": previous.as_ref().map(|p| p["updated_at"].clone()).unwrap_or(Value::Null),
            "changed": committed.is_some(),
            "commit": committed.map(|c| c.short),
        })))
    }

    fn profile_records(&self) -> Result<Vec<Value>> {
        let mut out = Vec::new();
        for (_, text) in self.read_dir("profile")? {
            if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(&text) {
                out.push(v);
            }
        }
        Ok(out)
    }

    /// `query_profile`: the keys asked for (all when none), optionally of one category.
    pub fn query_profile(&self, keys: Option<&[String]>, category: Option<&str>) -> Result<String> {
        if let Some(c) = category {
            check_category(c)?;
        }
        let records = self.profile_records()?;
        let wanted = |r: &Value| {
            keys.is_none_or(|ks| ks.iter().any(|k| r["key"].as_str() == Some(k)))
                && category.is_none_or(|c| r["category"].as_str() == Some(c))
        };
        let found: Vec<Value> = records.iter().filter(|r| wanted(r)).cloned().collect();
        let missing: Vec<&String> = keys
            .unwrap_or_default()
            .iter()
            .filter(|k| !records.iter().any(|r| r["key"].as_str() == Some(k.as_str())))
            .collect();
        Ok(pretty(&json!({"profile": found, "missing": missing})))
    }

    /// `delete_profile`: removes a key (its history stays in git).
    pub fn delete_profile(&self, key: &str, caller: &Caller) -> Result<String> {
        check_key(key)?;
        let path = self.profile_path(key);
        let (committed, previous) = self.graph.write(caller, |_, snap| {
            let Some(text) = snap.read_text(&path)? else {
                return Err(invalid(
                    "key",
                    format!("no profile key {key:?} for user {:?}", self.graph.user()),
                ));
            };
            let mut changes = Changes::default();
            changes.remove(path.clone());
            let previous: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            Ok((GraphChanges::default(), changes, format!("profile: delete {key}"), previous))
        })?;
        Ok(pretty(&json!({
            "deleted": key,
            "previous_value": previous.get("value").cloned().unwrap_or(Value::Null),
            "commit": committed.map(|c| c.short),
        })))
    }

    /// `profile_history`: a key's values, newest first, from the git history of its file.
    pub fn profile_history(&self, key: &str, limit: usize) -> Result<String> {
        check_key(key)?;
        let path = self.profile_path(key);
        if !crate::store::PackRepo::is_repository(&self.graph.pack_dir()) {
            return Ok(pretty(&json!({"key": key, "history": []})));
        }
        let commits = self.graph.with_repo(|repo| {
            Ok(repo.log(&LogQuery {
                limit: None,
                since: None,
                path: Some(path.clone()),
                with_files: true,
            })?)
        })?;
        let mut history = Vec::new();
        for c in commits.iter().take(limit.max(1)) {
            let Some(file) = c.files.iter().find(|f| f.path == path) else { continue };
            let committed_at = DateTime::<Utc>::from_timestamp(c.time, 0).map(iso);
            let entry = match &file.new {
                Some(text) => {
                    let v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
                    json!({"value": v["value"], "category": v["category"], "updated_at": v["updated_at"],
                           "deleted": false, "commit": c.short(), "committed_at": committed_at})
                }
                None => {
                    json!({"value": null, "deleted": true, "commit": c.short(), "committed_at": committed_at})
                }
            };
            history.push(entry);
        }
        Ok(pretty(&json!({"key": key, "history": history})))
    }

    // ----- entities -----

    /// The name of the entity with this id (or this exact name, when it has an id), at HEAD.
    fn find_entity(&self, id_or_name: &str) -> Result<Option<(String, String)>> {
        self.graph.read(|s| {
            s.entities()
                .find(|e| e.id() == Some(id_or_name))
                .or_else(|| s.entity(id_or_name).filter(|e| e.id().is_some()))
                .and_then(|e| Some((e.id()?.to_owned(), e.name.clone())))
        })
    }

    fn unknown_entity(&self, id: &str) -> EngramError {
        invalid(
            "entity_id",
            format!("no entity {id:?} for user {:?}; list_entities shows the ids", self.graph.user()),
        )
    }

    /// Reads the entity `name` at the commit being modified and checks it still has `id`.
    fn entity_at(&self, files: &UserFiles<'_, '_>, name: &str, id: &str) -> Result<Entity> {
        match read_entity(files, name)? {
            Some(e) if e.id() == Some(id) => Ok(e),
            _ => Err(self.unknown_entity(id)),
        }
    }

    /// `create_entity`: a new entity (a graph entity with an id); returns its id.
    pub fn create_entity(
        &self,
        entity_type: &str,
        name: Option<&str>,
        attributes: Option<&Map<String, Value>>,
        caller: &Caller,
    ) -> Result<String> {
        check_label("entity_type", entity_type)?;
        if let Some(n) = name {
            check_label("name", n)?;
        }
        let attributes = attributes.cloned().unwrap_or_default();
        check_size("attributes", &Value::Object(attributes.clone()))?;
        let id = new_id("ent");
        let name = name.map(str::to_owned).unwrap_or_else(|| format!("{entity_type} {id}"));
        let now = self.now();
        let now_ms = u64::try_from(now.timestamp_millis()).unwrap_or(0);
        let (_, (entity, linked)) = self.graph.write(caller, |files, _| {
            let existing = read_entity(files, &name)?;
            if let Some(e) = &existing
                && let Some(other) = e.id()
            {
                return Err(invalid(
                    "name",
                    format!("an entity named {name:?} already exists (id {other}); use update_entity, or choose another name"),
                ));
            }
            let linked = existing.is_some();
            let mut entity = existing.unwrap_or_else(|| Entity::new(&name, entity_type, &[]));
            entity.entity_type = entity_type.to_owned();
            for o in attribute_observations(&attributes) {
                if !entity.observations.contains(&o) {
                    entity.observations.push(o);
                }
            }
            entity.extra.insert("id".into(), id.clone().into());
            entity.extra.insert("attributes".into(), Value::Object(attributes.clone()));
            entity.extra.insert("status".into(), "active".into());
            entity.extra.insert("created_at".into(), iso(now).into());
            entity.extra.insert("updated_at".into(), iso(now).into());
            let changes = upsert_entity(files, entity.clone(), now_ms)?;
            let subject = format!("entity: create {entity_type} {name} ({id})");
            Ok((changes, Changes::default(), subject, (entity, linked)))
        })?;
        let mut out = entity_json(&entity);
        if let Value::Object(m) = &mut out {
            m.insert("linked_existing_graph_entity".into(), linked.into());
        }
        Ok(pretty(&out))
    }

    /// `update_entity`: renames, merges attributes (`null` removes a key), sets the status.
    pub fn update_entity(
        &self,
        entity_id: &str,
        name: Option<&str>,
        attributes: Option<&Map<String, Value>>,
        status: Option<&str>,
        caller: &Caller,
    ) -> Result<String> {
        if let Some(n) = name {
            check_label("name", n)?;
        }
        if let Some(s) = status
            && !matches!(s, "active" | "inactive")
        {
            return Err(invalid("status", format!("{s:?} is not a status; use active or inactive")));
        }
        if let Some(a) = attributes {
            check_size("attributes", &Value::Object(a.clone()))?;
        }
        let (id, old_name) = self.find_entity(entity_id)?.ok_or_else(|| self.unknown_entity(entity_id))?;
        let has_relations = name.is_some()
            && self.graph.read(|s| s.relations().any(|r| r.from == old_name || r.to == old_name))?;
        let now = self.now();
        let now_ms = u64::try_from(now.timestamp_millis()).unwrap_or(0);
        let (_, entity) = self.graph.write(caller, |files, _| {
            let mut entity = self.entity_at(files, &old_name, &id)?;
            let old_attributes = entity.attributes().cloned().unwrap_or_default();
            let mut new_attributes = old_attributes.clone();
            if let Some(a) = attributes {
                for (k, v) in a {
                    if v.is_null() {
                        new_attributes.shift_remove(k);
                    } else {
                        new_attributes.insert(k.clone(), v.clone());
                    }
                }
            }
            let old_obs = attribute_observations(&old_attributes);
            entity.observations.retain(|o| !old_obs.contains(o) && !o.starts_with("status: "));
            for o in attribute_observations(&new_attributes) {
                if !entity.observations.contains(&o) {
                    entity.observations.push(o);
                }
            }
            let status = status.unwrap_or_else(|| status_of(&entity)).to_owned();
            if status == "inactive" {
                entity.observations.push("status: inactive".into());
            }
            entity.extra.insert("attributes".into(), Value::Object(new_attributes));
            entity.extra.insert("status".into(), status.into());
            entity.extra.insert("updated_at".into(), iso(now).into());
            let mut graph = GraphChanges::default();
            if let Some(new_name) = name.filter(|n| *n != old_name) {
                if read_entity(files, new_name)?.is_some() {
                    return Err(invalid("name", format!("an entity named {new_name:?} already exists")));
                }
                if has_relations {
                    return Err(invalid(
                        "name",
                        format!("{old_name:?} has relations in the graph; renaming would break them (relations name their endpoints). Delete or recreate the relations first"),
                    ));
                }
                let delete = json!({"entityNames": [old_name]});
                if let Some(Ok(crate::graph::GraphCall::Write(call))) =
                    crate::graph::GraphCall::parse("delete_entities", Some(&delete))
                {
                    let (_, removed) = call.run(files, now_ms)?;
                    graph.removes.extend(removed.removes);
                    graph.writes.extend(removed.writes);
                }
                entity.name = new_name.to_owned();
            }
            let upsert = upsert_entity(files, entity.clone(), now_ms)?;
            graph.removes.retain(|p| !upsert.writes.iter().any(|(w, _)| w == p));
            graph.writes.extend(upsert.writes);
            let subject = format!("entity: update {} ({id})", entity.name);
            Ok((graph, Changes::default(), subject, entity))
        })?;
        Ok(pretty(&entity_json(&entity)))
    }

    /// `list_entities`: entities with an id, optionally of one type and status.
    pub fn list_entities(&self, entity_type: Option<&str>, status: &str) -> Result<String> {
        if !matches!(status, "active" | "inactive" | "all") {
            return Err(invalid(
                "status",
                format!("{status:?} is not a status filter; use active, inactive or all"),
            ));
        }
        let list = self.graph.read(|s| {
            s.entities()
                .filter(|e| e.id().is_some())
                .filter(|e| entity_type.is_none_or(|t| e.entity_type == t))
                .filter(|e| status == "all" || status_of(e) == status)
                .map(entity_json)
                .collect::<Vec<_>>()
        })?;
        Ok(pretty(&json!({"entities": list, "count": list.len()})))
    }

    /// `delete_entity`: soft delete (status inactive); events keep their links.
    pub fn delete_entity(&self, entity_id: &str, caller: &Caller) -> Result<String> {
        let text = self.update_entity(entity_id, None, None, Some("inactive"), caller)?;
        Ok(text)
    }

    // ----- events -----

    /// `add_event`: records an event; returns its id.
    #[allow(clippy::too_many_arguments)]
    pub fn add_event(
        &self,
        event_type: &str,
        description: &str,
        related: &[String],
        metadata: Option<&Map<String, Value>>,
        timestamp: Option<&str>,
        importance: Option<f64>,
        caller: &Caller,
    ) -> Result<String> {
        if !EVENT_TYPES.contains(&event_type) {
            return Err(invalid(
                "event_type",
                format!("{event_type:?} is not an event type; use one of {}", EVENT_TYPES.join(", ")),
            ));
        }
        if description.trim().is_empty() {
            return Err(invalid("description", "must not be empty"));
        }
        let importance = importance.unwrap_or(0.5);
        if !(0.0..=1.0).contains(&importance) || importance.is_nan() {
            return Err(invalid("importance", format!("{importance} is not between 0 and 1")));
        }
        let metadata = metadata.cloned().unwrap_or_default();
        check_size("metadata", &Value::Object(metadata.clone()))?;
        check_size("description", &Value::String(description.to_owned()))?;
        let now = self.now();
        let at = match timestamp {
            Some(t) => parse_timestamp(t).ok_or_else(|| {
                invalid("timestamp", format!("{t:?} is not ISO 8601 (e.g. 2026-11-21, 2026-11-21T18:30:00Z, 2026-11-21T18:30:00+08:00)"))
            })?,
            None => now,
        };
        let id = new_id("evt");
        let (year, month) = (at.year(), at.month());
        let path = self.path(&format!("events/{year:04}/{month:02}/{id}.json"));
        let now_ms = u64::try_from(now.timestamp_millis()).unwrap_or(0);
        // Resolve links at HEAD: an entity id, or the exact name of a graph entity.
        let mut targets: Vec<(String, Option<String>)> = Vec::new(); // (name, id)
        let mut unknown = Vec::new();
        for r in related {
            let found = self.graph.read(|s| {
                s.entities()
                    .find(|e| e.id() == Some(r.as_str()))
                    .or_else(|| s.entity(r))
                    .map(|e| (e.name.clone(), e.id().map(str::to_owned)))
            })?;
            match found {
                Some(t) if !targets.contains(&t) => targets.push(t),
                Some(_) => {}
                None => unknown.push(r.clone()),
            }
        }
        if !unknown.is_empty() {
            return Err(invalid(
                "related_entity_ids",
                format!(
                    "unknown entities for user {:?}: {} (give entity ids from list_entities or exact graph entity names)",
                    self.graph.user(),
                    unknown.join(", ")
                ),
            ));
        }
        let (committed, event) = self.graph.write(caller, |files, _| {
            let mut graph = GraphChanges::default();
            let mut ids = Vec::new();
            for (name, id) in &targets {
                let Some(mut entity) = read_entity(files, name)? else {
                    return Err(invalid(
                        "related_entity_ids",
                        format!("entity {name:?} was deleted meanwhile"),
                    ));
                };
                match (id, entity.id().map(str::to_owned)) {
                    (Some(want), Some(have)) if *want == have => ids.push(have),
                    (None, Some(have)) => ids.push(have),
                    (None, None) => {
                        // Link a plain graph entity: give it an id (same commit).
                        let new = new_id("ent");
                        entity.extra.insert("id".into(), new.clone().into());
                        entity.extra.entry("attributes").or_insert_with(|| json!({}));
                        entity.extra.insert("status".into(), "active".into());
                        entity.extra.insert("created_at".into(), iso(now).into());
                        entity.extra.insert("updated_at".into(), iso(now).into());
                        let c = upsert_entity(files, entity, now_ms)?;
                        graph.writes.extend(c.writes);
                        ids.push(new);
                    }
                    _ => {
                        return Err(invalid(
                            "related_entity_ids",
                            format!("entity {name:?} changed meanwhile; retry"),
                        ));
                    }
                }
            }
            let event = json!({
                "id": id,
                "event_type": event_type,
                "description": description,
                "timestamp": iso(at),
                "importance": importance,
                "related_entity_ids": ids,
                "metadata": metadata,
                "created_at": iso(now),
            });
            let mut changes = Changes::default();
            changes.put(path.clone(), file_text(&event));
            let subject = format!("event: {event_type} — {}", crate::memory::single_line(description));
            Ok((graph, changes, subject, event))
        })?;
        let mut out = event;
        if let Value::Object(m) = &mut out {
            m.insert("commit".into(), committed.map(|c| c.short).into());
        }
        Ok(pretty(&out))
    }

    fn events(&self) -> Result<Vec<Value>> {
        let mut out: Vec<Value> = self
            .read_dir("events")?
            .into_iter()
            .filter_map(|(_, t)| serde_json::from_str::<Value>(&t).ok().filter(Value::is_object))
            .collect();
        // Newest first; ties by id for a stable order.
        out.sort_by(|a, b| {
            let key = |v: &Value| {
                (v["timestamp"].as_str().and_then(parse_timestamp), v["id"].as_str().map(str::to_owned))
            };
            key(b).cmp(&key(a))
        });
        Ok(out)
    }

    /// `search_events`: newest first, filtered by text, type and time range.
    pub fn search_events(
        &self,
        query: Option<&str>,
        event_type: Option<&str>,
        time_range: Option<&str>,
        limit: usize,
    ) -> Result<String> {
        if let Some(t) = event_type
            && !EVENT_TYPES.contains(&t)
        {
            return Err(invalid(
                "event_type",
                format!("{t:?} is not an event type; use one of {}", EVENT_TYPES.join(", ")),
            ));
        }
        let range = match time_range {
            Some(r) => {
                Some(timerange::parse(r, self.now()).map_err(|e| invalid("time_range", e.to_string()))?)
            }
            None => None,
        };
        let names: BTreeMap<String, String> = self
            .graph
            .read(|s| s.entities().filter_map(|e| Some((e.id()?.to_owned(), e.name.clone()))).collect())?;
        let needle = query.map(str::to_lowercase).filter(|q| !q.trim().is_empty());
        let matches = |e: &Value| {
            if event_type.is_some_and(|t| e["event_type"].as_str() != Some(t)) {
                return false;
            }
            if let Some(range) = &range {
                match e["timestamp"].as_str().and_then(parse_timestamp) {
                    Some(t) if range.contains(t.timestamp()) => {}
                    _ => return false,
                }
            }
            let Some(q) = &needle else { return true };
            let related: Vec<&str> = e["related_entity_ids"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .filter_map(|id| names.get(id).map(String::as_str))
                        .collect()
                })
                .unwrap_or_default();
            let hay = format!(
                "{}\n{}\n{}\n{}",
                e["description"].as_str().unwrap_or(""),
                e["event_type"].as_str().unwrap_or(""),
                e["metadata"],
                related.join("\n")
            )
            .to_lowercase();
            hay.contains(q.as_str())
        };
        let all: Vec<Value> = self.events()?.into_iter().filter(|e| matches(e)).collect();
        let total = all.len();
        let events: Vec<Value> = all.into_iter().take(limit).collect();
        Ok(pretty(&json!({"events": events, "count": events.len(), "total": total})))
    }

    /// `query_entity_timeline`: the events linked to an entity, newest first.
    pub fn query_entity_timeline(&self, entity_id: &str, limit: usize) -> Result<String> {
        let entity = self.graph.read(|s| {
            s.entities()
                .find(|e| e.id() == Some(entity_id))
                .or_else(|| s.entity(entity_id).filter(|e| e.id().is_some()))
                .cloned()
        })?;
        let Some(entity) = entity else { return Err(self.unknown_entity(entity_id)) };
        let id = entity.id().unwrap_or_default().to_owned();
        let linked = |e: &Value| {
            e["related_entity_ids"]
                .as_array()
                .is_some_and(|a| a.iter().any(|x| x.as_str() == Some(id.as_str())))
        };
        let all: Vec<Value> = self.events()?.into_iter().filter(|e| linked(e)).collect();
        let total = all.len();
        let events: Vec<Value> = all.into_iter().take(limit).collect();
        Ok(pretty(
            &json!({"entity": entity_json(&entity), "events": events, "count": events.len(), "total": total}),
        ))
    }

    /// The `memory://event-templates` resource: event types, their usual entities and metadata.
    pub fn event_templates() -> String {
        pretty(&json!({
            "event_types": {
                "purchase": {"description": "Something bought or paid for", "usual_entities": ["property", "vehicle", "pet", "person"],
                             "metadata": {"amount": "number", "currency": "ISO 4217 code, e.g. CNY", "store": "string", "item": "string"}},
                "illness": {"description": "Someone (a person or a pet) was ill or injured", "usual_entities": ["pet", "person"],
                            "metadata": {"symptoms": "string", "diagnosis": "string", "cost": "number", "currency": "string", "clinic": "string"}},
                "maintenance": {"description": "Upkeep or repair of a vehicle or property", "usual_entities": ["vehicle", "property"],
                                "metadata": {"service": "string", "cost": "number", "currency": "string", "mileage": "number", "provider": "string"}},
                "activity": {"description": "Something done: a trip, a walk, a class, a meeting", "usual_entities": ["person", "pet"],
                             "metadata": {"location": "string", "duration_minutes": "number", "with": "list of names"}},
                "milestone": {"description": "A first, an anniversary, a birthday, a graduation", "usual_entities": ["person", "pet", "property"],
                              "metadata": {"kind": "string", "age": "number"}},
                "other": {"description": "Anything else worth remembering", "usual_entities": [], "metadata": {}}
            },
            "entity_types": ["pet", "property", "vehicle", "person", "(any other type)"],
            "timestamp": "ISO 8601; a date without a time is that day (UTC)",
            "importance": "0..1, default 0.5",
            "time_range": "last_week, last_month, last_year, YYYY, YYYY-MM, YYYY-MM-DD, START..END",
            "example": {"tool": "add_event", "arguments": {"event_type": "illness", "description": "旺财昨天生病了，花了 2000 元",
                        "related_entity_ids": ["<id from create_entity>"], "metadata": {"cost": 2000, "currency": "CNY"}, "timestamp": "2026-11-21"}}
        }))
    }
}
