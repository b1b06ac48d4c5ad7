//! History and undo: `memory_history`, `revert_memory`, `undo_last`, and
//! reading a pack as it was (`as_of` on `load_engram` / `read_engram_file`).
//!
//! Reverts go through [`PackRepo::write`](crate::store::PackRepo::write) like every
//! write. The store reverts plain files with a 3-way merge; the memory files
//! (category logs and the full index) are reverted here entry by entry when a
//! later commit touched them, and the hot index is regenerated, so indexes
//! always agree with the entries.

use std::collections::BTreeMap;

use similar::{ChangeTag, TextDiff};

use super::load::{PackView, render_file};
use crate::memlog::{CategoryLog, FULL_INDEX, FullIndex, HOT_INDEX, LOG_DIR, same_meta_rank};
use crate::memory::{Block, is_entry_line, parse_blocks, parse_index_line};
use crate::ops::{Caller, Engram, EngramError, Result};
use crate::store::{
    Changes, CommitInfo, CommitMessage, Edit, LogPage, LogQuery, RevertConflict, Snapshot, StoreError,
    parse_since, trailer,
};

/// Tools (trailer `Engram-Tool`) whose commits `undo_last` does not pick.
const NOT_UNDOABLE: &[&str] = &[
    "adopt",
    "hand-edit",
    "revert_memory",
    "undo_last",
    "engram-revert",
    "engram-undo",
    "load_engram",
    "engram-purge",
];

/// Most commits `memory_history` / `undo_last` walk when filtering.
const SCAN_LIMIT: usize = 2000;

/// True for files whose content is memory entries or derived from them.
pub fn is_memory_managed(path: &str) -> bool {
    if path == HOT_INDEX || path == FULL_INDEX || path.starts_with(&format!("{LOG_DIR}/")) {
        return true;
    }
    let Some(name) = path.strip_prefix("memory/") else { return false };
    !name.contains('/')
        && name.ends_with(".md")
        && !name.starts_with('_')
        && !name.ends_with("-archive.md")
        && !name.ends_with("-expired.md")
}

pub(super) fn is_index_file(path: &str) -> bool {
    path == FULL_INDEX || path.starts_with(&format!("{LOG_DIR}/_index_full/"))
}

/// An entry as a whole: its index line and its block.
type EntryKey = (String, Option<String>);

fn entries_of(snap: &Snapshot<'_>) -> Result<Vec<(String, EntryKey)>> {
    let index = FullIndex::load(snap)?;
    let entries = index.entries();
    let mut logs: BTreeMap<String, CategoryLog> = BTreeMap::new();
    let mut out = Vec::new();
    for (i, (pos, entry)) in entries.iter().enumerate() {
        if !logs.contains_key(&entry.category) {
            logs.insert(entry.category.clone(), CategoryLog::load(snap, &entry.category)?);
        }
        let log = &logs[&entry.category];
        let block = log.find(entry, same_meta_rank(&entries, i)).map(|bp| log.block(bp).text.clone());
        out.push((entry.category.clone(), (index.line(*pos).to_owned(), block)));
    }
    Ok(out)
}

/// Multiset difference `a − b`.
fn minus(a: &[(String, EntryKey)], b: &[(String, EntryKey)]) -> Vec<(String, EntryKey)> {
    let mut left: Vec<Option<&(String, EntryKey)>> = b.iter().map(Some).collect();
    let mut out = Vec::new();
    for x in a {
        match left.iter_mut().find(|y| y.is_some_and(|y| y == x)) {
            Some(slot) => *slot = None,
            None => out.push(x.clone()),
        }
    }
    out
}

/// Removes one entry (line and block) from `snap`; `false` when it is not there.
fn remove_entry(snap: &Snapshot<'_>, category: &str, key: &EntryKey, changes: &mut Changes) -> Result<bool> {
    let mut index = FullIndex::load(snap)?;
    let entries = index.entries();
    let mut log = CategoryLog::load(snap, category)?;
    for (i, (pos, entry)) in entries.iter().enumerate() {
        if index.line(*pos) != key.0 || entry.category != category {
            continue;
        }
        let found = log.find(entry, same_meta_rank(&entries, i));
        let block = found.map(|bp| log.block(bp).text.clone());
        if block != key.1 {
            continue;
        }
        if let Some(bp) = found {
            log.remove(bp);
            log.write(changes);
        }
        index.remove(*pos);
        index.write(changes, false);
        return Ok(true);
    }
    Ok(false)
}

