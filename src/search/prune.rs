//! Top-k by dynamic pruning: block-max MaxScore over the query's posting lists.
//!
//! The exhaustive scorer (`rank.rs`) adds every posting of every query term
//! into per-slot accumulators; on a large pack a frequent word or a single
//! CJK character has a list holding half the documents. Here documents are
//! taken in slot order from the lists of the terms that can still lift a
//! document into the best `n` ("essential" terms), and a document, or a run
//! of them, is skipped when an upper bound of its score is below the `n`-th
//! best score found so far (`θ`):
//!
//! * **Term bound.** A term's score in a document is `qw·idf · x/(k1+x)`,
//!   rising with the document's saturating frequency `x` (BM25F). Each block
//!   of [`BLOCK`] postings of a stored list keeps the largest `x` in it,
//!   computed under the segment's own average field lengths when the list is
//!   first read ([`block_maxima`], cached with the list; a short list read per
//!   query gets a looser bound that reads no length). The averages move as
//!   documents come and go; `x` under the current averages is at most
//!   [`Norm::drift`] times `x` under the segment's, so the bound holds
//!   without recomputing. The in-memory part's postings (documents changed
//!   since the segment was written) form one more block, measured per query.
//! * **Coverage.** A score is multiplied by the document's coverage of the
//!   query, which only grows with the set of terms it holds; a bound over a
//!   set of terms uses that set's coverage.
//! * **MaxScore.** Terms sorted by bound: the longest prefix whose bound
//!   stays under `θ` is non-essential — a document holding only those terms
//!   cannot enter — so only the other lists are walked, and the non-essential
//!   ones are probed for the documents found there.
//! * **Block-max.** Before a document is scored, the block bounds of the lists
//!   standing on it (plus the non-essential terms' bounds) are checked; when
//!   under `θ`, every document up to the end of the first of those blocks
//!   (or the next document of another essential list) is skipped.
//!
//! Scores are computed with the same operations in the same order as the
//! exhaustive scorer, and bounds carry a small margin ([`MARGIN`]) over float
//! rounding, so the best `n` (ties by id) are exactly the exhaustive ones
//! (`prune_tests.rs` compares the two).

use super::doc::Field;
use super::filter::Filter;
use super::index::{FieldTf, Posting, PostingList, SearchIndex};
use super::params::{Bm25Params, COVERAGE_EXPONENT};
use super::rank::{Covers, WeightedTerm};

/// Postings per block of a stored list's bounds.
pub(super) const BLOCK: usize = 64;

/// Relative margin added to every bound: scores and bounds are summed in
/// different orders, so float rounding could put a bound a few units in the
/// last place under the score it bounds.
const MARGIN: f32 = 1.0 + 1e-4;

/// BM25F's per-field constants for one set of average field lengths: a
/// posting's saturating frequency is `Σ_f w_f·tf_f / (c0_f + c1_f·len_f)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Norm {
    w: [f32; Field::COUNT],
    c0: [f32; Field::COUNT],
    c1: [f32; Field::COUNT],
}

impl Norm {
    /// The constants for `n_docs` documents whose field lengths add up to `total_len`.
    pub(super) fn new(p: &Bm25Params, total_len: [u64; Field::COUNT], n_docs: usize) -> Self {
        let n_docs = n_docs.max(1) as f64;
        let mut n = Norm { w: p.weights, c0: [0.0; Field::COUNT], c1: [0.0; Field::COUNT] };
        for (f, &total) in total_len.iter().enumerate() {
            let avg = (total as f64 / n_docs).max(1.0) as f32;
            n.c0[f] = 1.0 - p.b[f];
            n.c1[f] = p.b[f] / avg;
        }
        n
    }

    /// The saturating frequency of a posting in a document of field lengths
    /// `lens`, and the fields it is in (one bit each).
    #[inline]
    pub(super) fn tf(&self, tf: &FieldTf, lens: &[u32; Field::COUNT]) -> (f32, u8) {
        let mut x = 0.0;
        let mut bits = 0u8;
        for f in 0..Field::COUNT {
            let n = tf[f];
            if n > 0 {
                x += self.w[f] * f32::from(n) / (self.c0[f] + self.c1[f] * lens[f] as f32);
                bits |= 1 << f;
            }
        }
        (x, bits)
    }

    /// How much larger a posting's frequency can be under `self` than under
    /// `then` (same weights and `b`, other average lengths): each field's
    /// denominator `c0 + c1·len` shrinks at most by `then.c1 / self.c1`.
    fn drift(&self, then: &Norm) -> f32 {
        (0..Field::COUNT)
            .map(|f| if self.c1[f] > 0.0 && then.c1[f] > self.c1[f] { then.c1[f] / self.c1[f] } else { 1.0 })
            .fold(1.0, f32::max)
    }
}

