//! Tunable ranking parameters (BM25F, feedback, grouping).

use super::doc::Field;

/// BM25F parameters: one saturation constant and per-field weight and length normalisation.
///
/// The score of a term in a document is `idf * t / (k1 + t)` with
/// `t = Σ_f weight_f * tf_f / (1 - b_f + b_f * len_f / avglen_f)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Bm25Params {
    /// Term-frequency saturation.
    pub k1: f32,
    /// Weight of each field, indexed by [`Field::index`].
    pub weights: [f32; Field::COUNT],
    /// Length normalisation of each field (0 = none, 1 = full).
    pub b: [f32; Field::COUNT],
}

impl Default for Bm25Params {
    fn default() -> Self {
        Self {
            k1: 0.8,
            // title, body, tags, context, time
            weights: [3.0, 1.0, 1.5, 0.4, 1.0],
            b: [0.5, 0.5, 0.5, 0.75, 0.0],
        }
    }
}

/// Pseudo-relevance feedback (RM3-style query expansion).
///
/// After a first pass, the most characteristic terms of the top documents
/// are added to the query with a reduced weight and the search is run again.
#[derive(Debug, Clone, PartialEq)]
pub struct FeedbackParams {
    /// How many top documents to learn from.
    pub docs: usize,
    /// How many expansion terms to add.
    pub terms: usize,
    /// Total weight of the expansion terms relative to the original query (which weighs 1).
    pub weight: f32,
}

impl Default for FeedbackParams {
    fn default() -> Self {
        Self {
            docs: 5,
            terms: 10,
            weight: 0.3,
        }
    }
}

/// Query weight of a word written like a name ("Caroline", "Rust" inside a
/// sentence): names pick out whose memory a question is about.
pub(crate) const NAME_WEIGHT: f32 = 1.5;

/// Query weight of a short form of a name the query writes ("Jo" for
/// "Joanna", see `names.rs`), relative to the name's, before it is scaled by
/// the short form's share of the memories holding either form: a prefix of
/// a name is weaker evidence than the name.
pub(crate) const SHORT_FORM_WEIGHT: f32 = 0.5;

/// Weight of a CJK unigram in a query when it is part of a longer CJK run
/// (the bigrams carry the match; unigrams only break ties and catch partial hits).
pub(crate) const QUERY_UNIGRAM_IN_RUN_WEIGHT: f32 = 0.2;

/// Share of a strong hit's score given to its neighbours in time (the entries
/// just before and after it in the same pack, on the same day) that match the
/// query too: what was said around a hit often completes it. An entry next to
/// several strong hits gains from each. Neighbours are only re-ranked, never
/// added: an entry holding none of the query's words is not a hit. `0.0`
/// turns the boost off.
pub const NEIGHBOUR_WEIGHT: f32 = 0.5;
/// How many of the best first-pass hits lend score to their neighbours.
pub(crate) const NEIGHBOUR_SOURCES: usize = 30;
/// Neighbours on each side of a hit, nearest in time first.
pub(crate) const NEIGHBOURS_PER_SIDE: usize = 2;
/// Entries further apart than this (seconds) are not neighbours.
pub(crate) const NEIGHBOUR_MAX_GAP: i64 = 3600;
/// How strongly a document's score follows its coverage of the query: the
/// score is multiplied by `coverage ^ COVERAGE_EXPONENT`, where coverage is
/// the idf-weighted share of the query's terms the document holds (a term no
/// document holds weighs as the rarest term). BM25 sums per-term evidence, so
/// many repetitions of one frequent word can outweigh a document that answers
/// every part of the question; this is Lucene's classic coordination factor,
/// weighted by idf.
pub(crate) const COVERAGE_EXPONENT: f32 = 1.0;
/// Hits inside a time span the query names gain this share of their score.
pub(crate) const TIME_BOOST: f32 = 0.5;
/// At most this many days of entries answer a query that names a time and matches nothing else.
pub(crate) const TIME_FILL_DAYS: i64 = 366;
/// A hit's score is multiplied by `1 - ASKED_DISCOUNT × share`, where share is
/// how much of its body is questions (see `asked.rs`): a memory that asks
/// about a topic holds its words but rarely what was said about it. Its
/// neighbours still take their share of its full score: what follows a
/// question often answers it.
pub(crate) const ASKED_DISCOUNT: f32 = 0.5;
