//! Ranked lexical search over memories, knowledge files and notes.
//!
//! A pure library: no git, no MCP. Documents ([`Document`]) are indexed in an
//! in-memory inverted index ([`SearchIndex`]) scored with BM25F (title, body,
//! tags and a low-weight context field). Text is NFKC-normalised and
//! lowercased; English words are stemmed ([`stem`]) and stopwords dropped from
//! queries; Chinese, Japanese and Korean are indexed as character unigrams and
//! bigrams, so no dictionary is needed ([`tokenize`]).
//!
//! Updates are incremental ([`SearchIndex::upsert`], [`SearchIndex::remove`]),
//! and the index can be saved and restored as a compact checksummed binary
//! snapshot ([`SearchIndex::to_snapshot`], [`SearchIndex::from_snapshot`]).

mod asked;
mod boost;
pub mod dates;
mod doc;
pub mod embed;
mod error;
mod filter;
mod hanzi;
mod index;
mod meta;
mod names;
mod params;
mod prune;
mod query;
mod rank;
mod request;
mod segment;
mod snapshot;
mod snippet;
pub mod stem;
mod stopwords;
pub mod tokenize;
pub mod when;

pub use doc::{Document, Field};
pub use embed::{Embeddings, EmbeddingsError};
pub use error::{SearchError, SnapshotError};
pub use filter::Filter;
pub use index::SearchIndex;
pub use params::{Bm25Params, FeedbackParams};
pub use query::{QueryTerm, parse_query};
pub use request::{Hit, SearchRequest, SharedEmbeddings};
pub use segment::SegmentSource;
pub use snapshot::checksum;
pub use snippet::{SNIPPET_CHARS, make_snippet};
pub use stopwords::is_stopword;

#[cfg(test)]
mod boost_tests;
#[cfg(test)]
mod prune_tests;
#[cfg(test)]
mod segment_tests;
#[cfg(test)]
mod tests;
