//! The command line: `engram serve | list | init | install | build | lint | log | demo | search | sync | doctor | registry | …`.
//!
//! This is the only module that knows clap. Each command builds the same
//! [`Engram`] the MCP server uses, so the CLI and the tools behave alike.

#[macro_use]
mod out;

mod build;
mod demo;
mod graph;
mod history;
mod hook;
mod ingest;
mod log;
mod maint;
mod review;
mod search;
mod searchbench;
mod sync;
mod ui;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::{Parser, Subcommand};

use crate::lang::Lang;
use crate::mcp::{EngramServer, Toolset};
use crate::ops::Engram;

/// engram: git-native long-term memory for AI agents, served over MCP.
#[derive(Debug, Parser)]
#[command(
    name = "engram",
    version,
    about,
    // `serve`'s options are also the top level's (`engram` alone serves): their requirements
    // (`--auth-token` needs `--http`, also from the environment) hold for the top level only
    // when no command is given.
    subcommand_negates_reqs = true,
    after_help = "Without a command, engram serves MCP over stdio: `engram serve --help` lists its options."
)]
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
        /// Add a knowledge group with its own index (knowledge/<group>/_index.md)
        #[arg(long)]
        nested: bool,
        /// The template's language: zh (the Python Engram server's template) or en
        /// (default: the language of engram's messages, ENGRAM_LANG or the locale)
        #[arg(long, value_enum)]
        lang: Option<TemplateLang>,
    },
    /// Install a pack from a git URL, a local path or a registry name
    Install {
        /// URL, path or registry name
        source: String,
        /// The key file of a pack kept encrypted on its remote (from `engram key new` on another device)
        #[arg(long)]
        key: Option<std::path::PathBuf>,
    },
    /// Check packs against the pack format rules (exit 1 on errors)
    Lint {
        /// Pack name (all packs when omitted)
        name: Option<String>,
    },
    /// Show a pack's history with readable memory diffs
    Log(log::LogArgs),
    /// Show one commit of a pack
    Show {
        /// Pack name
        pack: String,
        /// Commit id (or a prefix of it)
        commit: String,
    },
    /// Undo one commit with a new commit
    Revert {
        /// Pack name
        pack: String,
        /// Commit id (or a prefix of it)
        commit: String,
    },
    /// Undo the last tool commits (in one new commit)
    Undo {
        /// Pack name
        pack: String,
        /// How many tool commits
        #[arg(short = 'n', default_value_t = 1)]
        n: usize,
        /// Only commits of this client (a part of its name)
        #[arg(long)]
        client: Option<String>,
    },
    /// Pack loose objects (one pack or all) and report the size of .git
    Gc {
        /// Pack name (all packs when omitted)
        pack: Option<String>,
    },
    /// Rewrite a pack's history to remove a file/glob (or, with --text, a piece of text)
    Purge {
        /// Pack name
        pack: String,
        /// Path, directory or glob (`**/*.key`); with --text, the text to redact
        what: String,
        /// Treat WHAT as text to replace with [REDACTED] everywhere
        #[arg(long)]
        text: bool,
        /// Do not ask for confirmation
        #[arg(long)]
        yes: bool,
    },
    /// Run a client or git hook (Claude Code: session-start, pre-compact, session-end)
    #[command(hide = true)]
    Hook {
        /// The event
        #[arg(value_enum)]
        event: hook::HookEvent,
    },
    /// Manage git hooks of a pack
    Hooks {
        #[command(subcommand)]
        action: HooksAction,
    },
    /// Install the demo pack, check it over a real MCP round trip and print the client config
    Demo,
    /// Store a dated summary of a workspace's recent git history (e.g. from a git hook)
    IngestGit(ingest::IngestArgs),
    /// Configure the git remote a pack syncs with
    #[command(subcommand)]
    Remote(sync::RemoteCommand),
    /// Manage the keys of packs kept encrypted on their remote
    #[command(subcommand)]
    Key(sync::KeyCommand),
    /// Sync packs with their git remote: fetch, merge (memory-aware), push (never forced)
    Sync(sync::SyncArgs),
    /// Review proposal branches (serve --propose): list, show, accept, reject
    #[command(subcommand)]
    Review(review::ReviewCommand),
    /// Search memories, knowledge and examples (ranked; Chinese and English)
    Search(search::SearchArgs),
    /// Measure search quality (LoCoMo, Chinese set) and speed (release build)
    #[command(hide = true)]
    BenchSearch(searchbench::BenchArgs),
    /// Diagnose damaged packs (repository, refs, objects, meta.json, working tree) and say how to repair them (exit 1 on errors)
    Doctor {
        /// Pack name (every pack directory when omitted)
        name: Option<String>,
    },
    /// Import or export the knowledge graph in the reference memory server's JSONL format
    Graph(graph::GraphArgs),
    /// Packs, knowledge, examples and memory entries by type (plain, --json or --csv)
    Stats {
        /// JSON (as stats_engrams format=json)
        #[arg(long, conflicts_with = "csv")]
        json: bool,
        /// CSV (as stats_engrams format=csv)
        #[arg(long)]
        csv: bool,
    },
    /// Build a pack from a folder of documents: knowledge, role/workflow/rules, examples (one commit per stage)
    Build(build::BuildArgs),
    /// Knowledge documents of a pack
    Knowledge {
        #[command(subcommand)]
        action: KnowledgeAction,
    },
    /// The pack registry (bundled example packs, registry.local.json, ENGRAM_REGISTRY_URL)
    Registry {
        #[command(subcommand)]
        action: RegistryAction,
    },
    /// Serve a local web page over the packs: browse, search, add, correct, delete, history, revert
    Ui(ui::UiArgs),
}

