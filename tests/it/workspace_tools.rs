//! The workspace toolset over stdio: add / search / stats, git ingestion
//! (idempotent), summarize through MCP sampling and through the Anthropic API
//! (a local HTTP stand-in), dotted names and wrapped errors.

#![allow(deprecated)] // sampling types are SEP-2577-deprecated; the server only falls back to them

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientInfo, CreateMessageRequestParams, CreateMessageResult,
    Implementation, SamplingMessage,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};

use crate::common::{NOW, TestEnv, base_env, bin, commit_count, git_in};

const LEARNINGS: &str = r#"Here is what I found:
{"learnings": [
  {"text": "The parser crashes on empty input; guard it.", "confidence": 0.9, "evidence": ["src/parser.rs"]},
  {"text": "CI caches cargo to stay fast.", "confidence": 0.7, "evidence": "ci: cache cargo"},
  {"text": "Maybe Alice likes tabs.", "confidence": 0.2}
]}"#;

/// A client that can answer `sampling/createMessage` (or not) and records the prompts.
#[derive(Clone, Default)]
struct TestClient {
    sampling: bool,
    prompts: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for TestClient {
    fn get_info(&self) -> ClientInfo {
        let caps = if self.sampling {
            ClientCapabilities::builder().enable_sampling().build()
        } else {
            ClientCapabilities::default()
        };
        ClientInfo::new(caps, Implementation::new("workspace-test", "0.0.1"))
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let text: String = params
            .messages
            .iter()
            .filter_map(|m| m.content.first().and_then(|c| c.as_text()).map(|t| t.text.clone()))
            .collect();
        self.prompts.lock().expect("lock").push(text);
        Ok(CreateMessageResult::new(SamplingMessage::assistant_text(LEARNINGS), "stand-in-model".into()))
    }
}

struct Server {
    service: RunningService<RoleClient, TestClient>,
}

impl Server {
    /// Starts `engram serve --tools workspace` with no API key unless `envs` sets one.
    async fn start(env: &TestEnv, client: TestClient, extra: &[&str], envs: &[(&str, &str)]) -> Self {
        let mut cmd = tokio::process::Command::new(bin());
        cmd.arg("serve").arg("--packs-dir").arg(&env.packs).args(["--tools", "workspace"]).args(extra);
        cmd.env_clear().envs(base_env());
        cmd.env("HOME", env.dir.path()).env("ENGRAM_NOW", NOW).current_dir(env.dir.path());
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let (transport, _) =
            TokioChildProcess::builder(cmd).stderr(std::process::Stdio::inherit()).spawn().expect("spawn");
        Self { service: client.serve(transport).await.expect("handshake") }
    }

    async fn call(&self, tool: &str, args: Value) -> (bool, Value) {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Value::Object(map) = args {
            params = params.with_arguments(map);
        }
        let r = self.service.call_tool(params).await.unwrap_or_else(|e| panic!("{tool}: {e}"));
        let text: String = r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect();
        let v = r.structured_content.unwrap_or_else(|| panic!("{tool}: no structured content: {text}"));
        assert_eq!(serde_json::from_str::<Value>(&text).expect("text is JSON"), v, "text mirrors the JSON");
        (r.is_error.unwrap_or(false), v)
    }

    async fn ok(&self, tool: &str, args: Value) -> Value {
        let (is_error, v) = self.call(tool, args).await;
        assert!(!is_error, "{tool} failed: {v}");
        v
    }

    async fn err(&self, tool: &str, args: Value) -> Value {
        let (is_error, v) = self.call(tool, args).await;
        assert!(is_error, "{tool} unexpectedly succeeded: {v}");
        v
    }

    async fn tool_names(&self) -> Vec<String> {
        self.service.list_all_tools().await.expect("tools").into_iter().map(|t| t.name.to_string()).collect()
    }

    async fn close(self) {
        self.service.cancel().await.expect("close");
    }
}

/// Runs git with pinned dates and identity (test setup only; engram itself reads through git2).
fn git_at(dir: &Path, date: &str, author: &str, args: &[&str]) {
    let out = git_in(dir)
        .args(args)
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date)
        .env("GIT_AUTHOR_NAME", author)
        .env("GIT_AUTHOR_EMAIL", format!("{}@example.com", author.to_lowercase()))
        .env("GIT_COMMITTER_NAME", author)
        .env("GIT_COMMITTER_EMAIL", "ci@example.com")
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn commit_file(dir: &Path, date: &str, author: &str, file: &str, subject: &str) {
    let path = dir.join(file);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&path).expect("open");
    writeln!(f, "{subject}").expect("write");
    git_at(dir, date, author, &["add", "-A"]);
    git_at(dir, date, author, &["commit", "-q", "-m", subject]);
}

