//! Writing the objects of one commit as one small pack.
//!
//! libgit2 writes every new object as a loose file: a temporary file, a
//! hard link, an unlink, plus an existence check that rescans the pack
//! directory. A capture makes six objects (three blobs, two trees, the
//! commit), so six new inodes, each of which the packer later deletes again
//! — and on ext4 a directory full of recently deleted inodes makes every
//! later file creation slower. Here the blobs, the updated trees and the
//! commit are serialised by us (the formats are git's, byte for byte; the
//! tests compare the ids with libgit2's) and handed to libgit2's indexer as
//! one pack: two new files per commit, nothing to delete later. Small packs
//! are merged, with deltas, as they accumulate (see `gc`).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;

use std::sync::Arc;

use git2::{ObjectType, Oid, Repository, Signature};

use super::objcache::{MODE_TREE, ObjectCache, TreeEntries};

use super::{Result, StoreError, git_err, io_err};

/// Objects to write, in the order they were made.
#[derive(Default)]
pub(super) struct NewObjects {
    objects: Vec<(ObjectType, Oid, Vec<u8>)>,
    /// The entries of the new trees (kept in the object cache once written).
    trees: Vec<(Oid, Arc<TreeEntries>)>,
    ids: std::collections::HashSet<Oid>,
}

impl NewObjects {
    /// Adds an object and returns its id (an object already added is not repeated).
    pub(super) fn add(&mut self, kind: ObjectType, bytes: Vec<u8>, dir: &Path) -> Result<Oid> {
        let id = Oid::hash_object(kind, &bytes).map_err(|e| git_err("hashing an object", dir, e))?;
        if self.ids.insert(id) {
            self.objects.push((kind, id, bytes));
        }
        Ok(id)
    }

