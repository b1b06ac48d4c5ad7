//! `engram log`: a pack's history, newest first, with readable diffs.

use std::io::IsTerminal as _;
use std::process::ExitCode;

use similar::{ChangeTag, TextDiff};

use crate::ops::Engram;
use crate::store::history_query;

/// Arguments of `engram log`.
#[derive(Debug, clap::Args)]
pub struct LogArgs {
    /// Pack name
    pack: String,
    /// Show diffs
    #[arg(short = 'p', long)]
    patch: bool,
    /// At most this many commits
    #[arg(short = 'n', long, default_value_t = 20)]
    limit: usize,
    /// Only commits touching this path
    #[arg(long)]
    path: Option<String>,
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

/// Runs `engram log`.
pub fn run(engram: &Engram, args: &LogArgs) -> anyhow::Result<ExitCode> {
    let pack = engram.resolve(&args.pack)?;
    let query = history_query(Some(args.limit), None, args.path.clone(), args.patch);
    let commits = engram.with_repo(&pack.dir, |r| Ok(r.log(&query)?))?;
    let color = std::io::stdout().is_terminal();
    for c in commits {
        let when = chrono::DateTime::from_timestamp(c.time, 0)
            .map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
            .unwrap_or_default();
        let who = [c.trailer("Engram-Tool"), c.trailer("Engram-Client")]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" · ");
        if color {
            println!("\x1b[33m{}\x1b[0m {}  \x1b[2m{when} {who}\x1b[0m", c.short(), c.subject);
        } else {
            println!("{} {}  {when} {who}", c.short(), c.subject);
        }
        for f in &c.files {
            println!(
                "{}",
                render_diff(&f.path, f.old.as_deref().unwrap_or(""), f.new.as_deref().unwrap_or(""), color)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
