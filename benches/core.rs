//! Core benchmark: capture and load over stdio from a real MCP client, against
//! floors measured in the same run. `cargo bench --bench core` (release build).
//!
//! For each pack size (100, 1,000, 10,000 memories; `ENGRAM_BENCH_SIZES` to
//! change) it prefills a pack through the library (the same code the tools run),
//! then over stdio times `capture_memory` and `load_engram`, and times the floors:
//! a bare git2 commit changing one file of a copy of the same repository (in
//! rounds alternating with the captures, so both see the same load), and
//! reading the pack's always-loaded files from disk. It also times server start
//! to the first `tools/list` answer and reports the repository size.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use engram::mcp::client::StdioClient;
use engram::ops::{Caller, CaptureRequest, Config, Engram};
use serde_json::json;

const SAMPLES: usize = 200;
/// Rounds in which captures and floor commits alternate.
const ROUNDS: usize = 10;

fn percentile(times: &mut [Duration], p: f64) -> f64 {
    times.sort();
    let idx = ((times.len() as f64 - 1.0) * p).round() as usize;
    times[idx].as_secs_f64() * 1000.0
}

fn dir_size(path: &Path) -> u64 {
    let mut total = 0;
    if let Ok(entries) = std::fs::read_dir(path) {
        for e in entries.flatten() {
            let p = e.path();
            match e.metadata() {
                Ok(m) if m.is_dir() => total += dir_size(&p),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}

fn engram_for(packs: &Path) -> Engram {
    Engram::new(Config::new(packs.to_owned())).expect("engram")
}

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

fn sentence(i: usize) -> String {
    format!(
        "第{i}条记忆：用户提到 project-{} 的进展，周{}早上训练，喜欢 {} 口味的咖啡 (note {i}).",
        i % 37,
        i % 7 + 1,
        ["拿铁", "美式", "手冲"][i % 3]
    )
}

fn prefill(engram: &Engram, n: usize) {
    let caller = Caller { tool: "bench-prefill".into(), client: Some("bench".into()) };
    let started = Instant::now();
    for i in 0..n {
        let req = CaptureRequest {
            name: "bench".into(),
            content: sentence(i),
            category: CATEGORIES[i % CATEGORIES.len()].into(),
            summary: format!("记忆 {i} 摘要"),
            memory_type: Some("fact".into()),
            tags: vec!["bench".into()],
            ..CaptureRequest::default()
        };
        engram.capture_memory(&req, &caller).expect("prefill capture");
        if (i + 1) % 2000 == 0 {
            eprintln!("  prefilled {}/{n} ({:.0} s)", i + 1, started.elapsed().as_secs_f64());
        }
    }
}

fn read_always_loaded(pack: &Path, global: &Path) -> usize {
    let mut n = 0;
    for f in [
        "meta.json",
        "role.md",
        "workflow.md",
        "rules.md",
        "knowledge/_index.md",
        "examples/_index.md",
        "memory/_index.md",
    ] {
        n += std::fs::read(pack.join(f)).map(|b| b.len()).unwrap_or(0);
    }
    n + std::fs::read(global.join("memory/_index.md")).map(|b| b.len()).unwrap_or(0)
}

struct Row {
    size: usize,
    capture_p50: f64,
    capture_p95: f64,
    floor_p50: f64,
    load_p50: f64,
    ping_p50: f64,
    read_floor_p50: f64,
    start_p50: f64,
    /// `.git` as the prefill's writes left it (automatic packing only).
    repo_auto_bytes: u64,
    /// `.git` after `engram gc`.
    repo_bytes: u64,
    text_bytes: u64,
}

async fn measure(bin: &Path, size: usize) -> Row {
    let tmp = tempfile::tempdir().expect("tempdir");
    let packs = tmp.path().join("packs");
    let out = Command::new(bin).args(["init", "bench", "--packs-dir"]).arg(&packs).output().expect("init");
    assert!(out.status.success());
    let engram = engram_for(&packs);
    eprintln!("size {size}: prefilling…");
    prefill(&engram, size);
    let pack = packs.join("bench");
    let repo_auto_bytes = dir_size(&pack.join(".git"));
    engram.with_repo(&pack, |r| Ok(r.pack_objects()?)).expect("pack");
    let repo_bytes = dir_size(&pack.join(".git"));
    let text_bytes = dir_size(&pack) - repo_bytes;

    // Server start to first tools/list.
    let packs_s = packs.display().to_string();
    let mut starts = Vec::new();
    for _ in 0..7 {
        let t = Instant::now();
        let c = StdioClient::spawn(bin, &["serve", "--packs-dir", &packs_s], &[]).await.expect("spawn");
        c.tool_names().await.expect("tools/list");
        starts.push(t.elapsed());
        c.close().await.expect("close");
    }

    let client = StdioClient::spawn(bin, &["serve", "--packs-dir", &packs_s], &[]).await.expect("spawn");
    let mut pings = Vec::new();
    for _ in 0..SAMPLES {
        let t = Instant::now();
        client.call("ping", json!({})).await.expect("ping");
        pings.push(t.elapsed());
    }
    let mut loads = Vec::new();
    for _ in 0..SAMPLES {
        let t = Instant::now();
        let r = client.call("load_engram", json!({"name": "bench", "query": "bench"})).await.expect("load");
        loads.push(t.elapsed());
        assert!(!r.is_error, "{}", r.text);
    }
    // Captures and the floor (bare git2 commits on a bare copy of the same
    // repository) alternate in rounds, so both see the same machine load.
    let copy: PathBuf = tmp.path().join("floor.git");
    let st = Command::new("git")
        .args(["clone", "-q", "--bare"])
        .arg(&pack)
        .arg(&copy)
        .status()
        .expect("git clone");
    assert!(st.success());
    let mut captures = Vec::new();
    let mut floor = Vec::new();
    for round in 0..ROUNDS {
        for j in 0..SAMPLES / ROUNDS {
            let i = round * (SAMPLES / ROUNDS) + j;
            let content = format!("{} (bench capture {i})", sentence(size + i));
            let t = Instant::now();
            let r = client
                .call(
                    "capture_memory",
                    json!({"name": "bench", "category": CATEGORIES[i % CATEGORIES.len()], "content": content,
                           "summary": format!("bench {i}"), "memory_type": "fact", "tags": ["bench"]}),
                )
                .await
                .expect("capture");
            captures.push(t.elapsed());
            assert!(!r.is_error, "{}", r.text);
        }
        floor.extend(
            engram::store::floor::time_bare_commits(&copy, "memory/preferences.md", SAMPLES / ROUNDS)
                .expect("floor"),
        );
    }
    client.close().await.expect("close");

    // Floors, in the same run: read the always-loaded files; bare commits on a copy.
    let global = packs.join("_global");
    let mut reads = Vec::new();
    for _ in 0..SAMPLES {
        let t = Instant::now();
        std::hint::black_box(read_always_loaded(&pack, &global));
        reads.push(t.elapsed());
    }

    Row {
        size,
        capture_p50: percentile(&mut captures, 0.5),
        capture_p95: percentile(&mut captures, 0.95),
        floor_p50: percentile(&mut floor, 0.5),
        load_p50: percentile(&mut loads, 0.5),
        ping_p50: percentile(&mut pings, 0.5),
        read_floor_p50: percentile(&mut reads, 0.5),
        start_p50: percentile(&mut starts, 0.5),
        repo_auto_bytes,
        repo_bytes,
        text_bytes,
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let sizes: Vec<usize> = std::env::var("ENGRAM_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![100, 1_000, 10_000]);
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_engram"));
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let rows: Vec<Row> = sizes.iter().map(|&n| runtime.block_on(measure(&bin, n))).collect();
    println!(
        "\n| memories | capture p50 | capture p95 | bare git2 commit p50 (floor) | capture / floor | load_engram p50 | read always-loaded files p50 | load / read | ping round trip p50 | load / (read + ping) | start → tools/list p50 | .git as left by the writes | .git after gc | text in pack | .git / text as left | after gc |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        println!(
            "| {} | {:.2} ms | {:.2} ms | {:.2} ms | {:.2}× | {:.3} ms | {:.3} ms | {:.1}× | {:.3} ms | {:.2}× | {:.1} ms | {:.1} KiB | {:.1} KiB | {:.1} KiB | {:.2}× | {:.2}× |",
            r.size,
            r.capture_p50,
            r.capture_p95,
            r.floor_p50,
            r.capture_p50 / r.floor_p50,
            r.load_p50,
            r.read_floor_p50,
            r.load_p50 / r.read_floor_p50,
            r.ping_p50,
            r.load_p50 / (r.read_floor_p50 + r.ping_p50),
            r.start_p50,
            r.repo_auto_bytes as f64 / 1024.0,
            r.repo_bytes as f64 / 1024.0,
            r.text_bytes as f64 / 1024.0,
            r.repo_auto_bytes as f64 / r.text_bytes as f64,
            r.repo_bytes as f64 / r.text_bytes as f64,
        );
    }
    if let (Some(first), Some(last)) = (rows.first(), rows.last()) {
        println!(
            "\ncapture p50 at {} memories / at {}: {:.2}×",
            last.size,
            first.size,
            last.capture_p50 / first.capture_p50
        );
    }
}
