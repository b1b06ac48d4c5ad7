//! Git's index lock (`.git/index.lock`), taken the way git takes it.
//!
//! A person's `git checkout -- memory` restores files from the git index, not
//! from HEAD. When engram's new files were visible before its new index was —
//! or when its index write raced a git command's and lost — such a checkout
//! put back an older state, and engram's next write committed that as a hand
//! edit: acknowledged memories vanished (issue 15, item 2). So engram follows
//! git's protocol: it creates `index.lock` exclusively *before* it writes the
//! working-tree files of a commit, writes the new index into the lock file and
//! puts it in place, and only then releases the lock. Every git command that
//! writes the index or checks files out from it holds the same lock, so none
//! of them runs between engram's files and engram's index. (A git command that
//! finds the lock taken fails at once, as it does beside another git command.)
//!
//! Taking the lock neither creates nor frees an inode on the common path: the
//! spare index file in `.git/engram-spare/` is renamed to `index.lock`
//! (`RENAME_NOREPLACE`, exclusive like git's `O_EXCL`), the new index is
//! written into it and swapped with `index` (`RENAME_EXCHANGE`); the old index
//! now at `index.lock` becomes the spare again when the lock is released.
//!
//! Waiting is bounded: a lock another program holds is waited for with
//! backoff, a lock file that stays the same file for [`INDEX_STALE_AFTER`]
//! is taken as abandoned (git holds its locks for milliseconds; engram's own
//! writers run under the pack's `flock`, which the waiter holds), and a lock
//! taken again and again for [`BUSY_BOUND`] ends the write with
//! [`StoreError::Busy`] — an honest "another git command is busy", not a hint
//! at damage. Inside [`super::without_waiting`], a held lock is
//! [`StoreError::WouldWait`].

use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use super::{PackRepo, Result, StoreError, io_err, no_wait, worktree};

/// How long a write keeps trying to take a git lock other programs keep taking.
pub const BUSY_BOUND: Duration = Duration::from_secs(10);

/// How long one index lock file must stay before a writer takes it as
/// abandoned (a killed writer's; one whose death the pending record shows is
/// removed at once, see `locks`).
const INDEX_STALE_AFTER: Duration = BUSY_BOUND;

