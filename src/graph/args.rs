//! The arguments of the nine tools: serde types mirroring the reference's
//! input schemas, their shapes, and parsing with the reference's errors.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::model::{Entity, Relation};
use super::output::ToolOutput;
use super::schema::{Field, Shape, array, field};
use super::validate;

/// Arguments of one tool: its name, input shape and parsing.
pub trait ToolArgs: DeserializeOwned {
    /// The tool's name.
    const TOOL: &'static str;

    /// Returns the shape of the arguments object.
    fn shape() -> Shape;

    /// Parses raw call arguments (`None` when the request had none).
    ///
    /// Returns the reference's validation error result when they do not fit.
    fn parse(arguments: Option<&Value>) -> Result<Self, ToolOutput> {
        if let Some(message) = validate::check(Self::TOOL, &Self::shape(), arguments) {
            return Err(ToolOutput::error(message));
        }
        let value = arguments.cloned().unwrap_or_else(|| Value::Object(serde_json::Map::new()));
        serde_json::from_value(value).map_err(|err| {
            ToolOutput::error(format!(
                "MCP error -32602: Input validation error: Invalid arguments for tool {}: {err}",
                Self::TOOL
            ))
        })
    }
}

/// The shape of an entity, with the reference's descriptions.
pub fn entity_shape() -> Shape {
    Shape::Object(vec![
        field("name", Shape::String, Some("The name of the entity")),
        field("entityType", Shape::String, Some("The type of the entity")),
        field(
            "observations",
            array(Shape::String),
            Some("An array of observation contents associated with the entity"),
        ),
    ])
}

/// The shape of a relation, with the reference's descriptions.
pub fn relation_shape() -> Shape {
    Shape::Object(vec![
        field("from", Shape::String, Some("The name of the entity where the relation starts")),
        field("to", Shape::String, Some("The name of the entity where the relation ends")),
        field("relationType", Shape::String, Some("The type of the relation")),
    ])
}

/// `create_entities` arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateEntitiesArgs {
    /// The entities to create.
    pub entities: Vec<Entity>,
}

impl ToolArgs for CreateEntitiesArgs {
    const TOOL: &'static str = "create_entities";
    fn shape() -> Shape {
        Shape::Object(vec![field("entities", array(entity_shape()), None)])
    }
}

/// `create_relations` arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateRelationsArgs {
    /// The relations to create.
    pub relations: Vec<Relation>,
}

impl ToolArgs for CreateRelationsArgs {
    const TOOL: &'static str = "create_relations";
    fn shape() -> Shape {
        Shape::Object(vec![field("relations", array(relation_shape()), None)])
    }
}

/// One item of `add_observations`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservationAddition {
    /// The entity to add to.
    #[serde(rename = "entityName")]
    pub entity_name: String,
    /// The observations to add.
    pub contents: Vec<String>,
}

/// `add_observations` arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddObservationsArgs {
    /// The additions, applied in order.
    pub observations: Vec<ObservationAddition>,
}

impl ToolArgs for AddObservationsArgs {
    const TOOL: &'static str = "add_observations";
    fn shape() -> Shape {
        let item = Shape::Object(vec![
            field("entityName", Shape::String, Some("The name of the entity to add the observations to")),
            field("contents", array(Shape::String), Some("An array of observation contents to add")),
        ]);
        Shape::Object(vec![field("observations", array(item), None)])
    }
}

/// `delete_entities` arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeleteEntitiesArgs {
    /// The names to delete.
    #[serde(rename = "entityNames")]
    pub entity_names: Vec<String>,
}

impl ToolArgs for DeleteEntitiesArgs {
    const TOOL: &'static str = "delete_entities";
    fn shape() -> Shape {
        Shape::Object(vec![field(
            "entityNames",
            array(Shape::String),
            Some("An array of entity names to delete"),
        )])
    }
}

/// One item of `delete_observations`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservationDeletion {
    /// The entity to delete from.
    #[serde(rename = "entityName")]
    pub entity_name: String,
    /// The observations to delete (every equal copy).
    pub observations: Vec<String>,
}

/// `delete_observations` arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeleteObservationsArgs {
    /// The deletions.
    pub deletions: Vec<ObservationDeletion>,
}

impl ToolArgs for DeleteObservationsArgs {
    const TOOL: &'static str = "delete_observations";
    fn shape() -> Shape {
        let item = Shape::Object(vec![
            field("entityName", Shape::String, Some("The name of the entity containing the observations")),
            field("observations", array(Shape::String), Some("An array of observations to delete")),
        ]);
        Shape::Object(vec![field("deletions", array(item), None)])
    }
}

/// `delete_relations` arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeleteRelationsArgs {
    /// The relations to delete.
    pub relations: Vec<Relation>,
}

impl ToolArgs for DeleteRelationsArgs {
    const TOOL: &'static str = "delete_relations";
    fn shape() -> Shape {
        Shape::Object(vec![field(
            "relations",
            array(relation_shape()),
            Some("An array of relations to delete"),
        )])
    }
}

/// Default page size of `read_graph`: at most this many entities per call
/// unless `limit` says otherwise. Graphs up to this size read exactly as in
/// the reference (everything, every relation, one text item).
pub const DEFAULT_READ_LIMIT: u64 = 500;

/// `read_graph` arguments: none in the reference; engram adds optional
/// paging, which old clients never send.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadGraphArgs {
    /// Index of the first entity to return (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// Most entities to return (default [`DEFAULT_READ_LIMIT`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
}

impl ToolArgs for ReadGraphArgs {
    const TOOL: &'static str = "read_graph";
    fn shape() -> Shape {
        Shape::Object(vec![
            Field {
                name: "offset",
                shape: Shape::Int { min: 0 },
                required: false,
                description: Some(
                    "Optional (engram): index of the first entity to return, for paging through a large graph. Default 0.",
                ),
            },
            Field {
                name: "limit",
                shape: Shape::Int { min: 1 },
                required: false,
                description: Some(
                    "Optional (engram): maximum number of entities to return. Default 500; a truncated page says how to get the next one.",
                ),
            },
        ])
    }

    fn parse(arguments: Option<&Value>) -> Result<Self, ToolOutput> {
        // The reference rejects a call without arguments; nothing is lost by
        // reading that as `{}` here.
        let value = arguments.cloned().unwrap_or_else(|| Value::Object(serde_json::Map::new()));
        if let Some(message) = validate::check(Self::TOOL, &Self::shape(), Some(&value)) {
            return Err(ToolOutput::error(message));
        }
        serde_json::from_value(value).map_err(|err| {
            ToolOutput::error(format!(
                "MCP error -32602: Input validation error: Invalid arguments for tool {}: {err}",
                Self::TOOL
            ))
        })
    }
}

/// `search_nodes` arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchNodesArgs {
    /// The text to find, case-insensitively, in names, types and
    /// observations.
    pub query: String,
}

impl ToolArgs for SearchNodesArgs {
    const TOOL: &'static str = "search_nodes";
    fn shape() -> Shape {
        Shape::Object(vec![field(
            "query",
            Shape::String,
            Some("The search query to match against entity names, types, and observation content"),
        )])
    }
}

/// `open_nodes` arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenNodesArgs {
    /// The exact names to open.
    pub names: Vec<String>,
}

impl ToolArgs for OpenNodesArgs {
    const TOOL: &'static str = "open_nodes";
    fn shape() -> Shape {
        Shape::Object(vec![field(
            "names",
            array(Shape::String),
            Some("An array of entity names to retrieve"),
        )])
    }
}
