//! Search over packs: the pure engine ([`crate::search`]) fed from git.
//!
//! A pack's index ([`PackIndex`]) is derived data: built from the files of
//! one commit ([`extract`] maps each file to documents), tied to that commit,
//! and brought to any other commit by re-extracting only the paths the git
//! diff between the two names. It is kept in memory per pack ([`SearchCache`],
//! keyed by commit) and on disk in `.git/engram/search.idx` ([`persist`]),
//! never in the tracked files. Every query first reads HEAD, so writes made by
//! other processes are seen; a missing, stale or corrupt stored index is
//! rebuilt, never an error. Writes never touch the index: it catches up lazily
//! at the next query, so the cost of a memory tool write is unchanged.

pub mod extract;
pub mod persist;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::search::{Document, Hit, SearchIndex, SearchRequest};
use crate::store::{PackRepo, StoreError};

use extract::{is_head_file, is_searchable, is_summary_source, summary_key, summary_lines};

/// After this many changed files applied since the last save, the index is
/// saved again (saving a large index costs more than replaying a short diff).
const SAVE_AFTER_CHANGED_FILES: usize = 256;

/// Where a summary line sits: (file rank: segment number, head last; line).
type SummaryPos = (u32, u32);

/// Values per key, over the stored join tables: a key changed since the
/// index was loaded has its value here (`None`: removed); any other key is
/// read from the stored tables when first needed.
#[derive(Clone, Debug)]
struct Layer<V>(HashMap<String, Option<V>>);

impl<V> Default for Layer<V> {
    fn default() -> Self {
        Self(HashMap::new())
    }
}

impl<V: Clone + Default> Layer<V> {
    /// The value of `key` (`load` reads the stored one).
    fn get(&self, key: &str, load: impl FnOnce(&str) -> Option<V>) -> Option<V> {
        match self.0.get(key) {
            Some(v) => v.clone(),
            None => load(key),
        }
    }

    /// The value of `key`, brought into the layer to be changed.
    fn get_mut(&mut self, key: &str, load: impl FnOnce(&str) -> Option<V>) -> Option<&mut V> {
        if !self.0.contains_key(key) {
            let v = load(key);
            self.0.insert(key.to_owned(), v);
        }
        self.0.get_mut(key)?.as_mut()
    }

    /// The value of `key` (a default one if absent), to be changed.
    fn entry(&mut self, key: &str, load: impl FnOnce(&str) -> Option<V>) -> &mut V {
        if !self.0.contains_key(key) {
            let v = load(key);
            self.0.insert(key.to_owned(), v);
        }
        self.0.entry(key.to_owned()).or_default().get_or_insert_with(V::default)
    }

    /// Removes `key`, returning its value.
    fn take(&mut self, key: &str, load: impl FnOnce(&str) -> Option<V>) -> Option<V> {
        match self.0.insert(key.to_owned(), None) {
            Some(v) => v,
            None => load(key),
        }
    }

    fn set(&mut self, key: String, v: V) {
        self.0.insert(key, Some(v));
    }
}

/// The search index of one pack at one commit.
///
/// A loaded index reads the stored file in place ([`persist`]): the
/// engine's segment and the join tables stay on disk (their small tables in
/// memory), and what changed since is kept in memory until the next save.
#[derive(Clone, Default)]
pub struct PackIndex {
    pack: String,
    commit: Option<String>,
    index: SearchIndex,
    /// The stored join tables under the layers below.
    joins: Option<Arc<persist::LazyJoins>>,
    /// Index file path → its (join key, summary) lines.
    summary_files: Layer<Vec<(String, String)>>,
    /// Join key → summaries in index order (derived from `summary_files`).
    summaries: Layer<Vec<(SummaryPos, String)>>,
    /// File path → ids of its documents (derived from the documents).
    file_docs: Layer<Vec<String>>,
    /// Join key → ids of the memory documents with that key (derived).
    key_docs: Layer<Vec<String>>,
    /// Changed files applied since the index was last saved (or loaded).
    unsaved: usize,
}

impl std::fmt::Debug for PackIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PackIndex")
            .field("pack", &self.pack)
            .field("commit", &self.commit)
            .field("docs", &self.index.len())
            .finish_non_exhaustive()
    }
}

