//! `serve --http --users-file FILE`: one server, many users.
//!
//! The file has one line per token: `token user [read-only]` (`#` starts a comment). Every
//! HTTP request is authenticated by its own bearer token (compared in constant time with
//! every token of the file), so a session carries no identity of its own: a token removed
//! from the file and re-read (SIGHUP) stops working at once, and no session is dropped.
//!
//! What a user reaches:
//! - the `personal`, `graph` and `notes` toolsets (and the graph resource) act on that
//!   user's own packs, under `<packs dir>/.users/<user>/`: a directory the other toolsets
//!   cannot name (pack names never start with `.`), so another user's profile, entities,
//!   events and notes are out of reach of every tool;
//! - the other toolsets (engram, knowledge, workspace, sync) work on the team's packs;
//! - a `read-only` token lists and calls only the tools annotated `read_only_hint`.
//!
//! The file must not be readable or writable by group or others: the server refuses to
//! start (or to re-read it) otherwise.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use subtle::{ConditionallySelectable as _, ConstantTimeEq as _};

use super::{EngramServer, Structured, Toolset};
use crate::ops::{Engram, EngramError, StructuredConfig};

pub use crate::pack::USERS_DIR;

/// Who sent a request: the user of its token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The user id (as in `--user`).
    pub user: String,
    /// The token may only read.
    pub read_only: bool,
}

/// Errors reading a users file.
#[derive(Debug, thiserror::Error)]
pub enum UsersError {
    /// The file cannot be read.
    #[error("cannot read the users file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// Group or others may read or write it.
    #[error(
        "refusing the users file {path}: its mode {mode:o} lets group or others read or write it (tokens are secrets): chmod 600 {path}"
    )]
    Exposed {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A line is not `token user [read-only]`.
    #[error("users file {path}, line {line}: {reason}")]
    Line {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// No token at all.
    #[error("the users file {path} has no `token user` line")]
    Empty {
        /// The file.
        path: PathBuf,
    },
}

struct Entry {
    token: Vec<u8>,
    identity: Identity,
}

/// The tokens of a users file (never printed: `Debug` shows only how many).
pub struct Users {
    entries: Vec<Entry>,
}

impl std::fmt::Debug for Users {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Users({} tokens)", self.entries.len())
    }
}

impl Users {
    /// Parses the text of a users file (`path` is for messages).
    pub fn parse(path: &Path, text: &str) -> Result<Self, UsersError> {
        let mut entries: Vec<Entry> = Vec::new();
        let mut seen = HashSet::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let bad = |reason: String| UsersError::Line { path: path.to_owned(), line: i + 1, reason };
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (token, user, read_only) = match fields.as_slice() {
                [token, user] => (*token, *user, false),
                [token, user, "read-only"] => (*token, *user, true),
                [_, _, other] => return Err(bad(format!("unknown flag {other:?} (only `read-only`)"))),
                _ => return Err(bad("expected `token user [read-only]`".into())),
            };
            if token.len() < 16 || !token.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(bad("the token must be at least 16 visible ASCII characters".into()));
            }
            crate::ops::validate_user(user).map_err(bad)?;
            if !seen.insert(token.to_owned()) {
                return Err(bad("this token is already on an earlier line".into()));
            }
            entries.push(Entry {
                token: token.as_bytes().to_vec(),
                identity: Identity { user: user.to_owned(), read_only },
            });
        }
        if entries.is_empty() {
            return Err(UsersError::Empty { path: path.to_owned() });
        }
        Ok(Self { entries })
    }

    /// Reads and parses `path`, refusing a file group or others may read or write.
    pub fn load(path: &Path) -> Result<Self, UsersError> {
        let read = |source| UsersError::Read { path: path.to_owned(), source };
        let meta = std::fs::metadata(path).map_err(read)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(UsersError::Exposed { path: path.to_owned(), mode });
            }
        }
        #[cfg(not(unix))]
        let _ = meta;
        let text = std::fs::read_to_string(path).map_err(read)?;
        Self::parse(path, &text)
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Always false (a users file has at least one token).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The identity of the token in an `Authorization: Bearer …` value. Every token is
    /// compared, each in constant time, and the match is selected without branching, so
    /// the time taken tells neither which token matched nor how much of one did.
    pub fn authenticate(&self, header_value: Option<&[u8]>) -> Option<&Identity> {
        let given = super::http::bearer_value(header_value?)?;
        let mut index = u32::MAX;
        for (i, e) in self.entries.iter().enumerate() {
            let i = u32::try_from(i).unwrap_or(u32::MAX);
            index.conditional_assign(&i, given.ct_eq(&e.token));
        }
        self.entries.get(usize::try_from(index).ok()?).map(|e| &e.identity)
    }
}

/// A users file and its current tokens (replaced whole on [`UsersFile::reload`]).
#[derive(Debug)]
pub struct UsersFile {
    path: PathBuf,
    current: RwLock<Arc<Users>>,
}

