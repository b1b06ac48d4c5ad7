//! Packing runs in the background (store/housekeeping.rs): writes never wait for it, two
//! processes writing while packs are merged lose nothing, and a server finishes its packing
//! job before it exits.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::json;

use crate::common::{TestEnv, assert_clean, assert_fsck, commit_count, packing_lock};

/// The `*.pack` files of a pack's repository.
fn pack_files(pack: &Path) -> usize {
    std::fs::read_dir(pack.join(".git/objects/pack"))
        .map(|d| d.flatten().filter(|e| e.file_name().to_string_lossy().ends_with(".pack")).count())
        .unwrap_or(0)
}

/// Temp files a packer leaves when cut off (libgit2's `pack_git2_*`).
fn temp_files(pack: &Path) -> Vec<String> {
    std::fs::read_dir(pack.join(".git/objects/pack"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("pack_git2_"))
                .collect()
        })
        .unwrap_or_default()
}

async fn capture(client: &crate::common::StdioClient, text: &str) {
    let r = client
        .call("capture_memory", json!({"name": "bg", "category": "notes", "content": text, "summary": text}))
        .await
        .expect("call");
    assert!(!r.is_error, "{}", r.text);
}

/// One capture; false when the server did not take it (gone, or an error answer).
async fn try_capture(client: &crate::common::StdioClient, text: &str) -> bool {
    let r = client
        .call("capture_memory", json!({"name": "bg", "category": "notes", "content": text, "summary": text}))
        .await;
    matches!(r, Ok(r) if !r.is_error)
}

/// A thread that looks at a server from outside while the test writes: it calls `look`
/// until that returns `Some` (having acted on what it saw), or until [`Watcher::stop`].
struct Watcher<T> {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Option<T>>,
}

impl<T: Send + 'static> Watcher<T> {
    fn start(mut look: impl FnMut() -> Option<T> + Send + 'static) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                if let Some(seen) = look() {
                    return Some(seen);
                }
                std::thread::yield_now();
            }
            None
        });
        Self { stop, thread }
    }

    /// Whether `look` saw what it waited for.
    fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }

    /// Stops looking; what `look` returned, if it did.
    fn stop(self) -> Option<T> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("watcher")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_do_not_wait_for_a_packer_and_a_server_leaves_no_job_undone_when_it_exits() {
    let env = TestEnv::with_real_clock();
    env.init("bg");
    let pack = env.pack("bg");
    let before = commit_count(&pack);
    // Another "packer" holds the packing lock: writes must neither wait for it nor pack.
    let lock = packing_lock(&pack).expect("lock file");
    let client = env.client().await;
    for i in 0..40 {
        capture(&client, &format!("held lock {i}")).await;
    }
    assert!(pack_files(&pack) >= 40, "no packing while the lock is held: {} packs", pack_files(&pack));
    drop(lock);
    // The next write starts a job; closing stdin right after must not cut it off (the
    // server finishes it, or hands it to a worker that holds the packing lock until done).
    capture(&client, "lock released").await;
    client.close().await.expect("close");
    drop(packing_lock(&pack));
    let packs = pack_files(&pack);
    assert!(packs < 16, "the job finished before the server exited: {packs} packs left");
    assert!(temp_files(&pack).is_empty(), "temp files left: {:?}", temp_files(&pack));
    assert_eq!(commit_count(&pack) - before, 41);
    assert_clean(&pack);
    assert_fsck(&pack);
}

