//! The command line: `engram serve | list | init | install | lint | log | demo`.
//!
//! This is the only module that knows clap. Each command builds the same
//! [`Engram`] the MCP server uses, so the CLI and the tools behave alike.

mod demo;
mod graph;
mod log;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::{Parser, Subcommand};

use crate::mcp::{EngramServer, Toolset};
use crate::ops::Engram;

/// engram: git-native long-term memory for AI agents, served over MCP.
#[derive(Debug, Parser)]
#[command(name = "engram", version, about, args_conflicts_with_subcommands = true)]
pub struct Cli {
    /// Packs directory (default: ~/.engram).
    #[arg(long, global = true, env = crate::settings::ENV_PACKS_DIR)]
    packs_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve MCP over stdio (the default)
    Serve(ServeArgs),
    /// List installed packs
    List,
    /// Create a pack from the bundled template
    Init {
        /// Pack name (directory name)
        name: String,
    },
    /// Install a pack from a git URL, a local path or a registry name
    Install {
        /// URL, path or registry name
        source: String,
    },
    /// Check packs against the pack format rules (exit 1 on errors)
    Lint {
        /// Pack name (all packs when omitted)
        name: Option<String>,
    },
    /// Show a pack's history with diffs
    Log(log::LogArgs),
    /// Install the demo pack, check it over a real MCP round trip and print the client config
    Demo,
    /// Import or export the knowledge graph in the reference memory server's JSONL format
    Graph(graph::GraphArgs),
}

#[derive(Debug, Clone, clap::Args)]
struct ServeArgs {
    /// Toolsets to expose, comma-separated: engram (default), graph, personal, all
    #[arg(long, default_value = "engram")]
    tools: String,
    #[command(flatten)]
    structured: graph::StructuredArgs,
    /// fsync every write before acknowledging it (also ENGRAM_DURABLE=1)
    #[arg(long)]
    durable: bool,
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("engram: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn engram(cli: &Cli, durable: bool) -> anyhow::Result<Arc<Engram>> {
    let config = crate::settings::config(cli.packs_dir.clone(), durable)?;
    Ok(Arc::new(Engram::new(config)?))
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match &cli.command {
        None => serve(&cli, &cli.serve),
        Some(Command::Serve(args)) => serve(&cli, args),
        Some(Command::List) => {
            println!("{}", engram(&cli, false)?.list_engrams());
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Init { name }) => report(engram(&cli, false)?.init_engram(name)),
        Some(Command::Install { source }) => {
            let e = engram(&cli, false)?;
            let mut last = 0;
            let res = e.install_engram(source, &mut |got, total| {
                if total > 0 && (got == total || got > last + total / 20) {
                    last = got;
                    eprint!("\rreceiving objects: {got}/{total}");
                    if got == total {
                        eprintln!();
                    }
                }
            });
            report(res)
        }
        Some(Command::Lint { name }) => lint(&*engram(&cli, false)?, name.as_deref()),
        Some(Command::Log(args)) => log::run(&*engram(&cli, false)?, args),
        Some(Command::Demo) => demo::run(&*engram(&cli, false)?),
        Some(Command::Graph(args)) => graph::run(engram(&cli, false)?, args),
    }
}

fn report(res: Result<String, crate::ops::EngramError>) -> anyhow::Result<ExitCode> {
    match res {
        Ok(text) => {
            println!("{text}");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("{e}");
            Ok(ExitCode::from(1))
        }
    }
}

fn lint(engram: &Engram, name: Option<&str>) -> anyhow::Result<ExitCode> {
    let packs = engram.packs();
    let targets: Vec<String> = match name {
        Some(n) => vec![n.to_owned()],
        None => packs.list().into_iter().map(|p| p.name).collect(),
    };
    if targets.is_empty() {
        println!("暂无可校验 Engram。");
        return Ok(ExitCode::SUCCESS);
    }
    let mut errors = 0;
    for t in targets {
        let msgs = match packs.resolve(&t) {
            Ok(p) => crate::lint::lint_pack(&p.dir, p.dir.parent().unwrap_or(packs.packs_dir())),
            Err(_) => vec![crate::lint::LintMessage {
                level: crate::lint::Level::Error,
                file: ".".into(),
                message: "未找到 Engram".into(),
            }],
        };
        errors += msgs.iter().filter(|m| m.level == crate::lint::Level::Error).count();
        println!("{}", crate::lint::render_report(&t, &msgs));
    }
    Ok(if errors > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

fn serve(cli: &Cli, args: &ServeArgs) -> anyhow::Result<ExitCode> {
    let toolsets = Toolset::parse_list(&args.tools).map_err(anyhow::Error::msg)?;
    let engram = engram(cli, args.durable)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let structured = graph::structured(engram.clone(), &args.structured, &toolsets)?;
    runtime.block_on(EngramServer::with_structured(engram, &toolsets, structured).serve_stdio())?;
    Ok(ExitCode::SUCCESS)
}
