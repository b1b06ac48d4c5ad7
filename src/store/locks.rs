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
use std::time::{Duration, Instant, SystemTime};

use super::PackRepo;

/// Age after which a git lock file found under our write lock is taken as abandoned.
pub const STALE_AFTER: Duration = Duration::from_secs(2);

/// The lock files a write may leave: the branch's, HEAD's and the index's.
pub(super) fn lock_files(repo: &PackRepo) -> Vec<PathBuf> {
    let mut out = ref_lock_files(repo);
    out.push(repo.git_dir().join("index.lock"));
    out
}

/// The lock files of the refs a write moves: HEAD's and the branch's (a write
/// moving the branch holds the index lock itself, see `index_lock`).
pub(super) fn ref_lock_files(repo: &PackRepo) -> Vec<PathBuf> {
    let git = repo.git_dir();
    let mut out = vec![git.join("HEAD.lock")];
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

/// Waits until `path` is gone, removing it once the same lock file has been
/// there [`STALE_AFTER`] (by its age, or as long as this waited). A lock that
/// git commands keep taking anew is never removed: after
/// [`super::index_lock::BUSY_BOUND`] this returns and the caller tries again
/// or gives up. Returns at once when there is no lock.
pub(super) fn wait_for(path: &Path) {
    let started = Instant::now();
    let mut backoff = super::index_lock::Backoff::new();
    let mut seen: Option<((u64, Option<SystemTime>), Instant)> = None;
    loop {
        let Ok(meta) = std::fs::symlink_metadata(path) else { return };
        let modified = meta.modified().ok();
        #[cfg(unix)]
        let id = (std::os::unix::fs::MetadataExt::ino(&meta), modified);
        #[cfg(not(unix))]
        let id = (0, modified);
        let since = match seen {
            Some((known, since)) if known == id => since,
            _ => Instant::now(),
        };
        seen = Some((id, since));
        let age = modified.and_then(|m| SystemTime::now().duration_since(m).ok()).unwrap_or_default();
        if age >= STALE_AFTER || since.elapsed() >= STALE_AFTER {
            remove(path, "stale: no git command holds a lock this long");
            return;
        }
        if started.elapsed() >= super::index_lock::BUSY_BOUND {
            return;
        }
        backoff.sleep();
    }
}
