//! The memory files of one pack as a whole: category logs and the full index,
//! each a head file plus rolled segments, and the hot index derived from them.
//!
//! Layout (compatible with the reference, see `ARCHITECTURE.md`):
//! - `memory/<category>.md`: the newest entry blocks of a category;
//! - `memory/_index_full.md`: the newest index lines (and any hand-written header lines);
//! - `memory/_log/<category>/NNNNNN.md`, `memory/_log/_index_full/NNNNNN.md`: older
//!   blocks and index lines, rolled out of the head files in fixed-size segments
//!   so that a write rewrites O(1) bytes however large the pack grows;
//! - `memory/_index.md`: the hot index (category summary + last 50 lines), derived.
//!
//! Everything here works on a [`Snapshot`] and produces [`Changes`].

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use crate::memory::{self, Block, EntryMeta, IndexEntry, is_entry_line, parse_index_line, render_blocks};
use crate::store::{Changes, Snapshot, StoreError};

mod category;
pub use category::{BlockPos, CategoryLog, read_category_file};

/// Directory of rolled segments.
pub const LOG_DIR: &str = "memory/_log";
/// The full index head file.
pub const FULL_INDEX: &str = "memory/_index_full.md";
/// The hot index file.
pub const HOT_INDEX: &str = "memory/_index.md";
/// Segment directory name of the full index.
const FULL_INDEX_SEGMENTS: &str = "_index_full";
/// A category head file holds at most this many blocks before the oldest
/// [`ROLL_SIZE`] are rolled into a segment. Small heads keep a capture's
/// cost flat as the pack grows: it re-reads, re-hashes and re-compresses its head.
pub const HEAD_LIMIT: usize = ROLL_SIZE + 16;
/// The full index head holds at most this many lines: after a roll it keeps
/// at least the [`HOT_INDEX_LIMIT`](crate::memory::HOT_INDEX_LIMIT) lines the
/// hot index shows, so the hot index can always be rebuilt from the head.
pub const INDEX_HEAD_LIMIT: usize = ROLL_SIZE + crate::memory::HOT_INDEX_LIMIT;
const _: () = assert!(INDEX_HEAD_LIMIT - ROLL_SIZE >= crate::memory::HOT_INDEX_LIMIT);
/// Blocks/lines per rolled segment.
pub const ROLL_SIZE: usize = 64;

/// Path of a category's head file.
pub fn category_path(category: &str) -> String {
    format!("memory/{category}.md")
}

fn segment_dir(name: &str) -> String {
    format!("{LOG_DIR}/{name}")
}

/// Segment file paths of a log, oldest first.
fn segment_paths(snap: &Snapshot<'_>, name: &str) -> Result<Vec<String>, StoreError> {
    let dir = segment_dir(name);
    let mut names: Vec<String> = snap.list(&dir)?.into_iter().filter(|n| n.ends_with(".md")).collect();
    names.sort();
    Ok(names.into_iter().map(|n| format!("{dir}/{n}")).collect())
}

/// The segment with the highest number (what a roll numbers after), as a
/// one-path list: all that appending needs to know of the segments, found
/// without formatting and sorting every name (a large pack has hundreds).
fn newest_segment_path(snap: &Snapshot<'_>, name: &str) -> Result<Vec<String>, StoreError> {
    let dir = segment_dir(name);
    let mut newest: Option<(Option<u32>, String)> = None;
    snap.for_each_name(&dir, |n| {
        if !n.ends_with(".md") {
            return;
        }
        let key = segment_number(n);
        if newest.as_ref().is_none_or(|(best, best_name)| (key, n) > (*best, best_name.as_str())) {
            newest = Some((key, n.to_owned()));
        }
    })?;
    Ok(newest.map(|(_, n)| format!("{dir}/{n}")).into_iter().collect())
}

fn segment_number(path: &str) -> Option<u32> {
    path.rsplit('/').next()?.strip_suffix(".md")?.parse::<u32>().ok()
}

/// The files [`FullIndex::load`] reads its lines from, oldest first: the rolled segments, then
/// the head — or the hot index when there is no head (the reference's migration).
pub fn full_index_files(snap: &Snapshot<'_>) -> Result<Vec<String>, StoreError> {
    let mut files = segment_paths(snap, FULL_INDEX_SEGMENTS)?;
    let migrated = snap.read(FULL_INDEX)?.is_none() && snap.read(HOT_INDEX)?.is_some();
    files.push(if migrated { HOT_INDEX } else { FULL_INDEX }.to_owned());
    Ok(files)
}

