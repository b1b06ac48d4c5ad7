//! Finding packs: the packs directory, the optional project root, pack names and `meta.json`.
//!
//! A *packs root* is a directory whose child directories are packs; a child
//! counts as a pack when its `meta.json` parses as a JSON object. Lookup goes
//! by directory name first and then by `meta.name`, root by root (the project
//! root `<cwd>/.claude/engram` first, when it exists).

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// Name of the directory holding memory shared by every pack.
pub const GLOBAL_DIR: &str = "_global";

/// The directory under the packs directory that holds each user's own packs on a team
/// server (`serve --users-file`): `.users/<user>/<pack>`. Pack names never start with `.`,
/// so no tool names it.
pub const USERS_DIR: &str = ".users";

/// Names no new pack may take: engram's own directories in the packs directory
/// (`_global` is the memory every pack loads). Compared without regard to case (a
/// case-insensitive file system makes `_GLOBAL` the same directory).
pub const RESERVED_NAMES: &[&str] = &[GLOBAL_DIR];

/// Longest pack name, in characters (checked by [`validate_name`]).
pub const MAX_NAME_CHARS: usize = 128;

/// Errors about finding or reading a pack.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// No pack has that name.
    #[error("未找到 Engram: {name}")]
    NotFound {
        /// The name asked for.
        name: String,
    },
    /// The name cannot be a pack name.
    #[error("未找到 Engram: {name} (invalid pack name: {reason})")]
    InvalidName {
        /// The name asked for.
        name: String,
        /// Why it is refused.
        reason: String,
    },
    /// meta.json is missing or broken.
    #[error(
        "Engram {name}: meta.json {problem} — undo_last / revert_memory / memory_history still work on this pack; `engram doctor {name}` says how to repair it"
    )]
    BadMeta {
        /// Pack directory name.
        name: String,
        /// What is wrong.
        problem: String,
    },
}

impl PackError {
    /// The message in `lang`: `Display` (the reference's Chinese) for [`Lang::Zh`], English
    /// for [`Lang::En`].
    pub fn text(&self, lang: crate::lang::Lang) -> String {
        match (self, lang) {
            (_, crate::lang::Lang::Zh) | (Self::BadMeta { .. }, _) => self.to_string(),
            (Self::NotFound { name }, _) => format!("no pack named {name} (`engram list` lists them)"),
            (Self::InvalidName { name, reason }, _) => format!("invalid pack name {name:?}: {reason}"),
        }
    }
}

/// A resolved pack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackDir {
    /// Absolute directory.
    pub dir: PathBuf,
    /// Directory name (what tools are called with).
    pub dir_name: String,
}

/// One line of `list_engrams`.
#[derive(Debug, Clone)]
pub struct PackSummary {
    /// The pack's directory.
    pub dir: PathBuf,
    /// `meta.name` (or the directory name when the key is absent).
    pub name: String,
    /// The whole meta object, in file key order.
    pub meta: Map<String, Value>,
}

/// A directory of a packs root whose `meta.json` engram cannot read.
#[derive(Debug, Clone)]
pub struct BrokenPack {
    /// The directory.
    pub dir: PathBuf,
    /// Its name (what the repair tools are called with).
    pub dir_name: String,
    /// What is wrong with `meta.json`.
    pub problem: String,
}

/// A pack that lookups never reach: another of the same name comes first.
#[derive(Debug, Clone)]
pub struct ShadowedPack {
    /// The name both answer to.
    pub name: String,
    /// The pack the tools use.
    pub used: PathBuf,
    /// The pack hidden behind it.
    pub hidden: PathBuf,
}

/// What the packs roots hold (see [`Packs::scan`]).
#[derive(Debug, Clone, Default)]
pub struct PackScan {
    /// The packs, as [`Packs::list`] returns them.
    pub packs: Vec<PackSummary>,
    /// Directories with a broken `meta.json` (not in `packs`).
    pub broken: Vec<BrokenPack>,
    /// Packs hidden by one of the same name (not in `packs`).
    pub shadowed: Vec<ShadowedPack>,
}

/// The places packs live.
#[derive(Debug, Clone)]
pub struct Packs {
    roots: Vec<PathBuf>,
    packs_dir: PathBuf,
}