/// Packing that is due when a server exits is done even when no job runs then: here
/// another packer held the lock through 40 writes, so none started, and no write came
/// after it let go. The server hands the packing to a merge worker as it exits (it used
/// to leave the 40 packs for the next write, whenever that came).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_exiting_with_packing_due_and_no_job_leaves_it_to_a_worker() {
    let env = TestEnv::with_real_clock();
    env.init("bg");
    let pack = env.pack("bg");
    let lock = packing_lock(&pack).expect("lock file");
    let client = env.client().await;
    for i in 0..40 {
        capture(&client, &format!("held lock {i}")).await;
    }
    drop(lock);
    client.close().await.expect("close");
    drop(packing_lock(&pack));
    let packs = pack_files(&pack);
    assert!(packs < 16, "packing was done after the server exited: {packs} packs left");
    assert_clean(&pack);
    assert_fsck(&pack);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_processes_write_while_packs_are_merged_and_lose_nothing() {
    let env = TestEnv::with_real_clock();
    env.init("bg");
    let pack = env.pack("bg");
    let before = commit_count(&pack);
    let mut tasks = Vec::new();
    for p in 0..2 {
        let client = env.client().await;
        tasks.push(tokio::spawn(async move {
            for i in 0..150 {
                capture(&client, &format!("process {p} write {i}")).await;
            }
            client.close().await.expect("close");
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    assert_eq!(commit_count(&pack) - before, 300, "one commit per capture");
    // Packing kept up: 300 writes, each its own small pack, leave few packs (once a job
    // a server handed to a worker as it exited is done).
    drop(packing_lock(&pack));
    let packs = pack_files(&pack);
    assert!(packs <= 24, "{packs} packs after 300 writes");
    assert_clean(&pack);
    // Every object of every commit is still there (and every pack is whole).
    assert_fsck(&pack);
    let doctor = env.cli(&["doctor", "bg"]);
    assert!(doctor.status.success(), "doctor: {}", String::from_utf8_lossy(&doctor.stdout));
}

/// A server killed (SIGKILL) while its packing job is merging packs — seen from outside by
/// the job's staging directory (`tmp_engram_merge_*`) in `objects/pack` — leaves a valid
/// repository holding every acknowledged write; the next server writes on, and `engram gc`
/// removes what the dead job left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_pack_leaves_a_valid_pack_and_loses_no_write() {
    let env = TestEnv::with_real_clock();
    env.init("bg");
    let pack = env.pack("bg");
    let before = commit_count(&pack);
    let client = env.client().await;
    let pid = client.pid().expect("pid") as libc::pid_t;
    let pack_dir = pack.join(".git/objects/pack");
    let watcher = Watcher::start(move || {
        let merging = std::fs::read_dir(&pack_dir).is_ok_and(|d| {
            d.flatten().any(|e| e.file_name().to_string_lossy().starts_with("tmp_engram_merge_"))
        });
        // SAFETY: kill(2) on the server's pid, which this test started and has not reaped.
        merging.then(|| unsafe { libc::kill(pid, libc::SIGKILL) })
    });
    let mut acknowledged = Vec::new();
    for i in 0..3000 {
        let text = format!("write {i}");
        let r = client
            .call(
                "capture_memory",
                json!({"name": "bg", "category": "notes", "content": text, "summary": text}),
            )
            .await;
        match r {
            Ok(r) if !r.is_error => acknowledged.push(text),
            _ => break,
        }
    }
    assert!(watcher.stop().is_some(), "no packing job was seen merging in 3,000 writes");
    drop(client);
    assert_fsck(&pack);
    let commits = commit_count(&pack) - before;
    assert!(
        commits == acknowledged.len() || commits == acknowledged.len() + 1,
        "{commits} commits for {} acknowledged writes",
        acknowledged.len()
    );
    // The next server finishes any interrupted write and packs on.
    let client = env.client().await;
    for i in 0..40 {
        capture(&client, &format!("after {i}")).await;
    }
    client.close().await.expect("close");
    assert_fsck(&pack);
    assert_clean(&pack);
    let blocks = &crate::concurrency::assert_consistent(&pack).blocks["notes"];
    for a in &acknowledged {
        assert_eq!(blocks.iter().filter(|b| *b == a).count(), 1, "acknowledged write {a:?} present once");
    }
    let gc = env.cli(&["gc", "bg"]);
    assert!(gc.status.success(), "gc: {}", String::from_utf8_lossy(&gc.stderr));
    let left: Vec<String> = std::fs::read_dir(pack.join(".git/objects/pack"))
        .expect("pack dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("tmp_") || n.starts_with("pack_git2_"))
        .collect();
    assert!(left.is_empty(), "temp files after gc: {left:?}");
    assert_fsck(&pack);
}

/// The ids of a pack repository's packs (`pack-<id>.pack`).
fn pack_ids(pack: &Path) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(pack.join(".git/objects/pack"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    Some(name.strip_prefix("pack-")?.strip_suffix(".pack")?.to_owned())
                })
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids
}

/// Runs the hidden `engram pack-merge` (what a packing job starts for a delta merge) as a
/// job does: `plan` written into the pack's gc lock file, which the worker gets as its
/// standard input. With `held_elsewhere`, another open of the lock file holds the lock
/// (a packing job of another process) and the worker's file does not.
fn pack_merge(pack: &Path, plan: &str, held_elsewhere: bool) -> std::process::Output {
    use std::io::{Seek, Write};
    let path = pack.join(".git/engram-gc.lock");
    let open = || {
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .expect("open the gc lock file")
    };
    let mut lock = open();
    let other = open();
    let holder = if held_elsewhere { &other } else { &lock };
    fs4::fs_std::FileExt::lock_exclusive(holder).expect("lock");
    lock.set_len(0).expect("truncate");
    lock.write_all(plan.as_bytes()).expect("write the plan");
    lock.rewind().expect("rewind");
    std::process::Command::new(crate::common::bin())
        .arg("pack-merge")
        .arg(pack.join(".git"))
        .env_clear()
        .envs(crate::common::base_env())
        .stdin(lock)
        .output()
        .expect("pack-merge")
}

/// A pack with 30 packs (one per write; packing held off by holding the gc lock).
async fn many_packs(env: &TestEnv) -> std::path::PathBuf {
    env.init("bg");
    let pack = env.pack("bg");
    write_packs_while_locked(env, &pack, 30).await;
    pack
}

/// `n` captures by one server, each left as its own pack: another "packer" holds the
/// packing lock meanwhile, and lets go once the server has exited.
async fn write_packs_while_locked(env: &TestEnv, pack: &Path, n: usize) {
    let _lock = packing_lock(pack).expect("lock file");
    let client = env.client().await;
    for i in 0..n {
        capture(&client, &format!("unpacked {i}")).await;
    }
    client.close().await.expect("close");
    assert!(pack_files(pack) >= n, "{} packs", pack_files(pack));
}

/// The worker merges exactly the packs of its plan into one and deletes them, holding the
/// gc lock through the file it was handed; while another process holds that lock it
/// changes nothing; a plan line that is not `pack <id>` / `loose <id>` is refused before
/// anything is written. The repository stays whole in each case.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_merge_worker_merges_its_plan_only_holding_the_gc_lock() {
    let env = TestEnv::with_real_clock();
    let pack = many_packs(&env).await;
    let ids = pack_ids(&pack);
    let plan: String = ids[..20].iter().map(|id| format!("pack {id}\n")).collect();

    let refused = pack_merge(&pack, &format!("{plan}pack ../../../etc/passwd\n"), false);
    assert!(!refused.status.success(), "a plan line naming a path is refused");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("../../../etc/passwd"), "the message names the line: {stderr}");
    assert_eq!(pack_ids(&pack), ids, "nothing written or deleted");

    let unlocked = pack_merge(&pack, &plan, true);
    assert!(!unlocked.status.success(), "a worker that does not hold the gc lock merges nothing");
    let stderr = String::from_utf8_lossy(&unlocked.stderr);
    assert!(stderr.contains("another process is packing"), "{stderr}");
    assert_eq!(pack_ids(&pack), ids, "nothing written or deleted");
    assert_fsck(&pack);

    let merged = pack_merge(&pack, &plan, false);
    assert!(merged.status.success(), "{}", String::from_utf8_lossy(&merged.stderr));
    let answer = String::from_utf8_lossy(&merged.stdout);
    assert!(answer.contains("packs_removed=20"), "{answer}");
    let left = pack_ids(&pack);
    assert!(ids[20..].iter().all(|id| left.contains(id)), "packs outside the plan are left alone");
    assert!(ids[..20].iter().all(|id| !left.contains(id)), "the planned packs are gone");
    assert_fsck(&pack);
    assert_clean(&pack);
}

/// The pids of the `engram pack-merge` children of process `parent` (from `/proc`).
#[cfg(target_os = "linux")]
fn merge_workers_of(parent: &str) -> Vec<String> {
    let mut workers = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if cmdline.split(|b| *b == 0).nth(1) != Some(&b"pack-merge"[..]) {
            continue;
        }
        // Field 4: the parent's pid.
        if stat_field(&pid, 4).as_deref() == Some(parent) {
            workers.push(pid);
        }
    }
    workers
}

