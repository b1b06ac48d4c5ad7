//! Plain text out of Markdown, for the text engram generates from documents (index
//! summaries of `knowledge import` and `build`, the heuristic rules and steps of `build`).
//!
//! A line cut at a character count can end inside a code span, and one unbalanced backtick
//! in an index makes the Engram linter pair it with the next line's path: the chapter after
//! it reads as an orphan. So generated text is plain (Markdown parsed by pulldown-cmark,
//! code spans and links reduced to their text, no backticks) and cut at a sentence, else a
//! word, boundary. Chinese and English.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// What a block of text was in the document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    /// A paragraph.
    Paragraph,
    /// A list item (its own text, not its nested lists'); `ordered` for `1.` lists.
    Item {
        /// The item is in a numbered list.
        ordered: bool,
    },
}

/// A paragraph or list item of a document, as plain text on one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// Where the text was.
    pub kind: BlockKind,
    /// The text: inline Markdown reduced to its words, line breaks as spaces.
    pub text: String,
}

/// The paragraphs and list items of `markdown`, in order, as plain text. Headings, code
/// blocks, tables, HTML and images are left out.
pub fn blocks(markdown: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut current: Option<Block> = None;
    let mut lists: Vec<bool> = Vec::new();
    let mut skipped = 0usize;
    let flush = |current: &mut Option<Block>, out: &mut Vec<Block>| {
        if let Some(mut b) = current.take() {
            b.text = b.text.split_whitespace().collect::<Vec<_>>().join(" ").replace('`', "");
            if !b.text.is_empty() {
                out.push(b);
            }
        }
    };
    for event in Parser::new_ext(markdown, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::Heading { .. } | Tag::CodeBlock(_) | Tag::Table(_) | Tag::Image { .. })
            | Event::Start(Tag::HtmlBlock) => skipped += 1,
            Event::End(TagEnd::Heading(_) | TagEnd::CodeBlock | TagEnd::Table | TagEnd::Image)
            | Event::End(TagEnd::HtmlBlock) => skipped = skipped.saturating_sub(1),
            _ if skipped > 0 => {}
            Event::Start(Tag::List(first)) => {
                flush(&mut current, &mut out);
                lists.push(first.is_some());
            }
            Event::End(TagEnd::List(_)) => {
                flush(&mut current, &mut out);
                lists.pop();
            }
            Event::Start(Tag::Item) => {
                flush(&mut current, &mut out);
                let ordered = lists.last().copied().unwrap_or(false);
                current = Some(Block { kind: BlockKind::Item { ordered }, text: String::new() });
            }
            Event::End(TagEnd::Item) => flush(&mut current, &mut out),
            Event::Start(Tag::Paragraph) if current.is_none() => {
                current = Some(Block { kind: BlockKind::Paragraph, text: String::new() });
            }
            Event::End(TagEnd::Paragraph) => match &mut current {
                Some(Block { kind: BlockKind::Paragraph, .. }) => flush(&mut current, &mut out),
                Some(b) => b.text.push(' '),
                None => {}
            },
            Event::Text(t) | Event::Code(t) => {
                if let Some(b) = current.as_mut() {
                    b.text.push_str(&t);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some(b) = current.as_mut() {
                    b.text.push(' ');
                }
            }
            _ => {}
        }
    }
    flush(&mut current, &mut out);
    out
}

/// Closing quotes and brackets, which stay with the sentence they close.
const CLOSERS: &[char] = &['」', '』', '”', '’', '"', '\'', ')', '）'];

/// Words before a `.` that do not end a sentence.
const ABBREVIATIONS: &[&str] =
    &["e.g", "i.e", "etc", "vs", "mr", "mrs", "ms", "dr", "st", "no", "fig", "cf", "approx"];

/// Whether a `.` at byte `at` of `text` ends a sentence: something follows only after
/// whitespace, the next word does not start in lower case, and the word before is not an
/// abbreviation or an initial.
fn ends_sentence(text: &str, at: usize) -> bool {
    let after = text[at + 1..].trim_start_matches(CLOSERS);
    if !after.is_empty() && !after.starts_with(char::is_whitespace) {
        return false;
    }
    if after.trim_start().starts_with(char::is_lowercase) {
        return false;
    }
    let word: String = text[..at]
        .chars()
        .rev()
        .take_while(|c| c.is_alphanumeric() || *c == '.')
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let word = word.to_lowercase();
    !(ABBREVIATIONS.contains(&word.as_str())
        || word.chars().count() == 1 && word.chars().all(char::is_alphabetic))
}

