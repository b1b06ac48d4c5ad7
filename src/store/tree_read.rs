//! Reading the HEAD tree outside a write: recursive listings of a directory
//! and a read-only [`Snapshot`] of HEAD, for tools that only read; and
//! [`read_folder`], a snapshot of a folder that is not a repository yet.

use std::collections::BTreeMap;
use std::path::Path;

use git2::{ObjectType, TreeWalkMode, TreeWalkResult};

use super::beside_git::reread;
use super::{PackRepo, Result, Snapshot, git_err, io_err};

impl Snapshot<'_> {
    /// Every file below `dir`, recursively, as full paths from the pack root, sorted.
    pub fn list_files_recursive(&self, dir: &str) -> Result<Vec<String>> {
        Ok(self.files_recursive(dir, false)?.into_iter().map(|(p, _)| p).collect())
    }

    /// Every file below `dir`, recursively, with its content as (lossy) UTF-8 text,
    /// sorted by path.
    pub fn read_files_recursive(&self, dir: &str) -> Result<Vec<(String, String)>> {
        self.files_recursive(dir, true)
    }

    fn files_recursive(&self, dir: &str, with_content: bool) -> Result<Vec<(String, String)>> {
        let Some(id) = self.subtree_id(dir)? else { return Ok(Vec::new()) };
        let sub = reread(|| self.repo.find_tree(id)).map_err(|e| git_err("reading a tree", self.dir, e))?;
        let prefix = match dir.trim_end_matches('/') {
            "" => String::new(),
            d => format!("{d}/"),
        };
        let mut out = Vec::new();
        let mut failure = None;
        sub.walk(TreeWalkMode::PreOrder, |root, entry| {
            if entry.kind() != Some(ObjectType::Blob) {
                return TreeWalkResult::Ok;
            }
            let Ok(name) = entry.name() else { return TreeWalkResult::Ok };
            let path = format!("{prefix}{root}{name}");
            let content = if with_content {
                match reread(|| self.repo.find_blob(entry.id())) {
                    Ok(blob) => String::from_utf8_lossy(blob.content()).into_owned(),
                    Err(e) => {
                        failure = Some(e);
                        return TreeWalkResult::Abort;
                    }
                }
            } else {
                String::new()
            };
            out.push((path, content));
            TreeWalkResult::Ok
        })
        .map_err(|e| git_err("walking the tree", self.dir, e))?;
        if let Some(e) = failure {
            return Err(git_err("reading a blob", self.dir, e));
        }
        out.sort();
        Ok(out)
    }
}

impl PackRepo {
    /// Runs `f` on a read-only snapshot of HEAD (an empty one for a repository
    /// without commits). Takes no lock: HEAD is read once, and the snapshot
    /// stays consistent while writers move the branch.
    pub fn read_head<T, E>(&self, f: impl FnOnce(&Snapshot<'_>) -> Result<T, E>) -> Result<T, E>
    where
        E: From<super::StoreError>,
    {
        let head = self.head_oid()?;
        f(&self.snapshot_of(head)?)
    }
}

/// Runs `f` on a read-only snapshot of the files below `prefix` of a folder
/// that is not a repository yet (a pack copied in by hand), read as they are:
/// symbolic links and anything named `.git` are left out. Nothing is written,
/// and no repository is made; the snapshot has no commit.
pub fn read_folder<T, E>(
    dir: &Path,
    prefix: &str,
    f: impl FnOnce(&Snapshot<'_>) -> Result<T, E>,
) -> Result<T, E>
where
    E: From<super::StoreError>,
{
    let mut overlay = BTreeMap::new();
    let mut stack = vec![prefix.trim_end_matches('/').to_owned()];
    while let Some(rel) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(dir.join(&rel)) else { continue };
        for entry in entries.flatten() {
            let Ok(name) = entry.file_name().into_string() else { continue };
            let Ok(kind) = entry.file_type() else { continue };
            let path = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
            if name.eq_ignore_ascii_case(".git") {
                continue;
            }
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() {
                let bytes = std::fs::read(entry.path()).map_err(|e| io_err("read", &entry.path(), e))?;
                overlay.insert(path, Some(bytes));
            }
        }
    }
    // An empty repository in memory: the snapshot reads only its overlay.
    let repo = git2::Odb::new()
        .and_then(git2::Repository::from_odb)
        .map_err(|e| git_err("making an empty repository in memory", dir, e))?;
    let snap = Snapshot { repo: &repo, tree: None, head: None, dir, overlay };
    f(&snap)
}
