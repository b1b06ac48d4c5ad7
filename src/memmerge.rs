//! Memory-aware three-way merge of a pack's memory: union by entry.
//!
//! Pure functions, no git. A side's memory is read as **entries**: an index
//! line of the full index paired with its block in the category log (the k-th
//! index line with a given (category, time, type, expiry, tags) describes the
//! k-th block with that meta, the rule `memlog` uses). Entries are compared
//! whole, so two devices' new entries are both kept, an entry deleted on one
//! side goes, and an entry changed differently on both sides (its old version
//! gone on both, a different new version with the same category and time on
//! each) keeps both new versions and is reported as a [`MemoryConflict`].
//!
//! The merged sequences keep our order; entries only the other side added are
//! placed after the last entry with an earlier or equal timestamp, the same way
//! in the index and in the category, so index lines and blocks stay paired.
//! [`layout`] then cuts a merged sequence into the head file and rolled
//! segments like [`crate::memlog`] does.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::memlog::{FULL_INDEX, HEAD_LIMIT, INDEX_HEAD_LIMIT, LOG_DIR, ROLL_SIZE, category_path};
use crate::memory::{Block, EntryMeta, is_entry_line, parse_index_line, render_blocks};

/// One side's memory as read from its files.
#[derive(Debug, Clone, Default)]
pub struct MemorySide {
    /// Every block of each category, oldest first (segments, then the head file).
    pub categories: BTreeMap<String, Vec<Block>>,
    /// Every entry line of the full index, oldest first (segments, then the head).
    pub index: Vec<String>,
    /// Lines of the full index's head file that are not entry lines (a hand-written header).
    pub header: Vec<String>,
}

/// An entry: an index line, its block, or both.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Entry {
    category: String,
    line: Option<String>,
    block: Option<String>,
}

impl Entry {
    fn ts(&self) -> Option<String> {
        if let Some(e) = self.line.as_deref().and_then(parse_index_line) {
            return Some(e.ts);
        }
        self.block.as_deref().and_then(|b| b.lines().next()).and_then(EntryMeta::parse_line).map(|m| m.ts)
    }

    fn summary(&self) -> String {
        if let Some(e) = self.line.as_deref().and_then(parse_index_line) {
            return e.summary;
        }
        let content = self
            .block
            .as_deref()
            .map(|b| b.lines().skip(1).collect::<Vec<_>>().join(" "))
            .unwrap_or_default();
        crate::memory::single_line(&content).chars().take(80).collect()
    }

    fn content(&self) -> String {
        let Some(b) = &self.block else { return String::new() };
        let block = Block { text: b.clone(), meta: b.lines().next().and_then(EntryMeta::parse_line) };
        block.content().to_owned()
    }
}

/// A side's entries: the index order and each category's block order.
#[derive(Debug, Default)]
struct Entries {
    index: Vec<Entry>,
    categories: BTreeMap<String, Vec<Entry>>,
}

fn entries_of(side: &MemorySide) -> Entries {
    let mut out = Entries::default();
    // Block positions per category still unclaimed by an index line.
    let mut claimed: BTreeMap<&str, Vec<bool>> =
        side.categories.iter().map(|(c, b)| (c.as_str(), vec![false; b.len()])).collect();
    let mut block_entry: BTreeMap<(&str, usize), Entry> = BTreeMap::new();
    for line in &side.index {
        let line = line.trim().to_owned();
        let Some(parsed) = parse_index_line(&line) else {
            out.index.push(Entry { category: String::new(), line: Some(line), block: None });
            continue;
        };
        let mut block = None;
        if let (Some(blocks), Some(taken)) =
            (side.categories.get(&parsed.category), claimed.get_mut(parsed.category.as_str()))
        {
            // The first unclaimed block this line describes: same as the k-th/k-th rule.
            if let Some(i) = (0..blocks.len())
                .find(|&i| !taken[i] && blocks[i].meta.as_ref().is_some_and(|m| parsed.describes(m)))
            {
                taken[i] = true;
                block = Some(i);
            }
        }
        let entry = Entry {
            category: parsed.category.clone(),
            line: Some(line),
            block: block.map(|i| side.categories[&parsed.category][i].text.clone()),
        };
        if let Some(i) = block
            && let Some((cat, _)) = side.categories.get_key_value(&parsed.category)
        {
            block_entry.insert((cat.as_str(), i), entry.clone());
        }
        out.index.push(entry);
    }
    for (cat, blocks) in &side.categories {
        let seq = out.categories.entry(cat.clone()).or_default();
        for (i, b) in blocks.iter().enumerate() {
            match block_entry.remove(&(cat.as_str(), i)) {
                Some(e) => seq.push(e),
                None => seq.push(Entry { category: cat.clone(), line: None, block: Some(b.text.clone()) }),
            }
        }
    }
    out
}

