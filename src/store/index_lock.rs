//! Git's index lock (`.git/index.lock`), taken and given up the way git does.
//!
//! A person's `git checkout -- memory` restores files from the git index, and
//! a person's `git commit` writes back the index it read. So a write holds
//! `index.lock` from before its pending record until its new index and files
//! are in place: no git command writes the index or checks files out from it
//! in between (issue 15). The lock is created exclusively (`O_CREAT|O_EXCL`),
//! the new index goes in by a rename, and the lock is removed at the end.
//!
//! A lock another program holds is never removed: `git commit` holds it while
//! its editor is open. A write waits for it with backoff up to [`BUSY_BOUND`]
//! and then answers [`StoreError::Busy`] with nothing written. The one lock
//! engram removes is its own, left by a writer that died: engram writes
//! [`MARK`] into every lock it creates, and all of its writers hold the pack's
//! `flock` while they hold `index.lock`, so a marked lock found by a writer
//! holding the `flock` belongs to no live process (see [`remove_if_dead_engrams`]).

use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{PackRepo, Result, StoreError, git_err, io_err};

/// How long a write waits for a git lock another program holds, or for a branch
/// that keeps moving under it, before it answers "busy" with nothing written.
pub const BUSY_BOUND: Duration = Duration::from_secs(10);

/// The lock file's name in the git directory.
const LOCK: &str = "index.lock";

/// What engram writes into the lock files it creates (git never reads another
/// process's lock file): the proof that a lock was left by an engram writer.
const MARK: &[u8] = b"engram write lock\n";

/// The file in `.git` every lock engram takes is a hard link of (see [`take`]).
const MARK_FILE: &str = "engram-lock-mark";

/// Where a new index is written before it is renamed over `.git/index`.
const SCRATCH: &str = "engram-index.new";

/// Sleeps between tries, doubling from 1 ms up to 25 ms.
pub(super) struct Backoff {
    next: Duration,
}

impl Backoff {
    pub(super) fn new() -> Self {
        Self { next: Duration::from_millis(1) }
    }

    pub(super) fn sleep(&mut self) {
        std::thread::sleep(self.next);
        self.next = (self.next * 2).min(Duration::from_millis(25));
    }
}

/// How often a write whose branch moved under it tries again at least.
pub(super) const MIN_ATTEMPTS: u32 = 50;

/// The retries of a write whose branch moved under it (a person's `git
/// commit`, another tool's push into the pack): at least [`MIN_ATTEMPTS`]
/// tries and for [`BUSY_BOUND`], with [`Backoff`] between them.
pub(super) struct Retries {
    started: Instant,
    attempts: u32,
    backoff: Backoff,
}

impl Retries {
    pub(super) fn new() -> Self {
        Self { started: Instant::now(), attempts: 0, backoff: Backoff::new() }
    }

    /// After an attempt that must be made again: waits a little and returns
    /// `Ok`, or the error to give up with once the bound is reached.
    pub(super) fn again(&mut self, dir: &Path) -> Result<()> {
        self.attempts += 1;
        if self.attempts >= MIN_ATTEMPTS && self.started.elapsed() >= BUSY_BOUND {
            return Err(StoreError::Contention {
                dir: dir.to_owned(),
                attempts: self.attempts,
                waited: self.started.elapsed(),
            });
        }
        self.backoff.sleep();
        Ok(())
    }
}

/// Removes the git locks a dead engram writer left. Call with the pack's `flock` held.
///
/// - `.git/index.lock` when engram marked it (see the module docs);
/// - with `new`, the commit a dead writer's pending record names (it died between
///   its record and the end of its write): the branch's and HEAD's ref locks when
///   they hold `new` (written into the lock by libgit2 just before the rename) or
///   stay empty (libgit2 writes the id only at the end; git writes its new id into
///   a ref lock as soon as it has made it, so an empty lock that stays empty
///   during a writer's move of that branch is that writer's).
pub(super) fn remove_if_dead_engrams(repo: &PackRepo, new: Option<git2::Oid>) {
    let git = repo.git_dir();
    let mut locks = vec![(git.join(LOCK), None), (git.join("HEAD.lock"), new)];
    if let Ok(branch) = repo.branch_ref()
        && branch != "HEAD"
    {
        locks.push((git.join(format!("{branch}.lock")), new));
    }
    for (path, new) in locks {
        let Ok(content) = fs::read(&path) else { continue };
        let ours = match new {
            None => content == MARK,
            Some(id) => {
                content.trim_ascii() == id.to_string().as_bytes()
                    || (content.is_empty() && {
                        std::thread::sleep(Duration::from_millis(20));
                        fs::metadata(&path).is_ok_and(|m| m.len() == 0)
                    })
            }
        };
        if ours && fs::remove_file(&path).is_ok() {
            eprintln!("engram: removed {} (left by an engram write that died)", path.display());
        }
    }
}

