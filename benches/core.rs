//! Core benchmark: capture and load over stdio from a real MCP client, against
//! floors measured in the same run. `cargo bench --bench core` (release build).
//!
//! For each pack size (100, 1,000, 10,000 memories; `ENGRAM_BENCH_SIZES` to
//! change) it prefills a pack through the library (the same code the tools run),
//! then over stdio times `capture_memory`, `load_engram` and `ping`, and times the
//! floors: a bare git2 commit changing one file of a copy of the same repository
//! (captures are timed last, for all sizes in the same rounds: in each round every
//! size's server takes 50 captures and then its floor makes 50 commits, so sizes
//! and floors see the same machine load), and
//! reading the files `load_engram` reads with `std::fs::read`. `load_engram` is
//! also timed in process (`Engram::load_engram`); "load − ping" is its server-side
//! cost over stdio. "From the disk", the same files are dropped from the page cache
//! (`POSIX_FADV_DONTNEED`) before each read, each stdio load and each in-process load. It also times
//! server start to the first `tools/list` answer and reports the repository size.
//!
//! **Contended:** then the same capture rounds run again with a busy process (this
//! binary with `--busy`, spinning) pinned to the last CPU, started before and killed
//! after them, and the tail is reported beside the quiet one (p50, p95, p99, worst)
//! with the repository size each server's packing leaves once it exits. `ENGRAM_BENCH_CONTENDED=0` skips it, `=only` runs only the prefill and
//! the contended rounds (the reduced form for a busy machine); there
//! `ENGRAM_BENCH_BIN=<a,b>` serves copies of each prefilled pack with other server
//! binaries, one copy per binary, all in the same rounds (a paired A/B).
//! `ENGRAM_BENCH_KEEP=1` keeps each contended pack (its path printed) for a look at its packs.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use engram::mcp::client::StdioClient;
use engram::ops::{Caller, CaptureRequest, Config, Engram};
use serde_json::json;

// The git-work floor is for `examples/floor`.
#[allow(dead_code)]
#[path = "common/floor.rs"]
mod floor;

const SAMPLES: usize = 200;
/// Loads and reads from the disk (page cache dropped before each).
const COLD_SAMPLES: usize = 60;
/// Rounds shared by every size's captures and floor commits.
const ROUNDS: usize = 10;
/// Captures (and floor commits) per size, quiet and contended: enough for a p99 that is
/// not the worst few.
const CAPTURES: usize = 500;

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

/// `engram init bench` in `packs`, from a cleared environment (like the servers).
fn init(bin: &Path, packs: &Path) {
    let out = Command::new(bin)
        .env_clear()
        .envs(engram::settings::child_env())
        .args(["init", "bench", "--packs-dir"])
        .arg(packs)
        .output()
        .expect("init");
    assert!(out.status.success(), "init: {}", String::from_utf8_lossy(&out.stderr));
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

/// The files `load_engram` reads for `pack`, in the order `render_load` reads them: the
/// persona, meta.json, the parent's knowledge index when meta.json `extends` a pack, the
/// knowledge and example indexes, the hot memory index and the global hot memory index.
fn load_read_set(packs: &Path, pack: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> =
        ["role.md", "workflow.md", "rules.md", "meta.json"].iter().map(|f| pack.join(f)).collect();
    let meta: serde_json::Value = std::fs::read(pack.join("meta.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    if let Some(parent) = meta.get("extends").and_then(|v| v.as_str()).filter(|s| !s.is_empty()) {
        files.push(packs.join(parent).join("knowledge/_index.md"));
    }
    for f in ["knowledge/_index.md", "examples/_index.md", "memory/_index.md"] {
        files.push(pack.join(f));
    }
    files.push(packs.join("_global/memory/_index.md"));
    files
}

/// The read floor: what a plain program does to read the files `load_engram` reads.
fn read_files(files: &[PathBuf]) -> usize {
    files.iter().map(|f| std::fs::read(f).map(|b| b.len()).unwrap_or(0)).sum()
}

/// Drops `files` from the page cache (written back first: dirty pages stay cached), so that
/// the next read of them comes from the disk. Returns false where that is not possible.
fn evict(files: &[PathBuf]) -> bool {
    use std::os::fd::AsRawFd as _;
    files.iter().all(|f| {
        let Ok(file) = std::fs::File::open(f) else { return true };
        // SAFETY: a valid open descriptor; POSIX_FADV_DONTNEED only drops clean cached pages.
        file.sync_data().is_ok()
            && unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) } == 0
    })
}

