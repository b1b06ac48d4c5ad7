//! `engram ingest-git` and the serve flags of the notes and workspace toolsets.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use crate::mcp::ToolOptions;
use crate::ops::{Caller, DEFAULT_NOTES_PACK, DEFAULT_WORKSPACE_PACK, Engram};

/// Flags of `engram serve` for the notes and workspace toolsets.
#[derive(Debug, Clone, clap::Args)]
pub(super) struct ToolsetArgs {
    /// Pack the notes toolset stores notes in (created on first use)
    #[arg(long, default_value = DEFAULT_NOTES_PACK)]
    notes_pack: String,
    /// Pack the workspace toolset stores memories in (created on first use)
    #[arg(long, default_value = DEFAULT_WORKSPACE_PACK)]
    workspace_pack: String,
    /// Workspace (git working tree) the workspace tools use by default [default: current directory]
    #[arg(long)]
    workspace: Option<PathBuf>,
    /// Tool errors as {"ok": false, "error": {"code", "message"}} (successes get "ok": true)
    #[arg(long)]
    wrap_errors: bool,
    /// Expose the workspace tools as engram.search, engram.add, … instead of engram_search, …
    #[arg(long)]
    dotted_names: bool,
}

impl ToolsetArgs {
    /// The toolset options these flags (and the environment) give.
    pub(super) fn options(&self) -> anyhow::Result<ToolOptions> {
        Ok(ToolOptions {
            notes_pack: self.notes_pack.clone(),
            workspace_pack: self.workspace_pack.clone(),
            workspace_dir: workspace_or_cwd(self.workspace.clone())?,
            wrap_errors: self.wrap_errors,
            dotted_names: self.dotted_names,
            anthropic: crate::settings::anthropic(),
        })
    }
}

fn workspace_or_cwd(dir: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    match dir {
        Some(d) => Ok(d),
        None => std::env::current_dir().context("reading the current directory"),
    }
}

/// `engram ingest-git`.
#[derive(Debug, Clone, clap::Args)]
pub(super) struct IngestArgs {
    /// The workspace (a git working tree) [default: current directory]
    #[arg(long)]
    workspace: Option<PathBuf>,
    /// How many days back from today
    #[arg(long, default_value_t = crate::ops::DEFAULT_DAYS)]
    days: u32,
    /// Pack to store the summary in
    #[arg(long, default_value = DEFAULT_WORKSPACE_PACK)]
    workspace_pack: String,
}

/// Runs `engram ingest-git` and prints `{added, memoryId, …}` as JSON.
pub(super) fn run(engram: &Engram, args: &IngestArgs) -> anyhow::Result<ExitCode> {
    let dir = workspace_or_cwd(args.workspace.clone())?;
    let caller = Caller { tool: "ingest-git".into(), client: Some("engram-cli".into()) };
    match engram.workspace(&args.workspace_pack).ingest_git(&dir, Some(i64::from(args.days)), &caller) {
        Ok(done) => {
            outln!("{}", serde_json::to_string_pretty(&done)?);
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("{e}");
            Ok(ExitCode::from(1))
        }
    }
}
