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

/// Plain BM25 (k1 = 1.2, b = 0.75) over documents already cut into terms: the
/// reference the quality benches print next to engram, with none of its tricks.
pub(crate) struct PlainBm25<'a> {
    docs: &'a [Vec<String>],
    df: std::collections::HashMap<&'a str, f64>,
    avg: f64,
}

impl<'a> PlainBm25<'a> {
    /// Counts document frequencies and the average length of `docs`.
    pub(crate) fn new(docs: &'a [Vec<String>]) -> Self {
        let n = docs.len() as f64;
        let avg = docs.iter().map(Vec::len).sum::<usize>() as f64 / n.max(1.0);
        let mut df = std::collections::HashMap::new();
        for d in docs {
            for w in d.iter().map(String::as_str).collect::<std::collections::BTreeSet<_>>() {
                *df.entry(w).or_default() += 1.0;
            }
        }
        Self { docs, df, avg }
    }

    /// Indices of the `depth` best documents holding a query term, best first
    /// (ties by index).
    pub(crate) fn top(&self, query: &[String], depth: usize) -> Vec<usize> {
        let n = self.docs.len() as f64;
        let mut scored: Vec<(f64, usize)> = self
            .docs
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let mut s = 0.0;
                for w in query {
                    let tf = d.iter().filter(|x| *x == w).count() as f64;
                    if tf > 0.0 {
                        let dfw = self.df.get(w.as_str()).copied().unwrap_or(0.0);
                        let idf = (1.0 + (n - dfw + 0.5) / (dfw + 0.5)).ln();
                        s += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * d.len() as f64 / self.avg));
                    }
                }
                (s, i)
            })
            .filter(|x| x.0 > 0.0)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.into_iter().take(depth).map(|(_, i)| i).collect()
    }
}
