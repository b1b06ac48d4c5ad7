//! Which commits touched a memory entry, without reading the whole history again: an index
//! from entries (category and time) to the commits that added or removed their blocks or
//! index lines, read once per commit and extended with only the commits made since it last
//! looked (by anyone: another process, a sync, a person's `git commit`). When HEAD no longer
//! descends from the commit it last saw (a reset, a purge), it starts over.
//!
//! A commit's changes are read as [`describe_commit`](super::history::describe_commit) reads
//! them: the entry blocks of the category files (heads and rolled segments together, so a
//! block moved by a roll is no change) and the lines of the full index, each side as a
//! multiset. A memory's commits are those that added or removed its block or its index line,
//! followed back through corrections (a commit that adds the memory's block and removes
//! another of the same category and time made it from that one).
//!
//! The index is kept in `.git/engram-entry-history` (batches appended as they are read; a
//! file that does not parse, or a history that no longer contains its HEAD, is rebuilt), so
//! only the first look at a pack ever reads its whole history.

use std::collections::{HashMap, HashSet};

use super::history::{category_of, is_index_file};
use crate::memlog::HOT_INDEX;
use crate::memory::{is_entry_line, parse_blocks, parse_index_line};
use crate::ops::{Engram, MemoryItem, Result};
use crate::store::{CommitInfo, WalkFrom};

/// One change of one commit to one entry.
#[derive(Debug, Clone, Copy)]
struct Change {
    /// The commit (index into [`EntryHistory::commits`]).
    commit: u32,
    /// Added (else removed).
    added: bool,
    /// An index line (else a block).
    line: bool,
    /// The hash of what the block or line says (see [`block_key`], [`line_key`]).
    key: u64,
}

/// The entry → commits index of one pack (see the module doc).
#[derive(Debug, Default)]
pub struct EntryHistory {
    /// The HEAD it was brought up to.
    head: Option<String>,
    /// Commit ids, in the order they were read; `order[i]` ranks commit `i` (higher: newer).
    commits: Vec<String>,
    order: Vec<u64>,
    /// The rank the next batch starts from.
    next_order: u64,
    known: HashSet<String>,
    /// (category, time) → changes.
    by_entry: HashMap<(String, String), Vec<Change>>,
    /// The file in `.git/` has been read.
    loaded: bool,
    /// A walk left unfinished by a bounded step.
    walking: Option<Walking>,
}

/// A walk of the history that a bounded step left unfinished (see [`EntryHistory::step`]).
#[derive(Debug, Default)]
struct Walking {
    /// HEAD when it started.
    head: Option<String>,
    /// The commits still queued: the next step walks on from them.
    rest: Vec<String>,
    /// The commits read so far, newest first, with their changes.
    commits: Vec<(String, Vec<EntryChange>)>,
    /// Their ids.
    read: HashSet<String>,
    /// The commits reached that were known before (see [`crate::store::UnseenWalk`]).
    boundary: Vec<String>,
}

/// One entry change of a commit: ((category, time), added, an index line, key).
type EntryChange = ((String, String), bool, bool, u64);

/// The key of a block: its content and the meta that is not its time.
fn block_key(content: &str, memory_type: &str, tags: &[String], expires: Option<&str>) -> u64 {
    crate::graph::fnv1a64_parts(&["b", content, memory_type, &tags.join(","), expires.unwrap_or("")])
}

/// The key of an index line: its summary and the fields that are not its category and time.
fn line_key(summary: &str, memory_type: &str, tags: &[String], expires: Option<&str>) -> u64 {
    crate::graph::fnv1a64_parts(&["l", summary, memory_type, &tags.join(","), expires.unwrap_or("")])
}

/// True for the files whose changes name entries: category files and the full index.
fn names_entries(path: &str) -> bool {
    path != HOT_INDEX && (is_index_file(path) || super::history::is_memory_managed(path))
}

