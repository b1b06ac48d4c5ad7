//! Boosts applied after the lexical scores: entries next to a strong hit in
//! time, and entries inside a time span the query names ("last week", "去年").

use std::collections::{HashMap, HashSet};

use super::dates::doc_date_terms;
use super::filter::Filter;
use super::index::SearchIndex;
use super::params::{NEIGHBOUR_MAX_GAP, NEIGHBOUR_SOURCES, NEIGHBOURS_PER_SIDE, TIME_BOOST, TIME_FILL_DAYS};
use super::request::SearchRequest;
use super::when::{TimeSpan, query_time_spans};

/// A hit lending score to its neighbours: (score, slot) and the neighbours
/// with their rank on their side.
pub(super) type NeighbourSource = ((f32, u32), Vec<(usize, u32)>);

impl SearchIndex {
    /// Lends each source's score ([`Self::neighbour_sources`]) to the entries next to it in
    /// time (same pack, same day, at most [`NEIGHBOUR_MAX_GAP`] apart;
    /// [`NEIGHBOURS_PER_SIDE`] on each side, the nearer weighing more) that are
    /// hits themselves: neighbours are re-ranked, never added. Shares offered
    /// to one entry add up. Returns, for each entry whose shares outweigh its
    /// own score (it ranks where it does mostly for being beside a stronger
    /// hit), the slot of the hit that lent it the most.
    pub(super) fn apply_neighbour_boost(
        &self,
        ranked: &mut [(f32, u32)],
        weight: f32,
        sources: &[NeighbourSource],
    ) -> HashMap<u32, u32> {
        let hits: HashSet<u32> = ranked.iter().map(|r| r.1).collect();
        // slot -> (total share, best share, its source)
        let mut offered: HashMap<u32, (f32, f32, u32)> = HashMap::new();
        for ((score, slot), neighbours) in sources {
            let (score, slot) = (*score, *slot);
            for &(rank, n) in neighbours {
                if !hits.contains(&n) {
                    continue;
                }
                let share = weight * score / (1 + rank) as f32;
                let e = offered.entry(n).or_insert((0.0, 0.0, slot));
                e.0 += share;
                if share > e.1 {
                    (e.1, e.2) = (share, slot);
                }
            }
        }
        let mut beside = HashMap::new();
        for r in ranked.iter_mut() {
            if let Some((share, _, source)) = offered.remove(&r.1) {
                if share > r.0 {
                    beside.insert(r.1, source);
                }
                r.0 += share;
            }
        }
        beside
    }

    /// The strongest hits of `ranked` (at most [`NEIGHBOUR_SOURCES`], best
    /// first) with their neighbours in time ([`Self::time_neighbours`]).
    pub(super) fn neighbour_sources(&self, ranked: &[(f32, u32)]) -> Vec<NeighbourSource> {
        let mut sources = ranked.to_vec();
        self.top_k(&mut sources, NEIGHBOUR_SOURCES);
        sources.into_iter().map(|s| (s, self.time_neighbours(s.1))).collect()
    }

    /// The entries nearest in time to `slot` on each side (same pack, same
    /// UTC day), with their rank (0 = nearest) on that side.
    fn time_neighbours(&self, slot: u32) -> Vec<(usize, u32)> {
        let Some(meta) = self.meta_at(slot) else { return Vec::new() };
        let Some(t) = meta.time else { return Vec::new() };
        let [_, _, day] = doc_date_terms(t);
        // Nearest first on each side: (gap, slot), at most NEIGHBOURS_PER_SIDE each.
        // Ties go by id (`cmp_ids`), never by slot number: slots differ between an index
        // and its stored copy.
        let mut before: Vec<(u64, u32)> = Vec::new();
        let mut after: Vec<(u64, u32)> = Vec::new();
        let key_less = |a: &(u64, u32), b: &(u64, u32)| a.0.cmp(&b.0).then_with(|| self.cmp_ids(a.1, b.1)).is_lt();
        let consider = |doc: u32, before: &mut Vec<(u64, u32)>, after: &mut Vec<(u64, u32)>| {
            if doc == slot {
                return;
            }
            let Some(other) = self.meta_at(doc) else { return };
            let Some(u) = other.time else { return };
            if u.abs_diff(t) > NEIGHBOUR_MAX_GAP as u64 || other.group.pack != meta.group.pack {
                return;
            }
            // Same time: the smaller id counts as before.
            let side = if u < t || (u == t && self.cmp_ids(doc, slot).is_lt()) { before } else { after };
            let key = (u.abs_diff(t), doc);
            let at = side.partition_point(|e| key_less(e, &key));
            if at < NEIGHBOURS_PER_SIDE {
                side.insert(at, key);
                side.truncate(NEIGHBOURS_PER_SIDE);
            }
        };
        for doc in self.changed_with(&day) {
            consider(doc, &mut before, &mut after);
        }
        // The stored entries nearest first, until neither side can take one more.
        let full = |side: &[(u64, u32)], gap: u64| side.len() == NEIGHBOURS_PER_SIDE && side.iter().all(|e| e.0 < gap);
        for (gap, doc) in self.stored_near_in_time(&day, t) {
            if gap > NEIGHBOUR_MAX_GAP as u64 || (full(&before, gap) && full(&after, gap)) {
                break;
            }
            consider(doc, &mut before, &mut after);
        }
        before.iter().enumerate().chain(after.iter().enumerate()).map(|(r, e)| (r, e.1)).collect()
    }

