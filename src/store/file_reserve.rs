//! Empty files made ahead of time, for the new files a write has to create.
//!
//! A write installs two new files, its pack and its `.idx` (`packwrite`). On
//! ext4 without a journal, creating a file scans past every inode freed in the
//! last minutes, and packing frees many: right after 10,000 writes and their
//! packing, creating those two files took 0.7 ms of a 1.6 ms write. So files
//! are created ahead, off the write path, by a background thread of this
//! process, in `.git/engram-spare/reserve/`; a write, holding the pack's write
//! lock (which makes the file its alone), writes into one and renames it into
//! place, as it did with a temp file it created.
//! With the reserve empty, or on a platform or file system where this does not
//! work, a write creates its files itself.
//!
//! Reserve files are empty files no one else opens; nothing in them is data.
//! Anything left there (a process killed while filling) is just another spare.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Mutex, OnceLock};

/// The reserve, relative to the git directory.
const RESERVE_DIR: &str = "engram-spare/reserve";

/// Where the filler creates each file before it moves it into the reserve, relative
/// to the git directory. Creating a file holds its directory's lock for as long as the
/// inode allocation takes (on ext4 without a journal, a scan past every inode freed in
/// the last minutes); a write renaming a file out of the reserve takes the reserve's
/// lock, so files made in the reserve itself made writes wait for the filler.
const MAKING_DIR: &str = "engram-spare/making";

/// How many files the filler keeps in a reserve.
const TARGET: usize = 32;

/// A claim that leaves fewer than this many known files asks for a refill.
const LOW_WATER: usize = 12;

/// Names of reserve files this process listed and has not tried yet, per reserve.
static KNOWN: Mutex<Option<HashMap<PathBuf, Vec<OsString>>>> = Mutex::new(None);

/// Where refill requests go (the filler thread, started on first use).
static FILLER: OnceLock<Mutex<Sender<PathBuf>>> = OnceLock::new();

/// Reserves the filler must leave alone (their pack is being removed), each
/// with how many removals hold it. The filler holds this lock while it fills,
/// so once [`retire`] returns no fill of that reserve is running or will start.
static RETIRED: Mutex<Vec<(PathBuf, usize)>> = Mutex::new(Vec::new());

/// Keeps the filler out of `git_dir`'s reserve while it lives (see [`retire`]).
pub(super) struct Retired(PathBuf);

/// Stops the filler from touching `git_dir`'s reserve until the returned guard
/// is dropped, waiting for a fill in progress: a directory being removed must
/// not get new files meanwhile (`remove_dir_all` fails on a directory that
/// fills up under it).
pub(super) fn retire(git_dir: &Path) -> Retired {
    let reserve = git_dir.join(RESERVE_DIR);
    let mut retired = RETIRED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    match retired.iter_mut().find(|(r, _)| *r == reserve) {
        Some((_, holds)) => *holds += 1,
        None => retired.push((reserve.clone(), 1)),
    }
    let mut known = KNOWN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(names) = known.as_mut() {
        names.remove(&reserve);
    }
    Retired(reserve)
}

impl Drop for Retired {
    fn drop(&mut self) {
        let mut retired = RETIRED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(i) = retired.iter().position(|(r, _)| *r == self.0) {
            retired[i].1 -= 1;
            if retired[i].1 == 0 {
                retired.swap_remove(i);
            }
        }
    }
}

/// An empty reserve file of `git_dir`, opened for writing, its path and its
/// permissions;
/// `None` when the reserve has none left (the caller creates its file itself).
/// Asks the filler for more when the reserve runs low.
///
/// The caller must hold the pack's write lock until it has renamed the file
/// away (or given up on it): that lock is what makes the file its alone.
pub(super) fn take(git_dir: &Path) -> Option<(PathBuf, File, fs::Permissions)> {
    let reserve = git_dir.join(RESERVE_DIR);
    let (taken, left) = take_one(&reserve);
    if left < LOW_WATER {
        request_refill(reserve);
    }
    taken
}