/// The files [`CategoryLog::load`] reads a category's blocks from, oldest first: the rolled
/// segments, then the head.
pub fn category_files(snap: &Snapshot<'_>, category: &str) -> Result<Vec<String>, StoreError> {
    let mut files = segment_paths(snap, category)?;
    files.push(category_path(category));
    Ok(files)
}

/// The index entries of one file of the full index, in order, as [`FullIndex::entries`] reads them.
pub fn index_entries_in(text: &str) -> Vec<IndexEntry> {
    split_lines(text).iter().filter_map(|l| parse_index_line(l)).collect()
}

/// The blocks of one category file, in order, as [`CategoryLog::load`] reads them.
pub fn blocks_in(text: &str) -> Vec<Block> {
    memory::split_blocks(text).blocks.into_iter().map(|(_, b)| b).collect()
}

fn next_segment_path(existing: &[String], name: &str) -> String {
    let last = existing.iter().filter_map(|p| segment_number(p)).max().unwrap_or(0);
    format!("{}/{:06}.md", segment_dir(name), last + 1)
}

/// One file of the index: its path and its lines (without newlines).
#[derive(Debug, Clone)]
struct IndexFile {
    path: String,
    lines: Vec<String>,
    dirty: bool,
}

/// Where an index line sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct LinePos {
    file: usize,
    line: usize,
}

/// The full index across its segments and head.
#[derive(Debug, Clone)]
pub struct FullIndex {
    files: Vec<IndexFile>,
    /// The previous hot index text (for incremental summaries).
    hot: Option<String>,
    /// True when `_index_full.md` did not exist and was migrated from `_index.md`.
    pub migrated: bool,
    /// The segments in the tree: all of them after [`load`](Self::load), only
    /// the newest after [`load_head`](Self::load_head).
    segments_on_disk: Vec<String>,
}

fn split_lines(text: &str) -> Vec<String> {
    text.replace("\r\n", "\n").lines().map(str::to_owned).collect()
}

impl FullIndex {
    /// Reads the index. Applies the reference's migration rule: with no full
    /// index but a hot one, the full index starts as a verbatim copy of it.
    pub fn load(snap: &Snapshot<'_>) -> Result<Self, StoreError> {
        Self::load_with(snap, true)
    }

    /// Reads only the head file (and the names of the segments): enough to
    /// append, and O(1) in the size of the pack.
    pub fn load_head(snap: &Snapshot<'_>) -> Result<Self, StoreError> {
        Self::load_with(snap, false)
    }

    fn load_with(snap: &Snapshot<'_>, all: bool) -> Result<Self, StoreError> {
        let hot = snap.read_text(HOT_INDEX)?;
        let segments = if all {
            segment_paths(snap, FULL_INDEX_SEGMENTS)?
        } else {
            newest_segment_path(snap, FULL_INDEX_SEGMENTS)?
        };
        let mut files = Vec::new();
        for path in segments.iter().filter(|_| all) {
            let text = snap.read_text(path)?.unwrap_or_default();
            files.push(IndexFile { path: path.clone(), lines: split_lines(&text), dirty: false });
        }
        let (head, migrated) = match snap.read_text(FULL_INDEX)? {
            Some(t) => (t, false),
            None => match &hot {
                Some(h) => (h.clone(), true),
                None => (String::new(), false),
            },
        };
        files.push(IndexFile { path: FULL_INDEX.to_owned(), lines: split_lines(&head), dirty: migrated });
        Ok(Self { files, hot, migrated, segments_on_disk: segments })
    }

    /// Whether some file of the full index (its segments and head) contains
    /// `needle`, read one file at a time and kept by none; `None` when there is
    /// no full index file yet (the hot index is still to be migrated).
    pub fn any_file_contains(snap: &Snapshot<'_>, needle: &str) -> Result<Option<bool>, StoreError> {
        let Some(head) = snap.read_text(FULL_INDEX)? else { return Ok(None) };
        if head.contains(needle) {
            return Ok(Some(true));
        }
        drop(head);
        for path in segment_paths(snap, FULL_INDEX_SEGMENTS)? {
            if snap.read_text(&path)?.is_some_and(|t| t.contains(needle)) {
                return Ok(Some(true));
            }
        }
        Ok(Some(false))
    }

    /// True when the hot index can be updated from the head alone (it has a
    /// category summary to build on, or there are no rolled segments).
    pub fn can_update_incrementally(&self) -> bool {
        self.segments_on_disk.is_empty()
            || (!self.migrated && self.hot.as_deref().is_some_and(has_category_summary))
    }

