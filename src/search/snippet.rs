//! Snippets: a short excerpt of a text around its best query match.

use std::collections::{HashMap, HashSet};

use super::tokenize::Tokenizer;

/// Default snippet length in characters (not counting the `…` markers).
pub const SNIPPET_CHARS: usize = 160;

/// Matches beyond this many are ignored when choosing the window.
const MAX_MATCHES: usize = 512;

/// Cuts an excerpt of at most `max_chars` characters from `text`, centred on
/// the window that covers the most query-term weight.
///
/// `terms` maps index terms to their weight. Cuts fall on char boundaries, so
/// CJK and emoji are never split. Runs of whitespace become one space, and
/// `…` marks a cut at either end. Without any match the start of the text is used.
pub fn make_snippet(
    tokenizer: &mut Tokenizer,
    text: &str,
    terms: &HashMap<String, f32>,
    max_chars: usize,
) -> String {
    let char_starts: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    let n = char_starts.len();
    if n <= max_chars {
        return collapse_whitespace(text);
    }
    let char_at = |byte: usize| char_starts.partition_point(|&s| s < byte);

    // (char start, char end, term weight, term key) of each match, in text order.
    let mut matches: Vec<(usize, usize, f32, usize)> = Vec::new();
    let mut keys: HashMap<String, usize> = HashMap::new();
    tokenizer.tokenize(text, |t| {
        if matches.len() >= MAX_MATCHES {
            return;
        }
        if let Some(&w) = terms.get(t.text) {
            let next = keys.len();
            let key = *keys.entry(t.text.to_owned()).or_insert(next);
            matches.push((char_at(t.start), char_at(t.end), w, key));
        }
    });

    let (mut ws, mut we) = (0, 0);
    let mut best = 0.0f32;
    let mut seen = HashSet::new();
    for i in 0..matches.len() {
        seen.clear();
        let mut score = 0.0;
        let mut end = matches[i].1;
        for m in &matches[i..] {
            if m.1.saturating_sub(matches[i].0) > max_chars {
                break;
            }
            if seen.insert(m.3) {
                score += m.2;
            }
            end = end.max(m.1);
        }
        if score > best {
            best = score;
            ws = matches[i].0;
            we = end;
        }
    }

    let pad = max_chars.saturating_sub(we - ws);
    let mut start = ws.saturating_sub(pad / 2);
    let end = (start + max_chars).min(n);
    start = end.saturating_sub(max_chars);
    let byte_start = char_starts[start];
    let byte_end = char_starts.get(end).copied().unwrap_or(text.len());

    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.push_str(&collapse_whitespace(&text[byte_start..byte_end]));
    if end < n {
        out.push('…');
    }
    out
}

/// Trims `s` and replaces every run of whitespace with one space.
fn collapse_whitespace(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for word in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(ts: &[&str]) -> HashMap<String, f32> {
        ts.iter().map(|t| (t.to_string(), 1.0)).collect()
    }

    #[test]
    fn short_text_is_returned_whole() {
        let s = make_snippet(
            &mut Tokenizer::new(),
            "  hello\n world ",
            &terms(&["hello"]),
            160,
        );
        assert_eq!(s, "hello world");
    }

    #[test]
    fn window_centres_on_match_in_long_text() {
        let text = format!(
            "{} needle here {}",
            "filler ".repeat(100),
            "tail ".repeat(100)
        );
        let s = make_snippet(&mut Tokenizer::new(), &text, &terms(&["needl"]), 60);
        assert!(s.contains("needle"), "{s}");
        assert!(s.starts_with('…') && s.ends_with('…'));
        assert!(s.chars().count() <= 62);
    }

    #[test]
    fn cjk_text_is_cut_on_char_boundaries() {
        let text = format!(
            "{}我最喜欢的运动是游泳{}",
            "今天天气很好。".repeat(40),
            "明天见。".repeat(40)
        );
        let s = make_snippet(&mut Tokenizer::new(), &text, &terms(&["游泳"]), 20);
        assert!(s.contains("游泳"), "{s}");
        assert!(s.chars().count() <= 22);
    }

    #[test]
    fn no_match_uses_start() {
        let text = "abc ".repeat(100);
        let s = make_snippet(&mut Tokenizer::new(), &text, &terms(&["zzz"]), 10);
        assert!(s.starts_with("abc") && s.ends_with('…'));
    }
}
