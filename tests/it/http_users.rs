//! `engram serve --http --users-file`: one server, many users, each token acting as its
//! user; read-only tokens; SIGHUP re-reads the file without dropping sessions; `/healthz`.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::*;
use crate::http::{HttpServer, raw_request};

const ALICE: &str = "alice-token-0123456789abcdef";
const BOB: &str = "bob-token-0123456789abcdef00";
const CAROL: &str = "carol-token-0123456789abcdef";
const DAVE: &str = "dave-token-0123456789abcdef0";

fn users_file(env: &TestEnv, text: &str, mode: u32) -> PathBuf {
    let path = env.dir.path().join("users");
    std::fs::write(&path, text).expect("write users");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    path
}

fn start(env: &TestEnv, users: &Path) -> Result<HttpServer, String> {
    let users = users.display().to_string();
    HttpServer::start(
        env,
        "127.0.0.1:0",
        &["--tools", "engram,personal,graph,notes", "--users-file", &users],
        &[],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_users_cannot_read_each_others_profile_entities_or_notes() {
    let env = TestEnv::new();
    env.init("team");
    let path =
        users_file(&env, &format!("# the team\n{ALICE} alice\n{BOB} bob\n{CAROL} carol read-only\n"), 0o600);
    let server = start(&env, &path).expect("serve");
    let alice = server.client(Some(ALICE)).await;
    let bob = server.client(Some(BOB)).await;

    // Alice writes her profile, an entity, a graph entity and a note.
    ok(&alice, "update_profile", json!({"key": "name", "value": "Alice Secret", "category": "basic_info"}))
        .await;
    ok(&alice, "create_entity", json!({"entity_type": "pet", "name": "Whiskers-of-alice"})).await;
    ok(&alice, "create_entities", json!({"entities": [{"name": "alice-project", "entityType": "project", "observations": ["alice only"]}]})).await;
    ok(&alice, "store", json!({"content": "alice's diary line", "title": "diary"})).await;
    // Bob writes his own.
    ok(&bob, "update_profile", json!({"key": "name", "value": "Bob Private", "category": "basic_info"}))
        .await;
    ok(&bob, "store", json!({"content": "bob's shopping list", "title": "shopping"})).await;

    // Bob sees only his own records.
    let profile = ok(&bob, "query_profile", json!({})).await;
    assert!(profile.contains("Bob Private") && !profile.contains("Alice"), "{profile}");
    let entities = ok(&bob, "list_entities", json!({"status": "all"})).await;
    assert!(!entities.contains("Whiskers"), "{entities}");
    let graph = ok(&bob, "read_graph", json!({})).await;
    assert!(!graph.contains("alice-project"), "{graph}");
    let found = ok(&bob, "search_nodes", json!({"query": "alice"})).await;
    assert!(!found.contains("alice-project"), "{found}");
    let notes = ok(&bob, "recall", json!({})).await;
    assert!(notes.contains("shopping") && !notes.contains("diary"), "{notes}");
    // And Alice only hers.
    let profile = ok(&alice, "query_profile", json!({})).await;
    assert!(profile.contains("Alice Secret") && !profile.contains("Bob"), "{profile}");
    let notes = ok(&alice, "recall", json!({})).await;
    assert!(notes.contains("diary") && !notes.contains("shopping"), "{notes}");
    let entities = ok(&alice, "list_entities", json!({})).await;
    assert!(entities.contains("Whiskers-of-alice"), "{entities}");

    // The team's packs are shared, and no Engram tool reaches a user's own packs.
    let listed = ok(&bob, "list_engrams", json!({})).await;
    assert!(listed.contains("team") && !listed.contains(".users") && !listed.contains("Alice"), "{listed}");
    let refused =
        call(&bob, "read_engram_file", json!({"name": ".users", "path": "alice/personal/meta.json"})).await;
    assert!(refused.is_error, "{}", refused.text);
    let searched = call(&bob, "search_memory", json!({"query": "Alice Secret"})).await;
    assert!(
        searched.text.contains("no results")
            && searched.text.contains("packs: team")
            && !searched.text.contains("personal"),
        "{}",
        searched.text
    );
    // On disk: each user's records live under their own directory.
    let dirs = std::fs::read_dir(env.packs.join(".users")).expect("users dir");
    let mut names: Vec<String> =
        dirs.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, ["alice", "bob"]);

    // A read-only token lists and calls only reading tools.
    let carol = server.client(Some(CAROL)).await;
    let tools = carol.tool_names().await.expect("tools");
    assert!(
        tools.iter().any(|t| t == "query_profile") && tools.iter().any(|t| t == "read_graph"),
        "{tools:?}"
    );
    for writing in ["update_profile", "create_entities", "store", "capture_memory"] {
        assert!(!tools.iter().any(|t| t == writing), "{writing} listed for a read-only token: {tools:?}");
    }
    let denied = call(&carol, "update_profile", json!({"key": "name", "value": "x"})).await;
    assert!(denied.is_error && denied.text.contains("read-only"), "{}", denied.text);
    let denied = call(
        &carol,
        "capture_memory",
        json!({"name": "team", "category": "c", "content": "x", "summary": "x"}),
    )
    .await;
    assert!(denied.is_error && denied.text.contains("read-only"), "{}", denied.text);
    assert!(!env.pack("team").join("memory/c.md").exists());

    // A token not in the file gets 401; /healthz answers without one.
    let (status, _) = raw_request(
        &server.authority,
        "POST",
        "/mcp",
        &[("Authorization", &format!("Bearer {DAVE}"))],
        crate::http::INIT,
    );
    assert_eq!(status, 401);
    let (status, body) = raw_request(&server.authority, "GET", "/healthz", &[], "");
    assert_eq!((status, body.trim()), (200, "ok"));

    // SIGHUP re-reads the file: Dave gets in, Bob is out, Alice's session goes on.
    users_file(&env, &format!("{ALICE} alice\n{DAVE} dave\n"), 0o600);
    let hup =
        std::process::Command::new("kill").args(["-HUP", &server.pid().to_string()]).status().expect("kill");
    assert!(hup.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, _) = raw_request(
            &server.authority,
            "POST",
            "/mcp",
            &[("Authorization", &format!("Bearer {DAVE}"))],
            crate::http::INIT,
        );
        if status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "the users file was not re-read ({status})");
        tokio::time::sleep(Duration::from_millis(50)).await; // polling, not timing
    }
    let still = ok(&alice, "query_profile", json!({})).await;
    assert!(still.contains("Alice Secret"), "{still}");
    assert!(bob.call("query_profile", json!({})).await.is_err(), "a removed token still works");
}

