//! `engram review`: proposal branches (`serve --propose`) listed, shown, accepted, rejected;
//! and the per-pack setting that turns proposals on.

use std::process::ExitCode;

use clap::Subcommand;

use crate::ops::{Caller, Engram};

/// `engram review …`.
#[derive(Debug, Subcommand)]
pub enum ReviewCommand {
    /// List a pack's proposal branches
    List {
        /// Pack name
        pack: String,
    },
    /// Show the memory entries a proposal adds and removes, its other files and commits
    Show {
        /// Pack name
        pack: String,
        /// Proposal branch (proposals/<name>)
        branch: String,
    },
    /// Merge a proposal into the pack (one merge commit, memory-aware), then delete its branch
    Accept {
        /// Pack name
        pack: String,
        /// Proposal branch (proposals/<name>)
        branch: String,
    },
    /// Delete a proposal branch; the pack is untouched
    Reject {
        /// Pack name
        pack: String,
        /// Proposal branch (proposals/<name>)
        branch: String,
    },
    /// Make every MCP client's writes to this pack proposals (engram.propose in .git/config)
    Enable {
        /// Pack name
        pack: String,
    },
    /// Let MCP clients write to this pack's branch again
    Disable {
        /// Pack name
        pack: String,
    },
}

/// Runs `engram review …`.
pub fn run(engram: &Engram, cmd: &ReviewCommand) -> anyhow::Result<ExitCode> {
    let caller = Caller { tool: "review".into(), client: Some("engram-cli".into()) };
    let res = match cmd {
        ReviewCommand::List { pack } => engram.list_proposals(pack),
        ReviewCommand::Show { pack, branch } => engram.show_proposal(pack, branch),
        ReviewCommand::Accept { pack, branch } => engram.accept_proposal(pack, branch, &caller),
        ReviewCommand::Reject { pack, branch } => engram.reject_proposal(pack, branch),
        ReviewCommand::Enable { pack } => engram.set_pack_review(pack, true),
        ReviewCommand::Disable { pack } => engram.set_pack_review(pack, false),
    };
    super::report(res, crate::settings::lang())
}
