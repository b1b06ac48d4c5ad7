//! Review before merge: tool writes that land on a proposal branch instead of the pack's
//! checked-out branch (`engram serve --propose`, or `engram.propose = true` in the pack's
//! `.git/config`, read again whenever that file changed), and what a reviewer does with
//! them (list, show, accept, reject).
//!
//! The branch is decided per call: the MCP server runs every tool call inside
//! [`proposing`] with the caller's [`Proposer`] (a thread-local), and [`PackRepo::write`]
//! sends the commit to [`PackRepo::write_proposal`] when it applies to the pack. The commit
//! goes through the one publish path (`Kind::Proposal`); only the ref that moves differs,
//! and the working tree and the index stay as they are. A proposal branch starts at the
//! checked-out branch's commit of its first write.
//!
//! A proposing caller reads and writes "the pack plus its own proposals": when the
//! checked-out branch moved on, [`PackRepo::update_proposal`] first brings it into the
//! proposal branch as one merge commit whose content is what accepting would give. Accepting
//! merges the branch into the checked-out branch ([`PackRepo::integrate`] with `no_ff`:
//! always one merge commit) and deletes it; rejecting deletes it.

use std::cell::RefCell;
use std::path::Path;

use git2::{ErrorCode, Oid};

use crate::proposal::ProposalBranch;

use super::index_lock::Retries;
use super::merge::{Integrated, Integration, MergeView};
use super::publish::{CommitOutcome, Kind, PhaseTimer, Proposal};
use super::{BranchHead, Committed, Edit, PackRepo, Result, Snapshot, StoreError, git_err, recover};

/// Who proposes: the branch a caller's writes land on, and whether on every pack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposer {
    /// The caller's proposal branch.
    pub branch: ProposalBranch,
    /// Every pack (`serve --propose`); otherwise only packs whose `.git/config` sets
    /// `engram.propose = true`.
    pub always: bool,
}

thread_local! {
    static PROPOSER: RefCell<Option<Proposer>> = const { RefCell::new(None) };
}

/// Runs `f` on this thread with writes (and the reads that follow them) going to
/// `proposer`'s branch where it applies; `None` runs `f` as usual.
pub fn proposing<T>(proposer: Option<Proposer>, f: impl FnOnce() -> T) -> T {
    struct Reset(Option<Proposer>);
    impl Drop for Reset {
        fn drop(&mut self) {
            let previous = self.0.take();
            PROPOSER.with(|p| *p.borrow_mut() = previous);
        }
    }
    let _reset = Reset(PROPOSER.with(|p| p.replace(proposer)));
    f()
}

/// The proposer of this thread's call, if it runs inside [`proposing`].
pub fn proposer() -> Option<Proposer> {
    PROPOSER.with(|p| p.borrow().clone())
}

/// The git config key of the per-pack setting.
pub const PROPOSE_CONFIG_KEY: &str = "engram.propose";

/// A proposal branch of a pack, as `engram review list` shows it.
#[derive(Debug, Clone)]
pub struct ProposalInfo {
    /// The branch.
    pub branch: ProposalBranch,
    /// Its commit.
    pub tip: String,
    /// Its own commits that the checked-out branch lacks (merges that brought the branch in
    /// are not counted).
    pub ahead: usize,
    /// Commits on the checked-out branch since the proposal started.
    pub behind: usize,
    /// Time of its newest commit (seconds since the epoch).
    pub time: i64,
    /// Subject of its newest commit.
    pub subject: String,
}

/// What a proposal changes (see [`PackRepo::with_proposal`]).
pub struct ProposalSides<'r> {
    /// The merge base with the checked-out branch.
    pub base: Snapshot<'r>,
    /// The proposal's tip.
    pub tip: Snapshot<'r>,
    /// Its own commits the checked-out branch lacks, newest first (short id, subject; not
    /// the merges that brought the branch in).
    pub commits: Vec<(String, String)>,
    /// The files it adds (`A`), changes (`M`) or deletes (`D`), by path.
    pub files: Vec<(char, String)>,
}

/// The per-pack setting as last read, with the stamp of the `.git/config` it was read from:
/// read again only when the file changed, so a running server follows `engram review
/// enable|disable` for one `stat` per look.
#[derive(Debug, Default)]
pub struct ProposeSetting {
    seen: Option<(ConfigStamp, bool)>,
}

/// A file's size, modification and change times (seconds, nanoseconds) and inode.
type ConfigStamp = (u64, [i64; 4], u64);

