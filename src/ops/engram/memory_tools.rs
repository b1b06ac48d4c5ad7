//! `capture_memory`, `consolidate_memory`, `delete_memory`, `correct_memory`.

use std::path::{Path, PathBuf};

use chrono::NaiveDate;

use super::memory_items::{MemoryTarget, WriteOutcome, select_target};
use crate::memlog::{CategoryLog, FullIndex, category_path, same_meta_rank};
use crate::memory::{Block, EntryMeta, IndexEntry, single_line};
use crate::ops::{Caller, Engram, EngramError, Result, limits};
use crate::store::{Changes, CommitMessage, Edit, trailer};

/// Seconds within which the same capture is a duplicate.
pub const THROTTLE_SECONDS: i64 = 30;

/// Arguments of `capture_memory`.
#[derive(Debug, Clone, Default)]
pub struct CaptureRequest {
    /// Pack name (may be empty/unknown when `is_global`).
    pub name: String,
    /// Memory text.
    pub content: String,
    /// Category (file stem under `memory/`).
    pub category: String,
    /// One-line summary for the index.
    pub summary: String,
    /// Memory type (`general` when not given).
    pub memory_type: Option<String>,
    /// Tags.
    pub tags: Vec<String>,
    /// Conversation id.
    pub conversation_id: Option<String>,
    /// Expiry date `YYYY-MM-DD`.
    pub expires: Option<String>,
    /// Write to the global memory shared by all packs.
    pub is_global: bool,
}

/// Arguments of `correct_memory`.
#[derive(Debug, Clone, Default)]
pub struct CorrectRequest {
    /// Pack name.
    pub name: String,
    /// Category.
    pub category: String,
    /// Summary of the entry to correct (exact, or a unique substring).
    pub old_summary: String,
    /// New memory text.
    pub new_content: String,
    /// New summary.
    pub new_summary: String,
    /// New type (keeps the old one when not given).
    pub memory_type: Option<String>,
    /// New tags (keeps the old ones when not given).
    pub tags: Option<Vec<String>>,
    /// The entry by id instead of `category` + `old_summary` (the web page), checked to be
    /// unchanged since the writer read it.
    pub target: Option<MemoryTarget>,
}

fn invalid(field: &'static str, reason: impl Into<String>) -> EngramError {
    EngramError::Invalid { field, reason: reason.into() }
}

/// Validates a category: one plain file stem.
pub fn check_category(category: &str) -> Result<String> {
    let c = category.trim();
    let reason = if c.is_empty() {
        Some("must not be empty")
    } else if c.chars().count() > limits::MAX_LABEL_CHARS {
        Some("too long (at most 100 characters)")
    } else if c.contains('/') || c.contains('\\') {
        Some("must not contain `/` or `\\` (a category is a file name under memory/)")
    } else if c.contains("..") || c.starts_with('.') {
        Some("must not start with `.` or contain `..`")
    } else if c.starts_with('_') {
        Some("names starting with `_` are reserved (_index, _log, …)")
    } else if c.chars().any(|ch| ch.is_control() || ch == '`') {
        Some("must not contain control characters or backticks")
    } else if c.ends_with("-archive") || c.ends_with("-expired") {
        Some("`-archive` and `-expired` are reserved suffixes")
    } else if c.ends_with(".md") {
        Some("give the name without `.md`")
    } else {
        None
    };
    match reason {
        Some(r) => Err(invalid("category", format!("{r}; e.g. `preferences`, `user-profile`"))),
        None => Ok(c.to_owned()),
    }
}

/// [`check_category`] for a write that may create the category's files
/// (`memory/<category>.md`, `memory/_log/<category>/`): also a portable file
/// name ([`PackPath::check_component`](crate::pack_path::PackPath::check_component):
/// `CON`, `nul`, `x:stream` would break a clone on Windows). Deleting from or
/// correcting an existing category does not need it.
fn check_new_category(category: &str) -> Result<String> {
    let c = check_category(category)?;
    for name in [c.clone(), format!("{c}.md")] {
        if let Err(e) = crate::pack_path::PackPath::check_component(&name) {
            return Err(invalid("category", format!("{e}; a category becomes a file name under memory/")));
        }
    }
    Ok(c)
}

