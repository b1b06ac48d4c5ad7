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
//! (see `recover`). Each of these steps happens relative to the handle of the
//! file's directory, reached from the pack directory without following a
//! symbolic link ([`crate::pack_root`]); appending also needs the file to have
//! no other name (a hard link), which replacing does not.

use std::fs::{self, OpenOptions};
use std::io::{Read as _, Write as _};
use std::path::Path;

use git2::Oid;

use super::{Result, StoreError, io_err};
use crate::pack_path::PackPath;
use crate::pack_root::{Blocked, Entry, FileStat, Found, PackRoot};

/// Writes `bytes` to the working-tree file `path` of the pack `root` (directories made as
/// needed) and returns its `stat` afterwards. Every step is relative to the handle of the
/// file's directory, reached without following a link ([`crate::pack_root`]): a symbolic
/// link on the way is an error, never a way out of the pack. `git_dir` holds the spare and
/// temporary files.
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
    let is_file = match append_in_place(&entry, bytes, durable) {
        Appended::Done(stat) => return Ok(stat),
        Appended::NotAppendable { is_file } => is_file,
    };
    if is_file && let Some(stat) = exchange(&entry, path, bytes, durable, git_dir) {
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

/// What [`append_in_place`] did.
enum Appended {
    Done(FileStat),
    /// Untouched; `is_file`: a regular file with one name is there.
    NotAppendable {
        is_file: bool,
    },
}

/// Appends the new end of `bytes` when the file holds exactly a strict prefix of them (and
/// has no other name: appending to a hard link would change the other name's file too).
fn append_in_place(entry: &Entry<'_>, bytes: &[u8], durable: bool) -> Appended {
    let not = |is_file| Appended::NotAppendable { is_file };
    let Ok(Some(mut file)) = entry.open_append() else { return not(false) };
    let Ok(meta) = file.metadata() else { return not(false) };
    let stat = FileStat::from_metadata(&meta);
    if !stat.is_file() || stat.nlink != 1 {
        return not(false);
    }
    let Ok(len) = usize::try_from(stat.len) else { return not(true) };
    if len == 0 || len >= bytes.len() {
        return not(true);
    }
    let mut current = Vec::with_capacity(len);
    if file.read_to_end(&mut current).is_err() || !bytes.starts_with(&current) || current.len() >= bytes.len()
    {
        return not(true);
    }
    if file.write_all(&bytes[current.len()..]).is_err() || (durable && file.sync_data().is_err()) {
        // Part of the end may be there: replacing the file makes it whole.
        return not(true);
    }
    match file.metadata() {
        Ok(meta) => Appended::Done(FileStat::from_metadata(&meta)),
        Err(_) => not(true),
    }
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
    // A new file (a rolled segment, a new category) takes an empty file of the reserve when
    // there is one, so the write allocates no inode (see `file_reserve`).
    let reserved = if durable { None } else { super::file_reserve::take(git_dir) };
    let (tmp, file) = match reserved {
        Some((spare, file, _)) => (spare, Some(file)),
        None => (git_dir.join(format!(".{}.engram-tmp-{}", entry.name(), std::process::id())), None),
    };
    let written = (|| -> std::io::Result<()> {
        let mut f = match file {
            Some(file) => file,
            None => fs::File::create(&tmp)?,
        };
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

/// The directory of spare files, in the git directory.
pub(super) const SPARE_DIR: &str = "engram-spare";

/// The spare file for `path` (its path in the working tree, flattened, in
/// `git_dir/engram-spare/`: the same name wherever the pack is moved).
fn spare_for(path: &PackPath, git_dir: &Path) -> std::path::PathBuf {
    let flat: String = path.as_str().chars().map(|c| if c == '/' { '%' } else { c }).collect();
    git_dir.join(SPARE_DIR).join(flat)
}

/// Replaces an existing regular file by swapping a spare file holding `bytes`
/// with it. `None` (target untouched) when the platform cannot swap or a step fails.
#[cfg(any(target_os = "linux", target_os = "macos"))]
fn exchange(
    entry: &Entry<'_>,
    path: &PackPath,
    bytes: &[u8],
    durable: bool,
    git_dir: &Path,
) -> Option<FileStat> {
    let spare = spare_for(path, git_dir);
    ensure_real_dir(&git_dir.join(SPARE_DIR)).ok()?;
    overwrite(&spare, bytes, durable).ok()?;
    entry.exchange_with(&spare).ok()?;
    if durable {
        entry.sync_dir().ok()?;
    }
    entry.stat().ok().flatten()
}

/// Makes the spare file at `path` hold `bytes`, reusing its inode when it
/// exists: written from the start, then cut to length (no truncation to zero
/// first, which on ext4 would also force a flush on close).
pub(super) fn overwrite(path: &Path, bytes: &[u8], durable: bool) -> std::io::Result<()> {
    let (mut file, _) = match open_spare(path, true)? {
        Some(opened) => opened,
        None => {
            fs::remove_file(path)?;
            open_spare(path, true)?.ok_or_else(|| std::io::Error::other("a spare file kept changing"))?
        }
    };
    // Just opened (not for appending): the offset is 0.
    file.write_all(bytes)?;
    file.set_len(bytes.len() as u64)?;
    if durable {
        file.sync_data()?;
    }
    Ok(())
}

/// Makes `dir` a real directory: made when missing (its parent must exist),
/// and a symbolic link or file in its place — which a pack copied in by hand
/// could bring in its `.git` — removed first, so spares never land outside.
pub(super) fn ensure_real_dir(dir: &Path) -> std::io::Result<()> {
    match fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => return Ok(()),
        Ok(_) => fs::remove_file(dir)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    match fs::create_dir(dir) {
        // Made by another process meanwhile: fine if it is a directory.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && fs::symlink_metadata(dir)?.is_dir() => {
            Ok(())
        }
        other => other,
    }
}

/// Opens the spare file at `path` for writing (made when missing and `create`)
/// when it is a regular file with no other name, with its metadata as opened:
/// `Ok(None)` for anything else
/// (the caller removes it). A pack copied in by hand brings its `.git`, so a
/// spare could be a symbolic link or a hard link to a file outside the pack,
/// or a FIFO that would block the write: never written through.
pub(super) fn open_spare(path: &Path, create: bool) -> std::io::Result<Option<(fs::File, fs::Metadata)>> {
    let mut options = OpenOptions::new();
    options.write(true).create(create).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let file = match options.open(path) {
        Ok(file) => file,
        // A symbolic link (ELOOP) or a FIFO with no reader (ENXIO).
        #[cfg(unix)]
        Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP) | Some(libc::ENXIO)) => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    #[cfg(unix)]
    let alone = {
        use std::os::unix::fs::MetadataExt as _;
        meta.nlink() == 1
    };
    #[cfg(not(unix))]
    let alone = true;
    Ok((meta.is_file() && alone).then_some((file, meta)))
}

/// Replaces a file by swapping (not available on this platform).
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn exchange(_: &Entry<'_>, _: &PackPath, _: &[u8], _: bool, _: &Path) -> Option<FileStat> {
    None
}

/// The bytes of a version-2 index file holding `index`'s entries; `None`
/// when an entry needs a later version (extended flags).
pub(super) fn encode_index(index: &git2::Index) -> Option<Vec<u8>> {
    let entries: Option<Vec<Vec<u8>>> = index.iter().map(|e| super::gitindex::encode_entry(&e)).collect();
    let entries = entries?;
    Some(super::gitindex::encode_file(entries.iter().map(Vec::as_slice), entries.len()))
}

/// How claiming a path by renaming a spare onto it went ([`take_by_rename`]).
#[cfg(any(target_os = "linux", target_os = "macos"))]
pub(super) enum Taken {
    /// The spare is now at the path.
    Yes,
    /// Something is at the path already (someone else holds the lock it names).
    Held,
    /// The rename cannot be made (the spare went, a file system without the call).
    CannotHere,
}

/// Renames `spare` to `path` unless `path` exists (`RENAME_NOREPLACE`: exclusive, like
/// git's `O_EXCL` create of a lock file, without allocating an inode).
#[cfg(any(target_os = "linux", target_os = "macos"))]
pub(super) fn take_by_rename(spare: &Path, path: &Path) -> Taken {
    match rustix::fs::renameat_with(
        rustix::fs::CWD,
        spare,
        rustix::fs::CWD,
        path,
        rustix::fs::RenameFlags::NOREPLACE,
    ) {
        Ok(()) => Taken::Yes,
        Err(rustix::io::Errno::EXIST) => Taken::Held,
        Err(_) => Taken::CannotHere,
    }
}

/// Exchanges two existing files in one step (`renameat2(RENAME_EXCHANGE)`):
/// a reader of either path sees one file or the other, never neither.
#[cfg(any(target_os = "linux", target_os = "macos"))]
pub(super) fn swap(a: &Path, b: &Path) -> std::io::Result<()> {
    rustix::fs::renameat_with(rustix::fs::CWD, a, rustix::fs::CWD, b, rustix::fs::RenameFlags::EXCHANGE)
        .map_err(std::io::Error::from)
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
    fn planted_spares_and_spare_dirs_are_never_written_through() {
        let tmp = tempfile::tempdir().expect("tmp");
        let outside = tmp.path().join("outside");
        fs::create_dir(&outside).expect("mkdir");
        fs::write(outside.join("f"), b"mine\n").expect("write");
        // The spare directory is a link to a directory outside the pack.
        let git_dir = tmp.path().join(".git");
        fs::create_dir(&git_dir).expect("mkdir");
        std::os::unix::fs::symlink(&outside, git_dir.join(SPARE_DIR)).expect("symlink");
        ensure_real_dir(&git_dir.join(SPARE_DIR)).expect("real dir");
        assert!(fs::symlink_metadata(git_dir.join(SPARE_DIR)).expect("meta").is_dir());
        // A spare that is a symbolic link or a hard link to a file outside.
        for (name, link) in [("sym", true), ("hard", false)] {
            let spare = git_dir.join(SPARE_DIR).join(name);
            if link {
                std::os::unix::fs::symlink(outside.join("f"), &spare).expect("symlink");
            } else {
                fs::hard_link(outside.join("f"), &spare).expect("link");
            }
            overwrite(&spare, b"engram\n", false).expect("overwrite");
            assert_eq!(fs::read(&spare).expect("spare"), b"engram\n");
            assert_eq!(fs::read(outside.join("f")).expect("outside"), b"mine\n", "{name}: outside untouched");
        }
    }

    #[test]
    fn spares_are_named_by_the_path_in_the_working_tree() {
        let path = PackPath::parse("memory/_index.md").expect("path");
        let spare = spare_for(&path, Path::new("/home/u/.engram/coach/.git"));
        assert_eq!(spare, Path::new("/home/u/.engram/coach/.git/engram-spare/memory%_index.md"));
    }

    #[test]
    #[cfg(unix)]
    fn the_index_reads_back_as_written() {
        let tmp = tempfile::tempdir().expect("tmp");
        let repo = git2::Repository::init(tmp.path()).expect("init");
        let long = format!("memory/{}.md", "长".repeat(30));
        for (name, text) in [("a.md", "a\n"), ("memory/b.md", "bb\n"), (long.as_str(), "c\n")] {
            let full = tmp.path().join(name);
            fs::create_dir_all(full.parent().expect("parent")).expect("dir");
            fs::write(&full, text).expect("write");
        }
        let mut index = repo.index().expect("index");
        for name in ["a.md", "memory/b.md", long.as_str()] {
            index.add_path(Path::new(name)).expect("add");
        }
        let expected: Vec<git2::IndexEntry> = index.iter().collect();
        fs::write(repo.path().join("index"), encode_index(&index).expect("version 2")).expect("write");
        let mut reread = git2::Index::open(&repo.path().join("index")).expect("open");
        reread.read(true).expect("read: valid checksum and layout");
        let got: Vec<git2::IndexEntry> = reread.iter().collect();
        assert_eq!(got.len(), expected.len());
        for (g, e) in got.iter().zip(&expected) {
            assert_eq!((&g.path, g.id, g.mode, g.file_size), (&e.path, e.id, e.mode, e.file_size));
            assert_eq!(
                (g.mtime.seconds(), g.mtime.nanoseconds(), g.ino),
                (e.mtime.seconds(), e.mtime.nanoseconds(), e.ino)
            );
        }
        // git itself sees a clean tree.
        let status = repo.statuses(None).expect("status");
        assert!(status.iter().all(|s| s.status() == git2::Status::INDEX_NEW), "only staged additions");
    }

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
