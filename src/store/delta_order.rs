//! The order objects reach libgit2's delta search, for the packing merges (`gc`).
//!
//! Size comes from deltas, and libgit2 only tries a fixed window of 10
//! neighbours after sorting objects by type, "name hash" and size. Versions of
//! one file with the same size from different roll cycles (the memory head files
//! shrink by half when they roll) would fill that window with unrelated blobs, so
//! [`delta_order`] names every object such that the sort puts the versions of a
//! file next to each other, newest first (older versions then are copy-only
//! deltas), and a rolled segment right after the last head version that held its
//! lines (so the segment costs a copy instruction).

use std::collections::{HashMap, HashSet, VecDeque};

use git2::{ObjectType, Oid, Repository};

/// Inserts the objects reachable from the repository's tips for which `member` holds
/// into `builder`, in [`delta_order`] and named by [`sort_name`]; stops at the first
/// object the builder refuses.
pub(super) fn insert_reachable(
    builder: &mut git2::PackBuilder<'_>,
    git: &Repository,
    member: &dyn Fn(&Oid) -> bool,
) -> Result<(), git2::Error> {
    let order = delta_order(git, &tips(git), member);
    for (rank, (id, named)) in order.iter().enumerate() {
        let name = named.then(|| sort_name(order.len() - rank));
        builder.insert_object(*id, name.as_deref())?;
    }
    Ok(())
}

/// The commits packing starts from: HEAD, every ref, and what the reflogs name
/// (like git: a writer killed between appending to the reflog and moving the ref
/// leaves an entry for a commit no ref reaches, and `git fsck` checks it).
fn tips(git: &Repository) -> Vec<Oid> {
    let mut out = Vec::new();
    if let Ok(head) = git.head().and_then(|h| h.peel_to_commit()) {
        out.push(head.id());
    }
    if let Ok(refs) = git.references() {
        for r in refs.flatten() {
            if let Ok(c) = r.peel_to_commit() {
                out.push(c.id());
            }
        }
    }
    let mut logs = vec!["HEAD".to_owned()];
    if let Ok(head) = git.find_reference("HEAD")
        && let Ok(Some(branch)) = head.symbolic_target()
    {
        logs.push(branch.to_owned());
    }
    for name in &logs {
        if let Ok(log) = git.reflog(name) {
            for entry in log.iter() {
                for id in [entry.id_new(), entry.id_old()] {
                    if !id.is_zero() && git.find_commit(id).is_ok() {
                        out.push(id);
                    }
                }
            }
        }
    }
    out
}

/// Commits a walk from `tips` through commits that are not members passes before any
/// member commit, at most this many: writes go on while a merge runs, so the tips are
/// often newer than every member (a merge of older packs, a write's pack newer than the plan).
const ABOVE_MEMBERS_LIMIT: usize = 4096;

/// The member commits nearest to `tips`: the tips that are members, and the first member
/// commits found walking down from the others through commits that are not (at most
/// [`ABOVE_MEMBERS_LIMIT`] of those). Without this, a merge whose members are all older than
/// the tips would name none of its objects, and libgit2 would pair them for deltas by size alone.
fn newest_members(git: &Repository, tips: &[Oid], member: &dyn Fn(&Oid) -> bool) -> Vec<Oid> {
    let mut found = Vec::new();
    let mut passed: HashSet<Oid> = HashSet::new();
    let mut above: VecDeque<Oid> = VecDeque::new();
    for tip in tips {
        if member(tip) {
            found.push(*tip);
        } else if passed.insert(*tip) {
            above.push_back(*tip);
        }
    }
    while let Some(id) = above.pop_front() {
        if passed.len() > ABOVE_MEMBERS_LIMIT {
            break;
        }
        let Ok(commit) = git.find_commit(id) else { continue };
        for parent in commit.parent_ids() {
            if member(&parent) {
                found.push(parent);
            } else if passed.insert(parent) {
                above.push_back(parent);
            }
        }
    }
    found
}