/// Whether process `pid` is running (there, and not a zombie).
#[cfg(target_os = "linux")]
fn running(pid: &str) -> bool {
    // Field 3: the state.
    stat_field(pid, 3).is_some_and(|state| state != "Z")
}

/// Field `n` (1-based, as `man 5 proc` counts) of `/proc/<pid>/stat`, from field 3 on; `None`
/// once the process is gone.
#[cfg(target_os = "linux")]
fn stat_field(pid: &str, n: usize) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (in parentheses, which may hold spaces) start at 3.
    let after = stat.rsplit_once(')')?.1;
    after.split_whitespace().nth(n - 3).map(str::to_owned)
}

/// An MCP client stops its server a few seconds after closing its input, in the middle of
/// a delta merge as often as not. The merge worker the server leaves behind keeps the gc
/// lock, finishes the merge and deletes the packs it covers: once the lock is free, the
/// packs it merged are gone (an orphan used to leave its new pack beside all of them).
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_worker_orphaned_by_a_killed_server_finishes_its_merge() {
    let env = TestEnv::with_real_clock();
    env.init("bg");
    let pack = env.pack("bg");
    let mut orphaned = false;
    for _attempt in 0..5 {
        let client = env.client().await;
        let server = client.pid().expect("pid").to_string();
        let pack_dir = pack.join(".git/objects/pack");
        let watcher = Watcher::start(move || {
            // A worker writing its new pack (its staging directory is there).
            let worker = merge_workers_of(&server)
                .into_iter()
                .find(|w| pack_dir.join(format!("tmp_engram_merge_{w}_0")).exists())?;
            signal(&server, libc::SIGKILL);
            // Still staging after the kill: the worker had deleted nothing yet.
            let staging = pack_dir.join(format!("tmp_engram_merge_{worker}_0"));
            Some(staging.exists().then_some(worker))
        });
        for i in 0..3000 {
            let text = format!("write {i} of a long enough memory to give the merge some work");
            if !try_capture(&client, &text).await || watcher.is_finished() {
                break;
            }
        }
        let worker = watcher.stop().flatten();
        drop(client);
        // The worker outlived its server: an orphan, still merging.
        if worker.is_some_and(|w| running(&w)) {
            orphaned = true;
            break;
        }
    }
    assert!(orphaned, "no merge worker outlived its killed server in 5 attempts");
    // The orphan holds the gc lock until it exits: taking it waits for the merge.
    let lock = std::fs::File::open(pack.join(".git/engram-gc.lock")).expect("lock file");
    fs4::fs_std::FileExt::lock_exclusive(&lock).expect("lock");
    // The plan the job handed down is still in the lock file: its packs are merged and gone.
    let plan = std::fs::read_to_string(pack.join(".git/engram-gc.lock")).expect("plan");
    let planned: Vec<&str> = plan.lines().filter_map(|l| l.strip_prefix("pack ")).collect();
    assert!(!planned.is_empty(), "the orphan's plan merges packs: {plan:?}");
    let left = pack_ids(&pack);
    let kept: Vec<&&str> = planned.iter().filter(|id| left.iter().any(|l| l == *id)).collect();
    assert!(
        kept.is_empty(),
        "{} of the {} packs the orphan merged are still there",
        kept.len(),
        planned.len()
    );
    drop(lock);
    assert_fsck(&pack);
}

