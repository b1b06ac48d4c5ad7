//! `engram doctor`'s store-side checks: what is wrong with a pack's repository
//! and how to repair it. Read-only: nothing here changes the pack.
//!
//! Checked, in order (later checks are skipped when an earlier one makes them
//! meaningless): the repository opens; HEAD and the branch resolve to a
//! commit; every commit, tree and blob reachable from HEAD can be read; the
//! git index can be read; no tracked file was replaced by a directory (or
//! anything else that is not a file); an interrupted write is pending; hand
//! edits are waiting to be committed.

use std::fs;
use std::path::Path;

use git2::{ErrorCode, ObjectType, Oid, Repository, Status, StatusOptions};

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// The pack's tools fail until it is repaired.
    Error,
    /// Works, but something needs attention.
    Warning,
    /// For information; engram handles it by itself.
    Info,
}

impl Severity {
    /// `error`, `warning`, `info`.
    pub fn label(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warning => "warning",
            Self::Info => "info",
        }
    }
}

/// One problem found, with the way to repair it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// How bad it is.
    pub severity: Severity,
    /// What is wrong.
    pub problem: String,
    /// How to repair it (commands to run).
    pub repair: String,
}

fn finding(severity: Severity, problem: impl Into<String>, repair: impl Into<String>) -> Finding {
    Finding { severity, problem: problem.into(), repair: repair.into() }
}

/// Diagnoses the repository of a pack directory.
pub fn diagnose(dir: &Path) -> Vec<Finding> {
    // Writes trust objects they read (see `configure_libgit2`); a diagnosis re-hashes them.
    super::configure_libgit2();
    git2::opts::strict_hash_verification(true);
    let d = dir.display();
    let git = dir.join(".git");
    match fs::symlink_metadata(&git) {
        Err(_) => {
            return vec![finding(
                Severity::Info,
                "not a git repository yet",
                "nothing to do: the first write adopts the files as an `adopt:` commit",
            )];
        }
        Ok(m) if !m.is_dir() => {
            return vec![finding(
                Severity::Error,
                ".git is not a directory",
                format!(
                    "move {d}/.git aside; the next write re-adopts the files (history is lost unless you restore .git from a clone)"
                ),
            )];
        }
        Ok(_) => {}
    }
    let repo = match Repository::open(dir) {
        Ok(r) => r,
        Err(e) => {
            return vec![finding(
                Severity::Error,
                format!("the git repository cannot be opened: {}", e.message()),
                format!(
                    "restore {d}/.git from a clone or backup (`git clone <remote> … && mv …/.git {d}/.git`), or move .git aside to start a new history from the files"
                ),
            )];
        }
    };
    let mut out = Vec::new();
    let branch = repo
        .find_reference("HEAD")
        .ok()
        .and_then(|h| h.symbolic_target().ok().flatten().map(str::to_owned))
        .unwrap_or_else(|| "HEAD".to_owned());
    let head = match repo.head() {
        Ok(h) => match h.peel_to_commit() {
            Ok(c) => Some(c.id()),
            Err(e) => {
                out.push(broken_ref(&repo, dir, &branch, e.message()));
                return out;
            }
        },
        Err(e) if e.code() == ErrorCode::UnbornBranch => None,
        Err(e) => {
            out.push(broken_ref(&repo, dir, &branch, e.message()));
            return out;
        }
    };
    if let Some(head) = head
        && let Some(f) = missing_object(&repo, dir, head)
    {
        out.push(f);
        return out;
    }
    if let Err(e) = repo.index() {
        out.push(finding(
            Severity::Error,
            format!("the git index (.git/index) cannot be read: {}", e.message()),
            format!("rm {d}/.git/index && git -C {d} reset   (rebuilds the index from HEAD; the working tree is kept)"),
        ));
        return out;
    }
    out.extend(working_tree(&repo, dir));
    if super::recover::has_record(&dir.join(".git")) {
        out.push(finding(
            Severity::Info,
            "a write was interrupted (the process died after committing, before updating the working tree)",
            "nothing to do: the next write checks the committed files out first",
        ));
    }
    out
}

fn broken_ref(repo: &Repository, dir: &Path, branch: &str, why: &str) -> Finding {
    let d = dir.display();
    let last_good = repo.reflog(branch).ok().and_then(|log| {
        log.iter().map(|e| e.id_new()).find(|id| !id.is_zero() && repo.find_commit(*id).is_ok())
    });
    let repair = match last_good {
        Some(id) => format!(
            "the branch's reflog names a readable commit: git -C {d} update-ref {branch} {id}   (then `engram doctor` again)"
        ),
        None => format!(
            "point {branch} at a good commit: `git -C {d} log --all --oneline` or `git -C {d} fsck --lost-found` to find one, then `git -C {d} update-ref {branch} <commit>`"
        ),
    };
    finding(Severity::Error, format!("{branch} does not resolve to a commit: {why}"), repair)
}

