//! Every Engram tool over stdio: results, errors and the git history they leave.

use std::fs;

use serde_json::json;

use crate::common::*;

/// A small hand-made pack (no `.git`: adopted on first write).
pub fn make_pack(env: &TestEnv, name: &str) {
    let d = env.pack(name);
    fs::create_dir_all(d.join("knowledge/分组")).expect("mkdir");
    fs::create_dir_all(d.join("examples")).expect("mkdir");
    fs::create_dir_all(d.join("memory")).expect("mkdir");
    let meta = format!(
        "{{\n  \"name\": \"{name}\",\n  \"author\": \"tests\",\n  \"version\": \"1.0.0\",\n  \"description\": \"测试包 test pack\",\n  \"tags\": [\"测试\"],\n  \"knowledge_count\": 2,\n  \"examples_count\": 1\n}}\n"
    );
    fs::write(d.join("meta.json"), meta).expect("write");
    fs::write(d.join("role.md"), "# 角色\n你是一名耐心的健身教练。\n").expect("write");
    fs::write(d.join("workflow.md"), "1. 先问目标\n2. 再给计划\n").expect("write");
    fs::write(d.join("rules.md"), "# 规则\n不夸大效果。\n\n## Onboarding\n- 训练目标\n- 每周可训练天数\n")
        .expect("write");
    fs::write(
        d.join("knowledge/_index.md"),
        "## 知识索引\n\n### 基础\n- `knowledge/深蹲.md` - 深蹲要点。\n  摘要：膝盖与脚尖同向。\n- `knowledge/分组/_index.md` - 分组索引。\n",
    )
    .expect("write");
    fs::write(d.join("knowledge/深蹲.md"), "# 深蹲\n膝盖与脚尖同向，核心收紧。\n").expect("write");
    fs::write(d.join("knowledge/分组/_index.md"), "- `knowledge/分组/拉伸.md` - 拉伸。\n").expect("write");
    fs::write(d.join("knowledge/分组/拉伸.md"), "# 拉伸\n训练后拉伸。\n").expect("write");
    fs::write(
        d.join("examples/_index.md"),
        "## 案例索引\n- `examples/膝盖.md` - 膝盖疼。\n  uses: knowledge/深蹲.md\n",
    )
    .expect("write");
    fs::write(d.join("examples/膝盖.md"), "---\nid: knee\nuses:\n  - knowledge/深蹲.md\n---\n# 膝盖疼\n")
        .expect("write");
    fs::write(d.join("memory/_index.md"), "").expect("write");
}

fn capture(name: &str, category: &str, content: &str, summary: &str) -> serde_json::Value {
    json!({"name": name, "category": category, "content": content, "summary": summary})
}

#[tokio::test]
async fn read_only_tools_answer_like_the_reference() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let c = env.client().await;
    assert_eq!(ok(&c, "ping", json!({})).await, "pong");
    assert_eq!(
        ok(&c, "list_engrams", json!({})).await,
        "- coach: 测试包 test pack (knowledge=2, examples=1)"
    );
    let info = ok(&c, "get_engram_info", json!({"name": "coach"})).await;
    assert!(info.starts_with("{\n  \"name\": \"coach\",\n  \"author\": \"tests\""), "{info}");
    assert_eq!(err(&c, "get_engram_info", json!({"name": "nope"})).await, "未找到 Engram: nope");

    let load = ok(&c, "load_engram", json!({"name": "coach", "query": "膝盖疼能做深蹲吗"})).await;
    assert!(
        load.starts_with("# 已加载 Engram: coach\n\n## 用户关注方向\n膝盖疼能做深蹲吗\n\n## 角色\n# 角色"),
        "{load}"
    );
    for section in [
        "## 工作流程\n",
        "## 规则\n",
        "## 知识索引\n## 知识索引",
        "## 案例索引\n",
        "## 首次引导\n> 这是用户首次使用此专家",
    ] {
        assert!(load.contains(section), "missing {section:?} in {load}");
    }
    assert!(load.ends_with(
        "## 下一步\n请查看知识索引中的摘要，按需调用 read_engram_file(name, path) 读取完整知识或案例。"
    ));
    assert!(!load.contains("## 动态记忆"), "empty memory is not shown");

    assert_eq!(
        ok(&c, "read_engram_file", json!({"name": "coach", "path": "knowledge/深蹲.md"})).await,
        "## knowledge/深蹲.md\n# 深蹲\n膝盖与脚尖同向，核心收紧。"
    );
    for bad in ["../coach/meta.json", "/etc/passwd", ".git/config", "knowledge/不存在.md"] {
        let e = err(&c, "read_engram_file", json!({"name": "coach", "path": bad})).await;
        assert!(e.starts_with("未找到文件") || e.starts_with("非法路径"), "{bad}: {e}");
    }
    c.close().await.expect("close");
}

