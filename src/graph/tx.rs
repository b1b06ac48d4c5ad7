//! A write transaction over [`GraphFiles`]: reads through an overlay of the
//! call's own pending writes, finds a name's file through its probe chain,
//! and turns the overlay into [`GraphChanges`].
//!
//! Probe chain: the file for a name in a directory is the first of
//! `record_path(kind, name, 0)`, `…, 1)`, … whose content holds that name;
//! the first missing probe ends the chain. A probe holding another name (a
//! hash collision) or a corrupt file is stepped over. Removing a file moves
//! the chain's last file into the hole, so chains never have gaps.

use std::collections::{BTreeMap, HashMap};

use super::error::GraphError;
use super::files::{GraphChanges, GraphFiles, GraphProblem, ProblemKind};
use super::key::{FileKind, record_path};
use super::record::NamedRecord;

/// Where a name's record is, or would go.
pub enum Slot<R> {
    /// The record exists at `path`.
    Found {
        /// Its path.
        path: String,
        /// Its position in the probe chain.
        probe: u32,
        /// Its parsed content.
        record: R,
    },
    /// There is no record; a new one goes to `path`.
    Vacant {
        /// The first free probe.
        path: String,
    },
}

/// Pending changes of one tool call.
pub struct Tx<'a> {
    files: &'a dyn GraphFiles,
    base: HashMap<String, Option<String>>,
    overlay: BTreeMap<String, Option<String>>,
    problems: Vec<GraphProblem>,
}

impl<'a> Tx<'a> {
    /// Starts a transaction on `files`.
    pub fn new(files: &'a dyn GraphFiles) -> Self {
        Self { files, base: HashMap::new(), overlay: BTreeMap::new(), problems: Vec::new() }
    }

    /// Returns the current content of `path`, pending writes included.
    pub fn read(&mut self, path: &str) -> Result<Option<String>, GraphError> {
        if let Some(content) = self.overlay.get(path) {
            return Ok(content.clone());
        }
        self.read_base(path)
    }

    fn read_base(&mut self, path: &str) -> Result<Option<String>, GraphError> {
        if let Some(content) = self.base.get(path) {
            return Ok(content.clone());
        }
        let content = self.files.read(path)?;
        self.base.insert(path.to_owned(), content.clone());
        Ok(content)
    }

    /// Sets the content of `path`.
    pub fn write(&mut self, path: &str, content: String) {
        self.overlay.insert(path.to_owned(), Some(content));
    }

    /// Finds the record of `name` in the directory of `kind`.
    pub fn find<R: NamedRecord>(&mut self, kind: FileKind, name: &str) -> Result<Slot<R>, GraphError> {
        for probe in 0.. {
            let path = record_path(kind, name, probe);
            let Some(content) = self.read(&path)? else {
                return Ok(Slot::Vacant { path });
            };
            match R::parse(&content) {
                Ok(record) if record.name() == name => return Ok(Slot::Found { path, probe, record }),
                Ok(_) => {}
                Err(why) => self.report(&path, ProblemKind::Corrupt(why)),
            }
        }
        unreachable!("the probe loop returns before u32 overflows")
    }

    /// Writes `record` for `name` at `path` (a path from [`Tx::find`]).
    pub fn put<R: NamedRecord>(&mut self, path: &str, record: &R) {
        self.write(path, record.render());
    }

    /// Removes the file at probe `hole` of `name`'s chain, moving the
    /// chain's last file into its place.
    pub fn remove(&mut self, kind: FileKind, name: &str, hole: u32) -> Result<(), GraphError> {
        let path = record_path(kind, name, hole);
        let mut last: Option<(String, String)> = None;
        for probe in hole + 1.. {
            let next = record_path(kind, name, probe);
            match self.read(&next)? {
                Some(content) => last = Some((next, content)),
                None => break,
            }
        }
        match last {
            Some((last_path, content)) => {
                self.write(&path, content);
                self.overlay.insert(last_path, None);
            }
            None => {
                self.overlay.insert(path, None);
            }
        }
        Ok(())
    }

    fn report(&mut self, path: &str, kind: ProblemKind) {
        if !self.problems.iter().any(|p| p.path == path) {
            self.problems.push(GraphProblem { path: path.to_owned(), kind });
        }
    }

    /// Returns the net changes: writes that differ from the base, removes of
    /// files that exist in the base.
    pub fn into_changes(mut self) -> Result<GraphChanges, GraphError> {
        let overlay = std::mem::take(&mut self.overlay);
        let mut changes = GraphChanges::default();
        for (path, content) in overlay {
            let base = self.read_base(&path)?;
            match content {
                Some(content) if base.as_deref() != Some(content.as_str()) => {
                    changes.writes.push((path, content));
                }
                None if base.is_some() => changes.removes.push(path),
                _ => {}
            }
        }
        changes.problems = self.problems;
        Ok(changes)
    }
}