/// `engram init --lang`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum TemplateLang {
    /// 中文
    Zh,
    /// English
    En,
}

impl From<TemplateLang> for Lang {
    fn from(l: TemplateLang) -> Lang {
        match l {
            TemplateLang::Zh => Lang::Zh,
            TemplateLang::En => Lang::En,
        }
    }
}

#[derive(Debug, Subcommand)]
enum KnowledgeAction {
    /// Import a Markdown document as chapters: knowledge/<doc>/NN-<chapter>.md, a chapter index and one line in knowledge/_index.md (one commit)
    Import {
        /// Pack name
        pack: String,
        /// The Markdown (or text) file
        file: PathBuf,
        /// The document's title (default: the file name)
        #[arg(long)]
        title: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
enum RegistryAction {
    /// Search registry entries by name, description and tags (Chinese and English)
    Search {
        /// Words that must all occur (quote several; empty, `*` or `all` lists every entry)
        #[arg(default_value = "")]
        query: String,
    },
}

#[derive(Debug, Subcommand)]
enum HooksAction {
    /// Install the pre-commit hook (engram lint + secret scan) in a pack
    Install {
        /// Pack name
        pack: String,
    },
}

#[derive(Debug, Clone, clap::Args)]
struct ServeArgs {
    /// Toolsets to expose, comma-separated: engram (default), knowledge, notes, workspace, sync, graph, personal, ui, authoring, all
    #[arg(long, default_value = "engram")]
    tools: String,
    #[command(flatten)]
    structured: graph::StructuredArgs,
    /// fsync every write before acknowledging it (also ENGRAM_DURABLE=1)
    #[arg(long)]
    durable: bool,
    #[command(flatten)]
    toolsets: ingest::ToolsetArgs,
    /// Sync every pack that has a remote when the server starts (in the background)
    #[arg(long)]
    sync_on_start: bool,
    /// Also sync every SECS seconds, and push soon after each write (in the background)
    #[arg(long, value_name = "SECS")]
    sync_interval: Option<u64>,
    /// Serve MCP over streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:8765; a bare port means 127.0.0.1)
    #[arg(long, value_name = "ADDR", value_parser = parse_http_addr)]
    http: Option<std::net::SocketAddr>,
    /// Bearer token HTTP clients must send; required when --http is not a loopback address
    #[arg(long, env = crate::settings::ENV_AUTH_TOKEN, hide_env_values = true, requires = "http")]
    auth_token: Option<String>,
    /// HTTP: one token per user, lines `token user [read-only]` (mode 600; re-read on SIGHUP).
    /// The personal, graph and notes tools act on the token's user's own packs
    #[arg(long, value_name = "FILE", requires = "http", conflicts_with = "auth_token")]
    users_file: Option<std::path::PathBuf>,
    /// With --users-file: a directory of this machine whose paths tools may name
    /// (`install_engram` from a local path, the workspace tools' `workspace`); repeatable.
    /// Without it a team server reads no path it is given. Never the packs directory
    #[arg(long, value_name = "DIR", requires = "users_file")]
    allow_path: Vec<std::path::PathBuf>,
    /// HTTP: end an MCP session after SECS without a request
    #[arg(long, value_name = "SECS", requires = "http", default_value_t = crate::mcp::http::DEFAULT_SESSION_IDLE.as_secs())]
    session_idle_timeout: u64,
    /// HTTP: most live MCP sessions; one more closes the one idle longest
    #[arg(long, value_name = "N", requires = "http", default_value_t = crate::mcp::http::DEFAULT_MAX_SESSIONS)]
    max_sessions: usize,
    /// HTTP: close a connection whose request head is not complete after SECS
    #[arg(long, value_name = "SECS", requires = "http", default_value_t = crate::mcp::http::DEFAULT_HEADER_TIMEOUT.as_secs())]
    header_timeout: u64,
    /// HTTP: close a connection on which nothing moved for SECS (keep it above 15: SSE keep-alives)
    #[arg(long, value_name = "SECS", requires = "http", default_value_t = crate::mcp::http::DEFAULT_CONNECTION_IDLE.as_secs())]
    connection_idle_timeout: u64,
    /// HTTP: most open connections; one more closes the oldest that sent no complete request yet
    #[arg(long, value_name = "N", requires = "http", default_value_t = crate::mcp::http::DEFAULT_MAX_CONNECTIONS)]
    max_connections: usize,
    /// Serve only the tools that read (no commit is ever made)
    #[arg(long)]
    read_only: bool,
    /// Write a tool trace (memory/tool-trace.md) after each call of the reference's traced
    /// tools (load, read, write, memory, knowledge): one more commit per call
    #[arg(long, conflicts_with = "read_only")]
    auto_trace: bool,
    /// Every tool write lands on the branch proposals/<client> (proposals/<user> with
    /// --users-file) instead of the pack's branch, for review (`engram review`)
    #[arg(long)]
    propose: bool,
    /// Re-rank search hits with this text word-vector file (word2vec/GloVe/fastText `.vec`
    /// format). Off by default; nothing is downloaded
    #[arg(long, value_name = "PATH")]
    embeddings: Option<std::path::PathBuf>,
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

/// The command line as `engram --help` shows it: the top level lists the commands and the
/// global `--packs-dir`; `serve`'s options, which the top level also takes (`engram` alone
/// serves), are shown by `engram serve --help` only, not repeated above the commands.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command().mut_args(|arg| match arg.get_id().as_str() {
        "packs_dir" | "help" | "version" => arg,
        _ => arg.hide(true),
    })
}