#[tokio::test]
async fn capture_writes_the_reference_format_and_one_commit() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let c = env.client().await;
    let r = ok(
        &c,
        "capture_memory",
        json!({"name": "coach", "category": "preferences", "content": "喜欢早上训练", "summary": "喜欢早上训练",
               "memory_type": "preference", "tags": ["fitness", "schedule"], "conversation_id": "session-abc123"}),
    )
    .await;
    assert!(r.starts_with("已记录: [preference] [preferences] 喜欢早上训练\ncommit: "), "{r}");
    let pack = env.pack("coach");
    assert_eq!(
        env.read("coach", "memory/preferences.md"),
        "\n---\n[2026-11-22 10:00] type:preference tags:fitness,schedule conv:session-abc123\n喜欢早上训练\n"
    );
    assert_eq!(
        env.read("coach", "memory/_index_full.md"),
        "- `memory/preferences.md` [2026-11-22 10:00] [preference] [fitness,schedule] 喜欢早上训练\n"
    );
    assert_eq!(
        env.read("coach", "memory/_index.md"),
        "## 分类摘要\n- `preferences` [2026-11-22 10:00] [preference] 喜欢早上训练\n\n## 最近记忆（最多50条）\n- `memory/preferences.md` [2026-11-22 10:00] [preference] [fitness,schedule] 喜欢早上训练\n"
    );
    assert!(pack.join("memory/_onboarded").exists());
    // adopt commit + capture commit; the capture's subject and trailers are readable.
    let log = git(&pack, &["log", "--format=%s%n%b%n--"]);
    assert!(log.starts_with("capture: preferences — 喜欢早上训练\n"), "{log}");
    assert!(log.contains("Engram-Tool: capture_memory"));
    assert!(log.contains("Engram-Client: rmcp"), "{log}");
    assert!(log.contains("Engram-Conversation: session-abc123"));
    assert_eq!(commit_count(&pack), 2);
    assert_clean(&pack);
    assert_fsck(&pack);

    // The load shows it; onboarding is over.
    let load = ok(&c, "load_engram", json!({"name": "coach", "query": "q"})).await;
    assert!(load.contains("## 动态记忆\n<memory>\n## 分类摘要"), "{load}");
    assert!(!load.contains("首次引导"));
    c.close().await.expect("close");
}

#[tokio::test]
async fn duplicate_capture_is_reported_with_the_earlier_commit() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let c = env.client().await;
    let first = ok(&c, "capture_memory", capture("coach", "facts", "体重 80kg", "体重 80kg")).await;
    let id = first.rsplit("commit: ").next().expect("id").trim().to_owned();
    let second = ok(&c, "capture_memory", capture("coach", "facts", "体重 80kg", "体重 80kg")).await;
    assert!(second.contains(&format!("duplicate of commit {id}")), "{second}");
    c.close().await.expect("close");
    // A second process sees the same history: the throttle is not per-process memory.
    let c2 = env.client().await;
    let third = ok(&c2, "capture_memory", capture("coach", "facts", "体重 80kg", "体重 80kg")).await;
    assert!(third.contains("duplicate of commit"), "{third}");
    assert_eq!(env.read("coach", "memory/facts.md").matches("体重 80kg").count(), 1);
    c2.close().await.expect("close");
}

