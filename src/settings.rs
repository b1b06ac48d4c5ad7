//! Settings from the environment: the names of every `ENGRAM_*` variable live here.

use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::ops::{Clock, Config, SyncSettings};
use crate::store::{Credentials, StoreOptions};

/// Packs directory override.
pub const ENV_PACKS_DIR: &str = "ENGRAM_PACKS_DIR";
/// Pins the clock (RFC 3339), for tests and reproducible demos.
pub const ENV_NOW: &str = "ENGRAM_NOW";
/// `1`/`true`: fsync every write before acknowledging it.
pub const ENV_DURABLE: &str = "ENGRAM_DURABLE";
/// `1`: print the time of each phase of every write to stderr.
pub const ENV_TRACE_WRITES: &str = "ENGRAM_TRACE_WRITES";
/// Bearer token of `engram serve --http` (same as `--auth-token`).
pub const ENV_AUTH_TOKEN: &str = "ENGRAM_AUTH_TOKEN";
/// Commit author name.
pub const ENV_AUTHOR_NAME: &str = "ENGRAM_AUTHOR_NAME";
/// Comma-separated packs a project uses (read by `engram hook`; overrides `.claude/engram.json`).
pub const ENV_PROJECT_PACKS: &str = "ENGRAM_PACKS";
/// Commit author e-mail.
pub const ENV_AUTHOR_EMAIL: &str = "ENGRAM_AUTHOR_EMAIL";
/// Token for https remotes (sent as the password; GitHub/GitLab/Gitea personal access tokens).
pub const ENV_GIT_TOKEN: &str = "ENGRAM_GIT_TOKEN";
/// User name sent with the token (default `x-access-token`).
pub const ENV_GIT_USERNAME: &str = "ENGRAM_GIT_USERNAME";
/// Extra registry files (a path list, `:`-separated on Unix), merged after the local ones.
pub const ENV_REGISTRY_FILES: &str = "ENGRAM_REGISTRY_FILES";
/// A community registry: an http(s) URL or a file of the `registry.json` shape.
pub const ENV_REGISTRY_URL: &str = "ENGRAM_REGISTRY_URL";
/// The ssh private key file sync uses (else the ssh agent, then `~/.ssh/id_ed25519`, `id_ecdsa`, `id_rsa`).
pub const ENV_SSH_KEY: &str = "ENGRAM_SSH_KEY";
/// A certificate authority (PEM file) trusted for https remotes besides the system's
/// (else git's `http.sslCAInfo`).
pub const ENV_GIT_CA: &str = "ENGRAM_GIT_CA";
/// Seconds a connection may take, and a remote may stay silent, before a fetch, push or
/// clone fails (default [`DEFAULT_NET_TIMEOUT`]; `0`: wait forever).
pub const ENV_NET_TIMEOUT: &str = "ENGRAM_NET_TIMEOUT";
/// The network timeout when `ENGRAM_NET_TIMEOUT` is not set: git servers send a keep-alive
/// every 5 s while they work, so only a dead or stalled peer stays silent this long.
pub const DEFAULT_NET_TIMEOUT: Duration = Duration::from_secs(30);
/// The language of the CLI's messages, `zh` or `en` (else the locale: `LC_ALL`, `LC_MESSAGES`,
/// `LANG`; see [`lang`]). MCP tool texts never change with it.
pub const ENV_LANG: &str = "ENGRAM_LANG";
/// This device's name in `conflict/<host>` branches and `.conflict-<host>` files (default: the host name).
pub const ENV_HOST: &str = "ENGRAM_HOST";

/// The variables an engram process started by another (`engram demo`, the
/// tests, the benchmarks, through [`crate::mcp::client`]) inherits; its
/// environment starts cleared otherwise, so a developer's `ENGRAM_*` settings
/// cannot change what the child does.
pub const CHILD_INHERITED_ENV: &[&str] = &["PATH", "HOME"];

/// The values of [`CHILD_INHERITED_ENV`] in this process (those that are set).
pub fn child_env() -> Vec<(&'static str, std::ffi::OsString)> {
    CHILD_INHERITED_ENV.iter().filter_map(|k| std::env::var_os(k).map(|v| (*k, v))).collect()
}