/// How an index was brought up to date (for benchmarks and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refresh {
    /// Already at the commit.
    Current,
    /// Updated from the diff; this many changed paths were relevant.
    Incremental(usize),
    /// Loaded from `.git/engram/` and then updated from the diff.
    Loaded,
    /// Built from the commit's files.
    Rebuilt,
}

fn summary_rank(path: &str) -> u32 {
    if is_head_file(path) {
        return u32::MAX;
    }
    path.rsplit('/').next().and_then(|n| n.strip_suffix(".md")).and_then(|n| n.parse().ok()).unwrap_or(0)
}

/// Order of a memory document among the entries of its category: segments
/// (oldest first), then the head file; then position in the file.
fn doc_order(id: &str) -> (bool, &str, u32) {
    let (path, n) = id.rsplit_once('#').unwrap_or((id, "0"));
    (is_head_file(path), path, n.parse().unwrap_or(0))
}

/// Readers of the stored join tables and documents, for [`Layer`] misses.
#[derive(Clone)]
struct Stored(Option<Arc<persist::LazyJoins>>);

impl Stored {
    fn summary_file(&self, path: &str) -> Option<Vec<(String, String)>> {
        let j = self.0.as_ref()?.get()?;
        j.find_file(path).map(|i| j.file_lines(i))
    }

    fn summaries(&self, key: &str) -> Option<Vec<(SummaryPos, String)>> {
        let j = self.0.as_ref()?.get()?;
        j.find_key(key).map(|i| j.summaries(i)).filter(|s| !s.is_empty())
    }

    fn key_docs(&self, key: &str) -> Option<Vec<String>> {
        let j = self.0.as_ref()?.get()?;
        j.find_key(key).map(|i| j.key_docs(i)).filter(|s| !s.is_empty())
    }
}

impl PackIndex {
    /// An empty index for a pack.
    pub fn empty(pack: &str) -> Self {
        Self { pack: pack.to_owned(), ..Self::default() }
    }

    /// The commit the index reflects (`None` for an empty repository).
    pub fn commit(&self) -> Option<&str> {
        self.commit.as_deref()
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether the index holds no document.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// The document stored under an id.
    pub fn document(&self, id: &str) -> Option<std::borrow::Cow<'_, Document>> {
        self.index.get(id)
    }

    /// Runs a search request.
    pub fn search(&self, req: &SearchRequest) -> Vec<Hit> {
        self.index.search_with(req)
    }

    /// Runs a search request; each hit comes with its document (read once).
    pub fn search_documents(&self, req: &SearchRequest) -> Vec<(Hit, std::borrow::Cow<'_, Document>)> {
        self.index.search_documents(req)
    }

    /// Whether the stored file under the index could not be read since it
    /// was opened (the index must be rebuilt).
    pub fn is_damaged(&self) -> bool {
        self.index.is_damaged() || self.joins.as_ref().is_some_and(|j| j.failed())
    }

    /// Builds the index of `commit` from its files.
    pub fn build(repo: &PackRepo, pack: &str, commit: &str) -> Result<Self, StoreError> {
        let paths: Vec<String> =
            repo.list_files_at(commit)?.into_iter().filter(|p| is_searchable(p)).collect();
        let contents = repo.read_many_at(commit, &paths)?;
        let mut this = Self::empty(pack);
        this.apply(paths.into_iter().zip(contents).collect());
        this.commit = Some(commit.to_owned());
        this.unsaved = usize::MAX;
        Ok(this)
    }

    /// The index of files given with their contents (a pack folder that is not
    /// a repository yet, read as it is); it reflects no commit.
    pub fn of_files(pack: &str, files: Vec<(String, Option<Vec<u8>>)>) -> Self {
        let mut this = Self::empty(pack);
        this.apply(files.into_iter().filter(|(p, _)| is_searchable(p)).collect());
        this
    }