/// Creates `lock` exclusively, already holding [`MARK`]: a hard link to the
/// pack's mark file (`link` fails when the name exists, as `O_EXCL` does), so
/// no moment exists when the lock is engram's but not marked. Where hard links
/// cannot be made, created and then written. False when another program holds it.
fn take(git_dir: &Path, lock: &Path) -> std::io::Result<bool> {
    let exists = |e: &std::io::Error| e.kind() == std::io::ErrorKind::AlreadyExists;
    let mark = git_dir.join(MARK_FILE);
    if fs::read(&mark).ok().as_deref() != Some(MARK) {
        super::write_file_atomic(&mark, MARK, false).map_err(std::io::Error::other)?;
    }
    match fs::hard_link(&mark, lock) {
        Ok(()) => return Ok(true),
        Err(e) if exists(&e) => return Ok(false),
        Err(_) => {}
    }
    match OpenOptions::new().write(true).create_new(true).open(lock) {
        Ok(mut file) => file.write_all(MARK).map(|()| true),
        Err(e) if exists(&e) => Ok(false),
        Err(e) => Err(e),
    }
}

/// `.git/index.lock`, held by this process until dropped.
pub(super) struct IndexLock {
    git_dir: PathBuf,
}

impl IndexLock {
    /// Takes the index lock of `repo`, waiting (up to [`BUSY_BOUND`]) while
    /// another program holds it. Call with the pack's write lock held, before
    /// anything is written.
    pub(super) fn acquire(repo: &PackRepo) -> Result<Self> {
        let git_dir = repo.git_dir();
        let lock = git_dir.join(LOCK);
        let started = Instant::now();
        let mut backoff = Backoff::new();
        loop {
            match take(&git_dir, &lock) {
                Ok(true) => return Ok(Self { git_dir }),
                Ok(false) => {}
                Err(e) => return Err(io_err("take the git index lock", &lock, e)),
            }
            if started.elapsed() >= BUSY_BOUND {
                return Err(StoreError::Busy {
                    dir: repo.dir.clone(),
                    what: LOCK,
                    waited: started.elapsed(),
                });
            }
            backoff.sleep();
        }
    }

    /// Changes `.git/index` with `change`, keeping the lock: the index is linked
    /// to a scratch name, read there by libgit2 (its version and the extensions libgit2 knows kept),
    /// changed, written (libgit2 writes `<scratch>.lock` and renames it), and
    /// renamed over `.git/index` — only the changed entries are touched, and one
    /// file is created per update (links where the file system has them).
    pub(super) fn update_index(
        &mut self,
        dir: &Path,
        change: impl FnOnce(&mut git2::Index) -> std::result::Result<(), git2::Error>,
    ) -> Result<()> {
        let index_path = self.git_dir.join("index");
        let scratch = self.git_dir.join(SCRATCH);
        // Left by a writer that died: this one holds the pack's `flock` and `index.lock`.
        for path in [&scratch, &self.git_dir.join(format!("{SCRATCH}.lock"))] {
            let _ = fs::remove_file(path);
        }
        if fs::symlink_metadata(&index_path).is_ok() {
            (fs::hard_link(&index_path, &scratch).or_else(|_| fs::copy(&index_path, &scratch).map(drop)))
                .map_err(|e| io_err("write", &scratch, e))?;
        }
        let git = |e| git_err("writing the index", dir, e);
        let mut index = git2::Index::open(&scratch).map_err(|e| index_error("reading the index", dir, e))?;
        change(&mut index).map_err(git)?;
        index.write().map_err(git)?;
        fs::rename(&scratch, &index_path).map_err(|e| io_err("rename into place", &index_path, e))
    }