#[tokio::test]
async fn bad_capture_arguments_write_nothing() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let c = env.client().await;
    for (args, needle) in [
        (capture("coach", "../role", "x", "x"), "category"),
        (capture("coach", "/etc/x", "x", "x"), "category"),
        (capture("coach", "_index", "x", "x"), "category"),
        (capture("coach", "prefs", "   ", "x"), "content"),
        (
            json!({"name": "coach", "category": "p", "content": "x", "summary": "s", "expires": "2026-6-1"}),
            "expires",
        ),
        (json!({"name": "coach", "category": "p", "content": "x", "summary": "s", "tags": ["a,b"]}), "tags"),
        (capture("nope", "p", "x", "x"), "未找到 Engram: nope"),
        (
            json!({"name": "coach", "category": "p", "content": "x".repeat(300 * 1024), "summary": "s"}),
            "limit",
        ),
    ] {
        let e = err(&c, "capture_memory", args).await;
        assert!(e.contains(needle), "{needle}: {e}");
    }
    // Wrong JSON types are an in-band error, not a crash.
    let e =
        err(&c, "capture_memory", json!({"name": "coach", "category": 3, "content": "x", "summary": "s"}))
            .await;
    assert!(e.contains("deserialize"), "{e}");
    assert!(
        !env.pack("coach").join(".git").exists(),
        "nothing was written, so the pack was not even adopted"
    );
    assert!(!env.dir.path().join("role.md").exists());
    assert_eq!(ok(&c, "ping", json!({})).await, "pong");
    c.close().await.expect("close");
}

#[tokio::test]
async fn delete_and_correct_touch_exactly_one_same_minute_entry() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let c = env.client().await;
    // Same minute, same type: the reference would delete/overwrite all three.
    for (content, summary) in
        [("体重 80kg", "体重 80kg"), ("身高 180cm", "身高 180cm"), ("体重目标 75kg", "体重目标 75kg")]
    {
        ok(&c, "capture_memory", capture("coach", "profile", content, summary)).await;
    }
    // Ambiguous substring → candidates, nothing changed.
    let e =
        err(&c, "delete_memory", json!({"name": "coach", "category": "profile", "summary": "体重"})).await;
    assert!(
        e.contains("匹配到多条记忆条目") && e.contains("体重 80kg") && e.contains("体重目标 75kg"),
        "{e}"
    );
    let e =
        err(&c, "delete_memory", json!({"name": "coach", "category": "profile", "summary": "血压"})).await;
    assert!(e.starts_with("未找到匹配的记忆条目: [profile] 血压\n候选"), "{e}");

    let r = ok(
        &c,
        "correct_memory",
        json!({"name": "coach", "category": "profile", "old_summary": "体重 80kg",
        "new_content": "体重 75kg", "new_summary": "体重 75kg"}),
    )
    .await;
    assert!(r.starts_with("已修正: [profile] 体重 75kg"), "{r}");
    let raw = env.read("coach", "memory/profile.md");
    assert!(
        raw.contains("体重 75kg")
            && raw.contains("身高 180cm")
            && raw.contains("体重目标 75kg")
            && !raw.contains("80kg"),
        "{raw}"
    );

    let r = ok(&c, "delete_memory", json!({"name": "coach", "category": "profile", "summary": "身高 180cm"}))
        .await;
    assert!(r.starts_with("已删除: [profile] 身高 180cm"), "{r}");
    let raw = env.read("coach", "memory/profile.md");
    assert!(!raw.contains("身高") && raw.contains("体重 75kg") && raw.contains("体重目标 75kg"), "{raw}");
    let full = env.read("coach", "memory/_index_full.md");
    assert_eq!(full.lines().count(), 2, "{full}");
    assert!(full.contains("] 体重 75kg") && full.contains("] 体重目标 75kg"));
    let pack = env.pack("coach");
    let subjects = git(&pack, &["log", "--format=%s"]);
    assert!(
        subjects.starts_with("delete: profile — 身高 180cm\ncorrect: profile — 体重 80kg → 体重 75kg\n"),
        "{subjects}"
    );
    // The delete commit's diff shows exactly the removed entry.
    let diff = git(&pack, &["show", "--format=", "HEAD", "--", "memory/profile.md"]);
    assert!(diff.contains("-身高 180cm") && !diff.contains("-体重"), "{diff}");
    assert_clean(&pack);
    c.close().await.expect("close");
}