    /// Every parsable entry with its position, oldest first.
    pub fn entries(&self) -> Vec<(LinePos, IndexEntry)> {
        let mut out = Vec::new();
        for (fi, f) in self.files.iter().enumerate() {
            for (li, line) in f.lines.iter().enumerate() {
                if let Some(e) = parse_index_line(line) {
                    out.push((LinePos { file: fi, line: li }, e));
                }
            }
        }
        out
    }

    /// The raw line at a position.
    pub fn line(&self, pos: LinePos) -> &str {
        &self.files[pos.file].lines[pos.line]
    }

    /// Every entry line (parsable or not), oldest first.
    pub fn entry_lines(&self) -> Vec<&str> {
        self.files
            .iter()
            .flat_map(|f| f.lines.iter())
            .filter(|l| is_entry_line(l))
            .map(String::as_str)
            .collect()
    }

    /// Appends a line to the head, rolling the oldest lines into a segment when it is full.
    pub fn append(&mut self, line: String) {
        let head_idx = self.files.len() - 1;
        let head = &mut self.files[head_idx];
        head.lines.push(line);
        head.dirty = true;
        let entry_positions: Vec<usize> =
            head.lines.iter().enumerate().filter(|(_, l)| is_entry_line(l)).map(|(i, _)| i).collect();
        if entry_positions.len() > INDEX_HEAD_LIMIT {
            let cut: std::collections::BTreeSet<usize> =
                entry_positions.into_iter().take(ROLL_SIZE).collect();
            let mut rolled = Vec::new();
            let mut kept = Vec::new();
            for (i, l) in head.lines.drain(..).enumerate() {
                if cut.contains(&i) { rolled.push(l) } else { kept.push(l) }
            }
            head.lines = kept;
            let mut existing: Vec<String> = self.files[..head_idx].iter().map(|f| f.path.clone()).collect();
            existing.extend(self.segments_on_disk.iter().cloned());
            let path = next_segment_path(&existing, FULL_INDEX_SEGMENTS);
            self.files.insert(head_idx, IndexFile { path, lines: rolled, dirty: true });
        }
    }

    /// Removes the line at a position.
    pub fn remove(&mut self, pos: LinePos) {
        let f = &mut self.files[pos.file];
        f.lines.remove(pos.line);
        f.dirty = true;
    }

    /// Replaces the line at a position.
    pub fn replace(&mut self, pos: LinePos, line: String) {
        let f = &mut self.files[pos.file];
        f.lines[pos.line] = line;
        f.dirty = true;
    }

    /// Removes every line containing `needle` (consolidate's rule).
    pub fn remove_containing(&mut self, needle: &str) -> usize {
        let mut n = 0;
        for f in &mut self.files {
            let before = f.lines.len();
            f.lines.retain(|l| !l.contains(needle));
            if f.lines.len() != before {
                n += before - f.lines.len();
                f.dirty = true;
            }
        }
        n
    }

    /// Writes changed index files and the hot index.
    ///
    /// `incremental` uses the previous hot index's category summary plus the
    /// head's lines (right after an append); otherwise it rescans everything.
    pub fn write(&self, changes: &mut Changes, incremental: bool) {
        for f in &self.files {
            if !f.dirty {
                continue;
            }
            let is_head = f.path == FULL_INDEX;
            if !is_head && f.lines.iter().all(|l| l.trim().is_empty()) {
                if self.segments_on_disk.contains(&f.path) {
                    changes.remove(f.path.clone());
                }
                continue;
            }
            let text = join_lines(&f.lines);
            if is_head {
                remember_rendered_head(&f.path, &text, f.lines.iter().filter(|l| is_entry_line(l)).count());
            }
            changes.put(f.path.clone(), text);
        }
        let hot = self.render_hot(incremental);
        remember_rendered_head(HOT_INDEX, &hot, 0);
        changes.put(HOT_INDEX, hot);
    }

    /// True when the tree's `_index.md` holds other text than engram derives from the
    /// whole index (a hand edit): a write that rewrites it drops that text and says so
    /// ([`HOT_INDEX_REGENERATED`]). Call on an index read whole ([`load`](Self::load)),
    /// before changing it. Derived means the category summary of every entry, then the
    /// last 50 lines of the index — or of its head file, as a capture lists them.
    pub fn hot_hand_edited(&self) -> bool {
        let Some(hot) = self.hot.as_deref().filter(|_| !self.migrated) else { return false };
        let full = memory::render_hot_index(&self.entry_lines(), &BTreeMap::new());
        if full == hot {
            return false;
        }
        let head: Vec<&str> = self
            .files
            .last()
            .map(|f| f.lines.iter().filter(|l| is_entry_line(l)).map(String::as_str).collect())
            .unwrap_or_default();
        memory::render_hot_index(&head, &memory::parse_category_summary(&full)) != hot
    }