/// Checks a pack name: one plain path segment.
pub fn validate_name(name: &str) -> Result<(), PackError> {
    let reason = if name.is_empty() {
        Some("empty")
    } else if name != name.trim() {
        Some("surrounding whitespace")
    } else if name == "." || name == ".." {
        Some("`.` and `..` are not packs")
    } else if name.contains('/') || name.contains('\\') {
        Some("contains a path separator")
    } else if name.starts_with('.') {
        Some("starts with a dot")
    } else if name.chars().any(char::is_control) {
        Some("contains control characters")
    } else if name.chars().count() > MAX_NAME_CHARS {
        Some("longer than 128 characters")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(PackError::InvalidName { name: name.to_owned(), reason: reason.to_owned() }),
        None => Ok(()),
    }
}

/// Checks the name of a pack about to be created (init, install, a pack engram
/// makes for itself): [`validate_name`] and the portable-name rule of
/// [`PackPath::check_component`](crate::pack_path::PackPath::check_component)
/// (`CON`, `nul`, `x:stream` would break a clone on Windows). Lookups use
/// [`validate_name`] alone, so an existing pack keeps working.
pub fn validate_new_name(name: &str) -> Result<(), PackError> {
    validate_name(name)?;
    if RESERVED_NAMES.iter().any(|r| r.eq_ignore_ascii_case(name)) {
        return Err(PackError::InvalidName {
            name: name.to_owned(),
            reason: "a name engram keeps for itself (`_global` holds the memory every pack loads)".to_owned(),
        });
    }
    let reason = if name.starts_with('-') {
        Some("starts with `-` (a command would read it as an option)")
    } else if name.chars().any(is_invisible_format) {
        Some("holds an invisible or direction-changing character (it would not read as it is)")
    } else {
        None
    };
    if let Some(reason) = reason {
        return Err(PackError::InvalidName { name: name.to_owned(), reason: reason.to_owned() });
    }
    crate::pack_path::PackPath::check_component(name)
        .map_err(|e| PackError::InvalidName { name: name.to_owned(), reason: e.to_string() })
}

/// Characters that change how a name reads without showing: the bidirectional controls
/// (a right-to-left override makes `gpj.exe` read `exe.jpg`), zero-width characters and the
/// byte order mark.
fn is_invisible_format(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}' | '\u{061C}')
}

/// Whether a pack-relative path is the pack's `meta.json` (in any case: on a
/// case-insensitive file system `META.JSON` is the same file).
pub fn is_meta_path(path: &str) -> bool {
    path.eq_ignore_ascii_case("meta.json")
}

/// The one check of a change to a pack's `meta.json` (`None`: deleted), for
/// every write path: tool writes, reverts, hand edits before they are
/// committed (the store calls it at the commit boundary) and any later UI.
/// `Some(problem)` when the change would leave the pack without a readable
/// `meta.json`; other paths are never a problem.
pub fn meta_change_problem(path: &str, content: Option<&[u8]>) -> Option<String> {
    if !is_meta_path(path) {
        return None;
    }
    match content {
        None => Some("would be deleted (every pack needs one)".to_owned()),
        Some(bytes) => match parse_meta(bytes) {
            Ok(meta) => meta_name_problem(&meta),
            Err(problem) => Some(problem),
        },
    }
}

/// What is wrong with the `name` of a parsed `meta.json`, if anything: a name must be a
/// plain pack name (no `/`, no `..`, no leading `.`, no control character) and not a
/// reserved one. A missing or non-text name is not this check's business (lint says so).
pub fn meta_name_problem(meta: &Map<String, Value>) -> Option<String> {
    let Some(Value::String(name)) = meta.get("name") else { return None };
    if name.is_empty() {
        return None;
    }
    if let Err(PackError::InvalidName { reason, .. }) = validate_name(name) {
        return Some(format!("has the name {name:?}, which is not a plain pack name ({reason})"));
    }
    if RESERVED_NAMES.iter().any(|r| r.eq_ignore_ascii_case(name)) {
        return Some(format!("has the name {name:?}, which engram keeps for itself"));
    }
    None
}

