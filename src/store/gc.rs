//! Keeping pack repositories small: engram packs its own objects.
//!
//! Every write adds its objects as one small pack (`packwrite`); other paths
//! (hand edits, merges) add loose objects. After some writes (see
//! `housekeeping`), [`census`] counts the packs and estimates the loose count from a few fan-out
//! directories and, past a threshold, a background job (`housekeeping`)
//! writes them into a pack together with the
//! newest packs whose size is within [`GEOMETRIC_FACTOR`] of what is being
//! packed (geometric consolidation, like `git repack --geometric`): the number
//! of packs stays logarithmic in the history and every object is rewritten
//! O(log n) times. [`pack_now`] (`engram gc`) writes everything reachable into
//! one pack. It, and a write whose reflog grew past a size (`housekeeping`), trim
//! the reflogs to the last [`REFLOG_KEEP`] entries.
//!
//! The order objects reach libgit2's delta search is `delta_order`'s.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use git2::{ObjectType, Oid, Repository};

use super::packwrite::{IDX_HEADER_LEN, IDX_MAGIC};
use super::{PackRepo, Result, git_err, io_err};

/// Fan-out directories sampled to estimate the loose-object count (1/32 of all).
const SAMPLE_DIRS: [&str; 8] = ["17", "3c", "5e", "81", "9a", "b4", "d2", "f0"];

/// Loose objects in [`SAMPLE_DIRS`] that trigger packing (≈ 32× as many in all,
/// a few dozen captures: loose objects are whole files, so they must not pile up).
const AUTO_PACK_SAMPLE_THRESHOLD: usize = 4;

/// Packs that trigger packing: the store writes each commit's objects as one
/// small pack (`packwrite`), so small packs pile up instead of loose objects.
pub(super) const AUTO_PACK_PACK_COUNT: usize = 16;

/// The number of packs (`*.pack` names only: cheap enough to check after every write).
fn pack_count(pack_dir: &Path) -> usize {
    fs::read_dir(pack_dir)
        .map(|d| d.flatten().filter(|e| e.file_name().to_string_lossy().ends_with(".pack")).count())
        .unwrap_or(0)
}

/// A pack is merged into the new one when it holds at most this many times
/// the objects of everything newer being packed.
const GEOMETRIC_FACTOR: usize = 2;

/// Reflog entries kept per log (HEAD and the branch): enough for `engram doctor`
/// to name the last good commit, without growing ~200 bytes per commit forever.
const REFLOG_KEEP: usize = 50;

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

/// What a write sees of the object store after its commit.
pub(super) struct Census {
    /// The number of packs.
    pub packs: usize,
    /// Packing is due: past [`AUTO_PACK_PACK_COUNT`] packs, or a loose-object
    /// estimate from [`SAMPLE_DIRS`] past its threshold.
    pub due: bool,
}

/// Counts packs and samples loose objects: cheap (nine directory listings, no
/// object is read), and still run only every few writes (`housekeeping`).
pub(super) fn census(git_dir: &Path) -> Census {
    let objects = git_dir.join("objects");
    let packs = pack_count(&objects.join("pack"));
    let due = packs >= AUTO_PACK_PACK_COUNT
        || SAMPLE_DIRS
            .iter()
            .map(|d| fs::read_dir(objects.join(d)).map(|d| d.count()).unwrap_or(0))
            .sum::<usize>()
            >= AUTO_PACK_SAMPLE_THRESHOLD;
    Census { packs, due }
}

/// A pack file of the repository.
pub(super) struct PackFile {
    /// `objects/pack/pack-<id>` without extension.
    base: PathBuf,
    objects: usize,
    modified: SystemTime,
    /// The size of the `.pack` file.
    bytes: u64,
}

impl PackFile {
    fn with_ext(&self, ext: &str) -> PathBuf {
        self.base.with_extension(ext)
    }
}

