//! History and undo over MCP: memory_history, revert_memory, undo_last, as_of.

use std::path::Path;

use serde_json::json;

use crate::common::*;
use crate::engram_tools::make_pack;

fn capture(category: &str, content: &str, summary: &str) -> serde_json::Value {
    json!({"name": "coach", "category": category, "content": content, "summary": summary})
}

fn commit_of(reply: &str) -> String {
    reply
        .lines()
        .find_map(|l| l.strip_prefix("commit: "))
        .expect("a commit id in the reply")
        .trim()
        .to_owned()
}

/// Every file of a commit's tree (path + blob id): equal listings mean byte-equal files.
fn tree(dir: &Path, rev: &str) -> String {
    git(dir, &["ls-tree", "-r", rev])
}

fn head(dir: &Path) -> String {
    git(dir, &["rev-parse", "HEAD"]).trim().to_owned()
}

async fn revert_restores_exactly(setup: &[serde_json::Value], tool: &str, args: serde_json::Value) {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let c = env.client().await;
    for a in setup {
        ok(&c, "capture_memory", a.clone()).await;
    }
    let dir = env.pack("coach");
    let before = head(&dir);
    let id = commit_of(&ok(&c, tool, args).await);
    assert_ne!(tree(&dir, "HEAD"), tree(&dir, &before));
    let r = ok(&c, "revert_memory", json!({"name": "coach", "commit": id})).await;
    assert!(r.starts_with(&format!("已撤销 (reverted) commit {id}")), "{r}");
    assert_eq!(
        tree(&dir, "HEAD"),
        tree(&dir, &before),
        "{tool} revert must restore the earlier files byte for byte"
    );
    assert_clean(&dir);
    assert_fsck(&dir);
    let msg = git(&dir, &["log", "-1", "--format=%B"]);
    assert!(msg.contains("Engram-Tool: revert_memory") && msg.contains("Engram-Reverts: "), "{msg}");
}

#[tokio::test]
async fn revert_of_a_capture_restores_the_earlier_files() {
    revert_restores_exactly(
        &[capture("prefs", "早上训练", "早上训练")],
        "capture_memory",
        capture("prefs", "晚上拉伸", "晚上拉伸"),
    )
    .await;
}

#[tokio::test]
async fn revert_of_a_consolidate_restores_the_earlier_files() {
    revert_restores_exactly(
        &[capture("prefs", "早上训练", "早上训练"), capture("prefs", "晚上拉伸", "晚上拉伸"), capture("goals", "减脂", "减脂")],
        "consolidate_memory",
        json!({"name": "coach", "category": "prefs", "consolidated_content": "早上训练，晚上拉伸", "summary": "训练习惯"}),
    )
    .await;
}

#[tokio::test]
async fn revert_of_a_delete_restores_the_earlier_files() {
    revert_restores_exactly(
        &[capture("prefs", "早上训练", "早上训练"), capture("prefs", "晚上拉伸", "晚上拉伸")],
        "delete_memory",
        json!({"name": "coach", "category": "prefs", "summary": "早上训练"}),
    )
    .await;
}