    fn render_hot(&self, incremental: bool) -> String {
        let previous = self.hot.as_deref().filter(|h| has_category_summary(h));
        match (incremental, previous) {
            (true, Some(prev)) if !self.migrated => {
                let head = &self.files[self.files.len() - 1];
                let mut lines: Vec<&str> = Vec::new();
                // The last 50 entry lines may reach back into the newest segment.
                if let Some(seg) = self.files.len().checked_sub(2).map(|i| &self.files[i]) {
                    lines.extend(seg.lines.iter().filter(|l| is_entry_line(l)).map(String::as_str));
                }
                lines.extend(head.lines.iter().filter(|l| is_entry_line(l)).map(String::as_str));
                hot_on_summary(prev, &lines)
            }
            _ => memory::render_hot_index(&self.entry_lines(), &BTreeMap::new()),
        }
    }
}

/// True when a hot index has the category summary an update can build on.
fn has_category_summary(hot: &str) -> bool {
    hot.contains("## 分类摘要")
}

/// The hot index updated from the previous one: its category summary, then
/// `newest` (the newest entry lines, oldest first, at least the last 50).
fn hot_on_summary(previous: &str, newest: &[&str]) -> String {
    memory::render_hot_index(newest, &memory::parse_category_summary(previous))
}

fn join_lines(lines: &[String]) -> String {
    let mut out = String::new();
    for l in lines {
        out.push_str(l);
        out.push('\n');
    }
    out
}

/// Head files this process rendered (category heads and the full index's),
/// with how many blocks or entry lines they hold: a head whose text is one
/// of these is known to parse into that many and to render back to itself,
/// so one more can be appended to its text without parsing it (the common
/// capture). Keyed by path and checked by content, so a hand edit, another
/// process's write or another pack with the same path is simply a miss.
static RENDERED_HEADS: Mutex<Option<HashMap<String, (String, usize)>>> = Mutex::new(None);

/// At most this many heads are remembered (a pack has a few dozen categories).
const RENDERED_HEADS_LIMIT: usize = 256;

fn remember_rendered_head(path: &str, text: &str, count: usize) {
    let mut heads = RENDERED_HEADS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let heads = heads.get_or_insert_with(HashMap::new);
    if heads.len() >= RENDERED_HEADS_LIMIT && !heads.contains_key(path) {
        heads.clear();
    }
    heads.insert(path.to_owned(), (text.to_owned(), count));
}

/// The block (or entry line) count of a head this process rendered with exactly `text`.
fn rendered_head_count(path: &str, text: &str) -> Option<usize> {
    let heads = RENDERED_HEADS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    heads.as_ref()?.get(path).filter(|(known, _)| known == text).map(|&(_, count)| count)
}

/// Appends one entry block to a category, as capture does: the same changes
/// as [`CategoryLog::load_head`], [`append`](CategoryLog::append) and
/// [`write`](CategoryLog::write), without parsing the head when this
/// process rendered it and the block fits without a roll.
pub fn append_entry(
    snap: &Snapshot<'_>,
    category: &str,
    meta: &EntryMeta,
    content: &str,
    changes: &mut Changes,
) -> Result<(), StoreError> {
    let head_path = category_path(category);
    if let Some(text) = read_category_file(snap, &head_path)?
        && let Some(blocks) = rendered_head_count(&head_path, &text)
        && blocks < HEAD_LIMIT
    {
        let mut out = text;
        out.push_str(&memory::render_block(meta, content));
        remember_rendered_head(&head_path, &out, blocks + 1);
        changes.put(head_path, out);
        return Ok(());
    }
    let mut log = CategoryLog::load_head(snap, category)?;
    log.append(meta, content);
    log.write(changes);
    Ok(())
}

/// Appends one entry line to the full index and updates the hot index, as
/// capture does: the same changes as [`FullIndex::load_head`] (or
/// [`FullIndex::load`] when the hot index cannot be updated from the head),
/// [`append`](FullIndex::append) and [`write`](FullIndex::write) with
/// `incremental`, without splitting the head into lines when this process
/// rendered it, the line fits without a roll and the hot index has its
/// category summary.
pub fn append_index_line(snap: &Snapshot<'_>, line: String, changes: &mut Changes) -> Result<(), StoreError> {
    if is_entry_line(&line)
        && let Some(head) = snap.read_text(FULL_INDEX)?
        && let Some(entries) = rendered_head_count(FULL_INDEX, &head)
        && entries < INDEX_HEAD_LIMIT
        && let Some(hot) = snap.read_text(HOT_INDEX)?
        && has_category_summary(&hot)
    {
        let mut head = head;
        head.push_str(&line);
        head.push('\n');
        let lines: Vec<&str> = head.lines().filter(|l| is_entry_line(l)).collect();
        let hot = hot_on_summary(&hot, &lines);
        remember_rendered_head(FULL_INDEX, &head, entries + 1);
        remember_rendered_head(HOT_INDEX, &hot, 0);
        changes.put(FULL_INDEX, head);
        changes.put(HOT_INDEX, hot);
        return Ok(());
    }
    let mut index = FullIndex::load_head(snap)?;
    if !index.can_update_incrementally() {
        index = FullIndex::load(snap)?;
    }
    index.append(line);
    index.write(changes, true);
    Ok(())
}

