//! `engram remote add|list|remove` and `engram sync [pack|--all]`.

use std::process::ExitCode;

use crate::ops::{Caller, Engram};

/// `engram remote …`.
#[derive(Debug, clap::Subcommand)]
pub enum RemoteCommand {
    /// Set the git remote a pack syncs with (a URL: https://, ssh://, git@host:path, git://, or a local path)
    Add {
        /// Pack name
        pack: String,
        /// Remote URL or path
        url: String,
        /// Remote name
        #[arg(long, default_value = crate::ops::DEFAULT_REMOTE)]
        name: String,
        /// Keep the pack encrypted on the remote with the pack's key (`engram key new`)
        #[arg(long)]
        encrypt: bool,
    },
    /// List a pack's remotes
    List {
        /// Pack name
        pack: String,
    },
    /// Remove a pack's remote
    Remove {
        /// Pack name
        pack: String,
        /// Remote name
        #[arg(long, default_value = crate::ops::DEFAULT_REMOTE)]
        name: String,
    },
}

/// `engram key …`: the keys of packs kept encrypted on their remote.
#[derive(Debug, clap::Subcommand)]
pub enum KeyCommand {
    /// Make a pack's key (a file of mode 600 outside the pack) and say how to bring it to another device
    New {
        /// Pack name
        pack: String,
    },
    /// Take a pack's key from a file copied from another device
    Import {
        /// Pack name
        pack: String,
        /// The key file
        file: std::path::PathBuf,
    },
}

/// Runs `engram key …`.
pub fn key(engram: &Engram, cmd: &KeyCommand) -> anyhow::Result<ExitCode> {
    let res = match cmd {
        KeyCommand::New { pack } => engram.key_new(pack),
        KeyCommand::Import { pack, file } => engram.key_import(pack, file),
    };
    super::report(res, crate::settings::lang())
}

/// Arguments of `engram sync`.
#[derive(Debug, clap::Args)]
pub struct SyncArgs {
    /// Pack name
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pack: Option<String>,
    /// Sync every pack that has a remote
    #[arg(long)]
    all: bool,
}

fn caller() -> Caller {
    Caller { tool: "sync".into(), client: Some("engram-cli".into()) }
}

/// Runs `engram remote …`.
pub fn remote(engram: &Engram, cmd: &RemoteCommand) -> anyhow::Result<ExitCode> {
    let lang = crate::settings::lang();
    let res = match cmd {
        RemoteCommand::Add { pack, url, name, encrypt } => engram.remote_add(pack, url, Some(name), *encrypt),
        RemoteCommand::Remove { pack, name } => engram.remote_remove(pack, Some(name)),
        RemoteCommand::List { pack } => engram.remote_list(pack).map(|remotes| {
            if remotes.is_empty() {
                let none = lang.pick("没有远端 (no remote)", "no remote");
                format!("{pack}: {none} — engram remote add {pack} <url>")
            } else {
                remotes
                    .iter()
                    .map(|r| format!("{}\t{}", r.name, crate::secrets::mask_url_credentials(&r.url)))
                    .collect::<Vec<_>>()
                    .join("\n")
            }
        }),
    };
    super::report(res, lang)
}

/// Runs `engram sync`. Exit 1 when a pack could not be fully synced. Over all packs, a
/// damaged pack is skipped and named on standard error; it does not change the exit status
/// (`engram doctor` reports it with status 1).
pub fn run(engram: &Engram, args: &SyncArgs) -> anyhow::Result<ExitCode> {
    let results = match &args.pack {
        Some(pack) => vec![(pack.clone(), engram.sync_pack(pack, &caller()))],
        None => {
            let (r, damaged) = engram.sync_all(&caller());
            if r.is_empty() {
                let none = crate::settings::lang()
                    .pick("没有配置了远端的 Engram (no pack has a remote)", "no pack has a remote");
                outln!("{none} — engram remote add <pack> <url>");
            }
            super::warn(&damaged.iter().map(crate::ops::Damage::note).collect::<Vec<_>>());
            r
        }
    };
    let mut failed = false;
    for (pack, res) in results {
        match res {
            Ok(report) => {
                failed |= !report.is_success();
                outln!("{}", report.render());
            }
            Err(e) => {
                failed = true;
                eprintln!("{pack}: {e}");
            }
        }
    }
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
