//! The workspace toolset (`--tools workspace`): memory for a code workspace.
//!
//! `engram_summarize` asks an LLM: the Anthropic API when `ANTHROPIC_API_KEY`
//! is set, else the client through MCP sampling when it offers it (sampling is
//! deprecated in protocol 2026-07-28, so it is only a fallback), else it fails
//! with `llm_unavailable`.

#![allow(deprecated)] // create_message / SamplingMessage: SEP-2577-deprecated, used only as a fallback

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, CreateMessageRequestParams, ProtocolVersion, SamplingMessage};
use rmcp::{Peer, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::EngramServer;
use super::tool_json::{ToolFailure, to_json};
use crate::ops::{DEFAULT_MIN_CONFIDENCE, EngramError, WorkspaceError, parse_learnings, workspace_dir};

/// `engram_search`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct EngramSearchParams {
    /// What to look for (any language).
    pub query: String,
    /// Most results (default 10, at most 100).
    #[serde(default)]
    pub limit: Option<i64>,
}

/// `engram_add`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct EngramAddParams {
    /// The memory's text.
    pub content: String,
    /// Topics (searchable tags).
    #[serde(default)]
    pub topics: Option<Vec<String>>,
    /// Where it comes from (a file, a URL, a tool).
    #[serde(default)]
    pub source: Option<String>,
}

/// `engram_ingest_git`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct IngestGitParams {
    /// Path of the workspace (a git working tree); default the server's workspace.
    #[serde(default)]
    pub workspace: Option<String>,
    /// How many days back from today (default 7).
    #[serde(default)]
    pub days: Option<i64>,
}

/// `engram_summarize`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SummarizeParams {
    /// Path of the workspace (a git working tree); default the server's workspace.
    #[serde(default)]
    pub workspace: Option<String>,
    /// How many days back from today (default 7).
    #[serde(default)]
    pub days: Option<i64>,
    /// Keep learnings with at least this confidence (0–1, default 0.5).
    #[serde(default)]
    pub min_confidence: Option<f64>,
    /// Store the learnings as memories (default false).
    #[serde(default)]
    pub store: Option<bool>,
}

/// True when the client declared sampling and negotiated a protocol that still allows it.
fn sampling_offered(peer: &Peer<RoleServer>) -> bool {
    peer.peer_info().is_some_and(|info| {
        info.capabilities.sampling.is_some() && info.protocol_version < ProtocolVersion::V_2026_07_28
    })
}

#[tool_router(router = workspace_tools, vis = "pub(super)")]
impl EngramServer {
    #[tool(
        description = "Search the workspace memories (notes, git summaries, learnings); ranked BM25 that works for Chinese and English. Returns {results: [{content, score, metadata}]}.",
        annotations(read_only_hint = true)
    )]
    async fn engram_search(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<EngramSearchParams>,
    ) -> CallToolResult {
        let pack = self.options.workspace_pack.clone();
        self.run_json("engram_search", &peer, move |e, _| {
            let results = e.workspace(&pack).search(&p.query, p.limit)?;
            Ok::<_, WorkspaceError>(json!({"results": results}))
        })
        .await
    }

    #[tool(
        description = "Remember something about this workspace (one git commit). Returns {id, createdAt}.",
        annotations(read_only_hint = false)
    )]
    async fn engram_add(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<EngramAddParams>,
    ) -> CallToolResult {
        let pack = self.options.workspace_pack.clone();
        let dir = self.options.workspace_dir.clone();
        self.run_json("engram_add", &peer, move |e, c| {
            let dir = dir.canonicalize().unwrap_or(dir);
            e.workspace(&pack).add(
                &p.content,
                &p.topics.unwrap_or_default(),
                p.source.as_deref(),
                Some(&dir),
                c,
            )
        })
        .await
    }

    #[tool(
        description = "Counts of the workspace memories: {totalMemories, memoriesWithEmbeddings, byPack, byKind}.",
        annotations(read_only_hint = true)
    )]
    async fn engram_stats(&self, peer: Peer<RoleServer>) -> CallToolResult {
        let pack = self.options.workspace_pack.clone();
        self.run_json("engram_stats", &peer, move |e, _| e.workspace(&pack).stats()).await
    }

    #[tool(
        description = "Read the workspace's git history of the last `days` days (commits, authors, files, subjects) and store one dated summary memory. Running it again over the same range adds nothing. Returns {added, memoryId?}.",
        annotations(idempotent_hint = true)
    )]
    async fn engram_ingest_git(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<IngestGitParams>,
    ) -> CallToolResult {
        let pack = self.options.workspace_pack.clone();
        let default = self.options.workspace_dir.clone();
        self.run_json("engram_ingest_git", &peer, move |e, c| {
            let dir = checked_workspace(e, p.workspace.as_deref(), &default)?;
            e.workspace(&pack).ingest_git(&dir, p.days, c)
        })
        .await
    }

    #[tool(
        description = "Ask an LLM to extract learnings from the workspace's recent git history. Uses the Anthropic API when ANTHROPIC_API_KEY is set for the server, else MCP sampling when the client offers it. Returns {learnings: [{text, confidence, evidence}]}; with store: true the learnings are also stored as memories."
    )]
    async fn engram_summarize(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<SummarizeParams>,
    ) -> CallToolResult {
        let result = self.summarize(&peer, p).await;
        self.json_result(result)
    }
}

