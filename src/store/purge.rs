//! `engram purge`: rewriting a pack's history so that something that got in
//! (a file, or a piece of text such as a leaked key) is gone from every commit.
//!
//! Every commit reachable from a local branch is rebuilt with the matching
//! files left out (or the matching text replaced by `[REDACTED]`, in files and
//! commit messages); unchanged commits keep their ids. The branches move to
//! the rewritten commits, the reflog entries naming a rewritten commit are
//! expired, and what is then unreachable is pruned. Remote-tracking branches are
//! left alone: the report names the remotes whose copy still holds the old
//! history, since only their owner (or a force-push) can remove it there.

use std::collections::{BTreeSet, HashMap};

use git2::{ObjectType, Oid, ResetType, Sort, TreeWalkMode, TreeWalkResult};

use super::{PackRepo, Result, StoreError, git_err};

/// The replacement written where purged text was.
pub const REDACTED: &str = "[REDACTED]";

/// What to remove from history.
#[derive(Debug, Clone)]
pub enum PurgeTarget {
    /// A file, a directory (everything under it), or a glob (`*` within a path part, `**` across parts).
    Path(String),
    /// A piece of text, replaced by `[REDACTED]` in every file and commit message.
    Text(String),
}

impl PurgeTarget {
    fn matches_path(&self, path: &str) -> bool {
        match self {
            Self::Path(p) => {
                let p = p.trim_matches('/');
                if p.contains('*') {
                    crate::pack_path::glob_match(p, path)
                } else {
                    path == p || path.starts_with(&format!("{p}/"))
                }
            }
            Self::Text(_) => false,
        }
    }

    fn text(&self) -> Option<&str> {
        match self {
            Self::Text(t) if !t.is_empty() => Some(t),
            _ => None,
        }
    }
}

/// What a purge found or did.
#[derive(Debug, Clone, Default)]
pub struct PurgeReport {
    /// Commits whose content changed (rewritten, or to be rewritten).
    pub commits: usize,
    /// Paths that matched (files removed, or files whose text was redacted).
    pub paths: BTreeSet<String>,
    /// Remotes whose tracking branches still hold the old history: (name, url).
    pub remotes_holding: Vec<(String, String)>,
    /// The branch tip after the rewrite (when one was made).
    pub new_head: Option<String>,
}

impl PackRepo {
    /// The commits of every local branch, parents before children.
    fn commits_oldest_first(&self) -> Result<Vec<Oid>> {
        let git = |e| git_err("walking history", &self.dir, e);
        let mut walk = self.repo.revwalk().map_err(git)?;
        walk.set_sorting(Sort::TOPOLOGICAL | Sort::REVERSE).map_err(git)?;
        walk.push_glob("refs/heads/*").map_err(git)?;
        walk.map(|r| r.map_err(git)).collect()
    }

    /// Lists what a purge would remove, without changing anything.
    pub fn purge_preview(&self, target: &PurgeTarget) -> Result<PurgeReport> {
        let mut report = PurgeReport::default();
        let mut blob_hits: HashMap<Oid, bool> = HashMap::new();
        for id in self.commits_oldest_first()? {
            let commit = self.repo.find_commit(id).map_err(|e| git_err("reading a commit", &self.dir, e))?;
            let tree = commit.tree().map_err(|e| git_err("reading a tree", &self.dir, e))?;
            let mut hit =
                target.text().is_some_and(|t| String::from_utf8_lossy(commit.message_bytes()).contains(t));
            tree.walk(TreeWalkMode::PreOrder, |root, entry| {
                let path = format!("{root}{}", entry.name().unwrap_or(""));
                if entry.kind() == Some(ObjectType::Blob) {
                    let matched = target.matches_path(&path)
                        || target.text().is_some_and(|t| {
                            *blob_hits.entry(entry.id()).or_insert_with(|| {
                                self.repo
                                    .find_blob(entry.id())
                                    .is_ok_and(|b| contains(b.content(), t.as_bytes()))
                            })
                        });
                    if matched {
                        hit = true;
                        report.paths.insert(path);
                    }
                }
                TreeWalkResult::Ok
            })
            .map_err(|e| git_err("reading a tree", &self.dir, e))?;
            if hit {
                report.commits += 1;
            }
        }
        Ok(report)
    }