    /// Brings the index to `target` from the diff between its commit and
    /// `target` (either direction). Returns how many paths were re-read.
    pub fn update_to(&mut self, repo: &PackRepo, target: &str) -> Result<usize, StoreError> {
        let Some(from) = self.commit.clone() else {
            *self = Self::build(repo, &self.pack, target)?;
            return Ok(usize::MAX);
        };
        if from == target {
            return Ok(0);
        }
        let paths: Vec<String> =
            repo.changed_paths(&from, target)?.into_iter().filter(|p| is_searchable(p)).collect();
        let contents = repo.read_many_at(target, &paths)?;
        let n = paths.len();
        self.apply(paths.into_iter().zip(contents).collect());
        self.commit = Some(target.to_owned());
        self.unsaved = self.unsaved.saturating_add(n.max(1));
        Ok(n)
    }

    /// An index reading a stored file in place.
    fn from_stored(pack: &str, stored: persist::Stored) -> Self {
        Self {
            pack: pack.to_owned(),
            commit: Some(stored.commit),
            index: stored.index,
            joins: Some(Arc::new(stored.joins)),
            ..Self::default()
        }
    }

    fn stored(&self) -> Stored {
        Stored(self.joins.clone())
    }

    /// The ids of the documents of a file (stored ones: `<path>#<n>`).
    fn stored_file_docs(index: &SearchIndex, path: &str) -> Option<Vec<String>> {
        let ids = index.stored_ids_with_prefix(&format!("{path}#"));
        (!ids.is_empty()).then_some(ids)
    }

    fn add_summaries(&mut self, path: &str, lines: Vec<(String, String)>, affected: &mut HashSet<String>) {
        let rank = summary_rank(path);
        let stored = self.stored();
        for (i, (k, s)) in lines.iter().enumerate() {
            let list = self.summaries.entry(k, |k| stored.summaries(k));
            list.push(((rank, i as u32), s.clone()));
            list.sort_by_key(|e| e.0);
            affected.insert(k.clone());
        }
        self.summary_files.set(path.to_owned(), lines);
    }

    fn remove_summaries(&mut self, path: &str, affected: &mut HashSet<String>) {
        let stored = self.stored();
        let Some(old) = self.summary_files.take(path, |p| stored.summary_file(p)) else { return };
        let rank = summary_rank(path);
        for (k, _) in old {
            if let Some(list) = self.summaries.get_mut(&k, |k| stored.summaries(k)) {
                list.retain(|e| e.0.0 != rank);
                if list.is_empty() {
                    self.summaries.take(&k, |_| None);
                }
            }
            affected.insert(k);
        }
    }

    fn unlink_key(&mut self, key: &str, id: &str) {
        let stored = self.stored();
        if let Some(ids) = self.key_docs.get_mut(key, |k| stored.key_docs(k)) {
            ids.retain(|x| x != id);
            if ids.is_empty() {
                self.key_docs.take(key, |_| None);
            }
        }
    }

    /// Applies new contents (`None`: deleted) of searchable paths.
    fn apply(&mut self, files: Vec<(String, Option<Vec<u8>>)>) {
        let stored = self.stored();
        let mut affected: HashSet<String> = HashSet::new();
        let mut pending: HashMap<String, Document> = HashMap::new();
        for (path, content) in files {
            let text = content.map(|b| String::from_utf8_lossy(&b).into_owned());
            if is_summary_source(&path) {
                self.remove_summaries(&path, &mut affected);
                if let Some(t) = text {
                    self.add_summaries(&path, summary_lines(&t), &mut affected);
                }
                continue;
            }
            let docs = text.map(|t| extract::documents(&self.pack, &path, &t)).unwrap_or_default();
            let new_ids: HashSet<&str> = docs.iter().map(|d| d.id.as_str()).collect();
            let index = &self.index;
            let old_ids = self.file_docs.take(&path, |p| Self::stored_file_docs(index, p));
            for id in old_ids.unwrap_or_default() {
                if new_ids.contains(id.as_str()) {
                    continue;
                }
                if let Some(k) = self.index.get(&id).and_then(|d| summary_key(&d)) {
                    self.unlink_key(&k, &id);
                    affected.insert(k);
                }
                self.index.remove(&id);
            }
            let ids: Vec<String> = docs.iter().map(|d| d.id.clone()).collect();
            for doc in docs {
                let old_key = self.index.get(&doc.id).and_then(|d| summary_key(&d));
                match summary_key(&doc) {
                    Some(k) => {
                        if let Some(old) = old_key.filter(|o| *o != k) {
                            self.unlink_key(&old, &doc.id);
                            affected.insert(old);
                        }
                        let list = self.key_docs.entry(&k, |k| stored.key_docs(k));
                        if !list.contains(&doc.id) {
                            list.push(doc.id.clone());
                        }
                        affected.insert(k);
                        pending.insert(doc.id.clone(), doc);
                    }
                    None => {
                        if let Some(old) = old_key {
                            self.unlink_key(&old, &doc.id);
                            affected.insert(old);
                        }
                        self.put(doc);
                    }
                }
            }
            if !ids.is_empty() {
                self.file_docs.set(path, ids);
            }
        }
        // Join memory entries with their summaries (the k-th entry of a key
        // gets the k-th index line of that key).
        for key in affected {
            let Some(mut ids) = self.key_docs.get(&key, |k| stored.key_docs(k)) else { continue };
            ids.sort_by(|a, b| doc_order(a).cmp(&doc_order(b)));
            let sums: Vec<String> = self
                .summaries
                .get(&key, |k| stored.summaries(k))
                .map(|s| s.into_iter().map(|e| e.1).collect())
                .unwrap_or_default();
            for (i, id) in ids.iter().enumerate() {
                let title = sums.get(i).or(sums.last()).cloned().unwrap_or_default();
                let Some(mut doc) = pending.remove(id).or_else(|| self.index.get(id).map(|d| d.into_owned()))
                else {
                    continue;
                };
                doc.title = title;
                self.put(doc);
            }
        }
        for (_, doc) in pending {
            self.put(doc);
        }
    }

