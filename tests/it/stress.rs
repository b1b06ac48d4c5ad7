//! Many processes, both transports, mixed writes on shared packs: every acknowledged write is
//! present exactly once at the end, `git fsck` is clean, and the indexes agree with the files.
//!
//! Structure: each *worker* (one MCP client) runs a random sequence of [`Action`]s on its own
//! entries and keeps a model of what it expects ([`Model`]); `verify` compares the union of the
//! models with the packs. To mix in another toolset's writes (graph, notes, …), add an `Action`
//! variant, its call in [`Worker::step`], and its expectation in `Model` + `verify`.

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::json;

use crate::common::*;
use crate::concurrency::{Rng, assert_consistent, seed};
use crate::http::HttpServer;

/// Packs the workers share.
const PACKS: &[&str] = &["s1", "s2"];
const CATEGORIES: &[&str] = &["alpha", "beta", "gamma"];

/// One write a worker can make.
#[derive(Debug, Clone, Copy)]
enum Action {
    Capture,
    Delete,
    Correct,
}

impl Action {
    fn pick(rng: &mut Rng) -> Self {
        match rng.next(10) {
            0..=5 => Self::Capture,
            6..=7 => Self::Delete,
            _ => Self::Correct,
        }
    }
}

/// What one worker expects: (pack, category) → the texts of its live entries.
#[derive(Debug, Default)]
struct Model {
    live: BTreeMap<(String, String), Vec<String>>,
    acknowledged: usize,
}

struct Worker {
    id: usize,
    client: StdioClient,
    rng: Rng,
    model: Model,
    serial: usize,
}

impl Worker {
    async fn step(&mut self) {
        let pack = PACKS[self.rng.next(PACKS.len() as u64) as usize].to_owned();
        let category = CATEGORIES[self.rng.next(CATEGORIES.len() as u64) as usize].to_owned();
        let key = (pack.clone(), category.clone());
        let live_len = self.model.live.get(&key).map_or(0, Vec::len);
        let action = match Action::pick(&mut self.rng) {
            Action::Delete | Action::Correct if live_len == 0 => Action::Capture,
            a => a,
        };
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
        }
        self.model.acknowledged += 1;
    }
}

fn verify(env: &TestEnv, models: &[Model]) {
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
    let servers: Vec<HttpServer> = (0..http_servers).map(|_| HttpServer::loopback(&env, &[])).collect();
    let base = seed();
    let mut workers = Vec::new();
    for i in 0..stdio {
        workers.push(Worker {
            id: i,
            client: env.client().await,
            rng: Rng::new(base + i as u64),
            model: Model::default(),
            serial: 0,
        });
    }
    for (s, server) in servers.iter().enumerate() {
        for k in 0..per_server {
            let id = stdio + s * per_server + k;
            workers.push(Worker {
                id,
                client: server.client(None).await,
                rng: Rng::new(base + id as u64),
                model: Model::default(),
                serial: 0,
            });
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
    let elapsed = started.elapsed();
    drop(servers);
    verify(&env, &models);
    let processes = stdio + http_servers;
    eprintln!(
        "stress: {writes} acknowledged writes by {} clients in {processes} engram processes ({stdio} stdio, {http_servers} HTTP) in {elapsed:.2?} ({:.0} writes/s)",
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
