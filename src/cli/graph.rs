//! `engram graph import|export`, and the `--user` / `--graph-pack` options
//! of the graph and personal toolsets.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;

use crate::mcp::{Structured, Toolset};
use crate::ops::{Caller, DEFAULT_GRAPH_PACK, DEFAULT_USER, Engram, StructuredConfig};

/// Where the graph and personal records live.
#[derive(Debug, Clone, clap::Args)]
pub(super) struct StructuredArgs {
    /// User whose graph, profile, entities and events the tools read and write
    #[arg(long, env = crate::settings::ENV_USER, default_value = DEFAULT_USER)]
    user: String,
    /// Pack holding the graph and personal records (created on first write)
    #[arg(long, default_value = DEFAULT_GRAPH_PACK)]
    graph_pack: String,
}

impl StructuredArgs {
    /// The graph pack, user and reference file these arguments name.
    pub(super) fn config(&self) -> StructuredConfig {
        StructuredConfig {
            pack: self.graph_pack.clone(),
            user: self.user.clone(),
            memory_file: crate::settings::memory_file_path(),
        }
    }
}

/// `engram graph …`.
#[derive(Debug, clap::Args)]
pub(super) struct GraphArgs {
    #[command(subcommand)]
    command: GraphCommand,
}

#[derive(Debug, clap::Subcommand)]
enum GraphCommand {
    /// Import a memory.jsonl written by @modelcontextprotocol/server-memory (one commit)
    Import {
        /// The JSONL file
        file: PathBuf,
        /// Replace an existing graph instead of refusing
        #[arg(long)]
        replace: bool,
        #[command(flatten)]
        structured: StructuredArgs,
    },
    /// Print the graph as the reference server's JSONL (byte-identical for an imported file)
    Export {
        /// Write to this file instead of stdout
        #[arg(long, short)]
        output: Option<PathBuf>,
        #[command(flatten)]
        structured: StructuredArgs,
    },
}

/// The structured tools for `serve`, when a toolset needs them; prints the
/// `MEMORY_FILE_PATH` import hint to stderr.
pub(super) fn structured(
    engram: Arc<Engram>,
    args: &StructuredArgs,
    toolsets: &[Toolset],
) -> anyhow::Result<Option<Arc<Structured>>> {
    if !toolsets.iter().any(|t| matches!(t, Toolset::Graph | Toolset::Personal)) {
        return Ok(None);
    }
    let structured = Structured::new(engram, args.config())?;
    if toolsets.contains(&Toolset::Graph)
        && let Ok(Some(hint)) = structured.graph().import_hint()
    {
        eprintln!("engram: {hint}");
    }
    Ok(Some(Arc::new(structured)))
}

/// Runs `engram graph …`.
pub(super) fn run(engram: Arc<Engram>, args: &GraphArgs) -> anyhow::Result<ExitCode> {
    let args_structured = match &args.command {
        GraphCommand::Import { structured, .. } | GraphCommand::Export { structured, .. } => structured,
    };
    let structured = Structured::new(engram, args_structured.config())?;
    let graph = structured.graph();
    match &args.command {
        GraphCommand::Import { file, replace, .. } => {
            let text =
                std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
            let caller = Caller { tool: "graph-import".into(), client: Some("engram-cli".into()) };
            let source = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let (report, committed) = match graph.import(&text, &source, *replace, &caller) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("{e}");
                    return Ok(ExitCode::from(1));
                }
            };
            outln!(
                "imported {} entities and {} relations into pack {:?}, user {:?}{}",
                report.entities,
                report.relations,
                args_structured.graph_pack,
                args_structured.user,
                committed
                    .map(|c| format!(" (commit {})", c.short))
                    .unwrap_or_else(|| " (nothing changed)".into())
            );
            let notes = [
                ("duplicate entity lines (kept, hidden)", &report.duplicate_entity_lines),
                ("duplicate relation lines (kept once)", &report.duplicate_relation_lines),
                ("lines that are no entity or relation (kept verbatim)", &report.unknown_lines),
            ];
            for (what, lines) in notes {
                if !lines.is_empty() {
                    let shown: Vec<String> = lines.iter().take(20).map(ToString::to_string).collect();
                    outln!("{} {what}: line {}", lines.len(), shown.join(", "));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        GraphCommand::Export { output, .. } => {
            let text = graph.export()?;
            match output {
                Some(path) => std::fs::write(path, text.as_bytes())
                    .with_context(|| format!("writing {}", path.display()))?,
                None => out!("{text}"),
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
