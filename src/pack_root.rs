//! No-follow access to a pack's working tree: the one way engram opens, reads,
//! writes, renames and removes a file of a pack.
//!
//! Checking a path for symbolic links and then opening it is a race: between
//! the check and the open, a local process can swap a directory of the pack
//! for a link to a directory outside it, and the open follows the link. So
//! nothing here checks and then opens. A [`PackRoot`] is an open handle of the
//! pack directory; every [`PackPath`] is resolved from it, component by
//! component, by the kernel, refusing to follow any symbolic link:
//!
//! - on Linux ≥ 5.6 with one `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`
//!   per path (the whole walk is one system call);
//! - elsewhere (older kernels, macOS, other Unix systems, a sandbox that
//!   refuses `openat2`) with one `openat(O_NOFOLLOW | O_DIRECTORY)` per
//!   directory, each relative to the handle of the one before.
//!
//! The last component is then opened, created, renamed over, exchanged or
//! removed relative to the handle of its directory ([`Entry`]), also without
//! following a link. A link anywhere on the way (inside the pack or out of it)
//! is never followed: reads see [`Found::Link`], writes fail. A directory that
//! is moved out of the pack *after* it was opened is still written through its
//! handle; only a process that can rename the pack's own directories can do
//! that, and it writes nothing outside that directory.
//!
//! The pack directory itself is opened by its path (following links: a pack
//! may be a link in the packs directory; which packs exist is decided by
//! [`crate::pack`]). `..` cannot be expressed: a [`PackPath`] has none.

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rustix::fs::{AtFlags, Mode, OFlags};

use crate::pack_path::PackPath;

/// What resolving a pack path found.
#[derive(Debug)]
pub enum Found<T> {
    /// The file (or directory handle) asked for.
    Here(T),
    /// Missing: the file or a directory on the way does not exist (or, for a
    /// file, it is a directory).
    Missing,
    /// A symbolic link on the way or at the end (not followed).
    Link,
    /// Something on the way that is not a directory (a file where a directory should be).
    NotDir,
}

impl<T> Found<T> {
    /// The value when found.
    pub fn here(self) -> Option<T> {
        match self {
            Found::Here(t) => Some(t),
            _ => None,
        }
    }

    fn map<U>(self, f: impl FnOnce(T) -> U) -> Found<U> {
        match self.split() {
            Ok(t) => Found::Here(f(t)),
            Err(absent) => absent.found(),
        }
    }

    /// The value, or why there is none.
    fn split(self) -> Result<T, Absent> {
        match self {
            Found::Here(t) => Ok(t),
            Found::Missing => Err(Absent::Missing),
            Found::Link => Err(Absent::Link),
            Found::NotDir => Err(Absent::NotDir),
        }
    }
}

/// A [`Found`] without its value.
#[derive(Debug, Clone, Copy)]
enum Absent {
    Missing,
    Link,
    NotDir,
}

impl Absent {
    fn found<T>(self) -> Found<T> {
        match self {
            Absent::Missing => Found::Missing,
            Absent::Link => Found::Link,
            Absent::NotDir => Found::NotDir,
        }
    }
}

/// The `stat` fields engram uses, from `fstat`/`fstatat` or from [`std::fs::Metadata`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStat {
    /// Device.
    pub dev: u64,
    /// Inode.
    pub ino: u64,
    /// Type and permission bits.
    pub mode: u32,
    /// Number of hard links.
    pub nlink: u64,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Size in bytes.
    pub len: u64,
    /// Last modification (seconds, nanoseconds).
    pub mtime: (i64, i64),
    /// Last status change (seconds, nanoseconds).
    pub ctime: (i64, i64),
}

impl FileStat {
    /// From a `stat` structure (field widths differ between targets).
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    fn of(st: &rustix::fs::Stat) -> Self {
        Self {
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            mode: st.st_mode as u32,
            nlink: st.st_nlink as u64,
            uid: st.st_uid as u32,
            gid: st.st_gid as u32,
            len: st.st_size as u64,
            mtime: (st.st_mtime as i64, st.st_mtime_nsec as i64),
            ctime: (st.st_ctime as i64, st.st_ctime_nsec as i64),
        }
    }

