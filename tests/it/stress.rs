//! Many processes, both transports, mixed writes on shared packs: every acknowledged write is
//! present exactly once at the end, `git fsck` is clean, and the indexes agree with the files.
//!
//! Structure: each *worker* (one MCP client) runs a random sequence of [`Action`]s on its own
//! entries and keeps a model of what it expects ([`Model`]); `verify` compares the union of the
//! models with the packs. To mix in another toolset's writes (graph, notes, …), add an `Action`
//! variant, its call in [`Worker::step`], and its expectation in `Model` + `verify`.
//!
//! Besides captures, deletes and corrects on the shared packs `s1`/`s2`, workers whose server has
//! the graph toolset create entities and add observations, and workers whose server has the notes
//! toolset store and forget notes; graph and notes both live in the shared pack `personal`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use serde_json::{Value, json};

use crate::common::*;
use crate::concurrency::{Rng, assert_consistent, seed};
use crate::http::HttpServer;

/// Packs the workers share.
const PACKS: &[&str] = &["s1", "s2"];
const CATEGORIES: &[&str] = &["alpha", "beta", "gamma"];
/// The pack the graph and notes toolsets write to (their default).
const PERSONAL: &str = "personal";
/// Where the default user's graph entities live in [`PERSONAL`].
const ENTITIES_DIR: &str = "users/default/graph/entities";

/// One write a worker can make.
#[derive(Debug, Clone, Copy)]
enum Action {
    Capture,
    Delete,
    Correct,
    /// `create_entities` with one new entity and one observation (graph toolset).
    CreateEntity,
    /// `add_observations` to one of the worker's entities (graph toolset).
    AddObservation,
    /// `store` a new note (notes toolset).
    StoreNote,
    /// `forget` one of the worker's notes by id (notes toolset).
    ForgetNote,
}

impl Action {
    fn pick(rng: &mut Rng) -> Self {
        match rng.next(12) {
            0..=3 => Self::Capture,
            4 => Self::Delete,
            5 => Self::Correct,
            6 => Self::CreateEntity,
            7..=8 => Self::AddObservation,
            9..=10 => Self::StoreNote,
            _ => Self::ForgetNote,
        }
    }
}

/// What one worker expects: (pack, category) → the texts of its live entries; its graph
/// entities (name → observations, in order) and its live notes (id → content).
#[derive(Debug, Default)]
struct Model {
    live: BTreeMap<(String, String), Vec<String>>,
    entities: BTreeMap<String, Vec<String>>,
    notes: BTreeMap<String, String>,
    acknowledged: usize,
    graph_writes: usize,
    notes_writes: usize,
}

/// The toolsets a worker's server serves besides `engram`.
#[derive(Debug, Clone, Copy)]
struct Tools {
    graph: bool,
    notes: bool,
}

impl Tools {
    fn arg(self) -> &'static str {
        match (self.graph, self.notes) {
            (true, true) => "engram,graph,notes",
            (true, false) => "engram,graph",
            (false, true) => "engram,notes",
            (false, false) => "engram",
        }
    }
}

struct Worker {
    id: usize,
    client: StdioClient,
    rng: Rng,
    model: Model,
    serial: usize,
    tools: Tools,
}

impl Worker {
    fn new(id: usize, client: StdioClient, rng: Rng, tools: Tools) -> Self {
        Self { id, client, rng, model: Model::default(), serial: 0, tools }
    }

    /// Replaces an action this worker cannot make (toolset missing, nothing to change) by one it can.
    fn feasible(&self, action: Action, live_len: usize) -> Action {
        match action {
            Action::Delete | Action::Correct if live_len == 0 => Action::Capture,
            Action::CreateEntity | Action::AddObservation if !self.tools.graph => Action::Capture,
            Action::AddObservation if self.model.entities.is_empty() => Action::CreateEntity,
            Action::StoreNote | Action::ForgetNote if !self.tools.notes => Action::Capture,
            Action::ForgetNote if self.model.notes.is_empty() => Action::StoreNote,
            a => a,
        }
    }

    async fn call_ok(&self, tool: &str, args: Value) -> ToolReply {
        let r = self.client.call(tool, args.clone()).await.unwrap_or_else(|e| panic!("{tool} call: {e}"));
        assert!(!r.is_error, "{tool} {args}: {}", r.text);
        r
    }