/// Objects refs point at that are not commits (annotated tags, tagged trees or blobs).
pub(super) fn ref_objects(git: &Repository) -> Vec<Oid> {
    let mut out = Vec::new();
    if let Ok(refs) = git.references() {
        for r in refs.flatten() {
            let Some(id) = r.target() else { continue };
            if let Ok(obj) = git.find_object(id, None)
                && obj.kind() != Some(ObjectType::Commit)
            {
                out.push(id);
                if let Ok(peeled) = obj.peel(ObjectType::Any) {
                    out.push(peeled.id());
                }
            }
        }
    }
    out
}

/// One object found by [`delta_order`].
struct Found {
    id: Oid,
    /// 0 commit, 1 tree, 2 blob.
    kind: u8,
    /// Interned path (trees) or file family (blobs, see [`family`]).
    family: usize,
    /// Position of the first commit that has it, oldest first.
    born: usize,
    /// A rolled segment (see [`family`]).
    segment: bool,
}

/// The commits, trees and blobs reachable from `tips` for which `member` holds
/// (the walk stops at commits and trees outside it), in the order they should
/// reach libgit2's delta search: by kind, then by file family, newest first.
/// Each id comes with whether to name it: commits are left unnamed, so that
/// libgit2 sorts them by size (a chain of commits, each a delta of the next, runs
/// into the depth limit, where deltas stop being worth it; size order makes
/// shallow fans).
fn delta_order(git: &Repository, tips: &[Oid], member: &dyn Fn(&Oid) -> bool) -> Vec<(Oid, bool)> {
    // Commits, newest first, then reversed so that "first seen" is "created".
    let mut seen: HashSet<Oid> = HashSet::new();
    let mut queue: VecDeque<Oid> =
        newest_members(git, tips, member).into_iter().filter(|id| seen.insert(*id)).collect();
    let mut commits = Vec::new();
    while let Some(id) = queue.pop_front() {
        let Ok(commit) = git.find_commit(id) else { continue };
        commits.push((id, commit.tree_id()));
        for parent in commit.parent_ids() {
            if member(&parent) && seen.insert(parent) {
                queue.push_back(parent);
            }
        }
    }
    commits.reverse();

    let mut families: HashMap<String, usize> = HashMap::new();
    let mut intern = |name: String| {
        let next = families.len();
        *families.entry(name).or_insert(next)
    };
    let mut found = Vec::new();
    for (born, (id, tree)) in commits.into_iter().enumerate() {
        found.push(Found { id, kind: 0, family: 0, born, segment: false });
        let mut stack = vec![(tree, String::new())];
        while let Some((tree_id, path)) = stack.pop() {
            if !member(&tree_id) || !seen.insert(tree_id) {
                continue;
            }
            let Ok(tree) = git.find_tree(tree_id) else { continue };
            for entry in tree.iter() {
                let name = String::from_utf8_lossy(entry.name_bytes());
                let child = if path.is_empty() { name.into_owned() } else { format!("{path}/{name}") };
                match entry.kind() {
                    Some(ObjectType::Tree) => stack.push((entry.id(), child)),
                    Some(ObjectType::Blob) if member(&entry.id()) && seen.insert(entry.id()) => {
                        let (fam, segment) = family(&child);
                        found.push(Found { id: entry.id(), kind: 2, family: intern(fam), born, segment });
                    }
                    _ => {}
                }
            }
            found.push(Found { id: tree_id, kind: 1, family: intern(path), born, segment: false });
        }
    }
    found.sort_by_key(|f| (f.kind, f.family, std::cmp::Reverse(f.born), f.segment));

    // A segment goes right after the next (older) head version: the one that held its lines.
    let mut out = Vec::with_capacity(found.len());
    let mut pending: Vec<(Oid, bool)> = Vec::new();
    let mut group = None;
    for f in found {
        if group != Some((f.kind, f.family)) {
            out.append(&mut pending);
            group = Some((f.kind, f.family));
        }
        if f.segment {
            pending.push((f.id, true));
        } else {
            out.push((f.id, f.kind != 0));
            out.append(&mut pending);
        }
    }
    out.append(&mut pending);
    out
}

/// The file whose versions a blob at `path` should be delta-compressed against:
/// a segment rolled out of a head file (`<dir>/_log/<name>/<segment>`, see
/// `memlog`) belongs with `<dir>/<name>.md`; any other file with itself.
fn family(path: &str) -> (String, bool) {
    let parts: Vec<&str> = path.split('/').collect();
    if parts.len() >= 3 && parts[parts.len() - 3] == "_log" {
        let name = parts[parts.len() - 2];
        let head = match &parts[..parts.len() - 3] {
            [] => format!("{name}.md"),
            dir => format!("{}/{name}.md", dir.join("/")),
        };
        return (head, true);
    }
    (path.to_owned(), false)
}

