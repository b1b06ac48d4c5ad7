//! Word-level diffs of prose for the history page: a changed file's old and new text, cut into
//! words (a run of letters or digits of a spaced script, each CJK character on its own, each
//! space or punctuation mark) and compared with `similar` (already the crate behind
//! `engram log -p`), shown as `<del>`/`<ins>` with a few words of context around each change.
//! Every piece of text is escaped.

use similar::{ChangeTag, TextDiff};

use super::html::esc;

/// Words of context kept on each side of a change.
const CONTEXT: usize = 8;
/// Files larger than this (either side) are not diffed word by word.
const MAX_BYTES: usize = 64 * 1024;

/// The words of `text`: runs of letters/digits (not CJK), single CJK characters, single others.
fn words(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        let wordy = c.is_alphanumeric() && !crate::search::tokenize::is_cjk(c);
        match (wordy, start) {
            (true, None) => start = Some(i),
            (true, Some(_)) => {}
            (false, s) => {
                if let Some(s) = s {
                    out.push(&text[s..i]);
                    start = None;
                }
                out.push(&text[i..i + c.len_utf8()]);
            }
        }
    }
    if let Some(s) = start {
        out.push(&text[s..]);
    }
    out
}

/// The word diff of `old` → `new` as HTML (`None` when equal or too large to diff here).
pub(crate) fn word_diff(old: &str, new: &str) -> Option<String> {
    if old == new || old.len() > MAX_BYTES || new.len() > MAX_BYTES {
        return None;
    }
    let (a, b) = (words(old), words(new));
    let diff = TextDiff::configure().timeout(std::time::Duration::from_millis(50)).diff_slices(&a, &b);
    let changes: Vec<(ChangeTag, &str)> = diff.iter_all_changes().map(|c| (c.tag(), c.value())).collect();
    let mut out = String::new();
    let mut i = 0;
    while i < changes.len() {
        if changes[i].0 == ChangeTag::Equal {
            let run_end =
                changes[i..].iter().position(|c| c.0 != ChangeTag::Equal).map_or(changes.len(), |p| i + p);
            let run: Vec<&str> = changes[i..run_end].iter().map(|c| c.1).collect();
            let first = i == 0;
            let last = run_end == changes.len();
            let keep_head = if first { 0 } else { CONTEXT };
            let keep_tail = if last { 0 } else { CONTEXT };
            if run.len() > keep_head + keep_tail + 2 {
                out.push_str(&esc(&run[..keep_head].concat()));
                out.push_str("<span class=\"gap\">…</span>");
                out.push_str(&esc(&run[run.len() - keep_tail..].concat()));
            } else {
                out.push_str(&esc(&run.concat()));
            }
            i = run_end;
            continue;
        }
        let tag = changes[i].0;
        let run_end = changes[i..].iter().position(|c| c.0 != tag).map_or(changes.len(), |p| i + p);
        let text: String = changes[i..run_end].iter().map(|c| c.1).collect();
        let el = if tag == ChangeTag::Delete { "del" } else { "ins" };
        out.push_str(&format!("<{el}>{}</{el}>", esc(&text)));
        i = run_end;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_spaced_and_cjk_text() {
        assert_eq!(words("The user walks."), vec!["The", " ", "user", " ", "walks", "."]);
        assert_eq!(words("用户喜欢 tea"), vec!["用", "户", "喜", "欢", " ", "tea"]);
    }

    #[test]
    fn a_changed_word_is_marked_and_text_is_escaped() {
        let d = word_diff("The user walks to <work>.", "The user cycles to <work>.").unwrap();
        assert!(d.contains("<del>walks</del><ins>cycles</ins>"), "{d}");
        assert!(d.contains("&lt;work&gt;"), "{d}");
        let d = word_diff("用户喜欢绿茶", "用户喜欢红茶").unwrap();
        assert!(d.contains("<del>绿</del><ins>红</ins>"), "{d}");
        assert!(word_diff("same", "same").is_none());
    }

    #[test]
    fn long_unchanged_runs_are_cut() {
        let old = format!("{} end", "word ".repeat(100));
        let new = format!("{} END", "word ".repeat(100));
        let d = word_diff(&old, &new).unwrap();
        assert!(d.contains('…') && d.len() < 300, "{d}");
    }
}
