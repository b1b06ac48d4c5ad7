//! Benchmark of the graph toolset against the reference MCP memory server
//! (`@modelcontextprotocol/server-memory`), both driven over stdio by the
//! same client (engram's `StdioClient`), in one run on one machine.
//!
//! For each size S: S entities with 3 observations (~45 characters) and S
//! relations, loaded into both servers (the reference through
//! `MEMORY_FILE_PATH`, engram through `engram graph import` of the same
//! JSONL), then `--calls` sequential calls of each operation after 5
//! warm-up calls; the client-observed round trip is reported.
//!
//! ```text
//! npm install --prefix /tmp/server-memory @modelcontextprotocol/server-memory
//! cargo build --release
//! target/release/graph-bench --reference /tmp/server-memory --sizes 1000,10000
//! ```

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use engram::mcp::client::StdioClient;
use serde_json::{Value, json};

struct Options {
    reference: Option<PathBuf>,
    sizes: Vec<usize>,
    calls: usize,
}

fn options() -> anyhow::Result<Options> {
    let mut o = Options { reference: None, sizes: vec![1_000, 10_000], calls: 200 };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--reference" => o.reference = Some(PathBuf::from(value()?)),
            "--sizes" => {
                o.sizes = value()?.split(',').map(|s| s.trim().parse()).collect::<Result<_, _>>()?;
            }
            "--calls" => o.calls = value()?.parse()?,
            "-h" | "--help" => {
                println!(
                    "graph-bench [--reference DIR-WITH-node_modules] [--sizes 1000,10000] [--calls 200]"
                );
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?}"),
        }
    }
    Ok(o)
}

fn observation(i: usize, k: usize) -> String {
    match k {
        0 => format!("Works on project number {} in the city", i % 97),
        1 => format!("Likes drinking coffee #t{:02}# in the morning", i % 100),
        _ => format!("Met the team during the event of year {}", 2000 + i % 25),
    }
}

fn name(i: usize) -> String {
    format!("Entity_{i:05}")
}

/// The reference's JSONL for a graph of `n` entities and `n` relations.
fn jsonl(n: usize) -> String {
    let mut lines = Vec::with_capacity(2 * n);
    for i in 0..n {
        let obs: Vec<String> = (0..3).map(|k| observation(i, k)).collect();
        lines.push(
            json!({"type": "entity", "name": name(i), "entityType": "person", "observations": obs})
                .to_string(),
        );
    }
    for i in 0..n {
        lines.push(
            json!({"type": "relation", "from": name(i), "to": name((i + 1) % n), "relationType": "knows"})
                .to_string(),
        );
    }
    lines.join("\n")
}

