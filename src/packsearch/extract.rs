//! What a pack's files contribute to search: the one place that maps a file
//! (path + content at some commit) to search [`Document`]s.
//!
//! **Extension point.** To make a new kind of file searchable (graph
//! entities, profile, events, notes…), add an arm to [`documents`] for its
//! paths (and, when it is under a new top-level directory, to
//! [`is_searchable`]), returning documents whose `kind` names the new kind and
//! whose `id`s start with the path (`<path>#<n>`). Nothing else changes: the
//! index is rebuilt or updated from the git diff by calling these functions
//! for every changed path, and a change of [`EXTRACT_VERSION`] makes every
//! stored index rebuild once.
//!
//! Memory entries are the one kind whose title lives in another file: a
//! block in `memory/<category>.md` gets its summary from the matching line of
//! the full index (`memory/_index_full.md` + segments). [`documents`] leaves
//! the title empty and [`summary_key`] names the line it must come from; the
//! index (see `super`) joins them.

use chrono::NaiveDateTime;

use crate::memlog::{FULL_INDEX, LOG_DIR};
use crate::memory::{IndexEntry, parse_blocks, parse_index_line};
use crate::search::Document;

/// Bumped whenever extraction changes, so stored indexes are rebuilt.
pub const EXTRACT_VERSION: u32 = 2;

/// Kind of memory entries.
pub const KIND_MEMORY: &str = "memory";
/// Kind of passages of `knowledge/` files.
pub const KIND_KNOWLEDGE: &str = "knowledge";
/// Kind of passages of `examples/` files.
pub const KIND_EXAMPLE: &str = "example";
/// Kind of notes of the notes toolset (`notes/<category>/<slug>.md`).
pub const KIND_NOTE: &str = "note";
/// Every kind this build produces (for argument checks and messages).
pub const KINDS: &[&str] = &[KIND_MEMORY, KIND_KNOWLEDGE, KIND_EXAMPLE, KIND_NOTE];

/// Whether a path can contribute documents or summaries (a cheap test on the
/// path alone, so a full build reads only the blobs that matter).
pub fn is_searchable(path: &str) -> bool {
    memory_category(path).is_some()
        || is_summary_source(path)
        || passage_kind(path).is_some()
        || note_category(path).is_some()
}

/// Whether a path holds index lines (summaries) of memory entries.
pub fn is_summary_source(path: &str) -> bool {
    path == FULL_INDEX
        || path
            .strip_prefix(LOG_DIR)
            .and_then(|r| r.strip_prefix("/_index_full/"))
            .is_some_and(|n| n.ends_with(".md") && !n.contains('/'))
}

/// The documents of one file. `pack` is the pack's name; documents are
/// identified as `<path>#<n>`.
pub fn documents(pack: &str, path: &str, text: &str) -> Vec<Document> {
    if let Some(category) = memory_category(path) {
        return memory_documents(pack, path, category, text);
    }
    if let Some(kind) = passage_kind(path) {
        return passage_documents(pack, path, kind, text);
    }
    if let Some(category) = note_category(path) {
        return vec![note_document(pack, path, category, text)];
    }
    Vec::new()
}

/// The category of a note file (`notes/<category>/<slug>.md`, as the notes
/// toolset reads them: names starting with `.` or `_` are not notes).
pub fn note_category(path: &str) -> Option<&str> {
    let (category, file) = path.strip_prefix("notes/")?.split_once('/')?;
    let ok = !category.is_empty()
        && !category.starts_with(['.', '_'])
        && file.ends_with(".md")
        && !file.starts_with(['.', '_'])
        && !file.contains('/');
    ok.then_some(category)
}

