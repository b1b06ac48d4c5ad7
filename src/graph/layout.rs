//! Paths for a graph written from scratch (an import, an index rebuild):
//! each name gets the first probe of its chain that no earlier name took, so
//! the result has the same gap-free chains that `tx.rs` maintains.

use std::collections::HashSet;

use super::key::{FileKind, record_path, unknown_path};

/// Allocates paths for files written together.
#[derive(Debug, Default)]
pub struct FreshLayout {
    used: HashSet<String>,
}

impl FreshLayout {
    /// Returns a fresh allocator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Returns the path for `name` in the directory of `kind`.
    pub fn place(&mut self, kind: FileKind, name: &str) -> String {
        let mut probe = 0;
        loop {
            let path = record_path(kind, name, probe);
            if self.used.insert(path.clone()) {
                return path;
            }
            probe += 1;
        }
    }

    /// Returns the path for the preserved line `line` at position `seq`.
    pub fn place_unknown(&mut self, seq: u64, line: &str) -> String {
        let mut probe = 0;
        loop {
            let path = unknown_path(seq, line, probe);
            if self.used.insert(path.clone()) {
                return path;
            }
            probe += 1;
        }
    }
}
