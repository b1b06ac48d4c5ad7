//! One way to read a pack's files, from the working tree (reads: hand edits
//! included) or from a store [`Snapshot`] (inside a write, or a proposing caller's read).

use std::path::Path;

use crate::ops::{Engram, EngramError, Result};
use crate::pack_path::PackPath;
use crate::pack_root::{Found, Kind, PackRoot};
use crate::store::{Snapshot, StoreError};

/// Read access to the files of a pack.
pub(crate) trait PackFiles {
    /// Names of the entries directly under `dir` (files and directories), sorted.
    fn names(&self, dir: &str) -> Result<Vec<String>>;
    /// A file's text; `None` when absent (or not a regular file).
    fn text(&self, path: &str) -> Result<Option<String>>;
}

/// The working tree of a pack, read through a handle of its directory: symbolic links are
/// never followed (see [`crate::pack_root`]).
pub(crate) struct WorkTree(PackRoot);

impl WorkTree {
    /// Opens the working tree of the pack at `dir`.
    pub(crate) fn open(dir: &Path) -> Result<Self> {
        PackRoot::open(dir)
            .map(Self)
            .map_err(|source| StoreError::Io { step: "open", path: dir.to_owned(), source }.into())
    }

    /// `rel` as a pack path (`None` for the pack directory itself); a path engram built
    /// that is not one names nothing.
    fn path(rel: &str) -> Option<Option<PackPath>> {
        if rel.is_empty() {
            return Some(None);
        }
        PackPath::parse(rel).ok().map(Some)
    }

    fn io(&self, step: &'static str, rel: &str, source: std::io::Error) -> StoreError {
        StoreError::Io { step, path: self.0.path().join(rel), source }
    }
}

impl PackFiles for WorkTree {
    fn names(&self, dir: &str) -> Result<Vec<String>> {
        let Some(path) = Self::path(dir) else { return Ok(Vec::new()) };
        let entries = match self.0.list(path.as_ref()) {
            Ok(Found::Here(entries)) => entries,
            Ok(_) => return Ok(Vec::new()),
            Err(e) => return Err(self.io("list", dir, e).into()),
        };
        let mut names: Vec<String> =
            entries.into_iter().filter(|(_, kind)| *kind != Kind::Link).map(|(name, _)| name).collect();
        names.sort();
        Ok(names)
    }

    fn text(&self, path: &str) -> Result<Option<String>> {
        let Some(Some(rel)) = Self::path(path) else { return Ok(None) };
        match self.0.read(&rel, |bytes| String::from_utf8_lossy(bytes).replace("\r\n", "\n")) {
            Ok(Found::Here(text)) => Ok(Some(text)),
            Ok(_) => Ok(None),
            Err(e) => Err(self.io("read", path, e).into()),
        }
    }
}

impl PackFiles for Snapshot<'_> {
    fn names(&self, dir: &str) -> Result<Vec<String>> {
        let mut names = self.list(dir)?;
        names.sort();
        Ok(names)
    }

    fn text(&self, path: &str) -> Result<Option<String>> {
        match self.read_text(path) {
            Err(StoreError::NotAFile { .. }) => Ok(None),
            other => Ok(other?),
        }
    }
}

impl Engram {
    /// Runs `f` on the files a tool call reads of the pack at `dir`: its working tree, or for
    /// a proposing caller (`serve --propose`) that has a proposal branch there, that branch's
    /// tip — the pack as it is now plus the caller's own proposals (see `packs/review.rs`).
    pub(crate) fn read_pack_files<T, E>(
        &self,
        dir: &Path,
        f: impl FnOnce(&dyn PackFiles) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E>
    where
        E: From<EngramError>,
    {
        match self.proposal_read_target(dir)? {
            Some(tip) => {
                self.with_existing_repo(dir, |repo| Ok(f(&repo.snapshot_at(&tip)?)))?.unwrap_or_else(|| {
                    Err(EngramError::Invalid {
                        field: "name",
                        reason: format!("{} is not a repository", dir.display()),
                    }
                    .into())
                })
            }
            None => f(&WorkTree::open(dir)?),
        }
    }
}