/// A note as one document: its front-matter title (else the file name), its
/// body, its category and its `created` time (else `updated`).
fn note_document(pack: &str, path: &str, category: &str, text: &str) -> Document {
    #[derive(serde::Deserialize, Default)]
    struct Meta {
        #[serde(default)]
        title: Option<String>,
        #[serde(default)]
        created: Option<String>,
        #[serde(default)]
        updated: Option<String>,
    }
    let split = crate::frontmatter::split(text);
    let meta: Meta = split.yaml.and_then(|y| crate::frontmatter::parse(y).ok()).unwrap_or_default();
    let stem = path.rsplit('/').next().unwrap_or(path).trim_end_matches(".md");
    let title = meta.title.filter(|t| !t.trim().is_empty()).unwrap_or_else(|| stem.to_owned());
    let time = [meta.created, meta.updated]
        .into_iter()
        .flatten()
        .find_map(|t| chrono::DateTime::parse_from_rfc3339(t.trim()).ok())
        .map(|t| t.timestamp());
    Document {
        id: format!("{path}#0"),
        title,
        body: split.body.trim_matches('\n').to_owned(),
        pack: pack.to_owned(),
        kind: KIND_NOTE.to_owned(),
        category: Some(category.to_owned()),
        time,
        path: path.to_owned(),
        ..Document::default()
    }
}

/// The category of a memory category file (`memory/<c>.md` or a rolled
/// segment `memory/_log/<c>/NNNNNN.md`); `None` for other files, for the
/// index files, and for `-archive`/`-expired` files (no longer live memories).
pub fn memory_category(path: &str) -> Option<&str> {
    let category = if let Some(rest) = path.strip_prefix(LOG_DIR).and_then(|r| r.strip_prefix('/')) {
        let (category, file) = rest.split_once('/')?;
        if !file.ends_with(".md") || file.contains('/') {
            return None;
        }
        category
    } else {
        let stem = path.strip_prefix("memory/")?.strip_suffix(".md")?;
        if stem.contains('/') {
            return None;
        }
        stem
    };
    let live = !category.is_empty()
        && !category.starts_with('_')
        && !category.ends_with("-archive")
        && !category.ends_with("-expired");
    live.then_some(category)
}

/// Whether `path` is the head file of its category (segments are older).
pub fn is_head_file(path: &str) -> bool {
    !path.starts_with(LOG_DIR)
}

fn passage_kind(path: &str) -> Option<&'static str> {
    let kind = if path.starts_with("knowledge/") {
        KIND_KNOWLEDGE
    } else if path.starts_with("examples/") {
        KIND_EXAMPLE
    } else {
        return None;
    };
    let name = path.rsplit('/').next().unwrap_or(path);
    (name.ends_with(".md") && !name.starts_with('_') && !name.starts_with('.')).then_some(kind)
}

/// The join key of a memory entry: what an index line and its block share.
pub fn key_of(category: &str, ts: &str, memory_type: &str, tags: &[String]) -> String {
    format!("{category}\u{1f}{ts}\u{1f}{memory_type}\u{1f}{}", tags.join(","))
}

/// The join key of a memory document (from its category, time, type and tags).
pub fn summary_key(doc: &Document) -> Option<String> {
    if doc.kind != KIND_MEMORY {
        return None;
    }
    let ts = format_ts(doc.time?);
    Some(key_of(doc.category.as_deref()?, &ts, doc.memory_type.as_deref().unwrap_or(""), &doc.tags))
}

/// The summaries of an index file: (join key, summary) per entry line, in order.
pub fn summary_lines(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(parse_index_line)
        .map(|e: IndexEntry| (key_of(&e.category, &e.ts, &e.memory_type, &e.tags), e.summary))
        .collect()
}

fn parse_ts(ts: &str) -> Option<i64> {
    NaiveDateTime::parse_from_str(ts, "%Y-%m-%d %H:%M").ok().map(|t| t.and_utc().timestamp())
}

/// `YYYY-MM-DD HH:MM` (UTC) of a time.
pub fn format_ts(t: i64) -> String {
    chrono::DateTime::from_timestamp(t, 0)
        .map_or_else(String::new, |d| d.format("%Y-%m-%d %H:%M").to_string())
}

