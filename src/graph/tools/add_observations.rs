//! `add_observations`: append new observations to existing entities.

use serde_json::{Map, Value};

use crate::graph::args::AddObservationsArgs;
use crate::graph::error::GraphError;
use crate::graph::files::{GraphChanges, GraphFiles};
use crate::graph::key::FileKind;
use crate::graph::output::ToolOutput;
use crate::graph::record::EntityFile;
use crate::graph::tx::{Slot, Tx};

/// Appends to each named entity the contents it does not hold yet, and
/// reports per item what was added.
///
/// As the reference: items apply in order (a later item sees what an
/// earlier one added); an unknown name fails the whole call with
/// `Entity with name <X> not found` and changes nothing. Fixed: a content
/// repeated inside one item is added once. Touches one file per entity.
pub fn add_observations(
    files: &dyn GraphFiles,
    args: AddObservationsArgs,
) -> Result<(ToolOutput, GraphChanges), GraphError> {
    let mut tx = Tx::new(files);
    let mut results = Vec::with_capacity(args.observations.len());
    for item in args.observations {
        let Slot::Found { path, mut record, .. } =
            tx.find::<EntityFile>(FileKind::Entity, &item.entity_name)?
        else {
            let message = format!("Entity with name {} not found", item.entity_name);
            let changes = GraphChanges { problems: tx.into_changes()?.problems, ..GraphChanges::default() };
            return Ok((ToolOutput::error(message), changes));
        };
        let observations = &mut record.entity.observations;
        let mut added = Vec::new();
        for content in item.contents {
            if !observations.contains(&content) {
                observations.push(content.clone());
                added.push(Value::String(content));
            }
        }
        if !added.is_empty() {
            tx.put(&path, &record);
        }
        let mut result = Map::new();
        result.insert("entityName".into(), item.entity_name.into());
        result.insert("addedObservations".into(), Value::Array(added));
        results.push(Value::Object(result));
    }
    Ok((ToolOutput::list("results", results), tx.into_changes()?))
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
                {"name": "张伟", "entityType": "person", "observations": ["在上海工作"]},
                {"name": "🐶", "entityType": "pet", "observations": []}
            ]}),
        );
        h
    }

    #[test]
    fn adds_new_contents_only() {
        let mut h = setup();
        let out = h.call(
            "add_observations",
            json!({"observations": [
                {"entityName": "张伟", "contents": ["在上海工作", "喜欢喝咖啡", "喜欢喝咖啡"]},
                {"entityName": "🐶", "contents": ["汪"]},
                {"entityName": "张伟", "contents": ["喜欢喝咖啡", "new"]}
            ]}),
        );
        assert_eq!(
            out.text(),
            "[\n  {\n    \"entityName\": \"张伟\",\n    \"addedObservations\": [\n      \"喜欢喝咖啡\"\n    ]\n  },\n  {\n    \"entityName\": \"🐶\",\n    \"addedObservations\": [\n      \"汪\"\n    ]\n  },\n  {\n    \"entityName\": \"张伟\",\n    \"addedObservations\": [\n      \"new\"\n    ]\n  }\n]"
        );
        assert_eq!(
            h.snapshot.entity("张伟").map(|e| e.observations.clone()),
            Some(vec!["在上海工作".to_owned(), "喜欢喝咖啡".to_owned(), "new".to_owned()])
        );
        assert!(
            out.structured_content.is_some_and(|v| v["results"].as_array().is_some_and(|a| a.len() == 3))
        );
    }

    #[test]
    fn unknown_entity_fails_whole_call() {
        let mut h = setup();
        let before = h.files.clone();
        let (out, changes) = h.write(
            "add_observations",
            json!({"observations": [
                {"entityName": "张伟", "contents": ["kept?"]},
                {"entityName": "zhang wei", "contents": ["x"]}
            ]}),
        );
        assert!(out.is_error);
        assert_eq!(out.text(), "Entity with name zhang wei not found");
        assert_eq!(out.structured_content, None);
        assert!(changes.is_empty());
        assert_eq!(h.files, before);
    }

    #[test]
    fn validation_error() {
        let mut h = setup();
        let out =
            h.call("add_observations", json!({"observations": [{"entityName": "张伟", "contents": "x"}]}));
        assert_eq!(
            out.text(),
            "MCP error -32602: Input validation error: Invalid arguments for tool add_observations: Invalid input: expected array, received string at observations[0].contents"
        );
    }
}
