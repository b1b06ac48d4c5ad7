//! Extraction of file references from a `knowledge/` or `examples/` index file.
//!
//! Reference behaviour: every backticked token (regex `` `([^`]+)` ``) that starts with
//! `<section>/` and ends with `.md` is a reference; those ending `/_index.md` are nested indexes.
//! `→\s*详见\s+(<section>/[^\s`]+/_index\.md)` also names a nested index.

use std::collections::BTreeSet;

use super::pytext::py_isspace;

/// References found in one index file (sorted sets, like the reference's `sorted(set)`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct IndexRefs {
    /// Referenced content files (`<section>/….md`, not ending in `/_index.md`).
    pub(crate) files: BTreeSet<String>,
    /// Referenced nested indexes (`<section>/…/_index.md`).
    pub(crate) nested: BTreeSet<String>,
}

const NESTED_SUFFIX: &str = "/_index.md";

/// Extract the references of `content` for `section` (`knowledge` or `examples`).
pub(crate) fn extract_index_refs(content: &str, section: &str) -> IndexRefs {
    let mut refs = IndexRefs::default();
    let prefix = format!("{section}/");
    for token in backtick_tokens(content) {
        if !token.starts_with(&prefix) || !token.ends_with(".md") {
            continue;
        }
        if token.ends_with(NESTED_SUFFIX) {
            refs.nested.insert(token.to_string());
        } else {
            refs.files.insert(token.to_string());
        }
    }
    refs.nested.extend(arrow_refs(content, &prefix));
    refs
}

/// All non-overlapping matches of `` `([^`]+)` `` (an empty pair does not match; scanning
/// resumes at its second backtick).
fn backtick_tokens(content: &str) -> Vec<&str> {
    let mut tokens = Vec::new();
    let mut pos = 0;
    while let Some(open_off) = content[pos..].find('`') {
        let open = pos + open_off;
        let body_start = open + 1;
        let Some(close_off) = content[body_start..].find('`') else {
            break;
        };
        let close = body_start + close_off;
        if close == body_start {
            pos = body_start;
            continue;
        }
        tokens.push(&content[body_start..close]);
        pos = close + 1;
    }
    tokens
}

/// Matches of `→\s*详见\s+(<prefix>[^\s`]+/_index\.md)` (group 1), scanning left to right.
fn arrow_refs(content: &str, prefix: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut pos = 0;
    while let Some(arrow_off) = content[pos..].find('→') {
        let arrow = pos + arrow_off;
        let after_arrow = arrow + '→'.len_utf8();
        match arrow_match_at(content, after_arrow, prefix) {
            Some((capture, end)) => {
                found.push(capture.to_string());
                pos = end;
            }
            None => pos = after_arrow,
        }
    }
    found
}

/// Try to match `\s*详见\s+(<prefix>[^\s`]+/_index\.md)` at byte offset `start`.
/// Returns the capture and the end offset of the whole match.
fn arrow_match_at<'a>(content: &'a str, start: usize, prefix: &str) -> Option<(&'a str, usize)> {
    let rest = &content[start..];
    let rest = rest.trim_start_matches(py_isspace);
    let rest = rest.strip_prefix("详见")?;
    let trimmed = rest.trim_start_matches(py_isspace);
    if trimmed.len() == rest.len() {
        return None; // `\s+` needs at least one whitespace character
    }
    let capture_start = content.len() - trimmed.len();
    let after_prefix = trimmed.strip_prefix(prefix)?;
    // `[^\s`]+` is greedy, then backtracks to the last `/_index.md` inside the run.
    let run_len = after_prefix.find(|c: char| py_isspace(c) || c == '`').unwrap_or(after_prefix.len());
    let run = &after_prefix[..run_len];
    let x_len = run.rfind(NESTED_SUFFIX).filter(|&i| i >= 1)?;
    let capture_len = prefix.len() + x_len + NESTED_SUFFIX.len();
    let capture = &content[capture_start..capture_start + capture_len];
    Some((capture, capture_start + capture_len))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn backtick_scanning_matches_python_findall() {
        assert_eq!(backtick_tokens("``a` `b`"), vec!["a", "b"]);
        assert_eq!(backtick_tokens("`x` y `z"), vec!["x"]);
        assert_eq!(backtick_tokens("`a\nb`"), vec!["a\nb"]);
    }

    #[test]
    fn extracts_files_and_nested_indexes() {
        let content = "- `knowledge/a.md` - x\n- `knowledge/g/_index.md` - g\n  → 详见 knowledge/h/_index.md\n- `examples/e.md`\n- `knowledge/b.txt`";
        let refs = extract_index_refs(content, "knowledge");
        assert_eq!(refs.files, set(&["knowledge/a.md"]));
        assert_eq!(refs.nested, set(&["knowledge/g/_index.md", "knowledge/h/_index.md"]));
    }

    #[test]
    fn arrow_regex_backtracks_to_last_index() {
        let refs = extract_index_refs("→详见\u{3000}knowledge/a/_index.md/b/_index.mdx`", "knowledge");
        assert_eq!(refs.nested, set(&["knowledge/a/_index.md/b/_index.md"]));
        // `\s+` is required after 详见, and X must be non-empty.
        assert!(extract_index_refs("→ 详见knowledge/a/_index.md", "knowledge").nested.is_empty());
        assert!(extract_index_refs("→ 详见 knowledge//_index.md", "knowledge").nested.is_empty());
        assert_eq!(
            extract_index_refs("→ 详见 knowledge///_index.md", "knowledge").nested,
            set(&["knowledge///_index.md"])
        );
    }
}
