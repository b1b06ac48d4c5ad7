//! Paths of the server's machine that a tool argument may name (`install_engram` from a
//! local path or a `file://` URL, the workspace tools' `workspace`).
//!
//! On a one-person server (stdio, a single token) every path is open: the caller is the
//! machine's user. On a team server (`serve --users-file`) a caller is not: a path is
//! refused unless it lies in a directory the operator allowed (`serve --allow-path DIR`),
//! and never inside the packs directory, which holds every user's own packs (`.users/`).
//! A path is resolved (symbolic links, `..`) before it is checked, and the resolved path is
//! the one used.

use std::path::{Path, PathBuf};

/// Why a server path is refused.
#[derive(Debug, thiserror::Error)]
pub enum ServerPathError {
    /// The path is not inside a directory the operator allowed (or is in the packs
    /// directory, or does not exist: one answer for all three).
    #[error(
        "a team server (--users-file) reads no path of its machine that its operator did not allow: {path} is not an existing path inside a `serve --allow-path` directory{allowed} (the packs directory never is)"
    )]
    NotAllowed {
        /// The path given.
        path: String,
        /// The allowed directories, as a note (empty when there are none).
        allowed: String,
    },
    /// An `--allow-path` directory cannot be used.
    #[error("--allow-path {dir}: {reason}")]
    BadAllowedDir {
        /// The directory given.
        dir: PathBuf,
        /// Why.
        reason: String,
    },
}

/// A directory the operator allowed (`serve --allow-path`), resolved once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedDir(PathBuf);

impl AllowedDir {
    /// Resolves `dir`; refuses one that does not exist, is not a directory, or is the
    /// packs directory (resolved: `packs_dir`) or inside it.
    pub fn parse(dir: &Path, packs_dir: &Path) -> Result<Self, ServerPathError> {
        let bad = |reason: String| ServerPathError::BadAllowedDir { dir: dir.to_owned(), reason };
        let resolved = dir.canonicalize().map_err(|e| bad(e.to_string()))?;
        if !resolved.is_dir() {
            return Err(bad("not a directory".into()));
        }
        if resolved.starts_with(packs_dir) {
            return Err(bad(format!(
                "is the packs directory {} or inside it (it holds every user's own packs)",
                packs_dir.display()
            )));
        }
        Ok(Self(resolved))
    }

    /// The resolved directory.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

/// Which server paths tools may name.
#[derive(Debug, Clone, Default)]
pub enum ServerPaths {
    /// Any path (one person's server).
    #[default]
    Open,
    /// Only paths inside `allowed`, never inside `packs_dir` (a team server).
    Closed {
        /// The packs directory, resolved.
        packs_dir: PathBuf,
        /// The directories the operator allowed.
        allowed: Vec<AllowedDir>,
    },
}

impl ServerPaths {
    /// The rule of a team server over `packs_dir` with the operator's `--allow-path` list.
    pub fn closed(packs_dir: &Path, allow: &[PathBuf]) -> Result<Self, ServerPathError> {
        let bad = |reason: String| ServerPathError::BadAllowedDir { dir: packs_dir.to_owned(), reason };
        std::fs::create_dir_all(packs_dir).map_err(|e| bad(e.to_string()))?;
        let packs_dir = packs_dir.canonicalize().map_err(|e| bad(e.to_string()))?;
        let allowed = allow.iter().map(|d| AllowedDir::parse(d, &packs_dir)).collect::<Result<_, _>>()?;
        Ok(Self::Closed { packs_dir, allowed })
    }

    /// Whether paths are checked at all.
    pub fn is_closed(&self) -> bool {
        matches!(self, Self::Closed { .. })
    }

