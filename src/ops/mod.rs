//! The Engram operations, shared by the MCP tools and the CLI.
//!
//! Each public method of [`Engram`] is one tool: it validates its input,
//! reads or writes a pack through [`crate::store`], and returns the text the
//! reference server would return. Failures are [`EngramError`]s whose
//! messages start with the reference's text and then say what to do.

mod install;
mod knowledge;
mod load;
mod memory_tools;
mod personal;
mod prompt;
mod user_graph;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};

use crate::pack::{PackDir, PackError, Packs};
use crate::store::{PackRepo, StoreError, StoreOptions};

pub use install::Registry;
pub use memory_tools::{CaptureRequest, CorrectRequest};
pub use personal::{EVENT_TEMPLATES_URI, EVENT_TYPES, PROFILE_CATEGORIES, Personal};
pub use user_graph::{
    DEFAULT_GRAPH_PACK, DEFAULT_USER, StructuredConfig, UserFiles, UserGraph, validate_user,
};

/// Limits on input sizes (bytes unless noted).
pub mod limits {
    /// Largest memory content, knowledge file or written file.
    pub const MAX_CONTENT_BYTES: usize = 256 * 1024;
    /// Largest summary (characters).
    pub const MAX_SUMMARY_CHARS: usize = 500;
    /// Most tags on one memory.
    pub const MAX_TAGS: usize = 32;
    /// Longest category, tag or type (characters).
    pub const MAX_LABEL_CHARS: usize = 100;
    /// Longest path inside a pack (bytes).
    pub const MAX_PATH_BYTES: usize = 1024;
    /// Largest file `read_engram_file` returns.
    pub const MAX_READ_BYTES: usize = 1024 * 1024;
}

/// Errors of the Engram tools. `Display` is what the model reads.
#[derive(Debug, thiserror::Error)]
pub enum EngramError {
    /// Pack lookup failed.
    #[error(transparent)]
    Pack(#[from] PackError),
    /// The store failed.
    #[error("操作失败 (storage error): {0}")]
    Store(#[from] StoreError),
    /// The store failed under the graph module.
    #[error("操作失败 (storage error): {}", graph_error_text(.0))]
    Graph(#[from] crate::graph::GraphError),
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
    /// Installing a pack failed (message in the reference's form).
    #[error("{0}")]
    Install(String),
    /// Initialising a pack failed (message in the reference's form).
    #[error("{0}")]
    Init(String),
}

fn graph_error_text(e: &crate::graph::GraphError) -> String {
    match std::error::Error::source(e) {
        Some(cause) => format!("{e}: {cause}"),
        None => e.to_string(),
    }
}

fn candidates_text(c: &[String]) -> String {
    if c.is_empty() {
        return "\n(该分类下没有记忆条目 / no entries in this category)".into();
    }
    let mut s = String::from("\n候选 (candidates):");
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
    /// Extra registry files, in override order (later wins).
    pub registry_files: Vec<PathBuf>,
}

/// The Engram tools over a packs directory.
pub struct Engram {
    config: Config,
    repos: Mutex<HashMap<PathBuf, Arc<Mutex<PackRepo>>>>,
    expiry_cache: Mutex<HashMap<PathBuf, load::ExpiryState>>,
}

impl Engram {
    /// Creates the tools over `config`. Creates the packs directory if needed.
    pub fn new(config: Config) -> Result<Self> {
        if let Err(e) = std::fs::create_dir_all(&config.packs_dir) {
            return Err(StoreError::Io {
                step: "create the packs directory",
                path: config.packs_dir.clone(),
                source: e,
            }
            .into());
        }
        Ok(Self { config, repos: Mutex::new(HashMap::new()), expiry_cache: Mutex::new(HashMap::new()) })
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The packs (re-read on every call: packs may be installed by another process).
    pub fn packs(&self) -> Packs {
        Packs::new(self.config.packs_dir.clone(), self.config.project_root.clone())
    }

    fn now(&self) -> DateTime<Utc> {
        self.config.clock.now()
    }

    /// The repository of a pack directory, opened (or adopted) once per process.
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

    /// Runs `f` with the pack's repository locked for this process.
    pub fn with_repo<T>(&self, dir: &Path, f: impl FnOnce(&PackRepo) -> Result<T>) -> Result<T> {
        let repo = self.repo(dir)?;
        let guard = repo.lock().unwrap_or_else(|p| p.into_inner());
        f(&guard)
    }

    /// Resolves a pack by name.
    pub fn resolve(&self, name: &str) -> Result<PackDir> {
        Ok(self.packs().resolve(name)?)
    }

    /// `ping`.
    pub fn ping(&self) -> String {
        "pong".into()
    }

    /// `list_engrams`.
    pub fn list_engrams(&self) -> String {
        let packs = self.packs().list();
        if packs.is_empty() {
            return "暂无可用 Engram。".into();
        }
        packs
            .iter()
            .map(|p| {
                let get = |k: &str, d: &str| crate::pack::python_str(p.meta.get(k), d);
                format!(
                    "- {}: {} (knowledge={}, examples={})",
                    p.name,
                    get("description", ""),
                    get("knowledge_count", "0"),
                    get("examples_count", "0")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// `get_engram_info`: meta.json pretty-printed in file key order.
    pub fn get_engram_info(&self, name: &str) -> Result<String> {
        let pack = self.resolve(name)?;
        let meta = crate::pack::read_meta(&pack.dir)
            .map_err(|problem| PackError::BadMeta { name: name.to_owned(), problem })?;
        Ok(crate::jsonfmt::python_pretty(&serde_json::Value::Object(meta)))
    }
}
