//! A new user's first hour (issue 35): the suite runs on a machine where git was never set
//! up, output piped into `head` ends quietly, errors say what to do, HTTP sessions end the
//! way clients expect, and `engram --help` shows what a user needs.

use std::io::Read as _;
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::*;
use crate::http::HttpServer;
use crate::http_limits::{initialize, request_with};

#[test]
fn test_git_has_its_own_identity_and_no_outside_config() {
    let env = TestEnv::new();
    let home = env.dir.path().join("home");
    std::fs::create_dir_all(&home).expect("mkdir");
    // A global config that would break the commit if git read it.
    std::fs::write(
        home.join(".gitconfig"),
        "[user]\n\tuseConfigOnly = true\n[core]\n\thooksPath = /nonexistent\n",
    )
    .expect("write");
    let repo = env.dir.path().join("repo");
    let out = git_command().arg("init").arg("-q").arg(&repo).env("HOME", &home).output().expect("git init");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::write(repo.join("a.md"), "a\n").expect("write");
    for args in [&["add", "a.md"][..], &["commit", "-qm", "first"]] {
        let out = git_in(&repo).args(args).env("HOME", &home).env_remove("EMAIL").output().expect("git");
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    assert_eq!(git(&repo, &["log", "-1", "--format=%an <%ae>"]).trim(), format!("{GIT_NAME} <{GIT_EMAIL}>"));
}

/// Runs `engram args…` with its standard output a pipe whose reader is gone before engram
/// writes (what `engram … | head -1` does to the rest of the output): (exit code, stderr).
fn with_stdout_closed(env: &TestEnv, args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(bin())
        .args(args)
        .arg("--packs-dir")
        .arg(&env.packs)
        .current_dir(env.dir.path())
        .env_clear()
        .envs(base_env())
        .env("HOME", env.dir.path())
        .env("ENGRAM_NOW", NOW)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn engram");
    drop(child.stdout.take());
    let mut stderr = String::new();
    child.stderr.take().expect("stderr").read_to_string(&mut stderr).expect("read stderr");
    let status = child.wait().expect("wait");
    (status.code(), stderr)
}

#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    let env = TestEnv::new();
    env.init("coach");
    let head = git(&env.pack("coach"), &["rev-parse", "HEAD"]);
    for args in [
        &["stats"][..],
        &["search", "x"],
        &["search", "template"],
        &["show", "coach", head.trim()],
        &["log", "coach"],
        &["list"],
    ] {
        let (code, stderr) = with_stdout_closed(&env, args);
        assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "engram {args:?}: {stderr}");
        assert!(code == Some(0) || code == Some(141), "engram {args:?} exited {code:?}: {stderr}");
    }
    // Reading one line, then closing: the same, whatever engram had written by then.
    let mut child = Command::new(bin())
        .args(["log", "coach", "--packs-dir"])
        .arg(&env.packs)
        .env_clear()
        .envs(base_env())
        .env("HOME", env.dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn engram");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut first = [0u8; 1];
    let _ = stdout.read(&mut first);
    drop(stdout);
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn syncing_to_a_local_path_that_does_not_exist_says_how_to_create_it() {
    let env = TestEnv::new();
    env.init("coach");
    let bare = env.dir.path().join("remotes").join("coach.git");
    let bare_text = bare.display().to_string();
    cli_ok(&env, &["remote", "add", "coach", &bare_text]);
    let out = env.cli(&["sync", "coach"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(!stderr.contains("unsupported URL protocol"), "{stderr}");
    assert!(stderr.contains(&format!("git init --bare {bare_text}")), "{stderr}");
    assert!(stderr.contains("does not exist"), "{stderr}");
    // Doing what it says is enough.
    let made = git_command().args(["init", "--bare", "-q"]).arg(&bare).output().expect("git init --bare");
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let synced = cli_ok(&env, &["sync", "coach"]);
    assert!(!git(&bare, &["rev-parse", "--all"]).trim().is_empty(), "nothing was pushed: {synced}");
}

#[test]
fn a_second_ui_on_a_busy_port_names_it_and_the_way_out() {
    let env = TestEnv::new();
    let busy = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = busy.local_addr().expect("addr").port().to_string();
    let out = env.cli_within(&["ui", "--no-open", "--port", &port], Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains(&format!("port {port}")), "{stderr}");
    assert!(stderr.contains("--port 0"), "{stderr}");
    assert_eq!(stderr.matches("in use").count(), 1, "said once: {stderr}");
    drop(busy);
}

#[test]
fn ending_an_http_session_answers_no_content() {
    let env = TestEnv::new();
    env.init("coach");
    let server = HttpServer::loopback(&env, &[]);
    let id = initialize(&server.authority);
    let headers = [("Mcp-Session-Id", id.as_str()), ("MCP-Protocol-Version", "2025-03-26")];
    let (status, _, body) = request_with("DELETE", &server.authority, &headers, "");
    assert!(status == 200 || status == 204, "DELETE /mcp answered {status}: {body}");
    // The session is gone.
    let (status, _, _) =
        request_with("POST", &server.authority, &headers, r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#);
    assert_eq!(status, 404);
}

#[test]
fn top_level_help_lists_commands_not_serve_options() {
    let env = TestEnv::new();
    let top = cli_ok(&env, &["--help"]);
    for command in ["serve", "init", "search", "sync", "ui", "doctor"] {
        assert!(top.lines().any(|l| l.trim_start().starts_with(&format!("{command} "))), "{command}:\n{top}");
    }
    for hidden in ["--sync-interval", "--tools", "--http", "--max-sessions", "bench-search"] {
        assert!(!top.contains(hidden), "{hidden} in the top-level help:\n{top}");
    }
    assert!(!top.lines().any(|l| l.trim_start().starts_with("hook ")), "{top}");
    let serve = cli_ok(&env, &["serve", "--help"]);
    assert!(serve.contains("--sync-interval") && serve.contains("--http"), "{serve}");
    // The serve options still work without the `serve` word (the default command).
    let bad = env.cli(&["--tools", "nonsense"]);
    assert!(!bad.status.success());
    // No help text points into engram's source tree.
    let commands: Vec<String> = top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .filter(|c| c != "help")
        .chain(["hook".to_owned(), "bench-search".to_owned()])
        .collect();
    for command in &commands {
        let help = cli_ok(&env, &[command, "--help"]);
        for source in ["src/", ".rs", "BENCHMARKS.md", "ARCHITECTURE.md", "RELIABILITY.md", "README.md"] {
            assert!(!help.contains(source), "`engram {command} --help` names {source}:\n{help}");
        }
    }
}

/// After the quick start (`cargo run --release -- demo`), a person types `engram …`: the
/// demo says whether that finds this binary and, when not, the exact line that makes it so.
#[test]
fn the_demo_says_how_to_get_engram_on_path() {
    let env = TestEnv::new();
    let bin_dir = bin().parent().expect("dir").to_owned();
    let run = |path: &std::ffi::OsStr| {
        let out = Command::new(bin())
            .args(["demo", "--packs-dir"])
            .arg(&env.packs)
            .env_clear()
            .envs(base_env())
            .env("HOME", env.dir.path())
            .env("PATH", path)
            .output()
            .expect("demo");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let without = run(std::ffi::OsStr::new("/usr/bin:/bin"));
    assert!(
        without.contains(&format!("export PATH=\"{}:$PATH\"", bin_dir.display()))
            && without.contains("cargo install --path . --locked"),
        "{without}"
    );
    let with = std::env::join_paths([bin_dir.as_path(), std::path::Path::new("/usr/bin")]).expect("PATH");
    let found = run(&with);
    assert!(found.contains("`engram` is on your PATH"), "{found}");
}

/// `--packs-dir` is global: before the command as after it. A `serve` option before another
/// command is refused by name (it would be ignored), with the way to write it.
#[test]
fn packs_dir_goes_before_the_command_and_serve_options_are_refused_there() {
    let env = TestEnv::new();
    env.init("coach");
    let run = |args: &[&str]| {
        std::process::Command::new(bin())
            .args(args)
            .current_dir(env.dir.path())
            .env_clear()
            .envs(base_env())
            .output()
            .expect("run engram")
    };
    let packs = env.packs.display().to_string();
    let out = run(&["--packs-dir", &packs, "list"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("coach"));
    let out = run(&["--packs-dir", &packs, "--read-only", "list"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("--read-only is an option of `engram serve`, not of `engram list`"), "{said}");
}
