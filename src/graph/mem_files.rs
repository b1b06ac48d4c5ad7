//! An in-memory [`GraphFiles`]: for tests, benchmarks and for callers that
//! already hold the graph's blobs in a map.

use std::collections::BTreeMap;

use super::error::GraphError;
use super::files::{GraphChanges, GraphFiles};

/// Graph files held in a sorted map from path to content.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemFiles {
    /// The files, by path relative to the pack root.
    pub files: BTreeMap<String, String>,
}

impl MemFiles {
    /// Returns an empty set of files.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies `changes` as the core would commit them.
    pub fn apply(&mut self, changes: &GraphChanges) {
        for path in &changes.removes {
            self.files.remove(path);
        }
        for (path, content) in &changes.writes {
            self.files.insert(path.clone(), content.clone());
        }
    }
}

impl GraphFiles for MemFiles {
    fn read(&self, path: &str) -> Result<Option<String>, GraphError> {
        Ok(self.files.get(path).cloned())
    }

    fn list(&self, dir: &str) -> Result<Vec<String>, GraphError> {
        let prefix = format!("{}/", dir.trim_end_matches('/'));
        Ok(self
            .files
            .range(prefix.clone()..)
            .take_while(|(path, _)| path.starts_with(&prefix))
            .map(|(path, _)| path.clone())
            .collect())
    }
}