impl ProposeSetting {
    /// Whether the config file `config` (a pack's `.git/config`) sets `engram.propose = true`.
    pub fn get(&mut self, config: &Path) -> bool {
        use std::os::unix::fs::MetadataExt as _;
        let Ok(meta) = std::fs::metadata(config) else {
            self.seen = None;
            return false;
        };
        let stamp =
            (meta.len(), [meta.mtime(), meta.mtime_nsec(), meta.ctime(), meta.ctime_nsec()], meta.ino());
        if let Some((_, on)) = self.seen.filter(|(seen, _)| *seen == stamp) {
            return on;
        }
        let on = meta.is_file()
            && git2::Config::open(config).and_then(|c| c.get_bool(PROPOSE_CONFIG_KEY)).unwrap_or(false);
        self.seen = Some((stamp, on));
        on
    }

    /// [`ProposeSetting::get`] for the pack at `dir` (`<dir>/.git/config`).
    pub fn get_at(&mut self, dir: &Path) -> bool {
        self.get(&dir.join(".git").join("config"))
    }
}

impl PackRepo {
    /// Whether the pack's `.git/config` asks for proposals now (`engram.propose = true`).
    fn config_proposes(&self) -> bool {
        self.proposes.lock().unwrap_or_else(|e| e.into_inner()).get(&self.git_dir().join("config"))
    }

    /// Sets or clears the per-pack setting (`engram review enable|disable`): running servers
    /// see it at their next call on the pack.
    pub fn set_proposes(&self, on: bool) -> Result<()> {
        let mut cfg = self.repo.config().map_err(|e| git_err("reading config", &self.dir, e))?;
        cfg.set_bool(PROPOSE_CONFIG_KEY, on).map_err(|e| git_err("writing config", &self.dir, e))
    }

    /// The proposal branch this thread's writes to this pack land on, if any.
    pub fn proposal_target(&self) -> Option<ProposalBranch> {
        proposer().filter(|p| p.always || self.config_proposes()).map(|p| p.branch)
    }

    fn proposal_tip(&self) -> Result<Option<Oid>> {
        Ok(self.proposal_target().map(|b| self.ref_id(&b.ref_name())).transpose()?.flatten())
    }

    /// The commit this thread's loads and searches of the pack read instead of the working
    /// tree: the tip of its proposal branch, when it proposes on this pack and has one (see
    /// [`PackRepo::update_proposal`], which brings the pack's branch into it first).
    pub fn read_target(&self) -> Result<Option<String>> {
        Ok(self.proposal_tip()?.map(|o| o.to_string()))
    }

