//! The Engram memory format: entry blocks, index lines and the hot index.
//!
//! Pure functions only: no IO, no git. Everything here renders or parses
//! text exactly as the reference Python Engram server does, so packs stay
//! readable by it (see `ARCHITECTURE.md` § Format).

use chrono::NaiveDate;

/// How many entry lines the hot index (`memory/_index.md`) keeps.
pub const HOT_INDEX_LIMIT: usize = 50;
/// From this many active hot entries on, `load_engram` suggests consolidation.
pub const CONSOLIDATE_HINT_THRESHOLD: usize = 30;
/// The separator between entry blocks in a category file.
pub const BLOCK_SEPARATOR: &str = "\n---\n";

/// The metadata of one memory entry, as written in its block's first line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryMeta {
    /// `YYYY-MM-DD HH:MM`, UTC.
    pub ts: String,
    /// Free memory type (`preference`, `fact`, … or `consolidated`).
    pub memory_type: String,
    /// Expiry date `YYYY-MM-DD`, if any.
    pub expires: Option<String>,
    /// Tags, in the caller's order.
    pub tags: Vec<String>,
    /// Conversation id, if given.
    pub conversation_id: Option<String>,
}

impl EntryMeta {
    /// Renders the block's first line: `[<ts>] type:<t>[ expires:<e>][ tags:<a,b>][ conv:<c>]`.
    pub fn render_line(&self) -> String {
        let mut line = format!("[{}] type:{}", self.ts, self.memory_type);
        if let Some(expires) = &self.expires {
            line.push_str(" expires:");
            line.push_str(expires);
        }
        if !self.tags.is_empty() {
            line.push_str(" tags:");
            line.push_str(&self.tags.join(","));
        }
        if let Some(conv) = &self.conversation_id {
            line.push_str(" conv:");
            line.push_str(conv);
        }
        line
    }

    /// Parses a block's first line; `None` when it is not a meta line.
    pub fn parse_line(line: &str) -> Option<Self> {
        let line = line.trim();
        let rest = line.strip_prefix('[')?;
        let (ts, rest) = rest.split_once(']')?;
        if !is_timestamp(ts) {
            return None;
        }
        let mut meta = Self {
            ts: ts.to_owned(),
            memory_type: String::new(),
            expires: None,
            tags: Vec::new(),
            conversation_id: None,
        };
        for word in rest.split(' ').filter(|w| !w.is_empty()) {
            if let Some(t) = word.strip_prefix("type:") {
                meta.memory_type = t.to_owned();
            } else if let Some(e) = word.strip_prefix("expires:") {
                meta.expires = Some(e.to_owned());
            } else if let Some(t) = word.strip_prefix("tags:") {
                meta.tags = t.split(',').map(str::to_owned).collect();
            } else if let Some(c) = word.strip_prefix("conv:") {
                meta.conversation_id = Some(c.to_owned());
            }
        }
        Some(meta)
    }

    /// The part of the identity an index line and its block share.
    fn key(&self) -> (String, String, Option<String>, Vec<String>) {
        (self.ts.clone(), self.memory_type.clone(), self.expires.clone(), self.tags.clone())
    }
}

/// True for `YYYY-MM-DD HH:MM`.
pub fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 16
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b' ',
            13 => *c == b':',
            _ => c.is_ascii_digit(),
        })
}

/// Renders an entry block as appended to `<category>.md`.
pub fn render_block(meta: &EntryMeta, content: &str) -> String {
    format!("{BLOCK_SEPARATOR}{}\n{}\n", meta.render_line(), entry_text(content))
}

/// One block of a category file: its meta line (when it has one) and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The block text without the surrounding separators, stripped.
    pub text: String,
    /// Parsed meta line, if the block starts with one.
    pub meta: Option<EntryMeta>,
}

impl Block {
    /// The block's content: everything after the meta line.
    pub fn content(&self) -> &str {
        match (&self.meta, self.text.split_once('\n')) {
            (Some(_), Some((_, rest))) => rest.trim(),
            (Some(_), None) => "",
            (None, _) => self.text.as_str(),
        }
    }
}