/// The rank the next entry of `category` stamped `ts` will have among the index entries of that
/// category and time (what its id is made from, `ops::memory_id`): the full index head, then its
/// segments newest first until one holds an older entry (entries are appended in time order,
/// so a capture reads the head alone unless its minute spans a roll). What the segments add is
/// remembered by their folder's tree id ([`SEGMENT_RANKS`]): a minute full of captures (an
/// import) reads its segments once per roll, not once per capture.
pub fn next_entry_rank(snap: &Snapshot<'_>, category: &str, ts: &str) -> Result<usize, StoreError> {
    // Counts the entries stamped `ts` by category; true when the text holds an older entry.
    let scan = |text: &str, counts: &mut HashMap<String, usize>| -> bool {
        let mut older = false;
        for e in text.lines().filter(|l| is_entry_line(l)).filter_map(parse_index_line) {
            if e.ts.as_str() < ts {
                older = true;
            } else if e.ts == ts {
                *counts.entry(e.category).or_default() += 1;
            }
        }
        older
    };
    let mut counts = HashMap::new();
    let done = scan(&snap.read_text(FULL_INDEX)?.unwrap_or_default(), &mut counts);
    let rank = counts.get(category).copied().unwrap_or(0);
    if done {
        return Ok(rank);
    }
    let key = snap.folder_id(&segment_dir(FULL_INDEX_SEGMENTS))?.map(|id| (id, ts.to_owned()));
    let remembered = |ranks: &SegmentRanks| Some(ranks.as_ref()?.get(key.as_ref()?)?.get(category).copied());
    if let Some(more) = remembered(&SEGMENT_RANKS.lock().unwrap_or_else(std::sync::PoisonError::into_inner)) {
        return Ok(rank + more.unwrap_or(0));
    }
    let mut counts = HashMap::new();
    for path in segment_paths(snap, FULL_INDEX_SEGMENTS)?.iter().rev() {
        if scan(&snap.read_text(path)?.unwrap_or_default(), &mut counts) {
            break;
        }
    }
    let more = counts.get(category).copied().unwrap_or(0);
    if let Some(key) = key {
        let mut ranks = SEGMENT_RANKS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let ranks = ranks.get_or_insert_with(HashMap::new);
        if ranks.len() >= RENDERED_HEADS_LIMIT {
            ranks.clear();
        }
        ranks.insert(key, counts);
    }
    Ok(rank + more)
}

/// By (tree id of the full index's segment folder, time stamp): how many entries of each
/// category stamped that time [`next_entry_rank`] counts in the segments. A tree id names the
/// folder's whole content, so a remembered count is never stale.
type SegmentRanks = Option<HashMap<(String, String), HashMap<String, usize>>>;
static SEGMENT_RANKS: Mutex<SegmentRanks> = Mutex::new(None);

/// The commit-message note of a write that regenerated a hand-edited `memory/_index.md`.
/// The hot index is derived (the category summary and the last 50 lines of
/// `_index_full.md`, as the reference regenerates it), so its hand edits are not kept.
pub const HOT_INDEX_REGENERATED: &str = "memory/_index.md 是由条目生成的索引，已重新生成，其中的手工改动未保留（见上一个 edit 提交）；请改 memory/_index_full.md 或分类文件。\n(memory/_index.md is derived from the entries and was regenerated: its hand edit, committed before this write, is not kept. Edit memory/_index_full.md or the category files instead.)";

/// True when HEAD's `_index.md` holds text a capture's update would not keep (a hand
/// edit): the capture regenerates it and its message says so ([`HOT_INDEX_REGENERATED`]).
/// Cheap in the common case: the text this process last wrote, or the hot index the
/// head of `_index_full.md` derives; the whole index is read only when neither matches
/// (a hot index another process rendered from every entry is no hand edit).
pub fn hot_index_hand_edited(snap: &Snapshot<'_>) -> Result<bool, StoreError> {
    let Some(hot) = snap.read_text(HOT_INDEX)? else { return Ok(false) };
    if rendered_head_count(HOT_INDEX, &hot).is_some() {
        return Ok(false);
    }
    let head = FullIndex::load_head(snap)?;
    if head.migrated || head.can_update_incrementally() && head.render_hot(true) == hot {
        // With no `_index_full.md`, `_index.md` is the source the full index is copied from.
        return Ok(false);
    }
    Ok(FullIndex::load(snap)?.hot_hand_edited())
}

