//! The one publish path: every commit engram makes passes the secret guard and the path
//! checks; reads never commit. (The sync case is in `sync.rs`, beside its git server.)

use std::fs;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;

use crate::common::*;
use crate::engram_tools::make_pack;

fn fake_aws() -> String {
    ["AKIA", "Q3EXAMPLEKEY7Z2W"].concat()
}

fn fake_github() -> String {
    ["ghp_", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"].concat()
}

fn capture(name: &str, category: &str, content: &str, summary: &str) -> serde_json::Value {
    json!({"name": name, "category": category, "content": content, "summary": summary})
}

/// A pack folder as a person copies it in: engram's files, no `.git`.
fn copy_without_git(from: &Path, to: &Path) {
    copy_tree(from, to);
    fs::remove_dir_all(to.join(".git")).expect("rm .git");
}

#[tokio::test]
async fn a_copied_folder_with_a_credential_is_not_adopted_and_stays_readable() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let pack = env.pack("coach");
    let token = fake_github();
    fs::write(pack.join("knowledge/token.md"), format!("# CI\n\nci token: {token}\n")).expect("write");
    let c = env.client().await;
    let e = err(&c, "capture_memory", capture("coach", "prefs", "早上训练", "早上训练")).await;
    assert!(e.contains("knowledge/token.md line 3") && e.contains("GitHub token"), "{e}");
    assert!(!e.contains(&token), "the error must mask the secret: {e}");
    assert!(e.contains("not made a repository"), "{e}");
    // Nothing was committed, and no repository was left behind.
    assert!(!pack.join(".git").exists(), "a refused adoption left a repository");
    assert!(!pack.join("memory/prefs.md").exists(), "the refused write reached the working tree");
    // The pack stays readable as it is.
    let load = ok(&c, "load_engram", json!({"name": "coach", "query": ""})).await;
    assert!(load.contains("你是一名耐心的健身教练"), "{load}");
    let read = ok(&c, "read_engram_file", json!({"name": "coach", "path": "knowledge/深蹲.md"})).await;
    assert!(read.contains("膝盖与脚尖同向"), "{read}");
    // Once redacted, the next write adopts the folder.
    fs::write(pack.join("knowledge/token.md"), "# CI\n\nci token: [REDACTED]\n").expect("write");
    ok(&c, "capture_memory", capture("coach", "prefs", "早上训练", "早上训练")).await;
    c.close().await.expect("close");
    let subjects = git(&pack, &["log", "--format=%s"]);
    assert!(subjects.lines().last().is_some_and(|s| s.starts_with("adopt:")), "{subjects}");
    assert_clean(&pack);
    assert_fsck(&pack);
}

#[tokio::test]
async fn reading_a_folder_that_is_not_a_repository_creates_none() {
    // A pack with an entry that expires on 2026-11-23, written at the test clock (11-22)…
    let first = TestEnv::new();
    make_pack(&first, "coach");
    let c = first.client().await;
    ok(&c, "capture_memory", json!({"name": "coach", "category": "status", "content": "近期在恢复期", "summary": "恢复期", "memory_type": "inferred", "expires": "2026-11-23"})).await;
    ok(&c, "capture_memory", capture("coach", "status", "长期目标增肌", "增肌")).await;
    c.close().await.expect("close");
    // …copied by hand (without `.git`) to a device where it is 11-25: the entry has expired.
    let mut env = TestEnv::new();
    env.now = Some("2026-11-25T09:00:00Z".into());
    let pack = env.pack("coach");
    copy_without_git(&first.pack("coach"), &pack);
    let c = env.client_with(&["--tools", "all"]).await;
    assert!(ok(&c, "list_engrams", json!({})).await.contains("coach"));
    ok(&c, "get_engram_info", json!({"name": "coach"})).await;
    let load = ok(&c, "load_engram", json!({"name": "coach", "query": "增肌"})).await;
    assert!(load.contains("增肌") && !load.contains("恢复期"), "expired entries are hidden: {load}");
    ok(&c, "read_engram_file", json!({"name": "coach", "path": "memory/status.md"})).await;
    let found = ok(&c, "search_memory", json!({"query": "增肌", "name": "coach"})).await;
    assert!(found.contains("增肌"), "a folder is searched as it is: {found}");
    ok(&c, "search_engram_knowledge", json!({"name": "coach", "query": "深蹲"})).await;
    ok(&c, "memory_history", json!({"name": "coach"})).await;
    call(&c, "sync_status", json!({"name": "coach"})).await;
    assert!(!pack.join(".git").exists(), "a read created a repository");
    let lint = env.cli(&["lint", "coach"]);
    assert!(lint.status.success(), "{}", String::from_utf8_lossy(&lint.stdout));
    assert!(!pack.join(".git").exists(), "lint created a repository");
    // The first write adopts the folder, then moves the expired entry, then commits itself.
    ok(&c, "capture_memory", capture("coach", "status", "新的一周", "新的一周")).await;
    c.close().await.expect("close");
    let subjects = git(&pack, &["log", "--format=%s"]);
    let subjects: Vec<&str> = subjects.lines().collect();
    assert_eq!(subjects.len(), 3, "{subjects:?}");
    assert!(subjects[2].starts_with("adopt:"), "{subjects:?}");
    assert!(subjects[1].starts_with("expire: 1 entries"), "{subjects:?}");
    assert!(subjects[0].starts_with("capture: status"), "{subjects:?}");
    assert!(env.read("coach", "memory/status-expired.md").contains("近期在恢复期"));
    assert_clean(&pack);
    assert_fsck(&pack);
}