#[tokio::test]
async fn consolidate_archives_originals() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let c = env.client().await;
    ok(&c, "capture_memory", json!({"name": "coach", "category": "preferences", "content": "内容A", "summary": "A", "memory_type": "preference"})).await;
    ok(&c, "capture_memory", json!({"name": "coach", "category": "preferences", "content": "内容B", "summary": "B", "memory_type": "preference"})).await;
    ok(&c, "capture_memory", capture("coach", "history", "去年跑了马拉松", "马拉松")).await;
    let r = ok(&c, "consolidate_memory", json!({"name": "coach", "category": "preferences", "consolidated_content": "早上训练，喜欢杠铃", "summary": "训练偏好摘要"})).await;
    assert!(r.starts_with("已压缩: [preferences] 原始条目已归档至 memory/preferences-archive.md"), "{r}");
    let archive = env.read("coach", "memory/preferences-archive.md");
    assert!(
        archive.starts_with("\n\n# 归档于 2026-11-22 10:00\n")
            && archive.contains("内容A")
            && archive.contains("内容B"),
        "{archive}"
    );
    let cat = env.read("coach", "memory/preferences.md");
    assert_eq!(cat, "\n---\n[2026-11-22 10:00] type:consolidated\n早上训练，喜欢杠铃\n");
    let hot = env.read("coach", "memory/_index.md");
    assert_eq!(hot.matches("`memory/preferences.md`").count(), 1, "{hot}");
    assert!(hot.contains("[consolidated] 训练偏好摘要") && hot.contains("马拉松"));
    let load = ok(&c, "load_engram", json!({"name": "coach", "query": ""})).await;
    assert!(load.contains("[consolidated]"));
    c.close().await.expect("close");
}

#[tokio::test]
async fn expired_entries_are_hidden_on_read_and_moved_by_the_next_write() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let c = env.client().await;
    ok(&c, "capture_memory", json!({"name": "coach", "category": "status", "content": "近期在恢复期", "summary": "恢复期", "memory_type": "inferred", "expires": "2026-11-23"})).await;
    ok(&c, "capture_memory", capture("coach", "status", "长期目标增肌", "增肌")).await;
    c.close().await.expect("close");
    // Two days later the first entry has expired.
    let mut later = TestEnv::new();
    later.packs = env.packs.clone();
    later.now = Some("2026-11-25T09:00:00Z".into());
    let c = later.client().await;
    let pack = env.pack("coach");
    let before = commit_count(&pack);
    let load = ok(&c, "load_engram", json!({"name": "coach", "query": ""})).await;
    assert!(!load.contains("恢复期") && load.contains("增肌"), "{load}");
    // Reads never commit: the expired entry is only hidden.
    assert_eq!(commit_count(&pack), before, "a load committed");
    assert!(!pack.join("memory/status-expired.md").exists());
    assert!(env.read("coach", "memory/status.md").contains("恢复期"));
    // The next memory write moves it, in a commit of its own, before its own commit.
    ok(&c, "capture_memory", capture("coach", "status", "新的一周", "新的一周")).await;
    assert!(env.read("coach", "memory/status-expired.md").contains("近期在恢复期"));
    assert!(!env.read("coach", "memory/status.md").contains("恢复期"));
    let subjects = git(&pack, &["log", "-2", "--format=%s"]);
    let subjects: Vec<&str> = subjects.lines().collect();
    assert!(subjects[0].starts_with("capture: status"), "{subjects:?}");
    assert!(subjects[1].starts_with("expire: 1 entries"), "{subjects:?}");
    // The next write does not move anything again.
    let before = commit_count(&pack);
    ok(&c, "capture_memory", capture("coach", "status", "再一条", "再一条")).await;
    assert_eq!(commit_count(&pack), before + 1);
    c.close().await.expect("close");
}

