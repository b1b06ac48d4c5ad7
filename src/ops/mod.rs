//! The Engram operations, shared by the MCP tools and the CLI.
//!
//! Each public method of [`Engram`] is one tool: it validates its input,
//! reads or writes a pack through [`crate::store`], and returns the text the
//! reference server would return. Failures are [`EngramError`]s whose
//! messages start with the reference's text and then say what to do.

mod authoring;
mod engram;
mod files;
mod notes;
mod packs;
mod personal;
pub mod server_paths;
mod workspace;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};

use crate::lang::{Lang, Said};
use crate::pack::{PackDir, PackError, Packs};
use crate::store::{CommitMessage, PackRepo, StoreError, StoreOptions};

pub use authoring::{
    BuildEvent, BuildModels, BuildReport, BuildRequest, DraftRequest, FinalizeRequest, TraceRequest,
    TracedCall, create_engram_assistant,
};
pub use engram::activity::{Activity, Writer};
pub use engram::entry_history::EntryHistory;
pub use engram::history::{HistoryFilter, commit_header, describe_commit, is_memory_managed};
pub use engram::hooks::compact_reminder;
pub use engram::prompt::{SYSTEM_PROMPT_DESCRIPTION, TraceRules};
pub use packs::registry::{Registry, RegistryEntry, render_entry as render_registry_entry};

/// The hot index path (for hooks that read it without the expiry pass).
const HOT_INDEX_PATH: &str = crate::memlog::HOT_INDEX;
pub(crate) use engram::memory_files::fold as fold_for_duplicates;
pub use engram::memory_items::{
    MemoryItem, MemoryList, MemoryRef, MemoryTarget, ParsedMemoryFiles, PastItem, WriteOutcome, memory_id,
};
pub use engram::memory_tools::{CaptureRequest, CorrectRequest, KeepVersion};
pub use engram::search::{SearchHit, SearchOutcome, SearchQuery, render as render_search, with_notes};
pub use notes::{
    Category, DEFAULT_CATEGORY, DEFAULT_IMPORTANCE, DEFAULT_NOTES_PACK, Note, Notes, NotesError, StoreNote,
    Stored, slug,
};
pub(crate) use notes::{derive_title, render_note};
pub use packs::health::{Damage, PackHealth, Survey};
pub use packs::sync::{DEFAULT_REMOTE, FileConflict, Incoming, Outgoing, SyncReport, SyncSettings};
pub use packs::sync_page::{ConflictCopy, LastSync, SyncOverview, SyncState};
pub use packs::sync_worker::SyncWorker;
pub use workspace::*;

/// Default number of search results (`search_memory`, `engram search`).
pub const fn search_default_limit() -> usize {
    engram::search::DEFAULT_LIMIT
}
pub use personal::user_graph::{
    DEFAULT_GRAPH_PACK, DEFAULT_USER, StructuredConfig, UserFiles, UserGraph, validate_user,
};
pub use personal::{EVENT_TEMPLATES_URI, EVENT_TYPES, PROFILE_CATEGORIES, Personal};

pub mod limits;