/// Whether the bounds hold for these parameters: frequencies rise with the
/// counts and fall with the lengths only when weights are non-negative, `b`
/// is in `0..=1` and `k1` is positive.
pub(super) fn prunable(p: &Bm25Params) -> bool {
    p.k1 > 0.0 && p.weights.iter().all(|w| *w >= 0.0) && p.b.iter().all(|b| (0.0..=1.0).contains(b))
}

/// The largest saturating frequency in each block of [`BLOCK`] postings of a
/// list (`lens`: the field lengths of a slot).
pub(super) fn block_maxima(list: &[Posting], norm: &Norm, lens: impl Fn(u32) -> Option<[u32; Field::COUNT]>) -> Vec<f32> {
    list.chunks(BLOCK)
        .map(|block| {
            block
                .iter()
                .filter_map(|p| Some(norm.tf(&p.tf, &lens(p.doc)?).0))
                .fold(0.0, f32::max)
        })
        .collect()
}

#[cfg(test)]
thread_local! {
    static EVALUATED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How many documents this thread's pruned searches scored since the last
/// call (tests: pruning must skip most of a long list).
#[cfg(test)]
pub(super) fn evaluated_reset() -> usize {
    EVALUATED.with(|e| e.replace(0))
}

/// Like [`block_maxima`] without reading field lengths (for short lists read
/// per query): a field holding a term `n` times is at least `n` tokens long,
/// so `n / (c0 + c1·n)` bounds its share.
pub(super) fn block_bounds_by_counts(list: &[Posting], norm: &Norm) -> Vec<f32> {
    list.chunks(BLOCK)
        .map(|block| {
            block
                .iter()
                .map(|p| norm.tf(&p.tf, &p.tf.map(u32::from)).0)
                .fold(0.0, f32::max)
        })
        .collect()
}

/// A scored document: its score, slot and the fields the query matched.
#[derive(Debug, Clone, Copy)]
pub(super) struct Scored {
    pub score: f32,
    pub slot: u32,
    pub mask: u8,
}

/// One query term's list, walked in slot order: the stored segment's
/// postings, then the in-memory part's.
struct Cursor<'a> {
    /// Query weight × idf.
    qw: f32,
    /// What the term adds to coverage: `[word, CJK]`.
    cover: [f32; 2],
    stored: &'a [Posting],
    /// Largest frequency per block of `stored`, under the segment's norm.
    blocks: &'a [f32],
    /// Factor from the segment's norm to the current one ([`Norm::drift`]).
    drift: f32,
    mem: &'a [Posting],
    /// Slot of the first in-memory document.
    shift: u32,
    /// Largest frequency of `mem` under the current norm.
    mem_max: f32,
    /// Position in `stored` then `mem`.
    pos: usize,
    /// Bound of the term's score in any document.
    bound: f32,
}

impl Cursor<'_> {
    fn len(&self) -> usize {
        self.stored.len() + self.mem.len()
    }

    fn doc_at(&self, i: usize) -> u32 {
        match self.stored.get(i) {
            Some(p) => p.doc,
            None => self.mem.get(i - self.stored.len()).map_or(u32::MAX, |p| p.doc + self.shift),
        }
    }

    /// The current document (`None` past the end).
    fn doc(&self) -> Option<u32> {
        (self.pos < self.len()).then(|| self.doc_at(self.pos))
    }

    fn tf(&self) -> FieldTf {
        match self.stored.get(self.pos) {
            Some(p) => p.tf,
            None => self.mem.get(self.pos - self.stored.len()).map_or([0; Field::COUNT], |p| p.tf),
        }
    }

    /// Bound of the term's score in a document of frequency at most `x`.
    fn score_bound(&self, x: f32, k1: f32) -> f32 {
        if !x.is_finite() {
            return f32::INFINITY;
        }
        self.qw * x / (k1 + x) * MARGIN
    }

    /// Largest frequency in the current block, and the last slot of the block.
    fn block(&self) -> (f32, u32) {
        if self.pos < self.stored.len() {
            let b = self.pos / BLOCK;
            let last = ((b + 1) * BLOCK).min(self.stored.len()) - 1;
            let x = self.blocks.get(b).map_or(f32::INFINITY, |m| m * self.drift);
            (x, self.doc_at(last))
        } else {
            (self.mem_max, u32::MAX)
        }
    }

    /// Moves to the first posting at or after `target` (galloping).
    fn seek(&mut self, target: u32) {
        let len = self.len();
        if self.pos >= len || self.doc_at(self.pos) >= target {
            return;
        }
        // doc_at(lo) < target; hi == len or doc_at(hi) >= target.
        let (mut lo, mut step) = (self.pos, 1);
        let mut hi = loop {
            let probe = lo + step;
            if probe >= len {
                break len;
            }
            if self.doc_at(probe) >= target {
                break probe;
            }
            lo = probe;
            step *= 2;
        };
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.doc_at(mid) >= target {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        self.pos = hi;
    }
}