/// Net added (+1 each) and removed (−1 each) items of a multiset given as old and new items.
fn net<'a>(old: impl Iterator<Item = &'a str>, new: impl Iterator<Item = &'a str>) -> Vec<(&'a str, i64)> {
    let mut counts: HashMap<&str, i64> = HashMap::new();
    for o in old {
        *counts.entry(o).or_default() -= 1;
    }
    for n in new {
        *counts.entry(n).or_default() += 1;
    }
    counts.into_iter().filter(|(_, n)| *n != 0).collect()
}

/// The entry changes of one commit.
fn changes_of(c: &CommitInfo) -> Vec<EntryChange> {
    let mut out = Vec::new();
    let (mut old_lines, mut new_lines) = (Vec::new(), Vec::new());
    let mut old_blocks = Vec::new();
    let mut new_blocks = Vec::new();
    for f in &c.files {
        let (old, new) = (f.old.as_deref().unwrap_or(""), f.new.as_deref().unwrap_or(""));
        if is_index_file(&f.path) {
            old_lines.extend(old.lines().filter(|l| is_entry_line(l)));
            new_lines.extend(new.lines().filter(|l| is_entry_line(l)));
        } else if let Some(category) = category_of(&f.path).filter(|_| names_entries(&f.path)) {
            old_blocks.extend(parse_blocks(old).into_iter().map(|b| (category, b)));
            new_blocks.extend(parse_blocks(new).into_iter().map(|b| (category, b)));
        }
    }
    for (line, n) in net(old_lines.into_iter(), new_lines.into_iter()) {
        let Some(e) = parse_index_line(line) else { continue };
        let key = line_key(&e.summary, &e.memory_type, &e.tags, e.expires.as_deref());
        for _ in 0..n.unsigned_abs() {
            out.push(((e.category.clone(), e.ts.clone()), n > 0, true, key));
        }
    }
    // Blocks are compared by category and text (a roll moves a block between files).
    let text_of = |(c, b): &(&str, crate::memory::Block)| format!("{c}\u{0}{}", b.text);
    let old_keys: Vec<String> = old_blocks.iter().map(text_of).collect();
    let new_keys: Vec<String> = new_blocks.iter().map(text_of).collect();
    let mut meta_of: HashMap<&str, &(&str, crate::memory::Block)> = HashMap::new();
    for (k, b) in old_keys.iter().zip(&old_blocks).chain(new_keys.iter().zip(&new_blocks)) {
        meta_of.insert(k.as_str(), b);
    }
    for (k, n) in net(old_keys.iter().map(String::as_str), new_keys.iter().map(String::as_str)) {
        let Some((category, block)) = meta_of.get(k) else { continue };
        let Some(m) = &block.meta else { continue };
        let key = block_key(block.content(), &m.memory_type, &m.tags, m.expires.as_deref());
        for _ in 0..n.unsigned_abs() {
            out.push((((*category).to_owned(), m.ts.clone()), n > 0, false, key));
        }
    }
    out
}

/// The file the index is kept in between launches, under `.git/`.
const CACHE_FILE: &str = "entry-history";
/// Its first line.
const CACHE_HEADER: &str = "engram entry-history 1";

/// One batch of the walk: HEAD then, and each new commit (newest first) with its changes.
type Batch = (Option<String>, Vec<(String, Vec<EntryChange>)>);

/// A batch as lines of the cache file.
fn render_batch((head, commits): &Batch) -> String {
    let mut out = format!("B {}\n", head.as_deref().unwrap_or("-"));
    for (id, changes) in commits {
        out.push_str(&format!("C {id}\n"));
        for ((category, ts), added, line, key) in changes {
            let (a, l) = (if *added { 'a' } else { 'r' }, if *line { 'l' } else { 'b' });
            out.push_str(&format!("{a}{l} {key:016x} {ts}\t{category}\n"));
        }
    }
    out
}