impl UsersFile {
    /// Loads `path`.
    pub fn open(path: &Path) -> Result<Self, UsersError> {
        Ok(Self { path: path.to_owned(), current: RwLock::new(Arc::new(Users::load(path)?)) })
    }

    /// The tokens now in force.
    pub fn current(&self) -> Arc<Users> {
        self.current.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Re-reads the file; on an error the previous tokens stay in force.
    pub fn reload(&self) -> Result<usize, UsersError> {
        let users = Users::load(&self.path)?;
        let n = users.len();
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(users);
        Ok(n)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Each user's own server: the personal, graph and notes tools over that user's packs.
pub(super) struct UserScopes {
    /// The team server's configuration; `packs_dir` becomes `<packs dir>/.users/<user>`.
    config: crate::ops::Config,
    structured: StructuredConfig,
    /// Tools that act on the caller's own packs.
    own_tools: HashSet<String>,
    servers: Mutex<HashMap<String, EngramServer>>,
}

impl UserScopes {
    /// Scopes for the users of `server` (its toolsets, its graph pack and user settings).
    pub(super) fn new(server: &EngramServer, structured: StructuredConfig) -> Self {
        let mut own_tools = HashSet::new();
        for t in &server.toolsets {
            let names: Vec<String> = match t {
                Toolset::Personal => EngramServer::personal_tools()
                    .list_all()
                    .into_iter()
                    .map(|d| d.name.to_string())
                    .collect(),
                Toolset::Notes => {
                    EngramServer::notes_tools().list_all().into_iter().map(|d| d.name.to_string()).collect()
                }
                Toolset::Graph => crate::graph::TOOL_NAMES.iter().map(|n| (*n).to_owned()).collect(),
                _ => continue,
            };
            for n in names {
                if let Some(dotted) = super::dotted_name(&n) {
                    own_tools.insert(dotted);
                }
                own_tools.insert(n);
            }
        }
        Self {
            config: server.engram.config().clone(),
            structured,
            own_tools,
            servers: Mutex::new(HashMap::new()),
        }
    }

    /// Whether `tool` acts on the caller's own packs.
    pub(super) fn is_own_tool(&self, tool: &str) -> bool {
        self.own_tools.contains(tool)
    }

    /// The server of `user`: `team` with the engine, graph and personal tools of the
    /// user's own packs (made on first use, then kept).
    pub(super) fn server_for(&self, user: &str, team: &EngramServer) -> Result<EngramServer, EngramError> {
        let mut servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = servers.get(user) {
            return Ok(s.clone());
        }
        crate::ops::validate_user(user).map_err(|reason| EngramError::Invalid { field: "user", reason })?;
        let mut config = self.config.clone();
        config.packs_dir = config.packs_dir.join(USERS_DIR).join(user);
        let engram = Arc::new(Engram::new(config)?);
        let structured = StructuredConfig { user: user.to_owned(), ..self.structured.clone() };
        let structured = Structured::new(engram.clone(), structured).ok().map(Arc::new);
        let mut server = team.clone();
        server.engram = engram;
        server.structured = structured;
        server.users = None;
        servers.insert(user.to_owned(), server.clone());
        Ok(server)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "alice-token-0123456789";
    const B: &str = "bob-token-0123456789ab";

    #[test]
    fn lines_tokens_and_flags() {
        let p = Path::new("users");
        let users =
            Users::parse(p, &format!("# team\n{A} alice\n\n{B} bob read-only # reviewer\n")).expect("parse");
        assert_eq!(users.len(), 2);
        let who = |h: &str| users.authenticate(Some(h.as_bytes())).cloned();
        assert_eq!(who(&format!("Bearer {A}")), Some(Identity { user: "alice".into(), read_only: false }));
        assert_eq!(who(&format!("bearer {B}")), Some(Identity { user: "bob".into(), read_only: true }));
        assert_eq!(who(&format!("Bearer {A}x")), None);
        assert_eq!(who("Bearer "), None);
        assert_eq!(users.authenticate(None), None);
        for (text, wanted) in [
            (format!("{A}\n"), "expected"),
            (format!("{A} alice admin\n"), "unknown flag"),
            ("short alice\n".to_owned(), "16 visible"),
            (format!("{A} ../x\n"), "invalid user id"),
            (format!("{A} alice\n{A} bob\n"), "line 2: this token is already"),
            ("# nobody\n".to_owned(), "no `token user` line"),
        ] {
            let e = Users::parse(p, &text).expect_err("refused").to_string();
            assert!(e.contains(wanted), "{text:?}: {e}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_file_others_can_read_is_refused() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("users");
        std::fs::write(&path, format!("{A} alice\n")).expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let e = Users::load(&path).expect_err("refused").to_string();
        assert!(e.contains("644") && e.contains("chmod 600"), "{e}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let file = UsersFile::open(&path).expect("open");
        std::fs::write(&path, format!("{A} alice\n{B} bob\n")).expect("write");
        assert_eq!(file.reload().expect("reload"), 2);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        assert!(file.reload().is_err());
        assert_eq!(file.current().len(), 2, "the previous tokens stay in force");
    }
}
