//! `search_memory`, `search_engram_knowledge` and `engram search` over stdio:
//! ranking, filters, `as_of`, the derived index in `.git/engram/`, writes by
//! other processes, and Chinese queries.

use std::fs;

use serde_json::{Value, json};

use crate::common::*;
use crate::engram_tools::make_pack;

fn capture(name: &str, category: &str, content: &str, summary: &str) -> Value {
    json!({"name": name, "category": category, "content": content, "summary": summary})
}

/// The hit blocks of a search answer (header line + details), in rank order.
fn hits(text: &str) -> Vec<String> {
    text.split("\n\n")
        .filter(|b| b.trim_start().chars().next().is_some_and(|c| c.is_ascii_digit()))
        .map(|b| b.trim().to_owned())
        .collect()
}

fn commit_of(reply: &str) -> String {
    reply.rsplit("commit: ").next().map(|s| s.trim().to_owned()).expect("commit id")
}

#[tokio::test]
async fn title_hits_rank_above_body_hits_and_hits_say_where_they_are() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let c = env.client().await;
    ok(
        &c,
        "capture_memory",
        capture("coach", "health", "做动作前一定要充分热身，注意膝盖。", "一般训练提醒"),
    )
    .await;
    ok(&c, "capture_memory", capture("coach", "health", "去年扭伤了左膝。", "膝盖旧伤")).await;
    ok(
        &c,
        "capture_memory",
        capture("coach", "notes", "Warm up before lifting; mind the knee.", "general reminder"),
    )
    .await;
    ok(&c, "capture_memory", capture("coach", "notes", "Sprained it last year.", "knee injury")).await;

    let text = ok(&c, "search_memory", json!({"query": "膝盖", "kinds": ["memory"]})).await;
    let h = hits(&text);
    assert!(h.len() >= 2, "{text}");
    assert!(h[0].contains("膝盖旧伤"), "title hit first:\n{text}");
    assert!(h[0].contains("[memory] coach · memory/health.md · [2026-11-22 10:00]"), "{text}");
    assert!(h[0].contains("matched: title"), "{text}");
    assert!(text.contains("> 去年扭伤了左膝"), "snippet shown:\n{text}");
    assert!(text.contains("一般训练提醒"), "body hit listed too:\n{text}");

    let text = ok(&c, "search_memory", json!({"query": "knee", "name": "coach"})).await;
    let h = hits(&text);
    assert!(h[0].contains("knee injury"), "{text}");
    assert!(h.iter().any(|b| b.contains("general reminder")), "stemmed body hit: {text}");
    // The knowledge passage of the pack is found too.
    let text = ok(&c, "search_memory", json!({"query": "脚尖"})).await;
    assert!(text.contains("[knowledge] coach · knowledge/深蹲.md · 深蹲"), "{text}");
    c.close().await.expect("close");
}

#[tokio::test]
async fn an_entry_next_to_a_strong_hit_is_marked_as_its_context_and_unrelated_ones_are_not_hits() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let c = env.client().await;
    ok(&c, "capture_memory", capture("coach", "chat", "Where did you travel in the summer?", "question"))
        .await;
    ok(&c, "capture_memory", capture("coach", "chat", "Lake Tahoe, it was calm that summer.", "answer"))
        .await;
    ok(&c, "capture_memory", capture("coach", "chat", "It was so calm and quiet.", "remark")).await;
    let text = ok(&c, "search_memory", json!({"query": "travel summer", "name": "coach"})).await;
    let h = hits(&text);
    assert_eq!(h.len(), 2, "an entry holding none of the words is no hit, however near:\n{text}");
    // The answer rises past the question it follows: a memory that asks ranks behind one that tells.
    assert!(h[1].contains("question") && !h[1].contains("context:"), "{text}");
    assert!(h[0].contains("answer"), "{text}");
    assert!(
        h[0].contains("context: written next to [2026-11-22 10:00], a stronger hit"),
        "the hit raised by its neighbour says so:\n{text}"
    );
    c.close().await.expect("close");
}

