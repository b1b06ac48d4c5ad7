//! `engram purge`: rewriting a pack's history so that something that got in
//! (a file, or a piece of text such as a leaked key) is gone from every commit.
//!
//! Every commit reachable from a local branch is rebuilt with the matching
//! files left out (or the matching text replaced by `[REDACTED]`, in files and
//! commit messages); unchanged commits keep their ids. The branches move to
//! the rewritten commits, reflogs are deleted, and the objects are repacked so
//! the old ones are gone from the pack's `.git`. Remote-tracking branches are
//! left alone: the report names the remotes whose copy still holds the old
//! history, since only their owner (or a force-push) can remove it there.

use std::collections::{BTreeSet, HashMap, HashSet};

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
    fn branch_tips(&self) -> Result<Vec<(String, Oid)>> {
        let refs = self
            .repo
            .references_glob("refs/heads/*")
            .map_err(|e| git_err("listing branches", &self.dir, e))?;
        Ok(refs.flatten().filter_map(|r| Some((r.name().ok()?.to_owned(), r.target()?))).collect())
    }

    fn commits_oldest_first(&self, tips: &[(String, Oid)]) -> Result<Vec<Oid>> {
        let mut walk = self.repo.revwalk().map_err(|e| git_err("walking history", &self.dir, e))?;
        walk.set_sorting(Sort::TOPOLOGICAL | Sort::REVERSE)
            .map_err(|e| git_err("walking history", &self.dir, e))?;
        for (_, tip) in tips {
            walk.push(*tip).map_err(|e| git_err("walking history", &self.dir, e))?;
        }
        walk.map(|r| r.map_err(|e| git_err("walking history", &self.dir, e))).collect()
    }

    /// Lists what a purge would remove, without changing anything.
    pub fn purge_preview(&self, target: &PurgeTarget) -> Result<PurgeReport> {
        let tips = self.branch_tips()?;
        let mut report = PurgeReport::default();
        let mut blob_hits: HashMap<Oid, bool> = HashMap::new();
        for id in self.commits_oldest_first(&tips)? {
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
        let dirty: Vec<String> =
            self.dirty_paths()?.into_iter().filter(|p| !target.matches_path(p)).collect();
        if !dirty.is_empty() {
            return Err(StoreError::Io {
                step: "purge with uncommitted edits in",
                path: self.dir.join(&dirty[0]),
                source: std::io::Error::other("commit or discard the hand edits first"),
            });
        }
        let mut report = self.purge_preview(target)?;
        if report.commits == 0 {
            return Ok(report);
        }
        let tips = self.branch_tips()?;
        let mut map: HashMap<Oid, Oid> = HashMap::new();
        let mut trees: HashMap<Oid, Option<Oid>> = HashMap::new();
        let mut changed: HashSet<Oid> = HashSet::new();
        for id in self.commits_oldest_first(&tips)? {
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
            let message = String::from_utf8_lossy(commit.message_bytes()).into_owned();
            let new_message = match target.text() {
                Some(t) => message.replace(t, REDACTED),
                None => message.clone(),
            };
            let same_parents = parents.iter().eq(commit.parent_ids().collect::<Vec<_>>().iter());
            if new_tree == tree.id() && same_parents && new_message == message {
                map.insert(id, id);
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
            changed.insert(id);
        }
        for (name, tip) in &tips {
            if let Some(new) = map.get(tip).filter(|n| *n != tip) {
                self.repo
                    .reference_matching(name, *new, true, *tip, "engram purge")
                    .map_err(|e| git_err("moving a branch", &self.dir, e))?;
            }
        }
        self.expire_reflog_entries(&changed)?;
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
        report.remotes_holding = self.remotes_holding(&changed)?;
        super::maintenance::prune_unreachable(self)?;
        Ok(report)
    }

    /// Removes the reflog entries (of HEAD and of every ref) that name one of the `rewritten`
    /// commits, and only those: the stash, other branches' and worktrees' entries stay.
    fn expire_reflog_entries(&self, rewritten: &HashSet<Oid>) -> Result<()> {
        let git = |e| git_err("expiring reflog entries", &self.dir, e);
        let mut names = vec!["HEAD".to_owned()];
        for reference in self.repo.references().map_err(git)?.flatten() {
            if let Ok(name) = reference.name() {
                names.push(name.to_owned());
            }
        }
        for name in names {
            let Ok(mut log) = self.repo.reflog(&name) else { continue };
            let names_rewritten: Vec<usize> = log
                .iter()
                .enumerate()
                .filter(|(_, e)| rewritten.contains(&e.id_new()) || rewritten.contains(&e.id_old()))
                .map(|(i, _)| i)
                .collect();
            if names_rewritten.is_empty() {
                continue;
            }
            for i in names_rewritten.into_iter().rev() {
                log.remove(i, false).map_err(git)?;
            }
            log.write().map_err(git)?;
        }
        Ok(())
    }

    fn remotes_holding(&self, changed: &HashSet<Oid>) -> Result<Vec<(String, String)>> {
        let mut out = Vec::new();
        let remotes = self.repo.remotes().map_err(|e| git_err("listing remotes", &self.dir, e))?;
        for name in remotes.iter().flatten().flatten() {
            let url = self
                .repo
                .find_remote(name)
                .ok()
                .and_then(|r| r.url().ok().map(str::to_owned))
                .unwrap_or_default();
            let glob = format!("refs/remotes/{name}/*");
            let mut holds = false;
            if let Ok(refs) = self.repo.references_glob(&glob) {
                for tip in refs.flatten().filter_map(|r| r.target()) {
                    let mut walk =
                        self.repo.revwalk().map_err(|e| git_err("walking history", &self.dir, e))?;
                    walk.push(tip).map_err(|e| git_err("walking history", &self.dir, e))?;
                    if walk.flatten().any(|c| changed.contains(&c)) {
                        holds = true;
                        break;
                    }
                }
            }
            // A remote never fetched may still hold it (it was pushed): say so too.
            if holds || self.repo.references_glob(&glob).map(|r| r.count() == 0).unwrap_or(true) {
                out.push((name.to_owned(), url));
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
        let mut count = 0;
        for entry in tree.iter() {
            let name = entry.name().unwrap_or("");
            let path = format!("{prefix}{name}");
            if target.matches_path(&path) {
                continue;
            }
            let id = match entry.kind() {
                Some(ObjectType::Tree) => {
                    let sub = self
                        .repo
                        .find_tree(entry.id())
                        .map_err(|e| git_err("reading a tree", &self.dir, e))?;
                    match self.rewrite_tree(&sub, &format!("{path}/"), target, memo)? {
                        Some(id) => id,
                        None => continue,
                    }
                }
                Some(ObjectType::Blob) => match target.text() {
                    Some(t) => {
                        let blob = self
                            .repo
                            .find_blob(entry.id())
                            .map_err(|e| git_err("reading a blob", &self.dir, e))?;
                        if contains(blob.content(), t.as_bytes()) {
                            let text = String::from_utf8_lossy(blob.content()).replace(t, REDACTED);
                            self.repo
                                .blob(text.as_bytes())
                                .map_err(|e| git_err("writing a blob", &self.dir, e))?
                        } else {
                            entry.id()
                        }
                    }
                    None => entry.id(),
                },
                _ => entry.id(),
            };
            builder
                .insert(name, id, entry.filemode())
                .map_err(|e| git_err("writing a tree", &self.dir, e))?;
            count += 1;
        }
        let out = if count == 0 {
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
