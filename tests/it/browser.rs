//! `engram ui` in a real browser (headless chromium over WebDriver, see `webdriver.rs`):
//! open with the token, see the memories, add, correct, delete and revert — one commit each —,
//! the stale-edit (409) page, memory text that looks like HTML, no token, a cross-site form post.
//!
//! With `ENGRAM_UI_SCREENSHOTS=<dir>` the first test also saves the history page's screenshots
//! (`docs/screenshots/`), in English and Chinese.

use std::io::{Read as _, Write as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::json;

use crate::common::*;
use crate::ui::UiServer;
use crate::webdriver::{Browser, wait_for};

const XSS: &str = "<img src=x onerror=alert(1)>";
const WAIT: Duration = Duration::from_secs(20);

/// The article of the memory whose text contains `summary`.
fn memory_article(b: &Browser, summary: &str) -> Option<String> {
    b.find_all("article.memory").into_iter().find(|a| b.text(a).contains(summary))
}

fn data_id(b: &Browser, article: &str) -> String {
    b.eval_on(article, "return arguments[0].getAttribute('data-id');").as_str().unwrap_or_default().to_owned()
}

#[test]
fn the_page_in_a_browser_adds_corrects_deletes_and_reverts_one_commit_each() {
    let Some(b) = Browser::start() else { return };
    let env = TestEnv::new();
    env.init("p");
    let ui = UiServer::start(&env);
    let dir = env.pack("p");
    let base = format!("http://{}", ui.authority);
    for (summary, content) in [("tea", "The user likes green tea."), (XSS, XSS)] {
        let (status, v) = ui.api(
            "POST",
            "/api/packs/p/memories",
            Some(json!({"category": "prefs", "summary": summary, "content": content, "type": "preference"})),
        );
        assert_eq!(status, 201, "{v}");
    }

    // Without the token: refused.
    b.goto(&format!("{base}/p/p/memory"));
    assert!(b.body_text().contains("401"), "{}", b.body_text());

    // With it: the packs, then the pack's memories.
    b.goto(&ui.url);
    wait_for(WAIT, "the redirect without the token", || (!b.url().contains("token=")).then_some(()));
    let base = crate::webdriver::origin(&b.url());
    b.click(&b.find("a[href=\"/p/p/memory\"]"));
    wait_for(WAIT, "the memory page", || b.url().ends_with("/p/p/memory").then_some(()));
    assert_eq!(b.find_all("article.memory").len(), 2);
    assert!(b.body_text().contains("The user likes green tea."));

    // Text that looks like HTML is text: no image element, no dialog, the text shown as typed.
    assert!(b.find_all("main img").is_empty(), "the memory became markup");
    assert!(b.alert_text().is_none(), "a script ran");
    let xss = memory_article(&b, XSS).expect("the memory is shown as text");
    assert!(b.text(&xss).contains(XSS));

    // Add.
    let n = commit_count(&dir);
    b.click(&b.find("details.add > summary"));
    b.fill(&b.find("#add-category"), "prefs");
    b.fill(&b.find("#add-summary"), "walks");
    b.fill(&b.find("#add-content"), "The user walks to work.");
    let text = b.submit(&b.find("#add button[type=submit]"), WAIT);
    assert!(text.contains("The user walks to work."), "{text}");
    assert_eq!(commit_count(&dir), n + 1, "one commit");
    assert!(git(&dir, &["log", "-1", "--format=%B"]).contains("Engram-Client: web-ui"));

    // Correct.
    let art = memory_article(&b, "walks").expect("the new memory");
    let id = data_id(&b, &art);
    b.click(&b.find(&format!("#m-{id} details.menu > summary")));
    b.fill(&b.find(&format!("#s-{id}")), "cycles");
    b.fill(&b.find(&format!("#c-{id}")), "The user cycles to work.");
    let text = b.submit(&b.find(&format!("#m-{id} button.save")), WAIT);
    assert!(text.contains("The user cycles to work.") && !text.contains("walks to work"), "{text}");
    assert_eq!(commit_count(&dir), n + 2);
    assert!(git(&dir, &["log", "-1", "--format=%B"]).contains("Engram-Tool: correct_memory"));

    // A stale edit: the memory changes (another client) after this page was rendered.
    b.goto(&format!("{base}/p/p/memory"));
    let head = git(&dir, &["rev-parse", "HEAD"]).trim().to_owned();
    let (status, v) = ui.api(
        "PATCH",
        &format!("/api/packs/p/memories/{id}"),
        Some(json!({"base": head, "summary": "drives", "content": "The user drives to work."})),
    );
    assert_eq!(status, 200, "{v}");
    b.click(&b.find(&format!("#m-{id} details.menu > summary")));
    b.fill(&b.find(&format!("#c-{id}")), "The user runs to work.");
    b.click(&b.find(&format!("#m-{id} button.save")));
    b.find("#stale");
    let text = b.body_text();
    assert!(text.contains("The user drives to work."), "the current text is shown: {text}");
    let kept = b.eval_on(&b.find(&format!("#c-{id}")), "return arguments[0].value;");
    assert_eq!(kept, "The user runs to work.", "the person's text is kept");
    assert_eq!(commit_count(&dir), n + 3, "only the other client's commit");

    // Delete, then revert the delete from the history page.
    b.goto(&format!("{base}/p/p/memory"));
    let text = b.submit(&b.find(&format!("#m-{id} button.danger")), WAIT);
    assert!(!text.contains("drives to work"), "{text}");
    assert_eq!(commit_count(&dir), n + 4);
    b.goto(&format!("{base}/p/p/history"));
    let first = b.find("article.commit");
    assert!(b.text(&first).contains("delete: prefs"), "{}", b.text(&first));
    b.submit(&b.find("article.commit button.revert"), WAIT);
    assert_eq!(commit_count(&dir), n + 5);
    assert!(git(&dir, &["log", "-1", "--format=%B"]).contains("Engram-Tool: revert_memory"));
    b.goto(&format!("{base}/p/p/memory"));
    assert!(b.body_text().contains("The user drives to work."), "the memory is back");
    assert_fsck(&dir);
}

/// The history page's screenshots (`docs/screenshots/`), taken when `ENGRAM_UI_SCREENSHOTS=<dir>`
/// (the README's are `browser_screenshots.rs`'s):
/// `ENGRAM_UI_SCREENSHOTS=$PWD/docs/screenshots cargo test --test it -- browser::screenshots`.
#[test]
fn screenshots() {
    let Some(out) = std::env::var_os("ENGRAM_UI_SCREENSHOTS") else { return };
    let Some(b) = Browser::start() else { return };
    let out = std::path::PathBuf::from(out);
    std::fs::create_dir_all(&out).expect("screenshot dir");
    let env = TestEnv::new();
    env.init("coach");
    let ui = UiServer::start(&env);
    let memories = [
        (
            "preferences",
            "preference",
            "prefers green tea",
            "The user prefers green tea in the afternoon, no sugar.",
        ),
        ("preferences", "preference", "喜欢早上跑步", "用户喜欢早上六点跑步，每次五公里。"),
        (
            "projects",
            "decision",
            "use PostgreSQL for the API",
            "We chose PostgreSQL over MySQL for the API: JSONB and better migrations.",
        ),
        ("projects", "fact", "发布日期是 12 月 15 日", "新版本计划在 12 月 15 日发布，发布前一周冻结代码。"),
        (
            "people",
            "fact",
            "Alice leads the mobile team",
            "Alice leads the mobile team since March; ask her about iOS releases.",
        ),
    ];
    for (category, ty, summary, content) in memories {
        let (status, v) = ui.api(
            "POST",
            "/api/packs/coach/memories",
            Some(json!({"category": category, "summary": summary, "content": content, "type": ty})),
        );
        assert_eq!(status, 201, "{v}");
    }
    let (_, list) = ui.api("GET", "/api/packs/coach/memories", None);
    let id = list["items"][4]["id"].as_str().unwrap_or_default().to_owned();
    let head = list["commit"].as_str().unwrap_or_default().to_owned();
    let (status, _) = ui.api(
        "PATCH",
        &format!("/api/packs/coach/memories/{id}"),
        Some(json!({"base": head, "summary": "prefers oolong tea", "content": "The user prefers oolong tea in the afternoon, no sugar."})),
    );
    assert_eq!(status, 200);
    b.goto(&ui.url);
    wait_for(WAIT, "the cookie", || (!b.url().contains("token=")).then_some(()));
    let base = crate::webdriver::origin(&b.url());
    for lang in ["en", "zh"] {
        b.goto(&format!("{base}/p/coach/history?lang={lang}"));
        b.find("main");
        b.screenshot(&out.join(format!("history-{lang}.png")));
    }
}

/// A page on another port of this machine (another origin, the same site) that posts a form
/// to the UI as soon as it loads — the classic cross-site request.
struct Attacker {
    addr: std::net::SocketAddr,
    stop: Arc<AtomicBool>,
}

impl Attacker {
    fn start(target: &str) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let stop = Arc::new(AtomicBool::new(false));
        let page = format!(
            "<!doctype html><form method=post action=\"{target}/p/p/memory\"><input name=category value=c>\
<input name=summary value=intruder><input name=content value=intruder></form><script>document.forms[0].submit()</script>"
        );
        let flag = stop.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if flag.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(mut s) = conn else { continue };
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                    page.len()
                );
            }
        });
        Self { addr, stop }
    }
}

impl Drop for Attacker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = std::net::TcpStream::connect(self.addr);
    }
}

#[test]
fn a_cross_site_form_post_in_the_browser_is_refused_and_commits_nothing() {
    let Some(b) = Browser::start() else { return };
    let env = TestEnv::new();
    env.init("p");
    let ui = UiServer::start(&env);
    let dir = env.pack("p");
    let n = commit_count(&dir);
    // The browser holds the page's cookie (the attacker's page is the same site: cookies go along).
    b.goto(&ui.url);
    wait_for(WAIT, "the cookie", || (!b.url().contains("token=")).then_some(()));
    let target = crate::webdriver::origin(&b.url());
    let attacker = Attacker::start(&target);
    b.goto(&format!("http://{}/", attacker.addr));
    wait_for(WAIT, "the form to reach the page", || b.url().starts_with(&target).then_some(()));
    let text = b.body_text();
    assert!(text.contains("403"), "{text}");
    assert_eq!(commit_count(&dir), n, "nothing was committed");
}
