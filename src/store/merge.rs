//! Integrating a fetched branch: fast-forward, or one merge commit built in
//! memory (no working-tree merge, no merge drivers) whose content a caller decides.
//!
//! [`PackRepo::integrate`] takes the write lock like every write, finishes an
//! interrupted write and commits hand edits first, then compares HEAD with the
//! fetched commit. When both moved, it hands the caller a [`MergeView`] (the
//! base, our and their trees, the paths each side changed, and a line-based
//! 3-way text merge) and commits what the caller returns with two parents,
//! moving the branch with the same compare-and-swap as any other write.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use git2::{Delta, DiffOptions, FileFavor, MergeFileInput, MergeFileOptions, ObjectType, Oid, Tree};

use super::history::diff_commits;
use super::index_lock::Retries;
use super::publish::{Kind, Proposal};
use super::{
    BranchHead, Changes, CommitMessage, CommitOutcome, Committed, PackRepo, PhaseTimer, Result, Snapshot,
    StoreError, git_err, recover,
};

/// Which side of a merge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The merge base.
    Base,
    /// This pack (HEAD).
    Ours,
    /// The fetched branch.
    Theirs,
}

/// Who changed a path since the merge base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// Only this pack.
    OursOnly,
    /// Only the fetched branch.
    TheirsOnly,
    /// Both, to the same content.
    BothSame,
    /// Both, differently.
    BothDiffer,
}

/// A path changed on at least one side.
#[derive(Debug, Clone)]
pub struct ChangedPath {
    /// Path in the pack.
    pub path: String,
    /// Who changed it.
    pub kind: ChangeKind,
    base: Option<(Oid, i32)>,
    ours: Option<(Oid, i32)>,
    theirs: Option<(Oid, i32)>,
}

impl ChangedPath {
    /// True when the path exists on that side.
    pub fn exists(&self, side: Side) -> bool {
        match side {
            Side::Base => self.base,
            Side::Ours => self.ours,
            Side::Theirs => self.theirs,
        }
        .is_some()
    }

    /// True when the path is a regular file (or absent) on every side: not a
    /// symbolic link or a submodule, which engram does not merge.
    pub fn is_plain(&self) -> bool {
        [self.base, self.ours, self.theirs].iter().flatten().all(|(_, mode)| {
            *mode == i32::from(git2::FileMode::Blob) || *mode == i32::from(git2::FileMode::BlobExecutable)
        })
    }
}

/// The three trees of a merge, for the caller to decide the result.
pub struct MergeView<'r> {
    /// The merge base.
    pub base: Snapshot<'r>,
    /// This pack's HEAD.
    pub ours: Snapshot<'r>,
    /// The fetched commit.
    pub theirs: Snapshot<'r>,
    /// Every path changed on at least one side, sorted.
    pub changed: Vec<ChangedPath>,
    /// Commits on the fetched branch not in HEAD.
    pub incoming_commits: usize,
}

impl MergeView<'_> {
    /// Line-based 3-way merge of a path (a missing version counts as empty).
    /// With `union`, lines both sides added are all kept (for append-only
    /// files); otherwise `None` when the sides conflict or a version is binary.
    pub fn merge_text(&self, path: &str, union: bool) -> Result<Option<Vec<u8>>> {
        let read = |s: &Snapshot<'_>| -> Result<Vec<u8>> { Ok(s.read(path)?.unwrap_or_default()) };
        let (base, ours, theirs) = (read(&self.base)?, read(&self.ours)?, read(&self.theirs)?);
        if [&base, &ours, &theirs].iter().any(|b| b.contains(&0)) {
            return Ok(None);
        }
        merge_file(path, [&base, &ours, &theirs], union)
            .map_err(|e| git_err("merging a file", self.ours.dir, e))
    }
}

/// git's 3-way merge of one file (base, ours, theirs); `None` when it conflicts. With
/// `union`, lines both sides added are all kept.
pub(super) fn merge_file(
    path: &str,
    sides: [&[u8]; 3],
    union: bool,
) -> std::result::Result<Option<Vec<u8>>, git2::Error> {
    let [b, o, t] = sides.map(|bytes| {
        let mut input = MergeFileInput::new();
        input.content(bytes).path(path);
        input
    });
    let mut opts = MergeFileOptions::new();
    if union {
        opts.favor(FileFavor::Union);
    }
    let result = git2::merge_file(&b, &o, &t, Some(&mut opts))?;
    Ok(result.is_automergeable().then(|| result.content().to_vec()))
}

/// What the caller of [`PackRepo::integrate`] decides for a diverged branch.
pub enum Integration<T> {
    /// Commit HEAD's tree with these changes as a merge of HEAD and the fetched commit.
    Merge {
        /// Changes relative to HEAD's tree.
        changes: Changes,
        /// The merge commit's message.
        message: CommitMessage,
        /// Handed back.
        value: T,
    },
    /// The sides cannot be combined: leave the branch alone.
    Unresolvable {
        /// Why, for the report.
        reason: String,
        /// Handed back.
        value: T,
    },
}

