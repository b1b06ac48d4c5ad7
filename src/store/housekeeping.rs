//! Packing off the write path.
//!
//! Every write leaves one small pack (`packwrite`); merging them (`gc`) costs
//! tens of milliseconds and used to run inside the write, under the write lock,
//! so every 16th tool call waited for it. Now a write only *decides* that
//! packing is due ([`gc::census`], a few directory listings) and hands the
//! work to a background thread:
//!
//! ```text
//! write (write lock held) ── commit ── census: fewer packs than last time? ► fresh odb
//!                                          │ packing due? ──no──► return
//!                                          │ yes, and no job of this pack runs here
//!                                          ▼
//!                          try the gc lock (.git/engram-gc.lock); taken elsewhere? ► return
//!                                          ▼
//!                          spawn a thread (own git2::Repository, holds the gc lock):
//!                          remove stale temp files, gc::pack_geometric while due,
//!                          then the heavy tail of copies (gc::Merge::Tail); again
//!                          while that merged and packing is due ─► exits
//!                          (ended first, end_background_packing: the rest of the
//!                          job to a merge worker, merge_worker::hand_off ─► exits)
//! ```
//!
//! The job's copy merges (most of them) run at the idle priority
//! ([`lower_priority`]), so a write or the MCP client does not wait behind them
//! for the CPU. Its delta merges hold libgit2's pack-window lock, one per process
//! (a starved holder would stall the writes), so the `engram` binary makes them in a
//! worker process of its own, whole at the idle priority (`merge_worker`); a process
//! with no worker (library use, unit tests) makes them on the job's thread at the
//! normal priority.
//! A job that gets little CPU (a busy machine) lets the packs of a burst pile up: past [`BACKLOG_LIMIT`]
//! a write merges the newest packs itself, by copying them (`gc::Merge::CopyOnly`,
//! milliseconds), instead of waiting for the job; the two merges never plan the
//! same pack (`gc::Claims`). When nothing can be copied, the next writes leave the
//! backlog to the job for [`BACKLOG_RETRY`] packs; only past [`BACKLOG_WAIT_LIMIT`]
//! does a write wait for it.
//!
//! The thread holds the gc lock but never the write lock, so writes of this and
//! other processes go on while it packs (why that is safe: [`gc::pack_geometric`]).
//! At most one job runs per pack: per process through the registry below, across
//! processes through the gc lock (a write that finds it taken skips packing; the
//! next write past the threshold tries again). `engram gc` (`gc::pack_now`) takes
//! the write lock and then waits for the gc lock, so it never overlaps a job; no
//! one waits for the write lock while holding the gc lock, so the two cannot deadlock.
//!
//! A process does not leave a job half done when it can help it: dropping a
//! [`PackRepo`] waits for its pack's job (its `Drop` in `scoped_write`), and
//! [`end_background_packing`], called before exiting, has every job hand the rest of its
//! work to a merge worker that outlives the process (`merge_worker`). A merge worker whose
//! server was killed finishes the job itself. A process killed mid-job leaves at worst temp files (removed by
//! a later job once [`STALE_TEMP_AGE`] old) or a complete new pack beside the old
//! ones it covers (merged again by the next job): old files are deleted only
//! after the new pack is in place.

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{PackRepo, PhaseTimer, Result, gc, io_err};

/// The lock a packing job holds (`flock`, next to the write lock `engram.lock`).
const GC_LOCK_FILE: &str = "engram-gc.lock";

/// Temp files in `objects/pack` untouched this long belong to a dead process.
pub(super) const STALE_TEMP_AGE: Duration = Duration::from_secs(10 * 60);

/// How long to leave a pack alone after a job failed (so a broken repository does
/// not start a thread per write; `engram doctor` reports what is wrong).
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(60);

