//! Which memories a list shows: the text filter is the search engine (`Engram::search`, the
//! `search_memory` ranking, Chinese and English), the other filters (category, type, tags, time
//! range, expired entries) are the same fields the engine filters on. Also the listing a page
//! reads (`Listing`: the items of one commit, indexed for the engine's hits, with likely
//! duplicates marked) and the archived/expired entries behind the page's toggle.

use std::collections::HashMap;
use std::sync::OnceLock;

use chrono::NaiveDateTime;

use super::{Failure, UiState};
use crate::ops::{MemoryItem, MemoryList, MemoryRef, PastItem, SearchQuery, fold_for_duplicates as folded};

/// Most hits a text filter shows (the engine's largest answer).
pub(crate) const MAX_HITS: usize = 100;

/// The memories of one commit, as the pages read them (cached per commit, `UiState::memories`).
pub(crate) struct Listing {
    /// Every live entry, oldest first.
    pub list: MemoryList,
    /// Item positions by the search engine's join key (category, time, type, tags): made on the
    /// first text filter.
    by_key: OnceLock<HashMap<String, Vec<usize>>>,
    /// Likely duplicates (item position → position of the earlier entry it repeats): made on
    /// the first look.
    dups: OnceLock<HashMap<usize, usize>>,
    /// Counts by category and by type: made on the first look.
    counts: OnceLock<[Vec<(String, usize)>; 2]>,
    /// Archived and expired entries, read on first use.
    pub(crate) past: OnceLock<Vec<PastItem>>,
}

fn key(category: &str, ts: &str, memory_type: &str, tags: &[String]) -> String {
    crate::packsearch::extract::key_of(category, ts, memory_type, tags)
}

impl Listing {
    /// The listing of `list`.
    pub(crate) fn new(list: MemoryList) -> Self {
        Self {
            list,
            by_key: OnceLock::new(),
            dups: OnceLock::new(),
            counts: OnceLock::new(),
            past: OnceLock::new(),
        }
    }

    /// An empty listing (a pack without commits).
    pub(crate) fn empty() -> Self {
        Self::new(MemoryList::default())
    }

