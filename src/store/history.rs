//! Reading a pack's history: commits, their trailers and the files they changed.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};

use git2::{Delta, DiffOptions, Oid};

use super::beside_git::reread;
use super::{PackRepo, Result, git_err};

/// A file a commit changed, with its text before and after (when it is text).
#[derive(Debug, Clone)]
pub struct FileChange {
    /// Path in the pack.
    pub path: String,
    /// Text before the commit (`None` when added or binary).
    pub old: Option<String>,
    /// Text after the commit (`None` when deleted or binary).
    pub new: Option<String>,
}

/// One commit of a pack's history.
#[derive(Debug, Clone)]
pub struct CommitInfo {
    /// Full id.
    pub id: String,
    /// Seconds since the epoch (committer time).
    pub time: i64,
    /// First line of the message.
    pub subject: String,
    /// The whole message.
    pub message: String,
    /// `Key: value` trailers of the message.
    pub trailers: Vec<(String, String)>,
    /// Number of parents.
    pub parents: usize,
    /// Changed files (filled only when asked for).
    pub files: Vec<FileChange>,
}

impl CommitInfo {
    /// The value of a trailer, if present.
    pub fn trailer(&self, key: &str) -> Option<&str> {
        self.trailers.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v.as_str())
    }

    /// The 7-hex short id.
    pub fn short(&self) -> &str {
        self.id.get(..7).unwrap_or(&self.id)
    }
}

/// Which commits to return.
#[derive(Debug, Clone, Default)]
pub struct LogQuery {
    /// At most this many commits (newest first).
    pub limit: Option<usize>,
    /// Only commits at or after this time (seconds since the epoch); the walk stops at the first older one.
    pub since: Option<i64>,
    /// Only commits that touch this path (a file or a directory prefix).
    pub path: Option<String>,
    /// Fill `files` with before/after texts.
    pub with_files: bool,
}

pub(super) fn parse_trailers(message: &str) -> Vec<(String, String)> {
    if !message.trim_end().contains("\n\n") {
        return Vec::new();
    }
    let Some(last_para) = message.trim_end().rsplit("\n\n").next() else { return Vec::new() };
    let mut out = Vec::new();
    for line in last_para.lines() {
        match line.split_once(": ") {
            Some((k, v)) if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') => {
                out.push((k.to_owned(), v.to_owned()));
            }
            _ => return Vec::new(),
        }
    }
    out
}

/// A walk of history from one commit, newest commit time first, reading each commit only when
/// it is reached: what `git log` does by default. A commit comes after all of its children that
/// the walk has reached (a parent is queued only when its child is taken). libgit2's sorted
/// revwalk reads the whole history before it answers the first commit; this reads as many
/// commits as it answers, plus their parents.
struct TimeWalk<'r> {
    repo: &'r git2::Repository,
    queue: BinaryHeap<Queued<'r>>,
    seen: HashSet<Oid>,
    pushed: u64,
}

/// A commit waiting in a [`TimeWalk`]: newest time first, then the one queued first.
struct Queued<'r> {
    time: i64,
    order: Reverse<u64>,
    commit: git2::Commit<'r>,
}

impl PartialEq for Queued<'_> {
    fn eq(&self, other: &Self) -> bool {
        (self.time, self.order) == (other.time, other.order)
    }
}
impl Eq for Queued<'_> {}
impl PartialOrd for Queued<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Queued<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.time, self.order).cmp(&(other.time, other.order))
    }
}

impl<'r> TimeWalk<'r> {
    fn new(repo: &'r git2::Repository, start: git2::Commit<'r>) -> Self {
        let mut walk = Self::empty(repo);
        walk.push(start);
        walk
    }

    fn empty(repo: &'r git2::Repository) -> Self {
        Self { repo, queue: BinaryHeap::new(), seen: HashSet::new(), pushed: 0 }
    }

    fn push(&mut self, commit: git2::Commit<'r>) {
        if self.seen.insert(commit.id()) {
            self.pushed += 1;
            let time = commit.time().seconds();
            self.queue.push(Queued { time, order: Reverse(self.pushed), commit });
        }
    }