/// For each entry of a category (in index order), its rank among entries with the same block meta.
pub fn same_meta_rank(entries: &[(LinePos, IndexEntry)], target: usize) -> usize {
    let t = &entries[target].1;
    entries[..target]
        .iter()
        .filter(|(_, e)| {
            e.category == t.category
                && e.ts == t.ts
                && e.memory_type == t.memory_type
                && e.expires == t.expires
                && e.tags == t.tags
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{CommitMessage, Edit, PackRepo, StoreOptions};

    fn block(i: usize) -> String {
        format!("\n---\n[2026-11-24 10:00] type:fact\nentry {i}\n")
    }

    /// A head-only load numbers a roll after the highest segment, even when
    /// names sort otherwise (a hand-named `9.md` among `000010.md`).
    #[test]
    fn a_head_load_rolls_after_the_highest_segment() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let repo = PackRepo::open_or_adopt(tmp.path(), StoreOptions::default()).expect("open");
        repo.write(|_| {
            let mut changes = Changes::for_memory();
            for name in ["000002.md", "000010.md", "9.md", "notes.txt"] {
                changes.put(format!("{LOG_DIR}/p/{name}"), block(0));
            }
            changes.put(category_path("p"), (0..HEAD_LIMIT).map(block).collect::<String>());
            Ok::<_, StoreError>(Edit::Commit { changes, message: CommitMessage::new("setup"), value: () })
        })
        .expect("setup");
        let (_, rolled) = repo
            .write(|snap| {
                let mut log = CategoryLog::load_head(snap, "p")?;
                let meta = EntryMeta {
                    ts: "2026-11-24 11:00".into(),
                    memory_type: "fact".into(),
                    expires: None,
                    tags: Vec::new(),
                    conversation_id: None,
                };
                log.append(&meta, "one more");
                let mut changes = Changes::for_memory();
                log.write(&mut changes);
                let rolled: Vec<String> =
                    changes.paths().filter(|p| p.starts_with(LOG_DIR)).map(str::to_owned).collect();
                Ok::<_, StoreError>(Edit::Commit {
                    changes,
                    message: CommitMessage::new("append"),
                    value: rolled,
                })
            })
            .expect("append");
        assert_eq!(rolled, [format!("{LOG_DIR}/p/000011.md")]);
        let snap = repo.snapshot_at("HEAD").expect("snapshot");
        let all = CategoryLog::load(&snap, "p").expect("load");
        assert_eq!(all.files.len(), 5, "four segments and the head");
    }

    /// A head spaced by hand (or by the reference: extra blank lines, no blank line,
    /// CRLF) keeps the bytes of every block a write does not touch: an append adds
    /// text at the end, a removal cuts out one block's text, a roll moves blocks
    /// bytes and all.
    #[test]
    fn writes_keep_the_spacing_of_untouched_blocks() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let repo = PackRepo::open_or_adopt(tmp.path(), StoreOptions::default()).expect("open");
        let blocks: Vec<String> = (0..4).map(|i| format!("{}\nentry {i}", meta(i).render_line())).collect();
        let hand = format!(
            "\n---\n{}\n\n\n---\n{}\n---\n{}\r\n\r\n---\r\n{}\n\n",
            blocks[0], blocks[1], blocks[2], blocks[3]
        );
        let put = |text: String| {
            repo.write(|_| {
                let mut changes = Changes::for_memory();
                changes.put(category_path("p"), text.clone());
                Ok::<_, StoreError>(Edit::Commit { changes, message: CommitMessage::new("hand"), value: () })
            })
            .expect("write");
        };
        let edit = |f: &dyn Fn(&mut CategoryLog)| -> BTreeMap<String, String> {
            let snap = repo.snapshot_at("HEAD").expect("snapshot");
            let mut log = CategoryLog::load(&snap, "p").expect("load");
            f(&mut log);
            let mut changes = Changes::for_memory();
            log.write(&mut changes);
            changes
                .paths()
                .map(|p| {
                    (
                        p.to_owned(),
                        changes.get(p).map(String::from_utf8_lossy).unwrap_or_default().into_owned(),
                    )
                })
                .collect()
        };
        put(hand.clone());
        let appended = edit(&|log| log.append(&meta(9), "new"));
        assert_eq!(appended[&category_path("p")], format!("{hand}{}", memory::render_block(&meta(9), "new")));
        let removed = edit(&|log| {
            let pos = BlockPos { file: 0, block: 1 };
            log.remove(pos);
        });
        let without_second = hand.replace(&format!("\n---\n{}", blocks[1]), "");
        assert_eq!(removed[&category_path("p")], without_second);
        // Fill the head to a roll: the blocks that stay keep their bytes.
        let full: String =
            hand.clone() + &(4..HEAD_LIMIT).map(|i| memory::render_block(&meta(i), "x")).collect::<String>();
        put(full.clone());
        let rolled = edit(&|log| log.append(&meta(HEAD_LIMIT), "last"));
        let segment = &rolled[&format!("{LOG_DIR}/p/000001.md")];
        let head = &rolled[&category_path("p")];
        assert_eq!(
            format!("{segment}{head}"),
            format!("{full}{}", memory::render_block(&meta(HEAD_LIMIT), "last"))
        );
        assert_eq!(memory::parse_blocks(segment).len(), ROLL_SIZE);
    }

    /// Whatever mix of captures (the hot index from the head), removals (from every
    /// entry) and rolls engram makes, the hot index it leaves is never taken for a hand edit.
    #[test]
    fn hot_indexes_engram_writes_are_not_hand_edits() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let repo = PackRepo::open_or_adopt(tmp.path(), StoreOptions::default()).expect("open");
        let write = |f: &dyn Fn(&Snapshot<'_>, &mut Changes) -> Result<(), StoreError>| {
            repo.write(|snap| {
                let mut changes = Changes::for_memory();
                f(snap, &mut changes)?;
                Ok::<_, StoreError>(Edit::Commit { changes, message: CommitMessage::new("w"), value: () })
            })
            .expect("write");
        };
        let edited = || {
            let snap = repo.snapshot_at("HEAD").expect("snapshot");
            FullIndex::load(&snap).expect("load").hot_hand_edited()
        };
        for i in 0..(INDEX_HEAD_LIMIT + 30) {
            let category = format!("c{}", i % 7);
            write(&|snap, changes| {
                append_entry(snap, &category, &meta(i), "x", changes)?;
                append_index_line(
                    snap,
                    format!("- `memory/{category}.md` [{}] [fact] [t{i}] s{i}", meta(i).ts),
                    changes,
                )
            });
            if i % 9 == 0 {
                // Remove the newest head line, as delete does (hot index from every entry).
                write(&|snap, changes| {
                    let mut index = FullIndex::load(snap)?;
                    let last = index.entries().last().map(|(pos, _)| *pos).expect("an entry");
                    index.remove(last);
                    index.write(changes, false);
                    Ok(())
                });
            }
            assert!(!edited(), "after entry {i}");
        }
        let snap = repo.snapshot_at("HEAD").expect("snapshot");
        assert!(!snap.list(&format!("{LOG_DIR}/_index_full")).expect("list").is_empty(), "rolled");
        write(&|snap, changes| {
            let hot = snap.read_text(HOT_INDEX)?.unwrap_or_default();
            changes.put(HOT_INDEX, hot.replace("] s1", "] S1"));
            Ok(())
        });
        assert!(edited());
        assert!(hot_index_hand_edited(&repo.snapshot_at("HEAD").expect("snapshot")).expect("check"));
    }

    fn meta(i: usize) -> EntryMeta {
        EntryMeta {
            ts: format!("2026-11-24 {:02}:{:02}", i / 60 % 24, i % 60),
            memory_type: "fact".into(),
            expires: None,
            tags: vec![format!("t{i}")],
            conversation_id: None,
        }
    }

    /// Every file of the HEAD tree under `memory/`, with its text.
    fn memory_files(repo: &PackRepo) -> BTreeMap<String, String> {
        let snap = repo.snapshot_at("HEAD").expect("snapshot");
        let mut out = BTreeMap::new();
        let mut dirs = vec!["memory".to_owned()];
        while let Some(dir) = dirs.pop() {
            for name in snap.list(&dir).expect("list") {
                let path = format!("{dir}/{name}");
                match snap.read_text(&path) {
                    Ok(Some(text)) => {
                        out.insert(path, text);
                    }
                    _ => dirs.push(path),
                }
            }
        }
        out
    }

    /// A new entry's rank counts every index entry of its category and minute, through
    /// the segments, the same when the segments' count is remembered, and anew when a
    /// segment changes.
    #[test]
    fn next_entry_rank_counts_through_segments_as_they_change() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let repo = PackRepo::open_or_adopt(tmp.path(), StoreOptions::default()).expect("open");
        let ts = "2026-11-24 10:00";
        let line = |c: &str, t: &str, i: usize| format!("- `memory/{c}.md` [{t}] [fact] [t] summary {i}\n");
        let mut lines = vec![line("a", "2026-11-24 09:59", 0)];
        lines.extend((1..3 * ROLL_SIZE + 10).map(|i| line(if i % 3 == 0 { "b" } else { "a" }, ts, i)));
        let put = |files: Vec<(String, String)>| {
            repo.write(|_| {
                let mut changes = Changes::for_memory();
                for (path, text) in &files {
                    changes.put(path.clone(), text.clone());
                }
                Ok::<_, StoreError>(Edit::Commit { changes, message: CommitMessage::new("w"), value: () })
            })
            .expect("write");
        };
        let segment = |n: usize| format!("{LOG_DIR}/{FULL_INDEX_SEGMENTS}/{n:06}.md");
        let mut files: Vec<(String, String)> =
            (0..3).map(|n| (segment(n + 1), lines[n * ROLL_SIZE..(n + 1) * ROLL_SIZE].concat())).collect();
        files.push((FULL_INDEX.to_owned(), lines[3 * ROLL_SIZE..].concat()));
        put(files);
        let check = || {
            let snap = repo.snapshot_at("HEAD").expect("snapshot");
            let entries = FullIndex::load(&snap).expect("load").entries();
            for category in ["a", "b", "c"] {
                let want = entries.iter().filter(|(_, e)| e.category == category && e.ts == ts).count();
                for _ in 0..2 {
                    assert_eq!(next_entry_rank(&snap, category, ts).expect("rank"), want, "{category}");
                }
            }
        };
        check();
        // A segment changed by hand (an entry of the minute removed from the middle one).
        put(vec![(segment(2), lines[ROLL_SIZE + 1..2 * ROLL_SIZE].concat())]);
        check();
    }

    /// Capture's appends (parsing a head only when this process did not
    /// render it) leave the same files as loading, appending and writing the
    /// category and the index, through rolls and hand-edited heads.
    #[test]
    fn append_entry_writes_what_the_category_log_writes() {
        let fast_dir = tempfile::tempdir().expect("tempdir");
        let slow_dir = tempfile::tempdir().expect("tempdir");
        let fast = PackRepo::open_or_adopt(fast_dir.path(), StoreOptions::default()).expect("open");
        let slow = PackRepo::open_or_adopt(slow_dir.path(), StoreOptions::default()).expect("open");
        let commit =
            |repo: &PackRepo, edit: &dyn Fn(&Snapshot<'_>, &mut Changes) -> Result<(), StoreError>| {
                repo.write(|snap| {
                    let mut changes = Changes::for_memory();
                    edit(snap, &mut changes)?;
                    Ok::<_, StoreError>(Edit::Commit { changes, message: CommitMessage::new("w"), value: () })
                })
                .expect("write");
            };
        for i in 0..(2 * HEAD_LIMIT + 5) {
            let content = format!("entry {i}\n---\n  with a separator line  ");
            if i == HEAD_LIMIT / 2 {
                // A hand edit (not rendered by this process): a loose line, CRLF endings.
                let hand = |snap: &Snapshot<'_>, changes: &mut Changes| {
                    for path in [category_path("p"), FULL_INDEX.to_owned()] {
                        let text = snap.read_text(&path)?.unwrap_or_default();
                        changes.put(path, format!("{}\r\nhand note\r\n", text.replace('\n', "\r\n")));
                    }
                    Ok(())
                };
                commit(&fast, &hand);
                commit(&slow, &hand);
            }
            let line = || format!("- `memory/p.md` [{}] [fact] [t{i}] summary {i}", meta(i).ts);
            commit(&fast, &|snap, changes| {
                append_entry(snap, "p", &meta(i), &content, changes)?;
                append_index_line(snap, line(), changes)
            });
            commit(&slow, &|snap, changes| {
                let mut log = CategoryLog::load_head(snap, "p")?;
                log.append(&meta(i), &content);
                log.write(changes);
                let mut index = FullIndex::load_head(snap)?;
                if !index.can_update_incrementally() {
                    index = FullIndex::load(snap)?;
                }
                index.append(line());
                index.write(changes, true);
                Ok(())
            });
        }
        let files = memory_files(&fast);
        for rolled in ["memory/_log/p/", "memory/_log/_index_full/"] {
            assert!(files.keys().any(|p| p.starts_with(rolled)), "{rolled} in {:?}", files.keys());
        }
        assert!(files[HOT_INDEX].contains("## 分类摘要"), "{}", files[HOT_INDEX]);
        assert_eq!(files, memory_files(&slow));
    }
}