/// Sends `signal` to process `pid`, which this test started (or its server did).
#[cfg(target_os = "linux")]
fn signal(pid: &str, signal: libc::c_int) {
    let pid: libc::pid_t = pid.parse().expect("pid");
    // SAFETY: kill(2) on a pid read from /proc or the test's own child, not yet reaped.
    unsafe { libc::kill(pid, signal) };
}

/// Waits (polling `/proc`, at most a minute) until process `pid` is gone or a zombie.
#[cfg(target_os = "linux")]
fn wait_until_gone(pid: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while running(pid) {
        assert!(std::time::Instant::now() < deadline, "process {pid} still runs after a minute");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// A server killed while a merge worker of its packing job runs leaves the rest of the
/// job to that worker: the orphan merges its plan, then packs on while packing is due,
/// packs other writers added meanwhile included. Made certain by stopping the worker
/// (SIGSTOP) as it appears, killing the server, letting a second server write 60 packs
/// (it packs none: the stopped orphan holds the packing lock), and only then resuming
/// the worker. An orphan used to merge its plan only and leave those 60 packs.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_worker_orphaned_by_a_killed_server_finishes_its_job() {
    let env = TestEnv::with_real_clock();
    env.init("bg");
    let pack = env.pack("bg");
    let before = commit_count(&pack);
    let client = env.client().await;
    let server = client.pid().expect("pid").to_string();
    let watched = server.clone();
    let watcher = Watcher::start(move || {
        let worker = merge_workers_of(&watched).into_iter().next()?;
        signal(&worker, libc::SIGSTOP);
        signal(&watched, libc::SIGKILL);
        Some(worker)
    });
    let mut acknowledged = 0;
    for i in 0..3000 {
        let text = format!("write {i} of a long enough memory to give the merge some work");
        if watcher.is_finished() || !try_capture(&client, &text).await {
            break;
        }
        acknowledged += 1;
    }
    let worker = watcher.stop().expect("no merge worker started in 3,000 writes");
    drop(client);
    wait_until_gone(&server);

    let second = env.client().await;
    for i in 0..60 {
        capture(&second, &format!("while the orphan is stopped {i}")).await;
    }
    second.close().await.expect("close");
    assert!(pack_files(&pack) >= 60, "nothing packed while the orphan held the lock: {}", pack_files(&pack));

    signal(&worker, libc::SIGCONT);
    let lock = packing_lock(&pack).expect("lock file");
    let packs = pack_files(&pack);
    assert!(packs < 16, "the orphan finished the job: {packs} packs left");
    drop(lock);
    assert!(commit_count(&pack) - before >= acknowledged + 60, "every acknowledged write is there");
    assert_clean(&pack);
    assert_fsck(&pack);
}

/// A one-shot command whose write started a packing job exits without waiting for the
/// job: it hands the rest to a merge worker, which holds the packing lock until the job
/// is done (an MCP client kills a server that is still packing a few seconds after it
/// closed its input, and the job's later runs used to die with it). Seen from outside:
/// the plan left in the lock file is the hand-over (`finish`), and the backlog of 150
/// packs is merged once the lock is free.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exiting_process_hands_its_packing_job_to_a_worker() {
    let env = TestEnv::with_real_clock();
    env.init("bg");
    let pack = env.pack("bg");
    let before = commit_count(&pack);
    write_packs_while_locked(&env, &pack, 150).await;

    let undo = env.cli(&["undo", "bg"]);
    assert!(undo.status.success(), "undo: {}", String::from_utf8_lossy(&undo.stderr));
    let lock = packing_lock(&pack).expect("lock file");
    let plan = std::fs::read_to_string(pack.join(".git/engram-gc.lock")).expect("plan");
    assert_eq!(plan, "finish\n", "the last plan is the hand-over of the job");
    let packs = pack_files(&pack);
    assert!(packs < 16, "the worker finished the job: {packs} packs left");
    drop(lock);
    assert_eq!(commit_count(&pack) - before, 151);
    assert_clean(&pack);
    assert_fsck(&pack);
}