/// Ranks libgit2's "name hash" can order: 13 base-4 digits.
const MAX_RANK: usize = (1 << 26) - 1;

/// A name whose libgit2 name hash grows with `rank` (so higher ranks sort first).
///
/// libgit2 hashes a name as `h = (h >> 2) + (c << 24)` over its bytes, so the
/// hash of these 16 characters is a constant plus the 13 base-4 digits spelled
/// by the last 13 (`@ABC` = 0–3, least significant first).
fn sort_name(rank: usize) -> String {
    let rank = rank.min(MAX_RANK);
    let mut name = String::from("@@@");
    for k in (0..13).rev() {
        let digit = (rank >> (2 * (12 - k))) & 3;
        name.push(char::from(b'@' + digit as u8));
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    /// libgit2's `name_hash` (pack-objects.c).
    fn name_hash(name: &str) -> u32 {
        let mut hash: u32 = 0;
        for c in name.bytes().filter(|c| !c.is_ascii_whitespace()) {
            hash = (hash >> 2).wrapping_add(u32::from(c) << 24);
        }
        hash
    }

    #[test]
    fn sort_names_hash_in_rank_order() {
        let ranks =
            [0, 1, 2, 3, 4, 5, 15, 16, 17, 255, 256, 1000, 4095, 4096, 65_535, 65_536, 1 << 20, MAX_RANK];
        for pair in ranks.windows(2) {
            assert!(
                name_hash(&sort_name(pair[0])) < name_hash(&sort_name(pair[1])),
                "{} !< {}",
                pair[0],
                pair[1]
            );
        }
        assert_eq!(name_hash(&sort_name(MAX_RANK)), name_hash(&sort_name(MAX_RANK + 5)));
    }

    /// A merge of older packs (its members all older than the tips) still names its objects.
    #[test]
    fn members_older_than_the_tips_are_found_and_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let git = Repository::init(dir.path()).expect("init");
        let sig = git2::Signature::now("t", "t@example.com").expect("signature");
        let mut parent: Option<Oid> = None;
        let mut commits = Vec::new();
        for i in 0..10 {
            let blob = git.blob(format!("version {i}\n").as_bytes()).expect("blob");
            let mut tree = git.treebuilder(None).expect("treebuilder");
            tree.insert("notes.md", blob, 0o100_644).expect("insert");
            let tree = git.find_tree(tree.write().expect("tree")).expect("tree");
            let parents: Vec<git2::Commit<'_>> =
                parent.iter().map(|id| git.find_commit(*id).expect("parent")).collect();
            let refs: Vec<&git2::Commit<'_>> = parents.iter().collect();
            let id = git.commit(Some("HEAD"), &sig, &sig, &format!("c{i}"), &tree, &refs).expect("commit");
            commits.push((id, tree.id(), blob));
            parent = Some(id);
        }
        // The members: the objects of the six oldest commits; the tip is the newest commit.
        let members: HashSet<Oid> = commits[..6].iter().flat_map(|(c, t, b)| [*c, *t, *b]).collect();
        let order = delta_order(&git, &[commits[9].0], &|id| members.contains(id));
        assert_eq!(order.len(), members.len(), "every member found");
        assert!(order.iter().all(|(id, _)| members.contains(id)), "nothing else");
        let named = order.iter().filter(|(_, named)| *named).count();
        assert_eq!(named, 12, "the trees and blobs are named, the commits not");
    }

    #[test]
    fn segments_belong_with_their_head_file() {
        assert_eq!(family("memory/_log/work/000003.md"), ("memory/work.md".to_owned(), true));
        assert_eq!(family("memory/_log/_index_full/000001.md"), ("memory/_index_full.md".to_owned(), true));
        assert_eq!(family("memory/work.md"), ("memory/work.md".to_owned(), false));
        assert_eq!(family("_log/a/1.md"), ("a.md".to_owned(), true));
    }
}
