//! Chaptered knowledge: a large document becomes `knowledge/<doc>/NN-<chapter>.md`,
//! a chapter index `knowledge/<doc>/_index.md` (one line per chapter) and one line in
//! `knowledge/_index.md`, in one commit (`engram knowledge import`, and `add_knowledge`
//! with a document over [`SPLIT_BYTES`]). A document is split at its chapter headings;
//! one without them is split by size at paragraph boundaries. Chinese and English.

use crate::markdown_text;
use crate::ops::{Caller, Engram, EngramError, Result, limits};
use crate::pack_path::PackPath;
use crate::store::{Changes, Edit};

/// `add_knowledge` splits a document larger than this into chapters.
pub const SPLIT_BYTES: usize = 16 * 1024;

/// The size a chapter of a document without headings aims at.
const PART_BYTES: usize = 6 * 1024;

/// Characters of a chapter summary (its index line).
const SUMMARY_CHARS: usize = 60;

/// One chapter: its title and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chapter {
    /// The heading text (or the first line of a part).
    pub title: String,
    /// The chapter's Markdown.
    pub text: String,
}

/// The level (1–6) and text of an ATX heading line.
fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.bytes().take_while(|b| *b == b'#').count();
    if level == 0 || level > 6 {
        return None;
    }
    let rest = &line[level..];
    (rest.is_empty() || rest.starts_with(' ')).then(|| (level, rest.trim().trim_end_matches('#').trim()))
}

/// The lines of a document with, for each, whether it is outside a code fence.
fn lines_outside_fences(text: &str) -> Vec<(&str, bool)> {
    let mut fenced = false;
    text.lines()
        .map(|l| {
            if l.trim_start().starts_with("```") || l.trim_start().starts_with("~~~") {
                fenced = !fenced;
                return (l, false);
            }
            (l, !fenced)
        })
        .collect()
}

/// Splits a document into chapters: at the highest heading level that occurs at least
/// twice (a lone top title stays with the first chapter); else by size at blank lines.
pub fn split_chapters(text: &str) -> Vec<Chapter> {
    let lines = lines_outside_fences(text);
    let mut counts = [0usize; 7];
    for (l, open) in &lines {
        if let Some((level, _)) = heading(l).filter(|_| *open) {
            counts[level] += 1;
        }
    }
    let Some(level) = (1..=6).find(|&lv| counts[lv] >= 2) else { return split_by_size(text) };
    let mut chapters: Vec<Chapter> = Vec::new();
    let mut preamble = String::new();
    for (l, open) in lines {
        match heading(l).filter(|(lv, _)| open && *lv == level) {
            Some((_, title)) => chapters.push(Chapter { title: title.to_owned(), text: format!("{l}\n") }),
            None => match chapters.last_mut() {
                Some(c) => {
                    c.text.push_str(l);
                    c.text.push('\n');
                }
                None => {
                    preamble.push_str(l);
                    preamble.push('\n');
                }
            },
        }
    }
    if let Some(first) = chapters.first_mut()
        && !preamble.trim().is_empty()
    {
        first.text = format!("{preamble}\n{}", first.text);
    }
    chapters
}

/// Splits a text without headings into parts of about [`PART_BYTES`] at blank lines.
fn split_by_size(text: &str) -> Vec<Chapter> {
    let mut parts: Vec<String> = Vec::new();
    let mut current = String::new();
    for para in text.split("\n\n").filter(|p| !p.trim().is_empty()) {
        if !current.is_empty() && current.len() + para.len() > PART_BYTES {
            parts.push(std::mem::take(&mut current));
        }
        current.push_str(para.trim_matches('\n'));
        current.push_str("\n\n");
    }
    if !current.trim().is_empty() {
        parts.push(current);
    }
    parts
        .into_iter()
        .map(|p| {
            let first = p.lines().find(|l| !l.trim().is_empty()).unwrap_or_default();
            Chapter { title: first.chars().take(30).collect::<String>().trim().to_owned(), text: p }
        })
        .collect()
}

/// A file-name part from a title: portable, no separators, at most 40 characters.
pub fn slug(title: &str) -> String {
    let mut out = String::new();
    for c in title.trim().chars() {
        let c = if c.is_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '-' };
        if !(c == '-' && out.ends_with('-')) {
            out.push(c);
        }
    }
    let out: String = out.trim_matches(['-', '.']).chars().take(40).collect();
    let out = out.trim_matches(['-', '.']).to_owned();
    if out.is_empty() || PackPath::check_component(&out).is_err() { "doc".to_owned() } else { out }
}

/// `title` and `rest` joined as an index summary: `：` in Chinese, `: ` otherwise.
pub fn titled(title: &str, rest: &str) -> String {
    let title = markdown_text::plain_inline(title);
    if rest.is_empty() || rest == title {
        title
    } else if markdown_text::mostly_chinese([title.as_str()]) {
        format!("{title}：{rest}")
    } else {
        format!("{title}: {rest}")
    }
}

/// A chapter's one-line summary: its title, then the start of its first paragraph, plain
/// text cut at a sentence or word ([`markdown_text::fit`]).
fn summary(chapter: &Chapter) -> String {
    titled(&chapter.title, &markdown_text::summary(&chapter.text, SUMMARY_CHARS))
}

/// The index line's note of how many chapters a document has, in its language.
pub fn chapters_note(count: usize, chinese: bool) -> String {
    if chinese { format!("（{count} 章 / chapters）") } else { format!(" ({count} chapters)") }
}