/// A tool trace leaves expired entries where they are, as the reference's trace write does (so
/// `stats_engrams` still counts them, like the reference's); loads keep hiding them, and the
/// next other memory write moves them, even when this process had seen them pending.
#[tokio::test]
async fn a_tool_trace_does_not_move_expired_entries_the_next_memory_write_does() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let c = env.client().await;
    ok(&c, "capture_memory", json!({"name": "coach", "category": "status", "content": "近期在恢复期", "summary": "恢复期", "memory_type": "inferred", "expires": "2026-11-23"})).await;
    ok(&c, "capture_memory", capture("coach", "status", "长期目标增肌", "增肌")).await;
    c.close().await.expect("close");
    let mut later = TestEnv::new();
    later.packs = env.packs.clone();
    later.now = Some("2026-11-25T09:00:00Z".into());
    let c = later.client_with(&["--tools", "all"]).await;
    let pack = env.pack("coach");
    // A load first: this process knows the entry is pending.
    let load = ok(&c, "load_engram", json!({"name": "coach", "query": ""})).await;
    assert!(!load.contains("恢复期"), "{load}");
    let before = commit_count(&pack);
    let trace =
        json!({"name": "coach", "tool_name": "web_search", "intent": "查资料", "result_summary": "3 条"});
    ok(&c, "capture_tool_trace", trace).await;
    assert_eq!(commit_count(&pack), before + 1, "the trace is one commit, with no expiry commit");
    assert!(!pack.join("memory/status-expired.md").exists());
    assert!(env.read("coach", "memory/_index_full.md").contains("恢复期"));
    let stats = ok(&c, "stats_engrams", json!({"format": "csv"})).await;
    assert!(stats.contains("\r\ncoach,2,1,3,0,0,0,0,1,1,0,"), "the expired entry still counts: {stats}");
    for _ in 0..2 {
        let load = ok(&c, "load_engram", json!({"name": "coach", "query": ""})).await;
        assert!(!load.contains("恢复期") && load.contains("增肌") && load.contains("web_search"), "{load}");
    }
    ok(&c, "capture_memory", capture("coach", "status", "新的一周", "新的一周")).await;
    assert!(env.read("coach", "memory/status-expired.md").contains("近期在恢复期"));
    assert!(!env.read("coach", "memory/_index_full.md").contains("恢复期"));
    let subjects = git(&pack, &["log", "-2", "--format=%s"]);
    assert!(subjects.lines().nth(1).is_some_and(|s| s.starts_with("expire: 1 entries")), "{subjects}");
    c.close().await.expect("close");
}

#[tokio::test]
async fn hint_appears_at_thirty_entries() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let c = env.client().await;
    for i in 0..29 {
        ok(&c, "capture_memory", capture("coach", "log", &format!("第{i}条"), &format!("第{i}条"))).await;
    }
    let load = ok(&c, "load_engram", json!({"name": "coach", "query": ""})).await;
    assert!(!load.contains("💡"));
    ok(&c, "capture_memory", capture("coach", "log", "第29条", "第29条")).await;
    let load = ok(&c, "load_engram", json!({"name": "coach", "query": ""})).await;
    assert!(
        load.contains("💡 当前共 30 条记忆，建议对条目较多的 category 调用 consolidate_memory 压缩。"),
        "{load}"
    );
    c.close().await.expect("close");
}