/// One pack's background job in this process.
struct Job {
    git_dir: PathBuf,
    /// The running (or finished, not yet joined) thread; true when it packed without error.
    thread: Option<JoinHandle<bool>>,
    /// No new job before this instant (set when a job failed).
    retry_after: Option<Instant>,
    /// The pack count the last census of this process saw (fewer now: packs were merged away).
    packs_seen: usize,
    /// Writes of this process since that census (each added one pack).
    writes_since_census: usize,
    /// The packs a merge of this process has planned (the job's, a write's).
    claims: gc::Claims,
    /// The pack count at which a write merges the backlog of the running job itself:
    /// [`BACKLOG_LIMIT`], raised by [`BACKLOG_RETRY`] after a merge that could not copy.
    backlog_at: usize,
    /// How the running job ends (see [`end_background_packing`]); new for each job.
    end: Arc<JobEnd>,
}

/// Between a job and whoever ends it.
#[derive(Default)]
struct JobEnd {
    /// Set to have the job hand the rest of its work to a merge worker.
    asked: AtomicBool,
    /// Set by the job once a merge worker took its work over.
    handed_off: AtomicBool,
}

/// The jobs of this process, one entry per pack that ever needed packing.
static JOBS: Mutex<Vec<Job>> = Mutex::new(Vec::new());

fn jobs() -> std::sync::MutexGuard<'static, Vec<Job>> {
    // A panic while holding the registry leaves consistent data (plain pushes and takes).
    JOBS.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The packing lock file of the repository at `git_dir`.
pub(super) fn gc_lock_path(git_dir: &Path) -> PathBuf {
    git_dir.join(GC_LOCK_FILE)
}

/// Opens and locks `.git/engram-gc.lock`: waits for it when `wait`, else returns
/// `None` when another job holds it. Opened for reading and writing: a job hands the
/// locked file down to its merge worker with the plan in it (`merge_worker`).
pub(super) fn gc_lock(git_dir: &Path, wait: bool) -> Result<Option<File>> {
    let path = gc_lock_path(git_dir);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|e| io_err("open the packing lock", &path, e))?;
    if wait {
        fs4::fs_std::FileExt::lock_exclusive(&file).map_err(|e| io_err("take the packing lock", &path, e))?;
        return Ok(Some(file));
    }
    match fs4::fs_std::FileExt::try_lock_exclusive(&file) {
        Ok(true) => Ok(Some(file)),
        Ok(false) => Ok(None),
        Err(e) => Err(io_err("take the packing lock", &path, e)),
    }
}

/// Called by a write after its commit, with the write lock held: starts a
/// background packing job when one is due. Never fails the write (problems are
/// logged to stderr) and never waits for packing.
/// `trace` gets the time of each step taken (`ENGRAM_TRACE_WRITES`).
pub(super) fn after_write(repo: &PackRepo, trace: &mut PhaseTimer) {
    let git_dir = repo.git_dir();
    let mut jobs = jobs();
    let index = match jobs.iter().position(|j| j.git_dir == git_dir) {
        Some(i) => i,
        None => {
            jobs.push(Job {
                git_dir: git_dir.clone(),
                thread: None,
                retry_after: None,
                packs_seen: 0,
                writes_since_census: CENSUS_EVERY,
                claims: gc::Claims::default(),
                backlog_at: BACKLOG_LIMIT,
                end: Arc::default(),
            });
            jobs.len() - 1
        }
    };
    let job = &mut jobs[index];
    // Reflogs grow by a line per write whether or not packing is due.
    if fs::metadata(git_dir.join("logs/HEAD")).is_ok_and(|m| m.len() > REFLOG_TRIM_BYTES) {
        gc::trim_reflogs(repo);
        trace.mark("reflog-trim");
    }
    job.writes_since_census += 1;
    let job_state = match &job.thread {
        None => JobState::None,
        Some(thread) if thread.is_finished() => JobState::Ended,
        Some(_) => JobState::Running,
    };
    if !should_count(job.packs_seen, job.writes_since_census, job_state, job.backlog_at) {
        trace.mark("gc-check");
        return;
    }
    // Past the backlog limit, the write merges the newest packs itself, by copying them
    // (a few milliseconds), rather than waiting for the job, which may be busy with a
    // long merge of older packs at a low priority (see `lower_priority`).
    // The job then goes on, and the count below drops the merged-away packs.
    let merged_here = job_state == JobState::Running && {
        let merged = gc::pack_geometric(&repo.repo, &repo.dir, &job.claims, gc::Merge::CopyOnly);
        trace.mark("backlog-merge");
        merged
            .unwrap_or_else(|e| {
                eprintln!("engram: {e}");
                gc::PackReport::default()
            })
            .packs_removed
            > 0
    };
    if joins_job(job_state, merged_here, job.packs_seen + job.writes_since_census) {
        wait_for_job(job);
    }
    trace.mark("job-join");
    job.writes_since_census = 0;
    let census = gc::census(&git_dir);
    if census.packs < job.packs_seen {
        forget_deleted_packs(repo);
    }
    job.packs_seen = census.packs;
    // Nothing could be copied (the newest packs' deltas need bases the job is merging,
    // say): the next writes leave the backlog to the job for a while.
    let still_running = job.thread.as_ref().is_some_and(|t| !t.is_finished());
    job.backlog_at = if still_running && !merged_here { census.packs + BACKLOG_RETRY } else { BACKLOG_LIMIT };
    trace.mark("census");
    if !census.due || job.thread.is_some() || job.retry_after.is_some_and(|t| Instant::now() < t) {
        return;
    }
    job.retry_after = None;
    let lock = match gc_lock(&git_dir, false) {
        Ok(Some(lock)) => lock,
        Ok(None) => return, // another process is packing this pack
        Err(e) => {
            eprintln!("engram: {e}");
            return;
        }
    };
    let dir = repo.dir.clone();
    let claims = job.claims.clone();
    let end = Arc::new(JobEnd::default());
    job.end = Arc::clone(&end);
    let spawned = std::thread::Builder::new()
        .name("engram-pack".to_owned())
        .spawn(move || run_job(&git_dir, &dir, &claims, lock, &end));
    match spawned {
        Ok(thread) => job.thread = Some(thread),
        Err(e) => eprintln!("engram: cannot start packing {}: {e}", repo.dir.display()),
    }
    trace.mark("job-start");
}

