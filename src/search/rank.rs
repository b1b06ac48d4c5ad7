//! Query evaluation: BM25F scoring, feedback, grouping, top-k and hits.

use std::borrow::Cow;
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap};

use super::doc::{Document, Field};
use super::filter::Filter;
use super::index::SearchIndex;
use super::embed::{Embeddings, RERANK_DEPTH, RERANK_WEIGHT, cosine};
use super::params::{ASKED_DISCOUNT, COVERAGE_EXPONENT, FeedbackParams, NEIGHBOUR_SOURCES};
use super::prune::{Norm, Pruner, prunable};
use super::when::TimeSpan;
use super::query::parse_query;
use super::request::{Hit, SearchRequest};
use super::snippet::make_snippet;
use super::tokenize::{Tokenizer, is_cjk};

/// A resolved query term: its text (a term of the index) and query weight.
#[derive(Debug, Clone)]
pub(super) struct WeightedTerm {
    pub text: Box<str>,
    pub weight: f32,
    /// How the term counts towards coverage.
    pub covers: Covers,
}

/// The best hits, best first; the fields each matched (by slot); for a hit
/// ranked mostly for a neighbour, that neighbour's slot; the documents
/// already read (by slot).
type Ranked<'a> = (Vec<(f32, u32)>, HashMap<u32, u8>, HashMap<u32, u32>, Read<'a>);

/// Documents read while ranking, by slot: read once, for the snippet too.
type Read<'a> = HashMap<u32, Cow<'a, Document>>;

/// How a query term counts towards a document's coverage of the query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Covers {
    /// A word, number or date of the query: held or missing.
    Word,
    /// A CJK character or bigram of the query: counts when held, never as missing.
    Cjk,
    /// A term feedback added, or a short form of a name (`names.rs`): not
    /// part of the query.
    No,
}

/// Score accumulators for one evaluation.
struct Scores {
    acc: Vec<f32>,
    mask: Vec<u8>,
    touched: Vec<u32>,
    /// The idf-weighted query weight each document holds of the query's words
    /// and of its CJK terms.
    cover: Vec<[f32; 2]>,
}

impl SearchIndex {
    /// Searches with default options: `limit` hits for `query` among documents
    /// passing `filter`, best first.
    pub fn search(&self, query: &str, filter: &Filter, limit: usize) -> Vec<Hit> {
        let mut req = SearchRequest::new(query).limit(limit);
        req.filter = filter.clone();
        self.search_with(&req)
    }

    /// Runs a full [`SearchRequest`]. An empty or unmatched query returns no hits.
    pub fn search_with(&self, req: &SearchRequest) -> Vec<Hit> {
        self.search_documents(req).into_iter().map(|(hit, _)| hit).collect()
    }

