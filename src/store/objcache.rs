//! Trees, blobs and commit→tree links this process has recently written or
//! read, by object id.
//!
//! A write reads HEAD's commit, two or three trees and the blobs it edits; all
//! of them are, most of the time, what this process wrote one commit before.
//! Asking libgit2 for them costs a search through every pack index (each miss
//! formats an error message) and, after a new pack appeared, a rescan of the
//! pack directory. Objects never change under their id, so keeping the ones
//! just written (and the ones just read) is always correct, whatever other
//! processes do: a cache miss only means going to libgit2. The cache holds at
//! most [`BUDGET`] bytes and is emptied when it would grow past it.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use git2::{Oid, Repository};

use super::reread::reread;

/// The entries of a tree: name → (mode, id), in name order.
pub(super) type TreeEntries = BTreeMap<Vec<u8>, (i32, Oid)>;

/// Bytes of blobs and trees kept at most (a write touches a few dozen KiB).
const BUDGET: usize = 8 << 20;

/// Blobs larger than this are not kept (they are rare and not re-read often).
const LARGEST_BLOB: usize = 1 << 20;

/// Mode of a subtree entry.
pub(super) const MODE_TREE: i32 = 0o040000;
/// The mode of a regular (non-executable) file entry.
pub(super) const MODE_BLOB: i32 = 0o100644;

#[derive(Default)]
struct Inner {
    trees: HashMap<Oid, Arc<TreeEntries>>,
    blobs: HashMap<Oid, Arc<[u8]>>,
    commit_trees: HashMap<Oid, Oid>,
    bytes: usize,
}

impl Inner {
    fn make_room(&mut self, bytes: usize) {
        if self.bytes + bytes > BUDGET {
            *self = Inner::default();
        }
        self.bytes += bytes;
    }
}

/// See the module docs.
#[derive(Default)]
pub(super) struct ObjectCache {
    inner: Mutex<Inner>,
}

impl ObjectCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The tree `id`, from the cache or from the repository.
    pub(super) fn tree(&self, repo: &Repository, id: Oid) -> Result<Arc<TreeEntries>, git2::Error> {
        if let Some(t) = self.lock().trees.get(&id) {
            return Ok(t.clone());
        }
        let tree = reread(|| repo.find_tree(id))?;
        let entries: TreeEntries =
            tree.iter().map(|e| (e.name_bytes().to_vec(), (e.filemode(), e.id()))).collect();
        let entries = Arc::new(entries);
        self.keep_tree(id, entries.clone());
        Ok(entries)
    }

    /// The content of blob `id`, from the cache or from the repository.
    pub(super) fn blob(&self, repo: &Repository, id: Oid) -> Result<Arc<[u8]>, git2::Error> {
        if let Some(b) = self.lock().blobs.get(&id) {
            return Ok(b.clone());
        }
        let blob = reread(|| repo.find_blob(id))?;
        let content: Arc<[u8]> = Arc::from(blob.content());
        self.keep_blob(id, content.clone());
        Ok(content)
    }

    /// The tree of commit `id`.
    pub(super) fn commit_tree(&self, repo: &Repository, id: Oid) -> Result<Oid, git2::Error> {
        if let Some(t) = self.lock().commit_trees.get(&id) {
            return Ok(*t);
        }
        let tree = reread(|| repo.find_commit(id))?.tree_id();
        self.keep_commit(id, tree);
        Ok(tree)
    }

    /// The entry at `path` (`a/b/c.md`) below the tree `root`; `None` if absent.
    pub(super) fn entry_at(
        &self,
        repo: &Repository,
        root: Oid,
        path: &str,
    ) -> Result<Option<(i32, Oid)>, git2::Error> {
        let mut tree = self.tree(repo, root)?;
        let mut parts = path.split('/').filter(|p| !p.is_empty()).peekable();
        while let Some(part) = parts.next() {
            let Some(&(mode, id)) = tree.get(part.as_bytes()) else { return Ok(None) };
            if parts.peek().is_none() {
                return Ok(Some((mode, id)));
            }
            if mode != MODE_TREE {
                return Ok(None);
            }
            tree = self.tree(repo, id)?;
        }
        Ok(Some((MODE_TREE, root)))
    }

    /// Keeps a tree this process made or read.
    pub(super) fn keep_tree(&self, id: Oid, entries: Arc<TreeEntries>) {
        let size = entries.keys().map(|k| k.len() + 32).sum::<usize>();
        let mut inner = self.lock();
        inner.make_room(size);
        inner.trees.insert(id, entries);
    }

    /// Keeps a blob this process made or read.
    pub(super) fn keep_blob(&self, id: Oid, content: Arc<[u8]>) {
        if content.len() > LARGEST_BLOB {
            return;
        }
        let mut inner = self.lock();
        inner.make_room(content.len());
        inner.blobs.insert(id, content);
    }

    /// Keeps the tree of a commit this process made or read.
    pub(super) fn keep_commit(&self, id: Oid, tree: Oid) {
        let mut inner = self.lock();
        inner.make_room(40);
        inner.commit_trees.insert(id, tree);
    }
}

#[cfg(test)]
mod tests {
    use git2::ObjectType;

    use super::*;

    #[test]
    fn reads_through_and_resolves_paths() {
        let dir = tempfile::tempdir().expect("tmp");
        let repo = Repository::init(dir.path()).expect("init");
        let blob = repo.blob(b"hello\n").expect("blob");
        let mut sub = repo.treebuilder(None).expect("tb");
        sub.insert("c.md", blob, 0o100644).expect("insert");
        let sub = sub.write().expect("sub");
        let mut root = repo.treebuilder(None).expect("tb");
        root.insert("memory", sub, MODE_TREE).expect("insert");
        let root = root.write().expect("root");

        let cache = ObjectCache::default();
        assert_eq!(cache.entry_at(&repo, root, "memory/c.md").expect("entry"), Some((0o100644, blob)));
        assert_eq!(cache.entry_at(&repo, root, "memory/x.md").expect("entry"), None);
        assert_eq!(cache.entry_at(&repo, root, "memory/c.md/deeper").expect("entry"), None);
        assert_eq!(cache.entry_at(&repo, root, "memory").expect("entry"), Some((MODE_TREE, sub)));
        assert_eq!(&*cache.blob(&repo, blob).expect("blob"), b"hello\n");
        // Now served from the cache: an id the repository does not have is still answered.
        let fake = Oid::hash_object(ObjectType::Blob, b"not in the repository").expect("hash");
        cache.keep_blob(fake, Arc::from(&b"kept"[..]));
        assert_eq!(&*cache.blob(&repo, fake).expect("cached"), b"kept");
    }

    #[test]
    fn the_budget_empties_the_cache() {
        let cache = ObjectCache::default();
        let big: Arc<[u8]> = Arc::from(vec![b'x'; LARGEST_BLOB].as_slice());
        for i in 0..(BUDGET / LARGEST_BLOB + 2) {
            let id = Oid::hash_object(ObjectType::Blob, format!("{i}").as_bytes()).expect("hash");
            cache.keep_blob(id, big.clone());
        }
        assert!(cache.lock().bytes <= BUDGET);
    }
}