/// The batches of a cache file; `None` when it is not one (then it is rebuilt).
fn parse_batches(text: &str) -> Option<Vec<Batch>> {
    let mut lines = text.lines();
    if lines.next()? != CACHE_HEADER {
        return None;
    }
    let mut batches: Vec<Batch> = Vec::new();
    for line in lines {
        let (tag, rest) = line.split_once(' ')?;
        match tag {
            "B" => batches.push(((rest != "-").then(|| rest.to_owned()), Vec::new())),
            "C" => batches.last_mut()?.1.push((rest.to_owned(), Vec::new())),
            _ => {
                let (added, line) = match tag {
                    "ab" => (true, false),
                    "rb" => (false, false),
                    "al" => (true, true),
                    "rl" => (false, true),
                    _ => return None,
                };
                let (key, entry) = rest.split_once(' ')?;
                let (ts, category) = entry.split_once('\t')?;
                let key = u64::from_str_radix(key, 16).ok()?;
                let change = ((category.to_owned(), ts.to_owned()), added, line, key);
                batches.last_mut()?.1.last_mut()?.1.push(change);
            }
        }
    }
    Some(batches)
}

impl EntryHistory {
    /// Reads the commits made since it last looked (all of them the first time, or when HEAD
    /// no longer descends from the commit it saw last), in one go.
    fn catch_up(&mut self, repo: &crate::store::PackRepo) -> Result<()> {
        while !self.step(repo, None)? {}
        Ok(())
    }

    /// Reads on towards HEAD until `until` when given (at least one commit), else to the end:
    /// `Ok(true)` when the index is up to HEAD. A walk left unfinished is taken up by the next
    /// step (of any caller), so a long first read holds the repository handle only a bounded
    /// time at once. The index is kept in `.git/` between launches: the first step of a
    /// process reads it, then only the newer commits.
    fn step(&mut self, repo: &crate::store::PackRepo, until: Option<std::time::Instant>) -> Result<bool> {
        let file = repo.cache_file(CACHE_FILE);
        self.load(&file);
        // A failed step drops its walk: the next one starts again from HEAD.
        let (mut w, resumed) = match self.walking.take() {
            Some(w) => (w, true),
            None => (Walking::default(), false),
        };
        let rest = std::mem::take(&mut w.rest);
        let from = if resumed { WalkFrom::Rest(&rest) } else { WalkFrom::Head };
        let mut new: Vec<(String, Vec<EntryChange>)> = Vec::new();
        let (known, read) = (&self.known, &w.read);
        let seen = |id: &str| known.contains(id) || read.contains(id);
        let walk = repo.walk_unseen(from, until, &seen, "memory", &names_entries, &mut |c| {
            new.push((c.id.clone(), changes_of(&c)));
        })?;
        if !resumed {
            w.head = walk.head;
        }
        w.read.extend(new.iter().map(|(id, _)| id.clone()));
        w.commits.extend(new);
        w.boundary.extend(walk.boundary);
        w.rest = walk.rest;
        if !w.rest.is_empty() {
            self.walking = Some(w);
            return Ok(false);
        }
        let descends = match &self.head {
            None => true,
            Some(old) => w.head.as_ref() == Some(old) || w.boundary.contains(old),
        };
        if !descends {
            // Start over from nothing: the file is written anew.
            *self = Self { loaded: true, ..Self::default() };
            return Ok(false);
        }
        if w.commits.is_empty() && self.head == w.head {
            return Ok(!resumed);
        }
        let batch = (w.head, w.commits);
        self.save(&file, &batch);
        self.apply(batch);
        // A resumed walk ends at the HEAD it started from: the next step looks at HEAD now.
        Ok(!resumed)
    }

