//! A team server (`serve --http --users-file`): every tool, called with another user's pack
//! names and paths and with the packs directory's own paths, reaches nothing of that user;
//! read-only tokens make no commit, with and without `--propose`.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::common::*;
use crate::http::HttpServer;

const ALICE: &str = "alice-token-0123456789abcdef";
const BOB: &str = "bob-token-0123456789abcdef00";
const CI: &str = "ci-bot-token-0123456789abcdef";
/// Alice's read-only token (a dashboard of hers): her user has a proposal branch.
const ALICE_RO: &str = "alice-ro-token-0123456789abcdef";

const BOB_PROFILE: &str = "BobProfileMarker7q";
const BOB_NOTE: &str = "bob-note-marker-7q";
const BOB_PASSWORD: &str = "hunter2bobpass7q";
const TEAM_PASSWORD: &str = "teampass7q";

fn users_file(env: &TestEnv) -> PathBuf {
    let path = env.dir.path().join("users");
    std::fs::write(
        &path,
        format!("{ALICE} alice\n{BOB} bob\n{CI} ci-bot read-only\n{ALICE_RO} alice read-only\n"),
    )
    .expect("write users");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    path
}

/// Every file under `dir` (`.git` included), path → content hash.
fn tree_hash(dir: &Path) -> BTreeMap<String, u64> {
    use std::hash::{Hash as _, Hasher as _};
    fn walk(d: &Path, root: &Path, out: &mut BTreeMap<String, u64>) {
        let Ok(entries) = std::fs::read_dir(d) else { return };
        for e in entries.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap_or(&p).display().to_string();
            let Ok(meta) = std::fs::symlink_metadata(&p) else { continue };
            if meta.is_dir() {
                walk(&p, root, out);
                continue;
            }
            let mut h = std::collections::hash_map::DefaultHasher::new();
            std::fs::read(&p).unwrap_or_default().hash(&mut h);
            out.insert(rel, h.finish());
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Working-tree files (not `.git`) under `dir`, except under `skip`, that hold `marker`.
fn files_holding(dir: &Path, skip: &Path, marker: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            if p == skip || p.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            let Ok(meta) = std::fs::symlink_metadata(&p) else { continue };
            if meta.is_dir() {
                stack.push(p);
            } else if String::from_utf8_lossy(&std::fs::read(&p).unwrap_or_default()).contains(marker) {
                out.push(p);
            }
        }
    }
    out
}

/// Arguments for a tool whose every text argument is `value` (numbers small, `days` wide).
fn arguments(schema: &Value, value: &str) -> Value {
    let mut args = Map::new();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else { return Value::Object(args) };
    for (name, prop) in props {
        let kind = match prop.get("type") {
            Some(Value::String(t)) => t.clone(),
            Some(Value::Array(ts)) => {
                ts.iter().filter_map(Value::as_str).find(|t| *t != "null").unwrap_or("string").to_owned()
            }
            _ => "string".to_owned(),
        };
        let v = match kind.as_str() {
            "string" => json!(value),
            "integer" | "number" if name == "days" => json!(3650),
            "integer" | "number" => json!(5),
            "boolean" => json!(true),
            "array" => json!([value]),
            _ => continue,
        };
        args.insert(name.clone(), v);
    }
    Value::Object(args)
}