/// Joins the job's thread (an ended one at once; past [`BACKLOG_WAIT_LIMIT`] with
/// nothing to copy, a running one: waited for), noting a failure.
fn wait_for_job(job: &mut Job) {
    if let Some(done) = job.thread.take()
        && !done.join().unwrap_or(false)
    {
        job.retry_after = Some(Instant::now() + RETRY_AFTER_FAILURE);
    }
}

/// Whether a write that counts the packs joins the job first: an ended one always (at
/// once); a running one only when the write's backlog merge merged nothing and the
/// `backlog` is past [`BACKLOG_WAIT_LIMIT`]: the job's delta merges run at the idle
/// priority and may get no CPU for seconds on a busy machine.
fn joins_job(job: JobState, merged_here: bool, backlog: usize) -> bool {
    match job {
        JobState::None => false,
        JobState::Ended => true,
        JobState::Running => !merged_here && backlog >= BACKLOG_WAIT_LIMIT,
    }
}

/// This process's packing job of a pack, as a write finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JobState {
    None,
    Running,
    Ended,
}

/// Whether a write counts the packs (and, when a job is running, merges the newest
/// ones itself first). The census lists `objects/pack`, where a burst of writes can leave a
/// hundred packs while a job runs: it is skipped while a job of this process
/// runs (no new job could start) unless the backlog reached `backlog_at`
/// ([`BACKLOG_LIMIT`] or, after a merge that could copy nothing, a little more),
/// and while this process's own writes since the last count (`since`, each
/// added a pack to the `seen` ones) cannot have made packing due — except every
/// [`CENSUS_EVERY`] writes, for packs of other processes, and right after a job
/// of ours ended.
fn should_count(seen: usize, since: usize, job: JobState, backlog_at: usize) -> bool {
    match job {
        JobState::Running => seen + since >= backlog_at,
        JobState::Ended => true,
        JobState::None => seen + since >= gc::AUTO_PACK_PACK_COUNT || since >= CENSUS_EVERY,
    }
}

