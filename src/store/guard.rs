//! The secret guard at the commit boundary: every text a commit adds is scanned.
//!
//! The one publish path (`publish.rs`) calls [`check`] first, before any
//! object is written, for every commit engram makes — tool writes, hand edits,
//! adoption, sync merges and fast-forwards — so no write path can put a
//! credential into history.

use std::borrow::Cow;
use std::collections::HashSet;

use git2::{Delta, Oid};

use super::publish::{Kind, Proposal};
use super::{CommitMessage, SecretSource, Snapshot, StoreError};
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

/// Findings past this many are not looked for (the message shows ten).
const MAX_FINDINGS: usize = 50;

/// Trailers engram computes itself (hashes, commit ids): never user text, never masked.
const COMPUTED_TRAILERS: [&str; 2] = ["Engram-Dedup", "Engram-Reverts"];

/// The secret guard of the one publish path ([`PackRepo::publish`](super::PackRepo)):
/// refuses a commit when the lines it adds, the names of the files it writes,
/// or — for a sync — any commit it brings in from the remote hold what looks
/// like a credential, and returns its message with such text masked in the
/// subject, body and trailers (a client named like a token).
///
/// Only lines a change adds relative to `base` are scanned: text already in
/// the pack was scanned when it came in, and a revert that restores older
/// text is not refused for text the pack already held.
pub(super) fn check<'a>(
    repo: &super::PackRepo,
    base: &Snapshot<'_>,
    proposal: &Proposal<'a>,
) -> Result<Cow<'a, CommitMessage>, StoreError> {
    let changes = proposal.changes;
    if let Kind::Merge { theirs } | Kind::FastForward { theirs } = proposal.kind {
        let findings = incoming_findings(repo, proposal.at.id, theirs)?;
        if !findings.is_empty() {
            return Err(StoreError::Secret { findings, origin: SecretSource::Remote });
        }
    }
    let mut findings = Vec::new();
    // A fast-forward's lines and paths are those of the incoming commits, scanned above.
    if !matches!(proposal.kind, Kind::FastForward { .. }) {
        for (path, content) in &changes.files {
            let Some(bytes) = content else { continue };
            findings.extend(path_findings(path));
            let old = base.read(path).ok().flatten();
            findings.extend(scan_added(path, old.as_deref(), bytes));
            if findings.len() >= MAX_FINDINGS {
                break;
            }
        }
    }
    if !findings.is_empty() {
        let origin = match proposal.kind {
            Kind::WorkingTree { adoption: true } => SecretSource::Adoption,
            Kind::WorkingTree { adoption: false } => SecretSource::HandEdit,
            _ => SecretSource::Write,
        };
        return Err(StoreError::Secret { findings, origin });
    }
    Ok(masked_message(proposal.message))
}

/// A finding for each credential in a file's name (line 0), its path shown masked.
fn path_findings(path: &str) -> Vec<Finding> {
    let mut found = secrets::scan(path);
    if !found.is_empty() {
        let shown = masked_words(path, '/');
        for f in &mut found {
            f.path.clone_from(&shown);
            f.line = 0;
        }
    }
    found
}

/// `text` with every `sep`-separated part that holds a credential masked
/// (the whole text when the credential spans parts).
fn masked_words(text: &str, sep: char) -> String {
    let masked: Vec<String> = text
        .split(sep)
        .map(|w| if secrets::scan(w).is_empty() { w.to_owned() } else { secrets::mask(w) })
        .collect();
    let out = masked.join(&sep.to_string());
    if secrets::scan(&out).is_empty() { out } else { secrets::mask(text) }
}

/// Masks what looks like a credential in one line of a message.
fn masked_line(line: &str) -> String {
    if secrets::scan(line).is_empty() { line.to_owned() } else { masked_words(line, ' ') }
}

