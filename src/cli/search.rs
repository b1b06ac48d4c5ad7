//! `engram search`: the same search as the `search_memory` tool, from the shell.

use std::process::ExitCode;

use crate::ops::{Engram, SearchQuery, render_search};

/// Arguments of `engram search`.
#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    /// What to look for (any language)
    query: String,
    /// Only this pack (plus the global memory)
    #[arg(long)]
    pack: Option<String>,
    /// Only this kind: memory, knowledge, example, note (repeatable)
    #[arg(long = "kind")]
    kinds: Vec<String>,
    /// Only memories of this category
    #[arg(long)]
    category: Option<String>,
    /// Only memories of this type
    #[arg(long = "type")]
    memory_type: Option<String>,
    /// Only entries with this tag (repeatable: all must match)
    #[arg(long = "tag")]
    tags: Vec<String>,
    /// last_week, last_month, last_year, today, YYYY, YYYY-MM, YYYY-MM-DD or START..END
    #[arg(long)]
    time_range: Option<String>,
    /// Search as of a date (YYYY-MM-DD) or a commit (with --pack)
    #[arg(long)]
    as_of: Option<String>,
    /// Maximum results
    #[arg(long, default_value_t = crate::ops::search_default_limit())]
    limit: usize,
    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
}

/// Runs `engram search`.
pub fn run(engram: &Engram, args: &SearchArgs) -> anyhow::Result<ExitCode> {
    let q = SearchQuery {
        query: args.query.clone(),
        name: args.pack.clone(),
        kinds: args.kinds.clone(),
        category: args.category.clone(),
        memory_type: args.memory_type.clone(),
        tags: args.tags.clone(),
        time_range: args.time_range.clone(),
        as_of: args.as_of.clone(),
        limit: Some(args.limit),
        include_global: true,
        snippet_chars: None,
    };
    match engram.search(&q) {
        Ok(outcome) => {
            if args.json {
                outln!("{}", serde_json::to_string_pretty(&outcome)?);
            } else {
                outln!("{}", render_search(&outcome));
            }
            super::warn(&outcome.damaged.iter().map(crate::ops::Damage::note).collect::<Vec<_>>());
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("{e}");
            Ok(ExitCode::from(1))
        }
    }
}
