//! Reading a code workspace's git history (commits, authors, files, subjects)
//! for the workspace toolset. Read-only: nothing here writes to the workspace.

use std::path::{Path, PathBuf};

use git2::{DiffOptions, Repository, Sort};

use crate::store::{Result, StoreError, git_err};

/// Most commits one history read returns (the newest are kept).
pub const MAX_HISTORY_COMMITS: usize = 500;
/// Most file paths recorded per commit.
pub const MAX_FILES_PER_COMMIT: usize = 50;

/// One commit of a workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceCommit {
    /// Full id.
    pub id: String,
    /// Author name.
    pub author: String,
    /// Author e-mail.
    pub email: String,
    /// Commit time (seconds since the epoch).
    pub time: i64,
    /// First line of the message.
    pub subject: String,
    /// Paths changed against the first parent (at most [`MAX_FILES_PER_COMMIT`]).
    pub files: Vec<String>,
    /// How many paths changed in all.
    pub files_changed: usize,
}

/// The commits of a workspace in a time range, newest first.
#[derive(Debug, Clone)]
pub struct WorkspaceHistory {
    /// The repository's working directory (or git dir for a bare repository).
    pub root: PathBuf,
    /// The branch HEAD points at, if any.
    pub branch: Option<String>,
    /// Commits with `since <= time < until`, newest first.
    pub commits: Vec<WorkspaceCommit>,
    /// True when more commits matched than [`MAX_HISTORY_COMMITS`].
    pub truncated: bool,
}

/// Reads the commits reachable from HEAD of the repository containing `dir`
/// whose commit time is in `[since, until)`.
pub fn read_workspace_history(dir: &Path, since: i64, until: i64) -> Result<WorkspaceHistory> {
    let repo =
        Repository::discover(dir).map_err(|source| StoreError::Open { dir: dir.to_owned(), source })?;
    let root = repo.workdir().unwrap_or_else(|| repo.path()).to_owned();
    let head = match repo.head() {
        Ok(h) => h,
        Err(e) if matches!(e.code(), git2::ErrorCode::UnbornBranch | git2::ErrorCode::NotFound) => {
            return Ok(WorkspaceHistory { root, branch: None, commits: Vec::new(), truncated: false });
        }
        Err(e) => return Err(git_err("reading HEAD", dir, e)),
    };
    let branch = head.shorthand().ok().map(str::to_owned);
    let mut walk = repo.revwalk().map_err(|e| git_err("walking history", dir, e))?;
    walk.set_sorting(Sort::TIME).map_err(|e| git_err("walking history", dir, e))?;
    walk.push_head().map_err(|e| git_err("walking history", dir, e))?;
    let mut commits = Vec::new();
    let mut truncated = false;
    // Commit times are not monotonic (rebases, clock skew): tolerate a few old ones before stopping.
    let mut older_in_a_row = 0;
    for oid in walk {
        let oid = oid.map_err(|e| git_err("walking history", dir, e))?;
        let commit = repo.find_commit(oid).map_err(|e| git_err("reading a commit", dir, e))?;
        let time = commit.time().seconds();
        if time < since {
            older_in_a_row += 1;
            if older_in_a_row > 50 {
                break;
            }
            continue;
        }
        older_in_a_row = 0;
        if time >= until {
            continue;
        }
        if commits.len() == MAX_HISTORY_COMMITS {
            truncated = true;
            break;
        }
        let tree = commit.tree().map_err(|e| git_err("reading a tree", dir, e))?;
        let parent_tree = match commit.parent(0) {
            Ok(p) => Some(p.tree().map_err(|e| git_err("reading a tree", dir, e))?),
            Err(_) => None,
        };
        let mut opts = DiffOptions::new();
        opts.skip_binary_check(true);
        let diff = repo
            .diff_tree_to_tree(parent_tree.as_ref(), Some(&tree), Some(&mut opts))
            .map_err(|e| git_err("diffing a commit", dir, e))?;
        let files_changed = diff.deltas().len();
        let files = diff
            .deltas()
            .filter_map(|d| {
                d.new_file().path().or_else(|| d.old_file().path()).map(|p| p.to_string_lossy().into_owned())
            })
            .take(MAX_FILES_PER_COMMIT)
            .collect();
        let author = commit.author();
        commits.push(WorkspaceCommit {
            id: oid.to_string(),
            author: String::from_utf8_lossy(author.name_bytes()).into_owned(),
            email: String::from_utf8_lossy(author.email_bytes()).into_owned(),
            time,
            subject: String::from_utf8_lossy(commit.summary_bytes().unwrap_or_default()).into_owned(),
            files,
            files_changed,
        });
    }
    Ok(WorkspaceHistory { root, branch, commits, truncated })
}