/// Creates `path` exclusively, as `O_CREAT | O_EXCL` does (an `AlreadyExists`
/// error when something is there), from a reserve file when one is at hand: a
/// lock file made this way allocates no inode on the write path. Falls back to
/// creating the file where the reserve is empty or the no-replace rename is not
/// available. The caller holds the pack's write lock (see [`take`]).
pub(super) fn create_new(git_dir: &Path, path: &Path) -> std::io::Result<File> {
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    if let Some((spare, file, _)) = take(git_dir) {
        match super::worktree::take_by_rename(&spare, path) {
            super::worktree::Taken::Yes => return Ok(file),
            // The spare stays in the reserve, for a later write.
            super::worktree::Taken::Held => return Err(std::io::ErrorKind::AlreadyExists.into()),
            super::worktree::Taken::CannotHere => {}
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    let _ = git_dir;
    OpenOptions::new().write(true).create_new(true).open(path)
}

/// Releases `path`, an empty file the caller made with [`create_new`] (a lock),
/// by moving it back into the reserve instead of freeing its inode; a file that
/// is not empty, or one that cannot be moved, is removed.
pub(super) fn give_back(git_dir: &Path, path: &Path) {
    static RETURNED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let reserve = git_dir.join(RESERVE_DIR);
    let empty = fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.len() == 0);
    let kept = empty
        && reserve.parent().is_some_and(|d| super::worktree::ensure_real_dir(d).is_ok())
        && super::worktree::ensure_real_dir(&reserve).is_ok()
        && {
            let n = RETURNED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            fs::rename(path, reserve.join(format!("{}-back-{n}", std::process::id()))).is_ok()
        };
    if !kept {
        let _ = fs::remove_file(path);
    }
}

/// Tries known names first, then lists the directory once more.
fn take_one(reserve: &Path) -> (Option<(PathBuf, File, fs::Permissions)>, usize) {
    let mut known = KNOWN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let names = known.get_or_insert_with(HashMap::new).entry(reserve.to_owned()).or_default();
    for listed_now in [false, true] {
        if listed_now {
            *names = list(reserve);
        }
        while let Some(name) = names.pop() {
            let path = reserve.join(&name);
            // Not truncated when opened: on ext4 a file cut to zero is flushed to
            // the disk on close. A file that is not empty was left by a write that
            // was killed: removed, the next one.
            match super::worktree::open_spare(&path, false) {
                Ok(Some((file, meta))) if meta.len() == 0 => {
                    return (Some((path, file, meta.permissions())), names.len());
                }
                Err(_) => continue, // taken or gone
                // Half written, or not a plain file of its own (see `open_spare`).
                Ok(_) => {
                    let _ = fs::remove_file(&path);
                }
            }
        }
    }
    (None, 0)
}

/// The names in `reserve` (none when it does not exist yet, or when it or
/// `engram-spare` is not a real directory: the filler replaces those).
fn list(reserve: &Path) -> Vec<OsString> {
    let real_dir = |p: &Path| fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
    if !reserve.parent().is_some_and(real_dir) || !real_dir(reserve) {
        return Vec::new();
    }
    fs::read_dir(reserve)
        .map(|entries| entries.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default()
}

fn request_refill(reserve: PathBuf) {
    let filler = FILLER.get_or_init(|| {
        let (tx, rx) = channel::<PathBuf>();
        // The thread lives as long as the process; a refill it does not finish
        // leaves only empty files, which are spares like the others.
        let _ = std::thread::Builder::new().name("engram-reserve".into()).spawn(move || {
            super::housekeeping::lower_priority();
            while let Ok(reserve) = rx.recv() {
                fill(&reserve);
            }
        });
        Mutex::new(tx)
    });
    let _ = filler.lock().unwrap_or_else(std::sync::PoisonError::into_inner).send(reserve);
}

/// Creates empty files in `reserve` until it holds [`TARGET`]. Never creates
/// the git directory itself: a pack removed meanwhile stays removed.
fn fill(reserve: &Path) {
    let retired = RETIRED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if retired.iter().any(|(r, _)| r == reserve) {
        return;
    }
    let Some(spare_dir) = reserve.parent() else { return };
    let Some(git_dir) = spare_dir.parent() else { return };
    let making = git_dir.join(MAKING_DIR);
    for dir in [spare_dir, reserve, &making] {
        if super::worktree::ensure_real_dir(dir).is_err() {
            return;
        }
    }
    // Files a filler killed between making and moving left (taking checks them as it
    // checks every spare).
    for name in list(&making) {
        let _ = fs::rename(making.join(&name), reserve.join(&name));
    }
    let have = list(reserve).len();
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let pid = std::process::id();
    for k in have..TARGET {
        let name = format!("{pid}-{stamp}-{k}");
        let made = making.join(&name);
        if OpenOptions::new().write(true).create_new(true).open(&made).is_err() {
            return;
        }
        if fs::rename(&made, reserve.join(&name)).is_err() {
            let _ = fs::remove_file(&made);
            return;
        }
    }
}

/// Fills `git_dir`'s reserve now, in this thread (tests).
#[cfg(test)]
pub(super) fn fill_now(git_dir: &Path) -> usize {
    let reserve = git_dir.join(RESERVE_DIR);
    fill(&reserve);
    list(&reserve).len()
}

#[cfg(all(test, unix))]
mod tests {
    use std::io::Write as _;
    use std::os::unix::fs::MetadataExt as _;

    use super::*;

    #[test]
    fn files_are_made_beside_the_reserve_and_moved_in() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let git_dir = tmp.path().join(".git");
        let making = git_dir.join(MAKING_DIR);
        fs::create_dir_all(&making).expect("mkdir");
        fs::write(making.join("left-by-a-killed-filler"), b"").expect("leftover");
        assert_eq!(fill_now(&git_dir), TARGET);
        assert!(list(&making).is_empty(), "nothing stays where files are made");
        assert!(git_dir.join(RESERVE_DIR).join("left-by-a-killed-filler").exists(), "a leftover is a spare");
    }

    #[test]
    fn a_retired_reserve_gets_no_files_until_the_removal_ends() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let git_dir = tmp.path().join(".git");
        fs::create_dir_all(&git_dir).expect("mkdir");
        let retired = retire(&git_dir);
        let again = retire(&git_dir);
        assert_eq!(fill_now(&git_dir), 0, "the filler leaves a pack being removed alone");
        drop(retired);
        assert_eq!(fill_now(&git_dir), 0, "still held by the second removal");
        drop(again);
        assert_eq!(fill_now(&git_dir), TARGET, "filled again once no removal holds it");
    }

    #[test]
    fn links_and_fifos_planted_in_the_reserve_are_never_written_through() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let git_dir = tmp.path().join(".git");
        let reserve = git_dir.join(RESERVE_DIR);
        fs::create_dir_all(&reserve).expect("mkdir");
        let outside = tmp.path().join("outside.txt");
        fs::write(&outside, b"").expect("write");
        std::os::unix::fs::symlink(&outside, reserve.join("a-symlink")).expect("symlink");
        fs::hard_link(&outside, reserve.join("a-hard-link")).expect("link");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            reserve.join("a-fifo"),
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        )
        .expect("fifo");
        assert!(take_one(&reserve).0.is_none(), "nothing usable was planted");
        assert!(list(&reserve).is_empty(), "the planted entries were removed");
        assert_eq!(fs::read(&outside).expect("outside"), b"", "the outside file is untouched");

        // The whole reserve replaced by a link to a directory outside: not used, then replaced.
        let elsewhere = tmp.path().join("elsewhere");
        fs::create_dir(&elsewhere).expect("mkdir");
        fs::write(elsewhere.join("empty"), b"").expect("write");
        fs::remove_dir(&reserve).expect("rmdir");
        std::os::unix::fs::symlink(&elsewhere, &reserve).expect("symlink");
        KNOWN.lock().expect("known").take();
        assert!(take_one(&reserve).0.is_none());
        fill(&reserve);
        assert!(fs::symlink_metadata(&reserve).expect("reserve").is_dir(), "a real directory now");
        assert!(elsewhere.join("empty").exists() && fs::read_dir(&elsewhere).expect("dir").count() == 1);
    }

    #[test]
    fn filling_never_recreates_a_removed_pack() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let gone = tmp.path().join("removed-pack/.git");
        fill(&gone.join(RESERVE_DIR));
        assert!(!tmp.path().join("removed-pack").exists());
    }

    #[test]
    fn taken_files_are_distinct_and_empty_and_an_empty_reserve_gives_none() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let git_dir = tmp.path();
        let reserve = git_dir.join(RESERVE_DIR);
        assert!(take_one(&reserve).0.is_none(), "no reserve yet");
        assert_eq!(fill_now(git_dir), TARGET);
        // A file a killed write left half written is not handed out.
        let names = list(&reserve);
        fs::write(reserve.join(&names[0]), b"half a pack").expect("write");
        let mut seen = std::collections::HashSet::new();
        for i in 0..TARGET - 1 {
            let (path, mut file, _) = take_one(&reserve).0.expect("a reserve file");
            assert_eq!(file.metadata().expect("stat").len(), 0);
            file.write_all(b"pack bytes").expect("write");
            let dest = git_dir.join(format!("pack-{i}"));
            fs::rename(&path, &dest).expect("rename");
            assert!(seen.insert(fs::metadata(&dest).expect("dest").ino()), "each file is its own");
        }
        assert!(take_one(&reserve).0.is_none(), "reserve used up");
        assert!(list(&reserve).is_empty(), "the half-written file was removed");
    }
}