    /// The next commit, its parents queued.
    fn next_commit(&mut self) -> std::result::Result<Option<git2::Commit<'r>>, git2::Error> {
        let Some(commit) = self.pop() else { return Ok(None) };
        self.push_parents(&commit)?;
        Ok(Some(commit))
    }

    /// The next commit, its parents not queued.
    fn pop(&mut self) -> Option<git2::Commit<'r>> {
        self.queue.pop().map(|q| q.commit)
    }

    fn push_parents(&mut self, commit: &git2::Commit<'r>) -> std::result::Result<(), git2::Error> {
        for id in commit.parent_ids() {
            if !self.seen.contains(&id) {
                let parent = reread(|| self.repo.find_commit(id))?;
                self.push(parent);
            }
        }
        Ok(())
    }
}

/// Where [`PackRepo::walk_unseen`] stopped.
#[derive(Debug, Clone, Default)]
pub struct UnseenWalk {
    /// The commit walked from (HEAD; `None`: no commit yet, or a walk resumed from `rest`).
    pub head: Option<String>,
    /// The commits reached that the caller had seen (their parents were not walked).
    pub boundary: Vec<String>,
    /// The commits still queued when the time ran out (empty: the walk is complete); walking
    /// on from them (`WalkFrom::Rest`) reads the rest of the history, newest first.
    pub rest: Vec<String>,
}

/// Where [`PackRepo::walk_unseen`] starts.
#[derive(Debug, Clone, Copy)]
pub enum WalkFrom<'a> {
    /// HEAD.
    Head,
    /// The commits a walk left queued ([`UnseenWalk::rest`]).
    Rest(&'a [String]),
}

/// One page of a pack's history (see [`PackRepo::log_page`]).
#[derive(Debug, Clone, Default)]
pub struct LogPage {
    /// The commits of the page, newest first.
    pub commits: Vec<CommitInfo>,
    /// True when at least one more commit passes the query after the page.
    pub more: bool,
}

impl PackRepo {
    /// Walks history from HEAD, newest first.
    pub fn log(&self, query: &LogQuery) -> Result<Vec<CommitInfo>> {
        Ok(self.log_page(query, 0)?.commits)
    }

    /// Walks history from HEAD, newest first, passing over the first `skip` commits that pass
    /// the query (read without their files unless the query has a path) and stopping after
    /// `query.limit`; reads one commit more to tell whether there are more.
    pub fn log_page(&self, query: &LogQuery, skip: usize) -> Result<LogPage> {
        let dir = &self.dir;
        let mut page = LogPage::default();
        let Some(start) = self.head_commit()? else { return Ok(page) };
        let mut walk = TimeWalk::new(&self.repo, start);
        let mut skipped = 0;
        while let Some(commit) = walk.next_commit().map_err(|e| git_err("walking history", dir, e))? {
            let time = commit.time().seconds();
            if query.since.is_some_and(|s| time < s) {
                break;
            }
            if let Some(p) = &query.path {
                let prefix = format!("{}/", p.trim_end_matches('/'));
                let touched = self.changed_files(&commit, false)?;
                if !touched.iter().any(|f| &f.path == p || f.path.starts_with(&prefix)) {
                    continue;
                }
            }
            if skipped < skip {
                skipped += 1;
                continue;
            }
            if query.limit.is_some_and(|l| page.commits.len() >= l) {
                page.more = true;
                break;
            }
            let files = if query.with_files { self.changed_files(&commit, true)? } else { Vec::new() };
            let message = String::from_utf8_lossy(commit.message_bytes()).into_owned();
            page.commits.push(CommitInfo {
                id: commit.id().to_string(),
                time,
                subject: message.lines().next().unwrap_or("").to_owned(),
                trailers: parse_trailers(&message),
                message,
                parents: commit.parent_count(),
                files,
            });
        }
        Ok(page)
    }

