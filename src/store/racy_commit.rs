//! A person's `git commit` that wrote back a git index it read before an engram write.
//!
//! A plain `git commit` reads HEAD, then the index (without a lock), and only then takes
//! `index.lock`, writes back the index it read and moves the branch with a compare-and-swap
//! against the HEAD it read. When an engram write lands in between, its branch move fails
//! but the index it wrote back lacks the write: the index lags HEAD. Engram repairs:
//!
//! 1. the next write, under git's index lock and before its own index goes in, compares an
//!    index it does not know to agree with HEAD (see [`super::index_lock::stamp`]) with HEAD:
//!    an entry holding one of the path's earlier committed versions while the working tree
//!    holds HEAD's is staged again ([`PackRepo::repair_lagging_index`]; files a `git
//!    checkout` restored from it are put back by `clean::restored_from_a_stale_index`);
//! 2. when the person's next `git commit` came first, it committed that index on top of
//!    engram's commit, setting every path engram's last writes changed back to the state
//!    before them. [`PackRepo::restore_dropped_writes`] restores those paths to engram's
//!    versions with one `restore:` commit.
//!
//! A deliberate undo is `git revert` (its message says so) or engram's `revert`/`undo`; a
//! plain commit that undoes engram's last writes exactly, path for path, is taken for this
//! race. One that changes any of those paths otherwise is the person's and stays.

use std::collections::BTreeSet;
use std::path::Path;

use git2::{Commit, Oid, Tree};

use super::clean::made_by_a_tool;
use super::index_lock::{self, IndexLock, Retries};
use super::publish::{CommitOutcome, Kind, PhaseTimer, Proposal, listed};
use super::racy_reset::working_tree_id;
use super::{BranchHead, Changes, CommitMessage, PackRepo, Result, git_err, io_err, short_id};
use crate::pack_root::PackRoot;

/// How many commits by others above engram's last write are looked through.
const OTHERS_DEPTH: usize = 16;

/// How many of engram's writes, counted down from its last one, one commit may have dropped.
const WRITES_DEPTH: usize = 16;

/// How many commits back a lagging index entry's version is looked for.
const LAG_DEPTH: usize = 64;

/// The mark `git revert` leaves in its message.
const REVERT_MARK: &str = "This reverts commit ";

/// What a commit by others dropped from engram's last writes: the branch it is on, and
/// the paths to put back (engram's versions, or removals), with the message saying so.
pub(super) struct Dropped {
    at: BranchHead,
    changes: Changes,
    message: CommitMessage,
    /// What to tell on stderr once restored.
    note: String,
}

/// A path's entry in a tree: (blob id, mode), `None` when absent.
pub(super) fn entry(tree: &Tree<'_>, path: &str) -> Option<(Oid, i32)> {
    tree.get_path(Path::new(path)).ok().map(|e| (e.id(), e.filemode()))
}

/// The paths that differ between two trees (blobs, any depth).
pub(super) fn changed_paths(repo: &PackRepo, old: &Tree<'_>, new: &Tree<'_>) -> Result<BTreeSet<String>> {
    let diff = repo
        .repo
        .diff_tree_to_tree(Some(old), Some(new), None)
        .map_err(|e| git_err("comparing commits", &repo.dir, e))?;
    let files = diff.deltas().flat_map(|delta| [delta.old_file(), delta.new_file()]);
    Ok(files.filter_map(|file| Some(file.path()?.to_str()?.to_owned())).collect())
}

/// The changes that put `paths` back to their versions in `tree` (a removal where it lacks
/// one); a path that is not a file there (a submodule) is not engram's to put back.
pub(super) fn versions_in(
    repo: &PackRepo,
    tree: &Tree<'_>,
    paths: impl IntoIterator<Item = String>,
) -> Changes {
    let mut changes = Changes::for_memory();
    for path in paths {
        match entry(tree, &path) {
            Some((id, mode)) => {
                if let Ok(blob) = repo.repo.find_blob(id) {
                    changes.put_with_mode(path, blob.content().to_vec(), mode);
                }
            }
            None => changes.remove(path),
        }
    }
    changes
}

