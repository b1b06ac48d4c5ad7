//! A running server's `load_engram` sees what other processes and people changed since its
//! last load: `load_engram` proves HEAD unchanged from `stat` stamps and answers settled loads
//! on the server's own thread, so these tests change the pack between two loads of one server.

use std::fs;

use serde_json::json;

use crate::common::*;
use crate::engram_tools::make_pack;

fn load() -> serde_json::Value {
    json!({"name": "coach", "query": "q"})
}

#[tokio::test]
async fn another_process_and_hand_edits_are_seen_by_the_next_load() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    let a = env.client().await;
    let b = env.client().await;
    ok(
        &b,
        "capture_memory",
        json!({"name": "coach", "category": "goals", "content": "想跑半马", "summary": "半马目标"}),
    )
    .await;
    // Several loads: the first ones learn HEAD through git, later ones from stamps.
    for _ in 0..3 {
        let text = ok(&a, "load_engram", load()).await;
        assert!(text.contains("半马目标"), "{text}");
    }
    // A second server writes: the next load of the first one shows it.
    ok(
        &b,
        "capture_memory",
        json!({"name": "coach", "category": "goals", "content": "每周跑三次", "summary": "每周三练"}),
    )
    .await;
    let text = ok(&a, "load_engram", load()).await;
    assert!(text.contains("每周三练") && text.contains("半马目标"), "{text}");
    // The CLI packs refs (the loose branch file goes away), then the second server writes again.
    let pack = env.pack("coach");
    git(&pack, &["pack-refs", "--all"]);
    assert!(!pack.join(".git/refs/heads").read_dir().expect("refs").any(|_| true), "refs packed");
    ok(&a, "load_engram", load()).await;
    ok(
        &b,
        "capture_memory",
        json!({"name": "coach", "category": "diet", "content": "不吃香菜", "summary": "忌香菜"}),
    )
    .await;
    let text = ok(&a, "load_engram", load()).await;
    assert!(text.contains("忌香菜"), "{text}");
    // A person edits the persona and the hot index by hand (same length, then longer).
    let role = fs::read_to_string(pack.join("role.md")).expect("role");
    fs::write(pack.join("role.md"), role.replace("耐心", "严格")).expect("edit");
    let text = ok(&a, "load_engram", load()).await;
    assert!(text.contains("严格的健身教练") && !text.contains("耐心"), "{text}");
    let hot = fs::read_to_string(pack.join("memory/_index.md")).expect("hot");
    fs::write(pack.join("memory/_index.md"), format!("{hot}- `memory/notes.md` 手写的一行\n")).expect("edit");
    let text = ok(&a, "load_engram", load()).await;
    assert!(text.contains("手写的一行"), "{text}");
    a.close().await.expect("close");
    b.close().await.expect("close");
}

#[tokio::test]
async fn an_entry_another_process_adds_is_still_expired_on_time() {
    let env = TestEnv::new();
    make_pack(&env, "coach");
    // A server whose clock says 2026-11-25 has loaded the pack (nothing expires) ...
    let mut later = TestEnv::new();
    later.packs = env.packs.clone();
    later.now = Some("2026-11-25T09:00:00Z".into());
    let a = later.client().await;
    let b = env.client().await;
    ok(
        &b,
        "capture_memory",
        json!({"name": "coach", "category": "status", "content": "长期目标增肌", "summary": "增肌"}),
    )
    .await;
    for _ in 0..3 {
        ok(&a, "load_engram", load()).await;
    }
    // ... then a process living two days earlier captures an entry expiring on 2026-11-23.
    ok(&b, "capture_memory", json!({"name": "coach", "category": "status", "content": "近期在恢复期", "summary": "恢复期", "memory_type": "inferred", "expires": "2026-11-23"})).await;
    let pack = env.pack("coach");
    let before = commit_count(&pack);
    let text = ok(&a, "load_engram", load()).await;
    assert!(!text.contains("恢复期") && text.contains("增肌"), "{text}");
    assert_eq!(commit_count(&pack), before, "a load never commits");
    // The next memory write of that server moves it, in a commit of its own.
    ok(
        &a,
        "capture_memory",
        json!({"name": "coach", "category": "status", "content": "新的一周", "summary": "新的一周"}),
    )
    .await;
    assert_eq!(commit_count(&pack), before + 2, "the expiry pass is a commit of its own");
    assert!(git(&pack, &["log", "-1", "--skip=1", "--format=%s"]).starts_with("expire: 1 entries"));
    assert!(env.read("coach", "memory/status-expired.md").contains("近期在恢复期"));
    a.close().await.expect("close");
    b.close().await.expect("close");
}
