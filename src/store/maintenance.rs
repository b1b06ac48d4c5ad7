//! Packing is git's job.
//!
//! Writes leave loose objects, as every git client does. After a write, every
//! [`CHECK_EVERY`]th one of this process looks at the object store the way
//! `git gc --auto` does (`gc.auto`: the loose objects estimated from
//! `objects/17`; `gc.autoPackLimit`: the packs) and, when packing is due,
//! starts `git gc --auto --quiet` at the lowest CPU priority in the
//! background — git then decides, packs, keeps what git keeps and holds its
//! own `gc.pid` lock. No write waits for it. Without `git` on `PATH`,
//! libgit2's packbuilder packs what the refs reach on a background thread and
//! removes only the loose objects that pack now holds (nothing is pruned).
//!
//! `engram gc` ([`PackRepo::pack_objects`]) runs `git gc` in the foreground
//! (everything git keeps is kept: every ref and reflog, the stash, linked
//! worktrees, a multi-pack-index, `.keep` packs, and unreachable objects for
//! `gc.pruneExpire`); `engram purge` prunes through [`prune_unreachable`].

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;

use git2::Repository;

use super::{PackRepo, Result, git_err, io_err};

/// How often (in writes of this process) a write looks at the object store.
const CHECK_EVERY: usize = 16;

/// git's defaults for `gc.auto` and `gc.autoPackLimit`.
const GC_AUTO_DEFAULT: i64 = 6700;
const GC_AUTO_PACK_LIMIT_DEFAULT: i64 = 50;

/// What a packing run did.
#[derive(Debug, Clone, Default)]
pub struct PackReport {
    /// Who packed: `git gc` or libgit2's packbuilder.
    pub packer: &'static str,
    /// Loose objects before and after.
    pub loose: (usize, usize),
    /// Packs before and after.
    pub packs: (usize, usize),
}

/// Writes of this process since the last look at the object store.
static WRITES: AtomicUsize = AtomicUsize::new(0);

/// Background packing this process started (to wait for in benchmarks and tests).
static RUNNING: Mutex<Vec<(PathBuf, JoinHandle<()>)>> = Mutex::new(Vec::new());

/// After a commit: starts packing in the background when git would (see the module docs).
pub(super) fn after_write(repo: &PackRepo) {
    if !WRITES.fetch_add(1, Ordering::Relaxed).is_multiple_of(CHECK_EVERY) {
        return;
    }
    let git_dir = repo.git_dir();
    if !packing_due(&repo.repo, &git_dir) {
        return;
    }
    let mut running = RUNNING.lock().unwrap_or_else(|p| p.into_inner());
    running.retain(|(_, job)| !job.is_finished());
    if running.iter().any(|(dir, _)| *dir == git_dir) {
        return;
    }
    let dir = repo.dir.clone();
    let job = std::thread::Builder::new().name("engram-pack".into()).spawn(move || {
        if git_on_path() {
            // `--auto`: git checks again, and skips when another gc holds `gc.pid`.
            let _ = low_priority_git(&dir, &["-c", "gc.autoDetach=false", "gc", "--auto", "--quiet"]);
        } else if let Ok(repo) = Repository::open(&dir) {
            let _ = pack_with_libgit2(&repo, &dir);
        }
    });
    if let Ok(job) = job {
        running.push((git_dir, job));
    }
}

/// Waits for the background packing this process started.
pub fn wait_for_background_packing() {
    let jobs: Vec<_> = std::mem::take(&mut *RUNNING.lock().unwrap_or_else(|p| p.into_inner()));
    for (_, job) in jobs {
        let _ = job.join();
    }
}

/// Waits for this process's background packing of the repository at `git_dir`.
pub(super) fn wait_for_pack(git_dir: &Path) {
    let mine: Vec<_> = {
        let mut running = RUNNING.lock().unwrap_or_else(|p| p.into_inner());
        let (mine, rest) = std::mem::take(&mut *running).into_iter().partition(|(d, _)| d == git_dir);
        *running = rest;
        mine
    };
    for (_, job) in mine {
        let _ = job.join();
    }
}

/// git's `gc --auto` rule: more loose objects than `gc.auto` (estimated from
/// `objects/17`, as git does) or more packs than `gc.autoPackLimit`.
fn packing_due(repo: &Repository, git_dir: &Path) -> bool {
    let config = repo.config().ok();
    let get = |key: &str, default: i64| config.as_ref().and_then(|c| c.get_i64(key).ok()).unwrap_or(default);
    let auto = get("gc.auto", GC_AUTO_DEFAULT);
    if auto <= 0 {
        return false;
    }
    let per_dir = (auto + 255) / 256;
    let sample = count_files(&git_dir.join("objects").join("17"), |_| true);
    let pack_limit = get("gc.autoPackLimit", GC_AUTO_PACK_LIMIT_DEFAULT);
    sample as i64 > per_dir || (pack_limit > 0 && packs(git_dir) as i64 > pack_limit)
}

fn count_files(dir: &Path, keep: impl Fn(&str) -> bool) -> usize {
    std::fs::read_dir(dir)
        .map(|d| d.flatten().filter(|e| e.file_name().to_str().is_some_and(&keep)).count())
        .unwrap_or(0)
}

/// The packs in `objects/pack`.
fn packs(git_dir: &Path) -> usize {
    count_files(&git_dir.join("objects").join("pack"), |n| n.ends_with(".pack"))
}

