//! A damaged pack fails alone, with a clear error; `engram doctor` says what and how to repair.

use std::fs;
use std::path::Path;

use serde_json::json;

use crate::common::*;

/// Two healthy packs and one that `damage` breaks after a first capture.
async fn scenario(damage: impl FnOnce(&Path)) -> (TestEnv, StdioClient) {
    let env = TestEnv::new();
    for p in ["good", "bad"] {
        env.init(p);
    }
    let c = env.client().await;
    for p in ["good", "bad"] {
        ok(&c, "capture_memory", json!({"name": p, "category": "c", "content": "first", "summary": "first"}))
            .await;
    }
    c.close().await.expect("close");
    damage(&env.pack("bad"));
    // A server started on the damaged packs directory.
    let c = env.client().await;
    (env, c)
}

/// The damaged pack's writes fail with `needle` in the error; the healthy one keeps working.
async fn assert_isolated(env: &TestEnv, c: &StdioClient, needle: &str) {
    let text = err(
        c,
        "capture_memory",
        json!({"name": "bad", "category": "c", "content": "second", "summary": "second"}),
    )
    .await;
    assert!(text.contains(needle), "error should say {needle:?}: {text}");
    ok(
        c,
        "capture_memory",
        json!({"name": "good", "category": "c", "content": "second", "summary": "second"}),
    )
    .await;
    ok(c, "delete_memory", json!({"name": "good", "category": "c", "summary": "first"})).await;
    assert!(ok(c, "list_engrams", json!({})).await.contains("good"));
    assert!(ok(c, "load_engram", json!({"name": "good"})).await.contains("second"));
    assert_fsck(&env.pack("good"));
    crate::concurrency::assert_consistent(&env.pack("good"));
}

fn doctor(env: &TestEnv, args: &[&str]) -> (bool, String) {
    let mut a = vec!["doctor"];
    a.extend_from_slice(args);
    let out = env.cli(&a);
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

fn assert_doctor(env: &TestEnv, needle: &str) {
    let (success, report) = doctor(env, &["bad"]);
    assert!(!success, "doctor exits 1 on a damaged pack: {report}");
    assert!(report.contains(needle) && report.contains("repair:"), "{report}");
    let (success, report) = doctor(env, &["good"]);
    assert!(success && report.contains("✓ good"), "{report}");
    let (success, all) = doctor(env, &[]);
    assert!(!success && all.contains("✓ good") && all.contains("✗ bad"), "{all}");
}

/// Turns every pack of the repository into loose objects (engram writes packs),
/// so that one object can be removed.
fn unpack_all(pack: &std::path::Path) {
    let pack_dir = pack.join(".git/objects/pack");
    for entry in fs::read_dir(&pack_dir).expect("pack dir").flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|x| x == "pack") {
            let bytes = fs::read(&path).expect("read pack");
            fs::remove_file(&path).expect("remove pack");
            fs::remove_file(path.with_extension("idx")).expect("remove idx");
            let mut child = git_in(pack)
                .args(["unpack-objects", "-q"])
                .stdin(std::process::Stdio::piped())
                .spawn()
                .expect("git unpack-objects");
            std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), &bytes).expect("feed");
            assert!(child.wait().expect("wait").success());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_object() {
    let (env, c) = scenario(|pack| {
        let id = git(pack, &["rev-parse", "HEAD:memory/c.md"]).trim().to_owned();
        unpack_all(pack);
        let loose = pack.join(".git/objects").join(&id[..2]).join(&id[2..]);
        fs::remove_file(&loose).expect("the blob is a loose object");
    })
    .await;
    assert_isolated(&env, &c, "reading a blob").await;
    assert_doctor(&env, "is missing or corrupt");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_ref_and_its_repair() {
    let (env, c) = scenario(|pack| {
        let branch = git(pack, &["symbolic-ref", "HEAD"]).trim().to_owned();
        fs::write(pack.join(".git").join(&branch), "1234567890123456789012345678901234567890\n")
            .expect("write ref");
    })
    .await;
    assert_isolated(&env, &c, "reading HEAD").await;
    assert_doctor(&env, "does not resolve to a commit");
    // Follow the repair doctor prints: `git -C … update-ref <branch> <id>`.
    let (_, report) = doctor(&env, &["bad"]);
    let cmd = report.lines().find(|l| l.contains("update-ref")).expect("repair command");
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "update-ref").expect("update-ref");
    git(&env.pack("bad"), &["update-ref", words[at + 1], words[at + 2]]);
    assert!(doctor(&env, &["bad"]).0, "repaired");
    ok(
        &c,
        "capture_memory",
        json!({"name": "bad", "category": "c", "content": "after repair", "summary": "after repair"}),
    )
    .await;
    // `update-ref` logs the bogus old id in the reflog; the objects and refs are sound.
    let out = git_in(&env.pack("bad"))
        .args(["fsck", "--strict", "--no-reflogs", "--no-progress"])
        .output()
        .expect("git fsck");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_meta_json() {
    let (env, c) = scenario(|pack| fs::write(pack.join("meta.json"), "{ not json").expect("write")).await;
    assert_isolated(&env, &c, "meta.json is not valid JSON").await;
    let list = ok(&c, "list_engrams", json!({})).await;
    assert!(!list.contains("- bad:"), "a broken pack is not listed as usable: {list}");
    assert!(list.contains("⚠ bad: meta.json is not valid JSON"), "it is named with a warning: {list}");
    assert_doctor(&env, "meta.json is not valid JSON");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_replaced_by_a_directory() {
    let (env, c) = scenario(|pack| {
        let f = pack.join("memory/_index_full.md");
        fs::remove_file(&f).expect("rm");
        fs::create_dir_all(f.join("sub")).expect("mkdir");
        fs::write(f.join("sub/x.md"), "x").expect("write");
    })
    .await;
    assert_isolated(&env, &c, "replaced by a directory").await;
    assert_doctor(&env, "memory/_index_full.md is a file in the last commit");
    // Nothing was committed over the damage: HEAD still has the file.
    git(&env.pack("bad"), &["cat-file", "-e", "HEAD:memory/_index_full.md"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_dir_replaced_by_a_file() {
    let (env, c) = scenario(|pack| {
        fs::rename(pack.join(".git"), pack.with_extension("git-moved")).expect("mv");
        fs::write(pack.join(".git"), "gitdir: /nonexistent\n").expect("write");
    })
    .await;
    assert_isolated(&env, &c, "cannot open the git repository").await;
    assert_doctor(&env, ".git is not a directory");
}

/// Issue 15 item 13: `memory/` replaced by a symbolic link to a directory outside
/// the pack. Writes refuse (committing it would delete every memory file from
/// HEAD) and `engram doctor` names it instead of saying "ok".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_replaced_by_a_symlink_out_of_the_pack() {
    let (env, c) = scenario(|pack| {
        let outside = pack.with_extension("outside-memory");
        fs::rename(pack.join("memory"), &outside).expect("mv");
        std::os::unix::fs::symlink(&outside, pack.join("memory")).expect("symlink");
    })
    .await;
    let before = commit_count(&env.pack("bad"));
    assert_isolated(&env, &c, "memory replaced by a symbolic link").await;
    assert_doctor(&env, "memory is a symbolic link in the working tree");
    assert_eq!(commit_count(&env.pack("bad")), before, "nothing committed over the link");
    git(&env.pack("bad"), &["cat-file", "-e", "HEAD:memory/c.md"]);
    // Following the repair restores the pack.
    let pack = env.pack("bad");
    fs::remove_file(pack.join("memory")).expect("rm link");
    git(&pack, &["checkout", "--", "memory"]);
    assert!(doctor(&env, &["bad"]).0);
}

/// Undoes a bind mount when dropped.
struct Mounted(std::path::PathBuf);
impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// Makes `dir` read-only for this process: a read-only bind mount as root (root
/// ignores permission bits), `chmod a-w` otherwise. `None` when not permitted here.
fn make_read_only(dir: &Path) -> Option<Option<Mounted>> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        use std::os::unix::fs::PermissionsExt as _;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o555)).expect("chmod");
        return Some(None);
    }
    let run = |args: &[&str]| {
        std::process::Command::new("mount").args(args).arg(dir).arg(dir).status().is_ok_and(|s| s.success())
    };
    if !run(&["--bind"]) {
        return None;
    }
    let mounted = Mounted(dir.to_owned());
    let ro = std::process::Command::new("mount")
        .args(["-o", "remount,bind,ro"])
        .arg(dir)
        .status()
        .is_ok_and(|s| s.success());
    ro.then_some(Some(mounted))
}