#[test]
fn a_users_file_others_can_read_is_refused_at_start() {
    let env = TestEnv::new();
    let path = users_file(&env, &format!("{ALICE} alice\n"), 0o644);
    let refused = start(&env, &path).err().expect("the server refused to start");
    assert!(refused.contains("chmod 600") && !refused.contains(ALICE), "{refused}");
    let path = users_file(&env, &format!("{ALICE} ../alice\n"), 0o600);
    let refused = start(&env, &path).err().expect("the server refused to start");
    assert!(refused.contains("line 1") && refused.contains("invalid user id"), "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_token_cannot_open_the_web_page() {
    let env = TestEnv::new();
    let path = users_file(&env, &format!("{ALICE} alice\n"), 0o600);
    let users = path.display().to_string();
    let server =
        HttpServer::start(&env, "127.0.0.1:0", &["--tools", "engram,ui", "--users-file", &users], &[])
            .expect("serve");
    let alice = server.client(Some(ALICE)).await;
    let refused = err(&alice, "open_ui", json!({})).await;
    assert!(refused.contains("not available on a team server") && refused.contains("alice"), "{refused}");
    // Nothing listens: the answer names no address.
    assert!(!refused.contains("http://"), "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_propose_each_users_writes_land_on_their_own_proposal_branch() {
    let env = TestEnv::new();
    env.init("team");
    let pack = env.pack("team");
    let before = git(&pack, &["rev-parse", "HEAD"]);
    let path = users_file(&env, &format!("{ALICE} alice\n{BOB} bob\n"), 0o600);
    let users = path.display().to_string();
    let server =
        HttpServer::start(&env, "127.0.0.1:0", &["--propose", "--users-file", &users], &[]).expect("serve");
    let alice = server.client(Some(ALICE)).await;
    let bob = server.client(Some(BOB)).await;
    let capture = |c: &str| json!({"name": "team", "category": "facts", "content": c, "summary": c});
    ok(&alice, "capture_memory", capture("Alice-http-proposal")).await;
    ok(&bob, "capture_memory", capture("Bob-http-proposal")).await;
    assert_eq!(git(&pack, &["rev-parse", "HEAD"]), before, "the pack's branch did not move");
    let branches = git(&pack, &["branch", "--list", "--format=%(refname:short)"]);
    assert!(branches.contains("proposals/alice") && branches.contains("proposals/bob"), "{branches}");
    let seen = ok(&alice, "load_engram", json!({"name": "team", "query": "x"})).await;
    assert!(seen.contains("Alice-http-proposal") && !seen.contains("Bob-http"), "{seen}");
    let alice_log = git(&pack, &["log", "--format=%s", "proposals/alice"]);
    assert!(alice_log.contains("Alice-http") && !alice_log.contains("Bob-http"), "{alice_log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_own_packs_sync_with_their_own_remotes_only() {
    let env = TestEnv::new();
    let path = users_file(&env, &format!("{ALICE} alice\n{BOB} bob\n"), 0o600);
    let server = start(&env, &path).expect("serve");
    let alice = server.client(Some(ALICE)).await;
    let bob = server.client(Some(BOB)).await;
    ok(&alice, "update_profile", json!({"key": "name", "value": "Alice Synced", "category": "basic_info"}))
        .await;
    ok(&bob, "update_profile", json!({"key": "name", "value": "Bob Synced", "category": "basic_info"})).await;
    // Each user's pack gets a remote of its own (an admin's step, as for any pack).
    let remotes = env.dir.path().join("remotes");
    let mut bare = Vec::new();
    for user in ["alice", "bob"] {
        let dir = remotes.join(format!("{user}.git"));
        std::fs::create_dir_all(&dir).expect("mkdir");
        git(&dir, &["init", "--bare", "-q"]);
        let name = format!(".users/{user}/personal");
        let out = env.cli(&["remote", "add", &name, &dir.display().to_string()]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        bare.push(dir);
    }
    let out = env.cli(&["sync", "--all"]);
    let report = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{report}");
    assert!(report.contains(".users/alice/personal") && report.contains(".users/bob/personal"), "{report}");
    let tree = |dir: &Path| git(dir, &["log", "--all", "-p", "--format=%s"]);
    let (alice_remote, bob_remote) = (tree(&bare[0]), tree(&bare[1]));
    assert!(alice_remote.contains("Alice Synced") && !alice_remote.contains("Bob"), "{alice_remote}");
    assert!(bob_remote.contains("Bob Synced") && !bob_remote.contains("Alice"), "{bob_remote}");
    // Pulled too: a commit another device pushed to Alice's remote reaches her records.
    let clone = env.dir.path().join("alice-laptop");
    let cloned = git_command().args(["clone", "-q"]).arg(&bare[0]).arg(&clone).output().expect("git clone");
    assert!(cloned.status.success(), "{}", String::from_utf8_lossy(&cloned.stderr));
    let key = clone.join("users/alice/profile/city.json");
    std::fs::write(&key, "{\"key\": \"city\", \"value\": \"Lisbon\", \"category\": \"basic_info\", \"updated_at\": \"2026-11-22T10:00:00Z\"}\n").expect("write");
    git(&clone, &["add", "-A"]);
    git(&clone, &["commit", "-qm", "laptop: city"]);
    git(&clone, &["push", "-q", "origin", "HEAD"]);
    let out = env.cli(&["sync", "--all"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let profile = ok(&alice, "query_profile", json!({})).await;
    assert!(profile.contains("Lisbon"), "{profile}");
    let profile = ok(&bob, "query_profile", json!({})).await;
    assert!(!profile.contains("Lisbon") && !profile.contains("Alice"), "{profile}");
}
