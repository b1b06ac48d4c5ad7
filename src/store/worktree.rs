//! Writing committed files into the working tree, cheaply.
//!
//! Most writes add text at the end of a file (a memory entry to its category
//! file, an index line to the full index). Such a file is extended in place
//! with one `write` in append mode: no new inode, no rename over the old file
//! (which on ext4 forces the new data to disk first and costs ~30× an
//! append). Any other change replaces the file atomically (temporary file and
//! rename), so a reader sees the old or the new file, never a mix. A reader
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