    /// Reads the kept file `file`, the first time only (a missing or damaged file is as none).
    fn load(&mut self, file: &std::path::Path) {
        if self.loaded {
            return;
        }
        self.loaded = true;
        let kept = std::fs::read_to_string(file).ok().and_then(|t| parse_batches(&t));
        for batch in kept.unwrap_or_default() {
            self.apply(batch);
        }
    }

    /// Appends a batch to the file (a new file gets the header). A failure only costs the next
    /// launch a longer first look.
    fn save(&self, file: &std::path::Path, batch: &Batch) {
        use std::io::Write as _;
        let mut text = String::new();
        if self.commits.is_empty() || !file.exists() {
            let _ = std::fs::remove_file(file);
            text.push_str(CACHE_HEADER);
            text.push('\n');
        }
        text.push_str(&render_batch(batch));
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(file)
            .and_then(|mut f| f.write_all(text.as_bytes()));
        if appended.is_err() {
            let _ = std::fs::remove_file(file);
        }
    }

    /// Adds a batch: its commits ranked newest first, after every commit known before.
    fn apply(&mut self, (head, commits): Batch) {
        let base = self.next_order;
        let n = commits.len() as u64;
        self.next_order += n;
        for (i, (id, changes)) in commits.into_iter().enumerate() {
            let commit = u32::try_from(self.commits.len()).unwrap_or(u32::MAX);
            self.commits.push(id.clone());
            self.order.push(base + n - 1 - i as u64);
            self.known.insert(id);
            for (entry, added, line, key) in changes {
                self.by_entry.entry(entry).or_default().push(Change { commit, added, line, key });
            }
        }
        self.head = head;
    }

    /// The ids of the commits that touched `m`, newest first.
    fn commits_of(&self, m: &MemoryItem) -> Vec<String> {
        let Some(changes) = self.by_entry.get(&(m.category.clone(), m.ts.clone())) else {
            return Vec::new();
        };
        let mut by_commit: HashMap<u32, Vec<Change>> = HashMap::new();
        for c in changes {
            by_commit.entry(c.commit).or_default().push(*c);
        }
        let mut commits: Vec<u32> = by_commit.keys().copied().collect();
        commits.sort_by_key(|c| std::cmp::Reverse(self.order.get(*c as usize).copied().unwrap_or(0)));
        let tags = &m.tags;
        let mut blocks: HashSet<u64> =
            HashSet::from([block_key(&m.content, &m.memory_type, tags, m.expires.as_deref())]);
        let mut lines: HashSet<u64> =
            HashSet::from([line_key(&m.summary, &m.memory_type, tags, m.expires.as_deref())]);
        let mut out = Vec::new();
        for commit in commits {
            let changes = &by_commit[&commit];
            let mut touched = false;
            for (line, set) in [(false, &mut blocks), (true, &mut lines)] {
                let mine = |c: &&Change| c.line == line;
                touched |= changes.iter().filter(mine).any(|c| set.contains(&c.key));
                // A commit that made this version from another of the same category and time
                // (a correction, a revert of one): follow the one it removed.
                if changes.iter().filter(mine).any(|c| c.added && set.contains(&c.key)) {
                    set.extend(changes.iter().filter(mine).filter(|c| !c.added).map(|c| c.key));
                }
            }
            if touched && let Some(id) = self.commits.get(commit as usize) {
                out.push(id.clone());
            }
        }
        out
    }
}

impl Engram {
    /// The commits of pack `name` that added, corrected or removed memory `m`, newest first,
    /// with their files: `index` is brought up to HEAD first (reading only the commits made
    /// since it last looked), then only those commits are read.
    pub fn memory_commits(
        &self,
        name: &str,
        index: &mut EntryHistory,
        m: &MemoryItem,
        limit: usize,
    ) -> Result<Vec<CommitInfo>> {
        let pack = self.resolve(name)?;
        let commits = self.with_existing_repo(&pack.dir, |repo| {
            index.catch_up(repo)?;
            let ids = index.commits_of(m);
            let mut out = Vec::new();
            for id in ids.iter().take(limit) {
                out.push(repo.commit_info(id, true)?);
            }
            Ok(out)
        })?;
        Ok(commits.unwrap_or_default())
    }

