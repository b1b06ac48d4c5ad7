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
#[cfg(any(target_os = "linux", target_os = "macos"))]
use super::worktree::Taken;

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
    super::worktree::take_by_rename(spare, lock)
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

/// Keeps the newest `keep` entries of the reflog of `name` (`HEAD` or a branch's
/// `refs/heads/…`), rewriting it only while holding git's lock of that ref.
///
/// Git appends to a ref's log only while it holds `<ref>.lock` (its ref transaction
/// takes `HEAD.lock` and the branch's lock, appends, renames the lock over the ref);
/// engram appends under the same lock and its pack's write lock. libgit2's reflog rewrite
/// takes only the log's own `<log>.lock`: a line git appended between its read and its
/// rename went to the replaced file and was lost — and with it the `reset: moving to HEAD`
/// line by which a racy `git reset --hard` is found and undone (`racy_reset`), so the
/// acknowledged write it had moved the branch off stayed off for good. So the trim takes
/// the ref's lock exclusively first (as git does, `O_EXCL`), and a lock someone else holds
/// means a git command may be appending right now: the trim is left to a later write.
/// The kept lines go in through `<log>.lock` and a rename, as `git reflog expire` writes
/// them. Call with the pack's write lock held.
pub(super) fn trim_reflog(git_dir: &Path, name: &str, keep: usize, durable: bool) {
    let log = git_dir.join("logs").join(name);
    let lines_of = |text: &[u8]| text.iter().filter(|&&b| b == b'\n').count();
    // Short enough already (it only grows meanwhile): no lock taken, no file made.
    if !fs::symlink_metadata(&log).is_ok_and(|m| m.is_file())
        || !fs::read(&log).is_ok_and(|t| lines_of(&t) > keep)
    {
        return;
    }
    // Both lock files come from the file reserve and the ref's lock goes back to it: on ext4
    // without a journal each new inode skips every one freed in the last minutes, which made
    // the writes that trimmed the slowest of a burst.
    let create_new = |path: &Path| {
        if durable {
            OpenOptions::new().write(true).create_new(true).open(path)
        } else {
            super::file_reserve::create_new(git_dir, path)
        }
    };
    let ref_lock = git_dir.join(format!("{name}.lock"));
    if create_new(&ref_lock).is_err() {
        return;
    }
    let log_lock = git_dir.join("logs").join(format!("{name}.lock"));
    let trimmed = (|| -> std::io::Result<()> {
        let text = fs::read(&log)?;
        let lines = lines_of(&text);
        if lines <= keep {
            return Ok(());
        }
        // After the newline that ends the last line dropped.
        let start = text
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .nth(lines - keep - 1)
            .map_or(0, |(i, _)| i + 1);
        // Whoever writes the log holds the ref's lock, which is ours: a log lock is stale.
        let create = || create_new(&log_lock);
        let mut file = match create() {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                fs::remove_file(&log_lock)?;
                create()?
            }
            other => other?,
        };
        file.write_all(&text[start..])?;
        if durable {
            file.sync_all()?;
        }
        fs::rename(&log_lock, &log)
    })();
    if trimmed.is_err() {
        let _ = fs::remove_file(&log_lock);
    }
    super::file_reserve::give_back(git_dir, &ref_lock);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A git directory whose branch `main` has a reflog of ten lines: its path and text.
    fn ten_line_reflog(git: &Path) -> (std::path::PathBuf, String) {
        fs::create_dir_all(git.join("logs/refs/heads")).expect("dirs");
        fs::create_dir_all(git.join("refs/heads")).expect("dirs");
        let log = git.join("logs/refs/heads/main");
        let text: String = (0..10).map(|i| format!("line {i}\n")).collect();
        fs::write(&log, &text).expect("log");
        (log, text)
    }

    #[cfg(unix)]
    #[test]
    fn a_reflog_is_trimmed_only_while_no_one_else_holds_its_refs_lock() {
        let tmp = tempfile::tempdir().expect("tmp");
        let git = tmp.path();
        let (log, text) = ten_line_reflog(git);
        // A git command updating the branch holds its lock while it appends to the log.
        fs::write(git.join("refs/heads/main.lock"), "").expect("git's lock");
        trim_reflog(git, "refs/heads/main", 4, false);
        assert_eq!(fs::read_to_string(&log).expect("log"), text, "left alone while git holds the lock");
        fs::remove_file(git.join("refs/heads/main.lock")).expect("unlock");
        // A log lock a killed writer left (whoever writes the log holds the ref's lock).
        fs::write(git.join("logs/refs/heads/main.lock"), "stale").expect("stale");
        trim_reflog(git, "refs/heads/main", 4, false);
        assert_eq!(fs::read_to_string(&log).expect("log"), "line 6\nline 7\nline 8\nline 9\n");
        assert!(!git.join("refs/heads/main.lock").exists(), "the ref's lock is released");
        assert!(!git.join("logs/refs/heads/main.lock").exists(), "no log lock left");
        // Short enough: nothing is rewritten.
        let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&fs::metadata(p).expect("meta"));
        let before = inode(&log);
        trim_reflog(git, "refs/heads/main", 4, false);
        assert_eq!(inode(&log), before);
    }

    /// On ext4 without a journal a new inode costs a scan past every inode freed in the last
    /// minutes: a trim under the write lock makes its lock files from the reserve.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_trim_with_the_file_reserve_stocked_allocates_no_inode() {
        use std::collections::HashSet;
        use std::os::unix::fs::MetadataExt as _;
        let tmp = tempfile::tempdir().expect("tmp");
        let git = tmp.path();
        let (log, _) = ten_line_reflog(git);
        let reserve = git.join("engram-spare/reserve");
        let inodes = || -> HashSet<u64> {
            fs::read_dir(&reserve)
                .expect("reserve")
                .flatten()
                .map(|e| e.metadata().expect("meta").ino())
                .collect()
        };
        super::super::file_reserve::fill_now(git);
        let stocked = inodes();
        trim_reflog(git, "refs/heads/main", 4, false);
        assert_eq!(fs::read_to_string(&log).expect("log"), "line 6\nline 7\nline 8\nline 9\n");
        assert!(!git.join("refs/heads/main.lock").exists(), "the ref's lock is released");
        let left = inodes();
        let log_inode = fs::metadata(&log).expect("log").ino();
        assert!(stocked.contains(&log_inode), "the trimmed log is a reserve file");
        assert!(left.is_subset(&stocked), "no new file in the reserve");
        assert_eq!(left.len(), stocked.len() - 1, "the ref's lock went back to the reserve");
    }
}
