//! `engram ui` through the real binary: the token, the cookie, Origin/Host checks, and the JSON
//! API's writes (one commit each, client `web-ui`, 409 on a stale `base`).

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use crate::common::*;

/// A running `engram ui`, killed on drop.
pub struct UiServer {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub authority: String,
    /// This launch's token.
    pub token: String,
    /// The URL it printed.
    pub url: String,
}

impl UiServer {
    /// Starts `engram ui --port 0 --no-open --packs-dir …` and reads the URL it prints.
    pub fn start(env: &TestEnv) -> Self {
        Self::start_with(env, &[]).expect("engram ui starts")
    }

    /// The same with more arguments; `Err(stderr)` when it does not start.
    pub fn start_with(env: &TestEnv, extra: &[&str]) -> Result<Self, String> {
        let mut cmd = Command::new(bin());
        cmd.args(["ui", "--port", "0", "--no-open", "--packs-dir"]).arg(&env.packs).args(extra);
        cmd.env_clear().envs(base_env()).env("HOME", env.dir.path()).current_dir(env.dir.path());
        if let Some(now) = &env.now {
            cmd.env("ENGRAM_NOW", now);
        }
        // The device name sync uses: the sync page's "mine" is this device's version.
        if let Some(host) = &env.host {
            cmd.env("ENGRAM_HOST", host);
        }
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| e.to_string())?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let Some(url) = line.trim().strip_prefix("engram ui: ").map(str::to_owned) else {
            let _ = child.kill();
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            let _ = child.wait();
            return Err(format!("{line}{err}"));
        };
        let mut stderr = child.stderr.take().ok_or("no stderr")?;
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = stderr.read_to_end(&mut sink);
        });
        let rest = url.trim_start_matches("http://");
        let (authority, token) = rest.split_once("/?token=").ok_or("no token in the URL")?;
        Ok(Self { child, authority: authority.to_owned(), token: token.to_owned(), url })
    }

    /// One request; answers (status, head, body).
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, String, String) {
        let mut s = std::net::TcpStream::connect(&self.authority).expect("connect");
        let mut req =
            format!("{method} {path} HTTP/1.1\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            req.push_str(&format!("Host: {}\r\n", self.authority));
        }
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
        let (head, body) =
            text.split_once("\r\n\r\n").map(|(h, b)| (h.to_owned(), b.to_owned())).unwrap_or_default();
        (status, head, body)
    }

    /// A JSON API call with the bearer token; answers (status, JSON body).
    pub fn api(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let auth = format!("Bearer {}", self.token);
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let (status, _, text) = self.request(
            method,
            path,
            &[("Authorization", &auth), ("Content-Type", "application/json")],
            &body,
        );
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }
}

impl Drop for UiServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The last commit's message.
fn last_message(dir: &std::path::Path) -> String {
    git(dir, &["log", "-1", "--format=%B"])
}

#[test]
fn the_page_needs_the_token_and_keeps_it_in_a_strict_cookie() {
    let env = TestEnv::new();
    env.init("p");
    let ui = UiServer::start(&env);
    assert!(ui.url.starts_with("http://127.0.0.1:"), "{}", ui.url);
    assert_eq!(ui.token.len(), 32, "a random 128-bit token");
    let (status, _, _) = ui.request("GET", "/", &[], "");
    assert_eq!(status, 401, "no token, no page");
    let (status, _, _) = ui.request("GET", "/api/packs", &[], "");
    assert_eq!(status, 401, "no token, no API");
    let (status, _, _) = ui.request("GET", "/?token=0123456789abcdef0123456789abcdef", &[], "");
    assert_eq!(status, 401, "a wrong token");
    let (page_host, cookie_line) = page_cookie(&ui);
    assert!(cookie_line.contains("HttpOnly") && cookie_line.contains("SameSite=Strict"), "{cookie_line}");
    let cookie = cookie_line.split_once(':').unwrap().1.split(';').next().unwrap().trim().to_owned();
    let at_page = [("Host", page_host.as_str()), ("Cookie", cookie.as_str())];
    let (status, head, body) = ui.request("GET", "/", &at_page, "");
    assert_eq!(status, 200);
    assert!(body.contains("href=\"/p/p\""), "the pack is listed: {body}");
    assert!(head.to_ascii_lowercase().contains("content-security-policy: default-src 'none'"), "{head}");
    let (status, _, _) = ui.request("GET", "/", &[("Cookie", "engram_ui_1=nope")], "");
    assert_eq!(status, 401);
    let (status, packs) = ui.api("GET", "/api/packs", None);
    assert_eq!(status, 200, "a script sends the bearer token");
    assert_eq!(packs[0]["name"], "p");
}

/// Follows the printed URL as a browser does: at `127.0.0.1` it is sent on to the page's own
/// host name (no cookie there), where the cookie is set and the token leaves the address.
/// Answers (the page's `Host`, its `Set-Cookie` line).
fn page_cookie(ui: &UiServer) -> (String, String) {
    let (status, head, _) = ui.request("GET", &format!("/?token={}", ui.token), &[], "");
    assert_eq!(status, 303, "{head}");
    assert!(!head.to_ascii_lowercase().contains("set-cookie"), "no cookie at 127.0.0.1: {head}");
    let location = head
        .lines()
        .find_map(|l| {
            l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("location")).map(|(_, v)| v.trim())
        })
        .expect("a location")
        .to_owned();
    let rest = location.strip_prefix("http://").expect("an absolute location");
    let (host, path) = rest.split_once('/').expect("a path");
    let port = ui.authority.rsplit_once(':').expect("a port").1;
    let label = host.strip_suffix(&format!(".localhost:{port}")).expect("a .localhost name of the same port");
    assert!(label.len() >= 16 && label.chars().all(|c| c.is_ascii_hexdigit()), "a random name: {host}");
    let (status, head, _) = ui.request("GET", &format!("/{path}"), &[("Host", host)], "");
    assert_eq!(status, 303, "{head}");
    assert!(head.to_ascii_lowercase().contains("location: /\r\n"), "the token leaves the address: {head}");
    let cookie_line = head
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .expect("a cookie")
        .to_owned();
    assert!(!cookie_line.to_ascii_lowercase().contains("domain="), "host-only: {cookie_line}");
    (host.to_owned(), cookie_line)
}