/// Errors of the Engram tools. `Display` is what the model reads.
#[derive(Debug, thiserror::Error)]
pub enum EngramError {
    /// Pack lookup failed.
    #[error(transparent)]
    Pack(#[from] PackError),
    /// The store failed. Only trouble that may be damage points to `engram doctor`.
    #[error("{}", store_error_text(.0, Lang::Zh))]
    Store(StoreError),
    /// The store failed under the graph module.
    #[error("操作失败 (storage error): {}", graph_error_text(.0))]
    Graph(#[from] crate::graph::GraphError),
    /// The new text holds a credential (the store's secret guard refused the write).
    #[error("{0}")]
    Secret(StoreError),
    /// The store refused a change that would break the pack (an unreadable `meta.json`).
    #[error("{0}")]
    Refused(StoreError),
    /// A revert conflicts with a later change.
    #[error(
        "无法撤销 (cannot revert) commit {commit} ({subject}): 之后的提交改动了同一内容 (a later change conflicts):{}\nRevert the later commit first (it is named above), or fix the memory with correct_memory / delete_memory.",
        conflicts_text(conflicts)
    )]
    RevertConflict {
        /// Short id of the commit asked to revert.
        commit: String,
        /// Its subject.
        subject: String,
        /// What conflicts.
        conflicts: Vec<crate::store::RevertConflict>,
    },
    /// A file is missing.
    #[error("未找到文件: {path}")]
    FileNotFound {
        /// Path asked for.
        path: String,
    },
    /// A path argument is not acceptable.
    #[error("非法路径: {path} — {reason}")]
    BadPath {
        /// Path given.
        path: String,
        /// Why it is refused.
        reason: String,
    },
    /// A text inside the arguments breaks a rule every text follows (see
    /// [`limits::check_arguments`]); `field` is its path, e.g. `entities[0].observations[2]`.
    #[error("参数错误 (invalid argument) `{field}`: {reason}")]
    InvalidText {
        /// Path of the text in the arguments.
        field: String,
        /// What is wrong and what is accepted.
        reason: String,
    },
    /// An argument is not acceptable.
    #[error("参数错误 (invalid argument) `{field}`: {reason}")]
    Invalid {
        /// Argument name.
        field: &'static str,
        /// What is wrong and what is accepted.
        reason: String,
    },
    /// No memory entry matched.
    #[error("未找到匹配的记忆条目: [{category}] {summary}{}", candidates_text(candidates))]
    NoMatch {
        /// Category searched.
        category: String,
        /// Summary given.
        summary: String,
        /// Summaries that exist in the category.
        candidates: Vec<String>,
    },
    /// Several memory entries matched.
    #[error(
        "匹配到多条记忆条目: [{category}] {summary} — 请用完整摘要指定其中一条 (ambiguous: give the exact summary of one){}",
        candidates_text(candidates)
    )]
    Ambiguous {
        /// Category searched.
        category: String,
        /// Summary given.
        summary: String,
        /// The matching summaries.
        candidates: Vec<String>,
    },
    /// A file cannot be read as text.
    #[error("无法读取文件: {path} — {reason}")]
    Unreadable {
        /// Path.
        path: String,
        /// Why.
        reason: String,
    },
    /// Installing a pack failed (Chinese in the reference's form, and English).
    #[error("{0}")]
    Install(Said),
    /// Initialising a pack (or an authoring tool) failed (Chinese in the reference's form,
    /// and English).
    #[error("{0}")]
    Init(Said),
    /// The pack has no remote to sync with.
    #[error(
        "同步失败：{name} 没有配置远端 (no remote) — add one with `engram remote add {name} <url>` (a git URL or a local path)"
    )]
    NoRemote {
        /// Pack name.
        name: String,
    },
    /// A sync step failed.
    #[error("同步失败 (sync failed): {0}")]
    Sync(String),
    /// The memory a write names changed (or went) since the writer read it (the web page's
    /// `base` check): nothing was written.
    #[error(
        "记忆已被修改 (the memory changed since you read it): {id} — nothing was written; reload it and apply your change again"
    )]
    Stale {
        /// The memory's id.
        id: String,
        /// The memory as it is now (`None`: it was deleted).
        current: Option<Box<MemoryItem>>,
    },
    /// A sync conflict a person resolves (a memory listed in `memory/_conflicts.md`, or a
    /// file's `.conflict-<host>` copy) is no longer there: it was resolved meanwhile.
    #[error(
        "冲突已解决 (this conflict was already resolved): {what} — nothing was written; reload the sync page"
    )]
    ConflictGone {
        /// The conflict: `[category] [time] summary`, or the copy's path.
        what: String,
    },
}

