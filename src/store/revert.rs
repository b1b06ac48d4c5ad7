//! Reading a pack as it was, and undoing a commit with a 3-way merge.
//!
//! A revert of commit `C` (parent `P`) on top of `HEAD`, file by file:
//! - a path `HEAD` still has as `C` left it goes back to its `P` version, byte
//!   for byte (so reverting the newest commit restores the earlier files exactly);
//! - a path `HEAD` already has as `P` had it stays;
//! - a path changed again later is merged with git's 3-way merge (base `C`,
//!   ours `HEAD`, theirs `P`); the caller may claim such paths instead (the
//!   memory files, which are merged entry by entry and whose indexes are
//!   regenerated), and a merge that conflicts names the later commit.

use std::collections::BTreeMap;

use chrono::{NaiveDate, NaiveDateTime, TimeZone as _, Utc};
use git2::Oid;

use super::beside_git::reread;
use super::{Changes, CommitInfo, PackRepo, Result, Snapshot, StoreError, git_err};

/// A path whose revert conflicts with a later commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevertConflict {
    /// Path in the pack.
    pub path: String,
    /// Short id of the later commit that changed it.
    pub later: String,
    /// Subject of that commit.
    pub later_subject: String,
}

/// What reverting a commit on top of a snapshot takes.
#[derive(Debug, Clone, Default)]
pub struct RevertPlan {
    /// Full id of the commit being reverted.
    pub commit: String,
    /// Its subject.
    pub subject: String,
    /// Changes for the paths the store could revert itself.
    pub changes: Changes,
    /// Paths the caller claimed (changed later): it must revert these itself.
    pub claimed: Vec<String>,
    /// Paths whose merge conflicts.
    pub conflicts: Vec<RevertConflict>,
}

/// Parses a date (`YYYY-MM-DD`, UTC: its last second with `end_of_day`, else its first) or
/// a time (RFC 3339, or `YYYY-MM-DD HH:MM[:SS]`, UTC) into seconds since the epoch.
fn parse_time(s: &str, end_of_day: bool) -> Option<i64> {
    let s = s.trim();
    if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        let t = if end_of_day { d.and_hms_opt(23, 59, 59) } else { d.and_hms_opt(0, 0, 0) };
        return t.map(|t| Utc.from_utc_datetime(&t).timestamp());
    }
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Some(t.timestamp());
    }
    for f in ["%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(s, f) {
            return Some(Utc.from_utc_datetime(&t).timestamp());
        }
    }
    None
}

/// Parses a date or time for `since`-style filters (seconds since the epoch, start of a date).
pub fn parse_since(s: &str) -> Option<i64> {
    parse_time(s, false)
}

impl PackRepo {
    /// Resolves a commit id (full or abbreviated, `HEAD`, `HEAD~2`) or a date
    /// (`YYYY-MM-DD`: the newest commit of that day or before; RFC 3339 times too).
    pub fn resolve_commit(&self, rev: &str) -> Result<String> {
        let unknown = || StoreError::UnknownCommit { rev: rev.to_owned(), dir: self.dir.clone() };
        let r = rev.trim();
        if r.is_empty() {
            return Err(unknown());
        }
        if let Some(when) = parse_time(r, true) {
            // The branch as it was then: its first-parent line, like `search_memory`'s
            // `as_of`. (A time-sorted walk is wrong here: commits made in the same
            // second tie, and a parent may then come before its child.)
            return self.commit_before(when.saturating_add(1))?.ok_or_else(unknown);
        }
        self.resolve_revision(r)?.ok_or_else(unknown)
    }

    /// A snapshot of the pack at a commit (see [`PackRepo::resolve_commit`]).
    pub fn snapshot_at(&self, rev: &str) -> Result<Snapshot<'_>> {
        let id = Oid::from_str(&self.resolve_commit(rev)?);
        self.snapshot_of(Some(id.map_err(|e| git_err("reading a commit", &self.dir, e))?))
    }

    /// One commit's details, with the files it changed when `with_files`.
    pub fn commit_info(&self, rev: &str, with_files: bool) -> Result<CommitInfo> {
        let commit = self.commit_by_id(&self.resolve_commit(rev)?)?;
        self.info_of(&commit, with_files)
    }
}