fn check_summary(field: &'static str, s: &str) -> Result<String> {
    let s = single_line(s);
    if s.chars().count() > limits::MAX_SUMMARY_CHARS {
        return Err(invalid(field, format!("too long (at most {} characters)", limits::MAX_SUMMARY_CHARS)));
    }
    // The index line is `… [type] [tags] summary`: a leading `[…]` or `expires:` would be read back
    // as tags or an expiry date, and the entry could no longer be found by delete/correct.
    if s.starts_with('[') || s.starts_with("expires:") {
        return Err(invalid(
            field,
            "must not start with `[` or `expires:` (they would be read as tags or an expiry); pass tags in `tags` and the date in `expires`",
        ));
    }
    Ok(s)
}

fn check_content(field: &'static str, s: &str) -> Result<()> {
    if s.trim().is_empty() {
        return Err(invalid(field, "must not be empty"));
    }
    if s.len() > limits::MAX_CONTENT_BYTES {
        return Err(invalid(
            field,
            format!(
                "is {} bytes; the limit is {} bytes — split it or store a file with add_knowledge",
                s.len(),
                limits::MAX_CONTENT_BYTES
            ),
        ));
    }
    Ok(())
}

fn check_type(t: Option<&str>) -> Result<String> {
    let t = t.map(str::trim).filter(|t| !t.is_empty()).unwrap_or("general");
    if t.chars().count() > 40 || !t.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-') {
        return Err(invalid(
            "memory_type",
            "letters, digits, `_` and `-` only; usual values: preference, fact, decision, history, general, inferred, stated",
        ));
    }
    Ok(t.to_owned())
}

fn check_tags(tags: &[String]) -> Result<Vec<String>> {
    if tags.len() > limits::MAX_TAGS {
        return Err(invalid("tags", format!("at most {} tags", limits::MAX_TAGS)));
    }
    let mut out: Vec<String> = Vec::new();
    for t in tags {
        // The block's meta line is space-separated (`tags:a,b conv:…`): a tag is one word,
        // so `machine learning` is stored as `machine-learning`.
        let t = single_line(t).replace(' ', "-");
        if t.is_empty() {
            continue;
        }
        if t.contains([',', '[', ']', '`']) || t.chars().count() > limits::MAX_LABEL_CHARS {
            return Err(invalid(
                "tags",
                format!("tag {t:?} must not contain `,`, `[`, `]` or backticks (and at most 100 characters)"),
            ));
        }
        if !out.contains(&t) {
            out.push(t);
        }
    }
    Ok(out)
}

fn check_expires(e: Option<&str>) -> Result<Option<String>> {
    let Some(e) = e.map(str::trim).filter(|e| !e.is_empty()) else { return Ok(None) };
    if !crate::memory::is_date(e) || NaiveDate::parse_from_str(e, "%Y-%m-%d").is_err() {
        return Err(invalid("expires", format!("{e:?} is not a date; use YYYY-MM-DD, e.g. 2026-12-31")));
    }
    Ok(Some(e.to_owned()))
}

fn fnv1a(s: &str) -> String {
    format!("{:016x}", crate::graph::fnv1a64(s.as_bytes()))
}

/// The reference's throttle key: pack, category and the first 120 characters of the raw content.
fn dedup_key(name: &str, category: &str, content: &str) -> String {
    let head: String = content.chars().take(120).collect();
    fnv1a(&format!("{name}:{category}:{head}"))
}

/// Which version of a memory changed differently on two devices stays (the sync page).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeepVersion {
    /// This device's version: the remote's is deleted.
    Mine,
    /// The remote's version: this device's is deleted.
    Theirs,
    /// Both, as the merge left them.
    Both,
}

impl KeepVersion {
    /// `mine`, `theirs` or `both`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "mine" => Some(Self::Mine),
            "theirs" => Some(Self::Theirs),
            "both" => Some(Self::Both),
            _ => None,
        }
    }

    fn word(self) -> &'static str {
        match self {
            Self::Mine => "mine",
            Self::Theirs => "theirs",
            Self::Both => "both",
        }
    }
}

fn message(subject: String, caller: &Caller, conversation: Option<&str>, now: i64) -> CommitMessage {
    caller.commit_message(subject, now).trailer(trailer::CONVERSATION, conversation.unwrap_or_default())
}

/// Adds [`HOT_INDEX_REGENERATED`](crate::memlog::HOT_INDEX_REGENERATED) to a write's
/// message when the `_index.md` it rewrites held a hand edit.
fn note_hot_regenerated(msg: &mut CommitMessage, hand_edited: bool) {
    if hand_edited {
        msg.body = Some(crate::memlog::HOT_INDEX_REGENERATED.to_owned());
    }
}

