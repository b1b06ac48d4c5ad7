//! Keeping pack repositories small: loose objects are packed by engram itself.
//!
//! Every commit adds a handful of loose objects (each takes a 4 KiB block on
//! most filesystems). Like `git gc --auto`, we estimate the loose count from
//! one fan-out directory and, past a threshold, write every object reachable
//! from the refs, HEAD, the reflogs and the index into one pack, then delete the loose objects and older packs it covers.

use std::fs;
use std::path::Path;
use std::time::SystemTime;

use super::{PackRepo, Result, git_err, io_err};

/// Loose objects in `objects/17` that trigger packing (≈ 256× as many in all).
const AUTO_PACK_SAMPLE_THRESHOLD: usize = 6;

/// What a packing run did.
#[derive(Debug, Clone, Default)]
pub struct PackReport {
    /// Objects written into the new pack.
    pub objects: usize,
    /// Loose object files deleted.
    pub loose_removed: usize,
    /// Older pack files deleted.
    pub packs_removed: usize,
}

/// Packs when the loose-object estimate passes the threshold. Errors are
/// logged, not returned: packing is housekeeping and must not fail a write.
///
/// Most runs pack only the loose objects (cost proportional to what was
/// written since the last run, not to the history); once [`MAX_INCREMENTAL_PACKS`]
/// packs have piled up, everything is repacked into one.
pub(super) fn maybe_pack(repo: &PackRepo) {
    let sample = repo.git_dir().join("objects").join("17");
    let n = fs::read_dir(&sample).map(|d| d.count()).unwrap_or(0);
    if n <= AUTO_PACK_SAMPLE_THRESHOLD {
        return;
    }
    let packs = fs::read_dir(repo.git_dir().join("objects").join("pack"))
        .map(|d| d.flatten().filter(|e| e.path().extension().is_some_and(|x| x == "pack")).count())
        .unwrap_or(0);
    let res = if packs < MAX_INCREMENTAL_PACKS { pack_loose(repo) } else { pack_now(repo) };
    if let Err(e) = res {
        eprintln!("engram: packing {} failed: {e}", repo.dir.display());
    }
}

/// Packs beyond which the next automatic run repacks everything into one.
const MAX_INCREMENTAL_PACKS: usize = 12;

/// Writes the loose objects into a new pack and deletes them. Call with the lock held.
fn pack_loose(repo: &PackRepo) -> Result<PackReport> {
    let git = &repo.repo;
    let dir = &repo.dir;
    let objects_dir = repo.git_dir().join("objects");
    let mut loose: Vec<(git2::Oid, std::path::PathBuf)> = Vec::new();
    for sub in fs::read_dir(&objects_dir).map_err(|e| io_err("read", &objects_dir, e))?.flatten() {
        let prefix = sub.file_name().to_string_lossy().into_owned();
        if prefix.len() != 2 || !prefix.chars().all(|c| c.is_ascii_hexdigit()) {
            continue;
        }
        let Ok(files) = fs::read_dir(sub.path()) else { continue };
        for f in files.flatten() {
            let rest = f.file_name().to_string_lossy().into_owned();
            if let Ok(oid) = git2::Oid::from_str(&format!("{prefix}{rest}"))
                && rest.len() == 38
            {
                loose.push((oid, f.path()));
            }
        }
    }
    let mut builder = git.packbuilder().map_err(|e| git_err("packing objects", dir, e))?;
    let mut packed = Vec::with_capacity(loose.len());
    for (oid, path) in loose {
        // An unreadable object stays loose (and `engram doctor` reports it).
        if builder.insert_object(oid, None).is_ok() {
            packed.push(path);
        }
    }
    if packed.is_empty() {
        return Ok(PackReport::default());
    }
    let pack_dir = objects_dir.join("pack");
    fs::create_dir_all(&pack_dir).map_err(|e| io_err("create directory", &pack_dir, e))?;
    builder.write(&pack_dir, 0o444).map_err(|e| git_err("writing the pack", dir, e))?;
    let mut report = PackReport { objects: packed.len(), ..PackReport::default() };
    for path in packed {
        if fs::remove_file(&path).is_ok() {
            report.loose_removed += 1;
        }
        if let Some(parent) = path.parent() {
            let _ = fs::remove_dir(parent);
        }
    }
    Ok(report)
}

/// Writes all reachable objects (and those the index names) into one pack. Call with the lock held.
pub(super) fn pack_now(repo: &PackRepo) -> Result<PackReport> {
    let git = &repo.repo;
    let dir = &repo.dir;
    let started = SystemTime::now();
    let objects_dir = repo.git_dir().join("objects");
    let pack_dir = objects_dir.join("pack");
    let old_packs: Vec<_> = fs::read_dir(&pack_dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();

    let mut builder = git.packbuilder().map_err(|e| git_err("packing objects", dir, e))?;
    let mut walk = git.revwalk().map_err(|e| git_err("packing objects", dir, e))?;
    walk.push_glob("refs/*").map_err(|e| git_err("packing objects", dir, e))?;
    let _ = walk.push_head();
    // Like git, keep what the reflogs name: a writer killed between appending to the reflog
    // and moving the ref leaves an entry for a commit no ref reaches (and `git fsck` checks it).
    let mut logs = vec!["HEAD".to_owned()];
    if let Ok(branch) = repo.branch_ref() {
        logs.push(branch);
    }
    for name in &logs {
        if let Ok(log) = git.reflog(name) {
            for entry in log.iter() {
                for id in [entry.id_new(), entry.id_old()] {
                    if !id.is_zero() && git.find_commit(id).is_ok() {
                        let _ = walk.push(id);
                    }
                }
            }
        }
    }
    builder.insert_walk(&mut walk).map_err(|e| git_err("packing objects", dir, e))?;
    if let Ok(index) = git.index() {
        for entry in index.iter() {
            let _ = builder.insert_object(entry.id, None);
        }
    }
    let objects = builder.object_count();
    if objects == 0 {
        return Ok(PackReport::default());
    }
    fs::create_dir_all(&pack_dir).map_err(|e| io_err("create directory", &pack_dir, e))?;
    builder.write(&pack_dir, 0o444).map_err(|e| git_err("writing the pack", dir, e))?;
    let new_name = builder.name().ok().flatten().map(str::to_owned);

    let mut report = PackReport { objects, ..PackReport::default() };
    report.loose_removed = remove_loose_before(&objects_dir, started);
    for p in old_packs {
        let keep = new_name.as_deref().is_some_and(|n| p.to_string_lossy().contains(n));
        let is_pack_file = p.extension().is_some_and(|e| e == "pack" || e == "idx" || e == "rev");
        if !keep && is_pack_file && fs::remove_file(&p).is_ok() && p.extension().is_some_and(|e| e == "pack")
        {
            report.packs_removed += 1;
        }
    }
    let _ = git.refdb_compress();
    Ok(report)
}

fn remove_loose_before(objects_dir: &Path, before: SystemTime) -> usize {
    let mut removed = 0;
    let Ok(fanout) = fs::read_dir(objects_dir) else { return 0 };
    for sub in fanout.flatten() {
        let name = sub.file_name();
        let name = name.to_string_lossy();
        if name.len() != 2 || !name.chars().all(|c| c.is_ascii_hexdigit()) {
            continue;
        }
        let Ok(files) = fs::read_dir(sub.path()) else { continue };
        for f in files.flatten() {
            let old = f.metadata().and_then(|m| m.modified()).is_ok_and(|t| t < before);
            if old && fs::remove_file(f.path()).is_ok() {
                removed += 1;
            }
        }
        let _ = fs::remove_dir(sub.path());
    }
    removed
}