    /// Walks history from HEAD (or on from where a walk stopped), newest first, and calls
    /// `visit` with every commit that `seen` does not claim, with the files it changed under
    /// `under` (a directory) that `keep` accepts, texts read. The parents of a seen commit are
    /// not walked, so a caller that remembers what it saw reads only the commits made since,
    /// whoever made them. With `until`, the walk stops once that time has passed (after at least
    /// one commit) and answers the commits still queued in [`UnseenWalk::rest`]: a long walk is
    /// read in bounded steps, and the repository handle is free between them. Commits never
    /// change, so a walk resumed after another process moved HEAD reads the same history.
    pub fn walk_unseen(
        &self,
        from: WalkFrom<'_>,
        until: Option<std::time::Instant>,
        seen: &dyn Fn(&str) -> bool,
        under: &str,
        keep: &dyn Fn(&str) -> bool,
        visit: &mut dyn FnMut(CommitInfo),
    ) -> Result<UnseenWalk> {
        let dir = &self.dir;
        let mut out = UnseenWalk::default();
        let mut walk = TimeWalk::empty(&self.repo);
        match from {
            WalkFrom::Head => {
                let Some(start) = self.head_commit()? else { return Ok(out) };
                out.head = Some(start.id().to_string());
                walk.push(start);
            }
            WalkFrom::Rest(ids) => {
                for id in ids {
                    let oid = Oid::from_str(id).map_err(|e| git_err("walking history", dir, e))?;
                    let commit = reread(|| self.repo.find_commit(oid))
                        .map_err(|e| git_err("walking history", dir, e))?;
                    walk.push(commit);
                }
            }
        }
        while let Some(commit) = walk.pop() {
            let id = commit.id().to_string();
            if seen(&id) {
                out.boundary.push(id);
                continue;
            }
            walk.push_parents(&commit).map_err(|e| git_err("walking history", dir, e))?;
            let mut info = self.info_of(&commit, false)?;
            info.files = self.changed_files_where(&commit, true, Some(under), keep)?;
            visit(info);
            if until.is_some_and(|t| std::time::Instant::now() >= t) {
                out.rest = walk.queue.iter().map(|q| q.commit.id().to_string()).collect();
                break;
            }
        }
        Ok(out)
    }

    /// The details of one commit.
    pub(super) fn info_of(&self, commit: &git2::Commit<'_>, with_files: bool) -> Result<CommitInfo> {
        let message = String::from_utf8_lossy(commit.message_bytes()).into_owned();
        Ok(CommitInfo {
            id: commit.id().to_string(),
            time: commit.time().seconds(),
            subject: message.lines().next().unwrap_or("").to_owned(),
            trailers: parse_trailers(&message),
            message,
            parents: commit.parent_count(),
            files: if with_files { self.changed_files(commit, true)? } else { Vec::new() },
        })
    }

    fn changed_files(&self, commit: &git2::Commit<'_>, with_text: bool) -> Result<Vec<FileChange>> {
        self.changed_files_where(commit, with_text, None, &|_| true)
    }

    /// The files `commit` changed against its first parent, under directory `under` when given
    /// and accepted by `keep`, with their texts when `with_text`.
    fn changed_files_where(
        &self,
        commit: &git2::Commit<'_>,
        with_text: bool,
        under: Option<&str>,
        keep: &dyn Fn(&str) -> bool,
    ) -> Result<Vec<FileChange>> {
        let dir = &self.dir;
        let new_tree = commit.tree().map_err(|e| git_err("reading a tree", dir, e))?;
        let old_tree = match commit.parent(0) {
            Ok(p) => Some(p.tree().map_err(|e| git_err("reading a tree", dir, e))?),
            Err(_) => None,
        };
        let mut opts = DiffOptions::new();
        if let Some(under) = under {
            // A plain pathspec matches the directory and everything under it.
            opts.pathspec(under.trim_end_matches('/'));
        }
        let diff = self
            .repo
            .diff_tree_to_tree(old_tree.as_ref(), Some(&new_tree), Some(&mut opts))
            .map_err(|e| git_err("diffing a commit", dir, e))?;
        let mut out = Vec::new();
        for delta in diff.deltas() {
            let path = delta
                .new_file()
                .path()
                .or_else(|| delta.old_file().path())
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            if !keep(&path) {
                continue;
            }
            let text = |id: Oid, present: bool| -> Option<String> {
                if !with_text || !present {
                    return None;
                }
                let blob = reread(|| self.repo.find_blob(id)).ok()?;
                if blob.is_binary() {
                    return None;
                }
                Some(String::from_utf8_lossy(blob.content()).into_owned())
            };
            let status = delta.status();
            out.push(FileChange {
                path,
                old: text(delta.old_file().id(), status != Delta::Added),
                new: text(delta.new_file().id(), status != Delta::Deleted),
            });
        }
        Ok(out)
    }
}