    /// Upserts a document unless the index already holds the same one.
    fn put(&mut self, doc: Document) {
        if self.index.get(&doc.id).as_deref() != Some(&doc) {
            // Fails only past 2^32 documents or terms; such a document is left out.
            let _ = self.index.upsert(doc);
        }
    }

    /// The join tables as they are now, sorted, for a save.
    fn encode(&self) -> Option<Vec<u8>> {
        let commit = self.commit.as_deref()?;
        if self.is_damaged() {
            return None;
        }
        let stored = self.stored();
        let mut keys: Vec<&str> =
            self.summaries.0.keys().chain(self.key_docs.0.keys()).map(String::as_str).collect();
        let mut files: Vec<&str> = self.summary_files.0.keys().map(String::as_str).collect();
        if let Some(j) = self.joins.as_ref().and_then(|j| j.get()) {
            keys.extend((0..j.n_keys()).map(|i| j.key_at(i)));
            files.extend((0..j.n_files()).map(|i| j.file_at(i)));
        }
        keys.sort_unstable();
        keys.dedup();
        files.sort_unstable();
        files.dedup();
        let mut key_rows = Vec::with_capacity(keys.len());
        for k in keys {
            let ids = self.key_docs.get(k, |k| stored.key_docs(k)).unwrap_or_default();
            let sums = self.summaries.get(k, |k| stored.summaries(k)).unwrap_or_default();
            if !ids.is_empty() || !sums.is_empty() {
                key_rows.push((k, ids, sums));
            }
        }
        let mut file_rows = Vec::with_capacity(files.len());
        for f in files {
            if let Some(lines) = self.summary_files.get(f, |f| stored.summary_file(f)) {
                file_rows.push((f, lines));
            }
        }
        let keys: Vec<persist::KeyRow<'_>> =
            key_rows.iter().map(|(k, ids, sums)| (*k, ids.as_slice(), sums.as_slice())).collect();
        let files: Vec<(&str, &[(String, String)])> =
            file_rows.iter().map(|(f, l)| (*f, l.as_slice())).collect();
        persist::encode(commit, &keys, &files, summary_rank, &self.index)
    }

    /// Saves the index to `.git/engram/` when enough changed since the last
    /// save, and then reads it in place from the saved file (what changed is
    /// no longer held in memory).
    fn maybe_save(&mut self, derived_dir: &Path) {
        if self.unsaved < SAVE_AFTER_CHANGED_FILES {
            return;
        }
        let Some(bytes) = self.encode() else { return };
        if persist::save(derived_dir, &bytes).is_err() {
            return;
        }
        drop(bytes);
        self.unsaved = 0;
        if let Some(stored) = persist::load(derived_dir).filter(|s| Some(s.commit.as_str()) == self.commit())
        {
            *self = Self::from_stored(&self.pack, stored);
        }
    }
}

