//! Wire types of the Engram tools: names and shapes follow the reference server.

use schemars::JsonSchema;
use serde::Deserialize;

/// A pack name.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NameParams {
    /// Engram (pack) name, as listed by list_engrams.
    pub name: String,
}

/// `open_ui`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct OpenUiParams {
    /// Port to listen on (127.0.0.1); 0 or absent picks a free one.
    #[serde(default)]
    pub port: Option<u16>,
}

/// `load_engram`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct LoadParams {
    /// Engram (pack) name.
    pub name: String,
    /// What the user is asking about (shown as 用户关注方向).
    #[serde(default)]
    pub query: String,
    /// Show the pack as it was at this commit id or date (YYYY-MM-DD); read-only.
    #[serde(default)]
    pub as_of: Option<String>,
}

/// `read_engram_file`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadFileParams {
    /// Engram (pack) name.
    pub name: String,
    /// Path relative to the pack, e.g. `knowledge/_index.md`.
    pub path: String,
    /// Read the file as it was at this commit id or date (YYYY-MM-DD).
    #[serde(default)]
    pub as_of: Option<String>,
}

/// `write_engram_file`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteFileParams {
    /// Engram (pack) name.
    pub name: String,
    /// Path relative to the pack.
    pub path: String,
    /// File content.
    pub content: String,
    /// `append` (exactly) appends; anything else (default `overwrite`) overwrites, as in the reference.
    #[serde(default)]
    pub mode: Option<String>,
}

/// `capture_memory`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CaptureParams {
    /// Engram (pack) name (any value when is_global is true).
    pub name: String,
    /// The memory text.
    pub content: String,
    /// Category: the file memory/<category>.md, e.g. `preferences`.
    pub category: String,
    /// One-line summary shown in the memory index.
    pub summary: String,
    /// preference, fact, decision, history, general (default), inferred or stated.
    #[serde(default)]
    pub memory_type: Option<String>,
    /// Tags.
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    /// Conversation id, recorded with the memory and in the commit.
    #[serde(default)]
    pub conversation_id: Option<String>,
    /// Expiry date YYYY-MM-DD; expired memories move to <category>-expired.md.
    #[serde(default)]
    pub expires: Option<String>,
    /// Store in the global memory shared by every pack.
    #[serde(default)]
    pub is_global: Option<bool>,
}

/// `consolidate_memory`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ConsolidateParams {
    /// Engram (pack) name.
    pub name: String,
    /// Category to consolidate.
    pub category: String,
    /// The consolidated text replacing all entries of the category.
    pub consolidated_content: String,
    /// One-line summary.
    pub summary: String,
}

/// `delete_memory`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DeleteParams {
    /// Engram (pack) name.
    pub name: String,
    /// Category of the entry.
    pub category: String,
    /// Summary of the entry (exact, or a unique part of it).
    pub summary: String,
}

/// `correct_memory`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CorrectParams {
    /// Engram (pack) name.
    pub name: String,
    /// Category of the entry.
    pub category: String,
    /// Summary of the entry to correct (exact, or a unique part of it).
    pub old_summary: String,
    /// New memory text.
    pub new_content: String,
    /// New one-line summary.
    pub new_summary: String,
    /// New memory type (keeps the old one when omitted).
    #[serde(default)]
    pub memory_type: Option<String>,
    /// New tags (keeps the old ones when omitted).
    #[serde(default)]
    pub tags: Option<Vec<String>>,
}

/// `add_knowledge`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AddKnowledgeParams {
    /// Engram (pack) name.
    pub name: String,
    /// File name under knowledge/ (`.md` is added when missing); may contain a sub-directory.
    pub filename: String,
    /// File content (markdown).
    pub content: String,
    /// One-line summary for the knowledge index.
    pub summary: String,
}

/// `install_engram`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct InstallParams {
    /// A git URL, a local path, or a registry name.
    pub source: String,
}

/// `memory_history`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct MemoryHistoryParams {
    /// Engram (pack) name.
    pub name: String,
    /// Only commits touching this path (a file or directory of the pack, e.g. `memory/preferences.md`).
    #[serde(default)]
    pub path: Option<String>,
    /// Only commits that added or removed an entry containing this text.
    #[serde(default)]
    pub summary: Option<String>,
    /// Only commits on or after this date (YYYY-MM-DD) or time (RFC 3339).
    #[serde(default)]
    pub since: Option<String>,
    /// At most this many commits (default 20).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// `revert_memory`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RevertParams {
    /// Engram (pack) name.
    pub name: String,
    /// The commit to undo (id or its first 7+ characters, from memory_history).
    pub commit: String,
}

/// `undo_last`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct UndoParams {
    /// Engram (pack) name.
    pub name: String,
    /// How many of the last tool commits to undo (default 1).
    #[serde(default)]
    pub n: Option<usize>,
    /// Only commits of this client (a part of its name, as shown by memory_history).
    #[serde(default)]
    pub client: Option<String>,
}

/// `review_proposal`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReviewParams {
    /// Engram (pack) name, as listed by list_engrams.
    pub name: String,
    /// The proposal branch, `proposals/<name>` (as list_proposals shows it).
    pub branch: String,
    /// `show` (the memories added and removed), `accept` (one merge commit into the pack,
    /// then the branch is deleted) or `reject` (the branch is deleted; the pack is untouched).
    pub action: String,
}
