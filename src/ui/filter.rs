//! Which memories a list shows: the text filter is the search engine (`Engram::search`, the
//! `search_memory` ranking, Chinese and English), the other filters (category, type, tags, time
//! range, expired entries) are the same fields the engine filters on. Also the listing a page
//! reads (`Listing`: the items of one commit, indexed for the engine's hits, with likely
//! duplicates marked) and the archived/expired entries behind the page's toggle.

use std::collections::HashMap;
use std::sync::OnceLock;

use chrono::NaiveDateTime;

use super::{Failure, UiState};
use crate::ops::{MemoryItem, PastItem, SearchQuery};

/// Most hits a text filter shows (the engine's largest answer).
pub(crate) const MAX_HITS: usize = 100;

/// The memories of one commit, as the pages read them (cached per commit, `UiState::memories`).
pub(crate) struct Listing {
    /// Every live entry, oldest first.
    pub items: Vec<MemoryItem>,
    /// Item positions by the search engine's join key (category, time, type, tags): made on the
    /// first text filter.
    by_key: OnceLock<HashMap<String, Vec<usize>>>,
    /// Positions by id, and likely duplicates: made on the first look.
    marks: OnceLock<Marks>,
    /// Archived and expired entries, read on first use.
    pub(crate) past: OnceLock<Vec<PastItem>>,
}

/// What [`Listing::duplicate_of`] reads.
struct Marks {
    /// Item position by id (the id's 64 bits).
    at: HashMap<u64, usize>,
    /// Likely duplicates: item position → position of the earlier entry it repeats.
    dups: HashMap<usize, usize>,
}

fn key(category: &str, ts: &str, memory_type: &str, tags: &[String]) -> String {
    crate::packsearch::extract::key_of(category, ts, memory_type, tags)
}

/// Text as duplicates are compared: lowercase, letters and digits only (any script).
fn fold(s: &str) -> impl Iterator<Item = char> + '_ {
    s.chars().flat_map(char::to_lowercase).filter(|c| c.is_alphanumeric())
}

/// The hash of a folded text and its length in characters (nothing is allocated).
fn folded_hash(s: &str) -> (u64, usize) {
    let mut buf = [0u8; 4];
    fold(s).fold((crate::graph::fnv1a64(b""), 0), |(h, n), c| {
        (crate::graph::fnv1a64_extend(h, c.encode_utf8(&mut buf).as_bytes()), n + 1)
    })
}

impl Listing {
    /// The listing of `items` (oldest first).
    pub(crate) fn new(items: Vec<MemoryItem>) -> Self {
        Self { items, by_key: OnceLock::new(), marks: OnceLock::new(), past: OnceLock::new() }
    }

    /// An empty listing (a pack without commits).
    pub(crate) fn empty() -> Self {
        Self::new(Vec::new())
    }

    /// Item positions by the search engine's join key.
    fn by_key(&self) -> &HashMap<String, Vec<usize>> {
        self.by_key.get_or_init(|| {
            let mut by_key: HashMap<String, Vec<usize>> = HashMap::with_capacity(self.items.len());
            for (i, m) in self.items.iter().enumerate() {
                by_key.entry(key(&m.category, &m.ts, &m.memory_type, &m.tags)).or_default().push(i);
            }
            by_key
        })
    }

    /// Likely duplicates: an entry whose text (or summary) is, letters and digits folded, the
    /// same as an earlier entry's of the same category — what `capture_memory`'s duplicate
    /// check refuses within 30 seconds, found here across any time. Texts are compared by the
    /// hash of their folded form, and a match is confirmed on the texts themselves.
    fn marks(&self) -> &Marks {
        self.marks.get_or_init(|| {
            let mut at = HashMap::with_capacity(self.items.len());
            // (category, a summary, folded hash) → the first entry with it.
            let mut seen: HashMap<(&str, bool, u64), usize> = HashMap::with_capacity(self.items.len() * 2);
            let mut dups = HashMap::new();
            for (i, m) in self.items.iter().enumerate() {
                if let Ok(id) = u64::from_str_radix(&m.id, 16) {
                    at.insert(id, i);
                }
                // A summary's key was its folded text after one marker character.
                for (summary, text) in [(false, &m.content), (true, &m.summary)] {
                    let (hash, len) = folded_hash(text);
                    if len + usize::from(summary) < 4 {
                        continue;
                    }
                    match seen.get(&(m.category.as_str(), summary, hash)) {
                        Some(&first) => {
                            let earlier = &self.items[first];
                            let earlier = if summary { &earlier.summary } else { &earlier.content };
                            if fold(earlier).eq(fold(text)) {
                                dups.entry(i).or_insert(first);
                            }
                        }
                        None => {
                            seen.insert((m.category.as_str(), summary, hash), i);
                        }
                    }
                }
            }
            Marks { at, dups }
        })
    }