/// A browser's cookie jar of one host-only cookie (RFC 6265 §5.4: sent only to the host it
/// was set by, whatever the port).
fn cookie_for(set_by: &str, cookie: &str, request_host: &str) -> Option<String> {
    let name = |h: &str| h.rsplit_once(':').map_or(h, |(n, _)| n).to_ascii_lowercase();
    (name(set_by) == name(request_host)).then(|| cookie.to_owned())
}

#[test]
fn another_local_server_never_receives_the_pages_token() {
    use std::io::{Read as _, Write as _};
    let env = TestEnv::new();
    env.init("p");
    let ui = UiServer::start(&env);
    let (page_host, cookie_line) = page_cookie(&ui);
    let cookie = cookie_line.split_once(':').unwrap().1.split(';').next().unwrap().trim().to_owned();
    // The page works with its cookie at its own host name.
    let (status, _, body) = ui.request("GET", "/", &[("Host", &page_host), ("Cookie", &cookie)], "");
    assert_eq!(status, 200, "{body}");
    // The same cookie at 127.0.0.1 (where the old page kept it) is worth nothing.
    let (status, _, _) = ui.request("GET", "/", &[("Cookie", &cookie)], "");
    assert_eq!(status, 401, "a cookie at a shared host name is not the page's");

    // Another local program listens on another port; a browser that holds the page's cookie
    // visits it by every local name it may be reached at.
    let other = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let other_port = other.local_addr().expect("addr").port();
    let received = std::thread::spawn(move || {
        let mut all = String::new();
        for _ in 0..3 {
            let (mut s, _) = other.accept().expect("accept");
            let mut buf = vec![0u8; 65536];
            let n = s.read(&mut buf).unwrap_or(0);
            all.push_str(&String::from_utf8_lossy(&buf[..n]));
            let _ = s.write_all(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
        }
        all
    });
    for host in
        [format!("127.0.0.1:{other_port}"), format!("localhost:{other_port}"), format!("[::1]:{other_port}")]
    {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", other_port)).expect("connect");
        let mut req = format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
        if let Some(c) = cookie_for(&page_host, &cookie, &host) {
            req.push_str(&format!("Cookie: {c}\r\n"));
        }
        req.push_str("\r\n");
        s.write_all(req.as_bytes()).expect("send");
        let mut sink = Vec::new();
        let _ = s.read_to_end(&mut sink);
    }
    let received = received.join().expect("the other server");
    assert!(!received.contains(&ui.token), "the other server got the token:\n{received}");
    assert!(!received.to_ascii_lowercase().contains("cookie"), "{received}");
    // And what it got opens nothing on the page.
    let (status, _, _) = ui.request("GET", "/api/packs", &[("Host", &page_host)], "");
    assert_eq!(status, 401);
}

/// The server's time on an answer, from its `Server-Timing: app;dur=<ms>` header.
fn server_time(head: &str) -> Option<f64> {
    let line = head.lines().find(|l| l.to_ascii_lowercase().starts_with("server-timing:"))?;
    let value = line.split_once(':')?.1.trim();
    let dur = value.strip_prefix("app;dur=")?;
    dur.parse().ok()
}

#[test]
fn every_answer_says_its_server_time() {
    let env = TestEnv::new();
    env.init("p");
    let ui = UiServer::start(&env);
    let auth = format!("Bearer {}", ui.token);
    let authed = [("Authorization", auth.as_str())];
    for (path, headers, want) in [
        ("/p/p/memory", &authed[..], 200),
        ("/api/packs/p/memories?limit=5", &authed[..], 200),
        ("/assets/app.css", &authed[..], 200),
        ("/api/packs/nope/memories", &authed[..], 404),
        ("/p/p/memory", &[][..], 401),
    ] {
        let (status, head, _) = ui.request("GET", path, headers, "");
        assert_eq!(status, want, "{path}: {head}");
        let ms = server_time(&head).unwrap_or_else(|| panic!("{path}: no Server-Timing app;dur: {head}"));
        assert!(ms.is_finite() && ms >= 0.0, "{path}: {ms}");
    }
}

#[test]
fn cross_origin_and_rebound_requests_are_refused_and_commit_nothing() {
    let env = TestEnv::new();
    env.init("p");
    let ui = UiServer::start(&env);
    let before = commit_count(&env.pack("p"));
    let auth = format!("Bearer {}", ui.token);
    let body = json!({"category": "c", "summary": "intruder", "content": "intruder"}).to_string();
    let other_port = format!("http://{}", ui.authority.replace(':', ":1"));
    let attempts: Vec<Vec<(&str, &str)>> = vec![
        vec![("Origin", "http://evil.example")],
        vec![("Origin", other_port.as_str())],
        vec![("Origin", "null")],
        vec![("Sec-Fetch-Site", "cross-site")],
        vec![("Sec-Fetch-Site", "same-site")],
        vec![("Host", "evil.example")],
    ];
    for extra in attempts {
        let mut headers = vec![("Authorization", auth.as_str()), ("Content-Type", "application/json")];
        headers.extend(extra.iter().copied());
        let (status, head, _) = ui.request("POST", "/api/packs/p/memories", &headers, &body);
        assert_eq!(status, 403, "{extra:?}");
        assert!(!head.to_ascii_lowercase().contains("access-control-allow-origin"), "{head}");
        let (status, _, _) = ui.request("POST", "/p/p/memory", &headers, "category=c&summary=x&content=x");
        assert_eq!(status, 403, "the form post too: {extra:?}");
    }
    let own = format!("http://{}", ui.authority);
    let (status, _, _) = ui.request(
        "POST",
        "/api/packs/p/memories",
        &[("Origin", own.as_str()), ("Content-Type", "application/json")],
        &body,
    );
    assert_eq!(status, 401, "the page's own origin still needs the token");
    assert_eq!(commit_count(&env.pack("p")), before, "nothing was committed");
}

#[test]
fn api_writes_are_one_commit_each_by_web_ui_and_stale_writes_get_409() {
    let env = TestEnv::new();
    env.init("p");
    let ui = UiServer::start(&env);
    let dir = env.pack("p");
    let n0 = commit_count(&dir);
    let (status, added) = ui.api(
        "POST",
        "/api/packs/p/memories",
        Some(json!({"category": "prefs", "summary": "likes tea", "content": "The user likes green tea.", "type": "preference", "tags": ["drink"]})),
    );
    assert_eq!(status, 201, "{added}");
    let id = added["id"].as_str().expect("an id").to_owned();
    let c1 = added["commit"].as_str().expect("a commit").to_owned();
    assert_eq!(commit_count(&dir), n0 + 1, "one commit");
    assert_eq!(git(&dir, &["rev-parse", "HEAD"]).trim(), c1);
    let msg = last_message(&dir);
    assert!(msg.contains("Engram-Client: web-ui") && msg.contains("Engram-Tool: capture_memory"), "{msg}");

    let (status, list) = ui.api("GET", "/api/packs/p/memories?q=GREEN&limit=5", None);
    assert_eq!(status, 200);
    assert_eq!(list["commit"], c1.as_str());
    assert_eq!(list["total"], 1, "{list}");
    assert_eq!(list["items"][0]["id"], id.as_str());
    assert_eq!(list["items"][0]["content"], "The user likes green tea.");
    assert_eq!(list["items"][0]["type"], "preference");
    let (_, none) = ui.api("GET", "/api/packs/p/memories?category=other", None);
    assert_eq!(none["total"], 0);

    let (status, fixed) = ui.api(
        "PATCH",
        &format!("/api/packs/p/memories/{id}"),
        Some(json!({"base": c1, "summary": "likes oolong", "content": "The user likes oolong tea."})),
    );
    assert_eq!(status, 200, "{fixed}");
    assert_eq!(fixed["id"], id.as_str(), "a correction keeps the id");
    let c2 = fixed["commit"].as_str().unwrap().to_owned();
    assert_eq!(commit_count(&dir), n0 + 2);
    assert!(last_message(&dir).contains("Engram-Tool: correct_memory"));

    // Written from the old page (base c1): the memory changed since, so 409 with what it says now.
    let (status, stale) = ui.api(
        "PATCH",
        &format!("/api/packs/p/memories/{id}"),
        Some(json!({"base": c1, "summary": "likes coffee", "content": "The user likes coffee."})),
    );
    assert_eq!(status, 409, "{stale}");
    assert_eq!(stale["code"], "conflict");
    assert_eq!(stale["current"]["content"], "The user likes oolong tea.");
    let (status, _) = ui.api("DELETE", &format!("/api/packs/p/memories/{id}?base={c1}"), None);
    assert_eq!(status, 409, "a stale delete too");
    let (status, missing) = ui.api(
        "PATCH",
        &format!("/api/packs/p/memories/{id}"),
        Some(json!({"summary": "x", "content": "x"})),
    );
    assert_eq!(status, 400, "base is required: {missing}");
    assert_eq!(commit_count(&dir), n0 + 2, "refused writes commit nothing");

    let (status, deleted) =
        ui.api("DELETE", &format!("/api/packs/p/memories/{id}"), Some(json!({"base": c2})));
    assert_eq!(status, 200, "{deleted}");
    let c3 = deleted["commit"].as_str().unwrap().to_owned();
    assert_eq!(commit_count(&dir), n0 + 3);
    let (_, list) = ui.api("GET", "/api/packs/p/memories", None);
    assert_eq!(list["total"], 0);

    let (status, history) = ui.api("GET", "/api/packs/p/history?limit=3", None);
    assert_eq!(status, 200);
    assert_eq!(history[0]["id"], c3.as_str());
    assert_eq!(history[0]["client"], "web-ui");
    assert_eq!(history[0]["tool"], "delete_memory");
    let (status, reverted) = ui.api("POST", "/api/packs/p/revert", Some(json!({"commit": c3})));
    assert_eq!(status, 200, "{reverted}");
    assert_eq!(commit_count(&dir), n0 + 4);
    assert!(last_message(&dir).contains("Engram-Tool: revert_memory"));
    let (_, list) = ui.api("GET", "/api/packs/p/memories", None);
    assert_eq!(list["items"][0]["id"], id.as_str(), "the memory is back with its id");
    assert_eq!(list["items"][0]["content"], "The user likes oolong tea.");
    assert_fsck(&dir);
}

#[test]
fn api_writes_keep_the_tools_rules() {
    let env = TestEnv::new();
    env.init("p");
    let ui = UiServer::start(&env);
    let dir = env.pack("p");
    let n0 = commit_count(&dir);
    // Split so the repository's own secret scan does not see a credential here.
    let key = ["ghp_", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"].concat();
    let (status, refused) = ui.api(
        "POST",
        "/api/packs/p/memories",
        Some(json!({"category": "c", "summary": "token", "content": format!("my token is {key}")})),
    );
    assert_eq!(status, 422, "the secret guard: {refused}");
    let (status, bad) =
        ui.api("POST", "/api/packs/p/memories", Some(json!({"category": "../x", "content": "x"})));
    assert_eq!(status, 400, "{bad}");
    assert_eq!(bad["code"], "invalid_argument");
    let (status, _) = ui.api("GET", "/api/packs/nope/memories", None);
    assert_eq!(status, 404);
    let (status, _) = ui.api("POST", "/api/packs/p/memories", Some(json!({"nonsense": true})));
    assert_eq!(status, 400);
    assert_eq!(commit_count(&dir), n0);
}

#[test]
fn off_loopback_needs_a_configured_token() {
    let env = TestEnv::new();
    let err = UiServer::start_with(&env, &["--host", "0.0.0.0"]).err().expect("refused");
    assert!(err.contains("without a token"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_ui_starts_the_page_once_and_only_in_the_ui_toolset() {
    let env = TestEnv::new();
    env.init("p");
    let default = env.client().await;
    assert!(
        !default.tool_names().await.expect("tools").iter().any(|t| t == "open_ui"),
        "not in the default toolset"
    );
    default.close().await.expect("close");
    let c = env.client_with(&["--tools", "all"]).await;
    let first = c.call("open_ui", json!({})).await.expect("open_ui");
    assert!(!first.is_error, "{}", first.text);
    let url =
        first.text.split_whitespace().find(|w| w.starts_with("http://127.0.0.1:")).expect("a URL").to_owned();
    let again = c.call("open_ui", json!({"port": 0})).await.expect("open_ui again");
    assert!(again.text.contains(&url), "the running page is found: {}", again.text);
    let rest = url.trim_start_matches("http://");
    let (authority, query) = rest.split_once('/').expect("a path");
    let token = query.trim_start_matches("?token=").to_owned();
    let ui = UiServerRef { authority: authority.to_owned(), token };
    let (status, packs) = tokio::task::spawn_blocking(move || ui.api_get("/api/packs")).await.expect("join");
    assert_eq!(status, 200);
    assert_eq!(packs[0]["name"], "p");
    c.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_ui_shows_the_servers_notes_pack_graph_pack_and_user() {
    let env = TestEnv::new();
    env.init("p");
    let args = ["--tools", "all", "--notes-pack", "mynotes", "--graph-pack", "gp", "--user", "bob"];
    let c = env.client_with(&args).await;
    let stored =
        c.call("store", json!({"content": "the blue door code", "title": "blue door"})).await.expect("store");
    assert!(!stored.is_error, "{}", stored.text);
    let profile = c.call("update_profile", json!({"key": "city", "value": "Lisbon"})).await.expect("profile");
    assert!(!profile.is_error, "{}", profile.text);
    let opened = c.call("open_ui", json!({})).await.expect("open_ui");
    let url = opened
        .text
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .expect("a URL")
        .to_owned();
    let rest = url.trim_start_matches("http://");
    let (authority, query) = rest.split_once('/').expect("a path");
    let ui = UiServerRef {
        authority: authority.to_owned(),
        token: query.trim_start_matches("?token=").to_owned(),
    };
    let (notes, personal) =
        tokio::task::spawn_blocking(move || (ui.get("/notes"), ui.get("/personal"))).await.expect("join");
    assert_eq!(notes.0, 200, "{}", notes.1);
    assert!(
        notes.1.contains("mynotes") && notes.1.contains("blue door"),
        "the server's notes pack: {}",
        notes.1
    );
    assert_eq!(personal.0, 200, "{}", personal.1);
    assert!(personal.1.contains("Lisbon"), "the server's graph pack and user: {}", personal.1);
    assert!(!env.packs.join("personal").exists(), "the default pack is not used");
    c.close().await.expect("close");
}

/// A page started by `open_ui` inside a server (no child of its own).
struct UiServerRef {
    authority: String,
    token: String,
}

impl UiServerRef {
    fn api_get(&self, path: &str) -> (u16, Value) {
        let (status, body) = self.get(path);
        (status, serde_json::from_str(&body).unwrap_or(Value::Null))
    }

    /// A GET with the token; answers (status, body).
    fn get(&self, path: &str) -> (u16, String) {
        let mut s = std::net::TcpStream::connect(&self.authority).expect("connect");
        let req = format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
            self.authority, self.token
        );
        s.write_all(req.as_bytes()).expect("send");
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        let status = out.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
        let body = out.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or_default();
        (status, body.to_owned())
    }
}

#[test]
fn history_views_the_pack_as_of_a_commit_and_undoes_the_last_commits() {
    let env = TestEnv::new();
    env.init("p");
    let ui = UiServer::start(&env);
    let dir = env.pack("p");
    let mut commits = Vec::new();
    for s in ["first memory", "second memory"] {
        let (status, v) = ui.api(
            "POST",
            "/api/packs/p/memories",
            Some(json!({"category": "c", "summary": s, "content": s})),
        );
        assert_eq!(status, 201, "{v}");
        commits.push(v["commit"].as_str().unwrap().to_owned());
    }
    let auth = format!("Bearer {}", ui.token);
    let (status, _, page) =
        ui.request("GET", &format!("/p/p/memory?at={}", commits[0]), &[("Authorization", &auth)], "");
    assert_eq!(status, 200);
    assert!(
        page.contains("first memory") && !page.contains("second memory"),
        "the pack as of the first: {page}"
    );
    assert!(page.contains("id=\"as-of\"") && !page.contains("/edit\""), "read only");
    let (_, _, history) = ui.request("GET", "/p/p/history", &[("Authorization", &auth)], "");
    assert!(history.contains(&format!("/p/p/memory?at={}", commits[1])), "{history}");
    let n = commit_count(&dir);
    let own = format!("http://{}", ui.authority);
    let form = [
        ("Authorization", auth.as_str()),
        ("Origin", own.as_str()),
        ("Content-Type", "application/x-www-form-urlencoded"),
    ];
    let (status, head, _) = ui.request("POST", "/p/p/undo", &form, "n=1");
    assert_eq!(status, 303, "{head}");
    assert_eq!(commit_count(&dir), n + 1, "one commit");
    let msg = git(&dir, &["log", "-1", "--format=%B"]);
    assert!(msg.contains("Engram-Tool: undo_last") && msg.contains("Engram-Client: web-ui"), "{msg}");
    let (_, list) = ui.api("GET", "/api/packs/p/memories", None);
    assert_eq!(list["total"], 1);
    let (status, _, sync) = ui.request("GET", "/sync?lang=zh", &[("Authorization", &auth)], "");
    assert_eq!(status, 200);
    assert!(sync.contains("<h2>p</h2>") && sync.contains("没有配置远端"), "{sync}");
}

#[test]
fn capture_ids_search_filters_duplicates_and_past_entries() {
    let env = TestEnv::new();
    env.init("p");
    let ui = UiServer::start(&env);
    let add = |category: &str, summary: &str, content: &str, extra: Value| -> String {
        let mut body = json!({"category": category, "summary": summary, "content": content, "type": "fact"});
        if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
            b.extend(e.clone());
        }
        let (status, v) = ui.api("POST", "/api/packs/p/memories", Some(body));
        assert_eq!(status, 201, "{v}");
        v["id"].as_str().expect("capture answers the new id").to_owned()
    };
    // The clock is fixed, so every entry has the same minute: ids count entries of a category in
    // that minute, across a roll of the index head (more than 114 lines).
    let mut made = Vec::new();
    for i in 0..130 {
        let category = if i % 2 == 0 { "a" } else { "b" };
        made.push((add(category, &format!("entry {i}"), &format!("Entry number {i}."), json!({})), i));
    }
    // The list read once: the next adds extend it without reading the pack again.
    let (_, before) = ui.api("GET", "/api/packs/p/memories?limit=1", None);
    assert_eq!(before["total"], 130);
    let zh = add("prefs", "喜欢绿茶", "用户喜欢下午喝绿茶，不加糖。", json!({"tags": ["drink"]}));
    let en = add("prefs", "likes green tea", "The user likes green tea.", json!({"tags": ["drink", "tea"]}));
    let dup = add("prefs", "tea again", "the user LIKES green tea!", json!({}));
    // The extended list is the list a fresh server reads from the commit.
    let (_, extended) = ui.api("GET", "/api/packs/p/memories?limit=200", None);
    let fresh = UiServer::start(&env);
    let (_, reread) = fresh.api("GET", "/api/packs/p/memories?limit=200", None);
    assert_eq!(extended, reread, "the list kept after the adds is the pack's");
    drop(fresh);
    add("prefs", "old", "An offer valid until 2020.", json!({"expires": "2020-01-01"}));
    add("prefs", "after", "Written after the expiry.", json!({}));

    let (_, all) = ui.api("GET", "/api/packs/p/memories?limit=200", None);
    let listed: std::collections::HashMap<String, String> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["id"].as_str().unwrap().to_owned(), m["summary"].as_str().unwrap().to_owned()))
        .collect();
    for (id, i) in &made {
        assert_eq!(
            listed.get(id).map(String::as_str),
            Some(format!("entry {i}").as_str()),
            "id of entry {i}"
        );
    }

    // Text goes through the search engine: Chinese words, English stems, best first.
    let (_, found) = ui.api("GET", "/api/packs/p/memories?q=%E7%BB%BF%E8%8C%B6", None);
    assert_eq!(found["items"][0]["id"], zh.as_str(), "{found}");
    let (_, found) = ui.api("GET", "/api/packs/p/memories?q=liking%20teas", None);
    let ids: Vec<&str> = found["items"].as_array().unwrap().iter().filter_map(|m| m["id"].as_str()).collect();
    assert!(ids.contains(&en.as_str()) && !ids.contains(&zh.as_str()), "{found}");
    let (_, tagged) = ui.api("GET", "/api/packs/p/memories?tags=drink,tea", None);
    assert_eq!(tagged["total"], 1, "{tagged}");
    let (_, dated) = ui.api("GET", "/api/packs/p/memories?from=2027-01-01", None);
    assert_eq!(dated["total"], 0, "{dated}");
    let (status, bad) = ui.api("GET", "/api/packs/p/memories?time_range=someday", None);
    assert_eq!(status, 400, "{bad}");

    // Likely duplicates are marked.
    let (_, prefs) = ui.api("GET", "/api/packs/p/memories?category=prefs", None);
    assert_eq!(prefs["duplicates"][dup.as_str()], en.as_str(), "{prefs}");

    // The expired entry left the live list; with the toggle it is shown as expired.
    assert!(!prefs.to_string().contains("valid until 2020"), "{prefs}");
    let (_, old) = ui.api("GET", "/api/packs/p/memories?category=prefs&old=1", None);
    assert_eq!(old["past"][0]["kind"], "expired", "{old}");
    assert_eq!(old["past"][0]["content"], "An offer valid until 2020.");

    // The memory page shows the same, with its menu's history link.
    let auth = format!("Bearer {}", ui.token);
    let (status, _, html) =
        ui.request("GET", "/p/p/memory?category=prefs&old=1", &[("Authorization", &auth)], "");
    assert_eq!(status, 200);
    assert!(html.contains("class=\"badge dup\"") && html.contains("valid until 2020"), "{html}");
    assert!(html.contains(&format!("/p/p/history?memory={en}")), "{html}");
    let (status, _, hist) =
        ui.request("GET", &format!("/p/p/history?memory={en}"), &[("Authorization", &auth)], "");
    assert_eq!(status, 200, "{hist}");
    assert_eq!(
        hist.matches("<article class=\"commit\"").count(),
        1,
        "only the commit of that memory: {hist}"
    );
    assert!(hist.contains("likes green tea"), "{hist}");
}

#[test]
fn consolidate_archives_a_category_and_pack_files_save_as_one_commit() {
    let env = TestEnv::new();
    env.init("p");
    let ui = UiServer::start(&env);
    let dir = env.pack("p");
    for (s, c) in [("one", "First thing."), ("two", "Second thing.")] {
        let (status, v) = ui.api(
            "POST",
            "/api/packs/p/memories",
            Some(json!({"category": "c", "summary": s, "content": c})),
        );
        assert_eq!(status, 201, "{v}");
    }
    let auth = format!("Bearer {}", ui.token);
    let head = git(&dir, &["rev-parse", "HEAD"]).trim().to_owned();
    let form = |pairs: &[(&str, &str)]| -> String {
        pairs.iter().map(|(k, v)| format!("{k}={}", v.replace(' ', "+"))).collect::<Vec<_>>().join("&")
    };
    let headers = [("Authorization", auth.as_str()), ("Content-Type", "application/x-www-form-urlencoded")];
    let n = commit_count(&dir);
    let body =
        form(&[("base", &head), ("category", "c"), ("summary", "both"), ("content", "First and second.")]);
    let (status, head_text, _) = ui.request("POST", "/p/p/consolidate", &headers, &body);
    assert_eq!(status, 303, "{head_text}");
    assert_eq!(commit_count(&dir), n + 1, "one commit");
    assert!(last_message(&dir).contains("Engram-Tool: consolidate_memory"));
    let (_, list) = ui.api("GET", "/api/packs/p/memories?category=c&old=1", None);
    assert_eq!(list["total"], 1);
    assert_eq!(list["items"][0]["type"], "consolidated");
    let archived: Vec<&str> =
        list["past"].as_array().unwrap().iter().filter_map(|p| p["kind"].as_str()).collect();
    assert_eq!(archived, ["archived", "archived"], "{list}");
    // The same form from the old page: the category changed since, nothing is written.
    let (status, _, _) = ui.request("POST", "/p/p/consolidate", &headers, &body);
    assert_eq!(status, 409);
    assert_eq!(commit_count(&dir), n + 1);

    // A pack file: open, save (one commit), and a save from a stale page is refused.
    let head = git(&dir, &["rev-parse", "HEAD"]).trim().to_owned();
    let (status, _, page) = ui.request("GET", "/p/p/file?path=role.md", &[("Authorization", &auth)], "");
    assert_eq!(status, 200);
    assert!(page.contains("id=\"file-text\""), "{page}");
    let body = form(&[("path", "role.md"), ("base", &head), ("content", "# Role\nA careful coach.")]);
    let (status, _, _) = ui.request("POST", "/p/p/file", &headers, &body);
    assert_eq!(status, 303);
    assert_eq!(std::fs::read_to_string(dir.join("role.md")).unwrap(), "# Role\nA careful coach.\n");
    let msg = last_message(&dir);
    assert!(msg.contains("Engram-Tool: write_engram_file") && msg.contains("Engram-Client: web-ui"), "{msg}");
    let body = form(&[("path", "role.md"), ("base", &head), ("content", "# Role\nOverwritten.")]);
    let (status, _, page) = ui.request("POST", "/p/p/file", &headers, &body);
    assert_eq!(status, 409, "{page}");
    assert!(page.contains("A careful coach."), "the file as it is now: {page}");
    assert_eq!(commit_count(&dir), n + 2);
    assert_fsck(&dir);
}

/// The `<article class="commit" data-commit="…">` ids of a history page, in order.
fn shown_commits(html: &str) -> Vec<String> {
    html.split("<article class=\"commit\" data-commit=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next().map(str::to_owned))
        .collect()
}

/// A capture by another process (an MCP client of its own), as a person's agent makes them.
fn capture_elsewhere(env: &TestEnv, category: &str, summary: &str, content: &str) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let c = env.client().await;
        let args = json!({"name": "p", "category": category, "summary": summary, "content": content});
        ok(&c, "capture_memory", args).await;
        c.close().await.expect("close");
    });
}

