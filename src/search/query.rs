//! Turning query text into weighted index terms.

use std::collections::HashMap;

use super::dates::query_date_terms;
use super::params::{NAME_WEIGHT, QUERY_UNIGRAM_IN_RUN_WEIGHT};
use super::tokenize::{OwnedToken, TokenKind, Tokenizer};

/// One distinct term of a parsed query.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryTerm {
    /// Index term (normalised, stemmed).
    pub text: String,
    /// Query-side weight (repetitions add up).
    pub weight: f32,
    /// Whether the query writes the word like a name (see [`looks_like_name`]).
    pub name: bool,
}

/// Parses `text` into distinct weighted terms, in first-occurrence order.
///
/// * English stopwords are dropped unless the query has nothing else.
/// * Dates written in the query add date terms (see [`super::dates`]).
/// * A CJK character that is part of a longer CJK run is kept as a
///   low-weight unigram next to its bigrams; a lone CJK character is a full term.
pub fn parse_query(tokenizer: &mut Tokenizer, text: &str) -> Vec<QueryTerm> {
    let tokens = tokenizer.tokens(text);
    let all_stop = tokens.iter().all(|t| t.stop);
    let mut out: Vec<QueryTerm> = Vec::new();
    let mut pos: HashMap<String, usize> = HashMap::new();
    for t in &tokens {
        if t.stop && !all_stop {
            continue;
        }
        let mut weight = if t.kind == TokenKind::CjkUnigram && in_cjk_run(t, &tokens) {
            QUERY_UNIGRAM_IN_RUN_WEIGHT
        } else {
            1.0
        };
        let name = t.kind == TokenKind::Word && looks_like_name(text, t.start, t.end);
        if name {
            weight *= NAME_WEIGHT;
        }
        match pos.get(&t.text) {
            Some(&i) => {
                out[i].weight += weight;
                out[i].name |= name;
            }
            None => {
                pos.insert(t.text.clone(), out.len());
                out.push(QueryTerm {
                    text: t.text.clone(),
                    weight,
                    name,
                });
            }
        }
    }
    for term in query_date_terms(text) {
        if !pos.contains_key(&term) {
            pos.insert(term.clone(), out.len());
            out.push(QueryTerm {
                text: term,
                weight: 1.0,
                name: false,
            });
        }
    }
    out
}

/// Whether the word at `start..end` of `text` is written like a name: a
/// capital then a lower-case letter, and not merely the first word of a
/// sentence (unless a possessive `'s` follows it).
pub(super) fn looks_like_name(text: &str, start: usize, end: usize) -> bool {
    let word = &text[start..end];
    let mut chars = word.chars();
    let (Some(a), Some(b)) = (chars.next(), chars.next()) else { return false };
    if !a.is_uppercase() || !b.is_lowercase() {
        return false;
    }
    let before = text[..start].trim_end();
    let sentence_start = before.is_empty() || before.ends_with(['.', '?', '!', '。', '？', '！', '"', '“']);
    let possessive = text[end..].starts_with("'s") || text[end..].starts_with("\u{2019}s");
    !sentence_start || possessive
}

/// Whether a unigram token is covered by a bigram (i.e. its CJK run has ≥ 2 chars).
fn in_cjk_run(unigram: &OwnedToken, tokens: &[OwnedToken]) -> bool {
    tokens.iter().any(|b| {
        b.kind == TokenKind::CjkBigram && (b.start == unigram.start || b.end == unigram.end)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Vec<(String, f32)> {
        parse_query(&mut Tokenizer::new(), s)
            .into_iter()
            .map(|t| (t.text, t.weight))
            .collect()
    }

    #[test]
    fn drops_stopwords_but_not_everything() {
        let q = parse("What did Caroline paint?");
        assert_eq!(
            q,
            [("carolin".to_string(), NAME_WEIGHT), ("paint".to_string(), 1.0)]
        );
        let q = parse("the who");
        assert_eq!(q.len(), 2);
    }

    #[test]
    fn names_weigh_more_than_sentence_openers() {
        let w = |q: &str, term: &str| parse(q).into_iter().find(|t| t.0 == term).map(|t| t.1);
        assert_eq!(w("When did Melanie go camping?", "melani"), Some(NAME_WEIGHT));
        assert_eq!(w("Caroline's dog", "carolin"), Some(NAME_WEIGHT));
        assert_eq!(w("Paint the fence. Paint it red", "paint"), Some(2.0), "sentence openers");
        assert_eq!(w("we use Rust here", "rust"), Some(NAME_WEIGHT));
        assert_eq!(w("we use RUST and rust", "rust"), Some(2.0), "all capitals is not a name");
    }

    #[test]
    fn cjk_unigrams_in_runs_are_light() {
        let q = parse("猫");
        assert_eq!(q, [("猫".to_string(), 1.0)]);
        let q = parse("跑步");
        assert!(q.contains(&("跑步".to_string(), 1.0)));
        assert!(q.contains(&("跑".to_string(), QUERY_UNIGRAM_IN_RUN_WEIGHT)));
    }
}