    /// Brings `index` up to the pack's HEAD (after a write, so a later look reads nothing), in
    /// one go, or with `step` for about that long only: `Ok(true)` when it is up to HEAD, else
    /// call again (the repository handle is free in between, so pages are not held up).
    pub fn catch_up_entry_history(
        &self,
        name: &str,
        index: &mut EntryHistory,
        step: Option<std::time::Duration>,
    ) -> Result<bool> {
        let pack = self.resolve(name)?;
        if !index.loaded {
            // The kept index is read without the repository handle (it is the larger part of a
            // launch's first step): a list asked for meanwhile need not wait for it.
            let Some(file) = self.with_existing_repo(&pack.dir, |repo| Ok(repo.cache_file(CACHE_FILE)))?
            else {
                return Ok(true);
            };
            index.load(&file);
        }
        let until = step.map(|d| std::time::Instant::now() + d);
        let done = self.with_existing_repo(&pack.dir, |repo| match until {
            Some(t) => index.step(repo, Some(t)),
            None => index.catch_up(repo).map(|()| true),
        })?;
        Ok(done.unwrap_or(true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::FileChange;

    fn block(ts: &str, text: &str) -> String {
        format!("\n---\n[{ts}] type:fact\n{text}\n")
    }

    #[test]
    fn a_roll_is_no_change_and_a_correction_is_followed() {
        let (a, b, c) =
            (block("2026-01-01 10:00", "A"), block("2026-01-01 10:01", "B"), block("2026-01-01 10:02", "C"));
        // One commit appends C and rolls A from the head into a segment.
        let commit = CommitInfo {
            id: "1".repeat(40),
            time: 0,
            subject: String::new(),
            message: String::new(),
            trailers: Vec::new(),
            files: vec![
                FileChange {
                    path: "memory/c.md".into(),
                    old: Some(format!("{a}{b}")),
                    new: Some(format!("{b}{c}")),
                },
                FileChange { path: "memory/_log/c/000001.md".into(), old: None, new: Some(a.clone()) },
                FileChange { path: "memory/_index.md".into(), old: Some(a.clone()), new: Some(b.clone()) },
            ],
        };
        let changes = changes_of(&commit);
        assert_eq!(changes.len(), 1, "{changes:?}");
        assert_eq!(changes[0].0, ("c".to_owned(), "2026-01-01 10:02".to_owned()));
        assert!(changes[0].1 && !changes[0].2);

        // A correction of B (same category and time), then the current version's history.
        let b2 = block("2026-01-01 10:01", "B, corrected");
        let mut index = EntryHistory::default();
        for (n, files) in [
            vec![FileChange { path: "memory/c.md".into(), old: Some(String::new()), new: Some(b.clone()) }],
            vec![FileChange {
                path: "memory/c.md".into(),
                old: Some(b.clone()),
                new: Some(format!("{b}{c}")),
            }],
            vec![FileChange {
                path: "memory/c.md".into(),
                old: Some(format!("{b}{c}")),
                new: Some(format!("{b2}{c}")),
            }],
        ]
        .into_iter()
        .enumerate()
        {
            let c = CommitInfo { id: n.to_string(), files, ..commit.clone() };
            let commit_no = index.commits.len() as u32;
            index.commits.push(c.id.clone());
            index.order.push(n as u64);
            for (entry, added, line, key) in changes_of(&c) {
                index.by_entry.entry(entry).or_default().push(Change { commit: commit_no, added, line, key });
            }
        }
        let m = MemoryItem {
            id: String::new(),
            category: "c".into(),
            ts: "2026-01-01 10:01".into(),
            memory_type: "fact".into(),
            expires: None,
            tags: Vec::new(),
            summary: "b".into(),
            content: "B, corrected".into(),
        };
        assert_eq!(index.commits_of(&m), ["2", "0"], "the correction and the add, not C's commit");
    }

    #[test]
    fn a_history_read_in_steps_is_the_history_read_in_one_go() {
        use crate::ops::{Caller, CaptureRequest, Config, Engram};
        let tmp = tempfile::tempdir().expect("tempdir");
        let engram = Engram::new(Config::new(tmp.path().to_owned())).expect("engram");
        engram.init_engram("p", false, crate::lang::Lang::Zh).expect("init");
        let caller = Caller { tool: "capture_memory".into(), client: None };
        let capture = |i: usize| {
            let req = CaptureRequest {
                name: "p".into(),
                category: format!("c{}", i % 3),
                summary: format!("entry {i}"),
                content: format!("text number {i}"),
                ..CaptureRequest::default()
            };
            engram.capture_memory(&req, &caller).expect("capture");
        };
        (0..12).for_each(capture);
        let dir = engram.resolve("p").expect("pack").dir;
        let read = |index: &mut EntryHistory, until: Option<std::time::Instant>| -> bool {
            engram.with_existing_repo(&dir, |repo| index.step(repo, until)).expect("step").expect("repo")
        };
        // Steps whose time is up at once read one commit each; another commit lands midway.
        let mut stepped = EntryHistory::default();
        for _ in 0..3 {
            assert!(!read(&mut stepped, Some(std::time::Instant::now())), "one commit a step");
        }
        assert_eq!(stepped.walking.as_ref().map(|w| w.commits.len()), Some(3));
        assert!(stepped.commits.is_empty(), "nothing is applied before the walk ends");
        capture(12);
        let mut steps = 3;
        while !read(&mut stepped, Some(std::time::Instant::now())) {
            steps += 1;
            assert!(steps < 100, "the walk ends");
        }
        let file = engram.with_existing_repo(&dir, |repo| Ok(repo.cache_file(CACHE_FILE))).unwrap().unwrap();
        let kept = std::fs::read_to_string(&file).expect("kept");
        std::fs::remove_file(&file).expect("remove");
        let mut whole = EntryHistory::default();
        assert!(read(&mut whole, None));
        let set = |h: &EntryHistory| h.commits.iter().cloned().collect::<HashSet<String>>();
        assert_eq!(set(&stepped), set(&whole), "the same commits, the one made midway too");
        assert_eq!(stepped.head, whole.head);
        let mut reread = EntryHistory::default();
        std::fs::write(&file, kept).expect("restore");
        assert!(read(&mut reread, None));
        let items = engram.memory_items("p", None).expect("items").items();
        assert_eq!(items.len(), 13);
        for m in &items {
            let of = whole.commits_of(m);
            assert_eq!(of.len(), 1, "{m:?}");
            assert_eq!(stepped.commits_of(m), of, "{m:?}");
            assert_eq!(reread.commits_of(m), of, "{m:?}");
        }
    }

    #[test]
    fn batches_read_back_as_written() {
        let batch: Batch = (
            Some("h".repeat(40)),
            vec![
                ("a".repeat(40), vec![(("家庭".into(), "2026-01-01 10:00".into()), true, false, u64::MAX)]),
                ("b".repeat(40), vec![(("c".into(), "2026-01-01 10:01".into()), false, true, 7)]),
            ],
        );
        let text = format!("{CACHE_HEADER}\n{}{}", render_batch(&batch), render_batch(&(None, Vec::new())));
        let back = parse_batches(&text).expect("parses");
        assert_eq!(back.len(), 2);
        assert_eq!(back[0].0, batch.0);
        assert_eq!(back[0].1, batch.1);
        assert!(parse_batches("engram entry-history 0\n").is_none());
        assert!(parse_batches(&format!("{CACHE_HEADER}\nzz 1 2\n")).is_none());
    }
}
