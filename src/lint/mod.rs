//! `engram lint`: consistency checks for one Engram pack.
//!
//! [`lint_pack`] implements the reference (Python Engram) rules exactly — same rules, same emit
//! order, same Chinese messages and `file` strings — so a pack lints with the same findings as
//! under the reference, plus:
//!
//! * one extra rule of ours, memory-index consistency (warnings; see `memory_rule`), emitted
//!   after all reference findings; it finds nothing on the reference's example packs;
//! * clear findings instead of crashes or silent behaviour where the reference breaks: non-UTF-8
//!   files, unreadable directories or files, non-object `meta.json`, and paths (symlinks, `..`)
//!   leading out of the pack, which are never followed;
//! * NFC/NFD-insensitive matching of index tokens against on-disk names.
//!
//! The module only reads the filesystem.

mod empty_rule;
mod error;
mod frontmatter;
mod index_refs;
mod memory_rule;
mod message;
mod meta_rule;
mod packfs;

mod pytext;
mod reading;
mod role_rule;
mod section_rule;
mod template_meta;
mod texts;
mod uses_rule;

use std::fs;
use std::io;
use std::path::Path;

pub use crate::jsonfmt::dumps_indent2;
pub use error::LintError;
pub use message::{Level, LintMessage, count_levels, render_report};
pub use template_meta::{finalize_template_meta, finalize_template_meta_with};

use packfs::{PackFs, posix_string};

/// Lint the pack in `pack_dir` and return its findings in the reference's emit order.
///
/// `packs_root` is the directory holding the pack's siblings; a parent named by `meta.extends`
/// must exist there as a directory (the reference checks the sibling directory only).
///
/// Rules, in order: pack directory exists; `meta.json` (present, JSON, `name`, `description`,
/// `extends`); `role.md`; the `knowledge/` then `examples/` sections (directory, `_index.md`,
/// every reference of every index, orphans); `uses` of every case file; empty knowledge files;
/// then our memory-index rule.
pub fn lint_pack(pack_dir: &Path, packs_root: &Path) -> Vec<LintMessage> {
    let mut msgs = Vec::new();
    let root = match fs::canonicalize(pack_dir) {
        Ok(root) => root,
        Err(e) if is_not_found(&e) => {
            msgs.push(LintMessage::error(posix_string(pack_dir), texts::pack_dir_missing()));
            return msgs;
        }
        Err(e) => {
            msgs.push(LintMessage::error(posix_string(pack_dir), texts::cannot_access(&e)));
            return msgs;
        }
    };
    match fs::metadata(&root) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => {
            msgs.push(LintMessage::error(posix_string(pack_dir), texts::pack_dir_missing()));
            return msgs;
        }
        Err(e) => {
            msgs.push(LintMessage::error(posix_string(pack_dir), texts::cannot_access(&e)));
            return msgs;
        }
    }
    let fs = PackFs::new(root);

    meta_rule::lint_meta(&fs, packs_root, &mut msgs);
    role_rule::lint_role(&fs, &mut msgs);
    let knowledge_files = section_rule::lint_section(&fs, "knowledge", &mut msgs);
    let example_files = section_rule::lint_section(&fs, "examples", &mut msgs);
    uses_rule::lint_uses(&fs, &example_files, &mut msgs);
    empty_rule::lint_empty_knowledge(&fs, &knowledge_files, &mut msgs);
    memory_rule::lint_memory_index(&fs, &mut msgs);
    msgs
}

/// Errors meaning "there is no such directory".
fn is_not_found(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory)
}