/// What [`PackRepo::integrate`] did.
#[derive(Debug)]
pub enum Integrated<T> {
    /// HEAD already contains the fetched commit (HEAD may be ahead).
    UpToDate,
    /// HEAD moved forward to the fetched commit.
    FastForward {
        /// The new HEAD.
        to: Committed,
        /// Commits gained.
        commits: usize,
    },
    /// A merge commit was made.
    Merged {
        /// The merge commit.
        commit: Committed,
        /// The caller's value.
        value: T,
    },
    /// The caller found the sides impossible to combine; the branch is unchanged.
    Unresolvable {
        /// Why.
        reason: String,
        /// The caller's value.
        value: T,
    },
}

/// Paths whose entry (id, mode) differs between the base and either side, sorted.
fn changed_paths(base: Option<&Tree<'_>>, ours: &Tree<'_>, theirs: &Tree<'_>) -> Vec<ChangedPath> {
    let entries = |tree: Option<&Tree<'_>>| {
        let mut out = BTreeMap::new();
        if let Some(tree) = tree {
            let _ = tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
                if entry.kind() != Some(ObjectType::Tree)
                    && let Ok(name) = entry.name()
                {
                    out.insert(format!("{dir}{name}"), (entry.id(), entry.filemode()));
                }
                git2::TreeWalkResult::Ok
            });
        }
        out
    };
    let (b, o, t) = (entries(base), entries(Some(ours)), entries(Some(theirs)));
    let paths: BTreeSet<&String> = b.keys().chain(o.keys()).chain(t.keys()).collect();
    let mut out = Vec::new();
    for p in paths {
        let (be, oe, te) = (b.get(p).copied(), o.get(p).copied(), t.get(p).copied());
        let kind = match (oe != be, te != be) {
            (false, false) => continue,
            (true, false) => ChangeKind::OursOnly,
            (false, true) => ChangeKind::TheirsOnly,
            (true, true) if oe == te => ChangeKind::BothSame,
            (true, true) => ChangeKind::BothDiffer,
        };
        out.push(ChangedPath { path: p.clone(), kind, base: be, ours: oe, theirs: te });
    }
    out
}

impl PackRepo {
    /// Brings the fetched commit `theirs` (a full id) into the current branch:
    /// nothing when HEAD contains it, a fast-forward when HEAD is its ancestor (unless
    /// `no_ff`: accepting a proposal, see `proposals.rs`), otherwise one merge commit whose
    /// content `resolve` decides.
    ///
    /// `resolve` may run more than once (when the branch moves under us), so
    /// it must depend on the view only.
    pub fn integrate<T, E>(
        &self,
        theirs: &str,
        no_ff: bool,
        mut resolve: impl FnMut(&MergeView<'_>) -> Result<Integration<T>, E>,
    ) -> Result<Integrated<T>, E>
    where
        E: From<StoreError>,
    {
        let dir = &self.dir;
        let theirs_id =
            Oid::from_str(theirs).map_err(|e| git_err("reading the fetched commit id", dir, e))?;
        let _lock = self.lock()?;
        recover::finish_pending(self)?;
        self.commit_hand_edits()?;
        let mut retries = Retries::new();
        loop {
            let theirs = self
                .repo
                .find_commit(theirs_id)
                .map_err(|e| git_err("reading the fetched commit", dir, e))?;
            let at = self.branch_head()?;
            let (ahead, behind) = match at.id {
                Some(ours) => self
                    .repo
                    .graph_ahead_behind(ours, theirs_id)
                    .map_err(|e| git_err("comparing histories", dir, e))?,
                // An empty pack takes the remote's history as it is.
                None => (0, 1),
            };
            if behind == 0 {
                return Ok(Integrated::UpToDate);
            }
            let ours = at.id.map(|id| self.repo.find_commit(id)).transpose();
            let ours = match ours.map_err(|e| git_err("reading HEAD", dir, e))? {
                Some(ours) if ahead > 0 || no_ff => ours,
                ours => match self.fast_forward(&at, ours.as_ref(), &theirs)? {
                    Some(to) => return Ok(Integrated::FastForward { to, commits: behind }),
                    None => {
                        retries.again(dir)?;
                        continue;
                    }
                },
            };
            let (view, ours_tree) = self.merge_view(&ours, &theirs, behind)?;
            let (changes, message, value) = match resolve(&view)? {
                Integration::Merge { changes, message, value } => (changes, message, value),
                Integration::Unresolvable { reason, value } => {
                    return Ok(Integrated::Unresolvable { reason, value });
                }
            };
            let proposal = Proposal {
                at: &at,
                base: Some(ours_tree),
                changes: &changes,
                message: &message,
                kind: Kind::Merge { theirs: theirs.id() },
            };
            match self.publish_locked(&proposal, &mut PhaseTimer::new(false))? {
                CommitOutcome::Committed(commit) => return Ok(Integrated::Merged { commit, value }),
                CommitOutcome::Unchanged | CommitOutcome::Retry => retries.again(dir)?,
            }
        }
    }

    /// The [`MergeView`] of `ours` and `theirs` (their merge base, the three trees, the paths
    /// each side changed), and the id of `ours`'s tree.
    pub(super) fn merge_view<'r>(
        &'r self,
        ours: &git2::Commit<'_>,
        theirs: &git2::Commit<'_>,
        incoming_commits: usize,
    ) -> Result<(MergeView<'r>, Oid)> {
        let dir = &self.dir;
        let base_id = self.merge_base(ours.id(), theirs.id())?;
        let base_tree = base_id
            .map(|id| self.repo.find_commit(id).and_then(|c| c.tree()))
            .transpose()
            .map_err(|e| git_err("reading the merge base", dir, e))?;
        let ours_tree = ours.tree().map_err(|e| git_err("reading HEAD's tree", dir, e))?;
        let theirs_tree = theirs.tree().map_err(|e| git_err("reading the fetched tree", dir, e))?;
        let changed = changed_paths(base_tree.as_ref(), &ours_tree, &theirs_tree);
        let view = MergeView {
            base: self.snapshot_of_tree(base_tree.as_ref().map(|t| t.id()), base_id),
            ours: self.snapshot_of_tree(Some(ours_tree.id()), Some(ours.id())),
            theirs: self.snapshot_of_tree(Some(theirs_tree.id()), Some(theirs.id())),
            changed,
            incoming_commits,
        };
        Ok((view, ours_tree.id()))
    }

