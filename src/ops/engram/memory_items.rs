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

use super::memory_files::KEPT_FILE;
pub use super::memory_files::ParsedMemoryFiles;
use super::memory_files::{MetaRef, Part, parsed, split_tags};
use crate::memlog::{CategoryLog, LinePos, category_files, full_index_files, read_category_file};
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

/// A pack's memories at one commit: every entry of the full index, oldest first, with its
/// text. The fields stay in the parsed memory files the lists of other commits share
/// ([`ParsedMemoryFiles`]): an entry is borrowed ([`MemoryRef`]) and made a [`MemoryItem`]
/// only when it is shown, so a list of 10,000 memories copies no text.
#[derive(Debug, Clone, Default)]
pub struct MemoryList {
    /// The commit they were read from (`None`: the pack has no commit yet).
    pub commit: Option<String>,
    /// The files of the full index, oldest first.
    index: Vec<Arc<Part>>,
    /// The category files the entries' texts are in.
    blocks: Vec<Arc<Part>>,
    entries: Vec<Entry>,
    /// The categories' names, in the order they first appear.
    categories: Vec<String>,
}

/// One entry of a [`MemoryList`]: where its fields are.
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// (index file, entry) in [`MemoryList::index`].
    at: (u32, u32),
    /// Its category, in [`MemoryList::categories`].
    category: u32,
    /// (category file, block) in [`MemoryList::blocks`]: `None` when its block is missing.
    block: Option<(u32, u32)>,
    /// The id's 64 bits.
    id: u64,
}

/// One memory of a [`MemoryList`], its fields borrowed from the parsed files.
#[derive(Debug, Clone, Copy)]
pub struct MemoryRef<'a> {
    /// The id's 64 bits ([`MemoryRef::id_hex`] is the id).
    pub id: u64,
    /// Category.
    pub category: &'a str,
    /// `YYYY-MM-DD HH:MM`, UTC.
    pub ts: &'a str,
    /// Memory type.
    pub memory_type: &'a str,
    /// Expiry date, if any.
    pub expires: Option<&'a str>,
    /// (tag count, tags joined with `,`).
    tags: (u32, &'a str),
    /// The index summary.
    pub summary: &'a str,
    /// The entry's text (empty when its block is missing).
    pub content: &'a str,
    /// The hash of the summary folded for likely duplicates, when it is long enough to count.
    pub summary_fold: Option<u64>,
    /// The same of the text.
    pub content_fold: Option<u64>,
}

impl<'a> MemoryRef<'a> {
    /// Its tags, in order.
    pub fn tags(&self) -> impl Iterator<Item = &'a str> + use<'a> {
        split_tags(self.tags.0, self.tags.1)
    }

    /// The id (16 hex digits).
    pub fn id_hex(&self) -> String {
        format!("{:016x}", self.id)
    }

    /// The item, owned.
    pub fn to_item(&self) -> MemoryItem {
        MemoryItem {
            id: self.id_hex(),
            category: self.category.to_owned(),
            ts: self.ts.to_owned(),
            memory_type: self.memory_type.to_owned(),
            expires: self.expires.map(str::to_owned),
            tags: self.tags().map(str::to_owned).collect(),
            summary: self.summary.to_owned(),
            content: self.content.to_owned(),
        }
    }
}

