//! Knowing cheaply that the working tree still equals HEAD.
//!
//! Before every write, hand edits in the working tree must be found (and
//! committed as their own `edit:` commit). `git status` does that by
//! comparing every file with the index and, for files written in the same
//! clock tick as the index ("racily clean"), by hashing them with attribute
//! lookups: hundreds of system calls per write. This module keeps, per pack
//! and per process, what the working tree looked like the last time it was
//! known to equal HEAD: the `stat` signature of every tracked file and of
//! every directory (a file created, deleted or renamed changes its
//! directory's signature), and the content of the files engram itself just
//! wrote. A check then costs one `lstat` per file and directory, and a read
//! and compare of files too young for their timestamps to be trusted.
//! Anything unexpected — another HEAD, any signature that differs — means
//! "maybe dirty", and the write falls back to `git status`.
//!
//! Rolled history segments (any path with a `_log` directory, which engram
//! never rewrites) are many and grow with the pack; in-place edits of them
//! are looked for at most every [`COLD_CHECK_INTERVAL`] (a file added or
//! removed there is still seen at once through its directory). Every other
//! file is checked before every write.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use git2::{ObjectType, Oid, TreeWalkMode, TreeWalkResult};

use super::racy_commit::entry;
use super::{PackRepo, Result, git_err, io_err};
use crate::pack_root::{FileStat, Found, PackRoot};

/// How often in-place edits of rolled history segments are looked for.
pub const COLD_CHECK_INTERVAL: Duration = Duration::from_secs(2);

/// A timestamp younger than this when its signature was taken cannot be
/// trusted: the filesystem clock ticks coarsely (1–10 ms), so an edit in the
/// same tick could leave the signature unchanged.
const RACY_MARGIN: Duration = Duration::from_millis(15);

/// The parts of `stat` that change when a file or directory is modified.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Sig {
    len: u64,
    mtime: SystemTime,
    #[cfg(unix)]
    ctime: (i64, i64),
    #[cfg(unix)]
    ino: u64,
    is_dir: bool,
}

impl Sig {
    fn of(stat: &FileStat) -> Self {
        Sig {
            len: stat.len,
            mtime: stat.modified(),
            #[cfg(unix)]
            ctime: stat.ctime,
            #[cfg(unix)]
            ino: stat.ino,
            is_dir: stat.is_dir(),
        }
    }

    fn read(path: &Path) -> Option<Self> {
        fs::symlink_metadata(path).ok().map(|m| Self::of(&FileStat::from_metadata(&m)))
    }

    /// True when a change made after `taken` could have left this signature unchanged.
    fn racy(&self, taken: SystemTime) -> bool {
        self.mtime + RACY_MARGIN > taken
    }
}

/// A tracked file as last known.
#[derive(Debug, Clone)]
struct FileState {
    sig: Sig,
    taken: SystemTime,
    id: Oid,
    /// The bytes engram wrote, kept while the signature is racy.
    content: Option<Arc<Vec<u8>>>,
    cold: bool,
}

/// A directory as last known; its entry names are kept while its signature is racy.
#[derive(Debug, Clone)]
struct DirState {
    sig: Sig,
    taken: SystemTime,
    names: Option<HashSet<String>>,
}

/// What the working tree looked like when it last equalled `head`.
#[derive(Debug)]
pub(super) struct CleanState {
    head: Oid,
    files: HashMap<String, FileState>,
    dirs: HashMap<String, DirState>,
    cold_checked: Instant,
}

fn is_cold(path: &str) -> bool {
    path.split('/').rev().skip(1).any(|dir| dir == "_log")
}

