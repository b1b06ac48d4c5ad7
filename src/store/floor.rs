//! The benchmark floor: a bare git2 commit that changes one file, with
//! nothing of engram around it. `engram bench` times it on a copy of a pack's
//! repository so that engram's own cost can be stated as a ratio to it.

use std::path::Path;
use std::time::{Duration, Instant};

use git2::{FileMode, Repository, Signature, build::TreeUpdateBuilder};

use super::{Result, git_err};

/// Makes `n` commits on HEAD of the repository at `dir`, each appending one line to
/// `path` (read from the parent tree), and returns the time of each.
pub fn time_bare_commits(dir: &Path, path: &str, n: usize) -> Result<Vec<Duration>> {
    let repo = Repository::open(dir).map_err(|e| git_err("opening", dir, e))?;
    let sig = Signature::now("floor", "floor@localhost").map_err(|e| git_err("signature", dir, e))?;
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let start = Instant::now();
        let head =
            repo.head().and_then(|h| h.peel_to_commit()).map_err(|e| git_err("reading HEAD", dir, e))?;
        let tree = head.tree().map_err(|e| git_err("reading the tree", dir, e))?;
        let mut content = match tree.get_path(Path::new(path)) {
            Ok(entry) => repo.find_blob(entry.id()).map(|b| b.content().to_vec()).unwrap_or_default(),
            Err(_) => Vec::new(),
        };
        content.extend_from_slice(format!("floor line {i}\n").as_bytes());
        let blob = repo.blob(&content).map_err(|e| git_err("writing a blob", dir, e))?;
        let mut update = TreeUpdateBuilder::new();
        update.upsert(path, blob, FileMode::Blob);
        let new_tree =
            update.create_updated(&repo, &tree).map_err(|e| git_err("building the tree", dir, e))?;
        let new_tree = repo.find_tree(new_tree).map_err(|e| git_err("reading the tree", dir, e))?;
        repo.commit(Some("HEAD"), &sig, &sig, "floor", &new_tree, &[&head])
            .map_err(|e| git_err("committing", dir, e))?;
        times.push(start.elapsed());
    }
    Ok(times)
}