/// Packs the loose objects and the newest packs the geometric rule selects into
/// one new pack, then deletes what it covers.
///
/// Runs on a background thread with its own `git` handle, holding the gc lock
/// but NOT the write lock (see `housekeeping`): writers keep committing
/// meanwhile. A delta merge is made by a worker process when there is one
/// (`merge_worker`); the thread waits for it, so the lock is held throughout. That is safe because
/// - the set merged is fixed up front (the loose objects and packs listed now);
///   a pack or loose object a writer adds later is not in it and is left alone;
/// - nothing is deleted until the new pack is complete: `write_pack` returns
///   after it renamed the `.pack` and then the `.idx` into place, so every
///   object of a deleted file is already findable in the new pack, and a pack is
///   only deleted when every id its index lists went into the builder;
/// - objects are only moved, never dropped (unreachable ones are packed too), so
///   an object a concurrent writer found (and therefore did not write again) and
///   refers to in its new commit exists before, during and after the run;
/// - a reader that has an old pack open keeps reading it (an unlinked file
///   stays readable through its open descriptor and mappings); one that had not
///   opened it yet misses it, and libgit2 then rescans `objects/pack` and finds
///   the object in the new pack (`git_odb_refresh` on a miss), as with `git repack`.
///
/// With [`Merge::CopyOnly`] (a write's merge while the background job runs, see
/// `housekeeping`) it merges packs only, and only when it can copy them; the packs
/// another merge of this process has planned ([`Claims`]) are left to it.
pub(super) fn pack_geometric(
    git: &Repository,
    dir: &Path,
    claims: &Claims,
    how: Merge<'_>,
) -> Result<PackReport> {
    let started = SystemTime::now();
    let objects_dir = git.path().join("objects");
    let pack_dir = objects_dir.join("pack");
    let loose = match how {
        Merge::Background(_) => loose_objects(&objects_dir)?,
        Merge::CopyOnly | Merge::Tail(_) => Vec::new(),
    };
    let mut merged: Vec<(PackFile, Vec<Oid>)> = Vec::new();
    let mut total = loose.len();
    let mut merged_bytes = 0u64;
    // Planned under the claims' lock, so that two merges never plan the same pack.
    let mut claimed = claims.lock();
    let packs: Vec<PackFile> = packs(&pack_dir);
    let all_bytes: u64 = packs.iter().map(|p| p.bytes).sum();
    // A run of neighbours in the newest-first order: packs another merge of this process
    // planned are passed over only at the front (a write's copy of the newest packs) and end
    // the run after that. A run that jumped over them would make a pack whose history has a
    // gap another pack holds, and the walk naming objects for the delta search
    // (`delta_order`) stops at such a gap: what lies past it got poor deltas.
    let packs: Vec<PackFile> = packs
        .into_iter()
        .skip_while(|p| claimed.contains(&p.base))
        .take_while(|p| !claimed.contains(&p.base))
        .collect();
    // Past the pack-count threshold a run merges at least two packs, so that it lowers the count
    // even when a few loose objects (which seed the size rule) are all that is new.
    let copy_only = matches!(how, Merge::CopyOnly);
    let tail = matches!(how, Merge::Tail(_));
    let at_least = if packs.len() >= AUTO_PACK_PACK_COUNT || copy_only { 2 } else { 0 };
    let packs = if tail { heavy_tail(packs) } else { packs };
    for pack in packs {
        // With no loose objects, the newest pack (a write's own) seeds the run. (A tail
        // merge takes every pack `heavy_tail` chose.)
        if !tail && total > 0 && pack.objects > GEOMETRIC_FACTOR * total && merged.len() >= at_least {
            break;
        }
        // A write's merge stays a copy: within the object limit and the share of the bytes
        // (the undeltified packs it makes are merged with deltas by a later background run).
        if copy_only
            && (total + pack.objects > COPY_MERGE_MAX_OBJECTS
                || (merged_bytes + pack.bytes).saturating_mul(COPY_MERGE_SHARE) > all_bytes)
        {
            break;
        }
        // A pack whose index cannot be read stays as it is (and stops the merge: only a
        // run of the newest packs is merged, so the commit walk below sees their history).
        let Some(ids) = pack_ids(&pack.with_ext("idx")) else { break };
        total += pack.objects;
        merged_bytes += pack.bytes;
        merged.push((pack, ids));
    }
    if loose.is_empty() && merged.len() < 2 {
        return Ok(PackReport::default());
    }
    // (A write's merge is within both limits by construction; a tail merge is never a copy.)
    let copyable = !tail
        && total <= COPY_MERGE_MAX_OBJECTS
        && merged_bytes.saturating_mul(COPY_MERGE_SHARE) <= all_bytes;
    let _planned = Planned::claim(claims, &mut claimed, merged.iter().map(|(p, _)| p.base.clone()).collect());
    drop(claimed);
    if copyable {
        let (whole, packed_loose) = read_loose(git, dir, &loose)?;
        let copy = || copy_merge(&pack_dir, whole, packed_loose, &merged, started);
        let copied = if copy_only { copy()? } else { at_idle_priority(copy)? };
        if let Some(report) = copied {
            return Ok(report);
        }
    }
    let (Merge::Background(gc_lock) | Merge::Tail(gc_lock)) = how else {
        return Ok(PackReport::default());
    };
    // A delta merge runs in a worker process at the idle priority when this process
    // has one (the `engram` binary): libgit2's pack-window lock is one per process, so
    // a merge there never stalls this process's writes, and the CPU it uses is what
    // no one else wants. Without one (library use, unit tests), it runs here.
    if let Some(report) = super::merge_worker::merge_in_worker(git.path(), gc_lock, &loose, &merged) {
        return report;
    }
    let Some(written) = delta_merge(git, dir, loose, merged, started)? else {
        return Ok(PackReport::default());
    };
    Ok(written.retire(&pack_dir))
}

/// A pack a merge wrote, and what it covers (deleted by [`Written::retire`]).
pub(super) struct Written {
    name: String,
    stamp: SystemTime,
    objects: usize,
    packed_loose: Vec<PathBuf>,
    covered: Vec<PathBuf>,
}

impl Written {
    /// Dates the new pack and deletes the loose objects and packs it covers.
    pub(super) fn retire(self, pack_dir: &Path) -> PackReport {
        retire_merged(pack_dir, &self.name, self.stamp, self.objects, self.packed_loose, self.covered)
    }
}