/// Puts an entry back at the end of its category and of the index.
fn add_entry(snap: &Snapshot<'_>, category: &str, key: &EntryKey, changes: &mut Changes) -> Result<()> {
    let mut index = FullIndex::load(snap)?;
    if let Some(text) = &key.1 {
        let mut log = CategoryLog::load(snap, category)?;
        let block = parse_blocks(text).into_iter().next().unwrap_or(Block { text: text.clone(), meta: None });
        log.push_block(block);
        log.write(changes);
    }
    index.append(key.0.clone());
    index.write(changes, false);
    Ok(())
}

/// Computes the changes that revert `commit` on top of `snap`.
fn revert_changes(snap: &Snapshot<'_>, commit: &str) -> Result<(Changes, String, String)> {
    let plan = snap.plan_revert(commit, &is_memory_managed)?;
    let short: String = plan.commit.chars().take(7).collect();
    let conflict = |conflicts: Vec<RevertConflict>| EngramError::RevertConflict {
        commit: short.clone(),
        subject: plan.subject.clone(),
        conflicts,
    };
    if !plan.conflicts.is_empty() {
        return Err(conflict(plan.conflicts.clone()));
    }
    let mut changes = plan.changes.clone();
    if plan.claimed.is_empty() {
        return Ok((changes, plan.commit.clone(), plan.subject.clone()));
    }
    // A later commit touched the memory: revert entry by entry from the current state.
    changes.retain(|p| !is_memory_managed(p));
    let before = entries_of(&snap.parent_of(&plan.commit)?)?;
    let after = entries_of(&snap.at(&plan.commit)?)?;
    let mut cur = snap.overlaid(&changes);
    for (category, key) in minus(&after, &before) {
        let mut step = Changes::for_memory();
        if !remove_entry(&cur, &category, &key, &mut step)? {
            let later = snap.first_commit_after(&plan.commit, |s| {
                Ok(!entries_of(s).map(|e| e.iter().any(|(_, k)| *k == key)).unwrap_or(false))
            })?;
            let (id, subject) = later.unwrap_or_else(|| ("(working tree)".into(), String::new()));
            let summary = parse_index_line(&key.0).map(|e| e.summary).unwrap_or_else(|| key.0.clone());
            return Err(conflict(vec![RevertConflict {
                path: format!("{} — {summary}", crate::memlog::category_path(&category)),
                later: id.chars().take(7).collect(),
                later_subject: subject,
            }]));
        }
        cur = cur.overlaid(&step);
        changes.extend(step);
    }
    let current = entries_of(&cur)?;
    for (category, key) in minus(&before, &after) {
        if current.iter().any(|(_, k)| *k == key) {
            continue;
        }
        let mut step = Changes::for_memory();
        add_entry(&cur, &category, &key, &mut step)?;
        cur = cur.overlaid(&step);
        changes.extend(step);
    }
    Ok((changes, plan.commit.clone(), plan.subject.clone()))
}

/// The category a memory file holds entries of: `memory/<c>.md` or a rolled `memory/_log/<c>/N.md`.
pub(super) fn category_of(path: &str) -> Option<&str> {
    if let Some(rest) = path.strip_prefix(&format!("{LOG_DIR}/")) {
        return rest.split_once('/').map(|(c, _)| c);
    }
    path.strip_prefix("memory/")?.strip_suffix(".md")
}