/// The sentences of a plain text, each trimmed (closing quotes and brackets stay with their
/// sentence). Chinese sentences end at `。！？`, English ones at `. ! ?` before a space.
pub fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let end = match c {
            '。' | '！' | '？' | '!' | '?' => true,
            '.' => ends_sentence(text, i),
            _ => false,
        };
        if !end {
            continue;
        }
        let mut stop = i + c.len_utf8();
        while let Some(&(j, q)) = chars.peek() {
            if !CLOSERS.contains(&q) && !matches!(q, '!' | '?' | '！' | '？') {
                break;
            }
            stop = j + q.len_utf8();
            chars.next();
        }
        let s = text[start..stop].trim();
        if !s.is_empty() {
            out.push(s);
        }
        start = stop;
    }
    let rest = text[start..].trim();
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// `text` in at most `max` characters: whole sentences when the first fits, else cut at the
/// last space (for Chinese, any character) with `…`.
pub fn fit(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= max {
        return text.to_owned();
    }
    // The sentences are slices of `text`: keep it up to the end of the last that fits.
    let end = sentences(text)
        .into_iter()
        .map(|s| s.as_ptr() as usize - text.as_ptr() as usize + s.len())
        .take_while(|&end| text[..end].chars().count() <= max)
        .last();
    if let Some(end) = end {
        return text[..end].to_owned();
    }
    let head: String = text.chars().take(max.saturating_sub(1)).collect();
    let at_space = head.rfind(char::is_whitespace).filter(|&i| head[..i].chars().count() * 2 >= max);
    let head = at_space.map_or(head.as_str(), |i| &head[..i]);
    format!("{}…", head.trim_end_matches(|c: char| c.is_whitespace() || c.is_ascii_punctuation()))
}

/// The first paragraph or list item of `markdown` as a plain one-line summary of at most
/// `max` characters (see [`fit`]); empty when the document has no text outside headings
/// and code.
pub fn summary(markdown: &str, max: usize) -> String {
    blocks(markdown).first().map(|b| fit(&b.text, max)).unwrap_or_default()
}

/// Whether the texts are mostly Chinese (CJK characters against Latin letters, 1:3): the
/// language engram writes generated headings and joiners in.
pub fn mostly_chinese<'a>(texts: impl IntoIterator<Item = &'a str>) -> bool {
    let (mut cjk, mut latin) = (0usize, 0usize);
    for c in texts.into_iter().flat_map(str::chars) {
        if crate::search::tokenize::is_cjk(c) {
            cjk += 1;
        } else if c.is_ascii_alphabetic() {
            latin += 1;
        }
    }
    cjk * 3 >= latin
}

/// Inline Markdown (a heading's text, a title) as plain text on one line.
pub fn plain_inline(text: &str) -> String {
    let mut out = String::new();
    for event in Parser::new(&crate::memory::single_line(text)) {
        if let Event::Text(t) | Event::Code(t) = event {
            out.push_str(&t);
        }
    }
    let out = out.replace('`', "");
    if out.trim().is_empty() {
        crate::memory::single_line(text).replace('`', "")
    } else {
        out.trim().to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_plain_text_without_headings_code_or_tables() {
        let md = "# Title\n\nThe store (`src/store/`) is\nwrapped [here](x.md).\n\n```\ncode\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n1. First step.\n2. Second `step`.\n   - nested\n\n- loose\n\n  item two paras\n";
        let b = blocks(md);
        assert_eq!(
            b[0],
            Block { kind: BlockKind::Paragraph, text: "The store (src/store/) is wrapped here.".into() }
        );
        assert_eq!(b[1].text, "First step.");
        assert_eq!(b[1].kind, BlockKind::Item { ordered: true });
        assert_eq!(b[2].text, "Second step.");
        assert_eq!(b[3], Block { kind: BlockKind::Item { ordered: false }, text: "nested".into() });
        assert_eq!(b[4].text, "loose item two paras");
        assert_eq!(b.len(), 5);
    }

    #[test]
    fn sentences_end_at_terminators_not_at_abbreviations_or_versions() {
        assert_eq!(
            sentences("Use e.g. git 2.47 here. Then stop! 然后休息。再来？ Dr. Who said “yes.” Fine"),
            ["Use e.g. git 2.47 here.", "Then stop!", "然后休息。", "再来？", "Dr. Who said “yes.”", "Fine"]
        );
        assert_eq!(sentences("Files like a.md and b.txt stay."), ["Files like a.md and b.txt stay."]);
    }

    #[test]
    fn fit_keeps_whole_sentences_else_cuts_at_a_word() {
        assert_eq!(fit("One two. Three four five six.", 12), "One two.");
        assert_eq!(fit("alpha beta gamma delta epsilon", 20), "alpha beta gamma…");
        assert_eq!(fit("第一句话很长很长很长很长。第二句。", 8), "第一句话很长很…");
        assert_eq!(fit("短句。第二句。", 20), "短句。第二句。");
    }

    #[test]
    fn a_summary_never_holds_a_backtick() {
        let md = "## The store\n\n1. `mcp/call_gate.rs` checks raw arguments (`ops::limits::check_args`) before anything else.";
        let s = summary(md, 60);
        assert!(!s.contains('`') && s.chars().count() <= 60, "{s}");
        assert_eq!(plain_inline("The store (`src/store/`)"), "The store (src/store/)");
    }
}
