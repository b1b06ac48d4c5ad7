//! Review before merge: `engram review list|show|accept|reject` and the `review` toolset
//! (`list_proposals`, `review_proposal`), over the proposal branches that
//! `serve --propose` writes to (see `store/proposals.rs`); and what a proposing client
//! reads (its proposal branch's tip instead of the working tree).
//!
//! Accepting merges with sync's memory-aware merge ([`super::sync::resolve`]): entries are
//! united entry by entry, so a proposal whose base moved on loses nothing, and an entry
//! changed differently on both sides keeps both versions (listed in
//! `memory/_conflicts.md`), as in a sync.

use crate::memmerge::MemorySide;
use crate::ops::{Caller, Engram, EngramError, Result};
use crate::proposal::ProposalBranch;
use crate::store::{Integrated, PackRepo};

use super::sync::{MergeContext, load_memory, resolve};

/// The memory entries a proposal adds and removes: full-index lines (date, type,
/// category, summary), each as many times as it is added or removed.
fn entry_changes(base: &MemorySide, tip: &MemorySide) -> (Vec<String>, Vec<String>) {
    let minus = |a: &[String], b: &[String]| {
        let mut left: Vec<&String> = b.iter().collect();
        let mut out = Vec::new();
        for line in a {
            match left.iter().position(|l| *l == line) {
                Some(i) => {
                    left.swap_remove(i);
                }
                None => out.push(line.clone()),
            }
        }
        out
    };
    (minus(&tip.index, &base.index), minus(&base.index, &tip.index))
}

fn bad_branch(e: crate::proposal::ProposalBranchError) -> EngramError {
    EngramError::Invalid { field: "branch", reason: e.to_string() }
}

fn no_proposal(name: &str, branch: &ProposalBranch) -> EngramError {
    EngramError::Invalid {
        field: "branch",
        reason: format!("pack {name} has no branch {branch} (engram review list {name} lists them)"),
    }
}

/// A caller whose own writes to the pack are proposals (`serve --propose`, or the pack's
/// setting) may not accept or reject: review is someone else's step.
fn refuse_self_review(repo: &PackRepo, name: &str) -> Result<()> {
    match repo.proposal_target() {
        Some(own) => Err(EngramError::Invalid {
            field: "action",
            reason: format!(
                "this client's writes to {name} are proposals themselves ({own}): accept or reject from a server without --propose, or with `engram review accept|reject {name} <branch>`"
            ),
        }),
        None => Ok(()),
    }
}

impl Engram {
    /// `engram review enable|disable`: the per-pack setting (`engram.propose` in the pack's
    /// `.git/config`): every MCP client's writes to the pack become proposals, with or
    /// without `serve --propose` (running servers see it at their next call on the pack).
    pub fn set_pack_review(&self, name: &str, on: bool) -> Result<String> {
        let (_, repo) = self.review_repo(name)?;
        repo.set_proposes(on)?;
        Ok(if on {
            format!(
                "{name}: MCP clients' writes now land on proposals/<client> for review (engram.propose = true)"
            )
        } else {
            format!("{name}: MCP clients write to the pack's branch again (engram.propose = false)")
        })
    }

    /// The pack's repository for a review step: a folder that is not a repository has no
    /// proposals.
    fn review_repo(&self, name: &str) -> Result<(std::path::PathBuf, PackRepo)> {
        let pack = self.resolve(name)?;
        if !PackRepo::is_repository(&pack.dir) {
            return Err(EngramError::Invalid {
                field: "name",
                reason: format!("pack {name} has no history yet, so no proposals"),
            });
        }
        let repo = PackRepo::open(&pack.dir, self.config.store.clone())?;
        Ok((pack.dir, repo))
    }

    /// `engram review list` / `list_proposals`: the pack's proposal branches.
    pub fn list_proposals(&self, name: &str) -> Result<String> {
        let (_, repo) = self.review_repo(name)?;
        let proposals = repo.proposals()?;
        if proposals.is_empty() {
            return Ok(format!("{name}: 没有待审阅的提议 (no proposals)"));
        }
        let mut out = format!("## 待审阅的提议 (proposals): {name}\n");
        for p in proposals {
            let when = chrono::DateTime::from_timestamp(p.time, 0)
                .map(|t| t.format("%Y-%m-%d %H:%M").to_string())
                .unwrap_or_default();
            out.push_str(&format!(
                "- {} — {} commit(s) to review, main moved {} commit(s) since; last {when}: {}\n",
                p.branch, p.ahead, p.behind, p.subject
            ));
        }
        out.push_str(&format!(
            "Next: engram review show {name} <branch>, then accept or reject (or push the branch and merge it as a pull request)."
        ));
        Ok(out)
    }

