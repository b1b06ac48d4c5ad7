//! Finishing a write that a crashed process left half-done.
//!
//! Before the branch moves, the writer records `<old> <new>` and the paths it
//! is about to write in `.git/engram-pending`. After the working tree and the
//! index are updated the record is removed. If a process dies in between, the
//! next writer (holding the lock) finds the record: when the new commit is on
//! the branch, the listed paths are checked out from HEAD, so the working tree
//! agrees with the acknowledged history and is not mistaken for a hand edit.

use std::fs;
use std::path::PathBuf;

use git2::Oid;

use super::{Changes, PackRepo, Result, git_err, io_err};

const PENDING_FILE: &str = "engram-pending";

fn pending_path(repo: &PackRepo) -> PathBuf {
    repo.git_dir().join(PENDING_FILE)
}

/// Records the write about to happen.
pub(super) fn write_pending(repo: &PackRepo, old: Option<Oid>, new: Oid, changes: &Changes) -> Result<()> {
    let mut text = format!("{} {new}\n", old.map(|o| o.to_string()).unwrap_or_else(|| "-".into()));
    for path in changes.paths() {
        text.push_str(path);
        text.push('\n');
    }
    super::write_file_atomic(&pending_path(repo), text.as_bytes(), repo.options.durable)
}

/// Removes the record of a finished (or abandoned) write.
pub(super) fn clear_pending(repo: &PackRepo) -> Result<()> {
    let path = pending_path(repo);
    match fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err("remove", &path, e)),
    }
}

/// Completes an interrupted write, if there is one. Call with the lock held.
pub(super) fn finish_pending(repo: &PackRepo) -> Result<()> {
    let path = pending_path(repo);
    let text = match fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_err("read", &path, e)),
    };
    // The writer died between recording the write and finishing it: its git locks are stale.
    super::locks::remove_dead_writer_locks(repo);
    let mut lines = text.lines();
    let new = lines.next().and_then(|l| l.split_whitespace().nth(1)).and_then(|s| Oid::from_str(s).ok());
    let paths: Vec<&str> = lines.filter(|l| !l.is_empty()).collect();
    if let (Some(new), Some(head)) = (new, repo.head_commit()?) {
        let landed = head.id() == new || repo.repo.graph_descendant_of(head.id(), new).unwrap_or(false);
        if landed && !paths.is_empty() {
            let mut checkout = git2::build::CheckoutBuilder::new();
            checkout.force();
            for p in &paths {
                checkout.path(p);
            }
            repo.repo
                .checkout_head(Some(&mut checkout))
                .map_err(|e| git_err("finishing an interrupted write", &repo.dir, e))?;
        }
    }
    clear_pending(repo)
}
