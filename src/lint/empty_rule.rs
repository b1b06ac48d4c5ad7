//! Lint rule: knowledge files must not be empty (0 bytes).

use std::fs;

use super::message::LintMessage;
use super::packfs::PackFs;
use super::texts;

/// Warn about every knowledge file (pack-relative paths, already sorted) whose size is 0.
/// Files that cannot be stat'ed are skipped, like the reference.
pub(crate) fn lint_empty_knowledge(fs: &PackFs, knowledge_files: &[String], msgs: &mut Vec<LintMessage>) {
    for rel in knowledge_files {
        let Ok(meta) = fs::metadata(fs.root().join(rel)) else {
            continue;
        };
        if meta.len() == 0 {
            msgs.push(LintMessage::warning(rel.clone(), texts::knowledge_empty()));
        }
    }
}
