//! The commit path: a write's edit becomes one commit, the branch moves by
//! compare-and-swap, and the working tree and the git index follow.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use git2::{ErrorCode, Oid, Status, StatusOptions};

use crate::pack_path::PackPath;
use crate::pack_root::{FileStat, Found, PackRoot};

use super::beside_git::rewrite;
use super::index_lock::{self, IndexLock, Retries};
use super::racy_reset;
use super::{
    BranchHead, Changes, CommitMessage, Committed, Edit, MODE_BLOB, PackRepo, Result, Snapshot, StoreError,
    clean, doctor, git_err, guard, io_err, maintenance, recover, scoped_write, short_id, truncate_chars,
    worktree,
};

/// What kind of commit [`PackRepo::publish`] makes.
#[derive(Debug, Clone, Copy)]
pub(super) enum Kind {
    /// A tool's or the CLI's write; with `defer_index` the git index is left to the
    /// next flush (see `scoped_write.rs`).
    Tool { defer_index: bool },
    /// Files changed in the working tree outside engram (`edit:`), or (`adoption`)
    /// the files of a folder adopted as a pack (`adopt:`): already on disk, so
    /// only the git index is updated.
    WorkingTree { adoption: bool },
    /// A merge of HEAD with the fetched commit `theirs` (its second parent).
    Merge { theirs: Oid },
    /// A fast-forward of the branch to the fetched commit `theirs`: no new commit.
    FastForward { theirs: Oid },
    /// A tool's write onto a proposal branch (`serve --propose`, see `proposals.rs`): the
    /// branch `at.branch` is not checked out, so neither the working tree nor the git index
    /// changes (and no pending record is needed). The commit's parent is `at.id`.
    Proposal {
        /// What the proposal ref must still hold: `None` when the write creates it.
        expected: Option<Oid>,
        /// The checked-out branch's commit when this brings it into the proposal (its second
        /// parent; see [`PackRepo::update_proposal`]): `changes` then apply to that commit's
        /// tree, not to the proposal's.
        merge: Option<Oid>,
    },
}

/// One commit (or fast-forward) for [`PackRepo::publish`].
#[derive(Clone, Copy)]
pub(super) struct Proposal<'a> {
    /// The branch to move, and the commit it must still point at.
    pub at: &'a BranchHead,
    /// The tree of `at`'s commit, which `changes` apply to.
    pub base: Option<Oid>,
    /// What changes relative to `base` (for a fast-forward: the diff to the fetched tree).
    pub changes: &'a Changes,
    /// The commit message (for a fast-forward: the reflog's).
    pub message: &'a CommitMessage,
    /// What kind of commit.
    pub kind: Kind,
}

pub(super) enum CommitOutcome {
    Committed(Committed),
    Unchanged,
    Retry,
}

/// A file a write put into the working tree: path, blob id, content, metadata after writing.
pub(super) type WrittenFile = (String, Oid, std::sync::Arc<Vec<u8>>, FileStat);

