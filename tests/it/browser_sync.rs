//! The sync page in a real browser (headless chromium over WebDriver, see `webdriver.rs`): two
//! devices share a bare repository, change the same memories and the same file while offline,
//! and sync; the device that merged resolves each conflict from `/sync`, one commit each, through
//! the memory operations; a conflict already resolved answers 409; the page fits a phone.

use std::path::Path;
use std::time::Duration;

use serde_json::json;

use crate::browser_pages::{open, runtime};
use crate::common::*;
use crate::sync::{branch, capture, device, head, run_ok};
use crate::ui::UiServer;
use crate::webdriver::Browser;

const WAIT: Duration = Duration::from_secs(30);

/// Laptop and desktop share the bare repository `bare`: two memories are corrected differently
/// on each, and `knowledge/plan.md` changed on both; the laptop syncs, then the desktop merges.
/// Answers (laptop, desktop): the desktop holds two memory conflicts and one file copy.
pub(crate) fn two_devices_in_conflict(bare: &Path) -> (TestEnv, TestEnv) {
    let (a, b) = (device("laptop"), device("desktop"));
    a.init("coach");
    let out = git_command()
        .args(["init", "--bare", "-q", &format!("--initial-branch={}", branch(&a.pack("coach")))])
        .arg(bare)
        .output()
        .expect("git init --bare");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let url = bare.display().to_string();
    runtime().block_on(async {
        let c = a.client().await;
        ok(&c, "capture_memory", capture("coach", "preferences", "喜欢早上训练", "早上训练")).await;
        ok(&c, "capture_memory", capture("coach", "habits", "每天喝两升水", "喝水")).await;
        ok(
            &c,
            "write_engram_file",
            json!({"name": "coach", "path": "knowledge/plan.md", "content": "# Plan\nline 1\nline 2\n"}),
        )
        .await;
    });
    run_ok(&a, &["remote", "add", "coach", &url]);
    run_ok(&a, &["sync", "coach"]);
    run_ok(&b, &["install", &url]);
    let edit = |env: &TestEnv, training: &str, water: &str, plan: &str| {
        runtime().block_on(async {
            let c = env.client().await;
            ok(&c, "correct_memory", json!({"name": "coach", "category": "preferences", "old_summary": "早上训练", "new_content": format!("喜欢{training}训练"), "new_summary": format!("{training}训练")})).await;
            ok(&c, "correct_memory", json!({"name": "coach", "category": "habits", "old_summary": "喝水", "new_content": format!("每天喝{water}水"), "new_summary": format!("喝{water}水")})).await;
            ok(&c, "write_engram_file", json!({"name": "coach", "path": "knowledge/plan.md", "content": format!("# Plan\nline 1 {plan}\nline 2\n")})).await;
        });
    };
    edit(&a, "清晨六点", "三升", "from the laptop");
    edit(&b, "晚上", "一升", "from the desktop");
    run_ok(&a, &["sync", "coach"]);
    let merged = run_ok(&b, &["sync", "coach"]);
    assert!(merged.contains("memory conflicts: 2"), "{merged}");
    (a, b)
}

