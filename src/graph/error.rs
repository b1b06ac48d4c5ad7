//! Errors of the graph module: only failures of the storage underneath.
//!
//! Everything an agent can cause (bad arguments, unknown entity names) is a
//! tool result with `is_error: true`, not a [`GraphError`]; corrupt files are
//! skipped and reported as [`crate::graph::GraphProblem`]s. A `GraphError`
//! means the store could not give us a file, so the call cannot be answered.

/// A failure of the store that backs [`crate::graph::GraphFiles`].
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    /// Reading one file of the graph failed.
    #[error("cannot read graph file {path}")]
    Read {
        /// The path inside the pack that could not be read.
        path: String,
        /// What the store reported.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Listing a directory of the graph failed.
    #[error("cannot list graph directory {dir}")]
    List {
        /// The directory inside the pack that could not be listed.
        dir: String,
        /// What the store reported.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}