fn dir_names(path: &Path) -> Option<HashSet<String>> {
    let entries = fs::read_dir(path).ok()?;
    Some(entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
}

fn join(root: &Path, rel: &str) -> std::path::PathBuf {
    if rel.is_empty() { root.to_owned() } else { root.join(rel) }
}

impl CleanState {
    /// Records the working tree of `repo`, which the caller has just found
    /// equal to HEAD (`git status` clean, or hand edits committed).
    pub(super) fn record(repo: &PackRepo) -> Result<Option<Self>> {
        let Some(head) = repo.head_commit()? else { return Ok(None) };
        let tree = head.tree().map_err(|e| git_err("reading HEAD's tree", &repo.dir, e))?;
        let mut tracked = Vec::new();
        tree.walk(TreeWalkMode::PreOrder, |parent, entry| {
            if entry.kind() == Some(ObjectType::Blob)
                && let Ok(name) = entry.name()
            {
                tracked.push((format!("{parent}{name}"), entry.id()));
            }
            TreeWalkResult::Ok
        })
        .map_err(|e| git_err("reading HEAD's tree", &repo.dir, e))?;
        let mut state = CleanState {
            head: head.id(),
            files: HashMap::new(),
            dirs: HashMap::new(),
            cold_checked: Instant::now(),
        };
        let taken = SystemTime::now();
        for (path, id) in tracked {
            let Some(sig) = Sig::read(&repo.dir.join(&path)) else { return Ok(None) };
            let cold = is_cold(&path);
            state.files.insert(path, FileState { sig, taken, id, content: None, cold });
        }
        state.record_dirs(&repo.dir, "", taken);
        Ok(Some(state))
    }

    /// Records `rel` and, recursively, every directory under it (not `.git`).
    fn record_dirs(&mut self, root: &Path, rel: &str, taken: SystemTime) {
        let full = join(root, rel);
        let Some(sig) = Sig::read(&full) else { return };
        let names = dir_names(&full);
        for name in names.iter().flatten() {
            let child = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
            if rel.is_empty() && name == ".git" {
                continue;
            }
            if fs::symlink_metadata(root.join(&child)).is_ok_and(|m| m.is_dir()) {
                self.record_dirs(root, &child, taken);
            }
        }
        let names = if sig.racy(taken) { names } else { None };
        self.dirs.insert(rel.to_owned(), DirState { sig, taken, names });
    }

    /// True when the working tree provably still equals `head`.
    pub(super) fn still_clean(&mut self, root: &Path, head: Option<Oid>) -> bool {
        if head != Some(self.head) {
            return false;
        }
        let now = SystemTime::now();
        for (rel, dir) in &mut self.dirs {
            let full = join(root, rel);
            if Sig::read(&full).as_ref() != Some(&dir.sig) {
                return false;
            }
            if dir.sig.racy(dir.taken) {
                match (&dir.names, dir_names(&full)) {
                    (Some(before), Some(after)) if *before == after => {}
                    _ => return false,
                }
                if !dir.sig.racy(now) {
                    dir.taken = now;
                    dir.names = None;
                }
            }
        }
        let check_cold = self.cold_checked.elapsed() >= COLD_CHECK_INTERVAL;
        for (rel, file) in &mut self.files {
            if file.cold && !check_cold {
                continue;
            }
            let full = root.join(rel);
            if Sig::read(&full).as_ref() != Some(&file.sig) {
                return false;
            }
            if file.sig.racy(file.taken) {
                let same = match &file.content {
                    Some(bytes) => fs::read(&full).is_ok_and(|now| now == **bytes),
                    None => Oid::hash_file(ObjectType::Blob, &full).is_ok_and(|id| id == file.id),
                };
                if !same {
                    return false;
                }
                if !file.sig.racy(now) {
                    file.taken = now;
                    file.content = None;
                }
            }
        }
        if check_cold {
            self.cold_checked = Instant::now();
        }
        true
    }

    /// True when the state was recorded at (or last brought up to) `head`.
    pub(super) fn is_at(&self, head: Oid) -> bool {
        self.head == head
    }

    /// Takes in a commit engram made on top of the recorded HEAD: the files it
    /// wrote (with their content, id and signature after writing) and removed.
    pub(super) fn committed(
        &mut self,
        root: &Path,
        new_head: Oid,
        written: Vec<super::publish::WrittenFile>,
        removed: Vec<String>,
    ) {
        let taken = SystemTime::now();
        // When every written file was tracked already and none was removed, no
        // directory gained or lost an entry: the listings verified at the start
        // of this write still hold and need not be read again. (A listing
        // someone else changed meanwhile then differs at the next check, which
        // is the safe way round.)
        let listings_unchanged =
            removed.is_empty() && written.iter().all(|(p, ..)| self.files.contains_key(p));
        let mut touched_dirs: HashSet<String> = HashSet::new();
        for (path, id, content, meta) in written {
            touched_dirs.extend(ancestors(&path));
            let cold = is_cold(&path);
            self.files
                .insert(path, FileState { sig: Sig::of(&meta), taken, id, content: Some(content), cold });
        }
        for path in removed {
            touched_dirs.extend(ancestors(&path));
            self.files.remove(&path);
        }
        for rel in touched_dirs {
            let full = join(root, &rel);
            match Sig::read(&full) {
                Some(sig) if sig.is_dir => {
                    let known =
                        self.dirs.get_mut(&rel).and_then(|d| d.names.take()).filter(|_| listings_unchanged);
                    let names = if sig.racy(taken) { known.or_else(|| dir_names(&full)) } else { None };
                    self.dirs.insert(rel, DirState { sig, taken, names });
                }
                _ => {
                    self.dirs.remove(&rel);
                }
            }
        }
        self.head = new_head;
    }
}

/// How many commits back an index entry is looked for among a path's versions:
/// the index lags by the scoped writes since its last update (a second's worth
/// while writes go on) or by the writes a racing `git reset --hard` missed (a
/// few), and the look happens only for files a git command put back.
const STALE_INDEX_DEPTH: usize = 1_000;

/// The paths among `dirty` that a git command restored from a git index that
/// lagged HEAD (a `git checkout -- users/` before a scoped write's deferred index
/// update, see `scoped_write`; a `git reset --hard` that read HEAD before a write
/// moved it, see `racy_reset`): the file equals the index's version, one of the
/// path's earlier committed versions. When all such files match one earlier
/// commit, files it lacks that the index and the working tree lack too count as
/// well. These are put back to HEAD (`recover::put_back`), not committed as hand
/// edits that undo an acknowledged write — only what engram's tools wrote: a path
/// a person changed since that state stays a hand edit. (A file deliberately
/// staged at an older version looks the same and is put back too: `git revert`
/// or engram's revert/undo is the way to undo a write by hand.)
pub(super) fn restored_from_a_stale_index(repo: &PackRepo, dirty: &[String]) -> Result<Vec<String>> {
    let dir = &repo.dir;
    let index = repo.read_index()?;
    let Some(head) = repo.head_commit()? else { return Ok(Vec::new()) };
    let tree = head.tree().map_err(|e| git_err("reading HEAD's tree", dir, e))?;
    let root = PackRoot::open(dir).map_err(|e| io_err("open", dir, e))?;
    // (path, the older version the index and the file hold)
    let mut older: Vec<(&str, Oid)> = Vec::new();
    // Paths HEAD has and the index and the working tree lack.
    let mut gone: Vec<&str> = Vec::new();
    for path in dirty {
        let in_head = tree.get_path(Path::new(path)).ok().map(|e| e.id());
        // Read from the pack root, never through a symbolic link (see `pack_root`).
        let Ok(rel) = crate::pack_path::PackPath::parse(path) else { continue };
        let file = root.read(&rel, |bytes| Oid::hash_object(ObjectType::Blob, bytes).ok());
        match index.get_path(Path::new(path), 0) {
            Some(staged) if in_head != Some(staged.id) => {
                if matches!(file, Ok(Found::Here(Some(id))) if id == staged.id) {
                    older.push((path, staged.id));
                }
            }
            Some(_) => {}
            None if in_head.is_some() && matches!(file, Ok(Found::Missing)) => gone.push(path),
            None => {}
        }
    }
    if older.is_empty() {
        return Ok(Vec::new());
    }
    // Every path with the state the git command left: an older version, or absent.
    let wanted: Vec<(&str, Option<Oid>)> =
        older.iter().map(|(p, id)| (*p, Some(*id))).chain(gone.iter().map(|p| (*p, None))).collect();
    let entry = |t: &git2::Tree<'_>, p: &str| entry(t, p).map(|(id, _)| id);
    // A path a person changed (their own commit, or hand edits engram committed) since
    // the state it is in is theirs to keep: only engram's writes are put back.
    let mut theirs = vec![false; wanted.len()];
    let mut found = vec![false; wanted.len()];
    // Whether the first earlier commit that holds every older version at once lacks each gone path.
    let mut common: Option<Vec<bool>> = None;
    let mut newer = head;
    let mut newer_ids: Vec<Option<Oid>> = wanted.iter().map(|(p, _)| entry(&tree, p)).collect();
    for _ in 0..STALE_INDEX_DEPTH {
        let Ok(c) = newer.parent(0) else { break };
        let Ok(t) = c.tree() else { break };
        let by_engram = made_by_a_tool(&newer);
        let ids: Vec<Option<Oid>> = wanted.iter().map(|(p, _)| entry(&t, p)).collect();
        for (i, id) in ids.iter().enumerate() {
            theirs[i] |= !by_engram && *id != newer_ids[i];
            found[i] |= !theirs[i] && *id == wanted[i].1;
        }
        let here = |i: usize| !theirs[i] && ids[i] == wanted[i].1;
        if common.is_none() && (0..older.len()).all(here) {
            common = Some((older.len()..wanted.len()).map(here).collect());
        }
        if (common.is_some() && found[..older.len()].iter().all(|f| *f)) || theirs.iter().all(|t| *t) {
            break;
        }
        newer = c;
        newer_ids = ids;
    }
    let mut out: Vec<String> =
        older.iter().zip(&found).filter(|(_, f)| **f).map(|((p, _), _)| (*p).to_owned()).collect();
    if let Some(gone_ok) = common {
        out.extend(gone.iter().zip(gone_ok).filter(|(_, ok)| *ok).map(|(p, _)| (*p).to_owned()));
    }
    Ok(out)
}

/// True for a commit an engram tool made (not hand edits or an adoption it
/// committed for a person, not a person's own commit).
pub(super) fn made_by_a_tool(commit: &git2::Commit<'_>) -> bool {
    let message = String::from_utf8_lossy(commit.message_raw_bytes());
    let key = format!("\n{}: ", super::trailer::TOOL);
    message.split(key.as_str()).nth(1).is_some_and(|rest| {
        let tool = rest.lines().next().unwrap_or_default().trim();
        !tool.is_empty() && tool != "hand-edit" && tool != "adopt"
    })
}

/// The directories above a path, `""` (the root) included.
fn ancestors(path: &str) -> impl Iterator<Item = String> + '_ {
    std::iter::once(String::new()).chain(path.match_indices('/').map(|(i, _)| path[..i].to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancestors_and_cold_paths() {
        let all = |p| ancestors(p).collect::<Vec<_>>();
        assert_eq!(all("memory/_log/a/1.md"), vec!["", "memory", "memory/_log", "memory/_log/a"]);
        assert_eq!(all("role.md"), vec![""]);
        assert!(is_cold("memory/_log/a/1.md"));
        assert!(!is_cold("memory/_log"));
        assert!(!is_cold("memory/a.md"));
    }
}
