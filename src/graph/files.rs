//! The boundary with the store: what the graph reads ([`GraphFiles`]) and
//! what it asks to be committed ([`GraphChanges`]), plus the problems it
//! reports instead of failing ([`GraphProblem`]).

use super::error::GraphError;

/// Read access to the graph files of a pack at the commit being modified.
///
/// Paths are relative to the pack root and use `/` (e.g.
/// `graph/entities/3f/alice-3f0c…json`). Implementations must not interpret
/// the content: the graph module parses it.
pub trait GraphFiles {
    /// Returns the content of the file at `path`, or `None` if there is no
    /// such file.
    fn read(&self, path: &str) -> Result<Option<String>, GraphError>;

    /// Returns the paths of all files below `dir`, recursively, as full paths
    /// from the pack root, in any order. A missing directory is empty.
    fn list(&self, dir: &str) -> Result<Vec<String>, GraphError>;
}

/// Changes a tool call wants committed, all in one commit.
///
/// An empty value means the call changed nothing; the core can skip the
/// commit (the reference rewrote its file even then).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GraphChanges {
    /// Files to create or overwrite: `(path, content)`, each path once.
    pub writes: Vec<(String, String)>,
    /// Files to delete, each path once and never also in `writes`.
    pub removes: Vec<String>,
    /// Problems met while preparing the change (corrupt files skipped),
    /// for logs or a commit trailer; they never block the change.
    pub problems: Vec<GraphProblem>,
}

impl GraphChanges {
    /// Returns true when there is nothing to write or remove.
    pub fn is_empty(&self) -> bool {
        self.writes.is_empty() && self.removes.is_empty()
    }
}

/// A graph file that was skipped or looked inconsistent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphProblem {
    /// The file concerned.
    pub path: String,
    /// What is wrong with it.
    pub kind: ProblemKind,
}

/// The kinds of [`GraphProblem`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProblemKind {
    /// The file is not valid JSON or lacks a required field; it is ignored by
    /// every tool and never overwritten, so it can be repaired by hand.
    Corrupt(String),
    /// A second file holds an entity (or relation list) for a name that
    /// another file already holds; the one with the lower order key wins.
    DuplicateName(String),
    /// The file is in the graph directory but not part of the layout.
    Stray,
    /// The incoming-relation index for this name disagrees with the
    /// relation files (repairable with `GraphSnapshot::index_repair`).
    StaleIndex(String),
}

impl std::fmt::Display for GraphProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            ProblemKind::Corrupt(why) => write!(f, "{}: corrupt, skipped: {why}", self.path),
            ProblemKind::DuplicateName(name) => {
                write!(f, "{}: duplicate of {name:?}, hidden", self.path)
            }
            ProblemKind::Stray => write!(f, "{}: not a graph file, ignored", self.path),
            ProblemKind::StaleIndex(name) => {
                write!(f, "{}: incoming index of {name:?} is stale", self.path)
            }
        }
    }
}