    /// The same fields from [`std::fs::Metadata`].
    pub fn from_metadata(m: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt as _;
        Self {
            dev: m.dev(),
            ino: m.ino(),
            mode: m.mode(),
            nlink: m.nlink(),
            uid: m.uid(),
            gid: m.gid(),
            len: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        }
    }

    fn kind(&self) -> u32 {
        self.mode & 0o170000
    }

    /// A regular file.
    pub fn is_file(&self) -> bool {
        self.kind() == 0o100000
    }

    /// A directory.
    pub fn is_dir(&self) -> bool {
        self.kind() == 0o040000
    }

    /// A symbolic link.
    pub fn is_symlink(&self) -> bool {
        self.kind() == 0o120000
    }

    /// The modification time.
    pub fn modified(&self) -> SystemTime {
        let (secs, nanos) = self.mtime;
        let nanos = u32::try_from(nanos).unwrap_or(0);
        match u64::try_from(secs) {
            Ok(s) => SystemTime::UNIX_EPOCH + Duration::new(s, nanos),
            Err(_) => {
                SystemTime::UNIX_EPOCH - Duration::new(secs.unsigned_abs(), 0) + Duration::new(0, nanos)
            }
        }
    }
}

/// Why a file cannot be written at a path ([`PackRoot::blocked`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Blocked {
    /// A symbolic link on the way or at the end.
    #[error("goes through a symbolic link (links are never followed)")]
    Link,
    /// A file where a directory should be.
    #[error("a component on the way is a file, not a directory")]
    NotDir,
    /// The path is a directory.
    #[error("is a directory")]
    IsDir,
}

/// The kind of a directory entry ([`PackRoot::list`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Link,
    /// Anything else (FIFO, socket, device).
    Other,
}

/// An open handle of a pack directory; see the module docs.
#[derive(Debug)]
pub struct PackRoot {
    fd: OwnedFd,
    dir: PathBuf,
}

/// A directory handle: the root's (borrowed) or one opened below it.
#[derive(Debug)]
enum Handle<'r> {
    Root(BorrowedFd<'r>),
    Owned(OwnedFd),
}

impl AsFd for Handle<'_> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Handle::Root(fd) => *fd,
            Handle::Owned(fd) => fd.as_fd(),
        }
    }
}

/// The last component of a pack path in the open handle of its directory:
/// where the file is opened, replaced, exchanged or removed, never through a link.
#[derive(Debug)]
pub struct Entry<'a> {
    dir: Handle<'a>,
    name: &'a str,
}

/// Opening a directory of the pack: read-only, and never through a link.
const DIR_FLAGS: OFlags = OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::CLOEXEC);

/// Opening a file to read: never through a link, and a FIFO never blocks the open or the read.
const READ_FLAGS: OFlags = OFlags::RDONLY.union(OFlags::NONBLOCK).union(OFlags::CLOEXEC);

/// Mode of the directories engram creates (before the umask).
const DIR_MODE: Mode = Mode::from_raw_mode(0o777);

impl PackRoot {
    /// Opens the pack directory `dir`.
    ///
    /// # Errors
    /// When `dir` cannot be opened as a directory.
    pub fn open(dir: &Path) -> io::Result<Self> {
        let fd = rustix::fs::open(dir, DIR_FLAGS, Mode::empty())?;
        Ok(Self { fd, dir: dir.to_owned() })
    }

    /// The pack directory's path (for messages).
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// `path` as a path below the pack directory (for messages and for git).
    pub fn full(&self, path: &PackPath) -> PathBuf {
        self.dir.join(path.as_str())
    }

