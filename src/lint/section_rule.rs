//! Lint rules for an indexed section (`knowledge/` or `examples/`): the directory, its root
//! index, every reference of every `_index.md` (nested ones followed), and orphan files.

use std::collections::{BTreeSet, HashSet, VecDeque};
use std::path::{Path, PathBuf};

use super::index_refs::extract_index_refs;
use super::message::LintMessage;
use super::packfs::{PackFs, Probe, WalkEntry, name_ends_with, name_starts_with, nfc, posix_string};
use super::reading::read_for_lint;
use super::texts;

const INDEX_NAME: &str = "_index.md";

/// Lint one section and return the pack-relative paths of its content files (every `*.md` below
/// the section whose name does not start with `_index`, symlinks leading out of the pack
/// excluded), sorted by code point like the reference's `sorted(set)`.
pub(crate) fn lint_section(fs: &PackFs, section: &str, msgs: &mut Vec<LintMessage>) -> Vec<String> {
    let section_rel = Path::new(section);
    match fs.probe(section_rel) {
        Probe::Dir => {}
        Probe::Outside => {
            msgs.push(LintMessage::error(section, texts::outside_symlink_not_read()));
            return Vec::new();
        }
        Probe::Error(e) => {
            msgs.push(LintMessage::error(section, texts::cannot_access(&e)));
            return Vec::new();
        }
        Probe::File | Probe::Missing | Probe::Other => {
            msgs.push(LintMessage::error(section, texts::section_missing(section)));
            return Vec::new();
        }
    }

    let root_index = section_rel.join(INDEX_NAME);
    let root_index_str = posix_string(&root_index);
    match fs.probe(&root_index) {
        Probe::File => {}
        Probe::Outside => {
            msgs.push(LintMessage::error(root_index_str.clone(), texts::outside_symlink_not_read()))
        }
        Probe::Error(e) => msgs.push(LintMessage::error(root_index_str.clone(), texts::cannot_access(&e))),
        Probe::Dir | Probe::Missing | Probe::Other => {
            msgs.push(LintMessage::error(root_index_str.clone(), texts::section_index_missing(section)))
        }
    }

    let walk = fs.walk(section_rel);
    for (dir, err) in &walk.unreadable {
        msgs.push(LintMessage::warning(posix_string(dir), texts::cannot_read_dir(err)));
    }

    let listed = lint_indexes(fs, section, &root_index, &walk.entries, msgs);
    let listed_nfc: HashSet<String> = listed.iter().map(|s| nfc(s)).collect();

    let mut discovered: BTreeSet<String> = BTreeSet::new();
    let mut escaping: BTreeSet<String> = BTreeSet::new();
    for entry in &walk.entries {
        if !name_ends_with(&entry.name, ".md") || name_starts_with(&entry.name, "_index") {
            continue;
        }
        let rel = posix_string(&entry.rel);
        if entry.is_symlink && matches!(fs.probe(&entry.rel), Probe::Outside) {
            escaping.insert(rel);
        } else {
            discovered.insert(rel);
        }
    }

    for orphan in discovered.iter().filter(|rel| !listed_nfc.contains(&nfc(rel))) {
        msgs.push(LintMessage::warning(orphan.clone(), texts::orphan(section)));
    }
    // Listed ones were already reported at the index that references them.
    for link in escaping.iter().filter(|rel| !listed_nfc.contains(&nfc(rel))) {
        msgs.push(LintMessage::warning(link.clone(), texts::outside_symlink_not_read()));
    }

    discovered.into_iter().collect()
}

/// Process the index queue (root index, then every other `_index.md` of the section in path
/// order, then nested indexes as they are referenced) and return every listed file reference.
fn lint_indexes(
    fs: &PackFs,
    section: &str,
    root_index: &Path,
    entries: &[WalkEntry],
    msgs: &mut Vec<LintMessage>,
) -> BTreeSet<String> {
    let mut other_indexes: Vec<PathBuf> = entries
        .iter()
        .filter(|e| e.name == INDEX_NAME && e.rel != root_index)
        .map(|e| e.rel.clone())
        .collect();
    // `Path` ordering is component-wise, like Python's `sorted()` of `Path` objects.
    other_indexes.sort();

    let mut queue: VecDeque<PathBuf> = VecDeque::from([root_index.to_path_buf()]);
    queue.extend(other_indexes);
    let mut visited: HashSet<PathBuf> = HashSet::new();
    let mut listed: BTreeSet<String> = BTreeSet::new();

    while let Some(index_rel) = queue.pop_front() {
        if !visited.insert(index_rel.clone()) {
            continue;
        }
        let index_str = posix_string(&index_rel);
        match fs.probe(&index_rel) {
            Probe::File => {}
            // The root index was already reported; a symlinked `_index.md` found by the walk
            // that leads out of the pack is reported here.
            Probe::Outside if index_rel != root_index => {
                msgs.push(LintMessage::warning(index_str, texts::outside_symlink_not_read()));
                continue;
            }
            _ => continue,
        }

        let content = read_for_lint(fs, &index_rel, msgs);
        let refs = extract_index_refs(&content, section);

        for rel in &refs.files {
            listed.insert(rel.clone());
            match fs.probe_nfc(Path::new(rel)).0 {
                Probe::File => {}
                Probe::Outside => {
                    msgs.push(LintMessage::error(index_str.clone(), texts::index_ref_outside(rel)));
                }
                Probe::Error(e) => {
                    msgs.push(LintMessage::error(index_str.clone(), texts::index_ref_inaccessible(rel, &e)));
                }
                Probe::Dir | Probe::Missing | Probe::Other => {
                    msgs.push(LintMessage::error(index_str.clone(), texts::index_ref_missing(rel)));
                }
            }
        }

        for nested in &refs.nested {
            let (probe, actual) = fs.probe_nfc(Path::new(nested));
            match probe {
                Probe::File => {
                    if !visited.contains(&actual) {
                        queue.push_back(actual);
                    }
                }
                Probe::Outside => {
                    msgs.push(LintMessage::error(index_str.clone(), texts::index_ref_outside(nested)));
                }
                Probe::Error(e) => {
                    msgs.push(LintMessage::error(
                        index_str.clone(),
                        texts::index_ref_inaccessible(nested, &e),
                    ));
                }
                Probe::Dir | Probe::Missing | Probe::Other => {
                    msgs.push(LintMessage::error(index_str.clone(), texts::sub_index_missing(nested)));
                }
            }
        }
    }
    listed
}
