//! The secret guard at the commit boundary: every text a commit adds is scanned.
//! The same boundary keeps `meta.json` readable (`crate::pack::meta_change_problem`).
//!
//! [`PackRepo::write`](super::PackRepo::write) calls [`check_changes`] before it
//! builds a tree, and hand edits are checked before engram commits them, so no
//! write path (tools, CLI, future toolsets) can put a credential into history.
//! Only the lines a change adds are scanned: text already in the pack was
//! scanned when it came in, and a revert that restores older text is not
//! refused for text the pack already held.

use std::collections::HashSet;

use git2::{ObjectType, Repository, Tree};

use super::{Changes, StoreError};
use crate::secrets::{self, Finding};

/// What `new` appends to `old`, when it keeps `old` (whole lines) as it is.
fn appended<'a>(old: &[u8], new: &'a [u8]) -> Option<&'a [u8]> {
    (old.ends_with(b"\n") && new.starts_with(old)).then(|| &new[old.len()..])
}

fn line_count(text: &[u8]) -> usize {
    memchr::memchr_iter(b'\n', text).count()
}

/// Lines of `new` that are not lines of `old`, numbered.
fn rewritten_lines<'a>(old: Option<&str>, new: &'a str) -> Vec<(usize, &'a str)> {
    let seen: HashSet<&str> = old.map(|o| o.lines().collect()).unwrap_or_default();
    new.lines().enumerate().filter(|(_, l)| !seen.contains(l)).map(|(i, l)| (i + 1, l)).collect()
}

/// Scans the lines `new` adds to `old` (a file at `path`).
///
/// An append (the common write) is scanned on its new bytes alone: the old
/// text is neither decoded nor split, and its lines are counted only to
/// number a finding.
pub fn scan_added(path: &str, old: Option<&[u8]>, new: &[u8]) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(tail) = old.and_then(|old| appended(old, new)) {
        let Ok(tail) = std::str::from_utf8(tail) else { return Vec::new() };
        for (i, line) in tail.lines().enumerate() {
            secrets::scan_line(line, i + 1, &mut out);
        }
        if !out.is_empty() {
            let before = line_count(&new[..new.len() - tail.len()]);
            out.iter_mut().for_each(|f| f.line += before);
        }
    } else {
        let Ok(new) = std::str::from_utf8(new) else { return Vec::new() };
        let old = old.map(String::from_utf8_lossy);
        for (no, line) in rewritten_lines(old.as_deref(), new) {
            secrets::scan_line(line, no, &mut out);
        }
    }
    for f in &mut out {
        f.path = path.to_owned();
    }
    out
}

fn blob_at(repo: &Repository, tree: Option<&Tree<'_>>, path: &str) -> Option<Vec<u8>> {
    let entry = tree?.get_path(std::path::Path::new(path)).ok()?;
    if entry.kind() != Some(ObjectType::Blob) {
        return None;
    }
    repo.find_blob(entry.id()).ok().map(|b| b.content().to_vec())
}

/// Refuses `changes` when the text they add to `base` holds a credential, or
/// when they would break the pack's `meta.json` ([`crate::pack::meta_change_problem`]).
pub(super) fn check_changes(base: &super::Snapshot<'_>, changes: &Changes) -> Result<(), StoreError> {
    let mut findings = Vec::new();
    for (path, content) in &changes.files {
        if let Some(problem) = crate::pack::meta_change_problem(path, content.as_deref()) {
            return Err(StoreError::BadMeta { problem, hand_edit: false });
        }
        if let Some(bytes) = content {
            let old = base.read(path).ok().flatten();
            findings.extend(scan_added(path, old.as_deref(), bytes));
        }
    }
    if findings.is_empty() { Ok(()) } else { Err(StoreError::Secret { findings, hand_edit: false }) }
}

/// Refuses hand edits (working-tree files differing from HEAD) that add a
/// credential or break `meta.json`.
pub(super) fn check_hand_edits(
    repo: &Repository,
    dir: &std::path::Path,
    head: Option<&Tree<'_>>,
    paths: &[String],
) -> Result<(), StoreError> {
    let mut findings = Vec::new();
    let root = crate::pack_root::PackRoot::open(dir).map_err(|e| super::io_err("open", dir, e))?;
    for path in paths {
        // What git would commit: a symbolic link is committed as its target's name, never
        // followed (and a link's name holds no credential worth a read through it).
        let bytes = match crate::pack_path::PackPath::parse(path) {
            Ok(rel) => match root.read(&rel, <[u8]>::to_vec) {
                Ok(crate::pack_root::Found::Here(bytes)) => Some(bytes),
                _ => None,
            },
            // A name a pack path cannot hold (refused when published): scanned all the same.
            Err(_) => std::fs::read(dir.join(path)).ok(),
        };
        if let Some(problem) = crate::pack::meta_change_problem(path, bytes.as_deref()) {
            return Err(StoreError::BadMeta { problem, hand_edit: true });
        }
        let Some(bytes) = bytes else { continue };
        let old = blob_at(repo, head, path);
        findings.extend(scan_added(path, old.as_deref(), &bytes));
    }
    if findings.is_empty() { Ok(()) } else { Err(StoreError::Secret { findings, hand_edit: true }) }
}