    /// Writes the objects into the repository as one pack (fsynced when
    /// `durable`), then keeps the blobs and trees in `cache`.
    pub(super) fn write(self, repo: &Repository, durable: bool, cache: &ObjectCache) -> Result<()> {
        if self.objects.is_empty() {
            return Ok(());
        }
        let pack = encode_pack(&self.objects)?;
        install_pack(repo.path(), &pack, durable)?;
        for (kind, id, bytes) in self.objects {
            if kind == ObjectType::Blob {
                cache.keep_blob(id, Arc::from(bytes));
            }
        }
        for (id, entries) in self.trees {
            cache.keep_tree(id, entries);
        }
        Ok(())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The length of a pack's header: `PACK`, the version, the object count.
pub(super) const PACK_HEADER_LEN: usize = 12;
/// The first bytes of a version-2 pack index (then the version, 2).
pub(super) const IDX_MAGIC: [u8; 4] = [0xff, b't', b'O', b'c'];
/// The length of a version-2 index's header: magic, version and the 256 fan-out counts
/// (the last of which is the object count).
pub(super) const IDX_HEADER_LEN: usize = 8 + 256 * 4;

/// A pack and its index, ready to be installed.
pub(super) struct EncodedPack {
    pub(super) pack: Vec<u8>,
    pub(super) index: Vec<u8>,
    /// The pack's checksum in hex: its name (`pack-<name>.pack`).
    pub(super) name: String,
    /// The number of objects in it.
    pub(super) objects: usize,
}

/// A version-2 pack of whole (undeltified) objects, quickly compressed (packs
/// are merged, with deltas, later), and its version-2 index — what `git
/// index-pack` would write for it, made here because the objects' ids, offsets
/// and CRCs are known already (libgit2's indexer would inflate and hash
/// everything again).
fn encode_pack(objects: &[(ObjectType, Oid, Vec<u8>)]) -> Result<EncodedPack> {
    let mut pack = PackEncoder::new(objects.iter().map(|(_, _, b)| b.len() / 2 + 32).sum::<usize>());
    for (kind, id, bytes) in objects {
        pack.add_whole(*kind, *id, bytes)?;
    }
    pack.finish()
}

/// A version-2 pack being written, entry by entry, with what its index needs.
pub(super) struct PackEncoder {
    out: Vec<u8>,
    /// (id, offset, crc32 of the entry as stored)
    entries: Vec<(Oid, u64, u32)>,
}

impl PackEncoder {
    /// An empty pack, with room for about `capacity` bytes of entries.
    pub(super) fn new(capacity: usize) -> Self {
        let mut out = Vec::with_capacity(capacity + 32);
        out.extend_from_slice(b"PACK");
        out.extend_from_slice(&2u32.to_be_bytes());
        out.extend_from_slice(&0u32.to_be_bytes()); // the count, set by `finish`
        Self { out, entries: Vec::new() }
    }

    /// Adds an object as a whole (undeltified) entry.
    pub(super) fn add_whole(&mut self, kind: ObjectType, id: Oid, bytes: &[u8]) -> Result<()> {
        let offset = self.out.len();
        let code: u8 = match kind {
            ObjectType::Commit => 1,
            ObjectType::Tree => 2,
            ObjectType::Blob => 3,
            _ => 4,
        };
        let mut size = bytes.len();
        let mut first = (code << 4) | (size & 0x0f) as u8;
        size >>= 4;
        if size > 0 {
            first |= 0x80;
        }
        self.out.push(first);
        while size > 0 {
            let mut byte = (size & 0x7f) as u8;
            size >>= 7;
            if size > 0 {
                byte |= 0x80;
            }
            self.out.push(byte);
        }
        deflate_into(&mut self.out, bytes)?;
        let mut crc = flate2::Crc::new();
        crc.update(&self.out[offset..]);
        self.entries.push((id, offset as u64, crc.sum()));
        Ok(())
    }

    /// Adds the entries of another pack as they are stored: `body` is that pack
    /// without its 12-byte header and its checksum, and `entries` are its index's
    /// (id, offset in that pack, crc32). Copied as one block, the entries keep
    /// their distances, so offset deltas still find their bases (and id deltas
    /// find them by id, in the same pack).
    pub(super) fn add_copied(&mut self, body: &[u8], entries: &[(Oid, u64, u32)]) {
        let shift = (self.out.len() - PACK_HEADER_LEN) as u64;
        self.out.extend_from_slice(body);
        self.entries.extend(entries.iter().map(|&(id, offset, crc)| (id, offset + shift, crc)));
    }

    /// The pack with its count and checksum, and its index.
    pub(super) fn finish(mut self) -> Result<EncodedPack> {
        let count = u32::try_from(self.entries.len()).map_err(|_| StoreError::Io {
            step: "pack",
            path: "a pack".into(),
            source: std::io::Error::other("more than 2^32 objects"),
        })?;
        self.out[8..12].copy_from_slice(&count.to_be_bytes());
        let checksum = super::checksum::sha1(&self.out);
        self.out.extend_from_slice(&checksum);
        let objects = self.entries.len();
        let index = encode_index(self.entries, &checksum)?;
        Ok(EncodedPack { pack: self.out, index, name: hex(&checksum), objects })
    }
}

thread_local! {
    /// One zlib stream per thread, reset for each object (a new one allocates
    /// its tables every time).
    static DEFLATE: std::cell::RefCell<flate2::Compress> =
        std::cell::RefCell::new(flate2::Compress::new(flate2::Compression::fast(), true));
}

/// Appends `bytes` zlib-compressed (quickly: packs are merged, with deltas, later) to `out`.
fn deflate_into(out: &mut Vec<u8>, bytes: &[u8]) -> Result<()> {
    let failed = |e: flate2::CompressError| StoreError::Io {
        step: "compress",
        path: "a pack".into(),
        source: std::io::Error::other(e),
    };
    DEFLATE.with_borrow_mut(|z| {
        z.reset();
        loop {
            out.reserve(bytes.len() / 2 + 64);
            let consumed = usize::try_from(z.total_in()).unwrap_or(bytes.len()).min(bytes.len());
            match z.compress_vec(&bytes[consumed..], out, flate2::FlushCompress::Finish).map_err(failed)? {
                flate2::Status::StreamEnd => return Ok(()),
                flate2::Status::Ok | flate2::Status::BufError => {}
            }
        }
    })
}

/// A version-2 pack index (`.idx`) for `entries` (id, offset, crc32).
fn encode_index(mut entries: Vec<(Oid, u64, u32)>, pack_checksum: &[u8; 20]) -> Result<Vec<u8>> {
    entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut out = Vec::with_capacity(8 + 256 * 4 + entries.len() * 28 + 40);
    out.extend_from_slice(&IDX_MAGIC);
    out.extend_from_slice(&2u32.to_be_bytes());
    let mut fanout = [0u32; 256];
    for (id, _, _) in &entries {
        fanout[usize::from(id.as_bytes()[0])] += 1;
    }
    let mut total = 0u32;
    for count in fanout {
        total += count;
        out.extend_from_slice(&total.to_be_bytes());
    }
    for (id, _, _) in &entries {
        out.extend_from_slice(id.as_bytes());
    }
    for (_, _, crc) in &entries {
        out.extend_from_slice(&crc.to_be_bytes());
    }
    for (_, offset, _) in &entries {
        // A commit's objects or a few small packs; past 2 GiB would need the large-offset table.
        let small =
            u32::try_from(*offset).ok().filter(|o| o & 0x8000_0000 == 0).ok_or_else(|| StoreError::Io {
                step: "index",
                path: "a pack".into(),
                source: std::io::Error::other("a pack written here larger than 2 GiB"),
            })?;
        out.extend_from_slice(&small.to_be_bytes());
    }
    out.extend_from_slice(pack_checksum);
    let own = super::checksum::sha1(&out);
    out.extend_from_slice(&own);
    Ok(out)
}

/// Puts a pack and its index into `objects/pack` of `git_dir` as git does:
/// each written to a temporary file and renamed into place, the pack first, so
/// a reader that finds the index finds the whole pack. A pack of the same name
/// is the same objects: it is left as it is. The temporary files are taken from
/// the reserve of empty files when it has some ([`super::file_reserve`]).
fn install_pack(git_dir: &Path, encoded: &EncodedPack, durable: bool) -> Result<()> {
    let pack_dir = git_dir.join("objects").join("pack");
    let pack_path = pack_dir.join(format!("pack-{}.pack", encoded.name));
    let idx_path = pack_dir.join(format!("pack-{}.idx", encoded.name));
    if idx_path.exists() && pack_path.exists() {
        return Ok(());
    }
    let installed = install_files(git_dir, &pack_dir, encoded, durable);
    if installed.is_err() {
        // A pack without its index is of no use to anyone: it goes with the failed write.
        if !idx_path.exists() {
            let _ = std::fs::remove_file(&pack_path);
        }
        return installed;
    }
    if durable {
        #[cfg(unix)]
        std::fs::File::open(&pack_dir)
            .and_then(|f| f.sync_all())
            .map_err(|e| io_err("sync", &pack_dir, e))?;
    }
    Ok(())
}

/// Writes the pack, then its index, each through a temporary (or reserve)
/// file renamed into place. A file that could not be written and renamed
/// (a full disk) is removed, so a failed write leaves no temporary file.
fn install_files(git_dir: &Path, pack_dir: &Path, encoded: &EncodedPack, durable: bool) -> Result<()> {
    let pack_path = pack_dir.join(format!("pack-{}.pack", encoded.name));
    let idx_path = pack_dir.join(format!("pack-{}.idx", encoded.name));
    for (path, bytes, ext) in [(&pack_path, &encoded.pack, "pack"), (&idx_path, &encoded.index, "idx")] {
        // Not with durability on: there a rename out of the reserve would be one
        // more directory to sync.
        if !durable && let Some((spare, file, permissions)) = super::file_reserve::take(git_dir) {
            if write_and_rename(file, Some(permissions), &spare, bytes, durable, path).is_ok() {
                continue;
            }
            // Half written (a full disk): not a spare any more.
            let _ = std::fs::remove_file(&spare);
        }
        // Writes hold the pack's write lock, so the name is this write's alone.
        let tmp = pack_dir.join(format!("{TEMP_PREFIX}{}.{ext}", encoded.name));
        let file = match create_read_only(&tmp) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(pack_dir).and_then(|()| create_read_only(&tmp))
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                // Left by a write that was killed: this write makes it anew.
                std::fs::remove_file(&tmp).and_then(|()| create_read_only(&tmp))
            }
            other => other,
        }
        .map_err(|e| io_err("create a temporary pack file", &tmp, e))?;
        if let Err(e) = write_and_rename(file, None, &tmp, bytes, durable, path) {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    }
    Ok(())
}

/// Writes `bytes` into the empty `file` at `tmp`, makes it read-only (as git
/// makes pack files; `permissions` are the file's own, `None` when it was
/// created read-only), then renames it to `path`.
fn write_and_rename(
    mut file: std::fs::File,
    permissions: Option<std::fs::Permissions>,
    tmp: &Path,
    bytes: &[u8],
    durable: bool,
    path: &Path,
) -> Result<()> {
    file.write_all(bytes).map_err(|e| io_err("write", tmp, e))?;
    if let Some(mut permissions) = permissions.filter(|p| !p.readonly()) {
        permissions.set_readonly(true);
        file.set_permissions(permissions).map_err(|e| io_err("make read-only", tmp, e))?;
    }
    if durable {
        file.sync_all().map_err(|e| io_err("sync", tmp, e))?;
    }
    drop(file);
    std::fs::rename(tmp, path).map_err(|e| io_err("rename into place", path, e))
}

/// Names of the temporary files a write makes in `objects/pack` (packing
/// removes old ones a killed write left).
pub(super) const TEMP_PREFIX: &str = "tmp_engram_";

/// Creates a new file, read-only once closed (pack files are, as git makes them).
pub(super) fn create_read_only(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o444);
    }
    options.open(path)
}

