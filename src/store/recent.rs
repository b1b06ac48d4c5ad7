//! The newest commits of a pack, cached on its [`PackRepo`](super::PackRepo) for the
//! duplicate check.
//!
//! `capture_memory` refuses a capture whose `Engram-Dedup` trailer appears in
//! a commit of the last 30 seconds. Walking back from HEAD on every capture
//! reads up to [`MAX_DEDUP_WALK`] commits when captures come quickly. The
//! walk is therefore kept per repository handle, anchored at the HEAD it started from: the
//! next check walks from the new HEAD only until it meets that anchor (one
//! commit after one write) and reuses the rest. The cache holds what git holds
//! (commit ids, times, trailers), so it is right whatever process made the
//! commits; a HEAD that no longer descends from the anchor (a reset, a revert
//! by hand) simply never meets it and the walk starts afresh.

use std::path::Path;
use std::sync::Mutex;

use git2::{Oid, Repository};

use super::reread::reread;
use super::{Result, git_err};

/// How many commits the duplicate check walks back at most.
pub const MAX_DEDUP_WALK: usize = 200;

/// One walked commit.
#[derive(Clone)]
struct Recent {
    id: Oid,
    time: i64,
    trailers: Vec<(String, String)>,
}

/// Where a walk stopped.
#[derive(Clone, Copy, PartialEq)]
enum Floor {
    /// At the root commit or after [`MAX_DEDUP_WALK`] commits: nothing older is ever looked at.
    Complete,
    /// At the first commit older than this time (that commit is included).
    OlderThan(i64),
}

/// The walked commits of one pack, newest first, starting at `anchor`.
struct Walk {
    anchor: Oid,
    commits: Vec<Recent>,
    floor: Floor,
}

/// The cached walk of one pack (a field of its repository handle).
#[derive(Default)]
pub(super) struct RecentCommits(Mutex<Option<Walk>>);

/// The short id of the newest commit, walking back from `head`, whose trailer
/// `key` is `value`, among commits until the first one older than `since`.
pub(super) fn find_trailer(
    repo: &Repository,
    dir: &Path,
    recent: &RecentCommits,
    head: Oid,
    key: &str,
    value: &str,
    since: i64,
) -> Result<Option<String>> {
    let mut cached = recent.0.lock().unwrap_or_else(|p| p.into_inner());
    let walk = extend(repo, dir, head, cached.take(), since)?;
    let found = search(&walk, key, value, since);
    *cached = Some(walk);
    match found {
        Some(answer) => Ok(answer),
        // The cached walk stops before `since` (an older throttle window): walk without the cache.
        None => Ok(search(&extend(repo, dir, head, None, since)?, key, value, since).flatten()),
    }
}

/// `Some(answer)` when the walk decides the question, `None` when it does not reach back far enough.
fn search(walk: &Walk, key: &str, value: &str, since: i64) -> Option<Option<String>> {
    for commit in &walk.commits {
        if commit.time < since {
            return Some(None);
        }
        if commit.trailers.iter().any(|(k, v)| k == key && v == value) {
            return Some(Some(commit.id.to_string()[..7].to_owned()));
        }
    }
    match walk.floor {
        Floor::Complete => Some(None),
        Floor::OlderThan(_) => None,
    }
}

/// Walks from `head` back to the anchor of `cached` (then reuses it), or
/// until the first commit older than `since`, the root, or the walk limit.
fn extend(repo: &Repository, dir: &Path, head: Oid, cached: Option<Walk>, since: i64) -> Result<Walk> {
    let mut fresh = Vec::new();
    let mut next = Some(head);
    let mut floor = Floor::Complete;
    let mut joined = None;
    while let Some(id) = next {
        if cached.as_ref().is_some_and(|w| w.anchor == id) {
            joined = cached;
            break;
        }
        if fresh.len() >= MAX_DEDUP_WALK {
            break;
        }
        let commit = reread(|| repo.find_commit(id)).map_err(|e| git_err("reading a commit", dir, e))?;
        let time = commit.time().seconds();
        let message = String::from_utf8_lossy(commit.message_bytes());
        fresh.push(Recent { id, time, trailers: super::history::parse_trailers(&message) });
        if time < since {
            floor = Floor::OlderThan(since);
            break;
        }
        next = commit.parent_id(0).ok();
    }
    if let Some(old) = joined {
        fresh.extend(old.commits);
        floor = old.floor;
        if fresh.len() > MAX_DEDUP_WALK {
            fresh.truncate(MAX_DEDUP_WALK);
            floor = Floor::Complete;
        }
    }
    Ok(Walk { anchor: head, commits: fresh, floor })
}