#[tokio::test]
async fn global_memory_is_seen_from_every_pack() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    make_pack(&env, "chef");
    let c = env.client().await;
    let r = ok(&c, "capture_memory", json!({"name": "whatever", "category": "user-profile", "content": "用户叫小王", "summary": "用户叫小王", "is_global": true})).await;
    assert!(r.starts_with("已记录: [全局] [user-profile] 用户叫小王"), "{r}");
    let load = ok(&c, "load_engram", json!({"name": "chef", "query": ""})).await;
    assert!(load.contains("## 全局用户记忆\n<global_memory>\n") && load.contains("用户叫小王"), "{load}");
    assert!(env.packs.join("_global/.git").exists());
    assert!(!env.packs.join("_global/memory/_onboarded").exists());
    c.close().await.expect("close");
}

#[tokio::test]
async fn write_and_add_knowledge_are_commits_and_contained() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let c = env.client().await;
    let r =
        ok(&c, "write_engram_file", json!({"name": "coach", "path": "notes/a.md", "content": "第一行\n"}))
            .await;
    assert!(r.starts_with("已写入: notes/a.md\ncommit: "), "{r}");
    let r = ok(
        &c,
        "write_engram_file",
        json!({"name": "coach", "path": "notes/a.md", "content": "第二行\n", "mode": "append"}),
    )
    .await;
    assert!(r.starts_with("已追加: notes/a.md"));
    assert_eq!(
        ok(&c, "read_engram_file", json!({"name": "coach", "path": "notes/a.md"})).await,
        "## notes/a.md\n第一行\n第二行"
    );
    for (path, mode) in [
        ("../x.md", "overwrite"),
        ("/tmp/x.md", "overwrite"),
        (".git/hooks/pre-commit", "overwrite"),
        ("memory/_index.md", "overwrite"),
    ] {
        err(&c, "write_engram_file", json!({"name": "coach", "path": path, "content": "x", "mode": mode}))
            .await;
    }
    // The reference's rule: only `append` exactly appends; any other mode overwrites (one
    // commit, which undo_last takes back).
    for mode in ["APPEND", " append", "bogus"] {
        let r = ok(
            &c,
            "write_engram_file",
            json!({"name": "coach", "path": "notes/a.md", "content": "覆盖\n", "mode": mode}),
        )
        .await;
        assert!(r.starts_with("已写入: notes/a.md\ncommit: "), "{mode}: {r}");
        assert_eq!(env.read("coach", "notes/a.md"), "覆盖\n", "{mode}");
        ok(&c, "undo_last", json!({"name": "coach"})).await;
        assert_eq!(env.read("coach", "notes/a.md"), "第一行\n第二行\n", "{mode}: undone");
    }
    let r = ok(
        &c,
        "add_knowledge",
        json!({"name": "coach", "filename": "分组/跑步", "content": "# 跑步\n", "summary": "跑步入门"}),
    )
    .await;
    assert!(r.starts_with("已添加知识: knowledge/分组/跑步.md — 跑步入门"), "{r}");
    assert!(
        env.read("coach", "knowledge/分组/_index.md").ends_with("- `knowledge/分组/跑步.md` - 跑步入门\n"),
        "nested index preferred"
    );
    ok(
        &c,
        "add_knowledge",
        json!({"name": "coach", "filename": "卧推.md", "content": "# 卧推\n", "summary": "卧推"}),
    )
    .await;
    assert!(env.read("coach", "knowledge/_index.md").ends_with("- `knowledge/卧推.md` - 卧推\n"));
    for bad in ["../x", "/abs", "a/../../b", ""] {
        err(&c, "add_knowledge", json!({"name": "coach", "filename": bad, "content": "x", "summary": "s"}))
            .await;
    }
    let pack = env.pack("coach");
    assert_clean(&pack);
    assert!(git(&pack, &["log", "-1", "--format=%s"]).starts_with("knowledge: knowledge/卧推.md"));
    c.close().await.expect("close");
}