impl MemoryList {
    /// How many entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entry `i` (0 is the oldest).
    pub fn get(&self, i: usize) -> Option<MemoryRef<'_>> {
        let e = self.entries.get(i)?;
        let f = self.index.get(e.at.0 as usize)?.fields(e.at.1 as usize)?;
        let block = e.block.and_then(|(b, k)| self.blocks.get(b as usize)?.fields(k as usize));
        Some(MemoryRef {
            id: e.id,
            category: f.category,
            ts: f.ts,
            memory_type: f.memory_type,
            expires: f.expires,
            tags: f.tags,
            summary: f.text,
            content: block.as_ref().map(|b| b.text).unwrap_or_default(),
            summary_fold: f.fold,
            content_fold: block.and_then(|b| b.fold),
        })
    }

    /// The index file and entry of entry `i`: the one-field readers below read only what
    /// they are asked for, so a pass over every entry touches little memory.
    fn at(&self, i: usize) -> Option<(&Part, usize)> {
        let e = self.entries.get(i)?;
        Some((self.index.get(e.at.0 as usize)?, e.at.1 as usize))
    }

    /// Entry `i`'s category id (its name: [`category_name`](Self::category_name)).
    pub fn category_id(&self, i: usize) -> Option<u32> {
        self.entries.get(i).map(|e| e.category)
    }

    /// The name of category id `c`.
    pub fn category_name(&self, c: u32) -> &str {
        self.categories.get(c as usize).map(String::as_str).unwrap_or_default()
    }

    /// The id of the category named `name`, if any entry has it.
    pub fn category_named(&self, name: &str) -> Option<u32> {
        self.categories.iter().position(|c| c == name).map(|c| c as u32)
    }

    /// Entry `i`'s type.
    pub fn memory_type(&self, i: usize) -> Option<&str> {
        self.at(i).map(|(p, r)| p.memory_type(r))
    }

    /// Entry `i`'s time.
    pub fn ts(&self, i: usize) -> Option<&str> {
        self.at(i).map(|(p, r)| p.ts(r))
    }

    /// Entry `i`'s expiry (the outer `None`: no such entry).
    pub fn expires(&self, i: usize) -> Option<Option<&str>> {
        self.at(i).map(|(p, r)| p.expires(r))
    }

    /// Entry `i`'s tags.
    pub fn tags(&self, i: usize) -> impl Iterator<Item = &str> {
        let (n, joined) = self.at(i).map(|(p, r)| p.tags(r)).unwrap_or_default();
        split_tags(n, joined)
    }

    /// Entry `i`'s folded-text hashes (summary, text) for likely duplicates.
    pub fn folds(&self, i: usize) -> (Option<u64>, Option<u64>) {
        let Some(e) = self.entries.get(i) else { return (None, None) };
        let summary = self.index.get(e.at.0 as usize).and_then(|p| p.fold(e.at.1 as usize));
        let text = e.block.and_then(|(b, k)| self.blocks.get(b as usize)?.fold(k as usize));
        (summary, text)
    }

    /// How many entries each category has, in name order.
    pub fn category_counts(&self) -> Vec<(String, usize)> {
        let mut counts = vec![0; self.categories.len()];
        for e in &self.entries {
            if let Some(n) = counts.get_mut(e.category as usize) {
                *n += 1;
            }
        }
        let mut v: Vec<(String, usize)> = self.categories.iter().cloned().zip(counts).collect();
        v.sort();
        v
    }

    /// How many entries each type has, in name order.
    pub fn type_counts(&self) -> Vec<(String, usize)> {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for i in 0..self.len() {
            *counts.entry(self.memory_type(i).unwrap_or_default()).or_default() += 1;
        }
        let mut v: Vec<(String, usize)> = counts.into_iter().map(|(k, n)| (k.to_owned(), n)).collect();
        v.sort();
        v
    }

    /// Every entry, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = MemoryRef<'_>> + '_ {
        (0..self.len()).filter_map(|i| self.get(i))
    }

    /// Every entry as an owned item, oldest first.
    pub fn items(&self) -> Vec<MemoryItem> {
        self.iter().map(|m| m.to_item()).collect()
    }

    /// The list of `items` (their ids aside) as a pack holding them would give it.
    #[cfg(test)]
    pub(crate) fn of_items(items: &[MemoryItem]) -> Self {
        let mut index = String::new();
        let mut blocks: HashMap<&str, String> = HashMap::new();
        for m in items {
            let entry = IndexEntry {
                category: m.category.clone(),
                ts: m.ts.clone(),
                memory_type: m.memory_type.clone(),
                expires: m.expires.clone(),
                tags: m.tags.clone(),
                summary: m.summary.clone(),
            };
            index.push_str(&entry.render());
            index.push('\n');
            let meta = crate::memory::EntryMeta {
                ts: m.ts.clone(),
                memory_type: m.memory_type.clone(),
                expires: m.expires.clone(),
                tags: m.tags.clone(),
                conversation_id: None,
            };
            blocks.entry(&m.category).or_default().push_str(&crate::memory::render_block(&meta, &m.content));
        }
        let files = |c: &str| Ok(vec![Arc::new(Part::of_blocks(blocks.get(c).map_or("", String::as_str)))]);
        assemble(vec![Arc::new(Part::of_index(&index))], files).unwrap_or_default()
    }

    /// The position of the entry with id `id` (16 hex digits).
    pub fn position(&self, id: &str) -> Option<usize> {
        let id = (id.len() == 16).then(|| u64::from_str_radix(id, 16).ok()).flatten()?;
        self.entries.iter().position(|e| e.id == id)
    }
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
    format!("{:016x}", id_bits(category, ts, nth))
}

