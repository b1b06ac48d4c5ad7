//! A small W3C WebDriver client for the browser tests: Debian's `chromium` driven by
//! `chromium-driver`, over JSON/HTTP with ureq (already a dependency: a WebDriver crate would
//! bring an async HTTP stack and more for the dozen commands used here).
//!
//! [`Browser::start`] answers `None` when chromium or chromedriver is not installed, and the
//! tests skip with a message (CI installs both, so they run there).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// The W3C key of an element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";
/// How long [`Browser::find`] waits for an element to appear.
const FIND_WAIT: Duration = Duration::from_secs(10);

/// A headless chromium session, ended (and its driver killed) on drop.
pub struct Browser {
    driver: Child,
    agent: ureq::Agent,
    /// `http://127.0.0.1:PORT/session/ID`.
    session: String,
    _profile: tempfile::TempDir,
}

/// Polls `f` until it answers `Some`, for at most `limit` (`None` then).
pub fn poll<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if start.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Polls `f` until it answers `Some`, for at most `limit` (panics then).
pub fn wait_for<T>(limit: Duration, what: &str, f: impl FnMut() -> Option<T>) -> T {
    poll(limit, f).unwrap_or_else(|| panic!("timed out after {limit:?} waiting for {what}"))
}

impl Browser {
    /// Starts chromedriver and a headless chromium session; `None` (with a message) when either
    /// is not installed.
    pub fn start() -> Option<Self> {
        if !Path::new(CHROMIUM).exists() || !Path::new(CHROMEDRIVER).exists() {
            eprintln!(
                "SKIP: {CHROMIUM} or {CHROMEDRIVER} is missing (apt-get install chromium chromium-driver); the browser test did not run"
            );
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into();
        let base = format!("http://127.0.0.1:{port}");
        let profile = tempfile::tempdir().expect("profile dir");
        let mut b = Self { driver, agent, session: String::new(), _profile: profile };
        wait_for(Duration::from_secs(30), "chromedriver to listen", || {
            let res = b.agent.get(format!("{base}/status")).call().ok()?;
            let v = read_json(res);
            v["value"]["ready"].as_bool().filter(|r| *r)
        });
        let args = vec![
            "--headless".to_owned(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-quic".into(),
            "--no-first-run".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--disable-dev-shm-usage".into(),
            "--window-size=1100,900".into(),
            format!("--user-data-dir={}", b._profile.path().display()),
        ];
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "unhandledPromptBehavior": "ignore",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": args}
        }}});
        let v = b.send("POST", &format!("{base}/session"), Some(caps));
        let id = v["value"]["sessionId"].as_str().unwrap_or_else(|| panic!("no session: {v}")).to_owned();
        b.session = format!("{base}/session/{id}");
        Some(b)
    }

    fn send(&self, method: &str, url: &str, body: Option<Value>) -> Value {
        let res = match (method, body) {
            ("GET", _) => self.agent.get(url).call(),
            ("DELETE", _) => self.agent.delete(url).call(),
            (_, body) => self
                .agent
                .post(url)
                .header("Content-Type", "application/json")
                .send(body.unwrap_or_else(|| json!({})).to_string()),
        };
        read_json(res.unwrap_or_else(|e| panic!("webdriver {method} {url}: {e}")))
    }

    /// A command of this session; panics on a WebDriver error.
    fn cmd(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let v = self.send(method, &format!("{}{path}", self.session), body);
        if v["value"]["error"].is_string() {
            panic!("webdriver {method} {path}: {}", v["value"]);
        }
        v["value"].clone()
    }

    /// Opens an address and waits for the page to load.
    pub fn goto(&self, url: &str) {
        self.cmd("POST", "/url", Some(json!({ "url": url })));
    }

    /// Resizes the window (headless: the page's viewport is as wide as the window).
    pub fn set_size(&self, width: u32, height: u32) {
        self.cmd("POST", "/window/rect", Some(json!({"width": width, "height": height})));
    }

    /// Runs a script and answers its value.
    pub fn eval(&self, script: &str) -> Value {
        self.cmd("POST", "/execute/sync", Some(json!({"script": script, "args": []})))
    }

    /// The address shown now.
    pub fn url(&self) -> String {
        self.cmd("GET", "/url", None).as_str().unwrap_or_default().to_owned()
    }

    /// The elements matching a CSS selector.
    pub fn find_all(&self, css: &str) -> Vec<String> {
        let v = self.cmd("POST", "/elements", Some(json!({"using": "css selector", "value": css})));
        v.as_array().into_iter().flatten().filter_map(|e| e[ELEMENT].as_str().map(str::to_owned)).collect()
    }

    /// The first element matching a CSS selector, waiting up to [`FIND_WAIT`] for it to appear
    /// (a click that navigates returns before the next page is there); panics when none does.
    pub fn find(&self, css: &str) -> String {
        poll(FIND_WAIT, || self.find_all(css).into_iter().next()).unwrap_or_else(|| {
            let v = self.cmd("POST", "/elements", Some(json!({"using": "css selector", "value": css})));
            panic!("no element {css} on {}: {v}; page: {}", self.url(), self.cmd("GET", "/source", None))
        })
    }

    /// An element's visible text.
    pub fn text(&self, el: &str) -> String {
        self.cmd("GET", &format!("/element/{el}/text"), None).as_str().unwrap_or_default().to_owned()
    }

    /// Clicks an element.
    pub fn click(&self, el: &str) {
        self.cmd("POST", &format!("/element/{el}/click"), Some(json!({})));
    }

    /// Clicks a form's submit button and waits, up to `limit`, for the page the post answers
    /// with: a new document (the one holding the button has gone) at an address with `done=`.
    /// Answers that page's text. Waiting for a new document matters: the page before may
    /// already show an earlier post's `done=`, and reading it while it unloads fails.
    pub fn submit(&self, button: &str, limit: Duration) -> String {
        let before = self.find("body");
        self.click(button);
        let answered = poll(limit, || (self.is_gone(&before) && self.url().contains("done=")).then_some(()));
        if answered.is_none() {
            panic!("the form post did not finish in {limit:?}: {}: {}", self.url(), self.body_text());
        }
        self.find("#status");
        self.body_text()
    }

    /// Whether an element's document has gone (the reference is stale).
    fn is_gone(&self, el: &str) -> bool {
        let v = self.send("GET", &format!("{}/element/{el}/name", self.session), None);
        v["value"]["error"].as_str().is_some_and(|e| e == "stale element reference" || e == "no such element")
    }

    /// Replaces the text of an input or text area.
    pub fn fill(&self, el: &str, text: &str) {
        self.cmd("POST", &format!("/element/{el}/clear"), Some(json!({})));
        self.cmd("POST", &format!("/element/{el}/value"), Some(json!({ "text": text })));
    }

    /// Runs a script with an element as `arguments[0]` and answers its value.
    pub fn eval_on(&self, el: &str, script: &str) -> Value {
        self.cmd("POST", "/execute/sync", Some(json!({"script": script, "args": [{ ELEMENT: el }]})))
    }

    /// The text of the whole page.
    pub fn body_text(&self) -> String {
        self.text(&self.find("body"))
    }

    /// The text of an open alert/confirm dialog, if one is open.
    pub fn alert_text(&self) -> Option<String> {
        let v = self.send("GET", &format!("{}/alert/text", self.session), None);
        v["value"].as_str().map(str::to_owned)
    }

    /// A PNG of the window.
    pub fn screenshot(&self, path: &Path) {
        let v = self.cmd("GET", "/screenshot", None);
        let png = base64_decode(v.as_str().unwrap_or_default());
        std::fs::write(path, png).expect("write screenshot");
    }
}

fn read_json(mut res: ureq::http::Response<ureq::Body>) -> Value {
    let text = res.body_mut().with_config().limit(64 << 20).read_to_string().unwrap_or_default();
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// Standard base64 (the screenshot's encoding).
fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for v in s.bytes().filter_map(val) {
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self.agent.delete(&self.session).call();
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// The origin (`http://host:port`) of an address: where the page lives after `engram ui`'s
/// redirect to its own host name.
pub fn origin(url: &str) -> String {
    let rest = url.strip_prefix("http://").unwrap_or(url);
    format!("http://{}", rest.split('/').next().unwrap_or_default())
}