    /// Puts `index`'s entries in place of `.git/index` (keeping its version), as
    /// one rename, keeping the lock: for an index read from the repository (entries
    /// libgit2 hashed from the working tree).
    pub(super) fn install_index(&mut self, index: &git2::Index, dir: &Path) -> Result<()> {
        let version = index.version();
        let entries: Vec<git2::IndexEntry> = index.iter().collect();
        self.update_index(dir, |scratch| {
            scratch.clear()?;
            scratch.set_version(version)?;
            entries.iter().try_for_each(|entry| scratch.add(entry))
        })
    }
}

impl Drop for IndexLock {
    fn drop(&mut self) {
        let _ = fs::remove_file(self.git_dir.join(LOCK));
    }
}

/// The error of a failed read of the index: a split index (`core.splitIndex`, whose
/// mandatory "link" extension libgit2 cannot read) is named as the person's setting,
/// never reported as damage; anything else is `step` failing.
pub(super) fn index_error(step: &'static str, dir: &Path, e: git2::Error) -> StoreError {
    if e.message().contains("'link'") {
        return StoreError::Unsupported {
            dir: dir.to_owned(),
            setting: "core.splitIndex",
            advice: "libgit2, which engram writes the git index with, cannot read a split index; run `git config core.splitIndex false && git update-index --no-split-index` in the pack",
        };
    }
    git_err(step, dir, e)
}

/// The identity of the index file: its `stat` and trailing checksum. Equal stamps, same
/// content (for the lag check, see `racy_commit`).
pub(super) type Stamp = (crate::pack_root::FileStat, [u8; 20]);

/// The [`Stamp`] of the index file at `path` (`None` when there is none).
pub(super) fn stamp(path: &Path) -> Option<Stamp> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let mut file = fs::File::open(path).ok()?;
    let mut checksum = [0u8; 20];
    file.seek(SeekFrom::End(-20)).ok()?;
    file.read_exact(&mut checksum).ok()?;
    Some((crate::pack_root::FileStat::from_metadata(&file.metadata().ok()?), checksum))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(git_dir: &Path) -> bool {
        fs::symlink_metadata(git_dir.join(LOCK)).is_ok()
    }

    fn repo() -> (tempfile::TempDir, PackRepo) {
        let tmp = tempfile::tempdir().expect("tmp");
        std::fs::write(tmp.path().join("a.md"), "a\n").expect("write");
        let repo = PackRepo::open_or_adopt(tmp.path(), super::super::StoreOptions::default()).expect("adopt");
        (tmp, repo)
    }

    #[test]
    fn the_lock_is_exclusive_and_installing_keeps_it_until_dropped() {
        let (_tmp, repo) = repo();
        let git = repo.git_dir();
        let mut lock = IndexLock::acquire(&repo).expect("take");
        assert!(held(&git));
        let mut index = repo.repo.index().expect("index");
        index.read(true).expect("read");
        index.remove_path(Path::new("a.md")).expect("remove");
        lock.install_index(&index, repo.dir()).expect("install");
        assert!(held(&git), "still held after installing");
        drop(lock);
        assert!(!held(&git), "released");
        let mut reread = git2::Index::open(&git.join("index")).expect("open");
        reread.read(true).expect("a valid index");
        assert_eq!(reread.len(), 0);
    }

    #[test]
    fn a_lock_another_program_holds_is_never_removed() {
        let (_tmp, repo) = repo();
        let git = repo.git_dir();
        fs::write(git.join(LOCK), b"").expect("a git command's lock");
        remove_if_dead_engrams(&repo, None);
        assert!(held(&git), "a lock engram did not mark stays");
        fs::write(git.join(LOCK), MARK).expect("a dead engram writer's lock");
        remove_if_dead_engrams(&repo, None);
        assert!(!held(&git), "engram's own lock, left by a dead writer, goes");
    }
}
