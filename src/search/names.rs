//! Short forms of names: a query that names "Joanna" also finds the memory
//! that says "Jo", one that names "Nathan" the memory that says "Nate".
//!
//! A name of the query (a word it writes like a name) brings in, at a reduced
//! weight, every indexed word of at least two letters that is a prefix of it
//! (after stemming: "Nate" is indexed as `nat`) and that the memories holding
//! it write like a name too, so "Caroline" does not bring in every "car".
//! A short form does not count towards a memory's coverage of the query.

use super::index::SearchIndex;
use super::params::SHORT_FORM_WEIGHT;
use super::query::{QueryTerm, looks_like_name};
use super::stopwords::is_stopword;
use super::tokenize::{TokenKind, Tokenizer};

/// Letters of the shortest short form.
const MIN_LETTERS: usize = 2;
/// Memories holding a candidate short form read to see how they write it.
const SAMPLED_DOCS: usize = 4;

impl SearchIndex {
    /// The short forms of the names in `parsed` that this index holds, each
    /// with its query weight: the name's times [`SHORT_FORM_WEIGHT`] times
    /// the short form's share of the memories holding either form. A term
    /// of the query itself is never a short form.
    pub(super) fn short_forms(&self, tokenizer: &mut Tokenizer, parsed: &[QueryTerm]) -> Vec<(String, f32)> {
        let mut out: Vec<(String, f32)> = Vec::new();
        for q in parsed.iter().filter(|q| q.name && q.text.chars().all(char::is_alphabetic)) {
            for (end, _) in q.text.char_indices().skip(MIN_LETTERS) {
                let prefix = &q.text[..end];
                if is_stopword(prefix) || parsed.iter().any(|p| p.text == prefix) {
                    continue;
                }
                let weight = q.weight * SHORT_FORM_WEIGHT;
                if let Some(known) = out.iter_mut().find(|o| o.0 == prefix) {
                    known.1 = known.1.max(weight);
                } else if self.doc_freq(prefix) > 0 && self.written_as_name(tokenizer, prefix) {
                    // The pack's own usage says which form it writes: a short
                    // form next to a far more frequent full name is mostly
                    // something else (someone addressed, another name).
                    let (short, full) = (self.doc_freq(prefix) as f32, self.doc_freq(&q.text) as f32);
                    out.push((prefix.to_owned(), weight * short / (short + full)));
                }
            }
        }
        out
    }

    /// Whether one of the first few memories holding `term` writes it like a name.
    fn written_as_name(&self, tokenizer: &mut Tokenizer, term: &str) -> bool {
        let Some(postings) = self.postings(term) else { return false };
        postings
            .iter()
            .filter_map(|p| self.doc_at(p.doc))
            .take(SAMPLED_DOCS)
            .any(|doc| [&doc.title, &doc.body].into_iter().any(|text| writes_as_name(tokenizer, text, term)))
    }
}

/// Whether `text` holds the word indexed as `term` written like a name.
fn writes_as_name(tokenizer: &mut Tokenizer, text: &str, term: &str) -> bool {
    let mut found = false;
    tokenizer.tokenize(text, |t| {
        found = found || (t.kind == TokenKind::Word && t.text == term && looks_like_name(text, t.start, t.end));
    });
    found
}

#[cfg(test)]
mod tests {
    use super::super::query::parse_query;
    use super::super::{Document, Filter, SearchIndex};
    use super::*;

    fn index(bodies: &[(&str, &str)]) -> SearchIndex {
        SearchIndex::build(bodies.iter().map(|(id, body)| Document::new(*id, "", *body))).expect("build")
    }

    fn found(idx: &SearchIndex, query: &str) -> Vec<String> {
        idx.search(query, &Filter::all(), 5).into_iter().map(|h| h.id).collect()
    }

    fn short_forms(idx: &SearchIndex, query: &str) -> Vec<String> {
        let mut tokenizer = Tokenizer::new();
        let parsed = parse_query(&mut tokenizer, query);
        idx.short_forms(&mut tokenizer, &parsed).into_iter().map(|s| s.0).collect()
    }

    #[test]
    fn a_full_name_finds_its_short_form() {
        let idx = index(&[
            ("jo", "Yesterday Jo adopted a puppy from the shelter"),
            ("other", "Gina adopted a cat last spring"),
        ]);
        assert_eq!(found(&idx, "What did Joanna adopt?").first().map(String::as_str), Some("jo"));
        // Stemmed: "Nate" is indexed as `nat`, a prefix of "Nathan".
        let idx = index(&[("nate", "Then Nate won the video game tournament")]);
        assert_eq!(found(&idx, "Which tournament did Nathan win?"), ["nate"]);
    }

    #[test]
    fn the_full_name_ranks_before_the_short_form() {
        let idx = index(&[
            ("short", "Yesterday Jo adopted a puppy from the shelter"),
            ("full", "Yesterday Joanna adopted a puppy from the shelter"),
        ]);
        assert_eq!(found(&idx, "Did Joanna adopt a puppy?"), ["full", "short"]);
    }

    #[test]
    fn a_prefix_written_as_a_common_word_is_no_short_form() {
        let idx = index(&[("car", "The old car broke down"), ("caro", "We met Caro at the station")]);
        assert_eq!(short_forms(&idx, "Where did we meet Caroline?"), ["caro"]);
        let idx = index(&[("car", "The old car broke down")]);
        assert!(short_forms(&idx, "Where did we meet Caroline?").is_empty());
        // Only names bring in short forms; a query term is never one.
        assert!(short_forms(&idx, "where is caroline").is_empty());
        assert!(short_forms(&idx, "Did Caroline fix the car?").is_empty());
    }
}
