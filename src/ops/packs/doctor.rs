//! `engram doctor [pack]`: what is wrong with a pack and how to repair it.
//!
//! Looks at every directory of the packs roots (also those whose `meta.json`
//! is broken, which `list_engrams` skips), checks `meta.json`, then the
//! repository (`store::doctor`), and lists the staging directories of
//! unfinished installs engram could not remove. Changes nothing.

use std::path::{Path, PathBuf};

use crate::ops::Engram;
use crate::store::doctor::{Finding, Severity, diagnose};
use crate::store::{LogQuery, PackRepo, StoreOptions};

/// The findings for one pack directory.
#[derive(Debug, Clone)]
pub struct PackDiagnosis {
    /// Directory name.
    pub name: String,
    /// Directory.
    pub dir: PathBuf,
    /// What was found (empty: healthy).
    pub findings: Vec<Finding>,
}

impl PackDiagnosis {
    /// True when a finding is an error.
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Error)
    }

    /// Human-readable report.
    pub fn render(&self) -> String {
        if self.findings.iter().all(|f| f.severity == Severity::Info) {
            let mut s = format!("✓ {}: ok", self.name);
            for f in &self.findings {
                s.push_str(&format!("\n  info: {} — {}", f.problem, f.repair));
            }
            return s;
        }
        let mut s = format!("✗ {} ({})", self.name, self.dir.display());
        for f in &self.findings {
            s.push_str(&format!("\n  {}: {}\n    repair: {}", f.severity.label(), f.problem, f.repair));
        }
        s
    }
}

fn check_meta(dir: &Path) -> Option<Finding> {
    let problem = crate::pack::read_meta(dir).err()?;
    let d = dir.display();
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let problem_text =
        format!("meta.json {problem}: the pack is not listed and its tools fail until it is fixed");
    let by_hand = format!(
        "fix {d}/meta.json (a JSON object, e.g. {{\"name\": \"…\", \"description\": \"…\"}}); engram commits the fix as a hand edit on its next write"
    );
    let (problem, repair) = match meta_history(dir) {
        MetaHistory::CommittedFine => (
            format!(
                "{problem_text} (an uncommitted hand edit: HEAD's meta.json is fine, and engram refuses to commit this one)"
            ),
            format!("fix it, or `git -C {d} checkout -- meta.json` restores the committed version"),
        ),
        MetaHistory::BrokenBy { commit, subject, changed_later } => {
            let mut repair = format!(
                "revert commit {commit}: `engram revert {name} {commit}` (or the tool revert_memory(name=\"{name}\", commit=\"{commit}\"))"
            );
            if changed_later {
                repair.push_str(&format!(
                    "; meta.json changed again after it, so if the revert conflicts, restore the version before it: `git -C {d} show {commit}^:meta.json > {d}/meta.json`"
                ));
            }
            (format!("{problem_text} (broken by commit {commit} \"{subject}\")"), repair)
        }
        MetaHistory::Unknown => (problem_text, by_hand),
    };
    Some(Finding { severity: Severity::Error, problem, repair })
}

/// What the history says about a broken `meta.json` in the working tree.
enum MetaHistory {
    /// HEAD's `meta.json` parses: the working tree's is an uncommitted edit.
    CommittedFine,
    /// HEAD's is broken since `commit`, whose parent's was fine.
    BrokenBy {
        /// Short id.
        commit: String,
        /// Its subject.
        subject: String,
        /// Later commits changed `meta.json` again (still broken).
        changed_later: bool,
    },
    /// No history, or broken since it was added.
    Unknown,
}

/// Walks the commits that changed `meta.json`, newest first, to the one that broke it.
fn meta_history(dir: &Path) -> MetaHistory {
    if !PackRepo::is_repository(dir) {
        return MetaHistory::Unknown;
    }
    let options = StoreOptions { read_only: true, ..StoreOptions::default() };
    let Ok(repo) = PackRepo::open(dir, options) else { return MetaHistory::Unknown };
    let query = LogQuery {
        limit: Some(500),
        path: Some("meta.json".into()),
        with_files: true,
        ..LogQuery::default()
    };
    let Ok(log) = repo.log(&query) else { return MetaHistory::Unknown };
    let version = |c: &crate::store::CommitInfo| -> (bool, bool) {
        let f = c.files.iter().find(|f| f.path == "meta.json");
        let ok = |t: Option<&String>| {
            t.is_some_and(|t| crate::pack::meta_change_problem("meta.json", Some(t.as_bytes())).is_none())
        };
        (ok(f.and_then(|f| f.new.as_ref())), ok(f.and_then(|f| f.old.as_ref())))
    };
    match log.first() {
        None => return MetaHistory::Unknown,
        Some(newest) if version(newest).0 => return MetaHistory::CommittedFine,
        Some(_) => {}
    }
    for (i, c) in log.iter().enumerate() {
        let (new_ok, old_ok) = version(c);
        if new_ok {
            break;
        }
        if old_ok {
            return MetaHistory::BrokenBy {
                commit: c.short().to_owned(),
                subject: c.subject.clone(),
                changed_later: i > 0,
            };
        }
    }
    MetaHistory::Unknown
}

/// Staging directories an unfinished install left that engram could not remove.
fn staging_diagnoses(packs_dir: &Path) -> Vec<PackDiagnosis> {
    super::install::leftover_staging(packs_dir, false)
        .into_iter()
        .map(|left| PackDiagnosis {
            name: left.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            findings: vec![Finding {
                severity: Severity::Warning,
                problem: left.describe(),
                repair: format!("once no `engram install` runs: rm -rf '{}'", left.dir.display()),
            }],
            dir: left.dir,
        })
        .collect()
}

impl Engram {
    /// Diagnoses one pack (by directory name or `meta.name`) or, with `None`, every pack directory.
    pub fn doctor(&self, name: Option<&str>) -> Vec<PackDiagnosis> {
        let packs = self.packs();
        let mut dirs: Vec<PathBuf> = Vec::new();
        match name {
            Some(n) => match packs.resolve(n) {
                Ok(p) => dirs.push(p.dir),
                Err(_) => {
                    // A pack whose meta is broken cannot be resolved by name: look for its directory.
                    if crate::pack::validate_name(n).is_ok() {
                        dirs.extend(packs.roots().iter().map(|r| r.join(n)).filter(|d| d.is_dir()).take(1));
                    }
                }
            },
            None => {
                for root in packs.roots() {
                    let Ok(entries) = std::fs::read_dir(root) else { continue };
                    let mut found: Vec<PathBuf> = entries
                        .flatten()
                        .map(|e| e.path())
                        .filter(|p| p.is_dir())
                        .filter(|p| {
                            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| !n.starts_with('.'))
                        })
                        .collect();
                    found.sort();
                    dirs.extend(found);
                }
            }
        }
        let staging = if name.is_none() { staging_diagnoses(packs.packs_dir()) } else { Vec::new() };
        dirs.into_iter()
            .map(|dir| {
                let mut findings = Vec::new();
                let is_global = dir.file_name().is_some_and(|n| n == crate::pack::GLOBAL_DIR);
                if !is_global && let Some(f) = check_meta(&dir) {
                    findings.push(f);
                }
                findings.extend(diagnose(&dir));
                let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                PackDiagnosis { name, dir, findings }
            })
            .chain(staging)
            .collect()
    }
}