/// A memory both sides changed differently. Both new versions are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryConflict {
    /// Category.
    pub category: String,
    /// The entry's time (`YYYY-MM-DD HH:MM`).
    pub ts: String,
    /// Summary of the version both sides started from.
    pub base_summary: String,
    /// Our new versions (summary — content); empty when we deleted it.
    pub ours: Vec<String>,
    /// Their new versions; empty when they deleted it.
    pub theirs: Vec<String>,
}

/// The merged memory.
#[derive(Debug, Clone, Default)]
pub struct MergedMemory {
    /// Blocks per category.
    pub categories: BTreeMap<String, Vec<Block>>,
    /// Entry lines of the full index, oldest first.
    pub index: Vec<String>,
    /// Non-entry lines of the full index head.
    pub header: Vec<String>,
    /// Entries changed differently on both sides.
    pub conflicts: Vec<MemoryConflict>,
    /// Entries that only the other side added.
    pub incoming: usize,
}

fn counts(items: &[Entry]) -> HashMap<&Entry, i64> {
    let mut m = HashMap::new();
    for i in items {
        *m.entry(i).or_insert(0) += 1;
    }
    m
}

/// Three-way merge of a sequence whose items are compared whole (a multiset
/// with our order); see the module doc for where their additions go.
fn merge_seq(base: &[Entry], ours: &[Entry], theirs: &[Entry]) -> Vec<Entry> {
    let (cb, co, ct) = (counts(base), counts(ours), counts(theirs));
    let target = |x: &Entry| -> i64 {
        let b = cb.get(x).copied().unwrap_or(0);
        let (dox, dtx) = (co.get(x).copied().unwrap_or(0) - b, ct.get(x).copied().unwrap_or(0) - b);
        let d = if dox > 0 && dtx > 0 {
            dox.max(dtx)
        } else if dox < 0 && dtx < 0 {
            dox.min(dtx)
        } else {
            dox + dtx
        };
        (b + d).max(0)
    };
    // Removals: drop surplus occurrences from our sequence, oldest first.
    let mut surplus: HashMap<&Entry, i64> = HashMap::new();
    for (x, &n) in &co {
        let t = target(x);
        if n > t {
            surplus.insert(x, n - t);
        }
    }
    let mut result: Vec<Entry> = Vec::with_capacity(ours.len());
    for x in ours {
        if let Some(s) = surplus.get_mut(x)
            && *s > 0
        {
            *s -= 1;
            continue;
        }
        result.push(x.clone());
    }
    // Additions: their last `need` occurrences of each entry we lack.
    let mut need: HashMap<&Entry, i64> = HashMap::new();
    for x in ct.keys() {
        let missing = target(x) - co.get(x).copied().unwrap_or(0);
        if missing > 0 {
            need.insert(x, missing);
        }
    }
    let mut seen: HashMap<&Entry, i64> = HashMap::new();
    for x in theirs {
        let Some(&n) = need.get(x) else { continue };
        let k = seen.entry(x).or_insert(0);
        *k += 1;
        if *k <= ct[x] - n {
            continue;
        }
        let pos = match x.ts() {
            Some(ts) => {
                result.iter().rposition(|r| r.ts().is_some_and(|rt| rt <= ts)).map(|i| i + 1).unwrap_or(0)
            }
            None => result.len(),
        };
        result.insert(pos, x.clone());
    }
    result
}

