//! Shapes of tool arguments and results, written once and used twice: to
//! render the draft-07 JSON Schemas of `tools/list` exactly as the reference
//! (zod → JSON Schema) does, and to validate arguments (`validate.rs`).

use serde_json::{Map, Value};

/// The draft the reference's schemas declare.
const DRAFT_07: &str = "http://json-schema.org/draft-07/schema#";

/// A JSON value shape.
#[derive(Debug, Clone)]
pub enum Shape {
    /// A string.
    String,
    /// A boolean.
    Boolean,
    /// An integer `>= min` (engram's paging arguments).
    Int {
        /// The smallest accepted value.
        min: u64,
    },
    /// An array of one shape.
    Array(Box<Shape>),
    /// An object with fields in this order; other keys are ignored.
    Object(Vec<Field>),
}

/// One property of an object shape.
#[derive(Debug, Clone)]
pub struct Field {
    /// The key.
    pub name: &'static str,
    /// The value's shape.
    pub shape: Shape,
    /// Whether the key must be present.
    pub required: bool,
    /// The schema description, if any.
    pub description: Option<&'static str>,
}

/// Returns a required field.
pub fn field(name: &'static str, shape: Shape, description: Option<&'static str>) -> Field {
    Field { name, shape, required: true, description }
}

/// Returns an array shape.
pub fn array(item: Shape) -> Shape {
    Shape::Array(Box::new(item))
}

impl Shape {
    /// Returns the JSON Schema of this shape; `strict` adds
    /// `"additionalProperties": false` to every object (output schemas).
    pub fn to_schema(&self, strict: bool) -> Value {
        self.render(strict, None)
    }

    /// Returns the top-level schema of a tool: the `$schema` key first.
    pub fn to_root_schema(&self, strict: bool) -> Value {
        let mut map = Map::new();
        map.insert("$schema".into(), DRAFT_07.into());
        if let Value::Object(rest) = self.to_schema(strict) {
            map.extend(rest);
        }
        Value::Object(map)
    }

    fn render(&self, strict: bool, description: Option<&str>) -> Value {
        let mut map = Map::new();
        match self {
            Self::String => {
                map.insert("type".into(), "string".into());
            }
            Self::Boolean => {
                map.insert("type".into(), "boolean".into());
            }
            Self::Int { min } => {
                map.insert("type".into(), "integer".into());
                map.insert("minimum".into(), (*min).into());
            }
            Self::Array(item) => {
                map.insert("type".into(), "array".into());
                map.insert("items".into(), item.render(strict, None));
            }
            Self::Object(fields) => {
                map.insert("type".into(), "object".into());
                let properties = fields
                    .iter()
                    .map(|f| (f.name.to_owned(), f.shape.render(strict, f.description)))
                    .collect();
                map.insert("properties".into(), Value::Object(properties));
                let required: Vec<Value> =
                    fields.iter().filter(|f| f.required).map(|f| f.name.into()).collect();
                if !required.is_empty() {
                    map.insert("required".into(), Value::Array(required));
                }
            }
        }
        if let Some(description) = description {
            map.insert("description".into(), description.into());
        }
        if strict && matches!(self, Self::Object(_)) {
            map.insert("additionalProperties".into(), false.into());
        }
        Value::Object(map)
    }
}