/// Gives the write path's repository a fresh object database once packs were
/// merged away. libgit2 adds packs it finds on a miss but never drops one from
/// an open object database: every deleted pack would stay in the list each
/// lookup searches (and keep its file open) for the life of the process.
fn forget_deleted_packs(repo: &PackRepo) {
    let swapped = git2::Repository::open(repo.git_dir()).and_then(|fresh| {
        let odb = fresh.odb()?;
        repo.repo.set_odb(&odb)
    });
    if let Err(e) = swapped {
        eprintln!("engram: reopening the object database of {}: {e}", repo.dir.display());
    }
}

/// The background job: packs with its own repository handle while holding `lock`
/// (its copy merges at the idle priority, see `gc::pack_geometric`). Once asked to end
/// ([`end_background_packing`]) it hands the rest of the job to a worker process when
/// it can (`merge_worker::hand_off`), so that no one waits for it.
fn run_job(git_dir: &Path, dir: &Path, claims: &gc::Claims, lock: File, end: &JobEnd) -> bool {
    let git = match git2::Repository::open(git_dir) {
        Ok(git) => git,
        Err(e) => {
            eprintln!("engram: packing {}: cannot open the repository: {e}", dir.display());
            return false;
        }
    };
    gc::remove_stale_temp_files(&git_dir.join("objects/pack"), STALE_TEMP_AGE);
    let handed_off = || {
        let handed = end.asked.load(Ordering::Relaxed) && super::merge_worker::hand_off(git_dir, &lock);
        end.handed_off.store(handed, Ordering::Relaxed);
        handed
    };
    match pack_while_due(&git, dir, claims, &lock, &handed_off) {
        Ok(()) => true,
        Err(e) => {
            eprintln!("engram: packing {} failed: {e}", dir.display());
            false
        }
    }
}

/// A packing job's merges, made holding the gc lock through `lock`: geometric runs while
/// packing is due, then the heavy tail of copies (`gc::Merge::Tail`). Before each run,
/// `hand_off` may pass the rest of the job to another process (it returns true then, and
/// so does this, at once). The background job of a server runs it, and so does its
/// merge worker when the server ended or was killed before the job did (`merge_worker`).
pub(super) fn pack_while_due(
    git: &git2::Repository,
    dir: &Path,
    claims: &gc::Claims,
    lock: &File,
    hand_off: &dyn Fn() -> bool,
) -> Result<()> {
    // Writes go on while a job runs and add packs; run again while packing is
    // still due (and a run merges something), so that a pack left alone after
    // a burst of writes ends with few packs, not with those the burst added
    // during the last run. Then the tail of copies, if it weighs enough.
    loop {
        loop {
            if hand_off() {
                return Ok(());
            }
            let report = gc::pack_geometric(git, dir, claims, gc::Merge::Background(lock))?;
            if (report.packs_removed == 0 && report.loose_removed == 0) || !gc::census(git.path()).due {
                break;
            }
        }
        if hand_off() {
            return Ok(());
        }
        // Done by count; the copies left may still hold most of the bytes (`gc::Merge::Tail`).
        let tail = gc::pack_geometric(git, dir, claims, gc::Merge::Tail(lock))?;
        // A tail merge is a delta search at the idle priority: a burst's writes during it
        // do not start a job (this one runs), and the last of them left up to a hundred
        // packs that nothing merged until the next write (seen: 121 packs, 7.6× the text).
        if tail.packs_removed == 0 || !gc::census(git.path()).due {
            return Ok(());
        }
    }
}

/// Moves the calling thread to the idle scheduling class (Linux `SCHED_IDLE`):
/// it runs only on CPU time no other thread wants, and a thread that wakes up
/// (a write, the MCP client) takes its CPU at once instead of after a time
/// slice. For background work no one waits for and that holds no lock a write
/// needs: the packing job's copy merges (a write that would wait for the job
/// merges the newest packs itself instead) and the file reserve's filler (a write
/// with no spare file makes its own). A thread cannot come back from this class
/// without privileges, so it is set once, in the thread's own first lines.
/// Elsewhere (or when refused) the thread stays as it is.
pub(super) fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        use thread_priority::{NormalThreadSchedulePolicy, ThreadPriority, ThreadSchedulePolicy};
        let idle = ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Idle);
        let _ = thread_priority::set_thread_priority_and_policy(
            thread_priority::thread_native_id(),
            ThreadPriority::Min,
            idle,
        );
    }
}