#[tokio::test]
async fn a_load_never_commits_even_when_entries_expired() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let c = env.client().await;
    ok(&c, "capture_memory", json!({"name": "coach", "category": "status", "content": "近期在恢复期", "summary": "恢复期", "memory_type": "inferred", "expires": "2026-11-23"})).await;
    ok(&c, "capture_memory", capture("coach", "status", "长期目标增肌", "增肌")).await;
    c.close().await.expect("close");
    let pack = env.pack("coach");
    let head = git(&pack, &["rev-parse", "HEAD"]);
    // Two days later: loads hide the expired entry and write nothing (so they work on a full disk).
    let mut later = TestEnv::new();
    later.packs = env.packs.clone();
    later.now = Some("2026-11-25T09:00:00Z".into());
    let c = later.client().await;
    for _ in 0..3 {
        let load = ok(&c, "load_engram", json!({"name": "coach", "query": ""})).await;
        assert!(!load.contains("恢复期") && load.contains("增肌"), "{load}");
    }
    c.close().await.expect("close");
    assert_eq!(git(&pack, &["rev-parse", "HEAD"]), head, "a load committed");
    assert!(!pack.join("memory/status-expired.md").exists());
    assert_clean(&pack);
}

#[tokio::test]
async fn the_memory_folder_is_reserved_in_any_case() {
    let env = TestEnv::new();
    env.init("coach");
    let pack = env.pack("coach");
    let c = env.client().await;
    let before = commit_count(&pack);
    for path in ["memory/x.md", "Memory/x.md", "MEMORY/_index.md", "mEmOrY/sub/x.md"] {
        let e = err(&c, "write_engram_file", json!({"name": "coach", "path": path, "content": "x"})).await;
        assert!(e.contains("memory/"), "{path}: {e}");
    }
    assert_eq!(commit_count(&pack), before, "a refused write committed");
    assert!(!pack.join("Memory").exists() && !pack.join("MEMORY").exists());
    // Other folders whose name merely starts with memory are fine.
    ok(&c, "write_engram_file", json!({"name": "coach", "path": "memories/x.md", "content": "x"})).await;
    c.close().await.expect("close");
}

/// One `tools/call` over stdio from a client that names itself `client_name`.
fn call_as_client(env: &TestEnv, client_name: &str, tool: &str, args: serde_json::Value) -> String {
    let mut child = Command::new(bin())
        .args(["serve", "--packs-dir"])
        .arg(&env.packs)
        .env("HOME", env.dir.path())
        .env("ENGRAM_NOW", NOW)
        .env_remove("ENGRAM_PACKS_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn engram serve");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {},
        "clientInfo": {"name": client_name, "version": "1"}}});
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": tool, "arguments": args}});
    writeln!(stdin, "{init}").expect("send");
    let mut answer = String::new();
    for line in lines.by_ref() {
        let line = line.expect("read");
        if line.contains("\"id\":1") {
            writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
                .expect("send");
            writeln!(stdin, "{call}").expect("send");
        } else if line.contains("\"id\":2") {
            answer = line;
            break;
        }
    }
    drop(stdin);
    child.wait().expect("wait");
    answer
}

#[tokio::test]
async fn credentials_in_file_names_are_refused_and_in_client_names_masked() {
    let env = TestEnv::new();
    env.init("coach");
    let pack = env.pack("coach");
    let aws = fake_aws();
    let c = env.client().await;
    let before = commit_count(&pack);
    let path = format!("knowledge/{aws}.md");
    let e = err(&c, "write_engram_file", json!({"name": "coach", "path": path, "content": "hello"})).await;
    assert!(e.contains("AWS access key id") && e.contains("file name"), "{e}");
    assert!(!e.contains(&aws), "the error must mask the secret: {e}");
    let e = err(
        &c,
        "add_knowledge",
        json!({"name": "coach", "filename": aws, "content": "hello", "summary": "s"}),
    )
    .await;
    assert!(!e.contains(&aws), "{e}");
    c.close().await.expect("close");
    assert_eq!(commit_count(&pack), before, "a refused write committed");
    assert!(!pack.join(&path).exists());
    // A file named like a key made by hand is refused too, when engram would commit it.
    fs::write(pack.join(&path), "by hand\n").expect("write");
    let c = env.client().await;
    let e = err(&c, "capture_memory", capture("coach", "prefs", "早上训练", "早上训练")).await;
    assert!(e.contains("file name") && !e.contains(&aws), "{e}");
    c.close().await.expect("close");
    fs::remove_file(pack.join(&path)).expect("rm");
    // A client named like a token: the write lands, the trailer is masked.
    let token = fake_github();
    let answer =
        call_as_client(&env, &token, "capture_memory", capture("coach", "prefs", "早上训练", "早上训练"));
    assert!(answer.contains("已记录"), "{answer}");
    let message = git(&pack, &["log", "-1", "--format=%B"]);
    assert!(message.contains("Engram-Client: "), "{message}");
    assert!(!message.contains(&token), "the client name must be masked: {message}");
    let all = git(&pack, &["log", "--all", "--format=%B"]);
    assert!(!all.contains(&token) && !all.contains(&aws), "{all}");
    assert_fsck(&pack);
}
