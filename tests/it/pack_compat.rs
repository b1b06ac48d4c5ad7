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
    git(&src, &["add", "-A"]);
    git(&src, &["commit", "-qm", "init"]);
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

/// A pack as the reference leaves it: `memory/_index.md` (section headings, no
/// `_index_full.md`) and category files spaced by hand — extra blank lines before one
/// separator, none before another, a trailing blank line.
fn reference_style_pack(env: &TestEnv, name: &str) {
    make_pack(env, name);
    let memory = env.pack(name).join("memory");
    fs::write(
        memory.join("_index.md"),
        "## 动态记忆\n\n### 用户档案\n\
         - `memory/user-profile.md` [2026-02-20 10:30] [fact] [body] 男，28岁\n\
         - `memory/user-profile.md` [2026-02-20 10:32] [fact] [injury] 左膝旧伤\n\
         - `memory/user-profile.md` [2026-02-25 09:30] [stated] [schedule] 只在早晨训练\n\
         - `memory/user-profile.md` [2026-02-25 09:40] [inferred] [diet] 不吃牛肉\n\n\
         ### 偏好\n\
         - `memory/preferences.md` [2026-02-21 08:00] [preference] 喜欢哑铃\n\
         - `memory/preferences.md` [2026-02-21 08:05] [preference] 不喜欢跑步\n",
    )
    .expect("write");
    fs::write(
        memory.join("user-profile.md"),
        "\n---\n[2026-02-20 10:30] type:fact tags:body\n男，28岁，久坐。\n\
         \n\n---\n[2026-02-20 10:32] type:fact tags:injury\n左膝旧伤，深蹲不过 90 度。\n\
         ---\n[2026-02-25 09:30] type:stated tags:schedule\n只在早晨训练。\n\n\n\
         \n---\n[2026-02-25 09:40] type:inferred tags:diet\n不吃牛肉。\n\n",
    )
    .expect("write");
    fs::write(
        memory.join("preferences.md"),
        "\n---\n[2026-02-21 08:00] type:preference\n喜欢哑铃。\n\n\n---\n[2026-02-21 08:05] type:preference\n不喜欢跑步。\n",
    )
    .expect("write");
}

/// The lines of `git show` for one file that the commit removed and added (no headers).
fn changed_lines(pack: &std::path::Path, rev: &str, path: &str) -> (Vec<String>, Vec<String>) {
    let diff = git(pack, &["show", "--format=", "--unified=0", rev, "--", path]);
    let body = diff.lines().filter(|l| !l.starts_with("---") && !l.starts_with("+++"));
    let (mut removed, mut added) = (Vec::new(), Vec::new());
    for l in body {
        if let Some(r) = l.strip_prefix('-') {
            removed.push(r.to_owned());
        } else if let Some(a) = l.strip_prefix('+') {
            added.push(a.to_owned());
        }
    }
    (removed, added)
}