/// The name a pack answers to: its `meta.json` name when that is a plain pack name, else
/// its directory's name (a bad name is ignored; `engram lint` reports it).
pub fn pack_name(meta: &Map<String, Value>, dir_name: &str) -> String {
    if meta_name_problem(meta).is_some() {
        return dir_name.to_owned();
    }
    python_str(meta.get("name"), dir_name)
}

/// Reads `meta.json` as an object, keeping key order. A symbolic link is never followed.
pub fn read_meta(dir: &Path) -> Result<Map<String, Value>, String> {
    use crate::pack_root::{Found, read_top_level};
    let name = crate::pack_path::PackPath::parse("meta.json").map_err(|e| e.to_string())?;
    match read_top_level(dir, &name, parse_meta) {
        Ok(Found::Here(meta)) => meta,
        Ok(Found::Link) => Err("is a symbolic link (links in a pack are never followed)".into()),
        Ok(_) => Err("is missing".into()),
        Err(e) => Err(format!("cannot be read: {e}")),
    }
}

/// Largest `meta.json` engram reads or writes (a real one is well under 1 KiB): a
/// larger one makes the pack's meta unreadable instead of every listing huge.
pub const MAX_META_BYTES: usize = 64 * 1024;

/// `meta.json`'s bytes as a JSON object, keeping key order.
fn parse_meta(bytes: &[u8]) -> Result<Map<String, Value>, String> {
    if bytes.len() > MAX_META_BYTES {
        return Err(format!("is {} bytes; the limit is {MAX_META_BYTES} bytes", bytes.len()));
    }
    let text = simdutf8::basic::from_utf8(bytes).map_err(|_| "is not valid UTF-8".to_owned())?;
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err("is not a JSON object".into()),
        Err(e) => Err(format!("is not valid JSON ({e})")),
    }
}

/// Renders a JSON value like Python's `str()` would in the reference's list output.
pub fn python_str(v: Option<&Value>, default: &str) -> String {
    match v {
        None => default.to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) => "None".into(),
        Some(Value::Bool(b)) => if *b { "True" } else { "False" }.into(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Array(a)) => {
            let items: Vec<String> = a.iter().map(python_repr).collect();
            format!("[{}]", items.join(", "))
        }
        Some(other @ Value::Object(_)) => python_repr(other),
    }
}

fn python_repr(v: &Value) -> String {
    match v {
        Value::String(s) => format!("'{s}'"),
        Value::Object(m) => {
            let items: Vec<String> = m.iter().map(|(k, v)| format!("'{k}': {}", python_repr(v))).collect();
            format!("{{{}}}", items.join(", "))
        }
        other => python_str(Some(other), ""),
    }
}

impl Packs {
    /// Packs under `packs_dir`, with `project_root` searched first when it is a directory.
    pub fn new(packs_dir: PathBuf, project_root: Option<PathBuf>) -> Self {
        let packs_dir = packs_dir.canonicalize().unwrap_or(packs_dir);
        Self::with_resolved_packs_dir(packs_dir, project_root)
    }

    /// [`Packs::new`] for a `packs_dir` whose symbolic links the caller already resolved.
    pub fn with_resolved_packs_dir(packs_dir: PathBuf, project_root: Option<PathBuf>) -> Self {
        let mut roots = Vec::new();
        if let Some(p) = project_root.filter(|p| p.is_dir()) {
            roots.push(p.canonicalize().unwrap_or(p));
        }
        if !roots.contains(&packs_dir) {
            roots.push(packs_dir.clone());
        }
        Self { roots, packs_dir }
    }

    /// The packs directory (where installs and `init` go, and where global memory lives).
    pub fn packs_dir(&self) -> &Path {
        &self.packs_dir
    }

    /// The roots, in lookup order.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// The directory of the memory shared by all packs.
    pub fn global_dir(&self) -> PathBuf {
        self.packs_dir.join(GLOBAL_DIR)
    }

    /// Every pack with a parsable meta, deduplicated by name (first root wins), sorted by directory.
    pub fn list(&self) -> Vec<PackSummary> {
        self.scan().packs
    }

