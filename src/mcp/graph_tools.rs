//! The `graph` toolset: the nine tools of the reference MCP memory server.
//!
//! Their definitions (names, titles, descriptions, input and output schemas,
//! annotations) come verbatim from [`crate::graph::tool_definitions`]; a
//! `#[tool]` function would generate its own schemas, so each tool is a
//! dynamic route whose handler passes the raw arguments to the graph module
//! (which validates them with the reference's messages).

use std::future::Future;
use std::pin::Pin;

use rmcp::ErrorData;
use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, Tool};
use serde_json::Value;

use super::EngramServer;
use crate::graph::{ToolOutput, tool_definitions};

type CallFuture<'a> = Pin<Box<dyn Future<Output = Result<CallToolResponse, ErrorData>> + Send + 'a>>;

/// The router of the nine graph tools, in the reference's `tools/list` order.
pub(super) fn graph_tools() -> ToolRouter<EngramServer> {
    let mut router = ToolRouter::new();
    for definition in tool_definitions() {
        // `execution` (taskSupport) has no field in rmcp's `Tool` and is dropped here.
        match serde_json::from_value::<Tool>(definition) {
            Ok(tool) => router.add_route(ToolRoute::new_dyn(tool, call_graph_tool)),
            Err(e) => tracing_free_log(&format!("graph tool definition rejected by rmcp: {e}")),
        }
    }
    router
}

fn tracing_free_log(message: &str) {
    eprintln!("engram: {message}");
}

/// A graph tool result as an MCP result, exactly as the module built it.
pub(super) fn to_result(output: ToolOutput) -> CallToolResult {
    let mut result = CallToolResult::success(output.content.into_iter().map(ContentBlock::text).collect());
    result.structured_content = output.structured_content;
    result.is_error = output.is_error.then_some(true);
    result
}

fn call_graph_tool(context: ToolCallContext<'_, EngramServer>) -> CallFuture<'_> {
    Box::pin(async move {
        let server = context.service;
        let tool = context.name.to_string();
        let arguments = context.arguments.map(Value::Object);
        let Some(structured) = server.structured.clone() else {
            return Err(ErrorData::internal_error("the graph toolset is not configured", None));
        };
        let output = server
            .call(tool.clone(), &context.request_context.peer, move |caller| {
                structured
                    .graph
                    .call(&tool, arguments.as_ref(), caller)
                    .unwrap_or_else(|| Ok(ToolOutput::error(format!("Unknown tool: {tool}"))))
            })
            .await
            .unwrap_or_else(|failed| ToolOutput::error(failed.to_string()));
        Ok(to_result(output).into())
    })
}
