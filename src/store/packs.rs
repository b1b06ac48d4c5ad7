//! Merging the small packs writes leave behind.
//!
//! Each write adds one small pack (see `packwrite`). Many packs make every
//! object lookup that misses visit each of them, so once [`MERGE_AT`] packs
//! exist the smallest half of them are merged into one (tiered, like an LSM
//! tree with fan-out 8): a merge takes packs of similar size, so each object
//! is rewritten O(log n) times over the life of a pack, and one merge costs
//! time proportional to what it merges, never to the whole history.

use std::fs;
use std::path::{Path, PathBuf};

use git2::Oid;

use super::{PackRepo, Result, git_err, io_err};

/// Pack count at which the smallest packs are merged.
pub const MERGE_AT: usize = 16;

struct PackFile {
    idx: PathBuf,
    objects: usize,
}

/// The packs of a repository with their object counts (from the `.idx` fan-out table).
fn list(pack_dir: &Path) -> Vec<PackFile> {
    let Ok(entries) = fs::read_dir(pack_dir) else { return Vec::new() };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        if path.extension().is_none_or(|x| x != "idx") || path.with_extension("keep").exists() {
            continue;
        }
        if let Some(objects) = idx_object_count(&path) {
            out.push(PackFile { idx: path, objects });
        }
    }
    out
}

fn idx_object_count(idx: &Path) -> Option<usize> {
    use std::io::Read as _;
    let mut head = [0u8; 8 + 256 * 4];
    fs::File::open(idx).ok()?.read_exact(&mut head).ok()?;
    if head[..8] != [0xff, b't', b'O', b'c', 0, 0, 0, 2] {
        return None;
    }
    let last = &head[8 + 255 * 4..];
    Some(u32::from_be_bytes([last[0], last[1], last[2], last[3]]) as usize)
}

fn idx_object_ids(idx: &Path) -> Result<Vec<Oid>> {
    let bytes = fs::read(idx).map_err(|e| io_err("read", idx, e))?;
    let n = idx_object_count(idx).unwrap_or(0);
    let start = 8 + 256 * 4;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let Some(raw) = bytes.get(start + i * 20..start + (i + 1) * 20) else { break };
        if let Ok(id) = Oid::from_bytes(raw) {
            out.push(id);
        }
    }
    Ok(out)
}

/// How many of the smallest packs (sorted ascending) a merge takes: half of them.
fn smallest_half(counts: &[usize]) -> usize {
    counts.len() / 2
}

/// Merges the smallest packs when there are [`MERGE_AT`] or more. Errors are
/// logged, not returned: this is housekeeping and must not fail a write.
pub(super) fn maybe_merge(repo: &PackRepo) {
    if let Err(e) = merge_if_due(repo) {
        eprintln!("engram: merging the packs of {} failed: {e}", repo.dir.display());
    }
}

fn merge_if_due(repo: &PackRepo) -> Result<()> {
    let pack_dir = repo.git_dir().join("objects").join("pack");
    let mut packs = list(&pack_dir);
    if packs.len() < MERGE_AT {
        return Ok(());
    }
    remove_abandoned_temporaries(&pack_dir);
    packs.sort_by_key(|p| p.objects);
    let counts: Vec<usize> = packs.iter().map(|p| p.objects).collect();
    let k = smallest_half(&counts);
    let merged = &packs[..k];
    let mut builder = repo.repo.packbuilder().map_err(|e| git_err("merging packs", &repo.dir, e))?;
    for pack in merged {
        for id in idx_object_ids(&pack.idx)? {
            builder.insert_object(id, None).map_err(|e| git_err("merging packs", &repo.dir, e))?;
        }
    }
    builder.write(&pack_dir, 0o444).map_err(|e| git_err("writing the merged pack", &repo.dir, e))?;
    // The merged pack is named after its content: if it happens to equal an
    // input (same objects), that input is the output and must stay.
    let before: Vec<&PathBuf> = packs.iter().map(|p| &p.idx).collect();
    if !list(&pack_dir).iter().any(|p| !before.contains(&&p.idx)) {
        return Ok(());
    }
    for pack in merged {
        for ext in ["pack", "idx", "rev"] {
            let _ = fs::remove_file(pack.idx.with_extension(ext));
        }
    }
    Ok(())
}

/// Removes what a writer killed while writing a pack left (libgit2's
/// `pack_git2_*` temporary files and their `.lock`s), once a minute old: every
/// engram writer holds the pack's lock, so a temporary that old is abandoned.
fn remove_abandoned_temporaries(pack_dir: &Path) {
    let Ok(entries) = fs::read_dir(pack_dir) else { return };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > std::time::Duration::from_secs(60)));
        if name.starts_with("pack_git2_") && old {
            let _ = fs::remove_file(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::smallest_half;

    #[test]
    fn a_merge_takes_the_smaller_half() {
        assert_eq!(smallest_half(&[6; 16]), 8);
        assert_eq!(smallest_half(&[]), 0);
    }
}