/// This device's name: `ENGRAM_HOST`, `HOSTNAME`, `/etc/hostname`, else `device`;
/// reduced to letters, digits, `-`, `_` and `.` so it fits branch and file names.
pub fn host_name() -> String {
    let raw = [std::env::var(ENV_HOST).ok(), std::env::var("HOSTNAME").ok()]
        .into_iter()
        .flatten()
        .chain(std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_owned())
        .find(|h| !h.is_empty())
        .unwrap_or_default();
    let clean: String = raw
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '-' })
        .collect();
    let clean = clean.trim_matches(|c| c == '.' || c == '-').to_owned();
    if clean.is_empty() { "device".into() } else { clean }
}

/// The language of the CLI's messages in this process's environment (see
/// [`Lang::from_vars`](crate::lang::Lang::from_vars)).
pub fn lang() -> crate::lang::Lang {
    crate::lang::Lang::from_vars(|k| std::env::var(k).ok())
}

fn non_empty_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty()).map(|v| v.trim().to_owned())
}

/// The user of the graph and personal toolsets (`--user`).
pub const ENV_USER: &str = "ENGRAM_USER";
/// The reference memory server's file; engram only tells how to import it.
pub const ENV_MEMORY_FILE_PATH: &str = "MEMORY_FILE_PATH";

/// `MEMORY_FILE_PATH`, when set and not empty.
pub fn memory_file_path() -> Option<PathBuf> {
    std::env::var_os(ENV_MEMORY_FILE_PATH).filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// `~/.engram`.
pub fn default_packs_dir() -> PathBuf {
    std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(".")).join(".engram")
}

fn env_flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| matches!(v.trim(), "1" | "true" | "yes" | "on"))
}

/// Errors in settings.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// ENGRAM_NOW is not RFC 3339.
    #[error("{ENV_NOW}={value:?} is not an RFC 3339 time (e.g. 2026-11-22T10:00:00Z)")]
    BadNow {
        /// The value.
        value: String,
    },
    /// ENGRAM_NET_TIMEOUT is not a whole number of seconds.
    #[error("{ENV_NET_TIMEOUT}={value:?} is not a whole number of seconds (e.g. 30; 0 waits forever)")]
    BadNetTimeout {
        /// The value.
        value: String,
    },
}

/// Builds the operations' configuration from flags and the environment.
pub fn config(packs_dir: Option<PathBuf>, durable: bool) -> Result<Config, SettingsError> {
    let packs_dir = packs_dir.unwrap_or_else(default_packs_dir);
    let clock = match std::env::var(ENV_NOW) {
        Ok(v) if !v.trim().is_empty() => {
            let t = DateTime::parse_from_rfc3339(v.trim())
                .map_err(|_| SettingsError::BadNow { value: v.clone() })?;
            Clock::fixed(t.with_timezone(&Utc))
        }
        _ => Clock::system(),
    };
    let mut store = StoreOptions {
        durable: durable || env_flag(ENV_DURABLE),
        trace_timing: env_flag(ENV_TRACE_WRITES),
        ..StoreOptions::default()
    };
    if let Ok(n) = std::env::var(ENV_AUTHOR_NAME)
        && !n.trim().is_empty()
    {
        store.author_name = n;
    }
    if let Ok(e) = std::env::var(ENV_AUTHOR_EMAIL)
        && !e.trim().is_empty()
    {
        store.author_email = e;
    }
    let project_root = std::env::current_dir().ok().map(|d| d.join(".claude").join("engram"));
    let sync = SyncSettings { credentials: credentials()?, host: host_name() };
    let registry_files =
        std::env::var_os(ENV_REGISTRY_FILES).map(|v| std::env::split_paths(&v).collect()).unwrap_or_default();
    let registry_url = non_empty_env(ENV_REGISTRY_URL);
    Ok(Config {
        packs_dir,
        project_root,
        store,
        clock,
        registry_files,
        registry_url,
        sync,
        auto_trace: false,
        embeddings: None,
        server_paths: crate::ops::server_paths::ServerPaths::Open,
    })
}

