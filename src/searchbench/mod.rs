//! Search benchmarks behind `engram bench-search`: quality (LoCoMo, the
//! Chinese fixture set) and speed (build, query, incremental update over a
//! pack of synthetic memories). Quality runs go through real packs: entries
//! are written in the Engram memory format with [`crate::store::PackRepo`]
//! and searched with [`Engram::search`], the code path of `search_memory`.

pub mod locomo;
pub mod speed;
pub mod zh;

use std::path::Path;

use crate::memlog::{CategoryLog, FullIndex};
use crate::memory::{EntryMeta, IndexEntry};
use crate::ops::{Config, Engram, EngramError};
use crate::store::{Changes, CommitMessage, Edit, PackRepo, StoreOptions};

/// One memory entry to write into a benchmark pack.
#[derive(Debug, Clone)]
pub struct BenchEntry {
    /// Category.
    pub category: String,
    /// `YYYY-MM-DD HH:MM`.
    pub ts: String,
    /// Memory type.
    pub memory_type: String,
    /// Tags.
    pub tags: Vec<String>,
    /// Conversation id.
    pub conversation_id: Option<String>,
    /// Index summary.
    pub summary: String,
    /// Block content.
    pub content: String,
}

/// Creates pack `name` under `packs_dir` holding `entries`, written in the
/// Engram memory format as one commit (segments roll as in normal use).
pub fn write_pack(packs_dir: &Path, name: &str, entries: &[BenchEntry]) -> Result<(), EngramError> {
    let dir = packs_dir.join(name);
    let io = |step: &'static str, path: &Path, source: std::io::Error| {
        EngramError::Store(crate::store::StoreError::Io { step, path: path.to_owned(), source })
    };
    std::fs::create_dir_all(&dir).map_err(|e| io("create directory", &dir, e))?;
    let meta = serde_json::json!({ "name": name, "description": "search benchmark pack" });
    std::fs::write(dir.join("meta.json"), meta.to_string()).map_err(|e| io("write", &dir, e))?;
    let repo = PackRepo::open_or_adopt(&dir, StoreOptions::default())?;
    repo.write(|snap| {
        let mut changes = Changes::for_memory();
        let mut index = FullIndex::load(snap)?;
        let mut logs: Vec<CategoryLog> = Vec::new();
        let mut names: Vec<&str> = Vec::new();
        for e in entries {
            let i = match names.iter().position(|n| *n == e.category) {
                Some(i) => i,
                None => {
                    names.push(&e.category);
                    logs.push(CategoryLog::load(snap, &e.category)?);
                    logs.len() - 1
                }
            };
            let meta = EntryMeta {
                ts: e.ts.clone(),
                memory_type: e.memory_type.clone(),
                expires: None,
                tags: e.tags.clone(),
                conversation_id: e.conversation_id.clone(),
            };
            logs[i].append(&meta, &e.content);
            let line = IndexEntry {
                category: e.category.clone(),
                ts: e.ts.clone(),
                memory_type: e.memory_type.clone(),
                expires: None,
                tags: e.tags.clone(),
                summary: crate::memory::single_line(&e.summary),
            };
            index.append(line.render());
        }
        for log in &logs {
            log.write(&mut changes);
        }
        index.write(&mut changes, false);
        let message =
            CommitMessage::new(format!("bench: {} entries", entries.len())).made_by("bench-search", None);
        Ok::<_, EngramError>(Edit::Commit { changes, message, value: () })
    })?;
    Ok(())
}

/// Creates pack `name` under `packs_dir` holding `files` (pack path, text)
/// as one commit.
pub fn write_files(packs_dir: &Path, name: &str, files: &[(String, String)]) -> Result<(), EngramError> {
    let dir = packs_dir.join(name);
    let io = |step: &'static str, path: &Path, source: std::io::Error| {
        EngramError::Store(crate::store::StoreError::Io { step, path: path.to_owned(), source })
    };
    std::fs::create_dir_all(&dir).map_err(|e| io("create directory", &dir, e))?;
    let meta = serde_json::json!({ "name": name, "description": "search benchmark pack" });
    std::fs::write(dir.join("meta.json"), meta.to_string()).map_err(|e| io("write", &dir, e))?;
    let repo = PackRepo::open_or_adopt(&dir, StoreOptions::default())?;
    repo.write(|_| {
        // Example packs ship memory files too, written as an install writes them.
        let mut changes = Changes::for_memory();
        for (path, text) in files {
            changes.put(path.clone(), text.clone());
        }
        let message =
            CommitMessage::new(format!("bench: {} files", files.len())).made_by("bench-search", None);
        Ok::<_, EngramError>(Edit::Commit { changes, message, value: () })
    })?;
    Ok(())
}

/// An [`Engram`] over a packs directory (system clock, default store options).
pub fn engram_over(packs_dir: &Path) -> Result<Engram, EngramError> {
    engram_with(packs_dir, None)
}

/// An [`Engram`] over a packs directory whose searches re-rank with `embeddings`.
pub fn engram_with(packs_dir: &Path, embeddings: Option<&Embeddings>) -> Result<Engram, EngramError> {
    let mut config = Config::new(packs_dir.to_owned());
    config.embeddings = embeddings.cloned();
    Engram::new(config)
}

/// Shared word vectors for the quality runs (`--embeddings PATH`).
pub type Embeddings = std::sync::Arc<crate::search::Embeddings>;

/// `YYYY-MM-DD HH:MM` of a unix time.
pub fn ts_of(t: i64) -> String {
    crate::packsearch::extract::format_ts(t)
}

/// A temporary directory removed on drop.
pub struct TempDir(std::path::PathBuf);

impl TempDir {
    /// Creates `<tmp>/engram-bench-<tag>-<pid>`.
    pub fn new(tag: &str) -> std::io::Result<Self> {
        let p = std::env::temp_dir().join(format!("engram-bench-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p)?;
        Ok(Self(p))
    }

    /// The path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
