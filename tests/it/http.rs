//! `engram serve --http`: many clients on one process, tokens, Origin checks, read-only.

use std::io::{Read as _, Write as _};
use std::process::{Child, Command, Stdio};

use serde_json::json;

use crate::common::*;

/// A running `engram serve --http` child, killed on drop.
pub struct HttpServer {
    child: Child,
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// `127.0.0.1:PORT`.
    pub authority: String,
    /// What the server wrote to stderr after its address line.
    log: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
}

impl HttpServer {
    /// Starts `engram serve --http <addr> --packs-dir … <extra>` and waits for its address.
    pub fn start(env: &TestEnv, addr: &str, extra: &[&str], envs: &[(&str, &str)]) -> Result<Self, String> {
        let mut cmd = Command::new(bin());
        cmd.args(["serve", "--http", addr, "--packs-dir"]).arg(&env.packs).args(extra);
        cmd.env_clear().envs(base_env()).env("HOME", env.dir.path()).current_dir(env.dir.path());
        if let Some(now) = &env.now {
            cmd.env("ENGRAM_NOW", now);
        }
        for (k, v) in envs {
            cmd.env(k, v);
        }
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| e.to_string())?;
        let mut stderr = child.stderr.take().ok_or("no stderr")?;
        // Read stderr until the "serving … at http://…/mcp" line (or EOF: the server refused to start).
        let mut seen = Vec::new();
        let mut byte = [0u8; 1];
        let url = loop {
            match stderr.read(&mut byte) {
                Ok(1) => {
                    seen.push(byte[0]);
                    let text = String::from_utf8_lossy(&seen);
                    if text.ends_with('\n')
                        && let Some(pos) = text.rfind("http://")
                    {
                        break text[pos..].trim().to_owned();
                    }
                }
                _ => {
                    let _ = child.wait();
                    return Err(String::from_utf8_lossy(&seen).into_owned());
                }
            }
        };
        // Keep draining stderr so the server never blocks on a full pipe; keep it for `log`.
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = log.clone();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = stderr.read(&mut chunk) {
                sink.lock().unwrap_or_else(|p| p.into_inner()).extend_from_slice(&chunk[..n]);
            }
        });
        let authority = url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
        Ok(Self { child, url, authority, log })
    }

    /// A loopback server on a free port.
    pub fn loopback(env: &TestEnv, extra: &[&str]) -> Self {
        Self::start(env, "127.0.0.1:0", extra, &[]).expect("engram serve --http starts")
    }

    /// An MCP client connected over HTTP.
    pub async fn client(&self, token: Option<&str>) -> StdioClient {
        StdioClient::connect_http(&self.url, token).await.expect("connect over HTTP")
    }

    /// What the server has written to stderr since its address line (its background sync's
    /// reports, …).
    pub fn log(&self) -> String {
        String::from_utf8_lossy(&self.log.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends one raw HTTP POST to /mcp and returns (status, body).
    pub fn raw_post(&self, headers: &[(&str, &str)], body: &str) -> (u16, String) {
        raw_request(&self.authority, "POST", "/mcp", headers, body)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 request over a plain TCP socket; returns (status, body).
pub fn raw_request(
    authority: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(authority).expect("connect");
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).expect("send");
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

pub const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
const CAPTURE: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"capture_memory","arguments":{"name":"p","category":"c","content":"intruder","summary":"intruder"}}}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_serves_the_same_tools_as_stdio_to_many_clients() {
    let env = TestEnv::new();
    env.init("p");
    let server = HttpServer::loopback(&env, &[]);
    let stdio = env.client().await;
    let mut stdio_tools = stdio.tool_names().await.expect("tools");
    stdio_tools.sort();
    stdio.close().await.expect("close");
    let mut clients = Vec::new();
    for _ in 0..6 {
        clients.push(server.client(None).await);
    }
    let mut http_tools = clients[0].tool_names().await.expect("tools");
    http_tools.sort();
    assert_eq!(http_tools, stdio_tools, "HTTP lists the same toolsets as stdio");
    let mut tasks = Vec::new();
    for (i, c) in clients.into_iter().enumerate() {
        tasks.push(tokio::spawn(async move {
            for j in 0..5 {
                let text = format!("http client {i} write {j}");
                let r = c
                    .call(
                        "capture_memory",
                        json!({"name": "p", "category": "http", "content": text, "summary": text}),
                    )
                    .await
                    .expect("call");
                assert!(!r.is_error, "{}", r.text);
            }
            c.close().await.expect("close");
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    let m = crate::concurrency::assert_consistent(&env.pack("p"));
    assert_eq!(m.index.len(), 30);
    assert_fsck(&env.pack("p"));
    assert_clean(&env.pack("p"));
    // The MCP client name from each session's initialize lands in the trailers.
    let log = git(&env.pack("p"), &["log", "-1", "--format=%B"]);
    assert!(log.contains("Engram-Client: rmcp"), "{log}");
}

#[test]
fn http_requires_the_right_token_and_touches_no_pack_otherwise() {
    let env = TestEnv::new();
    env.init("p");
    let head = git(&env.pack("p"), &["rev-parse", "HEAD"]);
    let token = "s3cret-token-0123456789";
    let server = HttpServer::start(&env, "127.0.0.1:0", &["--auth-token", token], &[]).expect("start");
    for headers in [
        vec![],
        vec![("Authorization", "Bearer wrong-token-0123456789")],
        vec![("Authorization", "Bearer s3cret-token-012345678")],
        vec![("Authorization", "Bearer s3cret-token-01234567890")],
        vec![("Authorization", "Basic czNjcmV0LXRva2VuLTAxMjM0NTY3ODk=")],
        vec![("Authorization", "s3cret-token-0123456789")],
    ] {
        for body in [INIT, CAPTURE] {
            let (status, text) = server.raw_post(&headers, body);
            assert_eq!(status, 401, "{headers:?} → {status} {text}");
        }
    }
    let (status, _) = raw_request(&server.authority, "GET", "/mcp", &[], "");
    assert_eq!(status, 401);
    // The scheme name is case-insensitive (RFC 9110): `bearer` and `BEARER` work too.
    for scheme in ["Bearer", "bearer", "BEARER"] {
        let (status, body) = server.raw_post(&[("Authorization", &format!("{scheme} {token}"))], INIT);
        assert_eq!(status, 200, "{scheme}: {body}");
    }
    assert_eq!(git(&env.pack("p"), &["rev-parse", "HEAD"]), head, "no unauthenticated request committed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_also_comes_from_the_environment_and_the_client_can_send_it() {
    let env = TestEnv::new();
    env.init("p");
    let token = "env-token-abcdefghijkl";
    let server = HttpServer::start(&env, "127.0.0.1:0", &[], &[("ENGRAM_AUTH_TOKEN", token)]).expect("start");
    assert_eq!(server.raw_post(&[], INIT).0, 401);
    let c = server.client(Some(token)).await;
    ok(&c, "capture_memory", json!({"name": "p", "category": "c", "content": "x", "summary": "x"})).await;
    assert!(StdioClient::connect_http(&server.url, Some("wrong-token-abcdefghij")).await.is_err());
}

#[test]
fn non_loopback_addresses_need_a_token() {
    let env = TestEnv::new();
    let err = HttpServer::start(&env, "0.0.0.0:0", &[], &[]).err().expect("refuses to start");
    assert!(err.contains("--auth-token"), "{err}");
    let ok = HttpServer::start(&env, "0.0.0.0:0", &["--auth-token", "0123456789abcdefXYZ"], &[]);
    assert!(ok.is_ok(), "{:?}", ok.err());
}

#[test]
fn foreign_origins_and_hosts_are_refused_on_loopback() {
    let env = TestEnv::new();
    env.init("p");
    let server = HttpServer::loopback(&env, &[]);
    for origin in
        ["http://evil.example", "https://attacker.test:443", "null", "http://127.0.0.1.evil.example"]
    {
        let (status, body) = server.raw_post(&[("Origin", origin)], INIT);
        assert_eq!(status, 403, "Origin {origin} → {status} {body}");
    }
    let port = server.authority.rsplit(':').next().expect("port");
    for origin in [format!("http://localhost:{port}"), format!("http://127.0.0.1:{port}")] {
        let (status, body) = server.raw_post(&[("Origin", &origin)], INIT);
        assert_eq!(status, 200, "Origin {origin} → {status} {body}");
    }
    // DNS rebinding: a page of evil.example resolving to 127.0.0.1 sends Host: evil.example.
    let mut s = std::net::TcpStream::connect(&server.authority).expect("connect");
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: evil.example:{port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{INIT}",
        INIT.len()
    );
    s.write_all(req.as_bytes()).expect("send");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    assert!(out.starts_with("HTTP/1.1 403"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_serves_only_reading_tools_and_never_commits() {
    let env = TestEnv::new();
    env.init("p");
    let pack = env.pack("p");
    // An expired entry: load_engram would normally commit the expiry pass.
    let w = env.client().await;
    ok(&w, "capture_memory", json!({"name": "p", "category": "c", "content": "EXPIRED-ENTRY-7", "summary": "EXPIRED-ENTRY-7", "expires": "2026-01-01"}))
        .await;
    w.close().await.expect("close");
    let head = git(&pack, &["rev-parse", "HEAD"]);
    let server = HttpServer::loopback(&env, &["--read-only"]);
    {
        let c = server.client(None).await;
        let mut tools = c.tool_names().await.expect("tools");
        tools.sort();
        assert_eq!(
            tools,
            [
                "get_engram_info",
                "list_engrams",
                "load_engram",
                "memory_history",
                "ping",
                "read_engram_file",
                "search_memory"
            ]
        );
        let r = c
            .call("capture_memory", json!({"name": "p", "category": "c", "content": "x", "summary": "x"}))
            .await;
        assert!(r.map(|r| r.is_error).unwrap_or(true), "capture is not callable");
        let loaded = ok(&c, "load_engram", json!({"name": "p"})).await;
        // The expired entry is not among the memories shown (it stays in the committed files).
        assert!(
            !loaded.lines().any(|l| l.starts_with("- `memory/") && l.contains("EXPIRED-ENTRY-7")),
            "expired entries are hidden: {loaded}"
        );
    }
    // stdio honours --read-only as well.
    let c = env.client_with(&["--read-only"]).await;
    assert!(!c.tool_names().await.expect("tools").contains(&"write_engram_file".to_owned()));
    ok(&c, "load_engram", json!({"name": "p"})).await;
    assert_eq!(git(&pack, &["rev-parse", "HEAD"]), head, "a read-only server never commits");
}

/// A stdio server and an HTTP server on the same packs directory both write; nothing is lost.
/// (engram does not forward stdio to a running HTTP server: both processes write through
/// the pack's lock and compare-and-swap.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stdio_and_http_servers_share_a_pack() {
    let env = TestEnv::with_real_clock();
    env.init("p");
    let pack = env.pack("p");
    let before = commit_count(&pack);
    let server = HttpServer::loopback(&env, &[]);
    let http = server.client(None).await;
    let stdio = env.client().await;
    let a = tokio::spawn(async move {
        for i in 0..40 {
            let t = format!("via http {i}");
            let r = http
                .call("capture_memory", json!({"name": "p", "category": "mix", "content": t, "summary": t}))
                .await;
            assert!(!r.expect("call").is_error);
        }
    });
    let b = tokio::spawn(async move {
        for i in 0..40 {
            let t = format!("via stdio {i}");
            let r = stdio
                .call("capture_memory", json!({"name": "p", "category": "mix", "content": t, "summary": t}))
                .await;
            assert!(!r.expect("call").is_error);
        }
        stdio.close().await.expect("close");
    });
    a.await.expect("http");
    b.await.expect("stdio");
    assert_eq!(commit_count(&pack) - before, 80);
    let m = crate::concurrency::assert_consistent(&pack);
    assert_eq!(m.blocks["mix"].len(), 80);
    assert_fsck(&pack);
}