fn short(s: &str) -> String {
    let s = single_line(s);
    match s.char_indices().nth(60) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

/// Finds exactly one entry of `category`: an exact summary match first, then a unique substring.
fn find_one(
    entries: &[(crate::memlog::LinePos, IndexEntry)],
    category: &str,
    summary: &str,
) -> Result<usize> {
    let wanted = summary.trim();
    let in_cat: Vec<usize> =
        entries.iter().enumerate().filter(|(_, (_, e))| e.category == category).map(|(i, _)| i).collect();
    let candidates = || in_cat.iter().map(|&i| entries[i].1.summary.clone()).collect::<Vec<_>>();
    let no_match = || EngramError::NoMatch {
        category: category.to_owned(),
        summary: summary.to_owned(),
        candidates: candidates(),
    };
    if wanted.is_empty() {
        return Err(no_match());
    }
    let exact: Vec<usize> = in_cat.iter().copied().filter(|&i| entries[i].1.summary == wanted).collect();
    let pick = if exact.is_empty() {
        in_cat.iter().copied().filter(|&i| entries[i].1.summary.contains(wanted)).collect()
    } else {
        exact
    };
    match pick.as_slice() {
        [one] => Ok(*one),
        [] => Err(no_match()),
        many => Err(EngramError::Ambiguous {
            category: category.to_owned(),
            summary: summary.to_owned(),
            candidates: many
                .iter()
                .map(|&i| format!("[{}] {}", entries[i].1.ts, entries[i].1.summary))
                .collect(),
        }),
    }
}

/// Removes the entries at `picked` (positions in `entries`, each once) from their category logs
/// and from `index`, and writes both into `changes`. Returns each removed entry's
/// (category, summary).
fn remove_picked(
    snap: &crate::store::Snapshot<'_>,
    index: &mut FullIndex,
    entries: &[(crate::memlog::LinePos, IndexEntry)],
    picked: &[usize],
    changes: &mut Changes,
) -> Result<Vec<(String, String)>> {
    // Each category's blocks and the index lines, removed from the last one back so that the
    // positions found before stay right.
    let mut categories: Vec<&str> = picked.iter().map(|&i| entries[i].1.category.as_str()).collect();
    categories.sort_unstable();
    categories.dedup();
    for category in categories {
        let mut log = CategoryLog::load(snap, category)?;
        let mut blocks: Vec<_> = picked
            .iter()
            .filter(|&&i| entries[i].1.category == category)
            .filter_map(|&i| log.find(&entries[i].1, same_meta_rank(entries, i)))
            .collect();
        blocks.sort_unstable();
        blocks.dedup();
        if !blocks.is_empty() {
            for bp in blocks.into_iter().rev() {
                log.remove(bp);
            }
            log.write(changes);
        }
    }
    let mut lines: Vec<_> = picked.iter().map(|&i| entries[i].0).collect();
    lines.sort_unstable();
    for pos in lines.into_iter().rev() {
        index.remove(pos);
    }
    index.write(changes, false);
    Ok(picked.iter().map(|&i| (entries[i].1.category.clone(), entries[i].1.summary.clone())).collect())
}

/// How a deletion or correction picks its entry.
enum Select<'a> {
    /// `category` + summary (exact, or a unique substring): the MCP tools.
    Summary(&'a str, &'a str),
    /// By id, checked unchanged: the web page.
    Target(&'a MemoryTarget),
}

impl Select<'_> {
    fn pick(
        &self,
        snap: &crate::store::Snapshot<'_>,
        entries: &[(crate::memlog::LinePos, IndexEntry)],
    ) -> Result<usize> {
        match self {
            Select::Summary(category, summary) => find_one(entries, category, summary),
            Select::Target(t) => select_target(snap, entries, t),
        }
    }
}

impl Engram {
    fn memory_root(&self, name: &str, is_global: bool) -> Result<PathBuf> {
        if is_global {
            let dir = self.packs().global_dir();
            std::fs::create_dir_all(dir.join("memory")).map_err(|e| crate::store::StoreError::Io {
                step: "create directory",
                path: dir.clone(),
                source: e,
            })?;
            return Ok(dir);
        }
        Ok(self.resolve(name)?.dir)
    }

    /// `capture_memory`. Returns the reference's text plus the commit id (or the earlier commit of a duplicate).
    pub fn capture_memory(&self, req: &CaptureRequest, caller: &Caller) -> Result<String> {
        Ok(self.capture_memory_item(req, caller)?.text)
    }

