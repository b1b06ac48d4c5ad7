//! Read-only views of a pack at any commit: the files of a commit's tree, a
//! blob at a commit, the paths changed between two commits, and resolving a
//! commit-ish or a date to a commit. Used by derived data (the search index)
//! that is tied to the commit it was built from.

use std::path::{Path, PathBuf};

use git2::{DiffOptions, ErrorCode, ObjectType, Oid};

use super::beside_git::reread;
use super::{PackRepo, Result, git_err};

impl PackRepo {
    /// The directory for derived data of this pack (`.git/engram/`), which is
    /// outside the working tree and never committed. It may not exist yet.
    pub fn derived_dir(&self) -> PathBuf {
        self.git_dir().join("engram")
    }

    /// Re-reads HEAD from disk: the full id of the commit it points at, if any
    /// (sees commits made by other processes).
    pub fn current_head(&self) -> Result<Option<String>> {
        Ok(self.head_commit()?.map(|c| c.id().to_string()))
    }

    /// Resolves a commit-ish (full or abbreviated id, branch, tag, `HEAD~2`) to
    /// the full id of a commit; `None` when it names nothing.
    pub fn resolve_revision(&self, rev: &str) -> Result<Option<String>> {
        let obj = match reread(|| self.repo.revparse_single(rev.trim())) {
            Ok(o) => o,
            Err(e) if names_nothing(&e) => return Ok(None),
            Err(e) => return Err(git_err("resolving a revision", &self.dir, e)),
        };
        Ok(obj.peel_to_commit().ok().map(|c| c.id().to_string()))
    }

    /// The newest commit on HEAD's first-parent line whose commit time is
    /// before `time` (seconds since the epoch); `None` when there is none.
    pub fn commit_before(&self, time: i64) -> Result<Option<String>> {
        let mut cur = self.head_commit()?;
        while let Some(c) = cur {
            if c.time().seconds() < time {
                return Ok(Some(c.id().to_string()));
            }
            cur = match c.parent(0) {
                Ok(p) => Some(p),
                Err(e) if e.code() == ErrorCode::NotFound => None,
                Err(e) => return Err(git_err("reading a parent commit", &self.dir, e)),
            };
        }
        Ok(None)
    }

    /// The commit with the full id `commit`.
    pub(super) fn commit_by_id(&self, commit: &str) -> Result<git2::Commit<'_>> {
        let oid = Oid::from_str(commit).map_err(|e| git_err("parsing a commit id", &self.dir, e))?;
        reread(|| self.repo.find_commit(oid)).map_err(|e| git_err("reading a commit", &self.dir, e))
    }

    fn tree_of(&self, commit: &str) -> Result<git2::Tree<'_>> {
        let c = self.commit_by_id(commit)?;
        c.tree().map_err(|e| git_err("reading a commit's tree", &self.dir, e))
    }

    /// Every file (blob) path of a commit's tree, sorted.
    pub fn list_files_at(&self, commit: &str) -> Result<Vec<String>> {
        self.snapshot_of(Some(self.commit_by_id(commit)?.id()))?.list_files_recursive("")
    }

    /// Reads several paths of one commit (one tree lookup); absent paths are `None`.
    pub fn read_many_at(&self, commit: &str, paths: &[String]) -> Result<Vec<Option<Vec<u8>>>> {
        let tree = self.tree_of(commit)?;
        let mut out = Vec::with_capacity(paths.len());
        for path in paths {
            let content = match tree.get_path(Path::new(path)) {
                Ok(e) if e.kind() == Some(ObjectType::Blob) => Some(
                    reread(|| self.repo.find_blob(e.id()))
                        .map_err(|e| git_err("reading a blob", &self.dir, e))?
                        .content()
                        .to_vec(),
                ),
                Ok(_) => None,
                Err(e) if e.code() == ErrorCode::NotFound => None,
                Err(e) => return Err(git_err("reading a tree", &self.dir, e)),
            };
            out.push(content);
        }
        Ok(out)
    }

    /// File paths that differ between two commits (added, deleted, modified;
    /// both sides of a rename), sorted and deduplicated.
    pub fn changed_paths(&self, from: &str, to: &str) -> Result<Vec<String>> {
        if from == to {
            return Ok(Vec::new());
        }
        let old = self.tree_of(from)?;
        let new = self.tree_of(to)?;
        let mut opts = DiffOptions::new();
        opts.ignore_submodules(true);
        let diff = self
            .repo
            .diff_tree_to_tree(Some(&old), Some(&new), Some(&mut opts))
            .map_err(|e| git_err("diffing two commits", &self.dir, e))?;
        let mut out = Vec::new();
        for delta in diff.deltas() {
            for file in [delta.old_file(), delta.new_file()] {
                if let Some(p) = file.path().and_then(Path::to_str) {
                    out.push(p.to_owned());
                }
            }
        }
        out.sort();
        out.dedup();
        Ok(out)
    }
}

/// Whether a failed `revparse` means the revision names nothing (rather than a damaged
/// repository or an unreadable file).
pub(super) fn names_nothing(e: &git2::Error) -> bool {
    matches!(e.code(), ErrorCode::NotFound | ErrorCode::Ambiguous | ErrorCode::InvalidSpec)
}