/// A process spinning on one CPU (this bench binary, `--busy <cpu>`), killed on drop.
struct Busy(std::process::Child);

impl Busy {
    /// Starts the busy process pinned to the last CPU (or `None` where it cannot start).
    fn start() -> Option<Self> {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let exe = std::env::current_exe().ok()?;
        let child = Command::new(exe).args(["--busy", &(cpus - 1).to_string()]).spawn().ok()?;
        Some(Self(child))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The busy process: pins itself to `cpu` and spins until its parent is gone.
fn spin_on(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET and sched_setaffinity take it by pointer.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
    let parent = std::os::unix::process::parent_id();
    let mut x: u64 = 1;
    loop {
        for _ in 0..10_000_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        if std::os::unix::process::parent_id() != parent {
            return;
        }
    }
}

/// The tail of a set of capture times.
struct Tail {
    p50: f64,
    p95: f64,
    p99: f64,
    max: f64,
    floor_p50: f64,
    floor_p95: f64,
    floor_p99: f64,
}

impl Tail {
    fn of(mut captures: Vec<Duration>, mut floor: Vec<Duration>) -> Self {
        Self {
            p50: percentile(&mut captures, 0.5),
            p95: percentile(&mut captures, 0.95),
            p99: percentile(&mut captures, 0.99),
            max: percentile(&mut captures, 1.0),
            floor_p50: percentile(&mut floor, 0.5),
            floor_p95: percentile(&mut floor, 0.95),
            floor_p99: percentile(&mut floor, 0.99),
        }
    }
}

struct Row {
    size: usize,
    capture_p50: f64,
    capture_p95: f64,
    capture_p99: f64,
    floor_p50: f64,
    /// The floor's tail: what the machine alone does to a commit (no packing in it).
    floor_p95: f64,
    floor_p99: f64,
    load_p50: f64,
    ping_p50: f64,
    read_floor_p50: f64,
    inproc_load_p50: f64,
    /// `load_engram` over stdio with its files dropped from the page cache (None: not possible here).
    cold_load_p50: Option<f64>,
    /// Reading the same files from the disk.
    cold_read_p50: Option<f64>,
    /// `load_engram` in process, its files dropped from the page cache.
    cold_inproc_p50: Option<f64>,
    start_p50: f64,
    /// `.git` as the prefill's writes left it (automatic packing only).
    repo_auto_bytes: u64,
    /// `.git` after `engram gc`.
    repo_bytes: u64,
    text_bytes: u64,
}

async fn measure(bin: &Path, size: usize) -> (Row, Live) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let packs = tmp.path().join("packs");
    init(bin, &packs);
    let engram = engram_for(&packs);
    eprintln!("size {size}: prefilling…");
    prefill(&engram, size);
    let pack = packs.join("bench");
    // Packing runs in the background: measure what it leaves, not a job half done.
    engram::store::wait_for_background_packing();
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
    // Ping and load over stdio, interleaved so both see the same machine load.
    let mut pings = Vec::new();
    let mut loads = Vec::new();
    for _ in 0..SAMPLES {
        let t = Instant::now();
        client.call("ping", json!({})).await.expect("ping");
        pings.push(t.elapsed());
        let t = Instant::now();
        let r = client.call("load_engram", json!({"name": "bench", "query": "bench"})).await.expect("load");
        loads.push(t.elapsed());
        assert!(!r.is_error, "{}", r.text);
    }

    // In process, through the library (a fresh `Engram`, one warm-up load), interleaved with the
    // read floor: reading the same files with `std::fs::read`.
    let files = load_read_set(&packs, &pack);
    let lib = engram_for(&packs);
    let warm = lib.load_engram("bench", "bench").expect("in-process load");
    assert!(warm.contains("<memory>"), "{warm}");
    let mut inproc = Vec::new();
    let mut reads = Vec::new();
    for _ in 0..SAMPLES {
        let t = Instant::now();
        std::hint::black_box(read_files(&files));
        reads.push(t.elapsed());
        let t = Instant::now();
        std::hint::black_box(lib.load_engram("bench", "bench").expect("in-process load"));
        inproc.push(t.elapsed());
    }
    // From the disk: the same files dropped from the page cache before each read and before
    // each stdio load, alternating, so the server reads them from the disk too.
    let mut cold_reads = Vec::new();
    let mut cold_loads = Vec::new();
    let mut cold_inproc = Vec::new();
    if evict(&files) {
        for _ in 0..COLD_SAMPLES {
            evict(&files);
            let t = Instant::now();
            std::hint::black_box(read_files(&files));
            cold_reads.push(t.elapsed());
            evict(&files);
            let t = Instant::now();
            let r =
                client.call("load_engram", json!({"name": "bench", "query": "bench"})).await.expect("load");
            cold_loads.push(t.elapsed());
            assert!(!r.is_error, "{}", r.text);
            evict(&files);
            let t = Instant::now();
            std::hint::black_box(lib.load_engram("bench", "bench").expect("in-process load"));
            cold_inproc.push(t.elapsed());
        }
    }
    let settled = lib.load_engram_if_settled("bench", "bench").is_some();
    eprintln!("size {size}: in-process loads answered from stat stamps (no git, no lock): {settled}");
    // The copy the floor commits to: a bare clone of the same repository.
    let copy: PathBuf = tmp.path().join("floor.git");
    let st = Command::new("git")
        .args(["clone", "-q", "--bare"])
        .arg(&pack)
        .arg(&copy)
        .status()
        .expect("git clone");
    assert!(st.success());

    let row = Row {
        size,
        capture_p50: 0.0,
        capture_p95: 0.0,
        capture_p99: 0.0,
        floor_p50: 0.0,
        floor_p95: 0.0,
        floor_p99: 0.0,
        load_p50: percentile(&mut loads, 0.5),
        ping_p50: percentile(&mut pings, 0.5),
        read_floor_p50: percentile(&mut reads, 0.5),
        inproc_load_p50: percentile(&mut inproc, 0.5),
        cold_load_p50: (!cold_loads.is_empty()).then(|| percentile(&mut cold_loads, 0.5)),
        cold_read_p50: (!cold_reads.is_empty()).then(|| percentile(&mut cold_reads, 0.5)),
        cold_inproc_p50: (!cold_inproc.is_empty()).then(|| percentile(&mut cold_inproc, 0.5)),
        start_p50: percentile(&mut starts, 0.5),
        repo_auto_bytes,
        repo_bytes,
        text_bytes,
    };
    (row, Live { tmp, client, copy, size })
}

/// A size's server, still running, and the copy its floor commits to.
struct Live {
    tmp: tempfile::TempDir,
    client: StdioClient,
    copy: PathBuf,
    size: usize,
}

/// Times captures and floor commits for every size in the same rounds: in each round, each
/// size's server takes its captures and then the floor its bare commits, so every size and
/// its floor see the same machine (this VM drifts over minutes, and the growth target
/// compares sizes). Returns the capture and floor times of each size.
async fn capture_rounds(live: &[Live]) -> Vec<(Vec<Duration>, Vec<Duration>)> {
    let mut times: Vec<(Vec<Duration>, Vec<Duration>)> =
        live.iter().map(|_| (Vec::new(), Vec::new())).collect();
    for round in 0..ROUNDS {
        for (l, (captures, floor)) in live.iter().zip(times.iter_mut()) {
            for j in 0..CAPTURES / ROUNDS {
                let i = round * (CAPTURES / ROUNDS) + j;
                let content = format!("{} (bench capture {i})", sentence(l.size + i));
                let t = Instant::now();
                let r = l
                    .client
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
                floor::time_bare_commits(&l.copy, "memory/preferences.md", CAPTURES / ROUNDS).expect("floor"),
            );
        }
    }
    times
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--list") {
        return;
    }
    if let Some(cpu) = args.iter().position(|a| a == "--busy").and_then(|i| args.get(i + 1)?.parse().ok()) {
        spin_on(cpu);
        return;
    }
    let contended = std::env::var("ENGRAM_BENCH_CONTENDED").unwrap_or_default();
    if contended == "only" {
        contended_only();
        return;
    }
    let sizes: Vec<usize> = std::env::var("ENGRAM_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![100, 1_000, 10_000]);
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_engram"));
    // One thread, like the event loops of MCP clients (Node, Python's asyncio): on a runtime with
    // two workers the client's reader and caller hand every reply across threads, which added
    // 0.1–0.2 ms to every round trip on this VM (ping p50 0.13–0.26 ms there, 0.03 ms here).
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let (mut rows, live): (Vec<Row>, Vec<Live>) =
        sizes.iter().map(|&n| runtime.block_on(measure(&bin, n))).unzip();
    eprintln!("captures: {ROUNDS} rounds over every size… (load average: {})", loadavg());
    let times = runtime.block_on(capture_rounds(&live));
    for (row, (mut captures, mut floor)) in rows.iter_mut().zip(times) {
        row.capture_p50 = percentile(&mut captures, 0.5);
        row.capture_p95 = percentile(&mut captures, 0.95);
        row.capture_p99 = percentile(&mut captures, 0.99);
        row.floor_p50 = percentile(&mut floor, 0.5);
        row.floor_p95 = percentile(&mut floor, 0.95);
        row.floor_p99 = percentile(&mut floor, 0.99);
    }
    let contended_rows = if contended == "0" {
        for l in live {
            runtime.block_on(l.client.close()).expect("close");
        }
        None
    } else {
        Some(runtime.block_on(contended_rounds(live)))
    };
    println!(
        "\n| memories | capture p50 | capture p95 | bare git2 commit p50 (floor) | capture / floor | load_engram p50 (stdio) | ping p50 | load − ping | read floor p50 | (load − ping) / read | in-process load p50 | in-process / read | start → tools/list p50 | .git as left by the writes | .git after gc | text in pack | .git / text as left | after gc |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        let server = r.load_p50 - r.ping_p50;
        println!(
            "| {} | {:.2} ms | {:.2} ms | {:.2} ms | {:.2}× | {:.3} ms | {:.3} ms | {:.3} ms | {:.4} ms | {:.2}× | {:.4} ms | {:.2}× | {:.1} ms | {:.1} KiB | {:.1} KiB | {:.1} KiB | {:.2}× | {:.2}× |",
            r.size,
            r.capture_p50,
            r.capture_p95,
            r.floor_p50,
            r.capture_p50 / r.floor_p50,
            r.load_p50,
            r.ping_p50,
            server,
            r.read_floor_p50,
            server / r.read_floor_p50,
            r.inproc_load_p50,
            r.inproc_load_p50 / r.read_floor_p50,
            r.start_p50,
            r.repo_auto_bytes as f64 / 1024.0,
            r.repo_bytes as f64 / 1024.0,
            r.text_bytes as f64 / 1024.0,
            r.repo_auto_bytes as f64 / r.text_bytes as f64,
            r.repo_bytes as f64 / r.text_bytes as f64,
        );
    }
    println!(
        "\nload_engram alone:\n\n| memories | load_engram p50 (stdio) | ping p50 (stdio) | load − ping (server side) | read floor p50 | (load − ping) / read | in-process load p50 | in-process / read | stdio load / read |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        let server = r.load_p50 - r.ping_p50;
        println!(
            "| {} | {:.3} ms | {:.3} ms | {:.3} ms | {:.4} ms | {:.2}× | {:.4} ms | {:.2}× | {:.1}× |",
            r.size,
            r.load_p50,
            r.ping_p50,
            server,
            r.read_floor_p50,
            server / r.read_floor_p50,
            r.inproc_load_p50,
            r.inproc_load_p50 / r.read_floor_p50,
            r.load_p50 / r.read_floor_p50,
        );
    }
    println!(
        "\nload_engram from the disk (its files dropped from the page cache before each load and each read):\n\n| memories | load_engram p50 (stdio, cold) | read floor p50 (cold) | stdio load / read | in-process load p50 (cold) | in-process / read |"
    );
    println!("|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        match (r.cold_load_p50, r.cold_read_p50, r.cold_inproc_p50) {
            (Some(load), Some(read), Some(inproc)) => println!(
                "| {} | {load:.3} ms | {read:.3} ms | {:.2}× | {inproc:.3} ms | {:.2}× |",
                r.size,
                load / read,
                inproc / read
            ),
            _ => println!("| {} | (the page cache cannot be dropped here) | | | | |", r.size),
        }
    }
    println!();
    for r in &rows {
        println!(
            "load numbers, {} memories (µs): stdio_load_p50={:.1} ping_p50={:.1} server_side={:.1} read_floor_p50={:.2} in_process_p50={:.2}",
            r.size,
            r.load_p50 * 1000.0,
            r.ping_p50 * 1000.0,
            (r.load_p50 - r.ping_p50) * 1000.0,
            r.read_floor_p50 * 1000.0,
            r.inproc_load_p50 * 1000.0,
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
    if let Some(contended) = contended_rows {
        print_tails(&rows, &contended);
        print_contended(&contended.iter().collect::<Vec<_>>());
    }
}

/// Quiet and contended capture tails side by side, per size (one run).
fn print_tails(quiet: &[Row], contended: &[ContendedRow]) {
    println!(
        "\ncapture tail, quiet and with a busy process pinned beside the server ({CAPTURES} captures each; the floor's tail, a bare git2 commit with no packing, is what the machine alone does):\n\n| memories | run | p50 | p95 | p99 | p95 / p50 | p99 / p50 | floor p50 | floor p95 / p50 | floor p99 / p50 |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for q in quiet {
        println!(
            "| {} | quiet | {:.2} ms | {:.2} ms | {:.2} ms | {:.2}× | {:.2}× | {:.2} ms | {:.2}× | {:.2}× |",
            q.size,
            q.capture_p50,
            q.capture_p95,
            q.capture_p99,
            q.capture_p95 / q.capture_p50,
            q.capture_p99 / q.capture_p50,
            q.floor_p50,
            q.floor_p95 / q.floor_p50,
            q.floor_p99 / q.floor_p50
        );
        for c in contended.iter().filter(|c| c.size == q.size) {
            let t = &c.tail;
            println!(
                "| {} | contended | {:.2} ms | {:.2} ms | {:.2} ms | {:.2}× | {:.2}× | {:.2} ms | {:.2}× | {:.2}× |",
                c.size,
                t.p50,
                t.p95,
                t.p99,
                t.p95 / t.p50,
                t.p99 / t.p50,
                t.floor_p50,
                t.floor_p95 / t.floor_p50,
                t.floor_p99 / t.floor_p50
            );
        }
    }
}

/// CPU time of the whole machine from `/proc/stat`, in ticks: (all, stolen by the host).
/// A virtual machine whose host holds back its CPUs shows it as steal: on the 2-core VMs
/// this bench runs on, two busy CPUs see stalls of ~100 ms that a one-line clock loop sees too.
fn cpu_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let fields: Vec<u64> =
        stat.lines().next()?.split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
    let steal = *fields.get(7)?;
    Some((fields.iter().take(8).sum(), steal))
}

/// The share of CPU time the host stole between two [`cpu_ticks`] readings.
fn steal_share(before: Option<(u64, u64)>, after: Option<(u64, u64)>) -> String {
    match (before, after) {
        (Some((all0, steal0)), Some((all1, steal1))) if all1 > all0 => {
            format!("{:.1}%", 100.0 * (steal1 - steal0) as f64 / (all1 - all0) as f64)
        }
        _ => "?".to_owned(),
    }
}

/// The load average now (what else runs on this machine), for the record.
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg").map_or_else(|_| "?".to_owned(), |s| s.trim().to_owned())
}