    /// [`Self::search_with`], each hit with its document: read once, for the snippet and
    /// for the caller.
    pub fn search_documents(&self, req: &SearchRequest) -> Vec<(Hit, Cow<'_, Document>)> {
        if req.limit == 0 || self.is_empty() {
            return Vec::new();
        }
        let mut tokenizer = Tokenizer::new();
        let parsed = parse_query(&mut tokenizer, &req.query);
        let short_forms = self.short_forms(&mut tokenizer, &parsed);
        let terms: Vec<WeightedTerm> = parsed
            .iter()
            .filter(|q| self.doc_freq(&q.text) > 0)
            .map(|q| WeightedTerm {
                text: q.text.as_str().into(),
                weight: q.weight,
                covers: if is_cjk_term(&q.text) { Covers::Cjk } else { Covers::Word },
            })
            .chain(short_forms.iter().map(|(text, weight)| WeightedTerm {
                text: text.as_str().into(),
                weight: *weight,
                covers: Covers::No,
            }))
            .collect();
        let spans = self.query_spans(req);
        if terms.is_empty() && spans.is_empty() {
            return Vec::new();
        }

        // The whole query's weight, terms no document here holds included (with
        // the idf of a term in no document): a document's coverage is its
        // share of the query, comparable between packs.
        let query_mass: f32 = parsed
            .iter()
            .filter(|q| !is_cjk_term(&q.text))
            .map(|q| q.weight * self.idf(self.doc_freq(&q.text)))
            .sum();
        // Pruning finds the same best hits as scoring every posting; the time
        // spans' and the path groups' boosts read every hit, so those queries
        // are scored exhaustively.
        let prune = req.prune && spans.is_empty() && req.group_weight <= 0.0 && prunable(&self.params);
        let (ranked, masks, beside, mut read) = if prune {
            self.rank_pruned(req, terms, query_mass)
        } else {
            self.rank_exhaustive(req, terms, query_mass, &spans)
        };

        let snippet_terms: HashMap<String, f32> = parsed
            .iter()
            .filter_map(|q| {
                let df = self.doc_freq(&q.text);
                (df > 0).then(|| (q.text.clone(), q.weight * self.idf(df)))
            })
            .chain(short_forms.into_iter().map(|(text, weight)| {
                let idf = self.idf(self.doc_freq(&text));
                (text, weight * idf)
            }))
            .collect();
        ranked
            .into_iter()
            .filter_map(|(score, slot)| {
                let doc = match read.remove(&slot) {
                    Some(doc) => doc,
                    None => self.doc_at(slot)?,
                };
                let mask = masks.get(&slot).copied().unwrap_or(0);
                let fields: Vec<Field> = Field::ALL
                    .into_iter()
                    .filter(|f| mask & (1 << f.index()) != 0)
                    .collect();
                let source = if mask & (1 << Field::Body.index()) != 0 || doc.title.is_empty() {
                    &doc.body
                } else if mask & (1 << Field::Title.index()) != 0 || doc.body.is_empty() {
                    &doc.title
                } else {
                    &doc.body
                };
                let hit = Hit {
                    id: doc.id.clone(),
                    score,
                    path: doc.path.clone(),
                    pack: doc.pack.clone(),
                    fields,
                    beside: beside.get(&slot).and_then(|&s| self.id_at(s)).map(|id| id.into_owned()),
                    snippet: make_snippet(
                        &mut tokenizer,
                        source,
                        &snippet_terms,
                        req.snippet_chars,
                    ),
                };
                Some((hit, doc))
            })
            .collect()
    }

