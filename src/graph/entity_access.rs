//! Direct access to single entities, extra fields included, for other
//! toolsets (e.g. the personal toolset's pets and people) that keep their
//! records as graph entities.

use super::error::GraphError;
use super::files::{GraphChanges, GraphFiles};
use super::key::FileKind;
use super::model::Entity;
use super::record::{EntityFile, is_reserved_entity_key};
use super::tools::creation_seq;
use super::tx::{Slot, Tx};

/// Returns the entity named exactly `name`, with its extra fields.
pub fn read_entity(files: &dyn GraphFiles, name: &str) -> Result<Option<Entity>, GraphError> {
    match Tx::new(files).find::<EntityFile>(FileKind::Entity, name)? {
        Slot::Found { record, .. } => Ok(Some(record.entity)),
        Slot::Vacant { .. } => Ok(None),
    }
}

/// Creates the entity, or replaces every field of the existing entity with
/// the same name while keeping its place in the graph order. Extra fields
/// with reserved names (`type`, `name`, `entityType`, `observations`,
/// `seq`, `duplicateLines`) are dropped. Touches one file.
pub fn upsert_entity(
    files: &dyn GraphFiles,
    mut entity: Entity,
    now_ms: u64,
) -> Result<GraphChanges, GraphError> {
    entity.extra.retain(|key, _| !is_reserved_entity_key(key));
    let mut tx = Tx::new(files);
    let (path, file) = match tx.find::<EntityFile>(FileKind::Entity, &entity.name)? {
        Slot::Found { path, record, .. } => (path, EntityFile { entity, ..record }),
        Slot::Vacant { path } => {
            (path, EntityFile { entity, seq: Some(creation_seq(now_ms, 0)), duplicate_lines: Vec::new() })
        }
    };
    tx.put(&path, &file);
    tx.into_changes()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::graph::tools::testing::Harness;

    #[test]
    fn personal_attributes_round_trip_and_stay_hidden() {
        let mut h = Harness::new();
        h.call(
            "create_entities",
            json!({"entities": [
                {"name": "Mimi 🐱", "entityType": "pet", "observations": ["likes fish"]},
                {"name": "Later", "entityType": "t", "observations": []}
            ]}),
        );
        let mut pet = read_entity(&h.files, "Mimi 🐱").expect("memory").expect("exists");
        pet.extra.insert("id".into(), "pet-7".into());
        pet.extra.insert("attributes".into(), json!({"species": "cat", "born": "2019-04-01"}));
        pet.extra.insert("seq".into(), 0.into());
        let changes = upsert_entity(&h.files, pet, 1).expect("memory");
        assert_eq!(changes.writes.len(), 1);
        h.files.apply(&changes);
        h.snapshot.apply(&changes);
        h.assert_consistent();
        let stored = read_entity(&h.files, "Mimi 🐱").expect("memory").expect("exists");
        assert_eq!(stored.id(), Some("pet-7"));
        assert!(stored.extra.get("seq").is_none());
        // Still first in graph order, and the reference tools show only the
        // three reference fields.
        let out = h.call("read_graph", json!({}));
        assert_eq!(
            out.structured_content.as_ref().map(|v| v["entities"][0].clone()),
            Some(json!({"name": "Mimi 🐱", "entityType": "pet", "observations": ["likes fish"]}))
        );
        // Reference tools keep the extra fields when they edit the entity.
        h.call(
            "add_observations",
            json!({"observations": [{"entityName": "Mimi 🐱", "contents": ["naps"]}]}),
        );
        let stored = read_entity(&h.files, "Mimi 🐱").expect("memory").expect("exists");
        assert_eq!(stored.attributes().and_then(|a| a["species"].as_str()), Some("cat"));
        assert_eq!(stored.observations, ["likes fish", "naps"]);
    }
}