/// How many commits the duplicate check walks back at most.
const MAX_DEDUP_WALK: usize = 200;

impl super::Snapshot<'_> {
    /// The short id of the newest commit at or after `since` (seconds) whose
    /// trailer `key` has `value`, walking back from this snapshot's HEAD along
    /// first parents (at most [`MAX_DEDUP_WALK`] commits). libgit2 keeps the
    /// commits it read in its object cache, so a check after one more write reads
    /// one commit from disk (a walk cached by engram measured no faster: BENCHMARKS.md).
    pub fn recent_commit_with_trailer(&self, key: &str, value: &str, since: i64) -> Result<Option<String>> {
        let mut next = self.head;
        for _ in 0..MAX_DEDUP_WALK {
            let Some(id) = next else { break };
            let commit =
                reread(|| self.repo.find_commit(id)).map_err(|e| git_err("reading a commit", self.dir, e))?;
            if commit.time().seconds() < since {
                break;
            }
            let trailers = parse_trailers(&String::from_utf8_lossy(commit.message_bytes()));
            if trailers.iter().any(|(k, v)| k == key && v == value) {
                return Ok(Some(super::short_id(&id.to_string())));
            }
            next = commit.parent_id(0).ok();
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::parse_trailers;
    use git2::{Oid, Repository};

    fn commit(repo: &Repository, parent: Option<Oid>, time: i64, dedup: &str) -> Oid {
        let sig = git2::Signature::new("t", "t@localhost", &git2::Time::new(time, 0)).expect("sig");
        let tree =
            repo.find_tree(repo.treebuilder(None).and_then(|b| b.write()).expect("tree")).expect("tree");
        let parents: Vec<git2::Commit<'_>> =
            parent.into_iter().map(|p| repo.find_commit(p).expect("p")).collect();
        let parents: Vec<&git2::Commit<'_>> = parents.iter().collect();
        let message = format!("capture\n\nEngram-Dedup: {dedup}\n");
        repo.commit(None, &sig, &sig, &message, &tree, &parents).expect("commit")
    }

    #[test]
    fn a_trailer_is_found_only_inside_the_window() {
        let tmp = tempfile::tempdir().expect("tmp");
        let repo = Repository::init(tmp.path()).expect("init");
        let a = commit(&repo, None, 1_000, "a");
        let b = commit(&repo, Some(a), 1_010, "b");
        let snap = super::super::Snapshot {
            repo: &repo,
            tree: None,
            head: Some(b),
            dir: tmp.path(),
            overlay: Default::default(),
        };
        let found = |value: &str, since: i64| snap.recent_commit_with_trailer("Engram-Dedup", value, since);
        assert_eq!(found("a", 990).expect("walk"), Some(a.to_string()[..7].to_owned()));
        assert_eq!(found("b", 990).expect("walk"), Some(b.to_string()[..7].to_owned()));
        assert_eq!(found("a", 1_005).expect("walk"), None, "older than the window");
        assert_eq!(found("c", 0).expect("walk"), None);
    }

    #[test]
    fn trailers_are_the_last_paragraph() {
        let t = parse_trailers("capture: x\n\nbody\n\nEngram-Tool: capture_memory\nEngram-Client: cli\n");
        assert_eq!(t.len(), 2);
        assert_eq!(t[1], ("Engram-Client".into(), "cli".into()));
        assert!(parse_trailers("subject only\n").is_empty());
    }
}
