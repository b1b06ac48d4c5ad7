//! Limits on input sizes (bytes unless noted), and the rules every text argument follows.

use super::EngramError;

/// Largest memory content, knowledge file or written file.
pub const MAX_CONTENT_BYTES: usize = 256 * 1024;
/// Largest summary (characters).
pub const MAX_SUMMARY_CHARS: usize = 500;
/// Most tags on one memory.
pub const MAX_TAGS: usize = 32;
/// Longest category, tag or type (characters).
pub const MAX_LABEL_CHARS: usize = 100;
/// Longest path inside a pack (bytes).
pub use crate::pack_path::MAX_PATH_BYTES;
/// Largest file `read_engram_file` returns.
pub const MAX_READ_BYTES: usize = 1024 * 1024;
/// Longest search/focus query (`load_engram`'s `query`, search tools), in characters.
pub const MAX_QUERY_CHARS: usize = 2000;
/// Most entities (graph nodes/edges, notes, …) one call may create or change.
/// For the toolsets that take lists; a call over it writes nothing.
pub const MAX_ENTITIES_PER_CALL: usize = 100;
/// Longest pack name, in characters (checked by `pack::validate_name`).
pub use crate::pack::MAX_NAME_CHARS as MAX_PACK_NAME_CHARS;
/// Longest conversation id, in characters.
pub const MAX_CONVERSATION_ID_CHARS: usize = 200;
/// Longest text argument that no narrower limit covers (a graph observation, an entity
/// name, a profile value, …), in bytes.
pub const MAX_TEXT_BYTES: usize = MAX_CONTENT_BYTES;
/// All the text of one call's arguments together, in bytes.
pub const MAX_ARGUMENTS_BYTES: usize = 1024 * 1024;
/// Largest `meta.json` a pack may have (a real one is well under 1 KiB).
pub use crate::pack::MAX_META_BYTES;
/// Largest answer a tool gives (twice the largest file `read_engram_file` returns): a
/// longer text is cut with a note, a longer JSON result is refused with advice.
pub const MAX_ANSWER_BYTES: usize = 2 * MAX_READ_BYTES;

/// Checks that a content argument is not blank and at most [`MAX_CONTENT_BYTES`].
pub fn check_content(field: &'static str, content: &str) -> Result<(), EngramError> {
    if content.trim().is_empty() {
        return Err(EngramError::Invalid { field, reason: "must not be empty".into() });
    }
    check_size(field, content)
}

/// Checks a content argument against [`MAX_CONTENT_BYTES`].
pub fn check_size(field: &'static str, content: &str) -> Result<(), EngramError> {
    if content.len() > MAX_CONTENT_BYTES {
        return Err(EngramError::Invalid {
            field,
            reason: format!("is {} bytes; the limit is {MAX_CONTENT_BYTES} bytes", content.len()),
        });
    }
    Ok(())
}

/// Checks a query argument against [`MAX_QUERY_CHARS`].
pub fn check_query(field: &'static str, query: &str) -> Result<(), EngramError> {
    let n = query.chars().count();
    if n > MAX_QUERY_CHARS {
        return Err(EngramError::Invalid {
            field,
            reason: format!("is {n} characters; the limit is {MAX_QUERY_CHARS} — shorten the query"),
        });
    }
    Ok(())
}

/// Checks the length of a list argument against [`MAX_ENTITIES_PER_CALL`].
pub fn check_entities(field: &'static str, count: usize) -> Result<(), EngramError> {
    if count > MAX_ENTITIES_PER_CALL {
        return Err(EngramError::Invalid {
            field,
            reason: format!(
                "has {count} items; at most {MAX_ENTITIES_PER_CALL} per call — split it into several calls"
            ),
        });
    }
    Ok(())
}

/// The rules every text in a tool call's arguments follows, whatever the tool (one
/// place for every toolset; the MCP server applies it before any tool runs):
///
/// - no control characters but tab, line feed and carriage return: a NUL made git treat
///   the memory files as binary for good (no more text diffs in `git log -p`), and the
///   others are invisible in every file engram writes;
/// - an argument named `query` (any tool) has at most [`MAX_QUERY_CHARS`] characters;
/// - any text at most [`MAX_TEXT_BYTES`], all texts together at most [`MAX_ARGUMENTS_BYTES`].
///
/// Object keys are texts too. The error names the text by its path
/// (`entities[0].observations[2]`). Narrower limits (summary, tags, …) stay with the tools.
pub fn check_arguments(args: &serde_json::Map<String, serde_json::Value>) -> Result<(), EngramError> {
    let mut total = 0usize;
    for (key, value) in args {
        check_text(key, key, &mut total)?;
        if key == "query"
            && let Some(q) = value.as_str()
            && q.chars().count() > MAX_QUERY_CHARS
        {
            return Err(invalid_text(key.clone(), query_too_long(q.chars().count())));
        }
        let mut path = key.clone();
        walk(value, &mut path, &mut total)?;
    }
    if total > MAX_ARGUMENTS_BYTES {
        return Err(invalid_text(
            "arguments".into(),
            format!(
                "hold {total} bytes of text; the limit is {MAX_ARGUMENTS_BYTES} bytes per call — split the call"
            ),
        ));
    }
    Ok(())
}