#[test]
fn history_pages_read_their_own_commits_and_say_when_more_follow() {
    let env = TestEnv::new();
    env.init("p");
    let ui = UiServer::start(&env);
    for i in 0..20 {
        let (status, v) = ui.api(
            "POST",
            "/api/packs/p/memories",
            Some(json!({"category": "c", "summary": format!("entry {i}"), "content": format!("text {i}")})),
        );
        assert_eq!(status, 201, "{v}");
    }
    let dir = env.pack("p");
    let all: Vec<String> = git(&dir, &["log", "--format=%H"]).lines().map(str::to_owned).collect();
    assert!(all.len() > 20, "{all:?}");
    let auth = format!("Bearer {}", ui.token);
    let (status, _, first) = ui.request("GET", "/p/p/history", &[("Authorization", &auth)], "");
    assert_eq!(status, 200);
    assert_eq!(shown_commits(&first), all[..15], "the newest 15");
    assert!(first.contains("href=\"/p/p/history?page=2\""), "a next page: {first}");
    let (_, _, second) = ui.request("GET", "/p/p/history?page=2", &[("Authorization", &auth)], "");
    assert_eq!(shown_commits(&second), all[15..], "the rest");
    assert!(!second.contains("history?page=3"), "no page after the last: {second}");
    assert!(second.contains("entry 4 (") && !second.contains("entry 5 ("), "their own changes: {second}");
    let (status, api) = ui.api("GET", "/api/packs/p/history?limit=3&offset=15", None);
    assert_eq!(status, 200, "{api}");
    let ids: Vec<&str> = api.as_array().unwrap().iter().filter_map(|c| c["id"].as_str()).collect();
    assert_eq!(ids, all[15..18].iter().map(String::as_str).collect::<Vec<_>>());
    assert!(api[0]["changes"].as_str().unwrap().contains("entry 4"), "{api}");
}