    /// How many live entries.
    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    /// Entry `i` (oldest first), borrowed.
    pub(crate) fn get(&self, i: usize) -> Option<MemoryRef<'_>> {
        self.list.get(i)
    }

    /// Entry `i` as an item.
    pub(crate) fn item(&self, i: usize) -> Option<MemoryItem> {
        self.get(i).map(|m| m.to_item())
    }

    /// The entry with id `id`, as an item.
    pub(crate) fn find(&self, id: &str) -> Option<MemoryItem> {
        self.item(self.list.position(id)?)
    }

    /// Counts of the entries by category, in name order.
    pub(crate) fn by_category(&self) -> &[(String, usize)] {
        &self.counts()[0]
    }

    /// Counts of the entries by type, in name order.
    pub(crate) fn by_type(&self) -> &[(String, usize)] {
        &self.counts()[1]
    }

    fn counts(&self) -> &[Vec<(String, usize)>; 2] {
        self.counts.get_or_init(|| [self.count_by(|m| m.category), self.count_by(|m| m.memory_type)])
    }

    fn count_by<'a>(&'a self, field: impl Fn(MemoryRef<'a>) -> &'a str) -> Vec<(String, usize)> {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for m in self.list.iter() {
            *counts.entry(field(m)).or_default() += 1;
        }
        let mut v: Vec<(String, usize)> = counts.into_iter().map(|(k, n)| (k.to_owned(), n)).collect();
        v.sort();
        v
    }

    /// Item positions by the search engine's join key.
    fn by_key(&self) -> &HashMap<String, Vec<usize>> {
        self.by_key.get_or_init(|| {
            let mut by_key: HashMap<String, Vec<usize>> = HashMap::with_capacity(self.len());
            for i in 0..self.len() {
                let Some(m) = self.get(i) else { continue };
                let tags: Vec<String> = m.tags().map(str::to_owned).collect();
                by_key.entry(key(m.category, m.ts, m.memory_type, &tags)).or_default().push(i);
            }
            by_key
        })
    }

    /// Likely duplicates: an entry whose text (or summary) is, letters and digits folded, the
    /// same as an earlier entry's of the same category — what `capture_memory`'s duplicate
    /// check refuses within 30 seconds, found here across any time. Texts are compared by the
    /// hash of their folded form (made once per memory file), and a match is confirmed on the
    /// texts themselves.
    fn dups(&self) -> &HashMap<usize, usize> {
        self.dups.get_or_init(|| {
            // (category, a summary, folded hash) → the first entry with it. Only the hashes are
            // read for every entry; texts only where two hashes meet.
            let mut seen: HashMap<(u32, bool, u64), usize> = HashMap::with_capacity(self.len() * 2);
            let mut dups = HashMap::new();
            let text = |i: usize, summary: bool| {
                self.get(i).map(|m| if summary { m.summary } else { m.content }).unwrap_or_default()
            };
            for i in 0..self.len() {
                let Some(category) = self.list.category_id(i) else { continue };
                let (summary_fold, content_fold) = self.list.folds(i);
                for (summary, fold) in [(false, content_fold), (true, summary_fold)] {
                    let Some(hash) = fold else { continue };
                    match seen.get(&(category, summary, hash)) {
                        Some(&first) => {
                            if folded(text(first, summary)).eq(folded(text(i, summary))) {
                                dups.entry(i).or_insert(first);
                            }
                        }
                        None => {
                            seen.insert((category, summary, hash), i);
                        }
                    }
                }
            }
            dups
        })
    }

    /// The position of the earlier entry that entry `i` likely repeats, if any.
    pub(crate) fn duplicate_of(&self, i: usize) -> Option<usize> {
        self.dups().get(&i).copied()
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
    /// Live entries (positions in the listing): newest first, or best first for a text filter.
    pub items: Vec<usize>,
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
        let expired = |m: &MemoryRef<'_>| m.expires.is_some_and(|e| e < today.as_str());
        let in_range =
            |ts: Option<&str>| range.is_none_or(|r| ts.and_then(stamp).is_some_and(|t| r.contains(t)));
        let tagged = |tags: &[String]| self.tags.iter().all(|t| tags.contains(t));
        let mut capped = false;
        let items: Vec<usize> = match self.q.as_deref() {
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
                let mut taken = vec![false; listing.len()];
                let mut found = Vec::new();
                for h in out.hits.iter().filter(|h| h.pack == pack) {
                    let (Some(cat), Some(ts)) = (h.category.as_deref(), h.entry.as_deref()) else { continue };
                    let ty = h.memory_type.as_deref().unwrap_or_default();
                    let Some(candidates) = listing.by_key().get(&key(cat, ts, ty, &h.tags)) else { continue };
                    // Same key: the one with this summary first, else the first not yet taken.
                    let pick = candidates
                        .iter()
                        .copied()
                        .find(|&i| !taken[i] && listing.get(i).is_some_and(|m| m.summary == h.title))
                        .or_else(|| candidates.iter().copied().find(|&i| !taken[i]));
                    if let Some(i) = pick {
                        taken[i] = true;
                        found.push(i);
                    }
                }
                found
                    .into_iter()
                    .filter(|&i| self.old || listing.get(i).is_some_and(|m| !expired(&m)))
                    .collect()
            }
            None => {
                // Each test reads only its own field of an entry (a pass touches little memory).
                let l = &listing.list;
                // A category no entry has: `u32::MAX`, which no entry's id is.
                let category = self.category.as_deref().map(|c| l.category_named(c).unwrap_or(u32::MAX));
                (0..listing.len())
                    .rev()
                    .filter(|&i| {
                        category.is_none_or(|c| l.category_id(i) == Some(c))
                            && self.memory_type.as_deref().is_none_or(|t| l.memory_type(i) == Some(t))
                            && self.tags.iter().all(|t| l.tags(i).any(|have| have == t))
                            && (range.is_none() || in_range(l.ts(i)))
                            && (self.old || l.expires(i).flatten().is_none_or(|e| e >= today.as_str()))
                    })
                    .collect()
            }
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

    fn item(category: &str, summary: &str, content: &str) -> MemoryItem {
        MemoryItem {
            id: String::new(),
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
        let l = Listing::new(MemoryList::of_items(&[
            item("c", "tea", "The user likes green tea."),
            item("c", "tea again", "the user likes GREEN tea"),
            item("d", "other", "The user likes green tea."),
            item("c", "用户喜欢绿茶", "用户喜欢绿茶。"),
            item("c", "用户喜欢绿茶", "喝绿茶"),
            item("c", "abc", "xyz"),
            item("c", "ABC!", "x y z"),
        ]));
        assert_eq!(l.get(2).map(|m| m.content), Some("The user likes green tea."));
        assert_eq!(l.duplicate_of(1), Some(0));
        assert_eq!(l.duplicate_of(0), None);
        assert_eq!(l.duplicate_of(2), None, "another category");
        assert_eq!(l.duplicate_of(3), None);
        assert_eq!(l.duplicate_of(4), Some(3), "same summary");
        assert_eq!(l.duplicate_of(6), Some(5), "a three-letter summary counts, a three-letter text does not");
        assert_eq!(l.by_category(), [("c".to_owned(), 6), ("d".to_owned(), 1)]);
        assert_eq!(l.by_type(), [("fact".to_owned(), 7)]);
        assert_eq!(l.find(&l.get(4).unwrap().id_hex()).map(|m| m.content), Some("喝绿茶".to_owned()));
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
