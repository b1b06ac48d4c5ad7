//! The `authoring` toolset (`--tools authoring` or `all`): making and checking
//! packs, the registry, statistics and tool traces, with the Python server's
//! names, parameters and texts.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::{Peer, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use super::EngramServer;
use crate::ops::{DraftRequest, FinalizeRequest, TraceRequest};

/// `init_engram`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct InitParams {
    /// Name of the new pack (its directory name).
    pub name: String,
    /// Add a knowledge group with its own index.
    #[serde(default)]
    pub nested: bool,
}

/// `lint_engrams`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct LintParams {
    /// Pack name; every pack when omitted or empty.
    #[serde(default)]
    pub name: Option<String>,
}

/// `search_engrams`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchRegistryParams {
    /// Words matched against name, description and tags (Chinese or English); `*` lists all.
    pub query: String,
}

/// `stats_engrams`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct StatsParams {
    /// `plain` (default), `json` or `csv`.
    #[serde(default = "plain")]
    pub format: String,
}

fn plain() -> String {
    "plain".to_owned()
}

fn zh_cn() -> String {
    "zh-CN".to_owned()
}

/// `create_engram_assistant`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AssistantParams {
    /// `guided` (from the fields below) or `from_conversation` (summarise `conversation`).
    pub mode: String,
    /// Pack name (derived from the topic when missing).
    #[serde(default)]
    pub name: Option<String>,
    /// The expert's topic.
    #[serde(default)]
    pub topic: Option<String>,
    /// Whom it serves.
    #[serde(default)]
    pub audience: Option<String>,
    /// How it talks.
    #[serde(default)]
    pub style: Option<String>,
    /// Its limits.
    #[serde(default)]
    pub constraints: Option<String>,
    /// `meta.language`.
    #[serde(default = "zh_cn")]
    pub language: String,
    /// The conversation to mine for insights.
    #[serde(default)]
    pub conversation: Option<String>,
}

fn yes() -> bool {
    true
}

/// `finalize_engram_draft`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct FinalizeParams {
    /// The JSON returned by create_engram_assistant (or its `draft`), possibly edited.
    pub draft_json: String,
    /// Pack name (default: the draft's meta.name).
    #[serde(default)]
    pub name: Option<String>,
    /// Start from the grouped-knowledge template.
    #[serde(default = "yes")]
    pub nested: bool,
    /// false cancels: nothing is written.
    #[serde(default = "yes")]
    pub confirm: bool,
}

/// `capture_tool_trace`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CaptureTraceParams {
    /// Pack name.
    pub name: String,
    /// The tool that was called.
    pub tool_name: String,
    /// Why it was called.
    pub intent: String,
    /// What it returned.
    pub result_summary: String,
    /// Its arguments, in short.
    #[serde(default)]
    pub args_summary: String,
    /// `ok` or `error`, ….
    #[serde(default = "ok_status")]
    pub status: String,
    /// The index summary (default `<tool> [<status>] <intent>`).
    #[serde(default)]
    pub summary: Option<String>,
    /// Extra tags.
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    /// Conversation id.
    #[serde(default)]
    pub conversation_id: Option<String>,
}

fn ok_status() -> String {
    "ok".to_owned()
}

fn ten() -> i64 {
    10
}

/// `list_tool_traces`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListTracesParams {
    /// Pack name.
    pub name: String,
    /// How many (1–50, default 10).
    #[serde(default = "ten")]
    pub limit: i64,
}

