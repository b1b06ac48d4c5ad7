//! Lint rule for case files: every `uses` entry of the frontmatter must stay inside the pack and
//! name an existing file.

use std::path::Path;

use super::frontmatter::parse_uses;
use super::message::LintMessage;
use super::packfs::{PackFs, Probe};
use super::reading::read_for_lint;
use super::texts;

/// Check the `uses` of every example file (pack-relative paths, already sorted).
pub(crate) fn lint_uses(fs: &PackFs, example_files: &[String], msgs: &mut Vec<LintMessage>) {
    for rel in example_files {
        let content = read_for_lint(fs, Path::new(rel), msgs);
        for target in parse_uses(&content) {
            // Reference: `(engram_dir / ref).resolve()` must be `relative_to(engram_dir)`.
            let resolved = fs.resolve(Path::new(&target));
            let Ok(inside) = resolved.strip_prefix(fs.root()) else {
                msgs.push(LintMessage::error(rel.clone(), texts::uses_outside(&target)));
                continue;
            };
            if !matches!(fs.probe_nfc(inside).0, Probe::File) {
                msgs.push(LintMessage::error(rel.clone(), texts::uses_missing(&target)));
            }
        }
    }
}