#[tokio::test]
async fn filters_restrict_kind_category_type_tags_time_and_pack() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    make_pack(&env, "cook");
    let c = env.client().await;
    let mut a = capture("coach", "training", "深蹲 训练 计划 A", "计划A");
    a["memory_type"] = json!("decision");
    a["tags"] = json!(["legs", "plan"]);
    ok(&c, "capture_memory", a).await;
    let mut b = capture("coach", "diet", "深蹲 之后 吃 蛋白质 B", "计划B");
    b["tags"] = json!(["plan"]);
    ok(&c, "capture_memory", b).await;
    ok(&c, "capture_memory", capture("cook", "recipes", "深蹲 力量 食谱 C", "计划C")).await;

    let all = ok(&c, "search_memory", json!({"query": "深蹲"})).await;
    for s in ["计划A", "计划B", "计划C", "[knowledge]"] {
        assert!(all.contains(s), "{s} missing:\n{all}");
    }
    let only = |text: &str, want: &[&str]| {
        for s in ["计划A", "计划B", "计划C"] {
            assert_eq!(text.contains(s), want.contains(&s), "{s} in:\n{text}");
        }
    };
    only(&ok(&c, "search_memory", json!({"query": "深蹲", "name": "cook"})).await, &["计划C"]);
    only(&ok(&c, "search_memory", json!({"query": "深蹲", "category": "diet"})).await, &["计划B"]);
    only(&ok(&c, "search_memory", json!({"query": "深蹲", "memory_type": "decision"})).await, &["计划A"]);
    only(&ok(&c, "search_memory", json!({"query": "深蹲", "tags": ["plan"]})).await, &["计划A", "计划B"]);
    only(&ok(&c, "search_memory", json!({"query": "深蹲", "tags": ["plan", "legs"]})).await, &["计划A"]);
    let k = ok(&c, "search_memory", json!({"query": "深蹲", "kinds": ["knowledge"]})).await;
    assert!(k.contains("[knowledge]") && !k.contains("[memory]"), "{k}");
    only(
        &ok(&c, "search_memory", json!({"query": "深蹲", "time_range": "2026-11"})).await,
        &["计划A", "计划B", "计划C"],
    );
    only(
        &ok(&c, "search_memory", json!({"query": "深蹲", "time_range": "last_week"})).await,
        &["计划A", "计划B", "计划C"],
    );
    only(&ok(&c, "search_memory", json!({"query": "深蹲", "time_range": "2025-01..2026-10"})).await, &[]);
    let limited = ok(&c, "search_memory", json!({"query": "深蹲", "limit": 1})).await;
    assert_eq!(hits(&limited).len(), 1, "{limited}");

    let e = err(&c, "search_memory", json!({"query": "深蹲", "time_range": "recently"})).await;
    assert!(e.contains("time_range") && e.contains("last_week") && e.contains("START..END"), "{e}");
    let e = err(&c, "search_memory", json!({"query": "深蹲", "kinds": ["graph-ish"]})).await;
    assert!(e.contains("memory, knowledge, example"), "{e}");
    let e = err(&c, "search_memory", json!({"query": "  "})).await;
    assert!(e.contains("query"), "{e}");
    let e = err(&c, "search_memory", json!({"query": "x", "name": "nope"})).await;
    assert!(e.contains("未找到 Engram: nope"), "{e}");
    c.close().await.expect("close");
}

#[tokio::test]
async fn as_of_searches_the_pack_as_it_was() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let c = env.client().await;
    let first = ok(&c, "capture_memory", capture("coach", "log", "第一次 测量 体脂", "旧记录")).await;
    let first = commit_of(&first);
    ok(&c, "search_memory", json!({"query": "体脂"})).await;
    ok(&c, "capture_memory", capture("coach", "log", "第二次 测量 体脂", "新记录")).await;
    ok(
        &c,
        "correct_memory",
        json!({"name": "coach", "category": "log", "old_summary": "旧记录",
        "new_content": "第一次 测量 体重", "new_summary": "改过的记录"}),
    )
    .await;

    let now = ok(&c, "search_memory", json!({"query": "体脂"})).await;
    assert!(now.contains("新记录") && !now.contains("旧记录"), "{now}");
    let then = ok(&c, "search_memory", json!({"query": "体脂", "name": "coach", "as_of": first})).await;
    assert!(then.contains("旧记录") && !then.contains("新记录"), "{then}");
    assert!(then.contains(&format!("as of {first}")), "{then}");
    // And back to HEAD again.
    let now = ok(&c, "search_memory", json!({"query": "体脂", "name": "coach"})).await;
    assert!(now.contains("新记录"), "{now}");
    // Dates: every commit is at the pinned clock (2026-11-22).
    let before = ok(&c, "search_memory", json!({"query": "体脂", "as_of": "2026-11-21"})).await;
    assert!(before.contains("未找到匹配结果"), "{before}");
    let that_day = ok(&c, "search_memory", json!({"query": "体脂", "as_of": "2026-11-22"})).await;
    assert!(that_day.contains("新记录"), "{that_day}");
    let e = err(&c, "search_memory", json!({"query": "体脂", "name": "coach", "as_of": "no-such-rev"})).await;
    assert!(e.contains("as_of"), "{e}");
    let e = err(&c, "search_memory", json!({"query": "体脂", "as_of": first})).await;
    assert!(e.contains("name"), "a commit needs a pack: {e}");
    c.close().await.expect("close");
}