/// The files of an import: chapter files, the chapter index, and the index line for the root.
pub fn chapter_files(
    doc: &str,
    title: &str,
    summary_line: &str,
    chapters: &[Chapter],
) -> (Vec<(String, String)>, String) {
    let mut files = Vec::new();
    let mut index = format!("## {}\n\n", markdown_text::plain_inline(title));
    for (i, c) in chapters.iter().enumerate() {
        let path = format!("knowledge/{doc}/{:02}-{}.md", i + 1, slug(&c.title));
        index.push_str(&format!("- `{path}` - {}\n", summary(c)));
        files.push((path, format!("{}\n", c.text.trim_end())));
    }
    files.push((format!("knowledge/{doc}/_index.md"), index));
    let chinese = markdown_text::mostly_chinese(chapters.iter().map(|c| c.text.as_str()));
    let line = format!(
        "- `knowledge/{doc}/_index.md` - {}{}",
        markdown_text::plain_inline(summary_line),
        chapters_note(chapters.len(), chinese)
    );
    (files, line)
}

/// Whether a path is a knowledge content file (what `knowledge_count` counts).
fn is_knowledge_file(path: &str) -> bool {
    path.ends_with(".md") && !path.rsplit('/').next().is_some_and(|name| name.starts_with("_index"))
}

/// `meta.json` with `knowledge_count` set to the knowledge files the pack will hold (those
/// of `snap` and `added` more), so `list`, `stats` and the page count an import; `None`
/// when meta.json is missing or not a JSON object (lint reports that; the import leaves it).
fn counted_meta(snap: &crate::store::Snapshot<'_>, added: usize) -> Result<Option<String>> {
    let Some(text) = snap.read_text("meta.json")? else { return Ok(None) };
    let Ok(serde_json::Value::Object(mut meta)) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Ok(None);
    };
    let held = snap.list_files_recursive("knowledge")?.iter().filter(|p| is_knowledge_file(p)).count();
    meta.insert("knowledge_count".into(), (held + added).into());
    let pretty = crate::jsonfmt::python_pretty(&serde_json::Value::Object(meta));
    Ok(Some(format!("{pretty}{}", if text.ends_with('\n') { "\n" } else { "" })))
}

impl Engram {
    /// Imports a document as chaptered knowledge of pack `name`, in one commit; the root
    /// index line says `summary` (default: the title). Returns the chapter index's path,
    /// the number of chapters and the commit's short id.
    pub fn import_knowledge(
        &self,
        name: &str,
        title: &str,
        summary: Option<&str>,
        text: &str,
        caller: &Caller,
    ) -> Result<(String, usize, Option<String>)> {
        limits::check_size("content", text)?;
        let title = crate::memory::single_line(title);
        let doc = slug(&title);
        let chapters = split_chapters(text);
        if chapters.is_empty() {
            return Err(EngramError::Invalid { field: "content", reason: "the document is empty".into() });
        }
        let summary_line = summary
            .map(crate::memory::single_line)
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| title.clone());
        let (files, line) = chapter_files(&doc, &title, &summary_line, &chapters);
        for (path, _) in &files {
            PackPath::parse(path)
                .map_err(|e| EngramError::BadPath { path: path.clone(), reason: e.to_string() })?;
        }
        let pack = self.resolve(name)?;
        let now = self.now().timestamp();
        let index_path = format!("knowledge/{doc}/_index.md");
        let (commit, ()) = self.with_repo(&pack.dir, |repo| {
            repo.write(|snap| {
                if snap.exists(&format!("knowledge/{doc}")) {
                    return Err(EngramError::BadPath {
                        path: format!("knowledge/{doc}/"),
                        reason: "already exists: give another --title, or remove it first".into(),
                    });
                }
                let mut changes = Changes::default();
                for (path, content) in &files {
                    changes.put(path.clone(), content.clone());
                }
                let mut root =
                    snap.read_text("knowledge/_index.md")?.unwrap_or_else(|| "## 知识索引\n".into());
                if !root.ends_with('\n') {
                    root.push('\n');
                }
                root.push_str(&line);
                root.push('\n');
                changes.put("knowledge/_index.md", root);
                if let Some(meta) = counted_meta(snap, chapters.len())? {
                    changes.put("meta.json", meta);
                }
                let subject = format!("knowledge: import {doc} — {} chapters", chapters.len());
                Ok::<_, EngramError>(Edit::Commit {
                    changes,
                    message: caller.commit_message(subject, now),
                    value: (),
                })
            })
        })?;
        Ok((index_path, chapters.len(), commit.map(|c| c.short)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_at_the_chapter_level_and_keeps_the_title_with_the_first() {
        let doc = "# 手册\n\n引言。\n\n## 第一章 开始\n正文一。\n### 小节\n细节。\n```\n## not a heading\n```\n## Chapter 2: Setup\nBody two.\n";
        let c = split_chapters(doc);
        assert_eq!(
            c.iter().map(|c| c.title.as_str()).collect::<Vec<_>>(),
            ["第一章 开始", "Chapter 2: Setup"]
        );
        assert!(
            c[0].text.starts_with("# 手册")
                && c[0].text.contains("### 小节")
                && c[0].text.contains("## not a heading")
        );
        assert_eq!(slug("Chapter 2: Setup"), "Chapter-2-Setup");
        assert_eq!(slug("第一章 开始"), "第一章-开始");
        assert_eq!(slug("../.."), "doc");
    }

    #[test]
    fn a_document_without_headings_is_split_by_size_at_paragraphs() {
        let para = "这是一段没有标题的文字，用来测试按大小拆分。".repeat(20);
        let doc: String = (0..12).map(|i| format!("{i} {para}\n\n")).collect();
        let parts = split_chapters(&doc);
        assert!(parts.len() > 1, "{}", parts.len());
        assert!(parts.iter().all(|p| p.text.len() <= PART_BYTES + para.len() + 8));
        let joined: String = parts.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(joined.matches("这是一段").count(), 12 * 20, "no paragraph lost or cut");
    }
}
