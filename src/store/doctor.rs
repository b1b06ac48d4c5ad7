//! `engram doctor`'s store-side checks: what is wrong with a pack's repository
//! and how to repair it. Read-only: nothing here changes the pack.
//!
//! Checked, in order (later checks are skipped when an earlier one makes them
//! meaningless): `.git/HEAD` exists (recreated from the branch there is when
//! not); the repository opens; HEAD and the branch resolve to a commit; every
//! commit, tree and blob reachable from HEAD can be read; the git index can be
//! read; the directories a write creates files in are writable; no tracked
//! file was replaced by a directory (or anything else that is not a file) and
//! no tracked directory by a symbolic link; no symbolic link or submodule is
//! committed; an interrupted write is pending;
//! hand edits are waiting to be committed.

use std::fs;
use std::path::Path;

use git2::{ErrorCode, ObjectType, Oid, Repository, Status, StatusOptions};

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// The pack's tools fail until it is repaired.
    Error,
    /// Works, but something needs attention.
    Warning,
    /// For information; engram handles it by itself.
    Info,
}

impl Severity {
    /// `error`, `warning`, `info`.
    pub fn label(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warning => "warning",
            Self::Info => "info",
        }
    }
}

/// One problem found, with the way to repair it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// How bad it is.
    pub severity: Severity,
    /// What is wrong.
    pub problem: String,
    /// How to repair it (commands to run).
    pub repair: String,
}

fn finding(severity: Severity, problem: impl Into<String>, repair: impl Into<String>) -> Finding {
    Finding { severity, problem: problem.into(), repair: repair.into() }
}

/// Diagnoses the repository of a pack directory.
pub fn diagnose(dir: &Path) -> Vec<Finding> {
    // Writes trust objects they read (see `init_git`); a diagnosis re-hashes them.
    super::open::init_git();
    git2::opts::strict_hash_verification(true);
    let d = dir.display();
    let repo = match open(dir) {
        Ok(Some(repo)) => repo,
        Ok(None) => {
            return vec![finding(
                Severity::Info,
                "not a git repository yet",
                "nothing to do: the first write adopts the files as an `adopt:` commit",
            )];
        }
        Err(f) => return vec![f],
    };
    let head = match head_commit(&repo, dir) {
        Ok(head) => head,
        Err(f) => return vec![f],
    };
    if let Some(f) = head.and_then(|c| missing_object(&repo, dir, c.id())) {
        return vec![f];
    }
    if let Err(e) = repo.index() {
        return vec![finding(
            Severity::Error,
            format!("the git index (.git/index) cannot be read: {}", e.message()),
            format!(
                "rm {d}/.git/index && git -C {d} reset   (rebuilds the index from HEAD; the working tree is kept)"
            ),
        )];
    }
    let mut out: Vec<Finding> = not_writable(dir).into_iter().collect();
    out.extend(working_tree(&repo, dir));
    if super::recover::has_record(&dir.join(".git")) {
        out.push(finding(
            Severity::Info,
            "a write was interrupted (the process died after committing, before updating the working tree)",
            "nothing to do: the next write checks the committed files out first",
        ));
    }
    out
}

/// The cheap part of [`diagnose`], for every list, search, page and sync: the repository
/// opens, HEAD resolves to a commit, and every tree and blob of its tree is present (an
/// existence check: no hashing, no history walk). The first [`Severity::Error`] finding, else
/// the id of the HEAD commit found whole (`None` without a repository or a commit). Given
/// `whole` (a commit found whole before), only what HEAD's tree changed since is looked up.
pub fn quick_check(dir: &Path, whole: Option<&str>) -> Result<Option<String>, Finding> {
    super::open::init_git();
    let Some(repo) = open(dir)? else { return Ok(None) };
    let Some(commit) = head_commit(&repo, dir)? else { return Ok(None) };
    let id = commit.id().to_string();
    if whole == Some(id.as_str()) {
        return Ok(Some(id));
    }
    let tree = commit.tree().map_err(|e| missing(dir, "tree", commit.tree_id(), e.message()))?;
    let odb =
        repo.odb().map_err(|e| missing(dir, "the object database of commit", commit.id(), e.message()))?;
    // Unchanged subtrees are skipped by their ids; a subtree that cannot be read fails the diff.
    let since = whole.and_then(|w| Oid::from_str(w).ok()).and_then(|w| repo.find_commit(w).ok());
    let old = since.and_then(|c| c.tree().ok());
    let diff = repo
        .diff_tree_to_tree(old.as_ref(), Some(&tree), None)
        .map_err(|e| missing(dir, "a tree of HEAD", tree.id(), e.message()))?;
    for new in diff.deltas().map(|delta| delta.new_file()) {
        let gitlink = new.mode() == git2::FileMode::Commit;
        if new.exists() && !gitlink && !new.id().is_zero() && !odb.exists(new.id()) {
            return Err(missing(dir, "blob", new.id(), "object not found"));
        }
    }
    Ok(Some(id))
}