#[test]
fn one_memorys_history_follows_corrections_other_processes_and_a_persons_git() {
    let env = TestEnv::new();
    env.init("p");
    let ui = UiServer::start(&env);
    let dir = env.pack("p");
    let add = |category: &str, summary: &str, content: &str| -> (String, String) {
        let body = json!({"category": category, "summary": summary, "content": content});
        let (status, v) = ui.api("POST", "/api/packs/p/memories", Some(body));
        assert_eq!(status, 201, "{v}");
        (v["id"].as_str().unwrap().to_owned(), v["commit"].as_str().unwrap().to_owned())
    };
    // Same category and minute (the test clock is fixed): only the text tells them apart.
    let (tea, added) = add("c", "likes green tea", "Likes green tea.");
    let (coffee, _) = add("c", "drinks coffee", "Drinks coffee.");
    let (_, head) = add("d", "likes green tea", "Likes green tea.");
    let auth = format!("Bearer {}", ui.token);
    let history = |id: &str| -> Vec<String> {
        let (status, _, html) =
            ui.request("GET", &format!("/p/p/history?memory={id}"), &[("Authorization", &auth)], "");
        assert_eq!(status, 200, "{html}");
        shown_commits(&html)
    };
    assert_eq!(history(&tea), std::slice::from_ref(&added));
    let (status, v) = ui.api(
        "PATCH",
        &format!("/api/packs/p/memories/{tea}"),
        Some(json!({"base": head, "summary": "likes oolong tea", "content": "Likes oolong tea now."})),
    );
    assert_eq!(status, 200, "{v}");
    let corrected = v["commit"].as_str().unwrap().to_owned();
    assert_eq!(history(&tea), [corrected.clone(), added.clone()], "the add and the correction");
    assert_eq!(history(&coffee).len(), 1, "the other entry of that minute keeps its own");

    // A person edits the text and commits with git; another process captures.
    let path = dir.join("memory/c.md");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("Likes oolong tea now.", "Likes oolong tea, hot.")).unwrap();
    git(&dir, &["commit", "-qam", "by hand"]);
    let by_hand = git(&dir, &["rev-parse", "HEAD"]).trim().to_owned();
    capture_elsewhere(&env, "c", "reads at night", "Reads at night.");
    let (_, list) = ui.api("GET", "/api/packs/p/memories?category=c", None);
    assert_eq!(list["total"], 3, "{list}");
    let listed = list["items"].as_array().unwrap();
    assert!(listed.iter().any(|m| m["content"] == "Likes oolong tea, hot."), "the hand edit: {list}");
    assert!(listed.iter().any(|m| m["summary"] == "reads at night"), "the other process's: {list}");
    assert_eq!(history(&tea), [by_hand.clone(), corrected.clone(), added.clone()]);

    // The person takes both back: the history and the list follow.
    git(&dir, &["reset", "-q", "--hard", "HEAD~2"]);
    let (_, list) = ui.api("GET", "/api/packs/p/memories?category=c", None);
    assert_eq!(list["total"], 2, "{list}");
    assert!(list.to_string().contains("Likes oolong tea now."), "{list}");
    assert_eq!(history(&tea), [corrected.clone(), added.clone()]);
    drop(ui);

    // The index kept in .git/ serves the next launch; a history it no longer matches, or a
    // damaged file, is read again.
    let kept = dir.join(".git/engram-entry-history");
    assert!(std::fs::read_to_string(&kept).unwrap().contains(&corrected), "kept between launches");
    let next_history = |ui: &UiServer, id: &str| -> Vec<String> {
        let auth = format!("Bearer {}", ui.token);
        let (status, _, html) =
            ui.request("GET", &format!("/p/p/history?memory={id}"), &[("Authorization", &auth)], "");
        assert_eq!(status, 200, "{html}");
        shown_commits(&html)
    };
    let ui = UiServer::start(&env);
    assert_eq!(next_history(&ui, &tea), [corrected.clone(), added.clone()]);
    drop(ui);
    git(&dir, &["reset", "-q", "--hard", "HEAD~1"]);
    let ui = UiServer::start(&env);
    assert_eq!(next_history(&ui, &tea), std::slice::from_ref(&added), "the correction is gone");
    drop(ui);
    std::fs::write(&kept, "not an index\n").unwrap();
    let ui = UiServer::start(&env);
    assert_eq!(next_history(&ui, &tea), std::slice::from_ref(&added), "rebuilt");
}

