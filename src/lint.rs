//! Pack lint (placeholder until the full rule set lands).

use std::path::Path;

/// Severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// An error.
    Error,
    /// A warning.
    Warning,
}

/// One finding.
#[derive(Debug, Clone)]
pub struct LintMessage {
    /// Severity.
    pub level: Level,
    /// File it is about.
    pub file: String,
    /// Message.
    pub message: String,
}

/// Lints one pack.
pub fn lint_pack(_pack_dir: &Path, _packs_root: &Path) -> Vec<LintMessage> {
    Vec::new()
}

/// Renders a report.
pub fn render_report(name: &str, msgs: &[LintMessage]) -> String {
    let e = msgs.iter().filter(|m| m.level == Level::Error).count();
    let w = msgs.len() - e;
    let mut s = format!("{name}: {e} errors, {w} warnings");
    for m in msgs {
        let l = if m.level == Level::Error { "error" } else { "warning" };
        s.push_str(&format!("\n  [{l}] {}: {}", m.file, m.message));
    }
    s
}