fn describe(e: &Entry) -> String {
    describe_version(&e.summary(), &e.content())
}

/// How `memory/_conflicts.md` names one version of a memory: "summary — content", the content
/// on one line and cut at 200 characters (just the summary when there is no content).
pub fn describe_version(summary: &str, content: &str) -> String {
    let content = crate::memory::single_line(content);
    let content: String = content.chars().take(200).collect();
    if content.is_empty() { summary.to_owned() } else { format!("{summary} — {content}") }
}

fn find_conflicts(base: &[Entry], ours: &[Entry], theirs: &[Entry]) -> Vec<MemoryConflict> {
    let (cb, co, ct) = (counts(base), counts(ours), counts(theirs));
    let added = |side: &HashMap<&Entry, i64>| -> Vec<Entry> {
        side.iter()
            .filter(|(x, n)| **n > cb.get(**x).copied().unwrap_or(0))
            .map(|(x, _)| (*x).clone())
            .collect()
    };
    let (ours_added, theirs_added) = (added(&co), added(&ct));
    let mut out = Vec::new();
    let mut done: BTreeSet<(String, String)> = BTreeSet::new();
    for x in base {
        let b = cb[x];
        if co.get(x).copied().unwrap_or(0) >= b || ct.get(x).copied().unwrap_or(0) >= b {
            continue;
        }
        let Some(ts) = x.ts() else { continue };
        if !done.insert((x.category.clone(), ts.clone())) {
            continue;
        }
        let same = |e: &&Entry| e.category == x.category && e.ts().as_deref() == Some(ts.as_str());
        let mut o: Vec<String> = ours_added.iter().filter(same).map(describe).collect();
        let mut t: Vec<String> = theirs_added.iter().filter(same).map(describe).collect();
        o.sort();
        t.sort();
        if (o.is_empty() && t.is_empty()) || o == t {
            continue;
        }
        out.push(MemoryConflict {
            category: x.category.clone(),
            ts,
            base_summary: x.summary(),
            ours: o,
            theirs: t,
        });
    }
    out
}

/// Merges three versions of a pack's memory.
pub fn merge(base: &MemorySide, ours: &MemorySide, theirs: &MemorySide) -> MergedMemory {
    let (b, o, t) = (entries_of(base), entries_of(ours), entries_of(theirs));
    let index = merge_seq(&b.index, &o.index, &t.index);
    let conflicts = find_conflicts(&b.index, &o.index, &t.index);
    let incoming = {
        let co = counts(&o.index);
        let cr = counts(&index);
        cr.iter().map(|(x, n)| (n - co.get(x).copied().unwrap_or(0)).max(0)).sum::<i64>() as usize
    };
    let names: BTreeSet<&String> =
        b.categories.keys().chain(o.categories.keys()).chain(t.categories.keys()).collect();
    let empty = Vec::new();
    let mut categories = BTreeMap::new();
    for name in names {
        let get = |e: &'_ Entries| e.categories.get(name).cloned().unwrap_or_else(|| empty.clone());
        let merged = merge_seq(&get(&b), &get(&o), &get(&t));
        let blocks = merged
            .into_iter()
            .filter_map(|e| e.block)
            .map(|text| Block { meta: text.lines().next().and_then(EntryMeta::parse_line), text })
            .collect();
        categories.insert(name.clone(), blocks);
    }
    let header = if ours.header != base.header { ours.header.clone() } else { theirs.header.clone() };
    MergedMemory {
        categories,
        index: index.into_iter().filter_map(|e| e.line).collect(),
        header,
        conflicts,
        incoming,
    }
}

/// Segment files (path → items, `None`: delete) and the head file's items.
pub type Layout = (Vec<(String, Option<Vec<String>>)>, Vec<String>);

