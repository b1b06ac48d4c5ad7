//! Argument validation with the reference's exact error text.
//!
//! The reference validates with zod 4 through the TypeScript MCP SDK, which
//! collects every issue (object keys in schema order, array items in index
//! order), renders each as `<message> at <path>` (`entities[0].observations`;
//! just `<message>` at the root), joins them with `\n`, and returns an
//! `isError` result:
//! `MCP error -32602: Input validation error: Invalid arguments for tool
//! <tool>: <issues>`. Unknown keys are accepted and dropped.

use serde_json::Value;

use super::schema::Shape;

/// One step of an issue's path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(&'static str),
    Index(usize),
}

/// One validation issue.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Issue {
    message: String,
    path: Vec<Step>,
}

/// Returns the reference's error text for a call of `tool` whose arguments
/// (`None` when absent) do not fit `shape`, or `None` when they fit.
pub fn check(tool: &str, shape: &Shape, arguments: Option<&Value>) -> Option<String> {
    let mut issues = Vec::new();
    let mut path = Vec::new();
    walk(shape, arguments, &mut path, &mut issues);
    if issues.is_empty() {
        return None;
    }
    let details: Vec<String> = issues.iter().map(render_issue).collect();
    Some(format!(
        "MCP error -32602: Input validation error: Invalid arguments for tool {tool}: {}",
        details.join("\n")
    ))
}

fn render_issue(issue: &Issue) -> String {
    if issue.path.is_empty() {
        return issue.message.clone();
    }
    let mut out = String::new();
    for (index, step) in issue.path.iter().enumerate() {
        match step {
            Step::Key(key) if index == 0 => out.push_str(key),
            Step::Key(key) => {
                out.push('.');
                out.push_str(key);
            }
            Step::Index(i) if index == 0 => out.push_str(&i.to_string()),
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    format!("{} at {out}", issue.message)
}

/// Returns the type name zod reports for a received value.
fn received(value: Option<&Value>) -> &'static str {
    match value {
        None => "undefined",
        Some(Value::Null) => "null",
        Some(Value::Bool(_)) => "boolean",
        Some(Value::Number(_)) => "number",
        Some(Value::String(_)) => "string",
        Some(Value::Array(_)) => "array",
        Some(Value::Object(_)) => "object",
    }
}

fn expected(path: &[Step], issues: &mut Vec<Issue>, what: &str, value: Option<&Value>) {
    issues.push(Issue {
        message: format!("Invalid input: expected {what}, received {}", received(value)),
        path: path.to_vec(),
    });
}

fn walk(shape: &Shape, value: Option<&Value>, path: &mut Vec<Step>, issues: &mut Vec<Issue>) {
    match (shape, value) {
        (Shape::String, Some(Value::String(_))) | (Shape::Boolean, Some(Value::Bool(_))) => {}
        (Shape::String, _) => expected(path, issues, "string", value),
        (Shape::Boolean, _) => expected(path, issues, "boolean", value),
        (Shape::Int { min }, Some(Value::Number(number))) => {
            if let Some(n) = number.as_u64() {
                if n < *min {
                    issues.push(Issue {
                        message: format!("Too small: expected number to be >={min}"),
                        path: path.clone(),
                    });
                }
            } else if number.as_i64().is_some() {
                issues.push(Issue {
                    message: format!("Too small: expected number to be >={min}"),
                    path: path.clone(),
                });
            } else {
                expected(path, issues, "int", value);
            }
        }
        (Shape::Int { .. }, _) => expected(path, issues, "number", value),
        (Shape::Array(item), Some(Value::Array(items))) => {
            for (index, element) in items.iter().enumerate() {
                path.push(Step::Index(index));
                walk(item, Some(element), path, issues);
                path.pop();
            }
        }
        (Shape::Array(_), _) => expected(path, issues, "array", value),
        (Shape::Object(fields), Some(Value::Object(map))) => {
            for field in fields {
                let member = map.get(field.name);
                if member.is_none() && !field.required {
                    continue;
                }
                path.push(Step::Key(field.name));
                walk(&field.shape, member, path, issues);
                path.pop();
            }
        }
        (Shape::Object(_), _) => expected(path, issues, "object", value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::schema::{Field, array, field};
    use serde_json::json;

    fn entities_shape() -> Shape {
        let entity = Shape::Object(vec![
            field("name", Shape::String, None),
            field("entityType", Shape::String, None),
            field("observations", array(Shape::String), None),
        ]);
        Shape::Object(vec![field("entities", array(entity), None)])
    }

    #[test]
    fn reports_missing_nested_field_like_zod() {
        let args = json!({"entities": [{"name": "a", "entityType": "t"}]});
        assert_eq!(
            check("create_entities", &entities_shape(), Some(&args)).as_deref(),
            Some(
                "MCP error -32602: Input validation error: Invalid arguments for tool create_entities: \
                 Invalid input: expected array, received undefined at entities[0].observations"
            )
        );
    }

    #[test]
    fn collects_every_issue_in_order() {
        let args = json!({"entities": [{"name": 1, "entityType": null, "observations": ["x", 2]}, "y"]});
        let text = check("create_entities", &entities_shape(), Some(&args)).expect("invalid");
        let issues = text.split_once("create_entities: ").map(|(_, rest)| rest).expect("prefix");
        assert_eq!(
            issues,
            "Invalid input: expected string, received number at entities[0].name\n\
             Invalid input: expected string, received null at entities[0].entityType\n\
             Invalid input: expected string, received number at entities[0].observations[1]\n\
             Invalid input: expected object, received string at entities[1]"
        );
    }

    #[test]
    fn root_and_optional_fields() {
        assert_eq!(
            check("x", &entities_shape(), None).as_deref(),
            Some(
                "MCP error -32602: Input validation error: Invalid arguments for tool x: Invalid input: expected object, received undefined"
            )
        );
        let paging = Shape::Object(vec![Field {
            name: "limit",
            shape: Shape::Int { min: 1 },
            required: false,
            description: None,
        }]);
        assert_eq!(check("r", &paging, Some(&json!({}))), None);
        assert!(
            check("r", &paging, Some(&json!({"limit": 0})))
                .is_some_and(|t| t.ends_with("Too small: expected number to be >=1 at limit"))
        );
        assert!(
            check("r", &paging, Some(&json!({"limit": 1.5})))
                .is_some_and(|t| t.ends_with("Invalid input: expected int, received number at limit"))
        );
        assert!(
            check("r", &paging, Some(&json!({"limit": "2"})))
                .is_some_and(|t| t.ends_with("Invalid input: expected number, received string at limit"))
        );
        assert_eq!(check("e", &entities_shape(), Some(&json!({"entities": [], "extra": 1}))), None);
    }
}