    /// Runs `f` on the commit this thread's reads of the pack see: the proposal branch's tip
    /// for a proposing caller that has one ([`PackRepo::read_target`]), else HEAD.
    pub fn read_current<T, E>(&self, f: impl FnOnce(&Snapshot<'_>) -> Result<T, E>) -> Result<T, E>
    where
        E: From<StoreError>,
    {
        let tip = self.proposal_tip()?;
        let at = if tip.is_some() { tip } else { self.head_oid()? };
        f(&self.snapshot_of(at)?)
    }

    /// Brings the pack's branch into this thread's proposal branch when it moved on since:
    /// one merge commit on the proposal branch (parents its tip and the branch's commit)
    /// whose content `resolve` decides on the [`MergeView`] of an accept (ours: the pack's
    /// branch, theirs: the proposal). The pack's branch, working tree and index do not
    /// change. `None` when there is nothing to do (no proposal, up to date, read-only).
    pub fn update_proposal<T, E>(
        &self,
        mut resolve: impl FnMut(&MergeView<'_>, &ProposalBranch) -> Result<Integration<T>, E>,
    ) -> Result<Option<Integrated<T>>, E>
    where
        E: From<StoreError>,
    {
        let Some(branch) = self.proposal_target() else { return Ok(None) };
        if self.options.read_only || self.proposal_behind(&branch)?.is_none() {
            return Ok(None);
        }
        let _lock = self.lock()?;
        recover::finish_pending(self)?;
        let dir = &self.dir;
        let name = branch.ref_name();
        let mut retries = Retries::new();
        loop {
            let Some((tip, head, own)) = self.proposal_behind(&branch)? else { return Ok(None) };
            let find = |id: Oid| self.repo.find_commit(id).map_err(|e| git_err("reading a commit", dir, e));
            let (ours, theirs) = (find(head)?, find(tip)?);
            let (view, head_tree) = self.merge_view(&ours, &theirs, own)?;
            let (changes, message, value) = match resolve(&view, &branch)? {
                Integration::Merge { changes, message, value } => (changes, message, value),
                Integration::Unresolvable { reason, value } => {
                    return Ok(Some(Integrated::Unresolvable { reason, value }));
                }
            };
            drop(view);
            let at = BranchHead { branch: name.clone(), id: Some(tip) };
            let proposal = Proposal {
                at: &at,
                base: Some(head_tree),
                changes: &changes,
                message: &message,
                kind: Kind::Proposal { expected: Some(tip), merge: Some(head) },
            };
            match self.publish_locked(&proposal, &mut PhaseTimer::new(false))? {
                CommitOutcome::Committed(commit) => return Ok(Some(Integrated::Merged { commit, value })),
                CommitOutcome::Unchanged | CommitOutcome::Retry => retries.again(dir)?,
            }
        }
    }

    /// When `branch` exists and lacks the checked-out branch's commit: its tip, that commit,
    /// and the number of commits the branch lacks from the proposal.
    fn proposal_behind(&self, branch: &ProposalBranch) -> Result<Option<(Oid, Oid, usize)>> {
        let (Some(tip), Some(head)) = (self.ref_id(&branch.ref_name())?, self.head_oid()?) else {
            return Ok(None);
        };
        let (missing, own) = self
            .repo
            .graph_ahead_behind(head, tip)
            .map_err(|e| git_err("comparing histories", &self.dir, e))?;
        Ok((missing > 0).then_some((tip, head, own)))
    }

    /// [`PackRepo::write`] onto `branch`: the edit runs on the branch's tip (the checked-out
    /// branch's commit when the branch does not exist yet) and its changes become one commit
    /// on the branch, through [`PackRepo::publish`]. Hand edits of the working tree are
    /// left for the next write to the checked-out branch.
    pub(super) fn write_proposal<T, E>(
        &self,
        branch: &ProposalBranch,
        mut edit: impl FnMut(&Snapshot<'_>) -> Result<Edit<T>, E>,
    ) -> Result<(Option<Committed>, T), E>
    where
        E: From<StoreError>,
    {
        if self.options.read_only {
            return Err(StoreError::ReadOnly { dir: self.dir.clone() }.into());
        }
        let _lock = self.lock()?;
        recover::finish_pending(self)?;
        let name = branch.ref_name();
        let mut retries = Retries::new();
        loop {
            let tip = self.ref_id(&name)?;
            let parent = if tip.is_some() { tip } else { self.head_oid()? };
            let at = BranchHead { branch: name.clone(), id: parent };
            let snapshot = self.snapshot_of(parent)?;
            let (changes, message, value) = match edit(&snapshot)? {
                Edit::Commit { changes, message, value } => (changes, message, value),
                Edit::Nothing(value) => return Ok((None, value)),
            };
            if changes.is_empty() {
                return Ok((None, value));
            }
            let proposal = Proposal {
                at: &at,
                base: snapshot.tree,
                changes: &changes,
                message: &message,
                kind: Kind::Proposal { expected: tip, merge: None },
            };
            // (git's index lock is not needed for the files, none change, but every commit takes it.)
            match self.publish_locked(&proposal, &mut PhaseTimer::new(false))? {
                CommitOutcome::Committed(committed) => return Ok((Some(committed), value)),
                CommitOutcome::Unchanged => return Ok((None, value)),
                CommitOutcome::Retry => retries.again(&self.dir)?,
            }
        }
    }

    /// The proposal's own commits from `tip` back to `base` (excluded), newest first, at most
    /// `max`: the merges that brought the pack's branch in ([`PackRepo::update_proposal`])
    /// are left out.
    fn own_commits(&self, tip: Oid, base: Option<Oid>, max: usize) -> Result<Vec<git2::Commit<'_>>> {
        let dir = &self.dir;
        let mut walk = self.repo.revwalk().map_err(|e| git_err("walking history", dir, e))?;
        walk.push(tip).map_err(|e| git_err("walking history", dir, e))?;
        if let Some(base) = base {
            walk.hide(base).map_err(|e| git_err("walking history", dir, e))?;
        }
        let mut out = Vec::new();
        for id in walk {
            if out.len() >= max {
                break;
            }
            let c = id
                .and_then(|id| self.repo.find_commit(id))
                .map_err(|e| git_err("walking history", dir, e))?;
            if c.parent_count() <= 1 {
                out.push(c);
            }
        }
        Ok(out)
    }

    /// The proposal branches of the pack, by name.
    pub fn proposals(&self) -> Result<Vec<ProposalInfo>> {
        let dir = &self.dir;
        let head = self.head_oid()?;
        let refs = self
            .repo
            .references_glob(&format!("refs/heads/{}*", crate::proposal::PREFIX))
            .map_err(|e| git_err("listing proposal branches", dir, e))?;
        let mut out = Vec::new();
        for r in refs {
            let r = r.map_err(|e| git_err("listing proposal branches", dir, e))?;
            let (Ok(name), Some(tip)) = (r.name(), r.target()) else { continue };
            // A branch a person made by hand with a name engram would not give is left out.
            let Ok(branch) = ProposalBranch::parse(name) else { continue };
            let commit = self.repo.find_commit(tip).map_err(|e| git_err("reading a proposal", dir, e))?;
            let behind = head.map(|head| self.repo.graph_ahead_behind(tip, head).map(|(_, behind)| behind));
            let behind = behind.transpose().map_err(|e| git_err("comparing histories", dir, e))?.unwrap_or(0);
            let ahead = self.own_commits(tip, head, usize::MAX)?.len();
            out.push(ProposalInfo {
                branch,
                tip: tip.to_string(),
                ahead,
                behind,
                time: commit.time().seconds(),
                subject: commit.summary().ok().flatten().unwrap_or_default().to_owned(),
            });
        }
        out.sort_by(|a, b| a.branch.cmp(&b.branch));
        Ok(out)
    }

    /// The proposal branches `remote` has not got as they are here (as of the last push or
    /// fetch: the remote-tracking refs `refs/remotes/<remote>/proposals/…`).
    pub fn proposals_to_push(&self, remote: &str) -> Result<Vec<ProposalBranch>> {
        let mut out = Vec::new();
        for p in self.proposals()? {
            let tracking = format!("refs/remotes/{remote}/{}", p.branch.branch());
            if self.ref_id(&tracking)?.map(|o| o.to_string()).as_deref() != Some(p.tip.as_str()) {
                out.push(p.branch);
            }
        }
        Ok(out)
    }

    /// Runs `f` on what `branch` changes (see [`ProposalSides`]); `None` when the branch does
    /// not exist.
    pub fn with_proposal<T>(
        &self,
        branch: &ProposalBranch,
        f: impl FnOnce(&ProposalSides<'_>) -> T,
    ) -> Result<Option<T>> {
        let dir = &self.dir;
        let Some(tip) = self.ref_id(&branch.ref_name())? else { return Ok(None) };
        let base = match self.head_oid()? {
            Some(head) => self.merge_base(head, tip)?,
            None => None,
        };
        let commits = self
            .own_commits(tip, base, 1000)?
            .into_iter()
            .map(|c| {
                let subject = c.summary().ok().flatten().unwrap_or_default().to_owned();
                (super::short_id(&c.id().to_string()), subject)
            })
            .collect();
        let diff = super::history::diff_commits(&self.repo, dir, base, tip, None)?;
        let mut files = Vec::new();
        for delta in diff.deltas() {
            let (mark, file) = match delta.status() {
                git2::Delta::Added => ('A', delta.new_file()),
                git2::Delta::Deleted => ('D', delta.old_file()),
                _ => ('M', delta.new_file()),
            };
            if let Some(path) = file.path().and_then(|p| p.to_str()) {
                files.push((mark, path.to_owned()));
            }
        }
        let sides = ProposalSides {
            base: self.snapshot_of(base)?,
            tip: self.snapshot_of(Some(tip))?,
            commits,
            files,
        };
        Ok(Some(f(&sides)))
    }

    /// Accepts `branch`: merges it into the checked-out branch as one merge commit whose
    /// content `resolve` decides (sync's memory-aware merge), then deletes the branch. `None`
    /// when the branch does not exist. An [`Integrated::Unresolvable`] merge keeps the branch.
    pub fn accept_proposal<T, E>(
        &self,
        branch: &ProposalBranch,
        resolve: impl FnMut(&MergeView<'_>) -> Result<Integration<T>, E>,
    ) -> Result<Option<Integrated<T>>, E>
    where
        E: From<StoreError>,
    {
        let name = branch.ref_name();
        let Some(tip) = self.ref_id(&name)? else { return Ok(None) };
        let outcome = self.integrate(&tip.to_string(), true, resolve)?;
        if !matches!(outcome, Integrated::Unresolvable { .. }) {
            self.delete_proposal_at(branch, Some(tip))?;
        }
        Ok(Some(outcome))
    }

    /// Rejects `branch`: deletes it; the checked-out branch is untouched. False when it did
    /// not exist.
    pub fn reject_proposal(&self, branch: &ProposalBranch) -> Result<bool> {
        self.delete_proposal_at(branch, None)
    }

    /// Deletes the proposal ref under the pack's write lock (no proposal write runs
    /// meanwhile) — only while it still points at `at`, when given (a write that came after
    /// the accepted commit keeps the branch).
    fn delete_proposal_at(&self, branch: &ProposalBranch, at: Option<Oid>) -> Result<bool> {
        if self.options.read_only {
            return Err(StoreError::ReadOnly { dir: self.dir.clone() });
        }
        let _lock = self.lock()?;
        let mut r = match self.repo.find_reference(&branch.ref_name()) {
            Ok(r) => r,
            Err(e) if e.code() == ErrorCode::NotFound => return Ok(false),
            Err(e) => return Err(git_err("reading a proposal branch", &self.dir, e)),
        };
        if at.is_some_and(|at| r.target() != Some(at)) {
            return Ok(false);
        }
        r.delete().map_err(|e| git_err("deleting a proposal branch", &self.dir, e))?;
        Ok(true)
    }
}
