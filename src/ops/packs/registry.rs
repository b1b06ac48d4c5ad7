//! The pack registry: entries from the bundled `registry.json`, an optional
//! community registry URL and local registry files, merged as the reference
//! does; `search_engrams` / `engram registry search` over it.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::ops::Engram;

/// One registry entry (the reference's `registry.json` shape; other keys are ignored).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistryEntry {
    /// Pack name (stripped).
    pub name: String,
    /// What it is.
    pub description: String,
    /// Who made it.
    pub author: String,
    /// Where to install it from: a git URL, a local path or `builtin:<name>` (a pack shipped in engram).
    pub source: String,
    /// Tags (a non-list `tags` value counts as one tag, as in the reference).
    pub tags: Vec<String>,
}

/// The registry shipped in the binary: the reference's 12 example packs and the demo pack.
const BUNDLED_REGISTRY: &str = include_str!("../../../registry.json");

/// The longest community registry engram reads.
const MAX_REMOTE_BYTES: u64 = 4 << 20;

/// Queries that list every entry (after strip + lower-case), as in the reference.
const LIST_ALL: &[&str] = &[
    "",
    "*",
    "all",
    "any",
    "list",
    "everything",
    "engram",
    "engrams",
    "expert",
    "experts",
    "全部",
    "所有",
    "列表",
];

/// Python's `str()` of a JSON value, for the string fields of an entry.
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The entries of one registry file's text: a JSON array of objects; anything else is empty.
fn parse_registry(text: &str) -> Vec<RegistryEntry> {
    let Ok(Value::Array(items)) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|item| {
            let obj = item.as_object()?;
            let field = |k: &str| obj.get(k).map(text_of).unwrap_or_default();
            let tags = match obj.get("tags") {
                Some(Value::Array(list)) => list.iter().map(text_of).collect(),
                None | Some(Value::Null) => Vec::new(),
                Some(other) => vec![text_of(other)],
            };
            Some(RegistryEntry {
                name: field("name").trim().to_owned(),
                description: field("description"),
                author: field("author"),
                source: field("source"),
                tags,
            })
        })
        .collect()
}

/// The merged registry.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    entries: Vec<RegistryEntry>,
}

impl Registry {
    /// The bundled registry, then each text in order: a later entry replaces an
    /// earlier one of the same lower-cased name in place (keeping its position,
    /// taking the new spelling); new names are appended; blank names are skipped.
    pub fn merge(texts: &[String]) -> Self {
        let mut this = Self::default();
        for text in std::iter::once(BUNDLED_REGISTRY).chain(texts.iter().map(String::as_str)) {
            for e in parse_registry(text) {
                if e.name.is_empty() {
                    continue;
                }
                let key = e.name.to_lowercase();
                match this.entries.iter_mut().find(|x| x.name.to_lowercase() == key) {
                    Some(slot) => *slot = e,
                    None => this.entries.push(e),
                }
            }
        }
        this
    }

    /// Loads and merges registry files (a file that cannot be read counts as empty).
    pub fn load(files: &[PathBuf]) -> Self {
        let texts: Vec<String> = files.iter().filter_map(|f| read_registry_file(f)).collect();
        Self::merge(&texts)
    }

    /// Finds an entry: exact name first, then case-insensitive on the stripped name.
    pub fn find(&self, name: &str) -> Option<&RegistryEntry> {
        if let Some(e) = self.entries.iter().find(|e| e.name == name) {
            return Some(e);
        }
        let key = name.trim().to_lowercase();
        self.entries.iter().find(|e| e.name.to_lowercase() == key)
    }

    /// All entries, in merge order.
    pub fn entries(&self) -> &[RegistryEntry] {
        &self.entries
    }

    /// `search_engrams(query)`: every whitespace token must occur in
    /// `name description tags` (lower-cased); ranked by name, tag and description
    /// matches, then name. A list-all query (`""`, `*`, `all`, `全部`…) gives every entry.
    pub fn search(&self, query: &str) -> Vec<&RegistryEntry> {
        let q = query.trim().to_lowercase();
        if LIST_ALL.contains(&q.as_str()) {
            return self.entries.iter().collect();
        }
        let tokens: Vec<&str> = q.split_whitespace().collect();
        let mut hits: Vec<(i64, String, &RegistryEntry)> = Vec::new();
        for e in &self.entries {
            let name = e.name.to_lowercase();
            let desc = e.description.to_lowercase();
            let tags: Vec<String> = e.tags.iter().map(|t| t.to_lowercase()).collect();
            let tags_text = tags.join(" ");
            let hay = format!("{name} {desc} {tags_text}");
            if !tokens.iter().all(|t| hay.contains(t)) {
                continue;
            }
            let mut score: i64 = 0;
            for t in &tokens {
                score += if name == *t {
                    12
                } else if name.starts_with(t) {
                    8
                } else if name.contains(t) {
                    6
                } else {
                    0
                };
                if tags.iter().any(|tag| tag == t) {
                    score += 5;
                } else if tags.iter().any(|tag| tag.contains(t)) {
                    score += 4;
                }
                if desc.contains(t) {
                    score += 2;
                }
            }
            score += (tags_text.chars().count().min(60) / 20) as i64;
            hits.push((score, name, e));
        }
        hits.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        hits.into_iter().map(|(_, _, e)| e).collect()
    }
}

