//! The `review` toolset: a reviewer agent's view of the proposal branches that
//! `serve --propose` writes to (`ops/packs/review.rs`).

use rmcp::handler::server::wrapper::Parameters;
use rmcp::{Peer, RoleServer, tool, tool_router};

use super::EngramServer;
use super::params::{NameParams, ReviewParams};
use crate::ops::EngramError;

/// The tool a proposing client (`serve --propose`) is not offered: it may not accept or
/// reject, and `show` is the CLI's or a reviewer's step (a call still answers `show` and
/// refuses the rest).
pub(super) const SELF_REVIEW_TOOL: &str = "review_proposal";

#[tool_router(router = review_tools, vis = "pub(super)")]
impl EngramServer {
    #[tool(
        description = "列出 Engram 的待审阅提议分支（proposals/<client>）：每个分支待审阅的提交数与最后一次提交。List a pack's proposal branches (proposals/<client>, written by servers started with --propose): commits to review and the newest one.",
        annotations(read_only_hint = true)
    )]
    async fn list_proposals(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<NameParams>,
    ) -> Result<String, String> {
        self.run("list_proposals", &peer, move |e, _| e.list_proposals(&p.name)).await
    }

    #[tool(
        description = "审阅一个提议分支。action=show：新增与删除的记忆条目、其他文件与提交；accept：以一次合并提交（逐条合并记忆）并入主分支并删除提议分支；reject：删除提议分支，主分支不变。Review a proposal branch: action `show` lists the memory entries it adds and removes, its other files and commits; `accept` merges it into the pack's branch as one merge commit (memory merged entry by entry, nothing lost when the branch moved on) and deletes it; `reject` deletes it and leaves the pack untouched."
    )]
    async fn review_proposal(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<ReviewParams>,
    ) -> Result<String, String> {
        self.run("review_proposal", &peer, move |e, caller| match p.action.trim() {
            "show" => e.show_proposal(&p.name, &p.branch),
            "accept" => e.accept_proposal(&p.name, &p.branch, caller),
            "reject" => e.reject_proposal(&p.name, &p.branch),
            other => Err(EngramError::Invalid {
                field: "action",
                reason: format!("unknown action {other:?}: show, accept or reject"),
            }),
        })
        .await
    }
}
