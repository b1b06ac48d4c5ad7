//! The commit path: a write's edit becomes one commit, the branch moves by
//! compare-and-swap, and the working tree and the git index follow.

use std::collections::BTreeMap;
use std::path::Path;

use git2::{ErrorCode, IndexAddOption, ObjectType, Oid, Status, StatusOptions};

use super::{
    BranchHead, Changes, CommitMessage, Committed, Edit, PackRepo, Result, Snapshot, StoreError, clean,
    doctor, git_err, gitindex, guard, housekeeping, io_err, is_plain_relative, locks, no_wait, packwrite,
    recent, recover, refswap, scoped_write, short_id, truncate_chars, worktree,
};

pub(super) const MAX_ATTEMPTS: u32 = 50;

pub(super) enum CommitOutcome {
    Committed(Committed),
    Unchanged,
    Retry,
}

/// A file a write put into the working tree: path, blob id, content, metadata after writing.
pub(super) type WrittenFile = (String, Oid, std::sync::Arc<Vec<u8>>, crate::pack_root::FileStat);

impl PackRepo {
    /// Runs `edit` against HEAD and commits what it returns, as one commit.
    ///
    /// `edit` may be called more than once (when the branch moves under us), so
    /// it must be a pure function of the snapshot. It returns `Ok(None)` to
    /// commit nothing, or the changes, the message and a value handed back.
    pub fn write<T, E>(
        &self,
        mut edit: impl FnMut(&Snapshot<'_>) -> Result<Edit<T>, E>,
    ) -> Result<(Option<Committed>, T), E>
    where
        E: From<StoreError>,
    {
        let mut trace = PhaseTimer::new(self.options.trace_timing);

        if self.options.read_only {
            return Err(StoreError::ReadOnly { dir: self.dir.clone() }.into());
        }
        if !no_wait::waiting_allowed() && housekeeping::next_write_would_wait(&self.git_dir()) {
            return Err(StoreError::WouldWait { dir: self.dir.clone() }.into());
        }
        let _lock = self.lock()?;
        trace.mark("lock");
        recover::finish_pending(self)?;
        trace.mark("recover");
        scoped_write::flush_index(self)?;
        let mut verified = self.commit_hand_edits_if_any()?;
        trace.mark("hand-edits");
        for _attempt in 0..MAX_ATTEMPTS {
            let at = match verified.take() {
                Some(current) => current,
                None => self.branch_head()?,
            };
            let head = at.id;
            let snapshot = self.snapshot_of(head)?;
            let (changes, message, value) = match edit(&snapshot)? {
                Edit::Commit { changes, message, value } => (changes, message, value),
                Edit::Nothing(value) => return Ok((None, value)),
            };
            trace.mark("edit");
            if changes.is_empty() {
                return Ok((None, value));
            }
            match self.commit_changes(&at, snapshot.tree, &changes, &message, false, &mut trace)? {
                CommitOutcome::Committed(committed) => {
                    housekeeping::after_write(self);
                    trace.mark("gc-check");
                    trace.report(&self.dir);
                    return Ok((Some(committed), value));
                }
                CommitOutcome::Unchanged => return Ok((None, value)),
                CommitOutcome::Retry => continue,
            }
        }
        Err(StoreError::Contention { dir: self.dir.clone(), attempts: MAX_ATTEMPTS }.into())
    }

    /// Builds the tree on `base` (the tree of `at`'s commit), moves `at`'s
    /// branch (CAS) and syncs the working tree.
    /// Returns `Retry` when the branch moved and the edit must be re-run.
    pub(super) fn commit_changes(
        &self,
        at: &BranchHead,
        base: Option<Oid>,
        changes: &Changes,
        message: &CommitMessage,
        defer_index: bool,
        trace: &mut PhaseTimer,
    ) -> Result<CommitOutcome> {
        let dir = &self.dir;
        let head = at.id;
        let base_snapshot = self.snapshot_of_tree(base, head);
        guard::check_changes(&base_snapshot, changes)?;
        let mut objects = packwrite::NewObjects::default();
        let mut tree_changes = packwrite::PathChanges::new();
        let mut blobs = BTreeMap::new();
        let root = crate::pack_root::PackRoot::open(dir).map_err(|e| io_err("open", dir, e))?;
        for (path, content) in &changes.files {
            if !is_plain_relative(path) || crosses_symlink(&root, path) {
                return Err(StoreError::BadPath { path: path.clone() });
            }
            let id = match content {
                Some(bytes) => {
                    let id = objects.add(ObjectType::Blob, bytes.clone(), dir)?;
                    blobs.insert(path.as_str(), id);
                    Some(id)
                }
                None => None,
            };
            tree_changes.insert(path.as_str(), id);
        }
        let tree_id =
            packwrite::updated_tree(&self.repo, &self.objects, dir, base, &tree_changes, &mut objects, true)?
                .ok_or_else(|| StoreError::Damaged {
                    dir: dir.clone(),
                    problem: "the new root tree is missing".into(),
                })?;
        if head.is_some() && base == Some(tree_id) {
            // Nothing actually changed (same bytes): no empty commits.
            return Ok(CommitOutcome::Unchanged);
        }
        let sig = self.signature(message.time)?;
        let parents: Vec<Oid> = head.into_iter().collect();
        trace.mark("objects");
        let rendered = message.render();
        let commit_id = objects.add(
            ObjectType::Commit,
            packwrite::commit_bytes(tree_id, &parents, &sig, &rendered),
            dir,
        )?;
        objects.write(&self.repo, self.options.durable, &self.objects)?;
        self.objects.keep_commit(commit_id, tree_id);
        let old = head;
        trace.mark("commit-object");
        recover::write_pending(self, old, commit_id, changes)?;
        trace.mark("pending");
        let moved = match old {
            Some(expected) => {
                let log = format!("engram: {}", truncate_chars(&message.subject, 60));
                match refswap::swap_branch(self, &at.branch, expected, commit_id, &log, &sig) {
                    refswap::Swap::Moved => true,
                    refswap::Swap::Raced => {
                        std::thread::sleep(std::time::Duration::from_millis(2));
                        false
                    }
                    refswap::Swap::NotHere => self.move_branch(old, commit_id, &message.subject)?,
                }
            }
            None => self.move_branch(old, commit_id, &message.subject)?,
        };
        if !moved {
            recover::clear_pending(self)?;
            return Ok(CommitOutcome::Retry);
        }
        if let Some(parent) = old {
            recent::note_commit(&self.recent, commit_id, parent, sig.when().seconds(), &rendered);
        }
        trace.mark("branch-cas");
        if defer_index {
            *self.clean.lock().unwrap_or_else(|p| p.into_inner()) = None;
            scoped_write::sync_working_tree_deferred(self, changes)?;
        } else {
            let written = self.write_working_tree(&root, changes, &blobs, false)?;
            let mut known = self.clean.lock().unwrap_or_else(|p| p.into_inner());
            match known.as_mut() {
                Some(state) if old.is_some_and(|o| state.is_at(o)) => {
                    let removed = changes.files.iter().filter(|(_, c)| c.is_none()).map(|(p, _)| p.clone());
                    state.committed(&self.dir, commit_id, written, removed.collect());
                }
                _ => *known = None,
            }
        }
        trace.mark("worktree+index");
        recover::clear_pending(self)?;
        trace.mark("clear-pending");
        let id = commit_id.to_string();
        Ok(CommitOutcome::Committed(Committed {
            short: short_id(&id),
            id,
            previous_head: old.map(|o| o.to_string()),
        }))
    }

    /// Compare-and-swap of the current branch from `old` to `new`.
    pub(super) fn move_branch(&self, old: Option<Oid>, new: Oid, subject: &str) -> Result<bool> {
        let branch = self.branch_ref()?;
        let log = format!("engram: {}", truncate_chars(subject, 60));
        let res = match old {
            Some(old) => self.repo.reference_matching(&branch, new, true, old, &log).map(|_| ()),
            None => self.repo.reference(&branch, new, false, &log).map(|_| ()),
        };
        match res {
            Ok(()) => Ok(true),
            Err(e) if e.code() == ErrorCode::Locked => {
                // A lock file another process left: wait for it, or clear it once stale.
                for lock in locks::lock_files(self) {
                    locks::wait_for(&lock);
                }
                Ok(false)
            }
            Err(e) if matches!(e.code(), ErrorCode::Modified | ErrorCode::Exists) => {
                std::thread::sleep(std::time::Duration::from_millis(2));
                Ok(false)
            }
            Err(e) => Err(git_err("moving the branch", &self.dir, e)),
        }
    }
    /// Writes changed files into the working tree and the index. `blobs` are
    /// the ids of the committed contents: the index entries are made from
    /// them and the files' `stat`, so no file is read back and hashed.
    pub(super) fn sync_working_tree(
        &self,
        changes: &Changes,
        blobs: &BTreeMap<&str, Oid>,
    ) -> Result<Vec<WrittenFile>> {
        let root = crate::pack_root::PackRoot::open(&self.dir).map_err(|e| io_err("open", &self.dir, e))?;
        self.write_working_tree(&root, changes, blobs, false)
    }

    /// [`Self::sync_working_tree`]; with `skip_blocked`, a path the working tree cannot
    /// take (a symbolic link or a file on the way, a directory there) is left as it is
    /// instead of failing the whole sync: the next write sees it as a hand edit.
    pub(super) fn write_working_tree(
        &self,
        root: &crate::pack_root::PackRoot,
        changes: &Changes,
        blobs: &BTreeMap<&str, Oid>,
        skip_blocked: bool,
    ) -> Result<Vec<WrittenFile>> {
        let mut written = Vec::new();
        // (path, its index entry when the platform can make one)
        let mut added: Vec<(&str, Option<git2::IndexEntry>)> = Vec::new();
        let mut removed: Vec<&str> = Vec::new();
        let git_dir = self.git_dir();
        for (path, content) in &changes.files {
            let rel = crate::pack_path::PackPath::parse(path)
                .map_err(|_| StoreError::BadPath { path: path.clone() })?;
            match content {
                Some(bytes) => {
                    let stat = match worktree::write_file(root, &rel, bytes, self.options.durable, &git_dir) {
                        Ok(stat) => stat,
                        Err(StoreError::Blocked { .. }) if skip_blocked => continue,
                        Err(e) => return Err(e),
                    };
                    let id = blobs.get(path.as_str()).copied();
                    added.push((path, id.and_then(|id| worktree::index_entry(path, id, &stat))));
                    if let Some(id) = id {
                        written.push((path.clone(), id, std::sync::Arc::new(bytes.clone()), stat));
                    }
                }
                None => {
                    root.remove_file(&rel).map_err(|e| io_err("remove", &root.full(&rel), e))?;
                    removed.push(path);
                }
            }
        }
        locks::wait_for(&git_dir.join("index.lock"));
        if self.update_known_index(&added, &removed) {
            return Ok(written);
        }
        let mut index = self.repo.index().map_err(|e| git_err("opening the index", &self.dir, e))?;
        // Re-read only when another process changed it (libgit2 compares the file's stamp).
        index.read(false).map_err(|e| git_err("reading the index", &self.dir, e))?;
        for (path, entry) in &added {
            match entry {
                Some(entry) => index.add(entry),
                None => index.add_path(Path::new(path)),
            }
            .map_err(|e| git_err("updating the index", &self.dir, e))?;
        }
        for path in &removed {
            let _ = index.remove_path(Path::new(path));
        }
        if !worktree::exchange_index(&index, &git_dir) {
            index.write().map_err(|e| git_err("writing the index", &self.dir, e))?;
        }
        *self.known_index.lock().unwrap_or_else(|p| p.into_inner()) =
            gitindex::KnownIndex::of(&index, &git_dir.join("index"));
        Ok(written)
    }

    /// Updates the git index from the model this process keeps of it (see
    /// [`gitindex`]); false (and nothing written) when the model is not
    /// current or an entry cannot be made here.
    pub(super) fn update_known_index(
        &self,
        added: &[(&str, Option<git2::IndexEntry>)],
        removed: &[&str],
    ) -> bool {
        let git_dir = self.git_dir();
        let index_path = git_dir.join("index");
        let mut known = self.known_index.lock().unwrap_or_else(|p| p.into_inner());
        let Some(model) = known.as_mut().filter(|k| k.is_current(&index_path)) else { return false };
        if added.iter().any(|(_, e)| e.is_none()) {
            return false;
        }
        for (_, entry) in added {
            if let Some(entry) = entry
                && model.put(entry).is_none()
            {
                *known = None;
                return false;
            }
        }
        for path in removed {
            model.remove(path);
        }
        if worktree::exchange_index_bytes(&model.encode(), &git_dir) && model.written(&index_path) {
            return true;
        }
        *known = None;
        false
    }

    /// Commits hand edits unless the working tree provably still equals HEAD
    /// as this process last left it (see [`clean`]).
    ///
    /// Returns the branch and commit the working tree was found clean at, or
    /// `None` when it had to look closer (and may have committed): HEAD must
    /// then be read again.
    pub(super) fn commit_hand_edits_if_any(&self) -> Result<Option<BranchHead>> {
        let current = self.branch_head()?;
        let mut known = self.clean.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(state) = known.as_mut()
            && state.still_clean(&self.dir, current.id)
        {
            return Ok(Some(current));
        }
        *known = None;
        self.commit_hand_edits()?;
        *known = clean::CleanState::record(self)?;
        Ok(None)
    }

    /// Commits uncommitted changes of the working tree as an `edit:` commit.
    pub(super) fn commit_hand_edits(&self) -> Result<()> {
        let paths = self.dirty_paths()?;
        if paths.is_empty() {
            return Ok(());
        }
        let head_tree = self
            .head_commit()?
            .map(|c| c.tree())
            .transpose()
            .map_err(|e| git_err("reading HEAD's tree", &self.dir, e))?;
        guard::check_hand_edits(&self.repo, &self.dir, head_tree.as_ref(), &paths)?;

        // A tracked file replaced by a directory would be committed as a deletion: refuse.
        let replaced = doctor::replaced_files(&self.repo, &self.dir);
        if !replaced.is_empty() {
            return Err(StoreError::Damaged {
                dir: self.dir.clone(),
                problem: format!("{} in the working tree", replaced.join(", ")),
            });
        }
        let listed: Vec<&str> = paths.iter().take(5).map(String::as_str).collect();
        let more = if paths.len() > 5 { format!(" (+{} more)", paths.len() - 5) } else { String::new() };
        let message = CommitMessage {
            body: Some(
                "Changes made by hand in the working tree, committed by engram before its next write.".into(),
            ),
            ..CommitMessage::new(format!("edit: {}{more}", listed.join(", ")))
        }
        .made_by("hand-edit", None);
        self.commit_working_tree_edits(&message)
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
            .map_err(|e| git_err("reading the working tree status", &self.dir, e))?;
        Ok(statuses
            .iter()
            .filter(|s| s.status() != Status::CURRENT && !s.status().contains(Status::IGNORED))
            .filter_map(|s| s.path().ok().map(str::to_owned))
            .collect())
    }

    pub(super) fn commit_working_tree_edits(&self, message: &CommitMessage) -> Result<()> {
        let dir = &self.dir;
        let mut index = self.repo.index().map_err(|e| git_err("opening the index", dir, e))?;
        index.read(true).map_err(|e| git_err("reading the index", dir, e))?;
        index
            .add_all(["*"], IndexAddOption::DEFAULT, None)
            .map_err(|e| git_err("staging hand edits", dir, e))?;
        index.update_all(["*"], None).map_err(|e| git_err("staging hand edits", dir, e))?;
        let tree_id = index.write_tree().map_err(|e| git_err("writing the tree", dir, e))?;
        let head = self.head_commit()?;
        if let Some(h) = &head
            && h.tree_id() == tree_id
        {
            locks::wait_for(&self.git_dir().join("index.lock"));
            index.write().map_err(|e| git_err("writing the index", dir, e))?;
            return Ok(());
        }
        let tree = self.repo.find_tree(tree_id).map_err(|e| git_err("reading the tree", dir, e))?;
        let sig = self.signature(message.time)?;
        let parents: Vec<&git2::Commit<'_>> = head.iter().collect();
        let id = self
            .repo
            .commit(None, &sig, &sig, &message.render(), &tree, &parents)
            .map_err(|e| git_err("writing the commit", dir, e))?;
        if !self.move_branch(head.as_ref().map(|h| h.id()), id, &message.subject)? {
            return Err(StoreError::Contention { dir: dir.clone(), attempts: 1 });
        }
        locks::wait_for(&self.git_dir().join("index.lock"));
        index.write().map_err(|e| git_err("writing the index", dir, e))?;
        Ok(())
    }
}

/// Optional timing of the phases of a write, printed to stderr.
pub(super) struct PhaseTimer {
    on: bool,
    last: std::time::Instant,
    phases: Vec<(&'static str, std::time::Duration)>,
}

impl PhaseTimer {
    pub(super) fn new(on: bool) -> Self {
        Self { on, last: std::time::Instant::now(), phases: Vec::new() }
    }
    pub(super) fn mark(&mut self, phase: &'static str) {
        if self.on {
            let now = std::time::Instant::now();
            self.phases.push((phase, now - self.last));
            self.last = now;
        }
    }
    pub(super) fn report(&self, dir: &Path) {
        if self.on {
            let parts: Vec<String> =
                self.phases.iter().map(|(p, d)| format!("{p}={:.3}ms", d.as_secs_f64() * 1000.0)).collect();
            eprintln!("engram: write {}: {}", dir.display(), parts.join(" "));
        }
    }
}

/// True when a directory on the way to `path` in the working tree is a symbolic link or a
/// file: an early refusal, before anything is committed (the write itself never follows a
/// link either, see [`crate::pack_root`]).
fn crosses_symlink(root: &crate::pack_root::PackRoot, path: &str) -> bool {
    use crate::pack_root::Found;
    let Ok(path) = crate::pack_path::PackPath::parse(path) else { return true };
    matches!(root.entry(&path, false), Ok(Found::Link | Found::NotDir))
}