/// The lock file's name in the git directory.
const LOCK: &str = "index.lock";

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
    /// `Ok`, or the error to give up with once the bound is reached. Inside
    /// [`super::without_waiting`] it gives up at once with
    /// [`StoreError::WouldWait`] (the write runs again where it may wait).
    pub(super) fn again(&mut self, dir: &Path) -> Result<()> {
        self.attempts += 1;
        if !no_wait::waiting_allowed() {
            return Err(StoreError::WouldWait { dir: dir.to_owned() });
        }
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

/// True when another program holds the index lock right now.
pub(super) fn held(git_dir: &Path) -> bool {
    fs::symlink_metadata(git_dir.join(LOCK)).is_ok()
}

/// `.git/index.lock`, held by this process until dropped.
pub(super) struct IndexLock {
    git_dir: PathBuf,
    lock: PathBuf,
    /// True while the lock file is ours (a platform without the swap gives it
    /// up when it renames it into place).
    held: bool,
    /// True when the lock file holds the index the last [`Self::install`] replaced.
    previous: bool,
}

/// The identity of a lock file: a new lock by another command is another file.
#[derive(PartialEq, Eq, Clone, Copy)]
struct Identity {
    #[cfg(unix)]
    ino: u64,
    modified: Option<SystemTime>,
}

fn identity(path: &Path) -> Option<(Identity, Option<Duration>)> {
    let meta = fs::symlink_metadata(path).ok()?;
    #[cfg(unix)]
    let ino = std::os::unix::fs::MetadataExt::ino(&meta);
    let modified = meta.modified().ok();
    let age = modified.and_then(|m| SystemTime::now().duration_since(m).ok());
    Some((
        Identity {
            #[cfg(unix)]
            ino,
            modified,
        },
        age,
    ))
}

impl IndexLock {
    /// Takes the index lock of `repo`, waiting (bounded, see the module docs)
    /// while another program holds it — or, inside [`super::without_waiting`],
    /// failing with [`StoreError::WouldWait`]. Call with the pack's write lock
    /// held, before anything is written.
    pub(super) fn acquire(repo: &PackRepo) -> Result<Self> {
        Self::take_waiting(repo, no_wait::waiting_allowed())
    }

    /// Like [`Self::acquire`], but waits even inside [`super::without_waiting`]:
    /// for a write whose commit is already made, which must finish (a git
    /// command holds the lock for milliseconds).
    pub(super) fn acquire_after_commit(repo: &PackRepo) -> Result<Self> {
        Self::take_waiting(repo, true)
    }

    fn take_waiting(repo: &PackRepo, may_wait: bool) -> Result<Self> {
        let git_dir = repo.git_dir();
        let lock = git_dir.join(LOCK);
        let started = Instant::now();
        let mut backoff = Backoff::new();
        // The lock file seen, and since when.
        let mut seen: Option<(Identity, Instant)> = None;
        loop {
            if take(&git_dir, &lock).map_err(|e| io_err("take the git index lock", &lock, e))? {
                return Ok(Self { git_dir, lock, held: true, previous: false });
            }
            if !may_wait {
                return Err(StoreError::WouldWait { dir: repo.dir.clone() });
            }
            if let Some((id, age)) = identity(&lock) {
                let since = match seen {
                    Some((known, since)) if known == id => since,
                    _ => Instant::now(),
                };
                seen = Some((id, since));
                // Not git's usual 2 s (`locks::STALE_AFTER`): a `git commit` on a loaded
                // machine (its hooks, its automatic gc) can hold the index lock for seconds,
                // and removing a live lock lets git rename engram's lock file over the index.
                let stale =
                    since.elapsed() >= INDEX_STALE_AFTER || age.is_some_and(|a| a >= INDEX_STALE_AFTER);
                if stale && fs::remove_file(&lock).is_ok() {
                    eprintln!(
                        "engram: removed {} (stale: no git command holds a lock this long)",
                        lock.display()
                    );
                    continue;
                }
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

    /// Puts `bytes` (a complete index file) in place of `.git/index`, keeping
    /// the lock.
    pub(super) fn install(&mut self, bytes: &[u8]) -> Result<()> {
        let index = self.git_dir.join("index");
        worktree::overwrite(&self.lock, bytes, false).map_err(|e| io_err("write", &self.lock, e))?;
        #[cfg(any(target_os = "linux", target_os = "macos"))]
        if worktree::swap(&self.lock, &index).is_ok() {
            // The old index is now at `index.lock`: still our lock file.
            self.previous = true;
            return Ok(());
        }
        // No index yet (or no swap here): git's way, which gives the lock up.
        fs::rename(&self.lock, &index).map_err(|e| io_err("rename into place", &index, e))?;
        self.previous = false;
        self.held = take(&self.git_dir, &self.lock).unwrap_or(false);
        Ok(())
    }

    /// Puts back the index the last [`Self::install`] replaced (a commit whose
    /// branch move failed); false when it is not at hand.
    pub(super) fn put_previous_back(&mut self) -> bool {
        #[cfg(any(target_os = "linux", target_os = "macos"))]
        if self.previous && worktree::swap(&self.lock, &self.git_dir.join("index")).is_ok() {
            self.previous = false;
            return true;
        }
        false
    }

    /// Puts `index`'s entries in place of `.git/index`, keeping the lock.
    pub(super) fn install_index(&mut self, index: &git2::Index, dir: &Path) -> Result<()> {
        match worktree::encode_index(index) {
            Some(bytes) => self.install(&bytes),
            None => {
                // Entries only libgit2 encodes (extended flags): through a scratch file.
                let scratch = self.git_dir.join(worktree::SPARE_DIR).join("index-scratch");
                let _ = fs::remove_file(&scratch);
                let git = |e| super::git_err("writing the index", dir, e);
                let mut copy = git2::Index::open(&scratch).map_err(git)?;
                for entry in index.iter() {
                    copy.add(&entry).map_err(git)?;
                }
                copy.write().map_err(git)?;
                let bytes = fs::read(&scratch).map_err(|e| io_err("read", &scratch, e))?;
                let _ = fs::remove_file(&scratch);
                self.install(&bytes)
            }
        }
    }
}

impl Drop for IndexLock {
    fn drop(&mut self) {
        if !self.held {
            return;
        }
        // The lock file becomes the spare for the next write (or goes).
        let spare = spare_path(&self.git_dir);
        let kept = fs::symlink_metadata(&spare).is_err()
            && spare.parent().is_some_and(|d| worktree::ensure_real_dir(d).is_ok())
            && fs::rename(&self.lock, &spare).is_ok();
        if !kept {
            let _ = fs::remove_file(&self.lock);
        }
    }
}

fn spare_path(git_dir: &Path) -> PathBuf {
    git_dir.join(worktree::SPARE_DIR).join("index")
}

/// Creates `lock` exclusively, from the spare when there is one: true when
/// taken, false when another program holds it.
fn take(git_dir: &Path, lock: &Path) -> std::io::Result<bool> {
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    {
        let spare = spare_path(git_dir);
        if fs::symlink_metadata(&spare).is_ok_and(|m| m.is_file()) {
            match worktree::take_by_rename(&spare, lock) {
                worktree::Taken::Yes => return Ok(true),
                worktree::Taken::Held => return Ok(false),
                // No such call on this file system, or the spare went: create the lock.
                worktree::Taken::CannotHere => {}
            }
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    let _ = git_dir;
    match OpenOptions::new().write(true).create_new(true).open(lock) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let index_before = fs::read(git.join("index")).expect("index");
        let mut lock = IndexLock::acquire(&repo).expect("take");
        assert!(held(&git));
        assert!(!take(&git, &git.join(LOCK)).expect("try"), "a second taker is refused");
        let mut index = repo.repo.index().expect("index");
        index.read(true).expect("read");
        index.remove_path(Path::new("a.md")).expect("remove");
        lock.install_index(&index, repo.dir()).expect("install");
        assert!(held(&git), "still held after installing");
        assert_ne!(fs::read(git.join("index")).expect("index"), index_before);
        drop(lock);
        assert!(!held(&git), "released");
        let mut reread = git2::Index::open(&git.join("index")).expect("open");
        reread.read(true).expect("a valid index");
        assert_eq!(reread.len(), 0);
        // Taken again from the spare the release left.
        assert!(spare_path(&git).is_file());
        drop(IndexLock::acquire(&repo).expect("again"));
    }

    #[test]
    fn a_lock_another_program_holds_is_waited_for_or_refused_without_waiting() {
        let (_tmp, repo) = repo();
        let git = repo.git_dir();
        fs::write(git.join(LOCK), b"").expect("a git command's lock");
        let refused = no_wait::without_waiting(|| IndexLock::acquire(&repo).map(drop));
        assert!(matches!(refused, Err(StoreError::WouldWait { .. })));
        // An old lock file (a git command killed long ago) is taken as abandoned.
        let old = SystemTime::now() - INDEX_STALE_AFTER - Duration::from_secs(1);
        fs::File::options().write(true).open(git.join(LOCK)).and_then(|f| f.set_modified(old)).expect("age");
        drop(IndexLock::acquire(&repo).expect("stale lock removed"));
        assert!(!held(&git));
    }
}