    /// `engram review show` / `review_proposal(action: show)`: the memory entries the
    /// proposal adds and removes, its other files and its commits.
    pub fn show_proposal(&self, name: &str, branch: &str) -> Result<String> {
        let branch = ProposalBranch::parse(branch).map_err(bad_branch)?;
        let (_, repo) = self.review_repo(name)?;
        let shown = repo.with_proposal(&branch, |sides| -> Result<String> {
            let (base, tip) = (load_memory(&sides.base)?, load_memory(&sides.tip)?);
            let (added, removed) = entry_changes(&base, &tip);
            let mut out = format!("## 提议 (proposal) {branch} → {name}\n");
            out.push_str(&format!("\n### 新增记忆 (memories added): {}\n", added.len()));
            for line in &added {
                out.push_str(&format!("+ {}\n", line.trim_start_matches("- ")));
            }
            out.push_str(&format!("\n### 删除记忆 (memories removed): {}\n", removed.len()));
            for line in &removed {
                out.push_str(&format!("- {}\n", line.trim_start_matches("- ")));
            }
            let others: Vec<&(char, String)> =
                sides.files.iter().filter(|(_, p)| !p.starts_with("memory/")).collect();
            if !others.is_empty() {
                out.push_str(&format!("\n### 其他文件 (other files): {}\n", others.len()));
                for (mark, path) in others {
                    out.push_str(&format!("{mark} {path}\n"));
                }
            }
            out.push_str(&format!("\n### 提交 (commits): {}\n", sides.commits.len()));
            for (id, subject) in &sides.commits {
                out.push_str(&format!("{id} {subject}\n"));
            }
            out.push_str(&format!(
                "\nNext: engram review accept {name} {branch} (one merge commit), or engram review reject {name} {branch}."
            ));
            Ok(out)
        })?;
        shown.ok_or_else(|| no_proposal(name, &branch))?
    }

    /// `engram review accept` / `review_proposal(action: accept)`: merges the proposal into
    /// the pack's branch (one merge commit, memory entry by entry), then deletes it.
    pub fn accept_proposal(&self, name: &str, branch: &str, caller: &Caller) -> Result<String> {
        let branch = ProposalBranch::parse(branch).map_err(bad_branch)?;
        let (dir, repo) = self.review_repo(name)?;
        refuse_self_review(&repo, name)?;
        let label = branch.to_string();
        let cx = MergeContext { host: branch.name(), remote: &label, now: self.now(), caller };
        // Through this process's handle of the pack, like every write (its caches follow).
        let outcome = self
            .with_repo(&dir, |repo| {
                repo.accept_proposal(&branch, |view| {
                    let mut merge = resolve(view, &cx)?;
                    if let crate::store::Integration::Merge { message, value, .. } = &mut merge {
                        message.subject = format!(
                            "review: accept {branch} ({} commits, {} memories{})",
                            value.commits,
                            value.memories,
                            match value.memory_conflicts.len() + value.file_conflicts.len() {
                                0 => String::new(),
                                n => format!(", {n} conflicts"),
                            }
                        );
                    }
                    Ok(merge)
                })
            })
            .map_err(|e| proposal_secret(e, name, &branch))?;
        match outcome {
            None => Err(no_proposal(name, &branch)),
            Some(Integrated::Merged { commit, value }) => {
                let mut out = format!(
                    "已接受 (accepted) {branch} → {name}: merge commit {} ({} commit(s), {} memories); branch deleted",
                    commit.short, value.commits, value.memories
                );
                for c in &value.memory_conflicts {
                    out.push_str(&format!(
                        "\n- memory conflict: [{}] [{}] {} (both versions kept)",
                        c.category, c.ts, c.base_summary
                    ));
                }
                for c in &value.file_conflicts {
                    out.push_str(&format!("\n- file conflict: {}: {}", c.path, c.resolution));
                }
                Ok(out)
            }
            Some(Integrated::UpToDate) => {
                Ok(format!("{branch} 已在 {name} 中 (already merged): nothing to merge; branch deleted"))
            }
            Some(Integrated::FastForward { to, .. }) => {
                Ok(format!("已接受 (accepted) {branch} → {name} at {}; branch deleted", to.short))
            }
            Some(Integrated::Unresolvable { reason, .. }) => Err(EngramError::Invalid {
                field: "branch",
                reason: format!(
                    "{branch} cannot be merged into {name}: {reason}; the branch is kept (merge it by hand with git)"
                ),
            }),
        }
    }

    /// `engram review reject` / `review_proposal(action: reject)`: deletes the proposal;
    /// the pack's branch is untouched.
    pub fn reject_proposal(&self, name: &str, branch: &str) -> Result<String> {
        let branch = ProposalBranch::parse(branch).map_err(bad_branch)?;
        let (dir, repo) = self.review_repo(name)?;
        refuse_self_review(&repo, name)?;
        if self.with_repo(&dir, |repo| Ok(repo.reject_proposal(&branch)?))? {
            Ok(format!("已拒绝 (rejected) {branch}: branch deleted; {name} is unchanged"))
        } else {
            Err(no_proposal(name, &branch))
        }
    }

