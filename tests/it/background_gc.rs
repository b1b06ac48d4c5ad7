//! Packing runs in the background (store/housekeeping.rs): writes never wait for it, two
//! processes writing while packs are merged lose nothing, and a server finishes its packing
//! job before it exits.

use std::path::Path;

use serde_json::json;

use crate::common::{TestEnv, assert_clean, assert_fsck, commit_count};

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_do_not_wait_for_a_packer_and_the_server_finishes_its_job_before_exiting() {
    let env = TestEnv::with_real_clock();
    env.init("bg");
    let pack = env.pack("bg");
    let before = commit_count(&pack);
    // Another "packer" holds the packing lock: writes must neither wait for it nor pack.
    let lock = std::fs::File::create(pack.join(".git/engram-gc.lock")).expect("lock file");
    fs4::fs_std::FileExt::lock_exclusive(&lock).expect("lock");
    let client = env.client().await;
    for i in 0..40 {
        capture(&client, &format!("held lock {i}")).await;
    }
    assert!(pack_files(&pack) >= 40, "no packing while the lock is held: {} packs", pack_files(&pack));
    drop(lock);
    // The next write starts a job; closing stdin right after must not cut it off.
    capture(&client, "lock released").await;
    client.close().await.expect("close");
    let packs = pack_files(&pack);
    assert!(packs < 16, "the job finished before the server exited: {packs} packs left");
    assert!(temp_files(&pack).is_empty(), "temp files left: {:?}", temp_files(&pack));
    assert_eq!(commit_count(&pack) - before, 41);
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
    // Packing kept up: 300 writes, each its own small pack, leave few packs.
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
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let env = TestEnv::with_real_clock();
    env.init("bg");
    let pack = env.pack("bg");
    let before = commit_count(&pack);
    let client = env.client().await;
    let pid = client.pid().expect("pid") as libc::pid_t;
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (stop, pack_dir) = (Arc::clone(&stop), pack.join(".git/objects/pack"));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let merging = std::fs::read_dir(&pack_dir).is_ok_and(|d| {
                    d.flatten().any(|e| e.file_name().to_string_lossy().starts_with("tmp_engram_merge_"))
                });
                if merging {
                    // SAFETY: kill(2) on the server's pid, which this test started and has not reaped.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                    return true;
                }
                std::thread::yield_now();
            }
            false
        })
    };
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
    stop.store(true, Ordering::Relaxed);
    assert!(watcher.join().expect("watcher"), "no packing job was seen merging in 3,000 writes");
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
