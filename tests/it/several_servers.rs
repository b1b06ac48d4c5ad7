//! Several servers, one git remote: three `engram serve --http --sync-interval 2` servers, each
//! with its own packs directory, meet at one bare repository over ssh (the suite's real sshd).
//! They take writes at once, one is killed and restarted, the remote goes away for two
//! intervals, two servers change one memory differently, two pushes race; afterwards every
//! server holds the same tree with every acknowledged write exactly once.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::*;
use crate::http::HttpServer;
use crate::sync::{branch, capture, head, is_ancestor, run_ok};
use crate::sync_ssh::{SshServer, device_with_default_key};

/// The memory pack every server shares.
const TEAM: &str = "team";
/// The pack of the graph and notes toolsets (their default), shared through its own remote.
const PERSONAL: &str = "personal";
/// The category every capture goes to: hundreds of entries, so heads roll into segments.
const CATEGORY: &str = "log";
const HOSTS: [&str; 3] = ["alpha", "beta", "gamma"];
/// `--sync-interval`, seconds.
const INTERVAL: &str = "2";
/// How long convergence may take before the test fails (it takes a few intervals).
const CONVERGE_BOUND: Duration = Duration::from_secs(60);

/// One server's machine: its HOME (ssh key, `known_hosts`), its packs directory, its process.
struct Node {
    host: &'static str,
    env: TestEnv,
    server: Option<HttpServer>,
}

impl Node {
    fn new(host: &'static str, ssh: &SshServer) -> Self {
        let mut env = device_with_default_key(host, ssh);
        env.now = None; // the real clock: memory times, and sync_status's "last sync" moves
        Self { host, env, server: None }
    }

    fn start(&mut self) {
        let args = ["--tools", "all", "--sync-interval", INTERVAL];
        let server = HttpServer::start(&self.env, "127.0.0.1:0", &args, &[("ENGRAM_HOST", self.host)])
            .unwrap_or_else(|e| panic!("{} does not start: {e}", self.host));
        self.server = Some(server);
    }

    fn server(&self) -> &HttpServer {
        self.server.as_ref().expect("running")
    }

    async fn client(&self) -> StdioClient {
        self.server().client(None).await
    }

    fn pack(&self, name: &str) -> PathBuf {
        self.env.pack(name)
    }
}

/// The writes a client had acknowledged (`acked`) and the one in flight when its server died
/// (`maybe`: present at most once).
#[derive(Default)]
struct Ledger {
    acked: Vec<String>,
    maybe: Vec<String>,
    notes: Vec<String>,
    entities: Vec<String>,
}

fn token(host: &str, phase: &str, i: usize) -> String {
    format!("<{host}-{phase}-{i:03}>")
}

fn capture_args(token: &str) -> serde_json::Value {
    capture(TEAM, CATEGORY, &format!("written as {token} by a client"), &format!("memory {token}"))
}

/// `n` captures through `client`, with a note and a graph entity every tenth.
async fn write_batch(client: &StdioClient, host: &str, phase: &str, n: usize, ledger: &RefCell<Ledger>) {
    for i in 0..n {
        let t = token(host, phase, i);
        ok(client, "capture_memory", capture_args(&t)).await;
        ledger.borrow_mut().acked.push(t.clone());
        if i % 10 == 9 {
            let note = format!("note {t}");
            ok(client, "store", json!({"title": format!("{host} {phase} {i}"), "content": note})).await;
            ledger.borrow_mut().notes.push(note);
            let entity = format!("entity {t}");
            let e = json!({"entities": [{"name": format!("{host} {phase} {i}"), "entityType": "project", "observations": [entity]}]});
            ok(client, "create_entities", e).await;
            ledger.borrow_mut().entities.push(entity);
        }
    }
}

/// Every text file under `dir` (recursively) as one string.
fn all_text(dir: &Path) -> String {
    let mut out = String::new();
    let Ok(rd) = std::fs::read_dir(dir) else { return out };
    let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            out.push_str(&all_text(&p));
        } else {
            out.push_str(&std::fs::read_to_string(&p).unwrap_or_default());
        }
    }
    out
}

/// A category's blocks (head and rolled segments) and the full index (head and segments).
fn memory_texts(pack: &Path, category: &str) -> (String, String) {
    let mut blocks = std::fs::read_to_string(pack.join(format!("memory/{category}.md"))).unwrap_or_default();
    blocks.push_str(&all_text(&pack.join(format!("memory/_log/{category}"))));
    let mut index = std::fs::read_to_string(pack.join("memory/_index_full.md")).unwrap_or_default();
    index.push_str(&all_text(&pack.join("memory/_log/_index_full")));
    (blocks, index)
}

