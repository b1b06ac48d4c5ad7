//! Reliability benchmarks (release build): the cost of `--durable` (fsync) and capture
//! throughput over streamable HTTP with 1, 4 and 16 concurrent clients, into one pack and
//! into one pack per client.
//!
//! `cargo bench --bench reliability` (optional: `ENGRAM_BENCH_WRITES=<captures per client>`).
//! `cargo bench --bench reliability -- team` runs only the team load instead: 5 users × 10
//! HTTP clients (`--users-file`) writing into two shared packs for `ENGRAM_BENCH_SECS`
//! (default 60) seconds, once writing to the packs' branch and once with `--propose` (each
//! user's writes on `proposals/<user>`); every acknowledged write is looked for afterwards
//! (on the branch it went to) and both packs are fsck'd. Prints markdown tables for
//! BENCHMARKS.md.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use engram::mcp::client::McpClient;
use serde_json::json;

mod common;
use common::{dir_bytes, git_out};

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_engram"))
}

fn init(packs: &Path, name: &str) {
    let out = Command::new(bin())
        .env_clear()
        .envs(engram::settings::child_env())
        .args(["init", name, "--packs-dir"])
        .arg(packs)
        .output()
        .expect("init");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

struct Server(Child, String);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn http_server(packs: &Path, home: &Path) -> Server {
    http_server_with(packs, home, &[])
}

fn http_server_with(packs: &Path, home: &Path, extra: &[&str]) -> Server {
    http_server_env(packs, home, extra, &[])
}

fn http_server_env(packs: &Path, home: &Path, extra: &[&str], envs: &[(&str, &str)]) -> Server {
    let mut child = Command::new(bin())
        .env_clear()
        .envs(engram::settings::child_env())
        .args(["serve", "--http", "127.0.0.1:0", "--packs-dir"])
        .arg(packs)
        .args(extra)
        .env("HOME", home)
        .envs(envs.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut err = child.stderr.take().expect("stderr");
    let mut seen = Vec::new();
    let mut b = [0u8; 1];
    while err.read(&mut b).unwrap_or(0) == 1 {
        seen.push(b[0]);
        if b[0] == b'\n' && String::from_utf8_lossy(&seen).contains("http://") {
            break;
        }
    }
    let text = String::from_utf8_lossy(&seen).into_owned();
    let url = text[text.find("http://").expect("url")..].trim().to_owned();
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = err.read_to_end(&mut sink);
    });
    Server(child, url)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1000.0)
}

async fn capture_loop(client: &McpClient, pack: &str, tag: &str, n: usize) -> Vec<Duration> {
    let mut lat = Vec::with_capacity(n);
    for i in 0..n {
        let text = format!("{tag} capture {i} — some remembered fact about the user");
        let t = Instant::now();
        let r = client
            .call(
                "capture_memory",
                json!({"name": pack, "category": format!("c{}", i % 4), "content": text, "summary": text}),
            )
            .await
            .expect("call");
        lat.push(t.elapsed());
        assert!(!r.is_error, "{}", r.text);
    }
    lat
}

/// p50 of stdio captures with and without --durable.
async fn durable_cost(n: usize) -> (Duration, Duration) {
    let mut out = Vec::new();
    for durable in [false, true] {
        let dir = tempfile::tempdir().expect("tempdir");
        let packs = dir.path().join("packs");
        init(&packs, "p");
        let packs_s = packs.display().to_string();
        let mut args = vec!["serve", "--packs-dir", packs_s.as_str()];
        if durable {
            args.push("--durable");
        }
        let home = dir.path().display().to_string();
        let client = McpClient::spawn(&bin(), &args, &[("HOME", home.as_str())]).await.expect("spawn");
        let _ = capture_loop(&client, "p", "warmup", 10).await;
        let mut lat = capture_loop(&client, "p", if durable { "durable" } else { "default" }, n).await;
        client.close().await.expect("close");
        lat.sort();
        out.push(percentile(&lat, 0.5));
    }
    (out[0], out[1])
}

struct Row {
    clients: usize,
    layout: &'static str,
    writes: usize,
    per_sec: f64,
    p50: Duration,
    p95: Duration,
}