    /// What the roots hold: the packs [`Packs::list`] returns, the directories
    /// whose `meta.json` is broken, and the packs hidden by one of the same
    /// name earlier in the lookup order.
    pub fn scan(&self) -> PackScan {
        let mut scan = PackScan::default();
        // Directory names of the packs of earlier roots: lookups by name find those first.
        let mut earlier_dirs: Vec<(String, PathBuf)> = Vec::new();
        for root in &self.roots {
            let Ok(entries) = fs::read_dir(root) else { continue };
            let mut dirs: Vec<PathBuf> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| !n.starts_with('.')))
                .collect();
            dirs.sort();
            let first_of_root = scan.packs.len();
            for dir in dirs {
                let dir_name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
                let meta = match read_meta(&dir) {
                    Ok(meta) => meta,
                    Err(problem) => {
                        if fs::symlink_metadata(dir.join("meta.json")).is_ok() {
                            scan.broken.push(BrokenPack { dir, dir_name, problem });
                        }
                        continue;
                    }
                };
                let name = pack_name(&meta, &dir_name);
                // A lookup by name tries directory names first (`resolve`): a pack whose
                // directory is named `name` takes it from one that only claims it in meta.json.
                if name == dir_name
                    && let Some(i) = scan.packs.iter().position(|p| {
                        p.name == name && p.dir.file_name().and_then(|n| n.to_str()) != Some(name.as_str())
                    })
                {
                    let claimed = std::mem::replace(&mut scan.packs[i], PackSummary { dir, name, meta });
                    let used = scan.packs[i].dir.clone();
                    scan.shadowed.push(ShadowedPack { name: claimed.name, used, hidden: claimed.dir });
                    continue;
                }
                let same_name = scan.packs.iter().find(|p| p.name == name).map(|p| p.dir.clone());
                let same_dir = earlier_dirs.iter().find(|(d, _)| *d == dir_name).map(|(_, p)| p.clone());
                if let Some(used) = same_name.or(same_dir) {
                    scan.shadowed.push(ShadowedPack { name, used, hidden: dir });
                    continue;
                }
                scan.packs.push(PackSummary { dir, name, meta });
            }
            earlier_dirs.extend(scan.packs[first_of_root..].iter().map(|p| {
                (p.dir.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned(), p.dir.clone())
            }));
        }
        scan
    }

    /// The pack `pack` hides: a pack of the same directory name in a later root
    /// (the user's pack behind a project's `.claude/engram/<name>`).
    pub fn shadowed_by(&self, pack: &PackDir) -> Option<PathBuf> {
        let mut after = false;
        for root in &self.roots {
            let candidate = root.join(&pack.dir_name);
            if candidate == pack.dir {
                after = true;
            } else if after && candidate.is_dir() && read_meta(&candidate).is_ok() {
                return Some(candidate);
            }
        }
        None
    }

    /// [`Packs::resolve`], also finding (by directory name) a pack whose
    /// `meta.json` is broken or was deleted by a commit (a directory with
    /// `meta.json` or a repository): for the tools that repair it (history,
    /// revert, undo).
    pub fn resolve_for_repair(&self, name: &str) -> Result<PackDir, PackError> {
        match self.resolve(name) {
            Err(e @ (PackError::BadMeta { .. } | PackError::NotFound { .. })) => self
                .roots
                .iter()
                .map(|root| (root, root.join(name)))
                .find(|(root, c)| {
                    let inside = match fs::symlink_metadata(c) {
                        Ok(m) if m.is_dir() => true,
                        Ok(m) => m.file_type().is_symlink() && c.is_dir() && contained(root, c),
                        Err(_) => false,
                    };
                    inside && (c.join("meta.json").exists() || c.join(".git").exists())
                })
                .map(|(_, dir)| PackDir { dir, dir_name: name.to_owned() })
                .ok_or(e),
            other => other,
        }
    }

    /// Finds a pack by directory name, then by `meta.name`.
    pub fn resolve(&self, name: &str) -> Result<PackDir, PackError> {
        self.resolve_with_meta(name).map(|(pack, _)| pack)
    }

    /// [`Packs::resolve`], also handing back the `meta.json` it parsed to decide.
    pub fn resolve_with_meta(&self, name: &str) -> Result<(PackDir, Map<String, Value>), PackError> {
        validate_name(name)?;
        for root in &self.roots {
            let candidate = root.join(name);
            let meta = match fs::symlink_metadata(&candidate) {
                // A real directory named by one plain segment is inside its root: no need to
                // resolve paths (which costs a system call per path component).
                Ok(m) if m.is_dir() => read_meta(&candidate).ok(),
                Ok(m) if m.file_type().is_symlink() && candidate.is_dir() && contained(root, &candidate) => {
                    read_meta(&candidate).ok()
                }
                _ => None,
            };
            if let Some(meta) = meta {
                return Ok((PackDir { dir: candidate, dir_name: name.to_owned() }, meta));
            }
        }
        for pack in self.list() {
            if pack.name == name {
                let dir_name = pack.dir.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
                return Ok((PackDir { dir: pack.dir, dir_name }, pack.meta));
            }
        }
        // A directory that exists but whose meta is broken deserves a precise message.
        for root in &self.roots {
            let candidate = root.join(name);
            if candidate.is_dir()
                && candidate.join("meta.json").exists()
                && let Err(problem) = read_meta(&candidate)
            {
                return Err(PackError::BadMeta { name: name.to_owned(), problem });
            }
        }
        Err(PackError::NotFound { name: name.to_owned() })
    }

    /// Finds a pack by directory name only across roots (used for `extends`).
    pub fn resolve_dir_name(&self, name: &str) -> Option<PathBuf> {
        validate_name(name).ok()?;
        self.roots.iter().map(|r| r.join(name)).find(|c| c.is_dir())
    }
}