/// A workspace repository: two commits in the last week, one a month and a half ago.
fn make_workspace(env: &TestEnv) -> std::path::PathBuf {
    let ws = env.dir.path().join("app");
    std::fs::create_dir_all(&ws).expect("mkdir");
    git_at(&ws, "2026-10-01T09:00:00Z", "Carol", &["init", "-q", "-b", "main"]);
    commit_file(&ws, "2026-10-01T09:00:00Z", "Carol", "README.md", "init: project skeleton");
    commit_file(&ws, "2026-11-20T11:00:00Z", "Alice", "src/parser.rs", "parser: fix crash on empty input");
    commit_file(&ws, "2026-11-21T15:30:00Z", "Bob", ".ci/run", "ci: cache cargo");
    ws
}

#[tokio::test]
async fn add_search_and_stats() {
    let env = TestEnv::new();
    let s = Server::start(&env, TestClient::default(), &[], &[]).await;
    let names = s.tool_names().await;
    let expected = ["engram_add", "engram_ingest_git", "engram_search", "engram_stats", "engram_summarize"];
    assert_eq!(names, expected);

    let stats = s.ok("engram_stats", json!({})).await;
    assert_eq!(stats["totalMemories"], 0);
    assert!(!env.pack("workspace").exists(), "reads create nothing");

    let a = s
        .ok("engram_add", json!({"content": "构建用 cargo nextest，比 cargo test 快。", "topics": ["构建", "测试"], "source": "chat"}))
        .await;
    let id = a["id"].as_str().expect("id").to_owned();
    assert_eq!(a["createdAt"], NOW);
    s.ok("engram_add", json!({"content": "The release checklist lives in docs/RELEASE.md."})).await;
    s.ok("engram_add", json!({"content": "Database migrations must be reversible.", "topics": ["db"]})).await;
    let pack = env.pack("workspace");
    let file = std::fs::read_to_string(pack.join(format!("memories/2026-11/{id}.md"))).expect("memory file");
    assert!(
        file.contains("kind: note") && file.contains("source: chat") && file.contains("- 构建"),
        "{file}"
    );
    assert!(file.ends_with("---\n构建用 cargo nextest，比 cargo test 快。\n"), "{file}");

    let r = s.ok("engram_search", json!({"query": "nextest 构建"})).await;
    let results = r["results"].as_array().expect("results");
    assert_eq!(results[0]["content"], "构建用 cargo nextest，比 cargo test 快。");
    assert!(results[0]["score"].as_f64().expect("score") > 0.0);
    let meta = &results[0]["metadata"];
    assert_eq!((meta["id"].as_str(), meta["kind"].as_str()), (Some(id.as_str()), Some("note")));
    assert_eq!(meta["topics"], json!(["构建", "测试"]));
    let r = s.ok("engram_search", json!({"query": "migrations reversible", "limit": 1})).await;
    assert_eq!(r["results"].as_array().map(Vec::len), Some(1));
    assert_eq!(r["results"][0]["content"], "Database migrations must be reversible.");
    assert_eq!(s.ok("engram_search", json!({"query": "kubernetes"})).await["results"], json!([]));

    let stats = s.ok("engram_stats", json!({})).await;
    assert_eq!(stats["totalMemories"], 3);
    assert_eq!(stats["memoriesWithEmbeddings"], 0);
    assert_eq!(stats["byPack"], json!({"workspace": 3}));
    assert_eq!(stats["byKind"], json!({"note": 3}));

    let e = s.err("engram_search", json!({"query": "  "})).await;
    assert_eq!(e["error"], "invalid_argument");
    assert!(e["message"].as_str().expect("message").contains("query"));
    assert_eq!(s.err("engram_add", json!({"content": ""})).await["error"], "invalid_argument");
    assert_eq!(s.err("engram_search", json!({"query": "x", "limit": 0})).await["error"], "invalid_argument");
    s.close().await;
}