/// The loose object files in `objects/??/`.
fn loose(git_dir: &Path) -> usize {
    let objects = git_dir.join("objects");
    (0..=255u8).map(|b| count_files(&objects.join(format!("{b:02x}")), |n| n.len() == 38)).sum()
}

/// True when the `git` command can be run.
fn git_on_path() -> bool {
    static FOUND: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let version = || Command::new("git").arg("--version").stdin(Stdio::null()).output();
    *FOUND.get_or_init(|| version().is_ok_and(|out| out.status.success()))
}

/// Runs `git -C dir args…` at the lowest CPU priority (through `nice` where
/// there is one); its output is captured.
fn low_priority_git(dir: &Path, args: &[&str]) -> std::io::Result<std::process::Output> {
    let mut cmd = if cfg!(unix) && Path::new("/usr/bin/nice").exists() {
        let mut c = Command::new("/usr/bin/nice");
        c.args(["-n", "19", "git"]);
        c
    } else {
        Command::new("git")
    };
    cmd.arg("-C").arg(dir).args(args).stdin(Stdio::null()).output()
}

/// Runs `git -C dir args…` in the foreground, failing with git's own message.
fn run_git(dir: &Path, args: &[&str], step: &'static str) -> Result<()> {
    let out = low_priority_git(dir, args).map_err(|e| io_err(step, dir, e))?;
    if out.status.success() {
        return Ok(());
    }
    let message = String::from_utf8_lossy(&out.stderr).trim().to_owned();
    Err(io_err(step, dir, std::io::Error::other(format!("git {}: {message}", args.join(" ")))))
}

impl PackRepo {
    /// `engram gc`: packs the repository the way `git gc` does (see the module docs).
    pub fn pack_objects(&self) -> Result<PackReport> {
        let git_dir = self.git_dir();
        wait_for_pack(&git_dir);
        let before = (loose(&git_dir), packs(&git_dir));
        let packer = if git_on_path() {
            run_git(&self.dir, &["gc", "--quiet"], "run git gc in")?;
            "git gc"
        } else {
            pack_with_libgit2(&self.repo, &self.dir)?;
            "libgit2"
        };
        let after = (loose(&git_dir), packs(&git_dir));
        Ok(PackReport { packer, loose: (before.0, after.0), packs: (before.1, after.1) })
    }
}

/// After a history rewrite (`engram purge`): removes what is unreachable now,
/// by git's own rules of reachability (every ref, reflog, index and linked
/// worktree), at once — the rewritten commits' objects must go — and rewrites
/// git's derived files (the commit-graph) with them: `git gc --prune=now`.
/// Call after the reflog entries that name rewritten commits were expired.
pub(super) fn prune_unreachable(repo: &PackRepo) -> Result<()> {
    wait_for_pack(&repo.git_dir());
    if git_on_path() {
        return run_git(&repo.dir, &["gc", "--prune=now", "--quiet"], "prune");
    }
    let why =
        "purge needs the `git` command to remove the old objects; install git and run `engram purge` again";
    Err(io_err("prune the rewritten history of", &repo.dir, std::io::Error::other(why)))
}

/// Packs what the refs, their reflogs and the index reach into one new pack
/// with libgit2, then removes the loose objects that pack holds (a loose
/// object is removed only once it is in a pack).
fn pack_with_libgit2(repo: &Repository, dir: &Path) -> Result<()> {
    let git = |e| git_err("packing objects", dir, e);
    let mut builder = repo.packbuilder().map_err(git)?;
    let mut walk = repo.revwalk().map_err(git)?;
    let _ = walk.push_glob("refs/*");
    let _ = walk.push_head();
    if let Ok(refs) = repo.references() {
        for name in refs.flatten().filter_map(|r| r.name().ok().map(str::to_owned)) {
            if let Ok(log) = repo.reflog(&name) {
                for entry in log.iter() {
                    let _ = walk.push(entry.id_new());
                }
            }
        }
    }
    builder.insert_walk(&mut walk).map_err(git)?;
    if let Ok(index) = repo.index() {
        for entry in index.iter() {
            let _ = builder.insert_object(entry.id, None);
        }
    }
    if builder.object_count() == 0 {
        return Ok(());
    }
    let pack_dir = repo.path().join("objects").join("pack");
    std::fs::create_dir_all(&pack_dir).map_err(|e| io_err("create directory", &pack_dir, e))?;
    builder.write(&pack_dir, 0o444).map_err(git)?;
    let Ok(Some(name)) = builder.name().map(|n| n.map(str::to_owned)) else { return Ok(()) };
    let Some(packed) = idx_ids(&pack_dir.join(format!("pack-{name}.idx"))) else { return Ok(()) };
    for id in packed.iter().map(git2::Oid::to_string) {
        let _ = std::fs::remove_file(repo.path().join("objects").join(&id[..2]).join(&id[2..]));
    }
    Ok(())
}

/// The object ids a version-2 pack index lists (header, fan-out table, then the ids).
fn idx_ids(idx: &Path) -> Option<Vec<git2::Oid>> {
    const HEADER: usize = 8 + 256 * 4;
    let bytes = std::fs::read(idx).ok()?;
    if bytes.get(..8)? != b"\xfftOc\0\0\0\x02" {
        return None;
    }
    let count = u32::from_be_bytes(bytes.get(HEADER - 4..HEADER)?.try_into().ok()?) as usize;
    let ids = bytes.get(HEADER..HEADER + count * 20)?;
    ids.chunks_exact(20).map(|raw| git2::Oid::from_bytes(raw).ok()).collect()
}