    /// [`capture_memory`](Self::capture_memory) with the commit and the new entry's id.
    pub fn capture_memory_item(&self, req: &CaptureRequest, caller: &Caller) -> Result<WriteOutcome> {
        let category = check_new_category(&req.category)?;
        check_content("content", &req.content)?;
        let summary = check_summary("summary", &req.summary)?;
        let memory_type = check_type(req.memory_type.as_deref())?;
        let tags = check_tags(&req.tags)?;
        let expires = check_expires(req.expires.as_deref())?;
        let conversation_id = req.conversation_id.as_deref().map(single_line).filter(|c| !c.is_empty());
        if conversation_id
            .as_deref()
            .is_some_and(|c| c.contains(' ') || c.chars().count() > limits::MAX_CONVERSATION_ID_CHARS)
        {
            return Err(invalid(
                "conversation_id",
                "must be one word without spaces (at most 200 characters)",
            ));
        }
        let root = self.memory_root(&req.name, req.is_global)?;
        let now = self.now();
        let ts = now.format("%Y-%m-%d %H:%M").to_string();
        let key = dedup_key(&req.name, &category, &req.content);
        let throttle = if memory_type == "tool_trace" { 5 } else { THROTTLE_SECONDS };
        let meta = EntryMeta {
            ts,
            memory_type: memory_type.clone(),
            expires: expires.clone(),
            tags: tags.clone(),
            conversation_id: conversation_id.clone(),
        };
        let entry = IndexEntry {
            category: category.clone(),
            ts: meta.ts.clone(),
            memory_type: memory_type.clone(),
            expires: expires.clone(),
            tags: tags.clone(),
            summary: summary.clone(),
        };
        let subject = format!(
            "capture: {category} — {}",
            short(if summary.is_empty() { &req.content } else { &summary })
        );
        let msg = message(subject, caller, conversation_id.as_deref(), now.timestamp())
            .trailer(trailer::DEDUP, key.clone());
        let is_global = req.is_global;
        let repo = self.repo(&root)?;
        let repo = self.hold(&repo)?;
        // A tool trace is bookkeeping: it leaves the user's expired entries where they are (a
        // load hides them; the next other memory write moves them), as the reference's trace
        // write does. Every other memory write runs the expiry pass first.
        let expiry_runs = memory_type != "tool_trace";
        if expiry_runs {
            self.expire_before_write(&repo, &root, caller)?;
        }
        let (commit, (duplicate_of, rank)) = repo.write(|snap| {
            if let Some(earlier) =
                snap.recent_commit_with_trailer(trailer::DEDUP, &key, now.timestamp() - throttle)?
            {
                return Ok::<_, EngramError>(Edit::Nothing((Some(earlier), None)));
            }
            let rank = crate::memlog::next_entry_rank(snap, &category, &meta.ts)?;
            let mut changes = Changes::for_memory();
            crate::memlog::append_entry(snap, &category, &meta, &req.content, &mut changes)?;
            if !is_global && !snap.exists("memory/_onboarded") {
                changes.put("memory/_onboarded", Vec::new());
            }
            let mut message = msg.clone();
            note_hot_regenerated(&mut message, crate::memlog::hot_index_hand_edited(snap)?);
            crate::memlog::append_index_line(snap, entry.render(), &mut changes)?;
            Ok(Edit::Commit { changes, message, value: (None, Some(rank)) })
        })?;
        let scope = if req.is_global { "[全局] " } else { "" };
        let type_label = if memory_type == "general" { String::new() } else { format!("[{memory_type}] ") };
        let expires_label = expires.as_ref().map(|e| format!(" (expires:{e})")).unwrap_or_default();
        let text = format!("已记录: {scope}{type_label}[{category}] {}{expires_label}", req.summary);
        match (commit, duplicate_of) {
            (Some(c), _) => {
                let previous = c.previous_head.as_deref().unwrap_or_default();
                self.note_expiry_after_write(&root, previous, &c.id, expires.as_deref(), expiry_runs);
                let mut out = WriteOutcome::new(format!("{text}\ncommit: {}", c.short), Some(&c));
                out.id = rank.map(|n| super::memory_items::memory_id(&category, &meta.ts, n));
                Ok(out)
            }
            (None, Some(earlier)) => Ok(WriteOutcome {
                text: format!(
                    "{text}\n(重复：{THROTTLE_SECONDS} 秒内已记录过相同内容，未重复写入 / duplicate of commit {earlier}, not written again)"
                ),
                commit: Some(earlier),
                id: None,
                parent: None,
            }),
            (None, None) => Ok(WriteOutcome::new(text, None)),
        }
    }

