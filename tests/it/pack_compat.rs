//! What a user of the Python Engram server meets when moving to engram: installing
//! from a bare repository, hand edits to the hot index, the audit trail of a pack
//! written by the reference, and diffs that touch only what a write changes.
//! Every pack here is made by the test (no files from `../shared`).

use std::fs;

use serde_json::json;

use crate::common::*;
use crate::engram_tools::make_pack;

/// A pack committed with the real git CLI, cloned bare to `usb/coach.git` (the
/// README's USB-disk case); returns the bare repository's path.
fn bare_pack_on_usb(env: &TestEnv) -> std::path::PathBuf {
    make_pack(env, "src-pack");
    let src = env.pack("src-pack");
    git(&src, &["init", "-q", "-b", "main"]);
    git(&src, &["-c", "user.name=t", "-c", "user.email=t@t", "add", "-A"]);
    git(&src, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"]);
    let usb = env.dir.path().join("usb");
    fs::create_dir_all(&usb).expect("mkdir");
    let bare = usb.join("coach.git");
    git(env.dir.path(), &["clone", "-q", "--bare", &src.display().to_string(), &bare.display().to_string()]);
    fs::remove_dir_all(&src).expect("rm");
    bare
}

#[tokio::test]
async fn install_from_a_bare_repository_by_plain_path() {
    let env = TestEnv::new();
    let bare = bare_pack_on_usb(&env);
    let out = env.cli(&["install", &bare.display().to_string()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim_end(), "安装成功：src-pack - 测试包 test pack");
    let pack = env.pack("coach");
    assert!(pack.join(".git").is_dir(), "a clone with a working tree");
    assert!(pack.join("meta.json").is_file() && pack.join("knowledge/深蹲.md").is_file());
    assert!(!pack.join("HEAD").exists() && !pack.join("objects").exists(), "not a copy of the git directory");
    assert_eq!(git(&pack, &["log", "--format=%s"]).trim(), "init", "the source's history, nothing added");
    assert_clean(&pack);

    // The same through the tool, into another packs directory.
    let other = TestEnv::new();
    let c = other.client().await;
    let r = ok(&c, "install_engram", json!({"source": bare.display().to_string()})).await;
    assert_eq!(r, "安装成功：src-pack - 测试包 test pack");
    let r = ok(
        &c,
        "capture_memory",
        json!({"name": "coach", "category": "prefs", "content": "早上练", "summary": "早上练"}),
    )
    .await;
    assert!(r.starts_with("已记录"), "{r}");
    assert_eq!(commit_count(&other.pack("coach")), 2);
    c.close().await.expect("close");
}
