//! Writing committed files into the working tree, cheaply.
//!
//! Most writes add text at the end of a file (a memory entry to its category
//! file, an index line to the full index). Such a file is extended in place
//! with one `write` in append mode: no new inode, no rename over the old file
//! (which on ext4 starts writing the new data out before the rename returns,
//! ~30× the cost of an append). Any other change replaces the file
//! atomically, so a reader sees the old or the new file, never a mix: the new
//! text goes into a spare file in `.git/engram-spare/`, which is then swapped
//! with the target in one `renameat2(RENAME_EXCHANGE)` (the spare keeps the
//! old text for next time); where that call does not exist, a temporary file
//! is renamed over the target. A reader
//! of an appended file may see the old text or the old text plus part of the
//! new end; a crash in the middle is repaired from HEAD by the next writer
//! (see `recover`).

use std::fs::{self, OpenOptions};
use std::io::{Read as _, Write as _};
use std::path::Path;

use git2::Oid;

use super::{Result, io_err};

/// Writes `bytes` to the working-tree file `path` and returns its metadata afterwards.
pub(super) fn write_file(path: &Path, bytes: &[u8], durable: bool, tmp_dir: &Path) -> Result<fs::Metadata> {
    if let Some(stat) = append_in_place(path, bytes, durable) {
        return Ok(stat);
    }
    if let Some(stat) = exchange(path, bytes, durable, tmp_dir) {
        return Ok(stat);
    }
    super::write_file_atomic_via(path, bytes, durable, tmp_dir)?;
    fs::symlink_metadata(path).map_err(|e| io_err("read the metadata of", path, e))
}

/// Appends the new end of `bytes` when the file holds exactly a strict prefix
/// of them. `None` (and the file untouched) in every other case.
fn append_in_place(path: &Path, bytes: &[u8], durable: bool) -> Option<fs::Metadata> {
    let stat = fs::symlink_metadata(path).ok()?;
    let len = usize::try_from(stat.len()).ok()?;
    if !stat.is_file() || len == 0 || len >= bytes.len() {
        return None;
    }
    let mut file = OpenOptions::new().read(true).append(true).open(path).ok()?;
    let mut current = Vec::with_capacity(len);
    file.read_to_end(&mut current).ok()?;
    if !bytes.starts_with(&current) || current.len() >= bytes.len() {
        return None;
    }
    file.write_all(&bytes[current.len()..]).ok()?;
    if durable {
        file.sync_data().ok()?;
    }
    file.metadata().ok()
}

/// The spare file for `path` (a flattened name in `git_dir/engram-spare/`).
fn spare_for(path: &Path, git_dir: &Path) -> std::path::PathBuf {
    let flat: String = path
        .to_string_lossy()
        .chars()
        .map(|c| if c == '/' || c == '\\' || c == ':' { '%' } else { c })
        .collect();
    git_dir.join("engram-spare").join(flat)
}

/// Replaces an existing regular file by swapping a spare file holding `bytes`
/// with it. `None` (target untouched) when the target is not a regular file
/// or the platform cannot swap.
#[cfg(any(target_os = "linux", target_os = "macos"))]
fn exchange(path: &Path, bytes: &[u8], durable: bool, git_dir: &Path) -> Option<fs::Metadata> {
    use std::io::{Seek as _, SeekFrom};
    if !fs::symlink_metadata(path).ok()?.is_file() {
        return None;
    }
    let spare = spare_for(path, git_dir);
    if let Some(dir) = spare.parent() {
        fs::create_dir_all(dir).ok()?;
    }
    // Overwrite in place (no truncation to zero, which would also force a flush).
    let mut file = OpenOptions::new().write(true).create(true).truncate(false).open(&spare).ok()?;
    file.seek(SeekFrom::Start(0)).ok()?;
    file.write_all(bytes).ok()?;
    file.set_len(bytes.len() as u64).ok()?;
    if durable {
        file.sync_data().ok()?;
    }
    drop(file);
    swap(&spare, path).ok()?;
    fs::symlink_metadata(path).ok()
}