/// The pack's repository (`None` for a folder that has none yet), or what keeps it from opening.
fn open(dir: &Path) -> Result<Option<Repository>, Finding> {
    let d = dir.display();
    match fs::symlink_metadata(dir.join(".git")) {
        Err(_) => return Ok(None),
        Ok(m) if !m.is_dir() => {
            return Err(finding(
                Severity::Error,
                ".git is not a directory",
                format!(
                    "move {d}/.git aside; the next write re-adopts the files (history is lost unless you restore .git from a clone)"
                ),
            ));
        }
        Ok(_) => {}
    }
    if let Some(f) = missing_head(dir) {
        return Err(f);
    }
    Repository::open(dir).map(Some).map_err(|e| {
        finding(
            Severity::Error,
            format!("the git repository cannot be opened: {}", e.message()),
            format!(
                "restore {d}/.git from a clone or backup (`git clone <remote> … && mv …/.git {d}/.git`), or move .git aside to start a new history from the files"
            ),
        )
    })
}

/// The commit HEAD resolves to (`None` on an unborn branch), or the finding that it does not.
fn head_commit<'r>(repo: &'r Repository, dir: &Path) -> Result<Option<git2::Commit<'r>>, Finding> {
    match repo.head().and_then(|h| h.peel_to_commit()) {
        Ok(c) => Ok(Some(c)),
        Err(e) if e.code() == ErrorCode::UnbornBranch => Ok(None),
        Err(e) => Err(broken_ref(repo, dir, e.message())),
    }
}

/// An object reachable from HEAD that cannot be read, and how to get it back.
fn missing(dir: &Path, what: &str, id: Oid, why: &str) -> Finding {
    let d = dir.display();
    finding(
        Severity::Error,
        format!("{what} {id} is missing or corrupt: {why}"),
        format!(
            "fetch the objects back from a clone (`git -C {d} fetch <clone-or-remote>`) or restore .git from a backup; `git -C {d} fsck --full` lists every damaged object. The files in the working tree are intact and readable."
        ),
    )
}

/// HEAD's branch does not resolve to a commit: the repair names the last readable commit of
/// its reflog when there is one.
fn broken_ref(repo: &Repository, dir: &Path, why: &str) -> Finding {
    let d = dir.display();
    let branch =
        repo.find_reference("HEAD").ok().and_then(|h| h.symbolic_target().ok().flatten().map(str::to_owned));
    let branch = branch.unwrap_or_else(|| "HEAD".to_owned());
    let last_good = repo.reflog(&branch).ok().and_then(|log| {
        log.iter().map(|e| e.id_new()).find(|id| !id.is_zero() && repo.find_commit(*id).is_ok())
    });
    let repair = match last_good {
        Some(id) => format!(
            "the branch's reflog names a readable commit: git -C {d} update-ref {branch} {id}   (then `engram doctor` again)"
        ),
        None => format!(
            "point {branch} at a good commit: `git -C {d} log --all --oneline` or `git -C {d} fsck --lost-found` to find one, then `git -C {d} update-ref {branch} <commit>`"
        ),
    };
    finding(Severity::Error, format!("{branch} does not resolve to a commit: {why}"), repair)
}

/// The first commit, tree or blob reachable from `head` that cannot be read.
fn missing_object(repo: &Repository, dir: &Path, head: Oid) -> Option<Finding> {
    let mut walk = match repo.revwalk().and_then(|mut w| w.push(head).map(|()| w)) {
        Ok(w) => w,
        Err(e) => return Some(missing(dir, "commit", head, e.message())),
    };
    let mut seen_trees = std::collections::HashSet::new();
    walk.find_map(|id| {
        let commit = match id.and_then(|id| repo.find_commit(id)) {
            Ok(c) => c,
            Err(e) => return Some(missing(dir, "a commit in the history of", head, e.message())),
        };
        match commit.tree() {
            Ok(tree) if seen_trees.insert(tree.id()) => {
                unreadable(dir, &tree, |id| repo.find_blob(id).map(|_| ()))
            }
            Ok(_) => None,
            Err(e) => Some(missing(dir, "tree", commit.tree_id(), e.message())),
        }
    })
}