/// The text of an entry as stored in its block: CRLF and lone CR → LF, trimmed, and every
/// line that is exactly `---` (the block separator) written as `- - -` (the
/// same Markdown rule), so content can never split its block or forge another entry.
pub fn entry_text(content: &str) -> String {
    let normalized = content.replace("\r\n", "\n").replace('\r', "\n");
    let trimmed = normalized.trim();
    if !trimmed.lines().any(|l| l == "---") {
        return trimmed.to_owned();
    }
    trimmed.lines().map(|l| if l == "---" { "- - -" } else { l }).collect::<Vec<_>>().join("\n")
}

/// Trims a block and drops `---` lines at its edges: a block can only carry one where the
/// file starts with `---` or ends with `\n---` and no newline — both are separators, and a
/// rewrite would render them as such (this keeps parse → render → parse stable).
fn strip_separator_lines(block: &str) -> &str {
    let mut b = block.trim();
    loop {
        let before = b.len();
        if b == "---" {
            return "";
        }
        if let Some(rest) = b.strip_prefix("---\n") {
            b = rest.trim();
        }
        if let Some(rest) = b.strip_suffix("\n---") {
            b = rest.trim();
        }
        if b.len() == before {
            return b;
        }
    }
}

/// Splits a category file into its non-empty blocks, as the reference does.
pub fn parse_blocks(text: &str) -> Vec<Block> {
    split_blocks(text).blocks.into_iter().map(|(_, b)| b).collect()
}

/// A category file split into its blocks, each with the exact text it occupies in
/// the file, so a rewrite can keep the bytes of every block it does not change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitBlocks<'a> {
    /// The text before the first block (separators and blank lines only).
    pub lead: &'a str,
    /// Each block with its text in the file: from the separator before it (none for
    /// a block at the very start) up to the next block's separator, so `lead` and
    /// the raw texts, concatenated, are the file.
    pub blocks: Vec<(&'a str, Block)>,
}

/// The length of the line break at byte `i` (`\r\n`, `\n` or a lone `\r`), 0 if none.
fn line_break_at(b: &[u8], i: usize) -> usize {
    match b.get(i) {
        Some(b'\n') => 1,
        Some(b'\r') if b.get(i + 1) == Some(&b'\n') => 2,
        Some(b'\r') => 1,
        _ => 0,
    }
}

/// Splits a category file as [`parse_blocks`] does — on `---` lines between line
/// breaks, where Python's universal newlines make `\r\n` and a lone `\r` line
/// breaks too — keeping each block's exact text.
pub fn split_blocks(text: &str) -> SplitBlocks<'_> {
    let b = text.as_bytes();
    // (where a separator starts, where the text after it starts)
    let mut cuts: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let lb = line_break_at(b, i);
        if lb == 0 {
            i += 1;
            continue;
        }
        let dashes = i + lb;
        if b.get(dashes..dashes + 3) == Some(b"---".as_slice()) {
            let after = line_break_at(b, dashes + 3);
            if after > 0 {
                cuts.push((i, dashes + 3 + after));
                i = dashes + 3 + after;
                continue;
            }
        }
        i += lb;
    }
    // Pieces: (raw start, content start, end).
    let mut pieces = Vec::with_capacity(cuts.len() + 1);
    let first_end = cuts.first().map_or(b.len(), |c| c.0);
    pieces.push((0, 0, first_end));
    for (k, &(sep, content)) in cuts.iter().enumerate() {
        let end = cuts.get(k + 1).map_or(b.len(), |c| c.0);
        pieces.push((sep, content, end));
    }
    let mut lead_end = None;
    let mut blocks: Vec<(usize, Block)> = Vec::new();
    for (start, content, end) in pieces {
        let piece = &text[content..end];
        let normalized;
        let piece = if piece.contains('\r') {
            normalized = piece.replace("\r\n", "\n").replace('\r', "\n");
            normalized.as_str()
        } else {
            piece
        };
        let stripped = strip_separator_lines(piece);
        if stripped.is_empty() {
            // Blank or a stray separator: it stays with the block before it (or the lead).
            continue;
        }
        lead_end.get_or_insert(start);
        blocks.push((
            start,
            Block {
                text: stripped.to_owned(),
                meta: stripped.lines().next().and_then(EntryMeta::parse_line),
            },
        ));
    }
    let starts: Vec<usize> = blocks.iter().map(|(s, _)| *s).collect();
    let blocks = blocks
        .into_iter()
        .enumerate()
        .map(|(k, (start, block))| (&text[start..starts.get(k + 1).copied().unwrap_or(b.len())], block))
        .collect();
    SplitBlocks { lead: &text[..lead_end.unwrap_or(b.len())], blocks }
}

