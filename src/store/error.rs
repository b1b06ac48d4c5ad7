//! Errors of the store.

use std::path::{Path, PathBuf};

/// Errors of the store. Messages name the pack directory and the step that failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Opening or creating the repository failed.
    #[error("cannot open the git repository of {dir}: {source}")]
    Open {
        /// Pack directory.
        dir: PathBuf,
        /// Cause.
        source: git2::Error,
    },
    /// A git operation failed.
    #[error("git failed while {step} in {dir}: {source}")]
    Git {
        /// What we were doing.
        step: &'static str,
        /// Pack directory.
        dir: PathBuf,
        /// Cause.
        source: git2::Error,
    },
    /// A filesystem operation failed.
    #[error("cannot {step} {path}: {source}")]
    Io {
        /// What we were doing.
        step: &'static str,
        /// The path involved.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// Inside [`without_waiting`]: the write would have waited for a lock another holds.
    #[error("{dir} is busy: another write holds its lock")]
    WouldWait {
        /// Pack directory.
        dir: PathBuf,
    },
    /// The branch kept moving under us.
    #[error("the branch of {dir} kept changing during the write (gave up after {attempts} attempts)")]
    Contention {
        /// Pack directory.
        dir: PathBuf,
        /// How often we tried.
        attempts: u32,
    },
    /// A path in a change is not a plain relative path inside the pack.
    #[error("refusing to write {path:?}: not a plain relative path inside the pack")]
    BadPath {
        /// The offending path.
        path: String,
    },
    /// The working tree cannot take a file at a path: a symbolic link or a file on the way,
    /// or a directory there. Links are never followed (see [`crate::pack_root`]).
    #[error("refusing to write {path}: {why} in the working tree")]
    Blocked {
        /// The path in the pack.
        path: String,
        /// What is in the way.
        why: crate::pack_root::Blocked,
    },
    /// Cloning a pack failed.
    #[error("git clone failed: {message}")]
    Clone {
        /// libgit2's message.
        message: String,
    },
    /// Talking to a remote failed (network, authentication, missing repository).
    #[error("git {step} {url} failed: {message}")]
    Remote {
        /// `fetching` or `pushing`.
        step: &'static str,
        /// The remote's URL.
        url: String,
        /// libgit2's message.
        message: String,
    },
    /// The pack's working tree or repository is damaged in a way a write must not paper over.
    #[error("the pack {dir} is damaged: {problem}")]
    Damaged {
        /// Pack directory.
        dir: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// The server is read-only.
    #[error("this engram server is read-only (--read-only): nothing was written to {dir}")]
    ReadOnly {
        /// Pack directory.
        dir: PathBuf,
    },
    /// Something other than a file sits where a file is expected.
    #[error("{path} is not a regular file")]
    NotAFile {
        /// Path in the pack.
        path: String,
    },
    /// The new text holds what looks like a credential; nothing was committed.
    #[error(
        "拒绝写入：内容疑似包含密钥 (refused: the new text looks like it contains a secret; nothing was written):{}\n{}",
        crate::secrets::describe(findings),
        if *hand_edit {
            "These are uncommitted hand edits in the pack's working tree: remove or redact them (e.g. `[REDACTED]`), then retry. Secrets must never enter the pack's git history."
        } else {
            "Store a redacted version instead (replace the secret with `[REDACTED]` or a reference such as `$ENV_VAR`). Secrets must never enter the pack's git history."
        }
    )]
    Secret {
        /// What was found, where (masked).
        findings: Vec<crate::secrets::Finding>,
        /// True when the text came from hand edits in the working tree.
        hand_edit: bool,
    },
    /// The change would leave the pack's `meta.json` unreadable; nothing was committed.
    #[error(
        "拒绝写入：meta.json 必须是 JSON 对象 (refused: meta.json {problem}; a pack's meta.json must stay a JSON object, e.g. {{\"name\": \"…\", \"description\": \"…\"}}; nothing was written){}",
        if *hand_edit {
            "\nmeta.json was edited by hand in the working tree: fix it, or `git checkout -- meta.json` restores the committed version; engram commits nothing in this pack until then."
        } else {
            ""
        }
    )]
    BadMeta {
        /// What is wrong with the new `meta.json`.
        problem: String,
        /// True when the change is a hand edit in the working tree.
        hand_edit: bool,
    },
    /// A commit id or date does not name a commit of the pack.
    #[error(
        "no commit {rev:?} in {dir}: give a commit id (as shown by memory_history / engram log) or a date YYYY-MM-DD"
    )]
    UnknownCommit {
        /// What was asked for.
        rev: String,
        /// Pack directory.
        dir: PathBuf,
    },
}

/// Result alias for the store.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

pub(super) fn git_err(step: &'static str, dir: &Path, source: git2::Error) -> StoreError {
    StoreError::Git { step, dir: dir.to_owned(), source }
}

pub(super) fn io_err(step: &'static str, path: &Path, source: std::io::Error) -> StoreError {
    StoreError::Io { step, path: path.to_owned(), source }
}
