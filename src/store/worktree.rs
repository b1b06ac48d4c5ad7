//! Writing committed files into the working tree, cheaply.
//!
//! A file whose new text extends the old (most writes add at the end) is appended to in place:
//! no new inode, no rename (on ext4 a rename over a file starts writing the new data out, ~30×
//! the cost of an append). A reader may see the old text plus part of the new end; a crash in
//! the middle is repaired from HEAD by the next writer (see `recover`). Any other change renames
//! a temporary file in `.git` over the target: a reader sees the old or the new file. Every step
//! is relative to the handle of the file's directory, reached without following a symbolic link
//! ([`crate::pack_root`]); a file with another name (a hard link) is replaced, not appended to.

use std::fs;
use std::io::{Read as _, Write as _};
use std::path::Path;

use git2::Oid;

use super::{Result, StoreError, io_err};
use crate::pack_path::PackPath;
use crate::pack_root::{Blocked, Entry, FileStat, Found, PackRoot};

/// Writes `bytes` to the working-tree file `path` of the pack `root` (directories made as
/// needed; a symbolic link on the way is an error) and returns its `stat` afterwards.
/// `git_dir` holds the temporary files.
pub(super) fn write_file(
    root: &PackRoot,
    path: &PackPath,
    bytes: &[u8],
    durable: bool,
    git_dir: &Path,
) -> Result<FileStat> {
    let full = root.full(path);
    let entry = match root.entry(path, true).map_err(|e| io_err("create the directories of", &full, e))? {
        Found::Here(entry) => entry,
        Found::Link => return Err(blocked(path, Blocked::Link)),
        Found::NotDir | Found::Missing => return Err(blocked(path, Blocked::NotDir)),
    };
    if let Some(stat) = append_in_place(&entry, bytes, durable) {
        return Ok(stat);
    }
    replace(&entry, path, bytes, durable, git_dir).map_err(|e| match e.kind() {
        std::io::ErrorKind::IsADirectory | std::io::ErrorKind::DirectoryNotEmpty => {
            blocked(path, Blocked::IsDir)
        }
        _ => io_err("write", &full, e),
    })
}

/// The error of a write whose path the working tree cannot take.
pub(super) fn blocked(path: &PackPath, why: Blocked) -> StoreError {
    StoreError::Blocked { path: path.as_str().to_owned(), why }
}

/// Appends the new end of `bytes` when the file holds exactly a strict prefix of them (and
/// has no other name: appending to a hard link would change the other name's file too).
fn append_in_place(entry: &Entry<'_>, bytes: &[u8], durable: bool) -> Option<FileStat> {
    let mut file = entry.open_append().ok()??;
    let stat = FileStat::from_metadata(&file.metadata().ok()?);
    if !stat.is_file() || stat.nlink != 1 {
        return None;
    }
    let len = usize::try_from(stat.len).ok()?;
    if len == 0 || len >= bytes.len() {
        return None;
    }
    let mut current = Vec::with_capacity(len);
    file.read_to_end(&mut current).ok()?;
    if !bytes.starts_with(&current) || current.len() >= bytes.len() {
        return None;
    }
    // Part of the end may be there after a failure: replacing the file makes it whole.
    file.write_all(&bytes[current.len()..]).ok()?;
    if durable {
        file.sync_data().ok()?;
    }
    Some(FileStat::from_metadata(&file.metadata().ok()?))
}

