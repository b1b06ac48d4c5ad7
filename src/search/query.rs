//! Turning query text into weighted index terms.

use std::collections::HashMap;

use super::dates::query_date_terms;
use super::params::QUERY_UNIGRAM_IN_RUN_WEIGHT;
use super::tokenize::{OwnedToken, TokenKind, Tokenizer};

/// One distinct term of a parsed query.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryTerm {
    /// Index term (normalised, stemmed).
    pub text: String,
    /// Query-side weight (repetitions add up).
    pub weight: f32,
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
        let weight = if t.kind == TokenKind::CjkUnigram && in_cjk_run(t, &tokens) {
            QUERY_UNIGRAM_IN_RUN_WEIGHT
        } else {
            1.0
        };
        match pos.get(&t.text) {
            Some(&i) => out[i].weight += weight,
            None => {
                pos.insert(t.text.clone(), out.len());
                out.push(QueryTerm {
                    text: t.text.clone(),
                    weight,
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
            });
        }
    }
    out
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
            [("carolin".to_string(), 1.0), ("paint".to_string(), 1.0)]
        );
        let q = parse("the who");
        assert_eq!(q.len(), 2);
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