/// How sync authenticates and whom it trusts: `ENGRAM_GIT_TOKEN`/`ENGRAM_GIT_USERNAME`,
/// `ENGRAM_SSH_KEY`, the ssh agent (`SSH_AUTH_SOCK`), the default keys and `known_hosts`
/// under `~/.ssh`, the system's `/etc/ssh/ssh_known_hosts`, `ENGRAM_GIT_CA`; how long the
/// network may stay silent (`ENGRAM_NET_TIMEOUT`).
pub fn credentials() -> Result<Credentials, SettingsError> {
    let net_timeout = match non_empty_env(ENV_NET_TIMEOUT) {
        None => Some(DEFAULT_NET_TIMEOUT),
        Some(v) => match v.parse::<u64>() {
            Ok(0) => None,
            Ok(s) => Some(Duration::from_secs(s)),
            Err(_) => return Err(SettingsError::BadNetTimeout { value: v }),
        },
    };
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let ssh_dir = home.as_ref().map(|h| h.join(".ssh"));
    let in_ssh_dir = |names: &[&str]| -> Vec<PathBuf> {
        ssh_dir.iter().flat_map(|d| names.iter().map(move |n| d.join(n))).collect()
    };
    let mut known_hosts = in_ssh_dir(&["known_hosts"]);
    known_hosts.push(PathBuf::from("/etc/ssh/ssh_known_hosts"));
    Ok(Credentials {
        token: non_empty_env(ENV_GIT_TOKEN),
        username: non_empty_env(ENV_GIT_USERNAME),
        ssh_key: non_empty_env(ENV_SSH_KEY).map(PathBuf::from),
        ssh_agent: std::env::var_os("SSH_AUTH_SOCK").is_some_and(|s| !s.is_empty()),
        ssh_default_keys: in_ssh_dir(&["id_ed25519", "id_ecdsa", "id_rsa"]),
        known_hosts,
        ca_file: non_empty_env(ENV_GIT_CA).map(PathBuf::from),
        home,
        net_timeout,
    })
}

/// The Anthropic API key (the standard variable; read here only, never stored).
pub const ENV_ANTHROPIC_API_KEY: &str = "ANTHROPIC_API_KEY";
/// Overrides the Anthropic API base URL (tests point it at a local stand-in).
pub const ENV_ANTHROPIC_BASE_URL: &str = "ENGRAM_ANTHROPIC_BASE_URL";
/// The Anthropic SDKs' base URL variable, used when `ENGRAM_ANTHROPIC_BASE_URL` is not set.
pub const ENV_ANTHROPIC_BASE_URL_STANDARD: &str = "ANTHROPIC_BASE_URL";
/// The small model `engram build` extracts with (same as `--extract-model`).
pub const ENV_BUILD_EXTRACT_MODEL: &str = "ENGRAM_BUILD_EXTRACT_MODEL";
/// The large model `engram build` polishes with (same as `--polish-model`).
pub const ENV_BUILD_POLISH_MODEL: &str = "ENGRAM_BUILD_POLISH_MODEL";
/// Overrides the model `engram_summarize` asks.
pub const ENV_ANTHROPIC_MODEL: &str = "ENGRAM_ANTHROPIC_MODEL";

/// How to reach the Anthropic API, from the environment.
pub fn anthropic() -> crate::llm::AnthropicSettings {
    let mut s = crate::llm::AnthropicSettings {
        api_key: std::env::var(ENV_ANTHROPIC_API_KEY).ok().and_then(|k| crate::llm::ApiKey::new(&k)),
        ..Default::default()
    };
    if let Some(url) =
        non_empty_env(ENV_ANTHROPIC_BASE_URL).or_else(|| non_empty_env(ENV_ANTHROPIC_BASE_URL_STANDARD))
    {
        s.base_url = url;
    }
    if let Ok(model) = std::env::var(ENV_ANTHROPIC_MODEL)
        && !model.trim().is_empty()
    {
        s.model = model.trim().to_owned();
    }
    s
}