    /// The spans of the time expressions of the query, resolved against the
    /// request's `now` (or, without one, the newest entry).
    pub(super) fn query_spans(&self, req: &SearchRequest) -> Vec<TimeSpan> {
        if req.now.is_none() && query_time_spans(&req.query, 0).is_empty() {
            return Vec::new(); // no time words: spare the look for the newest entry
        }
        let anchor = req.now.or_else(|| self.newest_time());
        anchor.map(|a| query_time_spans(&req.query, a)).unwrap_or_default()
    }

    fn newest_time(&self) -> Option<i64> {
        (0..self.slot_count() as u32).filter_map(|s| self.time_at(s)).max()
    }

    /// Raises the hits inside `spans` by [`TIME_BOOST`] of their score. When
    /// no hit lies in a span resolved against `now`, the spans are resolved
    /// again against the newest hit (a question about "last week" in memories
    /// that stopped a while ago means the last week of those memories). When
    /// the query matched nothing but names a time, the entries of that time
    /// (at most [`TIME_FILL_DAYS`] days of them) are the hits, newest first.
    pub(super) fn apply_time_boost(&self, ranked: &mut Vec<(f32, u32)>, req: &SearchRequest, spans: &[TimeSpan]) {
        let time_of = |slot: u32| self.time_at(slot);
        let inside = |spans: &[TimeSpan], slot: u32| time_of(slot).is_some_and(|t| spans.iter().any(|s| s.contains(t)));
        let mut spans = spans.to_vec();
        if req.now.is_some()
            && !ranked.iter().any(|r| inside(&spans, r.1))
            && let Some(newest) = ranked.iter().filter_map(|r| time_of(r.1)).max()
        {
            spans = query_time_spans(&req.query, newest);
        }
        if ranked.is_empty() {
            self.fill_from_spans(ranked, &req.filter, &spans);
            return;
        }
        for r in ranked.iter_mut() {
            if inside(&spans, r.1) {
                r.0 *= 1.0 + TIME_BOOST;
            }
        }
    }

    /// The entries inside `spans` (found through their day terms), scored so
    /// that newer entries come first.
    fn fill_from_spans(&self, ranked: &mut Vec<(f32, u32)>, filter: &Filter, spans: &[TimeSpan]) {
        for span in spans {
            let first = span.start.div_euclid(86_400);
            let last = (span.end - 1).div_euclid(86_400).min(first + TIME_FILL_DAYS);
            for day in first..=last {
                let [_, _, term] = doc_date_terms(day * 86_400);
                let Some(postings) = self.postings(&term) else { continue };
                for p in postings.iter() {
                    let Some(time) = self.time_at(p.doc) else { continue };
                    if span.contains(time) && self.passes(p.doc, filter) {
                        // Newer first; the score stays small and positive.
                        let age = (span.end - time).max(0) as f32 / 86_400.0;
                        ranked.push((1.0 / (1.0 + age), p.doc));
                    }
                }
            }
        }
        ranked.sort_unstable_by_key(|r| r.1);
        ranked.dedup_by_key(|r| r.1);
    }
}