    /// The merge base of two commits (`None` when they share no history).
    pub(super) fn merge_base(&self, a: Oid, b: Oid) -> Result<Option<Oid>> {
        match self.repo.merge_base(a, b) {
            Ok(id) => Ok(Some(id)),
            Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
            Err(e) => Err(git_err("finding the merge base", &self.dir, e)),
        }
    }

    /// Moves the branch from `ours` to `theirs` and updates the working tree,
    /// through [`PackRepo::publish`] (the commits it brings in are scanned
    /// first). `None` when the branch moved under us.
    fn fast_forward(
        &self,
        at: &BranchHead,
        ours: Option<&git2::Commit<'_>>,
        theirs: &git2::Commit<'_>,
    ) -> Result<Option<Committed>> {
        let dir = &self.dir;
        let mut opts = DiffOptions::new();
        opts.include_typechange(true);
        let diff = diff_commits(&self.repo, dir, ours.map(|c| c.id()), theirs.id(), Some(&mut opts))?;
        let mut changes = Changes::default();
        for delta in diff.deltas() {
            if let Some(old) = delta.old_file().path().and_then(Path::to_str)
                && matches!(delta.status(), Delta::Deleted | Delta::Renamed | Delta::Typechange)
            {
                changes.remove(old);
            }
            if let Some(new) = delta.new_file().path().and_then(Path::to_str)
                && !matches!(delta.status(), Delta::Deleted)
            {
                let blob = self
                    .repo
                    .find_blob(delta.new_file().id())
                    .map_err(|e| git_err("reading a blob", dir, e))?;
                changes.put(new, blob.content().to_vec());
            }
        }
        let message = CommitMessage::new("sync: fast-forward");
        let proposal = Proposal {
            at,
            base: ours.map(|c| c.tree_id()),
            changes: &changes,
            message: &message,
            kind: Kind::FastForward { theirs: theirs.id() },
        };
        match self.publish_locked(&proposal, &mut PhaseTimer::new(false))? {
            CommitOutcome::Committed(to) => Ok(Some(to)),
            CommitOutcome::Unchanged | CommitOutcome::Retry => Ok(None),
        }
    }

    /// Points `refs/heads/<name>` at HEAD so a state engram cannot merge is kept
    /// on a branch of its own. If the branch exists and is not an ancestor of
    /// HEAD, a suffixed name is used instead. Returns the full ref name.
    pub fn save_head_as_branch(&self, name: &str) -> Result<String> {
        let dir = &self.dir;
        let fail = |why| git_err("saving HEAD on a branch", dir, git2::Error::from_str(why));
        let Some(head) = self.head_oid()? else { return Err(fail("the pack has no commits")) };
        let reflog = "engram sync: keep unmerged state";
        for n in 0..100 {
            let full = if n == 0 { format!("refs/heads/{name}") } else { format!("refs/heads/{name}-{n}") };
            let saved = match self.ref_id(&full)? {
                None => self.repo.reference(&full, head, false, reflog),
                Some(at) if at == head => return Ok(full),
                Some(at) if self.repo.graph_descendant_of(head, at).unwrap_or(false) => {
                    self.repo.reference_matching(&full, head, true, at, reflog)
                }
                Some(_) => continue,
            };
            saved.map_err(|e| git_err("saving HEAD on a branch", dir, e))?;
            return Ok(full);
        }
        Err(fail("too many conflict branches; delete old ones"))
    }
}
