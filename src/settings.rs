//! Settings from the environment: the names of every `ENGRAM_*` variable live here.

use std::path::PathBuf;

use chrono::{DateTime, Utc};

use crate::ops::{Clock, Config};
use crate::store::StoreOptions;

/// Packs directory override.
pub const ENV_PACKS_DIR: &str = "ENGRAM_PACKS_DIR";
/// Pins the clock (RFC 3339), for tests and reproducible demos.
pub const ENV_NOW: &str = "ENGRAM_NOW";
/// `1`/`true`: fsync every write before acknowledging it.
pub const ENV_DURABLE: &str = "ENGRAM_DURABLE";
/// Commit author name.
pub const ENV_AUTHOR_NAME: &str = "ENGRAM_AUTHOR_NAME";
/// Commit author e-mail.
pub const ENV_AUTHOR_EMAIL: &str = "ENGRAM_AUTHOR_EMAIL";

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
    let mut store = StoreOptions { durable: durable || env_flag(ENV_DURABLE), ..StoreOptions::default() };
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
    Ok(Config { packs_dir, project_root, store, clock, registry_files: Vec::new() })
}