/// A commit's memory changes, readable: the entries it added and removed, read from the
/// entry files (category heads and segments; a block moved by a roll is no change), each
/// named by its index line when there is one; index lines that changed without an entry
/// (the full index created from `_index.md`, a hand edit) as one count; other files changed.
pub fn describe_commit(c: &CommitInfo) -> String {
    let mut old_blocks: Vec<(String, Block)> = Vec::new();
    let mut new_blocks: Vec<(String, Block)> = Vec::new();
    let (mut old_lines, mut new_lines) = (Vec::new(), Vec::new());
    let (mut old_hot, mut new_hot) = (Vec::new(), Vec::new());
    let mut index_paths = Vec::new();
    let mut others = Vec::new();
    for f in &c.files {
        let (old, new) = (f.old.as_deref().unwrap_or(""), f.new.as_deref().unwrap_or(""));
        let entry_lines =
            |t: &str| t.lines().filter(|l| is_entry_line(l)).map(str::to_owned).collect::<Vec<_>>();
        if is_index_file(&f.path) {
            old_lines.extend(entry_lines(old));
            new_lines.extend(entry_lines(new));
            index_paths.push(f.path.as_str());
        } else if f.path == HOT_INDEX {
            // Derived: read only to name entries when the full index did not change.
            old_hot.extend(entry_lines(old));
            new_hot.extend(entry_lines(new));
        } else if f.path == "memory/_onboarded" {
            // A marker: not a change a reader needs to see.
        } else if is_memory_managed(&f.path) {
            let category = category_of(&f.path).unwrap_or_default().to_owned();
            old_blocks.extend(parse_blocks(old).into_iter().map(|b| (category.clone(), b)));
            new_blocks.extend(parse_blocks(new).into_iter().map(|b| (category.clone(), b)));
        } else {
            others.push(file_change_line(&f.path, f.old.is_some(), f.new.is_some(), old, new));
        }
    }
    let removed_lines = diff_lines(&old_lines, &new_lines);
    let added_lines = diff_lines(&new_lines, &old_lines);
    let removed_blocks = diff_blocks(&old_blocks, &new_blocks);
    let added_blocks = diff_blocks(&new_blocks, &old_blocks);
    let mut out = Vec::new();
    let mut explained = (0, 0);
    for (sign, blocks, changed, all, hot, count) in [
        ("-", &removed_blocks, &removed_lines, &old_lines, &old_hot, &mut explained.0),
        ("+", &added_blocks, &added_lines, &new_lines, &new_hot, &mut explained.1),
    ] {
        // Lines this commit added (removed) first, then any line of the same version.
        let mut pools: [Vec<Option<&String>>; 3] = [
            changed.iter().map(Some).collect(),
            all.iter().map(Some).collect(),
            hot.iter().map(Some).collect(),
        ];
        for (category, block) in blocks {
            let entry = block.meta.as_ref().and_then(|m| {
                pools.iter_mut().enumerate().find_map(|(pool_no, pool)| {
                    let slot = pool.iter_mut().find(|l| {
                        l.and_then(|l| parse_index_line(l))
                            .is_some_and(|e| e.category == *category && e.describes(m))
                    })?;
                    let line = slot.take()?;
                    if pool_no == 0 {
                        *count += 1;
                    }
                    parse_index_line(line)
                })
            });
            let mut text = match (&entry, &block.meta) {
                (Some(e), _) => format!("{sign} [{category}] {} ({}, {})", e.summary, e.memory_type, e.ts),
                (None, Some(m)) => format!(
                    "{sign} [{category}] {} ({}, {})",
                    block.content().lines().next().unwrap_or_default(),
                    m.memory_type,
                    m.ts
                ),
                (None, None) => {
                    format!("{sign} [{category}] {}", block.text.lines().next().unwrap_or_default())
                }
            };
            for l in block.content().lines().take(6) {
                text.push_str(&format!("\n    {l}"));
            }
            out.push(text);
        }
    }
    let (index_removed, index_added) = (removed_lines.len() - explained.0, added_lines.len() - explained.1);
    if index_removed + index_added > 0 {
        let created = c.files.iter().any(|f| f.path == FULL_INDEX && f.old.is_none() && f.new.is_some());
        let what = if created { " (created from memory/_index.md)" } else { "" };
        out.push(format!(
            "index: +{index_added} −{index_removed} lines without an entry change{what} ({})",
            index_paths.join(", ")
        ));
    }
    out.extend(others);
    out.join("\n")
}

