//! Pack-relative paths, parsed once at the boundary.
//!
//! A [`PackPath`] is a path inside a pack's working tree that is safe to join
//! onto the pack root: plain relative, `/`-separated, no empty, `.` or `..`
//! component, nothing under `.git/` (any case), no control characters, and no
//! component Windows cannot check out (`CON`, `nul.txt`, `a:b`, a trailing dot
//! or space). Tool arguments, CLI arguments, paths in a commit being published
//! and paths read from a fetched tree are parsed into it where they enter;
//! code further in takes `&PackPath` and never validates again (the model is
//! jj's `RepoPathBuf`).
//!
//! Parsing does not touch the file system: whether a component is a symbolic
//! link is a question for the code that opens the file (see the store's
//! path checks and the no-follow file access).

use std::fmt;

/// Longest path accepted, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;

/// Why a string is not a [`PackPath`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PackPathError {
    /// Nothing (or only separators and `.`) was given.
    #[error("empty path")]
    Empty,
    /// Longer than [`MAX_PATH_BYTES`].
    #[error("path too long ({0} bytes; the limit is {MAX_PATH_BYTES})")]
    TooLong(usize),
    /// Starts at a root or a drive.
    #[error("absolute paths are not allowed; give a path relative to the pack")]
    Absolute,
    /// A NUL or another control character.
    #[error("control characters are not allowed")]
    ControlCharacter,
    /// A `..` component.
    #[error("`..` is not allowed; paths stay inside the pack")]
    ParentComponent,
    /// An empty or `.` component in a path that must already be normal.
    #[error("empty or `.` components are not allowed")]
    NotNormal,
    /// A `.git` component, in any case.
    #[error("the .git directory is not accessible")]
    GitDir,
    /// A component Windows cannot create (`CON`, `nul.md`, `a:b`, trailing dot or space).
    #[error(
        "{0:?} is not a portable file name (reserved on Windows, or contains `:`, or ends in a dot or space)"
    )]
    NotPortable(String),
    /// A name that must be one component contains `/` or `\\`.
    #[error("a name may not contain `/` or `\\`")]
    Separator,
}

/// A validated pack-relative path (see the module docs for what that means).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PackPath(String);

impl PackPath {
    /// Parses a path as a user gives it: surrounding white space trimmed, `\`
    /// read as `/`, empty and `.` components dropped. Everything else is
    /// checked as in [`PackPath::parse`].
    pub fn parse_user(input: &str) -> Result<Self, PackPathError> {
        let normal = input.trim().replace('\\', "/");
        if normal.starts_with('/') {
            return Err(PackPathError::Absolute);
        }
        let parts: Vec<&str> = normal.split('/').filter(|s| !s.is_empty() && *s != ".").collect();
        Self::parse(&parts.join("/"))
    }

    /// Parses a path that must already be in normal form, as in a git tree or
    /// a commit being published: no leading `/`, no `\`, no empty or `.`
    /// component.
    pub fn parse(input: &str) -> Result<Self, PackPathError> {
        if input.is_empty() {
            return Err(PackPathError::Empty);
        }
        if input.len() > MAX_PATH_BYTES {
            return Err(PackPathError::TooLong(input.len()));
        }
        if input.starts_with('/') || has_drive_prefix(input) {
            return Err(PackPathError::Absolute);
        }
        if input.chars().any(char::is_control) {
            return Err(PackPathError::ControlCharacter);
        }
        if input.contains('\\') {
            return Err(PackPathError::NotNormal);
        }
        for part in input.split('/') {
            match part {
                "" | "." => return Err(PackPathError::NotNormal),
                ".." => return Err(PackPathError::ParentComponent),
                _ if part.eq_ignore_ascii_case(".git") => return Err(PackPathError::GitDir),
                _ if !is_portable_component(part) => return Err(PackPathError::NotPortable(part.to_owned())),
                _ => {}
            }
        }
        Ok(Self(input.to_owned()))
    }

