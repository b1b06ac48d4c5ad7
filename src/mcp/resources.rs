//! Resources of the graph and personal toolsets: `memory://knowledge-graph`
//! (the reference's) and `memory://event-templates`.

use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{ReadResourceResult, Resource, ResourceContents};

use super::{Structured, Toolset};
use crate::graph::{GRAPH_RESOURCE_URI, resource_definition};
use crate::ops::{EVENT_TEMPLATES_URI, Personal};

/// The resources of the enabled toolsets.
pub(super) fn list(toolsets: &[Toolset]) -> Vec<Resource> {
    let mut out = Vec::new();
    if toolsets.contains(&Toolset::Graph)
        && let Ok(r) = serde_json::from_value::<Resource>(resource_definition())
    {
        out.push(r);
    }
    if toolsets.contains(&Toolset::Personal) {
        let mut r = Resource::new(EVENT_TEMPLATES_URI, "event-templates");
        r.title = Some("Event Templates".into());
        r.description =
            Some("Event types of the personal toolset, their usual entities and metadata fields".into());
        r.mime_type = Some("application/json".into());
        out.push(r);
    }
    out
}

fn json_contents(uri: &str, text: String) -> ReadResourceResult {
    ReadResourceResult::new(vec![ResourceContents::TextResourceContents {
        uri: uri.to_owned(),
        mime_type: Some("application/json".into()),
        text,
        meta: None,
    }])
}

/// Reads one resource.
pub(super) async fn read(
    toolsets: &[Toolset],
    structured: Option<Arc<Structured>>,
    uri: String,
) -> Result<ReadResourceResult, ErrorData> {
    if uri == EVENT_TEMPLATES_URI && toolsets.contains(&Toolset::Personal) {
        return Ok(json_contents(&uri, Personal::event_templates()));
    }
    if uri == GRAPH_RESOURCE_URI && toolsets.contains(&Toolset::Graph) {
        let Some(structured) = structured else {
            return Err(ErrorData::internal_error("the graph toolset is not configured", None));
        };
        let text = tokio::task::spawn_blocking(move || structured.graph.resource_text())
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let limit = crate::ops::limits::MAX_ANSWER_BYTES;
        if text.len() > limit {
            return Err(ErrorData::invalid_request(
                format!(
                    "the knowledge graph is {} bytes, more than the limit of {limit} bytes of one answer: use the search_nodes / open_nodes tools",
                    text.len()
                ),
                None,
            ));
        }
        return Ok(json_contents(&uri, text));
    }
    Err(ErrorData::resource_not_found(format!("unknown resource {uri:?}"), None))
}
