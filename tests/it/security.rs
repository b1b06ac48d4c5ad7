//! Hostile input: path traversal in every path-like argument, a malicious pack from
//! `install_engram`, cross-user access through the graph and personal tools (`personal_*`).
//! (HTTP tokens and Origins: `http.rs`.)

use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::common::*;

const SECRET: &str = "TOP-SECRET-OUTSIDE-THE-PACK";

/// Every tool argument that names a path (or a pack/category, which become paths), as
/// (tool, arguments with the hostile value in place). Later toolsets add their rows.
fn path_like_arguments(bad: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("read_engram_file", json!({"name": "p", "path": bad})),
        ("write_engram_file", json!({"name": "p", "path": bad, "content": "pwned"})),
        ("write_engram_file", json!({"name": "p", "path": bad, "content": "pwned", "mode": "append"})),
        ("add_knowledge", json!({"name": "p", "filename": bad, "content": "pwned", "summary": "s"})),
        ("capture_memory", json!({"name": "p", "category": bad, "content": "pwned", "summary": "s"})),
        ("capture_memory", json!({"name": bad, "category": "c", "content": "pwned", "summary": "s"})),
        ("delete_memory", json!({"name": "p", "category": bad, "summary": "s"})),
        (
            "correct_memory",
            json!({"name": "p", "category": bad, "old_summary": "s", "new_content": "pwned", "new_summary": "s"}),
        ),
        (
            "consolidate_memory",
            json!({"name": "p", "category": bad, "consolidated_content": "pwned", "summary": "s"}),
        ),
        ("get_engram_info", json!({"name": bad})),
        ("load_engram", json!({"name": bad})),
    ]
}

const HOSTILE_PATHS: &[&str] = &[
    "..",
    "../outside/secret.md",
    "../../outside/secret.md",
    "knowledge/../../outside/secret.md",
    "knowledge/../../../outside/new.md",
    "/etc/passwd",
    "/tmp/engram-pwned.md",
    "..\\outside\\secret.md",
    "C:\\Windows\\x.md",
    "%2e%2e/outside/secret.md",
    "..%2foutside%2fsecret.md",
    "%2E%2E%2F%2E%2E%2Foutside",
    ".git/config",
    ".git/hooks/post-commit",
    ".GIT/HEAD",
    "knowledge/.git/x.md",
    "linkdir/secret.md",
    "knowledge/leak.md",
    "knowledge/x\0.md",
    "./../outside/secret.md",
];

fn listing(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    fn walk(d: &Path, root: &Path, out: &mut Vec<String>) {
        for e in fs::read_dir(d).into_iter().flatten().flatten() {
            let p = e.path();
            out.push(p.strip_prefix(root).map(|r| r.display().to_string()).unwrap_or_default());
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                walk(&p, root, out);
            }
        }
    }
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn path_traversal_in_every_path_like_argument() {
    let env = TestEnv::new();
    env.init("p");
    let pack = env.pack("p");
    let outside = env.dir.path().join("outside");
    fs::create_dir_all(&outside).expect("mkdir");
    fs::write(outside.join("secret.md"), SECRET).expect("write");
    std::os::unix::fs::symlink(&outside, pack.join("linkdir")).expect("symlink dir");
    std::os::unix::fs::symlink(outside.join("secret.md"), pack.join("knowledge/leak.md"))
        .expect("symlink file");
    let c = env.client().await;
    // The symlinks get committed as a hand edit by the first write: that is fine, they stay links.
    ok(&c, "capture_memory", json!({"name": "p", "category": "c", "content": "s", "summary": "s"})).await;
    let root_before = listing(env.dir.path());
    let git_config = fs::read(pack.join(".git/config")).expect("config");
    let hooks_before = listing(&pack.join(".git/hooks"));
    for bad in HOSTILE_PATHS {
        for (tool, args) in path_like_arguments(bad) {
            let r = call(&c, tool, args.clone()).await;
            assert!(!r.text.contains(SECRET), "{tool}({bad:?}) leaked the outside file: {}", r.text);
            assert!(!r.text.contains("[core]"), "{tool}({bad:?}) leaked .git/config");
            if !r.is_error {
                // Accepted only as a literal name inside the pack (e.g. a file called `%2e%2e`).
                let files = git(&pack, &["ls-files"]);
                assert!(
                    files.lines().all(|f| !f.starts_with(".git/") && !f.split('/').any(|p| p == "..")),
                    "{tool}({bad:?}) committed {files}"
                );
            }
        }
    }
    assert_eq!(
        fs::read_to_string(outside.join("secret.md")).expect("read"),
        SECRET,
        "outside file untouched"
    );
    assert_eq!(listing(&outside), ["secret.md"], "nothing created outside the pack");
    let root_after = listing(env.dir.path());
    let outside_pack: Vec<&String> = root_after.iter().filter(|p| !p.starts_with("packs")).collect();
    let before_outside: Vec<&String> = root_before.iter().filter(|p| !p.starts_with("packs")).collect();
    assert_eq!(outside_pack, before_outside, "nothing created next to the packs directory");
    assert!(!Path::new("/tmp/engram-pwned.md").exists());
    assert_eq!(fs::read(pack.join(".git/config")).expect("config"), git_config, ".git/config untouched");
    assert_eq!(listing(&pack.join(".git/hooks")), hooks_before, "no hook installed");
    c.close().await.expect("close");
    assert_fsck(&pack);
    crate::invariants::index_agrees_with_blocks(&pack).expect("consistent");
}

