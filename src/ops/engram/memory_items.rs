//! Memories as items with ids: what the web page (`engram ui`) and its JSON API list, and the
//! id-addressed, base-checked selection that `correct_memory` / `delete_memory` use for them.
//!
//! An entry has no id in the pack format. Its id here is a hash of its category, its
//! timestamp and its rank among the index entries of that category with that timestamp: a
//! correction keeps all three (it keeps the time), so the id of an entry survives edits.
//! Every item is read from a commit (HEAD, or the `base` a page was rendered from), never
//! from the working tree, so what a page shows is always a commit it can name.

use std::collections::HashMap;
use std::sync::Arc;

use crate::memlog::{
    CategoryLog, FullIndex, LinePos, blocks_in, category_files, full_index_files, index_entries_in,
    read_category_file,
};
use crate::memory::IndexEntry;
use crate::ops::{Engram, EngramError, Result};
use crate::store::{Committed, Snapshot};

/// One memory entry as the web page shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MemoryItem {
    /// Stable id (16 hex digits; see the module doc).
    pub id: String,
    /// Category (file stem under `memory/`).
    pub category: String,
    /// `YYYY-MM-DD HH:MM`, UTC.
    pub ts: String,
    /// Memory type.
    #[serde(rename = "type")]
    pub memory_type: String,
    /// Expiry date, if any.
    pub expires: Option<String>,
    /// Tags.
    pub tags: Vec<String>,
    /// The index summary.
    pub summary: String,
    /// The entry's text (empty when its block is missing).
    pub content: String,
}

impl MemoryItem {
    /// The item of index entry `e` with stable id `id` and block text `content`.
    fn of_entry(id: String, e: &IndexEntry, content: String) -> Self {
        MemoryItem {
            id,
            category: e.category.clone(),
            ts: e.ts.clone(),
            memory_type: e.memory_type.clone(),
            expires: e.expires.clone(),
            tags: e.tags.clone(),
            summary: e.summary.clone(),
            content,
        }
    }

    /// True when the entry's visible fields are equal (the id aside).
    fn same_as(&self, other: &MemoryItem) -> bool {
        (&self.category, &self.memory_type, &self.expires, &self.tags, &self.summary, &self.content)
            == (
                &other.category,
                &other.memory_type,
                &other.expires,
                &other.tags,
                &other.summary,
                &other.content,
            )
    }
}

/// A pack's memories at one commit.
#[derive(Debug, Clone, Default)]
pub struct MemoryList {
    /// The commit they were read from (`None`: the pack has no commit yet).
    pub commit: Option<String>,
    /// Every entry of the full index, oldest first.
    pub items: Vec<MemoryItem>,
}

/// A memory entry that is no longer live: archived by `consolidate_memory`
/// (`memory/<category>-archive.md`) or moved out by the expiry pass (`<category>-expired.md`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PastItem {
    /// The category it belonged to.
    pub category: String,
    /// `archived` or `expired`.
    pub kind: &'static str,
    /// `YYYY-MM-DD HH:MM`, when its block has a meta line.
    pub ts: Option<String>,
    /// Memory type, when its block has a meta line.
    #[serde(rename = "type")]
    pub memory_type: Option<String>,
    /// Expiry date, if any.
    pub expires: Option<String>,
    /// Tags.
    pub tags: Vec<String>,
    /// The entry's text.
    pub content: String,
}

/// Which entry a correction or deletion is about, by id, and what the writer saw.
#[derive(Debug, Clone)]
pub struct MemoryTarget {
    /// The entry's id.
    pub id: String,
    /// The entry as the writer saw it (at its `base` commit): when the entry differs now, the
    /// write is refused with [`EngramError::Stale`]. `None` checks only that the entry exists.
    pub expected: Option<MemoryItem>,
}