/// The merge of [`pack_geometric`] with libgit2's pack builder (a delta search, in
/// the order of `delta_order::insert_reachable`): writes the `loose` objects and the `merged` packs
/// into one new pack. `None` when there was nothing to write.
pub(super) fn delta_merge(
    git: &Repository,
    dir: &Path,
    loose: Vec<(Oid, PathBuf)>,
    merged: Vec<(PackFile, Vec<Oid>)>,
    started: SystemTime,
) -> Result<Option<Written>> {
    let pack_dir = git.path().join("objects/pack");
    let mut members: HashSet<Oid> = loose.iter().map(|(id, _)| *id).collect();
    for (_, ids) in &merged {
        members.extend(ids.iter().copied());
    }

    let mut builder = git.packbuilder().map_err(|e| git_err("packing objects", dir, e))?;
    // (An object refused here is inserted unordered below, or its pack is not covered.)
    let _ = super::delta_order::insert_reachable(&mut builder, git, &|id| members.contains(id));
    // Everything else (objects no ref reaches, e.g. left by a killed writer) goes in as it is.
    let mut packed_loose = Vec::with_capacity(loose.len());
    for (id, path) in loose {
        // An unreadable object stays loose (and `engram doctor` reports it).
        if builder.insert_object(id, None).is_ok() {
            packed_loose.push(path);
        }
    }
    // The new pack takes the place of the newest pack it merges in the newest-first
    // order, so that packs writers add meanwhile stay "newer" and the next run starts
    // from them instead of rewriting this one.
    let stamp = merged.iter().map(|(p, _)| p.modified).max().unwrap_or(started);
    let mut covered = Vec::with_capacity(merged.len());
    for (pack, ids) in merged {
        if ids.iter().all(|id| builder.insert_object(*id, None).is_ok()) {
            covered.push(pack.base);
        }
    }
    let objects = builder.object_count();
    if objects == 0 {
        return Ok(None);
    }
    #[cfg(test)]
    super::housekeeping::test_gate::pass(git.path());
    let name = write_pack(&mut builder, &pack_dir, dir)?;
    Ok(Some(Written { name, stamp, objects, packed_loose, covered }))
}

/// The pack `pack-<id>` of `pack_dir` as a merge plans it: the file and the ids its
/// index lists; `None` when it is not there or its index cannot be read.
pub(super) fn planned_pack(pack_dir: &Path, id: Oid) -> Option<(PackFile, Vec<Oid>)> {
    let base = pack_dir.join(format!("pack-{id}"));
    let meta = fs::metadata(base.with_extension("pack")).ok()?;
    let ids = pack_ids(&base.with_extension("idx"))?;
    let pack = PackFile { base, objects: ids.len(), modified: meta.modified().ok()?, bytes: meta.len() };
    Some((pack, ids))
}

/// The id in a pack's name (`pack-<id>`).
pub(super) fn pack_id(pack: &PackFile) -> Option<Oid> {
    let name = pack.base.file_name()?.to_str()?;
    name.strip_prefix("pack-").and_then(|hex| Oid::from_str(hex).ok())
}

