//! `engram log`: a pack's history, newest first, with readable diffs.

use std::io::IsTerminal as _;
use std::process::ExitCode;

use similar::{ChangeTag, TextDiff};

use crate::ops::{Engram, HistoryFilter, commit_header, describe_commit};
use crate::store::CommitInfo;

/// Arguments of `engram log`.
#[derive(Debug, clap::Args)]
pub struct LogArgs {
    /// Pack name (every pack when omitted)
    pack: Option<String>,
    /// Show full diffs of every file
    #[arg(short = 'p', long)]
    patch: bool,
    /// At most this many commits
    #[arg(short = 'n', long, default_value_t = 20)]
    limit: usize,
    /// Only commits touching this path
    #[arg(long)]
    path: Option<String>,
    /// Only commits on or after this date (YYYY-MM-DD) or time (RFC 3339)
    #[arg(long)]
    since: Option<String>,
    /// Only commits made by this tool (e.g. capture_memory)
    #[arg(long)]
    tool: Option<String>,
    /// Only commits made by this client (a part of its name)
    #[arg(long)]
    client: Option<String>,
}

/// Renders a unified diff of two texts (coloured when `color`).
pub fn render_diff(path: &str, old: &str, new: &str, color: bool) -> String {
    let diff = TextDiff::from_lines(old, new);
    let mut out = format!("--- a/{path}\n+++ b/{path}\n");
    for group in diff.grouped_ops(2) {
        for op in group {
            for change in diff.iter_changes(&op) {
                let (sign, start, end) = match change.tag() {
                    ChangeTag::Delete => ("-", "\x1b[31m", "\x1b[0m"),
                    ChangeTag::Insert => ("+", "\x1b[32m", "\x1b[0m"),
                    ChangeTag::Equal => (" ", "", ""),
                };
                let line = change.to_string_lossy();
                let line = line.trim_end_matches('\n');
                if color && !start.is_empty() {
                    out.push_str(&format!("{start}{sign}{line}{end}\n"));
                } else {
                    out.push_str(&format!("{sign}{line}\n"));
                }
            }
        }
    }
    out
}

/// Prints one commit: header, subject, memory summary, and diffs when `patch`.
pub fn print_commit(c: &CommitInfo, patch: bool, color: bool) {
    if color {
        outln!("\x1b[33m{}\x1b[0m", commit_header(c));
    } else {
        outln!("{}", commit_header(c));
    }
    outln!("    {}", c.subject);
    for line in describe_commit(c).lines() {
        let painted = match line.chars().next() {
            Some('+') if color => format!("\x1b[32m{line}\x1b[0m"),
            Some('-') if color => format!("\x1b[31m{line}\x1b[0m"),
            _ => line.to_owned(),
        };
        outln!("    {painted}");
    }
    if patch {
        for f in &c.files {
            out!(
                "{}",
                render_diff(&f.path, f.old.as_deref().unwrap_or(""), f.new.as_deref().unwrap_or(""), color)
            );
        }
    }
    outln!();
}

/// Runs `engram log`.
pub fn run(engram: &Engram, args: &LogArgs) -> anyhow::Result<ExitCode> {
    let packs: Vec<String> = match &args.pack {
        Some(p) => vec![p.clone()],
        None => {
            // Every pack that reads; a damaged one is named on standard error.
            let survey = engram.survey();
            super::warn(&survey.damaged().iter().map(crate::ops::Damage::note).collect::<Vec<_>>());
            survey.healthy().map(|p| p.name.clone()).collect()
        }
    };
    let filter = HistoryFilter {
        path: args.path.clone(),
        summary: None,
        since: args.since.clone(),
        tool: args.tool.clone(),
        client: args.client.clone(),
        limit: args.limit,
    };
    let color = std::io::stdout().is_terminal();
    for name in &packs {
        if packs.len() > 1 {
            outln!("=== {name} ===");
        }
        for c in engram.history(name, &filter)? {
            print_commit(&c, args.patch, color);
        }
    }
    Ok(ExitCode::SUCCESS)
}