#[tokio::test]
async fn a_deleted_or_corrupt_index_is_rebuilt() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let c = env.client().await;
    ok(&c, "capture_memory", capture("coach", "health", "左膝 旧伤", "膝盖旧伤")).await;
    assert!(ok(&c, "search_memory", json!({"query": "旧伤"})).await.contains("膝盖旧伤"));
    c.close().await.expect("close");
    let stored = env.pack("coach").join(".git/engram/search.idx");
    assert!(stored.is_file(), "index kept under .git/engram");
    assert_clean(&env.pack("coach"));

    fs::remove_dir_all(env.pack("coach").join(".git/engram")).expect("rm");
    let c = env.client().await;
    assert!(ok(&c, "search_memory", json!({"query": "旧伤"})).await.contains("膝盖旧伤"));
    c.close().await.expect("close");
    assert!(stored.is_file(), "rebuilt and stored again");

    fs::write(&stored, b"ENGRPIX1 definitely not an index").expect("corrupt");
    let c = env.client().await;
    assert!(ok(&c, "search_memory", json!({"query": "旧伤"})).await.contains("膝盖旧伤"));
    c.close().await.expect("close");
    let bytes = fs::read(&stored).expect("read");
    assert!(bytes.len() > 64, "rewritten");
    // Truncated snapshot: same.
    fs::write(&stored, &bytes[..bytes.len() / 2]).expect("truncate");
    let out = env.cli(&["search", "旧伤"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("膝盖旧伤"), "{out:?}");
}

#[tokio::test]
async fn writes_by_another_process_are_seen() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let reader = env.client().await;
    let writer = env.client().await;
    ok(&writer, "capture_memory", capture("coach", "health", "喜欢 早上 训练", "训练时间")).await;
    assert!(ok(&reader, "search_memory", json!({"query": "训练"})).await.contains("训练时间"));
    // Another server writes; the first one's next query sees it.
    ok(&writer, "capture_memory", capture("coach", "health", "下午 容易 疲劳 训练 效果差", "下午状态")).await;
    let text = ok(&reader, "search_memory", json!({"query": "疲劳"})).await;
    assert!(text.contains("下午状态"), "{text}");
    // A deletion by the other process disappears from the results.
    ok(&writer, "delete_memory", json!({"name": "coach", "category": "health", "summary": "训练时间"})).await;
    let text = ok(&reader, "search_memory", json!({"query": "早上 训练"})).await;
    assert!(!text.contains("训练时间"), "{text}");
    // A hand edit committed with git is seen too; the CLI sees the MCP writes.
    fs::write(env.pack("coach").join("knowledge/卧推.md"), "# 卧推\n肩胛骨收紧，杠铃落在胸口。\n")
        .expect("write");
    git(&env.pack("coach"), &["add", "-A"]);
    git(&env.pack("coach"), &["commit", "-qm", "hand"]);
    let text = ok(&reader, "search_memory", json!({"query": "肩胛骨"})).await;
    assert!(text.contains("knowledge/卧推.md"), "{text}");
    let out = env.cli(&["search", "疲劳", "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["hits"][0]["title"], "下午状态", "{v}");
    assert_eq!(v["hits"][0]["pack"], "coach");
    assert_eq!(v["hits"][0]["path"], "memory/health.md");
    reader.close().await.expect("close");
    writer.close().await.expect("close");
}

#[tokio::test]
async fn a_pack_installed_removed_or_renamed_while_serving_is_searched_as_it_is_now() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let c = env.client().await;
    ok(&c, "capture_memory", capture("coach", "health", "marmalade on toast", "coach marmalade")).await;
    for _ in 0..2 {
        let text = ok(&c, "search_memory", json!({"query": "marmalade"})).await;
        assert!(text.contains("coach marmalade") && !text.contains("chef"), "{text}");
    }
    // Another process makes a pack and writes to it: the running server's next search has it.
    env.init("chef");
    let other = env.client().await;
    ok(&other, "capture_memory", capture("chef", "pantry", "marmalade on the top shelf", "chef marmalade"))
        .await;
    other.close().await.expect("close");
    let text = ok(&c, "search_memory", json!({"query": "marmalade"})).await;
    assert!(text.contains("chef marmalade") && text.contains("coach marmalade"), "{text}");
    // Renamed: found under its new directory; removed: gone.
    fs::rename(env.pack("chef"), env.pack("cook")).expect("rename");
    let text = ok(&c, "search_memory", json!({"query": "marmalade"})).await;
    assert!(text.contains("chef marmalade") && !text.contains("engram doctor"), "{text}");
    fs::remove_dir_all(env.pack("cook")).expect("remove");
    let text = ok(&c, "search_memory", json!({"query": "marmalade"})).await;
    assert!(!text.contains("chef marmalade") && text.contains("coach marmalade"), "{text}");
    c.close().await.expect("close");
}