/// Renders blocks back into a category file (the reference's normal form).
pub fn render_blocks(blocks: &[Block]) -> String {
    blocks.iter().map(|b| format!("{BLOCK_SEPARATOR}{}\n", b.text)).collect()
}

/// A parsed entry line of `_index.md` / `_index_full.md`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IndexEntry {
    /// Category (file stem under `memory/`).
    pub category: String,
    /// `YYYY-MM-DD HH:MM`.
    pub ts: String,
    /// Memory type in brackets.
    pub memory_type: String,
    /// Expiry date, when the line carries a well-formed one right after the type.
    pub expires: Option<String>,
    /// Tags in brackets, when present.
    pub tags: Vec<String>,
    /// The summary text, stripped.
    pub summary: String,
}

impl IndexEntry {
    /// Renders the line written by capture (without the newline).
    pub fn render(&self) -> String {
        let mut line = format!("- `memory/{}.md` [{}] [{}]", self.category, self.ts, self.memory_type);
        if let Some(e) = &self.expires {
            line.push_str(" expires:");
            line.push_str(e);
        }
        if !self.tags.is_empty() {
            line.push_str(" [");
            line.push_str(&self.tags.join(","));
            line.push(']');
        }
        line.push(' ');
        line.push_str(self.summary.trim());
        line
    }

    /// True when this index entry describes that block meta.
    pub fn describes(&self, meta: &EntryMeta) -> bool {
        (self.ts.clone(), self.memory_type.clone(), self.expires.clone(), self.tags.clone()) == meta.key()
    }
}

/// The reference's entry-line test: the stripped line starts with ``- `memory/``.
pub fn is_entry_line(line: &str) -> bool {
    line.trim().starts_with("- `memory/")
}

/// Parses an index line the way the reference's regex does (unanchored search on the stripped line).
pub fn parse_index_line(line: &str) -> Option<IndexEntry> {
    parse_index_line_ref(line).map(|e| IndexEntry {
        category: e.category.to_owned(),
        ts: e.ts.to_owned(),
        memory_type: e.memory_type.to_owned(),
        expires: e.expires.map(str::to_owned),
        tags: e.tags.map(|t| t.split(',').map(str::to_owned).collect()).unwrap_or_default(),
        summary: e.summary.to_owned(),
    })
}

/// An index line's fields, borrowed from the line (see [`IndexEntry`]).
struct IndexLineRef<'a> {
    category: &'a str,
    ts: &'a str,
    memory_type: &'a str,
    expires: Option<&'a str>,
    /// The text between the tag brackets (comma-separated), when there are tags.
    tags: Option<&'a str>,
    summary: &'a str,
}

/// [`parse_index_line`] without copying anything out of the line.
fn parse_index_line_ref(line: &str) -> Option<IndexLineRef<'_>> {
    let line = line.trim();
    let mut search_from = 0;
    while let Some(pos) = line[search_from..].find("- `memory/") {
        let start = search_from + pos;
        if let Some(entry) = parse_index_at(&line[start + "- `memory/".len()..]) {
            return Some(entry);
        }
        search_from = start + 1;
    }
    None
}

fn parse_index_at(rest: &str) -> Option<IndexLineRef<'_>> {
    let (path, rest) = rest.split_once('`')?;
    let category = path.strip_suffix(".md")?;
    if category.is_empty() {
        return None;
    }
    let rest = rest.strip_prefix(" [")?;
    let ts = rest.get(..16)?;
    if !is_timestamp(ts) {
        return None;
    }
    let rest = rest[16..].strip_prefix("] [")?;
    let (memory_type, mut rest) = rest.split_once(']')?;
    if memory_type.is_empty() {
        return None;
    }
    let mut expires = None;
    if let Some(after) = rest.strip_prefix(" expires:")
        && let Some(date) = after.get(..10)
        && is_date(date)
    {
        expires = Some(date);
        rest = &after[10..];
    }
    let mut tags = None;
    if let Some(after) = rest.strip_prefix(" [")
        && let Some((inner, tail)) = after.split_once(']')
        && !inner.is_empty()
    {
        tags = Some(inner);
        rest = tail;
    }
    Some(IndexLineRef { category, ts, memory_type, expires, tags, summary: rest.trim() })
}