#[tool_router(router = authoring_tools, vis = "pub(super)")]
impl EngramServer {
    #[tool(
        description = "Initialize a new Engram from template.\n\nIf nested=True, generates a template with grouped knowledge indexes. (One commit.)"
    )]
    async fn init_engram(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<InitParams>,
    ) -> Result<String, String> {
        self.run("init_engram", &peer, move |e, _| {
            e.init_engram(&p.name, p.nested, crate::lang::Lang::Zh).map(|said| said.zh)
        })
        .await
    }

    #[tool(
        description = "Run consistency checks for one or all Engrams.\n\nReturns per-Engram error/warning counts and detailed issues.",
        annotations(read_only_hint = true)
    )]
    async fn lint_engrams(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<LintParams>,
    ) -> Result<String, String> {
        self.run("lint_engrams", &peer, move |e, _| {
            Ok(e.lint_engrams(p.name.as_deref(), true, crate::lang::Lang::Zh).0)
        })
        .await
    }

    #[tool(
        description = "Search Engram registry entries by name/description/tags.",
        annotations(read_only_hint = true)
    )]
    async fn search_engrams(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<SearchRegistryParams>,
    ) -> Result<String, String> {
        self.run("search_engrams", &peer, move |e, _| Ok(e.search_engrams(&p.query))).await
    }

    #[tool(
        description = "Get Engram statistics in plain/json/csv format.",
        annotations(read_only_hint = true)
    )]
    async fn stats_engrams(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<StatsParams>,
    ) -> Result<String, String> {
        self.run("stats_engrams", &peer, move |e, _| e.stats_engrams(&p.format)).await
    }

    #[tool(
        description = "Generate an Engram draft from conversation or guided inputs.\n\nmode:\n  - \"from_conversation\": summarize current dialog into a draft\n  - \"guided\": build from user intent fields (auto-fill when missing)\n\nWrites nothing: pass the draft to finalize_engram_draft.",
        annotations(read_only_hint = true)
    )]
    async fn create_engram_assistant(&self, Parameters(p): Parameters<AssistantParams>) -> String {
        crate::ops::create_engram_assistant(&DraftRequest {
            mode: p.mode,
            name: p.name,
            topic: p.topic,
            audience: p.audience,
            style: p.style,
            constraints: p.constraints,
            language: Some(p.language),
            conversation: p.conversation,
        })
    }

    #[tool(
        description = "Create an Engram pack from a confirmed draft.\n\nSet confirm=False to cancel (no files written). The pack's history shows the template, then the generated draft as one commit; every later edit is its own commit."
    )]
    async fn finalize_engram_draft(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<FinalizeParams>,
    ) -> Result<String, String> {
        let req =
            FinalizeRequest { draft_json: p.draft_json, name: p.name, nested: p.nested, confirm: p.confirm };
        self.run("finalize_engram_draft", &peer, move |e, c| e.finalize_engram_draft(&req, c)).await
    }

    #[tool(
        description = "Record a tool call (Skills / MCP / Subagent / third-party) in the pack's memory/tool-trace.md: what was called, why, and how it went (status=error for failures). The same trace within 5 seconds is written once. One commit."
    )]
    async fn capture_tool_trace(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<CaptureTraceParams>,
    ) -> Result<String, String> {
        let req = TraceRequest {
            name: p.name,
            tool_name: p.tool_name,
            intent: p.intent,
            result_summary: p.result_summary,
            args_summary: p.args_summary,
            status: p.status,
            summary: p.summary,
            tags: p.tags.unwrap_or_default(),
            conversation_id: p.conversation_id,
        };
        self.run("capture_tool_trace", &peer, move |e, c| e.capture_tool_trace(&req, c)).await
    }

    #[tool(
        description = "List the most recent tool traces of an Engram (limit 1-50, default 10), oldest first.",
        annotations(read_only_hint = true)
    )]
    async fn list_tool_traces(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<ListTracesParams>,
    ) -> Result<String, String> {
        let traced = self
            .tracing()
            .then(|| crate::ops::TracedCall::ListTraces { name: p.name.clone(), limit: p.limit });
        let answer =
            self.run("list_tool_traces", &peer, move |e, _| e.list_tool_traces(&p.name, p.limit)).await;
        self.trace(traced, &answer, &peer).await;
        answer
    }
}