    /// Checks a name that becomes one path component (a pack name, a
    /// category, a user id, a file name built from an argument): no `/` or
    /// `\\`, and what [`PackPath::parse`] checks of each component (not `.`,
    /// `..` or `.git`, no control characters, portable to Windows). The one
    /// rule for every name that becomes a path.
    pub fn check_component(name: &str) -> Result<(), PackPathError> {
        if name.contains(['/', '\\']) {
            return Err(PackPathError::Separator);
        }
        Self::parse(name).map(|_| ())
    }

    /// The path as a `/`-separated string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The components, first to last.
    pub fn components(&self) -> impl Iterator<Item = &str> {
        self.0.split('/')
    }

    /// The last component.
    pub fn file_name(&self) -> &str {
        self.0.rsplit('/').next().unwrap_or(&self.0)
    }

    /// The directory holding this path, `None` at the top of the pack.
    pub fn parent(&self) -> Option<PackPath> {
        self.0.rsplit_once('/').map(|(dir, _)| PackPath(dir.to_owned()))
    }

    /// Appends one component (or several, `/`-separated), checked as [`PackPath::parse`] does.
    pub fn join(&self, rest: &str) -> Result<PackPath, PackPathError> {
        PackPath::parse(&format!("{}/{rest}", self.0))
    }

    /// Whether the path is `dir` or lies under it, comparing components
    /// case-insensitively (ASCII), as a case-insensitive file system (macOS,
    /// Windows) would: `Memory/x.md` is under `memory`.
    pub fn is_within_folded(&self, dir: &str) -> bool {
        let mut mine = self.components();
        dir.split('/').all(|want| mine.next().is_some_and(|got| got.eq_ignore_ascii_case(want)))
    }

    /// Whether the path is in the reserved `memory/` folder (or is it), in any
    /// case: only the memory tools write there.
    pub fn is_memory(&self) -> bool {
        self.is_within_folded("memory")
    }

    /// The path as an owned string.
    pub fn into_string(self) -> String {
        self.0
    }
}

/// `C:` or `C:/…`: a Windows drive (`x:stream` is caught later as not portable).
fn has_drive_prefix(input: &str) -> bool {
    let b = input.as_bytes();
    b.len() >= 2
        && b[0].is_ascii_alphabetic()
        && b[1] == b':'
        && matches!(b.get(2), None | Some(b'/' | b'\\'))
}

/// Whether Windows can create a file or folder of this name: no `:` or other
/// characters it forbids, no trailing dot or space, and not a device name
/// (`CON`, `PRN`, `AUX`, `NUL`, `COM1`–`COM9`, `LPT1`–`LPT9`, with or without
/// an extension).
fn is_portable_component(part: &str) -> bool {
    if part.ends_with('.') || part.ends_with(' ') {
        return false;
    }
    if part.chars().any(|c| matches!(c, ':' | '<' | '>' | '"' | '|' | '?' | '*')) {
        return false;
    }
    let stem = part.split('.').next().unwrap_or(part).trim_end();
    let upper = stem.to_ascii_uppercase();
    let device = matches!(upper.as_str(), "CON" | "PRN" | "AUX" | "NUL")
        || (upper.len() == 4
            && (upper.starts_with("COM") || upper.starts_with("LPT"))
            && upper.as_bytes()[3].is_ascii_digit()
            && upper.as_bytes()[3] != b'0');
    !device
}

impl fmt::Display for PackPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for PackPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PackPath({:?})", self.0)
    }
}