async fn http_throughput(clients: usize, separate: bool, per_client: usize) -> Row {
    let dir = tempfile::tempdir().expect("tempdir");
    let packs = dir.path().join("packs");
    let names: Vec<String> =
        if separate { (0..clients).map(|i| format!("p{i}")).collect() } else { vec!["shared".to_owned()] };
    for n in &names {
        init(&packs, n);
    }
    let server = http_server(&packs, dir.path());
    let mut conns = Vec::new();
    for i in 0..clients {
        let c = McpClient::connect_http(&server.1, None).await.expect("connect");
        let pack = names[if separate { i } else { 0 }].clone();
        let _ = capture_loop(&c, &pack, &format!("warm{i}"), 2).await;
        conns.push((c, pack));
    }
    let started = Instant::now();
    let tasks: Vec<_> = conns
        .into_iter()
        .enumerate()
        .map(|(i, (c, pack))| {
            tokio::spawn(async move {
                let lat = capture_loop(&c, &pack, &format!("client{i}"), per_client).await;
                let _ = c.close().await;
                lat
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("task"));
    }
    let elapsed = started.elapsed();
    all.sort();
    Row {
        clients,
        layout: if separate { "one pack per client" } else { "one shared pack" },
        writes: all.len(),
        per_sec: all.len() as f64 / elapsed.as_secs_f64(),
        p50: percentile(&all, 0.5),
        p95: percentile(&all, 0.95),
    }
}

/// What the team load measured.
struct TeamRow {
    clients: usize,
    writes: usize,
    errors: usize,
    per_sec: f64,
    p50: Duration,
    p95: Duration,
    lost: usize,
    fsck_clean: bool,
}

/// `users` × `per_user` clients, each with its user's token, capturing into two shared packs
/// until `secs` have passed (with `propose`: the server runs with `--propose`, so each
/// user's writes land on `proposals/<user>`). Afterwards every acknowledged write's summary
/// must be in its pack's memory files at the branch it went to, and `git fsck --strict` must
/// pass on both packs.
async fn team_load(users: usize, per_user: usize, secs: u64, propose: bool) -> TeamRow {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().expect("tempdir");
    let packs = dir.path().join("packs");
    let names = ["team-a", "team-b"];
    for n in names {
        init(&packs, n);
    }
    let tokens: Vec<String> = (0..users).map(|u| format!("user{u}-token-0123456789abcdef")).collect();
    let file = dir.path().join("users");
    let text: String = tokens.iter().enumerate().map(|(u, t)| format!("{t} user{u}\n")).collect();
    std::fs::write(&file, text).expect("users file");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let file_s = file.display().to_string();
    let mut args = vec!["--users-file", file_s.as_str(), "--tools", "engram"];
    if propose {
        args.push("--propose");
    }
    let server = http_server_with(&packs, dir.path(), &args);
    let mut conns = Vec::new();
    for (u, token) in tokens.iter().enumerate() {
        for k in 0..per_user {
            let c = McpClient::connect_http(&server.1, Some(token)).await.expect("connect");
            conns.push((c, format!("u{u}c{k}")));
        }
    }
    let clients = conns.len();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(secs);
    let tasks: Vec<_> = conns
        .into_iter()
        .enumerate()
        .map(|(i, (c, tag))| {
            tokio::spawn(async move {
                let (mut lat, mut acked, mut errors) = (Vec::new(), Vec::new(), 0usize);
                let mut n = 0usize;
                while Instant::now() < deadline {
                    let pack = names[(i + n) % 2];
                    let summary = format!("bench-{tag}-w{n}");
                    let t = Instant::now();
                    let r = c
                        .call(
                            "capture_memory",
                            json!({"name": pack, "category": format!("c{}", n % 4), "content": format!("{summary}: a fact"), "summary": summary}),
                        )
                        .await;
                    match r {
                        Ok(r) if !r.is_error => {
                            lat.push(t.elapsed());
                            acked.push((pack, summary));
                        }
                        _ => errors += 1,
                    }
                    n += 1;
                }
                let _ = c.close().await;
                (lat, acked, errors)
            })
        })
        .collect();
    let (mut all, mut acked, mut errors) = (Vec::new(), Vec::new(), 0);
    for t in tasks {
        let (l, a, e) = t.await.expect("task");
        all.extend(l);
        acked.extend(a);
        errors += e;
    }
    let elapsed = started.elapsed();
    drop(server);
    all.sort();
    let mut lost = 0;
    let mut fsck_clean = true;
    for pack in names {
        let dir = packs.join(pack);
        let mut found = std::collections::HashSet::new();
        // The summaries in the memory files of every branch writes went to (`git grep` on the
        // committed trees: proposals are not in the working tree).
        let refs = Command::new("git")
            .arg("-C")
            .arg(&dir)
            .args(["for-each-ref", "--format=%(refname)", "refs/heads/"])
            .output()
            .expect("git for-each-ref");
        for branch in String::from_utf8_lossy(&refs.stdout).lines() {
            let grep = Command::new("git")
                .arg("-C")
                .arg(&dir)
                .args(["grep", "-h", "-o", "-E", "bench-[A-Za-z0-9-]+", branch, "--", "memory"])
                .output()
                .expect("git grep");
            for word in String::from_utf8_lossy(&grep.stdout).split_whitespace() {
                found.insert(word.to_owned());
            }
        }
        lost += acked.iter().filter(|(p, s)| *p == pack && !found.contains(s)).count();
        let fsck =
            Command::new("git").arg("-C").arg(&dir).args(["fsck", "--strict", "--no-progress"]).output();
        fsck_clean &= fsck.is_ok_and(|o| o.status.success());
    }
    TeamRow {
        clients,
        writes: all.len(),
        errors,
        per_sec: all.len() as f64 / elapsed.as_secs_f64(),
        p50: percentile(&all, 0.5),
        p95: percentile(&all, 0.95),
        lost,
        fsck_clean,
    }
}

/// Runs `engram args… --packs-dir packs` with HOME `home`; panics with its output on failure.
fn engram_ok(packs: &Path, home: &Path, args: &[&str]) {
    let out = Command::new(bin())
        .env_clear()
        .envs(engram::settings::child_env())
        .env("HOME", home)
        .args(args)
        .arg("--packs-dir")
        .arg(packs)
        .output()
        .expect("engram");
    assert!(out.status.success(), "engram {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A bare repository holding the pack `bench` with `memories` memories, written through the
/// library (one commit each, as the tools write them); the push sends it as one pack.
fn seed_remote(dir: &Path, memories: usize) -> PathBuf {
    use engram::ops::{Caller, CaptureRequest, Config, Engram};
    let packs = dir.join("seed");
    init(&packs, "bench");
    let engram = Engram::new(Config::new(packs.clone())).expect("engram");
    let caller = Caller { tool: "bench-prefill".into(), client: Some("bench".into()) };
    let started = Instant::now();
    for i in 0..memories {
        let req = CaptureRequest {
            name: "bench".into(),
            content: format!("第{i}条记忆：用户提到 project-{} 的进展 (note {i}).", i % 37),
            category: format!("cat{}", i % 10),
            summary: format!("记忆 {i} 摘要"),
            memory_type: Some("fact".into()),
            ..CaptureRequest::default()
        };
        engram.capture_memory(&req, &caller).expect("prefill capture");
        if (i + 1) % 2000 == 0 {
            eprintln!("  prefilled {}/{memories} ({:.0} s)", i + 1, started.elapsed().as_secs_f64());
        }
    }
    drop(engram);
    let bare = dir.join("seed.git");
    git_out(dir, &["init", "--bare", "-q", &bare.display().to_string()]);
    engram_ok(&packs, dir, &["remote", "add", "bench", &bare.display().to_string()]);
    engram_ok(&packs, dir, &["sync", "bench"]);
    bare
}

/// What one run of several servers measured.
struct ServersRow {
    servers: usize,
    writes: usize,
    errors: usize,
    per_sec: f64,
    p50: Duration,
    converged: Option<Duration>,
    remote_before: u64,
    remote_after: u64,
    lost: usize,
    fsck_clean: bool,
}

/// `servers` servers on copies of `seed` (each its own packs directory, all one remote),
/// `clients` HTTP clients spread over them capturing for `secs`; then waits (up to 10
/// minutes) until every server's branch is the remote's.
async fn several_servers(seed: &Path, servers: usize, clients: usize, secs: u64) -> ServersRow {
    let dir = tempfile::tempdir().expect("tempdir");
    let bare = dir.path().join("bench.git"); // `engram install` names the pack after it
    git_out(dir.path(), &["clone", "--bare", "-q", &seed.display().to_string(), &bare.display().to_string()]);
    let remote_before = dir_bytes(&bare);
    let url = bare.display().to_string();
    let mut running = Vec::new();
    let mut pack_dirs = Vec::new();
    for s in 0..servers {
        let home = dir.path().join(format!("server{s}"));
        let packs = home.join("packs");
        std::fs::create_dir_all(&packs).expect("mkdir");
        engram_ok(&packs, &home, &["install", &url]);
        let host = format!("server{s}");
        let server =
            http_server_env(&packs, &home, &["--sync-interval", "1"], &[("ENGRAM_HOST", host.as_str())]);
        pack_dirs.push(packs.join("bench"));
        running.push(server);
    }
    let mut conns = Vec::new();
    for c in 0..clients {
        let client = McpClient::connect_http(&running[c % servers].1, None).await.expect("connect");
        conns.push((client, format!("s{}c{c}", c % servers)));
    }
    let started = Instant::now();
    let deadline = started + Duration::from_secs(secs);
    let tasks: Vec<_> = conns
        .into_iter()
        .map(|(c, tag)| {
            tokio::spawn(async move {
                let (mut lat, mut acked, mut errors) = (Vec::new(), Vec::new(), 0usize);
                let mut n = 0usize;
                while Instant::now() < deadline {
                    let summary = format!("bench-{tag}-w{n}");
                    let t = Instant::now();
                    let r = c
                        .call(
                            "capture_memory",
                            json!({"name": "bench", "category": format!("cat{}", n % 10), "content": format!("{summary}: a fact"), "summary": summary}),
                        )
                        .await;
                    match r {
                        Ok(r) if !r.is_error => {
                            lat.push(t.elapsed());
                            acked.push(summary);
                        }
                        _ => errors += 1,
                    }
                    n += 1;
                }
                let _ = c.close().await;
                (lat, acked, errors)
            })
        })
        .collect();
    let (mut all, mut acked, mut errors) = (Vec::new(), Vec::new(), 0);
    for t in tasks {
        let (l, a, e) = t.await.expect("task");
        all.extend(l);
        acked.extend(a);
        errors += e;
    }
    let last_write = Instant::now();
    let elapsed = last_write - started;
    let branch = git_out(&pack_dirs[0], &["symbolic-ref", "--short", "HEAD"]);
    let converged = loop {
        let remote = git_out(&bare, &["rev-parse", &branch]);
        if pack_dirs.iter().all(|p| git_out(p, &["rev-parse", "HEAD"]) == remote) {
            break Some(last_write.elapsed());
        }
        if last_write.elapsed() > Duration::from_secs(600) {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    drop(running);
    all.sort();
    // Every acknowledged write in the remote's tree, exactly as written.
    let grep = Command::new("git")
        .arg("-C")
        .arg(&bare)
        .args(["grep", "-h", "-o", "-E", "bench-s[0-9]+c[0-9]+-w[0-9]+", &branch, "--", "memory"])
        .output()
        .expect("git grep");
    let found: std::collections::HashSet<String> =
        String::from_utf8_lossy(&grep.stdout).split_whitespace().map(str::to_owned).collect();
    let lost = acked.iter().filter(|s| !found.contains(*s)).count();
    let fsck = Command::new("git").arg("-C").arg(&bare).args(["fsck", "--strict", "--no-progress"]).output();
    ServersRow {
        servers,
        writes: all.len(),
        errors,
        per_sec: all.len() as f64 / elapsed.as_secs_f64(),
        p50: percentile(&all, 0.5),
        converged,
        remote_before,
        remote_after: dir_bytes(&bare),
        lost,
        fsck_clean: fsck.is_ok_and(|o| o.status.success()),
    }
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` passes nothing useful: run only under bench.
    if !std::env::args().any(|a| a == "--bench") {
        println!("reliability bench: run with `cargo bench --bench reliability`");
        return;
    }
    let n: usize = std::env::var("ENGRAM_BENCH_WRITES").ok().and_then(|v| v.parse().ok()).unwrap_or(100);
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(4).enable_all().build().expect("runtime");
    if std::env::args().any(|a| a == "servers") {
        let secs: u64 = env_or("ENGRAM_BENCH_SECS", 60);
        let servers: usize = env_or("ENGRAM_BENCH_SERVERS", 10);
        let memories: usize = env_or("ENGRAM_BENCH_MEMORIES", 10_000);
        let clients = servers.max(10);
        let dir = tempfile::tempdir().expect("tempdir");
        let seed = seed_remote(dir.path(), memories);
        println!(
            "### several servers, one remote (a local path): {memories} memories, {clients} HTTP clients, {secs} s, `--sync-interval 1`\n"
        );
        println!(
            "| servers | writes | errors | writes/s | p50 (ms) | last write → converged (s) | remote MiB before → after | lost writes | fsck |"
        );
        println!("|---|---|---|---|---|---|---|---|---|");
        for n in [servers, 1] {
            let r = rt.block_on(several_servers(&seed, n, clients, secs));
            let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
            println!(
                "| {} | {} | {} | {:.0} | {} | {} | {:.1} → {:.1} | {} | {} |",
                r.servers,
                r.writes,
                r.errors,
                r.per_sec,
                ms(r.p50),
                r.converged.map_or("not in 600 s".to_owned(), |d| format!("{:.1}", d.as_secs_f64())),
                mib(r.remote_before),
                mib(r.remote_after),
                r.lost,
                if r.fsck_clean { "clean" } else { "FAILED" }
            );
        }
        return;
    }
    if std::env::args().any(|a| a == "team") {
        let secs: u64 = std::env::var("ENGRAM_BENCH_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(60);
        println!("### team load: 5 users × 10 HTTP clients, two shared packs, {secs} s each\n");
        println!(
            "| writes go to | clients | writes | errors | writes/s | p50 (ms) | p95 (ms) | lost writes | fsck |"
        );
        println!("|---|---|---|---|---|---|---|---|---|");
        for propose in [false, true] {
            let r = rt.block_on(team_load(5, 10, secs, propose));
            println!(
                "| {} | {} | {} | {} | {:.0} | {} | {} | {} | {} |",
                if propose { "`--propose`: proposals/<user>" } else { "the packs' branch" },
                r.clients,
                r.writes,
                r.errors,
                r.per_sec,
                ms(r.p50),
                ms(r.p95),
                r.lost,
                if r.fsck_clean { "clean" } else { "FAILED" }
            );
        }
        return;
    }
    rt.block_on(async {
        let (plain, durable) = durable_cost(n.max(50)).await;
        println!("### fsync cost (stdio, one writer, {} captures each)\n", n.max(50));
        println!("| mode | capture p50 (ms) |\n|---|---|");
        println!("| default (no fsync) | {} |", ms(plain));
        println!("| `--durable` | {} |", ms(durable));
        println!("\nratio durable/default: {:.2}×\n", durable.as_secs_f64() / plain.as_secs_f64().max(1e-9));
        println!("### capture over streamable HTTP ({n} captures per client)\n");
        println!("| clients | packs | writes | writes/s | p50 (ms) | p95 (ms) |\n|---|---|---|---|---|---|");
        for clients in [1, 4, 16] {
            for separate in [false, true] {
                if clients == 1 && separate {
                    continue;
                }
                let per_client = if clients == 16 { (n / 2).max(10) } else { n };
                let r = http_throughput(clients, separate, per_client).await;
                println!(
                    "| {} | {} | {} | {:.0} | {} | {} |",
                    r.clients,
                    r.layout,
                    r.writes,
                    r.per_sec,
                    ms(r.p50),
                    ms(r.p95)
                );
            }
        }
    });
}