    /// Reads the file at `path` whole and hands its bytes to `f`.
    ///
    /// # Errors
    /// I/O errors other than the answers of [`Found`].
    pub fn read<T>(&self, path: &PackPath, f: impl FnOnce(&[u8]) -> T) -> io::Result<Found<T>> {
        let file = match self.open_file(path)?.split() {
            Ok(file) => file,
            Err(absent) => return Ok(absent.found()),
        };
        read_whole(&file, f)
    }

    /// Opens the file at `path` to read it (a FIFO opens without blocking and reads as empty).
    ///
    /// # Errors
    /// I/O errors other than the answers of [`Found`].
    pub fn open_file(&self, path: &PackPath) -> io::Result<Found<File>> {
        #[cfg(target_os = "linux")]
        if let Some(found) = beneath::open(self.fd.as_fd(), path.as_str(), READ_FLAGS, Mode::empty()) {
            return Ok(answer(found)?.map(File::from));
        }
        let entry = match self.entry(path, false)?.split() {
            Ok(entry) => entry,
            Err(absent) => return Ok(absent.found()),
        };
        entry.open_read()
    }

    /// The `lstat` of `path` (a link at the end is described, not followed); `Missing`
    /// (never an error) when it is absent.
    ///
    /// # Errors
    /// I/O errors other than the answers of [`Found`].
    pub fn stat(&self, path: &PackPath) -> io::Result<Found<FileStat>> {
        match self.entry(path, false)?.split() {
            Ok(entry) => Ok(entry.stat()?.map_or(Found::Missing, Found::Here)),
            Err(absent) => Ok(absent.found()),
        }
    }

    /// Why a file could not be written at `path` now, if it could not: a link or a file on
    /// the way, or a directory there. Only an early, friendly refusal: the write itself
    /// resolves the path again without following links.
    ///
    /// # Errors
    /// I/O errors other than these answers.
    pub fn blocked(&self, path: &PackPath) -> io::Result<Option<Blocked>> {
        Ok(match self.stat(path)? {
            Found::Link => Some(Blocked::Link),
            Found::NotDir => Some(Blocked::NotDir),
            Found::Here(s) if s.is_symlink() => Some(Blocked::Link),
            Found::Here(s) if s.is_dir() => Some(Blocked::IsDir),
            Found::Here(_) | Found::Missing => None,
        })
    }

    /// True when `path` is a real directory (reached without a link).
    pub fn is_dir(&self, path: &PackPath) -> bool {
        matches!(self.stat(path), Ok(Found::Here(s)) if s.is_dir())
    }

    /// The entries of directory `dir` (`None`: the pack directory) with their kinds, unsorted;
    /// `.` and `..` left out.
    ///
    /// # Errors
    /// I/O errors other than the answers of [`Found`].
    pub fn list(&self, dir: Option<&PackPath>) -> io::Result<Found<Vec<(String, Kind)>>> {
        let handle = match dir {
            None => Handle::Owned(rustix::fs::openat(self.fd.as_fd(), ".", DIR_FLAGS, Mode::empty())?),
            Some(path) => match self.open_dir(path, false)?.split() {
                Ok(handle) => handle,
                Err(absent) => return Ok(absent.found()),
            },
        };
        let reader = rustix::fs::Dir::read_from(handle.as_fd())?;
        let mut out = Vec::new();
        for entry in reader {
            let entry = entry?;
            let Ok(name) = entry.file_name().to_str() else { continue };
            if name == "." || name == ".." {
                continue;
            }
            let kind = match entry.file_type() {
                rustix::fs::FileType::RegularFile => Kind::File,
                rustix::fs::FileType::Directory => Kind::Dir,
                rustix::fs::FileType::Symlink => Kind::Link,
                rustix::fs::FileType::Unknown => {
                    match rustix::fs::statat(handle.as_fd(), name, AtFlags::SYMLINK_NOFOLLOW) {
                        Ok(st) => kind_of(&FileStat::of(&st)),
                        Err(_) => continue,
                    }
                }
                _ => Kind::Other,
            };
            out.push((name.to_owned(), kind));
        }
        Ok(Found::Here(out))
    }

