//! What the packs roots hold besides packs: staging directories of killed
//! installs, and a project's `.claude/engram/<name>` hiding the user's pack.

use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::json;

use crate::common::*;

/// The id of a process that has exited.
fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().expect("spawn true");
    let pid = child.id();
    child.wait().expect("wait");
    pid
}

fn plant(dir: &Path) {
    fs::create_dir_all(dir.join(".git/objects/pack")).expect("mkdir");
    fs::write(dir.join(".git/objects/pack/pack-x.pack"), vec![0u8; 64 * 1024]).expect("write");
    fs::write(dir.join("meta.json"), "{\"name\": \"half\"}").expect("write");
}

#[test]
fn staging_left_by_a_killed_install_is_removed_when_its_process_is_gone() {
    let env = TestEnv::new();
    env.init("coach");
    let dead = dead_pid();
    let live = std::process::id();
    let gone_install = env.packs.join(format!(".engram-install-{dead}-big"));
    let gone_creation = env.packs.join(format!(".personal.creating-{dead}-0"));
    let running = env.packs.join(format!(".engram-install-{live}-busy"));
    let unrelated = env.packs.join(".cache");
    for d in [&gone_install, &gone_creation, &running, &unrelated] {
        plant(d);
    }

    let out = env.cli(&["list"]);
    assert!(out.status.success());
    let list = String::from_utf8_lossy(&out.stdout);
    assert!(!gone_install.exists() && !gone_creation.exists(), "the dead process's staging is removed");
    assert!(running.exists() && unrelated.exists(), "a live process's staging and other directories stay");
    assert!(list.contains("- coach:"), "{list}");
    assert!(
        list.contains(&format!(".engram-install-{live}-busy"))
            && list.contains(&format!("process {live} is still running")),
        "engram list names what it could not clean: {list}"
    );
    assert!(!list.contains("half"), "a staging directory is not a pack: {list}");

    let out = env.cli(&["doctor"]);
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "a staging directory is a warning, not an error: {report}");
    assert!(
        report.contains(&format!(".engram-install-{live}-busy")) && report.contains("warning:"),
        "{report}"
    );
    assert!(report.contains("✓ coach"), "{report}");
}

/// A stdio server started in `cwd` (its project root is `cwd/.claude/engram`).
async fn client_in(env: &TestEnv, cwd: &Path) -> StdioClient {
    let packs = env.packs.display().to_string();
    let home = env.dir.path().display().to_string();
    StdioClient::spawn_in(
        &bin(),
        &["serve", "--packs-dir", &packs],
        &[("HOME", &home), ("ENGRAM_NOW", NOW)],
        cwd,
    )
    .await
    .expect("spawn engram serve")
}

#[tokio::test]
async fn a_project_pack_hiding_the_users_pack_is_shown() {
    let env = TestEnv::new();
    env.init("coach");
    let user_pack = env.pack("coach");
    let project = env.dir.path().join("work");
    let project_pack = project.join(".claude/engram/coach");
    copy_tree(&user_pack, &project_pack);
    let meta = fs::read_to_string(project_pack.join("meta.json")).expect("meta");
    let mut meta: serde_json::Value = serde_json::from_str(&meta).expect("json");
    meta["description"] = json!("project copy");
    fs::write(project_pack.join("meta.json"), serde_json::to_string_pretty(&meta).expect("json"))
        .expect("write");
    let (used, hidden) = (
        project_pack.canonicalize().expect("canonical").display().to_string(),
        user_pack.canonicalize().expect("canonical").display().to_string(),
    );

    let c = client_in(&env, &project).await;
    let list = ok(&c, "list_engrams", json!({})).await;
    let lines: Vec<&str> = list.lines().collect();
    assert!(lines[0].starts_with("- coach: project copy"), "the reference line comes first: {list}");
    assert!(
        lines.iter().any(|l| l.starts_with("⚠ coach")
            && l.contains("shadowed")
            && l.contains(&used)
            && l.contains(&hidden)),
        "the shadowing is shown with both roots: {list}"
    );
    let load = ok(&c, "load_engram", json!({"name": "coach"})).await;
    let last = load.lines().last().unwrap_or_default();
    assert!(last.contains("shadowed") && last.contains(&used) && last.contains(&hidden), "{load}");
    ok(
        &c,
        "capture_memory",
        json!({"name": "coach", "category": "c", "content": "where", "summary": "where"}),
    )
    .await;
    assert!(fs::read_to_string(project_pack.join("memory/c.md")).is_ok_and(|t| t.contains("where")));
    c.close().await.expect("close");

    // Without the project, the user's pack is used and nothing is shadowed.
    let c = client_in(&env, env.dir.path()).await;
    assert!(!ok(&c, "list_engrams", json!({})).await.contains('⚠'));
    assert!(!ok(&c, "load_engram", json!({"name": "coach"})).await.contains("shadowed"));
    c.close().await.expect("close");
}
