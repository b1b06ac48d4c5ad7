//! Sync time and remote size with an encrypted remote against the same pack synced in plain
//! text (issue #38; BENCHMARKS.md, Sync › "Encrypted remotes").
//!
//! `cargo run --release --example encrypted_sync -- [memories…]` (default: 1000 10000)
//! captures the memories into one pack through the same `Engram` the MCP tools use (one
//! commit each), then, against a plain remote and an encrypted one (two bare repositories
//! on the local disk as `file://` URLs, the network left out): the first push of the whole
//! pack, an install on a second device (clone, or fetch + decrypt + index + checkout), and
//! an incremental sync after 10 more captures (the second device fetches them), then 100
//! syncs of one capture each (a server syncing after every write). The remote's objects are
//! measured as pushed and after `git gc`. Prints a markdown table.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use engram::ops::{Caller, CaptureRequest, Config, Engram};

fn capture(engram: &Engram, caller: &Caller, i: usize) {
    let req = CaptureRequest {
        name: "bench".into(),
        content: format!(
            "第{i}条记忆：用户提到 project-{} 的进展，周{}早上训练 (note {i}).",
            i % 37,
            i % 7 + 1
        ),
        category: format!("cat{}", i % 10),
        summary: format!("记忆 {i} 摘要"),
        memory_type: Some("fact".into()),
        ..CaptureRequest::default()
    };
    engram.capture_memory(&req, caller).expect("capture");
}

fn git(args: &[&str]) {
    let out = Command::new("git")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .args(args)
        .output()
        .expect("git");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// An empty bare repository at `path`, as a `file://` URL: libgit2 then packs, sends and
/// indexes as it does over ssh or https (a plain path would clone by copying the files).
fn bare(path: &Path) -> String {
    git(&["init", "--bare", "-q", &path.display().to_string()]);
    format!("file://{}", path.display())
}

/// Bytes under `path`.
fn dir_bytes(path: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(path) else { return 0 };
    rd.flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

struct Row {
    push: Duration,
    install: Duration,
    incremental: Duration,
    fetch: Duration,
    each_write: Duration,
    remote_bytes: u64,
    remote_gc_bytes: u64,
}

/// Shares the pack of `a` through a new remote at `remote` (encrypted or not), installs it on a
/// new device under `dir`, then syncs 10 more captures from `a` to it.
fn run(a: &Engram, caller: &Caller, next: &mut usize, dir: &Path, encrypt: bool) -> Row {
    let url = bare(&dir.join("bench.git"));
    let _ = a.remote_remove("bench", None);
    a.remote_add("bench", &url, None, encrypt).expect("remote add");
    let t = Instant::now();
    let report = a.sync_pack("bench", caller).expect("sync");
    let push = t.elapsed();
    assert!(report.is_success(), "{}", report.render());
    let packs_b: PathBuf = dir.join("device-b");
    std::fs::create_dir_all(&packs_b).expect("mkdir");
    let b = Engram::new(Config::new(packs_b)).expect("engram");
    let t = Instant::now();
    match encrypt {
        true => b.install_encrypted(&url, &a.key_path("bench"), &mut |_, _| {}),
        false => b.install_engram(&url, &mut |_, _| {}),
    }
    .expect("install");
    let install = t.elapsed();
    for _ in 0..10 {
        capture(a, caller, *next);
        *next += 1;
    }
    let t = Instant::now();
    let report = a.sync_pack("bench", caller).expect("sync");
    let incremental = t.elapsed();
    assert!(report.is_success(), "{}", report.render());
    let t = Instant::now();
    let report = b.sync_pack("bench", caller).expect("sync");
    let fetch = t.elapsed();
    assert!(report.is_success(), "{}", report.render());
    // A server syncing after every write: 100 pushes of one memory each (sync time only).
    let mut each_write = Duration::ZERO;
    for _ in 0..100 {
        capture(a, caller, *next);
        *next += 1;
        let t = Instant::now();
        let report = a.sync_pack("bench", caller).expect("sync");
        each_write += t.elapsed();
        assert!(report.is_success(), "{}", report.render());
    }
    let remote = dir.join("bench.git");
    let remote_bytes = dir_bytes(&remote.join("objects"));
    git(&["-C", &remote.display().to_string(), "gc", "-q", "--prune=now"]);
    let remote_gc_bytes = dir_bytes(&remote.join("objects"));
    Row { push, install, incremental, fetch, each_write, remote_bytes, remote_gc_bytes }
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

fn main() -> anyhow::Result<()> {
    let sizes: Vec<usize> = std::env::args().skip(1).filter_map(|s| s.parse().ok()).collect();
    let sizes = if sizes.is_empty() { vec![1000, 10_000] } else { sizes };
    println!(
        "| memories | remote | first push | install | sync +10 | fetch +10 | 100 × sync +1 | remote size | after git gc |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    for n in sizes {
        let tmp = tempfile::tempdir()?;
        let packs = tmp.path().join("device-a");
        std::fs::create_dir_all(&packs)?;
        let a = Engram::new(Config::new(packs))?;
        a.init_engram("bench", false, engram::lang::Lang::Zh)?;
        a.key_new("bench")?;
        let caller = Caller { tool: "bench-prefill".into(), client: Some("bench".into()) };
        let started = Instant::now();
        for i in 0..n {
            capture(&a, &caller, i);
        }
        eprintln!("prefilled {n} memories in {:.0} s", started.elapsed().as_secs_f64());
        // The timed part runs on a packed repository with git's background packing off: a
        // `git gc --auto` that engram starts mid-run holds ref locks a push then meets.
        let pack = tmp.path().join("device-a/bench");
        let pack = pack.display().to_string();
        git(&["-C", &pack, "config", "gc.auto", "0"]);
        let deadline = Instant::now() + Duration::from_secs(120);
        while Path::new(&pack).join(".git/gc.pid").exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        git(&["-C", &pack, "gc", "-q"]);
        let mut next = n;
        let mut rows = Vec::new();
        for (label, encrypt) in [("plain", false), ("encrypted", true)] {
            let dir = tmp.path().join(label);
            std::fs::create_dir_all(&dir)?;
            let row = run(&a, &caller, &mut next, &dir, encrypt);
            println!(
                "| {n} | {label} | {} | {} | {} | {} | {} | {:.0} KiB | {:.0} KiB |",
                ms(row.push),
                ms(row.install),
                ms(row.incremental),
                ms(row.fetch),
                ms(row.each_write),
                row.remote_bytes as f64 / 1024.0,
                row.remote_gc_bytes as f64 / 1024.0
            );
            rows.push(row);
        }
        let (p, e) = (&rows[0], &rows[1]);
        let ratio = |e: Duration, p: Duration| e.as_secs_f64() / p.as_secs_f64();
        println!(
            "| {n} | ratio | {:.2}× | {:.2}× | {:.2}× | {:.2}× | {:.2}× | {:.2}× | {:.2}× |",
            ratio(e.push, p.push),
            ratio(e.install, p.install),
            ratio(e.incremental, p.incremental),
            ratio(e.fetch, p.fetch),
            ratio(e.each_write, p.each_write),
            e.remote_bytes as f64 / p.remote_bytes as f64,
            e.remote_gc_bytes as f64 / p.remote_gc_bytes as f64
        );
    }
    Ok(())
}