/// The workspace a tool names (`given`, else the server's `default`): a path the caller
/// gives is checked against the server's rule ([`crate::ops::Engram::server_path`]; on a
/// team server only the operator's `--allow-path` directories).
fn checked_workspace(
    e: &crate::ops::Engram,
    given: Option<&str>,
    default: &std::path::Path,
) -> Result<std::path::PathBuf, WorkspaceError> {
    let dir = workspace_dir(given, default);
    if given.is_some_and(|g| !g.trim().is_empty()) {
        return Ok(e.server_path(&dir)?);
    }
    Ok(dir)
}

impl EngramServer {
    async fn summarize(
        &self,
        peer: &Peer<RoleServer>,
        p: SummarizeParams,
    ) -> Result<serde_json::Value, ToolFailure> {
        let min = p.min_confidence.unwrap_or(DEFAULT_MIN_CONFIDENCE);
        if !(0.0..=1.0).contains(&min) {
            return Err(WorkspaceError::from(EngramError::Invalid {
                field: "minConfidence",
                reason: format!("{min}: use 0 … 1"),
            })
            .into());
        }
        let pack = self.options.workspace_pack.clone();
        let (given, default) = (p.workspace.clone(), self.options.workspace_dir.clone());
        let days = p.days;
        let pack2 = pack.clone();
        let request = self
            .blocking("engram_summarize", peer, move |e, _| {
                let dir = checked_workspace(e, given.as_deref(), &default)?;
                e.workspace(&pack2).summary_request(&dir, days)
            })
            .await?;
        if request.commits == 0 {
            return Ok(json!({
                "learnings": [],
                "commits": 0,
                "range": request.range,
                "message": format!("no commits in {} between {}; nothing to learn from", request.workspace, request.range),
            }));
        }
        let settings = self.options.anthropic.clone();
        let (answer, via) = if settings.api_key.is_some() {
            let (system, prompt) = (request.system.clone(), request.prompt.clone());
            let answer =
                tokio::task::spawn_blocking(move || crate::llm::complete(&settings, &system, &prompt, 2048))
                    .await
                    .map_err(|e| ToolFailure::internal(format!("internal error: the LLM task failed: {e}")))?
                    .map_err(|e| WorkspaceError::LlmFailed(e.to_string()))?;
            (answer, "anthropic")
        } else if sampling_offered(peer) {
            let params = CreateMessageRequestParams::new(
                vec![SamplingMessage::user_text(request.prompt.clone())],
                2048,
            )
            .with_system_prompt(request.system.clone());
            let reply = peer
                .create_message(params)
                .await
                .map_err(|e| WorkspaceError::LlmFailed(format!("MCP sampling failed: {e}")))?;
            let text = reply.message.content.first().and_then(|c| c.as_text()).map(|t| t.text.clone());
            let text =
                text.ok_or_else(|| WorkspaceError::LlmFailed("MCP sampling answered without text".into()))?;
            (text, "sampling")
        } else {
            return Err(WorkspaceError::LlmUnavailable.into());
        };
        let learnings = parse_learnings(&answer, min)?;
        let stored = if p.store.unwrap_or(false) {
            let (req, ls) = (request.clone(), learnings.clone());
            self.blocking("engram_summarize", peer, move |e, c| {
                e.workspace(&pack).store_learnings(&req, &ls, c)
            })
            .await?
        } else {
            Vec::new()
        };
        Ok(json!({
            "learnings": to_json(&learnings)?,
            "stored": stored,
            "via": via,
            "commits": request.commits,
            "range": request.range,
        }))
    }
}