impl EngramError {
    /// The message in `lang`: for [`Lang::Zh`] the `Display` text (the reference's Chinese
    /// first), which is what the MCP tools answer; for [`Lang::En`] English alone, for a
    /// person's English command line.
    pub fn text(&self, lang: Lang) -> String {
        if lang == Lang::Zh {
            return self.to_string();
        }
        match self {
            Self::Pack(e) => e.text(lang),
            Self::Store(e) => store_error_text(e, lang),
            Self::Graph(e) => format!("storage error: {}", graph_error_text(e)),
            Self::Secret(e) | Self::Refused(e) => e.to_string(),
            Self::RevertConflict { commit, subject, conflicts } => format!(
                "cannot revert commit {commit} ({subject}): a later change conflicts:{}\nRevert the later commit first (it is named above), or fix the memory with correct_memory / delete_memory.",
                conflicts_text(conflicts)
            ),
            Self::FileNotFound { path } => format!("file not found: {path}"),
            Self::BadPath { path, reason } => format!("invalid path: {path} — {reason}"),
            Self::InvalidText { field, reason } => format!("invalid argument `{field}`: {reason}"),
            Self::Invalid { field, reason } => format!("invalid argument `{field}`: {reason}"),
            Self::NoMatch { category, summary, candidates } => format!(
                "no memory entry matches: [{category}] {summary}{}",
                candidate_list_in(candidates, "\n(no entries in this category)", "\ncandidates:")
            ),
            Self::Ambiguous { category, summary, candidates } => format!(
                "several memory entries match: [{category}] {summary} — give the exact summary of one{}",
                candidate_list_in(candidates, "\n(no entries in this category)", "\ncandidates:")
            ),
            Self::Unreadable { path, reason } => format!("cannot read the file: {path} — {reason}"),
            Self::Install(said) | Self::Init(said) => said.en.clone(),
            Self::NoRemote { name } => format!(
                "sync failed: {name} has no remote — add one with `engram remote add {name} <url>` (a git URL or a local path)"
            ),
            Self::Sync(m) => format!("sync failed: {m}"),
            Self::Stale { id, .. } => format!(
                "the memory changed since you read it: {id} — nothing was written; reload it and apply your change again"
            ),
            Self::ConflictGone { what } => format!(
                "this conflict was already resolved: {what} — nothing was written; reload the sync page"
            ),
        }
    }

    /// The stable code the JSON toolsets (notes, workspace) report for this error:
    /// `invalid_argument`, `pack_error` or `storage_error`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Invalid { .. } | Self::InvalidText { .. } => "invalid_argument",
            Self::Pack(_) => "pack_error",
            Self::Stale { .. } | Self::ConflictGone { .. } => "conflict",
            _ => "storage_error",
        }
    }
}

/// Parses a pack-relative path a user gave (a tool or CLI argument) into a
/// [`PackPath`](crate::pack_path::PackPath): the one path validator; the error says why.
pub(crate) fn user_path(path: &str) -> Result<crate::pack_path::PackPath> {
    crate::pack_path::PackPath::parse_user(path)
        .map_err(|e| EngramError::BadPath { path: path.to_owned(), reason: e.to_string() })
}

impl From<StoreError> for EngramError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Secret { .. } => Self::Secret(e),
            StoreError::BadMeta { .. } => Self::Refused(e),
            StoreError::BadPath { path, reason } => Self::BadPath { path, reason },
            // The network, a credential or the remote's identity: not the pack's storage.
            StoreError::Remote { .. } => Self::Sync(e.to_string()),
            other => Self::Store(other),
        }
    }
}

/// The message of a store error: a full disk says so and what to do, damage
/// points to `engram doctor`, passing trouble (a lock, a race, the network) to neither.
fn store_error_text(e: &StoreError, lang: Lang) -> String {
    if e.is_disk_full() {
        let head = lang.pick("磁盘已满 (disk full)", "disk full");
        format!(
            "{head}: {e} — the write did not go through; free some space on that disk and retry (reads still work)"
        )
    } else if e.may_be_damage() {
        let head = lang.pick("操作失败 (storage error)", "storage error");
        format!("{head}: {e} (`engram doctor` diagnoses a damaged pack)")
    } else if matches!(e, StoreError::Remote { .. }) {
        format!("{}: {e}", lang.pick("远端操作失败 (remote error)", "remote error"))
    } else {
        format!("{}: {e}", lang.pick("操作失败 (storage error)", "storage error"))
    }
}