impl AsRef<str> for PackPath {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for PackPath {
    fn borrow(&self) -> &str {
        &self.0
    }
}

/// Whether `path` (parts separated by `/`) matches `pattern`: `*` is any run within one
/// part, `**` any run of parts, `?` one character other than `/`. For `purge` and
/// `build --exclude`.
pub fn glob_match(pattern: &str, path: &str) -> bool {
    fn go(pat: &[u8], s: &[u8]) -> bool {
        if pat.starts_with(b"**") {
            let rest = pat[2..].strip_prefix(b"/").unwrap_or(&pat[2..]);
            return (0..=s.len()).any(|i| go(rest, &s[i..]));
        }
        match (pat.first(), s.first()) {
            (None, None) => true,
            (Some(b'*'), _) => go(&pat[1..], s) || (!s.is_empty() && s[0] != b'/' && go(pat, &s[1..])),
            (Some(p), Some(c)) if p == c || *p == b'?' && *c != b'/' => go(&pat[1..], &s[1..]),
            _ => false,
        }
    }
    go(pattern.as_bytes(), path.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_relative_paths_parse() {
        for ok in ["a.md", "knowledge/x.md", "memory/_log/a/000001.md", "知识/说明.md", "a.b.c", ".hidden"]
        {
            assert_eq!(PackPath::parse(ok).map(|p| p.into_string()), Ok(ok.to_owned()), "{ok}");
        }
    }

    #[test]
    fn escapes_and_odd_forms_are_refused() {
        use PackPathError::*;
        let cases: [(&str, PackPathError); 14] = [
            ("", Empty),
            ("/etc/passwd", Absolute),
            ("C:/x", Absolute),
            ("../x", ParentComponent),
            ("a/../../x", ParentComponent),
            ("a//b", NotNormal),
            ("./a", NotNormal),
            ("a\\b", NotNormal),
            (".git/config", GitDir),
            ("x/.GIT/hooks/pre-commit", GitDir),
            ("a\0b", ControlCharacter),
            ("a\nb", ControlCharacter),
            ("CON", NotPortable("CON".into())),
            ("x/nul.md", NotPortable("nul.md".into())),
        ];
        for (input, want) in cases {
            assert_eq!(PackPath::parse(input), Err(want), "{input:?}");
        }
        assert!(matches!(PackPath::parse("x:stream"), Err(NotPortable(_))));
        assert!(matches!(PackPath::parse("trailing./x"), Err(NotPortable(_))));
        assert!(matches!(PackPath::parse("com1.txt"), Err(NotPortable(_))));
        assert!(PackPath::parse("com0.txt").is_ok());
        assert!(PackPath::parse("console.md").is_ok());
        assert!(matches!(PackPath::parse(&"a".repeat(MAX_PATH_BYTES + 1)), Err(TooLong(_))));
    }

    #[test]
    fn single_components_are_checked_like_path_components() {
        for ok in ["preferences", "用户画像", "a.b", "console", "com0"] {
            assert_eq!(PackPath::check_component(ok), Ok(()), "{ok}");
        }
        for bad in ["CON", "nul", "x:stream", "aux.md", "a.", "a ", "..", ".", "", "a/b", "a\\b", ".GIT"] {
            assert!(PackPath::check_component(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn user_input_is_normalised_first() {
        let p = PackPath::parse_user("  .\\knowledge//./notes.md ").expect("parses");
        assert_eq!(p.as_str(), "knowledge/notes.md");
        assert_eq!(PackPath::parse_user("/abs"), Err(PackPathError::Absolute));
        assert_eq!(PackPath::parse_user(" ./ "), Err(PackPathError::Empty));
        assert_eq!(PackPath::parse_user("a/../b"), Err(PackPathError::ParentComponent));
    }

    #[test]
    fn the_memory_folder_is_recognised_in_any_case() {
        for reserved in ["memory", "memory/a.md", "Memory/x.md", "MEMORY/_index.md"] {
            assert!(PackPath::parse(reserved).expect("parses").is_memory(), "{reserved}");
        }
        for free in ["memoryx/a.md", "knowledge/memory/a.md", "memories.md"] {
            assert!(!PackPath::parse(free).expect("parses").is_memory(), "{free}");
        }
    }

    #[test]
    fn parent_name_and_join() {
        let p = PackPath::parse("knowledge/guide/01.md").expect("parses");
        assert_eq!(p.file_name(), "01.md");
        assert_eq!(p.parent().map(PackPath::into_string).as_deref(), Some("knowledge/guide"));
        assert_eq!(PackPath::parse("a.md").expect("parses").parent(), None);
        assert_eq!(p.parent().expect("dir").join("02.md").expect("joins").as_str(), "knowledge/guide/02.md");
        assert!(p.join("../x").is_err());
    }
}
