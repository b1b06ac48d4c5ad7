//! The secret guard: every write tool refuses credentials; ordinary packs pass.

use std::fs;
use std::path::Path;

use serde_json::json;

use crate::common::*;
use crate::engram_tools::make_pack;

fn fake_aws() -> String {
    ["AKIA", "Q3EXAMPLEKEY7Z2W"].concat()
}

fn fake_github() -> String {
    ["ghp_", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"].concat()
}

fn scan_tree(dir: &Path, hits: &mut Vec<String>) {
    for e in fs::read_dir(dir).expect("read_dir").flatten() {
        let p = e.path();
        if p.file_name().is_some_and(|n| n == ".git") {
            continue;
        }
        if p.is_dir() {
            scan_tree(&p, hits);
        } else if let Ok(text) = fs::read_to_string(&p) {
            for f in engram::secrets::scan(&text) {
                hits.push(format!("{}: {f}", p.display()));
            }
        }
    }
}

#[test]
fn example_packs_raise_no_false_alarm() {
    let Some(shared) = shared_dir() else {
        eprintln!("skipping: shared example packs are absent");
        return;
    };
    let examples = shared.join("engram-packs/examples");
    if !examples.is_dir() {
        eprintln!("skipping: {} is absent", examples.display());
        return;
    }
    let mut hits = Vec::new();
    scan_tree(&examples, &mut hits);
    assert!(hits.is_empty(), "false alarms on the example packs:\n{}", hits.join("\n"));
}

#[tokio::test]
async fn every_write_tool_refuses_a_secret_and_commits_nothing() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let c = env.client().await;
    ok(
        &c,
        "capture_memory",
        json!({"name": "coach", "category": "prefs", "content": "早上训练", "summary": "早上训练"}),
    )
    .await;
    let dir = env.pack("coach");
    let before = commit_count(&dir);
    let aws = fake_aws();
    let e = err(
        &c,
        "capture_memory",
        json!({"name": "coach", "category": "prefs", "content": format!("deploy key {aws}"), "summary": "deploy"}),
    )
    .await;
    assert!(e.contains("AWS access key id") && e.contains("prefs.md") && e.contains("line"), "{e}");
    assert!(!e.contains(&aws), "the error must mask the secret: {e}");
    assert!(e.contains("[REDACTED]"), "the error says how to store a redacted version: {e}");
    let gh = fake_github();
    let e = err(
        &c,
        "write_engram_file",
        json!({"name": "coach", "path": "notes/ci.md", "content": format!("token\n{gh}\n")}),
    )
    .await;
    assert!(e.contains("GitHub token") && e.contains("notes/ci.md line 2"), "{e}");
    let e = err(
        &c,
        "add_knowledge",
        json!({"name": "coach", "filename": "db", "content": "连接数据库：\npassword=Tr0ub4dor&3\n", "summary": "db"}),
    )
    .await;
    assert!(e.contains("password assignment") && e.contains("knowledge/db.md line 2"), "{e}");
    let e = err(&c, "correct_memory", json!({"name": "coach", "category": "prefs", "old_summary": "早上训练", "new_content": "-----BEGIN RSA PRIVATE KEY-----", "new_summary": "k"})).await;
    assert!(e.contains("private key"), "{e}");
    assert_eq!(commit_count(&dir), before, "a refused write commits nothing");
    assert_clean(&dir);
    // The redacted version goes through.
    ok(&c, "capture_memory", json!({"name": "coach", "category": "prefs", "content": "deploy key [REDACTED] (in the vault)", "summary": "deploy"})).await;
    // Ordinary prose, Chinese, commit ids and UUIDs pass.
    ok(
        &c,
        "capture_memory",
        json!({"name": "coach", "category": "prefs", "summary": "ids", "content": "修复在 commit 2fef455a1b2c3d4e5f60718293a4b5c6d7e8f901，会话 123e4567-e89b-12d3-a456-426614174000。密码至少 8 位。"}),
    )
    .await;
    assert_eq!(commit_count(&dir), before + 2);
}

#[tokio::test]
async fn hand_edits_with_a_secret_are_not_auto_committed() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let c = env.client().await;
    ok(
        &c,
        "capture_memory",
        json!({"name": "coach", "category": "prefs", "content": "早上训练", "summary": "早上训练"}),
    )
    .await;
    let dir = env.pack("coach");
    let before = commit_count(&dir);
    fs::write(dir.join("knowledge/keys.md"), format!("aws {}\n", fake_aws())).expect("write");
    let e = err(
        &c,
        "capture_memory",
        json!({"name": "coach", "category": "prefs", "content": "晚上拉伸", "summary": "拉伸"}),
    )
    .await;
    assert!(e.contains("hand edits") && e.contains("knowledge/keys.md line 1"), "{e}");
    assert_eq!(commit_count(&dir), before);
    fs::write(dir.join("knowledge/keys.md"), "aws [REDACTED]\n").expect("write");
    ok(
        &c,
        "capture_memory",
        json!({"name": "coach", "category": "prefs", "content": "晚上拉伸", "summary": "拉伸"}),
    )
    .await;
    assert_eq!(commit_count(&dir), before + 2, "the hand edit and the capture");
}