/// Cuts a log (a category's blocks or the index's lines, rendered one string
/// per item) into rolled segments and a head file, keeping our existing
/// segments that are still an exact prefix. `existing` lists our segment paths
/// with their items, oldest first; the head keeps at most `head_limit` items.
/// Returns path → new content (`None`: delete).
pub fn layout(
    segment_dir_name: &str,
    items: &[String],
    existing: &[(String, Vec<String>)],
    head_limit: usize,
) -> Layout {
    let mut files = Vec::new();
    let mut pos = 0;
    let mut kept = 0;
    for (_, seg) in existing {
        if !seg.is_empty() && items.len() >= pos + seg.len() && items[pos..pos + seg.len()] == seg[..] {
            pos += seg.len();
            kept += 1;
        } else {
            break;
        }
    }
    let mut reuse: Vec<String> = existing[kept..].iter().map(|(p, _)| p.clone()).collect();
    reuse.reverse();
    let mut next_number = existing
        .iter()
        .filter_map(|(p, _)| p.rsplit('/').next()?.strip_suffix(".md")?.parse::<u32>().ok())
        .max()
        .unwrap_or(0);
    while items.len() - pos > head_limit {
        let path = reuse.pop().unwrap_or_else(|| {
            next_number += 1;
            format!("{LOG_DIR}/{segment_dir_name}/{next_number:06}.md")
        });
        files.push((path, Some(items[pos..pos + ROLL_SIZE].to_vec())));
        pos += ROLL_SIZE;
    }
    for path in reuse {
        files.push((path, None));
    }
    (files, items[pos..].to_vec())
}

/// The file contents of a merged memory: category heads and segments, the
/// full index (header + lines) and its segments, and the hot index regenerated
/// from them. `existing_*` are our current segments (path + items).
pub fn render_files(
    merged: &MergedMemory,
    existing_category_segments: &BTreeMap<String, Vec<(String, Vec<String>)>>,
    existing_index_segments: &[(String, Vec<String>)],
) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let no_segments = Vec::new();
    for (cat, blocks) in &merged.categories {
        let items: Vec<String> = blocks.iter().map(|b| b.text.clone()).collect();
        let existing = existing_category_segments.get(cat).unwrap_or(&no_segments);
        let (segments, head) = layout(cat, &items, existing, HEAD_LIMIT);
        for (path, content) in segments {
            out.push((path, content.map(|items| render_items_as_blocks(&items))));
        }
        out.push((category_path(cat), Some(render_items_as_blocks(&head))));
    }
    let (segments, head) = layout("_index_full", &merged.index, existing_index_segments, INDEX_HEAD_LIMIT);
    for (path, content) in segments {
        out.push((path, content.map(|lines| join_lines(&lines))));
    }
    let mut head_lines: Vec<String> = merged.header.clone();
    head_lines.extend(head);
    out.push((FULL_INDEX.to_owned(), Some(join_lines(&head_lines))));
    let entry_lines: Vec<&str> =
        merged.index.iter().map(String::as_str).filter(|l| is_entry_line(l)).collect();
    out.push((
        crate::memlog::HOT_INDEX.to_owned(),
        Some(crate::memory::render_hot_index(&entry_lines, &BTreeMap::new())),
    ));
    out
}

fn render_items_as_blocks(items: &[String]) -> String {
    let blocks: Vec<Block> = items.iter().map(|t| Block { text: t.clone(), meta: None }).collect();
    render_blocks(&blocks)
}