/// The in-process indexes of every pack searched so far, keyed by pack
/// directory; each slot keeps the index at HEAD and the last `as_of` index.
#[derive(Default)]
pub struct SearchCache {
    slots: Mutex<HashMap<PathBuf, Arc<Mutex<Slot>>>>,
}

#[derive(Default)]
struct Slot {
    head: Option<PackIndex>,
    as_of: Option<PackIndex>,
}

impl std::fmt::Debug for SearchCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchCache").finish_non_exhaustive()
    }
}

/// Which commit to search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At<'a> {
    /// The current HEAD (re-read from disk).
    Head,
    /// A given commit (full id).
    Commit(&'a str),
}

impl SearchCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    fn slot(&self, dir: &Path) -> Arc<Mutex<Slot>> {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        slots.entry(dir.to_owned()).or_default().clone()
    }

    /// Brings the pack's index to `at` (HEAD is re-read from disk) and runs
    /// `f` on it. A stored index that cannot be read or updated is rebuilt;
    /// so is one whose file turns out damaged while `f` reads it (then `f`
    /// runs again on the rebuilt index).
    pub fn with_index<T>(
        &self,
        repo: &PackRepo,
        pack: &str,
        at: At<'_>,
        mut f: impl FnMut(&PackIndex, Refresh) -> T,
    ) -> Result<T, StoreError> {
        let slot = self.slot(repo.dir());
        let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
        let head = repo.current_head()?;
        let Some(head) = head else {
            return Ok(f(&PackIndex::empty(pack), Refresh::Current));
        };
        let derived = repo.derived_dir();
        let mut retried = false;
        loop {
            let refresh = ensure_at(&mut slot.head, repo, pack, &head, &derived)?;
            if let Some(index) = slot.head.as_mut() {
                index.maybe_save(&derived);
            }
            let (out, damaged) = match at {
                At::Commit(c) if c != head => {
                    if slot.as_of.as_ref().and_then(PackIndex::commit) != Some(c) {
                        // Start from the HEAD index and walk the diff to the old commit.
                        slot.as_of = slot.head.clone();
                    }
                    let refresh = ensure_at(&mut slot.as_of, repo, pack, c, &derived)?;
                    run(slot.as_of.as_ref(), pack, refresh, &mut f)
                }
                _ => run(slot.head.as_ref(), pack, refresh, &mut f),
            };
            if !damaged || retried {
                return Ok(out);
            }
            // The stored file could not be read since it was opened: rebuild it from git.
            retried = true;
            let _ = std::fs::remove_file(persist::path_in(&derived));
            slot.head = None;
            slot.as_of = None;
        }
    }
}

fn run<T>(
    index: Option<&PackIndex>,
    pack: &str,
    refresh: Refresh,
    f: &mut impl FnMut(&PackIndex, Refresh) -> T,
) -> (T, bool) {
    match index {
        Some(index) => (f(index, refresh), index.is_damaged()),
        None => (f(&PackIndex::empty(pack), refresh), false),
    }
}

/// Makes `cached` the index at `commit`: update it, else load it from disk
/// and update it, else build it.
fn ensure_at(
    cached: &mut Option<PackIndex>,
    repo: &PackRepo,
    pack: &str,
    commit: &str,
    derived: &Path,
) -> Result<Refresh, StoreError> {
    if let Some(index) = cached.as_mut() {
        if index.commit() == Some(commit) {
            return Ok(Refresh::Current);
        }
        match index.update_to(repo, commit) {
            Ok(n) if !index.is_damaged() => return Ok(Refresh::Incremental(n)),
            _ => *cached = None,
        }
    }
    if let Some(stored) = persist::load(derived) {
        let mut index = PackIndex::from_stored(pack, stored);
        if index.update_to(repo, commit).is_ok() && !index.is_damaged() {
            *cached = Some(index);
            return Ok(Refresh::Loaded);
        }
    }
    *cached = Some(PackIndex::build(repo, pack, commit)?);
    Ok(Refresh::Rebuilt)
}
