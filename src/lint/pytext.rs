//! Python text semantics that the reference linter relies on.
//!
//! The reference reads files with `Path.read_text(encoding="utf-8")` (universal newlines), uses
//! `str.strip()`, `str.splitlines()` and the regex class `\s`, all of which follow Python's
//! definition of whitespace and line boundaries rather than Rust's.

/// Python's `str.isspace()` for one character (also what `\s` matches in a `str` regex).
///
/// Rust's `char::is_whitespace` covers every Python whitespace character except the four
/// information separators U+001C..U+001F.
pub(crate) fn py_isspace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `str.strip()` with no arguments.
pub(crate) fn py_strip(s: &str) -> &str {
    s.trim_matches(py_isspace)
}

/// Whether `c` ends a line for Python's `str.splitlines()` (`\r\n` is handled by the caller).
fn is_line_boundary(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r'
            | '\u{0b}'
            | '\u{0c}'
            | '\u{1c}'
            | '\u{1d}'
            | '\u{1e}'
            | '\u{85}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

/// Python's `str.splitlines()` without `keepends`.
pub(crate) fn py_splitlines(s: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if !is_line_boundary(c) {
            continue;
        }
        lines.push(&s[start..i]);
        let mut end = i + c.len_utf8();
        if c == '\r' && matches!(chars.peek(), Some((_, '\n'))) {
            chars.next();
            end += 1;
        }
        start = end;
    }
    if start < s.len() {
        lines.push(&s[start..]);
    }
    lines
}

/// The text of a file as Python's text mode would see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DecodedText {
    /// Decoded text with `\r\n` and `\r` turned into `\n`; invalid UTF-8 is replaced by U+FFFD.
    pub(crate) text: String,
    /// False when the bytes were not valid UTF-8 (the reference would raise there).
    pub(crate) valid_utf8: bool,
}

/// Decode bytes like `read_text(encoding="utf-8")`, but lossily instead of raising.
pub(crate) fn decode_text(bytes: &[u8]) -> DecodedText {
    let (raw, valid_utf8) = match std::str::from_utf8(bytes) {
        Ok(s) => (std::borrow::Cow::Borrowed(s), true),
        Err(_) => (String::from_utf8_lossy(bytes), false),
    };
    let text =
        if raw.contains('\r') { raw.replace("\r\n", "\n").replace('\r', "\n") } else { raw.into_owned() };
    DecodedText { text, valid_utf8 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strip_uses_python_whitespace() {
        assert_eq!(py_strip("\u{1c} a \u{3000}"), "a");
        assert_eq!(py_strip("\u{feff}a"), "\u{feff}a");
    }

    #[test]
    fn splitlines_matches_python() {
        assert_eq!(py_splitlines(""), Vec::<&str>::new());
        assert_eq!(py_splitlines("a\n"), vec!["a"]);
        assert_eq!(py_splitlines("a\r\nb\rc\u{2028}d"), vec!["a", "b", "c", "d"]);
        assert_eq!(py_splitlines("a\n\nb"), vec!["a", "", "b"]);
        assert_eq!(py_splitlines("a\u{1f}b"), vec!["a\u{1f}b"]);
    }

    #[test]
    fn decode_normalises_newlines_and_flags_bad_utf8() {
        let d = decode_text(b"a\r\nb\rc");
        assert_eq!(d.text, "a\nb\nc");
        assert!(d.valid_utf8);
        let d = decode_text(b"a\xffb");
        assert_eq!(d.text, "a\u{fffd}b");
        assert!(!d.valid_utf8);
    }
}