/// Engram's writes a commit by others dropped (see the module docs), if HEAD is such a
/// commit or has such a commit below it among commits by others. Cheap when HEAD is an
/// engram tool's commit: one commit read.
pub(super) fn dropped_writes(repo: &PackRepo) -> Result<Option<Dropped>> {
    let git = |e| git_err("looking for writes a racing `git commit` dropped", &repo.dir, e);
    let at = repo.branch_head()?;
    let Some(head_id) = at.id else { return Ok(None) };
    let head = repo.repo.find_commit(head_id).map_err(git)?;
    // Down through the commits of others to engram's last write.
    let mut others: Vec<Commit<'_>> = Vec::new();
    let mut cur = head.clone();
    let last_write = loop {
        if made_by_a_tool(&cur) {
            break cur;
        }
        let message = String::from_utf8_lossy(cur.message_raw_bytes());
        if cur.parent_count() != 1 || message.contains(REVERT_MARK) || others.len() >= OTHERS_DEPTH {
            return Ok(None);
        }
        let parent = cur.parent(0).map_err(git)?;
        others.push(cur);
        cur = parent;
    };
    if others.is_empty() {
        return Ok(None);
    }
    let head_tree = head.tree().map_err(git)?;
    let written_tree = last_write.tree().map_err(git)?;
    // Down through engram's writes: the deepest state `before` such that HEAD holds, for
    // every path the writes since `before` changed, exactly `before`'s version.
    let mut changed: BTreeSet<String> = BTreeSet::new();
    let mut found: Option<(BTreeSet<String>, Oid)> = None;
    let mut write = last_write.clone();
    for _ in 0..WRITES_DEPTH {
        if write.parent_count() != 1 {
            break;
        }
        let before = write.parent(0).map_err(git)?;
        let before_tree = before.tree().map_err(git)?;
        let write_tree = write.tree().map_err(git)?;
        changed.extend(changed_paths(repo, &before_tree, &write_tree)?);
        if changed.iter().all(|p| entry(&head_tree, p) == entry(&before_tree, p)) {
            found = Some((changed.clone(), before.id()));
        }
        if !made_by_a_tool(&before) {
            break;
        }
        write = before;
    }
    let Some((paths, before)) = found else { return Ok(None) };
    let lost = paths.into_iter().filter(|p| entry(&head_tree, p) != entry(&written_tree, p));
    let changes = versions_in(repo, &written_tree, lost);
    if changes.is_empty() {
        return Ok(None);
    }
    let listed = listed(changes.paths());
    let dropped_by = short_id(&others.last().map(|c| c.id().to_string()).unwrap_or_default());
    let message = CommitMessage {
        body: Some(format!(
            "Commit {dropped_by} put back what these paths held at {} — a `git commit` that read the git \
             index before engram's writes up to {} and wrote it back after them — so they are restored \
             to engram's versions. (An undo is `git revert` or engram's revert/undo.)",
            short_id(&before.to_string()),
            short_id(&last_write.id().to_string()),
        )),
        ..CommitMessage::new(format!("restore: {listed}"))
    }
    .made_by("restore", None);
    let note = format!(
        "engram: {}: commit {dropped_by} had dropped engram's writes to {listed} (a `git commit` that read the git index before them); restored",
        repo.dir.display(),
    );
    Ok(Some(Dropped { at, changes, message, note }))
}

/// True when `staged` (an id, or `None`: absent) is what `path` held in one of the
/// [`LAG_DEPTH`] commits before `head`.
fn an_earlier_version(head: &Commit<'_>, path: &str, staged: Option<Oid>) -> bool {
    let mut cur = head.clone();
    for _ in 0..LAG_DEPTH {
        let Ok(parent) = cur.parent(0) else { return false };
        let Ok(tree) = parent.tree() else { return false };
        if entry(&tree, path).map(|(id, _)| id) == staged {
            return true;
        }
        cur = parent;
    }
    false
}

impl PackRepo {
    /// Records that the git index agrees with HEAD now (engram just put it in).
    pub(super) fn index_agrees_with_head(&self) {
        *self.index_checked.lock().unwrap_or_else(|p| p.into_inner()) =
            index_lock::stamp(&self.git_dir().join("index"));
    }