impl super::PackRepo {
    /// Credentials in the lines the git index (staged changes) adds to HEAD:
    /// what the pre-commit hook checks on hand-made commits. `index_file` is
    /// the index git hands the hook (`GIT_INDEX_FILE`), when it is not the default.
    pub fn staged_findings(&self, index_file: Option<&std::path::Path>) -> Result<Vec<Finding>, StoreError> {
        let dir = &self.dir;
        let index = match index_file {
            Some(p) => git2::Index::open(&dir.join(p)),
            None => self.repo.index(),
        }
        .map_err(|e| super::git_err("reading the index", dir, e))?;
        let head = self
            .head_commit()?
            .map(|c| c.tree())
            .transpose()
            .map_err(|e| super::git_err("reading HEAD's tree", dir, e))?;
        let mut out = Vec::new();
        for entry in index.iter() {
            let path = String::from_utf8_lossy(&entry.path).into_owned();
            let old_id =
                head.as_ref().and_then(|t| t.get_path(std::path::Path::new(&path)).ok()).map(|e| e.id());
            if old_id == Some(entry.id) {
                continue;
            }
            let Ok(blob) = self.repo.find_blob(entry.id) else { continue };
            let old = blob_at(&self.repo, head.as_ref(), &path);
            out.extend(scan_added(&path, old.as_deref(), blob.content()));
        }
        Ok(out)
    }

    /// The repository's hooks directory (`.git/hooks`).
    pub fn hooks_dir(&self) -> std::path::PathBuf {
        self.repo.path().join("hooks")
    }

    /// Bytes used by the repository's `.git` directory.
    pub fn git_size(&self) -> u64 {
        fn du(p: &std::path::Path) -> u64 {
            match std::fs::symlink_metadata(p) {
                Ok(m) if m.is_dir() => {
                    std::fs::read_dir(p).map(|d| d.flatten().map(|e| du(&e.path())).sum()).unwrap_or(0)
                }
                Ok(m) => m.len(),
                Err(_) => 0,
            }
        }
        du(self.repo.path())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_added_lines_are_scanned() {
        let secret = ["password=", "hunter2x"].concat();
        let old = format!("a\n{secret}\n");
        let new = format!("a\n{secret}\nb\n");
        assert!(scan_added("f.md", Some(old.as_bytes()), new.as_bytes()).is_empty());
        let found = scan_added("f.md", Some(b"a\n"), new.as_bytes());
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].path.as_str(), found[0].line), ("f.md", 2));
    }

    #[test]
    fn appended_lines_are_numbered_after_the_old_text_and_rewrites_still_diff() {
        let secret = ["password=", "hunter2x"].concat();
        let appended = scan_added("f.md", Some(b"a\nb\n"), format!("a\nb\nc\n{secret}\n").as_bytes());
        assert_eq!(appended.iter().map(|f| f.line).collect::<Vec<_>>(), vec![4]);
        // An appended credential is found at its line, even when the same text was there before.
        let found = scan_added(
            "f.md",
            Some(format!("{secret}\n").as_bytes()),
            format!("{secret}\n{secret}\n").as_bytes(),
        );
        assert_eq!(found.iter().map(|f| f.line).collect::<Vec<_>>(), vec![2]);
        // Not an append (the old last line changed): lines are compared as a set.
        assert_eq!(rewritten_lines(Some("a\nb"), "a\nbc\n"), vec![(2, "bc")]);
        assert_eq!(rewritten_lines(Some("x\na\n"), "a\ny\n"), vec![(2, "y")]);
        // An append to text that is not UTF-8 is still scanned.
        let new = [b"\xff\n".as_slice(), secret.as_bytes(), b"\n"].concat();
        let found = scan_added("f.md", Some(b"\xff\n"), &new);
        assert_eq!(found.iter().map(|f| f.line).collect::<Vec<_>>(), vec![2]);
    }
}
