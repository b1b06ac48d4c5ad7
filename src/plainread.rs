//! Reading a small file of a pack in as few system calls as a plain program would.
//!
//! `load_engram` reads a handful of small files on every call; resolving every
//! path (`canonicalize`, one `readlink` per component) to check that it stays
//! inside the pack cost more than the reads themselves. Here a file is opened
//! with `O_NOFOLLOW` (a symbolic link as the last component fails with `ELOOP`
//! instead of being followed) and read into a buffer without asking its size
//! first. Callers check the directories on the way with `lstat` and fall back to
//! path resolution when anything is a link.

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// What [`read_no_follow`] found.
#[derive(Debug)]
pub enum NoFollow<T> {
    /// What the callback made of the file's bytes (a regular file, or anything else `read`
    /// works on).
    Read(T),
    /// Nothing to read: missing, a directory, or under something that is not a directory.
    Missing,
    /// The last component is a symbolic link (not followed).
    Link,
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

/// Reads `path` whole without following a symbolic link at its last component and hands
/// its bytes to `f`.
///
/// # Errors
/// Any I/O error other than "missing", "is a directory", "not a directory" and
/// "is a symbolic link", which are answers ([`NoFollow`]).
pub fn read_no_follow<T>(path: &Path, f: impl FnOnce(&[u8]) -> T) -> io::Result<NoFollow<T>> {
    let file = match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(path) {
        Ok(file) => file,
        Err(e) => return answer(e),
    };
    BUFFER.with(|cell| {
        // A callback that reads again gets a buffer of its own.
        let mut own = Vec::new();
        let mut shared = cell.try_borrow_mut().ok();
        let buf = shared.as_deref_mut().unwrap_or(&mut own);
        buf.clear();
        buf.reserve(8 * 1024);
        let read = Unsized(&file).read_to_end(buf);
        let out = match read {
            Ok(_) => Ok(NoFollow::Read(f(buf))),
            Err(e) => answer(e),
        };
        if buf.capacity() > KEEP_BUFFER {
            *buf = Vec::new();
        }
        out
    })
}

fn answer<T>(e: io::Error) -> io::Result<NoFollow<T>> {
    match e.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::IsADirectory | io::ErrorKind::NotADirectory => {
            Ok(NoFollow::Missing)
        }
        _ if e.raw_os_error() == Some(libc::ELOOP) => Ok(NoFollow::Link),
        _ => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_files_and_refuses_to_follow_links() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let file = tmp.path().join("a.md");
        let read = |p: &Path| read_no_follow(p, <[u8]>::to_vec);
        let big = "第一行\n".repeat(50_000);
        std::fs::write(&file, &big).expect("write");
        assert!(matches!(read(&file), Ok(NoFollow::Read(b)) if b == big.as_bytes()));
        std::fs::write(&file, "x").expect("write");
        assert!(matches!(read(&file), Ok(NoFollow::Read(b)) if b == b"x"));
        // A read inside the callback of another gets its own buffer.
        let nested = read_no_follow(&file, |outer| (outer.to_vec(), read(&file).ok()));
        assert!(matches!(nested, Ok(NoFollow::Read((o, Some(NoFollow::Read(i))))) if o == b"x" && i == b"x"));
        std::fs::write(&file, "").expect("write");
        assert!(matches!(read(&file), Ok(NoFollow::Read(b)) if b.is_empty()));
        std::os::unix::fs::symlink(&file, tmp.path().join("link.md")).expect("symlink");
        assert!(matches!(read(&tmp.path().join("link.md")), Ok(NoFollow::Link)));
        assert!(matches!(read(&tmp.path().join("none.md")), Ok(NoFollow::Missing)));
        assert!(matches!(read(tmp.path()), Ok(NoFollow::Missing)));
        assert!(matches!(read(&file.join("under-a-file")), Ok(NoFollow::Missing)));
    }
}
