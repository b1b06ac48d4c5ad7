//! A person's `git reset --hard` (or `git stash`, which runs one) that raced a
//! write.
//!
//! `git reset --hard` reads HEAD first, then rewrites the index and the working
//! tree under git's index lock, then moves the branch to the commit it read —
//! from whatever the branch points at by then. When an engram write landed in
//! between, the branch goes back to the commit before it and the acknowledged
//! write is gone from the branch (issue 15, item 2). The reset leaves its trace
//! in the branch's reflog: `reset: moving to HEAD` from the newer commit to an
//! ancestor of it. "Moving to HEAD" was the person's intent — keep HEAD, drop
//! uncommitted changes — so the next commit engram publishes first puts the
//! branch back on the commit the reset left, and the files the reset rewrote
//! back to that commit's (`PackRepo::publish`, before the pending record). A
//! reset to anything else (`git reset --hard HEAD~1`, a commit id) is
//! deliberate and left alone.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use git2::{ObjectType, Oid};

use crate::pack_path::PackPath;
use crate::pack_root::{Found, PackRoot};

use super::index_lock::IndexLock;
use super::{BranchHead, PackRepo, Result, git_err, io_err};

/// The reflog message of `git reset --hard` without a commit (and of `git stash`).
const RESET_TO_HEAD: &str = "reset: moving to HEAD";

/// How much of the end of the reflog is read.
const TAIL: u64 = 4 * 1024;

/// The commit a `git reset --hard` that read HEAD before a write moved it has
/// moved the branch back from, when the branch's newest reflog entries show
/// one (resets that found the branch where they read it may follow). Cheap: it
/// reads the end of one file.
pub(super) fn rolled_back_from(repo: &PackRepo, at: &BranchHead) -> Option<Oid> {
    let head = at.id?;
    let tail = read_tail(&repo.git_dir().join("logs").join(&at.branch))?;
    for line in tail.lines().rev() {
        let (old, new, message) = parse(line)?;
        if message != RESET_TO_HEAD {
            return None;
        }
        if old == new {
            continue;
        }
        // Backwards only: the commit the reset left must lead to the one it went to.
        let back = new == head && repo.repo.graph_descendant_of(old, new).unwrap_or(false);
        return back.then_some(old);
    }
    None
}

/// Puts the branch back on `from` (see [`rolled_back_from`]) and the files the
/// reset rewrote back to `from`'s versions, index included; a file changed since
/// the reset is left as it is (the hand-edit step sees it). False when the
/// branch moved again meanwhile (nothing done).
pub(super) fn undo(repo: &PackRepo, lock: &mut IndexLock, at: &BranchHead, from: Oid) -> Result<bool> {
    let dir = &repo.dir;
    let Some(to) = at.id else { return Ok(false) };
    let git = |e| git_err("undoing a racy `git reset --hard`", dir, e);
    let from_commit = repo.repo.find_commit(from).map_err(git)?;
    let from_tree = from_commit.tree().map_err(git)?;
    let to_tree = repo.repo.find_commit(to).and_then(|c| c.tree()).map_err(git)?;
    let diff = repo.repo.diff_tree_to_tree(Some(&to_tree), Some(&from_tree), None).map_err(git)?;
    let root = PackRoot::open(dir).map_err(|e| io_err("open", dir, e))?;
    let mut paths: Vec<String> = Vec::new();
    for delta in diff.deltas() {
        for file in [delta.old_file(), delta.new_file()] {
            let Some(path) = file.path().and_then(Path::to_str) else { continue };
            let reset_wrote = to_tree.get_path(Path::new(path)).ok().map(|e| e.id());
            if !paths.iter().any(|p| p == path) && working_tree_id(&root, path) == reset_wrote {
                paths.push(path.to_owned());
            }
        }
    }
    if !repo.move_branch(
        Some(to),
        from,
        "undo a racy `git reset --hard` (it read HEAD before a write moved it)",
    )? {
        return Ok(false);
    }
    eprintln!(
        "engram: {}: a `git reset --hard` (or `git stash`) that read HEAD before a write moved it had moved the branch back from {from} to {to}; put it back on {from}",
        dir.display()
    );
    let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
    super::recover::restore_from_head(repo, lock, &from_commit, &paths)?;
    Ok(true)
}

/// The blob id of the working tree's file at `path` (`None`: absent, or not a
/// file), read without following links.
pub(super) fn working_tree_id(root: &PackRoot, path: &str) -> Option<Oid> {
    let rel = PackPath::parse(path).ok()?;
    match root.read(&rel, |bytes| Oid::hash_object(ObjectType::Blob, bytes).ok()) {
        Ok(Found::Here(id)) => id,
        _ => None,
    }
}

/// The end of a file, from its first complete line.
fn read_tail(path: &Path) -> Option<String> {
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let start = len.saturating_sub(TAIL);
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    if start == 0 {
        return Some(text);
    }
    text.split_once('\n').map(|(_, rest)| rest.to_owned())
}

/// `<old> <new> <who> <when>\t<message>` → (old, new, message).
fn parse(line: &str) -> Option<(Oid, Oid, &str)> {
    let (head, message) = line.split_once('\t')?;
    let mut words = head.split(' ');
    let old = Oid::from_str(words.next()?).ok()?;
    let new = Oid::from_str(words.next()?).ok()?;
    Some((old, new, message.trim_end()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reflog_lines_parse_as_git_writes_them() {
        let a = "1".repeat(40);
        let b = "2".repeat(40);
        let line = format!("{a} {b} Person <p@example.com> 1795659962 +0000\treset: moving to HEAD");
        let (old, new, message) = parse(&line).expect("parses");
        assert_eq!((old.to_string(), new.to_string(), message), (a, b, RESET_TO_HEAD));
        assert!(parse("garbage").is_none());
    }
}
