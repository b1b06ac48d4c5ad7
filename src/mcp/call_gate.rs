//! What every tool call passes through, whatever its toolset: the text rules on the
//! arguments before the tool runs ([`crate::ops::limits::check_arguments`]) and the
//! size bound on its answer ([`crate::ops::limits::MAX_ANSWER_BYTES`]).

use rmcp::ErrorData;
use rmcp::RoleServer;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock};
use rmcp::service::RequestContext;

use super::EngramServer;
use super::tool_json::{ToolFailure, dotted_name};
use crate::ops::EngramError;
use crate::ops::limits::{self, MAX_ANSWER_BYTES};

impl EngramServer {
    /// Checks the arguments, runs the tool, bounds its answer.
    pub(super) async fn gated_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(args) = &request.arguments
            && let Err(e) = limits::check_arguments(args)
        {
            return Ok(self.refusal(&request.name, e).into());
        }
        let name = request.name.clone();
        let identity = super::identity(&context);
        if let Some(id) = &identity
            && id.read_only
            && !self.tool_router.list_all().iter().any(|t| t.name == name && super::access::is_reading(t))
        {
            let e = EngramError::Invalid {
                field: "tool",
                reason: format!("the token of {} is read-only: {name} is not a reading tool", id.user),
            };
            return Ok(self.refusal(&name, e).into());
        }
        if let Some(id) = &identity
            && name == "open_ui"
        {
            // The page acts on every pack of the server with no user of its own, and would
            // listen on the server's machine, not the caller's.
            let e = EngramError::Invalid {
                field: "tool",
                reason: format!(
                    "open_ui is not available on a team server (--users-file): the web page would act for every user, not for {}; run `engram ui` on your own machine",
                    id.user
                ),
            };
            return Ok(self.refusal(&name, e).into());
        }
        let mut server = match self.scoped(identity.as_ref(), Some(&name)) {
            Ok(s) => s,
            Err(e) => return Ok(self.refusal(&name, e).into()),
        };
        // A read-only token's reads commit nothing, not even an automatic trace.
        server.untraced |= identity.as_ref().is_some_and(|id| id.read_only);
        server.read_only_caller = identity.as_ref().is_some_and(|id| id.read_only);
        server.user = identity.map(|id| id.user);
        let response = server.tool_router.call(ToolCallContext::new(&server, request, context)).await?;
        Ok(match response {
            CallToolResponse::Complete(result) => bound_answer(&name, masked_error(result)).into(),
            other => other,
        })
    }

    /// A refused call in the shape of the tool's toolset: `{"error": …}` JSON for the notes
    /// and workspace tools, the error's text for the others.
    fn refusal(&self, tool: &str, e: EngramError) -> CallToolResult {
        let message = crate::secrets::mask_url_credentials(&e.to_string()).into_owned();
        if self.is_json_tool(tool) {
            return self.json_result(Err(ToolFailure { code: e.code(), message }));
        }
        CallToolResult::error(vec![ContentBlock::text(message)])
    }

    /// Whether `tool` answers in the JSON shape (`tool_json.rs`). Only asked for a refusal.
    fn is_json_tool(&self, tool: &str) -> bool {
        use super::Toolset;
        self.toolsets.iter().any(|t| {
            let router = match t {
                Toolset::Notes => Self::notes_tools(),
                Toolset::Workspace => Self::workspace_tools(),
                _ => return false,
            };
            router.list_all().iter().any(|d| d.name == tool || dotted_name(&d.name).as_deref() == Some(tool))
        })
    }
}

/// An error result with the credentials of every URL in it masked
/// ([`crate::secrets::mask_url_credentials`]): a remote's password never reaches a caller.
fn masked_error(mut result: CallToolResult) -> CallToolResult {
    if result.is_error != Some(true) {
        return result;
    }
    for block in &mut result.content {
        if let ContentBlock::Text(t) = block
            && let std::borrow::Cow::Owned(masked) = crate::secrets::mask_url_credentials(&t.text)
        {
            t.text = masked;
        }
    }
    if let Some(value) = &result.structured_content
        && let Ok(text) = serde_json::to_string(value)
        && let std::borrow::Cow::Owned(masked) = crate::secrets::mask_url_credentials(&text)
        && let Ok(v) = serde_json::from_str(&masked)
    {
        result.structured_content = Some(v);
    }
    result
}

/// A result over [`MAX_ANSWER_BYTES`] of text: a plain text answer is cut at the bound
/// with a note; a JSON (structured) answer, which cut would no longer parse, becomes an
/// error saying how to ask for less.
fn bound_answer(tool: &str, mut result: CallToolResult) -> CallToolResult {
    let size: usize = result.content.iter().filter_map(ContentBlock::as_text).map(|t| t.text.len()).sum();
    if size <= MAX_ANSWER_BYTES {
        return result;
    }
    if result.structured_content.is_some() {
        return CallToolResult::error(vec![ContentBlock::text(format!(
            "The answer of {tool} is {size} bytes, more than the limit of {MAX_ANSWER_BYTES} bytes: ask for less (search_nodes or open_nodes instead of read_graph, a smaller limit, a narrower query)."
        ))]);
    }
    let mut room = MAX_ANSWER_BYTES;
    for block in &mut result.content {
        let ContentBlock::Text(t) = block else { continue };
        if t.text.len() <= room {
            room -= t.text.len();
            continue;
        }
        let mut cut = room;
        while !t.text.is_char_boundary(cut) {
            cut -= 1;
        }
        t.text.truncate(cut);
        t.text.push_str(&format!(
            "\n\n[engram: answer cut at {MAX_ANSWER_BYTES} bytes of {size}; ask for less (a narrower query, one file, a smaller limit)]"
        ));
        room = 0;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_answers_are_cut_or_refused() {
        let short = CallToolResult::success(vec![ContentBlock::text("ok")]);
        assert_eq!(bound_answer("t", short.clone()), short);
        let long = "é".repeat(MAX_ANSWER_BYTES); // 2 bytes each: cut inside a character
        let cut = bound_answer("t", CallToolResult::success(vec![ContentBlock::text(long)]));
        let text = &cut.content[0].as_text().expect("text").text;
        assert!(text.len() < MAX_ANSWER_BYTES + 200 && text.contains("answer cut at"), "{}", text.len());
        assert_ne!(cut.is_error, Some(true));
        let mut json = CallToolResult::success(vec![ContentBlock::text("x".repeat(MAX_ANSWER_BYTES + 1))]);
        json.structured_content = Some(serde_json::json!({"entities": []}));
        let refused = bound_answer("read_graph", json);
        assert_eq!(refused.is_error, Some(true));
        assert!(refused.structured_content.is_none());
        assert!(refused.content[0].as_text().expect("text").text.contains("search_nodes"));
    }
}
