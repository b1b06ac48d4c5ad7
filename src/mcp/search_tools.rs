//! Search tools: `search_memory` (part of the default `engram` toolset) and
//! `search_engram_knowledge` (the `knowledge` toolset).

use rmcp::handler::server::wrapper::Parameters;
use rmcp::{Peer, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use super::EngramServer;
use crate::ops::SearchQuery;

/// `search_memory`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchMemoryParams {
    /// What to look for, in any language (Chinese, English, mixed).
    pub query: String,
    /// Only this pack (plus the global memory); every pack when omitted.
    #[serde(default)]
    pub name: Option<String>,
    /// Only these kinds: memory, knowledge, example, note.
    #[serde(default)]
    pub kinds: Option<Vec<String>>,
    /// Only memories of this category (e.g. `preferences`).
    #[serde(default)]
    pub category: Option<String>,
    /// Only memories of this type (preference, fact, decision, …).
    #[serde(default)]
    pub memory_type: Option<String>,
    /// Only entries carrying all these tags.
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    /// last_week, last_month, last_year, today, YYYY, YYYY-MM, YYYY-MM-DD, or START..END.
    #[serde(default)]
    pub time_range: Option<String>,
    /// Search the pack as it was at a date (YYYY-MM-DD) or a commit (commit needs `name`).
    #[serde(default)]
    pub as_of: Option<String>,
    /// Maximum results (default 10, at most 100).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// `search_engram_knowledge`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchKnowledgeParams {
    /// Engram (pack) name.
    pub name: String,
    /// The question or topic, in any language.
    pub query: String,
    /// Maximum passages (default 5).
    #[serde(default)]
    pub limit: Option<usize>,
}

#[tool_router(router = search_tools, vis = "pub(super)")]
impl EngramServer {
    #[tool(
        description = "搜索记忆与知识（中英文均可）：按相关度返回记忆条目、知识与案例段落，每条注明所在包、文件、条目时间/摘要和匹配片段。可按 name、kinds(memory/knowledge/example/note)、category、memory_type、tags、time_range(last_week/last_month/last_year/YYYY/YYYY-MM/YYYY-MM-DD/START..END) 过滤；as_of(YYYY-MM-DD 或 commit) 搜索过去的版本。Ranked search over memories, knowledge, examples and notes of every pack (or one) plus the global memory; each hit says where it is and why it matched.",
        annotations(read_only_hint = true)
    )]
    async fn search_memory(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<SearchMemoryParams>,
    ) -> Result<String, String> {
        self.run("search_memory", &peer, move |e, _| {
            let q = SearchQuery {
                query: p.query,
                name: p.name.filter(|n| !n.trim().is_empty()),
                kinds: p.kinds.unwrap_or_default(),
                category: p.category,
                memory_type: p.memory_type,
                tags: p.tags.unwrap_or_default(),
                time_range: p.time_range,
                as_of: p.as_of,
                limit: p.limit,
                ..SearchQuery::default()
            };
            e.search_memory(&q)
        })
        .await
    }
}

#[tool_router(router = knowledge_tools, vis = "pub(super)")]
impl EngramServer {
    #[tool(
        description = "在某个 Engram 的知识 (knowledge/) 与案例 (examples/) 中查找回答问题的段落（按标题分段，按相关度排序）。Find the knowledge and example passages of one pack that answer a query.",
        annotations(read_only_hint = true)
    )]
    async fn search_engram_knowledge(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<SearchKnowledgeParams>,
    ) -> Result<String, String> {
        self.run("search_engram_knowledge", &peer, move |e, _| {
            e.search_engram_knowledge(&p.name, &p.query, p.limit)
        })
        .await
    }
}