impl PackRepo {
    /// Runs `edit` against HEAD and commits what it returns, as one commit.
    ///
    /// `edit` may be called more than once (when the branch moves under us), so
    /// it must be a pure function of the snapshot. It returns `Ok(None)` to
    /// commit nothing, or the changes, the message and a value handed back.
    /// Hand edits anywhere in the working tree are committed first.
    pub fn write<T, E>(
        &self,
        edit: impl FnMut(&Snapshot<'_>) -> Result<Edit<T>, E>,
    ) -> Result<(Option<Committed>, T), E>
    where
        E: From<StoreError>,
    {
        self.write_checking(false, edit)
    }

    /// Like [`PackRepo::write`], looking for hand edits only on the paths the
    /// edit changes, with the git index updated lazily (see [`scoped_write`]).
    /// For tools whose writes touch a few files of a pack that holds many.
    pub fn write_scoped<T, E>(
        &self,
        edit: impl FnMut(&Snapshot<'_>) -> Result<Edit<T>, E>,
    ) -> Result<(Option<Committed>, T), E>
    where
        E: From<StoreError>,
    {
        self.write_checking(true, edit)
    }

    /// [`PackRepo::write`] (`scoped` false) and [`PackRepo::write_scoped`]: one loop.
    fn write_checking<T, E>(
        &self,
        scoped: bool,
        mut edit: impl FnMut(&Snapshot<'_>) -> Result<Edit<T>, E>,
    ) -> Result<(Option<Committed>, T), E>
    where
        E: From<StoreError>,
    {
        if let Some(branch) = self.proposal_target() {
            return self.write_proposal(&branch, edit);
        }
        if self.options.read_only {
            return Err(StoreError::ReadOnly { dir: self.dir.clone() }.into());
        }
        let mut trace = PhaseTimer::new(self.options.trace_timing);
        let _lock = self.lock()?;
        trace.mark("lock");
        recover::finish_pending(self)?;
        trace.mark("recover");
        // A scoped write looks at the whole working tree only the first time on this
        // handle, and when a path it changes is not as in HEAD (a hand edit there).
        let mut whole_tree_checked = false;
        let mut verified = None;
        if !scoped || !self.scoped_checked.swap(true, std::sync::atomic::Ordering::Relaxed) {
            scoped_write::flush_index(self)?;
            verified = self.commit_hand_edits_if_any()?;
            whole_tree_checked = true;
        }
        trace.mark("hand-edits");
        let mut retries = Retries::new();
        loop {
            let at = verified.take().map_or_else(|| self.branch_head(), Ok)?;
            let snapshot = self.snapshot_of(at.id)?;
            let (changes, message, value) = match edit(&snapshot)? {
                Edit::Commit { changes, message, value } => (changes, message, value),
                Edit::Nothing(value) => return Ok((None, value)),
            };
            trace.mark("edit");
            if changes.is_empty() {
                return Ok((None, value));
            }
            if scoped && !whole_tree_checked && !self.paths_match_head(&snapshot, changes.paths())? {
                scoped_write::flush_index(self)?;
                self.commit_hand_edits()?;
                whole_tree_checked = true;
                continue;
            }
            let proposal = Proposal {
                at: &at,
                base: snapshot.tree,
                changes: &changes,
                message: &message,
                kind: Kind::Tool { defer_index: scoped },
            };
            match self.publish_locked(&proposal, &mut trace)? {
                CommitOutcome::Committed(committed) => {
                    trace.report(&self.dir);
                    return Ok((Some(committed), value));
                }
                CommitOutcome::Unchanged => return Ok((None, value)),
                CommitOutcome::Retry => retries.again(&self.dir)?,
            }
        }
    }

    /// [`PackRepo::publish`] under git's index lock, taken here and given up before it
    /// returns; after a commit, packing is started if due ([`maintenance::after_write`]).
    pub(super) fn publish_locked(
        &self,
        proposal: &Proposal<'_>,
        trace: &mut PhaseTimer,
    ) -> Result<CommitOutcome> {
        let mut index_lock = IndexLock::acquire(self)?;
        trace.mark("index-lock");
        let outcome = self.publish(proposal, &mut index_lock, trace)?;
        drop(index_lock);
        if matches!(outcome, CommitOutcome::Committed(_)) {
            maintenance::after_write(self);
        }
        Ok(outcome)
    }

    /// **The one publish path.** Every commit engram makes (tool writes,
    /// scoped writes, hand edits, adoption, sync merges) and every sync
    /// fast-forward goes through here, in this order:
    ///
    /// 1. the secret guard ([`guard::check`]) on the lines the commit adds,
    ///    the names of the files it writes, and the commits a sync brings in;
    ///    credentials in the message are masked;
    /// 2. the path checks ([`PackRepo::check_paths`]);
    /// 3. the objects (blobs, trees, the commit), loose, as libgit2 writes them;
    /// 4. the pending record (crash recovery);
    /// 5. the working tree and the git index;
    /// 6. the compare-and-swap of the branch.
    ///
    /// The caller holds git's index lock (`lock`, see [`index_lock`]) from
    /// before step 4 until it drops it after this returns: no git command
    /// writes the index or checks files out from it between the new files
    /// and the branch move, so none can put back an older state (issue 15).
    ///
    /// Returns `Retry` when the branch moved and the caller must look again.
    /// Only purge (which rewrites history on purpose) makes commits elsewhere.
    pub(super) fn publish(
        &self,
        proposal: &Proposal<'_>,
        lock: &mut IndexLock,
        trace: &mut PhaseTimer,
    ) -> Result<CommitOutcome> {
        let dir = &self.dir;
        if self.options.read_only {
            return Err(StoreError::ReadOnly { dir: dir.clone() });
        }
        let Proposal { at, base, changes, kind, .. } = *proposal;
        let head = at.id;
        // A person's `git reset --hard` that read HEAD before the last write moved it has
        // moved the branch back: put it forward again and look anew (see `racy_reset`).
        // (Not for the merge that undoes it, when commits were made on top since.)
        if !matches!(kind, Kind::Proposal { .. })
            && let Some(rolled) = racy_reset::rolled_back_from(self, at)
            && !matches!(kind, Kind::Merge { theirs } if theirs == rolled.from)
        {
            racy_reset::undo(self, lock, at, rolled)?;
            return Ok(CommitOutcome::Retry);
        }
        let base_snapshot = self.snapshot_of_tree(base, head);
        let message = guard::check(self, &base_snapshot, proposal)?;
        let root = PackRoot::open(dir).map_err(|e| io_err("open", dir, e))?;
        check_paths(&root, &base_snapshot, changes, kind)?;
        trace.mark("checks");
        let sig = self.signature(message.time)?;
        let git = |e| git_err("writing objects", dir, e);
        let mut blobs = BTreeMap::new();
        let mut update = git2::build::TreeUpdateBuilder::new();
        for (path, content) in &changes.files {
            match content {
                Some(bytes) => {
                    let id = rewrite(|| self.repo.blob(bytes)).map_err(git)?;
                    blobs.insert(path.as_str(), id);
                    update.upsert(path.as_str(), id, file_mode(changes.mode_of(path)));
                }
                None => {
                    update.remove(path.as_str());
                }
            }
        }
        let commit_id = match kind {
            // The fetched commit's objects are there already (the blobs above just found).
            Kind::FastForward { theirs } => theirs,
            _ => {
                let base_tree = match base {
                    Some(id) => self.repo.find_tree(id).map_err(git)?,
                    None => {
                        let empty = rewrite(|| self.repo.treebuilder(None)?.write()).map_err(git)?;
                        self.repo.find_tree(empty).map_err(git)?
                    }
                };
                let tree_id = match rewrite(|| update.create_updated(&self.repo, &base_tree)) {
                    Ok(id) => id,
                    // A file where the tree has a folder, or the other way round (a hand
                    // edit): libgit2's tree update refuses to change an entry's kind.
                    Err(e) if e.class() == git2::ErrorClass::Tree => {
                        rewrite(|| self.tree_replacing_kinds(&base_tree, changes, &blobs)).map_err(git)?
                    }
                    Err(e) => return Err(git(e)),
                };
                let merge_parent = match kind {
                    Kind::Merge { theirs } | Kind::Proposal { merge: Some(theirs), .. } => Some(theirs),
                    _ => None,
                };
                if head.is_some() && base == Some(tree_id) && merge_parent.is_none() {
                    // Nothing actually changed (same bytes): no empty commits.
                    return Ok(CommitOutcome::Unchanged);
                }
                trace.mark("objects");
                let tree = self.repo.find_tree(tree_id).map_err(git)?;
                let parents = head
                    .into_iter()
                    .chain(merge_parent)
                    .map(|id| self.repo.find_commit(id))
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(git)?;
                let parents: Vec<&git2::Commit<'_>> = parents.iter().collect();
                rewrite(|| self.repo.commit(None, &sig, &sig, &message.render(), &tree, &parents))
                    .map_err(git)?
            }
        };
        let old = head;
        let committed = || {
            let id = commit_id.to_string();
            CommitOutcome::Committed(Committed {
                short: short_id(&id),
                id,
                previous_head: old.map(|o| o.to_string()),
            })
        };
        trace.mark("commit-object");
        if let Kind::Proposal { expected, .. } = kind {
            // Another branch than the checked-out one: the ref moves, nothing else does.
            let log = format!("engram: {}", truncate_chars(&message.subject, 60));
            let moved = self.move_branch(&at.branch, expected, commit_id, &log)?;
            return Ok(if moved { committed() } else { CommitOutcome::Retry });
        }
        // A person's `git commit` that read the index before an earlier write may have written
        // it back after it: entries lagging HEAD are put right first, or the index this write
        // builds on keeps them (see `racy_commit`).
        if matches!(kind, Kind::Tool { defer_index: false } | Kind::Merge { .. } | Kind::FastForward { .. }) {
            self.repair_lagging_index(lock, old)?;
        }
        recover::write_pending(self, old, commit_id, changes)?;
        trace.mark("pending");
        // The files and the new index go in before the branch moves (as `git commit` writes
        // its index first): a person's `git commit` reads the index before it takes git's
        // lock, so one that sees the new HEAD must also see the new index, or its commit
        // would drop this write's changes. One index update, with the files' stat data.
        let written = match kind {
            Kind::Tool { defer_index: true } => None,
            Kind::WorkingTree { .. } => {
                self.stage_paths(changes.paths(), lock)?;
                None
            }
            _ => Some(self.write_working_tree(&root, changes, &blobs, lock)?),
        };
        trace.mark("worktree+index");
        let log = format!("engram: {}", truncate_chars(&message.subject, 60));
        let moved = self.move_branch(&at.branch, old, commit_id, &log)?;
        if !moved {
            // Back to the commit that stays (else the next write takes this one for a hand
            // edit); a failure here leaves the pending record, which the next write finishes.
            // (Hand edits are the person's: they stay, staged.)
            if !matches!(kind, Kind::Tool { defer_index: true } | Kind::WorkingTree { .. }) {
                self.put_base_back(&root, &base_snapshot, changes, lock)?;
            }
            recover::clear_pending(self)?;
            return Ok(CommitOutcome::Retry);
        }
        trace.mark("branch-cas");
        match (kind, written) {
            (Kind::Tool { defer_index: true }, _) => {
                *self.clean.lock().unwrap_or_else(|p| p.into_inner()) = None;
                scoped_write::sync_working_tree_deferred(self, changes, lock)?;
            }
            // The files were already there and the index is staged (above). (The caller holds
            // and resets the record of the clean working tree: `commit_hand_edits_if_any`.)
            (Kind::WorkingTree { .. }, _) | (_, None) => {}
            (_, Some(written)) => {
                self.index_agrees_with_head();
                let mut known = self.clean.lock().unwrap_or_else(|p| p.into_inner());
                match known.as_mut() {
                    Some(state) if old.is_some_and(|o| state.is_at(o)) => {
                        let removed =
                            changes.files.iter().filter(|(_, c)| c.is_none()).map(|(p, _)| p.clone());
                        state.committed(&self.dir, commit_id, written, removed.collect());
                    }
                    _ => *known = None,
                }
            }
        }
        recover::clear_pending(self)?;
        trace.mark("clear-pending");
        Ok(committed())
    }

    /// The tree of `base` with `changes` applied as `git add -A` applies them: a
    /// file written where a folder was replaces the folder, a file in a folder
    /// where a file was replaces the file (through an in-memory index).
    fn tree_replacing_kinds(
        &self,
        base: &git2::Tree<'_>,
        changes: &Changes,
        blobs: &BTreeMap<&str, Oid>,
    ) -> std::result::Result<Oid, git2::Error> {
        let mut index = git2::Index::new()?;
        index.read_tree(base)?;
        for (path, content) in &changes.files {
            let _ = index.remove_dir(Path::new(path), 0);
            let _ = index.remove_path(Path::new(path));
            let (Some(_), Some(id)) = (content, blobs.get(path.as_str())) else { continue };
            let mut prefix = String::new();
            for part in path.split('/') {
                if !prefix.is_empty() {
                    let _ = index.remove_path(Path::new(&prefix));
                }
                prefix = if prefix.is_empty() { part.to_owned() } else { format!("{prefix}/{part}") };
            }
            let mut entry = unstatted_entry(path, *id);
            entry.mode = u32::from(file_mode(changes.mode_of(path)));
            index.add(&entry)?;
        }
        index.write_tree_to(&self.repo)
    }

    /// Puts the working tree and the index back to `base` for the paths of `changes`
    /// (a commit whose branch move failed wrote them first).
    fn put_base_back(
        &self,
        root: &PackRoot,
        base: &Snapshot<'_>,
        changes: &Changes,
        lock: &mut IndexLock,
    ) -> Result<()> {
        let mut back = Changes::for_memory();
        let mut ids = BTreeMap::new();
        for path in changes.paths() {
            match base.entry(path)? {
                Some((mode, id)) if mode == MODE_BLOB || mode == MODE_EXECUTABLE => {
                    back.put(path, base.read(path)?.unwrap_or_default());
                    ids.insert(path, id);
                }
                // A link or a folder in the commit that stays: not engram's to write.
                Some(_) => {}
                None => back.remove(path),
            }
        }
        self.write_working_tree(root, &back, &ids, lock).map(drop)
    }

    /// Compare-and-swap of `branch` from `old` to `new`, in a libgit2 ref
    /// transaction: git's ref lock is taken, the branch is read under it and
    /// compared with `old`, then moved (libgit2 appends the reflog lines, the
    /// branch's and HEAD's, in engram's name). False when another program moved
    /// the branch or holds its lock: the caller retries, with backoff, for a
    /// bounded time. No lock is ever removed here.
    pub(super) fn move_branch(&self, branch: &str, old: Option<Oid>, new: Oid, log: &str) -> Result<bool> {
        let git = |e| git_err("moving the branch", &self.dir, e);
        let mut transaction = self.repo.transaction().map_err(git)?;
        match transaction.lock_ref(branch) {
            Ok(()) => {}
            Err(e) if e.code() == ErrorCode::Locked => return Ok(false),
            Err(e) => return Err(git(e)),
        }
        let current = match self.repo.refname_to_id(branch) {
            Ok(id) => Some(id),
            Err(e) if e.code() == ErrorCode::NotFound => None,
            Err(e) => return Err(git(e)),
        };
        if current != old {
            return Ok(false);
        }
        let sig = self.signature(None)?;
        transaction.set_target(branch, new, Some(&sig), log).map_err(git)?;
        match transaction.commit() {
            Ok(()) => Ok(true),
            Err(e) if matches!(e.code(), ErrorCode::Locked | ErrorCode::Modified | ErrorCode::Exists) => {
                Ok(false)
            }
            Err(e) => Err(git(e)),
        }
    }

    /// Writes changed files into the working tree and the index. `blobs` are
    /// the ids of the committed contents: the index entries are made from
    /// them and the files' `stat`, so no file is read back and hashed. A path
    /// the working tree cannot take (a symbolic link or a file on the way, a
    /// directory there) fails the write with [`StoreError::Blocked`], leaving
    /// its pending record for the next write to finish: skipped, the older file
    /// would be committed back as a hand edit, undoing the commit. The new
    /// index goes in through git's index lock `lock`, which the caller holds.
    pub(super) fn write_working_tree(
        &self,
        root: &PackRoot,
        changes: &Changes,
        blobs: &BTreeMap<&str, Oid>,
        lock: &mut IndexLock,
    ) -> Result<Vec<WrittenFile>> {
        let (mut written, mut entries, mut removed) = (Vec::new(), Vec::new(), Vec::new());
        for (path, content) in &changes.files {
            match (self.put_file(root, path, content.as_deref())?, content, blobs.get(path.as_str())) {
                (Some(stat), Some(bytes), Some(&id)) => {
                    entries.extend(worktree::index_entry(path, id, &stat));
                    written.push((path.clone(), id, std::sync::Arc::new(bytes.clone()), stat));
                }
                (Some(_), ..) => {}
                (None, ..) => removed.push(path),
            }
        }
        lock.update_index(&self.dir, |index| {
            entries.iter().try_for_each(|entry| index.add(entry))?;
            for path in removed {
                let _ = index.remove_path(Path::new(path));
            }
            Ok(())
        })?;
        Ok(written)
    }

    /// Writes `content` at `path` in the working tree (its `stat` after writing), or
    /// removes the file (`None`).
    pub(super) fn put_file(
        &self,
        root: &PackRoot,
        path: &str,
        content: Option<&[u8]>,
    ) -> Result<Option<FileStat>> {
        let rel = PackPath::parse(path)
            .map_err(|e| StoreError::BadPath { path: path.to_owned(), reason: e.to_string() })?;
        match content {
            Some(bytes) => {
                worktree::write_file(root, &rel, bytes, self.options.durable, &self.git_dir()).map(Some)
            }
            None => root.remove_file(&rel).map(|()| None).map_err(|e| io_err("remove", &root.full(&rel), e)),
        }
    }

    /// The git index, read afresh from disk (a split index is refused by name).
    pub(super) fn read_index(&self) -> Result<git2::Index> {
        let mut index = self.repo.index().map_err(|e| git_err("opening the index", &self.dir, e))?;
        index.read(true).map_err(|e| index_lock::index_error("reading the index", &self.dir, e))?;
        Ok(index)
    }

    /// Commits hand edits unless the working tree provably still equals HEAD
    /// as this process last left it (see [`clean`]).
    ///
    /// Returns the branch and commit the working tree was found clean at, or
    /// `None` when it had to look closer (and may have committed): HEAD must
    /// then be read again.
    pub(super) fn commit_hand_edits_if_any(&self) -> Result<Option<BranchHead>> {
        let current = self.branch_head()?;
        {
            let mut known = self.clean.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(state) = known.as_mut()
                && state.still_clean(&self.dir, current.id)
            {
                return Ok(Some(current));
            }
            *known = None;
        }
        // The state is recorded before the look, so that a file created or
        // changed while the look runs differs from it at the next check
        // (recorded after, it would pass as clean without ever being committed).
        // (The record is not held meanwhile: the look may put files back, which
        // resets it; the pack's write lock keeps other writers out.)
        let mut found = None;
        for _ in 0..3 {
            let before = self.head_oid()?;
            let state = clean::CleanState::record(self)?;
            self.commit_hand_edits()?;
            if self.head_oid()? == before {
                found = state;
                break;
            }
        }
        *self.clean.lock().unwrap_or_else(|p| p.into_inner()) = found;
        Ok(None)
    }

    /// Commits uncommitted changes of the working tree as an `edit:` commit
    /// — or, when the repository has no commit yet, the files of the folder
    /// as its `adopt:` commit — through [`PackRepo::publish`].
    ///
    /// Under git's index lock, as `git add`/`git commit` run: no git command is
    /// halfway through rewriting a file while it is read. Files a git command
    /// restored from an index that lagged HEAD are put back to HEAD, not committed
    /// ([`clean::restored_from_a_stale_index`]); what a person's `git commit` of
    /// such an index dropped from engram's last writes is restored next
    /// ([`super::racy_commit`]).
    pub(super) fn commit_hand_edits(&self) -> Result<()> {
        let mut retries = Retries::new();
        loop {
            let mut lock = IndexLock::acquire(self)?;
            match self.commit_hand_edits_locked(&mut lock) {
                Ok(true) => {
                    drop(lock);
                    return self.restore_dropped_writes();
                }
                // Another program moved the branch meanwhile: look again.
                Ok(false) => {}
                // A file changed while it was read (someone is editing it): look again.
                Err(e) if e.is_passing() => {}
                Err(e) => return Err(e),
            }
            drop(lock);
            retries.again(&self.dir)?;
        }
    }

    /// [`Self::commit_hand_edits`] with git's index lock held: false when the
    /// branch moved meanwhile (nothing committed).
    fn commit_hand_edits_locked(&self, lock: &mut IndexLock) -> Result<bool> {
        let at = self.branch_head()?;
        let mut paths = self.dirty_paths()?;
        if paths.is_empty() {
            return Ok(true);
        }
        let restored = clean::restored_from_a_stale_index(self, &paths)?;
        if !restored.is_empty() {
            recover::put_back(self, lock, &restored)?;
            paths = self.dirty_paths()?;
            if paths.is_empty() {
                return Ok(true);
            }
        }
        // A tracked file replaced by a directory would be committed as a deletion: refuse.
        let replaced = doctor::replaced_files(&self.repo, &self.dir);
        if !replaced.is_empty() {
            return Err(StoreError::Replaced { dir: self.dir.clone(), paths: replaced });
        }
        let base = self.snapshot_of(at.id)?;
        let changes = self.working_tree_changes(&paths, &base)?;
        if changes.is_empty() {
            return Ok(true);
        }
        let adoption = at.id.is_none();
        let message = if adoption {
            CommitMessage::new("adopt: existing pack files").made_by("adopt", None)
        } else {
            CommitMessage {
                body: Some(
                    "Changes made by hand in the working tree, committed by engram before its next write."
                        .into(),
                ),
                ..CommitMessage::new(format!("edit: {}", listed(changes.paths())))
            }
            .made_by("hand-edit", None)
        };
        let proposal = Proposal {
            at: &at,
            base: base.tree,
            changes: &changes,
            message: &message,
            kind: Kind::WorkingTree { adoption },
        };
        match self.publish(&proposal, lock, &mut PhaseTimer::new(false))? {
            CommitOutcome::Committed(_) => Ok(true),
            // Only the git index differed (e.g. something staged by hand): bring it in line.
            CommitOutcome::Unchanged => self.stage_paths(changes.paths(), lock).map(|()| true),
            CommitOutcome::Retry => Ok(false),
        }
    }

    /// The working tree's state of `paths` as changes: a file's bytes with its
    /// mode, or a deletion, read without following links (see [`crate::pack_root`]).
    /// Left out, so never committed (`engram doctor` names them): a symbolic link, a
    /// file where `base` has a folder, a path below a link or a file, and nested
    /// repositories (`dir/`). Paths that are not [`PackPath`]s are kept, for the path
    /// checks to refuse with their reason.
    fn working_tree_changes(&self, paths: &[String], base: &Snapshot<'_>) -> Result<Changes> {
        let dir = &self.dir;
        let root = PackRoot::open(dir).map_err(|e| io_err("open", dir, e))?;
        let mut changes = Changes::for_memory();
        for path in paths {
            if path.ends_with('/') {
                continue;
            }
            let Ok(rel) = PackPath::parse(path) else {
                // Committed as it is, so the path checks refuse it with their reason.
                changes.put(path.clone(), Vec::new());
                continue;
            };
            let full = root.full(&rel);
            let stat = match root.stat(&rel).map_err(|e| io_err("read", &full, e))? {
                Found::Here(stat) => stat,
                Found::Missing => {
                    changes.remove(path.clone());
                    continue;
                }
                // A link on the way (not followed): git status does not report such paths.
                Found::Link | Found::NotDir => continue,
            };
            let replaces_folder =
                || matches!(base.entry(path), Ok(Some((mode, _))) if mode == super::MODE_TREE);
            let refused = if stat.is_symlink() {
                Some("a symbolic link")
            } else if stat.is_file() && replaces_folder() {
                Some("a file where the last commit has a folder")
            } else {
                None
            };
            if let Some(what) = refused {
                warn_once(format!(
                    "engram: {}: {path} is {what} — not committed (`engram doctor` explains)",
                    dir.display()
                ));
            } else if stat.is_file() {
                let Found::Here(bytes) =
                    root.read(&rel, <[u8]>::to_vec).map_err(|e| io_err("read", &full, e))?
                else {
                    continue;
                };
                let mode = if stat.mode & 0o111 != 0 { MODE_EXECUTABLE } else { MODE_BLOB };
                changes.put_with_mode(path.clone(), bytes, mode);
            }
        }
        Ok(changes)
    }

    /// Updates the git index for `paths` from the working tree (libgit2 hashes
    /// them), through git's index lock `lock`.
    fn stage_paths<'p>(&self, paths: impl Iterator<Item = &'p str>, lock: &mut IndexLock) -> Result<()> {
        let dir = &self.dir;
        let mut index = self.read_index()?;
        for path in paths {
            if std::fs::symlink_metadata(dir.join(path))
                .is_ok_and(|m| m.is_file() || m.file_type().is_symlink())
            {
                index.add_path(Path::new(path)).map_err(|e| git_err("staging hand edits", dir, e))?;
            } else {
                let _ = index.remove_path(Path::new(path));
            }
        }
        lock.install_index(&index, dir)
    }

    /// Paths whose working-tree state differs from HEAD (untracked included, ignored excluded).
    pub fn dirty_paths(&self) -> Result<Vec<String>> {
        let mut opts = StatusOptions::new();
        opts.include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_ignored(false)
            .exclude_submodules(true);
        let statuses = self
            .repo
            .statuses(Some(&mut opts))
            .map_err(|e| index_lock::index_error("reading the working tree status", &self.dir, e))?;
        Ok(statuses
            .iter()
            .filter(|s| s.status() != Status::CURRENT && !s.status().contains(Status::IGNORED))
            .filter_map(|s| s.path().ok().map(str::to_owned))
            .collect())
    }
}

/// The index entry of a committed file not yet written: no stat data.
fn unstatted_entry(path: &str, id: Oid) -> git2::IndexEntry {
    git2::IndexEntry {
        ctime: git2::IndexTime::new(0, 0),
        mtime: git2::IndexTime::new(0, 0),
        dev: 0,
        ino: 0,
        mode: u32::from(git2::FileMode::Blob),
        uid: 0,
        gid: 0,
        file_size: 0,
        id,
        flags: path.len().min(0xfff) as u16,
        flags_extended: 0,
        path: path.as_bytes().to_vec(),
    }
}

const MODE_LINK: i32 = 0o120000;

/// The first five of `paths`, comma-separated, and how many more there are.
pub(super) fn listed<'p>(paths: impl Iterator<Item = &'p str>) -> String {
    let paths: Vec<&str> = paths.collect();
    let more = paths.len().saturating_sub(5);
    let shown = paths[..paths.len().min(5)].join(", ");
    if more > 0 { format!("{shown} (+{more} more)") } else { shown }
}

/// Prints a warning to stderr the first time this process has it (a hand edit left
/// out is found again by every write until the person moves it).
fn warn_once(line: String) {
    static SEEN: std::sync::Mutex<BTreeSet<String>> = std::sync::Mutex::new(BTreeSet::new());
    if SEEN.lock().unwrap_or_else(|p| p.into_inner()).insert(line.clone()) {
        eprintln!("{line}");
    }
}

/// The tree-entry mode of a file's git mode.
fn file_mode(mode: i32) -> git2::FileMode {
    match mode {
        MODE_LINK => git2::FileMode::Link,
        MODE_EXECUTABLE => git2::FileMode::BlobExecutable,
        _ => git2::FileMode::Blob,
    }
}
const MODE_EXECUTABLE: i32 = 0o100755;

/// Optional timing of the phases of a write, printed to stderr.
pub(super) struct PhaseTimer {
    on: bool,
    last: std::time::Instant,
    phases: Vec<String>,
}

impl PhaseTimer {
    pub(super) fn new(on: bool) -> Self {
        Self { on, last: std::time::Instant::now(), phases: Vec::new() }
    }
    pub(super) fn mark(&mut self, phase: &str) {
        if self.on {
            let took = std::mem::replace(&mut self.last, std::time::Instant::now()).elapsed();
            self.phases.push(format!("{phase}={:.3}ms", took.as_secs_f64() * 1000.0));
        }
    }
    pub(super) fn report(&self, dir: &Path) {
        if self.on {
            eprintln!("engram: write {}: {}", dir.display(), self.phases.join(" "));
        }
    }
}

/// The path checks of [`PackRepo::publish`]: every path a commit changes
/// parses as a [`PackPath`] (plain relative, nothing under `.git`, …);
/// `meta.json` stays a readable JSON object ([`crate::pack::meta_change_problem`]);
/// only [`Changes::for_memory`] may write the reserved `memory/` folder (in any
/// case); no directory on the way is a symbolic link or a file in the working
/// tree (an early refusal: the write never follows a link, see [`crate::pack_root`]);
/// and engram's own commits never commit a symbolic link, nor a file where the
/// commit they build on has a folder. Sync merges bring in others' commits as they are.
fn check_paths(root: &PackRoot, base: &Snapshot<'_>, changes: &Changes, kind: Kind) -> Result<()> {
    let bad = |path: &str, reason: String| StoreError::BadPath { path: path.to_owned(), reason };
    let own = !matches!(
        kind,
        Kind::Merge { .. } | Kind::FastForward { .. } | Kind::Proposal { merge: Some(_), .. }
    );
    for (path, content) in &changes.files {
        if own && content.is_some() {
            if changes.mode_of(path) == MODE_LINK {
                return Err(bad(path, "a symbolic link is never committed by engram".into()));
            }
            if matches!(base.entry(path)?, Some((mode, _)) if mode == super::MODE_TREE) {
                return Err(bad(path, "a file where the last commit has a folder".into()));
            }
        }
        let parsed = PackPath::parse(path).map_err(|e| bad(path, e.to_string()))?;
        if let Some(problem) = crate::pack::meta_change_problem(path, content.as_deref()) {
            return Err(StoreError::BadMeta { problem, hand_edit: matches!(kind, Kind::WorkingTree { .. }) });
        }
        if matches!(kind, Kind::Tool { .. } | Kind::Proposal { merge: None, .. })
            && !changes.memory
            && parsed.is_memory()
        {
            return Err(bad(
                path,
                "memory/ is reserved for the memory tools (capture_memory, correct_memory, …)".into(),
            ));
        }
        if matches!(root.entry(&parsed, false), Ok(Found::Link | Found::NotDir)) {
            return Err(bad(path, "a folder on the way is a symbolic link or a file".into()));
        }
    }
    Ok(())
}
