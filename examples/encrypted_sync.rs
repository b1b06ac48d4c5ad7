//! Sync time and remote size with an encrypted remote against the same pack synced in plain
//! text (issue #38; BENCHMARKS.md, Sync › "Encrypted remotes").
//!
//! `cargo run --release --example encrypted_sync -- [memories…]` (default: 1000 10000)
//! captures the memories into one pack through the same `Engram` the MCP tools use (one
//! commit each) and copies it, so the plain and the encrypted remote (two bare repositories on
//! the local disk as `file://` URLs, the network left out) sync identical packs. Every step
//! runs on both, one after the other, so both meet the same load: the first push of the whole
//! pack, an install on a second device (clone, or fetch + decrypt + index + checkout), then
//! [`ROUNDS`] rounds of 10 more captures synced and fetched by the second device, then 100
//! syncs of one capture each (a server syncing after every write). Times of repeated steps are
//! medians. The remote's objects are measured at the end, as pushed and after `git gc`.
//! Prints a markdown table.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use engram::ops::{Caller, CaptureRequest, Config, Engram};

#[path = "../benches/common/mod.rs"]
mod common;
use common::{dir_bytes, git_out};

/// Rounds of 10 captures synced (and fetched by the second device).
const ROUNDS: usize = 5;

/// Syncs of one capture each.
const SINGLE_SYNCS: usize = 100;

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

/// An empty bare repository at `path`, as a `file://` URL: libgit2 then packs, sends and
/// indexes as it does over ssh or https (a plain path would clone by copying the files).
fn bare(path: &Path) -> String {
    git_out(Path::new("."), &["init", "--bare", "-q", &path.display().to_string()]);
    format!("file://{}", path.display())
}

/// One side of the comparison: the device that captures, its remote, the second device.
struct Side {
    encrypt: bool,
    a: Engram,
    b: Option<Engram>,
    url: String,
    remote: PathBuf,
    push: Duration,
    install: Duration,
    incremental: Vec<Duration>,
    fetch: Vec<Duration>,
    single: Vec<Duration>,
}

fn timed_sync(engram: &Engram, caller: &Caller) -> Duration {
    let t = Instant::now();
    let report = engram.sync_pack("bench", caller).expect("sync");
    let took = t.elapsed();
    assert!(report.is_success(), "{}", report.render());
    took
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

/// Copies the packs directory `from` (the pack and its key) to `to`.
fn copy_packs(from: &Path, to: &Path) {
    let status = std::process::Command::new("cp").arg("-a").arg(from).arg(to).status().expect("cp");
    assert!(status.success(), "cp -a {} {}", from.display(), to.display());
}

fn main() -> anyhow::Result<()> {
    let sizes: Vec<usize> = std::env::args().skip(1).filter_map(|s| s.parse().ok()).collect();
    let sizes = if sizes.is_empty() { vec![1000, 10_000] } else { sizes };
    println!(
        "| memories | remote | first push | install | sync +10 | fetch +10 | sync +1 | 100 × sync +1 | remote size | after git gc |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for n in sizes {
        let tmp = tempfile::tempdir()?;
        let packs = tmp.path().join("plain-a");
        std::fs::create_dir_all(&packs)?;
        let a = Engram::new(Config::new(packs.clone()))?;
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
        let pack = packs.join("bench");
        git_out(&pack, &["config", "gc.auto", "0"]);
        let deadline = Instant::now() + Duration::from_secs(120);
        while pack.join(".git/gc.pid").exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        git_out(&pack, &["gc", "-q"]);
        drop(a);
        copy_packs(&packs, &tmp.path().join("encrypted-a"));
        // The copy's files have new inodes and change times, so its git index no longer matches
        // their stat data: every status (each sync looks for hand edits) would hash every file
        // again, a cost of the copy and not of encryption. Refreshed, as `git status` would.
        git_out(&tmp.path().join("encrypted-a/bench"), &["update-index", "-q", "--refresh"]);
        let mut sides = Vec::new();
        for (label, encrypt) in [("plain", false), ("encrypted", true)] {
            let a = Engram::new(Config::new(tmp.path().join(format!("{label}-a"))))?;
            // `install` names the pack after the repository: `bench`, as on the first device.
            let remote = tmp.path().join(format!("{label}-remote/bench.git"));
            let url = bare(&remote);
            a.remote_add("bench", &url, None, encrypt)?;
            let push = timed_sync(&a, &caller);
            #[rustfmt::skip]
            sides.push(Side { encrypt, a, b: None, url, remote, push, install: Duration::ZERO, incremental: Vec::new(), fetch: Vec::new(), single: Vec::new() });
        }
        for (side, label) in sides.iter_mut().zip(["plain", "encrypted"]) {
            let dir = tmp.path().join(format!("{label}-b"));
            std::fs::create_dir_all(&dir)?;
            let b = Engram::new(Config::new(dir))?;
            let t = Instant::now();
            match side.encrypt {
                true => b.install_encrypted(&side.url, &side.a.key_path("bench"), &mut |_, _| {}),
                false => b.install_engram(&side.url, &mut |_, _| {}),
            }
            .expect("install");
            side.install = t.elapsed();
            side.b = Some(b);
        }
        let mut next = n;
        for _ in 0..ROUNDS {
            for side in &mut sides {
                for i in next..next + 10 {
                    capture(&side.a, &caller, i);
                }
                side.incremental.push(timed_sync(&side.a, &caller));
                let b = side.b.as_ref().expect("installed");
                side.fetch.push(timed_sync(b, &caller));
            }
            next += 10;
        }
        for _ in 0..SINGLE_SYNCS {
            for side in &mut sides {
                capture(&side.a, &caller, next);
                side.single.push(timed_sync(&side.a, &caller));
            }
            next += 1;
        }
        let mut rows = Vec::new();
        for (side, label) in sides.iter_mut().zip(["plain", "encrypted"]) {
            let objects = side.remote.join("objects");
            let pushed = dir_bytes(&objects);
            git_out(&side.remote, &["gc", "-q", "--prune=now"]);
            let gc = dir_bytes(&objects);
            let single_total: Duration = side.single.iter().sum();
            let row = [
                side.push,
                side.install,
                median(&mut side.incremental),
                median(&mut side.fetch),
                median(&mut side.single),
                single_total,
            ];
            println!(
                "| {n} | {label} | {} | {} | {} | {} | {} | {} | {:.0} KiB | {:.0} KiB |",
                ms(row[0]),
                ms(row[1]),
                ms(row[2]),
                ms(row[3]),
                ms(row[4]),
                ms(row[5]),
                pushed as f64 / 1024.0,
                gc as f64 / 1024.0
            );
            rows.push((row, pushed, gc));
        }
        let ((p, p_size, p_gc), (e, e_size, e_gc)) = (&rows[0], &rows[1]);
        let ratios: Vec<String> =
            e.iter().zip(p).map(|(e, p)| format!("{:.2}×", e.as_secs_f64() / p.as_secs_f64())).collect();
        println!(
            "| {n} | ratio | {} | {:.2}× | {:.2}× |",
            ratios.join(" | "),
            *e_size as f64 / *p_size as f64,
            *e_gc as f64 / *p_gc as f64
        );
    }
    Ok(())
}
