//! Read-only, pack-confined view of the filesystem used by the linter.
//!
//! It mirrors what the reference gets from `pathlib` (`is_file`, `is_dir`, `resolve`, `rglob`)
//! while never following a symlink out of the pack: anything that resolves outside the pack root
//! is reported as [`Probe::Outside`] and is never read or stat'ed through.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use unicode_normalization::UnicodeNormalization;

use super::pytext::{DecodedText, decode_text};

/// Maximum number of symlinks followed while resolving one path (like the OS `ELOOP` limit).
const MAX_SYMLINK_HOPS: usize = 40;

/// What a pack-relative path turned out to be.
#[derive(Debug)]
pub(crate) enum Probe {
    /// A regular file (after following in-pack symlinks).
    File,
    /// A directory (after following in-pack symlinks).
    Dir,
    /// Exists but is neither a regular file nor a directory (fifo, socket, ...).
    Other,
    /// Does not exist (or a symlink loop / a non-directory in the middle of the path).
    Missing,
    /// Resolves (through `..` or a symlink) to a location outside the pack.
    Outside,
    /// Could not be inspected (e.g. permission denied).
    Error(io::Error),
}

/// One entry found by [`PackFs::walk`].
#[derive(Debug, Clone)]
pub(crate) struct WalkEntry {
    /// Path relative to the pack root, built lexically (no symlink resolution).
    pub(crate) rel: PathBuf,
    /// File name of the entry.
    pub(crate) name: OsString,
    /// Whether the entry itself is a symlink.
    pub(crate) is_symlink: bool,
}

/// Result of a recursive walk of one directory.
#[derive(Debug, Default)]
pub(crate) struct Walk {
    /// Every entry below the start directory (files, dirs, symlinks), in no particular order.
    pub(crate) entries: Vec<WalkEntry>,
    /// Directories (pack-relative) that could not be listed, with the error.
    pub(crate) unreadable: Vec<(PathBuf, io::Error)>,
}

/// Result of reading a text file inside the pack.
#[derive(Debug)]
pub(crate) enum ReadOutcome {
    /// The file was read (possibly lossily, see [`DecodedText::valid_utf8`]).
    Text(DecodedText),
    /// The path resolves outside the pack and was not read.
    Outside,
    /// Reading failed with an I/O error.
    Failed(io::Error),
}

/// The pack root (canonical) plus helpers that keep every access inside it.
#[derive(Debug, Clone)]
pub(crate) struct PackFs {
    root: PathBuf,
}

impl PackFs {
    /// Wrap an already canonicalised pack directory.
    pub(crate) fn new(canonical_root: PathBuf) -> Self {
        Self { root: canonical_root }
    }

    /// The canonical pack root.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Resolve `rel` (relative to the root, or absolute) like Python's `Path.resolve()`
    /// (non-strict `realpath`).
    pub(crate) fn resolve(&self, rel: &Path) -> PathBuf {
        realpath_lenient(&self.root.join(rel))
    }

    /// Whether an absolute, resolved path lies inside the pack (`relative_to` succeeds).
    pub(crate) fn contains(&self, resolved: &Path) -> bool {
        resolved.starts_with(&self.root)
    }

    /// Inspect a pack-relative path, following symlinks only while they stay inside the pack.
    pub(crate) fn probe(&self, rel: &Path) -> Probe {
        if !self.contains(&self.resolve(rel)) {
            return Probe::Outside;
        }
        // Stat the unresolved path so the kernel applies `..` after symlinks and fails on a
        // missing or non-directory component, exactly like pathlib's `is_file()`.
        probe_path(&self.root.join(rel))
    }

    /// Like [`PackFs::probe`], but when the exact path is missing, retry with the on-disk names
    /// whose Unicode NFC form matches (NFC/NFD-insensitive lookup). Returns the probe and the
    /// pack-relative path that was finally used.
    pub(crate) fn probe_nfc(&self, rel: &Path) -> (Probe, PathBuf) {
        let probe = self.probe(rel);
        if !matches!(probe, Probe::Missing) || rel.to_str().is_some_and(|s| s.is_ascii()) {
            return (probe, rel.to_path_buf());
        }
        match self.find_nfc_variant(rel) {
            Some(alt) if alt != rel => {
                let alt_probe = self.probe(&alt);
                if matches!(alt_probe, Probe::Missing) {
                    (probe, rel.to_path_buf())
                } else {
                    (alt_probe, alt)
                }
            }
            _ => (probe, rel.to_path_buf()),
        }
    }

