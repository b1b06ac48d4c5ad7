//! The benchmark floors (included by path from `benches/core.rs` and
//! `examples/floor.rs`): a bare git2 commit that changes one file, with
//! nothing of engram around it, and the git work of a capture done the plain
//! libgit2 way (three files changed, the working tree and the index updated).
//! The benchmarks time them on a copy of a pack's repository so that engram's
//! own cost can be stated as a ratio to them.

use std::path::Path;
use std::time::{Duration, Instant};

use git2::{FileMode, Repository, Signature, build::TreeUpdateBuilder};

use anyhow::{Context, Result};

/// Makes `n` commits on HEAD of the repository at `dir`, each appending one line to
/// `path` (read from the parent tree), and returns the time of each.
pub fn time_bare_commits(dir: &Path, path: &str, n: usize) -> Result<Vec<Duration>> {
    time_commits(dir, &[path], n, false)
}

/// Makes `n` commits on HEAD of the non-bare repository at `dir` doing the git work of a
/// capture the plain libgit2 way, with nothing of engram around it: each appends one line to
/// every file of `paths`, commits (moving the branch, with its reflog), then writes the files
/// into the working tree and the git index. Returns the time of each.
pub fn time_git_work(dir: &Path, paths: &[&str], n: usize) -> Result<Vec<Duration>> {
    time_commits(dir, paths, n, true)
}

/// `n` commits each appending one line to every file of `paths` (read from the parent tree);
/// with `working_tree`, the files are then written and staged with `Index::add_path`.
fn time_commits(dir: &Path, paths: &[&str], n: usize, working_tree: bool) -> Result<Vec<Duration>> {
    let repo = Repository::open(dir).with_context(|| format!("opening {}", dir.display()))?;
    let sig = Signature::now("floor", "floor@localhost")?;
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let start = Instant::now();
        let head = repo.head().and_then(|h| h.peel_to_commit()).context("reading HEAD")?;
        let tree = head.tree().context("reading the tree")?;
        let mut update = TreeUpdateBuilder::new();
        let mut files = Vec::with_capacity(paths.len());
        for path in paths {
            let mut content = match tree.get_path(Path::new(path)) {
                Ok(entry) => repo.find_blob(entry.id()).map(|b| b.content().to_vec()).unwrap_or_default(),
                Err(_) => Vec::new(),
            };
            content.extend_from_slice(format!("floor line {i}\n").as_bytes());
            let blob = repo.blob(&content).context("writing a blob")?;
            update.upsert(*path, blob, FileMode::Blob);
            files.push((*path, content));
        }
        let new_tree = update.create_updated(&repo, &tree).context("building the tree")?;
        let new_tree = repo.find_tree(new_tree).context("reading the tree")?;
        repo.commit(Some("HEAD"), &sig, &sig, "floor", &new_tree, &[&head]).context("committing")?;
        if working_tree {
            let mut index = repo.index().context("reading the index")?;
            for (path, content) in &files {
                std::fs::write(dir.join(path), content).context("writing a file")?;
                index.add_path(Path::new(path)).context("updating the index")?;
            }
            index.write().context("writing the index")?;
        }
        times.push(start.elapsed());
    }
    Ok(times)
}