    /// The earlier entry `m` likely repeats, if any.
    pub(crate) fn duplicate_of(&self, m: &MemoryItem) -> Option<&MemoryItem> {
        let marks = self.marks();
        let pos = *marks.at.get(&u64::from_str_radix(&m.id, 16).ok()?)?;
        if self.items[pos].id != m.id {
            return None;
        }
        marks.dups.get(&pos).map(|&first| &self.items[first])
    }
}

/// Which memories a list shows.
#[derive(Debug, Clone, Default)]
pub(crate) struct Filter {
    /// Free text for the search engine (any language).
    pub q: Option<String>,
    /// Only this category.
    pub category: Option<String>,
    /// Only this type.
    pub memory_type: Option<String>,
    /// Only entries carrying all these tags.
    pub tags: Vec<String>,
    /// A time range as the tools take it (`last_week`, `2026-01..2026-03`, …).
    pub time_range: Option<String>,
    /// From this day (`YYYY-MM-DD`), inclusive.
    pub from: Option<String>,
    /// To this day (`YYYY-MM-DD`), inclusive.
    pub to: Option<String>,
    /// Show expired and archived entries too.
    pub old: bool,
}

fn param<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.trim()).filter(|v| !v.is_empty())
}

/// What a filter lets through.
pub(crate) struct Shown<'a> {
    /// Live entries: newest first, or best first for a text filter.
    pub items: Vec<&'a MemoryItem>,
    /// Archived and expired entries (only with the toggle), newest first.
    pub past: Vec<&'a PastItem>,
    /// The text filter's answer was cut at [`MAX_HITS`].
    pub capped: bool,
}

impl Filter {
    /// The filter of a query string (`q`, `category`, `type`, `tags`, `time_range`, `from`,
    /// `to`, `old`).
    pub(crate) fn from_pairs(pairs: &[(String, String)]) -> Self {
        let tags = pairs
            .iter()
            .filter(|(k, _)| k == "tags" || k == "tag")
            .flat_map(|(_, v)| v.split(','))
            .map(|t| t.trim().trim_start_matches('#').to_owned())
            .filter(|t| !t.is_empty())
            .collect();
        Self {
            q: param(pairs, "q").map(str::to_owned),
            category: param(pairs, "category").map(str::to_owned),
            memory_type: param(pairs, "type").map(str::to_owned),
            tags,
            time_range: param(pairs, "time_range").map(str::to_owned),
            from: param(pairs, "from").map(str::to_owned),
            to: param(pairs, "to").map(str::to_owned),
            old: param(pairs, "old").is_some_and(|v| v != "0" && v != "false"),
        }
    }

    /// The time range text: `time_range`, else `from..to`.
    fn range_text(&self) -> Option<String> {
        if let Some(r) = &self.time_range {
            return Some(r.clone());
        }
        match (&self.from, &self.to) {
            (None, None) => None,
            (a, b) => Some(format!("{}..{}", a.as_deref().unwrap_or(""), b.as_deref().unwrap_or(""))),
        }
    }