fn conflicts_text(c: &[crate::store::RevertConflict]) -> String {
    c.iter()
        .map(|x| format!("\n- {} — changed later by commit {} ({})", x.path, x.later, x.later_subject))
        .collect()
}

fn graph_error_text(e: &crate::graph::GraphError) -> String {
    match std::error::Error::source(e) {
        Some(cause) => format!("{e}: {cause}"),
        None => e.to_string(),
    }
}

fn candidates_text(c: &[String]) -> String {
    candidate_list(c, "\n(该分类下没有记忆条目 / no entries in this category)")
}

/// The candidates an error lists (the first 20), or `none` when there are none.
pub(crate) fn candidate_list(c: &[String], none: &str) -> String {
    candidate_list_in(c, none, "\n候选 (candidates):")
}

/// [`candidate_list`] under another `header`.
fn candidate_list_in(c: &[String], none: &str, header: &str) -> String {
    if c.is_empty() {
        return none.to_owned();
    }
    let mut s = String::from(header);
    for x in c.iter().take(20) {
        s.push_str("\n- ");
        s.push_str(x);
    }
    if c.len() > 20 {
        s.push_str(&format!("\n… (+{} more)", c.len() - 20));
    }
    s
}

/// Result alias.
pub type Result<T, E = EngramError> = std::result::Result<T, E>;

/// Who is calling: recorded in commit trailers.
#[derive(Debug, Clone, Default)]
pub struct Caller {
    /// The tool (or CLI command) name.
    pub tool: String,
    /// The MCP client (`name version` from `initialize`), or `engram-cli`.
    pub client: Option<String>,
}

impl Caller {
    /// `message` signed by this caller (its `Engram-Tool` and `Engram-Client` trailers).
    pub fn sign(&self, message: CommitMessage) -> CommitMessage {
        message.made_by(&self.tool, self.client.as_deref())
    }

    /// The message of a commit this caller makes at `time` (seconds since the epoch): the one
    /// way the tools and the CLI start a commit message.
    pub fn commit_message(&self, subject: impl Into<String>, time: i64) -> CommitMessage {
        self.sign(CommitMessage::new(subject).at(time))
    }
}

/// Where the clock comes from (pinned in tests with `ENGRAM_NOW`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Clock {
    fixed: Option<DateTime<Utc>>,
}

impl Clock {
    /// The real clock.
    pub fn system() -> Self {
        Self { fixed: None }
    }
    /// A clock stopped at `t`.
    pub fn fixed(t: DateTime<Utc>) -> Self {
        Self { fixed: Some(t) }
    }
    /// Now.
    pub fn now(&self) -> DateTime<Utc> {
        self.fixed.unwrap_or_else(Utc::now)
    }
}

/// Settings the operations need.
#[derive(Debug, Clone)]
pub struct Config {
    /// The packs directory.
    pub packs_dir: PathBuf,
    /// `<cwd>/.claude/engram`, searched first when it exists.
    pub project_root: Option<PathBuf>,
    /// Commit identity and durability.
    pub store: StoreOptions,
    /// The clock.
    pub clock: Clock,
    /// Extra registry files, in override order (later wins; `ENGRAM_REGISTRY_FILES`).
    pub registry_files: Vec<PathBuf>,
    /// A community registry (`ENGRAM_REGISTRY_URL`: an http(s) URL or a file), read on
    /// every registry search or install by name; unreachable counts as empty.
    pub registry_url: Option<String>,
    /// Credentials and device name for `engram sync`.
    pub sync: SyncSettings,
    /// engram's own tools write tool traces (`engram serve --auto-trace`; one more commit per call).
    pub auto_trace: bool,
    /// Word vectors that re-rank search hits (`--embeddings PATH`); `None`: lexical only.
    pub embeddings: Option<std::sync::Arc<crate::search::Embeddings>>,
    /// Which paths of this machine tool arguments may name (closed on a team server).
    pub server_paths: server_paths::ServerPaths,
}

