//! [`PackRepo::write_scoped`]: a write whose cost does not grow with the
//! number of files in the pack.
//!
//! [`PackRepo::write`] looks for hand edits in the whole working tree (`git
//! status`, a `stat` per file) before every write. A scoped write checks only the
//! paths it is about to change: each must be in the working tree exactly as in
//! HEAD. If one is not, the write falls back to the full check (hand edits
//! committed as their own `edit:` commit) and runs the edit again. Hand edits
//! elsewhere are committed by the first write of the repository handle (always
//! a full check) or by the next full write.
//!
//! Rewriting the git index costs a hash of the whole file (a few MB for tens of
//! thousands of files), so a scoped write updates the working tree at once but
//! the index lazily: the paths it wrote are applied to a fresh read of the index
//! at most every [`INDEX_FLUSH_INTERVAL`], before any full write, and when the
//! repository is dropped. Until then `git status` may show them as staged
//! changes; nothing is lost, as the working tree and HEAD agree.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use git2::{ObjectType, Oid};

use crate::pack_path::PackPath;
use crate::pack_root::{FileStat, Found, PackRoot};

use super::index_lock::IndexLock;
use super::{Changes, PackRepo, Result, Snapshot, git_err, io_err};

/// How long written paths may wait before the index is rewritten.
pub const INDEX_FLUSH_INTERVAL: Duration = Duration::from_millis(1000);

/// Per pack: when the oldest was written, and the paths scoped writes wrote but the index
/// lacks. Process-wide rather than on the handle: a process may hold two handles of one pack
/// (sync opens its own), and whichever makes the next full write must flush what the
/// other's scoped writes left out of the index (see ARCHITECTURE.md).
static PENDING: Mutex<BTreeMap<PathBuf, (Instant, BTreeSet<String>)>> = Mutex::new(BTreeMap::new());

/// Writes the changed files into the working tree now and records them for
/// the next index flush (flushing when the oldest is due).
pub(super) fn sync_working_tree_deferred(
    repo: &PackRepo,
    changes: &Changes,
    lock: &mut IndexLock,
) -> Result<()> {
    let root = PackRoot::open(&repo.dir).map_err(|e| io_err("open", &repo.dir, e))?;
    for (path, content) in &changes.files {
        repo.put_file(&root, path, content.as_deref())?;
    }
    let due = {
        let mut pending = PENDING.lock().unwrap_or_else(|p| p.into_inner());
        let (since, paths) =
            pending.entry(repo.dir.clone()).or_insert_with(|| (Instant::now(), BTreeSet::new()));
        paths.extend(changes.paths().map(str::to_owned));
        since.elapsed() >= INDEX_FLUSH_INTERVAL
    };
    if due { flush_locked(repo, lock) } else { Ok(()) }
}

/// Applies the paths scoped writes left out of the index to a fresh read of
/// it, under git's index lock (so no git command rewrites a file while it is
/// hashed). The caller holds the write lock.
pub(super) fn flush_index(repo: &PackRepo) -> Result<()> {
    if !has_pending(&repo.dir) {
        return Ok(());
    }
    let mut lock = IndexLock::acquire(repo)?;
    flush_locked(repo, &mut lock)
}

/// True when scoped writes left paths of the pack at `dir` out of the index.
fn has_pending(dir: &Path) -> bool {
    PENDING.lock().unwrap_or_else(|p| p.into_inner()).contains_key(dir)
}

/// [`flush_index`] with git's index lock held.
fn flush_locked(repo: &PackRepo, lock: &mut IndexLock) -> Result<()> {
    let Some((_, paths)) = PENDING.lock().unwrap_or_else(|p| p.into_inner()).remove(&repo.dir) else {
        return Ok(());
    };
    // A git command may have restored a file from the lagging index meanwhile:
    // put HEAD's version back rather than staging the older one.
    let listed: Vec<String> = paths.iter().cloned().collect();
    let restored = super::clean::restored_from_a_stale_index(repo, &listed)?;
    if !restored.is_empty() {
        super::recover::put_back(repo, lock, &restored)?;
    }
    let dir = &repo.dir;
    let root = PackRoot::open(dir).map_err(|e| io_err("open", dir, e))?;
    let mut index = repo.read_index()?;
    for path in paths.iter().filter(|p| !restored.contains(p)) {
        let file = match PackPath::parse(path) {
            Ok(rel) => regular_file(&root, &rel).map_err(|e| io_err("read", &dir.join(path), e))?,
            Err(_) => None,
        };
        let entry = match file {
            Some((bytes, stat)) => {
                let id = repo.repo.blob(&bytes).map_err(|e| git_err("writing a blob", dir, e))?;
                super::worktree::index_entry(path, id, &stat)
            }
            None => None,
        };
        match entry {
            Some(entry) => index.add(&entry).map_err(|e| git_err("updating the index", dir, e))?,
            None => {
                let _ = index.remove_path(Path::new(path));
            }
        }
    }
    lock.install_index(&index, dir)?;
    Ok(())
}

impl Drop for PackRepo {
    fn drop(&mut self) {
        if has_pending(&self.dir)
            && let Ok(_lock) = self.lock()
            && let Err(e) = flush_index(self)
        {
            eprintln!("engram: updating the git index of {} failed: {e}", self.dir.display());
        }
    }
}

impl PackRepo {
    /// True when every path is in the working tree exactly as in `head`.
    pub(super) fn paths_match_head<'p>(
        &self,
        head: &Snapshot<'_>,
        paths: impl Iterator<Item = &'p str>,
    ) -> Result<bool> {
        let root = PackRoot::open(&self.dir).map_err(|e| io_err("open", &self.dir, e))?;
        for path in paths {
            let in_head: Option<Oid> = match head.entry(path)? {
                None => None,
                Some((mode, id)) if super::is_blob_mode(mode) => Some(id),
                Some(_) => return Ok(false),
            };
            let Ok(rel) = PackPath::parse(path) else { return Ok(false) };
            let on_disk = match root.open_file(&rel) {
                Ok(Found::Here(file)) => match read_regular(file) {
                    Ok(Some((bytes, _))) => Some(
                        Oid::hash_object(ObjectType::Blob, &bytes)
                            .map_err(|e| git_err("hashing a working-tree file", &self.dir, e))?,
                    ),
                    _ => return Ok(false),
                },
                Ok(Found::Missing) => None,
                // A link or a file on the way: not as in HEAD.
                Ok(Found::Link | Found::NotDir) | Err(_) => return Ok(false),
            };
            if in_head != on_disk {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// The bytes and `stat` of the regular file at `path`; `None` when there is none (missing,
/// reached through a link, or not a regular file).
fn regular_file(root: &PackRoot, path: &PackPath) -> std::io::Result<Option<(Vec<u8>, FileStat)>> {
    match root.open_file(path)? {
        Found::Here(file) => read_regular(file),
        _ => Ok(None),
    }
}

/// The bytes and `stat` of an open file when it is a regular file.
fn read_regular(mut file: std::fs::File) -> std::io::Result<Option<(Vec<u8>, FileStat)>> {
    use std::io::Read as _;
    let stat = FileStat::from_metadata(&file.metadata()?);
    if !stat.is_file() {
        return Ok(None);
    }
    let mut bytes = Vec::with_capacity(usize::try_from(stat.len).unwrap_or(0));
    file.read_to_end(&mut bytes)?;
    Ok(Some((bytes, stat)))
}
