//! Several real processes on one pack, and processes killed mid-write.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde_json::json;

use crate::common::*;

/// Reads every index line and every entry block of a pack's memory, across rolled segments.
pub struct MemoryFiles {
    /// (category, summary) of every full-index entry line.
    pub index: Vec<(String, String)>,
    /// category → contents of every block.
    pub blocks: BTreeMap<String, Vec<String>>,
    /// The hot index text.
    pub hot: String,
}

fn read_sorted(dir: &Path) -> Vec<String> {
    let mut files: Vec<_> =
        fs::read_dir(dir).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    files.sort();
    files.iter().filter(|p| p.is_file()).map(|p| fs::read_to_string(p).expect("read")).collect()
}

pub fn memory_files(pack: &Path) -> MemoryFiles {
    let mem = pack.join("memory");
    let mut index_texts = read_sorted(&mem.join("_log/_index_full"));
    index_texts.push(fs::read_to_string(mem.join("_index_full.md")).unwrap_or_default());
    let mut index = Vec::new();
    for line in index_texts.iter().flat_map(|t| t.lines()) {
        let Some(rest) = line.strip_prefix("- `memory/") else { continue };
        let (cat, rest) = rest.split_once(".md` [").expect("index line");
        // "<ts>] [<type>] [tags] summary" — our test captures carry no tags.
        let summary = rest.splitn(3, "] ").nth(2).expect("summary").to_owned();
        index.push((cat.to_owned(), summary));
    }
    let mut blocks: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in fs::read_dir(&mem).expect("memory dir").flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(cat) = name.strip_suffix(".md") else { continue };
        if cat.starts_with('_') || cat.ends_with("-archive") || cat.ends_with("-expired") {
            continue;
        }
        let mut texts = read_sorted(&mem.join("_log").join(cat));
        texts.push(fs::read_to_string(e.path()).expect("read"));
        for t in texts {
            for b in t.split("\n---\n").map(str::trim).filter(|b| !b.is_empty()) {
                let content = b.split_once('\n').map(|(_, c)| c.trim().to_owned()).unwrap_or_default();
                blocks.entry(cat.to_owned()).or_default().push(content);
            }
        }
    }
    let hot = fs::read_to_string(mem.join("_index.md")).unwrap_or_default();
    MemoryFiles { index, blocks, hot }
}