/// A change below a tree: a new (mode, blob id) for a path, or `None` to remove it.
pub(super) type PathChanges<'a> = BTreeMap<&'a str, Option<(i32, Oid)>>;

/// Builds the tree `base` updated with `changes` (paths relative to it),
/// adding every new tree to `objects`. Returns `None` when the result is an
/// empty subtree (which git does not store), the base id when nothing changed.
pub(super) fn updated_tree(
    repo: &Repository,
    cache: &ObjectCache,
    dir: &Path,
    base: Option<Oid>,
    changes: &PathChanges<'_>,
    objects: &mut NewObjects,
    is_root: bool,
) -> Result<Option<Oid>> {
    // name → (mode, id)
    let mut entries: TreeEntries = match base {
        Some(id) => cache.tree(repo, id).map_err(|e| git_err("reading a tree", dir, e))?.as_ref().clone(),
        None => TreeEntries::new(),
    };
    // Group the changes by their first component.
    let mut below: BTreeMap<&str, PathChanges<'_>> = BTreeMap::new();
    for (path, change) in changes {
        match path.split_once('/') {
            None => match change {
                Some((mode, id)) => {
                    entries.insert(path.as_bytes().to_vec(), (*mode, *id));
                }
                None => {
                    entries.remove(path.as_bytes());
                }
            },
            Some((first, rest)) => {
                below.entry(first).or_default().insert(rest, *change);
            }
        }
    }
    for (name, sub_changes) in below {
        let sub_base = match entries.get(name.as_bytes()) {
            Some((mode, id)) if *mode == MODE_TREE => Some(*id),
            _ => None,
        };
        match updated_tree(repo, cache, dir, sub_base, &sub_changes, objects, false)? {
            Some(id) => {
                entries.insert(name.as_bytes().to_vec(), (MODE_TREE, id));
            }
            None => {
                entries.remove(name.as_bytes());
            }
        }
    }
    if entries.is_empty() && !is_root {
        return Ok(None);
    }
    let bytes = serialize_tree(&entries);
    let id = Oid::hash_object(ObjectType::Tree, &bytes).map_err(|e| git_err("hashing a tree", dir, e))?;
    if base == Some(id) {
        return Ok(Some(id));
    }
    objects.trees.push((id, Arc::new(entries)));
    objects.add(ObjectType::Tree, bytes, dir).map(Some)
}

