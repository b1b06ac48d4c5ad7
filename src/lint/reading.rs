//! Reading pack text files for lint rules, reporting what the reference would crash on.

use std::io;
use std::path::Path;

use super::message::LintMessage;
use super::packfs::{PackFs, ReadOutcome, posix_string};
use super::texts;

/// Read a pack-relative text file like the reference's `_read_text` (any `OSError` gives `""`),
/// but decode invalid UTF-8 lossily with a warning instead of crashing, and warn about
/// permission-type read errors that the reference silently swallows.
pub(crate) fn read_for_lint(fs: &PackFs, rel: &Path, msgs: &mut Vec<LintMessage>) -> String {
    let file = posix_string(rel);
    match fs.read_text(rel) {
        ReadOutcome::Text(decoded) => {
            if !decoded.valid_utf8 {
                msgs.push(LintMessage::warning(file, texts::not_utf8()));
            }
            decoded.text
        }
        ReadOutcome::Outside => {
            msgs.push(LintMessage::warning(file, texts::outside_symlink_not_read()));
            String::new()
        }
        ReadOutcome::Failed(err) => {
            if !is_benign_read_error(&err) {
                msgs.push(LintMessage::warning(file, texts::cannot_read_file(&err)));
            }
            String::new()
        }
    }
}

/// Read errors that simply mean "no such regular file" (a directory named `x.md`, a broken
/// symlink, a vanished file); the reference treats these as empty text without comment.
fn is_benign_read_error(err: &io::Error) -> bool {
    matches!(err.kind(), io::ErrorKind::NotFound | io::ErrorKind::IsADirectory | io::ErrorKind::NotADirectory)
}