    /// Find a pack-relative path whose components match `rel` up to Unicode normalisation.
    fn find_nfc_variant(&self, rel: &Path) -> Option<PathBuf> {
        let mut found = PathBuf::new();
        for comp in rel.components() {
            match comp {
                Component::Normal(name) => {
                    let here = self.root.join(&found);
                    if fs::symlink_metadata(here.join(name)).is_ok() {
                        found.push(name);
                        continue;
                    }
                    let wanted = nfc(&name.to_string_lossy());
                    let dir = realpath_lenient(&here);
                    if !self.contains(&dir) {
                        return None;
                    }
                    let entry = fs::read_dir(&dir).ok()?.flatten().find(|e| {
                        let n = e.file_name();
                        nfc(&n.to_string_lossy()) == wanted
                    })?;
                    found.push(entry.file_name());
                }
                Component::ParentDir => found.push(".."),
                Component::CurDir => {}
                Component::RootDir | Component::Prefix(_) => return None,
            }
        }
        Some(found)
    }

    /// Read a pack-relative text file with Python text-mode semantics (lossy on bad UTF-8).
    pub(crate) fn read_text(&self, rel: &Path) -> ReadOutcome {
        if !self.contains(&self.resolve(rel)) {
            return ReadOutcome::Outside;
        }
        match fs::read(self.root.join(rel)) {
            Ok(bytes) => ReadOutcome::Text(decode_text(&bytes)),
            Err(e) => ReadOutcome::Failed(e),
        }
    }

    /// Recursively list `rel_dir` like Python's `rglob`: the start directory is entered even if
    /// it is an (in-pack) symlink, but symlinked sub-directories are not descended into, so the
    /// walk never leaves the pack. Unreadable directories are recorded, not fatal.
    pub(crate) fn walk(&self, rel_dir: &Path) -> Walk {
        let mut walk = Walk::default();
        let mut pending: VecDeque<PathBuf> = VecDeque::from([rel_dir.to_path_buf()]);
        while let Some(dir_rel) = pending.pop_front() {
            let abs = self.root.join(&dir_rel);
            let reader = match fs::read_dir(&abs) {
                Ok(r) => r,
                Err(e) => {
                    walk.unreadable.push((dir_rel, e));
                    continue;
                }
            };
            for item in reader {
                let entry = match item {
                    Ok(entry) => entry,
                    Err(e) => {
                        walk.unreadable.push((dir_rel.clone(), e));
                        break;
                    }
                };
                let name = entry.file_name();
                let rel = dir_rel.join(&name);
                let file_type = entry.file_type().ok();
                let is_symlink = file_type.is_some_and(|t| t.is_symlink());
                if file_type.is_some_and(|t| t.is_dir()) {
                    pending.push_back(rel.clone());
                }
                walk.entries.push(WalkEntry { rel, name, is_symlink });
            }
        }
        walk
    }
}

/// Stat a path (following symlinks) and classify it.
fn probe_path(path: &Path) -> Probe {
    match fs::metadata(path) {
        Ok(meta) if meta.is_file() => Probe::File,
        Ok(meta) if meta.is_dir() => Probe::Dir,
        Ok(_) => Probe::Other,
        Err(e) if is_missing_error(&e) => Probe::Missing,
        Err(e) => Probe::Error(e),
    }
}

/// Errors that Python's `Path.is_file()` / `is_dir()` turn into `False`.
fn is_missing_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound
            | io::ErrorKind::NotADirectory
            | io::ErrorKind::InvalidInput
            | io::ErrorKind::InvalidFilename
    ) || is_symlink_loop(e)
}

/// `ELOOP` (too many levels of symbolic links); `ErrorKind::FilesystemLoop` is not stable yet.
fn is_symlink_loop(e: &io::Error) -> bool {
    const ELOOP: i32 =
        if cfg!(any(target_os = "macos", target_os = "ios", target_os = "freebsd")) { 62 } else { 40 };
    cfg!(unix) && e.raw_os_error() == Some(ELOOP)
}