impl<'r> Snapshot<'r> {
    /// The same snapshot with `changes` applied on top (reads see them).
    pub fn overlaid(&self, changes: &Changes) -> Snapshot<'r> {
        let mut overlay = self.overlay.clone();
        overlay.extend(changes.files.clone());
        Snapshot { repo: self.repo, tree: self.tree, head: self.head, dir: self.dir, overlay }
    }

    pub(super) fn overlay_listing(&self, dir: &str, names: &mut Vec<String>) {
        let prefix = if dir.is_empty() { String::new() } else { format!("{}/", dir.trim_end_matches('/')) };
        for (path, content) in &self.overlay {
            let Some(rest) = path.strip_prefix(&prefix) else { continue };
            let (name, is_file) = match rest.split_once('/') {
                Some((d, _)) => (d, false),
                None => (rest, true),
            };
            let listed = names.iter().any(|n| n == name);
            match content {
                Some(_) if !listed => names.push(name.to_owned()),
                None if is_file && listed => names.retain(|n| n != name),
                _ => {}
            }
        }
    }

    fn commit_of(&self, rev: &str) -> Result<git2::Commit<'r>> {
        let unknown = || StoreError::UnknownCommit { rev: rev.to_owned(), dir: self.dir.to_owned() };
        let obj = reread(|| self.repo.revparse_single(rev.trim())).map_err(|e| {
            if super::tree::names_nothing(&e) {
                unknown()
            } else {
                git_err("resolving a revision", self.dir, e)
            }
        })?;
        obj.peel_to_commit().map_err(|_| unknown())
    }

    /// A snapshot of another commit of the same repository (no overlay).
    pub fn at(&self, rev: &str) -> Result<Snapshot<'r>> {
        let commit = self.commit_of(rev)?;
        Ok(self.other(Some(commit.tree_id()), Some(commit.id())))
    }

    /// A snapshot of the first parent of `rev` (an empty snapshot for a root commit).
    pub fn parent_of(&self, rev: &str) -> Result<Snapshot<'r>> {
        let parent = self.commit_of(rev)?.parent(0).ok();
        Ok(self.other(parent.as_ref().map(|p| p.tree_id()), parent.map(|p| p.id())))
    }

    /// A snapshot of another tree of the same repository (no overlay).
    fn other(&self, tree: Option<Oid>, head: Option<Oid>) -> Snapshot<'r> {
        Snapshot { repo: self.repo, tree, head, dir: self.dir, overlay: BTreeMap::new() }
    }

    /// Paths a commit changed relative to its first parent.
    pub fn changed_paths(&self, rev: &str) -> Result<Vec<String>> {
        let commit = self.commit_of(rev)?;
        let files = super::history::changed_files(self.repo, self.dir, &commit, false, None, &|_| true)?;
        Ok(files.into_iter().map(|f| f.path).collect())
    }

    /// The first commit after `since` on the first-parent line up to this snapshot's commit
    /// (oldest first) for which `pred` holds on its tree: (id, subject).
    pub fn first_commit_after(
        &self,
        since: &str,
        mut pred: impl FnMut(&Snapshot<'r>) -> Result<bool>,
    ) -> Result<Option<(String, String)>> {
        let stop = self.commit_of(since)?.id();
        let mut after = Vec::new();
        let mut cur = self.head.filter(|id| *id != stop);
        while let Some(id) = cur {
            let c =
                reread(|| self.repo.find_commit(id)).map_err(|e| git_err("reading a commit", self.dir, e))?;
            cur = c.parent_id(0).ok().filter(|id| *id != stop);
            after.push(c);
        }
        for c in after.iter().rev() {
            if pred(&self.other(Some(c.tree_id()), Some(c.id())))? {
                return Ok(Some((c.id().to_string(), subject_of(c))));
            }
        }
        Ok(None)
    }

    /// Plans the revert of `rev` on top of this snapshot. Paths for which
    /// `claim` returns true and that changed after `rev` are left to the caller.
    pub fn plan_revert(&self, rev: &str, claim: &dyn Fn(&str) -> bool) -> Result<RevertPlan> {
        let commit = self.commit_of(rev)?;
        let id = commit.id().to_string();
        let after = self.at(&id)?;
        let before = self.parent_of(&id)?;
        // A revert restores what a commit changed, memory files included.
        let mut plan = RevertPlan {
            commit: id.clone(),
            subject: subject_of(&commit),
            changes: Changes::for_memory(),
            ..RevertPlan::default()
        };
        for path in self.changed_paths(&id)? {
            let theirs = before.read(&path)?;
            let base = after.read(&path)?;
            let ours = self.read(&path)?;
            if ours == base {
                match theirs {
                    Some(t) => plan.changes.put(path, t),
                    None => plan.changes.remove(path),
                }
                continue;
            }
            if ours == theirs {
                continue;
            }
            if claim(&path) {
                plan.claimed.push(path);
                continue;
            }
            let merged = match (&base, &ours, &theirs) {
                (Some(b), Some(o), Some(t)) => super::merge::merge_file(&path, [b, o, t], false)
                    .map_err(|e| git_err("merging a file", self.dir, e))?,
                _ => None,
            };
            match merged {
                Some(m) => plan.changes.put(path, m),
                None => {
                    let base_id = after.blob_entry(&path).ok().flatten();
                    let later =
                        self.first_commit_after(&id, |s| Ok(s.blob_entry(&path).ok().flatten() != base_id))?;
                    let (later, later_subject) =
                        later.unwrap_or_else(|| ("working tree".into(), String::new()));
                    plan.conflicts.push(RevertConflict {
                        path,
                        later: later.chars().take(7).collect(),
                        later_subject,
                    });
                }
            }
        }
        Ok(plan)
    }
}

fn subject_of(c: &git2::Commit<'_>) -> String {
    String::from_utf8_lossy(c.message_bytes()).lines().next().unwrap_or("").to_owned()
}

#[cfg(test)]
mod tests {
    use super::super::{Changes, CommitMessage, Edit, PackRepo, StoreError, StoreOptions};

    fn write(repo: &PackRepo, text: &str) -> String {
        repo.write(|_| {
            let mut changes = Changes::default();
            changes.put("role.md", format!("{text}\n"));
            // Every commit in the same second (2026-11-22T10:00:00Z): a tie on time.
            let message = CommitMessage::new(text).at(1_795_341_600);
            Ok::<_, StoreError>(Edit::Commit { changes, message, value: () })
        })
        .expect("write");
        repo.resolve_commit("HEAD").expect("HEAD")
    }

    #[test]
    fn a_date_resolves_to_the_newest_commit_even_when_commits_share_a_second() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let repo = PackRepo::open_or_adopt(tmp.path(), StoreOptions::default()).expect("open");
        let mut last = String::new();
        for i in 0..12 {
            last = write(&repo, &format!("version {i}"));
        }
        assert_eq!(repo.resolve_commit("2026-11-22").expect("that day"), last);
        let snap = repo.snapshot_at("2026-11-22").expect("snapshot");
        assert_eq!(snap.read_text("role.md").expect("read").as_deref(), Some("version 11\n"));
        assert!(repo.resolve_commit("2001-01-01").is_err(), "no commit that early");
    }
}