    /// The last component of `path` in the open handle of its directory, creating the
    /// missing directories on the way when `create`.
    ///
    /// # Errors
    /// I/O errors other than the answers of [`Found`].
    pub fn entry<'a>(&'a self, path: &'a PackPath, create: bool) -> io::Result<Found<Entry<'a>>> {
        let name = path.file_name();
        let dir = match path.parent() {
            None => Handle::Root(self.fd.as_fd()),
            Some(parent) => match self.open_dir(&parent, create)?.split() {
                Ok(handle) => handle,
                Err(absent) => return Ok(absent.found()),
            },
        };
        Ok(Found::Here(Entry { dir, name }))
    }

    /// Removes the file at `path` (absent: nothing to do) and then the directories above it
    /// that it left empty, up to (not including) the pack directory.
    ///
    /// # Errors
    /// When the file exists but cannot be removed.
    pub fn remove_file(&self, path: &PackPath) -> io::Result<()> {
        let parts: Vec<&str> = path.components().collect();
        let Some((name, dirs)) = parts.split_last() else { return Ok(()) };
        // The handle of every directory on the way, to remove the empty ones bottom-up.
        let mut chain: Vec<OwnedFd> = Vec::with_capacity(dirs.len());
        for part in dirs {
            let at = chain.last().map_or(self.fd.as_fd(), |fd| fd.as_fd());
            match open_dir_at(at, part)? {
                Found::Here(fd) => chain.push(fd),
                // Nothing of ours below a missing directory or a link.
                _ => return Ok(()),
            }
        }
        let at = chain.last().map_or(self.fd.as_fd(), |fd| fd.as_fd());
        match rustix::fs::unlinkat(at, *name, AtFlags::empty()) {
            Ok(()) => {}
            Err(rustix::io::Errno::NOENT) => return Ok(()),
            Err(e) => return Err(e.into()),
        }
        for depth in (0..dirs.len()).rev() {
            let at = if depth == 0 { self.fd.as_fd() } else { chain[depth - 1].as_fd() };
            if rustix::fs::unlinkat(at, dirs[depth], AtFlags::REMOVEDIR).is_err() {
                break;
            }
        }
        Ok(())
    }

    /// Opens the directory at `path`, creating the missing ones on the way when `create`.
    fn open_dir(&self, path: &PackPath, create: bool) -> io::Result<Found<Handle<'_>>> {
        #[cfg(target_os = "linux")]
        if let Some(found) = beneath::open(self.fd.as_fd(), path.as_str(), DIR_FLAGS, Mode::empty()) {
            match answer(found)? {
                Found::Missing if create => {}
                other => return Ok(other.map(Handle::Owned)),
            }
        }
        let mut handle = Handle::Root(self.fd.as_fd());
        for part in path.components() {
            let next = match open_dir_at(handle.as_fd(), part)? {
                Found::Missing if create => {
                    match rustix::fs::mkdirat(handle.as_fd(), part, DIR_MODE) {
                        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                        Err(e) => return Err(e.into()),
                    }
                    open_dir_at(handle.as_fd(), part)?
                }
                other => other,
            };
            match next.split() {
                Ok(fd) => handle = Handle::Owned(fd),
                Err(absent) => return Ok(absent.found()),
            }
        }
        Ok(Found::Here(handle))
    }
}

