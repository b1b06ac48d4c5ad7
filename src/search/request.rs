//! Search requests and results.

use serde::{Deserialize, Serialize};

use super::doc::Field;
use super::filter::Filter;
use super::params::{FeedbackParams, NEIGHBOUR_WEIGHT};
use super::snippet::SNIPPET_CHARS;

/// A search: query text, filters and ranking options.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchRequest {
    /// Free-text query (any language).
    pub query: String,
    /// Metadata filter.
    pub filter: Filter,
    /// Maximum number of hits.
    pub limit: usize,
    /// Pseudo-relevance feedback; `None` disables it.
    pub feedback: Option<FeedbackParams>,
    /// Boost from documents sharing the same `path` (e.g. entries of one memory
    /// file or one conversation session): each hit gains `group_weight` times the
    /// mean of the best two scores of the *other* matching documents of its path.
    /// `0.0` disables it.
    pub group_weight: f32,
    /// Boost of the entries next to a strong hit in time (see
    /// [`super::params::NEIGHBOUR_WEIGHT`]); `0.0` disables it.
    pub neighbour_weight: f32,
    /// Snippet length in characters.
    pub snippet_chars: usize,
    /// The time of the request (unix seconds) that relative time expressions
    /// ("yesterday", "上周") are resolved against; `None`: the newest entry.
    pub now: Option<i64>,
    /// Word vectors that re-rank the lexical top hits (see [`super::embed`]); `None`: off.
    pub embeddings: Option<SharedEmbeddings>,
    /// Find the best hits by dynamic pruning (skipping postings that cannot
    /// reach them; the same hits and scores). `false` scores every posting:
    /// for comparisons and benchmarks.
    pub prune: bool,
}

/// Word vectors shared by many requests (equal when they are the same vectors).
#[derive(Debug, Clone)]
pub struct SharedEmbeddings(pub std::sync::Arc<super::embed::Embeddings>);

impl PartialEq for SharedEmbeddings {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl SearchRequest {
    /// A request for `query` with no filter, 10 hits, and default options.
    pub fn new(query: impl Into<String>) -> Self {
        Self {
            query: query.into(),
            filter: Filter::default(),
            limit: 10,
            feedback: None,
            group_weight: 0.0,
            neighbour_weight: NEIGHBOUR_WEIGHT,
            snippet_chars: SNIPPET_CHARS,
            now: None,
            embeddings: None,
            prune: true,
        }
    }

    /// Sets the filter.
    pub fn filter(mut self, filter: Filter) -> Self {
        self.filter = filter;
        self
    }

    /// Sets the maximum number of hits.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Enables pseudo-relevance feedback.
    pub fn feedback(mut self, feedback: FeedbackParams) -> Self {
        self.feedback = Some(feedback);
        self
    }

    /// Sets the neighbour boost (`0.0`: off).
    pub fn neighbour_weight(mut self, weight: f32) -> Self {
        self.neighbour_weight = weight;
        self
    }

    /// Sets the same-path group boost.
    pub fn group_weight(mut self, weight: f32) -> Self {
        self.group_weight = weight;
        self
    }
}

/// One search result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    /// The document's id.
    pub id: String,
    /// Relevance score (higher is better; only comparable within one search).
    pub score: f32,
    /// The document's path.
    pub path: String,
    /// The document's pack.
    pub pack: String,
    /// Fields in which at least one query term matched, in field order.
    pub fields: Vec<Field>,
    /// Excerpt of the body (or title) around the best match.
    pub snippet: String,
    /// The id of a stronger hit this one was said next to, when being next to
    /// it weighs more in its score than its own words (see
    /// [`super::params::NEIGHBOUR_WEIGHT`]): the hit is context of that one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beside: Option<String>,
}
