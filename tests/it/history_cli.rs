//! The history, purge, gc and hook commands of the CLI on real repositories.

use std::io::Write as _;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::common::*;
use crate::engram_tools::make_pack;

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn commit_of(reply: &str) -> String {
    reply.lines().find_map(|l| l.strip_prefix("commit: ")).expect("a commit id").trim().to_owned()
}

async fn pack_with_history(env: &TestEnv) -> (String, String) {
    make_pack(env, "coach");
    let c = env.client().await;
    let a = ok(
        &c,
        "capture_memory",
        json!({"name": "coach", "category": "prefs", "content": "早上训练", "summary": "早上训练"}),
    )
    .await;
    let b = ok(
        &c,
        "capture_memory",
        json!({"name": "coach", "category": "goals", "content": "减脂", "summary": "减脂"}),
    )
    .await;
    (commit_of(&a), commit_of(&b))
}

#[tokio::test]
async fn log_show_revert_and_undo_from_the_cli() {
    let env = TestEnv::new();
    let (first, second) = pack_with_history(&env).await;
    let dir = env.pack("coach");
    let o = env.cli(&["log", "coach", "--tool", "capture_memory"]);
    let text = stdout(&o);
    assert!(o.status.success());
    assert!(text.contains(&first) && text.contains(&second) && !text.contains("adopt"), "{text}");
    assert!(text.contains("+ [goals] 减脂") && !text.contains("\x1b["), "no colour off a terminal: {text}");
    let text = stdout(&env.cli(&["log", "coach", "--client", "nobody"]));
    assert!(text.trim().is_empty(), "{text}");
    let text = stdout(&env.cli(&["log", "coach", "--since", "2030-01-01"]));
    assert!(text.trim().is_empty(), "{text}");
    let text = stdout(&env.cli(&["log", "coach", "-p", "-n", "1"]));
    assert!(text.contains("+++ b/memory/goals.md") && text.contains("+减脂"), "{text}");
    let text = stdout(&env.cli(&["log"]));
    assert!(text.contains("=== coach ===") || text.contains(&second), "{text}");

    let o = env.cli(&["show", "coach", &first]);
    let text = stdout(&o);
    assert!(
        o.status.success()
            && text.contains("Engram-Tool: capture_memory")
            && text.contains("+ [prefs] 早上训练"),
        "{text}"
    );

    let o = env.cli(&["revert", "coach", &first]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!env.read("coach", "memory/_index_full.md").contains("早上训练"));
    assert!(git(&dir, &["log", "-1", "--format=%B"]).contains("Engram-Client: engram-cli"));
    let o = env.cli(&["undo", "coach", "-n", "1"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!env.read("coach", "memory/_index_full.md").contains("减脂"));
    assert_clean(&dir);
    // Plain git works on a pack too.
    assert!(git(&dir, &["log", "--oneline"]).contains("revert: capture: prefs"));
    assert!(git(&dir, &["blame", "role.md"]).contains("你是一名耐心的健身教练"));
    let o = env.cli(&["revert", "coach", "nope"]);
    assert!(!o.status.success());
}

#[tokio::test]
async fn purge_removes_a_file_and_a_text_from_every_commit() {
    let env = TestEnv::new();
    pack_with_history(&env).await;
    let dir = env.pack("coach");
    let leaked = ["hun", "ter", "2-LEAK"].concat(); // not shaped like a key: got in "anyway"
    let c = env.client().await;
    ok(
        &c,
        "write_engram_file",
        json!({"name": "coach", "path": "notes/private.md", "content": "private notes\n"}),
    )
    .await;
    ok(&c, "capture_memory", json!({"name": "coach", "category": "prefs", "content": format!("the code is {leaked}"), "summary": "code"})).await;
    ok(
        &c,
        "capture_memory",
        json!({"name": "coach", "category": "prefs", "content": "later", "summary": "later"}),
    )
    .await;
    drop(c);
    git(&dir, &["remote", "add", "origin", "https://example.invalid/coach.git"]);
    let n = commit_count(&dir);
    // No confirmation off a terminal without --yes.
    let o = env.cli(&["purge", "coach", "notes/private.md"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(dir.join("notes/private.md").exists());
    let o = env.cli(&["purge", "coach", "notes/private.md", "--yes"]);
    let text = stdout(&o);
    assert!(
        o.status.success()
            && text.contains("purged:")
            && text.contains("origin https://example.invalid/coach.git"),
        "{text}"
    );
    assert!(!dir.join("notes/private.md").exists());
    let o = env.cli(&["purge", "coach", &leaked, "--text", "--yes"]);
    assert!(o.status.success(), "{}", stdout(&o));
    assert_eq!(commit_count(&dir), n, "commits are rewritten, not dropped");
    let all = git(&dir, &["log", "--all", "-p", "--format=%B"]);
    assert!(!all.contains(&leaked) && !all.contains("private notes"), "still in history");
    let objects = git_in(&dir).args(["cat-file", "--batch-all-objects", "--batch"]).output().expect("git");
    assert!(
        !String::from_utf8_lossy(&objects.stdout).contains(&leaked),
        "old objects must be gone after repacking"
    );
    assert!(env.read("coach", "memory/prefs.md").contains("the code is [REDACTED]"));
    assert_clean(&dir);
    assert_fsck(&dir);
    let lint = env.cli(&["lint", "coach"]);
    assert!(lint.status.success(), "{}", stdout(&lint));
    let o = env.cli(&["purge", "coach", "nothing/here.md", "--yes"]);
    assert!(stdout(&o).contains("nothing to do"));
}

#[tokio::test]
async fn gc_packs_loose_objects() {
    let env = TestEnv::new();
    pack_with_history(&env).await;
    let o = env.cli(&["gc", "coach"]);
    let text = stdout(&o);
    assert!(o.status.success() && text.starts_with("coach: ") && text.contains("packed by git gc"), "{text}");
    let loose = git(&env.pack("coach"), &["count-objects", "-v"]);
    assert!(loose.contains("count: 0"), "{loose}");
}

fn run_hook(
    env: &TestEnv,
    event: &str,
    input: &Value,
    extra_env: &[(&str, &str)],
) -> (Value, std::time::Duration) {
    let mut cmd = Command::new(bin());
    cmd.args(["hook", event, "--packs-dir"])
        .arg(&env.packs)
        .env_clear()
        .envs(base_env())
        .env("HOME", env.dir.path());
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let started = std::time::Instant::now();
    let mut child =
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    child.stdin.take().expect("stdin").write_all(input.to_string().as_bytes()).expect("write");
    let out = child.wait_with_output().expect("wait");
    let took = started.elapsed();
    assert!(out.status.success(), "hook {event} failed: {}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("hook {event} printed invalid JSON ({e}): {}", stdout(&out)));
    (v, took)
}

#[tokio::test]
async fn claude_code_hooks_answer_valid_hook_json() {
    let env = TestEnv::new();
    pack_with_history(&env).await;
    let project = env.dir.path().join("project");
    std::fs::create_dir_all(project.join(".claude")).expect("mkdir");
    std::fs::write(project.join(".claude/engram.json"), r#"{"packs": ["coach", "missing"]}"#).expect("write");
    let input =
        json!({"session_id": "s1", "cwd": project, "hook_event_name": "SessionStart", "source": "startup"});
    let (v, _) = run_hook(&env, "session-start", &input, &[]);
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
    let ctx = v["hookSpecificOutput"]["additionalContext"].as_str().expect("additionalContext");
    assert!(
        ctx.contains("## Engram coach — 动态记忆") && ctx.contains("减脂") && ctx.contains("早上训练"),
        "{ctx}"
    );
    assert!(ctx.contains("## Engram missing") && ctx.contains("pack not found"), "{ctx}");
    // ENGRAM_PACKS wins over the file; after a compaction the reminder is added.
    let input = json!({"cwd": project, "hook_event_name": "SessionStart", "source": "compact"});
    let (v, _) = run_hook(&env, "session-start", &input, &[("ENGRAM_PACKS", "coach")]);
    let ctx = v["hookSpecificOutput"]["additionalContext"].as_str().expect("additionalContext");
    assert!(!ctx.contains("missing") && ctx.contains("capture_memory"), "{ctx}");
    let (v, _) = run_hook(
        &env,
        "pre-compact",
        &json!({"cwd": project, "hook_event_name": "PreCompact", "trigger": "auto"}),
        &[],
    );
    assert!(v.get("hookSpecificOutput").is_none(), "PreCompact accepts no hookSpecificOutput");
    assert!(v["systemMessage"].as_str().is_some_and(|m| m.contains("capture_memory")));
    let (v, _) = run_hook(
        &env,
        "session-end",
        &json!({"cwd": project, "hook_event_name": "SessionEnd", "reason": "exit"}),
        &[],
    );
    assert_eq!(v, json!({"suppressOutput": true}));
    // Garbage on stdin still gives valid output.
    let (v, _) = run_hook(&env, "pre-compact", &json!("not an object"), &[]);
    assert!(v["systemMessage"].is_string());
    let _ = commit_count(&env.pack("coach"));
}

#[tokio::test]
async fn git_pre_commit_hook_checks_hand_made_commits() {
    let env = TestEnv::new();
    pack_with_history(&env).await;
    let dir = env.pack("coach");
    let o = env.cli(&["hooks", "install", "coach"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let hook = std::fs::read_to_string(dir.join(".git/hooks/pre-commit")).expect("hook");
    assert!(hook.contains("hook git-pre-commit"));
    let commit = |msg: &str| {
        git_in(&dir)
            .args(["commit", "-qam", msg])
            .env("ENGRAM_PACKS_DIR", &env.packs)
            .output()
            .expect("git commit")
    };
    std::fs::write(
        dir.join("knowledge/深蹲.md"),
        format!("# 深蹲\nkey {}\n", ["AKIA", "Q3EXAMPLEKEY7Z2W"].concat()),
    )
    .expect("write");
    let o = commit("hand edit with a key");
    assert!(!o.status.success(), "the hook must refuse");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("AWS access key id"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::write(dir.join("knowledge/深蹲.md"), "# 深蹲\n膝盖与脚尖同向。\n").expect("write");
    let o = commit("hand edit");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}