/// The conflicts a key names on the page, in order.
fn conflict_keys(b: &Browser) -> Vec<String> {
    b.find_all("article.conflict")
        .iter()
        .map(|e| b.eval_on(e, "return arguments[0].dataset.key;").as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn sync_page_resolves_memory_conflicts_and_file_copies_one_commit_each_in_a_browser() {
    let Some(b) = Browser::start() else { return };
    let remote = tempfile::tempdir().expect("tempdir");
    let bare = remote.path().join("coach.git");
    let (_laptop, mut desktop) = two_devices_in_conflict(&bare);
    let dir = desktop.pack("coach");
    // The page is read three minutes after the sync.
    desktop.now = Some("2026-11-22T10:03:00Z".to_owned());
    // Another pack, never synced, whose remote's address holds a password.
    desktop.init("other");
    run_ok(&desktop, &["remote", "add", "other", "https://bob:hunter2@example.org/other.git"]);
    let ui = UiServer::start(&desktop);
    let base = open(&b, &ui);
    b.goto(&format!("{base}/sync?lang=en"));

    // The status line: the remote, ahead/behind, the last sync as a relative time, the badge.
    let section = b.text(&b.find("section.sync[data-pack=coach]"));
    assert!(section.contains(&bare.display().to_string()), "the remote: {section}");
    assert!(section.contains("0 ahead") && section.contains("0 behind"), "{section}");
    assert!(section.contains("last sync 3 minutes ago"), "{section}");
    let badge = b.find("section.sync[data-pack=coach] .badge.sync-state");
    assert_eq!(b.text(&badge), "conflicts");
    assert!(!section.contains("T10:00:00"), "no raw timestamp in the status line: {section}");
    let other = b.text(&b.find("section.sync[data-pack=other]"));
    assert!(other.contains("example.org/other.git") && !other.contains("hunter2"), "masked: {other}");
    assert_eq!(b.text(&b.find("section.sync[data-pack=other] .badge.sync-state")), "never");
    assert!(!b.body_text().contains("hunter2"));

    // Two memory conflicts, each with both versions side by side.
    let keys = conflict_keys(&b);
    assert_eq!(keys.len(), 2, "{section}");
    let first = b.find(&format!("article.conflict[data-key=\"{}\"]", keys[0]));
    let text = b.text(&first);
    assert!(text.contains("晚上训练") && text.contains("清晨六点训练"), "{text}");
    let (mine, theirs) = (b.find(".versions .version.mine"), b.find(".versions .version.theirs"));
    let top = |e: &str| b.eval_on(e, "return arguments[0].getBoundingClientRect().top;").as_f64();
    assert_eq!(top(&mine), top(&theirs), "side by side on a desktop");

    // Keep mine: exactly one commit, by web-ui; the other version deleted; one conflict left.
    let n = commit_count(&dir);
    let done =
        b.submit(&b.find(&format!("article.conflict[data-key=\"{}\"] button.keep-mine", keys[0])), WAIT);
    assert_eq!(commit_count(&dir), n + 1, "one commit: {done}");
    let msg = git(&dir, &["log", "-1", "--format=%B"]);
    assert!(msg.starts_with("resolve: preferences") && msg.contains("Engram-Client: web-ui"), "{msg}");
    let prefs = desktop.read("coach", "memory/preferences.md");
    assert!(prefs.contains("喜欢晚上训练") && !prefs.contains("清晨六点"), "{prefs}");
    let index = desktop.read("coach", "memory/_index_full.md");
    assert!(index.contains("晚上训练") && !index.contains("清晨六点训练"), "{index}");
    assert_eq!(conflict_keys(&b).len(), 1);

    // The same choice again, from a page that still shows it: 409, said plainly, no commit.
    let auth = format!("Bearer {}", ui.token);
    let (status, _, body) = ui.request(
        "POST",
        "/sync/coach/memory",
        &[("Authorization", &auth), ("Content-Type", "application/x-www-form-urlencoded")],
        &format!("key={}&keep=mine", keys[0]),
    );
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("already resolved"), "{body}");
    assert_eq!(commit_count(&dir), n + 1, "nothing written");

    // Keep both: one commit; both versions stay; the list is empty.
    b.submit(&b.find("article.conflict button.keep-both"), WAIT);
    assert_eq!(commit_count(&dir), n + 2);
    let habits = desktop.read("coach", "memory/habits.md");
    assert!(habits.contains("每天喝一升水") && habits.contains("每天喝三升水"), "{habits}");
    assert!(b.find_all("article.conflict").is_empty(), "{}", b.body_text());
    let conflicts = desktop.read("coach", "memory/_conflicts.md");
    assert!(!conflicts.lines().any(|l| l.starts_with("- [")), "{conflicts}");

    // The file's copy: its diff against the file, then discarded in one commit.
    let copy = b.find("article.copy");
    let path = b.eval_on(&copy, "return arguments[0].dataset.copy;").as_str().unwrap_or_default().to_owned();
    assert_eq!(path, "knowledge/plan.conflict-desktop.md");
    let ins: Vec<String> = b.find_all("article.copy .wdiff ins").iter().map(|e| b.text(e)).collect();
    assert!(ins.iter().any(|w| w.contains("laptop")), "the copy's words: {ins:?}");
    b.submit(&b.find("article.copy button.discard-copy"), WAIT);
    assert_eq!(commit_count(&dir), n + 3);
    assert!(!dir.join(&path).exists(), "the copy is gone");
    assert!(desktop.read("coach", "knowledge/plan.md").contains("from the desktop"));
    assert!(b.find_all("article.copy").is_empty());
    assert_eq!(b.text(&b.find(".badge.sync-state")), "ok", "nothing waits for a person");
    assert_fsck(&dir);
    assert_clean(&dir);

    // The memory tools agree: the pack's status has no open conflict.
    let status = runtime().block_on(async {
        let c = desktop.client_with(&["--tools", "sync"]).await;
        ok(&c, "sync_status", json!({"name": "coach"})).await
    });
    assert!(status.contains("memory conflicts: none") && !status.contains("conflict copies"), "{status}");
}

#[test]
fn sync_page_keeps_theirs_and_a_file_copy_and_fits_a_phone_in_a_browser() {
    let Some(b) = Browser::start() else { return };
    let remote = tempfile::tempdir().expect("tempdir");
    let (laptop, desktop) = two_devices_in_conflict(&remote.path().join("coach.git"));
    let dir = desktop.pack("coach");
    let ui = UiServer::start(&desktop);
    let base = open(&b, &ui);

    // A phone: no sideways scroll in either language; the versions one above the other.
    b.set_size(390, 844);
    for lang in ["en", "zh"] {
        b.goto(&format!("{base}/sync?lang={lang}"));
        b.find("main");
        let fit = b.eval("return [document.documentElement.scrollWidth, window.innerWidth];");
        let (scroll, inner) = (fit[0].as_u64().unwrap_or(u64::MAX), fit[1].as_u64().unwrap_or(0));
        assert!(scroll <= inner, "/sync ({lang}) scrolls sideways on a phone: {scroll} > {inner}");
    }
    let (mine, theirs) = (b.find(".versions .version.mine"), b.find(".versions .version.theirs"));
    let top = |e: &str| b.eval_on(e, "return arguments[0].getBoundingClientRect().top;").as_f64();
    assert!(top(&mine) < top(&theirs), "one above the other on a phone");

    // Keep theirs: this device's version goes.
    b.goto(&format!("{base}/sync?lang=en"));
    let n = commit_count(&dir);
    let first = b.find("article.conflict");
    let text = b.text(&first);
    b.submit(&b.find("article.conflict button.keep-theirs"), WAIT);
    assert_eq!(commit_count(&dir), n + 1);
    let prefs = desktop.read("coach", "memory/preferences.md");
    let habits = desktop.read("coach", "memory/habits.md");
    if text.contains("训练") {
        assert!(prefs.contains("喜欢清晨六点训练") && !prefs.contains("喜欢晚上训练"), "{prefs}");
    } else {
        assert!(habits.contains("每天喝三升水") && !habits.contains("每天喝一升水"), "{habits}");
    }

    // Keep the copy's version: the file takes its text and the copy goes, in one commit.
    b.submit(&b.find("article.copy button.keep-copy"), WAIT);
    assert_eq!(commit_count(&dir), n + 2);
    assert!(desktop.read("coach", "knowledge/plan.md").contains("from the laptop"));
    assert!(!dir.join("knowledge/plan.conflict-desktop.md").exists());

    // Sync now: the resolutions reach the remote; the page says so.
    let text = b.submit(&b.find("section.sync[data-pack=coach] button.sync-now"), WAIT);
    assert!(text.contains("pushed 2 commit(s)"), "{text}");
    assert_eq!(
        git(remote.path().join("coach.git").as_path(), &["rev-parse", &branch(&dir)]).trim(),
        head(&dir)
    );
    assert_fsck(&dir);

    // The other device gets the conflict left; there "mine" is its own version, the remote's in
    // the merge.
    run_ok(&laptop, &["sync", "coach"]);
    let ui = UiServer::start(&laptop);
    let base = open(&b, &ui);
    b.goto(&format!("{base}/sync?lang=en"));
    let left = b.find("article.conflict");
    let mine = b.text(&b.find("article.conflict .version.mine"));
    let theirs = b.text(&b.find("article.conflict .version.theirs"));
    assert!(mine.contains("laptop") && theirs.contains("desktop"), "{}", b.text(&left));
    let (laptops, desktops) = if mine.contains("训练") {
        ("喜欢清晨六点训练", "喜欢晚上训练")
    } else {
        ("每天喝三升水", "每天喝一升水")
    };
    assert!(mine.contains(laptops) && theirs.contains(desktops), "{mine} | {theirs}");
    b.submit(&b.find("article.conflict button.keep-mine"), WAIT);
    let file = if laptops.contains("训练") { "memory/preferences.md" } else { "memory/habits.md" };
    let kept = laptop.read("coach", file);
    assert!(kept.contains(laptops) && !kept.contains(desktops), "{kept}");
    assert!(b.find_all("article.conflict").is_empty());
    assert_fsck(&laptop.pack("coach"));
}