impl Config {
    /// Defaults for a packs directory: no project root, the system clock, default store options.
    pub fn new(packs_dir: PathBuf) -> Self {
        Self {
            packs_dir,
            project_root: None,
            store: StoreOptions::default(),
            clock: Clock::system(),
            registry_files: Vec::new(),
            registry_url: None,
            sync: SyncSettings::default(),
            auto_trace: false,
            embeddings: None,
            server_paths: server_paths::ServerPaths::Open,
        }
    }
}

/// The Engram tools over a packs directory.
pub struct Engram {
    config: Config,
    repos: Mutex<HashMap<PathBuf, Arc<Mutex<PackRepo>>>>,
    expiry_cache: Mutex<HashMap<PathBuf, engram::load::ExpiryState>>,
    /// The packs directory with symbolic links resolved, once: resolving it on every call cost
    /// one system call per path component.
    packs_root: PathBuf,
    search_cache: crate::packsearch::SearchCache,
    /// Whether each pack's `.git/config` asks for proposals, read again when the file
    /// changed (see `packs/review.rs`).
    proposing_packs: Mutex<HashMap<PathBuf, crate::store::ProposeSetting>>,
    /// HEAD commits the health check found whole (see `packs/health.rs`).
    whole_heads: packs::health::WholeHeads,
    /// The last scan of the packs roots, kept while they are as they were (`packs/health.rs`).
    scans: packs::health::ScanCache,
    resolved: packs::health::ResolveCache,
}

