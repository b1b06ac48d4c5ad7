//! History and undo tools (part of the default `engram` toolset): `memory_history`,
//! `revert_memory`, `undo_last`.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::{Peer, RoleServer, tool, tool_router};

use super::EngramServer;
use super::params::{MemoryHistoryParams, RevertParams, UndoParams};
use crate::ops::HistoryFilter;

#[tool_router(router = history_tools, vis = "pub(super)")]
impl EngramServer {
    #[tool(
        description = "查看记忆的变更历史：每次提交的时间、工具、客户端，以及增删了哪些记忆条目。可按 path、summary（条目文字）、since（YYYY-MM-DD）过滤。Show a pack's history: commits with time, tool, client and the memory entries each added (+) or removed (−). Use a commit id from here with revert_memory.",
        annotations(read_only_hint = true)
    )]
    async fn memory_history(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<MemoryHistoryParams>,
    ) -> Result<String, String> {
        self.run("memory_history", &peer, move |e, _| {
            let filter = HistoryFilter {
                path: p.path,
                summary: p.summary,
                since: p.since,
                limit: p.limit.unwrap_or(20),
                ..HistoryFilter::default()
            };
            e.memory_history(&p.name, &filter)
        })
        .await
    }

    #[tool(
        description = "撤销某一次提交：生成一个新提交，精确地撤回那次提交的改动（记忆条目与索引保持一致）。若之后的提交改动了同一内容，会报错并指出那个提交。Undo one commit (id from memory_history) with a new commit; errors name a later commit that conflicts."
    )]
    async fn revert_memory(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<RevertParams>,
    ) -> Result<String, String> {
        self.run("revert_memory", &peer, move |e, c| e.revert_memory(&p.name, &p.commit, c)).await
    }

    #[tool(
        description = "撤销最近 n 次工具写入（可只撤销某个客户端的），作为一个新提交。Undo the last n tool writes (optionally only those of one client) in one new commit."
    )]
    async fn undo_last(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<UndoParams>,
    ) -> Result<String, String> {
        self.run("undo_last", &peer, move |e, c| {
            e.undo_last(&p.name, p.n.unwrap_or(1), p.client.as_deref(), c)
        })
        .await
    }
}