/// The control-character rule of [`check_arguments`] alone, for a text that comes another
/// way than a tool call (a form field of the web page, `engram knowledge import`'s file);
/// `field` names it in the error.
pub fn check_controls(field: &str, text: &str) -> Result<(), EngramError> {
    let mut total = 0;
    match first_control(text) {
        Some(_) => check_text(field, text, &mut total),
        None => Ok(()),
    }
}

/// [`check_controls`] on every text (keys too) of a JSON value (the web page's JSON API).
pub fn check_controls_in(value: &serde_json::Value) -> Result<(), EngramError> {
    use serde_json::Value;
    let mut stack = vec![(String::from("body"), value)];
    while let Some((path, v)) = stack.pop() {
        match v {
            Value::String(s) => check_controls(&path, s)?,
            Value::Array(items) => {
                stack.extend(items.iter().enumerate().map(|(i, item)| (format!("{path}[{i}]"), item)))
            }
            Value::Object(map) => {
                for (key, item) in map {
                    let at = format!("{path}.{key}");
                    check_controls(&at, key)?;
                    stack.push((at, item));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Why a bounded read of a file refused it.
#[derive(Debug, thiserror::Error)]
pub enum ReadLimitError {
    /// The file is larger than the limit.
    #[error("{path} is {size} bytes or more; the limit is {limit} bytes — nothing was read past it")]
    TooLarge {
        /// The file.
        path: String,
        /// Its size (or the bytes read before stopping).
        size: u64,
        /// The limit.
        limit: usize,
    },
    /// The path is a device (`/dev/zero`), a directory or a socket, not a file.
    #[error("{path} is {kind}, not a file")]
    NotAFile {
        /// The path.
        path: String,
        /// What it is.
        kind: &'static str,
    },
    /// The file cannot be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
}

/// Reads at most `limit` bytes of the file at `path`, refusing a larger one: its size and
/// type are checked first, and the read itself stops at `limit + 1` bytes (a pipe or a file
/// that grows cannot make it read more). A device such as `/dev/zero` is refused unread.
pub fn read_bounded(path: &std::path::Path, limit: usize) -> Result<Vec<u8>, ReadLimitError> {
    use std::io::Read as _;
    use std::os::unix::fs::FileTypeExt as _;
    let shown = || path.display().to_string();
    let io = |source| ReadLimitError::Io { path: shown(), source };
    let file = std::fs::File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    let kind = meta.file_type();
    let not_a_file = |kind| ReadLimitError::NotAFile { path: shown(), kind };
    if kind.is_dir() {
        return Err(not_a_file("a directory"));
    }
    if kind.is_char_device() || kind.is_block_device() {
        return Err(not_a_file("a device"));
    }
    if kind.is_socket() {
        return Err(not_a_file("a socket"));
    }
    if kind.is_file() && meta.len() > limit as u64 {
        return Err(ReadLimitError::TooLarge { path: shown(), size: meta.len(), limit });
    }
    let mut out = Vec::with_capacity(if kind.is_file() { meta.len() as usize } else { 8192 });
    file.take(limit as u64 + 1).read_to_end(&mut out).map_err(io)?;
    if out.len() > limit {
        return Err(ReadLimitError::TooLarge { path: shown(), size: out.len() as u64, limit });
    }
    Ok(out)
}

fn walk(value: &serde_json::Value, path: &mut String, total: &mut usize) -> Result<(), EngramError> {
    use serde_json::Value;
    match value {
        Value::String(s) => check_text(path, s, total),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                walk(item, path, total)?;
                path.truncate(len);
            }
            Ok(())
        }
        Value::Object(map) => {
            for (key, item) in map {
                let len = path.len();
                path.push('.');
                path.push_str(key);
                check_text(path, key, total)?;
                walk(item, path, total)?;
                path.truncate(len);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn check_text(path: &str, text: &str, total: &mut usize) -> Result<(), EngramError> {
    if let Some((at, c)) = first_control(text) {
        return Err(invalid_text(
            path.to_owned(),
            format!(
                "holds the control character U+{:04X} at character {at}; text may hold tabs and line breaks but no other control characters (a NUL would make git treat the file as binary) — remove it",
                u32::from(c)
            ),
        ));
    }
    if text.len() > MAX_TEXT_BYTES {
        return Err(invalid_text(
            path.to_owned(),
            format!("is {} bytes; the limit is {MAX_TEXT_BYTES} bytes", text.len()),
        ));
    }
    *total += text.len();
    Ok(())
}

/// The first control character other than tab, LF and CR (C0, DEL, C1), with its
/// character index. Scans bytes: in UTF-8 these are the bytes below 0x20, 0x7F, and
/// 0xC2 followed by 0x80–0x9F.
fn first_control(text: &str) -> Option<(usize, char)> {
    let b = text.as_bytes();
    let pos = (0..b.len()).find(|&i| match b[i] {
        b'\t' | b'\n' | b'\r' => false,
        x if x < 0x20 || x == 0x7f => true,
        0xc2 => matches!(b.get(i + 1), Some(0x80..=0x9f)),
        _ => false,
    })?;
    let c = text.get(pos..)?.chars().next()?;
    Some((text.get(..pos)?.chars().count(), c))
}

fn query_too_long(n: usize) -> String {
    format!("is {n} characters; the limit is {MAX_QUERY_CHARS} — shorten the query")
}

fn invalid_text(field: String, reason: String) -> EngramError {
    EngramError::InvalidText { field, reason }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(v: serde_json::Value) -> Result<(), String> {
        check_arguments(v.as_object().expect("object")).map_err(|e| e.to_string())
    }

    #[test]
    fn bounded_reads_stop_at_the_limit() {
        assert!(matches!(
            read_bounded(std::path::Path::new("/dev/zero"), 10),
            Err(ReadLimitError::NotAFile { .. })
        ));
        let dir = tempfile::tempdir().expect("tmp");
        let f = dir.path().join("f");
        std::fs::write(&f, b"0123456789").expect("write");
        assert_eq!(read_bounded(&f, 10).expect("at the limit").len(), 10);
        assert!(matches!(read_bounded(&f, 9), Err(ReadLimitError::TooLarge { .. })));
        assert!(matches!(read_bounded(dir.path(), 9), Err(ReadLimitError::NotAFile { .. })));
    }

    #[test]
    fn control_characters_are_refused_wherever_they_are_and_named_by_path() {
        assert!(check(json!({"content": "tab\tand\r\nlines 中文 ✓", "n": 3, "ok": true})).is_ok());
        for (args, path, code) in [
            (json!({"content": "a\u{0}b"}), "`content`", "U+0000"),
            (json!({"summary": "bell\u{7}"}), "`summary`", "U+0007"),
            (
                json!({"entities": [{"name": "x", "observations": ["ok", "esc\u{1b}[31m"]}]}),
                "`entities[0].observations[1]`",
                "U+001B",
            ),
            (json!({"attributes": {"k\u{0}": "v"}}), "`attributes.k\u{0}`", "U+0000"),
            (json!({"content": "del\u{7f}"}), "`content`", "U+007F"),
            (json!({"content": "c1\u{85}"}), "`content`", "U+0085"),
        ] {
            let e = check(args).expect_err("refused");
            assert!(e.contains(path) && e.contains(code), "{e}");
        }
    }

    #[test]
    fn sizes_and_queries_have_their_limits() {
        assert!(check(json!({"observations": ["x".repeat(MAX_TEXT_BYTES)]})).is_ok());
        let e = check(json!({"observations": ["x".repeat(MAX_TEXT_BYTES + 1)]})).expect_err("too long");
        assert!(e.contains("`observations[0]`") && e.contains("262144"), "{e}");
        let many: Vec<String> = (0..5).map(|_| "x".repeat(MAX_TEXT_BYTES)).collect();
        let e = check(json!({ "observations": many })).expect_err("too much");
        assert!(e.contains("`arguments`") && e.contains("1048576"), "{e}");
        assert!(check(json!({"query": "q".repeat(MAX_QUERY_CHARS)})).is_ok());
        let e = check(json!({"query": "q".repeat(MAX_QUERY_CHARS + 1)})).expect_err("long query");
        assert!(e.contains("`query`") && e.contains("2000"), "{e}");
    }
}