/// Indexes agree with the category files: one index line per block, same texts, hot = last 50.
pub fn assert_consistent(pack: &Path) -> MemoryFiles {
    let m = memory_files(pack);
    let mut from_index: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (c, s) in &m.index {
        from_index.entry(c.clone()).or_default().push(s.clone());
    }
    for v in from_index.values_mut() {
        v.sort();
    }
    let mut from_blocks = m.blocks.clone();
    for v in from_blocks.values_mut() {
        v.sort();
    }
    assert_eq!(from_index, from_blocks, "index and category files disagree in {}", pack.display());
    let hot_lines: Vec<&str> = m.hot.lines().filter(|l| l.starts_with("- `memory/")).collect();
    assert_eq!(hot_lines.len(), m.index.len().min(50));
    m
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_processes_capture_200_each_into_one_pack() {
    let env = TestEnv::with_real_clock();
    env.init("shared");
    let pack = env.pack("shared");
    let before = commit_count(&pack);
    let mut tasks = Vec::new();
    for p in 0..2 {
        let client = env.client().await;
        tasks.push(tokio::spawn(async move {
            for i in 0..200 {
                let text = format!("进程{p} 第{i}条 memory {p}-{i}");
                let r = client
                    .call("capture_memory", json!({"name": "shared", "category": format!("c{}", i % 3), "content": text, "summary": text}))
                    .await
                    .expect("call");
                assert!(!r.is_error, "{}", r.text);
            }
            client.close().await.expect("close");
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    assert_eq!(commit_count(&pack) - before, 400, "one commit per capture");
    let m = assert_consistent(&pack);
    assert_eq!(m.index.len(), 400);
    assert_eq!(m.blocks.values().map(Vec::len).sum::<usize>(), 400);
    assert!(pack.join("memory/_log/_index_full").is_dir(), "the full index rolled into segments");
    assert_clean(&pack);
    assert_fsck(&pack);
}

/// Tiny deterministic PRNG (xorshift) so a failing seed can be replayed.
pub struct Rng(u64);
impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }
    pub fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below.max(1)
    }
}

pub fn seed() -> u64 {
    let s = std::env::var("ENGRAM_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(7)
    });
    eprintln!("seed: {s} (replay with ENGRAM_TEST_SEED={s})");
    s
}

/// Kills `engram serve` with SIGKILL at random points while it captures; every
/// acknowledged capture must survive and the repository must stay valid.
pub async fn crash_rounds(rounds: usize) -> usize {
    let env = TestEnv::with_real_clock();
    env.init("crash");
    let pack = env.pack("crash");
    let mut rng = Rng::new(seed());
    let mut acknowledged = Vec::new();
    let mut n = 0usize;
    let first_commits = commit_count(&pack);
    let started = std::time::Instant::now();
    for round in 0..rounds {
        let client = env.client().await;
        let pid = client.pid().expect("pid");
        let kill_after = 1 + rng.next(25);
        let mut done = 0;
        loop {
            n += 1;
            let text = format!("round {round} write {n}");
            if done == kill_after {
                // Kill while this call is in flight.
                let call = client.call(
                    "capture_memory",
                    json!({"name": "crash", "category": "log", "content": text, "summary": text}),
                );
                let killer = async {
                    tokio::time::sleep(std::time::Duration::from_micros(rng.next(4000))).await;
                    let _ = std::process::Command::new("kill").args(["-9", &pid.to_string()]).status();
                };
                let (res, ()) = tokio::join!(call, killer);
                if let Ok(r) = res
                    && !r.is_error
                {
                    acknowledged.push(text);
                }
                break;
            }
            let r = client
                .call(
                    "capture_memory",
                    json!({"name": "crash", "category": "log", "content": text, "summary": text}),
                )
                .await
                .expect("call");
            assert!(!r.is_error, "{}", r.text);
            acknowledged.push(text);
            done += 1;
        }
        drop(client);
        // After each kill: the repository is valid and every acknowledged write is committed
        // (the in-flight one may or may not have landed).
        assert_fsck(&pack);
        let commits = commit_count(&pack);
        assert!(
            commits >= first_commits + acknowledged.len() && commits <= first_commits + n,
            "round {round}: {commits} commits for {} acknowledged writes",
            acknowledged.len()
        );
    }
    // The next writer finishes any interrupted write.
    let client = env.client().await;
    let r = client
        .call(
            "capture_memory",
            json!({"name": "crash", "category": "log", "content": "after", "summary": "after"}),
        )
        .await
        .expect("call");
    assert!(!r.is_error, "{}", r.text);
    client.close().await.expect("close");
    assert_fsck(&pack);
    assert_clean(&pack);
    let m = assert_consistent(&pack);
    let blocks = &m.blocks["log"];
    for a in &acknowledged {
        assert_eq!(
            blocks.iter().filter(|b| *b == a).count(),
            1,
            "acknowledged write {a:?} must be present exactly once"
        );
    }
    eprintln!(
        "crash: {rounds} SIGKILLs during writes, {} acknowledged writes all present once, {n} attempted, in {:.2?}",
        acknowledged.len(),
        started.elapsed()
    );
    rounds
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_servers_lose_no_acknowledged_write() {
    let rounds = std::env::var("ENGRAM_CRASH_ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(50);
    crash_rounds(rounds).await;
}

/// A stdio server runs short writes on its event loop, but never waits there
/// for a lock: while another process holds the pack's write lock, a capture
/// goes to a blocking thread and the server keeps answering (a ping, a list),
/// then the capture lands once the lock is free; delete and correct likewise.
#[tokio::test]
async fn a_write_waiting_for_another_process_never_stalls_the_server() {
    use std::time::Duration;
    let env = TestEnv::new();
    crate::engram_tools::make_pack(&env, "busy");
    let c = std::sync::Arc::new(env.client().await);
    let capture =
        |s: &str| json!({"name": "busy", "category": "notes", "content": format!("内容 {s}"), "summary": s});
    ok(&c, "capture_memory", capture("first")).await;

    let lock_path = env.pack("busy").join(".git/engram.lock");
    let holder = fs::OpenOptions::new().write(true).open(&lock_path).expect("the write lock file");
    fs4::fs_std::FileExt::lock_exclusive(&holder).expect("hold the write lock");
    let before = commit_count(&env.pack("busy"));

    let pending = {
        let c = c.clone();
        tokio::spawn(async move {
            let a = ok(&c, "capture_memory", capture("second")).await;
            let b = ok(&c, "correct_memory", json!({"name": "busy", "category": "notes", "old_summary": "first", "new_content": "改过", "new_summary": "first fixed"})).await;
            let d =
                ok(&c, "delete_memory", json!({"name": "busy", "category": "notes", "summary": "second"}))
                    .await;
            (a, b, d)
        })
    };
    // The server still reads and answers while the capture waits for the lock.
    let answered = tokio::time::timeout(Duration::from_secs(20), async {
        (ok(&c, "ping", json!({})).await, ok(&c, "list_engrams", json!({})).await)
    })
    .await;
    let still_waiting = !pending.is_finished();
    let landed_meanwhile = commit_count(&env.pack("busy")) != before;
    fs4::fs_std::FileExt::unlock(&holder).expect("release");
    let (pong, list) = answered.expect("the server answered while a capture waited for the lock");
    assert_eq!(pong, "pong");
    assert!(list.contains("busy"), "{list}");
    assert!(still_waiting && !landed_meanwhile, "the capture must wait for the lock");

    let (captured, corrected, deleted) = pending.await.expect("writes");
    assert!(captured.contains("second"), "{captured}");
    assert!(corrected.contains("first fixed"), "{corrected}");
    assert!(!deleted.is_empty());
    assert_eq!(commit_count(&env.pack("busy")), before + 3, "each write one commit, none lost");
    let hot = env.read("busy", "memory/_index.md");
    assert!(hot.contains("first fixed") && !hot.contains("second"), "{hot}");
    assert_fsck(&env.pack("busy"));
}
