//! The `sync` toolset: the state of a pack shared through a git remote.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::{Peer, RoleServer, tool, tool_router};

use super::EngramServer;
use super::params::NameParams;

#[tool_router(router = sync_tools, vis = "pub(super)")]
impl EngramServer {
    #[tool(
        description = "查看 Engram 的同步状态：远端、领先/落后提交数（以上次同步为准）、上次同步结果与时间、冲突。不访问网络。Sync status of a pack: remote, commits ahead/behind (as of the last fetch), last sync result and time, conflicts (memory/_conflicts.md and *.conflict-<host> files). No network access.",
        annotations(read_only_hint = true)
    )]
    async fn sync_status(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<NameParams>,
    ) -> Result<String, String> {
        self.run("sync_status", &peer, move |e, _| e.sync_status(&p.name)).await
    }
}