/// `M path (+a −d lines)` for a file that is not memory.
fn file_change_line(path: &str, had_old: bool, has_new: bool, old: &str, new: &str) -> String {
    let (mut add, mut del) = (0, 0);
    for ch in TextDiff::from_lines(old, new).iter_all_changes() {
        match ch.tag() {
            ChangeTag::Insert => add += 1,
            ChangeTag::Delete => del += 1,
            ChangeTag::Equal => {}
        }
    }
    let mark = match (had_old, has_new) {
        (false, true) => "A",
        (true, false) => "D",
        _ => "M",
    };
    format!("{mark} {path} (+{add} −{del} lines)")
}

fn diff_lines(a: &[String], b: &[String]) -> Vec<String> {
    let mut left: Vec<Option<&String>> = b.iter().map(Some).collect();
    a.iter()
        .filter(|x| match left.iter_mut().find(|y| y.is_some_and(|y| y == *x)) {
            Some(slot) => {
                *slot = None;
                false
            }
            None => true,
        })
        .cloned()
        .collect()
}

/// Multiset difference `a − b` of (category, block), by category and block text.
fn diff_blocks(a: &[(String, Block)], b: &[(String, Block)]) -> Vec<(String, Block)> {
    let mut left: Vec<Option<&(String, Block)>> = b.iter().map(Some).collect();
    a.iter()
        .filter(|x| match left.iter_mut().find(|y| y.is_some_and(|y| y.0 == x.0 && y.1.text == x.1.text)) {
            Some(slot) => {
                *slot = None;
                false
            }
            None => true,
        })
        .cloned()
        .collect()
}

/// The header line of a commit: id, time, tool, client.
pub fn commit_header(c: &CommitInfo) -> String {
    let when = chrono::DateTime::from_timestamp(c.time, 0)
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_default();
    let mut parts = vec![c.short().to_owned(), when];
    parts.extend(c.trailer(trailer::TOOL).map(str::to_owned));
    parts.extend(c.trailer(trailer::CLIENT).map(str::to_owned));
    parts.join(" · ")
}

/// True for commits `undo_last` may pick.
fn undoable(c: &CommitInfo) -> bool {
    c.trailer(trailer::TOOL).is_some_and(|t| !NOT_UNDOABLE.contains(&t))
        && !c.subject.starts_with("expire:")
        && !c.subject.starts_with("index:")
        && c.trailer(trailer::REVERTS).is_none()
}

fn reverted_ids(c: &CommitInfo) -> impl Iterator<Item = &str> {
    c.trailers.iter().filter(|(k, _)| k.eq_ignore_ascii_case(trailer::REVERTS)).map(|(_, v)| v.as_str())
}

/// Filters of `memory_history` / `engram log`.
#[derive(Debug, Clone, Default)]
pub struct HistoryFilter {
    /// Only commits touching this path (file or directory).
    pub path: Option<String>,
    /// Only commits adding or removing an entry whose text contains this.
    pub summary: Option<String>,
    /// Only commits at or after this date/time.
    pub since: Option<String>,
    /// Only commits made by this tool (trailer `Engram-Tool`).
    pub tool: Option<String>,
    /// Only commits made by this client (substring of trailer `Engram-Client`).
    pub client: Option<String>,
    /// At most this many commits.
    pub limit: usize,
}

fn client_matches(c: &CommitInfo, client: &str) -> bool {
    c.trailer(trailer::CLIENT).is_some_and(|v| v.to_lowercase().contains(&client.to_lowercase()))
}

/// The error for an `as_of` read of a pack that has no history yet (not a repository).
fn no_commit(rev: &str, dir: &std::path::Path) -> EngramError {
    StoreError::UnknownCommit { rev: rev.to_owned(), dir: dir.to_owned() }.into()
}

impl Engram {
    /// The commits of a pack that pass `filter`, newest first, with their files.
    pub fn history(&self, name: &str, filter: &HistoryFilter) -> Result<Vec<CommitInfo>> {
        Ok(self.history_page(name, filter, 0)?.commits)
    }

