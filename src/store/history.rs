//! Reading a pack's history: commits, their trailers and the files they changed.

use git2::{Delta, DiffOptions, Oid, Sort};

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

impl PackRepo {
    /// Walks history from HEAD, newest first.
    pub fn log(&self, query: &LogQuery) -> Result<Vec<CommitInfo>> {
        let dir = &self.dir;
        let mut out = Vec::new();
        if self.head_commit()?.is_none() {
            return Ok(out);
        }
        let mut walk = self.repo.revwalk().map_err(|e| git_err("walking history", dir, e))?;
        walk.set_sorting(Sort::TOPOLOGICAL | Sort::TIME).map_err(|e| git_err("walking history", dir, e))?;
        walk.push_head().map_err(|e| git_err("walking history", dir, e))?;
        for id in walk {
            let id = id.map_err(|e| git_err("walking history", dir, e))?;
            let commit = self.repo.find_commit(id).map_err(|e| git_err("reading a commit", dir, e))?;
            let time = commit.time().seconds();
            if query.since.is_some_and(|s| time < s) {
                break;
            }
            let needs_diff = query.with_files || query.path.is_some();
            let files = if needs_diff { self.changed_files(&commit, query.with_files)? } else { Vec::new() };
            if let Some(p) = &query.path {
                let prefix = format!("{}/", p.trim_end_matches('/'));
                if !files.iter().any(|f| &f.path == p || f.path.starts_with(&prefix)) {
                    continue;
                }
            }
            let message = String::from_utf8_lossy(commit.message_bytes()).into_owned();
            out.push(CommitInfo {
                id: id.to_string(),
                time,
                subject: message.lines().next().unwrap_or("").to_owned(),
                trailers: parse_trailers(&message),
                message,
                parents: commit.parent_count(),
                files: if query.with_files { files } else { Vec::new() },
            });
            if query.limit.is_some_and(|l| out.len() >= l) {
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
        let dir = &self.dir;
        let new_tree = commit.tree().map_err(|e| git_err("reading a tree", dir, e))?;
        let old_tree = match commit.parent(0) {
            Ok(p) => Some(p.tree().map_err(|e| git_err("reading a tree", dir, e))?),
            Err(_) => None,
        };
        let mut opts = DiffOptions::new();
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
            let text = |id: Oid, present: bool| -> Option<String> {
                if !with_text || !present {
                    return None;
                }
                let blob = self.repo.find_blob(id).ok()?;
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

impl super::Snapshot<'_> {
    /// The short id of the newest commit at or after `since` (seconds) whose
    /// trailer `key` has `value`, walking back from this snapshot's HEAD (at
    /// most [`super::recent::MAX_DEDUP_WALK`] commits; the walk is cached on the
    /// repository handle, so a check after one new commit reads one commit).
    pub fn recent_commit_with_trailer(&self, key: &str, value: &str, since: i64) -> Result<Option<String>> {
        let Some(head) = self.head else { return Ok(None) };
        super::recent::find_trailer(self.repo, self.dir, self.recent, head, key, value, since)
    }
}

#[cfg(test)]
mod tests {
    use super::parse_trailers;

    #[test]
    fn trailers_are_the_last_paragraph() {
        let t = parse_trailers("capture: x\n\nbody\n\nEngram-Tool: capture_memory\nEngram-Client: cli\n");
        assert_eq!(t.len(), 2);
        assert_eq!(t[1], ("Engram-Client".into(), "cli".into()));
        assert!(parse_trailers("subject only\n").is_empty());
    }
}
