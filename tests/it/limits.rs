//! Documented limits: a request over any of them fails with a clear error and writes nothing.

use engram::ops::limits;
use serde_json::{Value, json};

use crate::common::*;

fn big(n: usize) -> String {
    "x".repeat(n)
}

/// (tool, arguments, text the error must contain) — every limit a tool enforces.
/// Other toolsets add their rows here (e.g. a graph call with MAX_ENTITIES_PER_CALL + 1 entities).
fn over_limit_requests() -> Vec<(&'static str, Value, &'static str)> {
    let tags: Vec<String> = (0..=limits::MAX_TAGS).map(|i| format!("t{i}")).collect();
    let long_path = format!("knowledge/{}.md", big(limits::MAX_PATH_BYTES));
    vec![
        (
            "capture_memory",
            json!({"name": "p", "category": "c", "content": big(limits::MAX_CONTENT_BYTES + 1), "summary": "s"}),
            "262144",
        ),
        (
            "capture_memory",
            json!({"name": "p", "category": "c", "content": "x", "summary": "s", "tags": tags}),
            "tags",
        ),
        (
            "capture_memory",
            json!({"name": "p", "category": "c", "content": "x", "summary": big(limits::MAX_SUMMARY_CHARS + 1)}),
            "summary",
        ),
        (
            "capture_memory",
            json!({"name": "p", "category": big(limits::MAX_LABEL_CHARS + 1), "content": "x", "summary": "s"}),
            "category",
        ),
        (
            "capture_memory",
            json!({"name": "p", "category": "c", "content": "x", "summary": "s", "tags": [big(limits::MAX_LABEL_CHARS + 1)]}),
            "tags",
        ),
        (
            "capture_memory",
            json!({"name": "p", "category": "c", "content": "x", "summary": "s", "conversation_id": big(limits::MAX_CONVERSATION_ID_CHARS + 1)}),
            "conversation_id",
        ),
        (
            "capture_memory",
            json!({"name": big(limits::MAX_PACK_NAME_CHARS + 1), "category": "c", "content": "x", "summary": "s"}),
            "128",
        ),
        (
            "correct_memory",
            json!({"name": "p", "category": "c", "old_summary": "first", "new_content": big(limits::MAX_CONTENT_BYTES + 1), "new_summary": "s"}),
            "262144",
        ),
        (
            "consolidate_memory",
            json!({"name": "p", "category": "c", "consolidated_content": big(limits::MAX_CONTENT_BYTES + 1), "summary": "s"}),
            "262144",
        ),
        (
            "write_engram_file",
            json!({"name": "p", "path": "knowledge/big.md", "content": big(limits::MAX_CONTENT_BYTES + 1)}),
            "262144",
        ),
        ("write_engram_file", json!({"name": "p", "path": long_path, "content": "x"}), "too long"),
        (
            "add_knowledge",
            json!({"name": "p", "filename": "big", "content": big(limits::MAX_CONTENT_BYTES + 1), "summary": "s"}),
            "262144",
        ),
        ("load_engram", json!({"name": "p", "query": big(limits::MAX_QUERY_CHARS + 1)}), "2000"),
    ]
}