fn join_lines(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// Renders conflicts as a section of `memory/_conflicts.md`.
pub fn render_conflicts(conflicts: &[MemoryConflict], when: &str, remote: &str, host: &str) -> String {
    let mut s = format!("\n## {when} — sync with {remote} on {host}\n\n");
    for c in conflicts {
        s.push_str(&format!("- [{}] [{}] {}\n", c.category, c.ts, c.base_summary));
        let side = |label: &str, versions: &[String], s: &mut String| {
            if versions.is_empty() {
                s.push_str(&format!("  - {label}: 已删除 (deleted)\n"));
            }
            for v in versions {
                s.push_str(&format!("  - {label}: {v}\n"));
            }
        };
        side(&format!("本机 (this device, {host})"), &c.ours, &mut s);
        side(&format!("远端 (remote {remote})"), &c.theirs, &mut s);
    }
    s
}

/// The header of a new `memory/_conflicts.md`.
pub const CONFLICTS_HEADER: &str = "# 同步冲突 (sync conflicts)\n\n同一条记忆在两台设备上被不同地修改，两个版本都已保留在记忆中。请核对后用 correct_memory / delete_memory 只留下正确的版本，然后删除这里对应的条目。\nThe same memory was changed differently on two devices; both versions were kept. Check them, keep the right one with correct_memory / delete_memory, then remove its item here.\n";

/// Path of the conflicts file.
pub const CONFLICTS_FILE: &str = "memory/_conflicts.md";

/// Counts the open conflicts listed in a conflicts file (its `- [` items).
pub fn count_conflicts(text: &str) -> usize {
    text.lines().filter(|l| l.starts_with("- [")).count()
}

/// The text that marks a side that deleted the memory in [`render_conflicts`].
const DELETED: &str = "已删除 (deleted)";

/// One open item of `memory/_conflicts.md`, as [`render_conflicts`] wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedConflict {
    /// Names this item among the file's items: a hash of its lines, so an item changed or
    /// removed since a page showed it is not taken for another.
    pub key: String,
    /// The heading of its sync (`2026-12-07 14:00 — sync with origin on laptop`).
    pub section: String,
    /// Category.
    pub category: String,
    /// The entry's time.
    pub ts: String,
    /// Summary of the version both sides started from.
    pub base_summary: String,
    /// The device that merged, whose versions are `ours` (`laptop`; empty when unknown).
    pub host: String,
    /// Who "ours" is (`本机 (this device, laptop)`).
    pub ours_label: String,
    /// This device's versions ("summary — content"); empty when it deleted the memory.
    pub ours: Vec<String>,
    /// Who "theirs" is (`远端 (remote origin)`).
    pub theirs_label: String,
    /// The remote's versions; empty when it deleted the memory.
    pub theirs: Vec<String>,
    /// The item's lines in the file (`start..end`).
    lines: std::ops::Range<usize>,
}

/// The open items of a conflicts file, in file order. Lines of another shape (a person's
/// notes) are not items and are kept by [`without_conflict`].
pub fn parse_conflicts(text: &str) -> Vec<ListedConflict> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut section = String::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(h) = line.strip_prefix("## ") {
            section = h.trim().to_owned();
        }
        let Some(rest) = line.strip_prefix("- [") else {
            i += 1;
            continue;
        };
        let start = i;
        i += 1;
        while i < lines.len() && lines[i].starts_with("  - ") {
            i += 1;
        }
        let (category, rest) = rest.split_once("] ").unwrap_or((rest, ""));
        let (ts, base_summary) =
            rest.strip_prefix('[').and_then(|r| r.split_once("] ")).unwrap_or(("", rest));
        let mut item = ListedConflict {
            key: conflict_key(&lines[start..i]),
            section: section.clone(),
            category: category.to_owned(),
            ts: ts.to_owned(),
            base_summary: base_summary.to_owned(),
            host: String::new(),
            ours_label: String::new(),
            ours: Vec::new(),
            theirs_label: String::new(),
            theirs: Vec::new(),
            lines: start..i,
        };
        for version in &lines[start + 1..i] {
            let Some((label, text)) = version.trim_start_matches("  - ").split_once(": ") else { continue };
            let ours = label.starts_with("本机");
            let (side_label, side) = if ours {
                (&mut item.ours_label, &mut item.ours)
            } else {
                (&mut item.theirs_label, &mut item.theirs)
            };
            label.clone_into(side_label);
            if let Some(host) = label.strip_prefix("本机 (this device, ").and_then(|h| h.strip_suffix(')'))
            {
                host.clone_into(&mut item.host);
            }
            if text != DELETED {
                side.push(text.to_owned());
            }
        }
        out.push(item);
    }
    out
}