fn leaked(text: &str) -> Option<&'static str> {
    [BOB_PROFILE, BOB_NOTE, BOB_PASSWORD, TEAM_PASSWORD].into_iter().find(|m| text.contains(m))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_with_another_users_names_and_paths_reaches_nothing_of_theirs() {
    let env = TestEnv::new();
    env.init("team");
    // A directory the operator allows, holding a git repository.
    let shared = env.dir.path().join("shared");
    std::fs::create_dir_all(shared.join("repo")).expect("mkdir");
    git(&shared.join("repo"), &["init", "-q"]);
    let users = users_file(&env);
    let (users, shared_s) = (users.display().to_string(), shared.display().to_string());
    let server = HttpServer::start(
        &env,
        "127.0.0.1:0",
        &["--tools", "all", "--users-file", &users, "--allow-path", &shared_s],
        &[],
    )
    .expect("serve");

    // Bob's own records, and a remote with a password on each of his packs.
    let bob = server.client(Some(BOB)).await;
    ok(&bob, "update_profile", json!({"key": "name", "value": BOB_PROFILE, "category": "basic_info"})).await;
    ok(&bob, "store", json!({"content": BOB_NOTE, "title": "bob-secret"})).await;
    let bob_dir = env.packs.join(".users/bob");
    let mut bob_packs = Vec::new();
    for e in std::fs::read_dir(&bob_dir).expect("bob's packs").flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if e.path().join(".git").exists() {
            git(
                &e.path(),
                &["remote", "add", "origin", &format!("https://bob:{BOB_PASSWORD}@example.invalid/b.git")],
            );
        }
        bob_packs.push(name);
    }
    assert!(!bob_packs.is_empty());
    // The team pack's remote has a password too: shown masked, never in clear.
    git(
        &env.pack("team"),
        &["remote", "add", "origin", &format!("https://team:{TEAM_PASSWORD}@example.invalid/t.git")],
    );
    let before = tree_hash(&bob_dir);

    let packs = env.packs.display().to_string();
    let mut values: Vec<String> = vec![
        ".users".into(),
        ".users/bob".into(),
        "../.users/bob".into(),
        packs.clone(),
        format!("{packs}/.users/bob"),
        format!("file://{packs}/.users/bob"),
        format!("{shared_s}/../packs/.users/bob"),
        "bob".into(),
    ];
    for p in &bob_packs {
        values.push(format!(".users/bob/{p}"));
        values.push(format!("../.users/bob/{p}"));
        values.push(format!("{packs}/.users/bob/{p}"));
        values.push(format!("file://{packs}/.users/bob/{p}"));
    }

    let mut calls = 0;
    for token in [ALICE, CI] {
        let client = server.client(Some(token)).await;
        let tools = client.tools_json().await.expect("tools");
        for tool in tools.as_array().expect("tool list") {
            let name = tool["name"].as_str().expect("name");
            for value in &values {
                let args = arguments(&tool["inputSchema"], value);
                let Ok(reply) = client.call(name, args.clone()).await else { continue };
                calls += 1;
                let whole = format!("{} {}", reply.text, reply.structured.clone().unwrap_or_default());
                assert!(leaked(&whole).is_none(), "{name} {args} answered {:?}: {whole}", leaked(&whole));
            }
        }
        // The team pack's status names its remote with the password masked.
        let status = client.call("sync_status", json!({"name": "team"})).await.expect("sync_status");
        assert!(status.text.contains("team:***@example.invalid"), "{}", status.text);
        // Nothing of Bob's is found by a search afterwards.
        for (tool, args) in [
            ("search_memory", json!({"query": BOB_PROFILE})),
            ("search_memory", json!({"query": BOB_NOTE})),
            ("engram_search", json!({"query": BOB_PROFILE})),
            ("recall", json!({"query": BOB_NOTE})),
            ("query_profile", json!({})),
        ] {
            let asked = args.get("query").and_then(|q| q.as_str()).unwrap_or("\u{0}").to_owned();
            if let Ok(reply) = client.call(tool, args).await {
                // The answer may repeat the query; nothing else of it.
                let text = reply.text.replace(&asked, "");
                assert!(leaked(&text).is_none(), "{tool}: {}", reply.text);
            }
        }
    }
    assert!(calls > 200, "only {calls} calls were made");
    // Whether a directory of the server exists is not told: a path that exists and one that
    // does not are refused alike.
    let alice = server.client(Some(ALICE)).await;
    let refusal = |text: String| text.replace(&packs, "<packs>").replace("/nowhere-7q", "/.users/bob");
    let real = call(&alice, "install_engram", json!({"source": format!("{packs}/.users/bob")})).await;
    let made_up = call(&alice, "install_engram", json!({"source": format!("{packs}/nowhere-7q")})).await;
    assert!(real.is_error && made_up.is_error, "{} / {}", real.text, made_up.text);
    let (real, made_up) = (refusal(real.text), refusal(made_up.text));
    assert!(real.contains("allow-path"), "{real}");
    assert_eq!(real, made_up, "an existing path and a made-up one are refused alike");
    assert_eq!(before, tree_hash(&bob_dir), "a file of bob's changed");
    for marker in [BOB_PROFILE, BOB_NOTE, BOB_PASSWORD] {
        let found = files_holding(&env.packs, &bob_dir, marker);
        assert!(found.is_empty(), "{marker} outside bob's packs: {found:?}");
    }
    // Bob still reads his own.
    let own = ok(&bob, "query_profile", json!({})).await;
    assert!(own.contains(BOB_PROFILE), "{own}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_packs_directory_is_never_an_allowed_path() {
    let env = TestEnv::new();
    let users = users_file(&env).display().to_string();
    for dir in [env.packs.clone(), env.packs.join(".users")] {
        std::fs::create_dir_all(&dir).expect("mkdir");
        let refused = HttpServer::start(
            &env,
            "127.0.0.1:0",
            &["--users-file", &users, "--allow-path", &dir.display().to_string()],
            &[],
        );
        let Err(text) = refused else { panic!("the server started with --allow-path {}", dir.display()) };
        assert!(text.contains("packs directory"), "{text}");
    }
}