    async fn step(&mut self) {
        let pack = PACKS[self.rng.next(PACKS.len() as u64) as usize].to_owned();
        let category = CATEGORIES[self.rng.next(CATEGORIES.len() as u64) as usize].to_owned();
        let key = (pack.clone(), category.clone());
        let live_len = self.model.live.get(&key).map_or(0, Vec::len);
        let picked = Action::pick(&mut self.rng);
        let action = self.feasible(picked, live_len);
        self.serial += 1;
        let fresh = format!("w{} n{} {action:?}", self.id, self.serial);
        match action {
            Action::Capture => {
                let r = self
                    .client
                    .call(
                        "capture_memory",
                        json!({"name": pack, "category": category, "content": fresh, "summary": fresh}),
                    )
                    .await
                    .expect("call");
                assert!(!r.is_error, "capture: {}", r.text);
                self.model.live.entry(key).or_default().push(fresh);
            }
            Action::Delete => {
                let i = self.rng.next(live_len as u64) as usize;
                let old = self.model.live[&key][i].clone();
                let r = self
                    .client
                    .call("delete_memory", json!({"name": pack, "category": category, "summary": old}))
                    .await
                    .expect("call");
                assert!(!r.is_error, "delete {old:?}: {}", r.text);
                self.model.live.get_mut(&key).expect("key").remove(i);
            }
            Action::Correct => {
                let i = self.rng.next(live_len as u64) as usize;
                let old = self.model.live[&key][i].clone();
                let r = self
                    .client
                    .call(
                        "correct_memory",
                        json!({"name": pack, "category": category, "old_summary": old, "new_content": fresh, "new_summary": fresh}),
                    )
                    .await
                    .expect("call");
                assert!(!r.is_error, "correct {old:?}: {}", r.text);
                self.model.live.get_mut(&key).expect("key")[i] = fresh;
            }
            Action::CreateEntity => {
                let name = format!("w{} e{}", self.id, self.serial);
                let r = self
                    .call_ok(
                        "create_entities",
                        json!({"entities": [{"name": name, "entityType": "stress", "observations": [fresh]}]}),
                    )
                    .await;
                let created = r.structured.unwrap_or(Value::Null);
                assert_eq!(created["entities"][0]["name"], name.as_str(), "created: {}", r.text);
                self.model.entities.insert(name, vec![fresh]);
                self.model.graph_writes += 1;
            }
            Action::AddObservation => {
                let i = self.rng.next(self.model.entities.len() as u64) as usize;
                let name = self.model.entities.keys().nth(i).expect("entity").clone();
                let r = self
                    .call_ok(
                        "add_observations",
                        json!({"observations": [{"entityName": name, "contents": [fresh]}]}),
                    )
                    .await;
                let added = r.structured.unwrap_or(Value::Null);
                assert_eq!(added["results"][0]["addedObservations"], json!([fresh]), "added: {}", r.text);
                self.model.entities.get_mut(&name).expect("entity").push(fresh);
                self.model.graph_writes += 1;
            }
            Action::StoreNote => {
                let content = format!("{fresh} body\nsecond line {}", self.serial);
                let r = self.call_ok("store", json!({"content": content, "title": fresh})).await;
                let stored = r.structured.unwrap_or(Value::Null);
                assert_eq!(stored["action"], "created", "store: {}", r.text);
                let id = stored["note"]["id"].as_str().expect("note id").to_owned();
                assert!(self.model.notes.insert(id, content).is_none(), "a fresh id");
                self.model.notes_writes += 1;
            }
            Action::ForgetNote => {
                let i = self.rng.next(self.model.notes.len() as u64) as usize;
                let id = self.model.notes.keys().nth(i).expect("note").clone();
                let r = self.call_ok("forget", json!({"id": id})).await;
                let forgotten = r.structured.unwrap_or(Value::Null);
                assert_eq!(forgotten["forgotten"]["id"], id.as_str(), "forget: {}", r.text);
                self.model.notes.remove(&id);
                self.model.notes_writes += 1;
            }
        }
        self.model.acknowledged += 1;
    }
}

/// Every file below `dir` (relative to `root`), sorted.
fn files_below(root: &Path, dir: &str) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else if let Ok(rel) = p.strip_prefix(root) {
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, &root.join(dir), &mut out);
    out.sort();
    out
}

