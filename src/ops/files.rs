//! One way to read a pack's files, from the working tree (reads: hand edits
//! included) or from a store [`Snapshot`] (inside a write).

use std::fs;
use std::path::{Path, PathBuf};

use crate::store::{Snapshot, StoreError};

/// Read access to the files of a pack.
pub(crate) trait PackFiles {
    /// Names of the entries directly under `dir` (files and directories), sorted.
    fn names(&self, dir: &str) -> Result<Vec<String>, StoreError>;
    /// A file's text; `None` when absent (or not a regular file).
    fn text(&self, path: &str) -> Result<Option<String>, StoreError>;
}

/// The working tree of a pack. Symbolic links are never followed.
pub(crate) struct WorkTree<'a>(pub &'a Path);

impl WorkTree<'_> {
    fn full(&self, rel: &str) -> PathBuf {
        if rel.is_empty() { self.0.to_owned() } else { self.0.join(rel) }
    }
}

impl PackFiles for WorkTree<'_> {
    fn names(&self, dir: &str) -> Result<Vec<String>, StoreError> {
        let path = self.full(dir);
        match fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => {}
            _ => return Ok(Vec::new()),
        }
        let entries = fs::read_dir(&path).map_err(|source| StoreError::Io {
            step: "list",
            path: path.clone(),
            source,
        })?;
        let mut names: Vec<String> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| !t.is_symlink()))
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        names.sort();
        Ok(names)
    }

    fn text(&self, path: &str) -> Result<Option<String>, StoreError> {
        let full = self.full(path);
        match fs::symlink_metadata(&full) {
            Ok(m) if m.is_file() => {}
            _ => return Ok(None),
        }
        match fs::read(&full) {
            Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).replace("\r\n", "\n"))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(StoreError::Io { step: "read", path: full, source }),
        }
    }
}

impl PackFiles for Snapshot<'_> {
    fn names(&self, dir: &str) -> Result<Vec<String>, StoreError> {
        let mut names = self.list(dir)?;
        names.sort();
        Ok(names)
    }

    fn text(&self, path: &str) -> Result<Option<String>, StoreError> {
        match self.read_text(path) {
            Err(StoreError::NotAFile { .. }) => Ok(None),
            other => other,
        }
    }
}