#[tokio::test]
async fn cli_search_takes_the_same_filters() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let c = env.client().await;
    let mut a = capture("coach", "training", "squat plan for Monday", "leg day");
    a["tags"] = json!(["legs"]);
    a["memory_type"] = json!("decision");
    ok(&c, "capture_memory", a).await;
    ok(&c, "capture_memory", capture("coach", "diet", "squat then eat protein", "after squats")).await;
    let mut g = capture("coach", "people", "Coach Li prefers squats", "global squat note");
    g["is_global"] = json!(true);
    ok(&c, "capture_memory", g).await;
    c.close().await.expect("close");

    let text = |args: &[&str]| {
        let out = env.cli(args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let all = text(&["search", "squats"]);
    assert!(all.contains("leg day") && all.contains("after squats"), "{all}");
    assert!(all.contains("[memory] _global"), "global memory included: {all}");
    let t = text(&["search", "squat", "--pack", "coach", "--tag", "legs", "--type", "decision"]);
    assert!(t.contains("leg day") && !t.contains("after squats"), "{t}");
    let t = text(&["search", "squat", "--category", "diet", "--kind", "memory", "--limit", "5"]);
    assert!(!t.contains("leg day") && t.contains("after squats"), "{t}");
    let t = text(&["search", "squat", "--time-range", "2020"]);
    assert!(t.contains("未找到匹配结果"), "{t}");
    let out = env.cli(&["search", "squat", "--time-range", "soon"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("time_range"));
}

#[tokio::test]
async fn knowledge_toolset_finds_passages_and_the_default_toolset_stays_small() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let plain = env.client().await;
    let tools = plain.tool_names().await.expect("tools");
    assert!(tools.contains(&"search_memory".to_owned()), "{tools:?}");
    assert!(!tools.contains(&"search_engram_knowledge".to_owned()), "{tools:?}");
    assert!(tools.len() <= 16, "the default toolset stays small: {tools:?}");
    plain.close().await.expect("close");

    let c = env.client_with(&["--tools", "engram,knowledge"]).await;
    ok(&c, "add_knowledge", json!({"name": "coach", "filename": "bench-press",
        "content": "# Bench press\n## Setup\nRetract the shoulder blades, feet flat.\n## Breathing\nInhale at the top, brace, press.\n",
        "summary": "bench press"}))
    .await;
    let text = ok(
        &c,
        "search_engram_knowledge",
        json!({"name": "coach", "query": "how should I breathe when pressing"}),
    )
    .await;
    let h = hits(&text);
    assert!(h[0].contains("knowledge/bench-press.md · Bench press › Breathing"), "{text}");
    assert!(h[0].contains("Inhale at the top"), "{text}");
    assert!(text.contains("read_engram_file"), "{text}");
    let text = ok(&c, "search_engram_knowledge", json!({"name": "coach", "query": "膝盖疼"})).await;
    assert!(text.contains("[example] coach · examples/膝盖.md"), "{text}");
    let e = err(&c, "search_engram_knowledge", json!({"name": "nope", "query": "x"})).await;
    assert!(e.contains("nope"), "{e}");
    c.close().await.expect("close");
}

#[derive(serde::Deserialize)]
struct Fixture {
    id: String,
    title: String,
    body: String,
    #[serde(default)]
    category: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
}

#[derive(serde::Deserialize)]
struct FixtureQuery {
    query: String,
    answers: Vec<String>,
}

#[tokio::test]
async fn chinese_queries_through_search_memory() {
    let env = TestEnv::new();
    make_pack(&env, "life");
    let docs: Vec<Fixture> =
        serde_json::from_str(include_str!("../fixtures/zh_memories.json")).expect("memories fixture");
    let queries: Vec<FixtureQuery> =
        serde_json::from_str(include_str!("../fixtures/zh_queries.json")).expect("queries fixture");
    let c = env.client().await;
    for d in &docs {
        let mut args = capture("life", d.category.as_deref().unwrap_or("general"), &d.body, &d.title);
        args["tags"] = json!(d.tags);
        ok(&c, "capture_memory", args).await;
    }
    let title_of = |id: &str| docs.iter().find(|d| d.id == id).map(|d| d.title.clone()).expect("answer id");
    let mut misses = Vec::new();
    for q in &queries {
        let text = ok(&c, "search_memory", json!({"query": q.query, "name": "life", "limit": 3})).await;
        let top = hits(&text);
        let found = q.answers.iter().any(|a| {
            let t = title_of(a);
            top.iter().any(|h| h.lines().next().is_some_and(|l| l.ends_with(&format!(" · {t}"))))
        });
        if !found {
            misses.push(q.query.clone());
        }
    }
    let recall = 1.0 - misses.len() as f64 / queries.len() as f64;
    assert!(queries.len() >= 30);
    assert!(recall >= 0.9, "recall@3 through search_memory = {recall:.3}; misses: {misses:?}");
    c.close().await.expect("close");
}

/// `bench-search locomo` names the data file it could not find and how to give another.
#[test]
fn bench_search_without_the_locomo_data_is_a_clear_error() {
    let env = TestEnv::new();
    let missing = env.dir.path().join("nowhere/locomo10.json");
    let out = env.cli(&["bench-search", "locomo", "--locomo", missing.to_str().expect("utf-8 path")]);
    assert!(!out.status.success(), "a missing data set must not pass as a run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("LoCoMo data not found at") && err.contains("nowhere") && err.contains("--locomo"),
        "{err}"
    );
}

/// The stored index is read in place by every new process and brought forward
/// from the git diff: after captures, a correction and deletions made by other
/// processes, and with a damaged byte in its posting lists or records, a new
/// `engram search` answers exactly as one that builds the index from scratch.
#[tokio::test]
async fn a_stored_index_brought_forward_or_damaged_answers_as_a_fresh_build() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let c = env.client().await;
    for i in 0..30 {
        let (cat, what) =
            [("health", "膝盖 旧伤"), ("training", "squat 深蹲 plan"), ("diet", "protein 早餐")][i % 3];
        ok(
            &c,
            "capture_memory",
            capture("coach", cat, &format!("{what} 第{i}次 entry {i}"), &format!("{what} {i}")),
        )
        .await;
    }
    assert!(ok(&c, "search_memory", json!({"query": "旧伤"})).await.contains("膝盖 旧伤"));
    c.close().await.expect("close");
    let stored = env.pack("coach").join(".git/engram/search.idx");
    assert!(stored.is_file(), "stored");
    let queries = ["膝盖 旧伤", "squat plan", "protein 早餐 entry", "第7次", "深蹲 corrected"];
    let json_of = |q: &str| {
        let out = env.cli(&["search", q, "--json", "--limit", "20"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<Value>(&out.stdout).expect("json")
    };
    let fresh = || {
        fs::remove_dir_all(env.pack("coach").join(".git/engram")).expect("rm");
        let answers: Vec<Value> = queries.iter().map(|q| json_of(q)).collect();
        answers
    };

    // Other processes write after the index was stored.
    let c = env.client().await;
    ok(&c, "capture_memory", capture("coach", "health", "膝盖 新 旧伤 later", "later 膝盖")).await;
    ok(&c, "delete_memory", json!({"name": "coach", "category": "health", "summary": "膝盖 旧伤 3"})).await;
    ok(
        &c,
        "correct_memory",
        json!({"name": "coach", "category": "training", "old_summary": "squat 深蹲 plan 4",
               "new_content": "深蹲 corrected text", "new_summary": "corrected 深蹲 4"}),
    )
    .await;
    c.close().await.expect("close");
    let old = fs::read(&stored).expect("read");
    let brought_forward: Vec<Value> = queries.iter().map(|q| json_of(q)).collect();
    assert_eq!(brought_forward, fresh(), "stale index brought forward");
    assert!(brought_forward[0]["hits"].to_string().contains("later 膝盖"));
    assert!(!brought_forward[0]["hits"].to_string().contains("膝盖 旧伤 3\""));

    // A flipped byte anywhere in the second half (posting lists, records) of
    // the stored file, or the file cut short: rebuilt, same answers.
    let expected = fresh();
    for (what, bytes) in [
        ("flipped", {
            let mut b = old.clone();
            let i = b.len() * 3 / 4;
            b[i] ^= 0x04;
            b
        }),
        ("cut", old[..old.len() - 100].to_vec()),
    ] {
        fs::write(&stored, &bytes).expect("damage");
        let got: Vec<Value> = queries.iter().map(|q| json_of(q)).collect();
        assert_eq!(got, expected, "{what}");
    }
}