#[tokio::test]
async fn history_reports_the_entries_a_commit_changed_not_index_churn() {
    let env = TestEnv::new();
    reference_style_pack(&env, "coach");
    let c = env.client().await;
    ok(
        &c,
        "capture_memory",
        json!({"name": "coach", "category": "user-profile", "content": "周三加练", "summary": "周三加练"}),
    )
    .await;
    let pack = env.pack("coach");
    assert!(pack.join("memory/_index_full.md").exists(), "the capture created the full index");
    let history = ok(&c, "memory_history", json!({"name": "coach", "limit": 1})).await;
    let entries: Vec<&str> = history.lines().filter(|l| l.starts_with("+ ") || l.starts_with("- ")).collect();
    assert_eq!(entries, ["+ [user-profile] 周三加练 (general, 2026-11-22 10:00)"], "{history}");
    assert!(
        history.contains("index: +6 −0 lines without an entry change (created from memory/_index.md)"),
        "{history}"
    );

    let out = env.cli(&["log", "coach", "-p", "-n", "1"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let log = String::from_utf8_lossy(&out.stdout).into_owned();
    let entries: Vec<&str> =
        log.lines().filter(|l| l.starts_with("    + ") || l.starts_with("    - ")).collect();
    assert_eq!(entries, ["    + [user-profile] 周三加练 (general, 2026-11-22 10:00)"], "{log}");

    // A delete names the one entry it removed, however the index moved around it.
    ok(&c, "delete_memory", json!({"name": "coach", "category": "preferences", "summary": "不喜欢跑步"}))
        .await;
    let history = ok(&c, "memory_history", json!({"name": "coach", "limit": 1})).await;
    let entries: Vec<&str> = history.lines().filter(|l| l.starts_with("+ ") || l.starts_with("- ")).collect();
    assert_eq!(entries, ["- [preferences] 不喜欢跑步 (preference, 2026-02-21 08:05)"], "{history}");
    assert!(!history.contains("index:"), "{history}");
    c.close().await.expect("close");
}

#[tokio::test]
async fn a_write_diff_touches_only_the_entry_it_changes() {
    let env = TestEnv::new();
    reference_style_pack(&env, "coach");
    let pack = env.pack("coach");
    let before = fs::read_to_string(pack.join("memory/user-profile.md")).expect("read");
    let c = env.client().await;
    ok(
        &c,
        "capture_memory",
        json!({"name": "coach", "category": "user-profile", "content": "周三加练", "summary": "周三加练"}),
    )
    .await;
    let after = fs::read_to_string(pack.join("memory/user-profile.md")).expect("read");
    assert!(after.starts_with(&before), "older blocks keep their spacing:\n{after}");
    let (removed, added) = changed_lines(&pack, "HEAD", "memory/user-profile.md");
    assert!(removed.is_empty(), "{removed:?}");
    assert_eq!(
        added,
        ["", "---", "[2026-11-22 10:00] type:general", "周三加练"],
        "the reference's append: separator, meta, content"
    );

    // Delete and correct change one block each; the blocks around them keep their bytes.
    ok(&c, "delete_memory", json!({"name": "coach", "category": "user-profile", "summary": "左膝旧伤"}))
        .await;
    let (removed, added) = changed_lines(&pack, "HEAD", "memory/user-profile.md");
    assert_eq!(removed, ["[2026-02-20 10:32] type:fact tags:injury", "左膝旧伤，深蹲不过 90 度。"]);
    assert!(added.is_empty(), "{added:?}");
    let deleted = fs::read_to_string(pack.join("memory/user-profile.md")).expect("read");
    assert_eq!(
        deleted,
        after.replace("\n---\n[2026-02-20 10:32] type:fact tags:injury\n左膝旧伤，深蹲不过 90 度。", "")
    );
    ok(
        &c,
        "correct_memory",
        json!({"name": "coach", "category": "user-profile", "old_summary": "不吃牛肉", "new_content": "不吃羊肉。", "new_summary": "不吃羊肉"}),
    )
    .await;
    let (removed, added) = changed_lines(&pack, "HEAD", "memory/user-profile.md");
    assert!(
        removed.contains(&"不吃牛肉。".to_owned()) && added.contains(&"不吃羊肉。".to_owned()),
        "{removed:?} {added:?}"
    );
    assert!(
        !removed.iter().chain(&added).any(|l| l.contains("男，28岁") || l.contains("周三加练")),
        "{removed:?} {added:?}"
    );
    let text = fs::read_to_string(pack.join("memory/user-profile.md")).expect("read");
    assert!(
        text.starts_with(
            "\n---\n[2026-02-20 10:30] type:fact tags:body\n男，28岁，久坐。\n\n\n---\n[2026-02-25 09:30]"
        ),
        "{text:?}"
    );
    assert_clean(&pack);
    c.close().await.expect("close");
}

/// `memory/_index.md` is derived: a hand edit is committed as `edit: …` (so it stays in
/// the history), and the next memory write regenerates the file and says so in its
/// commit message. Writes that find the file as engram left it carry no such note, from
/// a fresh process too.
#[tokio::test]
async fn a_hand_edit_to_the_hot_index_is_regenerated_and_the_commit_says_so() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let pack = env.pack("coach");
    let capture =
        |content: &str| json!({"name": "coach", "category": "prefs", "content": content, "summary": content});
    let note = "memory/_index.md is derived from the entries and was regenerated";
    {
        let c = env.client().await;
        ok(&c, "capture_memory", capture("早上练")).await;
        ok(&c, "capture_memory", capture("喜欢哑铃")).await;
        c.close().await.expect("close");
    }
    // A new process (nothing remembered) writing to an index engram left: no note.
    let c = env.client().await;
    ok(&c, "capture_memory", capture("不跑步")).await;
    ok(&c, "delete_memory", json!({"name": "coach", "category": "prefs", "summary": "不跑步"})).await;
    let bodies = git(&pack, &["log", "--format=%B"]);
    assert!(!bodies.contains(note), "{bodies}");

    let hot = pack.join("memory/_index.md");
    let text = fs::read_to_string(&hot).expect("read");
    fs::write(&hot, format!("{}\n手写的备注：周末休息\n", text.replace("喜欢哑铃", "很喜欢哑铃")))
        .expect("edit");
    ok(&c, "capture_memory", capture("周三加练")).await;
    let subjects = git(&pack, &["log", "-2", "--format=%s"]);
    assert_eq!(subjects, "capture: prefs — 周三加练\nedit: memory/_index.md\n");
    assert!(git(&pack, &["log", "-1", "--format=%b"]).contains(note), "the capture says it regenerated");
    assert!(
        git(&pack, &["show", "HEAD~1:memory/_index.md"]).contains("手写的备注"),
        "the edit stays in history"
    );
    let now = fs::read_to_string(&hot).expect("read");
    assert!(!now.contains("手写的备注") && !now.contains("很喜欢哑铃") && now.contains("周三加练"), "{now}");

    // The same for a delete (it rewrites the hot index from every entry).
    fs::write(&hot, format!("{now}\n又一条手写\n")).expect("edit");
    ok(&c, "delete_memory", json!({"name": "coach", "category": "prefs", "summary": "周三加练"})).await;
    assert!(git(&pack, &["log", "-1", "--format=%B"]).starts_with("delete: prefs — 周三加练"));
    assert!(git(&pack, &["log", "-1", "--format=%b"]).contains(note));
    assert!(!fs::read_to_string(&hot).expect("read").contains("又一条手写"));
    ok(&c, "capture_memory", capture("周四休息")).await;
    assert!(!git(&pack, &["log", "-1", "--format=%b"]).contains(note), "once regenerated, no note");
    assert_clean(&pack);
    c.close().await.expect("close");
}