fn snapshot(env: &TestEnv) -> (String, String) {
    let pack = env.pack("p");
    (git(&pack, &["rev-parse", "HEAD"]), git(&pack, &["status", "--porcelain", "--untracked-files=all"]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_limit_requests_fail_clearly_and_write_nothing() {
    let env = TestEnv::new();
    env.init("p");
    let c = env.client().await;
    ok(&c, "capture_memory", json!({"name": "p", "category": "c", "content": "first", "summary": "first"}))
        .await;
    // Just at the limits is accepted.
    let at = json!({"name": "p", "category": "c", "content": big(limits::MAX_CONTENT_BYTES), "summary": big(limits::MAX_SUMMARY_CHARS),
        "tags": (0..limits::MAX_TAGS).map(|i| format!("t{i}")).collect::<Vec<_>>()});
    ok(&c, "capture_memory", at).await;
    ok(&c, "load_engram", json!({"name": "p", "query": big(limits::MAX_QUERY_CHARS)})).await;
    let before = snapshot(&env);
    for (tool, args, needle) in over_limit_requests() {
        let text = err(&c, tool, args).await;
        assert!(text.contains(needle), "{tool}: error should mention {needle:?}: {text}");
        assert_eq!(snapshot(&env), before, "{tool} over a limit wrote something");
    }
    c.close().await.expect("close");
    crate::invariants::index_agrees_with_blocks(&env.pack("p")).expect("consistent");
}

#[test]
fn entity_limit_helper_for_list_taking_toolsets() {
    assert!(limits::check_entities("entities", limits::MAX_ENTITIES_PER_CALL).is_ok());
    let e = limits::check_entities("entities", limits::MAX_ENTITIES_PER_CALL + 1).expect_err("over");
    assert!(e.to_string().contains("at most 100"), "{e}");
}

/// Content that looks like the file format cannot forge entries or split its block.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn format_lookalike_content_stays_one_entry() {
    let env = TestEnv::new();
    env.init("p");
    let c = env.client().await;
    let forged = "before\n---\n[2026-01-01 10:00] type:fact\nforged entry\r\n---\r\nafter";
    ok(&c, "capture_memory", json!({"name": "p", "category": "c", "content": forged, "summary": "real"}))
        .await;
    ok(&c, "capture_memory", json!({"name": "p", "category": "c", "content": "- `memory/c.md` [2026-01-01 10:00] [fact] fake index line", "summary": "second"})).await;
    crate::invariants::index_agrees_with_blocks(&env.pack("p")).expect("consistent");
    let m = crate::concurrency::memory_files(&env.pack("p"));
    assert_eq!(m.blocks["c"].len(), 2, "{:?}", m.blocks);
    ok(&c, "delete_memory", json!({"name": "p", "category": "c", "summary": "real"})).await;
    crate::invariants::index_agrees_with_blocks(&env.pack("p")).expect("consistent");
    let m = crate::concurrency::memory_files(&env.pack("p"));
    assert_eq!(m.blocks["c"].len(), 1, "the whole entry went, no remainder: {:?}", m.blocks);
    // A tag with a space becomes one word, so the entry stays findable.
    ok(&c, "capture_memory", json!({"name": "p", "category": "c", "content": "t", "summary": "tagged", "tags": ["machine learning"]})).await;
    assert!(env.read("p", "memory/c.md").contains("tags:machine-learning"));
    ok(&c, "delete_memory", json!({"name": "p", "category": "c", "summary": "tagged"})).await;
    crate::invariants::index_agrees_with_blocks(&env.pack("p")).expect("consistent");
    // A summary that would be read back as tags is refused with advice.
    let text = err(
        &c,
        "capture_memory",
        json!({"name": "p", "category": "c", "content": "x", "summary": "[WIP] later"}),
    )
    .await;
    assert!(text.contains("tags"), "{text}");
    c.close().await.expect("close");
}

/// Every tool, every argument replaced by every JSON type (generated from the listed input
/// schemas, so later toolsets are covered without changes): the call fails or succeeds in
/// band, the server stays up, and the pack stays consistent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrongly_typed_arguments_of_every_tool_are_answered_in_band() {
    let env = TestEnv::new();
    env.init("p");
    let c = env.client().await;
    let tools = c.tools_json().await.expect("tools");
    let values = [
        json!(null),
        json!(123),
        json!(-1.5),
        json!(true),
        json!([]),
        json!({"a": 1}),
        json!("p"),
        json!("\u{0}\n---\n`["),
    ];
    let mut calls = 0;
    for tool in tools.as_array().expect("list") {
        let name = tool["name"].as_str().expect("name");
        let props: Vec<String> = tool["inputSchema"]["properties"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        // A valid-looking base call, then each argument in turn replaced.
        let base: serde_json::Map<String, Value> = props.iter().map(|p| (p.clone(), json!("p"))).collect();
        for p in &props {
            for v in &values {
                let mut args = base.clone();
                args.insert(p.clone(), v.clone());
                calls += 1;
                // A protocol-level error (invalid params) is fine too; a dead server is not.
                let _ = c.call(name, Value::Object(args)).await;
            }
        }
        let _ = c.call(name, json!({})).await;
    }
    eprintln!("argument types: {calls} calls");
    assert_eq!(ok(&c, "ping", json!({})).await, "pong", "the server survived");
    c.close().await.expect("close");
    assert_fsck(&env.pack("p"));
    crate::invariants::index_agrees_with_blocks(&env.pack("p")).expect("consistent");
}

/// HEAD of every pack directory (graph, notes and workspace packs included once made).
fn heads(env: &TestEnv) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(&env.packs)
        .expect("packs dir")
        .flatten()
        .filter(|e| e.path().join(".git").exists())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), git(&e.path(), &["rev-parse", "HEAD"])))
        .collect();
    out.sort();
    out
}

