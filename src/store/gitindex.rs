//! The git index (`.git/index`) as this process last wrote it.
//!
//! After a commit the index must list the new blob ids and the files' stat
//! data, or `git status` reports every written file as modified. Going through
//! libgit2 means re-reading and re-verifying the whole index (it changed on
//! disk: this process swapped it in) and converting every entry, on every
//! write — O(files in the pack), and packs with long histories have hundreds
//! of rolled segments. Here the encoded entries are kept by path, the few a
//! write changes are replaced, and the file is encoded anew (version 2, see
//! `gitformat/index-format.txt`). The model is used only while `.git/index`
//! still is the file this process wrote (same inode, size and times, and the
//! same trailing checksum: file times tick coarsely and engram's writers swap
//! two inodes back and forth, so another process's index written in the same
//! tick can carry the same stamp); anything else (a `git add` by hand, another
//! process's write) goes through libgit2 and the model is rebuilt from what it
//! read.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use git2::IndexEntry;

/// Identity of the index file as written: inode, size, change and modification
/// times, and the checksum that ends the file (a hash of all of its content).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stamp {
    ino: u64,
    size: u64,
    ctime: (i64, i64),
    mtime: (i64, i64),
    checksum: [u8; 20],
}

/// The last 20 bytes of a file: an index file's SHA-1 checksum of its content.
fn trailing_checksum(file: &fs::File, size: u64) -> Option<[u8; 20]> {
    #[cfg(unix)]
    {
        let mut out = [0u8; 20];
        std::os::unix::fs::FileExt::read_exact_at(file, &mut out, size.checked_sub(20)?).ok()?;
        Some(out)
    }
    #[cfg(not(unix))]
    {
        let _ = (file, size);
        None
    }
}

impl Stamp {
    /// The stamp of the index file at `path` (`None` when there is none, or not here).
    #[cfg(unix)]
    pub(super) fn of(path: &Path) -> Option<Self> {
        use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
        // Opened without following a link: the index is a regular file or not ours.
        let file = fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(path).ok()?;
        let m = file.metadata().ok()?;
        Some(Self {
            ino: m.ino(),
            size: m.len(),
            ctime: (m.ctime(), m.ctime_nsec()),
            mtime: (m.mtime(), m.mtime_nsec()),
            checksum: trailing_checksum(&file, m.len())?,
        })
    }

    /// The stamp of the index file at `path` (not available on this platform).
    #[cfg(not(unix))]
    pub(super) fn of(_path: &Path) -> Option<Self> {
        None
    }
}

/// The entries of an index file this process wrote, encoded, by path.
pub(super) struct KnownIndex {
    stamp: Stamp,
    entries: BTreeMap<Vec<u8>, Vec<u8>>,
}

impl KnownIndex {
    /// The model of `index`, just written to `index_path`; `None` when an entry
    /// cannot be encoded as version 2 (conflict stages, extended flags).
    pub(super) fn of(index: &git2::Index, index_path: &Path) -> Option<Self> {
        let mut entries = BTreeMap::new();
        for e in index.iter() {
            if stage(&e) != 0 {
                return None;
            }
            entries.insert(e.path.clone(), encode_entry(&e)?);
        }
        Some(Self { stamp: Stamp::of(index_path)?, entries })
    }

    /// True while `index_path` is the file this model describes.
    pub(super) fn is_current(&self, index_path: &Path) -> bool {
        Stamp::of(index_path) == Some(self.stamp)
    }

    /// Sets the entry of a path.
    pub(super) fn put(&mut self, entry: &IndexEntry) -> Option<()> {
        self.entries.insert(entry.path.clone(), encode_entry(entry)?);
        Some(())
    }

    /// Removes the entry of a path (if any).
    pub(super) fn remove(&mut self, path: &str) {
        self.entries.remove(path.as_bytes());
    }

    /// The index file's bytes.
    pub(super) fn encode(&self) -> Vec<u8> {
        encode_file(self.entries.values().map(Vec::as_slice), self.entries.len())
    }