/// What a write from the page did: the tool's text, the commit and (capture) the new entry's id.
#[derive(Debug, Clone, Default)]
pub struct WriteOutcome {
    /// The tool's answer text (as the MCP tool returns it).
    pub text: String,
    /// Full id of the commit made (`None`: nothing was committed, e.g. a duplicate capture).
    pub commit: Option<String>,
    /// The id of the entry written (capture and correct).
    pub id: Option<String>,
    /// The commit the write was made on (the branch's head before it), when it committed.
    pub parent: Option<String>,
}

impl WriteOutcome {
    pub(super) fn new(text: String, commit: Option<&Committed>) -> Self {
        Self {
            text,
            commit: commit.map(|c| c.id.clone()),
            id: None,
            parent: commit.and_then(|c| c.previous_head.clone()),
        }
    }
}

/// The id of the `nth` entry of `category` stamped `ts` (0 for the first in index order).
pub fn memory_id(category: &str, ts: &str, nth: usize) -> String {
    format!("{:016x}", crate::graph::fnv1a64(format!("{category}\u{0}{ts}\u{0}{nth}").as_bytes()))
}

/// The ids of index entries, in their order.
pub(super) fn entry_ids<'a>(entries: impl Iterator<Item = &'a IndexEntry>) -> Vec<String> {
    let mut seen: HashMap<(&str, &str), usize> = HashMap::new();
    entries
        .map(|e| {
            let n = seen.entry((e.category.as_str(), e.ts.as_str())).or_insert(0);
            let id = memory_id(&e.category, &e.ts, *n);
            *n += 1;
            id
        })
        .collect()
}

type MetaKey = (String, String, Option<String>, Vec<String>);

fn key_of(e: &IndexEntry) -> MetaKey {
    (e.ts.clone(), e.memory_type.clone(), e.expires.clone(), e.tags.clone())
}

/// The contents of a category's entries, by block meta, in file order.
fn contents_by_meta(log: &CategoryLog) -> HashMap<MetaKey, Vec<String>> {
    let mut map: HashMap<MetaKey, Vec<String>> = HashMap::new();
    for b in log.blocks() {
        if let Some(m) = &b.meta {
            let key = (m.ts.clone(), m.memory_type.clone(), m.expires.clone(), m.tags.clone());
            map.entry(key).or_default().push(b.content().to_owned());
        }
    }
    map
}

/// The memory files of a pack, parsed, by blob id: a list at a new commit reads and parses
/// only the files that changed since the last list (a blob id names its content, so what is
/// kept is right whoever made the commits). Holds the files of the last list read through it,
/// and keeps them between launches in `.git/engram-memory-files` ([`KEPT_FILE`]): the first
/// list of a launch reads that one file instead of every memory file, and parses only the
/// files whose blob is not in it (changed by another process, a sync or a person's commit).
#[derive(Debug, Default)]
pub struct ParsedMemoryFiles {
    index: HashMap<String, Arc<Vec<IndexEntry>>>,
    blocks: HashMap<String, Arc<ParsedBlocks>>,
    /// The kept file, once a list has looked for it.
    kept: Option<std::path::PathBuf>,
    /// Files parsed since the kept file was written (or read).
    changed: usize,
    /// When the kept file was last written (or read).
    kept_at: Option<std::time::Instant>,
}

/// The kept file is written again when a quarter of the files were parsed since, else at most
/// this often (a list after each commit parses only a head file or two: rewriting the whole
/// file each time would cost more than it saves).
const KEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// The name of the kept file under `.git/` (`engram-memory-files`).
pub const KEPT_FILE: &str = "memory-files";
/// The version of its format (its first line); another version is not read.
const KEPT_VERSION: &str = "engram memory-files 1";

/// The blocks of one category file that have a meta line: (meta, content), in order.
type ParsedBlocks = Vec<(MetaKey, String)>;

/// The kept file's body (after its version line).
#[derive(serde::Serialize, serde::Deserialize)]
struct Kept<K, I, B> {
    /// Full-index files: (blob id, entries).
    index: Vec<(K, I)>,
    /// Category files: (blob id, blocks).
    blocks: Vec<(K, B)>,
}