#[tokio::test]
async fn hand_edits_are_committed_before_a_tool_write() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let c = env.client().await;
    ok(&c, "capture_memory", capture("coach", "facts", "a", "a")).await;
    let pack = env.pack("coach");
    fs::write(pack.join("role.md"), "# 角色\n手工修改过的角色。\n").expect("edit");
    ok(&c, "capture_memory", capture("coach", "facts", "b", "b")).await;
    let subjects = git(&pack, &["log", "--format=%s"]);
    let lines: Vec<&str> = subjects.lines().collect();
    assert_eq!(lines[0], "capture: facts — b");
    assert_eq!(lines[1], "edit: role.md");
    // The capture commit does not contain the hand edit.
    let files = git(&pack, &["show", "--name-only", "--format=", "HEAD"]);
    assert!(!files.contains("role.md"), "{files}");
    assert!(git(&pack, &["show", "HEAD~1:role.md"]).contains("手工修改过的角色"));
    assert_clean(&pack);
    c.close().await.expect("close");
}

#[tokio::test]
async fn hand_edits_right_after_a_write_are_seen() {
    // The write path trusts file signatures (`stat`) only for files older than
    // the filesystem clock's tick; a same-size edit made at once after a write
    // (same mtime tick) and a file added by hand must still be committed first.
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let c = env.client().await;
    ok(&c, "capture_memory", capture("coach", "facts", "alpha", "alpha")).await;
    let pack = env.pack("coach");
    let file = pack.join("memory/facts.md");
    let text = fs::read_to_string(&file).expect("read");
    fs::write(&file, text.replace("alpha", "ALPHA")).expect("same-size edit");
    ok(&c, "capture_memory", capture("coach", "facts", "beta", "beta")).await;
    ok(&c, "capture_memory", capture("coach", "facts", "gamma", "gamma")).await;
    fs::write(pack.join("memory/notes-by-hand.md"), "手写的笔记\n").expect("new file");
    ok(&c, "capture_memory", capture("coach", "facts", "delta", "delta")).await;
    let subjects = git(&pack, &["log", "--format=%s"]);
    let lines: Vec<&str> = subjects.lines().collect();
    assert_eq!(lines[0], "capture: facts — delta", "{subjects}");
    assert_eq!(lines[1], "edit: memory/notes-by-hand.md", "{subjects}");
    assert_eq!(lines[2], "capture: facts — gamma", "{subjects}");
    assert_eq!(lines[3], "capture: facts — beta", "{subjects}");
    assert_eq!(lines[4], "edit: memory/facts.md", "{subjects}");
    let facts = fs::read_to_string(&file).expect("read");
    assert!(facts.contains("ALPHA") && facts.contains("beta") && facts.contains("delta"), "{facts}");
    assert_clean(&pack);
    c.close().await.expect("close");
}

#[tokio::test]
async fn system_prompt_lists_packs() {
    let env = TestEnv::new();
    let c = env.client().await;
    assert_eq!(
        c.prompt("engram-system-prompt").await.expect("prompt"),
        "# Engram 记忆印记\n\n暂无可用记忆印记。请使用 install_engram 工具安装专家记忆包。"
    );
    make_pack(&env, "coach");
    let p = c.prompt("engram-system-prompt").await.expect("prompt");
    assert!(p.contains("<engrams>\n  <engram>\n    <name>coach</name>\n    <description>测试包 test pack</description>\n  </engram>\n</engrams>"), "{p}");
    assert!(p.contains("## 使用规则"));
    let tools = c.tool_names().await.expect("tools");
    assert!(tools.len() <= 16, "default toolset must stay small: {tools:?}");
    c.close().await.expect("close");
}

