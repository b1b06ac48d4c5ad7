//! Lint findings and the text report printed by `engram lint`.

use std::fmt;

/// Severity of a lint finding. Printed as `error` / `warning`, like the reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    /// A problem that makes the pack inconsistent (counted in "errors"; `engram lint` exits 1).
    Error,
    /// A suspicious but tolerated condition (counted in "warnings").
    Warning,
}

impl Level {
    /// The lower-case name used in reports (`error` or `warning`).
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One lint finding.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LintMessage {
    /// Severity.
    pub level: Level,
    /// Pack-relative POSIX path of the file concerned (e.g. `knowledge/_index.md`), or the pack
    /// directory as given when the pack itself is missing.
    pub file: String,
    /// Human-readable message (the reference's exact Chinese text for the reference rules).
    pub message: String,
}

impl LintMessage {
    /// Build an error finding.
    pub fn error(file: impl Into<String>, message: impl Into<String>) -> Self {
        Self { level: Level::Error, file: file.into(), message: message.into() }
    }

    /// Build a warning finding.
    pub fn warning(file: impl Into<String>, message: impl Into<String>) -> Self {
        Self { level: Level::Warning, file: file.into(), message: message.into() }
    }
}

impl fmt::Display for LintMessage {
    /// Formats the finding as the report line body: `[<level>] <file>: <message>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}: {}", self.level, self.file, self.message)
    }
}

/// Count `(errors, warnings)` in a list of findings.
pub fn count_levels(msgs: &[LintMessage]) -> (usize, usize) {
    let errors = msgs.iter().filter(|m| m.level == Level::Error).count();
    (errors, msgs.len() - errors)
}

/// Render one pack's report exactly like the reference CLI:
/// `<name>: <E> errors, <W> warnings` followed by one `  [<level>] <file>: <message>` line per
/// finding, joined with `\n` (no trailing newline).
pub fn render_report(name: &str, msgs: &[LintMessage]) -> String {
    let (errors, warnings) = count_levels(msgs);
    let mut out = format!("{name}: {errors} errors, {warnings} warnings");
    for msg in msgs {
        out.push_str("\n  ");
        out.push_str(&msg.to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_format_matches_reference() {
        let msgs = vec![
            LintMessage::error("meta.json", "meta.json 缺少 name 字段"),
            LintMessage::warning("knowledge/x.md", "孤儿文件：未在 knowledge 索引中列出"),
        ];
        assert_eq!(
            render_report("p", &msgs),
            "p: 1 errors, 1 warnings\n  [error] meta.json: meta.json 缺少 name 字段\n  \
             [warning] knowledge/x.md: 孤儿文件：未在 knowledge 索引中列出"
        );
        assert_eq!(render_report("ok", &[]), "ok: 0 errors, 0 warnings");
    }
}