#[tokio::test]
async fn ingest_git_stores_one_dated_summary_and_is_idempotent() {
    let env = TestEnv::new();
    let ws = make_workspace(&env);
    let ws_arg = ws.display().to_string();
    let s = Server::start(&env, TestClient::default(), &[], &[]).await;
    let first = s.ok("engram_ingest_git", json!({"workspace": ws_arg})).await;
    assert_eq!(first["added"], json!(true), "the contract's boolean: {first}");
    assert_eq!(first["commits"], 2);
    assert_eq!(first["range"], "2026-11-15..2026-11-22");
    let memory_id = first["memoryId"].as_str().expect("memoryId").to_owned();
    let pack = env.pack("workspace");
    let commits = commit_count(&pack);

    let again = s.ok("engram_ingest_git", json!({"workspace": ws_arg, "days": 7})).await;
    assert_eq!(
        (again["added"].as_bool(), again["memoryId"].as_str()),
        (Some(false), Some(memory_id.as_str()))
    );
    assert_eq!(commit_count(&pack), commits, "a second run commits nothing");

    let r = s.ok("engram_search", json!({"query": "parser crash"})).await;
    let hit = &r["results"][0];
    assert_eq!(hit["metadata"]["kind"], "git-summary");
    let content = hit["content"].as_str().expect("content");
    for needle in
        ["parser: fix crash on empty input", "ci: cache cargo", "Alice", "Bob", "src/parser.rs", ".ci/run"]
    {
        assert!(content.contains(needle), "{needle} missing from {content}");
    }
    assert!(!content.contains("project skeleton"), "the old commit is outside the range: {content}");
    assert_eq!(s.ok("engram_stats", json!({})).await["byKind"], json!({"git-summary": 1}));

    // Errors: not a repository, days out of range.
    let plain = env.dir.path().join("plain");
    std::fs::create_dir_all(&plain).expect("mkdir");
    let e = s.err("engram_ingest_git", json!({"workspace": plain.display().to_string()})).await;
    assert_eq!(e["error"], "not_a_repository");
    assert_eq!(
        s.err("engram_ingest_git", json!({"workspace": ws_arg, "days": 0})).await["error"],
        "invalid_argument"
    );
    s.close().await;

    // The CLI does the same (e.g. from a git hook): same range → nothing; a wider range → a new summary.
    let out = env.cli(&["ingest-git", "--workspace", &ws_arg, "--days", "7"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!((v["added"].as_bool(), v["memoryId"].as_str()), (Some(false), Some(memory_id.as_str())));
    let out = env.cli(&["ingest-git", "--workspace", &ws_arg, "--days", "90"]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!((v["added"].as_bool(), v["commits"].as_i64()), (Some(true), Some(3)));
    assert_ne!(v["memoryId"], memory_id.as_str());
    assert_eq!(commit_count(&pack), commits + 1);

    // A new commit in the range updates the summary of that range instead of adding one.
    commit_file(&ws, "2026-11-22T08:00:00Z", "Alice", "src/lexer.rs", "lexer: handle tabs");
    let out = env.cli(&["ingest-git", "--workspace", &ws_arg]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!((v["added"].as_bool(), v["updated"].as_bool()), (Some(false), Some(true)));
    let out = env.cli(&["ingest-git", "--workspace", &env.dir.path().join("plain").display().to_string()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not inside a git repository"));
}

#[tokio::test]
async fn summarize_uses_sampling_when_there_is_no_key_and_stores_on_request() {
    let env = TestEnv::new();
    let ws = make_workspace(&env);
    let ws_arg = ws.display().to_string();

    // Neither a key nor sampling: an error that says what is needed.
    let s = Server::start(&env, TestClient::default(), &[], &[]).await;
    let e = s.err("engram_summarize", json!({"workspace": ws_arg})).await;
    assert_eq!(e["error"], "llm_unavailable");
    let m = e["message"].as_str().expect("message");
    assert!(m.contains("ANTHROPIC_API_KEY") && m.contains("sampling"), "{m}");
    s.close().await;

    let client = TestClient { sampling: true, ..TestClient::default() };
    let prompts = client.prompts.clone();
    let s = Server::start(&env, client, &["--workspace", &ws_arg], &[]).await;
    let r = s.ok("engram_summarize", json!({})).await;
    assert_eq!(r["via"], "sampling");
    let learnings = r["learnings"].as_array().expect("learnings");
    assert_eq!(learnings.len(), 2, "the 0.2 learning is below the default minConfidence: {r}");
    assert_eq!(learnings[0]["text"], "The parser crashes on empty input; guard it.");
    assert_eq!(learnings[0]["evidence"], json!(["src/parser.rs"]));
    assert_eq!(learnings[1]["evidence"], json!(["ci: cache cargo"]));
    assert_eq!(r["stored"], json!([]));
    {
        let prompts = prompts.lock().expect("lock");
        assert_eq!(prompts.len(), 1);
        assert!(
            prompts[0].contains("parser: fix crash on empty input") && prompts[0].contains("Bob"),
            "{}",
            prompts[0]
        );
    }
    assert!(!env.pack("workspace").exists(), "nothing stored without store: true");

    let r = s.ok("engram_summarize", json!({"minConfidence": 0.1, "store": true})).await;
    assert_eq!(r["learnings"].as_array().map(Vec::len), Some(3));
    assert_eq!(r["stored"].as_array().map(Vec::len), Some(3));
    let stats = s.ok("engram_stats", json!({})).await;
    assert_eq!(stats["byKind"], json!({"learning": 3}));
    let hit = s.ok("engram_search", json!({"query": "parser empty input"})).await;
    assert_eq!(hit["results"][0]["metadata"]["kind"], "learning");
    // The same learnings again are not stored twice.
    let r = s.ok("engram_summarize", json!({"minConfidence": 0.1, "store": true})).await;
    assert_eq!(r["stored"], json!([]));
    let e = s.err("engram_summarize", json!({"minConfidence": 3})).await;
    assert_eq!(e["error"], "invalid_argument");
    s.close().await;
}

/// What the HTTP stand-in saw.
#[derive(Debug, Default, Clone)]
struct Seen {
    request_line: String,
    headers: Vec<(String, String)>,
    body: String,
}

/// A one-request HTTP server on 127.0.0.1 answering `status` with `body`.
fn stand_in(status: u16, body: String) -> (String, std::thread::JoinHandle<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let handle = std::thread::spawn(move || {
        let (stream, _) = listener.accept().expect("accept");
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let mut seen = Seen::default();
        reader.read_line(&mut seen.request_line).expect("request line");
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).expect("header");
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_owned());
                if k == "content-length" {
                    length = v.parse().expect("length");
                }
                seen.headers.push((k, v));
            }
        }
        let mut buf = vec![0; length];
        reader.read_exact(&mut buf).expect("body");
        seen.body = String::from_utf8(buf).expect("utf8");
        let mut stream = stream;
        let reason = if status == 200 { "OK" } else { "Error" };
        write!(
            stream,
            "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .expect("respond");
        seen
    });
    (url, handle)
}

#[tokio::test]
async fn summarize_calls_the_anthropic_api_when_a_key_is_set() {
    let env = TestEnv::new();
    let ws = make_workspace(&env);
    let ws_arg = ws.display().to_string();
    let reply = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "stand-in",
        "content": [{"type": "text", "text": LEARNINGS}], "stop_reason": "end_turn",
    })
    .to_string();
    let (url, seen) = stand_in(200, reply);
    // Sampling is offered too: the API wins when a key is set.
    let client = TestClient { sampling: true, ..TestClient::default() };
    let prompts = client.prompts.clone();
    let envs = [("ANTHROPIC_API_KEY", "sk-test-secret"), ("ENGRAM_ANTHROPIC_BASE_URL", url.as_str())];
    let s = Server::start(&env, client, &["--dotted-names", "--wrap-errors"], &envs).await;
    let names = s.tool_names().await;
    assert!(
        names.contains(&"engram.summarize".to_owned()) && !names.contains(&"engram_summarize".to_owned())
    );
    let r = s.ok("engram.summarize", json!({"workspace": ws_arg, "minConfidence": 0.5, "store": true})).await;
    assert_eq!((r["ok"].as_bool(), r["via"].as_str()), (Some(true), Some("anthropic")));
    assert_eq!(r["learnings"].as_array().map(Vec::len), Some(2));
    assert_eq!(r["stored"].as_array().map(Vec::len), Some(2));
    assert!(prompts.lock().expect("lock").is_empty(), "no sampling when the API answered");
    let seen = seen.join().expect("stand-in");
    assert!(seen.request_line.starts_with("POST /v1/messages "), "{}", seen.request_line);
    let header = |k: &str| seen.headers.iter().find(|(h, _)| h == k).map(|(_, v)| v.clone());
    assert_eq!(header("x-api-key").as_deref(), Some("sk-test-secret"));
    assert_eq!(header("anthropic-version").as_deref(), Some("2023-06-01"));
    let body: Value = serde_json::from_str(&seen.body).expect("request JSON");
    assert!(body["model"].is_string() && body["max_tokens"].is_u64() && body["system"].is_string());
    let prompt = body["messages"][0]["content"].as_str().expect("prompt");
    assert!(prompt.contains("ci: cache cargo"), "{prompt}");
    // The key is never written to the pack.
    let pack = env.pack("workspace");
    let log = crate::common::git(&pack, &["log", "-p", "--all"]);
    assert!(!log.contains("sk-test-secret"));
    let stats = s.ok("engram.stats", json!({})).await;
    assert_eq!(stats["byKind"], json!({"learning": 2}));
    s.close().await;

    // An API error is a tool error with the API's message, never the key.
    let (url, seen) = stand_in(
        401,
        json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
            .to_string(),
    );
    let envs = [("ANTHROPIC_API_KEY", "sk-test-secret"), ("ENGRAM_ANTHROPIC_BASE_URL", url.as_str())];
    let s = Server::start(&env, TestClient::default(), &["--wrap-errors"], &envs).await;
    let e = s.err("engram_summarize", json!({"workspace": ws_arg})).await;
    assert_eq!(e["ok"], false);
    assert_eq!(e["error"]["code"], "llm_failed");
    let m = e["error"]["message"].as_str().expect("message");
    assert!(m.contains("401") && m.contains("invalid x-api-key") && !m.contains("sk-test-secret"), "{m}");
    seen.join().expect("stand-in");
    s.close().await;
}
