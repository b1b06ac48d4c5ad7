//! Markdown files with a flat YAML front matter (`---\n…\n---\n` then the body).
//!
//! The block is split by hand and its YAML parsed and rendered with
//! `serde-saphyr`, so a person can edit the file in any editor. Pure: no I/O.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// A file split into its front matter (YAML text, without the fences) and its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split<'a> {
    /// The YAML between the fences (`None` when the file has no front matter).
    pub yaml: Option<&'a str>,
    /// Everything after the closing fence (or the whole file).
    pub body: &'a str,
}

/// Splits `text` into front matter and body. A file that does not start with a
/// `---` line, or has no closing `---` line, is all body.
pub fn split(text: &str) -> Split<'_> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text.strip_prefix("---\n").or_else(|| text.strip_prefix("---\r\n")) else {
        return Split { yaml: None, body: text };
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            let body = &rest[offset + line.len()..];
            return Split { yaml: Some(&rest[..offset]), body };
        }
        offset += line.len();
    }
    Split { yaml: None, body: text }
}

/// Parses the front matter of `text` as `T`; returns the parse error's text on failure.
pub fn parse<T: DeserializeOwned>(yaml: &str) -> Result<T, String> {
    if yaml.trim().is_empty() {
        return serde_saphyr::from_str::<T>("{}").map_err(|e| e.to_string());
    }
    serde_saphyr::from_str::<T>(yaml).map_err(|e| e.to_string())
}

/// Renders `meta` as front matter followed by `body` (which gets a final newline).
pub fn render<T: Serialize>(meta: &T, body: &str) -> Result<String, String> {
    let yaml = serde_saphyr::to_string(meta).map_err(|e| e.to_string())?;
    let mut out = String::with_capacity(yaml.len() + body.len() + 16);
    out.push_str("---\n");
    out.push_str(&yaml);
    if !yaml.ends_with('\n') {
        out.push('\n');
    }
    out.push_str("---\n");
    out.push_str(body.trim_end_matches('\n'));
    out.push('\n');
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Serialize, Deserialize, PartialEq)]
    struct Meta {
        id: String,
        title: String,
        pinned: bool,
    }

    #[test]
    fn round_trips_chinese_and_awkward_titles() {
        let meta =
            Meta {
                id: "a1".into(), title: "需要: 引号 \"quoted\" # not a comment".into(), pinned: false
            };
        let text = render(&meta, "正文\n第二行").expect("render");
        assert!(text.contains("pinned: false"), "{text}");
        let s = split(&text);
        assert_eq!(s.body, "正文\n第二行\n");
        assert_eq!(parse::<Meta>(s.yaml.expect("yaml")).expect("parse"), meta);
    }

    #[test]
    fn files_without_front_matter_are_all_body() {
        assert_eq!(split("# title\nbody").yaml, None);
        assert_eq!(split("---\nno closing fence").yaml, None);
        assert_eq!(split("---\n---\nbody").yaml, Some(""));
    }
}
