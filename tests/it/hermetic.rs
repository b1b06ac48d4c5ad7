//! Test servers and CLI runs start from a cleared environment: a developer's
//! `ENGRAM_*` variables cannot change a result.
//!
//! Setting variables in this (multi-threaded) test process is not allowed, so
//! the check runs in a child test runner: this binary again, filtered to one
//! ignored test, with the variables set on that child only.

use std::process::Command;

use serde_json::json;

use crate::common::*;

/// Marks the child run; the ignored test does nothing without it.
const PROBE: &str = "ENGRAM_TEST_HERMETIC_PROBE";

/// What a developer might have exported, each of which would change a result if it reached
/// the server or the CLI.
const DEVELOPER_ENV: &[(&str, &str)] = &[
    // Not a time: a server or CLI that saw it would refuse to start.
    ("ENGRAM_NOW", "not-a-time"),
    ("ENGRAM_AUTHOR_NAME", "Leaked Developer"),
    ("ENGRAM_AUTHOR_EMAIL", "leaked@example.invalid"),
    ("ENGRAM_USER", "leaked"),
    ("ENGRAM_PACKS", "leaked"),
    ("ENGRAM_HOST", "leaked-host"),
    ("ENGRAM_DURABLE", "1"),
    ("ENGRAM_TRACE_WRITES", "1"),
];

#[test]
fn a_developers_engram_variables_do_not_reach_test_servers() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let elsewhere = tmp.path().join("developer-packs");
    let exe = std::env::current_exe().expect("test binary");
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", "hermetic::probe_under_a_developers_environment", "--ignored", "--nocapture"]);
    cmd.env(PROBE, "1").env("ENGRAM_PACKS_DIR", &elsewhere);
    for (k, v) in DEVELOPER_ENV {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run the child test runner");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "the probe failed under a developer's environment:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!elsewhere.exists(), "ENGRAM_PACKS_DIR was used");
}

/// Run by the test above with [`DEVELOPER_ENV`] in its environment.
#[tokio::test]
#[ignore = "run by a_developers_engram_variables_do_not_reach_test_servers"]
async fn probe_under_a_developers_environment() {
    if std::env::var_os(PROBE).is_none() {
        eprintln!(
            "skipped: runs only as the child of a_developers_engram_variables_do_not_reach_test_servers"
        );
        return;
    }
    assert_eq!(std::env::var("ENGRAM_NOW").as_deref(), Ok("not-a-time"), "the harness set the variables");
    // The real clock: the harness sets no ENGRAM_NOW of its own to hide a leaked one.
    let env = TestEnv::with_real_clock();

    // The CLI: starts (ENGRAM_NOW did not reach it) and commits as engram.
    env.init("coach");
    let author = |pack: &str| git(&env.pack(pack), &["log", "-1", "--format=%an <%ae>"]);
    assert_eq!(author("coach").trim(), "engram <engram@localhost>");

    // The server: starts, commits as engram, and the graph is the default user's.
    let c = env.client_with(&["--tools", "engram,graph"]).await;
    let json = json!({"name": "coach", "category": "facts", "content": "likes tea", "summary": "tea"});
    ok(&c, "capture_memory", json).await;
    assert_eq!(author("coach").trim(), "engram <engram@localhost>");
    ok(
        &c,
        "create_entities",
        json!({"entities": [{"name": "Alice", "entityType": "person", "observations": []}]}),
    )
    .await;
    let files = git(&env.pack("personal"), &["ls-tree", "-r", "--name-only", "HEAD", "users"]);
    assert!(files.lines().all(|f| f.starts_with("users/default/")) && !files.is_empty(), "{files}");
    c.close().await.expect("close");
}
