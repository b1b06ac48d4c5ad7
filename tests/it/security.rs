//! Hostile input: path traversal in every path-like argument, a malicious pack from
//! `install_engram`. (HTTP tokens and Origins: `http.rs`. Cross-user access in the personal
//! toolset: its engineer adds `personal_*` tests here, with rows in `path_like_arguments`.)

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
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=evil",
            "-c",
            "user.email=evil@example.invalid",
            "-c",
            "protocol.file.allow=always",
        ])
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