#[tokio::test]
async fn install_from_a_local_repository_and_rollback() {
    let env = TestEnv::new();
    // A source repository made with the real git CLI.
    let src = env.dir.path().join("src/fitness");
    make_pack(&env, "tmp-src");
    copy_tree(&env.pack("tmp-src"), &src);
    fs::remove_dir_all(env.pack("tmp-src")).expect("rm");
    git(&src, &["init", "-q", "-b", "main"]);
    git(&src, &["add", "-A"]);
    git(&src, &["commit", "-qm", "init"]);
    let c = env.client().await;
    let r = ok(&c, "install_engram", json!({"source": src.display().to_string()})).await;
    assert_eq!(r, "安装成功：tmp-src - 测试包 test pack");
    assert!(env.pack("fitness/.git").exists());
    // Found by directory name and by meta name.
    ok(&c, "get_engram_info", json!({"name": "fitness"})).await;
    ok(&c, "get_engram_info", json!({"name": "tmp-src"})).await;
    let e = err(&c, "install_engram", json!({"source": src.display().to_string()})).await;
    assert_eq!(e, "安装失败：目标目录已存在 fitness");
    // No meta.json → rolled back.
    let bad = env.dir.path().join("src/broken");
    fs::create_dir_all(&bad).expect("mkdir");
    fs::write(bad.join("role.md"), "x").expect("write");
    let e = err(&c, "install_engram", json!({"source": bad.display().to_string()})).await;
    assert_eq!(e, "安装失败：仓库根目录缺少 meta.json，已回滚。");
    assert!(!env.pack("broken").exists());
    let e = err(&c, "install_engram", json!({"source": "no-such-pack"})).await;
    assert_eq!(e, "安装失败：未在 registry 中找到 no-such-pack");
    let r = ok(&c, "install_engram", json!({"source": "demo"})).await;
    assert!(r.starts_with("安装成功：demo"), "{r}");
    c.close().await.expect("close");
}

#[tokio::test]
async fn broken_packs_do_not_break_listing() {
    let env = TestEnv::new();
    make_pack(&env, "good");
    let bad = env.pack("bad-json");
    fs::create_dir_all(&bad).expect("mkdir");
    fs::write(bad.join("meta.json"), "{not json").expect("write");
    let arr = env.pack("array-meta");
    fs::create_dir_all(&arr).expect("mkdir");
    fs::write(arr.join("meta.json"), "[]").expect("write");
    let bin_meta = env.pack("binary-meta");
    fs::create_dir_all(&bin_meta).expect("mkdir");
    fs::write(bin_meta.join("meta.json"), [0xff, 0xfe, 0x00]).expect("write");
    let c = env.client().await;
    // The reference's line first; each broken pack after it as a warning line.
    let list = ok(&c, "list_engrams", json!({})).await;
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines[0], "- good: 测试包 test pack (knowledge=2, examples=1)");
    assert_eq!(lines.len(), 4, "{list}");
    for (line, name) in lines[1..].iter().zip(["array-meta", "bad-json", "binary-meta"]) {
        assert!(line.starts_with(&format!("⚠ {name}: meta.json ")), "{list}");
    }
    let e = err(&c, "load_engram", json!({"name": "bad-json", "query": ""})).await;
    assert!(e.contains("meta.json"), "{e}");
    fs::write(env.pack("good").join("knowledge/bin.md"), [0xff, 0x00, 0xfe]).expect("write");
    let e = err(&c, "read_engram_file", json!({"name": "good", "path": "knowledge/bin.md"})).await;
    assert!(e.contains("UTF-8"), "{e}");
    assert_eq!(ok(&c, "ping", json!({})).await, "pong");
    c.close().await.expect("close");
}