/// The 64 bits of [`memory_id`]: the hash of `category`, `ts` and `nth` (in decimal) each after
/// a NUL (nothing is allocated).
fn id_bits(category: &str, ts: &str, nth: usize) -> u64 {
    use crate::graph::fnv1a64_extend as extend;
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut n = nth;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 || at == 0 {
            break;
        }
    }
    let h = extend(extend(crate::graph::fnv1a64(category.as_bytes()), b"\0"), ts.as_bytes());
    extend(extend(h, b"\0"), &digits[at..])
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

/// Every entry of a snapshot's full index with its text, oldest first (files parsed before
/// are taken from `cache`; what is built per entry is a few numbers).
pub(super) fn list_of(snap: &Snapshot<'_>, cache: &mut ParsedMemoryFiles) -> Result<MemoryList> {
    let mut next = cache.successor();
    let mut index = Vec::new();
    for path in full_index_files(snap)? {
        index.push(parsed(snap, &path, &cache.index, &mut next.index, &mut next.changed, || {
            Ok(Part::of_index(&snap.read_text(&path)?.unwrap_or_default()))
        })?);
    }
    let list = assemble(index, |category| {
        let mut files = Vec::new();
        for path in category_files(snap, category)? {
            files.push(parsed(snap, &path, &cache.blocks, &mut next.blocks, &mut next.changed, || {
                Ok(Part::of_blocks(&read_category_file(snap, &path)?.unwrap_or_default()))
            })?);
        }
        Ok(files)
    })?;
    *cache = next;
    Ok(list)
}

/// The list of the full index's files `index`, each category's texts from its files
/// (`category_files`, oldest first).
fn assemble(
    index: Vec<Arc<Part>>,
    mut category_files: impl FnMut(&str) -> Result<Vec<Arc<Part>>>,
) -> Result<MemoryList> {
    let total = index.iter().map(|p| p.len()).sum();
    let mut entries = Vec::with_capacity(total);
    let mut blocks = Vec::new();
    let names;
    {
        // Ids: the rank of an entry among those of its category and time before it.
        let mut ranks: HashMap<(&str, &str), usize> = HashMap::with_capacity(total);
        // Each category's entries (positions in `entries`), in index order.
        let mut category_at: HashMap<&str, usize> = HashMap::new();
        let mut categories: Vec<(&str, Vec<usize>)> = Vec::new();
        for (p, part) in index.iter().enumerate() {
            for r in 0..part.len() {
                let (category, ts) = (part.category(r), part.ts(r));
                let nth = ranks.entry((category, ts)).or_insert(0);
                let id = id_bits(category, ts, *nth);
                *nth += 1;
                let c = *category_at.entry(category).or_insert_with(|| {
                    categories.push((category, Vec::new()));
                    categories.len() - 1
                });
                if let Some((_, positions)) = categories.get_mut(c) {
                    positions.push(entries.len());
                }
                entries.push(Entry { at: (p as u32, r as u32), category: c as u32, block: None, id });
            }
        }
        for (category, positions) in &categories {
            let first = blocks.len();
            blocks.extend(category_files(category)?);
            join_blocks(&index, &blocks, first, positions, &mut entries);
        }
        names = categories.iter().map(|(c, _)| (*c).to_owned()).collect();
    }
    Ok(MemoryList { commit: None, index, blocks, entries, categories: names })
}

/// The meta of record `r` of part `p` of `parts`.
fn meta_at(parts: &[Arc<Part>], (p, r): (u32, u32)) -> MetaRef<'_> {
    parts.get(p as usize).map(|part| part.meta(r as usize)).unwrap_or_default()
}

