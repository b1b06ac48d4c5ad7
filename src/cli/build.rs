//! `engram build <name> --from <dir>`: a folder of documents becomes a pack, one commit
//! per stage (see `ops/authoring/build.rs`), with a progress bar on stderr.
//!
//! The bar is hand-written: a build has three or four stages, and indicatif (not a
//! dependency) would bring its terminal crates for one line redrawn four times. On a
//! terminal the line is redrawn in place; otherwise each stage is one plain line.

use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;

use crate::ops::{BuildEvent, BuildModels, BuildRequest, Engram};

/// `engram build` arguments.
#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    /// Name of the new pack
    name: String,
    /// The folder of documents (Markdown, text; read recursively)
    #[arg(long, value_name = "DIR")]
    from: PathBuf,
    /// Replace an existing pack of that name (its history too)
    #[arg(long)]
    force: bool,
    /// Leave out documents or folders matching GLOB (repeatable): `drafts`, `*.txt`, `notes/**/old-*.md`
    #[arg(long, value_name = "GLOB")]
    exclude: Vec<String>,
    /// The small model that extracts (with ANTHROPIC_API_KEY)
    #[arg(long, value_name = "MODEL", env = crate::settings::ENV_BUILD_EXTRACT_MODEL, default_value = crate::llm::DEFAULT_SMALL_MODEL)]
    extract_model: String,
    /// The large model that polishes (with ANTHROPIC_API_KEY)
    #[arg(long, value_name = "MODEL", env = crate::settings::ENV_BUILD_POLISH_MODEL, default_value = crate::llm::DEFAULT_MODEL)]
    polish_model: String,
    /// Extract heuristically even when ANTHROPIC_API_KEY is set
    #[arg(long)]
    no_llm: bool,
}

/// The progress line on stderr.
struct Bar {
    tty: bool,
    drawn: bool,
}

impl Bar {
    fn event(&mut self, e: BuildEvent) {
        let mut err = std::io::stderr().lock();
        match e {
            BuildEvent::Warning(w) => {
                if self.drawn {
                    let _ = write!(err, "\r\x1b[2K");
                    self.drawn = false;
                }
                let _ = writeln!(err, "engram build: warning: {w}");
            }
            BuildEvent::Stage { done, total, label } if self.tty => {
                let width = 24;
                let filled = width * done / total.max(1);
                let _ = write!(
                    err,
                    "\r\x1b[2K[{}{}] {done}/{total} {label}",
                    "#".repeat(filled),
                    "-".repeat(width - filled)
                );
                self.drawn = true;
                if done == total {
                    let _ = writeln!(err);
                    self.drawn = false;
                }
            }
            BuildEvent::Stage { done, total, label } => {
                let _ = writeln!(err, "engram build: [{done}/{total}] {label}");
            }
        }
        let _ = err.flush();
    }

    fn finish(&mut self) {
        if self.drawn {
            let _ = writeln!(std::io::stderr());
            self.drawn = false;
        }
    }
}

/// Runs `engram build`.
pub fn run(engram: &Engram, args: &BuildArgs) -> anyhow::Result<ExitCode> {
    let api = crate::settings::anthropic();
    let models = (api.api_key.is_some() && !args.no_llm).then(|| BuildModels {
        api,
        extract_model: args.extract_model.clone(),
        polish_model: args.polish_model.clone(),
    });
    let req = BuildRequest {
        name: args.name.clone(),
        from: args.from.clone(),
        replace: args.force,
        exclude: args.exclude.clone(),
        models,
    };
    let mut bar = Bar { tty: std::io::stderr().is_terminal(), drawn: false };
    if req.models.is_none() {
        let why = if args.no_llm { "--no-llm" } else { "ANTHROPIC_API_KEY is not set" };
        bar.event(BuildEvent::Warning(format!(
            "{why}: heuristic extraction, no polish (with a key, a small model extracts and a large model polishes)"
        )));
    }
    let res = engram.build_pack(&req, &mut |e| bar.event(e));
    bar.finish();
    match res {
        Ok(r) => {
            let lang = crate::settings::lang();
            outln!(
                "{}: {} — {} documents, {} knowledge files, {} examples",
                lang.pick("构建完成 / built", "built"),
                r.dir.display(),
                r.documents,
                r.knowledge_files,
                r.examples
            );
            for (subject, id) in &r.commits {
                outln!("  {id} {subject}");
            }
            outln!("{}: {} errors, {} warnings", lang.pick("校验结果 / lint", "lint"), r.lint.0, r.lint.1);
            Ok(if r.lint.0 > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
        }
        Err(e) => {
            eprintln!("{}", e.text(crate::settings::lang()));
            Ok(ExitCode::from(1))
        }
    }
}
