//! `engram show`, `engram revert`, `engram undo`.

use std::io::IsTerminal as _;
use std::process::ExitCode;

use crate::ops::{Caller, Engram};

fn cli_caller(tool: &str) -> Caller {
    Caller { tool: tool.to_owned(), client: Some("engram-cli".to_owned()) }
}

/// `engram show <pack> <commit>`: one commit with its memory summary and diffs.
pub fn show(engram: &Engram, pack: &str, commit: &str) -> anyhow::Result<ExitCode> {
    let dir = engram.packs().resolve_for_repair(pack)?.dir;
    let Some(info) = engram.with_existing_repo(&dir, |r| Ok(r.commit_info(commit, true)?))? else {
        anyhow::bail!("{pack} has no history yet (not a git repository until its first write)");
    };
    let color = std::io::stdout().is_terminal();
    outln!("commit {}", info.id);
    for line in info.message.trim_end().lines() {
        outln!("    {line}");
    }
    outln!();
    super::log::print_commit(&info, true, color);
    Ok(ExitCode::SUCCESS)
}

/// `engram revert <pack> <commit>`.
pub fn revert(engram: &Engram, pack: &str, commit: &str) -> anyhow::Result<ExitCode> {
    super::report(engram.revert_memory(pack, commit, &cli_caller("engram-revert")), crate::settings::lang())
}

/// `engram undo <pack> [-n N] [--client C]`.
pub fn undo(engram: &Engram, pack: &str, n: usize, client: Option<&str>) -> anyhow::Result<ExitCode> {
    super::report(engram.undo_last(pack, n, client, &cli_caller("engram-undo")), crate::settings::lang())
}