/// Python's `os.path.realpath(path, strict=False)` for an absolute path: resolve symlinks
/// component by component, apply `..` after resolution, keep missing components as they are.
pub(crate) fn realpath_lenient(path: &Path) -> PathBuf {
    let mut resolved = PathBuf::new();
    let mut pending: VecDeque<OsString> = VecDeque::new();
    let mut hops = 0usize;
    push_components(&mut resolved, &mut pending, path, false);
    while let Some(part) = pending.pop_front() {
        if part == ".." {
            resolved.pop();
            continue;
        }
        let candidate = resolved.join(&part);
        let is_link = fs::symlink_metadata(&candidate).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link || hops >= MAX_SYMLINK_HOPS {
            resolved = candidate;
            continue;
        }
        hops += 1;
        match fs::read_link(&candidate) {
            Ok(target) => push_components(&mut resolved, &mut pending, &target, true),
            Err(_) => resolved = candidate,
        }
    }
    resolved
}

/// Queue the components of `path`; an absolute `path` resets `resolved` to its root.
/// With `front`, the components go before the ones already pending (symlink expansion).
fn push_components(resolved: &mut PathBuf, pending: &mut VecDeque<OsString>, path: &Path, front: bool) {
    let mut parts: Vec<OsString> = Vec::new();
    for comp in path.components() {
        match comp {
            Component::Prefix(p) => {
                *resolved = PathBuf::from(p.as_os_str());
                parts.clear();
            }
            Component::RootDir => {
                // Keep a Windows drive prefix if there is one, drop everything else.
                let mut root = match resolved.components().next() {
                    Some(Component::Prefix(p)) => PathBuf::from(p.as_os_str()),
                    _ => PathBuf::new(),
                };
                root.push(Component::RootDir.as_os_str());
                *resolved = root;
                parts.clear();
            }
            Component::CurDir => {}
            Component::ParentDir => parts.push(OsString::from("..")),
            Component::Normal(n) => parts.push(n.to_os_string()),
        }
    }
    if front {
        for part in parts.into_iter().rev() {
            pending.push_front(part);
        }
    } else {
        pending.extend(parts);
    }
}

/// Unicode NFC form of a string.
pub(crate) fn nfc(s: &str) -> String {
    s.nfc().collect()
}

/// A pack-relative path as Python's `PurePosixPath.as_posix()` would print it.
pub(crate) fn posix_string(path: &Path) -> String {
    let mut parts: Vec<std::borrow::Cow<'_, str>> = Vec::new();
    let mut absolute = false;
    for comp in path.components() {
        match comp {
            Component::RootDir => absolute = true,
            Component::Prefix(p) => parts.push(p.as_os_str().to_string_lossy()),
            Component::CurDir => {}
            Component::ParentDir => parts.push("..".into()),
            Component::Normal(n) => parts.push(n.to_string_lossy()),
        }
    }
    let joined = parts.join("/");
    match (absolute, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_string(),
        (false, false) => joined,
    }
}

/// Whether a file name ends with `suffix` (byte-wise, works for non-UTF-8 names).
pub(crate) fn name_ends_with(name: &OsStr, suffix: &str) -> bool {
    name.as_encoded_bytes().ends_with(suffix.as_bytes())
}

/// Whether a file name starts with `prefix` (byte-wise, works for non-UTF-8 names).
pub(crate) fn name_starts_with(name: &OsStr, prefix: &str) -> bool {
    name.as_encoded_bytes().starts_with(prefix.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn posix_string_normalises_like_pathlib() {
        assert_eq!(posix_string(Path::new("knowledge/./a//b.md")), "knowledge/a/b.md");
        assert_eq!(posix_string(Path::new("knowledge/../x.md")), "knowledge/../x.md");
        assert_eq!(posix_string(Path::new("./")), ".");
        assert_eq!(posix_string(Path::new("/tmp/p/")), "/tmp/p");
    }

    #[test]
    fn walk_records_unlistable_directories() {
        let dir = std::env::temp_dir().join(format!("engram-walk-test-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).expect("mkdir");
        std::fs::write(dir.join("sub/x.md"), "x").expect("write");
        std::fs::write(dir.join("file.md"), "x").expect("write");
        let fs = PackFs::new(realpath_lenient(&dir));
        let walk = fs.walk(Path::new("file.md"));
        assert!(walk.entries.is_empty());
        assert_eq!(walk.unreadable.len(), 1);
        let walk = fs.walk(Path::new(""));
        let mut names: Vec<String> = walk.entries.iter().map(|e| posix_string(&e.rel)).collect();
        names.sort();
        assert_eq!(names, vec!["file.md", "sub", "sub/x.md"]);
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn realpath_handles_dotdot_and_missing_parts() {
        let tmp = std::env::temp_dir();
        let base = realpath_lenient(&tmp);
        assert_eq!(realpath_lenient(&tmp.join("no-such-dir-xyz/../b")), base.join("b"));
    }
}
