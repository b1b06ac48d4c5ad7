//! Our extra rule (the reference has none): memory-index consistency.
//!
//! * Every entry line (`line.strip().startswith("- `memory/")`, the reference's entry test) of
//!   `memory/_index_full.md` — or of `memory/_index.md` when there is no full index — must point
//!   to an existing `memory/<category>.md` inside `memory/`.
//! * When the full index exists, every entry line of the hot index `memory/_index.md` must also
//!   be an entry line of the full index (the hot index is regenerated from it).
//!
//! All findings are warnings; a pack without `memory/` is not checked.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::message::LintMessage;
use super::packfs::{PackFs, Probe};
use super::pytext::{py_splitlines, py_strip};
use super::reading::read_for_lint;
use super::texts;

const MEMORY: &str = "memory";
const HOT_INDEX: &str = "memory/_index.md";
const FULL_INDEX: &str = "memory/_index_full.md";
const ENTRY_PREFIX: &str = "- `memory/";

/// One entry line of a memory index.
struct Entry {
    /// 1-based line number (Python `splitlines` numbering).
    line_no: usize,
    /// The stripped line.
    text: String,
}

/// Run the memory-index consistency rule.
pub(crate) fn lint_memory_index(fs: &PackFs, msgs: &mut Vec<LintMessage>) {
    match fs.probe(Path::new(MEMORY)) {
        Probe::Dir => {}
        Probe::Missing => return,
        Probe::Outside => {
            msgs.push(LintMessage::warning(MEMORY, texts::outside_symlink_not_read()));
            return;
        }
        Probe::Error(e) => {
            msgs.push(LintMessage::warning(MEMORY, texts::cannot_access(&e)));
            return;
        }
        Probe::File | Probe::Other => {
            msgs.push(LintMessage::warning(MEMORY, texts::memory_not_dir()));
            return;
        }
    }

    let full = read_entries(fs, FULL_INDEX, msgs);
    let hot = read_entries(fs, HOT_INDEX, msgs);
    match (full, hot) {
        (Some(full), hot) => {
            check_targets(fs, FULL_INDEX, &full, msgs);
            if let Some(hot) = hot {
                let known: HashSet<&str> = full.iter().map(|e| e.text.as_str()).collect();
                for entry in hot.iter().filter(|e| !known.contains(e.text.as_str())) {
                    msgs.push(LintMessage::warning(HOT_INDEX, texts::hot_entry_not_in_full(entry.line_no)));
                }
            }
        }
        (None, Some(hot)) => check_targets(fs, HOT_INDEX, &hot, msgs),
        (None, None) => {}
    }
}

/// Entry lines of an index file, or `None` when it is not a readable regular file in the pack.
fn read_entries(fs: &PackFs, rel: &str, msgs: &mut Vec<LintMessage>) -> Option<Vec<Entry>> {
    match fs.probe(Path::new(rel)) {
        Probe::File => {}
        Probe::Outside => {
            msgs.push(LintMessage::warning(rel, texts::outside_symlink_not_read()));
            return None;
        }
        Probe::Error(e) => {
            msgs.push(LintMessage::warning(rel, texts::cannot_access(&e)));
            return None;
        }
        Probe::Dir | Probe::Missing | Probe::Other => return None,
    }
    let content = read_for_lint(fs, Path::new(rel), msgs);
    let entries = py_splitlines(&content)
        .into_iter()
        .enumerate()
        .map(|(i, line)| (i + 1, py_strip(line)))
        .filter(|(_, line)| line.starts_with(ENTRY_PREFIX))
        .map(|(line_no, line)| Entry { line_no, text: line.to_string() })
        .collect();
    Some(entries)
}

/// The backticked `memory/<category>.md` path of an entry line, if well formed.
fn entry_target(text: &str) -> Option<&str> {
    let body = text.strip_prefix("- `")?;
    let end = body.find('`')?;
    let target = &body[..end];
    let category = target.strip_prefix("memory/")?.strip_suffix(".md")?;
    (!category.is_empty()).then_some(target)
}

/// Check that every entry points to an existing category file inside `memory/`.
/// Missing targets are grouped: one warning per distinct path, in order of first appearance.
fn check_targets(fs: &PackFs, file: &str, entries: &[Entry], msgs: &mut Vec<LintMessage>) {
    let memory_dir = fs.resolve(Path::new(MEMORY));
    let mut missing: Vec<(String, usize, usize)> = Vec::new();
    let mut missing_pos: HashMap<String, usize> = HashMap::new();
    let mut outcome_cache: HashMap<String, bool> = HashMap::new();

    for entry in entries {
        let Some(target) = entry_target(&entry.text) else {
            msgs.push(LintMessage::warning(file, texts::memory_entry_malformed(entry.line_no)));
            continue;
        };
        if let Some(group) = missing_pos.get(target).and_then(|&pos| missing.get_mut(pos)) {
            group.2 += 1;
            continue;
        }
        if outcome_cache.get(target) == Some(&true) {
            continue;
        }
        let resolved = fs.resolve(Path::new(target));
        if !resolved.starts_with(&memory_dir) || resolved == memory_dir {
            msgs.push(LintMessage::warning(file, texts::memory_target_outside(target, entry.line_no)));
            continue;
        }
        let inside: PathBuf =
            resolved.strip_prefix(fs.root()).map(Path::to_path_buf).unwrap_or_else(|_| PathBuf::from(target));
        match fs.probe_nfc(&inside).0 {
            Probe::File => {
                outcome_cache.insert(target.to_string(), true);
            }
            Probe::Error(e) => msgs.push(LintMessage::warning(
                file,
                texts::memory_target_inaccessible(target, entry.line_no, &e),
            )),
            Probe::Outside => {
                msgs.push(LintMessage::warning(file, texts::memory_target_outside(target, entry.line_no)))
            }
            Probe::Dir | Probe::Missing | Probe::Other => {
                missing_pos.insert(target.to_string(), missing.len());
                missing.push((target.to_string(), entry.line_no, 1));
            }
        }
    }

    for (target, first_line, count) in missing {
        msgs.push(LintMessage::warning(file, texts::memory_target_missing(&target, first_line, count)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_target_parsing() {
        assert_eq!(entry_target("- `memory/a-b.md` [2026-01-01 10:00] [fact] x"), Some("memory/a-b.md"));
        assert_eq!(entry_target("- `memory/sub/c.md` x"), Some("memory/sub/c.md"));
        assert_eq!(entry_target("- `memory/.md` x"), None);
        assert_eq!(entry_target("- `memory/a.txt` x"), None);
        assert_eq!(entry_target("- `memory/a.md"), None);
    }
}
