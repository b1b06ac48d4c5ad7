//! A profiling driver for the write path: `cargo run --release --example
//! capture_loop -- [prefill] [captures]` prefills a fresh pack with `prefill`
//! memories, then times `captures` more through the library (the code the
//! `capture_memory` tool runs, without MCP) and prints p50/p95. Run it under
//! `perf record` or `strace -c`, or with `ENGRAM_TRACE_WRITES=1` for phases.
//! `ENGRAM_LOOP_DIR=<dir>` keeps the packs there, so a large prefill is made
//! once; `ENGRAM_LOOP_PAUSE_US=<n>` idles between captures, as a client would.

use std::time::{Duration, Instant};

use engram::ops::{Caller, CaptureRequest, Config, Engram};

fn capture(engram: &Engram, caller: &Caller, i: usize) -> anyhow::Result<()> {
    let req = CaptureRequest {
        name: "loop".into(),
        content: format!(
            "第{i}条记忆：用户提到 project-{} 的进展，周{}早上训练 (note {i}, run {}).",
            i % 37,
            i % 7 + 1,
            std::process::id()
        ),
        category: format!("cat{}", i % 10),
        summary: format!("记忆 {i} 摘要"),
        memory_type: Some("fact".into()),
        tags: vec!["loop".into()],
        ..CaptureRequest::default()
    };
    engram.capture_memory(&req, caller)?;
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1).map(|s| s.parse::<usize>());
    let prefill = args.next().transpose()?.unwrap_or(100);
    let n = args.next().transpose()?.unwrap_or(300);
    let tmp = tempfile::tempdir()?;
    // ENGRAM_LOOP_DIR keeps the packs dir between runs: a prefill is done once.
    let kept = std::env::var_os("ENGRAM_LOOP_DIR").map(std::path::PathBuf::from);
    let packs = kept.clone().unwrap_or_else(|| tmp.path().join("packs"));
    let reuse = packs.join("loop/.git").exists();
    std::fs::create_dir_all(packs.join("loop/memory"))?;
    std::fs::write(packs.join("loop/meta.json"), "{\"name\": \"loop\", \"description\": \"write loop\"}\n")?;
    let mut config = Config::new(packs);
    config.store.trace_timing = std::env::var_os("ENGRAM_TRACE_WRITES").is_some();
    let engram = Engram::new(config)?;
    let caller = Caller { tool: "capture_memory".into(), client: Some("loop".into()) };
    if !reuse {
        for i in 0..prefill {
            capture(&engram, &caller, i)?;
        }
    }
    let cpu_before = cpu_ns();
    let all_before = process_cpu_ns();
    let mut times: Vec<Duration> = Vec::with_capacity(n);
    let pause =
        std::env::var("ENGRAM_LOOP_PAUSE_US").ok().and_then(|v| v.parse().ok()).map(Duration::from_micros);
    for i in prefill..prefill + n {
        if let Some(pause) = pause {
            std::thread::sleep(pause);
        }
        let t = Instant::now();
        capture(&engram, &caller, i)?;
        times.push(t.elapsed());
    }
    let cpu = cpu_ns().zip(cpu_before).map(|(a, b)| (a - b) as f64 / n.max(1) as f64 / 1e6);
    // Packing runs on background threads: let it finish and count it too.
    engram::store::wait_for_background_packing();
    let all = (process_cpu_ns() - all_before) as f64 / n.max(1) as f64 / 1e6;
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    if !times.is_empty() {
        println!(
            "{n} captures after {prefill}: p50 {:.3} ms, p95 {:.3} ms",
            ms(times[times.len() / 2]),
            ms(times[times.len() * 95 / 100])
        );
        if let Some(cpu) = cpu {
            println!("CPU time per capture (this process, from /proc/self/schedstat): {cpu:.3} ms");
        }
        println!("CPU time per capture (all threads incl. background packing, getrusage): {all:.3} ms");
        let pack = tmp.path().join("packs/loop");
        let git = dir_size(&pack.join(".git"));
        let text = dir_size(&pack) - git;
        println!(
            ".git as left {:.1} KiB, text {:.1} KiB, ratio {:.2}",
            git as f64 / 1024.0,
            text as f64 / 1024.0,
            git as f64 / text.max(1) as f64
        );
    }
    Ok(())
}

fn dir_size(path: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Nanoseconds all threads of this process (finished ones too) have run on a CPU.
fn process_cpu_ns() -> u64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return 0;
    }
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    ns(usage.ru_utime) + ns(usage.ru_stime)
}

/// Nanoseconds the main thread has run on a CPU (Linux only; /proc/self is the thread-group leader).
fn cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/self/schedstat").ok()?.split_whitespace().next()?.parse().ok()
}