/// FNV-1a of an item's lines, in hex.
fn conflict_key(lines: &[&str]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in lines.join("\n").bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The conflicts file without the item `key` (and without its sync's heading when that was its
/// last item); `None` when no item has that key (it was resolved meanwhile).
pub fn without_conflict(text: &str, key: &str) -> Option<String> {
    let items = parse_conflicts(text);
    let item = items.iter().find(|c| c.key == key)?;
    let lines: Vec<&str> = text.lines().collect();
    let mut drop: Vec<std::ops::Range<usize>> = vec![item.lines.clone()];
    let alone = items.iter().filter(|c| c.section == item.section).count() == 1;
    if alone && let Some(h) = lines[..item.lines.start].iter().rposition(|l| l.starts_with("## ")) {
        // The heading and the blank lines around it, back to the previous text.
        let from = lines[..h].iter().rposition(|l| !l.trim().is_empty()).map_or(0, |p| p + 1);
        let only_blank = lines[h + 1..item.lines.start].iter().all(|l| l.trim().is_empty());
        if only_blank {
            drop.push(from..item.lines.start);
        }
    }
    let kept: Vec<&str> = lines
        .iter()
        .enumerate()
        .filter(|(n, _)| !drop.iter().any(|r| r.contains(n)))
        .map(|(_, l)| *l)
        .collect();
    let mut out = kept.join("\n");
    out.push('\n');
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (time, summary, content)
    type Item<'a> = (&'a str, &'a str, &'a str);

    fn side(cats: &[(&str, &[Item<'_>])]) -> MemorySide {
        // (ts, summary, content)
        let mut s = MemorySide::default();
        for (cat, entries) in cats {
            let mut blocks = Vec::new();
            for (ts, summary, content) in *entries {
                let meta = EntryMeta {
                    ts: (*ts).into(),
                    memory_type: "fact".into(),
                    expires: None,
                    tags: vec![],
                    conversation_id: None,
                };
                blocks.push(Block { text: format!("{}\n{content}", meta.render_line()), meta: Some(meta) });
                s.index.push(format!("- `memory/{cat}.md` [{ts}] [fact] {summary}"));
            }
            s.categories.insert((*cat).into(), blocks);
        }
        s
    }

    #[test]
    fn both_sides_new_entries_are_kept_in_time_order() {
        let base = side(&[("p", &[("2026-01-01 10:00", "a", "A")])]);
        let ours = side(&[("p", &[("2026-01-01 10:00", "a", "A"), ("2026-01-02 10:00", "o", "O")])]);
        let theirs = side(&[("p", &[("2026-01-01 10:00", "a", "A"), ("2026-01-01 12:00", "t", "T")])]);
        let m = merge(&base, &ours, &theirs);
        let summaries: Vec<String> =
            m.index.iter().filter_map(|l| parse_index_line(l)).map(|e| e.summary).collect();
        assert_eq!(summaries, ["a", "t", "o"]);
        assert_eq!(m.categories["p"].len(), 3);
        assert_eq!(m.categories["p"][1].content(), "T");
        assert!(m.conflicts.is_empty());
        assert_eq!(m.incoming, 1);
    }

    #[test]
    fn a_deletion_on_one_side_is_kept() {
        let base = side(&[("p", &[("2026-01-01 10:00", "a", "A"), ("2026-01-01 11:00", "b", "B")])]);
        let ours = side(&[("p", &[("2026-01-01 11:00", "b", "B")])]);
        let theirs = side(&[(
            "p",
            &[("2026-01-01 10:00", "a", "A"), ("2026-01-01 11:00", "b", "B"), ("2026-01-01 12:00", "c", "C")],
        )]);
        let m = merge(&base, &ours, &theirs);
        assert_eq!(m.index.len(), 2);
        assert_eq!(m.categories["p"].len(), 2);
    }

    #[test]
    fn a_memory_corrected_differently_keeps_both_and_is_a_conflict() {
        let base = side(&[("p", &[("2026-01-01 10:00", "a", "A")])]);
        let ours = side(&[("p", &[("2026-01-01 10:00", "a1", "A1")])]);
        let theirs = side(&[("p", &[("2026-01-01 10:00", "a2", "A2")])]);
        let m = merge(&base, &ours, &theirs);
        assert_eq!(m.index.len(), 2);
        assert_eq!(m.categories["p"].len(), 2);
        assert_eq!(m.conflicts.len(), 1);
        assert_eq!(m.conflicts[0].base_summary, "a");
        assert_eq!(m.conflicts[0].ours, ["a1 — A1"]);
        assert_eq!(m.conflicts[0].theirs, ["a2 — A2"]);
        // The same correction on both sides is no conflict.
        let m = merge(&base, &ours, &ours);
        assert!(m.conflicts.is_empty());
        assert_eq!(m.index.len(), 1);
    }

    #[test]
    fn a_content_only_correction_keeps_lines_and_blocks_paired() {
        let base = side(&[("p", &[("2026-01-01 10:00", "a", "A")])]);
        let ours = side(&[("p", &[("2026-01-01 10:00", "a", "A1")])]);
        let theirs = side(&[("p", &[("2026-01-01 10:00", "a", "A2")])]);
        let m = merge(&base, &ours, &theirs);
        assert_eq!(m.index.len(), 2, "one line per kept block");
        assert_eq!(m.categories["p"].len(), 2);
        assert_eq!(m.conflicts.len(), 1);
    }

    #[test]
    fn layout_rolls_and_keeps_unchanged_segments() {
        let items: Vec<String> = (0..200).map(|i| format!("l{i}")).collect();
        let existing = vec![("memory/_log/x/000001.md".to_owned(), items[..64].to_vec())];
        let (segments, head) = layout("x", &items, &existing, 128);
        assert_eq!(segments.len(), 1);
        assert_eq!(segments[0].0, "memory/_log/x/000002.md");
        assert_eq!(head.len(), 200 - 128);
        let (segments, head) = layout("x", &items[..HEAD_LIMIT], &[], HEAD_LIMIT);
        assert!(segments.is_empty());
        assert_eq!(head.len(), HEAD_LIMIT);
    }

    #[test]
    fn a_listed_conflict_is_read_back_and_removed_with_its_heading() {
        let conflict = |ts: &str, ours: &[&str], theirs: &[&str]| MemoryConflict {
            category: "prefs".into(),
            ts: ts.into(),
            base_summary: "tea".into(),
            ours: ours.iter().map(|s| (*s).to_owned()).collect(),
            theirs: theirs.iter().map(|s| (*s).to_owned()).collect(),
        };
        let mut text = CONFLICTS_HEADER.to_owned();
        text.push_str(&render_conflicts(
            &[conflict("2026-01-01 10:00", &["green — green tea"], &["black — black tea"])],
            "2026-01-02 09:00",
            "origin",
            "laptop",
        ));
        text.push_str(&render_conflicts(
            &[conflict("2026-01-01 11:00", &[], &["milk — milk tea"])],
            "2026-01-03 09:00",
            "origin",
            "laptop",
        ));
        let listed = parse_conflicts(&text);
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].ours, ["green — green tea"]);
        assert_eq!(listed[0].theirs, ["black — black tea"]);
        assert_eq!(listed[0].ours_label, "本机 (this device, laptop)");
        assert_eq!(listed[0].host, "laptop");
        assert_eq!(listed[1].ours, Vec::<String>::new(), "deleted on this device");
        assert_eq!(listed[1].section, "2026-01-03 09:00 — sync with origin on laptop");
        let after = without_conflict(&text, &listed[0].key).expect("listed");
        assert_eq!(count_conflicts(&after), 1);
        assert!(!after.contains("2026-01-02 09:00"), "its heading went with it: {after}");
        assert!(after.starts_with(CONFLICTS_HEADER.trim_end()), "{after}");
        let empty = without_conflict(&after, &listed[1].key).expect("listed");
        assert_eq!(count_conflicts(&empty), 0);
        assert_eq!(empty.trim_end(), CONFLICTS_HEADER.trim_end());
        assert_eq!(without_conflict(&empty, &listed[1].key), None, "already resolved");
        assert_eq!(describe_version("tea", "  green\n tea "), "tea — green tea");
    }
}