    /// `consolidate_memory`: the category's entries become one consolidated block; originals go to `-archive.md`.
    pub fn consolidate_memory(
        &self,
        name: &str,
        category: &str,
        content: &str,
        summary: &str,
        caller: &Caller,
    ) -> Result<String> {
        let category = check_new_category(category)?;
        check_content("consolidated_content", content)?;
        let summary = check_summary("summary", summary)?;
        let root = self.resolve(name)?.dir;
        let ts = self.now().format("%Y-%m-%d %H:%M").to_string();
        let subject = format!("consolidate: {category} — {}", short(&summary));
        let msg = message(subject, caller, None, self.now().timestamp());
        let (commit, ()) = self.with_repo(&root, |repo| {
            self.expire_before_write(repo, &root, caller)?;
            repo.write(|snap| {
                let mut changes = Changes::for_memory();
                let mut log = CategoryLog::load(snap, &category)?;
                let old = log.concatenated_text();
                if !old.is_empty() {
                    let archive_path = format!("memory/{category}-archive.md");
                    let archive = snap.read_text(&archive_path)?.unwrap_or_default();
                    changes.put(archive_path, format!("{archive}\n\n# 归档于 {ts}\n{old}"));
                }
                log.replace_all(format!("[{ts}] type:consolidated\n{}", crate::memory::entry_text(content)));
                log.write(&mut changes);
                let mut index = FullIndex::load(snap)?;
                let mut message = msg.clone();
                note_hot_regenerated(&mut message, index.hot_hand_edited());
                index.remove_containing(&format!("`{}`", category_path(&category)));
                let entry = IndexEntry {
                    category: category.clone(),
                    ts: ts.clone(),
                    memory_type: "consolidated".into(),
                    expires: None,
                    tags: Vec::new(),
                    summary: summary.clone(),
                };
                index.append(entry.render());
                index.write(&mut changes, false);
                Ok::<_, EngramError>(Edit::Commit { changes, message, value: () })
            })
        })?;
        self.forget_expiry(&root);
        let id = commit.map(|c| format!("\ncommit: {}", c.short)).unwrap_or_default();
        Ok(format!("已压缩: [{category}] 原始条目已归档至 memory/{category}-archive.md{id}"))
    }

    /// `consolidate_memory` of some entries of one category (the web page's merge of likely
    /// duplicates): the entries the [`MemoryTarget`]s name become one `consolidated` entry
    /// stamped now, their blocks go to `<category>-archive.md` as a category's do, in one
    /// commit — or nothing when one of them is missing or changed. The other entries stay.
    pub fn consolidate_memory_items(
        &self,
        name: &str,
        targets: &[MemoryTarget],
        content: &str,
        summary: &str,
        caller: &Caller,
    ) -> Result<WriteOutcome> {
        if targets.len() < 2 {
            return Err(invalid("ids", "name at least two memories to merge"));
        }
        check_content("consolidated_content", content)?;
        let summary = check_summary("summary", summary)?;
        let root = self.resolve(name)?.dir;
        let now = self.now();
        let ts = now.format("%Y-%m-%d %H:%M").to_string();
        let (commit, (category, rank)) = self.with_repo(&root, |repo| {
            self.expire_before_write(repo, &root, caller)?;
            repo.write(|snap| {
                let mut index = FullIndex::load(snap)?;
                let hand_edited = index.hot_hand_edited();
                let entries = index.entries();
                let mut picked = Vec::with_capacity(targets.len());
                for t in targets {
                    let i = Select::Target(t).pick(snap, &entries)?;
                    if !picked.contains(&i) {
                        picked.push(i);
                    }
                }
                if picked.len() < 2 {
                    return Err(invalid("ids", "name at least two different memories to merge"));
                }
                let category = entries[picked[0]].1.category.clone();
                if picked.iter().any(|&i| entries[i].1.category != category) {
                    return Err(invalid("ids", "the memories to merge are of one category"));
                }
                let mut changes = Changes::for_memory();
                let mut log = CategoryLog::load(snap, &category)?;
                let mut blocks: Vec<_> = picked
                    .iter()
                    .filter_map(|&i| log.find(&entries[i].1, same_meta_rank(&entries, i)))
                    .collect();
                blocks.sort_unstable();
                blocks.dedup();
                let mut old: Vec<_> = blocks.into_iter().rev().map(|bp| log.remove(bp)).collect();
                old.reverse();
                if !old.is_empty() {
                    let archive_path = format!("memory/{category}-archive.md");
                    let archive = snap.read_text(&archive_path)?.unwrap_or_default();
                    let old = crate::memory::render_blocks(&old);
                    changes.put(archive_path, format!("{archive}\n\n# 归档于 {ts}\n{old}"));
                }
                let meta = EntryMeta {
                    ts: ts.clone(),
                    memory_type: "consolidated".into(),
                    expires: None,
                    tags: Vec::new(),
                    conversation_id: None,
                };
                log.append(&meta, content);
                log.write(&mut changes);
                let mut lines: Vec<_> = picked.iter().map(|&i| entries[i].0).collect();
                lines.sort_unstable();
                for pos in lines.into_iter().rev() {
                    index.remove(pos);
                }
                // The new entry's rank among the entries of its category and minute (its id).
                let rank =
                    index.entries().iter().filter(|(_, e)| e.category == category && e.ts == ts).count();
                let entry = IndexEntry {
                    category: category.clone(),
                    ts: ts.clone(),
                    memory_type: meta.memory_type.clone(),
                    expires: None,
                    tags: Vec::new(),
                    summary: summary.clone(),
                };
                index.append(entry.render());
                index.write(&mut changes, false);
                let subject =
                    format!("consolidate: {category} — {} memories → {}", picked.len(), short(&summary));
                let mut msg = message(subject, caller, None, now.timestamp());
                note_hot_regenerated(&mut msg, hand_edited);
                Ok::<_, EngramError>(Edit::Commit { changes, message: msg, value: (category, rank) })
            })
        })?;
        self.forget_expiry(&root);
        let id = commit.as_ref().map(|c| format!("\ncommit: {}", c.short)).unwrap_or_default();
        let mut out = WriteOutcome::new(
            format!(
                "已压缩: [{category}] {} 条 → {summary}，原始条目已归档至 memory/{category}-archive.md{id}",
                targets.len()
            ),
            commit.as_ref(),
        );
        out.id = Some(super::memory_items::memory_id(&category, &ts, rank));
        Ok(out)
    }