    /// Scores every posting of every term, then applies feedback and the
    /// boosts to every hit: the best `limit` hits (best first), the fields
    /// each matched, and the neighbour each ranks for (`Hit::beside`).
    fn rank_exhaustive(
        &self,
        req: &SearchRequest,
        mut terms: Vec<WeightedTerm>,
        query_mass: f32,
        spans: &[TimeSpan],
    ) -> Ranked<'_> {
        let mut scores = self.score(&terms);
        let mut ranked = self.candidates(&scores, &req.filter, query_mass);
        if let Some(fb) = &req.feedback
            && !ranked.is_empty()
        {
            let expansion = self.expansion_terms(&ranked, &terms, fb);
            if !expansion.is_empty() {
                terms.extend(expansion);
                scores = self.score(&terms);
                ranked = self.candidates(&scores, &req.filter, query_mass);
            }
        }
        if req.group_weight > 0.0 {
            self.apply_group_boost(&mut ranked, req.group_weight);
        }
        let beside = if req.neighbour_weight > 0.0 {
            let sources = self.neighbour_sources(&ranked);
            self.apply_neighbour_boost(&mut ranked, req.neighbour_weight, &sources)
        } else {
            HashMap::new()
        };
        if !spans.is_empty() {
            self.apply_time_boost(&mut ranked, req, spans);
        }
        let read = self.discount_asked(&mut ranked, final_depth(req));
        self.final_order(&mut ranked, req);
        let masks = ranked.iter().map(|r| (r.1, scores.mask.get(r.1 as usize).copied().unwrap_or(0))).collect();
        (ranked, masks, beside, read)
    }

    /// [`Self::rank_exhaustive`] for a query without time spans or path
    /// groups, by dynamic pruning (`prune.rs`): the best hits before the
    /// boosts are found without scoring most postings, then the neighbours
    /// of the strongest are scored one by one. Same result: a boost only adds
    /// to a hit, so a hit outside the best `n` (`n` ≥ the hits returned, ≥ the
    /// neighbour sources) that is no neighbour of a source stays behind them.
    fn rank_pruned(&self, req: &SearchRequest, mut terms: Vec<WeightedTerm>, query_mass: f32) -> Ranked<'_> {
        let n = final_depth(req).max(if req.neighbour_weight > 0.0 { NEIGHBOUR_SOURCES } else { 0 });
        let mut pruner = Pruner::new(self, &terms, query_mass);
        let mut top = pruner.top(n.max(req.feedback.as_ref().map_or(0, |f| f.docs)), &req.filter);
        if let Some(fb) = &req.feedback
            && !top.is_empty()
        {
            let first: Vec<(f32, u32)> = top.iter().map(|s| (s.score, s.slot)).collect();
            let expansion = self.expansion_terms(&first, &terms, fb);
            if !expansion.is_empty() {
                terms.extend(expansion);
                pruner = Pruner::new(self, &terms, query_mass);
                top = pruner.top(n, &req.filter);
            }
        }
        top.truncate(n);
        let mut masks: HashMap<u32, u8> = top.iter().map(|s| (s.slot, s.mask)).collect();
        let mut ranked: Vec<(f32, u32)> = top.iter().map(|s| (s.score, s.slot)).collect();
        let beside = if req.neighbour_weight > 0.0 {
            let sources = self.neighbour_sources(&ranked);
            // Neighbours that are hits themselves join with their own scores.
            for &(_, n) in sources.iter().flat_map(|s| &s.1) {
                if masks.contains_key(&n) {
                    continue;
                }
                let hit = pruner.score_at(n).filter(|&(score, _)| score > 0.0 && self.passes(n, &req.filter));
                masks.insert(n, hit.map_or(0, |h| h.1));
                if let Some((score, _)) = hit {
                    ranked.push((score, n));
                }
            }
            self.apply_neighbour_boost(&mut ranked, req.neighbour_weight, &sources)
        } else {
            HashMap::new()
        };
        let read = self.discount_asked(&mut ranked, final_depth(req));
        self.final_order(&mut ranked, req);
        (ranked, masks, beside, read)
    }

    /// The best `limit` of `ranked`, best first (re-ranked by word vectors
    /// when the request has them).
    fn final_order(&self, ranked: &mut Vec<(f32, u32)>, req: &SearchRequest) {
        match &req.embeddings {
            Some(e) => {
                self.top_k(ranked, req.limit.max(RERANK_DEPTH));
                self.rerank(ranked, &e.0, &req.query);
                ranked.truncate(req.limit);
            }
            None => self.top_k(ranked, req.limit),
        }
    }

    /// Discounts hits by the share of their body that is questions
    /// ([`ASKED_DISCOUNT`]), reading only the documents that can be among the
    /// best `k` afterwards: a discount only lowers a score, so once the `k`
    /// best are discounted, a hit scoring no more than the `k`-th of them
    /// before its own discount stays behind them. Returns the documents read.
    fn discount_asked(&self, ranked: &mut Vec<(f32, u32)>, k: usize) -> Read<'_> {
        let mut read = HashMap::new();
        if ASKED_DISCOUNT <= 0.0 || k == 0 || ranked.is_empty() {
            return read;
        }
        let mut discount = |r: &mut (f32, u32)| {
            if let Some(doc) = self.doc_at(r.1) {
                r.0 *= 1.0 - ASKED_DISCOUNT * super::asked::asked_share(&doc.body);
                read.insert(r.1, doc);
            }
        };
        let mut best = ranked.clone();
        self.top_k(&mut best, k);
        best.iter_mut().for_each(&mut discount);
        if best.len() < k {
            *ranked = best;
            return read;
        }
        let floor = best.iter().map(|r| r.0).fold(f32::INFINITY, f32::min);
        let done: HashMap<u32, f32> = best.iter().map(|r| (r.1, r.0)).collect();
        for r in ranked.iter_mut() {
            match done.get(&r.1) {
                Some(&score) => r.0 = score,
                None if r.0 > floor => discount(r),
                None => {}
            }
        }
        read
    }

    /// Inverse document frequency of a term found in `df` documents.
    pub(super) fn idf(&self, df: usize) -> f32 {
        let n = self.len() as f32;
        let df = df as f32;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// Accumulates BM25F scores of every document matching any term.
    fn score(&self, terms: &[WeightedTerm]) -> Scores {
        let k1 = self.params.k1;
        let norm = Norm::new(&self.params, self.total_field_lens(), self.len());
        let mut s = Scores {
            acc: vec![0.0; self.slot_count()],
            mask: vec![0; self.slot_count()],
            touched: Vec::new(),
            cover: vec![[0.0; 2]; self.slot_count()],
        };
        for t in terms {
            let Some(postings) = self.postings(&t.text) else {
                continue;
            };
            let qw = t.weight * self.idf(postings.len());
            let cover = match t.covers {
                Covers::Word => [qw, 0.0],
                Covers::Cjk => [0.0, qw],
                Covers::No => [0.0; 2],
            };
            for posting in postings.iter() {
                let d = posting.doc as usize;
                let (Some(lens), Some(acc), Some(mask), Some(covered)) = (
                    self.field_lens(posting.doc),
                    s.acc.get_mut(d),
                    s.mask.get_mut(d),
                    s.cover.get_mut(d),
                ) else {
                    continue;
                };
                let (tf, bits) = norm.tf(&posting.tf, &lens);
                if *mask == 0 {
                    s.touched.push(posting.doc);
                }
                *mask |= bits;
                covered[0] += cover[0];
                covered[1] += cover[1];
                *acc += qw * tf / (k1 + tf);
            }
        }
        s
    }

    /// Scored documents that pass the filter, unsorted. Each score is scaled
    /// by the document's coverage of the query to the power
    /// [`COVERAGE_EXPONENT`]: the idf-weighted share of the query's words
    /// (`query_mass`) it holds, its CJK terms counting only when held.
    fn candidates(&self, s: &Scores, filter: &Filter, query_mass: f32) -> Vec<(f32, u32)> {
        s.touched
            .iter()
            .filter_map(|&slot| {
                let mut score = *s.acc.get(slot as usize)?;
                // CJK terms held count as covered and their mass joins the
                // whole; CJK terms missing are not counted as missing.
                let [words, cjk] = s.cover.get(slot as usize).copied().unwrap_or_default();
                let whole = query_mass + cjk;
                if whole > 0.0 {
                    score *= ((words + cjk) / whole).min(1.0).powf(COVERAGE_EXPONENT);
                }
                (score > 0.0 && self.passes(slot, filter)).then_some((score, slot))
            })
            .collect()
    }

    /// Orders `ranked` best first (ties by id) and keeps the first `k`.
    pub(super) fn top_k(&self, ranked: &mut Vec<(f32, u32)>, k: usize) {
        let cmp = |a: &(f32, u32), b: &(f32, u32)| -> Ordering {
            b.0.total_cmp(&a.0).then_with(|| self.cmp_ids(a.1, b.1))
        };
        if ranked.len() > k && k > 0 {
            // The k-th best score first (plain number compares over every hit), so the
            // full order is taken only over the hits that can be among the first k.
            let mut best: BinaryHeap<Reverse<u32>> = BinaryHeap::with_capacity(k + 1);
            for r in ranked.iter() {
                let key = score_key(r.0);
                if best.len() < k {
                    best.push(Reverse(key));
                } else if best.peek().is_some_and(|m| key > m.0) {
                    best.pop();
                    best.push(Reverse(key));
                }
            }
            if let Some(&Reverse(kth)) = best.peek() {
                ranked.retain(|r| score_key(r.0) >= kth);
            }
            if ranked.len() > k {
                ranked.select_nth_unstable_by(k - 1, cmp);
                ranked.truncate(k);
            }
        }
        ranked.sort_unstable_by(cmp);
    }

    /// RM3-style expansion terms learnt from the top documents of `ranked`.
    fn expansion_terms(
        &self,
        ranked: &[(f32, u32)],
        query: &[WeightedTerm],
        fb: &FeedbackParams,
    ) -> Vec<WeightedTerm> {
        let mut top = ranked.to_vec();
        self.top_k(&mut top, fb.docs);
        let total: f32 = top.iter().map(|r| r.0).sum();
        if total <= 0.0 {
            return Vec::new();
        }
        let n = self.len() as f32;
        let w = &self.params.weights;
        let mut model: HashMap<Box<str>, f32> = HashMap::new();
        for &(score, slot) in &top {
            let Some(lens) = self.field_lens(slot) else {
                continue;
            };
            let len: f32 = (0..Field::COUNT)
                .map(|f| w[f] * lens[f] as f32)
                .sum::<f32>()
                .max(1.0);
            for (text, doc_tf) in self.doc_terms(slot) {
                // Skip very common terms and single CJK characters.
                if is_single_cjk(&text) {
                    continue;
                }
                let df = self.doc_freq(&text);
                if df as f32 > n * 0.1 || df < 2 {
                    continue;
                }
                let tf: f32 = (0..Field::COUNT)
                    .map(|f| w[f] * f32::from(doc_tf[f]))
                    .sum();
                let idf = self.idf(df);
                *model.entry(text).or_insert(0.0) += (score / total) * (tf / len) * idf;
            }
        }
        for q in query {
            model.remove(&q.text);
        }
        let mut cands: Vec<(Box<str>, f32)> = model.into_iter().collect();
        cands.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        cands.truncate(fb.terms);
        let mass: f32 = cands.iter().map(|c| c.1).sum();
        let qmass: f32 = query.iter().map(|q| q.weight).sum();
        if mass <= 0.0 {
            return Vec::new();
        }
        cands
            .into_iter()
            .map(|(text, v)| WeightedTerm {
                text,
                weight: fb.weight * qmass * v / mass,
                covers: Covers::No,
            })
            .collect()
    }

    /// Adds to each hit a share of the best scores of other hits with the same path.
    fn apply_group_boost(&self, ranked: &mut [(f32, u32)], weight: f32) {
        // Best two scores per path.
        let paths: Vec<Option<&str>> =
            ranked.iter().map(|&(_, slot)| self.meta_at(slot).map(|m| m.group.path)).collect();
        let mut best: HashMap<&str, [f32; 2]> = HashMap::new();
        for (&(score, _), path) in ranked.iter().zip(&paths) {
            let Some(path) = path else {
                continue;
            };
            let b = best.entry(path).or_insert([0.0; 2]);
            if score > b[0] {
                b[1] = b[0];
                b[0] = score;
            } else if score > b[1] {
                b[1] = score;
            }
        }
        let mut boosts = Vec::with_capacity(ranked.len());
        for (&(score, _), path) in ranked.iter().zip(&paths) {
            let boost = path
                .and_then(|p| best.get(p))
                .map_or(0.0, |b| {
                    // Exclude the document's own score from its group's evidence.
                    if score >= b[0] { b[1] } else { b[0] }
                });
            boosts.push(boost);
        }
        for (r, boost) in ranked.iter_mut().zip(boosts) {
            r.0 += weight * boost;
        }
    }
}