/// One search result line: `<name> - <description> [<tag>, …] (<author>)`.
pub fn render_entry(e: &RegistryEntry) -> String {
    let tags: Vec<&str> = e.tags.iter().map(|t| t.trim()).filter(|t| !t.is_empty()).collect();
    format!("{} - {} [{}] ({})", e.name.trim(), e.description.trim(), tags.join(", "), e.author.trim())
}

/// The text of a registry file, read at most [`MAX_REMOTE_BYTES`] (a registry is a few
/// kilobytes; `/dev/zero` or a huge file is refused unread, with a warning). A file that
/// is missing or not text counts as empty, as in the reference.
fn read_registry_file(path: &std::path::Path) -> Option<String> {
    use crate::ops::limits::{ReadLimitError, read_bounded};
    match read_bounded(path, MAX_REMOTE_BYTES as usize) {
        Ok(bytes) => String::from_utf8(bytes).ok(),
        Err(ReadLimitError::Io { .. }) => None,
        Err(e) => {
            eprintln!("engram: registry file ignored: {e}");
            None
        }
    }
}

/// Reads a community registry: an `http(s)://` URL (10 s timeout, at most 4 MiB) or a
/// local file. Any failure counts as an empty registry (as in the reference): a registry
/// that cannot be reached must not break search or install.
fn fetch_remote(url: &str) -> Option<String> {
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return read_registry_file(std::path::Path::new(url.strip_prefix("file://").unwrap_or(url)));
    }
    let agent: ureq::Agent =
        ureq::Agent::config_builder().timeout_global(Some(Duration::from_secs(10))).build().into();
    let mut response = agent.get(url).call().ok()?;
    response.body_mut().with_config().limit(MAX_REMOTE_BYTES).read_to_string().ok()
}

impl Engram {
    /// The merged registry: bundled, the community registry (`ENGRAM_REGISTRY_URL`),
    /// `<packs>/registry.local.json`, the project's `registry.local.json`, then the
    /// extra registry files (`ENGRAM_REGISTRY_FILES`), later overriding earlier.
    pub fn registry(&self) -> Registry {
        let mut texts = Vec::new();
        if let Some(url) = &self.config.registry_url {
            texts.extend(fetch_remote(url));
        }
        let mut files = vec![self.config.packs_dir.join("registry.local.json")];
        if let Some(p) = &self.config.project_root {
            files.push(p.join("registry.local.json"));
        }
        files.extend(self.config.registry_files.iter().cloned());
        texts.extend(files.iter().filter_map(|f| read_registry_file(f)));
        Registry::merge(&texts)
    }

    /// `search_engrams(query)`: registry entries by name, description and tags
    /// (Chinese and English), one line each; installed packs are not consulted.
    pub fn search_engrams(&self, query: &str) -> String {
        let registry = self.registry();
        let hits = registry.search(query);
        if hits.is_empty() {
            return "未找到匹配的 Engram".to_owned();
        }
        hits.into_iter().map(render_entry).collect::<Vec<_>>().join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_keep_the_position_and_take_the_new_spelling() {
        let local = r#"[{"name":"OLD-FRIEND","description":"mine","source":"/x","tags":"one"},
            {"name":"  ","description":"blank"}, 3, {"name":"new","source":"/y"}]"#;
        let r = Registry::merge(&[local.to_owned()]);
        let pos = |n: &str| r.entries().iter().position(|e| e.name == n);
        assert_eq!(pos("OLD-FRIEND"), Some(6), "old-friend's slot in the bundled registry");
        assert_eq!(r.find("old-friend").map(|e| e.tags.clone()), Some(vec!["one".to_owned()]));
        assert_eq!(pos("new"), Some(r.entries().len() - 1));
        assert!(r.entries().iter().all(|e| !e.name.trim().is_empty()));
    }

    #[test]
    fn search_ranks_chinese_and_english_like_the_reference() {
        let r = Registry::merge(&[]);
        let names = |q: &str| r.search(q).iter().map(|e| e.name.clone()).collect::<Vec<_>>();
        assert_eq!(names("健身"), ["sports-nutritionist", "fitness-coach"]);
        assert_eq!(names("  FITNESS  "), ["fitness-coach"]);
        assert_eq!(names("营养 健身"), ["sports-nutritionist", "fitness-coach"]);
        assert_eq!(names("全部").len(), r.entries().len());
        assert!(names("zzz-nomatch").is_empty());
        assert_eq!(
            render_entry(r.search("old-friend")[0]),
            "old-friend - 你的老朋友阿凯（大学室友），现居旧金山做后端开发。当用户想闲聊、感到孤独、提到阿凯或大学回忆时加载 [朋友, 聊天, 陪伴] (engram-team)"
        );
    }
}
