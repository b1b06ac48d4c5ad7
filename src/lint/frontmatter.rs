//! Parsing of the `uses` list from a case file's YAML-ish frontmatter, exactly as the reference
//! linter does it (no YAML parser: line-based, Python `strip`/`splitlines` semantics).

use super::pytext::{py_splitlines, py_strip};

/// Return the `uses` entries of `content`'s frontmatter.
///
/// Line 1 must strip to `---`; the block ends at the next line stripping to `---` (no closing
/// line means no frontmatter). In the first line starting `uses:`, an inline `[a, b]` list is
/// split on commas (entries stripped, empties dropped); otherwise following lines are read as a
/// block list: blank lines are skipped, `- x` lines give `x`, any other line ends the list.
pub(crate) fn parse_uses(content: &str) -> Vec<String> {
    let lines = py_splitlines(content);
    if lines.first().is_none_or(|first| py_strip(first) != "---") {
        return Vec::new();
    }
    let Some(end) = lines.iter().skip(1).position(|l| py_strip(l) == "---") else {
        return Vec::new();
    };
    // Lines between the opening and the closing `---`.
    let frontmatter = lines.iter().skip(1).take(end);

    let mut rest = frontmatter.skip_while(|l| !py_strip(l).starts_with("uses:"));
    let Some(first) = rest.next() else {
        return Vec::new();
    };
    let after_key = py_strip(first).strip_prefix("uses:").unwrap_or_default();
    let inline = py_strip(after_key);
    if let Some(items) = inline.strip_prefix('[').and_then(|i| i.strip_suffix(']')) {
        return items.split(',').map(py_strip).filter(|item| !item.is_empty()).map(str::to_string).collect();
    }

    let mut uses = Vec::new();
    for line in rest {
        let entry = py_strip(line);
        if entry.is_empty() {
            continue;
        }
        match entry.strip_prefix("- ") {
            Some(item) => uses.push(py_strip(item).to_string()),
            None => break,
        }
    }
    uses
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_and_inline_forms() {
        let block = "---\nid: x\nuses:\n  - knowledge/a.md\n\n  - knowledge/b.md \ntags:\n  - t\n---\nbody";
        assert_eq!(parse_uses(block), vec!["knowledge/a.md", "knowledge/b.md"]);
        let inline = "---\nuses: [knowledge/a.md, , knowledge/b.md ]\n---\n";
        assert_eq!(parse_uses(inline), vec!["knowledge/a.md", "knowledge/b.md"]);
    }

    #[test]
    fn no_frontmatter_or_unclosed() {
        assert!(parse_uses("uses:\n - a").is_empty());
        assert!(parse_uses("---\nuses:\n  - a\n").is_empty());
        assert!(parse_uses("\u{feff}---\nuses: [a]\n---").is_empty());
        assert!(parse_uses("").is_empty());
    }

    #[test]
    fn only_first_uses_line_counts_and_dash_alone_ends_block() {
        let text = "---\nuses:\n  -\n  - a\nuses: [b]\n---";
        assert!(parse_uses(text).is_empty());
        let text = "---\nuses: []\nuses: [b]\n---";
        assert!(parse_uses(text).is_empty());
        let text = "---\nuses: [a\n  - b\n---";
        assert_eq!(parse_uses(text), vec!["b"]);
    }
}
