//! Attacks of round 3 through the real binary: reserved and non-plain pack names, control
//! characters through the page and `engram knowledge import`, unbounded reads.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::*;
use crate::ui::UiServer;

/// A sparse file of `size` bytes (no disk space used).
fn sparse(path: &Path, size: u64) {
    let f = std::fs::File::create(path).expect("create");
    f.set_len(size).expect("set_len");
}

/// A refused install left nothing in the packs directory beside the pack `p`.
fn assert_only_pack_p(packs: &Path) {
    let left: Vec<String> = std::fs::read_dir(packs)
        .expect("packs")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "p")
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

fn stderr(out: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reserved_names_are_refused_for_new_packs() {
    let env = TestEnv::new();
    let out = env.cli(&["init", "_global"]);
    assert!(!out.status.success(), "init _global: {}", stderr(&out));
    assert!(!env.packs.join("_global/meta.json").exists());
    // A folder named _global installed from a local path.
    let src = env.dir.path().join("src/_global");
    std::fs::create_dir_all(&src).expect("mkdir");
    std::fs::write(src.join("meta.json"), r#"{"name": "g", "description": "d"}"#).expect("meta");
    let out = env.cli(&["install", &src.display().to_string()]);
    assert!(!out.status.success(), "install _global: {}", stderr(&out));
    assert!(!env.packs.join("_global/meta.json").exists());
    let c = env.client_with(&["--tools", "all"]).await;
    let refused = call(&c, "init_engram", json!({"name": "_GLOBAL"})).await;
    assert!(refused.is_error, "{}", refused.text);
    c.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_meta_name_that_is_not_a_plain_name_is_refused_and_never_hides_the_others() {
    let env = TestEnv::new();
    env.init("good");
    env.init("bad");
    let c = env.client_with(&["--tools", "all"]).await;
    for name in ["../evil", "a/b", ".users", "_global"] {
        let meta = json!({"name": name, "description": "d"}).to_string();
        let refused =
            call(&c, "write_engram_file", json!({"name": "bad", "path": "meta.json", "content": meta})).await;
        assert!(refused.is_error, "meta name {name:?} was written: {}", refused.text);
    }
    c.close().await.expect("close");
    // A hand edit puts one there anyway (committed with git itself).
    std::fs::write(env.pack("bad").join("meta.json"), r#"{"name": "../../x/.users", "description": "d"}"#)
        .expect("write");
    git(&env.pack("bad"), &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "hand edit"]);
    let out = env.cli(&["lint", "bad"]);
    assert!(!out.status.success(), "lint reports the name: {}", stderr(&out));
    assert!(stderr(&out).contains("not a plain pack name"), "{}", stderr(&out));
    let listed = cli_ok(&env, &["list"]);
    assert!(listed.contains("- bad:") && listed.contains("- good:"), "{listed}");

    let ui = UiServer::start(&env);
    let (status, packs) = ui.api("GET", "/api/packs", None);
    assert_eq!(status, 200, "{packs}");
    let names: Vec<&str> =
        packs.as_array().expect("list").iter().filter_map(|p| p["name"].as_str()).collect();
    assert!(names.contains(&"good") && names.contains(&"bad"), "{names:?}");
    let auth = format!("Bearer {}", ui.token);
    let (status, _, body) = ui.request("GET", "/", &[("Authorization", &auth)], "");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("/p/good") && body.contains("/p/bad"), "{body}");
}

#[test]
fn control_characters_are_refused_by_the_page_its_api_and_import() {
    let env = TestEnv::new();
    env.init("p");
    let n = commit_count(&env.pack("p"));
    let ui = UiServer::start(&env);
    let auth = format!("Bearer {}", ui.token);
    let (status, v) = ui.api(
        "POST",
        "/api/packs/p/memories",
        Some(json!({"category": "c", "summary": "nul", "content": "a\u{0}b"})),
    );
    assert_eq!(status, 400, "{v}");
    assert!(v.to_string().contains("U+0000"), "{v}");
    let origin = format!("http://{}", ui.authority);
    for (path, body) in [
        ("/p/p/memory", "category=c&summary=s&content=a%00b"),
        ("/p/p/memory", "category=c&summary=s%1B&content=ok"),
        ("/notes/note", "content=a%00b&title=t"),
    ] {
        let (status, _, text) = ui.request(
            "POST",
            path,
            &[
                ("Authorization", &auth),
                ("Origin", &origin),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ],
            body,
        );
        assert_eq!(status, 400, "{path} {body}: {text}");
    }
    let (status, v) = ui.api(
        "POST",
        "/api/packs/p/memories",
        Some(json!({"category": "c", "summary": "ok", "content": "tab\tfine"})),
    );
    assert_eq!(status, 201, "{v}");
    assert_eq!(commit_count(&env.pack("p")), n + 1, "only the clean memory was committed");

    let file = env.dir.path().join("book.md");
    std::fs::write(&file, "# One\n\ntext with a \u{0} byte\n").expect("write");
    let out = env.cli(&["knowledge", "import", "p", &file.display().to_string()]);
    assert!(!out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("U+0000"), "{}", stderr(&out));
    assert_eq!(commit_count(&env.pack("p")), n + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unbounded_inputs_are_refused_with_memory_bounded() {
    let env = TestEnv::new();
    env.init("p");
    // `engram knowledge import` of a device and of a 2 GB file: refused at once.
    let big = env.dir.path().join("big.md");
    sparse(&big, 2 << 30);
    for (file, says) in [("/dev/zero", "device"), (big.to_str().expect("utf-8"), "limit")] {
        let started = Instant::now();
        let out = env.cli(&["knowledge", "import", "p", file]);
        assert!(!out.status.success(), "{file}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{file}: {}", stderr(&out));
        assert!(started.elapsed() < Duration::from_secs(20), "{file} took {:?}", started.elapsed());
    }
    // A registry file that is /dev/zero counts as empty (with a warning), at once.
    let mut env2 = TestEnv::new();
    env2.vars.push(("ENGRAM_REGISTRY_FILES".into(), "/dev/zero".into()));
    let started = Instant::now();
    let out = env2.cli(&["registry", "search", "coach"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("registry file ignored"), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(20));

    // Installing a folder with a 2 GB file: refused, nothing left behind.
    let src = env.dir.path().join("src/huge");
    std::fs::create_dir_all(src.join("knowledge")).expect("mkdir");
    std::fs::write(src.join("meta.json"), r#"{"name": "huge", "description": "d"}"#).expect("meta");
    sparse(&src.join("knowledge/big.md"), 2 << 30);
    let out = env.cli(&["install", &src.display().to_string()]);
    assert!(!out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("at most"), "{}", stderr(&out));
    assert_only_pack_p(&env.packs);

    // Installing a repository whose branch holds a 100 MB file: refused by its object header
    // before any file is checked out, nothing left behind.
    let repo = env.dir.path().join("src/heavy");
    std::fs::create_dir_all(repo.join("knowledge")).expect("mkdir");
    std::fs::write(repo.join("meta.json"), r#"{"name": "heavy", "description": "d"}"#).expect("meta");
    sparse(&repo.join("knowledge/big.md"), 100 << 20);
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "heavy"]);
    let out = env.cli(&["install", &repo.display().to_string()]);
    assert!(!out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("knowledge/big.md is 104857600 bytes"), "{}", stderr(&out));
    assert_only_pack_p(&env.packs);

    // A 2 GB file put into an installed pack: the server answers and keeps running.
    sparse(&env.pack("p").join("knowledge/big.md"), 2 << 30);
    let c = env.client_with(&["--tools", "all"]).await;
    let _ = call(&c, "search_memory", json!({"query": "anything"})).await;
    let _ = call(&c, "search_engram_knowledge", json!({"name": "p", "query": "anything"})).await;
    let _ = call(&c, "load_engram", json!({"name": "p", "query": "anything"})).await;
    let read = call(&c, "read_engram_file", json!({"name": "p", "path": "knowledge/big.md"})).await;
    assert!(read.is_error, "a 2 GB file is not answered");
    assert_eq!(ok(&c, "ping", json!({})).await, "pong", "the server is still up");
    c.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_that_read_as_options_or_backwards_are_refused_and_the_page_answers_4xx() {
    let env = TestEnv::new();
    env.init("p");
    let c = env.client_with(&["--tools", "all"]).await;
    for name in ["-rf", "--help", "invoice\u{202E}fdp.exe", "a\u{200B}b"] {
        let refused = call(&c, "init_engram", json!({"name": name})).await;
        assert!(refused.is_error, "{name:?}: {}", refused.text);
    }
    c.close().await.expect("close");
    let listed: Vec<String> = std::fs::read_dir(&env.packs)
        .expect("packs")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(listed, ["p"], "{listed:?}");

    let ui = UiServer::start(&env);
    let (_, list) = ui.api("GET", "/api/packs/p/memories", None);
    let head = list["commit"].as_str().unwrap_or_default().to_owned();
    let (status, v) = ui.api(
        "PATCH",
        "/api/packs/p/memories/no-such-id",
        Some(json!({"base": head, "summary": "s", "content": "c"})),
    );
    assert_eq!(status, 404, "an unknown memory id: {v}");
    let (status, v) = ui.api(
        "PATCH",
        "/api/packs/p/memories/no-such-id",
        Some(json!({"base": "a".repeat(1 << 20), "summary": "s", "content": "c"})),
    );
    assert_eq!(status, 400, "a 1 MB base: {v}");
    let auth = format!("Bearer {}", ui.token);
    let origin = format!("http://{}", ui.authority);
    let (status, _, text) = ui.request(
        "POST",
        "/packs/init",
        &[
            ("Authorization", &auth),
            ("Origin", &origin),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        "name=..%2Fx",
    );
    assert_eq!(status, 400, "{text}");
}

#[test]
fn list_engrams_names_the_directory_the_tools_use_when_two_packs_claim_one_name() {
    let env = TestEnv::new();
    env.init("a-coach");
    env.init("coach");
    // `a-coach` claims the name `coach` too; lookups by name find the directory `coach` first.
    std::fs::write(env.pack("a-coach").join("meta.json"), r#"{"name": "coach", "description": "d"}"#)
        .expect("write");
    let listed = cli_ok(&env, &["list"]);
    let packs = env.packs.canonicalize().expect("packs");
    let line = listed.lines().find(|l| l.contains("shadowed")).expect("a shadow line");
    let (used, hidden) = (packs.join("coach"), packs.join("a-coach"));
    assert!(line.contains(&format!("the tools use {};", used.display())), "{listed}");
    assert!(line.contains(&format!("{} is hidden", hidden.display())), "{listed}");
    let info = cli_ok(&env, &["list"]);
    assert!(info.contains("- coach:"), "{info}");
}

#[test]
fn accepting_a_proposal_that_adds_a_secret_is_refused_in_reviews_words() {
    let env = TestEnv::new();
    env.init("team");
    let pack = env.pack("team");
    let key = ["ghp_", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"].concat();
    let main = git(&pack, &["rev-parse", "--abbrev-ref", "HEAD"]).trim().to_owned();
    git(&pack, &["checkout", "-qb", "proposals/mallory"]);
    std::fs::write(pack.join("knowledge/leak.md"), format!("token {key}\n")).expect("write");
    git(&pack, &["add", "-A"]);
    git(&pack, &["-c", "user.name=m", "-c", "user.email=m@m", "commit", "-qm", "a leak"]);
    git(&pack, &["checkout", "-q", &main]);
    let before = git(&pack, &["rev-parse", "HEAD"]);
    let out = env.cli(&["review", "accept", "team", "proposals/mallory"]);
    let text = stderr(&out);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("proposals/mallory") && text.contains("nothing of the proposal was merged"),
        "{text}"
    );
    assert!(!text.contains("fetched from the remote") && !text.contains("engram sync"), "{text}");
    assert!(!text.contains(&key), "the secret is masked: {text}");
    assert_eq!(before, git(&pack, &["rev-parse", "HEAD"]));
}

/// A symbolic link committed by git (or by an engram before it refused links) is named by
/// `engram doctor` as a committed link, never as "a directory", and its repair brings the
/// folder back as it was before the link; it never restores the link.
#[test]
fn doctor_names_a_committed_link_and_its_repair_restores_the_folder() {
    let env = TestEnv::new();
    env.init("p");
    let pack = env.pack("p");
    let outside = env.dir.path().join("outside");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::fs::rename(pack.join("knowledge"), env.dir.path().join("kept")).expect("move");
    std::os::unix::fs::symlink(&outside, pack.join("knowledge")).expect("link");
    git(&pack, &["add", "-A"]);
    git(&pack, &["commit", "-qm", "a link"]);
    let out = env.cli(&["doctor", "p"]);
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("knowledge is committed as a symbolic link"), "{said}");
    assert!(!said.contains("a directory?"), "{said}");
    let repair = said
        .lines()
        .find_map(|l| l.trim().strip_prefix("repair: "))
        .and_then(|r| r.split("   (").next())
        .expect("a repair line")
        .to_owned();
    assert!(repair.contains("checkout") && repair.contains("-- knowledge"), "{repair}");
    // The repair runs as a person would paste it, with the suite's git identity.
    let git_vars: Vec<(String, String)> = git_command()
        .get_envs()
        .filter_map(|(k, v)| Some((k.to_str()?.to_owned(), v?.to_str()?.to_owned())))
        .collect();
    let done = std::process::Command::new("sh").args(["-c", &repair]).envs(git_vars).output().expect("sh");
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    assert!(git(&pack, &["ls-tree", "HEAD", "knowledge"]).starts_with("040000 tree"), "a folder again");
    let out = env.cli(&["doctor", "p"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
}