    /// Stages HEAD's version again for every entry of the git index that lags `head` —
    /// holds one of the path's earlier committed versions (or lacks a path HEAD has, or has
    /// one it dropped) while the working tree holds HEAD's: what a `git commit` that read the
    /// index before a write writes back after it (see the module docs). Anything else that
    /// differs is the person's (a `git add`) and stays. Nothing is read when the index is
    /// still the one last found or left in agreement with HEAD. Call with git's index lock
    /// `lock` held, before the write's own index goes in.
    pub(super) fn repair_lagging_index(&self, lock: &mut IndexLock, head: Option<Oid>) -> Result<()> {
        let Some(head) = head else { return Ok(()) };
        let stamp = index_lock::stamp(&self.git_dir().join("index"));
        if stamp.is_some() && *self.index_checked.lock().unwrap_or_else(|p| p.into_inner()) == stamp {
            return Ok(());
        }
        let dir = &self.dir;
        let git = |e| git_err("comparing the git index with HEAD", dir, e);
        let commit = self.repo.find_commit(head).map_err(git)?;
        let tree = commit.tree().map_err(git)?;
        let mut index = self.read_index()?;
        let diff = self.repo.diff_tree_to_index(Some(&tree), Some(&index), None).map_err(git)?;
        let root = PackRoot::open(dir).map_err(|e| io_err("open", dir, e))?;
        let id = |f: git2::DiffFile<'_>| (!f.id().is_zero()).then(|| f.id());
        let mut lagging: Vec<(String, bool)> = Vec::new();
        for delta in diff.deltas() {
            let Some(path) = delta.new_file().path().or(delta.old_file().path()).and_then(Path::to_str)
            else {
                continue;
            };
            let (in_head, staged) = (id(delta.old_file()), id(delta.new_file()));
            if working_tree_id(&root, path) == in_head && an_earlier_version(&commit, path, staged) {
                lagging.push((path.to_owned(), in_head.is_some()));
            }
        }
        if !lagging.is_empty() {
            for (path, in_head) in &lagging {
                if *in_head {
                    index.add_path(Path::new(path)).map_err(git)?;
                } else {
                    index.remove_path(Path::new(path)).map_err(git)?;
                }
            }
            lock.install_index(&index, dir)?;
            eprintln!(
                "engram: {}: the git index lagged HEAD in {} (a `git commit` that read it before a write wrote it back); staged HEAD's versions again",
                dir.display(),
                listed(lagging.iter().map(|(p, _)| p.as_str()))
            );
        }
        self.index_agrees_with_head();
        Ok(())
    }

