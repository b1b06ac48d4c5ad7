//! `delete_observations`: remove given observations from entities.

use crate::graph::args::DeleteObservationsArgs;
use crate::graph::error::GraphError;
use crate::graph::files::{GraphChanges, GraphFiles};
use crate::graph::key::FileKind;
use crate::graph::output::ToolOutput;
use crate::graph::record::EntityFile;
use crate::graph::tx::{Slot, Tx};

/// The reference's fixed result sentence.
const DONE: &str = "Observations deleted successfully";

/// Removes from each named entity every observation equal to a listed one.
/// Unknown entities and observations succeed silently, as the reference.
/// Touches one file per changed entity, none when nothing matched.
pub fn delete_observations(
    files: &dyn GraphFiles,
    args: DeleteObservationsArgs,
) -> Result<(ToolOutput, GraphChanges), GraphError> {
    let mut tx = Tx::new(files);
    for deletion in args.deletions {
        let Slot::Found { path, mut record, .. } =
            tx.find::<EntityFile>(FileKind::Entity, &deletion.entity_name)?
        else {
            continue;
        };
        let before = record.entity.observations.len();
        record.entity.observations.retain(|o| !deletion.observations.contains(o));
        if record.entity.observations.len() != before {
            tx.put(&path, &record);
        }
    }
    Ok((ToolOutput::message(DONE), tx.into_changes()?))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::graph::tools::testing::Harness;

    #[test]
    fn removes_listed_observations() {
        let mut h = Harness::new();
        h.call(
            "create_entities",
            json!({"entities": [
                {"name": "猫🐱", "entityType": "pet", "observations": ["a", "b", "c"]}
            ]}),
        );
        let out = h.call(
            "delete_observations",
            json!({"deletions": [
                {"entityName": "猫🐱", "observations": ["a", "c", "zzz"]},
                {"entityName": "Ghost", "observations": ["a"]}
            ]}),
        );
        assert_eq!(out.text(), "Observations deleted successfully");
        assert_eq!(
            out.structured_content,
            Some(json!({"success": true, "message": "Observations deleted successfully"}))
        );
        assert_eq!(h.snapshot.entity("猫🐱").map(|e| e.observations.clone()), Some(vec!["b".to_owned()]));
        let (_, changes) = h.write(
            "delete_observations",
            json!({"deletions": [{"entityName": "猫🐱", "observations": ["a"]}]}),
        );
        assert!(changes.is_empty());
        let out = h.call("delete_observations", json!({"deletions": [{"entityName": "猫🐱"}]}));
        assert_eq!(
            out.text(),
            "MCP error -32602: Input validation error: Invalid arguments for tool delete_observations: Invalid input: expected array, received undefined at deletions[0].observations"
        );
    }
}
