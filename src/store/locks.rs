//! Git lock files (`*.lock`) left behind by a killed process.
//!
//! libgit2 takes `<ref>.lock` and `index.lock` while it updates a ref or the
//! index. A process killed in between leaves the file, and every later update
//! fails with "locked" — forever, since git never removes another process's
//! lock. Every engram writer holds the pack's `flock`, so while we hold it a
//! git lock belongs either to a dead engram writer or to a git command run
//! beside engram (which holds its locks for milliseconds). We therefore wait a
//! moment for a lock to go away and remove it once it is [`STALE_AFTER`] old;
//! when the pending-write record (see `recover`) shows that a writer died mid-write, its locks are
//! removed at once.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::PackRepo;

/// Age after which a git lock file found under our write lock is taken as abandoned.
pub const STALE_AFTER: Duration = Duration::from_secs(2);

/// The lock files a write may leave: the branch's, HEAD's and the index's.
pub(super) fn lock_files(repo: &PackRepo) -> Vec<PathBuf> {
    let git = repo.git_dir();
    let mut out = vec![git.join("index.lock"), git.join("HEAD.lock")];
    if let Ok(branch) = repo.branch_ref()
        && branch != "HEAD"
    {
        out.push(git.join(format!("{branch}.lock")));
    }
    out
}

fn remove(path: &Path, why: &str) {
    if std::fs::remove_file(path).is_ok() {
        eprintln!("engram: removed {} ({why})", path.display());
    }
}

/// Removes the lock files of a writer known to have died (call with the pack's lock held).
pub(super) fn remove_dead_writer_locks(repo: &PackRepo) {
    for path in lock_files(repo) {
        if path.exists() {
            remove(&path, "left by an engram process that died during a write");
        }
    }
}

/// Waits until `path` is gone, removing it once it is [`STALE_AFTER`] old. Returns at once
/// when there is no lock.
pub(super) fn wait_for(path: &Path) {
    let step = Duration::from_millis(10);
    let mut waited = Duration::ZERO;
    loop {
        let Ok(meta) = std::fs::symlink_metadata(path) else { return };
        let age =
            meta.modified().ok().and_then(|m| SystemTime::now().duration_since(m).ok()).unwrap_or_default();
        if age >= STALE_AFTER || waited >= STALE_AFTER {
            remove(path, "stale: no git command holds a lock this long");
            return;
        }
        std::thread::sleep(step);
        waited += step;
    }
}