/// `engram --http list`: a `serve` option before another command is an error (it would be
/// ignored). The global `--packs-dir` goes anywhere (`engram --packs-dir D list`).
fn refuse_serve_options_before_a_command(matches: &clap::ArgMatches) {
    let Some(sub) = matches.subcommand_name() else { return };
    let mut cmd = command();
    let given = cmd
        .get_arguments()
        .filter(|a| !matches!(a.get_id().as_str(), "packs_dir" | "help" | "version"))
        .find(|a| matches.value_source(a.get_id().as_str()) == Some(clap::parser::ValueSource::CommandLine))
        .map(|a| a.get_long().map_or_else(|| a.get_id().to_string(), |l| format!("--{l}")));
    if let Some(flag) = given {
        cmd.error(
            clap::error::ErrorKind::ArgumentConflict,
            format!(
                "{flag} is an option of `engram serve`, not of `engram {sub}`: write `engram serve {flag} …`"
            ),
        )
        .exit();
    }
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let matches = command().get_matches();
    refuse_serve_options_before_a_command(&matches);
    let cli = match <Cli as clap::FromArgMatches>::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let lang = crate::settings::lang();
    let result = run(cli, lang);
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("engram: {}", crate::secrets::mask_url_credentials(&error_text(&e, lang)));
            ExitCode::from(1)
        }
    }
}

/// The CLI's error line in `lang`: an [`EngramError`](crate::ops::EngramError) anywhere in the
/// chain is said in `lang`, under the context the command added.
fn error_text(e: &anyhow::Error, lang: Lang) -> String {
    let mut parts = Vec::new();
    for cause in e.chain() {
        if let Some(engram) = cause.downcast_ref::<crate::ops::EngramError>() {
            parts.push(engram.text(lang));
            break;
        }
        if let Some(pack) = cause.downcast_ref::<crate::pack::PackError>() {
            parts.push(pack.text(lang));
            break;
        }
        parts.push(cause.to_string());
    }
    parts.join(": ")
}

fn engram(cli: &Cli, durable: bool) -> anyhow::Result<Arc<Engram>> {
    let config = crate::settings::config(cli.packs_dir.clone(), durable)?;
    Ok(Arc::new(Engram::new(config)?))
}