    /// Rewrites history without `target`. Refuses when the working tree has
    /// uncommitted edits other than the purged files (commit or discard them first).
    pub fn purge(&self, target: &PurgeTarget) -> Result<PurgeReport> {
        let _lock = self.lock()?;
        if let Some(dirty) = self.dirty_paths()?.into_iter().find(|p| !target.matches_path(p)) {
            return Err(StoreError::Io {
                step: "purge with uncommitted edits in",
                path: self.dir.join(dirty),
                source: std::io::Error::other("commit or discard the hand edits first"),
            });
        }
        let mut report = self.purge_preview(target)?;
        if report.commits == 0 {
            return Ok(report);
        }
        let branches = self
            .repo
            .references_glob("refs/heads/*")
            .map_err(|e| git_err("listing branches", &self.dir, e))?;
        let tips: Vec<(String, Oid)> =
            branches.flatten().filter_map(|r| Some((r.name().ok()?.to_owned(), r.target()?))).collect();
        // The rewritten commits, old id → new id.
        let mut map: HashMap<Oid, Oid> = HashMap::new();
        let mut trees: HashMap<Oid, Option<Oid>> = HashMap::new();
        for id in self.commits_oldest_first()? {
            let commit = self.repo.find_commit(id).map_err(|e| git_err("reading a commit", &self.dir, e))?;
            let tree = commit.tree().map_err(|e| git_err("reading a tree", &self.dir, e))?;
            let new_tree = self.rewrite_tree(&tree, "", target, &mut trees)?;
            let new_tree = match new_tree {
                Some(t) => t,
                None => self
                    .repo
                    .treebuilder(None)
                    .and_then(|b| b.write())
                    .map_err(|e| git_err("writing a tree", &self.dir, e))?,
            };
            let parents: Vec<Oid> = commit.parent_ids().map(|p| *map.get(&p).unwrap_or(&p)).collect();
            let message = String::from_utf8_lossy(commit.message_bytes());
            let new_message = target.text().map_or(message.to_string(), |t| message.replace(t, REDACTED));
            if new_tree == tree.id()
                && parents.iter().copied().eq(commit.parent_ids())
                && new_message == message
            {
                continue;
            }
            let new_tree =
                self.repo.find_tree(new_tree).map_err(|e| git_err("reading a tree", &self.dir, e))?;
            let parent_commits = parents
                .iter()
                .map(|p| self.repo.find_commit(*p))
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|e| git_err("reading a commit", &self.dir, e))?;
            let refs: Vec<&git2::Commit<'_>> = parent_commits.iter().collect();
            let new_id = self
                .repo
                .commit(None, &commit.author(), &commit.committer(), &new_message, &new_tree, &refs)
                .map_err(|e| git_err("writing a commit", &self.dir, e))?;
            map.insert(id, new_id);
        }
        for (name, tip) in &tips {
            if let Some(new) = map.get(tip) {
                self.repo
                    .reference_matching(name, *new, true, *tip, "engram purge")
                    .map_err(|e| git_err("moving a branch", &self.dir, e))?;
            }
        }
        self.expire_reflog_entries(&map)?;
        // The working tree and index follow the rewritten HEAD.
        let root =
            crate::pack_root::PackRoot::open(&self.dir).map_err(|e| super::io_err("open", &self.dir, e))?;
        for path in &report.paths {
            if target.matches_path(path)
                && let Ok(rel) = crate::pack_path::PackPath::parse(path)
            {
                // Best effort, as before: what cannot be removed stays for the person to see.
                let _ = root.remove_file(&rel);
            }
        }
        if let Some(head) = self.head_commit()? {
            self.repo
                .reset(head.as_object(), ResetType::Hard, None)
                .map_err(|e| git_err("updating the working tree", &self.dir, e))?;
            report.new_head = Some(head.id().to_string());
        }
        report.remotes_holding = self.remotes_holding(&map)?;
        super::maintenance::prune_unreachable(self)?;
        Ok(report)
    }

    /// Removes the reflog entries (of HEAD and of every ref) that name one of the `rewritten`
    /// commits, and only those: the stash, other branches' and worktrees' entries stay.
    fn expire_reflog_entries(&self, rewritten: &HashMap<Oid, Oid>) -> Result<()> {
        let git = |e| git_err("expiring reflog entries", &self.dir, e);
        let names_rewritten = |e: git2::ReflogEntry<'_>| {
            rewritten.contains_key(&e.id_new()) || rewritten.contains_key(&e.id_old())
        };
        let mut names = vec!["HEAD".to_owned()];
        names.extend(self.repo.references().map_err(git)?.names().flatten().map(str::to_owned));
        for name in names {
            let Ok(mut log) = self.repo.reflog(&name) else { continue };
            let before = log.len();
            for i in (0..before).rev() {
                if log.get(i).is_some_and(names_rewritten) {
                    log.remove(i, false).map_err(git)?;
                }
            }
            if log.len() < before {
                log.write().map_err(git)?;
            }
        }
        Ok(())
    }

    /// The remotes whose tracking branches reach a `rewritten` commit, or that were never
    /// fetched (they may hold it all the same: it was pushed): (name, url).
    fn remotes_holding(&self, rewritten: &HashMap<Oid, Oid>) -> Result<Vec<(String, String)>> {
        let git = |e| git_err("walking history", &self.dir, e);
        let mut out = Vec::new();
        for remote in self.remotes()? {
            let mut walk = self.repo.revwalk().map_err(git)?;
            walk.push_glob(&format!("refs/remotes/{}/*", remote.name)).map_err(git)?;
            let mut reached = walk.flatten().peekable();
            if reached.peek().is_none() || reached.any(|c| rewritten.contains_key(&c)) {
                out.push((remote.name, remote.url));
            }
        }
        Ok(out)
    }

    /// Rebuilds a tree without the target; `None` when nothing is left in it.
    fn rewrite_tree(
        &self,
        tree: &git2::Tree<'_>,
        prefix: &str,
        target: &PurgeTarget,
        memo: &mut HashMap<Oid, Option<Oid>>,
    ) -> Result<Option<Oid>> {
        if prefix.is_empty()
            && let Some(done) = memo.get(&tree.id())
        {
            return Ok(*done);
        }
        let mut builder = self.repo.treebuilder(None).map_err(|e| git_err("writing a tree", &self.dir, e))?;
        for entry in tree.iter() {
            let name = entry.name().unwrap_or("");
            let path = format!("{prefix}{name}");
            if target.matches_path(&path) {
                continue;
            }
            let id = match (entry.kind(), target.text()) {
                (Some(ObjectType::Tree), _) => {
                    let sub = self
                        .repo
                        .find_tree(entry.id())
                        .map_err(|e| git_err("reading a tree", &self.dir, e))?;
                    match self.rewrite_tree(&sub, &format!("{path}/"), target, memo)? {
                        Some(id) => id,
                        None => continue,
                    }
                }
                (Some(ObjectType::Blob), Some(t)) => {
                    let blob = self
                        .repo
                        .find_blob(entry.id())
                        .map_err(|e| git_err("reading a blob", &self.dir, e))?;
                    if !contains(blob.content(), t.as_bytes()) {
                        entry.id()
                    } else {
                        let text = String::from_utf8_lossy(blob.content()).replace(t, REDACTED);
                        self.repo
                            .blob(text.as_bytes())
                            .map_err(|e| git_err("writing a blob", &self.dir, e))?
                    }
                }
                _ => entry.id(),
            };
            builder
                .insert(name, id, entry.filemode())
                .map_err(|e| git_err("writing a tree", &self.dir, e))?;
        }
        let out = if builder.is_empty() {
            None
        } else {
            Some(builder.write().map_err(|e| git_err("writing a tree", &self.dir, e))?)
        };
        if prefix.is_empty() {
            memo.insert(tree.id(), out);
        }
        Ok(out)
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_globs_match() {
        let t = PurgeTarget::Path("knowledge/secret.md".into());
        assert!(t.matches_path("knowledge/secret.md"));
        assert!(!t.matches_path("knowledge/secret.md.bak"));
        let d = PurgeTarget::Path("knowledge/".into());
        assert!(d.matches_path("knowledge/a/b.md"));
        let g = PurgeTarget::Path("**/*.key".into());
        assert!(g.matches_path("a/b/c.key") && g.matches_path("c.key") && !g.matches_path("c.keys"));
        let g = PurgeTarget::Path("memory/*.md".into());
        assert!(g.matches_path("memory/x.md") && !g.matches_path("memory/_log/x.md"));
    }
}
