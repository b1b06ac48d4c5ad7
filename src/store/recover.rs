//! Finishing a write that a crashed process left half-done.
//!
//! Before it writes its files, the new index and moves the branch, a writer
//! records `<old> <new>` and the paths it is about to write in the pack's lock
//! file (`.git/engram.lock`, which it holds; writing into an open, existing
//! file costs no new inode and no rename). After the branch moved the record is
//! truncated away. A record without its closing `end` line was cut short by a
//! crash before anything was written, so there is nothing to finish. If a
//! process dies in between, the next writer (holding the lock) finds the record
//! and writes the listed paths from HEAD — the new commit's versions when the
//! branch moved, the old ones when it did not — so the working tree agrees with
//! the acknowledged history and is not mistaken for a hand edit.

use std::fs;
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::PathBuf;

use git2::Oid;

use super::{Changes, PackRepo, Result, git_err, io_err};

/// Where versions before 0.2 kept the record (still finished when found).
const OLD_PENDING_FILE: &str = "engram-pending";
const HEADER: &str = "engram-pending 1\n";
const FOOTER: &str = "end of engram-pending\n";

/// The pack's lock file, which holds the record, opened; and its path.
fn open_lock(repo: &PackRepo) -> Result<(fs::File, PathBuf)> {
    let path = repo.git_dir().join(super::open::LOCK_FILE);
    let file = fs::OpenOptions::new().read(true).write(true).open(&path);
    Ok((file.map_err(|e| io_err("open", &path, e))?, path))
}

/// Records the write about to happen. Call with the lock held.
pub(super) fn write_pending(repo: &PackRepo, old: Option<Oid>, new: Oid, changes: &Changes) -> Result<()> {
    let old = old.map(|o| o.to_string()).unwrap_or_else(|| "-".into());
    let paths: String = changes.paths().map(|p| format!("{p}\n")).collect();
    let text = format!("{HEADER}{old} {new}\n{paths}{FOOTER}");
    let (mut file, path) = open_lock(repo)?;
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.write_all(text.as_bytes()))
        .and_then(|()| file.set_len(text.len() as u64))
        .and_then(|()| if repo.options.durable { file.sync_data() } else { Ok(()) })
        .map_err(|e| io_err("write", &path, e))
}

/// Removes the record of a finished (or abandoned) write. Call with the lock held.
pub(super) fn clear_pending(repo: &PackRepo) -> Result<()> {
    let (file, path) = open_lock(repo)?;
    file.set_len(0).map_err(|e| io_err("truncate", &path, e))
}

/// The record left by a write that did not finish: `<old> <new>`, then its paths.
fn read_pending(repo: &PackRepo) -> Result<Option<String>> {
    let mut text = String::new();
    let (mut file, path) = open_lock(repo)?;
    if file.metadata().map(|m| m.len()).unwrap_or(0) > 0 {
        // Not UTF-8 or torn: cut short before the branch moved (see the module docs).
        let _ = file.read_to_string(&mut text);
        if let Some(body) = text.strip_prefix(HEADER)
            && let Some(end) = body.rfind(FOOTER).filter(|&i| i == 0 || body[..i].ends_with('\n'))
        {
            return Ok(Some(body[..end].to_owned()));
        }
        file.set_len(0).map_err(|e| io_err("truncate", &path, e))?;
    }
    let old = repo.git_dir().join(OLD_PENDING_FILE);
    match fs::read_to_string(&old) {
        Ok(t) => {
            fs::remove_file(&old).map_err(|e| io_err("remove", &old, e))?;
            Ok(Some(t))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err("read", &old, e)),
    }
}

/// True when the repository at `git_dir` holds the record of a write that
/// has not finished (a write in progress, or one a crash interrupted).
pub(super) fn has_record(git_dir: &std::path::Path) -> bool {
    git_dir.join(OLD_PENDING_FILE).exists()
        || fs::metadata(git_dir.join(super::open::LOCK_FILE)).is_ok_and(|m| m.len() > 0)
}

/// Completes an interrupted write, if there is one. Call with the lock held.
pub(super) fn finish_pending(repo: &PackRepo) -> Result<()> {
    let Some(text) = read_pending(repo)? else {
        // A writer that died after taking git's index lock and before its record.
        super::index_lock::remove_if_dead_engrams(repo, None);
        return Ok(());
    };
    let mut lines = text.lines();
    let new = lines.next().and_then(|l| l.split_whitespace().nth(1)).and_then(|s| Oid::from_str(s).ok());
    // The writer died between recording the write and finishing it: its locks are left.
    super::index_lock::remove_if_dead_engrams(repo, new);
    let paths: Vec<&str> = lines.filter(|l| !l.is_empty()).collect();
    // The writer wrote its files before moving the branch: whether the move landed or
    // not, HEAD's version of those paths is the acknowledged state.
    if let Some(head) = repo.head_commit()?
        && !paths.is_empty()
    {
        let mut lock = super::index_lock::IndexLock::acquire(repo)?;
        restore_from_head(repo, &mut lock, &head, &paths)?;
    }
    clear_pending(repo)
}

/// Puts back, as HEAD has them, files a git command restored from a git index
/// that lagged HEAD (see [`super::clean::restored_from_a_stale_index`]).
pub(super) fn put_back(
    repo: &PackRepo,
    lock: &mut super::index_lock::IndexLock,
    paths: &[String],
) -> Result<()> {
    let Some(head) = repo.head_commit()? else { return Ok(()) };
    eprintln!(
        "engram: {}: {} put back to HEAD's version (a git command had restored an older one from a git index that lagged HEAD)",
        repo.dir.display(),
        paths.join(", ")
    );
    let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
    restore_from_head(repo, lock, &head, &paths)
}

/// Writes `paths` as HEAD has them into the working tree and the index (a path HEAD lacks
/// is removed), through the same no-follow writes as every write
/// ([`PackRepo::write_working_tree`]), with git's index lock `lock` held. A path the
/// working tree cannot take (a symbolic link or a file now on the way) is left as it is:
/// the hand-edit step sees it next.
pub(super) fn restore_from_head(
    repo: &PackRepo,
    lock: &mut super::index_lock::IndexLock,
    head: &git2::Commit<'_>,
    paths: &[&str],
) -> Result<()> {
    let step = "finishing an interrupted write";
    let tree = head.tree().map_err(|e| git_err(step, &repo.dir, e))?;
    let mut changes = Changes::default();
    let mut blobs = std::collections::BTreeMap::new();
    for &path in paths {
        match tree.get_path(std::path::Path::new(path)) {
            Ok(entry) if entry.kind() == Some(git2::ObjectType::Blob) => {
                let blob = repo.repo.find_blob(entry.id()).map_err(|e| git_err(step, &repo.dir, e))?;
                changes.put(path, blob.content().to_vec());
                blobs.insert(path, entry.id());
            }
            // A directory now (or a submodule): nothing of this write to put back.
            Ok(_) => {}
            Err(e) if e.code() == git2::ErrorCode::NotFound => changes.remove(path),
            Err(e) => return Err(git_err(step, &repo.dir, e)),
        }
    }
    *repo.clean.lock().unwrap_or_else(|p| p.into_inner()) = None;
    let root =
        crate::pack_root::PackRoot::open(&repo.dir).map_err(|e| super::io_err("open", &repo.dir, e))?;
    repo.write_working_tree(&root, &changes, &blobs, lock).map(|_| ())
}