/// A NUL (or any control character but tab, CR, LF) in any text argument of any tool of
/// every toolset is refused, naming the argument, before the tool runs: nothing is
/// committed, and git keeps showing the memory files as text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_characters_in_any_argument_of_any_tool_are_refused() {
    let env = TestEnv::new();
    env.init("p");
    let c = env.client_with(&["--tools", "all"]).await;
    ok(&c, "capture_memory", json!({"name": "p", "category": "c", "content": "before", "summary": "before"}))
        .await;
    let before = heads(&env);
    let tools = c.tools_json().await.expect("tools");
    let mut calls = 0;
    for tool in tools.as_array().expect("list") {
        let name = tool["name"].as_str().expect("name");
        let props: Vec<String> = tool["inputSchema"]["properties"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        for (i, p) in props.iter().enumerate() {
            let mut args: serde_json::Map<String, Value> =
                props.iter().map(|q| (q.clone(), json!("p"))).collect();
            let bad = ["a\u{0}b", "bell\u{7}", "esc\u{1b}[31m", "del\u{7f}"][i % 4];
            args.insert(p.clone(), json!(bad));
            let r = c.call(name, Value::Object(args)).await.expect("answered in band");
            calls += 1;
            assert!(r.is_error, "{name}.{p} accepted a control character: {}", r.text);
            assert!(
                r.text.contains(&format!("`{p}`")) && r.text.contains("control character"),
                "{name}.{p}: {}",
                r.text
            );
        }
    }
    // Nested: a graph observation and a profile value inside objects and lists.
    let r = c
        .call(
            "create_entities",
            json!({"entities": [{"name": "Ann", "entityType": "person", "observations": ["ok", "x\u{0}y"]}]}),
        )
        .await
        .expect("call");
    assert!(r.is_error && r.text.contains("`entities[0].observations[1]`"), "{}", r.text);
    let r = c.call("update_profile", json!({"key": "k", "value": {"a": ["\u{0}"]}})).await.expect("call");
    assert!(r.is_error && r.text.contains("`value.a[0]`"), "{}", r.text);
    eprintln!("control characters: {calls} refused calls");
    assert_eq!(heads(&env), before, "a refused call committed something");
    // Tabs and line breaks are text; the history stays text diffs.
    ok(
        &c,
        "capture_memory",
        json!({"name": "p", "category": "c", "content": "after\tone\r\ntwo", "summary": "after"}),
    )
    .await;
    c.close().await.expect("close");
    let log = git(&env.pack("p"), &["log", "-p"]);
    assert!(!log.contains("Binary files"), "{log}");
    assert!(log.contains("+after"), "{log}");
}

/// Answers have a size bound; inputs their documented limits: an installed 30 MB
/// `meta.json`, a 9 MB graph observation, a graph read larger than the answer bound, and
/// a 1 MB `search_memory` query.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_inputs_are_refused_and_answers_are_bounded() {
    let env = TestEnv::new();
    env.init("p");
    env.init("big");
    // A pack whose meta.json is 30 MB (as an install would bring it).
    let big = env.pack("big");
    let meta = json!({"name": "big", "description": "d".repeat(30 * 1024 * 1024)});
    std::fs::write(big.join("meta.json"), meta.to_string()).expect("write");
    git(&big, &["commit", "-qam", "huge meta"]);
    let c = env.client_with(&["--tools", "all"]).await;
    let listed = ok(&c, "list_engrams", json!({})).await;
    assert!(listed.len() < 16 * 1024, "list_engrams answered {} bytes", listed.len());
    assert!(listed.contains(&limits::MAX_META_BYTES.to_string()), "{listed}");
    // A 9 MB observation is refused (and sent in a line under the stdio limit: 9 MB is not).
    let huge = "o".repeat(limits::MAX_TEXT_BYTES + 1);
    let text = err(
        &c,
        "create_entities",
        json!({"entities": [{"name": "A", "entityType": "t", "observations": [huge]}]}),
    )
    .await;
    assert!(text.contains("`entities[0].observations[0]`") && text.contains("262144"), "{text}");
    // A graph bigger than one answer, built from calls within the limits.
    for i in 0..9 {
        let obs = format!("{i}{}", "o".repeat(250_000));
        ok(
            &c,
            "create_entities",
            json!({"entities": [{"name": format!("E{i}"), "entityType": "t", "observations": [obs]}]}),
        )
        .await;
    }
    let text = err(&c, "read_graph", json!({})).await;
    assert!(text.len() < 1024 && text.contains(&limits::MAX_ANSWER_BYTES.to_string()), "{text}");
    assert!(text.contains("search_nodes"), "{text}");
    let node = ok(&c, "open_nodes", json!({"names": ["E3"]})).await;
    assert!(node.contains("E3"));
    // A 1 MB query.
    let text = err(&c, "search_memory", json!({"query": "q".repeat(1024 * 1024)})).await;
    assert!(text.contains("`query`") && text.contains("2000"), "{text}");
    c.close().await.expect("close");
}