/// The first blob of `tree` that `read` fails on, or the subtree the walk cannot read.
fn unreadable(
    dir: &Path,
    tree: &git2::Tree<'_>,
    read: impl Fn(Oid) -> Result<(), git2::Error>,
) -> Option<Finding> {
    let mut problem = None;
    let walked = tree.walk(git2::TreeWalkMode::PreOrder, |_, entry| {
        let Some(Err(e)) = (entry.kind() == Some(ObjectType::Blob)).then(|| read(entry.id())) else {
            return git2::TreeWalkResult::Ok;
        };
        problem = Some(missing(dir, "blob", entry.id(), e.message()));
        git2::TreeWalkResult::Abort
    });
    problem.or_else(|| walked.err().map(|e| missing(dir, "a subtree of tree", tree.id(), e.message())))
}

/// `.git/HEAD` is missing from a repository that otherwise is one (objects
/// and refs are there): git and libgit2 then do not recognise it at all, but
/// recreating HEAD — pointing at the branch the refs hold — is the whole repair.
fn missing_head(dir: &Path) -> Option<Finding> {
    let git = dir.join(".git");
    if fs::symlink_metadata(git.join("HEAD")).is_ok() || !git.join("objects").is_dir() {
        return None;
    }
    let branches = branch_names(&git);
    let found = ["main", "master"].into_iter().find(|b| branches.iter().any(|n| n == b));
    let branch = found.or(branches.first().map(String::as_str)).unwrap_or("main");
    let d = dir.display();
    let others: Vec<&str> = branches.iter().map(String::as_str).filter(|b| *b != branch).collect();
    let also = if others.is_empty() {
        String::new()
    } else {
        format!(" (other branches: {}; name one of them instead if the pack was on it)", others.join(", "))
    };
    Some(finding(
        Severity::Error,
        ".git/HEAD is missing: git no longer recognises the repository (the history and the files are intact)",
        format!(
            "echo 'ref: refs/heads/{branch}' > {d}/.git/HEAD   (recreates HEAD on branch {branch}{also}; no reclone needed)"
        ),
    ))
}