/// The scheduling policy of process `pid` (field 41 of `/proc/<pid>/stat`; 5 is
/// `SCHED_IDLE`), or `None` once it is gone.
#[cfg(target_os = "linux")]
fn policy(pid: &str) -> Option<u32> {
    stat_field(pid, 41)?.parse().ok()
}

/// A server's packing job makes its delta merges in a child `engram pack-merge`, which
/// runs in the idle scheduling class: seen from outside, in `/proc`, while writes go on.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delta_merges_run_in_a_worker_process_in_the_idle_class() {
    let env = TestEnv::with_real_clock();
    env.init("bg");
    let pack = env.pack("bg");
    let client = env.client().await;
    let server = client.pid().expect("pid").to_string();
    let watcher = Watcher::start(move || {
        for pid in merge_workers_of(&server) {
            // The worker moves itself to the idle class in its first lines.
            while let Some(p) = policy(&pid) {
                if p == 5 {
                    return Some(());
                }
                std::thread::yield_now();
            }
        }
        None
    });
    for i in 0..3000 {
        capture(&client, &format!("write {i}")).await;
        if watcher.is_finished() {
            break;
        }
    }
    assert!(watcher.stop().is_some(), "no pack-merge worker in the idle class seen in 3,000 writes");
    client.close().await.expect("close");
    assert_fsck(&pack);
    assert_clean(&pack);
}
