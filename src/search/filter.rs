//! Metadata filters applied to search results.

use serde::{Deserialize, Serialize};

use super::doc::Document;
use super::meta::DocMeta;

/// Restricts a search to documents whose metadata match.
///
/// Every set criterion must hold (they are ANDed); an unset one matches all.
/// Tag semantics: a document must carry **all** of [`Filter::tags`] (use
/// [`Filter::any_tags`] for "at least one of"). Comparisons are exact and
/// case-sensitive, like the metadata itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Filter {
    /// Only documents of this pack.
    #[serde(default)]
    pub pack: Option<String>,
    /// Only documents whose kind is one of these (empty: any kind).
    #[serde(default)]
    pub kinds: Vec<String>,
    /// Only documents of this category.
    #[serde(default)]
    pub category: Option<String>,
    /// Only documents of this memory type.
    #[serde(default)]
    pub memory_type: Option<String>,
    /// Only documents carrying all of these tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Only documents carrying at least one of these tags (empty: no constraint).
    #[serde(default)]
    pub any_tags: Vec<String>,
    /// Only documents with `time >= start` (documents without a time are excluded).
    #[serde(default)]
    pub start: Option<i64>,
    /// Only documents with `time < end` (documents without a time are excluded).
    #[serde(default)]
    pub end: Option<i64>,
}

impl Filter {
    /// A filter that matches every document.
    pub fn all() -> Self {
        Self::default()
    }

    /// Restricts to one pack.
    pub fn pack(mut self, pack: impl Into<String>) -> Self {
        self.pack = Some(pack.into());
        self
    }

    /// Restricts to one of the given kinds.
    pub fn kinds<I, S>(mut self, kinds: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.kinds = kinds.into_iter().map(Into::into).collect();
        self
    }

    /// Restricts to the time range `[start, end)`.
    pub fn time_range(mut self, start: Option<i64>, end: Option<i64>) -> Self {
        self.start = start;
        self.end = end;
        self
    }

    /// Whether the filter matches every document.
    pub fn is_empty(&self) -> bool {
        // Field by field: comparing with a default filter built one per call costs as much
        // as the check itself on every candidate of a search.
        let Filter { pack, kinds, category, memory_type, tags, any_tags, start, end } = self;
        pack.is_none()
            && kinds.is_empty()
            && category.is_none()
            && memory_type.is_none()
            && tags.is_empty()
            && any_tags.is_empty()
            && start.is_none()
            && end.is_none()
    }

    /// Whether `doc` passes the filter.
    pub fn matches(&self, doc: &Document) -> bool {
        if !self.matches_meta(&DocMeta::of(doc)) {
            return false;
        }
        if !self.tags.iter().all(|t| doc.tags.contains(t)) {
            return false;
        }
        if !self.any_tags.is_empty() && !self.any_tags.iter().any(|t| doc.tags.contains(t)) {
            return false;
        }
        true
    }

    /// Whether the filter names tags (the only criteria [`Filter::matches_meta`] does not check).
    pub(super) fn needs_tags(&self) -> bool {
        !self.tags.is_empty() || !self.any_tags.is_empty()
    }

    /// Whether a document with this metadata passes every criterion but the tags.
    pub(super) fn matches_meta(&self, m: &DocMeta<'_>) -> bool {
        let g = &m.group;
        if self.pack.as_deref().is_some_and(|p| p != g.pack) {
            return false;
        }
        if !self.kinds.is_empty() && !self.kinds.iter().any(|k| k == g.kind) {
            return false;
        }
        if self.category.is_some() && self.category.as_deref() != g.category {
            return false;
        }
        if self.memory_type.is_some() && self.memory_type.as_deref() != g.memory_type {
            return false;
        }
        if self.start.is_some() || self.end.is_some() {
            let Some(t) = m.time else { return false };
            if self.start.is_some_and(|s| t < s) || self.end.is_some_and(|e| t >= e) {
                return false;
            }
        }
        true
    }
}
