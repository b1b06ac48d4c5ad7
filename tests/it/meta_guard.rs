//! `meta.json` cannot be broken through engram, and a pack whose `meta.json`
//! was broken some other way (an older engram, a person's `git commit`, a
//! sync) can still be repaired with engram's own undo tools.

use std::fs;
use std::path::Path;

use serde_json::json;

use crate::common::*;

fn head_meta_parses(dir: &Path) -> bool {
    let text = git(dir, &["show", "HEAD:meta.json"]);
    serde_json::from_str::<serde_json::Value>(&text).is_ok_and(|v| v.is_object())
}

/// Commits a broken `meta.json` the way an older engram's `write_engram_file`
/// did (same subject and trailers); returns the commit's short id.
fn commit_broken_meta(dir: &Path) -> String {
    fs::write(dir.join("meta.json"), "x").expect("write");
    git(dir, &["add", "meta.json"]);
    let out = git_command_as("old engram", "old@localhost")
        .arg("-C")
        .arg(dir)
        .args([
            "commit",
            "-q",
            "-m",
            "write: meta.json\n\nEngram-Tool: write_engram_file\nEngram-Client: old-client 0.1",
        ])
        .output()
        .expect("git commit");
    assert!(out.status.success(), "git commit: {}", String::from_utf8_lossy(&out.stderr));
    git(dir, &["rev-parse", "--short=7", "HEAD"]).trim().to_owned()
}