/// Tells the cache about a commit this handle just made on top of `parent`
/// (so the next check need not read it back through libgit2). A cache
/// anchored elsewhere is left alone: the next check walks as usual.
pub(super) fn note_commit(recent: &RecentCommits, id: Oid, parent: Oid, time: i64, message: &str) {
    let mut cached = recent.0.lock().unwrap_or_else(|p| p.into_inner());
    let Some(walk) = cached.as_mut() else { return };
    if walk.anchor != parent {
        return;
    }
    walk.commits.insert(0, Recent { id, time, trailers: super::history::parse_trailers(message) });
    walk.anchor = id;
    if walk.commits.len() > MAX_DEDUP_WALK {
        walk.commits.truncate(MAX_DEDUP_WALK);
        walk.floor = Floor::Complete;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(repo: &Repository, parent: Option<Oid>, time: i64, dedup: &str) -> Oid {
        let sig = git2::Signature::new("t", "t@localhost", &git2::Time::new(time, 0)).expect("sig");
        let tree =
            repo.find_tree(repo.treebuilder(None).and_then(|b| b.write()).expect("tree")).expect("tree");
        let parents: Vec<git2::Commit<'_>> =
            parent.into_iter().map(|p| repo.find_commit(p).expect("parent")).collect();
        let parents: Vec<&git2::Commit<'_>> = parents.iter().collect();
        let message = format!("capture\n\nEngram-Dedup: {dedup}\n");
        repo.commit(None, &sig, &sig, &message, &tree, &parents).expect("commit")
    }

    #[test]
    fn cached_walk_answers_like_a_fresh_walk() {
        let tmp = tempfile::tempdir().expect("tmp");
        let repo = Repository::init(tmp.path()).expect("init");
        let recent = RecentCommits::default();
        let a = commit(&repo, None, 1_000, "a");
        let b = commit(&repo, Some(a), 1_010, "b");
        assert_eq!(
            find_trailer(&repo, tmp.path(), &recent, b, "Engram-Dedup", "a", 990).expect("find"),
            Some(a.to_string()[..7].to_owned())
        );
        // One more commit: found through the cached part, and the new one too.
        let c = commit(&repo, Some(b), 1_020, "c");
        assert!(
            find_trailer(&repo, tmp.path(), &recent, c, "Engram-Dedup", "a", 990).expect("find").is_some()
        );
        assert!(
            find_trailer(&repo, tmp.path(), &recent, c, "Engram-Dedup", "c", 990).expect("find").is_some()
        );
        // A commit noted by its writer is found without reading it back.
        let d = Oid::hash_object(git2::ObjectType::Commit, b"not in the repository").expect("id");
        note_commit(&recent, d, c, 1_030, "capture\n\nEngram-Dedup: d\n");
        assert_eq!(
            find_trailer(&repo, tmp.path(), &recent, d, "Engram-Dedup", "d", 990).expect("find"),
            Some(d.to_string()[..7].to_owned())
        );
        // Outside the window: not a duplicate.
        assert!(
            find_trailer(&repo, tmp.path(), &recent, c, "Engram-Dedup", "a", 1_005).expect("find").is_none()
        );
        // A wider window than the cache covers walks again.
        assert!(
            find_trailer(&repo, tmp.path(), &recent, c, "Engram-Dedup", "a", 900).expect("find").is_some()
        );
        // HEAD reset to an unrelated history: the cache is not trusted.
        let other = commit(&repo, None, 1_030, "x");
        assert!(
            find_trailer(&repo, tmp.path(), &recent, other, "Engram-Dedup", "a", 900)
                .expect("find")
                .is_none()
        );
        assert!(
            find_trailer(&repo, tmp.path(), &recent, other, "Engram-Dedup", "x", 900)
                .expect("find")
                .is_some()
        );
    }
}
