//! `engram hook <event>`: Claude Code hooks and the git pre-commit hook.
//!
//! Claude Code runs `engram hook session-start|pre-compact|session-end` with a
//! JSON object on stdin (`cwd`, `source`, …) and reads JSON from stdout. The
//! hooks only read local files, never wait on the network (SessionEnd starts
//! a detached `engram sync`) and always answer (exit 0 with valid JSON) so
//! they can never block the client. A project
//! names its packs in `.claude/engram.json` (`{"packs": ["coach"]}`) or in
//! `ENGRAM_PACKS` (comma-separated), which wins.

use std::io::{IsTerminal as _, Read as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{Value, json};

use crate::ops::{Engram, compact_reminder};

/// The events `engram hook` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HookEvent {
    /// Claude Code SessionStart: inject the system prompt and the packs' hot memory.
    SessionStart,
    /// Claude Code PreCompact: remind to capture what matters.
    PreCompact,
    /// Claude Code SessionEnd: sync the packs with unpushed commits, in a detached process.
    SessionEnd,
    /// git pre-commit in a pack: `engram lint` + secret scan of the staged changes.
    GitPreCommit,
}

fn read_input() -> Value {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Value::Null;
    }
    let mut text = String::new();
    let _ = stdin.lock().take(4 * 1024 * 1024).read_to_string(&mut text);
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// The packs a project uses: `ENGRAM_PACKS`, else `<cwd>/.claude/engram.json`.
pub fn project_packs(cwd: &Path) -> Vec<String> {
    if let Ok(list) = std::env::var(crate::settings::ENV_PROJECT_PACKS)
        && !list.trim().is_empty()
    {
        return list.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect();
    }
    let Ok(text) = std::fs::read_to_string(cwd.join(".claude").join("engram.json")) else {
        return Vec::new();
    };
    let Ok(v) = serde_json::from_str::<Value>(&text) else { return Vec::new() };
    v.get("packs")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

/// SessionEnd's sync: packs (of this project) with commits their remote has not
/// seen are synced by a detached `engram sync <pack>` process, so the hook
/// returns at once and never waits on the network. Deciding costs no network
/// access (ahead counts are read from the last fetch).
fn sync_on_session_end(engram: &Engram, packs: &[String]) -> Result<(), String> {
    let pending = engram.packs_to_push();
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    for pack in pending.iter().filter(|p| packs.is_empty() || packs.contains(p)) {
        std::process::Command::new(&exe)
            .arg("sync")
            .arg(pack)
            .arg("--packs-dir")
            .arg(&engram.config().packs_dir)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start `engram sync {pack}`: {e}"))?;
    }
    Ok(())
}

fn emit(v: &Value) -> ExitCode {
    outln!("{v}");
    ExitCode::SUCCESS
}

/// Runs `engram hook <event>`.
pub fn run(engram: anyhow::Result<std::sync::Arc<Engram>>, event: HookEvent) -> ExitCode {
    let input = read_input();
    let cwd = input
        .get("cwd")
        .and_then(Value::as_str)
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("."));
    match event {
        HookEvent::SessionStart => {
            let after_compact = input.get("source").and_then(Value::as_str) == Some("compact");
            let context = match &engram {
                Ok(e) => e.session_context(&project_packs(&cwd), after_compact),
                Err(err) => format!("engram: not available ({err:#})"),
            };
            emit(&json!({
                "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}
            }))
        }
        // PreCompact takes no hookSpecificOutput: the reminder goes out as a system message.
        HookEvent::PreCompact => emit(&json!({"systemMessage": compact_reminder()})),
        HookEvent::SessionEnd => {
            let packs = project_packs(&cwd);
            let result = match &engram {
                Ok(e) => sync_on_session_end(e, &packs),
                Err(err) => Err(format!("{err:#}")),
            };
            match result {
                Ok(()) => emit(&json!({"suppressOutput": true})),
                Err(e) => emit(&json!({"systemMessage": format!("engram: sync skipped ({e})")})),
            }
        }
        HookEvent::GitPreCommit => git_pre_commit(engram, &cwd),
    }
}

fn git_pre_commit(engram: anyhow::Result<std::sync::Arc<Engram>>, dir: &Path) -> ExitCode {
    let engram = match engram {
        Ok(e) => e,
        Err(e) => {
            eprintln!("engram pre-commit: {e:#}");
            return ExitCode::from(1);
        }
    };
    let mut failed = false;
    let parent = dir.parent().unwrap_or(dir);
    let msgs = crate::lint::lint_pack(dir, parent);
    if msgs.iter().any(|m| m.level == crate::lint::Level::Error) {
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        eprintln!("{}", crate::lint::render_report(&name, &msgs, crate::settings::lang()));
        failed = true;
    }
    let index_file = std::env::var_os("GIT_INDEX_FILE").map(PathBuf::from);
    match engram.with_repo(dir, |r| Ok(r.staged_findings(index_file.as_deref())?)) {
        Ok(findings) if !findings.is_empty() => {
            eprintln!(
                "engram pre-commit: the staged changes look like they contain secrets:{}\nRedact them (e.g. `[REDACTED]`) and stage again. Secrets must never enter the pack's history.",
                crate::secrets::describe(&findings)
            );
            failed = true;
        }
        Ok(_) => {}
        Err(e) => {
            eprintln!("engram pre-commit: {e}");
            failed = true;
        }
    }
    if failed { ExitCode::from(1) } else { ExitCode::SUCCESS }
}