    /// `delete_memory`: removes exactly one entry (index line and block).
    pub fn delete_memory(
        &self,
        name: &str,
        category: &str,
        summary: &str,
        caller: &Caller,
    ) -> Result<String> {
        let category = check_category(category)?;
        Ok(self.delete_entry(name, Select::Summary(&category, summary), caller)?.text)
    }

    /// `delete_memory` of the entries the [`MemoryTarget`]s name (the web page): all of them in
    /// one commit, or none when one of them is missing or changed.
    pub fn delete_memory_items(
        &self,
        name: &str,
        targets: &[MemoryTarget],
        caller: &Caller,
    ) -> Result<WriteOutcome> {
        let selects: Vec<Select<'_>> = targets.iter().map(Select::Target).collect();
        self.delete_entries(name, &selects, caller)
    }

    fn delete_entry(&self, name: &str, select: Select<'_>, caller: &Caller) -> Result<WriteOutcome> {
        self.delete_entries(name, &[select], caller)
    }

    /// Removes the entries `selects` pick (each once) from the index and their category logs,
    /// in one commit.
    fn delete_entries(&self, name: &str, selects: &[Select<'_>], caller: &Caller) -> Result<WriteOutcome> {
        if selects.is_empty() {
            return Err(invalid("ids", "name at least one memory to delete"));
        }
        let root = self.resolve(name)?.dir;
        let now = self.now().timestamp();
        let (commit, deleted) = self.with_repo(&root, |repo| {
            self.expire_before_write(repo, &root, caller)?;
            repo.write(|snap| {
                let mut index = FullIndex::load(snap)?;
                let hand_edited = index.hot_hand_edited();
                let entries = index.entries();
                let mut picked = Vec::with_capacity(selects.len());
                for select in selects {
                    let i = select.pick(snap, &entries)?;
                    if !picked.contains(&i) {
                        picked.push(i);
                    }
                }
                let mut changes = Changes::for_memory();
                let deleted = remove_picked(snap, &mut index, &entries, &picked, &mut changes)?;
                let subject = match deleted.as_slice() {
                    [(category, summary)] => format!("delete: {category} — {}", short(summary)),
                    many => {
                        let mut cats: Vec<&str> = many.iter().map(|(c, _)| c.as_str()).collect();
                        cats.dedup();
                        format!("delete: {} memories — {}", many.len(), short(&cats.join(", ")))
                    }
                };
                let mut msg = message(subject, caller, None, now);
                note_hot_regenerated(&mut msg, hand_edited);
                Ok::<_, EngramError>(Edit::Commit { changes, message: msg, value: deleted })
            })
        })?;
        self.forget_expiry(&root);
        let id = commit.as_ref().map(|c| format!("\ncommit: {}", c.short)).unwrap_or_default();
        let lines: Vec<String> = deleted.iter().map(|(c, s)| format!("已删除: [{c}] {s}")).collect();
        Ok(WriteOutcome::new(format!("{}{id}", lines.join("\n")), commit.as_ref()))
    }

    /// `correct_memory`: replaces exactly one entry, keeping its time, expiry and conversation.
    pub fn correct_memory(&self, req: &CorrectRequest, caller: &Caller) -> Result<String> {
        Ok(self.correct_memory_item(req, caller)?.text)
    }

    /// [`correct_memory`](Self::correct_memory) with the commit (by id when `req.target` is set).
    pub fn correct_memory_item(&self, req: &CorrectRequest, caller: &Caller) -> Result<WriteOutcome> {
        let category = match &req.target {
            Some(_) => String::new(),
            None => check_category(&req.category)?,
        };
        check_content("new_content", &req.new_content)?;
        let new_summary = check_summary("new_summary", &req.new_summary)?;
        let new_type = req.memory_type.as_deref().map(|t| check_type(Some(t))).transpose()?;
        let new_tags = req.tags.as_deref().map(check_tags).transpose()?;
        let root = self.resolve(&req.name)?.dir;
        let now = self.now().timestamp();
        let (commit, new_entry) = self.with_repo(&root, |repo| {
            self.expire_before_write(repo, &root, caller)?;
            repo.write(|snap| {
                let mut index = FullIndex::load(snap)?;
                let hand_edited = index.hot_hand_edited();
                let entries = index.entries();
                let select = match &req.target {
                    Some(t) => Select::Target(t),
                    None => Select::Summary(&category, &req.old_summary),
                };
                let i = select.pick(snap, &entries)?;
                let rank = same_meta_rank(&entries, i);
                let (pos, old) = entries[i].clone();
                let category = old.category.clone();
                let mut changes = Changes::for_memory();
                let mut log = CategoryLog::load(snap, &category)?;
                let found = log.find(&old, rank);
                let old_meta = found.and_then(|bp| log.block(bp).meta.clone());
                let meta = EntryMeta {
                    ts: old.ts.clone(),
                    memory_type: new_type.clone().unwrap_or_else(|| old.memory_type.clone()),
                    expires: old.expires.clone(),
                    tags: new_tags.clone().unwrap_or_else(|| old.tags.clone()),
                    conversation_id: old_meta.and_then(|m| m.conversation_id),
                };
                let block = Block {
                    text: format!("{}\n{}", meta.render_line(), crate::memory::entry_text(&req.new_content)),
                    meta: Some(meta.clone()),
                };
                match found {
                    Some(bp) => log.replace(bp, block),
                    None => log.append(&meta, &req.new_content),
                }
                log.write(&mut changes);
                let entry = IndexEntry {
                    category: category.clone(),
                    ts: meta.ts.clone(),
                    memory_type: meta.memory_type.clone(),
                    expires: meta.expires.clone(),
                    tags: meta.tags.clone(),
                    summary: new_summary.clone(),
                };
                index.replace(pos, entry.render());
                index.write(&mut changes, false);
                let mut msg = message(
                    format!("correct: {category} — {} → {}", short(&old.summary), short(&new_summary)),
                    caller,
                    None,
                    now,
                );
                note_hot_regenerated(&mut msg, hand_edited);
                Ok::<_, EngramError>(Edit::Commit { changes, message: msg, value: entry })
            })
        })?;
        self.forget_expiry(&root);
        let type_label = if new_entry.memory_type == "general" {
            String::new()
        } else {
            format!("[{}] ", new_entry.memory_type)
        };
        let id = commit.as_ref().map(|c| format!("\ncommit: {}", c.short)).unwrap_or_default();
        let category = &new_entry.category;
        let mut out = WriteOutcome::new(
            format!("已修正: {type_label}[{category}] {}{id}", req.new_summary),
            commit.as_ref(),
        );
        out.id = req.target.as_ref().map(|t| t.id.clone());
        Ok(out)
    }

    /// Resolves the memory conflict `key` of `memory/_conflicts.md` (see
    /// [`crate::memmerge::parse_conflicts`]): deletes the version not kept, as `delete_memory`
    /// does, and removes the item from the conflicts file, in one commit. "Mine" is this
    /// device's version (`SyncSettings::host`): the merge's own on the device that merged, the
    /// remote's on the others. A version already gone is not looked for again; an item no
    /// longer listed is [`EngramError::ConflictGone`].
    pub fn resolve_memory_conflict(
        &self,
        name: &str,
        key: &str,
        keep: KeepVersion,
        caller: &Caller,
    ) -> Result<WriteOutcome> {
        use crate::memmerge::{CONFLICTS_FILE, describe_version, parse_conflicts, without_conflict};
        let root = self.resolve(name)?.dir;
        let now = self.now().timestamp();
        let (commit, ()) = self.with_repo(&root, |repo| {
            self.expire_before_write(repo, &root, caller)?;
            repo.write(|snap| {
                let gone = || EngramError::ConflictGone { what: format!("{CONFLICTS_FILE} item {key}") };
                let text = snap.read_text(CONFLICTS_FILE)?.ok_or_else(gone)?;
                let listed = parse_conflicts(&text);
                let item = listed.iter().find(|c| c.key == key).ok_or_else(gone)?;
                let rest = without_conflict(&text, key).ok_or_else(gone)?;
                // The file says "ours" for the device that merged; on another, mine is theirs.
                let keep = match keep {
                    KeepVersion::Mine if !item.host.is_empty() && item.host != self.config.sync.host => {
                        KeepVersion::Theirs
                    }
                    KeepVersion::Theirs if !item.host.is_empty() && item.host != self.config.sync.host => {
                        KeepVersion::Mine
                    }
                    other => other,
                };
                let drop: Vec<&String> = match keep {
                    KeepVersion::Mine => item.theirs.iter().filter(|v| !item.ours.contains(v)).collect(),
                    KeepVersion::Theirs => item.ours.iter().filter(|v| !item.theirs.contains(v)).collect(),
                    KeepVersion::Both => Vec::new(),
                };
                let mut changes = Changes::for_memory();
                let mut index = FullIndex::load(snap)?;
                let hand_edited = index.hot_hand_edited();
                let entries = index.entries();
                let mut picked = Vec::new();
                if !drop.is_empty() {
                    let log = CategoryLog::load(snap, &item.category)?;
                    for (i, (_, e)) in entries.iter().enumerate() {
                        if e.category != item.category || e.ts != item.ts || picked.contains(&i) {
                            continue;
                        }
                        let content = log
                            .find(e, same_meta_rank(&entries, i))
                            .map(|bp| log.block(bp).content().to_owned())
                            .unwrap_or_default();
                        if drop.contains(&&describe_version(&e.summary, &content)) {
                            picked.push(i);
                        }
                    }
                }
                if !picked.is_empty() {
                    remove_picked(snap, &mut index, &entries, &picked, &mut changes)?;
                }
                changes.put(CONFLICTS_FILE, rest);
                let subject = format!(
                    "resolve: {} — {} (keep {})",
                    item.category,
                    short(&item.base_summary),
                    keep.word()
                );
                let mut msg = message(subject, caller, None, now);
                note_hot_regenerated(&mut msg, hand_edited && !picked.is_empty());
                Ok::<_, EngramError>(Edit::Commit { changes, message: msg, value: () })
            })
        })?;
        self.forget_expiry(&root);
        let id = commit.as_ref().map(|c| format!("\ncommit: {}", c.short)).unwrap_or_default();
        Ok(WriteOutcome::new(
            format!("已解决冲突 (conflict resolved): keep {}{id}", keep.word()),
            commit.as_ref(),
        ))
    }

    fn forget_expiry(&self, root: &Path) {
        self.expiry_cache.lock().unwrap_or_else(|p| p.into_inner()).remove(root);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_are_validated() {
        assert!(check_category("preferences").is_ok());
        assert!(check_category("用户画像").is_ok());
        for bad in ["", "../role", "/etc/x", "a/b", "_index", "x-archive", ".hidden", "a`b", "a.md"] {
            assert!(check_category(bad).is_err(), "{bad}");
        }
        for reserved in ["CON", "nul", "x:stream", "com1", "a."] {
            assert!(check_category(reserved).is_ok(), "an existing category stays usable: {reserved}");
            assert!(check_new_category(reserved).is_err(), "{reserved}");
        }
        assert!(check_new_category("console").is_ok());
    }

    #[test]
    fn tags_are_deduplicated_and_checked() {
        assert_eq!(
            check_tags(&["a".into(), " a ".into(), "b".into()]).ok(),
            Some(vec!["a".into(), "b".into()])
        );
        assert!(check_tags(&["a,b".into()]).is_err());
    }

    #[test]
    fn expiry_must_be_a_real_date() {
        assert!(check_expires(Some("2026-02-30")).is_err());
        assert!(check_expires(Some("2026-6-1")).is_err());
        assert_eq!(check_expires(Some("2026-12-31")).ok().flatten().as_deref(), Some("2026-12-31"));
    }
}
