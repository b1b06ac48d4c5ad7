//! Repository size per 10,000 captures (BENCHMARKS.md, "History, secrets and pack size").
//!
//! `cargo run --release --example pack_size -- [captures]` captures N memories
//! (distinct, ~120 characters each, 8 categories) into a fresh pack through
//! the same `Engram` the MCP tools use, then reports the size of `.git` with
//! the automatic packing engram does, and after `engram gc` (one full repack).

use std::time::Instant;

use engram::ops::{Caller, CaptureRequest, Config, Engram};

fn main() -> anyhow::Result<()> {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let tmp = std::env::temp_dir().join(format!("engram-pack-size-{}", std::process::id()));
    let packs = tmp.join("packs");
    std::fs::create_dir_all(packs.join("bench/memory"))?;
    std::fs::write(
        packs.join("bench/meta.json"),
        "{\"name\": \"bench\", \"description\": \"size bench\"}\n",
    )?;
    std::fs::write(packs.join("bench/role.md"), "# 角色\n基准测试。\n")?;
    let config = Config::new(packs.clone());
    let engram = Engram::new(config)?;
    let caller = Caller { tool: "capture_memory".into(), client: Some("bench".into()) };
    let started = Instant::now();
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let t = Instant::now();
        let req = CaptureRequest {
            name: "bench".into(),
            content: format!(
                "第 {i} 条记忆：用户提到周{}想练{}，目标是提高耐力并保持每周三次训练。",
                i % 7,
                ["深蹲", "硬拉", "卧推", "跑步"][i % 4]
            ),
            category: format!("cat{}", i % 8),
            summary: format!("记忆 {i}：训练偏好与目标"),
            ..CaptureRequest::default()
        };
        engram.capture_memory(&req, &caller)?;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let total = started.elapsed();
    times.sort_by(f64::total_cmp);
    let dir = packs.join("bench");
    let (auto, after) = engram.with_repo(&dir, |r| {
        let auto = r.git_size();
        r.pack_objects()?;
        Ok((auto, r.git_size()))
    })?;
    let work: u64 = walk(&dir);
    let mib = |b: u64| b as f64 / 1024.0 / 1024.0;
    let per10k = |b: u64| mib(b) * 10_000.0 / n as f64;
    println!(
        "captures: {n} in {:.1} s (median {:.2} ms, p90 {:.2} ms per capture)",
        total.as_secs_f64(),
        times[n / 2],
        times[n * 9 / 10]
    );
    println!(
        ".git with automatic packing: {:.2} MiB ({:.2} MiB per 10,000 captures)",
        mib(auto),
        per10k(auto)
    );
    println!(
        ".git after engram gc:        {:.2} MiB ({:.2} MiB per 10,000 captures)",
        mib(after),
        per10k(after)
    );
    println!("working tree (memory files): {:.2} MiB", mib(work));
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(())
}

fn walk(p: &std::path::Path) -> u64 {
    std::fs::read_dir(p)
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name() != ".git")
                .map(|e| {
                    if e.path().is_dir() {
                        walk(&e.path())
                    } else {
                        e.metadata().map(|m| m.len()).unwrap_or(0)
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}