fn memory_documents(pack: &str, path: &str, category: &str, text: &str) -> Vec<Document> {
    // What was said just before and after an entry is found at query time
    // (the engine's neighbour boost, by time), not copied into each entry.
    let blocks = parse_blocks(text);
    blocks
        .iter()
        .enumerate()
        .map(|(n, b)| {
            let meta = b.meta.as_ref();
            Document {
                id: format!("{path}#{n}"),
                title: String::new(),
                body: b.content().to_owned(),
                context: String::new(),
                pack: pack.to_owned(),
                kind: KIND_MEMORY.to_owned(),
                category: Some(category.to_owned()),
                memory_type: meta.map(|m| m.memory_type.clone()),
                tags: meta.map(|m| m.tags.clone()).unwrap_or_default(),
                time: meta.and_then(|m| parse_ts(&m.ts)),
                path: path.to_owned(),
            }
        })
        .collect()
}

/// Splits a Markdown file into passages at its headings. The passage title
/// is the file's title (front matter `title:` or first `# ` heading, else the
/// file name) joined with the section heading.
fn passage_documents(pack: &str, path: &str, kind: &str, text: &str) -> Vec<Document> {
    let text = text.replace("\r\n", "\n");
    let (front_title, body) = split_front_matter(&text);
    let stem = path.rsplit('/').next().unwrap_or(path).trim_end_matches(".md");
    let mut sections: Vec<(String, String)> = Vec::new();
    let mut heading = String::new();
    let mut current = String::new();
    let mut in_fence = false;
    for line in body.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        }
        if !in_fence && let Some(h) = heading_text(line) {
            sections.push((std::mem::take(&mut heading), std::mem::take(&mut current)));
            heading = h.to_owned();
            continue;
        }
        current.push_str(line);
        current.push('\n');
    }
    sections.push((heading, current));
    let file_title = front_title
        .or_else(|| sections.iter().find(|(h, _)| !h.is_empty()).map(|(h, _)| h.clone()))
        .unwrap_or_else(|| stem.to_owned());
    sections
        .into_iter()
        .filter(|(h, b)| !b.trim().is_empty() || !h.is_empty())
        .enumerate()
        .map(|(n, (h, b))| {
            let title = if h.is_empty() || h == file_title {
                file_title.clone()
            } else {
                format!("{file_title} › {h}")
            };
            Document {
                id: format!("{path}#{n}"),
                title,
                body: b.trim().to_owned(),
                pack: pack.to_owned(),
                kind: kind.to_owned(),
                path: path.to_owned(),
                ..Document::default()
            }
        })
        .collect()
}

fn heading_text(line: &str) -> Option<&str> {
    let hashes = line.bytes().take_while(|b| *b == b'#').count();
    if hashes == 0 || hashes > 6 {
        return None;
    }
    let rest = &line[hashes..];
    rest.starts_with(' ').then(|| rest.trim().trim_end_matches('#').trim()).filter(|h| !h.is_empty())
}

