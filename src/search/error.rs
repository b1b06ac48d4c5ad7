//! Errors returned by the search engine.

use thiserror::Error;

/// An error from the search index.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum SearchError {
    /// The index already holds as many documents as it can address (2^32 - 1).
    #[error("search index is full")]
    IndexFull,
    /// A snapshot could not be loaded.
    #[error("invalid search snapshot: {0}")]
    Snapshot(#[from] SnapshotError),
}

/// Why a snapshot could not be loaded.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum SnapshotError {
    /// The bytes do not start with the snapshot magic.
    #[error("not a search snapshot (bad magic)")]
    BadMagic,
    /// The snapshot was written by another format or tokenizer version.
    #[error("unsupported snapshot version {found} (expected {expected})")]
    Version {
        /// Version found in the snapshot.
        found: u32,
        /// Version this build reads.
        expected: u32,
    },
    /// The checksum does not match the contents.
    #[error("snapshot checksum mismatch")]
    Checksum,
    /// The snapshot ends before a value it announces.
    #[error("snapshot is truncated")]
    Truncated,
    /// The snapshot is structurally inconsistent.
    #[error("snapshot is corrupt: {0}")]
    Corrupt(&'static str),
}