fn percentile(samples: &mut [Duration], p: f64) -> f64 {
    samples.sort();
    let rank = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples.get(rank).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

#[derive(Default)]
struct Stats {
    create: Vec<Duration>,
    add: Vec<Duration>,
    search: Vec<Duration>,
}

async fn timed(client: &StdioClient, tool: &str, args: Value) -> anyhow::Result<Duration> {
    let start = Instant::now();
    let r = client.call(tool, args).await?;
    let elapsed = start.elapsed();
    if r.is_error {
        bail!("{tool} failed: {}", r.text);
    }
    Ok(elapsed)
}

async fn measure(client: &StdioClient, n: usize, calls: usize, tag: &str) -> anyhow::Result<Stats> {
    let mut stats = Stats::default();
    for i in 0..calls + 5 {
        let args = json!({"entities": [{"name": format!("New_{tag}_{i:05}"), "entityType": "person",
            "observations": [observation(i, 0)]}]});
        let d = timed(client, "create_entities", args).await?;
        if i >= 5 {
            stats.create.push(d);
        }
    }
    for i in 0..calls + 5 {
        let target = name((i * 7919) % n);
        let args = json!({"observations": [{"entityName": target, "contents": [format!("Bench observation {tag} {i}")]}]});
        let d = timed(client, "add_observations", args).await?;
        if i >= 5 {
            stats.add.push(d);
        }
    }
    for i in 0..calls + 5 {
        let query = match i % 3 {
            0 => name((i * 31) % n),
            1 => format!("#t{:02}#", i % 100),
            _ => format!("no such thing {i}"),
        };
        let d = timed(client, "search_nodes", json!({ "query": query })).await?;
        if i >= 5 {
            stats.search.push(d);
        }
    }
    Ok(stats)
}

fn engram_bin() -> anyhow::Result<PathBuf> {
    let me = std::env::current_exe()?;
    let bin = me.with_file_name(format!("engram{}", std::env::consts::EXE_SUFFIX));
    if !bin.is_file() {
        bail!("{} not found: build it with `cargo build --release`", bin.display());
    }
    Ok(bin)
}

async fn run_engram(dir: &Path, file: &Path, n: usize, calls: usize) -> anyhow::Result<Stats> {
    let bin = engram_bin()?;
    let packs = dir.join("packs");
    let home = dir.display().to_string();
    let packs_s = packs.display().to_string();
    let import = std::process::Command::new(&bin)
        .env_clear()
        .envs(engram::settings::child_env())
        .args(["graph", "import"])
        .arg(file)
        .arg("--packs-dir")
        .arg(&packs)
        .env("HOME", &home)
        .output()?;
    if !import.status.success() {
        bail!("import failed: {}", String::from_utf8_lossy(&import.stderr));
    }
    let client =
        StdioClient::spawn(&bin, &["serve", "--tools", "graph", "--packs-dir", &packs_s], &[("HOME", &home)])
            .await?;
    // First read builds the snapshot (reported separately).
    let start = Instant::now();
    timed(&client, "search_nodes", json!({"query": "warm"})).await?;
    eprintln!(
        "  engram first read (snapshot build) at {n}: {:.1} ms",
        start.elapsed().as_secs_f64() * 1000.0
    );
    let stats = measure(&client, n, calls, "engram").await?;
    client.close().await?;
    Ok(stats)
}

async fn run_reference(
    reference: &Path,
    dir: &Path,
    file: &Path,
    n: usize,
    calls: usize,
) -> anyhow::Result<Stats> {
    let script = reference.join("node_modules/@modelcontextprotocol/server-memory/dist/index.js");
    if !script.is_file() {
        bail!(
            "{} not found (npm install --prefix {} @modelcontextprotocol/server-memory)",
            script.display(),
            reference.display()
        );
    }
    let script_s = script.display().to_string();
    let file_s = file.display().to_string();
    let home = dir.display().to_string();
    let client = StdioClient::spawn(
        Path::new("node"),
        &[&script_s],
        &[("MEMORY_FILE_PATH", &file_s), ("HOME", &home)],
    )
    .await?;
    let stats = measure(&client, n, calls, "reference").await?;
    client.close().await?;
    Ok(stats)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let o = options()?;
    let mut rows = Vec::new();
    for &n in &o.sizes {
        let dir = tempfile_dir(&format!("graph-bench-{n}"))?;
        let text = jsonl(n);
        let engram_file = dir.join("engram-import.jsonl");
        std::fs::write(&engram_file, &text)?;
        eprintln!("size {n}: engram …");
        let mut e = run_engram(&dir, &engram_file, n, o.calls).await?;
        let r = match &o.reference {
            Some(reference) => {
                let ref_file = dir.join("memory.jsonl");
                std::fs::write(&ref_file, &text)?;
                eprintln!("size {n}: reference …");
                Some(run_reference(reference, &dir, &ref_file, n, o.calls).await?)
            }
            None => None,
        };
        let (mut rc, mut ra, mut rs_) = match r {
            Some(r) => (Some(r.create), Some(r.add), Some(r.search)),
            None => (None, None, None),
        };
        for (op, es, rs) in [
            ("create_entities", &mut e.create, rc.as_mut()),
            ("add_observations", &mut e.add, ra.as_mut()),
            ("search_nodes", &mut e.search, rs_.as_mut()),
        ] {
            let (e50, e95) = (percentile(es, 0.5), percentile(es, 0.95));
            let (r50, r95) = match rs {
                Some(rs) => (percentile(rs, 0.5), percentile(rs, 0.95)),
                None => (f64::NAN, f64::NAN),
            };
            rows.push(format!(
                "| {n} | {op} | {e50:.2} | {e95:.2} | {r50:.2} | {r95:.2} | {:.1}× |",
                r50 / e50
            ));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    println!(
        "| entities | op | engram p50 (ms) | engram p95 | reference p50 (ms) | reference p95 | p50 ratio |"
    );
    println!("|---|---|---|---|---|---|---|");
    for row in rows {
        println!("{row}");
    }
    Ok(())
}

fn tempfile_dir(label: &str) -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
