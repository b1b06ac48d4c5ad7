//! Moving a branch without renaming over its ref file.
//!
//! libgit2 moves a ref git's way: write `<ref>.lock`, rename it over the ref.
//! On ext4 a rename that replaces a file first pushes the new file's data to
//! the disk, which makes that rename the slowest step of a write. Here the
//! lock is taken the same way (`<ref>.lock` created exclusively, so git and
//! libgit2 see the branch locked), the current value is compared with the
//! expected one (the compare-and-swap), and the lock file is then swapped
//! with the ref in one `renameat2(RENAME_EXCHANGE)`: readers see the old or
//! the new id, never neither. The reflogs get their line as git writes it.
//!
//! The lock file is not a new file: a spare in `.git/engram-spare/` gets the
//! new id and is renamed to `<ref>.lock` with `RENAME_NOREPLACE` (exclusive,
//! like git's `O_EXCL` create); after the swap, the old ref file becomes the
//! spare. A write thus neither allocates nor frees an inode here — on ext4
//! without a journal, every new file has to skip the inodes freed in the last
//! minutes, which made creating the lock file the slowest step of a write.
//! Anything unusual (a packed-only ref, a lock already there, `--durable`, a
//! platform without the swap) is left to libgit2.

use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::path::Path;

use git2::{Oid, Signature};

use super::PackRepo;

/// What the swap did.
pub(super) enum Swap {
    /// The branch now points at the new commit.
    Moved,
    /// The branch no longer pointed at the expected commit: nothing changed.
    Raced,
    /// Not attempted or given up before changing anything: use libgit2.
    NotHere,
}

/// Moves `branch` (the `refs/heads/…` name HEAD points at) from `old` to `new`.
#[cfg(any(target_os = "linux", target_os = "macos"))]
pub(super) fn swap_branch(
    repo: &PackRepo,
    branch: &str,
    old: Oid,
    new: Oid,
    message: &str,
    sig: &Signature<'_>,
) -> Swap {
    if repo.options.durable || !branch.starts_with("refs/heads/") {
        return Swap::NotHere;
    }
    let git_dir = repo.git_dir();
    let ref_path = git_dir.join(branch);
    if !fs::symlink_metadata(&ref_path).is_ok_and(|m| m.is_file()) {
        return Swap::NotHere;
    }
    let lock_path = git_dir.join(format!("{branch}.lock"));
    let spare = git_dir.join(super::worktree::SPARE_DIR).join("ref");
    let content = format!("{new}\n");
    // What to do with the lock file when done: keep it as the next spare, or remove it.
    let release: fn(&Path, &Path) = match take_lock_from_spare(&spare, &lock_path, content.as_bytes()) {
        Taken::Yes => |lock, spare| {
            if fs::rename(lock, spare).is_err() {
                let _ = fs::remove_file(lock);
            }
        },
        Taken::Held => return Swap::NotHere,
        Taken::CannotHere => {
            let Ok(mut lock) = OpenOptions::new().write(true).create_new(true).open(&lock_path) else {
                return Swap::NotHere;
            };
            if lock.write_all(content.as_bytes()).is_err() {
                let _ = fs::remove_file(&lock_path);
                return Swap::NotHere;
            }
            |lock, _| {
                let _ = fs::remove_file(lock);
            }
        }
    };
    let current = fs::read_to_string(&ref_path).ok().and_then(|t| Oid::from_str(t.trim()).ok());
    if current != Some(old) {
        release(&lock_path, &spare);
        return if current.is_some() { Swap::Raced } else { Swap::NotHere };
    }
    let line = reflog_line(old, new, sig, message);
    if logs_enabled(repo) {
        // `branch` is what HEAD points at (the caller reads it from HEAD).
        append(&git_dir.join("logs").join(branch), &line);
        append(&git_dir.join("logs").join("HEAD"), &line);
    }
    let swapped = super::worktree::swap(&lock_path, &ref_path);
    // After a swap the lock path holds the old id; without one, nothing changed.
    release(&lock_path, &spare);
    match swapped {
        Ok(()) => Swap::Moved,
        Err(_) => Swap::NotHere,
    }
}

/// How taking `<ref>.lock` from the spare went.
#[cfg(any(target_os = "linux", target_os = "macos"))]
enum Taken {
    /// The spare, holding the new content, is now the lock file.
    Yes,
    /// Someone else holds the lock.
    Held,
    /// The spare cannot be used (missing directory, file system without the call).
    CannotHere,
}

/// Writes `content` into the spare (made on first use) and renames it to
/// `lock` unless `lock` exists.
#[cfg(any(target_os = "linux", target_os = "macos"))]
fn take_lock_from_spare(spare: &Path, lock: &Path, content: &[u8]) -> Taken {
    if let Some(dir) = spare.parent()
        && super::worktree::ensure_real_dir(dir).is_err()
    {
        return Taken::CannotHere;
    }
    if super::worktree::overwrite(spare, content, false).is_err() {
        return Taken::CannotHere;
    }
    match rustix::fs::renameat_with(
        rustix::fs::CWD,
        spare,
        rustix::fs::CWD,
        lock,
        rustix::fs::RenameFlags::NOREPLACE,
    ) {
        Ok(()) => Taken::Yes,
        Err(rustix::io::Errno::EXIST) => Taken::Held,
        Err(_) => Taken::CannotHere,
    }
}

/// Moves a branch by swapping (not available on this platform).
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub(super) fn swap_branch(
    _repo: &PackRepo,
    _branch: &str,
    _old: Oid,
    _new: Oid,
    _message: &str,
    _sig: &Signature<'_>,
) -> Swap {
    Swap::NotHere
}

/// A reflog line as git writes it: `<old> <new> <name> <<email>> <time> <tz>\t<message>\n`.
fn reflog_line(old: Oid, new: Oid, sig: &Signature<'_>, message: &str) -> String {
    format!("{old} {new} {}\t{}\n", super::packwrite::signature_line(sig), message.replace('\n', " "))
}

/// Git's rule: reflogs are kept unless `core.logAllRefUpdates` says no (default: yes outside bare repositories).
fn logs_enabled(repo: &PackRepo) -> bool {
    match repo.repo.config().and_then(|c| c.get_bool("core.logAllRefUpdates")) {
        Ok(on) => on,
        Err(_) => !repo.repo.is_bare(),
    }
}

/// Appends `line` to the reflog at `path` (its directories made on first use).
fn append(path: &Path, line: &str) {
    let open = || OpenOptions::new().create(true).append(true).open(path);
    let file = match open() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            path.parent().map_or(Err(e), fs::create_dir_all).and_then(|()| open())
        }
        other => other,
    };
    if let Ok(mut f) = file {
        let _ = f.write_all(line.as_bytes());
    }
}