/// The reduced form: prefill each size, start its server(s), run only the contended rounds.
fn contended_only() {
    let sizes: Vec<usize> = std::env::var("ENGRAM_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000, 10_000]);
    let bins: Vec<PathBuf> = match std::env::var("ENGRAM_BENCH_BIN") {
        Ok(list) if !list.trim().is_empty() => list.split(',').map(|b| PathBuf::from(b.trim())).collect(),
        _ => vec![PathBuf::from(env!("CARGO_BIN_EXE_engram"))],
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let mut live = Vec::new();
    for &n in &sizes {
        let source = prefilled(&bins[0], n);
        for bin in &bins {
            live.push(runtime.block_on(serve_copy(bin, &source, n)));
        }
    }
    let rows = runtime.block_on(contended_rounds(live));
    for (i, bin) in bins.iter().enumerate() {
        if bins.len() > 1 {
            println!("\nserver {}: {}", i + 1, bin.display());
        }
        print_contended(&rows.iter().skip(i).step_by(bins.len()).collect::<Vec<_>>());
    }
}

/// A packs directory holding one prefilled pack, its packing done.
fn prefilled(bin: &Path, size: usize) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tempdir");
    let packs = tmp.path().join("packs");
    init(bin, &packs);
    eprintln!("size {size}: prefilling…");
    prefill(&engram_for(&packs), size);
    engram::store::wait_for_background_packing();
    if std::env::var_os("ENGRAM_BENCH_KEEP").is_some() {
        let kept = std::env::temp_dir().join(format!("engram-bench-prefilled-{size}-{}", std::process::id()));
        let st = Command::new("cp").arg("-a").arg(&packs).arg(&kept).status().expect("cp");
        assert!(st.success());
        eprintln!("kept the prefilled packs: {}", kept.display());
    }
    tmp
}

/// A copy of a prefilled packs directory served by `bin` (what `measure` leaves, without
/// measuring loads).
async fn serve_copy(bin: &Path, source: &tempfile::TempDir, size: usize) -> Live {
    let tmp = tempfile::tempdir().expect("tempdir");
    let st =
        Command::new("cp").arg("-a").arg(source.path().join("packs")).arg(tmp.path()).status().expect("cp");
    assert!(st.success());
    let packs = tmp.path().join("packs");
    let copy: PathBuf = tmp.path().join("floor.git");
    let st = Command::new("git")
        .args(["clone", "-q", "--bare"])
        .arg(packs.join("bench"))
        .arg(&copy)
        .status()
        .expect("clone");
    assert!(st.success());
    let packs_s = packs.display().to_string();
    let client = StdioClient::spawn(bin, &["serve", "--packs-dir", &packs_s], &[]).await.expect("spawn");
    Live { tmp, client, copy, size }
}

/// One size's captures with a busy process beside them, and what its packing left.
struct ContendedRow {
    size: usize,
    tail: Tail,
    /// `.git` / working-tree text once the server exited and its packing is done.
    repo_ratio: f64,
}

/// Runs the capture rounds again with a busy process pinned to the last CPU, then closes
/// every server (each hands the rest of its packing job to a merge worker) and measures
/// the repository once that is done.
async fn contended_rounds(live: Vec<Live>) -> Vec<ContendedRow> {
    eprintln!(
        "captures with a busy process beside them: {ROUNDS} rounds over every size… (load average: {})",
        loadavg()
    );
    let busy = Busy::start();
    if busy.is_none() {
        eprintln!("(could not start the busy process: the rounds run uncontended)");
    }
    let ticks = cpu_ticks();
    let times = capture_rounds(&live).await;
    let stolen = steal_share(ticks, cpu_ticks());
    drop(busy);
    eprintln!("contended rounds done (load average: {})", loadavg());
    println!("\nCPU time the host stole during the contended rounds (steal in /proc/stat): {stolen}");
    let mut rows = Vec::new();
    for (l, (captures, floor)) in live.into_iter().zip(times) {
        l.client.close().await.expect("close");
        let pack = l.tmp.path().join("packs/bench");
        // A server stopped mid-merge leaves its merge worker finishing: it holds the gc lock.
        wait_for_packing(&pack);
        let git = dir_size(&pack.join(".git"));
        let text = dir_size(&pack) - git;
        if std::env::var_os("ENGRAM_BENCH_KEEP").is_some() {
            eprintln!("kept: {} (.git / text {:.2}×)", l.tmp.keep().display(), git as f64 / text as f64);
        }
        rows.push(ContendedRow {
            size: l.size,
            tail: Tail::of(captures, floor),
            repo_ratio: git as f64 / text as f64,
        });
    }
    rows
}

/// Waits (at most a minute) until no `git gc` packs `pack`: git holds `.git/gc.pid` while it runs.
fn wait_for_packing(pack: &Path) {
    let started = Instant::now();
    while pack.join(".git/gc.pid").exists() && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn print_contended(rows: &[&ContendedRow]) {
    println!(
        "\ncontended (a busy process pinned to the last CPU):\n\n| memories | capture p50 | p95 | p99 | worst | p95 / p50 | p99 / p50 | floor p50 | floor p95 / p50 | floor p99 / p50 | .git / text after |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let t = &r.tail;
        println!(
            "| {} | {:.2} ms | {:.2} ms | {:.2} ms | {:.1} ms | {:.2}× | {:.2}× | {:.2} ms | {:.2}× | {:.2}× | {:.2}× |",
            r.size,
            t.p50,
            t.p95,
            t.p99,
            t.max,
            t.p95 / t.p50,
            t.p99 / t.p50,
            t.floor_p50,
            t.floor_p95 / t.floor_p50,
            t.floor_p99 / t.floor_p50,
            r.repo_ratio
        );
    }
}
