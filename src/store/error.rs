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
    /// The branch kept moving under us, for longer than engram retries
    /// ([`crate::store::BUSY_BOUND`]).
    #[error(
        "another program kept moving the branch of {dir} during the write (tried {attempts} times over {waited:.1?}); nothing was written — retry when it is done (a git command or script committing to this pack in a loop?). The pack is not damaged."
    )]
    Contention {
        /// Pack directory.
        dir: PathBuf,
        /// How often we tried.
        attempts: u32,
        /// How long engram kept trying.
        waited: std::time::Duration,
    },
    /// Another program (a git command) kept a git lock of the pack taken for
    /// longer than engram waits ([`crate::store::BUSY_BOUND`]).
    #[error(
        "busy: a git command holds {what} in {dir}/.git (waited {waited:.1?}); nothing was written — retry when that command is done (if no git command is running, remove that file). The pack is not damaged."
    )]
    Busy {
        /// Pack directory.
        dir: PathBuf,
        /// The lock file, relative to `.git`.
        what: &'static str,
        /// How long engram waited.
        waited: std::time::Duration,
    },
    /// The person set up the repository in a way libgit2 cannot write beside
    /// (a setting of theirs, named; never damage).
    #[error(
        "{dir}: engram cannot write to this pack while `{setting}` is set: {advice}. Nothing was written."
    )]
    Unsupported {
        /// Pack directory.
        dir: PathBuf,
        /// The git setting.
        setting: &'static str,
        /// What to do.
        advice: &'static str,
    },
    /// A path in a commit is refused: not a [`PackPath`](crate::pack_path::PackPath), under
    /// the reserved `memory/` folder for a writer other than the memory tools, or reached
    /// through a symbolic link.
    #[error("refusing to write {path:?}: {reason}")]
    BadPath {
        /// The offending path.
        path: String,
        /// Why.
        reason: String,
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
    /// Talking to a remote failed (network, authentication, missing repository, a clone
    /// holding a file too large).
    #[error("git {step} {url} failed: {message}")]
    Remote {
        /// `fetching`, `pushing` or `cloning`.
        step: &'static str,
        /// The remote's URL.
        url: String,
        /// libgit2's message.
        message: String,
    },
    /// Tracked paths the working tree has replaced (a file by a directory, a
    /// folder by a symbolic link): committed as hand edits, they would delete
    /// committed files. Another program's doing, not damage to the pack.
    #[error(
        "refusing to commit the working tree of {dir}: {}; committing that would delete committed files, so nothing was written. Put back what was there (or make the change yourself with git: `git rm`/`git commit`), then retry",
        paths.join(", ")
    )]
    Replaced {
        /// Pack directory.
        dir: PathBuf,
        /// Each replaced path, described (`knowledge/x replaced by a directory`).
        paths: Vec<String>,
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
    /// A commit would add what looks like a credential; nothing was committed.
    #[error("{}", secret_text(findings, *origin))]
    Secret {
        /// What was found, where (masked).
        findings: Vec<crate::secrets::Finding>,
        /// Where the text came from (decides the advice).
        origin: SecretSource,
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

/// Where text the secret guard refused came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretSource {
    /// A tool's or the CLI's write.
    Write,
    /// Uncommitted hand edits in the working tree.
    HandEdit,
    /// The files of a folder engram was about to adopt as a pack (first write, no `.git` yet).
    Adoption,
    /// Commits fetched from a remote (`engram sync`): nothing was merged.
    Remote,
}

/// One finding per line: `path line N: kind `masked``, or `path: kind in the file name` for a
/// finding in a path (line 0).
fn describe(findings: &[crate::secrets::Finding]) -> String {
    let line = |f: &crate::secrets::Finding| match f.line {
        0 => format!("\n- {}: {} `{}` in the file name", f.path, f.kind, f.masked),
        _ => format!("\n- {f}"),
    };
    let mut out: String = findings.iter().take(10).map(line).collect();
    if findings.len() > 10 {
        out.push_str(&format!("\n… (+{} more)", findings.len() - 10));
    }
    out
}

fn secret_text(findings: &[crate::secrets::Finding], source: SecretSource) -> String {
    let never = "Secrets must never enter the pack's git history.";
    let listed = describe(findings);
    let refused = "拒绝写入：内容疑似包含密钥 (refused: the new text looks like it contains a secret; nothing was written):";
    match source {
        SecretSource::Write => format!(
            "{refused}{listed}\nStore a redacted version instead (replace the secret with `[REDACTED]` or a reference such as `$ENV_VAR`). {never}"
        ),
        SecretSource::HandEdit => format!(
            "{refused}{listed}\nThese are uncommitted hand edits in the pack's working tree: remove or redact them (e.g. `[REDACTED]`), then retry. {never}"
        ),
        SecretSource::Adoption => format!(
            "拒绝接管：包目录中的文件疑似包含密钥 (refused: files of this pack folder look like they contain a secret; the folder was not made a repository and nothing was committed):{listed}\nThe pack is still readable as it is. Remove or redact these lines (e.g. `[REDACTED]`), then retry. {never}"
        ),
        SecretSource::Remote => {
            let mut files = findings.iter().filter_map(|f| f.path.split_once(':').map(|(_, p)| p));
            let example = files.find(|p| !p.is_empty()).unwrap_or("<file>");
            format!(
                "拒绝同步：远端的提交疑似包含密钥 (refused: commits fetched from the remote add what looks like a secret; nothing was merged, this pack's branch and files are unchanged):{listed}\nClean the remote first: on the device the secret was pushed from, run `engram purge <pack> {example}` (or `engram purge <pack> --text '<the secret>'`) and force-push the rewritten history (`git push --force <remote> <branch>`); then run `engram sync` here again. {never}"
            )
        }
    }
}

/// Result alias for the store.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

pub(crate) fn git_err(step: &'static str, dir: &Path, source: git2::Error) -> StoreError {
    StoreError::Git { step, dir: dir.to_owned(), source }
}

pub(super) fn io_err(step: &'static str, path: &Path, source: std::io::Error) -> StoreError {
    StoreError::Io { step, path: path.to_owned(), source }
}