/// Removes a leading YAML front matter block; returns its `title:` if any.
fn split_front_matter(text: &str) -> (Option<String>, &str) {
    let Some(rest) = text.strip_prefix("---\n") else { return (None, text) };
    let Some(end) = rest.find("\n---") else { return (None, text) };
    let front = &rest[..end];
    let after = &rest[end + 4..];
    let body = after.split_once('\n').map_or("", |(_, b)| b);
    let title = front
        .lines()
        .find_map(|l| l.strip_prefix("title:"))
        .map(|t| t.trim().trim_matches(['"', '\'']).to_owned())
        .filter(|t| !t.is_empty());
    (title, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_files_are_recognised() {
        assert_eq!(memory_category("memory/preferences.md"), Some("preferences"));
        assert_eq!(memory_category("memory/_log/preferences/000001.md"), Some("preferences"));
        for other in [
            "memory/_index.md",
            "memory/_index_full.md",
            "memory/_log/_index_full/000001.md",
            "memory/a-archive.md",
            "memory/a-expired.md",
            "memory/x/y.md",
            "knowledge/a.md",
        ] {
            assert_eq!(memory_category(other), None, "{other}");
        }
        assert!(is_summary_source("memory/_index_full.md"));
        assert!(is_summary_source("memory/_log/_index_full/000003.md"));
        assert!(!is_summary_source("memory/_index.md"));
        assert!(is_searchable("examples/case.md") && !is_searchable("knowledge/_index.md"));
        assert!(!is_searchable("role.md"));
        assert!(is_searchable("notes/general/milk.md"));
        for other in ["notes/_categories.yaml", "notes/general/_x.md", "notes/a.md", "notes/a/b/c.md"] {
            assert!(!is_searchable(other), "{other}");
        }
    }

    #[test]
    fn notes_are_documents_with_title_category_and_time() {
        let text = "---\nid: ab12\ntitle: 买牛奶\ncreated: 2026-02-25T10:00:00Z\n---\n记得买低脂牛奶\n";
        let docs = documents("personal", "notes/shopping/买牛奶.md", text);
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].title, "买牛奶");
        assert_eq!(docs[0].body, "记得买低脂牛奶");
        assert_eq!(docs[0].kind, KIND_NOTE);
        assert_eq!(docs[0].category.as_deref(), Some("shopping"));
        assert_eq!(docs[0].time, Some(1_772_013_600));
        let plain = documents("personal", "notes/general/hand-written.md", "no front matter");
        assert_eq!(plain[0].title, "hand-written");
        assert_eq!(plain[0].body, "no front matter");
        assert_eq!(plain[0].time, None);
    }

    #[test]
    fn memory_blocks_become_documents_with_join_keys() {
        let text = "\n---\n[2026-02-25 10:00] type:preference tags:fitness,morning\n喜欢早上训练\n\n---\n[2026-02-26 09:00] type:fact conv:c1\nA\n\n---\n[2026-02-26 09:01] type:fact conv:c1\nB\n";
        let docs = documents("coach", "memory/preferences.md", text);
        assert_eq!(docs.len(), 3);
        assert_eq!(docs[0].id, "memory/preferences.md#0");
        assert_eq!(docs[0].body, "喜欢早上训练");
        assert_eq!(docs[0].tags, vec!["fitness", "morning"]);
        assert!(docs.iter().all(|d| d.context.is_empty()), "neighbours are found at query time");
        let line = "- `memory/preferences.md` [2026-02-25 10:00] [preference] [fitness,morning] 训练时间";
        let lines = summary_lines(line);
        assert_eq!(lines.len(), 1);
        assert_eq!(Some(&lines[0].0), summary_key(&docs[0]).as_ref());
        assert_eq!(lines[0].1, "训练时间");
    }

    #[test]
    fn knowledge_splits_at_headings() {
        let text = "---\ntitle: 深蹲指南\n---\n前言\n## 动作要点\n膝盖对齐脚尖\n```\n# not a heading\n```\n## 常见错误\n塌腰\n";
        let docs = documents("coach", "knowledge/squat.md", text);
        let titles: Vec<&str> = docs.iter().map(|d| d.title.as_str()).collect();
        assert_eq!(titles, vec!["深蹲指南", "深蹲指南 › 动作要点", "深蹲指南 › 常见错误"]);
        assert!(docs[1].body.contains("# not a heading"));
        assert!(docs.iter().all(|d| d.kind == KIND_KNOWLEDGE));
        let plain = documents("coach", "examples/case.md", "# Case A\nbody\n## Step\nmore");
        assert_eq!(plain[0].title, "Case A");
        assert_eq!(plain[1].title, "Case A › Step");
    }
}