/// Waits until every node's HEAD of each pack is the remote's branch (then their trees are
/// identical); panics with each node's state and log after [`CONVERGE_BOUND`]. Returns how
/// long it took (printed, never asserted).
async fn wait_converged(nodes: &[Node], ssh: &SshServer) -> Duration {
    let started = Instant::now();
    let deadline = started + CONVERGE_BOUND;
    loop {
        let mut state = String::new();
        let mut same = true;
        for pack in [TEAM, PERSONAL] {
            let bare = ssh.repo(pack);
            let remote = git(&bare, &["rev-parse", &branch(&nodes[0].pack(pack))]).trim().to_owned();
            for n in nodes {
                let h = head(&n.pack(pack));
                state.push_str(&format!("{pack} {}: {h} (remote {remote})\n", n.host));
                same &= h == remote;
            }
        }
        if same {
            return started.elapsed();
        }
        if Instant::now() > deadline {
            let logs: String =
                nodes.iter().map(|n| format!("--- {}\n{}\n", n.host, n.server().log())).collect();
            panic!("the servers did not converge:\n{state}{logs}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await; // polling, not timing
    }
}

/// The "- last sync: …" line of a `sync_status` answer.
fn last_sync(status: &str) -> String {
    status.lines().find(|l| l.starts_with("- last sync: ")).unwrap_or_default().to_owned()
}

/// Polls `sync_status` until the team pack's last sync is a failed one other than `before`;
/// returns (its "last sync" line, the whole text).
async fn wait_failed_sync(client: &StdioClient, node: &Node, before: &str) -> (String, String) {
    let deadline = Instant::now() + CONVERGE_BOUND;
    loop {
        let status = ok(client, "sync_status", json!({"name": TEAM})).await;
        let last = last_sync(&status);
        // "同步失败" is a sync that could not run (the remote unreachable), not a lost push race.
        if last.contains("incomplete") && last != before && status.contains("同步失败 (sync failed)") {
            return (last, status);
        }
        assert!(
            Instant::now() < deadline,
            "no failed sync while the remote is down:\n{status}\n--- {}\n{}",
            node.host,
            node.server().log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await; // polling, not timing
    }
}

/// A pre-receive hook holding each push until a second one has arrived (or 10 s passed):
/// the two servers that push together both start from the same remote tip, so one of them
/// is refused as a push that lost the race is.
fn hold_pushes_in_pairs(bare: &Path) {
    let hook = bare.join("hooks/pre-receive");
    std::fs::write(
        &hook,
        "#!/bin/sh\ncat >/dev/null\nd=\"$(pwd)/arrivals\"\nmkdir -p \"$d\"\n: > \"$d/$$\"\ni=0\n\
         while [ \"$(ls \"$d\" | wc -l)\" -lt 2 ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done\nexit 0\n",
    )
    .expect("write hook");
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_servers_one_ssh_remote_converge_with_nothing_lost() {
    let Some(mut ssh) = SshServer::start() else { return };
    let mut nodes: Vec<Node> = HOSTS.iter().map(|h| Node::new(h, &ssh)).collect();

    // alpha creates both packs (a memory both servers will change, a first note and entity)
    // and pushes them; beta and gamma install them from the remote.
    let first = &nodes[0];
    first.env.init(TEAM);
    {
        let c = first.env.client_with(&["--tools", "all"]).await;
        ok(&c, "capture_memory", capture(TEAM, "facts", "周一开会", "meeting day")).await;
        ok(&c, "store", json!({"title": "first", "content": "the first note"})).await;
        let e =
            json!({"entities": [{"name": "engram", "entityType": "project", "observations": ["shared"]}]});
        ok(&c, "create_entities", e).await;
        c.close().await.expect("close");
    }
    for pack in [TEAM, PERSONAL] {
        let url = ssh.bare(pack, &branch(&first.pack(pack)));
        git(&ssh.repo(pack), &["config", "receive.denyNonFastForwards", "true"]);
        git(&ssh.repo(pack), &["config", "core.logAllRefUpdates", "always"]);
        run_ok(&first.env, &["remote", "add", pack, &url]);
        assert!(run_ok(&first.env, &["sync", pack]).contains("pushed"));
        for n in &nodes[1..] {
            run_ok(&n.env, &["install", &url]);
        }
    }
    for n in &mut nodes {
        n.start();
    }

    // 1. Three clients capture at once, 40 each, with notes and graph entities among them.
    let ledger = RefCell::new(Ledger::default());
    {
        let clients = [nodes[0].client().await, nodes[1].client().await, nodes[2].client().await];
        let (a, b, c) = (&clients[0], &clients[1], &clients[2]);
        tokio::join!(
            write_batch(a, "alpha", "burst", 40, &ledger),
            write_batch(b, "beta", "burst", 40, &ledger),
            write_batch(c, "gamma", "burst", 40, &ledger),
        );
    }

    // 2. More writes while gamma is killed (mid-write) and restarted.
    {
        let (a, b) = (nodes[0].client().await, nodes[1].client().await);
        let g = nodes[2].client().await;
        let gamma = nodes[2].server.take();
        let gamma_writes = async {
            for i in 0.. {
                let t = token("gamma", "killed", i);
                match g.call("capture_memory", capture_args(&t)).await {
                    Ok(r) if !r.is_error => ledger.borrow_mut().acked.push(t),
                    Ok(r) => panic!("capture failed: {}", r.text),
                    Err(_) => {
                        ledger.borrow_mut().maybe.push(t);
                        break;
                    }
                }
            }
        };
        // SIGKILL once gamma acknowledged 10 writes, while its next one is in flight.
        let kill_gamma = async {
            while ledger.borrow().acked.iter().filter(|t| t.starts_with("<gamma-killed")).count() < 10 {
                tokio::time::sleep(Duration::from_millis(1)).await; // polling, not timing
            }
            drop(gamma);
        };
        tokio::join!(
            write_batch(&a, "alpha", "kill", 20, &ledger),
            write_batch(&b, "beta", "kill", 20, &ledger),
            gamma_writes,
            kill_gamma,
        );
        nodes[2].start();
        let g = nodes[2].client().await;
        write_batch(&g, "gamma", "restarted", 20, &ledger).await;
    }

    // 3. The remote is unreachable for two intervals: every server keeps taking writes, and
    //    alpha and beta change the same memory differently.
    let status_while_down;
    {
        let clients = [nodes[0].client().await, nodes[1].client().await, nodes[2].client().await];
        let mut last = Vec::new();
        for c in &clients {
            last.push(last_sync(&ok(c, "sync_status", json!({"name": TEAM})).await));
        }
        ssh.stop();
        let correct = |to: &str, summary: &str| json!({"name": TEAM, "category": "facts", "old_summary": "meeting day", "new_content": to, "new_summary": summary});
        ok(&clients[0], "correct_memory", correct("周二开会 (alpha)", "meeting on tuesday")).await;
        ok(&clients[1], "correct_memory", correct("周三开会 (beta)", "meeting on wednesday")).await;
        let mut text = String::new();
        for round in ["offline1", "offline2"] {
            for ((c, n), last) in clients.iter().zip(&nodes).zip(&mut last) {
                write_batch(c, n.host, round, 5, &ledger).await;
                (*last, text) = wait_failed_sync(c, n, last).await;
            }
        }
        status_while_down = text;
    }
    assert!(status_while_down.contains("ahead"), "{status_while_down}");
    eprintln!("sync_status while the remote is unreachable:\n{status_while_down}");
    // Two servers will push at once when the remote is back: one of them loses the race.
    hold_pushes_in_pairs(&ssh.repo(TEAM));
    ssh.resume();
    let took = wait_converged(&nodes, &ssh).await;
    eprintln!("converged {:.1} s after the remote came back", took.as_secs_f64());

    let logs: String = nodes.iter().map(|n| n.server().log()).collect();
    // A push that lost the race is refused and merged by the next sync, never a failure.
    assert!(logs.contains("REJECTED"), "no push lost a race:\n{logs}");
    for line in logs.lines().filter(|l| l.contains("push: FAILED")) {
        // The outage: the connection refused, or cut off before the server spoke (taken in
        // by the server as it was stopped).
        let outage = line.contains("failed to connect") || line.contains("Failed getting banner");
        assert!(outage, "a push failed other than for the outage:\n{line}");
    }
    let ledger = ledger.into_inner();
    assert!(ledger.acked.len() >= 2 * 40 + 2 * 20 + 20 + 3 * 10 + 10, "{}", ledger.acked.len());
    let tree = |n: &Node, pack: &str| git(&n.pack(pack), &["rev-parse", "HEAD^{tree}"]);
    for n in &nodes {
        let team = n.pack(TEAM);
        assert_eq!(tree(n, TEAM), tree(&nodes[0], TEAM));
        assert_eq!(tree(n, PERSONAL), tree(&nodes[0], PERSONAL));
        let (blocks, index) = memory_texts(&team, CATEGORY);
        for t in &ledger.acked {
            assert_eq!(blocks.matches(t.as_str()).count(), 1, "{}: {t} in the blocks", n.host);
            assert_eq!(index.matches(t.as_str()).count(), 1, "{}: {t} in the index", n.host);
        }
        for t in &ledger.maybe {
            assert!(blocks.matches(t.as_str()).count() <= 1, "{}: {t}", n.host);
            assert_eq!(
                blocks.matches(t.as_str()).count(),
                index.matches(t.as_str()).count(),
                "{}: {t}",
                n.host
            );
        }
        // Both versions of the memory alpha and beta changed are kept; one conflict is listed.
        let (facts, _) = memory_texts(&team, "facts");
        assert!(
            facts.contains("周二开会 (alpha)") && facts.contains("周三开会 (beta)"),
            "{}: {facts}",
            n.host
        );
        assert!(!facts.contains("周一开会"), "{}: {facts}", n.host);
        let conflicts = std::fs::read_to_string(team.join("memory/_conflicts.md")).unwrap_or_default();
        assert_eq!(conflicts.lines().filter(|l| l.starts_with("- [")).count(), 1, "{}: {conflicts}", n.host);
        // Notes and graph entities, each once.
        let notes = all_text(&n.pack(PERSONAL).join("notes"));
        for note in &ledger.notes {
            assert_eq!(notes.matches(note.as_str()).count(), 1, "{}: {note}", n.host);
        }
        let graph = all_text(&n.pack(PERSONAL).join("users"));
        for e in &ledger.entities {
            assert_eq!(graph.matches(e.as_str()).count(), 1, "{}: {e}", n.host);
        }
        for pack in [TEAM, PERSONAL] {
            assert_fsck(&n.pack(pack));
            assert_worktree_matches_head(&n.pack(pack));
        }
        assert!(!all_text(&team).contains("<<<<<<<"), "{}: conflict markers", n.host);
    }
    // The remote's branch only ever moved forward.
    let bare = ssh.repo(TEAM);
    let moves = git(&bare, &["reflog", "show", "--format=%H", &branch(&nodes[0].pack(TEAM))]);
    let moves: Vec<&str> = moves.lines().collect();
    for pair in moves.windows(2) {
        assert!(is_ancestor(&bare, pair[1], pair[0]), "the remote's branch went back: {moves:?}");
    }
    // Every server's graph tools see every entity, and sync_status names the open conflict.
    for n in &nodes {
        let c = n.client().await;
        let status = ok(&c, "sync_status", json!({"name": TEAM})).await;
        assert!(
            status.contains("memory conflicts: 1 listed in memory/_conflicts.md"),
            "{}: {status}",
            n.host
        );
        let graph = ok(&c, "read_graph", json!({})).await;
        for e in &ledger.entities {
            assert!(graph.contains(e.as_str()), "{}: {e} not in read_graph", n.host);
        }
    }

    eprintln!(
        "memory/_conflicts.md:\n{}",
        std::fs::read_to_string(nodes[0].pack(TEAM).join("memory/_conflicts.md")).unwrap_or_default()
    );

    // 4. The conflict is resolved once, on a third server, and the resolution reaches all.
    ok(
        &nodes[2].client().await,
        "delete_memory",
        json!({"name": TEAM, "category": "facts", "summary": "meeting on wednesday"}),
    )
    .await;
    // ... and the person removes its item from memory/_conflicts.md with git, beside the server.
    let gamma_team = nodes[2].pack(TEAM);
    let listed = std::fs::read_to_string(gamma_team.join("memory/_conflicts.md")).expect("conflicts");
    let header = &listed[..listed.find("\n## ").expect("a section")];
    std::fs::write(gamma_team.join("memory/_conflicts.md"), format!("{header}\n")).expect("write");
    git(&gamma_team, &["commit", "-qam", "resolved: the meeting is on tuesday"]);
    let took = wait_converged(&nodes, &ssh).await;
    eprintln!("converged {:.1} s after the last write", took.as_secs_f64());
    for n in &nodes {
        let status = ok(&n.client().await, "sync_status", json!({"name": TEAM})).await;
        assert!(status.contains("- memory conflicts: none"), "{}: {status}", n.host);
        let (facts, _) = memory_texts(&n.pack(TEAM), "facts");
        assert_eq!(facts.matches("周二开会 (alpha)").count(), 1, "{}: {facts}", n.host);
        assert!(!facts.contains("周三开会 (beta)"), "{}: {facts}", n.host);
        assert_fsck(&n.pack(TEAM));
    }
    let again = err(
        &nodes[0].client().await,
        "delete_memory",
        json!({"name": TEAM, "category": "facts", "summary": "meeting on wednesday"}),
    )
    .await;
    assert!(!again.is_empty());
}