/// Which merges [`pack_geometric`] may make.
#[derive(Debug, Clone, Copy)]
pub(super) enum Merge<'a> {
    /// Any (the background job, which holds the gc lock through this open lock file):
    /// loose objects and packs, copied or delta-searched.
    Background(&'a fs::File),
    /// Only packs, and only by copying them (a few milliseconds, in a write).
    CopyOnly,
    /// The packs newer than the largest, delta-searched, when those
    /// packs weigh more than 1/[`TAIL_SHARE`] of the largest (see [`heavy_tail`]): the
    /// background job's last run (holding the gc lock through this file), so that it does
    /// not leave the copies it and the writes made (whole objects) beside the history.
    Tail(&'a fs::File),
}

/// See [`Merge::Tail`].
const TAIL_SHARE: u64 = 4;

/// The packs a [`Merge::Tail`] merges: the packs newer than the largest (`packs` is in
/// newest-first order), when there are at least two of them and they weigh more than
/// 1/[`TAIL_SHARE`] of the largest; else none. Only packs newer than it: a merge of packs on
/// both sides of the largest would make a pack whose history has a gap (see `delta_order`).
///
/// Copy merges keep the whole objects of the writes' packs (a category file whole, every
/// version), and each merges at most 1/[`COPY_MERGE_SHARE`] of the bytes; but copies of
/// copies, and the writes' backlog copies while a job runs, add up. Geometric merges
/// count objects, not bytes, so a job could end (fewer than [`AUTO_PACK_PACK_COUNT`]
/// packs) with most of the repository's bytes in such packs: 5.5× the text at 1,000
/// memories (a 7,591-object base of 651 KB beside six copies of 870 KB), against 3.4× for
/// delta-searched packs, in the contended bench.
fn heavy_tail(packs: Vec<PackFile>) -> Vec<PackFile> {
    let Some(largest) = packs.iter().map(|p| p.bytes).max() else { return Vec::new() };
    let tail: Vec<PackFile> = packs.into_iter().take_while(|p| p.bytes != largest).collect();
    let tail_bytes: u64 = tail.iter().map(|p| p.bytes).sum();
    if tail.len() < 2 || tail_bytes.saturating_mul(TAIL_SHARE) <= largest {
        return Vec::new();
    }
    tail
}

/// The packs this process's merges of one repository have planned and not yet
/// deleted. A write merges the newest packs itself while the background job is
/// busy with older ones (`housekeeping`): the job holds the gc lock, so no other
/// process merges, and each merge of this process plans only unclaimed packs.
#[derive(Debug, Clone, Default)]
pub(super) struct Claims(Arc<Mutex<HashSet<PathBuf>>>);

impl Claims {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<PathBuf>> {
        // The set is consistent after any panic (plain inserts and removes).
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// One merge's claimed packs, released when the merge is over (done or failed).
struct Planned<'a> {
    claims: &'a Claims,
    bases: Vec<PathBuf>,
}

impl<'a> Planned<'a> {
    fn claim(claims: &'a Claims, claimed: &mut HashSet<PathBuf>, bases: Vec<PathBuf>) -> Self {
        claimed.extend(bases.iter().cloned());
        Planned { claims, bases }
    }
}

impl Drop for Planned<'_> {
    fn drop(&mut self) {
        let mut claimed = self.claims.lock();
        for base in &self.bases {
            claimed.remove(base);
        }
    }
}

/// A merge copies the merged packs' entries as they are (`packcopy`), with no delta
/// search, when it merges at most this many objects and at most 1/[`COPY_MERGE_SHARE`]
/// of the bytes of all packs: the per-write packs of the last writes. Larger merges (the
/// history's big packs, each object O(log n) times) search deltas, and fold the copied
/// packs' undeltified objects into them; a job's last run folds what is left when it
/// weighs enough ([`Merge::Tail`]).
const COPY_MERGE_MAX_OBJECTS: usize = 4096;
/// See [`COPY_MERGE_MAX_OBJECTS`].
const COPY_MERGE_SHARE: u64 = 8;

/// A loose object read whole: its kind, id and content.
type WholeObject = (ObjectType, Oid, Vec<u8>);

/// The `loose` objects that can be read, whole, and the paths of those files.
fn read_loose(
    git: &Repository,
    dir: &Path,
    loose: &[(Oid, PathBuf)],
) -> Result<(Vec<WholeObject>, Vec<PathBuf>)> {
    let mut whole = Vec::with_capacity(loose.len());
    let mut packed_loose = Vec::with_capacity(loose.len());
    if loose.is_empty() {
        return Ok((whole, packed_loose));
    }
    let odb = git.odb().map_err(|e| git_err("packing objects", dir, e))?;
    for (id, path) in loose {
        // An unreadable object stays loose (and `engram doctor` reports it).
        if let Ok(object) = odb.read(*id) {
            whole.push((object.kind(), *id, object.data().to_vec()));
            packed_loose.push(path.clone());
        }
    }
    Ok((whole, packed_loose))
}

/// Runs the background job's copy merge on a thread of its own in the idle scheduling
/// class (`housekeeping::lower_priority`): a write or the client that wakes up takes the
/// CPU from it at once. Only the copy, which reads and writes files with no lock of
/// libgit2 (its pack-window lock is one per process): a thread that holds such a lock
/// and gets no CPU would stall the write that needs it (a delta merge at the idle
/// priority made writes wait 70–420 ms for libgit2's lock). A copy that panics, or a
/// thread that cannot start, is `None`: the builder merges instead.
fn at_idle_priority(copy: impl FnOnce() -> Result<Option<PackReport>> + Send) -> Result<Option<PackReport>> {
    std::thread::scope(|scope| {
        let thread = std::thread::Builder::new().name("engram-copy".to_owned()).spawn_scoped(scope, || {
            super::housekeeping::lower_priority();
            copy()
        });
        match thread.map(|t| t.join()) {
            Ok(Ok(copied)) => copied,
            Ok(Err(_)) | Err(_) => Ok(None),
        }
    })
}

/// The merge of `pack_geometric` by copying (`packcopy`); `None` when a pack cannot be
/// copied as it is (the builder merges then).
fn copy_merge(
    pack_dir: &Path,
    whole: Vec<WholeObject>,
    packed_loose: Vec<PathBuf>,
    merged: &[(PackFile, Vec<Oid>)],
    started: SystemTime,
) -> Result<Option<PackReport>> {
    let bases: Vec<&Path> = merged.iter().map(|(p, _)| p.base.as_path()).collect();
    let Some(encoded) = super::packcopy::concatenate(&bases, &whole)? else { return Ok(None) };
    #[cfg(test)]
    if let Some(git_dir) = pack_dir.parent().and_then(Path::parent) {
        super::housekeeping::test_gate::pass(git_dir);
    }
    let new_name = install_staged(pack_dir, |staging| {
        for (bytes, ext) in [(&encoded.pack, "pack"), (&encoded.index, "idx")] {
            let path = staging.join(format!("pack-{}.{ext}", encoded.name));
            super::packwrite::create_read_only(&path)
                .and_then(|mut file| std::io::Write::write_all(&mut file, bytes))
                .map_err(|e| io_err("write", &path, e))?;
        }
        Ok(encoded.name.clone())
    })?;
    let stamp = merged.iter().map(|(p, _)| p.modified).max().unwrap_or(started);
    let covered = merged.iter().map(|(p, _)| p.base.clone()).collect();
    let objects = encoded.objects;
    Ok(Some(retire_merged(pack_dir, &new_name, stamp, objects, packed_loose, covered)))
}

/// After a merge wrote pack `new_name`: dates it `stamp` (see `pack_geometric`) and
/// deletes the loose objects and the packs it covers.
fn retire_merged(
    pack_dir: &Path,
    new_name: &str,
    stamp: SystemTime,
    objects: usize,
    packed_loose: Vec<PathBuf>,
    covered: Vec<PathBuf>,
) -> PackReport {
    let _ =
        fs::File::open(pack_dir.join(format!("pack-{new_name}.pack"))).and_then(|f| f.set_modified(stamp));
    let mut report = PackReport { objects, ..PackReport::default() };
    for path in packed_loose {
        if fs::remove_file(&path).is_ok() {
            report.loose_removed += 1;
        }
        if let Some(parent) = path.parent() {
            let _ = fs::remove_dir(parent);
        }
    }
    for base in covered {
        let same = base.to_string_lossy().ends_with(new_name);
        if !same && remove_pack(&base) {
            report.packs_removed += 1;
        }
    }
    report
}

/// Writes the pack `builder` holds into `pack_dir` (pack and index, read-only)
/// and returns its name. The pack is built in memory and indexed in one go:
/// `git_packbuilder_write` hands the indexer one object at a time, and the
/// indexer unmaps its pack windows on every call — on a 2-core VM those unmaps
/// (TLB shootdowns) were a fifth of a packing job's time.
///
/// libgit2's indexer renames the `.idx` into place before the `.pack`: a
/// process rescanning `objects/pack` in between skips the new pack, and once
/// the packs it merged are deleted, misses their objects (its one rescan per
/// miss is spent). So the indexer works in a directory of its own, and the
/// pack is moved in first and its index last, as git does: a pack is visible
/// only complete.
fn write_pack(builder: &mut git2::PackBuilder<'_>, pack_dir: &Path, dir: &Path) -> Result<String> {
    let mut bytes = git2::Buf::new();
    builder.write_buf(&mut bytes).map_err(|e| git_err("writing the pack", dir, e))?;
    install_staged(pack_dir, |staging| {
        let mut indexer = git2::Indexer::new(None, staging, 0o444, false)
            .map_err(|e| git_err("indexing the pack", dir, e))?;
        std::io::Write::write_all(&mut indexer, &bytes).map_err(|e| io_err("index the pack", staging, e))?;
        indexer.commit().map_err(|e| git_err("indexing the pack", dir, e))
    })
}

/// Has `write` put `pack-<name>.pack` and `.idx` into a staging directory of this merge
/// (`tmp_engram_merge_*`, which writers' clean-up leaves alone: see
/// [`remove_dead_temp_files`]), then moves the pack into `pack_dir` and its index last.
/// Returns the name.
fn install_staged(pack_dir: &Path, write: impl FnOnce(&Path) -> Result<String>) -> Result<String> {
    static STAGED: AtomicU64 = AtomicU64::new(0);
    fs::create_dir_all(pack_dir).map_err(|e| io_err("create directory", pack_dir, e))?;
    let staging = pack_dir.join(format!(
        "{}merge_{}_{}",
        super::packwrite::TEMP_PREFIX,
        std::process::id(),
        STAGED.fetch_add(1, Ordering::Relaxed)
    ));
    fs::create_dir(&staging).map_err(|e| io_err("create directory", &staging, e))?;
    let written = write(&staging).and_then(|name| {
        for ext in ["pack", "idx"] {
            let file = format!("pack-{name}.{ext}");
            fs::rename(staging.join(&file), pack_dir.join(&file))
                .map_err(|e| io_err("rename into place", &pack_dir.join(&file), e))?;
        }
        Ok(name)
    });
    let _ = fs::remove_dir_all(&staging);
    written
}

/// Writes all reachable objects (and those the index names) into one pack and
/// deletes the rest. Call with the write lock held: it drops unreachable objects,
/// which is only safe while no writer is between writing its objects and moving
/// its branch. Waits for the gc lock (a background run finishes first).
pub(super) fn pack_now(repo: &PackRepo) -> Result<PackReport> {
    let _gc = super::housekeeping::gc_lock(&repo.git_dir(), true)?;
    let git = &repo.repo;
    let dir = &repo.dir;
    let started = SystemTime::now();
    let objects_dir = repo.git_dir().join("objects");
    let pack_dir = objects_dir.join("pack");
    remove_dead_temp_files(&pack_dir, true);
    let old_packs = packs(&pack_dir);
    trim_reflogs(repo);

    let mut builder = git.packbuilder().map_err(|e| git_err("packing objects", dir, e))?;
    super::delta_order::insert_reachable(&mut builder, git, &|_| true)
        .map_err(|e| git_err("packing objects", dir, e))?;
    for id in super::delta_order::ref_objects(git) {
        let _ = builder.insert_object(id, None);
    }
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
    let new_name = write_pack(&mut builder, &pack_dir, dir)?;

    let mut report = PackReport { objects, ..PackReport::default() };
    report.loose_removed = remove_loose_before(&objects_dir, started);
    for pack in old_packs {
        let keep = pack.base.to_string_lossy().ends_with(&new_name);
        if !keep && remove_pack(&pack.base) {
            report.packs_removed += 1;
        }
    }
    let _ = git.refdb_compress();
    Ok(report)
}

/// Where the loose object `id` lives in `objects_dir`.
pub(super) fn loose_path(objects_dir: &Path, id: Oid) -> PathBuf {
    let hex = id.to_string();
    objects_dir.join(&hex[..2]).join(&hex[2..])
}

/// Every loose object file: its id and path.
fn loose_objects(objects_dir: &Path) -> Result<Vec<(Oid, PathBuf)>> {
    let mut loose = Vec::new();
    for sub in fs::read_dir(objects_dir).map_err(|e| io_err("read", objects_dir, e))?.flatten() {
        let prefix = sub.file_name().to_string_lossy().into_owned();
        if prefix.len() != 2 || !prefix.chars().all(|c| c.is_ascii_hexdigit()) {
            continue;
        }
        let Ok(files) = fs::read_dir(sub.path()) else { continue };
        for f in files.flatten() {
            let rest = f.file_name().to_string_lossy().into_owned();
            if let Ok(oid) = Oid::from_str(&format!("{prefix}{rest}"))
                && rest.len() == 38
            {
                loose.push((oid, f.path()));
            }
        }
    }
    Ok(loose)
}

/// The packs with a readable index and no `.keep` file, newest first.
fn packs(pack_dir: &Path) -> Vec<PackFile> {
    let mut out: Vec<PackFile> = fs::read_dir(pack_dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "pack"))
                .filter(|p| !p.with_extension("keep").exists())
                .filter_map(|p| {
                    let meta = fs::metadata(&p).ok()?;
                    let modified = meta.modified().ok()?;
                    let objects = pack_object_count(&p.with_extension("idx"))?;
                    Some(PackFile { base: p.with_extension(""), objects, modified, bytes: meta.len() })
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort_by(|a, b| b.modified.cmp(&a.modified).then_with(|| b.base.cmp(&a.base)));
    out
}

/// The object count of a version-2 pack index.
fn pack_object_count(idx: &Path) -> Option<usize> {
    use std::io::Read;
    let mut head = [0u8; IDX_HEADER_LEN];
    fs::File::open(idx).ok()?.read_exact(&mut head).ok()?;
    if head[..4] != IDX_MAGIC || head[4..8] != [0, 0, 0, 2] {
        return None;
    }
    let last: [u8; 4] = head[IDX_HEADER_LEN - 4..].try_into().ok()?;
    Some(u32::from_be_bytes(last) as usize)
}

/// The object ids a version-2 pack index lists.
fn pack_ids(idx: &Path) -> Option<Vec<Oid>> {
    let bytes = fs::read(idx).ok()?;
    let count = pack_object_count(idx)?;
    let ids = bytes.get(IDX_HEADER_LEN..IDX_HEADER_LEN + count * 20)?;
    ids.chunks_exact(20).map(|raw| Oid::from_bytes(raw).ok()).collect()
}

/// Name prefixes of the temp files a packer killed mid-write leaves in
/// `objects/pack`: libgit2's indexer writes the pack as `pack_git2_<random>`
/// (and its index next to it, as a `.lock` file) and renames both into place
/// when done; git uses `tmp_pack_*` and `tmp_idx_*`; a write's own pack is
/// `tmp_engram_*` until renamed (see `packwrite`), and a merge indexes in a
/// `tmp_engram_merge_*` directory (see `write_pack`).
const TEMP_PREFIXES: [&str; 4] = ["pack_git2_", "tmp_pack_", "tmp_idx_", super::packwrite::TEMP_PREFIX];

/// Deletes temp files in `pack_dir` last written more than `older_than` ago.
/// A temp file is never an object's only copy (the object is in the writer's
/// memory until the rename), and a live writer keeps writing to its temp file
/// for milliseconds, so one untouched for minutes belongs to a dead process.
pub(super) fn remove_stale_temp_files(pack_dir: &Path, older_than: std::time::Duration) -> usize {
    remove_temp_files(pack_dir, |_, age| age > older_than)
}

/// Deletes the temp files of engram's own writes that failed or died, at any
/// age (a write leaves none behind when it can, but a full disk or a kill can
/// defeat that), and other temp files once [`super::housekeeping::STALE_TEMP_AGE`]
/// old. Call with the pack's write lock held — every live write holds it while
/// its `tmp_engram_*` files exist — and, with `gc_locked`, the gc lock too,
/// which a merge holds while its `tmp_engram_merge_*` directory exists.
pub(super) fn remove_dead_temp_files(pack_dir: &Path, gc_locked: bool) -> usize {
    let merge = format!("{}merge_", super::packwrite::TEMP_PREFIX);
    remove_temp_files(pack_dir, |name, age| {
        let ours =
            name.starts_with(super::packwrite::TEMP_PREFIX) && (gc_locked || !name.starts_with(&merge));
        ours || age > super::housekeeping::STALE_TEMP_AGE
    })
}

/// Deletes the temp files (and merge directories) in `pack_dir` for which
/// `remove(name, age since last written)` holds.
fn remove_temp_files(pack_dir: &Path, remove: impl Fn(&str, std::time::Duration) -> bool) -> usize {
    let Ok(entries) = fs::read_dir(pack_dir) else { return 0 };
    let now = SystemTime::now();
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if !TEMP_PREFIXES.iter().any(|p| name.starts_with(p)) {
            continue;
        }
        let Some(age) =
            e.metadata().and_then(|m| m.modified()).ok().map(|t| now.duration_since(t).unwrap_or_default())
        else {
            continue;
        };
        // A merge's indexer works in a directory of its own (see `write_pack`).
        let path = e.path();
        if remove(&name, age) && (fs::remove_file(&path).is_ok() || fs::remove_dir_all(&path).is_ok()) {
            removed += 1;
        }
    }
    removed
}

/// Deletes a pack (index first, so that no reader sees an index without its pack).
fn remove_pack(base: &Path) -> bool {
    let removed = fs::remove_file(base.with_extension("idx")).is_ok();
    for ext in ["pack", "rev", "bitmap", "mtimes"] {
        let _ = fs::remove_file(base.with_extension(ext));
    }
    removed
}

/// Keeps the newest [`REFLOG_KEEP`] entries of the HEAD and branch reflogs, under git's
/// lock of each ref (see [`super::refswap::trim_reflog`]: git appends to them beside us).
/// Call with the write lock held: writers append to these files.
pub(super) fn trim_reflogs(repo: &PackRepo) {
    let mut logs = vec!["HEAD".to_owned()];
    if let Ok(branch) = repo.branch_ref()
        && branch != "HEAD"
    {
        logs.push(branch);
    }
    for name in logs {
        super::refswap::trim_reflog(&repo.git_dir(), &name, REFLOG_KEEP, repo.options.durable);
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Appends a line to `log.md`, rolling 16 lines into `_log/log/NNNNNN.md` when it has 32.
    fn append(repo: &PackRepo, i: usize) {
        repo.write(|snap| {
            let old = snap.read_text("log.md")?.unwrap_or_default();
            let mut lines: Vec<String> = old.lines().map(str::to_owned).collect();
            lines.push(format!("entry {i}: some text that takes a few dozen bytes, like a memory"));
            let mut changes = super::super::Changes::default();
            if lines.len() >= 32 {
                let rolled: Vec<String> = lines.drain(..16).collect();
                changes.put(format!("_log/log/{:06}.md", i), rolled.join("\n"));
            }
            changes.put("log.md", lines.join("\n"));
            let message = super::super::CommitMessage::new(format!("append {i}"));
            Ok::<_, super::super::StoreError>(super::super::Edit::Commit { changes, message, value: () })
        })
        .expect("write");
    }

    #[test]
    fn automatic_packing_keeps_few_packs_few_loose_objects_and_all_history() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = PackRepo::open_or_adopt(dir.path(), super::super::StoreOptions::default()).expect("open");
        let git = repo.git_dir();
        let mut most_packs = 0;
        const WRITES: usize = 1000;
        for i in 0..WRITES {
            append(&repo, i);
            // Packing runs in the background; waiting makes the count deterministic.
            repo.wait_for_housekeeping();
            most_packs = most_packs.max(packs(&git.join("objects/pack")).len());
        }
        let loose = loose_objects(&git.join("objects")).expect("loose").len();
        // ~4 objects per write (commit, tree, 2 blobs): 4,000 objects in all.
        assert!(loose < 1000, "{loose} loose objects");
        // Each write adds a small pack; packing runs once AUTO_PACK_PACK_COUNT exist.
        assert!((1..=AUTO_PACK_PACK_COUNT + 4).contains(&most_packs), "{most_packs} packs at once");
        assert!(repo.repo.reflog("HEAD").expect("reflog").len() < 2 * REFLOG_KEEP + 200);
        // Every commit and every file of it is still readable.
        let mut walk = repo.repo.revwalk().expect("revwalk");
        walk.push_head().expect("head");
        let mut commits = 0;
        for id in walk {
            let commit = repo.repo.find_commit(id.expect("id")).expect("commit");
            let tree = commit.tree().expect("tree");
            tree.walk(git2::TreeWalkMode::PreOrder, |_, e| {
                repo.repo.find_object(e.id(), None).expect("object");
                git2::TreeWalkResult::Ok
            })
            .expect("walk");
            commits += 1;
        }
        assert_eq!(commits, WRITES, "the writes (an empty folder has no adopt commit)");
        let before = repo.git_size();
        let report = repo.pack_objects().expect("gc");
        assert!(report.objects > WRITES * 3 && packs(&git.join("objects/pack")).len() == 1);
        assert!(repo.git_size() <= before, "one pack is no larger than several");
        let staged: Vec<_> = fs::read_dir(git.join("objects/pack"))
            .expect("pack dir")
            .flatten()
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name())
            .collect();
        assert!(staged.is_empty(), "merge directories left: {staged:?}");
    }

    /// A merge takes a run of neighbouring packs: one that another merge of this process
    /// planned ends the run instead of being jumped over.
    #[test]
    fn a_merge_stops_at_a_pack_another_merge_planned() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = PackRepo::open_or_adopt(dir.path(), super::super::StoreOptions::default()).expect("open");
        let pack_dir = repo.git_dir().join("objects/pack");
        // Holding the gc lock keeps the writes from packing: one pack per write.
        let _gc = super::super::housekeeping::gc_lock(&repo.git_dir(), true).expect("lock");
        for i in 0..40 {
            append(&repo, i);
        }
        let before = packs(&pack_dir);
        assert!(before.len() >= 40, "{} packs", before.len());
        let claims = Claims::default();
        claims.lock().insert(before[2].base.clone());
        let report = pack_geometric(&repo.repo, &repo.dir, &claims, Merge::CopyOnly).expect("copy");
        assert_eq!(report.packs_removed, 2, "the two newest, not the packs past the planned one");
        let after: Vec<PathBuf> = packs(&pack_dir).into_iter().map(|p| p.base).collect();
        assert!(before[2..].iter().all(|p| after.contains(&p.base)), "older packs untouched");
        assert_eq!(repo.verify().expect("every object readable"), 40);
    }

    /// A job that ends by count with copies (whole objects) beside the history merges them
    /// with deltas; a light tail is left alone.
    #[test]
    fn a_heavy_tail_of_whole_objects_is_merged_with_deltas() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = PackRepo::open_or_adopt(dir.path(), super::super::StoreOptions::default()).expect("open");
        let pack_dir = repo.git_dir().join("objects/pack");
        for i in 0..100 {
            append(&repo, i);
        }
        // A file that barely compresses (48 KiB a block): four blocks in the history, the
        // largest pack; then six versions of one block, each write's pack holding it whole.
        let blocks = |n: u64, seed: u64| -> String {
            (0..3000 * n)
                .map(|i| format!("{:016x}\n", (i + seed).wrapping_mul(0x9E37_79B9_7F4A_7C15)))
                .collect()
        };
        repo.write(|_| {
            let mut changes = super::super::Changes::default();
            changes.put("base.md", blocks(4, 1 << 40));
            let message = super::super::CommitMessage::new("base");
            Ok::<_, super::super::StoreError>(super::super::Edit::Commit { changes, message, value: () })
        })
        .expect("write");
        repo.wait_for_housekeeping();
        repo.pack_objects().expect("gc");
        let block = blocks(1, 0);
        for i in 0..6 {
            repo.write(|_| {
                let mut changes = super::super::Changes::default();
                changes.put("big.md", format!("version {i}\n{block}"));
                let message = super::super::CommitMessage::new(format!("big {i}"));
                Ok::<_, super::super::StoreError>(super::super::Edit::Commit { changes, message, value: () })
            })
            .expect("write");
        }
        repo.wait_for_housekeeping();
        let bytes = |packs: &[PackFile]| packs.iter().map(|p| p.bytes).sum::<u64>();
        let before = packs(&pack_dir);
        assert_eq!(before.len(), 7, "the history and six writes");
        let claims = Claims::default();
        let lock = super::super::housekeeping::gc_lock(&repo.git_dir(), true).expect("lock").expect("taken");
        let report = pack_geometric(&repo.repo, &repo.dir, &claims, Merge::Tail(&lock)).expect("tail");
        let after = packs(&pack_dir);
        assert_eq!((report.packs_removed, after.len()), (6, 2), "the six merged into one");
        let tail_before = bytes(&before) - before.iter().map(|p| p.bytes).max().unwrap_or(0);
        assert!(
            bytes(&after) < bytes(&before) - tail_before / 2,
            "deltas: {} bytes before, {} after",
            bytes(&before),
            bytes(&after)
        );
        assert_eq!(repo.verify().expect("every object readable"), 107, "100 appends and 7 writes");
        let again = pack_geometric(&repo.repo, &repo.dir, &claims, Merge::Tail(&lock)).expect("tail again");
        assert_eq!(again.packs_removed, 0, "a light tail is left alone");
    }

    /// A merge directory a killed packer left is removed once stale, like its temp files.
    #[test]
    fn stale_merge_directories_are_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let staged = dir.path().join(format!("{}merge_1_0", super::super::packwrite::TEMP_PREFIX));
        fs::create_dir(&staged).expect("mkdir");
        fs::write(staged.join("pack-x.pack"), b"PACK").expect("write");
        assert_eq!(remove_stale_temp_files(dir.path(), std::time::Duration::from_secs(3600)), 0);
        assert!(staged.exists(), "a fresh one may be a live packer's");
        assert_eq!(remove_stale_temp_files(dir.path(), std::time::Duration::ZERO), 1);
        assert!(!staged.exists());
    }

    /// Under the write lock, a write's own temp files are dead at any age; a merge's
    /// directory only under the gc lock too; another program's only once stale.
    #[test]
    fn dead_write_temp_files_are_removed_under_the_locks_that_prove_them_dead() {
        let dir = tempfile::tempdir().expect("tempdir");
        let prefix = super::super::packwrite::TEMP_PREFIX;
        let write_tmp = dir.path().join(format!("{prefix}0123.pack"));
        let merge_dir = dir.path().join(format!("{prefix}merge_1_0"));
        let fetch_tmp = dir.path().join("pack_git2_0123");
        fs::write(&write_tmp, b"").expect("write");
        fs::create_dir(&merge_dir).expect("mkdir");
        fs::write(&fetch_tmp, b"PACK").expect("write");
        assert_eq!(remove_dead_temp_files(dir.path(), false), 1);
        assert!(!write_tmp.exists() && merge_dir.exists() && fetch_tmp.exists());
        assert_eq!(remove_dead_temp_files(dir.path(), true), 1);
        assert!(!merge_dir.exists() && fetch_tmp.exists(), "a fresh fetch's temp file may be live");
    }
}
