//! Lint findings and the text report printed by `engram lint`.

use std::fmt;

use crate::lang::{Lang, Said};

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
    /// Human-readable message (the reference's exact Chinese text for the reference rules):
    /// what the MCP tool `lint_engrams` answers.
    pub message: String,
    /// The message in English, for a person's CLI (see [`crate::lang::Lang`]).
    pub english: String,
}

impl LintMessage {
    /// Build an error finding.
    pub fn error(file: impl Into<String>, said: Said) -> Self {
        Self { level: Level::Error, file: file.into(), message: said.zh, english: said.en }
    }

    /// Build a warning finding.
    pub fn warning(file: impl Into<String>, said: Said) -> Self {
        Self { level: Level::Warning, file: file.into(), message: said.zh, english: said.en }
    }

    /// The message in `lang`.
    pub fn text(&self, lang: Lang) -> &str {
        lang.pick(&self.message, &self.english)
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
/// finding, joined with `\n` (no trailing newline). The messages are in `lang`; [`Lang::Zh`]
/// is the reference's report byte for byte.
pub fn render_report(name: &str, msgs: &[LintMessage], lang: Lang) -> String {
    let (errors, warnings) = count_levels(msgs);
    let mut out = format!("{name}: {errors} errors, {warnings} warnings");
    for msg in msgs {
        out.push_str(&format!("\n  [{}] {}: {}", msg.level, msg.file, msg.text(lang)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_format_matches_reference() {
        let msgs = vec![
            LintMessage::error("meta.json", crate::lint::texts::meta_no_name()),
            LintMessage::warning("knowledge/x.md", crate::lint::texts::orphan("knowledge")),
        ];
        assert_eq!(
            render_report("p", &msgs, Lang::Zh),
            "p: 1 errors, 1 warnings\n  [error] meta.json: meta.json 缺少 name 字段\n  \
             [warning] knowledge/x.md: 孤儿文件：未在 knowledge 索引中列出"
        );
        assert_eq!(render_report("ok", &[], Lang::Zh), "ok: 0 errors, 0 warnings");
        assert_eq!(
            render_report("p", &msgs, Lang::En),
            "p: 1 errors, 1 warnings\n  [error] meta.json: meta.json has no name field\n  \
             [warning] knowledge/x.md: orphan file: not listed in the knowledge index"
        );
    }
}