impl Entry<'_> {
    /// The file's name in its directory.
    pub fn name(&self) -> &str {
        self.name
    }

    /// The `lstat` of the entry; `None` when absent.
    ///
    /// # Errors
    /// I/O errors other than "missing".
    pub fn stat(&self) -> io::Result<Option<FileStat>> {
        match rustix::fs::statat(self.dir.as_fd(), self.name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(FileStat::of(&st))),
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Opens the file to read it, not following a link.
    ///
    /// # Errors
    /// I/O errors other than the answers of [`Found`].
    pub fn open_read(&self) -> io::Result<Found<File>> {
        let flags = READ_FLAGS | OFlags::NOFOLLOW;
        Ok(answer(rustix::fs::openat(self.dir.as_fd(), self.name, flags, Mode::empty()))?.map(File::from))
    }

    /// Opens an existing file to read and append to it, not following a link; `None` when
    /// it is missing or a link (a FIFO opens without blocking: check the kind with `fstat`).
    ///
    /// # Errors
    /// I/O errors other than "missing" and "a link".
    pub fn open_append(&self) -> io::Result<Option<File>> {
        let flags = OFlags::RDWR | OFlags::APPEND | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        match answer(rustix::fs::openat(self.dir.as_fd(), self.name, flags, Mode::empty()))? {
            Found::Here(fd) => Ok(Some(File::from(fd))),
            _ => Ok(None),
        }
    }

    /// Renames the file at `from` (engram's own temporary file, outside the working tree)
    /// over this entry.
    ///
    /// # Errors
    /// Any error of `renameat`, e.g. when the entry is a directory.
    pub fn replace_with(&self, from: &Path) -> io::Result<()> {
        rustix::fs::renameat(rustix::fs::CWD, from, self.dir.as_fd(), self.name)?;
        Ok(())
    }

    /// Flushes the directory to disk (after a rename into it, for durable writes).
    ///
    /// # Errors
    /// Any error of `fsync`.
    pub fn sync_dir(&self) -> io::Result<()> {
        rustix::fs::fsync(self.dir.as_fd())?;
        Ok(())
    }
}

/// Opens directory `name` in `at`, never through a link.
fn open_dir_at(at: BorrowedFd<'_>, name: &str) -> io::Result<Found<OwnedFd>> {
    match rustix::fs::openat(at, name, DIR_FLAGS | OFlags::NOFOLLOW, Mode::empty()) {
        Ok(fd) => Ok(Found::Here(fd)),
        // `O_DIRECTORY | O_NOFOLLOW` on a link fails with ENOTDIR on Linux and ELOOP
        // elsewhere: tell a link from a file by looking at it.
        Err(rustix::io::Errno::NOTDIR) => match rustix::fs::statat(at, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if FileStat::of(&st).is_symlink() => Ok(Found::Link),
            Ok(_) => Ok(Found::NotDir),
            Err(rustix::io::Errno::NOENT) => Ok(Found::Missing),
            Err(e) => Err(e.into()),
        },
        Err(e) => answer::<OwnedFd>(Err(e)),
    }
}

/// The answer an open gave: the errors that are answers become [`Found`].
fn answer<T>(opened: rustix::io::Result<T>) -> io::Result<Found<T>> {
    use rustix::io::Errno;
    match opened {
        Ok(t) => Ok(Found::Here(t)),
        Err(Errno::NOENT | Errno::ISDIR) => Ok(Found::Missing),
        // A link on the way (openat2) or at the end (O_NOFOLLOW); BSDs say EMLINK for the latter.
        Err(Errno::LOOP | Errno::MLINK) => Ok(Found::Link),
        Err(Errno::NOTDIR) => Ok(Found::NotDir),
        // openat2 refusing to leave the root: cannot happen for a PackPath; a link all the same.
        Err(Errno::XDEV) => Ok(Found::Link),
        Err(e) => Err(e.into()),
    }
}

fn kind_of(stat: &FileStat) -> Kind {
    if stat.is_file() {
        Kind::File
    } else if stat.is_dir() {
        Kind::Dir
    } else if stat.is_symlink() {
        Kind::Link
    } else {
        Kind::Other
    }
}

/// `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`: the whole walk in one call.
#[cfg(target_os = "linux")]
mod beneath {
    use std::os::fd::{BorrowedFd, OwnedFd};
    use std::sync::atomic::{AtomicBool, Ordering};