fn doctor(env: &TestEnv, pack: &str) -> (bool, String) {
    let out = env.cli(&["doctor", pack]);
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[tokio::test]
async fn no_tool_write_can_break_meta_json() {
    let env = TestEnv::new();
    env.init("demo");
    let dir = env.pack("demo");
    let c = env.client().await;
    let before = commit_count(&dir);
    for (path, content, mode) in [
        ("meta.json", "x", "overwrite"),
        ("meta.json", "[1, 2]", "overwrite"),
        ("meta.json", "", "overwrite"),
        ("meta.json", "\n}", "append"),
        ("./META.JSON", "x", "overwrite"),
    ] {
        let e = err(
            &c,
            "write_engram_file",
            json!({"name": "demo", "path": path, "content": content, "mode": mode}),
        )
        .await;
        assert!(
            e.contains("meta.json") && e.contains("JSON object") && e.contains("nothing was written"),
            "{e}"
        );
    }
    assert_eq!(commit_count(&dir), before, "nothing was committed");
    assert!(head_meta_parses(&dir));
    assert!(ok(&c, "list_engrams", json!({})).await.contains("- demo:"));
    // A valid object is still accepted.
    ok(
        &c,
        "write_engram_file",
        json!({"name": "demo", "path": "meta.json", "content": "{\"name\": \"demo\", \"description\": \"renamed\"}\n"}),
    )
    .await;
    assert!(ok(&c, "list_engrams", json!({})).await.contains("- demo: renamed"));
    c.close().await.expect("close");
}

#[tokio::test]
async fn a_broken_hand_edit_of_meta_json_is_never_committed() {
    let env = TestEnv::new();
    env.init("demo");
    let dir = env.pack("demo");
    let c = env.client_with(&["--tools", "engram,graph"]).await;
    ok(&c, "capture_memory", json!({"name": "demo", "category": "c", "content": "one", "summary": "one"}))
        .await;
    ok(&c, "create_entities", json!({"entities": [{"name": "A", "entityType": "t", "observations": []}]}))
        .await;
    let before = commit_count(&dir);
    fs::write(dir.join("meta.json"), "{ not json").expect("write");
    // The pack stays listed, with a warning naming the repair.
    let list = ok(&c, "list_engrams", json!({})).await;
    assert!(
        list.contains("⚠ demo: meta.json is not valid JSON") && list.contains("engram doctor demo"),
        "{list}"
    );
    // undo_last finds the pack, and the hand edit is refused, not committed.
    let e = err(&c, "undo_last", json!({"name": "demo"})).await;
    assert!(e.contains("edited by hand") && e.contains("git checkout -- meta.json"), "{e}");
    assert_eq!(commit_count(&dir), before);
    assert!(head_meta_parses(&dir));
    let (healthy, report) = doctor(&env, "demo");
    assert!(
        !healthy && report.contains("uncommitted hand edit") && report.contains("checkout -- meta.json"),
        "{report}"
    );
    // The advice works.
    git(&dir, &["checkout", "--", "meta.json"]);
    ok(
        &c,
        "capture_memory",
        json!({"name": "demo", "category": "c", "content": "after", "summary": "after"}),
    )
    .await;
    assert!(doctor(&env, "demo").0);

    // The graph tools write their pack without looking it up (and commit only the paths
    // they write): the broken hand edit stays out of history there too.
    let personal = env.pack("personal");
    fs::write(personal.join("meta.json"), "[]").expect("write");
    ok(&c, "create_entities", json!({"entities": [{"name": "B", "entityType": "t", "observations": []}]}))
        .await;
    assert!(head_meta_parses(&personal));
    assert!(
        git(&personal, &["status", "--porcelain", "meta.json"]).contains("meta.json"),
        "still uncommitted"
    );
    let e = err(&c, "undo_last", json!({"name": "personal"})).await;
    assert!(e.contains("meta.json is not a JSON object") && e.contains("edited by hand"), "{e}");
    assert!(head_meta_parses(&personal));
    c.close().await.expect("close");
}

#[tokio::test]
async fn a_committed_broken_meta_json_is_undone_by_undo_last_revert_memory_and_engram_undo() {
    let env = TestEnv::new();
    env.init("demo");
    let dir = env.pack("demo");
    let c = env.client().await;
    ok(&c, "capture_memory", json!({"name": "demo", "category": "c", "content": "kept", "summary": "kept"}))
        .await;

    // 1. undo_last.
    let broke = commit_broken_meta(&dir);
    let list = ok(&c, "list_engrams", json!({})).await;
    assert!(
        list.contains("⚠ demo: meta.json is not valid JSON"),
        "the pack stays listed with a warning: {list}"
    );
    let e = err(&c, "load_engram", json!({"name": "demo"})).await;
    assert!(e.contains("meta.json is not valid JSON") && e.contains("engram doctor demo"), "{e}");
    let (healthy, report) = doctor(&env, "demo");
    assert!(!healthy, "{report}");
    assert!(
        report.contains(&format!("broken by commit {broke}"))
            && report.contains(&format!("engram revert demo {broke}"))
            && !report.contains("checkout -- meta.json"),
        "doctor names the commit to revert, not a checkout of the same broken file: {report}"
    );
    let history = ok(&c, "memory_history", json!({"name": "demo"})).await;
    assert!(history.contains("write: meta.json"), "{history}");
    let undone = ok(&c, "undo_last", json!({"name": "demo"})).await;
    assert!(undone.contains(&broke), "{undone}");
    assert!(head_meta_parses(&dir));
    assert!(ok(&c, "list_engrams", json!({})).await.contains("- demo:"));
    assert!(ok(&c, "load_engram", json!({"name": "demo"})).await.contains("kept"));
    assert!(doctor(&env, "demo").0);

    // 2. revert_memory, with the commit doctor names.
    let broke = commit_broken_meta(&dir);
    ok(&c, "revert_memory", json!({"name": "demo", "commit": broke})).await;
    assert!(head_meta_parses(&dir) && doctor(&env, "demo").0);

    // 3. `engram undo` from the shell.
    commit_broken_meta(&dir);
    let out = env.cli(&["undo", "demo"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(head_meta_parses(&dir) && doctor(&env, "demo").0);
    assert!(ok(&c, "load_engram", json!({"name": "demo"})).await.contains("kept"));

    // 4. meta.json deleted by a person's commit: doctor names it, and it can be reverted.
    git(&dir, &["rm", "-q", "meta.json"]);
    git(&dir, &["commit", "-q", "-m", "tidy up"]);
    let gone = git(&dir, &["rev-parse", "--short=7", "HEAD"]).trim().to_owned();
    let (healthy, report) = doctor(&env, "demo");
    assert!(!healthy && report.contains(&format!("engram revert demo {gone}")), "{report}");
    let out = env.cli(&["revert", "demo", &gone]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(head_meta_parses(&dir) && doctor(&env, "demo").0);
    assert_fsck(&dir);
    c.close().await.expect("close");
}