/// A write looks at the pack directory at least every this many writes.
const CENSUS_EVERY: usize = 4;

/// A HEAD reflog past this size (~300 lines) is trimmed by the next write (to
/// `gc::REFLOG_KEEP` lines: a few milliseconds, in one write of ~250).
const REFLOG_TRIM_BYTES: u64 = 64 * 1024;

/// Packs a burst of writes may leave waiting for a running job: past this
/// many, a write merges the newest ones itself: each lookup libgit2 makes, in the
/// job too, searches every pack, so a backlog slows everything down.
const BACKLOG_LIMIT: usize = 128;

/// After a write's backlog merge that could copy nothing, the writes leave the
/// backlog alone for this many more packs (instead of paying for a merge attempt each).
const BACKLOG_RETRY: usize = 32;

/// Past this many packs a write with nothing to copy waits for the running job
/// (seen once: 1.2 s, with the job's delta merge at the idle priority beside a busy
/// core); below it, a slower lookup is the lesser cost.
const BACKLOG_WAIT_LIMIT: usize = 4 * BACKLOG_LIMIT;

/// True when the next write of the pack at `git_dir` may wait for its running
/// packing job after committing (the backlog is past [`BACKLOG_WAIT_LIMIT`]): a
/// write that must not wait (`no_wait`) gives up before writing instead.
pub(super) fn next_write_would_wait(git_dir: &Path) -> bool {
    jobs().iter().find(|j| j.git_dir == git_dir).is_some_and(|j| {
        j.thread.as_ref().is_some_and(|t| !t.is_finished())
            && j.packs_seen + j.writes_since_census + 1 >= BACKLOG_WAIT_LIMIT
    })
}

/// Waits for the jobs of the pack at `git_dir` (every pack when `None`); with `end`, has
/// them hand the rest of their work to a merge worker first (see [`end_background_packing`]).
fn wait_for(git_dir: Option<&Path>, end: bool) {
    let mut packs = Vec::new();
    let threads: Vec<JoinHandle<bool>> = jobs()
        .iter_mut()
        .filter(|j| git_dir.is_none_or(|d| j.git_dir == d))
        .filter_map(|j| {
            if end {
                j.end.asked.store(true, Ordering::Relaxed);
                packs.push((j.git_dir.clone(), Arc::clone(&j.end)));
            }
            j.thread.take()
        })
        .collect();
    // Joined outside the registry lock: a job never touches the registry, but writes do.
    for thread in threads {
        let _ = thread.join();
    }
    // Writes made after the last job ended, or while it ran, may have made packing due
    // with no job to follow: a merge worker packs them. Another process's packing (another
    // server's job, a worker an earlier end handed a job to) may hold the gc lock
    // meanwhile, and stop before seeing the last writes: wait for it, then look again.
    // (A worker that took this job over sees them: it packs while packing is due.)
    // (Without a worker there is no one to hand packing to: nothing to wait for.)
    for (git_dir, job_end) in packs {
        if super::merge_worker::has_worker()
            && !job_end.handed_off.load(Ordering::Relaxed)
            && gc::census(&git_dir).due
            && let Ok(Some(lock)) = gc_lock(&git_dir, true)
            && gc::census(&git_dir).due
        {
            super::merge_worker::hand_off(&git_dir, &lock);
        }
    }
}

/// Waits for the background packing job of the pack at `git_dir`, if this
/// process runs one (before the pack's directory is removed).
pub(super) fn wait_for_pack(git_dir: &Path) {
    wait_for(Some(git_dir), false);
}

/// Waits until every background packing job of this process has finished (a library
/// user that wants the packs as packing leaves them; before exiting, see
/// [`end_background_packing`]).
pub fn wait_for_background_packing() {
    wait_for(None, false);
}