    /// The path a tool may use for `given`: `given` itself when paths are open, else its
    /// resolved form when it lies in an allowed directory and outside the packs directory.
    pub fn check(&self, given: &Path) -> Result<PathBuf, ServerPathError> {
        let Self::Closed { packs_dir, allowed } = self else { return Ok(given.to_owned()) };
        let shown = given.display().to_string();
        let not_allowed = || ServerPathError::NotAllowed {
            path: shown.clone(),
            allowed: if allowed.is_empty() {
                " (this server allows none)".into()
            } else {
                format!(
                    " (allowed: {})",
                    allowed.iter().map(|a| a.path().display().to_string()).collect::<Vec<_>>().join(", ")
                )
            },
        };
        // A relative path would be relative to the server's directory, which no caller sees.
        if !given.is_absolute() {
            return Err(not_allowed());
        }
        let resolved = given.canonicalize().map_err(|_| not_allowed())?;
        // One answer for every refusal: whether a path exists, or lies in the packs
        // directory, is not the caller's to learn.
        if resolved.starts_with(packs_dir) || !allowed.iter().any(|a| resolved.starts_with(a.path())) {
            return Err(not_allowed());
        }
        Ok(resolved)
    }
}

/// The local path a git source names, if it names one: a `file://` URL or a plain path
/// (what git itself treats as local). `None` for a network URL (`https://…`, `ssh://…`)
/// or git's `[user@]host:path` form.
pub fn local_source(source: &str) -> Option<PathBuf> {
    if let Some(rest) = source.strip_prefix("file://") {
        let rest = rest.strip_prefix("localhost").unwrap_or(rest);
        return Some(PathBuf::from(rest));
    }
    if source.contains("://") {
        return None;
    }
    // git: a colon before any slash makes `host:path` (ssh).
    match (source.find(':'), source.find('/')) {
        (Some(colon), Some(slash)) if colon < slash => None,
        (Some(_), None) => None,
        _ => Some(PathBuf::from(source)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_that_name_a_local_path() {
        assert_eq!(local_source("/srv/x"), Some(PathBuf::from("/srv/x")));
        assert_eq!(local_source("../x"), Some(PathBuf::from("../x")));
        assert_eq!(local_source("file:///srv/x"), Some(PathBuf::from("/srv/x")));
        assert_eq!(local_source("file://localhost/srv/x"), Some(PathBuf::from("/srv/x")));
        assert_eq!(local_source("https://h/x.git"), None);
        assert_eq!(local_source("git@github.com:o/x.git"), None);
    }

    #[test]
    fn a_closed_server_reads_only_allowed_directories() {
        let tmp = tempfile::tempdir().expect("tmp");
        let packs = tmp.path().join("packs");
        let allowed = tmp.path().join("shared");
        std::fs::create_dir_all(packs.join(".users/bob/personal")).expect("mkdir");
        std::fs::create_dir_all(allowed.join("repo")).expect("mkdir");
        assert!(ServerPaths::closed(&packs, std::slice::from_ref(&packs)).is_err());
        assert!(ServerPaths::closed(&packs, &[packs.join(".users")]).is_err());
        let rule = ServerPaths::closed(&packs, std::slice::from_ref(&allowed)).expect("rule");
        assert!(rule.check(&allowed.join("repo")).is_ok());
        assert!(rule.check(&allowed.join("repo/../../packs/.users/bob/personal")).is_err());
        assert!(rule.check(&packs.join(".users/bob/personal")).is_err());
        assert!(rule.check(Path::new("repo")).is_err());
        assert!(rule.check(tmp.path()).is_err());
        std::os::unix::fs::symlink(packs.join(".users"), allowed.join("link")).expect("link");
        assert!(matches!(rule.check(&allowed.join("link/bob")), Err(ServerPathError::NotAllowed { .. })));
        assert_eq!(
            rule.check(&packs.join(".users/bob"))
                .map_err(|e| e.to_string().replace("/.users/bob", "/X"))
                .err(),
            rule.check(&packs.join("nowhere")).map_err(|e| e.to_string().replace("/nowhere", "/X")).err(),
            "an existing path and a made-up one are refused alike"
        );
        assert!(ServerPaths::Open.check(Path::new("anything")).is_ok());
    }
}