/// What [`ParsedMemoryFiles::to_keep`] hands over: the parsed files to write to the kept file.
#[derive(Debug)]
pub struct KeepJob {
    file: std::path::PathBuf,
    index: Vec<(String, Arc<Vec<IndexEntry>>)>,
    blocks: Vec<(String, Arc<ParsedBlocks>)>,
}

impl KeepJob {
    /// Writes the kept file (a new file renamed over the old one, so a reader sees one or the
    /// other whole). A failure only costs the next launch a full read.
    pub fn write(self) {
        let body = Kept {
            index: self.index.iter().map(|(id, v)| (id.as_str(), v.as_slice())).collect(),
            blocks: self.blocks.iter().map(|(id, v)| (id.as_str(), v.as_slice())).collect(),
        };
        let Ok(json) = serde_json::to_string(&body) else { return };
        static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = self.file.with_extension(format!("tmp{}-{n}", std::process::id()));
        let written = std::fs::write(&tmp, format!("{KEPT_VERSION}\n{json}"))
            .and_then(|()| std::fs::rename(&tmp, &self.file));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

impl ParsedMemoryFiles {
    /// Reads the kept file at `file` the first time (a missing, damaged or other-version file
    /// is as none: the files are parsed from the commit).
    fn look_for_kept(&mut self, file: std::path::PathBuf) {
        if self.kept.is_some() {
            return;
        }
        let kept = std::fs::read_to_string(&file).ok().and_then(|text| {
            let json = text.strip_prefix(KEPT_VERSION)?.strip_prefix('\n')?;
            serde_json::from_str::<Kept<String, Vec<IndexEntry>, ParsedBlocks>>(json).ok()
        });
        if let Some(k) = kept {
            self.index.extend(k.index.into_iter().map(|(id, v)| (id, Arc::new(v))));
            self.blocks.extend(k.blocks.into_iter().map(|(id, v)| (id, Arc::new(v))));
        }
        self.kept = Some(file);
        self.kept_at = Some(std::time::Instant::now());
    }

    /// The files to write to the kept file when enough were parsed since it was written (see
    /// [`KEEP_EVERY`]; then marked written): the caller writes them with [`KeepJob::write`],
    /// off the answer's path.
    pub fn to_keep(&mut self) -> Option<KeepJob> {
        let files = self.index.len() + self.blocks.len();
        let due = self.changed * 4 >= files || self.kept_at.is_none_or(|t| t.elapsed() >= KEEP_EVERY);
        if self.changed == 0 || !due {
            return None;
        }
        let file = self.kept.clone()?;
        self.changed = 0;
        self.kept_at = Some(std::time::Instant::now());
        Some(KeepJob {
            file,
            index: self.index.iter().map(|(id, v)| (id.clone(), v.clone())).collect(),
            blocks: self.blocks.iter().map(|(id, v)| (id.clone(), v.clone())).collect(),
        })
    }
}

/// A file through `cache` (by its blob id), else read and parsed (then counted in `changed`);
/// kept in `next`.
fn parsed<T>(
    snap: &Snapshot<'_>,
    path: &str,
    cache: &HashMap<String, Arc<T>>,
    next: &mut HashMap<String, Arc<T>>,
    changed: &mut usize,
    parse: impl FnOnce() -> Result<T>,
) -> Result<Arc<T>> {
    let Some(id) = snap.file_id(path)? else { return Ok(Arc::new(parse()?)) };
    let value = match cache.get(&id) {
        Some(v) => v.clone(),
        None => {
            *changed += 1;
            Arc::new(parse()?)
        }
    };
    next.insert(id, value.clone());
    Ok(value)
}

/// A meta (time, type, expiry, tags) as a borrowed key.
type MetaRef<'a> = (&'a str, &'a str, Option<&'a str>, &'a [String]);

/// Every entry of a snapshot's full index with its content, oldest first (linear in the pack;
/// files parsed before are taken from `cache`).
pub(super) fn items_of(snap: &Snapshot<'_>, cache: &mut ParsedMemoryFiles) -> Result<Vec<MemoryItem>> {
    let mut next = ParsedMemoryFiles {
        kept: cache.kept.clone(),
        changed: cache.changed,
        kept_at: cache.kept_at,
        ..Default::default()
    };
    let mut index_files = Vec::new();
    for path in full_index_files(snap)? {
        index_files.push(parsed(snap, &path, &cache.index, &mut next.index, &mut next.changed, || {
            Ok(index_entries_in(&snap.read_text(&path)?.unwrap_or_default()))
        })?);
    }
    let entries: Vec<&IndexEntry> = index_files.iter().flat_map(|f| f.iter()).collect();
    let ids = entry_ids(entries.iter().copied());
    // Each category's entries (positions in `entries`), in index order.
    let mut of_category: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        of_category.entry(e.category.as_str()).or_default().push(i);
    }
    let mut contents: Vec<&str> = vec![""; entries.len()];
    let mut files_of: Vec<Vec<Arc<ParsedBlocks>>> = Vec::with_capacity(of_category.len());
    for category in of_category.keys() {
        let mut files = Vec::new();
        for path in category_files(snap, category)? {
            files.push(parsed(snap, &path, &cache.blocks, &mut next.blocks, &mut next.changed, || {
                Ok(blocks_in(&read_category_file(snap, &path)?.unwrap_or_default())
                    .into_iter()
                    .filter_map(|b| {
                        let content = b.content().to_owned();
                        let m = b.meta?;
                        Some(((m.ts, m.memory_type, m.expires, m.tags), content))
                    })
                    .collect())
            })?);
        }
        files_of.push(files);
    }
    for ((_, positions), files) in of_category.iter().zip(&files_of) {
        let blocks: Vec<&(MetaKey, String)> = files.iter().flat_map(|f| f.iter()).collect();
        join_contents(&entries, positions, &blocks, &mut contents);
    }
    let items = entries
        .iter()
        .zip(ids)
        .zip(contents)
        .map(|((e, id), content)| MemoryItem::of_entry(id, e, content.to_owned()))
        .collect();
    *cache = next;
    Ok(items)
}

/// The meta of an index entry as a borrowed key.
fn meta_ref(e: &IndexEntry) -> MetaRef<'_> {
    (e.ts.as_str(), e.memory_type.as_str(), e.expires.as_deref(), e.tags.as_slice())
}

