//! The graph's domain values: entities and relations, as the reference
//! server's tools show them, plus the extra fields engram keeps.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// An entity: a node of the graph, identified by its exact `name`.
///
/// `extra` holds every field beyond the reference's three, in order. Two are
/// reserved for engram's personal toolset: `id` (a string) and `attributes`
/// (an object), see [`Entity::id`] and [`Entity::attributes`]. Extra fields
/// are stored in the entity's file and written on its JSONL line (the
/// reference ignores unknown fields when loading), but they are **not** shown
/// by the nine reference tools, whose output schemas forbid other properties.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entity {
    /// The exact name; compared with `==` (no case or Unicode folding).
    pub name: String,
    /// The type of the entity, free text.
    #[serde(rename = "entityType")]
    pub entity_type: String,
    /// Observations in insertion order, without duplicates when written by
    /// engram.
    pub observations: Vec<String>,
    /// Fields beyond the reference's three, in order.
    #[serde(skip)]
    pub extra: Map<String, Value>,
}

impl Entity {
    /// Returns an entity with no extra fields.
    pub fn new(name: &str, entity_type: &str, observations: &[&str]) -> Self {
        Self {
            name: name.to_owned(),
            entity_type: entity_type.to_owned(),
            observations: observations.iter().map(|&o| o.to_owned()).collect(),
            extra: Map::new(),
        }
    }

    /// Returns the stable id set by the personal toolset, if any.
    pub fn id(&self) -> Option<&str> {
        self.extra.get("id").and_then(Value::as_str)
    }

    /// Returns the structured attributes set by the personal toolset, if any.
    pub fn attributes(&self) -> Option<&Map<String, Value>> {
        self.extra.get("attributes").and_then(Value::as_object)
    }

    /// Returns the entity as the reference shows it:
    /// `{"name", "entityType", "observations"}`.
    pub fn to_reference_json(&self) -> Value {
        let mut map = Map::with_capacity(3);
        map.insert("name".into(), Value::String(self.name.clone()));
        map.insert("entityType".into(), Value::String(self.entity_type.clone()));
        map.insert(
            "observations".into(),
            Value::Array(self.observations.iter().cloned().map(Value::String).collect()),
        );
        Value::Object(map)
    }
}

/// A directed, typed edge between two names. The endpoints need not be
/// entities (the reference has no referential integrity either).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Relation {
    /// The name where the relation starts.
    pub from: String,
    /// The name where the relation ends.
    pub to: String,
    /// The type of the relation, e.g. `works_at`; case-sensitive.
    #[serde(rename = "relationType")]
    pub relation_type: String,
}

impl Relation {
    /// Returns a relation from three string slices.
    pub fn new(from: &str, to: &str, relation_type: &str) -> Self {
        Self { from: from.to_owned(), to: to.to_owned(), relation_type: relation_type.to_owned() }
    }

    /// Returns the relation as the reference shows it:
    /// `{"from", "to", "relationType"}`.
    pub fn to_reference_json(&self) -> Value {
        let mut map = Map::with_capacity(3);
        map.insert("from".into(), Value::String(self.from.clone()));
        map.insert("to".into(), Value::String(self.to.clone()));
        map.insert("relationType".into(), Value::String(self.relation_type.clone()));
        Value::Object(map)
    }
}
