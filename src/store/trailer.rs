//! The trailer keys engram writes into commit messages and reads back
//! (`memory_history`, `engram log`, the duplicate check), spelled once.
//!
//! [`TOOL`] and [`CLIENT`] are written only by
//! [`CommitMessage::made_by`](super::CommitMessage::made_by).

/// The tool, CLI command or engram step (`adopt`, `hand-edit`) that made the commit.
pub const TOOL: &str = "Engram-Tool";
/// The MCP client (`name version` from `initialize`) or `engram-cli`.
pub const CLIENT: &str = "Engram-Client";
/// A commit that `revert_memory` / `undo_last` undoes (one trailer per commit).
pub const REVERTS: &str = "Engram-Reverts";
/// The conversation a capture came from.
pub const CONVERSATION: &str = "Engram-Conversation";
/// The key of the 30 s duplicate check of `capture_memory`.
pub const DEDUP: &str = "Engram-Dedup";
/// The device that made a sync merge.
pub const HOST: &str = "Engram-Host";
/// The user whose graph or personal data a commit changed.
pub const USER: &str = "Engram-User";