/// True when `path` (resolved through symlinks) stays inside `root`.
pub fn contained(root: &Path, path: &Path) -> bool {
    match (root.canonicalize(), path.canonicalize()) {
        (Ok(r), Ok(p)) => p.starts_with(r),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_single_segments() {
        assert!(validate_name("fitness-coach").is_ok());
        assert!(validate_name("健身教练").is_ok());
        for bad in ["", ".", "..", "a/b", "..\\x", " a", ".git", "a\nb"] {
            assert!(validate_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn meta_changes_must_leave_a_json_object() {
        assert_eq!(meta_change_problem("knowledge/x.md", Some(b"x")), None);
        assert_eq!(meta_change_problem("meta.json", Some(b"{\"name\": \"a\"}")), None);
        for bad in [&b"x"[..], b"[1]", b"", b"\xff"] {
            assert!(meta_change_problem("meta.json", Some(bad)).is_some(), "{bad:?}");
        }
        assert!(meta_change_problem("META.json", Some(b"x")).is_some(), "any case");
        assert!(meta_change_problem("meta.json", None).is_some_and(|p| p.contains("deleted")));
        assert_eq!(meta_change_problem("sub/meta.json", Some(b"x")), None, "only the pack's own");
    }

    #[test]
    fn new_pack_names_must_be_portable() {
        for bad in ["CON", "nul", "x:stream", "com1", "end.", "a|b"] {
            assert!(validate_name(bad).is_ok(), "an existing pack stays reachable: {bad}");
            assert!(validate_new_name(bad).is_err(), "{bad}");
        }
        assert!(validate_new_name("console").is_ok());
        for reserved in ["_global", "_GLOBAL", "-rf", "--help", "a\u{202E}gpj", "a\u{200B}b"] {
            assert!(validate_new_name(reserved).is_err(), "{reserved}");
        }
    }

    #[test]
    fn meta_names_must_be_plain_pack_names() {
        for bad in ["../x", "a/b", ".users", "..", "_global", "a\u{0}b"] {
            let text = serde_json::json!({"name": bad}).to_string();
            assert!(meta_change_problem("meta.json", Some(text.as_bytes())).is_some(), "{bad}");
        }
        assert_eq!(meta_change_problem("meta.json", Some(br#"{"name": "coach"}"#)), None);
        let meta = parse_meta(br#"{"name": "../x"}"#).expect("json");
        assert_eq!(pack_name(&meta, "dir"), "dir");
    }

    #[test]
    fn python_str_matches_the_reference() {
        assert_eq!(python_str(Some(&Value::Null), ""), "None");
        assert_eq!(python_str(Some(&serde_json::json!(["a", "b"])), ""), "['a', 'b']");
        assert_eq!(python_str(None, "x"), "x");
    }
}