/// A block's meta as a borrowed key.
fn block_ref(key: &MetaKey) -> MetaRef<'_> {
    (key.0.as_str(), key.1.as_str(), key.2.as_deref(), key.3.as_slice())
}

/// Gives each entry of one category (`positions` in `entries`) its text: the `n`th entry with
/// some meta gets the `n`th block of the category with that meta, in file order. When the
/// blocks have the entries' metas in the entries' order (as the tools write them), that is
/// block `i` for entry `i`, found without a map.
fn join_contents<'a>(
    entries: &[&IndexEntry],
    positions: &[usize],
    blocks: &[&'a (MetaKey, String)],
    contents: &mut [&'a str],
) {
    let aligned = blocks.len() == positions.len()
        && positions.iter().zip(blocks).all(|(&i, b)| meta_ref(entries[i]) == block_ref(&b.0));
    if aligned {
        for (&i, b) in positions.iter().zip(blocks) {
            contents[i] = b.1.as_str();
        }
        return;
    }
    let mut by_meta: HashMap<MetaRef<'a>, Vec<&'a str>> = HashMap::new();
    for b in blocks {
        by_meta.entry(block_ref(&b.0)).or_default().push(b.1.as_str());
    }
    let mut ranks: HashMap<MetaRef<'_>, usize> = HashMap::new();
    for &i in positions {
        let key = meta_ref(entries[i]);
        let rank = ranks.entry(key).or_insert(0);
        if let Some(c) = by_meta.get(&key).and_then(|v| v.get(*rank)) {
            contents[i] = c;
        }
        *rank += 1;
    }
}

/// Picks the entry a [`MemoryTarget`] names inside a write, checking it is still what the
/// writer saw: returns its position in `entries`.
pub(super) fn select_target(
    snap: &Snapshot<'_>,
    entries: &[(LinePos, IndexEntry)],
    target: &MemoryTarget,
) -> Result<usize> {
    let ids = entry_ids(entries.iter().map(|(_, e)| e));
    let Some(i) = ids.iter().position(|id| *id == target.id) else {
        return Err(EngramError::Stale { id: target.id.clone(), current: None });
    };
    if let Some(expected) = &target.expected {
        let current = items_of_category(snap, entries, &ids, i)?;
        if !current.same_as(expected) {
            return Err(EngramError::Stale { id: target.id.clone(), current: Some(Box::new(current)) });
        }
    }
    Ok(i)
}

/// The item at `i` (reads only its category).
fn items_of_category(
    snap: &Snapshot<'_>,
    entries: &[(LinePos, IndexEntry)],
    ids: &[String],
    i: usize,
) -> Result<MemoryItem> {
    let e = &entries[i].1;
    let rank = crate::memlog::same_meta_rank(entries, i);
    let log = CategoryLog::load(snap, &e.category)?;
    let content =
        contents_by_meta(&log).get(&key_of(e)).and_then(|v| v.get(rank)).cloned().unwrap_or_default();
    Ok(MemoryItem::of_entry(ids[i].clone(), e, content))
}

impl Engram {
    /// A pack's memories at `at` (a commit id or prefix; HEAD when `None`).
    pub fn memory_items(&self, name: &str, at: Option<&str>) -> Result<MemoryList> {
        self.memory_items_with(name, at, &mut ParsedMemoryFiles::default())
    }

    /// [`memory_items`](Self::memory_items), reading only the memory files that changed since
    /// the last list read through `cache`.
    pub fn memory_items_with(
        &self,
        name: &str,
        at: Option<&str>,
        cache: &mut ParsedMemoryFiles,
    ) -> Result<MemoryList> {
        let pack = self.resolve(name)?;
        let list = self.with_existing_repo(&pack.dir, |repo| {
            let Some(head) = repo.current_head()? else { return Ok(MemoryList::default()) };
            let commit = match at {
                Some(rev) => repo.resolve_commit(rev)?,
                None => head,
            };
            cache.look_for_kept(repo.cache_file(KEPT_FILE));
            let snap = repo.snapshot_at(&commit)?;
            Ok(MemoryList { items: items_of(&snap, cache)?, commit: Some(commit) })
        })?;
        Ok(list.unwrap_or_default())
    }

    /// A pack's archived and expired entries at `at` (HEAD when `None`), file by file in name
    /// order, oldest block first within a file.
    pub fn past_memory_items(&self, name: &str, at: Option<&str>) -> Result<Vec<PastItem>> {
        let pack = self.resolve(name)?;
        let items = self.with_existing_repo(&pack.dir, |repo| {
            let Some(head) = repo.current_head()? else { return Ok(Vec::new()) };
            let commit = match at {
                Some(rev) => repo.resolve_commit(rev)?,
                None => head,
            };
            let snap = repo.snapshot_at(&commit)?;
            let mut names = snap.list("memory")?;
            names.sort();
            let mut out = Vec::new();
            for file in names {
                let (category, kind) = if let Some(c) = file.strip_suffix("-archive.md") {
                    (c, "archived")
                } else if let Some(c) = file.strip_suffix("-expired.md") {
                    (c, "expired")
                } else {
                    continue;
                };
                let Some(text) = snap.read_text(&format!("memory/{file}"))? else { continue };
                for b in crate::memory::parse_blocks(&text) {
                    let content = b.content().trim();
                    // A consolidation's archive heading (`# 归档于 …`) alone is not an entry.
                    if content.is_empty()
                        || (b.meta.is_none() && content.starts_with("# ") && !content.contains('\n'))
                    {
                        continue;
                    }
                    out.push(PastItem {
                        category: category.to_owned(),
                        kind,
                        ts: b.meta.as_ref().map(|m| m.ts.clone()),
                        memory_type: b.meta.as_ref().map(|m| m.memory_type.clone()),
                        expires: b.meta.as_ref().and_then(|m| m.expires.clone()),
                        tags: b.meta.as_ref().map(|m| m.tags.clone()).unwrap_or_default(),
                        content: content.to_owned(),
                    });
                }
            }
            Ok(out)
        })?;
        Ok(items.unwrap_or_default())
    }

    /// The newest entry of the full index at `commit` with its text, read from the index head
    /// and its category's head file only (what a capture just appended), id `id`.
    pub fn newest_memory_item(&self, name: &str, commit: &str, id: &str) -> Result<Option<MemoryItem>> {
        let pack = self.resolve(name)?;
        let item = self.with_existing_repo(&pack.dir, |repo| {
            let snap = repo.snapshot_at(commit)?;
            let index = FullIndex::load_head(&snap)?;
            let Some((_, e)) = index.entries().pop() else { return Ok(None) };
            let log = CategoryLog::load_head(&snap, &e.category)?;
            let Some(content) = contents_by_meta(&log).get(&key_of(&e)).and_then(|v| v.last().cloned())
            else {
                return Ok(None);
            };
            Ok(Some(MemoryItem::of_entry(id.to_owned(), &e, content)))
        })?;
        Ok(item.flatten())
    }

    /// The full id of a pack's HEAD (`None`: no commit yet).
    pub fn head_commit(&self, name: &str) -> Result<Option<String>> {
        let pack = self.resolve(name)?;
        Ok(self.with_existing_repo(&pack.dir, |repo| Ok(repo.current_head()?))?.flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_join_by_meta_and_rank_in_or_out_of_order() {
        let e = |ts: &str, summary: &str| IndexEntry {
            category: "c".into(),
            ts: ts.into(),
            memory_type: "fact".into(),
            expires: None,
            tags: vec![],
            summary: summary.into(),
        };
        let entries = [e("2026-01-01 10:00", "a"), e("2026-01-01 10:01", "b"), e("2026-01-01 10:00", "c")];
        let refs: Vec<&IndexEntry> = entries.iter().collect();
        let b = |ts: &str, text: &str| ((ts.to_owned(), "fact".to_owned(), None, vec![]), text.to_owned());
        let (a, bb, c) = (b("2026-01-01 10:00", "A"), b("2026-01-01 10:01", "B"), b("2026-01-01 10:00", "C"));
        let join = |blocks: &[&(MetaKey, String)]| {
            let mut contents = vec![""; 3];
            join_contents(&refs, &[0, 1, 2], blocks, &mut contents);
            contents.iter().map(|c| c.to_string()).collect::<Vec<_>>()
        };
        assert_eq!(join(&[&a, &bb, &c]), ["A", "B", "C"], "in order");
        assert_eq!(join(&[&bb, &a, &c]), ["A", "B", "C"], "a block moved by hand: by meta, then rank");
        assert_eq!(join(&[&a, &c]), ["A", "", "C"], "a missing block: empty text");
    }

    #[test]
    fn ids_count_same_minute_entries_per_category() {
        let e = |c: &str, ts: &str| IndexEntry {
            category: c.into(),
            ts: ts.into(),
            memory_type: "fact".into(),
            expires: None,
            tags: vec![],
            summary: "s".into(),
        };
        let entries = [e("a", "2026-01-01 10:00"), e("b", "2026-01-01 10:00"), e("a", "2026-01-01 10:00")];
        let ids = entry_ids(entries.iter());
        assert_eq!(ids[0], memory_id("a", "2026-01-01 10:00", 0));
        assert_eq!(ids[1], memory_id("b", "2026-01-01 10:00", 0));
        assert_eq!(ids[2], memory_id("a", "2026-01-01 10:00", 1));
        assert_ne!(ids[0], ids[2]);
        assert_eq!(ids[0].len(), 16);
    }
}