    /// Restores what a person's `git commit` of a lagging git index dropped from engram's
    /// last writes (see the module docs), with one commit through [`PackRepo::publish`].
    /// Call with the pack's write lock held, after hand edits are committed.
    pub(super) fn restore_dropped_writes(&self) -> Result<()> {
        let mut retries = Retries::new();
        loop {
            let Some(Dropped { at, changes, message, note }) = dropped_writes(self)? else { return Ok(()) };
            let base = self.snapshot_of(at.id)?.tree;
            let proposal = Proposal {
                at: &at,
                base,
                changes: &changes,
                message: &message,
                kind: Kind::Tool { defer_index: false },
            };
            let mut lock = IndexLock::acquire(self)?;
            match self.publish(&proposal, &mut lock, &mut PhaseTimer::new(false))? {
                CommitOutcome::Committed(_) => {
                    eprintln!("{note}");
                    return Ok(());
                }
                CommitOutcome::Unchanged => return Ok(()),
                CommitOutcome::Retry => {
                    drop(lock);
                    retries.again(&self.dir)?;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Edit, StoreError, StoreOptions};
    use super::*;

    /// A capture as the memory tools write one: the category file and the index.
    fn capture(repo: &PackRepo, text: &str) {
        repo.write(|snap| {
            let mut changes = Changes::for_memory();
            for path in ["memory/c.md", "memory/_index.md"] {
                let old = snap.read_text(path)?.unwrap_or_default();
                changes.put(path, format!("{old}{text}\n"));
            }
            let message = CommitMessage::new(format!("capture: {text}")).made_by("capture", None);
            Ok::<_, StoreError>(Edit::Commit { changes, message, value: () })
        })
        .expect("capture");
    }

    /// A person's commit on HEAD whose tree is `base`'s with `extra` added (as a `git
    /// commit` of an index read at `base` makes it), checked out.
    fn person_commit(repo: &PackRepo, base: Oid, extra: (&str, &str), message: &str) -> Oid {
        let git = &repo.repo;
        let base_tree = git.find_commit(base).and_then(|c| c.tree()).expect("base tree");
        let blob = git.blob(extra.1.as_bytes()).expect("blob");
        let mut builder = git.treebuilder(Some(&base_tree)).expect("builder");
        builder.insert(extra.0, blob, 0o100644).expect("insert");
        let tree = git.find_tree(builder.write().expect("tree")).expect("tree");
        let sig = git2::Signature::now("Person", "person@example.com").expect("sig");
        let head = git.head().and_then(|h| h.peel_to_commit()).expect("HEAD");
        let id = git.commit(Some("HEAD"), &sig, &sig, message, &tree, &[&head]).expect("commit");
        git.checkout_head(Some(git2::build::CheckoutBuilder::new().force())).expect("checkout");
        id
    }

    fn head_text(repo: &PackRepo, path: &str) -> String {
        let id = repo.head_oid().expect("HEAD").expect("a commit");
        repo.snapshot_of(Some(id)).and_then(|s| s.read_text(path)).expect("read").unwrap_or_default()
    }

    fn head_subject(repo: &PackRepo) -> String {
        let head = repo.repo.head().and_then(|h| h.peel_to_commit()).expect("HEAD");
        String::from_utf8_lossy(head.message_bytes()).lines().next().unwrap_or_default().to_owned()
    }

    fn setup() -> (tempfile::TempDir, PackRepo, Oid) {
        let tmp = tempfile::tempdir().expect("tmp");
        std::fs::write(tmp.path().join("role.md"), "role\n").expect("write");
        let repo = PackRepo::open_or_adopt(tmp.path(), StoreOptions::default()).expect("adopt");
        capture(&repo, "one");
        let before = repo.head_oid().expect("HEAD").expect("a commit");
        capture(&repo, "two");
        capture(&repo, "three");
        (tmp, repo, before)
    }

    #[test]
    fn a_commit_that_undoes_engrams_last_writes_exactly_is_followed_by_their_restore() {
        let (_tmp, repo, before) = setup();
        person_commit(&repo, before, ("notes.md", "mine\n"), "person");
        assert_eq!(head_text(&repo, "memory/c.md"), "one\n");
        repo.restore_dropped_writes().expect("restore");
        assert!(
            head_subject(&repo).starts_with("restore: memory/_index.md, memory/c.md"),
            "{}",
            head_subject(&repo)
        );
        for path in ["memory/c.md", "memory/_index.md"] {
            assert_eq!(head_text(&repo, path), "one\ntwo\nthree\n", "{path}");
            let file = std::fs::read_to_string(repo.dir().join(path)).expect("working tree");
            assert_eq!(file, "one\ntwo\nthree\n", "{path} in the working tree");
        }
        assert_eq!(head_text(&repo, "notes.md"), "mine\n", "the person's change stays");
        assert!(repo.dirty_paths().expect("status").is_empty(), "index and working tree at HEAD");
        // Nothing more to restore: HEAD is engram's.
        let head = repo.head_oid().expect("HEAD");
        repo.restore_dropped_writes().expect("again");
        assert_eq!(repo.head_oid().expect("HEAD"), head);
    }

    #[test]
    fn reverts_partial_undos_and_ordinary_commits_stay() {
        // `git revert`: its message says so.
        let (_tmp, repo, before) = setup();
        person_commit(&repo, before, ("notes.md", "x\n"), "Revert two\n\nThis reverts commit 1234567.\n");
        let head = repo.head_oid().expect("HEAD");
        repo.restore_dropped_writes().expect("look");
        assert_eq!(repo.head_oid().expect("HEAD"), head, "a git revert stays");

        // One file put back by hand, not the whole writes: the person's.
        let (_tmp, repo, before) = setup();
        let index_now = head_text(&repo, "memory/_index.md");
        let partial = person_commit(&repo, before, ("notes.md", "x\n"), "person");
        let git = &repo.repo;
        let tree = git.find_commit(partial).and_then(|c| c.tree()).expect("tree");
        let memory = tree.get_path(Path::new("memory")).expect("memory").id();
        let mut sub = git.treebuilder(Some(&git.find_tree(memory).expect("tree"))).expect("builder");
        sub.insert("_index.md", git.blob(index_now.as_bytes()).expect("blob"), 0o100644).expect("insert");
        let mut root = git.treebuilder(Some(&tree)).expect("builder");
        root.insert("memory", sub.write().expect("tree"), 0o040000).expect("insert");
        let root = git.find_tree(root.write().expect("tree")).expect("tree");
        let sig = git2::Signature::now("Person", "person@example.com").expect("sig");
        let parent = git.find_commit(partial).expect("commit");
        git.commit(Some("HEAD"), &sig, &sig, "only c.md back", &root, &[&parent]).expect("commit");
        let head = repo.head_oid().expect("HEAD");
        repo.restore_dropped_writes().expect("look");
        assert_eq!(repo.head_oid().expect("HEAD"), head, "a partial undo stays");

        // A commit of the person's own files on top of engram's: nothing dropped.
        let (_tmp, repo, _) = setup();
        let last = repo.head_oid().expect("HEAD").expect("a commit");
        person_commit(&repo, last, ("notes.md", "x\n"), "person");
        let head = repo.head_oid().expect("HEAD");
        repo.restore_dropped_writes().expect("look");
        assert_eq!(repo.head_oid().expect("HEAD"), head, "nothing to restore");
    }
}