impl SearchIndex {
    /// Re-orders `ranked` (best first) by `lexical / best + RERANK_WEIGHT × cosine`
    /// of the query's and each hit's (title + body) word-vector means.
    fn rerank(&self, ranked: &mut [(f32, u32)], emb: &Embeddings, query: &str) {
        let Some(q) = emb.embed(query) else { return };
        let best = ranked.first().map_or(1.0, |r| r.0).max(f32::MIN_POSITIVE);
        for r in ranked.iter_mut() {
            let sim = self
                .doc_at(r.1)
                .and_then(|d| emb.embed(&format!("{}\n{}", d.title, d.body)))
                .map_or(0.0, |d| cosine(&q, &d));
            r.0 = r.0 / best + RERANK_WEIGHT * sim;
        }
        ranked.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    }
}

/// How many hits [`SearchIndex::final_order`] orders: the limit, or the re-ranking depth.
fn final_depth(req: &SearchRequest) -> usize {
    if req.embeddings.is_some() { req.limit.max(RERANK_DEPTH) } else { req.limit }
}

/// Whether a query term is a CJK character or bigram. Such terms count for
/// coverage only when a document holds them: a CJK run is not cut into
/// words, its bigrams overlap and straddle word boundaries, and question
/// phrases (什么时候, 有没有) are no part of the topic, so a missing bigram
/// says little about whether a document answers.
fn is_cjk_term(text: &str) -> bool {
    text.chars().next().is_some_and(is_cjk)
}

/// A score as a number whose order is [`f32::total_cmp`]'s.
fn score_key(s: f32) -> u32 {
    let b = s.to_bits();
    if b >> 31 == 1 { !b } else { b | 1 << 31 }
}

fn is_single_cjk(text: &str) -> bool {
    let mut chars = text.chars();
    matches!((chars.next(), chars.next()), (Some(c), None) if is_cjk(c))
}