/// The graph entities and the notes in the personal pack match the union of the models exactly.
fn verify_personal(env: &TestEnv, models: &[Model]) {
    let dir = env.pack(PERSONAL);
    let expected_entities: BTreeMap<String, Vec<String>> =
        models.iter().flat_map(|m| m.entities.clone()).collect();
    let expected_notes: BTreeMap<String, String> = models.iter().flat_map(|m| m.notes.clone()).collect();
    if expected_entities.is_empty() && expected_notes.is_empty() && !dir.exists() {
        return;
    }
    assert_fsck(&dir);
    // HTTP servers are killed, so the lazily updated index of scoped (graph) writes may lag.
    assert_worktree_matches_head(&dir);
    // Graph: one file per entity, holding exactly its acknowledged observations in order.
    let mut actual_entities = BTreeMap::new();
    for rel in files_below(&dir, ENTITIES_DIR) {
        let v: Value =
            serde_json::from_str(&env.read(PERSONAL, &rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
        let name = v["name"].as_str().unwrap_or_else(|| panic!("{rel}: no name")).to_owned();
        let observations: Vec<String> = v["observations"]
            .as_array()
            .unwrap_or_else(|| panic!("{rel}: no observations"))
            .iter()
            .map(|o| o.as_str().unwrap_or_default().to_owned())
            .collect();
        assert!(actual_entities.insert(name.clone(), observations).is_none(), "{name} in two files");
    }
    assert_eq!(
        actual_entities, expected_entities,
        "every acknowledged graph write exactly once, nothing else"
    );
    // Notes: one file per live note, with its id in the front matter and its content as the body.
    let mut actual_notes = BTreeMap::new();
    for rel in files_below(&dir, "notes").into_iter().filter(|r| r.ends_with(".md")) {
        let text = env.read(PERSONAL, &rel);
        let split = engram::frontmatter::split(&text);
        let yaml = split.yaml.unwrap_or_else(|| panic!("{rel}: no front matter"));
        let meta: BTreeMap<String, Value> =
            engram::frontmatter::parse(yaml).unwrap_or_else(|e| panic!("{rel}: {e}"));
        let id = meta.get("id").and_then(Value::as_str).unwrap_or_else(|| panic!("{rel}: no id")).to_owned();
        assert!(
            actual_notes.insert(id.clone(), split.body.trim_end_matches('\n').to_owned()).is_none(),
            "{id} twice"
        );
    }
    assert_eq!(actual_notes, expected_notes, "every acknowledged note exactly once, nothing else");
    // Derived data (the graph's incoming index, …) agrees with the files.
    let doctor = env.cli(&["doctor", PERSONAL]);
    assert!(
        doctor.status.success(),
        "doctor {PERSONAL}: {}{}",
        String::from_utf8_lossy(&doctor.stdout),
        String::from_utf8_lossy(&doctor.stderr)
    );
}

fn verify(env: &TestEnv, models: &[Model]) {
    verify_personal(env, models);
    for pack in PACKS {
        let dir = env.pack(pack);
        assert_fsck(&dir);
        assert_clean(&dir);
        let files = assert_consistent(&dir);
        for category in CATEGORIES {
            let mut expected: Vec<String> = models
                .iter()
                .flat_map(|m| {
                    m.live.get(&((*pack).to_owned(), (*category).to_owned())).cloned().unwrap_or_default()
                })
                .collect();
            expected.sort();
            let mut actual = files.blocks.get(*category).cloned().unwrap_or_default();
            actual.sort();
            assert_eq!(
                actual, expected,
                "{pack}/{category}: every acknowledged write exactly once, nothing else"
            );
        }
    }
}

/// Runs the stress test: `stdio` stdio server processes plus `http_servers` HTTP server
/// processes with `per_server` clients each, `steps` writes per client.
pub async fn stress(stdio: usize, http_servers: usize, per_server: usize, steps: usize) -> (usize, usize) {
    let env = TestEnv::with_real_clock();
    for p in PACKS {
        env.init(p);
    }
    let all = Tools { graph: true, notes: true };
    let servers: Vec<HttpServer> =
        (0..http_servers).map(|_| HttpServer::loopback(&env, &["--tools", all.arg()])).collect();
    let base = seed();
    let mut workers = Vec::new();
    for i in 0..stdio {
        // Stdio servers alternate: engram+graph, engram+notes.
        let tools = Tools { graph: i % 2 == 0, notes: i % 2 == 1 };
        let client = env.client_with(&["--tools", tools.arg()]).await;
        workers.push(Worker::new(i, client, Rng::new(base + i as u64), tools));
    }
    for (s, server) in servers.iter().enumerate() {
        for k in 0..per_server {
            let id = stdio + s * per_server + k;
            workers.push(Worker::new(id, server.client(None).await, Rng::new(base + id as u64), all));
        }
    }
    let started = Instant::now();
    let tasks: Vec<_> = workers
        .into_iter()
        .map(|mut w| {
            tokio::spawn(async move {
                for _ in 0..steps {
                    w.step().await;
                }
                let _ = w.client.close().await;
                w.model
            })
        })
        .collect();
    let mut models = Vec::new();
    for t in tasks {
        models.push(t.await.expect("worker"));
    }
    let writes: usize = models.iter().map(|m| m.acknowledged).sum();
    let graph_writes: usize = models.iter().map(|m| m.graph_writes).sum();
    let notes_writes: usize = models.iter().map(|m| m.notes_writes).sum();
    let elapsed = started.elapsed();
    drop(servers);
    assert!(graph_writes > 0 && notes_writes > 0, "the mix includes graph and notes writes");
    verify(&env, &models);
    let processes = stdio + http_servers;
    eprintln!(
        "stress: {writes} acknowledged writes ({graph_writes} graph, {notes_writes} notes) by {} clients in {processes} engram processes ({stdio} stdio, {http_servers} HTTP) in {elapsed:.2?} ({:.0} writes/s)",
        models.len(),
        writes as f64 / elapsed.as_secs_f64()
    );
    (writes, processes)
}

/// 8 engram processes (5 stdio, 3 HTTP serving 2 clients each) on two shared packs.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_processes_mixed_transports_lose_nothing() {
    let steps = std::env::var("ENGRAM_STRESS_STEPS").ok().and_then(|s| s.parse().ok()).unwrap_or(25);
    stress(5, 3, 2, steps).await;
}