/// Git's tree encoding: entries sorted as if directory names ended in `/`.
fn serialize_tree(entries: &TreeEntries) -> Vec<u8> {
    let mut sorted: Vec<(&Vec<u8>, &(i32, Oid))> = entries.iter().collect();
    let key = |name: &[u8], mode: i32| {
        let mut k = name.to_vec();
        if mode == MODE_TREE {
            k.push(b'/');
        }
        k
    };
    sorted.sort_by_key(|(name, (mode, _))| key(name, *mode));
    let mut out = Vec::with_capacity(sorted.len() * 40);
    for (name, (mode, id)) in sorted {
        out.extend_from_slice(format!("{mode:o} ").as_bytes());
        out.extend_from_slice(name);
        out.push(0);
        out.extend_from_slice(id.as_bytes());
    }
    out
}

/// A commit object's bytes, as libgit2 writes them.
pub(super) fn commit_bytes(tree: Oid, parents: &[Oid], author: &Signature<'_>, message: &str) -> Vec<u8> {
    let mut out = format!("tree {tree}\n");
    for p in parents {
        out.push_str(&format!("parent {p}\n"));
    }
    let sig = signature_line(author);
    out.push_str(&format!("author {sig}\ncommitter {sig}\n\n"));
    out.push_str(message);
    out.into_bytes()
}