/// Replaces the file by renaming a temporary file (in `git_dir`, so a crash never leaves a
/// stray file in the working tree) over it, relative to the handle of its directory.
fn replace(
    entry: &Entry<'_>,
    path: &PackPath,
    bytes: &[u8],
    durable: bool,
    git_dir: &Path,
) -> std::io::Result<FileStat> {
    let tmp = git_dir.join(format!(".{}.engram-tmp-{}", entry.name(), std::process::id()));
    let written = (|| -> std::io::Result<()> {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        if durable {
            f.sync_all()?;
        }
        entry.replace_with(&tmp)?;
        if durable {
            entry.sync_dir()?;
        }
        Ok(())
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written?;
    entry.stat()?.ok_or_else(|| std::io::Error::other(format!("{path} vanished right after it was written")))
}

/// The git index entry of a file just written with content `id`, from its
/// metadata; `None` where the platform's metadata cannot fill one.
#[cfg(unix)]
pub(super) fn index_entry(path: &str, id: Oid, stat: &FileStat) -> Option<git2::IndexEntry> {
    // The index stores 32-bit fields; git truncates the same way.
    Some(git2::IndexEntry {
        ctime: git2::IndexTime::new(stat.ctime.0 as i32, stat.ctime.1 as u32),
        mtime: git2::IndexTime::new(stat.mtime.0 as i32, stat.mtime.1 as u32),
        dev: stat.dev as u32,
        ino: stat.ino as u32,
        mode: u32::from(git2::FileMode::Blob),
        uid: stat.uid,
        gid: stat.gid,
        file_size: stat.len as u32,
        id,
        flags: path.len().min(0xfff) as u16,
        flags_extended: 0,
        path: path.as_bytes().to_vec(),
    })
}

/// The git index entry of a file just written (not available on this platform).
#[cfg(not(unix))]
pub(super) fn index_entry(_path: &str, _id: Oid, _stat: &FileStat) -> Option<git2::IndexEntry> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(unix)]
    fn extends_in_place_or_replaces() {
        let tmp = tempfile::tempdir().expect("tmp");
        let (pack, git_dir) = (tmp.path().join("pack"), tmp.path().join("git"));
        fs::create_dir_all(&pack).expect("mkdir");
        fs::create_dir_all(&git_dir).expect("mkdir");
        let root = PackRoot::open(&pack).expect("root");
        let file = pack.join("a.md");
        let a = PackPath::parse("a.md").expect("path");
        fs::write(&file, "one\n").expect("write");
        let ino = |p: &Path| {
            use std::os::unix::fs::MetadataExt as _;
            fs::metadata(p).expect("stat").ino()
        };
        let before = ino(&file);
        let stat = write_file(&root, &a, b"one\ntwo\n", false, &git_dir).expect("append");
        assert_eq!(fs::read_to_string(&file).expect("read"), "one\ntwo\n");
        assert_eq!(ino(&file), before, "appended in place");
        assert_eq!(stat, FileStat::from_metadata(&fs::symlink_metadata(&file).expect("stat")));
        // Not an extension: replaced (a new inode), never a mix.
        let stat = write_file(&root, &a, b"uno\n", false, &git_dir).expect("replace");
        assert_eq!(fs::read_to_string(&file).expect("read"), "uno\n");
        assert_eq!(stat, FileStat::from_metadata(&fs::symlink_metadata(&file).expect("stat")));
        // A new file, in a new directory.
        let b = PackPath::parse("dir/b.md").expect("path");
        write_file(&root, &b, b"b\n", false, &git_dir).expect("create");
        assert_eq!(fs::read_to_string(pack.join("dir/b.md")).expect("read"), "b\n");
    }

    #[test]
    #[cfg(unix)]
    fn never_writes_through_a_link_or_a_hard_link() {
        let tmp = tempfile::tempdir().expect("tmp");
        let (pack, git_dir, outside) =
            (tmp.path().join("pack"), tmp.path().join("git"), tmp.path().join("out"));
        for d in [&pack, &git_dir, &outside] {
            fs::create_dir_all(d).expect("mkdir");
        }
        fs::write(outside.join("x.md"), "mine\n").expect("write");
        std::os::unix::fs::symlink(&outside, pack.join("linked")).expect("symlink");
        std::os::unix::fs::symlink(outside.join("x.md"), pack.join("x.md")).expect("symlink");
        fs::hard_link(outside.join("x.md"), pack.join("hard.md")).expect("hard link");
        let root = PackRoot::open(&pack).expect("root");
        let path = |s: &str| PackPath::parse(s).expect("path");
        let err = write_file(&root, &path("linked/x.md"), b"evil\n", false, &git_dir).expect_err("refused");
        assert!(matches!(err, StoreError::Blocked { why: Blocked::Link, .. }), "{err}");
        // A link as the last component is replaced by the file, its target untouched.
        write_file(&root, &path("x.md"), b"mine\nmore\n", false, &git_dir).expect("replaces the link");
        assert!(fs::symlink_metadata(pack.join("x.md")).expect("stat").is_file());
        // A hard link is replaced, not appended to.
        write_file(&root, &path("hard.md"), b"mine\nmore\n", false, &git_dir).expect("replaces");
        assert_eq!(fs::read_to_string(outside.join("x.md")).expect("read"), "mine\n", "outside untouched");
        fs::create_dir(pack.join("d")).expect("mkdir");
        let err = write_file(&root, &path("d"), b"x", false, &git_dir).expect_err("a directory");
        assert!(matches!(err, StoreError::Blocked { why: Blocked::IsDir, .. }), "{err}");
    }
}