/// A query ready for pruned evaluation: each term's live list and weights.
pub(super) struct Pruner<'a> {
    index: &'a SearchIndex,
    lists: Vec<(PostingList<'a>, f32, [f32; 2])>,
    norm: Norm,
    drift: f32,
    k1: f32,
    query_mass: f32,
}

impl<'a> Pruner<'a> {
    /// Prepares `terms` (in query order; terms no live document holds are
    /// left out, as the exhaustive scorer does).
    pub(super) fn new(index: &'a SearchIndex, terms: &[WeightedTerm], query_mass: f32) -> Self {
        let p = index.params();
        let norm = Norm::new(p, index.total_field_lens(), index.len());
        let seg_norm = index.segment_norm();
        let lists = terms
            .iter()
            .filter_map(|t| {
                let list = index.postings_bounded(&t.text, seg_norm.as_ref())?;
                let qw = t.weight * index.idf(list.len());
                let cover = match t.covers {
                    Covers::Word => [qw, 0.0],
                    Covers::Cjk => [0.0, qw],
                    Covers::No => [0.0; 2],
                };
                Some((list, qw, cover))
            })
            .collect();
        Pruner {
            index,
            lists,
            drift: seg_norm.map_or(1.0, |s| norm.drift(&s)),
            norm,
            k1: p.k1,
            query_mass,
        }
    }

    /// The coverage factor of a document holding `words` and `cjk` of the
    /// query's weight (as the exhaustive scorer applies it).
    fn coverage(&self, words: f32, cjk: f32) -> Option<f32> {
        let whole = self.query_mass + cjk;
        (whole > 0.0).then(|| ((words + cjk) / whole).min(1.0).powf(COVERAGE_EXPONENT))
    }

    /// Bound of the score of a document holding at most terms whose bounds
    /// add up to `sum` and whose coverage weights add up to `words`, `cjk`.
    fn bound(&self, sum: f32, words: f32, cjk: f32) -> f32 {
        sum * self.coverage(words, cjk).unwrap_or(1.0) * MARGIN
    }

    /// The score and matched fields of one live slot, `None` when it holds no
    /// term of the query or is not live: what the exhaustive scorer gives it.
    pub(super) fn score_at(&self, slot: u32) -> Option<(f32, u8)> {
        let lens = self.index.live_lens(slot)?;
        let mut acc = 0.0;
        let (mut words, mut cjk, mut mask) = (0.0, 0.0, 0u8);
        for (list, qw, cover) in &self.lists {
            let Some(tf) = list.find(slot) else { continue };
            let (x, bits) = self.norm.tf(&tf, &lens);
            mask |= bits;
            words += cover[0];
            cjk += cover[1];
            acc += qw * x / (self.k1 + x);
        }
        (mask != 0).then(|| (self.covered(acc, words, cjk), mask))
    }

    fn covered(&self, acc: f32, words: f32, cjk: f32) -> f32 {
        match self.coverage(words, cjk) {
            Some(c) => acc * c,
            None => acc,
        }
    }