    /// Records that the model was written to `index_path`.
    pub(super) fn written(&mut self, index_path: &Path) -> bool {
        match Stamp::of(index_path) {
            Some(stamp) => {
                self.stamp = stamp;
                true
            }
            None => false,
        }
    }
}

fn stage(e: &IndexEntry) -> u16 {
    (e.flags >> 12) & 0x3
}

/// One version-2 entry: stat fields, id, flags, path, one to eight NULs.
/// `None` for entries that need extended flags (a later version).
pub(super) fn encode_entry(e: &IndexEntry) -> Option<Vec<u8>> {
    const EXTENDED: u16 = 0x4000;
    if e.flags & EXTENDED != 0 {
        return None;
    }
    let mut out = Vec::with_capacity(70 + e.path.len());
    for field in [
        e.ctime.seconds() as u32,
        e.ctime.nanoseconds(),
        e.mtime.seconds() as u32,
        e.mtime.nanoseconds(),
        e.dev,
        e.ino,
        e.mode,
        e.uid,
        e.gid,
        e.file_size,
    ] {
        out.extend_from_slice(&field.to_be_bytes());
    }
    out.extend_from_slice(e.id.as_bytes());
    // Name length (capped at 0xfff, as git does) with the stage and assume-valid bits.
    let flags = (e.flags & 0xf000) | (e.path.len().min(0xfff) as u16);
    out.extend_from_slice(&flags.to_be_bytes());
    out.extend_from_slice(&e.path);
    let len = out.len();
    out.resize((len + 8) / 8 * 8, 0);
    Some(out)
}

/// A whole version-2 index file from encoded entries in path order (no
/// extensions: the tree cache is an optional speed-up git rebuilds).
pub(super) fn encode_file<'a>(entries: impl Iterator<Item = &'a [u8]>, count: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(12 + count * 96 + 20);
    out.extend_from_slice(b"DIRC");
    out.extend_from_slice(&2u32.to_be_bytes());
    out.extend_from_slice(&(count as u32).to_be_bytes());
    for e in entries {
        out.extend_from_slice(e);
    }
    let digest = super::checksum::sha1(&out);
    out.extend_from_slice(&digest);
    out
}

#[cfg(all(test, any(target_os = "linux", target_os = "macos")))]
mod tests {
    use super::*;

    #[test]
    fn the_model_follows_the_file_it_wrote() {
        let tmp = tempfile::tempdir().expect("tmp");
        let repo = git2::Repository::init(tmp.path()).expect("init");
        for (name, text) in [("a.md", "a\n"), ("memory/b.md", "b\n")] {
            let full = tmp.path().join(name);
            fs::create_dir_all(full.parent().expect("parent")).expect("dir");
            fs::write(&full, text).expect("write");
        }
        let mut index = repo.index().expect("index");
        index.add_path(Path::new("a.md")).expect("add");
        index.add_path(Path::new("memory/b.md")).expect("add");
        index.write().expect("write");
        let index_path = repo.path().join("index");
        let mut model = KnownIndex::of(&index, &index_path).expect("model");
        assert!(model.is_current(&index_path));

        // A changed entry and a removed one, written through the model.
        fs::write(tmp.path().join("memory/b.md"), "bb\n").expect("write");
        let mut entry = index.get_path(Path::new("memory/b.md"), 0).expect("entry");
        entry.id = repo.blob(b"bb\n").expect("blob");
        entry.file_size = 3;
        model.put(&entry).expect("encodable");
        model.remove("a.md");
        fs::write(&index_path, model.encode()).expect("write the index");
        assert!(model.written(&index_path));
        let mut reread = git2::Index::open(&index_path).expect("open");
        reread.read(true).expect("valid index");
        let paths: Vec<Vec<u8>> = reread.iter().map(|e| e.path).collect();
        assert_eq!(paths, vec![b"memory/b.md".to_vec()]);
        assert_eq!(reread.get_path(Path::new("memory/b.md"), 0).expect("entry").id, entry.id);

        // Written by someone else: the model no longer applies.
        let mut theirs = repo.index().expect("index");
        theirs.read(true).expect("read");
        theirs.add_path(Path::new("a.md")).expect("add");
        theirs.write().expect("write");
        assert!(!model.is_current(&index_path));
    }
}