/// Gives each entry of one category (`positions` in `entries`) its block among those of the
/// category's files `blocks[first..]`: the `n`th entry with some meta gets the `n`th block of
/// the category with that meta, in file order. When the blocks have the entries' metas in the
/// entries' order (as the tools write them), that is block `i` for entry `i`, found without a
/// map.
fn join_blocks(
    index: &[Arc<Part>],
    blocks: &[Arc<Part>],
    first: usize,
    positions: &[usize],
    entries: &mut [Entry],
) {
    let refs: Vec<(u32, u32)> =
        (first..blocks.len()).flat_map(|b| (0..blocks[b].len()).map(move |r| (b as u32, r as u32))).collect();
    let aligned = refs.len() == positions.len()
        && positions.iter().zip(&refs).all(|(&i, &b)| meta_at(index, entries[i].at) == meta_at(blocks, b));
    if aligned {
        for (&i, &b) in positions.iter().zip(&refs) {
            entries[i].block = Some(b);
        }
        return;
    }
    let mut by_meta: HashMap<MetaRef<'_>, Vec<(u32, u32)>> = HashMap::new();
    for &b in &refs {
        by_meta.entry(meta_at(blocks, b)).or_default().push(b);
    }
    let mut ranks: HashMap<MetaRef<'_>, usize> = HashMap::new();
    for &i in positions {
        let key = meta_at(index, entries[i].at);
        let rank = ranks.entry(key).or_insert(0);
        entries[i].block = by_meta.get(&key).and_then(|v| v.get(*rank)).copied();
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
            let mut list = list_of(&snap, cache)?;
            list.commit = Some(commit);
            Ok(list)
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

    /// The full id of a pack's HEAD (`None`: no commit yet).
    pub fn head_commit(&self, name: &str) -> Result<Option<String>> {
        let pack = self.resolve(name)?;
        Ok(self.with_existing_repo(&pack.dir, |repo| Ok(repo.current_head()?))?.flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The list of an index text and category files' texts (category `c`), as a list at a
    /// commit assembles it.
    fn list(index: &[&str], blocks: &[&str]) -> MemoryList {
        let index = index.iter().map(|t| Arc::new(Part::of_index(t))).collect();
        assemble(index, |_| Ok(blocks.iter().map(|t| Arc::new(Part::of_blocks(t))).collect()))
            .expect("assembled")
    }

    fn line(ts: &str, summary: &str) -> String {
        format!("- `memory/c.md` [{ts}] [fact] {summary}\n")
    }

    fn block(ts: &str, text: &str) -> String {
        format!("\n---\n[{ts}] type:fact\n{text}\n")
    }

    #[test]
    fn texts_join_by_meta_and_rank_in_or_out_of_order() {
        let (t0, t1) = ("2026-01-01 10:00", "2026-01-01 10:01");
        let index = [line(t0, "a") + &line(t1, "b"), line(t0, "c")];
        let index: Vec<&str> = index.iter().map(String::as_str).collect();
        let (a, b, c) = (block(t0, "A"), block(t1, "B"), block(t0, "C"));
        let texts = |blocks: &[&str]| -> Vec<String> {
            list(&index, blocks).iter().map(|m| m.content.to_owned()).collect()
        };
        assert_eq!(texts(&[&(a.clone() + &b), &c]), ["A", "B", "C"], "in order, over two files");
        assert_eq!(
            texts(&[&(b.clone() + &a), &c]),
            ["A", "B", "C"],
            "a block moved by hand: by meta, then rank"
        );
        assert_eq!(texts(&[&(a.clone() + &c)]), ["A", "", "C"], "a missing block: empty text");
        let l = list(&index, &[&(a + &b + &c)]);
        let summaries: Vec<&str> = l.iter().map(|m| m.summary).collect();
        assert_eq!(summaries, ["a", "b", "c"]);
        let ids: Vec<String> = l.iter().map(|m| m.id_hex()).collect();
        assert_eq!(ids, [memory_id("c", t0, 0), memory_id("c", t1, 0), memory_id("c", t0, 1)]);
        assert_eq!(l.position(&ids[2]), Some(2));
        assert_eq!(
            l.items()[1],
            MemoryItem {
                id: ids[1].clone(),
                category: "c".into(),
                ts: t1.into(),
                memory_type: "fact".into(),
                expires: None,
                tags: vec![],
                summary: "b".into(),
                content: "B".into(),
            }
        );
    }

    #[test]
    fn ids_are_the_hash_of_category_time_and_rank() {
        let old = |c: &str, ts: &str, n: usize| {
            format!("{:016x}", crate::graph::fnv1a64(format!("{c}\u{0}{ts}\u{0}{n}").as_bytes()))
        };
        for n in [0, 1, 9, 10, 12345, usize::MAX] {
            assert_eq!(memory_id("家庭", "2026-01-01 10:00", n), old("家庭", "2026-01-01 10:00", n));
        }
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