    /// The items that pass: `at` is the commit `listing` is of (a text filter searches the
    /// pack as of that commit).
    pub(crate) fn apply<'a>(
        &self,
        state: &UiState,
        pack: &str,
        at: Option<&str>,
        listing: &'a Listing,
    ) -> Result<Shown<'a>, Failure> {
        let now = state.engram.now();
        let range = match self.range_text() {
            Some(r) => {
                Some(crate::timerange::parse(&r, now).map_err(|e| Failure::bad_request(e.to_string()))?)
            }
            None => None,
        };
        let today = now.format("%Y-%m-%d").to_string();
        let expired = |m: &MemoryItem| m.expires.as_deref().is_some_and(|e| e < today.as_str());
        let in_range =
            |ts: Option<&str>| range.is_none_or(|r| ts.and_then(stamp).is_some_and(|t| r.contains(t)));
        let tagged = |tags: &[String]| self.tags.iter().all(|t| tags.contains(t));
        let mut capped = false;
        let items: Vec<&MemoryItem> = match self.q.as_deref() {
            Some(q) => {
                let query = SearchQuery {
                    query: q.to_owned(),
                    name: Some(pack.to_owned()),
                    kinds: vec![crate::packsearch::extract::KIND_MEMORY.to_owned()],
                    category: self.category.clone(),
                    memory_type: self.memory_type.clone(),
                    tags: self.tags.clone(),
                    time_range: self.range_text(),
                    as_of: at.map(str::to_owned),
                    limit: Some(MAX_HITS),
                    include_global: false,
                    snippet_chars: Some(40),
                };
                let out = state.engram.search(&query)?;
                capped = out.hits.len() >= MAX_HITS;
                let mut taken = vec![false; listing.items.len()];
                let mut found = Vec::new();
                for h in out.hits.iter().filter(|h| h.pack == pack) {
                    let (Some(cat), Some(ts)) = (h.category.as_deref(), h.entry.as_deref()) else { continue };
                    let ty = h.memory_type.as_deref().unwrap_or_default();
                    let Some(candidates) = listing.by_key().get(&key(cat, ts, ty, &h.tags)) else { continue };
                    // Same key: the one with this summary first, else the first not yet taken.
                    let pick = candidates
                        .iter()
                        .copied()
                        .find(|&i| !taken[i] && listing.items[i].summary == h.title)
                        .or_else(|| candidates.iter().copied().find(|&i| !taken[i]));
                    if let Some(i) = pick {
                        taken[i] = true;
                        found.push(&listing.items[i]);
                    }
                }
                found.into_iter().filter(|m| self.old || !expired(m)).collect()
            }
            None => listing
                .items
                .iter()
                .rev()
                .filter(|m| self.category.as_deref().is_none_or(|c| m.category == c))
                .filter(|m| self.memory_type.as_deref().is_none_or(|t| m.memory_type == t))
                .filter(|m| tagged(&m.tags))
                .filter(|m| in_range(Some(&m.ts)))
                .filter(|m| self.old || !expired(m))
                .collect(),
        };
        let past = if self.old {
            let all =
                listing.past.get_or_init(|| state.engram.past_memory_items(pack, at).unwrap_or_default());
            let terms = self.q.as_deref().map(terms).unwrap_or_default();
            let mut past: Vec<&PastItem> = all
                .iter()
                .filter(|p| self.category.as_deref().is_none_or(|c| p.category == c))
                .filter(|p| self.memory_type.as_deref().is_none_or(|t| p.memory_type.as_deref() == Some(t)))
                .filter(|p| tagged(&p.tags))
                .filter(|p| in_range(p.ts.as_deref()))
                .filter(|p| {
                    terms.is_empty() || {
                        let have = self::terms(&p.content);
                        terms.iter().all(|t| have.contains(t))
                    }
                })
                .collect();
            past.sort_by(|a, b| b.ts.cmp(&a.ts));
            past
        } else {
            Vec::new()
        };
        Ok(Shown { items, past, capped })
    }
}

/// The search engine's terms of a text (its tokenizer: words, stems, CJK), stopwords aside.
fn terms(text: &str) -> Vec<String> {
    crate::search::tokenize::tokens(text).into_iter().filter(|t| !t.stop).map(|t| t.text).collect()
}

/// Seconds of a `YYYY-MM-DD HH:MM` stamp (UTC).
fn stamp(ts: &str) -> Option<i64> {
    NaiveDateTime::parse_from_str(ts, "%Y-%m-%d %H:%M").ok().map(|t| t.and_utc().timestamp())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str, category: &str, summary: &str, content: &str) -> MemoryItem {
        MemoryItem {
            id: id.into(),
            category: category.into(),
            ts: "2026-01-01 10:00".into(),
            memory_type: "fact".into(),
            expires: None,
            tags: vec![],
            summary: summary.into(),
            content: content.into(),
        }
    }

    #[test]
    fn duplicates_are_the_same_words_in_the_same_category() {
        let l = Listing::new(vec![
            item("a", "c", "tea", "The user likes green tea."),
            item("b", "c", "tea again", "the user likes GREEN tea"),
            item("c", "d", "other", "The user likes green tea."),
            item("d", "c", "用户喜欢绿茶", "用户喜欢绿茶。"),
            item("e", "c", "用户喜欢绿茶", "喝绿茶"),
        ]);
        assert_eq!(l.duplicate_of(&l.items[1]).map(|m| m.id.as_str()), Some("a"));
        assert!(l.duplicate_of(&l.items[0]).is_none());
        assert!(l.duplicate_of(&l.items[2]).is_none(), "another category");
        assert_eq!(l.duplicate_of(&l.items[4]).map(|m| m.id.as_str()), Some("d"), "same summary");
    }

    #[test]
    fn filter_reads_tags_dates_and_the_toggle() {
        let pairs: Vec<(String, String)> =
            [("tags", "a, #b"), ("from", "2026-01-01"), ("old", "1"), ("q", " ")]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        let f = Filter::from_pairs(&pairs);
        assert_eq!(f.tags, vec!["a", "b"]);
        assert_eq!(f.range_text().as_deref(), Some("2026-01-01.."));
        assert!(f.old);
        assert!(f.q.is_none());
    }
}
