//! Names that become paths are portable (a pack must clone on Windows), two
//! note titles never overwrite each other, and a history path filter is a
//! pack path.

use serde_json::{Value, json};

use crate::common::*;

const NOT_PORTABLE: [&str; 5] = ["CON", "nul", "x:stream", "com1", "aux"];

#[tokio::test]
async fn windows_reserved_names_are_refused_wherever_a_name_becomes_a_path() {
    let env = TestEnv::new();
    env.init("coach");
    let dir = env.pack("coach");
    let c = env.client_with(&["--tools", "engram,notes,personal"]).await;
    // Something in each place first, so the counts below see only refusals.
    ok(&c, "capture_memory", json!({"name": "coach", "category": "console", "content": "a", "summary": "a"}))
        .await;
    ok(&c, "update_profile", json!({"key": "city", "value": "Paris"})).await;
    let before = commit_count(&dir);
    let personal_before = commit_count(&env.pack("personal"));
    for bad in NOT_PORTABLE {
        let e = err(
            &c,
            "capture_memory",
            json!({"name": "coach", "category": bad, "content": "x", "summary": "x"}),
        )
        .await;
        assert!(e.contains("`category`") && e.contains("not a portable file name"), "{bad}: {e}");
        let e = err(
            &c,
            "consolidate_memory",
            json!({"name": "coach", "category": bad, "consolidated_content": "x", "summary": "x"}),
        )
        .await;
        assert!(e.contains("not a portable file name"), "{bad}: {e}");
        // (The notes tools refused `:` before; the other names are new.)
        let notes_reason = if bad.contains(':') { "any of /" } else { "not a portable file name" };
        let e = err(&c, "create_category", json!({"name": bad})).await;
        assert!(e.contains("invalid_argument") && e.contains(notes_reason), "{bad}: {e}");
        let e = err(&c, "store", json!({"content": "x", "title": "t", "category": bad})).await;
        assert!(e.contains(notes_reason), "{bad}: {e}");
        let e = err(&c, "update_profile", json!({"key": bad, "value": 1})).await;
        assert!(e.contains("not a portable file name"), "{bad}: {e}");
        let out = env.cli(&["init", bad]);
        assert!(
            !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("非法名称"),
            "init {bad}"
        );
        assert!(!env.pack(bad).exists());
    }
    assert_eq!(commit_count(&dir), before, "nothing was committed");
    assert_eq!(commit_count(&env.pack("personal")), personal_before, "nothing was committed");
    c.close().await.expect("close");

    // A notes pack that cannot be a directory on Windows is refused at its first write…
    let c = env.client_with(&["--tools", "notes", "--notes-pack", "CON"]).await;
    let e = err(&c, "store", json!({"content": "x", "title": "t"})).await;
    assert!(e.contains("not a portable file name"), "{e}");
    assert!(!env.pack("CON").exists());
    c.close().await.expect("close");
    // …and a user id at start.
    let packs = env.packs.display().to_string();
    let out = std::process::Command::new(bin())
        .env_clear()
        .envs(base_env())
        .env("HOME", env.dir.path())
        .args(["serve", "--packs-dir", &packs, "--tools", "personal", "--user", "nul"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run engram");
    assert!(!out.status.success(), "--user nul must not start");
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a portable file name"));
}

async fn store(c: &StdioClient, title: &str, content: &str) -> (bool, Value) {
    let r = call(c, "store", json!({"content": content, "title": title})).await;
    (r.is_error, r.structured.expect("structured"))
}

#[tokio::test]
async fn note_titles_that_read_alike_never_overwrite_each_other() {
    let env = TestEnv::new();
    let c = env.client_with(&["--tools", "notes"]).await;
    let (failed, first) = store(&c, "Apple", "a fruit").await;
    assert!(!failed && first["action"] == "created", "{first}");
    let id = first["note"]["id"].as_str().expect("id").to_owned();
    for alike in ["apple", "APPLE", "Ａｐｐｌｅ"] {
        let (failed, e) = store(&c, alike, "a company").await;
        assert!(failed && e["error"] == "invalid_argument", "{alike}: {e}");
        let m = e["message"].as_str().expect("message");
        assert!(
            m.contains("\"Apple\"") && m.contains(&id) && m.contains("look-alike"),
            "names the existing note: {m}"
        );
    }
    let (_, f) = store(&c, "ﬁle", "ligature").await;
    assert_eq!(f["action"], "created");
    let (failed, e) = store(&c, "file", "plain").await;
    assert!(failed && e["message"].as_str().is_some_and(|m| m.contains("ﬁle")), "{e}");
    // The exact title still updates its note; nothing was overwritten.
    let (failed, u) = store(&c, "Apple", "a red fruit").await;
    assert!(!failed && u["action"] == "updated" && u["note"]["id"] == id.as_str(), "{u}");
    let all = call(&c, "recall", json!({})).await.structured.expect("structured");
    let contents: Vec<&str> =
        all["notes"].as_array().expect("notes").iter().filter_map(|n| n["content"].as_str()).collect();
    assert_eq!(contents.len(), 2, "{all}");
    assert!(contents.contains(&"a red fruit") && contents.contains(&"ligature"), "{all}");
    c.close().await.expect("close");
}

#[tokio::test]
async fn memory_history_refuses_paths_outside_the_pack() {
    let env = TestEnv::new();
    env.init("coach");
    let c = env.client().await;
    for (path, why) in [
        ("../../etc/passwd", "`..`"),
        ("/etc/passwd", "absolute"),
        ("memory/../../x", "`..`"),
        (".git/config", ".git"),
        ("C:/Windows", "absolute"),
    ] {
        let e = err(&c, "memory_history", json!({"name": "coach", "path": path})).await;
        assert!(e.contains("非法路径") && e.contains(why), "{path}: {e}");
    }
    let out = env.cli(&["log", "coach", "--path", "../../etc/passwd"]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("非法路径"));
    // Plain paths still filter (normalised as everywhere else).
    let h = ok(&c, "memory_history", json!({"name": "coach", "path": "./meta.json"})).await;
    assert!(h.contains("history"), "{h}");
    c.close().await.expect("close");
}
