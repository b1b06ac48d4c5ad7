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
//! back to that commit's (`PackRepo::publish`, before the pending record). When
//! the person committed on top of the reset before engram's next write, their
//! commits stay and one `restore:` merge brings the dropped commit back in. A
//! reset to anything else (`git reset --hard HEAD~1`, a commit id) is
//! deliberate and left alone. (The trace survives: engram never trims a reflog;
//! git expires them.)

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use git2::{ObjectType, Oid};

use crate::pack_path::PackPath;
use crate::pack_root::{Found, PackRoot};

use super::index_lock::IndexLock;
use super::publish::listed;
use super::publish::{CommitOutcome, Kind, PhaseTimer, Proposal};
use super::racy_commit::{changed_paths, entry, versions_in};
use super::{BranchHead, CommitMessage, PackRepo, Result, git_err, io_err, short_id};

/// The reflog message of `git reset --hard` without a commit (and of `git stash`).
const RESET_TO_HEAD: &str = "reset: moving to HEAD";

/// How much of the end of the reflog is read.
const TAIL: u64 = 4 * 1024;

/// How many commits by others on top of a racy reset are looked through.
const COMMITS_ON_TOP: usize = 16;

/// A racy `git reset --hard` found in the branch's reflog: the branch went back
/// from `from` to its ancestor `to` (and may have had commits of others made on top).
#[derive(Debug, Clone, Copy)]
pub(super) struct RolledBack {
    /// The commit the reset moved the branch off.
    pub from: Oid,
    /// The commit it moved the branch to.
    pub to: Oid,
}

/// The racy `git reset --hard` that moved the branch back from a write's commit, when
/// the branch's newest reflog entries show one: a `reset: moving to HEAD` line from a
/// newer commit to an ancestor of it (resets that found the branch where they read it
/// may follow), possibly followed by plain `git commit`s made on top of it since (each
/// line `commit: …` from its commit's parent), the newest ending at HEAD. Cheap: it reads
/// the end of one file.
pub(super) fn rolled_back_from(repo: &PackRepo, at: &BranchHead) -> Option<RolledBack> {
    let head = at.id?;
    let tail = read_tail(&repo.git_dir().join("logs").join(&at.branch))?;
    // The commit the line being read must have moved the branch to.
    let mut expect = head;
    let mut on_top = 0;
    for line in tail.lines().rev() {
        let (old, new, message) = parse(line)?;
        if message == RESET_TO_HEAD {
            if old == new {
                continue;
            }
            // Backwards only: the commit the reset left must lead to the one it went to.
            let back = new == expect
                && repo.repo.graph_descendant_of(old, new).unwrap_or(false)
                && !(on_top > 0 && repo.repo.graph_descendant_of(head, old).unwrap_or(true));
            return back.then_some(RolledBack { from: old, to: new });
        }
        // A person's plain commit on top: its parent is where the branch was.
        let committed_on_top = message.starts_with("commit: ")
            && new == expect
            && repo
                .repo
                .find_commit(new)
                .is_ok_and(|c| c.parent_count() == 1 && c.parent_id(0).ok() == Some(old));
        if !committed_on_top || on_top >= COMMITS_ON_TOP {
            return None;
        }
        on_top += 1;
        expect = old;
    }
    None
}

/// Undoes a racy reset (see [`rolled_back_from`]): when the branch is still where the
/// reset left it, puts it back on `from` and the files the reset rewrote back to
/// `from`'s versions, index included (a file changed since the reset is left as it is:
/// the hand-edit step sees it). When commits of others were made on top since, they stay:
/// one merge commit brings `from` back in (its second parent), with `from`'s version of
/// every path the dropped writes changed and the commits on top left as the reset left
/// it (a path they changed too stays theirs). Nothing is done when the branch moved again.
pub(super) fn undo(repo: &PackRepo, lock: &mut IndexLock, at: &BranchHead, rolled: RolledBack) -> Result<()> {
    let RolledBack { from, to } = rolled;
    let dir = &repo.dir;
    let git = |e| git_err("undoing a racy `git reset --hard`", dir, e);
    let tree_of = |id: Oid| repo.repo.find_commit(id).and_then(|c| c.tree()).map_err(git);
    let (to_tree, from_tree) = (tree_of(to)?, tree_of(from)?);
    let dropped = changed_paths(repo, &to_tree, &from_tree)?;
    if at.id == Some(to) {
        // The files the reset rewrote (those still as it left them) go back too.
        let root = PackRoot::open(dir).map_err(|e| io_err("open", dir, e))?;
        let paths: Vec<&str> = dropped
            .iter()
            .map(String::as_str)
            .filter(|p| working_tree_id(&root, p) == entry(&to_tree, p).map(|(id, _)| id))
            .collect();
        let log = "engram: undo a racy `git reset --hard` (it read HEAD before a write moved it)";
        if repo.move_branch(&at.branch, Some(to), from, log)? {
            eprintln!(
                "engram: {}: a `git reset --hard` (or `git stash`) that read HEAD before a write moved it had moved the branch back from {from} to {to}; put it back on {from}",
                dir.display()
            );
            let from_commit = repo.repo.find_commit(from).map_err(git)?;
            super::recover::restore_from_head(repo, lock, &from_commit, &paths)?;
        }
        return Ok(());
    }
    // Commits on top: a merge through `PackRepo::publish` (which leaves this reset alone for it).
    let Some(head) = at.id else { return Ok(()) };
    let head_tree = tree_of(head)?;
    let kept = dropped.into_iter().filter(|p| entry(&head_tree, p) == entry(&to_tree, p));
    let changes = versions_in(repo, &from_tree, kept);
    let (from_short, to_short) = (short_id(&from.to_string()), short_id(&to.to_string()));
    let message = CommitMessage {
        body: Some(format!(
            "A `git reset --hard` that read HEAD before engram's write {from_short} moved the branch back \
             to {to_short}, and commits were made on top since: they stay, and this merge brings the \
             dropped writes back (an undo is `git revert` or engram's revert/undo)."
        )),
        ..CommitMessage::new(if changes.is_empty() {
            "restore: writes a racy reset dropped".to_owned()
        } else {
            format!("restore: {}", listed(changes.paths()))
        })
    }
    .made_by("restore", None);
    let base = Some(head_tree.id());
    let proposal =
        Proposal { at, base, changes: &changes, message: &message, kind: Kind::Merge { theirs: from } };
    if let CommitOutcome::Committed(_) = repo.publish(&proposal, lock, &mut PhaseTimer::new(false))? {
        eprintln!(
            "engram: {}: a `git reset --hard` that read HEAD before a write moved it had moved the branch back from {from} to {to}, and commits were made on top; merged {from} back in",
            dir.display()
        );
    }
    Ok(())
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