/// Every ref of the pack and the number of commits reachable from them.
fn refs_and_commits(pack: &Path) -> (String, String) {
    (
        git(pack, &["for-each-ref", "--format=%(refname) %(objectname)"]),
        git(pack, &["rev-list", "--all", "--count"]),
    )
}

async fn read_only_token_commits_nothing(propose: bool) {
    let env = TestEnv::new();
    env.init("team");
    let users = users_file(&env).display().to_string();
    let mut extra = vec!["--tools", "all", "--users-file", users.as_str()];
    if propose {
        extra.push("--propose");
    }
    let server = HttpServer::start(&env, "127.0.0.1:0", &extra, &[]).expect("serve");
    let alice = server.client(Some(ALICE)).await;
    ok(
        &alice,
        "capture_memory",
        json!({"name": "team", "category": "facts", "content": "alice wrote this", "summary": "alice fact"}),
    )
    .await;
    // The pack's branch moves on after Alice's proposal (a hand edit committed by the CLI).
    std::fs::write(env.pack("team").join("knowledge-note.md"), "a later change\n").expect("write");
    git(&env.pack("team"), &["add", "-A"]);
    git(&env.pack("team"), &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "hand edit"]);
    let before = refs_and_commits(&env.pack("team"));
    // A pack folder that is no repository yet: a write would adopt it (a commit); reads
    // by a read-only token must not.
    let plain = env.pack("plain");
    std::fs::create_dir_all(plain.join("memory")).expect("mkdir");
    std::fs::write(plain.join("meta.json"), r#"{"name": "plain", "description": "d"}"#).expect("meta");
    std::fs::write(plain.join("memory/facts.md"), "- a plain fact\n").expect("memory");

    let mut calls = 0;
    for token in [ALICE_RO, CI] {
        let ro = server.client(Some(token)).await;
        for (tool, args) in [
            ("load_engram", json!({"name": "team"})),
            ("search_memory", json!({"query": "alice"})),
            ("read_engram_file", json!({"name": "team", "path": "meta.json"})),
            ("list_proposals", json!({"name": "team"})),
        ] {
            let _ = ro.call(tool, args).await.expect(tool);
        }
        let tools = ro.tools_json().await.expect("tools");
        for tool in tools.as_array().expect("tool list") {
            let name = tool["name"].as_str().expect("name");
            for value in ["team", "facts", "alice", "plain"] {
                if ro.call(name, arguments(&tool["inputSchema"], value)).await.is_ok() {
                    calls += 1;
                }
            }
        }
    }
    assert!(calls > 40, "only {calls} calls");
    assert_eq!(
        before,
        refs_and_commits(&env.pack("team")),
        "a read-only token's reads changed the pack's refs"
    );
    assert!(!plain.join(".git").exists(), "a read-only token's read made a repository of a folder");
    let log = git(&env.pack("team"), &["log", "--all", "--format=%s"]);
    assert!(!log.contains("review: bring the pack's branch"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_token_commits_nothing_under_propose() {
    read_only_token_commits_nothing(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_token_commits_nothing_without_propose() {
    read_only_token_commits_nothing(false).await;
}
