//! JSON tool results for the notes and workspace toolsets, and the server
//! options they read (`--notes-pack`, `--workspace-pack`, `--workspace`,
//! `--wrap-errors`, `--dotted-names`).
//!
//! A result is a JSON object as `structuredContent` plus its text. An error is
//! `{"error": code, "message": …}` (`isError: true`); with `--wrap-errors` it
//! is `{"ok": false, "error": {"code": …, "message": …}}` and successes carry
//! `"ok": true`.

use std::path::PathBuf;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::CallToolResult;
use rmcp::{Peer, RoleServer};
use serde::Serialize;
use serde_json::{Value, json};

use super::{EngramServer, Failed};
use crate::llm::AnthropicSettings;
use crate::ops::{Caller, DEFAULT_NOTES_PACK, DEFAULT_WORKSPACE_PACK, Engram, NotesError, WorkspaceError};

/// Options of the notes and workspace toolsets.
#[derive(Debug, Clone)]
pub struct ToolOptions {
    /// The pack notes go to (`--notes-pack`, default `personal`).
    pub notes_pack: String,
    /// The pack workspace memories go to (`--workspace-pack`, default `workspace`).
    pub workspace_pack: String,
    /// The workspace used when a tool is not given one (`--workspace`, default the current directory).
    pub workspace_dir: PathBuf,
    /// Errors as `{ok: false, error: {code, message}}` (`--wrap-errors`).
    pub wrap_errors: bool,
    /// Expose `engram_search` … as `engram.search` … (`--dotted-names`).
    pub dotted_names: bool,
    /// How to reach the Anthropic API for `engram_summarize`.
    pub anthropic: AnthropicSettings,
}

impl Default for ToolOptions {
    fn default() -> Self {
        Self {
            notes_pack: DEFAULT_NOTES_PACK.to_owned(),
            workspace_pack: DEFAULT_WORKSPACE_PACK.to_owned(),
            workspace_dir: PathBuf::from("."),
            wrap_errors: false,
            dotted_names: false,
            anthropic: AnthropicSettings::default(),
        }
    }
}

/// A failed tool call: a stable code and a message a model can act on.
#[derive(Debug, Clone)]
pub(crate) struct ToolFailure {
    pub code: &'static str,
    pub message: String,
}

impl From<NotesError> for ToolFailure {
    fn from(e: NotesError) -> Self {
        Self { code: e.code(), message: e.to_string() }
    }
}

impl From<WorkspaceError> for ToolFailure {
    fn from(e: WorkspaceError) -> Self {
        Self { code: e.code(), message: e.to_string() }
    }
}

impl ToolFailure {
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self { code: "internal_error", message: message.into() }
    }
}

/// The dotted name of a workspace tool (`engram_search` → `engram.search`).
pub fn dotted_name(name: &str) -> Option<String> {
    name.strip_prefix("engram_").map(|rest| format!("engram.{rest}"))
}

/// Renames the `engram_*` tools of a router to their dotted names.
pub(crate) fn rename_dotted(router: ToolRouter<EngramServer>) -> ToolRouter<EngramServer> {
    let mut out = ToolRouter::new();
    for mut route in router {
        if let Some(dotted) = dotted_name(&route.attr.name) {
            route.attr.name = dotted.into();
        }
        out.add_route(route);
    }
    out
}

impl EngramServer {
    /// Turns a result into a JSON tool result, honouring `--wrap-errors`.
    pub(crate) fn json_result(&self, result: Result<Value, ToolFailure>) -> CallToolResult {
        let wrap = self.options.wrap_errors;
        match result {
            Ok(mut value) => {
                if wrap && let Value::Object(map) = &mut value {
                    map.insert("ok".into(), Value::Bool(true));
                }
                CallToolResult::structured(value)
            }
            Err(f) if wrap => CallToolResult::structured_error(
                json!({"ok": false, "error": {"code": f.code, "message": f.message}}),
            ),
            Err(f) => CallToolResult::structured_error(json!({"error": f.code, "message": f.message})),
        }
    }

    /// Runs blocking work on a worker thread with a [`Caller`].
    pub(crate) async fn blocking<T, E>(
        &self,
        tool: &str,
        peer: &Peer<RoleServer>,
        f: impl FnOnce(&Engram, &Caller) -> Result<T, E> + Send + 'static,
    ) -> Result<T, ToolFailure>
    where
        T: Send + 'static,
        E: Into<ToolFailure> + Send + 'static,
    {
        let engram = self.engram.clone();
        self.call(self.wire_name(tool), peer, move |c| f(&engram, c)).await.map_err(|failed| match failed {
            Failed::Tool(e) => e.into(),
            Failed::Task(message) => ToolFailure::internal(message),
        })
    }

    /// Runs blocking work and answers with its JSON.
    pub(crate) async fn run_json<T, E>(
        &self,
        tool: &str,
        peer: &Peer<RoleServer>,
        f: impl FnOnce(&Engram, &Caller) -> Result<T, E> + Send + 'static,
    ) -> CallToolResult
    where
        T: Serialize + Send + 'static,
        E: Into<ToolFailure> + Send + 'static,
    {
        let result = self.blocking(tool, peer, f).await.and_then(|v| to_json(&v));
        self.json_result(result)
    }

    /// The name a tool is exposed under.
    fn wire_name(&self, tool: &str) -> String {
        match dotted_name(tool) {
            Some(d) if self.options.dotted_names => d,
            _ => tool.to_owned(),
        }
    }
}

/// Serialises a value for a tool result.
pub(crate) fn to_json<T: Serialize>(v: &T) -> Result<Value, ToolFailure> {
    serde_json::to_value(v).map_err(|e| ToolFailure::internal(format!("cannot encode the result: {e}")))
}
