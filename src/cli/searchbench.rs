//! `engram bench-search`: search quality and speed figures (see BENCHMARKS.md).

use std::process::ExitCode;

use crate::searchbench::{locomo, speed, zh};

/// Arguments of `engram bench-search`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// locomo, zh, speed or all
    #[arg(default_value = "all")]
    which: String,
    /// LoCoMo data file
    #[arg(long, default_value = locomo::DEFAULT_PATH)]
    locomo: String,
    /// Also run LoCoMo with other memory layouts (summary = text, empty)
    #[arg(long)]
    variants: bool,
    /// Memories in the speed benchmark
    #[arg(long, default_value_t = 100_000)]
    memories: usize,
}

/// Runs the selected benchmarks.
pub fn run(args: &BenchArgs) -> anyhow::Result<ExitCode> {
    let all = args.which == "all";
    if !all && !["locomo", "zh", "speed"].contains(&args.which.as_str()) {
        anyhow::bail!("unknown benchmark {:?}; use locomo, zh, speed or all", args.which);
    }
    if all || args.which == "zh" {
        println!("{}", zh::run().map_err(anyhow::Error::msg)?);
    }
    if all || args.which == "locomo" {
        match locomo::run(&args.locomo, args.variants).map_err(anyhow::Error::msg)? {
            Some(report) => println!("{report}"),
            None => println!("LoCoMo data not found at {}; skipped.\n", args.locomo),
        }
    }
    if all || args.which == "speed" {
        println!("{}", speed::run(args.memories)?);
    }
    Ok(ExitCode::SUCCESS)
}