/// Issue 15 item 13: `.git/objects` not writable. Writes fail with the system's
/// reason, reads work, and `engram doctor` reports it instead of "ok".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_objects_not_writable() {
    let env = TestEnv::new();
    env.init("bad");
    let c = env.client().await;
    ok(&c, "capture_memory", json!({"name": "bad", "category": "c", "content": "first", "summary": "first"}))
        .await;
    let objects = env.pack("bad").join(".git/objects");
    let Some(guard) = make_read_only(&objects) else {
        eprintln!("skipped: cannot make a directory read-only here (mount not permitted)");
        return;
    };
    let text = err(
        &c,
        "capture_memory",
        json!({"name": "bad", "category": "c", "content": "second", "summary": "second"}),
    )
    .await;
    assert!(text.contains("Read-only file system") || text.contains("Permission denied"), "{text}");
    assert!(ok(&c, "load_engram", json!({"name": "bad"})).await.contains("first"), "reads still work");
    let (success, report) = doctor(&env, &["bad"]);
    assert!(
        !success && report.contains(".git/objects is not writable") && report.contains("repair:"),
        "{report}"
    );
    c.close().await.expect("close");
    drop(guard);
    {
        use std::os::unix::fs::PermissionsExt as _;
        fs::set_permissions(&objects, fs::Permissions::from_mode(0o755)).expect("chmod back");
    }
    assert!(doctor(&env, &["bad"]).0, "writable again: ok");
}

/// Issue 15 item 13: a missing `.git/HEAD`. git does not recognise the
/// repository any more, but recreating HEAD is the whole repair — doctor says
/// that (not "reclone"), and after it the pack works with its history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_head_and_its_repair() {
    let (env, c) = scenario(|pack| fs::remove_file(pack.join(".git/HEAD")).expect("rm HEAD")).await;
    assert_isolated(&env, &c, "cannot open the git repository").await;
    assert_doctor(&env, ".git/HEAD is missing");
    let (_, report) = doctor(&env, &["bad"]);
    assert!(!report.contains("git clone"), "no reclone advice: {report}");
    let cmd = report.lines().find(|l| l.contains("echo 'ref: refs/heads/")).expect("repair command");
    let line = cmd.split('\'').nth(1).expect("quoted ref line");
    fs::write(env.pack("bad").join(".git/HEAD"), format!("{line}\n")).expect("recreate HEAD");
    assert!(doctor(&env, &["bad"]).0, "repaired");
    let before = commit_count(&env.pack("bad"));
    ok(
        &c,
        "capture_memory",
        json!({"name": "bad", "category": "c", "content": "after repair", "summary": "after repair"}),
    )
    .await;
    assert_eq!(commit_count(&env.pack("bad")), before + 1, "the history is intact and grows");
    assert_fsck(&env.pack("bad"));
}