    /// The commits of a pack that pass `filter` after the first `offset` of them, newest first,
    /// with their files, and whether more follow. Without a summary, tool or client filter,
    /// the commits passed over and the one that tells "more" are read without their files.
    pub fn history_page(&self, name: &str, filter: &HistoryFilter, offset: usize) -> Result<LogPage> {
        let path = match filter.path.as_deref().map(str::trim).filter(|p| !p.is_empty()) {
            Some(p) => Some(
                crate::pack_path::PackPath::parse_user(p)
                    .map_err(|e| EngramError::BadPath { path: p.to_owned(), reason: e.to_string() })?
                    .into_string(),
            ),
            None => None,
        };
        let pack = self.packs().resolve_for_repair(name)?;
        let since = match filter.since.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
            Some(s) => Some(parse_since(s).ok_or_else(|| EngramError::Invalid {
                field: "since",
                reason: format!("{s:?} is not a date; use YYYY-MM-DD or an RFC 3339 time"),
            })?),
            None => None,
        };
        let limit = filter.limit.clamp(1, 500);
        let needs_scan = filter.summary.is_some() || filter.tool.is_some() || filter.client.is_some();
        if !needs_scan {
            let query = LogQuery { limit: Some(limit), since, path, with_files: true };
            let page = self.with_existing_repo(&pack.dir, |r| Ok(r.log_page(&query, offset)?))?;
            return Ok(page.unwrap_or_default());
        }
        let query = LogQuery { limit: Some(SCAN_LIMIT), since, path, with_files: true };
        // A folder that is not a repository yet has no history (and a read does not make one).
        let commits = self.with_existing_repo(&pack.dir, |r| Ok(r.log(&query)?))?.unwrap_or_default();
        let mut passing = commits
            .into_iter()
            .filter(|c| filter.tool.as_deref().is_none_or(|t| c.trailer(trailer::TOOL) == Some(t)))
            .filter(|c| filter.client.as_deref().is_none_or(|cl| client_matches(c, cl)))
            .filter(|c| {
                filter.summary.as_deref().is_none_or(|s| {
                    describe_commit(c)
                        .lines()
                        .any(|l| (l.starts_with("+ ") || l.starts_with("- ")) && l.contains(s))
                })
            })
            .skip(offset);
        let commits: Vec<CommitInfo> = passing.by_ref().take(limit).collect();
        Ok(LogPage { commits, more: passing.next().is_some() })
    }

    /// `memory_history`.
    pub fn memory_history(&self, name: &str, filter: &HistoryFilter) -> Result<String> {
        let commits = self.history(name, filter)?;
        if commits.is_empty() {
            return Ok(format!("Engram {name}: 没有匹配的提交 (no matching commits)"));
        }
        let mut out = format!("# Engram {name} 历史 (history, newest first: {} commits)\n", commits.len());
        for c in &commits {
            out.push_str(&format!("\n## {}\n{}\n", commit_header(c), c.subject));
            let d = describe_commit(c);
            if !d.is_empty() {
                out.push_str(&d);
                out.push('\n');
            }
        }
        out.push_str("\n撤销某次提交 (undo one): revert_memory(name, commit); 撤销最近的 (undo the last): undo_last(name, n)");
        Ok(out)
    }

    /// `revert_memory`: one new commit that undoes `commit`.
    pub fn revert_memory(&self, name: &str, commit: &str, caller: &Caller) -> Result<String> {
        Ok(self.revert_memory_item(name, commit, caller)?.text)
    }

    /// [`revert_memory`](Self::revert_memory) with the commit it made.
    pub fn revert_memory_item(
        &self,
        name: &str,
        commit: &str,
        caller: &Caller,
    ) -> Result<super::memory_items::WriteOutcome> {
        let pack = self.packs().resolve_for_repair(name)?;
        let now = self.now().timestamp();
        let (done, (id, subject)) = self.with_repo(&pack.dir, |repo| {
            let id = repo.resolve_commit(commit)?;
            repo.write(|snap| {
                let (changes, id, subject) = revert_changes(snap, &id)?;
                let message = revert_message(&[(id.clone(), subject.clone())], caller, now);
                Ok::<_, EngramError>(Edit::Commit { changes, message, value: (id, subject) })
            })
        })?;
        self.forget_expiry_of(&pack.dir);
        let short: String = id.chars().take(7).collect();
        let text = match &done {
            Some(c) => format!("已撤销 (reverted) commit {short} ({subject})\ncommit: {}", c.short),
            None => format!(
                "commit {short} ({subject}) 的改动已不存在，无需撤销 (its changes are already undone; nothing to commit)"
            ),
        };
        Ok(super::memory_items::WriteOutcome::new(text, done.as_ref()))
    }

    /// `undo_last`: reverts the last `n` tool commits (of `client`), newest first, in one commit.
    pub fn undo_last(&self, name: &str, n: usize, client: Option<&str>, caller: &Caller) -> Result<String> {
        if n == 0 || n > 100 {
            return Err(EngramError::Invalid { field: "n", reason: "must be between 1 and 100".into() });
        }
        let pack = self.packs().resolve_for_repair(name)?;
        let client = client.map(str::trim).filter(|c| !c.is_empty());
        let now = self.now().timestamp();
        let (done, undone) = self.with_repo(&pack.dir, |repo| {
            let log = repo.log(&LogQuery { limit: Some(SCAN_LIMIT), ..LogQuery::default() })?;
            let mut reverted: Vec<String> = Vec::new();
            let mut targets: Vec<String> = Vec::new();
            for c in &log {
                reverted.extend(reverted_ids(c).map(str::to_owned));
                if targets.len() < n
                    && undoable(c)
                    && !reverted.iter().any(|r| c.id.starts_with(r.as_str()))
                    && client.is_none_or(|cl| client_matches(c, cl))
                {
                    targets.push(c.id.clone());
                }
            }
            if targets.is_empty() {
                return Ok((None, Vec::new()));
            }
            repo.write(|snap| {
                let mut all = Changes::for_memory();
                let mut undone = Vec::new();
                for t in &targets {
                    let view = snap.overlaid(&all);
                    let (changes, id, subject) = revert_changes(&view, t)?;
                    all.extend(changes);
                    undone.push((id, subject));
                }
                let message = revert_message(&undone, caller, now);
                Ok::<_, EngramError>(Edit::Commit { changes: all, message, value: undone })
            })
        })?;
        self.forget_expiry_of(&pack.dir);
        if undone.is_empty() {
            let who = client.map(|c| format!(" of client {c:?}")).unwrap_or_default();
            return Ok(format!("没有可撤销的工具提交 (no tool commits{who} to undo)"));
        }
        let list: Vec<String> = undone
            .iter()
            .map(|(id, s)| format!("- {} {s}", id.chars().take(7).collect::<String>()))
            .collect();
        let id = done
            .map(|c| format!("\ncommit: {}", c.short))
            .unwrap_or_else(|| "\n(无改动 / nothing changed)".into());
        Ok(format!(
            "已撤销 {} 次提交 (undid {} commits):\n{}{id}",
            undone.len(),
            undone.len(),
            list.join("\n")
        ))
    }

    /// `load_engram` with `as_of`: the pack as it was at a commit or date (read-only).
    pub fn load_engram_as_of(&self, name: &str, query: &str, as_of: &str) -> Result<String> {
        let pack = self.resolve(name)?;
        let no_history = || no_commit(as_of, &pack.dir);
        self.with_existing_repo(&pack.dir, |repo| {
            let when = repo.commit_info(as_of, false)?.time;
            let today = chrono::DateTime::from_timestamp(when, 0).unwrap_or_default().date_naive();
            let (text, id) = self.render_load_at(repo, name, query, as_of, today, "")?;
            Ok(format!("{text}\n\n(as_of {as_of}: commit {id}, read-only view of the pack as it was)"))
        })?
        .ok_or_else(no_history)
    }

    /// `load_engram` by a caller that proposes on this pack (`serve --propose`) and has a
    /// proposal branch: the pack at that branch's tip (the pack's branch as it is now, brought
    /// in by [`Engram::update_own_proposal`], plus the caller's proposals). `None` otherwise.
    pub(super) fn load_engram_proposed(&self, name: &str, query: &str) -> Result<Option<String>> {
        if crate::store::proposer().is_none() {
            // Outside a tool call (CLI, web page): no branch to look at, nothing resolved twice.
            return Ok(None);
        }
        let pack = self.resolve(name)?;
        let Some(tip) = self.proposal_read_target(&pack.dir)? else { return Ok(None) };
        let today = self.now().date_naive();
        let global = self.global_memory_for_load(today)?;
        let shown = self.with_existing_repo(&pack.dir, |repo| {
            let branch = repo.proposal_target().map(|b| b.to_string()).unwrap_or_default();
            let (text, id) = self.render_load_at(repo, name, query, &tip, today, &global)?;
            Ok(format!("{text}\n\n({branch}: commit {id} — this client's proposals, not yet reviewed)"))
        })?;
        Ok(shown)
    }

    /// `load_engram`'s text for the pack at commit `rev`, and the commit's short id.
    fn render_load_at(
        &self,
        repo: &crate::store::PackRepo,
        name: &str,
        query: &str,
        rev: &str,
        today: chrono::NaiveDate,
        global_text: &str,
    ) -> Result<(String, String)> {
        let snap = repo.snapshot_at(rev)?;
        let memory = snap.list("memory")?;
        let onboarded = memory
            .iter()
            .any(|n| n == "_onboarded" || !matches!(n.as_str(), "_index.md" | "_index_full.md" | "_log"));
        let read = |rel: &str| -> Result<Option<String>> { Ok(snap.read_text(rel)?) };
        let view = PackView { read: &read, has_memory_dir: snap.exists("memory"), onboarded, today };
        let text = self.render_load(name, query, &view, global_text)?;
        let id: String = snap.head().unwrap_or_default().chars().take(7).collect();
        Ok((text, id))
    }

    /// `read_engram_file` with `as_of`.
    pub fn read_engram_file_as_of(&self, name: &str, path: &str, as_of: &str) -> Result<String> {
        let rel = crate::ops::user_path(path)
            .map_err(|e| EngramError::FileNotFound { path: format!("{path} ({e})") })?;
        let pack = self.resolve(name)?;
        self.with_existing_repo(&pack.dir, |repo| {
            let snap = repo.snapshot_at(as_of)?;
            let bytes = match snap.read(rel.as_str()) {
                Ok(Some(b)) => b,
                Ok(None) | Err(StoreError::NotAFile { .. }) => {
                    return Err(EngramError::FileNotFound { path: format!("{path} (as_of {as_of})") });
                }
                Err(e) => return Err(e.into()),
            };
            let text = String::from_utf8(bytes).map_err(|_| EngramError::Unreadable {
                path: path.to_owned(),
                reason: "not UTF-8 text (binary file?)".into(),
            })?;
            Ok(render_file(path, &text))
        })?
        .ok_or_else(|| no_commit(as_of, &pack.dir))
    }

    fn forget_expiry_of(&self, root: &std::path::Path) {
        self.expiry_cache.lock().unwrap_or_else(|p| p.into_inner()).remove(root);
    }
}

fn revert_message(undone: &[(String, String)], caller: &Caller, now: i64) -> CommitMessage {
    let subject = match undone {
        [(_, s)] => format!("revert: {s}"),
        many => format!(
            "undo: {} commits — {}",
            many.len(),
            many.iter().map(|(_, s)| s.as_str()).collect::<Vec<_>>().join("; ")
        ),
    };
    let mut msg = caller.commit_message(subject, now);
    msg.body = Some(
        undone.iter().map(|(id, _)| format!("This reverts commit {id}.")).collect::<Vec<_>>().join("\n"),
    );
    for (id, _) in undone {
        msg = msg.trailer(trailer::REVERTS, id.clone());
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::is_memory_managed;

    #[test]
    fn memory_managed_paths() {
        for p in ["memory/_index.md", "memory/_index_full.md", "memory/_log/x/000001.md", "memory/prefs.md"] {
            assert!(is_memory_managed(p), "{p}");
        }
        for p in ["memory/prefs-archive.md", "memory/x-expired.md", "memory/_onboarded", "knowledge/a.md"] {
            assert!(!is_memory_managed(p), "{p}");
        }
    }
}
