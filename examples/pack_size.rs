//! Repository size after N captures (BENCHMARKS.md, Core › "Repository size").
//!
//! `cargo run --release --example pack_size -- [captures] [--keep]` makes a pack
//! with `engram init`, captures N memories into it through the same `Engram` the
//! MCP tools use (the same memories as `cargo bench --bench core`'s prefill), and
//! reports `.git` against the text of the working tree twice: as the writes left
//! it (engram's automatic packing only) and after `engram gc` (one full repack),
//! each with a breakdown (packs, loose objects, reflogs, index, the rest), and
//! the largest ratio seen during the run (sampled every 1% of the captures).
//! `--keep` leaves the pack in place and prints its path, for `git verify-pack`.

use std::path::Path;
use std::time::Instant;

use engram::ops::{Caller, CaptureRequest, Config, Engram};

const CATEGORIES: [&str; 10] = [
    "preferences",
    "user-profile",
    "projects",
    "health",
    "work",
    "travel",
    "diet",
    "family",
    "reading",
    "habits",
];

/// The bench's memory number `i` (see `benches/core.rs`).
fn sentence(i: usize) -> String {
    format!(
        "第{i}条记忆：用户提到 project-{} 的进展，周{}早上训练，喜欢 {} 口味的咖啡 (note {i}).",
        i % 37,
        i % 7 + 1,
        ["拿铁", "美式", "手冲"][i % 3]
    )
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = args.iter().find_map(|s| s.parse().ok()).unwrap_or(10_000);
    let keep = args.iter().any(|a| a == "--keep");
    let tmp = std::env::temp_dir().join(format!("engram-pack-size-{}", std::process::id()));
    let packs = tmp.join("packs");
    std::fs::create_dir_all(&packs)?;
    let engram = Engram::new(Config::new(packs.clone()))?;
    engram.init_engram("bench", false, engram::lang::Lang::Zh)?;
    let caller = Caller { tool: "bench-prefill".into(), client: Some("bench".into()) };
    let started = Instant::now();
    let mut times = Vec::with_capacity(n);
    // The largest .git / text seen during the run (sampled every 1% of the captures).
    let mut worst: Option<(f64, usize)> = None;
    for i in 0..n {
        let t = Instant::now();
        let req = CaptureRequest {
            name: "bench".into(),
            content: sentence(i),
            category: CATEGORIES[i % CATEGORIES.len()].into(),
            summary: format!("记忆 {i} 摘要"),
            memory_type: Some("fact".into()),
            tags: vec!["bench".into()],
            ..CaptureRequest::default()
        };
        engram.capture_memory(&req, &caller)?;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        if (i + 1) % (n / 100).max(1) == 0 {
            let git = size(&packs.join("bench/.git"));
            let ratio = git as f64 / (size(&packs.join("bench")) - git) as f64;
            if worst.is_none_or(|(r, _)| ratio > r) {
                worst = Some((ratio, i + 1));
            }
        }
    }
    let total = started.elapsed();
    times.sort_by(f64::total_cmp);
    let dir = packs.join("bench");
    let git = dir.join(".git");
    let text = size(&dir) - size(&git);
    println!(
        "captures: {n} in {:.1} s (median {:.2} ms, p90 {:.2} ms, max {:.1} ms per capture)",
        total.as_secs_f64(),
        times[n / 2],
        times[n * 9 / 10],
        times[n - 1]
    );
    println!("text in working tree: {:.1} KiB", kib(text));
    if let Some((ratio, at)) = worst {
        println!("largest .git / text during the run (sampled every 1%): {ratio:.2}× after {at} captures");
    }
    report("right after the last write", &git, text);
    // Packing runs in the background: what the writes leave once it is done.
    engram::store::wait_for_background_packing();
    report("as left by the writes", &git, text);
    let t = Instant::now();
    engram.with_repo(&dir, |r| Ok(r.pack_objects()?))?;
    let gc_time = t.elapsed();
    report(&format!("after engram gc ({:.2} s)", gc_time.as_secs_f64()), &git, text);
    if keep {
        println!("kept: {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    Ok(())
}

fn kib(b: u64) -> f64 {
    b as f64 / 1024.0
}

/// Prints `.git`'s size against `text`, split into its parts.
fn report(label: &str, git: &Path, text: u64) {
    let total = size(git);
    let pack_dir = git.join("objects").join("pack");
    let packs = std::fs::read_dir(&pack_dir)
        .map(|d| d.flatten().filter(|e| e.path().extension().is_some_and(|x| x == "pack")).count())
        .unwrap_or(0);
    let packed = size(&pack_dir);
    let loose = size(&git.join("objects")) - packed;
    let logs = size(&git.join("logs"));
    let index = size(&git.join("index"));
    let rest = total - packed - loose - logs - index;
    println!(
        "{label}: .git {:.1} KiB = {:.2}× text | packs {:.1} KiB ({packs} files) · loose {:.1} KiB · logs {:.1} KiB · index {:.1} KiB · other {:.1} KiB",
        kib(total),
        total as f64 / text as f64,
        kib(packed),
        kib(loose),
        kib(logs),
        kib(index),
        kib(rest),
    );
}

/// Bytes of the files under `p` (or of `p` itself), as `benches/core.rs` counts them.
fn size(p: &Path) -> u64 {
    match std::fs::metadata(p) {
        Ok(m) if m.is_dir() => {
            std::fs::read_dir(p).map(|d| d.flatten().map(|e| size(&e.path())).sum()).unwrap_or(0)
        }
        Ok(m) => m.len(),
        Err(_) => 0,
    }
}
