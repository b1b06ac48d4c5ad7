//! Reading a pack's history: commits, their trailers and the files they changed.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};

use std::path::Path;

use git2::{Delta, Diff, DiffOptions, Oid, Repository};

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

/// The `Key: value` trailers of a message: its last paragraph (not the subject), when every
/// line of it is one.
pub(super) fn parse_trailers(message: &str) -> Vec<(String, String)> {
    let Some((_, last_para)) = message.trim_end().rsplit_once("\n\n") else { return Vec::new() };
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

/// A walk of history, newest commit time first, reading each commit only when it is reached:
/// what `git log` does by default. A commit comes after all of its children that the walk has
/// reached (a parent is queued only when its child is taken). libgit2's sorted revwalk reads
/// the whole history before it answers the first commit; this reads as many commits as it
/// answers, plus their parents.
struct TimeWalk<'r> {
    repo: &'r git2::Repository,
    /// Newest time first, then the one queued first.
    queue: BinaryHeap<(i64, Reverse<u64>, Oid)>,
    seen: HashSet<Oid>,
}

impl<'r> TimeWalk<'r> {
    fn new(repo: &'r git2::Repository) -> Self {
        Self { repo, queue: BinaryHeap::new(), seen: HashSet::new() }
    }

    fn push(&mut self, commit: &git2::Commit<'r>) {
        if self.seen.insert(commit.id()) {
            let order = Reverse(self.seen.len() as u64);
            self.queue.push((commit.time().seconds(), order, commit.id()));
        }
    }

    /// The next commit, its parents not queued.
    fn pop(&mut self) -> std::result::Result<Option<git2::Commit<'r>>, git2::Error> {
        let Some((_, _, id)) = self.queue.pop() else { return Ok(None) };
        reread(|| self.repo.find_commit(id)).map(Some)
    }

    fn push_parents(&mut self, commit: &git2::Commit<'r>) -> std::result::Result<(), git2::Error> {
        for id in commit.parent_ids() {
            if !self.seen.contains(&id) {
                self.push(&reread(|| self.repo.find_commit(id))?);
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
        let mut walk = TimeWalk::new(&self.repo);
        walk.push(&start);
        let mut skipped = 0;
        while let Some(commit) = walk.pop().map_err(|e| git_err("walking history", dir, e))? {
            walk.push_parents(&commit).map_err(|e| git_err("walking history", dir, e))?;
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
            page.commits.push(self.info_of(&commit, query.with_files)?);
        }
        Ok(page)
    }

    /// Walks history from HEAD (or on from where a walk stopped), newest first, and calls
    /// `visit` with every commit that `seen` does not claim, with the files it changed under
    /// `under` (a directory) that `keep` accepts, texts read. The parents of a seen commit are
    /// not walked: a caller that remembers what it saw reads only the commits made since.
    /// With `until`, the walk stops once that time has passed (after at least one commit) and
    /// answers the commits still queued in [`UnseenWalk::rest`], to walk on from later.
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
        let mut walk = TimeWalk::new(&self.repo);
        match from {
            WalkFrom::Head => {
                let Some(start) = self.head_commit()? else { return Ok(out) };
                out.head = Some(start.id().to_string());
                walk.push(&start);
            }
            WalkFrom::Rest(ids) => {
                for id in ids {
                    let commit = Oid::from_str(id).and_then(|oid| reread(|| self.repo.find_commit(oid)));
                    walk.push(&commit.map_err(|e| git_err("walking history", dir, e))?);
                }
            }
        }
        while let Some(commit) = walk.pop().map_err(|e| git_err("walking history", dir, e))? {
            let id = commit.id().to_string();
            if seen(&id) {
                out.boundary.push(id);
                continue;
            }
            walk.push_parents(&commit).map_err(|e| git_err("walking history", dir, e))?;
            let mut info = self.info_of(&commit, false)?;
            info.files = changed_files(&self.repo, dir, &commit, true, Some(under), keep)?;
            visit(info);
            if until.is_some_and(|t| std::time::Instant::now() >= t) {
                out.rest = walk.queue.iter().map(|(_, _, id)| id.to_string()).collect();
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
            files: if with_files { self.changed_files(commit, true)? } else { Vec::new() },
        })
    }

    fn changed_files(&self, commit: &git2::Commit<'_>, with_text: bool) -> Result<Vec<FileChange>> {
        changed_files(&self.repo, &self.dir, commit, with_text, None, &|_| true)
    }
}

/// The files `commit` changed against its first parent, under directory `under` when given
/// and accepted by `keep`, with their texts when `with_text`.
pub(super) fn changed_files(
    repo: &Repository,
    dir: &Path,
    commit: &git2::Commit<'_>,
    with_text: bool,
    under: Option<&str>,
    keep: &dyn Fn(&str) -> bool,
) -> Result<Vec<FileChange>> {
    let mut opts = DiffOptions::new();
    if let Some(under) = under {
        // A plain pathspec matches the directory and everything under it.
        opts.pathspec(under.trim_end_matches('/'));
    }
    let diff = diff_commits(repo, dir, commit.parent_id(0).ok(), commit.id(), Some(&mut opts))?;
    let text = |id: Oid, present: bool| -> Option<String> {
        let blob = (with_text && present).then(|| reread(|| repo.find_blob(id)).ok()).flatten()?;
        (!blob.is_binary()).then(|| String::from_utf8_lossy(blob.content()).into_owned())
    };
    let mut out = Vec::new();
    for delta in diff.deltas() {
        let file = delta.new_file().path().or_else(|| delta.old_file().path());
        let path = file.map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
        if keep(&path) {
            let status = delta.status();
            let (old, new) = (delta.old_file().id(), delta.new_file().id());
            out.push(FileChange {
                path,
                old: text(old, status != Delta::Added),
                new: text(new, status != Delta::Deleted),
            });
        }
    }
    Ok(out)
}

/// The diff from commit `old`'s tree (the empty tree for `None`) to commit `new`'s.
pub(super) fn diff_commits<'r>(
    repo: &'r Repository,
    dir: &Path,
    old: Option<Oid>,
    new: Oid,
    opts: Option<&mut DiffOptions>,
) -> Result<Diff<'r>> {
    let tree = |id: Oid| reread(|| repo.find_commit(id)).and_then(|c| c.tree());
    let old = old.map(tree).transpose().map_err(|e| git_err("reading a tree", dir, e))?;
    let new = tree(new).map_err(|e| git_err("reading a tree", dir, e))?;
    repo.diff_tree_to_tree(old.as_ref(), Some(&new), opts).map_err(|e| git_err("comparing trees", dir, e))
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