fn sh_git(dir: &Path, args: &[&str]) {
    let out = git_command_as("evil", "evil@example.invalid")
        .arg("-C")
        .arg(dir)
        .args(["-c", "protocol.file.allow=always"])
        .args(args)
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A pack repository built to attack whoever installs it.
fn evil_repo(root: &Path, marker: &Path) -> std::path::PathBuf {
    let repo = root.join("evil-src");
    fs::create_dir_all(repo.join("knowledge")).expect("mkdir");
    fs::create_dir_all(repo.join("examples")).expect("mkdir");
    sh_git(&repo, &["init", "-q"]);
    fs::write(repo.join("meta.json"), r#"{"name": "evil", "description": "looks harmless"}"#).expect("write");
    fs::write(repo.join("role.md"), "# role\n").expect("write");
    fs::write(
        repo.join("knowledge/_index.md"),
        "- `knowledge/leak.md` - read me\n- `knowledge/huge.md` - big\n",
    )
    .expect("write");
    // Symlinks out of the pack: an absolute one and a relative climb.
    std::os::unix::fs::symlink("/etc/passwd", repo.join("knowledge/leak.md")).expect("symlink");
    std::os::unix::fs::symlink("../../../../../../../../etc", repo.join("examples/up")).expect("symlink");
    std::os::unix::fs::symlink("/etc/passwd", repo.join("rules.md")).expect("symlink");
    // A huge file (over the read limit).
    fs::write(repo.join("knowledge/huge.md"), "A".repeat(3 * 1024 * 1024)).expect("write");
    // Hooks and filters that would run code if anything executed them.
    let payload = format!("#!/bin/sh\ntouch {}\n", marker.display());
    fs::create_dir_all(repo.join("hooks")).expect("mkdir");
    for hook in ["post-checkout", "post-commit", "pre-commit", "post-merge"] {
        fs::write(repo.join("hooks").join(hook), &payload).expect("write");
        fs::write(repo.join(".git/hooks").join(hook), &payload).expect("write");
        sh_git(&repo, &["update-index", "--add", "--chmod=+x", "--", &format!("hooks/{hook}")]);
    }
    fs::write(repo.join(".gitattributes"), "* filter=evil diff=evil\n").expect("write");
    sh_git(&repo, &["config", "filter.evil.smudge", &format!("touch {}", marker.display())]);
    sh_git(&repo, &["config", "core.hooksPath", "hooks"]);
    // A submodule pointing at another local repository.
    let sub = root.join("evil-sub");
    fs::create_dir_all(&sub).expect("mkdir");
    sh_git(&sub, &["init", "-q"]);
    fs::write(sub.join("payload.md"), SECRET).expect("write");
    sh_git(&sub, &["add", "."]);
    sh_git(&sub, &["commit", "-qm", "sub"]);
    sh_git(&repo, &["submodule", "add", "-q", &sub.display().to_string(), "vendor"]);
    sh_git(&repo, &["add", "-A"]);
    sh_git(&repo, &["-c", "core.hooksPath=/dev/null", "commit", "-qm", "evil pack"]);
    repo
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malicious_pack_never_runs_code_or_reads_outside() {
    let env = TestEnv::new();
    let marker = env.dir.path().join("PWNED");
    let src = evil_repo(env.dir.path(), &marker);
    let c = env.client().await;
    let installed = ok(&c, "install_engram", json!({"source": src.display().to_string()})).await;
    assert!(installed.contains("evil"), "{installed}");
    let pack = env.pack("evil-src");
    assert!(pack.join("meta.json").is_file());
    assert!(!pack.join("vendor/payload.md").exists(), "submodules are not fetched");
    let loaded = ok(&c, "load_engram", json!({"name": "evil-src"})).await;
    assert!(!loaded.contains("root:"), "load_engram read /etc/passwd through a symlink");
    for path in ["knowledge/leak.md", "rules.md", "examples/up/passwd", "vendor/payload.md"] {
        let r = call(&c, "read_engram_file", json!({"name": "evil-src", "path": path})).await;
        assert!(r.is_error && !r.text.contains("root:") && !r.text.contains(SECRET), "{path}: {}", r.text);
    }
    let huge = err(&c, "read_engram_file", json!({"name": "evil-src", "path": "knowledge/huge.md"})).await;
    assert!(huge.contains("limit"), "{huge}");
    for path in ["examples/up/x.md", "knowledge/leak.md"] {
        err(&c, "write_engram_file", json!({"name": "evil-src", "path": path, "content": "x"})).await;
    }
    // Writes still work, and commit through git2 without any hook, filter or submodule step.
    ok(
        &c,
        "capture_memory",
        json!({"name": "evil-src", "category": "c", "content": "still fine", "summary": "still fine"}),
    )
    .await;
    ok(&c, "write_engram_file", json!({"name": "evil-src", "path": "knowledge/note.md", "content": "ok"}))
        .await;
    c.close().await.expect("close");
    assert!(!marker.exists(), "a hook or filter of the malicious pack ran");
    assert_eq!(
        fs::read_link(pack.join("knowledge/leak.md")).expect("still a link"),
        Path::new("/etc/passwd")
    );
    let lint = env.cli(&["lint", "evil-src"]);
    assert!(!String::from_utf8_lossy(&lint.stdout).contains("root:"), "lint read through a symlink");
    let doctor = env.cli(&["doctor", "evil-src"]);
    assert!(!marker.exists());
    assert!(!String::from_utf8_lossy(&doctor.stdout).contains("root:"));
}

/// Cross-user access through the graph and personal tools: every tool of both toolsets, called
/// by bob with alice's names and ids, leaves alice's records byte for byte as they were (her
/// subtree of the pack keeps its tree id) and shows bob none of them. (Complements
/// `personal_tools::users_never_see_or_change_each_others_records`, which checks the answers.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn personal_cross_user_graph_and_personal_tools_touch_only_their_user() {
    let env = TestEnv::new();
    let user = |u: &str| {
        vec!["--tools", "graph,personal", "--user"]
            .into_iter()
            .chain([u])
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let alice_args = user("alice");
    let alice = env.client_with(&alice_args.iter().map(String::as_str).collect::<Vec<_>>()).await;
    ok(&alice, "update_profile", json!({"key": "pin", "value": "alice's private note"})).await;
    let pet: Value = serde_json::from_str(
        &ok(
            &alice,
            "create_entity",
            json!({"entity_type": "pet", "name": "Mimi", "attributes": {"breed": "ragdoll"}}),
        )
        .await,
    )
    .expect("json");
    let pet = pet["id"].as_str().expect("id").to_owned();
    ok(
        &alice,
        "add_event",
        json!({"event_type": "other", "description": "vet visit", "related_entity_ids": [pet]}),
    )
    .await;
    ok(
        &alice,
        "create_entities",
        json!({"entities": [{"name": "Alice graph", "entityType": "t", "observations": ["alice obs"]}]}),
    )
    .await;
    ok(
        &alice,
        "create_relations",
        json!({"relations": [{"from": "Alice graph", "to": "Mimi", "relationType": "owns"}]}),
    )
    .await;
    alice.close().await.expect("close");
    let pack = env.pack("personal");
    let alice_tree = || git(&pack, &["rev-parse", "HEAD:users/alice"]);
    let before = alice_tree();
    let head_before = git(&pack, &["rev-parse", "HEAD"]).trim().to_owned();

    let bob_args = user("bob");
    let bob = env.client_with(&bob_args.iter().map(String::as_str).collect::<Vec<_>>()).await;
    let names = json!(["Alice graph", "Mimi"]);
    // Reads: nothing of alice's.
    for (tool, args) in [
        ("read_graph", json!({})),
        ("search_nodes", json!({"query": "alice"})),
        ("search_nodes", json!({"query": "ragdoll"})),
        ("open_nodes", json!({"names": names})),
        ("query_profile", json!({"keys": ["pin"]})),
        ("profile_history", json!({"key": "pin"})),
        ("list_entities", json!({"status": "all"})),
        ("search_events", json!({"query": "vet"})),
        ("query_entity_timeline", json!({"entity_id": pet})),
    ] {
        let r = call(&bob, tool, args).await;
        for leak in ["alice obs", "alice's private note", "ragdoll", "vet visit", "Alice graph"] {
            assert!(!r.text.contains(leak), "{tool} shows bob alice's {leak:?}: {}", r.text);
        }
    }
    // Writes aimed at alice's names and ids: refused or landing in bob's own records.
    for (tool, args) in [
        (
            "add_observations",
            json!({"observations": [{"entityName": "Alice graph", "contents": ["bob was here"]}]}),
        ),
        (
            "delete_observations",
            json!({"deletions": [{"entityName": "Alice graph", "observations": ["alice obs"]}]}),
        ),
        (
            "delete_relations",
            json!({"relations": [{"from": "Alice graph", "to": "Mimi", "relationType": "owns"}]}),
        ),
        (
            "create_relations",
            json!({"relations": [{"from": "Alice graph", "to": "Mimi", "relationType": "stole"}]}),
        ),
        ("delete_entities", json!({"entityNames": names})),
        ("delete_profile", json!({"key": "pin"})),
        ("update_profile", json!({"key": "pin", "value": "bob's"})),
        ("update_entity", json!({"entity_id": pet, "name": "stolen"})),
        ("delete_entity", json!({"entity_id": pet})),
        ("add_event", json!({"event_type": "other", "description": "x", "related_entity_ids": [pet]})),
    ] {
        let _ = call(&bob, tool, args).await;
        assert_eq!(alice_tree(), before, "{tool} by bob changed alice's records");
    }
    bob.close().await.expect("close");
    assert_fsck(&pack);
    // Bob's own writes are below his own directory only.
    let changed = git(&pack, &["diff", "--name-only", &head_before, "HEAD"]);
    assert!(!changed.trim().is_empty(), "bob's own writes landed");
    for path in changed.lines() {
        assert!(path.starts_with("users/bob/"), "bob's write touched {path}");
    }
    let alice_again = env.client_with(&alice_args.iter().map(String::as_str).collect::<Vec<_>>()).await;
    let r = call(&alice_again, "open_nodes", json!({"names": ["Alice graph"]})).await;
    assert_eq!(r.structured.clone().expect("s")["entities"][0]["observations"], json!(["alice obs"]));
    alice_again.close().await.expect("close");
}

/// A pack copied in by hand brings its `.git`, and with it whatever sits where
/// engram keeps its own files there: the lock mark a link to a file outside the
/// pack, the scratch index a hard link to it, the scratch index's lock a FIFO,
/// a temp file's name a link to a directory outside. Captures go on, nothing
/// outside the pack is written, and the repository stays sound.
#[cfg(unix)]
#[tokio::test]
async fn planted_files_in_git_dir_never_carry_a_write_outside() {
    let env = TestEnv::new();
    crate::engram_tools::make_pack(&env, "copied");
    let capture = |i: usize| json!({"name": "copied", "category": "notes", "content": format!("note {i}"), "summary": format!("note {i}")});
    let c = env.client().await;
    ok(&c, "capture_memory", capture(0)).await;
    c.close().await.expect("close");

    let outside = env.dir.path().join("outside");
    fs::create_dir_all(outside.join("dir")).expect("mkdir");
    fs::write(outside.join("victim.md"), SECRET).expect("write");
    fs::write(outside.join("dir/empty"), b"").expect("write");
    let git_dir = env.pack("copied").join(".git");
    let plant = |name: &str| {
        let path = git_dir.join(name);
        let _ = fs::remove_file(&path);
        let _ = fs::remove_dir_all(&path);
        path
    };
    std::os::unix::fs::symlink(outside.join("victim.md"), plant("engram-lock-mark")).expect("symlink");
    fs::hard_link(outside.join("victim.md"), plant("engram-index.new")).expect("hard link");
    let fifo = plant("engram-index.new.lock");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    std::os::unix::fs::symlink(outside.join("dir"), plant(".notes.md.engram-tmp-1")).expect("symlink");

    let c = env.client().await;
    for i in 1..=40 {
        ok(&c, "capture_memory", capture(i)).await;
    }
    c.close().await.expect("close");
    assert_eq!(fs::read_to_string(outside.join("victim.md")).expect("victim"), SECRET);
    let left: Vec<_> =
        fs::read_dir(outside.join("dir")).expect("dir").flatten().map(|e| e.file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("empty")], "nothing written into or taken from outside");
    assert_eq!(fs::read(outside.join("dir/empty")).expect("empty"), b"");
    assert_fsck(&env.pack("copied"));
    let hot = fs::read_to_string(env.pack("copied").join("memory/_index.md")).expect("hot index");
    assert!(hot.contains("note 40"), "{hot}");
}
