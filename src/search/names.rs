//! Short forms of names: a query that names "Joanna" also finds the memory
//! that says "Jo", one that names "Nathan" the memory that says "Nate".
//!
//! A name of the query (a word it writes like a name) brings in, at a reduced
//! weight, every indexed word of at least two letters that is a prefix of it
//! (after stemming: "Nate" is indexed as `nat`) and that the memories holding
//! it write like a name too, so "Caroline" does not bring in every "car". The
//! other way round, a short name of the query ("Mel") brings in the longest-held
//! indexed words it is a prefix of ("Melanie"), on the same condition. Such a
//! word does not count towards a memory's coverage of the query.

use super::index::SearchIndex;
use super::params::SHORT_FORM_WEIGHT;
use super::query::{QueryTerm, looks_like_name};
use super::stopwords::is_stopword;
use super::tokenize::{TokenKind, Tokenizer};

/// Letters of the shortest short form.
const MIN_LETTERS: usize = 2;
/// Memories holding a candidate short form read to see how they write it.
const SAMPLED_DOCS: usize = 4;
/// Longer words a short name of the query is looked up as, at most.
const LONGER_FORMS: usize = 4;

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
                self.add_other_form(tokenizer, q, prefix, &mut out);
            }
            for longer in self.words_extending(&q.text) {
                if !parsed.iter().any(|p| p.text == longer) {
                    self.add_other_form(tokenizer, q, &longer, &mut out);
                }
            }
        }
        out
    }

    /// Adds `form`, another form of the query's name `q`, to `out` when the index holds it
    /// written like a name, weighted by its share of the memories holding either form: the
    /// pack's own usage says which form it writes, and a form next to a far more frequent
    /// one is mostly something else (someone addressed, another name).
    fn add_other_form(&self, tokenizer: &mut Tokenizer, q: &QueryTerm, form: &str, out: &mut Vec<(String, f32)>) {
        let weight = q.weight * SHORT_FORM_WEIGHT;
        if let Some(known) = out.iter_mut().find(|o| o.0 == form) {
            known.1 = known.1.max(weight);
            return;
        }
        let other = self.doc_freq(form) as f32;
        if other > 0.0 && self.written_as_name(tokenizer, form) {
            let named = self.doc_freq(&q.text) as f32;
            out.push((form.to_owned(), weight * other / (other + named)));
        }
    }

    /// The indexed words longer than `prefix` that start with it: the full names a short
    /// name may stand for, the [`LONGER_FORMS`] held by the most memories.
    fn words_extending(&self, prefix: &str) -> Vec<String> {
        if prefix.chars().count() < MIN_LETTERS {
            return Vec::new();
        }
        let longer = |t: &str| t.len() > prefix.len() && t.starts_with(prefix);
        let mut words: std::collections::BTreeSet<String> =
            self.term_ids.keys().filter(|t| longer(t)).map(|t| t.to_string()).collect();
        if let Some(base) = &self.base {
            base.terms_with_prefix(prefix, |t| {
                if longer(t) {
                    words.insert(t.to_owned());
                }
            });
        }
        let mut held: Vec<(usize, String)> = words.into_iter().map(|w| (self.doc_freq(&w), w)).collect();
        held.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        held.into_iter().filter(|(df, _)| *df > 0).take(LONGER_FORMS).map(|(_, w)| w).collect()
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
    fn a_short_name_finds_the_full_one() {
        let idx = index(&[
            ("melanie", "Yesterday Melanie painted a sunrise over the lake"),
            ("melody", "The melody of that song stayed with me"),
        ]);
        assert_eq!(found(&idx, "What did Mel paint?"), ["melanie"]);
        assert_eq!(short_forms(&idx, "What did Mel paint?"), ["melani"]);
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