    use rustix::fs::{Mode, OFlags, ResolveFlags};
    use rustix::io::Errno;

    /// Cleared once the kernel (or a sandbox) says it has no `openat2`.
    static AVAILABLE: AtomicBool = AtomicBool::new(true);

    /// The result of `openat2`, or `None` where it cannot answer (not available, or a
    /// transient refusal): walk component by component instead.
    pub(super) fn open(
        root: BorrowedFd<'_>,
        path: &str,
        flags: OFlags,
        mode: Mode,
    ) -> Option<rustix::io::Result<OwnedFd>> {
        if !AVAILABLE.load(Ordering::Relaxed) {
            return None;
        }
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS;
        match rustix::fs::openat2(root, path, flags, mode, resolve) {
            Err(Errno::NOSYS | Errno::PERM) => {
                AVAILABLE.store(false, Ordering::Relaxed);
                None
            }
            // Unknown flags (an old kernel's view of `open_how`), or a concurrent rename the
            // kernel could not rule out: the per-component walk answers.
            Err(Errno::INVAL | Errno::TOOBIG | Errno::AGAIN) => None,
            other => Some(other),
        }
    }

    /// Forces the per-component walk (tests).
    #[cfg(test)]
    pub(super) fn set_available(on: bool) {
        AVAILABLE.store(on, Ordering::Relaxed);
    }
}

/// `read` forwarded alone, so `read_to_end` does not `fstat` + `lseek` to size its buffer.
struct Unsized<'a>(&'a File);

impl Read for Unsized<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&mut &*self.0).read(buf)
    }
}