fn run(cli: Cli, lang: Lang) -> anyhow::Result<ExitCode> {
    match &cli.command {
        None => serve(&cli, &cli.serve),
        Some(Command::Serve(args)) => serve(&cli, args),
        Some(Command::List) => {
            // The tool's text: its warning lines (a damaged pack…) are part of the list.
            outln!("{}", engram(&cli, false)?.list_engrams());
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Init { name, nested, lang: template }) => {
            let template = template.map_or(lang, Lang::from);
            report(
                engram(&cli, false)?
                    .init_engram(name, *nested, template)
                    .map(|said| said.get(lang).to_owned()),
                lang,
            )
        }
        Some(Command::Install { source, key }) => {
            let e = engram(&cli, false)?;
            let mut last = 0;
            let mut progress = |got: usize, total: usize| {
                if total > 0 && (got == total || got > last + total / 20) {
                    last = got;
                    eprint!("\rreceiving objects: {got}/{total}");
                    if got == total {
                        eprintln!();
                    }
                }
            };
            let res = match key {
                Some(key) => e.install_encrypted(source, key, &mut progress),
                None => e.install_engram(source, &mut progress),
            };
            report(res.map(|said| said.get(lang).to_owned()), lang)
        }
        Some(Command::Lint { name }) => lint(&*engram(&cli, false)?, name.as_deref(), lang),
        Some(Command::Log(args)) => log::run(&*engram(&cli, false)?, args),
        Some(Command::Show { pack, commit }) => history::show(&*engram(&cli, false)?, pack, commit),
        Some(Command::Revert { pack, commit }) => history::revert(&*engram(&cli, false)?, pack, commit),
        Some(Command::Undo { pack, n, client }) => {
            history::undo(&*engram(&cli, false)?, pack, *n, client.as_deref())
        }
        Some(Command::Gc { pack }) => maint::gc(&*engram(&cli, false)?, pack.as_deref()),
        Some(Command::Purge { pack, what, text, yes }) => {
            maint::purge(&*engram(&cli, false)?, pack, what, *text, *yes)
        }
        Some(Command::Hook { event }) => Ok(hook::run(engram(&cli, false), *event)),
        Some(Command::Hooks { action: HooksAction::Install { pack } }) => {
            maint::hooks_install(&*engram(&cli, false)?, pack)
        }
        Some(Command::Demo) => demo::run(&*engram(&cli, false)?),
        Some(Command::IngestGit(args)) => ingest::run(&*engram(&cli, false)?, args),
        Some(Command::Remote(cmd)) => sync::remote(&*engram(&cli, false)?, cmd),
        Some(Command::Key(cmd)) => sync::key(&*engram(&cli, false)?, cmd),
        Some(Command::Sync(args)) => sync::run(&*engram(&cli, false)?, args),
        Some(Command::Review(cmd)) => review::run(&*engram(&cli, false)?, cmd),
        Some(Command::Search(args)) => search::run(&*engram(&cli, false)?, args),
        Some(Command::BenchSearch(args)) => searchbench::run(args),
        Some(Command::Doctor { name }) => doctor(&*engram(&cli, false)?, name.as_deref(), lang),
        Some(Command::Graph(args)) => graph::run(engram(&cli, false)?, args),
        Some(Command::Stats { json, csv }) => {
            let format = if *json {
                "json"
            } else if *csv {
                "csv"
            } else {
                "plain"
            };
            let (report, damaged) = engram(&cli, false)?.stats_report(format, false)?;
            out!("{report}");
            if !*csv {
                outln!();
            }
            warn(&damaged.iter().map(crate::ops::Damage::note).collect::<Vec<_>>());
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Knowledge { action: KnowledgeAction::Import { pack, file, title } }) => {
            let bytes = crate::ops::limits::read_bounded(file, crate::ops::limits::MAX_CONTENT_BYTES)
                .context("engram knowledge import: the file is refused")?;
            let text = String::from_utf8(bytes)
                .map_err(|_| anyhow::anyhow!("{} is not UTF-8 text", file.display()))?;
            crate::ops::limits::check_controls("file", &text)
                .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
            let title = title.clone().unwrap_or_else(|| {
                file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
            });
            let caller =
                crate::ops::Caller { tool: "knowledge-import".into(), client: Some("engram-cli".into()) };
            let res = engram(&cli, false)?.import_knowledge(pack, &title, None, &text, &caller).map(
                |(index, n, c)| {
                    let id = c.map(|c| format!("\ncommit: {c}")).unwrap_or_default();
                    match lang {
                        Lang::Zh => format!("已导入知识: {index} — {n} 章 / chapters{id}"),
                        Lang::En => format!("imported: {index} — {n} chapters{id}"),
                    }
                },
            );
            report(res, lang)
        }
        Some(Command::Build(args)) => build::run(&*engram(&cli, false)?, args),
        Some(Command::Registry { action: RegistryAction::Search { query } }) => {
            outln!("{}", engram(&cli, false)?.search_engrams(query));
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Ui(args)) => ui::run(engram(&cli, false)?, args),
    }
}