/// True for `YYYY-MM-DD` (digits and dashes in place; not a calendar check).
pub fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            _ => c.is_ascii_digit(),
        })
}

/// The reference's expiry test: the first `expires:YYYY-MM-DD` anywhere in
/// the line is a valid date strictly before `today` (UTC).
pub fn is_expired(line: &str, today: NaiveDate) -> bool {
    let Some(pos) = line.find("expires:") else {
        return false;
    };
    let mut from = pos;
    loop {
        let after = &line[from + "expires:".len()..];
        if let Some(date) = after.get(..10)
            && is_date(date)
        {
            return NaiveDate::parse_from_str(date, "%Y-%m-%d").is_ok_and(|d| d < today);
        }
        match after.find("expires:") {
            Some(next) => from = from + "expires:".len() + next,
            None => return false,
        }
    }
}

/// Builds the hot index from the full index's lines (oldest first) as the reference does.
///
/// `latest_by_category` may carry categories whose newest entry is no longer in
/// `full_lines` (rolled into a segment); entries in `full_lines` override them.
pub fn render_hot_index(
    full_entry_lines: &[&str],
    older_latest: &std::collections::BTreeMap<String, IndexEntry>,
) -> String {
    // category → (ts, type, summary) of its newest entry, borrowed (this runs on every capture).
    let mut latest: std::collections::BTreeMap<&str, (&str, &str, &str)> = older_latest
        .iter()
        .map(|(category, e)| (category.as_str(), (e.ts.as_str(), e.memory_type.as_str(), e.summary.as_str())))
        .collect();
    for line in full_entry_lines {
        if let Some(e) = parse_index_line_ref(line) {
            latest.insert(e.category, (e.ts, e.memory_type, e.summary));
        }
    }
    let hot_start = full_entry_lines.len().saturating_sub(HOT_INDEX_LIMIT);
    let mut out = String::new();
    if !latest.is_empty() {
        out.push_str("## 分类摘要\n");
        for (category, (ts, memory_type, summary)) in &latest {
            let summary = if summary.is_empty() { "(无摘要)" } else { summary };
            for part in ["- `", category, "` [", ts, "] [", memory_type, "] ", summary, "\n"] {
                out.push_str(part);
            }
        }
        out.push_str(&format!("\n## 最近记忆（最多{HOT_INDEX_LIMIT}条）\n"));
    }
    for line in &full_entry_lines[hot_start..] {
        out.push_str(line.trim_end_matches('\n'));
        out.push('\n');
    }
    out
}

/// Parses the `## 分类摘要` section of a hot index back into per-category entries.
pub fn parse_category_summary(hot: &str) -> std::collections::BTreeMap<String, IndexEntry> {
    let mut out = std::collections::BTreeMap::new();
    let mut in_section = false;
    for line in hot.lines() {
        let t = line.trim();
        if t.starts_with("## ") {
            in_section = t == "## 分类摘要";
            continue;
        }
        if !in_section {
            continue;
        }
        let Some(rest) = t.strip_prefix("- `") else { continue };
        let Some((category, rest)) = rest.split_once("` [") else { continue };
        let Some(ts) = rest.get(..16).filter(|ts| is_timestamp(ts)) else { continue };
        let Some((memory_type, summary)) = rest[16..].strip_prefix("] [").and_then(|r| r.split_once(']'))
        else {
            continue;
        };
        let summary = summary.trim();
        out.insert(
            category.to_owned(),
            IndexEntry {
                category: category.to_owned(),
                ts: ts.to_owned(),
                memory_type: memory_type.to_owned(),
                expires: None,
                tags: Vec::new(),
                summary: if summary == "(无摘要)" { String::new() } else { summary.to_owned() },
            },
        );
    }
    out
}