#[tokio::test]
async fn reverting_an_older_capture_keeps_later_ones_and_the_indexes_consistent() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let c = env.client().await;
    let dir = env.pack("coach");
    ok(&c, "capture_memory", capture("prefs", "早上训练", "早上训练")).await;
    let old = commit_of(&ok(&c, "capture_memory", capture("prefs", "不吃香菜", "不吃香菜")).await);
    ok(&c, "capture_memory", capture("prefs", "晚上拉伸", "晚上拉伸")).await;
    ok(&c, "capture_memory", capture("goals", "减脂", "减脂")).await;
    ok(&c, "revert_memory", json!({"name": "coach", "commit": old})).await;
    let prefs = env.read("coach", "memory/prefs.md");
    assert!(
        prefs.contains("早上训练") && prefs.contains("晚上拉伸") && !prefs.contains("不吃香菜"),
        "{prefs}"
    );
    let hot = env.read("coach", "memory/_index.md");
    assert!(!hot.contains("不吃香菜") && hot.contains("晚上拉伸") && hot.contains("减脂"), "{hot}");
    let full = env.read("coach", "memory/_index_full.md");
    assert!(
        !full.contains("不吃香菜") && full.lines().filter(|l| l.starts_with("- `memory/")).count() == 3,
        "{full}"
    );
    assert_clean(&dir);
    let lint = env.cli(&["lint", "coach"]);
    assert!(lint.status.success(), "lint after revert: {}", String::from_utf8_lossy(&lint.stdout));
    // Reverting a delete after later captures puts the entry back.
    let del = commit_of(
        &ok(&c, "delete_memory", json!({"name": "coach", "category": "prefs", "summary": "早上训练"})).await,
    );
    ok(&c, "capture_memory", capture("prefs", "周末爬山", "周末爬山")).await;
    ok(&c, "revert_memory", json!({"name": "coach", "commit": del})).await;
    let full = env.read("coach", "memory/_index_full.md");
    assert!(full.contains("早上训练") && full.contains("周末爬山"), "{full}");
    let lint = env.cli(&["lint", "coach"]);
    assert!(lint.status.success(), "lint after revert: {}", String::from_utf8_lossy(&lint.stdout));
}

#[tokio::test]
async fn a_conflicting_revert_names_the_later_commit() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let c = env.client().await;
    let dir = env.pack("coach");
    let cap = commit_of(&ok(&c, "capture_memory", capture("prefs", "早上训练", "早上训练")).await);
    let fix = commit_of(
        &ok(&c, "correct_memory", json!({"name": "coach", "category": "prefs", "old_summary": "早上训练", "new_content": "早上七点训练", "new_summary": "早上七点训练"}))
            .await,
    );
    let before = commit_count(&dir);
    let e = err(&c, "revert_memory", json!({"name": "coach", "commit": cap})).await;
    assert!(
        e.contains(&format!("cannot revert) commit {cap}")) && e.contains(&fix) && e.contains("correct:"),
        "{e}"
    );
    assert_eq!(commit_count(&dir), before);
    // A plain file edited again later: 3-way merge conflict names the later commit.
    let w1 = commit_of(
        &ok(&c, "write_engram_file", json!({"name": "coach", "path": "notes.md", "content": "a\n"})).await,
    );
    let w2 = commit_of(
        &ok(&c, "write_engram_file", json!({"name": "coach", "path": "notes.md", "content": "b\n"})).await,
    );
    let e = err(&c, "revert_memory", json!({"name": "coach", "commit": w1})).await;
    assert!(e.contains("notes.md") && e.contains(&w2), "{e}");
    let e = err(&c, "revert_memory", json!({"name": "coach", "commit": "deadbeef"})).await;
    assert!(e.contains("no commit \"deadbeef\""), "{e}");
}

#[tokio::test]
async fn undo_last_reverts_the_last_tool_commits_of_a_client() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let c = env.client().await;
    let dir = env.pack("coach");
    ok(&c, "capture_memory", capture("prefs", "早上训练", "早上训练")).await;
    let base = head(&dir);
    ok(&c, "capture_memory", capture("prefs", "晚上拉伸", "晚上拉伸")).await;
    ok(&c, "capture_memory", capture("goals", "减脂", "减脂")).await;
    let before = commit_count(&dir);
    let r = ok(&c, "undo_last", json!({"name": "coach", "n": 2, "client": "rmcp"})).await;
    assert!(r.starts_with("已撤销 2 次提交"), "{r}");
    assert_eq!(commit_count(&dir), before + 1, "one commit for the whole undo");
    assert_eq!(tree(&dir, "HEAD"), tree(&dir, &base));
    // Undoing again goes further back, not redo.
    ok(&c, "undo_last", json!({"name": "coach"})).await;
    assert!(!env.read("coach", "memory/prefs.md").contains("早上训练"));
    let r = ok(&c, "undo_last", json!({"name": "coach", "client": "someone-else"})).await;
    assert!(r.contains("no tool commits of client"), "{r}");
    assert_clean(&dir);
}

