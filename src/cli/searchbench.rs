//! `engram bench-search`: search quality and speed figures (see BENCHMARKS.md).

use std::path::PathBuf;
use std::process::ExitCode;

use crate::searchbench::{locomo, speed, zh};

/// Arguments of `engram bench-search`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// locomo, zh, speed or all
    #[arg(default_value = "all")]
    which: String,
    /// LoCoMo data file (default: ../shared/bench/locomo10.json beside the checkout engram was
    /// built from)
    #[arg(long, value_name = "PATH")]
    locomo: Option<PathBuf>,
    /// LoCoMo layouts to run, by letter (`acf`: (a), (c) and (f)); all when absent
    #[arg(long, value_name = "LETTERS")]
    layouts: Option<String>,
    /// Also run the LoCoMo engine alone on the documents it was first tuned on
    #[arg(long)]
    variants: bool,
    /// Re-rank with this text word-vector file (word2vec/GloVe/fastText `.vec` format)
    #[arg(long, value_name = "PATH")]
    embeddings: Option<PathBuf>,
    /// Memories in the speed benchmark
    #[arg(long, default_value_t = 100_000)]
    memories: usize,
    /// Speed benchmark: write its pack into this packs directory (as `speed`) and keep it
    #[arg(long, value_name = "DIR")]
    keep: Option<PathBuf>,
}

/// `../shared/bench/locomo10.json` beside the checkout this binary was built from.
fn default_locomo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(locomo::DEFAULT_RELATIVE_PATH)
}

/// Runs the selected benchmarks.
pub fn run(args: &BenchArgs) -> anyhow::Result<ExitCode> {
    let all = args.which == "all";
    if !all && !["locomo", "zh", "speed"].contains(&args.which.as_str()) {
        anyhow::bail!("unknown benchmark {:?}; use locomo, zh, speed or all", args.which);
    }
    let embeddings = match &args.embeddings {
        Some(path) => Some(std::sync::Arc::new(crate::search::Embeddings::load(path)?)),
        None => None,
    };
    if let Some(e) = &embeddings {
        outln!("re-ranking the lexical top {} with {e:?}\n", crate::search::embed::RERANK_DEPTH);
    }
    if all || args.which == "zh" {
        outln!("{}", zh::run(embeddings.as_ref()).map_err(anyhow::Error::msg)?);
    }
    if all || args.which == "locomo" {
        let path = args.locomo.clone().unwrap_or_else(default_locomo);
        let layouts = match &args.layouts {
            Some(letters) => locomo::Layout::by_letters(letters).map_err(anyhow::Error::msg)?,
            None => locomo::Layout::ALL.to_vec(),
        };
        match locomo::run(&path, &layouts, args.variants, embeddings.as_ref()).map_err(anyhow::Error::msg)? {
            Some(report) => outln!("{report}"),
            None => {
                let missing = format!(
                    "LoCoMo data not found at {}: put locomo10.json there or name it with --locomo PATH",
                    path.display()
                );
                if !all {
                    anyhow::bail!(missing);
                }
                outln!("{missing}; skipped.\n");
            }
        }
    }
    if all || args.which == "speed" {
        // This binary, to time `engram search` as new processes.
        let bin = std::env::current_exe().ok();
        outln!("{}", speed::run(args.memories, bin.as_deref(), args.keep.as_deref())?);
    }
    Ok(ExitCode::SUCCESS)
}