/// Warning lines (a damaged pack, a shadowed one…) on standard error: standard output stays
/// what the command reports, for scripts; the exit status is not changed by them.
pub(crate) fn warn(notes: &[String]) {
    for n in notes {
        eprintln!("{n}");
    }
}

/// Prints a command's answer, or its error in `lang` (exit 1).
fn report(res: Result<String, crate::ops::EngramError>, lang: Lang) -> anyhow::Result<ExitCode> {
    match res {
        Ok(text) => {
            outln!("{text}");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("{}", crate::secrets::mask_url_credentials(&e.text(lang)));
            Ok(ExitCode::from(1))
        }
    }
}

fn lint(engram: &Engram, name: Option<&str>, lang: Lang) -> anyhow::Result<ExitCode> {
    let (report, errors) = engram.lint_engrams(name, false, lang);
    outln!("{report}");
    Ok(if errors > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

fn doctor(engram: &Engram, name: Option<&str>, lang: Lang) -> anyhow::Result<ExitCode> {
    let report = engram.doctor(name);
    if report.is_empty() {
        match (name, lang) {
            (Some(n), Lang::Zh) => outln!("未找到 Engram: {n} (no such pack directory)"),
            (Some(n), Lang::En) => outln!("no pack named {n} (no such pack directory)"),
            (None, Lang::Zh) => outln!("暂无 Engram (no pack directories)."),
            (None, Lang::En) => outln!("no packs yet (no pack directories)."),
        }
        return Ok(ExitCode::from(u8::from(name.is_some())));
    }
    for pack in &report {
        outln!("{}", pack.render());
    }
    Ok(if report.iter().any(|p| p.has_errors()) { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

fn serve(cli: &Cli, args: &ServeArgs) -> anyhow::Result<ExitCode> {
    let toolsets = Toolset::parse_list(&args.tools).map_err(anyhow::Error::msg)?;
    let mut config = crate::settings::config(cli.packs_dir.clone(), args.durable)?;
    config.store.read_only = args.read_only;
    config.auto_trace = args.auto_trace;
    if args.users_file.is_some() {
        config.server_paths =
            crate::ops::server_paths::ServerPaths::closed(&config.packs_dir, &args.allow_path)?;
    }
    if let Some(path) = &args.embeddings {
        config.embeddings = Some(std::sync::Arc::new(crate::search::Embeddings::load(path)?));
    }
    let engram = Arc::new(Engram::new(config)?);
    let structured = graph::structured(engram.clone(), &args.structured, &toolsets)?;
    let mut server = EngramServer::with_structured(engram.clone(), &toolsets, structured)
        .with_options(args.toolsets.options()?)
        .with_graph_config(args.structured.config());
    if args.read_only {
        server = server.read_only();
    }
    server = server.with_propose(args.propose);
    let users = match &args.users_file {
        Some(path) => {
            let file = crate::mcp::users::UsersFile::open(path)?;
            server = server.with_users(args.structured.config());
            Some(Arc::new(file))
        }
        None => None,
    };
    if args.sync_on_start || args.sync_interval.is_some() {
        let interval = args.sync_interval.filter(|s| *s > 0).map(std::time::Duration::from_secs);
        let worker = crate::ops::SyncWorker::start(engram, args.sync_on_start, interval);
        server = server.with_after_call(Arc::new(move || worker.poke()));
    }
    // Over stdio one client sends one request at a time and tools run on the
    // blocking pool: a single-threaded event loop answers without waking
    // another thread for every message. HTTP serves many clients at once.
    let runtime = match args.http {
        None => tokio::runtime::Builder::new_current_thread().enable_all().build(),
        Some(_) => tokio::runtime::Builder::new_multi_thread().worker_threads(4).enable_all().build(),
    }
    .context("starting the async runtime")?;
    match args.http {
        None => runtime.block_on(server.serve_stdio())?,
        Some(addr) => {
            let mut opts = crate::mcp::http::HttpOptions::new(addr, args.auth_token.clone());
            opts.users = users;
            let secs = |s: u64| std::time::Duration::from_secs(s.max(1));
            opts.session_idle = secs(args.session_idle_timeout);
            opts.max_sessions = args.max_sessions.max(1);
            opts.connections.header_timeout = secs(args.header_timeout);
            opts.connections.idle_timeout = secs(args.connection_idle_timeout);
            opts.connections.max_connections = args.max_connections.max(1);
            runtime.block_on(server.serve_http(opts, |local| {
                eprintln!("engram: serving MCP over HTTP at http://{local}{}", crate::mcp::http::MCP_PATH);
            }))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