/// Compacts whitespace runs into one space and strips (summaries, tags, single-line fields).
pub fn single_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> EntryMeta {
        EntryMeta {
            ts: "2026-02-25 10:00".into(),
            memory_type: "preference".into(),
            expires: None,
            tags: vec!["fitness".into()],
            conversation_id: None,
        }
    }

    #[test]
    fn block_renders_like_the_reference() {
        assert_eq!(
            render_block(&meta(), "  喜欢早上训练\n"),
            "\n---\n[2026-02-25 10:00] type:preference tags:fitness\n喜欢早上训练\n"
        );
    }

    #[test]
    fn blocks_round_trip() {
        let text = format!("{}{}", render_block(&meta(), "a"), render_block(&meta(), "b\nc"));
        let blocks = parse_blocks(&text);
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[1].content(), "b\nc");
        assert_eq!(blocks[0].meta.as_ref(), Some(&meta()));
        assert_eq!(render_blocks(&blocks), text);
    }

    /// The raw split keeps every byte, and parses as the plain `\n---\n` split of the
    /// normalised text does (the reference's rule), whatever the spacing and line endings.
    #[test]
    fn raw_split_keeps_the_bytes_and_parses_like_the_reference() {
        let reference = |text: &str| -> Vec<String> {
            let normalized = text.replace("\r\n", "\n").replace('\r', "\n");
            normalized
                .split(BLOCK_SEPARATOR)
                .map(strip_separator_lines)
                .filter(|b| !b.is_empty())
                .map(str::to_owned)
                .collect()
        };
        let texts = [
            "",
            "\n",
            "\n---\n",
            "---\n[2026-02-25 10:00] type:fact\na\n---\nb",
            "\n---\na\n\n\n---\n\n---\nb\n\n",
            "\r\n---\r\na\r\n---\r\nb\r\n",
            "x\r---\rc\r\r\n---\n---\nd\n---",
            "前言\n---\n[2026-02-25 10:00] type:fact tags:a\n内容\n- - -\n---\n",
            "\n---\n---\n---\n",
        ];
        for text in texts {
            let split = split_blocks(text);
            let joined: String =
                std::iter::once(split.lead).chain(split.blocks.iter().map(|(r, _)| *r)).collect();
            assert_eq!(joined, text, "{text:?}");
            let parsed: Vec<String> = split.blocks.iter().map(|(_, b)| b.text.clone()).collect();
            assert_eq!(parsed, reference(text), "{text:?}");
        }
    }

    #[test]
    fn index_line_round_trips() {
        let line = "- `memory/user-profile.md` [2026-02-25 09:40] [inferred] expires:2026-04-01 [recovery] 近期可能处于恢复期";
        let e = parse_index_line(line).expect("parses");
        assert_eq!(e.category, "user-profile");
        assert_eq!(e.expires.as_deref(), Some("2026-04-01"));
        assert_eq!(e.tags, vec!["recovery"]);
        assert_eq!(e.summary, "近期可能处于恢复期");
        assert_eq!(e.render(), line);
    }

    #[test]
    fn index_line_quirks_match_the_reference() {
        // A malformed expiry stays in the summary.
        let e =
            parse_index_line("- `memory/a.md` [2026-02-25 09:40] [x] expires:2026-6-1 s").expect("parses");
        assert_eq!(e.summary, "expires:2026-6-1 s");
        assert!(parse_index_line("## 动态记忆").is_none());
    }

    #[test]
    fn expiry_uses_the_first_valid_date_before_today() {
        let today = NaiveDate::from_ymd_opt(2026, 11, 22).expect("date");
        assert!(is_expired("x expires:2026-04-01 y", today));
        assert!(!is_expired("x expires:2026-11-22", today));
        assert!(!is_expired("x expires:2026-02-30", today));
        assert!(!is_expired("no expiry", today));
    }

    #[test]
    fn hot_index_has_summary_and_recent_lines() {
        let line = "- `memory/preferences.md` [2026-02-25 10:00] [preference] [fitness] 喜欢早上训练";
        let hot = render_hot_index(&[line], &Default::default());
        assert_eq!(
            hot,
            "## 分类摘要\n- `preferences` [2026-02-25 10:00] [preference] 喜欢早上训练\n\n## 最近记忆（最多50条）\n- `memory/preferences.md` [2026-02-25 10:00] [preference] [fitness] 喜欢早上训练\n"
        );
        let parsed = parse_category_summary(&hot);
        assert_eq!(parsed["preferences"].summary, "喜欢早上训练");
    }
}
