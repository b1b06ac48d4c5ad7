//! Lint rule: the minimal required file `role.md`.

use std::path::Path;

use super::message::LintMessage;
use super::packfs::{PackFs, Probe};
use super::texts;

/// The minimal required file `role.md`.
pub(crate) fn lint_role(fs: &PackFs, msgs: &mut Vec<LintMessage>) {
    const ROLE: &str = "role.md";
    match fs.probe(Path::new(ROLE)) {
        Probe::File => {}
        Probe::Outside => {
            msgs.push(LintMessage::error(ROLE, texts::outside_symlink_not_read()));
        }
        Probe::Error(e) => msgs.push(LintMessage::error(ROLE, texts::cannot_access(&e))),
        Probe::Dir | Probe::Missing | Probe::Other => {
            msgs.push(LintMessage::error(ROLE, texts::role_missing()));
        }
    }
}
