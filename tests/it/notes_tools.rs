//! The notes toolset over stdio: store / recall / forget / categories, the
//! files they leave, hand edits, and every error.

use std::fs;

use serde_json::{Value, json};

use crate::common::*;

async fn notes_client(env: &TestEnv, extra: &[&str]) -> StdioClient {
    let mut args = vec!["--tools", "notes"];
    args.extend_from_slice(extra);
    env.client_with(&args).await
}

/// Calls a tool that must succeed and returns its structured content.
async fn ok_json(c: &StdioClient, tool: &str, args: Value) -> Value {
    let r = call(c, tool, args).await;
    assert!(!r.is_error, "{tool} failed: {}", r.text);
    let v = r.structured.expect("structured content");
    assert_eq!(serde_json::from_str::<Value>(&r.text).expect("text is JSON"), v);
    v
}

/// Calls a tool that must fail and returns its structured content.
async fn err_json(c: &StdioClient, tool: &str, args: Value) -> Value {
    let r = call(c, tool, args).await;
    assert!(r.is_error, "{tool} unexpectedly succeeded: {}", r.text);
    r.structured.expect("structured error")
}

fn titles(v: &Value) -> Vec<String> {
    v["notes"]
        .as_array()
        .expect("notes")
        .iter()
        .map(|n| n["title"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[tokio::test]
async fn store_recall_forget_round_trip_in_files_and_commits() {
    let env = TestEnv::new();
    let c = notes_client(&env, &[]).await;
    let names = c.tool_names().await.expect("tools");
    for t in ["store", "recall", "forget", "list_categories", "create_category"] {
        assert!(names.contains(&t.to_owned()), "{t} missing from {names:?}");
    }
    assert!(!names.contains(&"load_engram".to_owned()), "only the notes toolset: {names:?}");

    // Reads never create the pack.
    let cats = ok_json(&c, "list_categories", json!({})).await;
    assert_eq!(cats["categories"][0]["name"], "general");
    assert_eq!(ok_json(&c, "recall", json!({})).await["count"], 0);
    assert!(!env.pack("personal").exists());

    let s = ok_json(
        &c,
        "store",
        json!({"content": "每天早上喝一杯手冲咖啡，不加糖。", "title": "咖啡偏好", "importance": 4}),
    )
    .await;
    assert_eq!(s["action"], "created");
    assert_eq!(s["titleDerived"], false);
    let note = &s["note"];
    assert_eq!((note["category"].as_str(), note["importance"].as_i64()), (Some("general"), Some(4)));
    assert_eq!(note["created"], NOW);
    let path = note["path"].as_str().expect("path").to_owned();
    assert_eq!(path, "notes/general/咖啡偏好.md");
    let pack = env.pack("personal");
    let file = env.read("personal", &path);
    let id = note["id"].as_str().expect("id").to_owned();
    assert!(file.starts_with("---\n") && file.contains(&format!("id: {id}")), "{file}");
    assert!(file.contains("title: 咖啡偏好") && file.contains("importance: 4"), "{file}");
    assert!(file.ends_with("---\n每天早上喝一杯手冲咖啡，不加糖。\n"), "{file}");
    // The pack was created with a valid meta.json, and lints clean of errors.
    let meta: Value = serde_json::from_str(&env.read("personal", "meta.json")).expect("meta.json");
    assert_eq!(meta["name"], "personal");
    let lint = env.cli(&["lint", "personal"]);
    assert!(lint.status.success(), "{}", String::from_utf8_lossy(&lint.stdout));
    let before = commit_count(&pack);
    let log = git(&pack, &["log", "-1", "--format=%s%n%b"]);
    assert!(log.starts_with("note: general/咖啡偏好\n") && log.contains("Engram-Tool: store"), "{log}");

    // No title: one is derived and the answer says so.
    let s = ok_json(&c, "store", json!({"content": "Standup moved to 9:30 on Mondays.\nBring notes."})).await;
    assert_eq!(s["titleDerived"], true);
    assert_eq!(s["note"]["title"], "Standup moved to 9:30 on Mondays");
    assert!(s["message"].as_str().expect("message").contains("derived"), "{s}");
    assert_eq!(commit_count(&pack), before + 1, "one store, one commit");

    // Categories: unknown is an error listing the categories; then create and use one.
    let e = err_json(&c, "store", json!({"content": "x", "title": "周报", "category": "工作"})).await;
    assert_eq!(e["error"], "unknown_category");
    assert!(e["message"].as_str().expect("message").contains("general"), "{e}");
    let created =
        ok_json(&c, "create_category", json!({"name": "工作", "description": "工作相关 / work"})).await;
    assert_eq!(created["created"], true);
    assert!(env.read("personal", "notes/_categories.yaml").contains("工作: 工作相关 / work"));
    let again = ok_json(&c, "create_category", json!({"name": "工作"})).await;
    assert_eq!((again["created"].as_bool(), again["commit"].is_null()), (Some(false), true));
    ok_json(&c, "store", json!({"content": "周五交周报，抄送组长。", "title": "周报", "category": "工作"}))
        .await;
    ok_json(&c, "store", json!({"content": "早餐：燕麦和一杯咖啡", "title": "早餐", "importance": 2})).await;
    let cats = ok_json(&c, "list_categories", json!({})).await;
    let listed: Vec<(String, i64)> = cats["categories"]
        .as_array()
        .expect("categories")
        .iter()
        .map(|c| (c["name"].as_str().unwrap_or("").to_owned(), c["notes"].as_i64().unwrap_or(-1)))
        .collect();
    assert_eq!(listed, vec![("general".to_owned(), 3), ("工作".to_owned(), 1)]);

    // Ranking: title match, then body match; other notes are left out.
    let r = ok_json(&c, "recall", json!({"query": "咖啡"})).await;
    assert_eq!(titles(&r), vec!["咖啡偏好", "早餐"]);
    let r = ok_json(&c, "recall", json!({"query": "standup MONDAYS"})).await;
    assert_eq!(titles(&r), vec!["Standup moved to 9:30 on Mondays"]);
    let r = ok_json(&c, "recall", json!({"category": "工作"})).await;
    assert_eq!(titles(&r), vec!["周报"]);
    assert_eq!(ok_json(&c, "recall", json!({"limit": 2})).await["count"], 2);
    assert_eq!(err_json(&c, "recall", json!({"category": "nope"})).await["error"], "unknown_category");

    // Storing the same title again updates the note in place.
    let u = ok_json(&c, "store", json!({"content": "改喝拿铁。", "title": "咖啡偏好"})).await;
    assert_eq!((u["action"].as_str(), u["note"]["id"].as_str()), (Some("updated"), Some(id.as_str())));
    assert_eq!(u["note"]["importance"], 4, "an update keeps the importance");
    assert_eq!(u["note"]["path"], path.as_str());
    assert!(env.read("personal", &path).contains("改喝拿铁。"));

    // forget: ambiguous part of a title lists candidates; by id removes exactly one file.
    ok_json(&c, "store", json!({"content": "下午不喝咖啡", "title": "咖啡时间"})).await;
    let e = err_json(&c, "forget", json!({"title": "咖啡"})).await;
    assert_eq!(e["error"], "ambiguous");
    let m = e["message"].as_str().expect("message");
    assert!(m.contains("咖啡偏好") && m.contains("咖啡时间") && m.contains(&id), "{m}");
    let before = commit_count(&pack);
    let f = ok_json(&c, "forget", json!({"id": id})).await;
    assert_eq!(f["forgotten"]["title"], "咖啡偏好");
    assert!(!pack.join(&path).exists());
    assert_eq!(commit_count(&pack), before + 1);
    assert!(git(&pack, &["log", "-1", "--format=%s"]).starts_with("forget: general/咖啡偏好"));
    let f = ok_json(&c, "forget", json!({"title": "咖啡时间"})).await;
    assert_eq!(f["forgotten"]["title"], "咖啡时间");
    assert_eq!(err_json(&c, "forget", json!({"title": "咖啡时间"})).await["error"], "not_found");
    assert_eq!(err_json(&c, "forget", json!({"id": "deadbeef"})).await["error"], "not_found");
    assert_fsck(&pack);
    assert_clean(&pack);
    c.close().await.expect("close");
}

#[tokio::test]
async fn hand_edits_change_what_recall_returns_and_are_committed_first() {
    let env = TestEnv::new();
    let c = notes_client(&env, &[]).await;
    let s =
        ok_json(&c, "store", json!({"content": "Deploys happen on Tuesdays.", "title": "Deploy day"})).await;
    let path = s["note"]["path"].as_str().expect("path").to_owned();
    assert_eq!(path, "notes/general/deploy-day.md");
    let pack = env.pack("personal");
    let file = pack.join(&path);
    let text = fs::read_to_string(&file).expect("read").replace("Tuesdays", "Thursdays");
    fs::write(&file, text).expect("write");
    // A note written by hand, without front matter, in a new category directory.
    fs::create_dir_all(pack.join("notes/ideas")).expect("mkdir");
    fs::write(pack.join("notes/ideas/rust-wasm.md"), "Try compiling the parser to wasm.\n").expect("write");

    let r = ok_json(&c, "recall", json!({"query": "thursdays"})).await;
    assert_eq!(titles(&r), vec!["Deploy day"]);
    let r = ok_json(&c, "recall", json!({"query": "wasm"})).await;
    assert_eq!(r["notes"][0]["title"], "rust-wasm");
    assert_eq!(r["notes"][0]["category"], "ideas");
    let cats = ok_json(&c, "list_categories", json!({})).await;
    assert!(cats["categories"].as_array().expect("cats").iter().any(|c| c["name"] == "ideas"), "{cats}");

    ok_json(&c, "store", json!({"content": "Ship it.", "title": "Motto", "category": "ideas"})).await;
    let log = git(&pack, &["log", "--format=%s", "-3"]);
    let subjects: Vec<&str> = log.lines().collect();
    assert!(subjects[0].starts_with("note: ideas/Motto"), "{log}");
    assert!(subjects[1].starts_with("edit: "), "hand edits are their own commit: {log}");
    assert!(subjects[1].contains("deploy-day.md") && subjects[1].contains("rust-wasm.md"), "{log}");
    assert_clean(&pack);
    c.close().await.expect("close");
}

#[tokio::test]
async fn bad_arguments_are_json_errors_and_wrap_errors_wraps_them() {
    let env = TestEnv::new();
    let c = notes_client(&env, &["--notes-pack", "我的笔记"]).await;
    assert_eq!(err_json(&c, "store", json!({"content": "  "})).await["error"], "invalid_argument");
    let e = err_json(&c, "store", json!({"content": "x", "importance": 9})).await;
    assert_eq!(e["error"], "invalid_argument");
    assert!(e["message"].as_str().expect("message").contains("importance"));
    assert_eq!(err_json(&c, "forget", json!({})).await["error"], "invalid_argument");
    assert_eq!(err_json(&c, "forget", json!({"id": "a", "title": "b"})).await["error"], "invalid_argument");
    assert_eq!(err_json(&c, "create_category", json!({"name": "../x"})).await["error"], "invalid_argument");
    assert_eq!(err_json(&c, "recall", json!({"limit": 0})).await["error"], "invalid_argument");
    // --notes-pack: notes go to the named pack, Chinese names included.
    let s = ok_json(&c, "store", json!({"content": "买牛奶", "title": "购物 / 清单: 周末"})).await;
    assert_eq!(s["note"]["path"], "notes/general/购物-清单-周末.md");
    assert!(env.pack("我的笔记").join("notes/general/购物-清单-周末.md").is_file());
    assert!(!env.pack("personal").exists());
    c.close().await.expect("close");

    let c = notes_client(&env, &["--notes-pack", "我的笔记", "--wrap-errors"]).await;
    let e = err_json(&c, "forget", json!({"title": "不存在"})).await;
    assert_eq!(e["ok"], false);
    assert_eq!(e["error"]["code"], "not_found");
    assert!(e["error"]["message"].as_str().expect("message").contains("购物 / 清单: 周末"), "{e}");
    let r = ok_json(&c, "recall", json!({"query": "牛奶"})).await;
    assert_eq!((r["ok"].as_bool(), r["count"].as_i64()), (Some(true), Some(1)));
    c.close().await.expect("close");
}

/// Several processes storing their first note at once: the notes pack is
/// made once, never seen half made (an empty `meta.json`), and every note lands.
#[tokio::test]
async fn processes_creating_the_notes_pack_at_once_all_succeed() {
    const PROCESSES: usize = 12;
    let env = TestEnv::new();
    let mut clients = Vec::new();
    for _ in 0..PROCESSES {
        clients.push(notes_client(&env, &[]).await);
    }
    let stores: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            tokio::spawn(async move {
                let r = call(
                    &c,
                    "store",
                    json!({"content": format!("note from process {i}"), "title": format!("p{i}")}),
                )
                .await;
                assert!(!r.is_error, "process {i}: {}", r.text);
            })
        })
        .collect();
    for s in stores {
        s.await.expect("store");
    }
    let meta: Value = serde_json::from_str(&env.read("personal", "meta.json")).expect("meta.json");
    assert_eq!(meta["name"], "personal");
    let notes = fs::read_dir(env.pack("personal").join("notes/general")).expect("notes").count();
    assert_eq!(notes, PROCESSES);
    let leftovers: Vec<_> = fs::read_dir(&env.packs)
        .expect("packs dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "staging directories left: {leftovers:?}");
}