/// Call before the process exits, so that no packing job is cut off: each job of this
/// process hands the rest of its work, at its next step, to a merge worker that
/// outlives the process (the `engram` binary on Unix, `merge_worker::hand_off`), or
/// finishes it here (no worker); this waits for that. Dropping a [`PackRepo`] does
/// the same for its own pack's job.
///
/// An MCP client stops its server by closing its input and kills it a few seconds
/// later: a job that went on packing in the server for longer than that was cut off,
/// and a burst's packs were left (7.4× the text, in the contended bench).
pub fn end_background_packing() {
    wait_for(None, true);
}

impl PackRepo {
    /// Waits until this pack's background packing job (if one runs in this
    /// process) has finished: afterwards the pack count and loose objects are
    /// as packing left them.
    pub fn wait_for_housekeeping(&self) {
        wait_for(Some(&self.git_dir()), false);
    }

    /// Ends this pack's background packing job, if this process runs one: it hands the
    /// rest of its work to a merge worker, or finishes here (see [`end_background_packing`]).
    pub(super) fn end_housekeeping(&self) {
        wait_for(Some(&self.git_dir()), true);
    }
}

/// A test hook that stops a job between planning and writing its pack.
#[cfg(test)]
pub(super) mod test_gate {
    use std::path::{Path, PathBuf};
    use std::sync::Mutex;
    use std::sync::mpsc::{Receiver, Sender, channel};

    /// A gate: the git dir, "the job reached the gate", "let it go on".
    type Gate = (PathBuf, Sender<()>, Receiver<()>);

    static GATES: Mutex<Vec<Gate>> = Mutex::new(Vec::new());

    /// Makes the next job of `git_dir` stop at the gate: returns (reached, release).
    pub fn install(git_dir: &Path) -> (Receiver<()>, Sender<()>) {
        let (reached_tx, reached_rx) = channel();
        let (go_tx, go_rx) = channel();
        GATES.lock().expect("gates").push((git_dir.to_owned(), reached_tx, go_rx));
        (reached_rx, go_tx)
    }

    /// Called by a job: stops here if a gate is installed for its repository.
    pub fn pass(git_dir: &Path) {
        let gate = {
            let mut gates = GATES.lock().expect("gates");
            let want = git_dir.canonicalize().unwrap_or_else(|_| git_dir.to_owned());
            gates
                .iter()
                .position(|(d, _, _)| d.canonicalize().unwrap_or_else(|_| d.clone()) == want)
                .map(|i| gates.remove(i))
        };
        if let Some((_, reached, go)) = gate {
            let _ = reached.send(());
            let _ = go.recv();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::sync::mpsc::channel;

    use super::super::{Changes, CommitMessage, Edit, StoreError, StoreOptions};
    use super::*;

    /// Long enough for anything but a hang (writes that waited for the paused job).
    const HANG: Duration = Duration::from_secs(120);

    fn write(repo: &PackRepo, i: usize) {
        repo.write(|_| {
            let mut changes = Changes::default();
            changes.put(format!("notes/{}.md", i % 7), format!("note {i}: a line of text\n"));
            changes.put("log.md", format!("last write {i}\n"));
            Ok::<_, StoreError>(Edit::Commit {
                changes,
                message: CommitMessage::new(format!("write {i}")),
                value: (),
            })
        })
        .expect("write");
    }

    fn pack_names(git_dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(git_dir.join("objects/pack"))
            .expect("pack dir")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".pack"))
            .collect();
        names.sort();
        names
    }

    /// Every commit and every file of it can be read through a fresh repository handle.
    fn assert_all_readable(dir: &Path, commits: usize) {
        let fresh = PackRepo::open(dir, StoreOptions::default()).expect("reopen");
        assert_eq!(fresh.verify().expect("every object readable"), commits);
    }