    /// The best `n` documents passing `filter` (score above 0), best first,
    /// ties by id: the first `n` of the exhaustive scorer's candidates.
    pub(super) fn top(&self, n: usize, filter: &Filter) -> Vec<Scored> {
        let index = self.index;
        let mut cur: Vec<Cursor<'_>> = self
            .lists
            .iter()
            .map(|(list, qw, cover)| {
                let (stored, blocks, mem, shift) = list.parts();
                let mem_max = mem
                    .iter()
                    .filter_map(|p| Some(self.norm.tf(&p.tf, &index.field_lens(p.doc + shift)?).0))
                    .fold(0.0, f32::max);
                let stored_max = blocks.iter().copied().fold(0.0, f32::max) * self.drift;
                let mut c = Cursor {
                    qw: *qw,
                    cover: *cover,
                    stored,
                    blocks,
                    drift: self.drift,
                    mem,
                    shift,
                    mem_max,
                    pos: 0,
                    bound: 0.0,
                };
                // A list without bounds (none given) is never skipped.
                let x = if blocks.len() < stored.len().div_ceil(BLOCK) { f32::INFINITY } else { stored_max.max(mem_max) };
                c.bound = c.score_bound(x, self.k1);
                c
            })
            .collect();
        let m = cur.len();
        // Terms by bound, smallest first; prefix sums of bounds and coverage.
        let mut order: Vec<usize> = (0..m).collect();
        order.sort_by(|&a, &b| cur[a].bound.total_cmp(&cur[b].bound));
        let mut pre = vec![(0.0f32, 0.0f32, 0.0f32); m + 1];
        for (j, &t) in order.iter().enumerate() {
            let (s, w, c) = pre[j];
            pre[j + 1] = (s + cur[t].bound, w + cur[t].cover[0], c + cur[t].cover[1]);
        }
        let cmp = |a: &Scored, b: &Scored| b.score.total_cmp(&a.score).then_with(|| index.cmp_ids(a.slot, b.slot));
        let mut top: Vec<Scored> = Vec::with_capacity(n + 1);
        let mut theta = f32::NEG_INFINITY;
        let mut ne = 0; // order[..ne]: non-essential terms
        let mut contrib: Vec<Option<(f32, u8)>> = vec![None; m];
        loop {
            let mut d = u32::MAX;
            for &t in &order[ne..] {
                if let Some(x) = cur[t].doc() {
                    d = d.min(x);
                }
            }
            if d == u32::MAX {
                break;
            }
            let (ne_sum, ne_w, ne_c) = pre[ne];
            if top.len() == n {
                // Block bounds of the lists standing on `d`.
                let (mut s, mut w, mut c) = (ne_sum, ne_w, ne_c);
                for &t in &order[ne..] {
                    if cur[t].doc() == Some(d) {
                        s += cur[t].score_bound(cur[t].block().0, self.k1);
                        w += cur[t].cover[0];
                        c += cur[t].cover[1];
                    }
                }
                if self.bound(s, w, c) < theta {
                    let mut target = u32::MAX;
                    for &t in &order[ne..] {
                        match cur[t].doc() {
                            Some(x) if x == d => target = target.min(cur[t].block().1.saturating_add(1)),
                            Some(x) => target = target.min(x),
                            None => {}
                        }
                    }
                    for &t in &order[ne..] {
                        if cur[t].doc() == Some(d) {
                            if target == u32::MAX {
                                cur[t].pos = cur[t].len();
                            } else {
                                cur[t].seek(target);
                            }
                        }
                    }
                    continue;
                }
            }
            if let Some(lens) = index.live_lens(d) {
                // The essential terms' exact share, then the rest when it can matter.
                let (mut s, mut w, mut c) = (ne_sum, ne_w, ne_c);
                for &t in &order[ne..] {
                    if cur[t].doc() == Some(d) {
                        let (x, bits) = self.norm.tf(&cur[t].tf(), &lens);
                        contrib[t] = Some((cur[t].qw * x / (self.k1 + x), bits));
                        s += cur[t].qw * x / (self.k1 + x);
                        w += cur[t].cover[0];
                        c += cur[t].cover[1];
                    }
                }
                if top.len() < n || self.bound(s, w, c) >= theta {
                    for &t in &order[..ne] {
                        cur[t].seek(d);
                        if cur[t].doc() == Some(d) {
                            let (x, bits) = self.norm.tf(&cur[t].tf(), &lens);
                            contrib[t] = Some((cur[t].qw * x / (self.k1 + x), bits));
                        }
                    }
                    #[cfg(test)]
                    EVALUATED.with(|e| e.set(e.get() + 1));
                    // The exact score: terms in query order, as the exhaustive scorer adds them.
                    let (mut acc, mut words, mut cjk, mut mask) = (0.0f32, 0.0f32, 0.0f32, 0u8);
                    for (t, c) in contrib.iter().enumerate() {
                        if let Some((v, bits)) = *c {
                            mask |= bits;
                            words += cur[t].cover[0];
                            cjk += cur[t].cover[1];
                            acc += v;
                        }
                    }
                    let score = self.covered(acc, words, cjk);
                    let e = Scored { score, slot: d, mask };
                    if score > 0.0
                        && (top.len() < n || top.last().is_some_and(|l| cmp(&e, l).is_lt()))
                        && index.passes(d, filter)
                    {
                        let at = top.partition_point(|x| cmp(x, &e).is_lt());
                        top.insert(at, e);
                        top.truncate(n);
                        if top.len() == n {
                            theta = top[n - 1].score;
                            while ne < m && self.bound(pre[ne + 1].0, pre[ne + 1].1, pre[ne + 1].2) < theta {
                                ne += 1;
                            }
                        }
                    }
                }
                contrib.iter_mut().for_each(|c| *c = None);
            }
            for &t in &order[ne..] {
                if cur[t].doc() == Some(d) {
                    cur[t].pos += 1;
                }
            }
        }
        top
    }
}