/// The branch names under `refs/heads` (files, nested names included) and in `packed-refs`, sorted.
fn branch_names(git: &Path) -> Vec<String> {
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) {
        let Ok(entries) = fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let name = format!("{prefix}{}", e.file_name().to_string_lossy());
            match e.file_type() {
                Ok(t) if t.is_dir() => walk(&e.path(), &format!("{name}/"), out),
                Ok(t) if t.is_file() && !name.ends_with(".lock") => out.push(name),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(&git.join("refs/heads"), "", &mut out);
    if let Ok(packed) = fs::read_to_string(git.join("packed-refs")) {
        out.extend(packed.lines().filter_map(|l| l.split_once(" refs/heads/")).map(|(_, b)| b.to_owned()));
    }
    out.sort();
    out.dedup();
    out
}

/// The first directory a write creates files in that this process cannot write
/// to (permissions, a read-only file system): every write of the pack would fail.
fn not_writable(dir: &Path) -> Option<Finding> {
    for rel in [".git", ".git/objects", ".git/objects/pack", ".git/refs/heads", "", "memory"] {
        let path = if rel.is_empty() { dir.to_owned() } else { dir.join(rel) };
        if !fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        let Err(why) = check_writable(&path) else { continue };
        let shown = if rel.is_empty() { "the pack directory".to_owned() } else { rel.to_owned() };
        let p = path.display();
        return Some(finding(
            Severity::Error,
            format!("{shown} is not writable ({why}): every write of this pack fails; reads still work"),
            format!(
                "make it writable again: `chmod -R u+w {p}` as its owner (see `ls -ld {p}`), or remount the disk read-write"
            ),
        ));
    }
    None
}

/// Whether this process may create files in `dir`: `access(W_OK)`, which also
/// knows read-only file systems and immutable directories, and creates nothing.
#[cfg(any(target_os = "linux", target_os = "macos"))]
fn check_writable(dir: &Path) -> Result<(), String> {
    rustix::fs::access(dir, rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK)
        .map_err(|e| std::io::Error::from(e).to_string())
}

/// Whether this process may create files in `dir` (the read-only attribute).
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn check_writable(dir: &Path) -> Result<(), String> {
    match fs::metadata(dir) {
        Ok(m) if m.permissions().readonly() => Err("read-only".to_owned()),
        _ => Ok(()),
    }
}

/// Tracked files replaced by something else, tracked directories replaced by a
/// symbolic link, and pending hand edits.
fn working_tree(repo: &Repository, dir: &Path) -> Vec<Finding> {
    let d = dir.display();
    let links = committed_links(repo, dir);
    let mut out: Vec<Finding> = links.iter().map(|(_, f)| f.clone()).collect();
    // A committed link is reported as that, not as a replaced path.
    for replaced in replaced_paths(repo, dir).into_iter().filter(|r| links.iter().all(|(p, _)| *p != r.path))
    {
        let path = &replaced.path;
        let problem = match &replaced.link {
            None => format!(
                "{path} is a file in the last commit but not a regular file in the working tree (a directory?)"
            ),
            Some(target) => format!(
                "{path} is a symbolic link in the working tree (to {target}), where the last commit has {}: engram neither reads nor writes through it, and committing it would delete the committed files",
                if replaced.was_dir { "a directory" } else { "a file" }
            ),
        };
        out.push(finding(
            Severity::Error,
            problem,
            format!("mv {d}/{path} {d}/{path}.moved && git -C {d} checkout -- {path}   (keeps what was there, restores the committed version)"),
        ));
    }
    let mut opts = StatusOptions::new();
    opts.include_untracked(true).recurse_untracked_dirs(true).exclude_submodules(true);
    if let Ok(statuses) = repo.statuses(Some(&mut opts)) {
        let n = statuses
            .iter()
            .filter(|s| s.status() != Status::CURRENT && !s.status().contains(Status::IGNORED))
            .count();
        if n > 0 && out.is_empty() {
            out.push(finding(
                Severity::Info,
                format!("{n} path(s) differ from the last commit (hand edits)"),
                "nothing to do: the next write commits them as an `edit:` commit of their own",
            ));
        }
    }
    out
}

/// Most commits searched back for the last one where a committed link was not one.
const LINK_HISTORY: usize = 1000;

/// Symbolic links and submodules committed in HEAD (by git, or by an engram before it
/// refused them), each with its finding: engram never reads or writes through them, and the
/// repair restores what was there before the link, never the link.
fn committed_links(repo: &Repository, dir: &Path) -> Vec<(String, Finding)> {
    let d = dir.display();
    let Some(head) = repo.head().ok().and_then(|h| h.peel_to_commit().ok()) else { return Vec::new() };
    let Ok(tree) = head.tree() else { return Vec::new() };
    let mut links = Vec::new();
    let _ = tree.walk(git2::TreeWalkMode::PreOrder, |root, entry| {
        let what = match entry.filemode() {
            0o120000 => {
                let target =
                    repo.find_blob(entry.id()).map(|b| String::from_utf8_lossy(b.content()).into_owned());
                format!("a symbolic link (to {})", target.unwrap_or_default())
            }
            0o160000 => "a submodule".to_owned(),
            _ => return git2::TreeWalkResult::Ok,
        };
        links.push((format!("{root}{}", entry.name().unwrap_or("?")), what));
        git2::TreeWalkResult::Ok
    });
    links
        .into_iter()
        .map(|(path, what)| {
            let problem = format!(
                "{path} is committed as {what}: engram neither reads nor writes through it (its files are missing from the pack)"
            );
            let restored = fs::symlink_metadata(dir.join(&path)).is_ok_and(|m| m.is_dir());
            let repair = match last_commit_without_link(repo, head.id(), &path) {
                // The person already put the folder back: committing it is the repair.
                _ if restored => format!(
                    "git -C {d} add -A -- {path} && git -C {d} commit -m 'restore {path} as a directory'   (the working tree already holds it as a directory)"
                ),
                Some(before) => format!(
                    "rm {d}/{path} && git -C {d} checkout {before} -- {path} && git -C {d} commit -m 'restore {path}'   ({before} is the last commit before the link)"
                ),
                None => format!("git -C {d} rm --cached -q {path} && git -C {d} commit -m 'remove the link {path}'"),
            };
            let found = finding(Severity::Error, problem, repair);
            (path, found)
        })
        .collect()
}

/// The short id of the newest first-parent ancestor of `head` where `path` is not a link.
fn last_commit_without_link(repo: &Repository, head: Oid, path: &str) -> Option<String> {
    let mut commit = repo.find_commit(head).ok()?;
    for _ in 0..LINK_HISTORY {
        commit = commit.parent(0).ok()?;
        let entry = commit.tree().ok()?.get_path(Path::new(path)).ok();
        if entry.as_ref().is_none_or(|e| e.filemode() != 0o120000 && e.filemode() != 0o160000) {
            return entry.is_some().then(|| commit.id().to_string()[..12].to_owned());
        }
    }
    None
}

/// A tracked path the working tree has replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Replaced {
    path: String,
    /// The target of the symbolic link there; `None` for a directory where HEAD has a file.
    link: Option<String>,
    /// HEAD has a directory at `path`.
    was_dir: bool,
}