/// The message with credentials masked in its subject, body and user-given trailers.
fn masked_message(message: &CommitMessage) -> Cow<'_, CommitMessage> {
    let flagged = |t: &str| !secrets::scan(t).is_empty();
    let clean = !flagged(&message.subject)
        && message.body.as_deref().is_none_or(|b| !flagged(b))
        && message.trailers.iter().all(|(k, v)| COMPUTED_TRAILERS.contains(&k.as_str()) || !flagged(v));
    if clean {
        return Cow::Borrowed(message);
    }
    let mut out = message.clone();
    out.subject = masked_line(&message.subject);
    out.body = message.body.as_ref().map(|b| b.lines().map(masked_line).collect::<Vec<_>>().join("\n"));
    for (key, value) in &mut out.trailers {
        if !COMPUTED_TRAILERS.contains(&key.as_str()) {
            *value = masked_line(value);
        }
    }
    Cow::Owned(out)
}

/// What the commits reachable from `theirs` but not from `ours` add: the
/// lines and file names of each commit's change against its first parent,
/// and its message. Found paths read `<short id>:<path>`.
fn incoming_findings(
    repo: &super::PackRepo,
    ours: Option<Oid>,
    theirs: Oid,
) -> Result<Vec<Finding>, StoreError> {
    let dir = &repo.dir;
    let git = &repo.repo;
    let err = |e| super::git_err("scanning the fetched commits", dir, e);
    let mut walk = git.revwalk().map_err(err)?;
    walk.push(theirs).map_err(err)?;
    if let Some(ours) = ours {
        walk.hide(ours).map_err(err)?;
    }
    let odb = git.odb().map_err(err)?;
    let mut out = Vec::new();
    for id in walk {
        let commit = git.find_commit(id.map_err(err)?).map_err(err)?;
        let short: String = commit.id().to_string().chars().take(7).collect();
        for mut f in secrets::scan(&String::from_utf8_lossy(commit.message_bytes())) {
            f.path = format!("{short} (commit message)");
            out.push(f);
        }
        let tree = commit.tree().map_err(err)?;
        let parent = match commit.parent(0) {
            Ok(p) => Some(p.tree().map_err(err)?),
            Err(_) => None,
        };
        let diff = git.diff_tree_to_tree(parent.as_ref(), Some(&tree), None).map_err(err)?;
        for delta in diff.deltas() {
            if matches!(delta.status(), Delta::Deleted) {
                continue;
            }
            let new = delta.new_file();
            let Some(path) = new.path().and_then(|p| p.to_str()) else { continue };
            // Its size from the object header first: a 2 GB blob is refused, never inflated.
            if let Ok((size, _)) = odb.read_header(new.id())
                && size > crate::pack_root::MAX_PACK_FILE_BYTES
            {
                return Err(StoreError::BadPath {
                    path: path.to_owned(),
                    reason: format!(
                        "the remote's commit {short} adds it with {size} bytes; a pack file may be at most {} bytes, so nothing was merged",
                        crate::pack_root::MAX_PACK_FILE_BYTES
                    ),
                });
            }
            let Ok(blob) = git.find_blob(new.id()) else { continue };
            let old = delta.old_file();
            let old = (!old.id().is_zero()).then(|| git.find_blob(old.id()).ok()).flatten();
            let mut found = path_findings(path);
            found.extend(scan_added(path, old.as_ref().map(|b| b.content()), blob.content()));
            for mut f in found {
                f.path = format!("{short}:{}", f.path);
                out.push(f);
            }
        }
        if out.len() >= MAX_FINDINGS {
            break;
        }
    }
    Ok(out)
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
            let old = head.as_ref().and_then(|t| t.get_path(std::path::Path::new(&path)).ok());
            if old.as_ref().is_some_and(|e| e.id() == entry.id) {
                continue;
            }
            let Ok(blob) = self.repo.find_blob(entry.id) else { continue };
            let old = old.and_then(|e| self.repo.find_blob(e.id()).ok());
            out.extend(scan_added(&path, old.as_ref().map(|b| b.content()), blob.content()));
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
