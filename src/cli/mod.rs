//! The command line: `engram serve | list | init | install | lint | log | demo | doctor`.
//!
//! This is the only module that knows clap. Each command builds the same
//! [`Engram`] the MCP server uses, so the CLI and the tools behave alike.

mod demo;
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
    /// Diagnose damaged packs (repository, refs, objects, meta.json, working tree) and say how to repair them (exit 1 on errors)
    Doctor {
        /// Pack name (every pack directory when omitted)
        name: Option<String>,
    },
}

#[derive(Debug, Clone, clap::Args)]
struct ServeArgs {
    /// Toolsets to expose, comma-separated: engram (default), all
    #[arg(long, default_value = "engram")]
    tools: String,
    /// fsync every write before acknowledging it (also ENGRAM_DURABLE=1)
    #[arg(long)]
    durable: bool,
    /// Serve MCP over streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:8765; a bare port means 127.0.0.1)
    #[arg(long, value_name = "ADDR", value_parser = parse_http_addr)]
    http: Option<std::net::SocketAddr>,
    /// Bearer token HTTP clients must send; required when --http is not a loopback address
    #[arg(long, env = crate::settings::ENV_AUTH_TOKEN, hide_env_values = true, requires = "http")]
    auth_token: Option<String>,
    /// Serve only the tools that read (no commit is ever made)
    #[arg(long)]
    read_only: bool,
}

fn parse_http_addr(s: &str) -> Result<std::net::SocketAddr, String> {
    let s = s.trim();
    if let Ok(port) = s.parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    if let Some(port) = s.strip_prefix("localhost:") {
        let port: u16 = port.parse().map_err(|_| format!("{s:?}: bad port"))?;
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    s.parse().map_err(|_| format!("{s:?} is not HOST:PORT (e.g. 127.0.0.1:8765 or [::1]:8765)"))
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
        Some(Command::Doctor { name }) => doctor(&*engram(&cli, false)?, name.as_deref()),
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

fn doctor(engram: &Engram, name: Option<&str>) -> anyhow::Result<ExitCode> {
    let report = engram.doctor(name);
    if report.is_empty() {
        match name {
            Some(n) => println!("未找到 Engram: {n} (no such pack directory)"),
            None => println!("暂无 Engram (no pack directories)."),
        }
        return Ok(ExitCode::from(u8::from(name.is_some())));
    }
    for pack in &report {
        println!("{}", pack.render());
    }
    Ok(if report.iter().any(|p| p.has_errors()) { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

fn serve(cli: &Cli, args: &ServeArgs) -> anyhow::Result<ExitCode> {
    let toolsets = Toolset::parse_list(&args.tools).map_err(anyhow::Error::msg)?;
    let mut config = crate::settings::config(cli.packs_dir.clone(), args.durable)?;
    config.store.read_only = args.read_only;
    let engram = Arc::new(Engram::new(config)?);
    let mut server = EngramServer::new(engram, &toolsets);
    if args.read_only {
        server = server.read_only();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(if args.http.is_some() { 4 } else { 2 })
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    match args.http {
        None => runtime.block_on(server.serve_stdio())?,
        Some(addr) => {
            let opts = crate::mcp::http::HttpOptions { addr, auth_token: args.auth_token.clone() };
            runtime.block_on(server.serve_http(opts, |local| {
                eprintln!("engram: serving MCP over HTTP at http://{local}{}", crate::mcp::http::MCP_PATH);
            }))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
