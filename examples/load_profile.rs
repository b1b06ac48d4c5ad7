//! Profiles `load_engram` in process (BENCHMARKS.md, "load_engram").
//!
//! `cargo run --release --example load_profile -- <packs-dir> [memories] [loads]`
//! creates the pack `bench` in `<packs-dir>` (`engram init`, then `memories`
//! captures) when it does not exist yet (kept, so a 10,000-memory pack is built once), then times
//! `loads` in-process `load_engram` calls against reading the same files with
//! `std::fs::read`, interleaved, and prints both medians.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use engram::ops::{Caller, CaptureRequest, Config, Engram};

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e6
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let packs =
        PathBuf::from(args.next().ok_or_else(|| anyhow::anyhow!("usage: <packs-dir> [memories] [loads]"))?);
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1_000);
    let loads: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(2_000);
    let pack = packs.join("bench");
    let engram = Engram::new(Config::new(packs.clone()))?;
    let caller = Caller { tool: "load_engram".into(), client: Some("profile".into()) };
    if !pack.exists() {
        engram.init_engram("bench", false, engram::lang::Lang::Zh)?;
        let started = Instant::now();
        for i in 0..n {
            let req = CaptureRequest {
                name: "bench".into(),
                content: format!(
                    "第{i}条记忆：用户提到 project-{} 的进展，周{}早上训练。",
                    i % 37,
                    i % 7 + 1
                ),
                category: format!("cat{}", i % 10),
                summary: format!("记忆 {i} 摘要"),
                memory_type: Some("fact".into()),
                ..CaptureRequest::default()
            };
            engram.capture_memory(&req, &caller)?;
            if (i + 1) % 1000 == 0 {
                eprintln!("prefilled {}/{n} ({:.0} s)", i + 1, started.elapsed().as_secs_f64());
            }
        }
    }
    let files: Vec<PathBuf> = [
        "role.md",
        "workflow.md",
        "rules.md",
        "meta.json",
        "knowledge/_index.md",
        "examples/_index.md",
        "memory/_index.md",
    ]
    .iter()
    .map(|f| pack.join(f))
    .chain([packs.join("_global/memory/_index.md")])
    .collect();
    let read = |files: &[PathBuf]| {
        files.iter().map(|f| std::fs::read(f).map(|b| b.len()).unwrap_or(0)).sum::<usize>()
    };
    let lib = Engram::new(Config::new(packs.clone()))?;
    lib.load_engram("bench", "bench")?;
    lib.load_engram("bench", "bench")?;
    let settled = lib.load_engram_if_settled("bench", "bench").transpose()?;
    println!("answered without git or lock after two loads: {}", settled.is_some());
    let (mut tl, mut tr) = (Vec::new(), Vec::new());
    for _ in 0..loads {
        let t = Instant::now();
        std::hint::black_box(read(&files));
        tr.push(t.elapsed());
        let t = Instant::now();
        std::hint::black_box(lib.load_engram("bench", "bench")?);
        tl.push(t.elapsed());
    }
    let (l, r) = (median(tl), median(tr));
    println!("in-process load p50 {l:.2} µs, read floor p50 {r:.2} µs, ratio {:.2}×", l / r);
    Ok(())
}