impl Engram {
    /// Creates the tools over `config`. Creates the packs directory if needed and
    /// removes the staging directories of installs whose process is gone.
    pub fn new(config: Config) -> Result<Self> {
        if let Err(e) = std::fs::create_dir_all(&config.packs_dir) {
            return Err(StoreError::Io {
                step: "create the packs directory",
                path: config.packs_dir.clone(),
                source: e,
            }
            .into());
        }
        let packs_root = config.packs_dir.canonicalize().unwrap_or_else(|_| config.packs_dir.clone());
        if !config.store.read_only {
            // What a killed install left (a clone can be large); `engram list` / `doctor` name the rest.
            packs::install::leftover_staging(&config.packs_dir, true);
        }
        Ok(Self {
            config,
            repos: Mutex::new(HashMap::new()),
            expiry_cache: Mutex::new(HashMap::new()),
            packs_root,
            search_cache: crate::packsearch::SearchCache::new(),
            proposing_packs: Mutex::new(HashMap::new()),
            whole_heads: packs::health::WholeHeads::default(),
            scans: packs::health::ScanCache::default(),
            resolved: packs::health::ResolveCache::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The packs (re-read on every call: packs may be installed by another process).
    pub fn packs(&self) -> Packs {
        Packs::with_resolved_packs_dir(self.packs_root.clone(), self.config.project_root.clone())
    }

    /// The current time of this engram's clock (a fixed one in tests).
    pub fn now(&self) -> DateTime<Utc> {
        self.config.clock.now()
    }

    /// The repository of a pack directory, opened (or adopted) once per process.
    /// For writers: a folder that is not a repository yet is adopted (its
    /// files become the `adopt:` commit). Reads use [`Engram::with_existing_repo`].
    pub fn repo(&self, dir: &Path) -> Result<Arc<Mutex<PackRepo>>> {
        let mut repos = self.repos.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = repos.get(dir) {
            return Ok(r.clone());
        }
        let repo = PackRepo::open_or_adopt(dir, self.config.store.clone())?;
        let repo = Arc::new(Mutex::new(repo));
        repos.insert(dir.to_owned(), repo.clone());
        Ok(repo)
    }

    /// Drops this process's handle of the repository at `dir` (before the directory is
    /// renamed: `engram build` moves its staging directory into place).
    pub(crate) fn forget_repo(&self, dir: &Path) {
        {
            let mut repos = self.repos.lock().unwrap_or_else(|p| p.into_inner());
            repos.remove(dir);
        }
    }

    /// Runs `f` with the pack's repository locked for this process (adopting
    /// the folder when it is not a repository yet: for writers).
    pub fn with_repo<T>(&self, dir: &Path, f: impl FnOnce(&PackRepo) -> Result<T>) -> Result<T> {
        let repo = self.repo(dir)?;
        let guard = self.hold(&repo)?;
        f(&guard)
    }

    /// Locks a pack's repository handle for this process: the
    /// one way a tool gets at a repository. For a proposing caller (`serve --propose`), its
    /// proposal branch is first brought up to date with the pack's branch
    /// ([`Engram::update_own_proposal`]), so what it reads and writes is the pack as it is
    /// now plus its own proposals.
    pub(crate) fn hold<'r>(&self, repo: &'r Mutex<PackRepo>) -> Result<std::sync::MutexGuard<'r, PackRepo>> {
        let guard = repo.lock().unwrap_or_else(|p| p.into_inner());
        self.update_own_proposal(&guard)?;
        Ok(guard)
    }

    /// Runs `f` with the pack's repository for a read: `None` when the folder
    /// is not a repository yet — reads never create one (the first write does).
    pub fn with_existing_repo<T>(
        &self,
        dir: &Path,
        f: impl FnOnce(&PackRepo) -> Result<T>,
    ) -> Result<Option<T>> {
        let repo = {
            let mut repos = self.repos.lock().unwrap_or_else(|p| p.into_inner());
            match repos.get(dir) {
                Some(r) => r.clone(),
                None if PackRepo::is_repository(dir) => {
                    let repo = Arc::new(Mutex::new(PackRepo::open(dir, self.config.store.clone())?));
                    repos.insert(dir.to_owned(), repo.clone());
                    repo
                }
                None => return Ok(None),
            }
        };
        let guard = self.hold(&repo)?;
        f(&guard).map(Some)
    }

    /// The path of this machine a tool argument names (`given`), checked against
    /// [`Config::server_paths`]: on a team server only allowed directories are reachable.
    pub fn server_path(&self, given: &Path) -> Result<PathBuf> {
        self.config
            .server_paths
            .check(given)
            .map_err(|e| EngramError::BadPath { path: given.display().to_string(), reason: e.to_string() })
    }

    /// Resolves a pack by name (kept while its directory and `meta.json` are unchanged: see
    /// [`packs::health`]).
    pub fn resolve(&self, name: &str) -> Result<PackDir> {
        Ok(self.resolved.resolve(&self.packs(), name, std::time::SystemTime::now())?)
    }

    /// `ping`.
    pub fn ping(&self) -> String {
        "pong".into()
    }

    /// `list_engrams`: the reference's lines, then a warning line for each pack that is
    /// damaged ([`Engram::survey`]) or hidden by another of the same name, and for each
    /// unfinished install engram could not clean. Without such a pack the text is the reference's.
    pub fn list_engrams(&self) -> String {
        let survey = self.survey();
        let mut lines: Vec<String> = survey
            .packs
            .iter()
            .map(|(p, _)| {
                let get = |k: &str, d: &str| crate::pack::python_str(p.meta.get(k), d);
                format!(
                    "- {}: {} (knowledge={}, examples={})",
                    p.name,
                    get("description", ""),
                    get("knowledge_count", "0"),
                    get("examples_count", "0")
                )
            })
            .collect();
        if lines.is_empty() {
            lines.push("暂无可用 Engram。".into());
        }
        lines.extend(survey.damaged().iter().map(Damage::note));
        for s in &survey.shadowed {
            lines.push(format!(
                "⚠ {}: 同名包被遮蔽 (shadowed) — the tools use {}; {} is hidden (rename one directory to use both)",
                s.name,
                s.used.display(),
                s.hidden.display()
            ));
        }
        for left in packs::install::leftover_staging(&self.config.packs_dir, false) {
            lines.push(format!("⚠ {}", left.describe()));
        }
        lines.join("\n")
    }

    /// `get_engram_info`: meta.json pretty-printed in file key order.
    pub fn get_engram_info(&self, name: &str) -> Result<String> {
        let pack = self.resolve(name)?;
        let meta = crate::pack::read_meta(&pack.dir)
            .map_err(|problem| PackError::BadMeta { name: name.to_owned(), problem })?;
        Ok(crate::jsonfmt::python_pretty(&serde_json::Value::Object(meta)))
    }
}