/// True when `bytes` hold `text`.
fn holds(bytes: &[u8], text: &str) -> bool {
    bytes.windows(text.len()).any(|w| w == text.as_bytes())
}

/// Waits (bounded) until `file` exists and contains `text`: the page writes its kept files
/// after it answers.
fn wait_for_text(file: &std::path::Path, text: &str) -> Vec<u8> {
    for _ in 0..500 {
        if let Ok(kept) = std::fs::read(file)
            && holds(&kept, text)
        {
            return kept;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("{} never held {text:?}", file.display());
}

#[test]
fn the_kept_memory_files_never_hide_a_change_by_another_process_or_by_git() {
    let env = TestEnv::new();
    env.init("p");
    let dir = env.pack("p");
    let kept = dir.join(".git/engram-memory-files");
    capture_elsewhere(&env, "c", "likes tea", "Likes green tea.");
    capture_elsewhere(&env, "c", "drinks coffee", "Drinks coffee.");
    let ui = UiServer::start(&env);
    let (_, list) = ui.api("GET", "/api/packs/p/memories", None);
    assert_eq!(list["total"], 2, "{list}");
    wait_for_text(&kept, "Drinks coffee.");
    drop(ui);

    // While no page runs: a person edits a memory and commits with git, another process
    // captures one. The kept file still holds the old texts.
    let path = dir.join("memory/c.md");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("Likes green tea.", "Likes oolong tea.")).unwrap();
    git(&dir, &["commit", "-qam", "by hand"]);
    capture_elsewhere(&env, "c", "reads at night", "Reads at night.");
    assert!(holds(&std::fs::read(&kept).unwrap(), "Likes green tea."));
    let ui = UiServer::start(&env);
    let (_, list) = ui.api("GET", "/api/packs/p/memories", None);
    assert_eq!(list["total"], 3, "{list}");
    let contents: Vec<&str> =
        list["items"].as_array().unwrap().iter().filter_map(|m| m["content"].as_str()).collect();
    assert_eq!(contents, ["Reads at night.", "Drinks coffee.", "Likes oolong tea."], "{list}");
    wait_for_text(&kept, "Likes oolong tea.");
    drop(ui);

    // The person takes it back with git; then the kept file is damaged: still the pack's list.
    git(&dir, &["reset", "-q", "--hard", "HEAD~2"]);
    let ui = UiServer::start(&env);
    let (_, list) = ui.api("GET", "/api/packs/p/memories", None);
    assert_eq!(list["total"], 2, "{list}");
    assert!(list.to_string().contains("Likes green tea.") && !list.to_string().contains("oolong"), "{list}");
    let text = wait_for_text(&kept, "Likes green tea.");
    drop(ui);

    // The kept file is what a launch reads for the files whose blobs it names: a text planted
    // in it (the pack unchanged; as long, so the file's offsets hold) shows, which proves the
    // launch did not read the pack's files.
    let (from, to) = (b"Drinks coffee.", b"Drinks cocoas.");
    let at = text.windows(from.len()).position(|w| w == from).expect("the text is kept");
    let mut planted = text.clone();
    planted[at..at + to.len()].copy_from_slice(to);
    std::fs::write(&kept, &planted).unwrap();
    let ui = UiServer::start(&env);
    let (_, list) = ui.api("GET", "/api/packs/p/memories", None);
    assert!(list.to_string().contains("Drinks cocoas."), "read from the kept file: {list}");
    drop(ui);
    // A damaged file, a file cut short and one of another version are as none.
    let damaged: [&[u8]; 3] = [
        b"engram memory-files 2\nb\xff",
        &planted[..planted.len() - 3],
        b"engram memory-files 1\n{\"index\": [[\"0\", 5]]}",
    ];
    for bytes in damaged {
        std::fs::write(&kept, bytes).unwrap();
        let ui = UiServer::start(&env);
        let (_, list) = ui.api("GET", "/api/packs/p/memories", None);
        assert_eq!(list["total"], 2, "{list}");
        assert!(list.to_string().contains("Drinks coffee."), "{list}");
    }
}

/// `/p/<pack>/activity` draws the last 90 days of commits as an SVG chart, stacked by client,
/// and lists who wrote what: the page (`web-ui`), an MCP client, and a person's git.
#[test]
fn the_activity_page_charts_commits_by_client_and_lists_the_writers() {
    let env = TestEnv::with_real_clock();
    env.init("p");
    capture_elsewhere(&env, "facts", "by an agent", "an agent wrote this");
    let pack = env.pack("p");
    let agent = git(&pack, &["log", "-1", "--format=%(trailers:key=Engram-Client,valueonly)"]);
    std::fs::write(pack.join("knowledge/by-hand.md"), "# By hand\n").expect("write");
    git(&pack, &["add", "-A"]);
    git(&pack, &["commit", "-qm", "a note by hand"]);
    let ui = UiServer::start(&env);
    let (status, _) = ui.api(
        "POST",
        "/api/packs/p/memories",
        Some(json!({"category": "facts", "summary": "from the page", "content": "typed on the page"})),
    );
    assert_eq!(status, 201);
    let auth = format!("Bearer {}", ui.token);
    let (status, head, body) = ui.request("GET", "/p/p/activity", &[("Authorization", &auth)], "");
    assert_eq!(status, 200, "{head}");
    assert!(body.contains("<svg id=\"activity-chart\""), "{body}");
    assert!(body.matches("<rect class=\"bar\"").count() >= 3, "three clients today: {body}");
    let table = body.split("<table id=\"writers\">").nth(1).expect("writers table");
    for who in ["web-ui", "git", agent.trim()] {
        assert!(table.contains(&format!("</span> {who}</td>")), "{who} in {table}");
    }
    assert!(server_time(&head).is_some(), "{head}");
}

#[test]
fn deleting_several_memories_is_one_commit_or_none() {
    let env = TestEnv::new();
    env.init("p");
    let ui = UiServer::start(&env);
    let dir = env.pack("p");
    for (c, s) in [("a", "one"), ("a", "two"), ("b", "three")] {
        let (status, v) = ui.api(
            "POST",
            "/api/packs/p/memories",
            Some(json!({"category": c, "summary": s, "content": format!("Thing {s}.")})),
        );
        assert_eq!(status, 201, "{v}");
    }
    let (_, list) = ui.api("GET", "/api/packs/p/memories", None);
    let id = |s: &str| -> String {
        list["items"].as_array().unwrap().iter().find(|i| i["summary"] == s).unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let head = list["commit"].as_str().unwrap().to_owned();
    let auth = format!("Bearer {}", ui.token);
    let headers = [("Authorization", auth.as_str()), ("Content-Type", "application/x-www-form-urlencoded")];
    let n = commit_count(&dir);

    // Nothing ticked: refused, nothing written.
    let (status, _, _) = ui.request("POST", "/p/p/memory/delete", &headers, &format!("base={head}"));
    assert_eq!(status, 400);
    // One of them changed since the page's `base`: none is deleted (409).
    let (status, v) = ui.api(
        "PATCH",
        &format!("/api/packs/p/memories/{}", id("three")),
        Some(json!({"base": head, "summary": "three", "content": "Thing three, changed."})),
    );
    assert_eq!(status, 200, "{v}");
    let body = format!("base={head}&id={}&id={}", id("one"), id("three"));
    let (status, _, page) = ui.request("POST", "/p/p/memory/delete", &headers, &body);
    assert_eq!(status, 409, "{page}");
    assert_eq!(commit_count(&dir), n + 1, "only the correction");

    // From a fresh page: both in one commit; the other entry of their category stays.
    let head = git(&dir, &["rev-parse", "HEAD"]).trim().to_owned();
    let body = format!("base={head}&id={}&id={}&id={}", id("one"), id("three"), id("one"));
    let (status, head_text, _) = ui.request("POST", "/p/p/memory/delete", &headers, &body);
    assert_eq!(status, 303, "{head_text}");
    assert_eq!(commit_count(&dir), n + 2, "one commit for both");
    let msg = last_message(&dir);
    assert!(msg.starts_with("delete: 2 memories") && msg.contains("Engram-Tool: delete_memory"), "{msg}");
    let (_, after) = ui.api("GET", "/api/packs/p/memories", None);
    let left: Vec<&str> =
        after["items"].as_array().unwrap().iter().filter_map(|i| i["summary"].as_str()).collect();
    assert_eq!(left, ["two"], "{after}");
    assert_fsck(&dir);
}

#[test]
fn a_merge_of_duplicates_from_a_stale_page_writes_nothing_and_a_fresh_one_is_one_commit() {
    let env = TestEnv::new();
    env.init("p");
    let ui = UiServer::start(&env);
    let dir = env.pack("p");
    let mut ids = Vec::new();
    for (summary, content) in
        [("green tea", "Likes green tea."), ("Green tea", "Green tea, no sugar."), ("cake", "Cake.")]
    {
        let (status, v) = ui.api(
            "POST",
            "/api/packs/p/memories",
            Some(json!({"category": "c", "summary": summary, "content": content})),
        );
        assert_eq!(status, 201, "{v}");
        ids.push(v["id"].as_str().expect("an id").to_owned());
    }
    let auth = format!("Bearer {}", ui.token);
    let headers = [("Authorization", auth.as_str()), ("Content-Type", "application/x-www-form-urlencoded")];
    let form = |base: &str, ids: &[&str]| -> String {
        let mut pairs =
            vec![format!("base={base}"), "summary=green+tea".into(), "content=Green+tea,+no+sugar.".into()];
        pairs.extend(ids.iter().map(|id| format!("id={id}")));
        pairs.join("&")
    };
    let old = git(&dir, &["rev-parse", "HEAD"]).trim().to_owned();
    let (status, _) = ui.api(
        "PATCH",
        &format!("/api/packs/p/memories/{}", ids[1]),
        Some(json!({"base": old, "summary": "Green tea", "content": "Green tea, with honey."})),
    );
    assert_eq!(status, 200);
    let n = commit_count(&dir);

    // One of the two changed since the page was read: 409, nothing written.
    let (status, _, page) =
        ui.request("POST", "/p/p/memory/merge", &headers, &form(&old, &[&ids[0], &ids[1]]));
    assert_eq!(status, 409, "{page}");
    assert!(page.contains("with honey"), "the entry as it is now: {page}");
    // One memory is not a merge.
    let head = git(&dir, &["rev-parse", "HEAD"]).trim().to_owned();
    let (status, _, page) = ui.request("POST", "/p/p/memory/merge", &headers, &form(&head, &[&ids[0]]));
    assert_eq!(status, 400, "{page}");
    assert_eq!(commit_count(&dir), n, "nothing written");

    // From the page as it is: one commit, the third entry kept.
    let (status, _, _) = ui.request("POST", "/p/p/memory/merge", &headers, &form(&head, &[&ids[0], &ids[1]]));
    assert_eq!(status, 303);
    assert_eq!(commit_count(&dir), n + 1, "one commit");
    let msg = last_message(&dir);
    assert!(msg.starts_with("consolidate: c — 2 memories → green tea"), "{msg}");
    assert!(
        msg.contains("Engram-Tool: consolidate_memory") && msg.contains("Engram-Client: web-ui"),
        "{msg}"
    );
    let (_, list) = ui.api("GET", "/api/packs/p/memories", None);
    let left: Vec<&str> =
        list["items"].as_array().into_iter().flatten().filter_map(|i| i["content"].as_str()).collect();
    assert_eq!(left, ["Green tea, no sugar.", "Cake."], "{list}");
    assert_fsck(&dir);
}
