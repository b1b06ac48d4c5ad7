//! `engram ui`: serves the web page (`crate::ui`) and opens it in the browser.

use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;

use crate::mcp::http::HttpError;
use crate::ops::Engram;

/// Arguments of `engram ui`.
#[derive(Debug, Clone, clap::Args)]
pub struct UiArgs {
    /// Port to listen on (0 picks a free one)
    #[arg(long, default_value_t = crate::ui::DEFAULT_PORT)]
    port: u16,
    /// Address to listen on; anything but loopback needs --auth-token (or ENGRAM_AUTH_TOKEN)
    #[arg(long, default_value = "127.0.0.1")]
    host: IpAddr,
    /// Do not open the browser
    #[arg(long)]
    no_open: bool,
    /// The token instead of a random one (required with a --host other than loopback)
    #[arg(long, env = crate::settings::ENV_AUTH_TOKEN, hide_env_values = true)]
    auth_token: Option<String>,
    /// The pack of the notes toolset (the /notes page)
    #[arg(long, default_value = crate::ops::DEFAULT_NOTES_PACK)]
    notes_pack: String,
    #[command(flatten)]
    structured: super::graph::StructuredArgs,
}

/// Runs `engram ui` until SIGINT/SIGTERM.
pub fn run(engram: Arc<Engram>, args: &UiArgs) -> anyhow::Result<ExitCode> {
    let opts =
        crate::ui::UiOptions { addr: SocketAddr::new(args.host, args.port), token: args.auth_token.clone() };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let open = !args.no_open;
    let stores =
        crate::ui::Stores { notes_pack: args.notes_pack.clone(), structured: args.structured.config() };
    runtime
        .block_on(crate::ui::serve_until_signal(engram, opts, stores, |l: &crate::ui::Listening| {
            let url = l.url();
            outln!("engram ui: {url}");
            eprintln!("engram: serving the web page; open the address above (it carries this launch's token). Ctrl-C stops it.");
            if open {
                open_browser(&url);
            }
        }))
        .map_err(explain)?;
    Ok(ExitCode::SUCCESS)
}

/// What `engram ui` says when it cannot serve: a busy port names the port and the way out
/// (another `engram ui` is the usual holder). One message, without the error's cause
/// repeated after it.
fn explain(e: HttpError) -> anyhow::Error {
    match e {
        HttpError::Bind { addr, source } if source.kind() == std::io::ErrorKind::AddrInUse => {
            anyhow::anyhow!(
                "port {} on {} is already in use (another `engram ui`, or another program, is listening there); pass --port 0 to use a free port, or --port <N> for another one",
                addr.port(),
                addr.ip()
            )
        }
        other => anyhow::anyhow!(other.to_string()),
    }
}

/// Opens `url` in the desktop's browser, if there is one (a failure only says so).
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    let spawned = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match spawned {
        // Reaped on a thread, so the opener does not stay a zombie while the server runs.
        Ok(mut child) => drop(std::thread::spawn(move || child.wait())),
        Err(_) => eprintln!("engram: could not start `{opener}`; open the address above yourself"),
    }
}