    /// The commit a proposing caller's reads of the pack at `dir` see instead of the working
    /// tree (its proposal branch's tip, brought up to date with the pack's branch first), if
    /// any. Costs nothing outside a proposing call.
    pub(crate) fn proposal_read_target(&self, dir: &std::path::Path) -> Result<Option<String>> {
        if !self.proposes_at(dir) || !PackRepo::is_repository(dir) {
            return Ok(None);
        }
        Ok(self.with_existing_repo(dir, |repo| Ok(repo.read_target()?))?.flatten())
    }

    /// Whether this call proposes on the pack at `dir` (`serve --propose`, or the pack's
    /// setting), so its reads may have to look at its proposal branch instead of the working
    /// tree. Takes no lock: other calls' reads never wait for it.
    pub(crate) fn proposes_at(&self, dir: &std::path::Path) -> bool {
        let Some(p) = crate::store::proposer() else { return false };
        if p.always {
            return true;
        }
        let mut known = self.proposing_packs.lock().unwrap_or_else(|e| e.into_inner());
        known.entry(dir.to_owned()).or_default().get_at(dir)
    }

    /// Before a proposing caller reads or writes the pack: brings the pack's branch into its
    /// proposal branch when the branch moved on ([`PackRepo::update_proposal`], one merge
    /// commit on the proposal branch: what accepting it now would give, by sync's
    /// memory-aware merge), so it sees the pack as it is now plus its own proposals. Nothing
    /// outside a proposing call, or when the proposal is up to date. A proposal that cannot
    /// be brought up to date (a symbolic link changed on both sides, a full or read-only
    /// disk) is read and written as it is, and the server's log says why: reads keep working.
    pub(crate) fn update_own_proposal(&self, repo: &PackRepo) -> Result<()> {
        if crate::store::proposer().is_none() {
            return Ok(());
        }
        let caller = Caller { tool: "review".into(), client: Some("engram-serve".into()) };
        let outcome = repo.update_proposal(|view, branch| {
            let label = branch.to_string();
            let cx = MergeContext { host: branch.name(), remote: &label, now: self.now(), caller: &caller };
            let mut merge = resolve(view, &cx)?;
            if let crate::store::Integration::Merge { message, value, .. } = &mut merge {
                message.subject = format!(
                    "review: bring the pack's branch into {branch} ({} memories{})",
                    value.memories,
                    match value.memory_conflicts.len() + value.file_conflicts.len() {
                        0 => String::new(),
                        n => format!(", {n} conflicts"),
                    }
                );
            }
            Ok::<_, EngramError>(merge)
        });
        let reason = match outcome {
            Ok(Some(Integrated::Unresolvable { reason, .. })) => reason,
            Ok(_) => return Ok(()),
            Err(e) => e.to_string(),
        };
        eprintln!(
            "engram: {}: the pack's branch was not merged into {}: {reason}; the proposal is read as it is",
            repo.dir().display(),
            repo.proposal_target().map(|b| b.to_string()).unwrap_or_default()
        );
        Ok(())
    }
}

/// The refusal of an accept whose proposal adds what looks like a secret, in review's
/// words: the store's guard speaks of commits fetched from a remote and `engram sync`,
/// which is not what happened (the accept may also have committed hand edits first).
fn proposal_secret(e: EngramError, name: &str, branch: &ProposalBranch) -> EngramError {
    let EngramError::Secret(crate::store::StoreError::Secret {
        findings,
        origin: crate::store::SecretSource::Remote,
    }) = &e
    else {
        return e;
    };
    let listed: String = findings.iter().take(10).map(|f| format!("\n- {f}")).collect();
    EngramError::Invalid {
        field: "branch",
        reason: format!(
            "拒绝接受 (refused): the commits of {branch} add what looks like a secret; nothing of the proposal was merged into {name} (hand edits in its working tree, if any, were committed first as an `edit:` commit):{listed}\nReject the proposal (`engram review reject {name} {branch}`), or have its author remove the secret from the branch; secrets must never enter the pack's git history."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_added_and_removed_count_duplicates() {
        let side = |lines: &[&str]| MemorySide {
            index: lines.iter().map(|s| (*s).to_owned()).collect(),
            ..MemorySide::default()
        };
        let (added, removed) = entry_changes(&side(&["a", "b", "b"]), &side(&["b", "c", "a", "c"]));
        assert_eq!(added, vec!["c", "c"]);
        assert_eq!(removed, vec!["b"]);
    }
}