/// The first commit, tree or blob reachable from `head` that cannot be read.
fn missing_object(repo: &Repository, dir: &Path, head: Oid) -> Option<Finding> {
    let d = dir.display();
    let bad = |what: &str, id: Oid, why: &str| {
        finding(
            Severity::Error,
            format!("{what} {id} is missing or corrupt: {why}"),
            format!(
                "fetch the objects back from a clone (`git -C {d} fetch <clone-or-remote>`) or restore .git from a backup; `git -C {d} fsck --full` lists every damaged object. The files in the working tree are intact and readable."
            ),
        )
    };
    let mut walk = match repo.revwalk() {
        Ok(w) => w,
        Err(e) => return Some(bad("history", head, e.message())),
    };
    if let Err(e) = walk.push(head) {
        return Some(bad("commit", head, e.message()));
    }
    let mut seen_trees = std::collections::HashSet::new();
    for id in walk {
        let id = match id {
            Ok(id) => id,
            Err(e) => return Some(bad("a commit of the history", head, e.message())),
        };
        let commit = match repo.find_commit(id) {
            Ok(c) => c,
            Err(e) => return Some(bad("commit", id, e.message())),
        };
        let tree = match commit.tree() {
            Ok(t) => t,
            Err(e) => return Some(bad("tree", commit.tree_id(), e.message())),
        };
        if !seen_trees.insert(tree.id()) {
            continue;
        }
        let mut problem = None;
        let _ = tree.walk(git2::TreeWalkMode::PreOrder, |_, entry| {
            let res = match entry.kind() {
                Some(ObjectType::Blob) => repo.find_blob(entry.id()).map(|_| ()),
                Some(ObjectType::Tree) => repo.find_tree(entry.id()).map(|_| ()),
                _ => Ok(()),
            };
            match res {
                Ok(()) => git2::TreeWalkResult::Ok,
                Err(e) => {
                    let what = if entry.kind() == Some(ObjectType::Tree) { "tree" } else { "blob" };
                    problem = Some(bad(what, entry.id(), e.message()));
                    git2::TreeWalkResult::Abort
                }
            }
        });
        if problem.is_some() {
            return problem;
        }
    }
    None
}

/// Tracked files replaced by something else, and pending hand edits.
fn working_tree(repo: &Repository, dir: &Path) -> Vec<Finding> {
    let d = dir.display();
    let mut out = Vec::new();
    for path in replaced_files(repo, dir) {
        out.push(finding(
            Severity::Error,
            format!("{path} is a file in the last commit but not a regular file in the working tree (a directory?)"),
            format!("mv {d}/{path} {d}/{path}.moved && git -C {d} checkout -- {path}   (keeps what was there, restores the file)"),
        ));
    }
    let mut opts = StatusOptions::new();
    opts.include_untracked(true).recurse_untracked_dirs(true).exclude_submodules(true);
    if let Ok(statuses) = repo.statuses(Some(&mut opts)) {
        let n = statuses
            .iter()
            .filter(|s| s.status() != Status::CURRENT && !s.status().contains(Status::IGNORED))
            .count();
        if n > 0 && out.is_empty() {
            out.push(finding(
                Severity::Info,
                format!("{n} path(s) differ from the last commit (hand edits)"),
                "nothing to do: the next write commits them as an `edit:` commit of their own",
            ));
        }
    }
    out
}

/// Paths that are blobs in HEAD but, in the working tree, a directory or another non-file.
///
/// A write refuses to run while any exist: committing them as hand edits would
/// delete the file from the history's next commit.
pub fn replaced_files(repo: &Repository, dir: &Path) -> Vec<String> {
    let mut opts = StatusOptions::new();
    opts.include_untracked(false).exclude_submodules(true);
    let Ok(statuses) = repo.statuses(Some(&mut opts)) else { return Vec::new() };
    statuses
        .iter()
        .filter(|s| s.status().intersects(Status::WT_DELETED | Status::WT_TYPECHANGE))
        .filter_map(|s| s.path().ok().map(str::to_owned))
        .filter(|p| fs::symlink_metadata(dir.join(p)).is_ok_and(|m| m.is_dir()))
        .collect()
}
