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

/// The graph, notes and personal toolsets go through the same guard: a credential in an
/// observation, a note or a profile value is refused, named (masked) in the error, and nothing
/// is committed.
#[tokio::test]
async fn graph_notes_and_profile_refuse_a_secret_and_commit_nothing() {
    let env = TestEnv::new();
    let c = env.client_with(&["--tools", "graph,notes,personal"]).await;
    ok(
        &c,
        "create_entities",
        json!({"entities": [{"name": "张伟", "entityType": "person", "observations": ["喜欢喝咖啡"]}]}),
    )
    .await;
    ok(&c, "store", json!({"content": "周五交周报。", "title": "周报"})).await;
    ok(&c, "update_profile", json!({"key": "city", "value": "上海"})).await;
    let dir = env.pack("personal");
    assert_worktree_matches_head(&dir);
    let before = commit_count(&dir);
    let (aws, gh) = (fake_aws(), fake_github());

    let refusals = [
        (
            "create_entities",
            json!({"entities": [{"name": "deploy", "entityType": "server", "observations": [format!("key {aws}")]}]}),
            "AWS access key id",
            &aws,
        ),
        (
            "add_observations",
            json!({"observations": [{"entityName": "张伟", "contents": [format!("token {gh}")]}]}),
            "GitHub token",
            &gh,
        ),
        ("store", json!({"content": format!("CI token:\n{gh}\n"), "title": "ci"}), "GitHub token", &gh),
        ("update_profile", json!({"key": "aws", "value": format!("id {aws}")}), "AWS access key id", &aws),
    ];
    for (tool, args, found, secret) in refusals {
        let e = err(&c, tool, args).await;
        assert!(e.contains(found), "{tool}: the error names what was found: {e}");
        assert!(!e.contains(secret.as_str()), "{tool}: the error masks the secret: {e}");
        assert_eq!(commit_count(&dir), before, "{tool}: a refused write commits nothing");
        assert_worktree_matches_head(&dir);
    }
    // Nothing of them is visible either.
    let r = call(&c, "open_nodes", json!({"names": ["张伟", "deploy"]})).await;
    assert_eq!(
        r.structured.clone().expect("structured")["entities"],
        json!([{"name": "张伟", "entityType": "person", "observations": ["喜欢喝咖啡"]}])
    );
    let recalled = ok(&c, "recall", json!({"query": "ci"})).await;
    assert!(!recalled.contains(&gh), "{recalled}");
    let profile = ok(&c, "query_profile", json!({"keys": ["aws"]})).await;
    assert!(profile.contains("\"missing\"") && !profile.contains(&aws), "{profile}");
    // No object in the repository holds them.
    let all = git(&dir, &["log", "-p", "--all"]);
    assert!(!all.contains(&aws) && !all.contains(&gh), "a secret reached the history");
    // A redacted version goes through.
    ok(
        &c,
        "add_observations",
        json!({"observations": [{"entityName": "张伟", "contents": ["token [REDACTED]"]}]}),
    )
    .await;
    assert_eq!(commit_count(&dir), before + 1);
    c.close().await.expect("close");
}
