//! `engram doctor [pack]`: what is wrong with a pack and how to repair it.
//!
//! Looks at every directory of the packs roots (also those whose `meta.json`
//! is broken, which `list_engrams` skips), checks `meta.json`, then the
//! repository (`store::doctor`). Changes nothing.

use std::path::{Path, PathBuf};

use crate::ops::Engram;
use crate::store::doctor::{Finding, Severity, diagnose};

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
    Some(Finding {
        severity: Severity::Error,
        problem: format!("meta.json {problem}: the pack is not listed and its tools fail until it is fixed"),
        repair: format!(
            "fix {d}/meta.json (a JSON object, e.g. {{\"name\": \"…\", \"description\": \"…\"}}); `git -C {d} show HEAD:meta.json` prints the last committed version, `git -C {d} checkout -- meta.json` restores it"
        ),
    })
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
            .collect()
    }
}