#[tokio::test]
async fn memory_history_shows_entries_and_filters() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let c = env.client().await;
    ok(&c, "capture_memory", capture("prefs", "早上 7 点训练效果最好", "早上训练")).await;
    ok(&c, "capture_memory", capture("goals", "三个月减 5 公斤", "减脂")).await;
    ok(&c, "delete_memory", json!({"name": "coach", "category": "prefs", "summary": "早上训练"})).await;
    ok(&c, "write_engram_file", json!({"name": "coach", "path": "notes.md", "content": "a\nb\n"})).await;
    let h = ok(&c, "memory_history", json!({"name": "coach"})).await;
    assert!(h.contains("· capture_memory · rmcp"), "{h}");
    assert!(h.contains("+ [prefs] 早上训练 (general, 2026-11-22 10:00)\n    早上 7 点训练效果最好"), "{h}");
    assert!(h.contains("- [prefs] 早上训练"), "{h}");
    assert!(h.contains("A notes.md (+2 −0 lines)"), "{h}");
    assert!(!h.contains("memory/_index") && !h.contains("_onboarded"), "no raw index noise: {h}");
    let order: Vec<usize> =
        ["capture: prefs", "capture: goals", "delete: prefs"].iter().map(|s| h.find(s).expect(s)).collect();
    assert!(order[0] > order[1] && order[1] > order[2], "newest first: {h}");
    let h = ok(&c, "memory_history", json!({"name": "coach", "summary": "减脂"})).await;
    assert!(h.contains("(history, newest first: 1 commits)") && h.contains("+ [goals] 减脂"), "{h}");
    let h = ok(&c, "memory_history", json!({"name": "coach", "path": "notes.md"})).await;
    assert!(h.contains("1 commits"), "{h}");
    let h = ok(&c, "memory_history", json!({"name": "coach", "since": "2030-01-01"})).await;
    assert!(h.contains("no matching commits"), "{h}");
    let h = ok(&c, "memory_history", json!({"name": "coach", "limit": 2})).await;
    assert!(h.contains("2 commits"), "{h}");
}

#[tokio::test]
async fn as_of_shows_the_pack_as_it_was() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let c = env.client().await;
    let first = commit_of(&ok(&c, "capture_memory", capture("prefs", "早上训练", "早上训练")).await);
    ok(&c, "write_engram_file", json!({"name": "coach", "path": "role.md", "content": "# 角色\n新的角色\n"}))
        .await;
    ok(&c, "capture_memory", capture("prefs", "晚上拉伸", "晚上拉伸")).await;
    let then = ok(&c, "load_engram", json!({"name": "coach", "query": "q", "as_of": first})).await;
    assert!(
        then.starts_with(
            "# 已加载 Engram: coach\n\n## 用户关注方向\nq\n\n## 角色\n# 角色\n你是一名耐心的健身教练。"
        ),
        "{then}"
    );
    assert!(then.contains("早上训练") && !then.contains("晚上拉伸"), "{then}");
    let now = ok(&c, "load_engram", json!({"name": "coach", "query": "q"})).await;
    assert!(now.contains("新的角色") && now.contains("晚上拉伸"));
    let f = ok(&c, "read_engram_file", json!({"name": "coach", "path": "role.md", "as_of": first})).await;
    assert_eq!(f, "## role.md\n# 角色\n你是一名耐心的健身教练。");
    let f =
        ok(&c, "read_engram_file", json!({"name": "coach", "path": "role.md", "as_of": "2026-11-22"})).await;
    assert_eq!(f, "## role.md\n# 角色\n新的角色");
    let e =
        err(&c, "read_engram_file", json!({"name": "coach", "path": "role.md", "as_of": "2001-01-01"})).await;
    assert!(e.contains("no commit"), "{e}");
}

#[tokio::test]
async fn the_default_toolset_lists_the_history_tools() {
    let env = TestEnv::new();
    let c = env.client().await;
    let names = c.tool_names().await.expect("tools/list");
    for t in ["memory_history", "revert_memory", "undo_last"] {
        assert!(names.iter().any(|n| n == t), "{t} missing from {names:?}");
    }
    assert!(names.len() <= 16, "{names:?}");
}