/// Replaces a file by swapping (not available on this platform).
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn exchange(_path: &Path, _bytes: &[u8], _durable: bool, _git_dir: &Path) -> Option<fs::Metadata> {
    None
}

/// Writes `index` to `git_dir/index` without renaming over the old index:
/// libgit2 writes a copy to a fresh spare path, which is then swapped in.
/// Returns false when this cannot be done (the caller writes the index the
/// usual way).
#[cfg(any(target_os = "linux", target_os = "macos"))]
pub(super) fn exchange_index(index: &git2::Index, git_dir: &Path) -> bool {
    let spare_dir = git_dir.join("engram-spare");
    let spare = spare_dir.join("index");
    let _ = fs::create_dir_all(&spare_dir);
    // A fresh path, so libgit2's rename from `index.lock` replaces nothing.
    match fs::remove_file(&spare) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(_) => return false,
    }
    let Ok(mut copy) = git2::Index::open(&spare) else { return false };
    if copy.set_version(index.version()).is_err() {
        return false;
    }
    for entry in index.iter() {
        if copy.add(&entry).is_err() {
            return false;
        }
    }
    if copy.write().is_err() {
        return false;
    }
    swap(&spare, &git_dir.join("index")).is_ok()
}

/// Exchanges two existing files in one step (`renameat2(RENAME_EXCHANGE)`):
/// a reader of either path sees one file or the other, never neither.
#[cfg(any(target_os = "linux", target_os = "macos"))]
pub(super) fn swap(a: &Path, b: &Path) -> std::io::Result<()> {
    rustix::fs::renameat_with(rustix::fs::CWD, a, rustix::fs::CWD, b, rustix::fs::RenameFlags::EXCHANGE)
        .map_err(std::io::Error::from)
}

/// Writes the index by swapping (not available on this platform).
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub(super) fn exchange_index(_index: &git2::Index, _git_dir: &Path) -> bool {
    false
}

/// The git index entry of a file just written with content `id`, from its
/// metadata; `None` where the platform's metadata cannot fill one.
#[cfg(unix)]
pub(super) fn index_entry(path: &str, id: Oid, stat: &fs::Metadata) -> Option<git2::IndexEntry> {
    use std::os::unix::fs::MetadataExt as _;
    // The index stores 32-bit fields; git truncates the same way.
    Some(git2::IndexEntry {
        ctime: git2::IndexTime::new(stat.ctime() as i32, stat.ctime_nsec() as u32),
        mtime: git2::IndexTime::new(stat.mtime() as i32, stat.mtime_nsec() as u32),
        dev: stat.dev() as u32,
        ino: stat.ino() as u32,
        mode: u32::from(git2::FileMode::Blob),
        uid: stat.uid(),
        gid: stat.gid(),
        file_size: stat.len() as u32,
        id,
        flags: path.len().min(0xfff) as u16,
        flags_extended: 0,
        path: path.as_bytes().to_vec(),
    })
}

/// The git index entry of a file just written (not available on this platform).
#[cfg(not(unix))]
pub(super) fn index_entry(_path: &str, _id: Oid, _stat: &fs::Metadata) -> Option<git2::IndexEntry> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(unix)]
    fn extends_in_place_or_replaces() {
        let tmp = tempfile::tempdir().expect("tmp");
        let file = tmp.path().join("a.md");
        fs::write(&file, "one\n").expect("write");
        let ino = |p: &Path| {
            use std::os::unix::fs::MetadataExt as _;
            fs::metadata(p).expect("stat").ino()
        };
        let before = ino(&file);
        write_file(&file, b"one\ntwo\n", false, tmp.path()).expect("append");
        assert_eq!(fs::read_to_string(&file).expect("read"), "one\ntwo\n");
        assert_eq!(ino(&file), before, "appended in place");
        // Not an extension: replaced (a new inode), never a mix.
        write_file(&file, b"uno\n", false, tmp.path()).expect("replace");
        assert_eq!(fs::read_to_string(&file).expect("read"), "uno\n");
        // A new file.
        let new = tmp.path().join("dir/b.md");
        write_file(&new, b"b\n", false, tmp.path()).expect("create");
        assert_eq!(fs::read_to_string(&new).expect("read"), "b\n");
    }
}