/// A signature as commits and reflogs spell it: `name <email> <seconds> <±hhmm>`.
pub(super) fn signature_line(sig: &Signature<'_>) -> String {
    let when = sig.when();
    let offset = when.offset_minutes();
    let sign = if offset < 0 { '-' } else { '+' };
    let abs = offset.abs();
    format!(
        "{} <{}> {} {sign}{:02}{:02}",
        String::from_utf8_lossy(sig.name_bytes()),
        String::from_utf8_lossy(sig.email_bytes()),
        when.seconds(),
        abs / 60,
        abs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use git2::build::TreeUpdateBuilder;

    #[test]
    fn trees_commits_and_packs_match_libgit2() {
        let tmp = tempfile::tempdir().expect("tmp");
        let repo = Repository::init(tmp.path()).expect("init");
        let dir = tmp.path();
        let blob = |s: &str| repo.blob(s.as_bytes()).expect("blob");
        // A base tree with nesting and names that sort differently as directories.
        let mut base = TreeUpdateBuilder::new();
        for (p, c) in
            [("a.md", "a"), ("a/x.md", "x"), ("a-b", "ab"), ("memory/_log/c/1.md", "1"), ("memory/c.md", "c")]
        {
            base.upsert(p, blob(c), git2::FileMode::Blob);
        }
        let empty =
            repo.find_tree(repo.treebuilder(None).and_then(|b| b.write()).expect("empty")).expect("tree");
        let base_id = base.create_updated(&repo, &empty).expect("base");
        let base = repo.find_tree(base_id).expect("base");
        let cases: Vec<Vec<(&str, Option<&str>)>> = vec![
            vec![("memory/c.md", Some("c2")), ("memory/_index.md", Some("i"))],
            vec![("memory/_log/c/2.md", Some("2")), ("a/x.md", None)],
            vec![("memory/_log/c/1.md", None)],
            vec![("new/deep/file.md", Some("n")), ("a.md", None)],
            vec![("a.md", Some("a"))],
        ];
        for case in cases {
            let mut theirs = TreeUpdateBuilder::new();
            let mut ours: PathChanges<'_> = BTreeMap::new();
            for (p, c) in &case {
                match c {
                    Some(c) => {
                        let id = blob(c);
                        theirs.upsert(*p, id, git2::FileMode::Blob);
                        ours.insert(p, Some((super::super::objcache::MODE_BLOB, id)));
                    }
                    None => {
                        theirs.remove(*p);
                        ours.insert(p, None);
                    }
                }
            }
            let expected = theirs.create_updated(&repo, &base).expect("libgit2");
            let mut objects = NewObjects::default();
            let cache = ObjectCache::default();
            let got =
                updated_tree(&repo, &cache, dir, Some(base_id), &ours, &mut objects, true).expect("ours");
            assert_eq!(got, Some(expected), "{case:?}");
        }
        // A commit, written through a pack, reads back as libgit2 would have made it.
        let sig =
            Signature::new("engram", "engram@localhost", &git2::Time::new(1_700_000_000, 120)).expect("sig");
        let mut objects = NewObjects::default();
        let blob_bytes = b"packed blob\n".to_vec();
        let blob_id = objects.add(ObjectType::Blob, blob_bytes, dir).expect("blob");
        let mut changes: PathChanges<'_> = BTreeMap::new();
        changes.insert("memory/p.md", Some((super::super::objcache::MODE_BLOB, blob_id)));
        let cache = ObjectCache::default();
        let tree = updated_tree(&repo, &cache, dir, Some(base_id), &changes, &mut objects, true)
            .expect("tree")
            .expect("root");
        let message = "capture: x — 中文\n\nEngram-Tool: capture_memory\n";
        let commit =
            objects.add(ObjectType::Commit, commit_bytes(tree, &[], &sig, message), dir).expect("commit");
        objects.write(&repo, true, &cache).expect("pack");
        let read = repo.find_commit(commit).expect("commit readable");
        assert_eq!(read.message().ok(), Some(message));
        assert_eq!(read.author().when().offset_minutes(), 120);
        let tree_obj = repo.find_tree(tree).expect("tree readable");
        let made = repo.commit(None, &sig, &sig, message, &tree_obj, &[]).expect("libgit2 commit");
        assert_eq!(made, commit, "same bytes as libgit2's commit");
        let p = read.tree().expect("tree").get_path(Path::new("memory/p.md")).expect("path").id();
        assert_eq!(repo.find_blob(p).expect("blob").content(), b"packed blob\n");
    }
}