    /// A pack whose first packing job (started by its first writes, one per
    /// [`gc::AUTO_PACK_PACK_COUNT`]) is paused at the gate, after planning, holding
    /// the gc lock: the directory, the pack and the sender that lets the job go on.
    fn paused_job() -> (tempfile::TempDir, PackRepo, std::sync::mpsc::Sender<()>) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let repo = PackRepo::open_or_adopt(tmp.path(), StoreOptions::default()).expect("open");
        let (reached, release) = test_gate::install(&repo.git_dir());
        for i in 0..gc::AUTO_PACK_PACK_COUNT {
            write(&repo, i);
        }
        reached.recv_timeout(HANG).expect("a packing job started and reached the gate");
        (tmp, repo, release)
    }

    #[test]
    fn writes_count_the_packs_only_when_it_can_matter() {
        let due = gc::AUTO_PACK_PACK_COUNT;
        // Packs of other processes are looked for every few writes.
        assert!(!should_count(3, 1, JobState::None, BACKLOG_LIMIT));
        assert!(should_count(3, CENSUS_EVERY, JobState::None, BACKLOG_LIMIT));
        // This process's own writes could have made packing due.
        assert!(should_count(due - 1, 1, JobState::None, BACKLOG_LIMIT));
        // A running job: no census (nothing could start) until the backlog is too large,
        // then the write waits for the job.
        assert!(!should_count(due, CENSUS_EVERY * 10, JobState::Running, BACKLOG_LIMIT));
        assert!(should_count(BACKLOG_LIMIT - 1, 1, JobState::Running, BACKLOG_LIMIT));
        assert!(!should_count(BACKLOG_LIMIT - 1, 1, JobState::Running, BACKLOG_LIMIT + BACKLOG_RETRY));
        // A job that ended: count at once (merged-away packs are dropped, the next job may start).
        assert!(should_count(0, 1, JobState::Ended, BACKLOG_LIMIT));
    }

    #[test]
    fn a_running_job_is_waited_for_only_past_the_hard_limit() {
        assert!(joins_job(JobState::Ended, false, 0));
        assert!(!joins_job(JobState::None, false, BACKLOG_WAIT_LIMIT));
        // A backlog the write could not copy is left to the job, up to the hard limit.
        assert!(!joins_job(JobState::Running, false, BACKLOG_LIMIT));
        assert!(!joins_job(JobState::Running, false, BACKLOG_WAIT_LIMIT - 1));
        assert!(joins_job(JobState::Running, false, BACKLOG_WAIT_LIMIT));
        assert!(!joins_job(JobState::Running, true, BACKLOG_WAIT_LIMIT));
    }

    #[test]
    fn writes_land_while_a_packing_job_runs() {
        let (tmp, repo, release) = paused_job();
        let git_dir = repo.git_dir();
        let first = gc::AUTO_PACK_PACK_COUNT;
        // The job is paused after choosing what to merge, holding the gc lock.
        assert!(gc_lock(&git_dir, false).expect("lock").is_none(), "the job holds the gc lock");
        let planned = pack_names(&git_dir);
        let (done_tx, done_rx) = channel();
        let writer = std::thread::spawn(move || {
            for k in 0..20 {
                write(&repo, 1000 + k);
            }
            let _ = done_tx.send(());
            repo
        });
        done_rx.recv_timeout(HANG).expect("20 writes finished while the job was paused");
        let during = pack_names(&git_dir);
        let _ = release.send(());
        let repo = writer.join().expect("writer");
        repo.wait_for_housekeeping();
        let after = pack_names(&git_dir);
        // The packs written meanwhile were not part of the paused run (the job's
        // later runs may merge them): nothing they hold is lost.
        assert!(during.iter().any(|n| !planned.contains(n)), "writes added packs during the job");
        assert!(after.len() < during.len(), "the job merged packs: {} -> {}", during.len(), after.len());
        assert_all_readable(tmp.path(), first + 20);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn background_threads_run_in_the_idle_class() {
        let policy = std::thread::spawn(|| {
            lower_priority();
            // `policy` in the scheduler's own view of this thread; 5 is SCHED_IDLE.
            let sched = fs::read_to_string("/proc/thread-self/sched").expect("sched");
            let line = sched.lines().find(|l| l.starts_with("policy")).map(str::to_owned);
            line.and_then(|l| l.split(':').nth(1).map(|v| v.trim().to_owned()))
        })
        .join()
        .expect("thread");
        assert_eq!(policy.as_deref(), Some("5"), "SCHED_IDLE");
        let here = fs::read_to_string("/proc/thread-self/sched").expect("sched");
        assert!(!here.lines().any(|l| l.starts_with("policy") && l.ends_with(" 5")), "only that thread");
    }

    #[test]
    fn a_full_backlog_is_merged_by_the_write_not_waited_for() {
        let (tmp, repo, release) = paused_job();
        let git_dir = repo.git_dir();
        let first = gc::AUTO_PACK_PACK_COUNT;
        // The job is paused with its packs planned (a job starved at the idle priority).
        let planned = pack_names(&git_dir);
        let (done_tx, done_rx) = channel();
        let more = 2 * BACKLOG_LIMIT;
        let writer = std::thread::spawn(move || {
            let mut most = 0;
            for k in 0..more {
                write(&repo, 1000 + k);
                most = most.max(pack_names(&repo.git_dir()).len());
            }
            let _ = done_tx.send(most);
            repo
        });
        // Before: the write at the backlog waited for the job, which never went on.
        let most = done_rx.recv_timeout(HANG).expect("writes past the backlog did not wait for the job");
        assert!(most <= BACKLOG_LIMIT + 1, "the writes merged their own packs: at most {most} packs");
        let during = pack_names(&git_dir);
        assert!(
            planned.iter().all(|p| during.contains(p)),
            "the writes' merges left the packs the job planned alone"
        );
        let _ = release.send(());
        let repo = writer.join().expect("writer");
        repo.wait_for_housekeeping();
        let after = pack_names(&git_dir);
        assert!(planned.iter().all(|p| !after.contains(p)), "the job merged what it planned");
        assert_all_readable(tmp.path(), first + more);
    }

    #[test]
    fn pack_count_stays_bounded_and_drop_finishes_the_job() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let repo = PackRepo::open_or_adopt(tmp.path(), StoreOptions::default()).expect("open");
        let git_dir = repo.git_dir();
        let mut most = 0;
        for i in 0..300 {
            write(&repo, i);
            repo.wait_for_housekeeping();
            most = most.max(pack_names(&git_dir).len());
        }
        assert!(most <= gc::AUTO_PACK_PACK_COUNT, "{most} packs at once");
        // Enough writes to make packing due, then drop at once: the job must be done after the drop.
        let before = pack_names(&git_dir).len();
        for i in 300..300 + gc::AUTO_PACK_PACK_COUNT - before {
            write(&repo, i);
        }
        drop(repo);
        assert!(jobs().iter().filter(|j| j.git_dir == git_dir).all(|j| j.thread.is_none()));
        let left = pack_names(&git_dir).len();
        assert!(left < gc::AUTO_PACK_PACK_COUNT, "{left} packs after the drop");
        let garbage: Vec<_> = fs::read_dir(git_dir.join("objects/pack"))
            .expect("pack dir")
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("pack_git2_"))
            .collect();
        assert!(garbage.is_empty(), "temp files left: {garbage:?}");
        assert_all_readable(tmp.path(), 300 + gc::AUTO_PACK_PACK_COUNT - before);
    }

    #[test]
    fn a_packing_job_removes_stale_temp_files_only() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let repo = PackRepo::open_or_adopt(tmp.path(), StoreOptions::default()).expect("open");
        let pack_dir = repo.git_dir().join("objects/pack");
        fs::create_dir_all(&pack_dir).expect("pack dir");
        let stale = pack_dir.join("pack_git2_00112233deadbeef");
        let fresh = pack_dir.join("pack_git2_44556677deadbeef");
        let other = pack_dir.join("notes.txt");
        for f in [&stale, &fresh, &other] {
            fs::write(f, b"half a pack").expect("temp file");
        }
        let old = std::time::SystemTime::now() - STALE_TEMP_AGE - Duration::from_secs(60);
        for f in [&stale, &other] {
            fs::File::options().write(true).open(f).and_then(|f| f.set_modified(old)).expect("mtime");
        }
        for i in 0..gc::AUTO_PACK_PACK_COUNT {
            write(&repo, i);
        }
        repo.wait_for_housekeeping();
        assert!(!stale.exists(), "a temp file untouched for {STALE_TEMP_AGE:?} is removed");
        assert!(fresh.exists(), "a fresh temp file (a writer at work) is kept");
        assert!(other.exists(), "files that are not temp files are kept");
    }
}