thread_local! {
    /// One read buffer per thread, reused: allocating and freeing one per file cost more
    /// than reading a small file.
    static BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Buffers larger than this are not kept for the next read.
const KEEP_BUFFER: usize = 256 * 1024;

/// Largest file of a pack engram reads whole (far above any memory, knowledge or meta
/// file): a larger one (a 2 GB file someone put in a pack) is an error, not an
/// allocation that takes the server down; reading stops one byte past it.
pub const MAX_PACK_FILE_BYTES: usize = 64 * 1024 * 1024;

/// Reads `file` whole into the thread's buffer and hands the bytes to `f`.
fn read_whole<T>(file: &File, f: impl FnOnce(&[u8]) -> T) -> io::Result<Found<T>> {
    BUFFER.with(|cell| {
        // A callback that reads again gets a buffer of its own.
        let mut own = Vec::new();
        let mut shared = cell.try_borrow_mut().ok();
        let buf = shared.as_deref_mut().unwrap_or(&mut own);
        buf.clear();
        buf.reserve(8 * 1024);
        let out = match Unsized(file).take(MAX_PACK_FILE_BYTES as u64 + 1).read_to_end(buf) {
            Ok(_) if buf.len() > MAX_PACK_FILE_BYTES => Err(io::Error::new(
                io::ErrorKind::FileTooLarge,
                format!("the file is larger than {MAX_PACK_FILE_BYTES} bytes, the most engram reads of one pack file"),
            )),
            Ok(_) => Ok(Found::Here(f(buf))),
            // A directory opened for reading; a FIFO with a writer and nothing to read yet.
            Err(e) if e.kind() == io::ErrorKind::IsADirectory => Ok(Found::Missing),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(Found::Here(f(&[]))),
            Err(e) => Err(e),
        };
        if buf.capacity() > KEEP_BUFFER {
            *buf = Vec::new();
        }
        out
    })
}

/// Reads a file directly in the pack directory `dir` (one component, like `meta.json`)
/// without opening a handle of `dir` first: `dir` itself is the trusted part of the path,
/// and the file is opened without following a link.
///
/// # Errors
/// I/O errors other than the answers of [`Found`].
pub fn read_top_level<T>(dir: &Path, name: &PackPath, f: impl FnOnce(&[u8]) -> T) -> io::Result<Found<T>> {
    if name.parent().is_some() {
        return PackRoot::open(dir)?.read(name, f);
    }
    let flags = READ_FLAGS | OFlags::NOFOLLOW;
    match answer(rustix::fs::open(dir.join(name.as_str()), flags, Mode::empty()))?.split() {
        Ok(fd) => read_whole(&File::from(fd), f),
        Err(absent) => Ok(absent.found()),
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::symlink;

    use super::*;

    fn p(s: &str) -> PackPath {
        PackPath::parse(s).expect("a pack path")
    }

    /// A pack with `a.md`, `knowledge/x.md`, and a directory outside it holding `x.md`.
    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let (pack, outside) = (tmp.path().join("pack"), tmp.path().join("outside"));
        fs::create_dir_all(pack.join("knowledge")).expect("mkdir");
        fs::create_dir_all(&outside).expect("mkdir");
        fs::write(pack.join("a.md"), "inside").expect("write");
        fs::write(pack.join("knowledge/x.md"), "known").expect("write");
        fs::write(outside.join("x.md"), "OUTSIDE").expect("write");
        (tmp, pack, outside)
    }

    fn read(root: &PackRoot, path: &str) -> Found<String> {
        root.read(&p(path), |b| String::from_utf8_lossy(b).into_owned()).expect("read")
    }

    /// Every test runs with `openat2` and with the per-component walk.
    fn both_ways(test: impl Fn()) {
        test();
        #[cfg(target_os = "linux")]
        {
            beneath::set_available(false);
            test();
            beneath::set_available(true);
        }
    }

    #[test]
    fn reads_files_inside() {
        both_ways(|| {
            let (_tmp, pack, _) = setup();
            let root = PackRoot::open(&pack).expect("open");
            assert!(matches!(read(&root, "a.md"), Found::Here(t) if t == "inside"));
            assert!(matches!(read(&root, "knowledge/x.md"), Found::Here(t) if t == "known"));
            assert!(matches!(read(&root, "missing.md"), Found::Missing));
            assert!(matches!(read(&root, "missing/x.md"), Found::Missing));
            assert!(matches!(read(&root, "knowledge"), Found::Missing), "a directory is no file");
            assert!(matches!(read(&root, "a.md/x"), Found::NotDir));
            let big = "第一行\n".repeat(50_000);
            fs::write(pack.join("big.md"), &big).expect("write");
            assert!(matches!(read(&root, "big.md"), Found::Here(t) if t == big));
            // A read inside the callback of another gets its own buffer.
            let nested = root.read(&p("a.md"), |outer| (outer.to_vec(), read(&root, "knowledge/x.md")));
            assert!(matches!(nested, Ok(Found::Here((o, Found::Here(i)))) if o == b"inside" && i == "known"));
        });
    }

    #[test]
    fn a_link_as_the_last_component_is_not_followed() {
        both_ways(|| {
            let (_tmp, pack, outside) = setup();
            symlink(outside.join("x.md"), pack.join("out.md")).expect("symlink");
            symlink(pack.join("a.md"), pack.join("in.md")).expect("symlink");
            let root = PackRoot::open(&pack).expect("open");
            assert!(matches!(read(&root, "out.md"), Found::Link));
            assert!(matches!(read(&root, "in.md"), Found::Link), "not even to a file inside");
            assert!(root.stat(&p("out.md")).expect("stat").here().is_some_and(|s| s.is_symlink()));
            // Writing through the entry replaces the link, not its target.
            let out = p("out.md");
            let entry = root.entry(&out, false).expect("entry").here().expect("dir");
            assert!(entry.open_append().expect("open").is_none());
            let tmp = pack.join("tmp");
            fs::write(&tmp, "new").expect("write");
            entry.replace_with(&tmp).expect("rename");
            assert_eq!(fs::read_to_string(outside.join("x.md")).expect("read"), "OUTSIDE");
            assert_eq!(fs::read_to_string(pack.join("out.md")).expect("read"), "new");
        });
    }

    #[test]
    fn a_link_in_the_middle_is_not_followed() {
        both_ways(|| {
            let (_tmp, pack, outside) = setup();
            symlink(&outside, pack.join("linked")).expect("symlink");
            fs::create_dir(pack.join("deep")).expect("mkdir");
            symlink(&outside, pack.join("deep/linked")).expect("symlink");
            symlink(pack.join("knowledge"), pack.join("inlink")).expect("symlink");
            let root = PackRoot::open(&pack).expect("open");
            for path in ["linked/x.md", "deep/linked/x.md", "inlink/x.md"] {
                assert!(matches!(read(&root, path), Found::Link), "{path}");
                assert!(matches!(root.stat(&p(path)).expect("stat"), Found::Link), "{path}");
                assert!(matches!(root.entry(&p(path), true).expect("entry"), Found::Link), "{path}");
                assert!(matches!(
                    root.list(Some(&p(path).parent().expect("dir"))).expect("list"),
                    Found::Link
                ));
                root.remove_file(&p(path)).expect("remove: nothing to do");
            }
            assert_eq!(fs::read_to_string(outside.join("x.md")).expect("read"), "OUTSIDE");
            // Creating directories stops at a link too.
            assert!(matches!(root.entry(&p("linked/new/y.md"), true).expect("entry"), Found::Link));
            assert!(!outside.join("new").exists(), "nothing made outside");
        });
    }

    #[test]
    fn dotdot_cannot_be_expressed() {
        // The typed path refuses every spelling of `..`; there is no other way in.
        for bad in ["..", "../x", "a/../../x", "knowledge/.."] {
            assert!(PackPath::parse(bad).is_err(), "{bad}");
            assert!(PackPath::parse_user(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn creates_directories_and_removes_empty_ones() {
        both_ways(|| {
            let (_tmp, pack, _) = setup();
            let root = PackRoot::open(&pack).expect("open");
            let path = p("new/deeper/f.md");
            let entry = root.entry(&path, true).expect("entry").here().expect("made");
            let tmp = pack.join("tmp");
            fs::write(&tmp, "f").expect("write");
            entry.replace_with(&tmp).expect("rename");
            assert_eq!(fs::read_to_string(pack.join("new/deeper/f.md")).expect("read"), "f");
            let names = root.list(None).expect("list").here().expect("root");
            assert!(names.contains(&("new".to_owned(), Kind::Dir)), "{names:?}");
            root.remove_file(&path).expect("remove");
            assert!(!pack.join("new").exists(), "empty parents removed");
            root.remove_file(&p("knowledge/x.md")).expect("remove");
            assert!(!pack.join("knowledge").exists());
            assert!(pack.is_dir(), "never the pack directory itself");
            root.remove_file(&p("missing/x.md")).expect("absent: fine");
        });
    }

    #[test]
    fn top_level_files_read_without_a_handle() {
        let (_tmp, pack, outside) = setup();
        symlink(outside.join("x.md"), pack.join("meta.json")).expect("symlink");
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        assert!(
            matches!(read_top_level(&pack, &p("a.md"), text).expect("read"), Found::Here(t) if t == "inside")
        );
        assert!(matches!(read_top_level(&pack, &p("meta.json"), text).expect("read"), Found::Link));
        assert!(matches!(read_top_level(&pack, &p("none"), text).expect("read"), Found::Missing));
        assert!(
            matches!(read_top_level(&pack, &p("knowledge/x.md"), text).expect("read"), Found::Here(t) if t == "known")
        );
    }

    #[test]
    fn a_fifo_never_blocks_a_read() {
        let (_tmp, pack, _) = setup();
        let made = std::process::Command::new("mkfifo").arg(pack.join("fifo")).status().expect("mkfifo");
        assert!(made.success());
        let root = PackRoot::open(&pack).expect("open");
        assert!(matches!(read(&root, "fifo"), Found::Here(t) if t.is_empty()));
    }
}