/// Tracked paths replaced in the working tree by something a hand-edit commit
/// must not take in: a file by a directory; a directory by a symbolic link
/// (every file under it would be committed as deleted); a file by a symbolic
/// link that leads out of the pack.
fn replaced_paths(repo: &Repository, dir: &Path) -> Vec<Replaced> {
    let mut opts = StatusOptions::new();
    opts.include_untracked(false).exclude_submodules(true);
    let Ok(statuses) = repo.statuses(Some(&mut opts)) else { return Vec::new() };
    let mut out: Vec<Replaced> = Vec::new();
    let root = fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned());
    for s in statuses.iter().filter(|s| s.status().intersects(Status::WT_DELETED | Status::WT_TYPECHANGE)) {
        let Ok(path) = s.path() else { continue };
        // The nearest ancestor that is a symbolic link hides everything under it.
        for prefix in path.match_indices('/').map(|(i, _)| &path[..i]).chain([path]) {
            let (full, last) = (dir.join(prefix), prefix.len() == path.len());
            let Ok(meta) = fs::symlink_metadata(&full) else { break };
            let is_link = meta.file_type().is_symlink();
            let found = if is_link {
                let target = fs::read_link(&full).map(|t| t.display().to_string()).unwrap_or_default();
                let inside = fs::canonicalize(&full).is_ok_and(|t| t.starts_with(&root));
                (!last || !inside).then_some(Replaced {
                    path: prefix.into(),
                    link: Some(target),
                    was_dir: !last,
                })
            } else {
                (last && meta.is_dir()).then(|| Replaced { path: prefix.into(), link: None, was_dir: false })
            };
            if let Some(r) = found
                && !out.contains(&r)
            {
                out.push(r);
            }
            if is_link {
                break;
            }
        }
    }
    out
}

/// Tracked paths the working tree replaced by something a write must not
/// commit over, each described (`memory replaced by a symbolic link`). A write
/// refuses to run while any exist: committing them as hand edits would delete
/// committed files from the history's next commit.
pub fn replaced_files(repo: &Repository, dir: &Path) -> Vec<String> {
    let describe = |r: Replaced| match r.link {
        None => format!("{} replaced by a directory", r.path),
        Some(target) => format!("{} replaced by a symbolic link (to {target})", r.path),
    };
    replaced_paths(repo, dir).into_iter().map(describe).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Commits `files` (top-level paths) on HEAD; the new commit's id.
    fn commit(repo: &Repository, files: &[(&str, &str)]) -> Oid {
        let mut tb = repo.treebuilder(None).expect("treebuilder");
        for (path, text) in files {
            let blob = repo.blob(text.as_bytes()).expect("blob");
            tb.insert(path, blob, 0o100_644).expect("insert");
        }
        let tree = repo.find_tree(tb.write().expect("tree")).expect("find tree");
        let sig = git2::Signature::now("t", "t@example.invalid").expect("signature");
        let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        repo.commit(Some("HEAD"), &sig, &sig, "m", &tree, &parents).expect("commit")
    }

    #[test]
    fn quick_check_finds_a_missing_blob_by_a_whole_walk_or_since_a_whole_commit() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path();
        let repo = Repository::init(dir).expect("init");
        assert_eq!(quick_check(dir, None), Ok(None), "no commit yet: nothing to read");
        commit(&repo, &[("a.md", "a")]);
        let whole = quick_check(dir, None).expect("whole").expect("a commit");
        assert_eq!(quick_check(dir, Some(&whole)), Ok(Some(whole.clone())));

        commit(&repo, &[("a.md", "a"), ("b.md", "b")]);
        let b = repo.blob(b"b").expect("the blob's id").to_string();
        fs::remove_file(dir.join(".git/objects").join(&b[..2]).join(&b[2..])).expect("remove the blob");
        let since = quick_check(dir, Some(&whole)).expect_err("the blob the new commit added is missing");
        assert!(since.problem.contains(&b) && since.severity == Severity::Error, "{}", since.problem);
        let walked = quick_check(dir, None).expect_err("a whole walk finds it too");
        assert_eq!(walked.problem, since.problem);

        let branch = repo.head().expect("head").name().expect("a name").to_owned();
        fs::write(dir.join(".git").join(&branch), "not a commit id\n").expect("write the ref");
        let broken = quick_check(dir, Some(&whole)).expect_err("the branch does not resolve");
        assert!(broken.problem.contains("does not resolve to a commit"), "{}", broken.problem);
    }
}
