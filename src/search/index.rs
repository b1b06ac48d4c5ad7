//! The in-memory inverted index and its incremental maintenance.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use super::dates::doc_date_terms;
use super::doc::{Document, Field};
use super::error::SearchError;
use super::error::SnapshotError;
use super::filter::Filter;
use super::meta::DocMeta;
use super::params::Bm25Params;
use super::prune::Norm;
use super::segment::{Segment, SegmentSource};
use super::tokenize::Tokenizer;

/// Freed slots are reclaimed (by renumbering) once there are at least this
/// many and they are at least half of all slots.
const COMPACT_MIN_FREE: usize = 1024;

/// Per-field term frequencies (saturating at 255) of one term in one document.
pub(super) type FieldTf = [u8; Field::COUNT];

/// One entry of a posting list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Posting {
    /// Document slot.
    pub doc: u32,
    /// Term frequency in each field.
    pub tf: FieldTf,
}

/// A term and the documents that contain it, sorted by slot.
#[derive(Debug, Clone)]
pub(super) struct Term {
    pub text: Box<str>,
    pub postings: Vec<Posting>,
}

/// The live postings of one term: the stored segment's (less its dead
/// documents) then the in-memory part's, in slot order.
pub(super) struct PostingList<'a> {
    stored: Option<Arc<[Posting]>>,
    /// Bounds of the stored postings' blocks, when asked for (`prune.rs`).
    bounds: Option<Arc<[f32]>>,
    /// The dead-slot bits, when some stored posting may be dead.
    dead: Option<&'a [u64]>,
    mem: &'a [Posting],
    /// Slot of the first in-memory document.
    shift: u32,
    len: usize,
}

impl<'a> PostingList<'a> {
    /// Number of live documents with the term.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The stored postings (dead ones included), their block bounds (empty
    /// when not asked for), the in-memory postings and the first in-memory slot.
    pub(super) fn parts(&self) -> (&[Posting], &[f32], &'a [Posting], u32) {
        (self.stored.as_deref().unwrap_or_default(), self.bounds.as_deref().unwrap_or_default(), self.mem, self.shift)
    }

    /// The frequencies of the term in a slot (live or dead), if it holds the term.
    pub(super) fn find(&self, slot: u32) -> Option<FieldTf> {
        let (list, doc) = match slot.checked_sub(self.shift) {
            Some(s) => (self.mem, s),
            None => (self.stored.as_deref().unwrap_or_default(), slot),
        };
        let i = list.binary_search_by_key(&doc, |p| p.doc).ok()?;
        list.get(i).map(|p| p.tf)
    }

    /// The postings, in slot order.
    pub(super) fn iter(&self) -> impl Iterator<Item = Posting> + '_ {
        let dead = self.dead;
        let alive = move |p: &&Posting| {
            dead.is_none_or(|d| d.get(p.doc as usize / 64).is_none_or(|w| w & (1 << (p.doc % 64)) == 0))
        };
        let shift = self.shift;
        self.stored
            .as_deref()
            .unwrap_or_default()
            .iter()
            .filter(alive)
            .copied()
            .chain(self.mem.iter().map(move |p| Posting { doc: p.doc + shift, tf: p.tf }))
    }
}

/// (time, slot) entries sorted by time, walked outward from a time `t`:
/// yields (distance, slot), nearest first.
struct Outward {
    list: Arc<[(i64, u32)]>,
    t: i64,
    /// Entries below `down` and from `up` on are not yielded yet.
    down: usize,
    up: usize,
}

impl Iterator for Outward {
    type Item = (u64, u32);

    fn next(&mut self) -> Option<(u64, u32)> {
        let below = self.down.checked_sub(1).and_then(|i| self.list.get(i)).map(|e| (self.t.abs_diff(e.0), e.1));
        let above = self.list.get(self.up).map(|e| (self.t.abs_diff(e.0), e.1));
        match (below, above) {
            (Some(b), Some(a)) if b.0 <= a.0 => {
                self.down -= 1;
                Some(b)
            }
            (_, Some(a)) => {
                self.up += 1;
                Some(a)
            }
            (Some(b), None) => {
                self.down -= 1;
                Some(b)
            }
            (None, None) => None,
        }
    }
}

/// A document held by the index, with the term ids it was indexed under.
#[derive(Debug, Clone)]
pub(super) struct Stored {
    pub doc: Document,
    /// Distinct term ids of the document, sorted.
    pub terms: Box<[u32]>,
}

/// A ranked lexical index over [`Document`]s (BM25F over normalised tokens).
///
/// Updates are incremental: [`SearchIndex::upsert`] and [`SearchIndex::remove`]
/// touch only the posting lists of the document's own terms.
///
/// An index opened from a stored segment ([`SearchIndex::open_segment`])
/// reads the segment in place and keeps its changes in memory: a removed or
/// replaced document of the segment is marked dead, and new documents go to
/// an in-memory part whose slots follow the segment's. Cloning shares the
/// segment.
#[derive(Clone)]
pub struct SearchIndex {
    pub(super) params: Bm25Params,
    /// The stored segment under the in-memory part, if any.
    pub(super) base: Option<Arc<Segment>>,
    /// Dead slots of the segment (one bit each).
    dead: Vec<u64>,
    n_dead: usize,
    /// How many dead documents hold each segment term (by term index).
    dead_df: HashMap<u32, u32>,
    pub(super) term_ids: HashMap<Box<str>, u32>,
    pub(super) terms: Vec<Term>,
    /// Document slots; `None` marks a free slot.
    pub(super) docs: Vec<Option<Stored>>,
    /// Token count of each field of each slot (zeros for free slots).
    pub(super) lens: Vec<[u32; Field::COUNT]>,
    /// Sum of `lens` over live documents.
    pub(super) total_len: [u64; Field::COUNT],
    pub(super) free: Vec<u32>,
    pub(super) ids: HashMap<String, u32>,
    tokenizer: Tokenizer,
    scratch: HashMap<u32, FieldTf>,
}

impl Default for SearchIndex {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SearchIndex")
            .field("docs", &self.len())
            .field("stored", &self.base.as_ref().map(|b| b.n_slots()))
            .field("terms", &self.term_ids.len())
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

impl SearchIndex {
    /// Creates an empty index with default ranking parameters.
    pub fn new() -> Self {
        Self::with_params(Bm25Params::default())
    }

    /// Creates an empty index with the given ranking parameters.
    pub fn with_params(params: Bm25Params) -> Self {
        Self {
            params,
            base: None,
            dead: Vec::new(),
            n_dead: 0,
            dead_df: HashMap::new(),
            term_ids: HashMap::new(),
            terms: Vec::new(),
            docs: Vec::new(),
            lens: Vec::new(),
            total_len: [0; Field::COUNT],
            free: Vec::new(),
            ids: HashMap::new(),
            tokenizer: Tokenizer::new(),
            scratch: HashMap::new(),
        }
    }

    /// Builds an index from many documents (later duplicates of an id win).
    pub fn build(docs: impl IntoIterator<Item = Document>) -> Result<Self, SearchError> {
        let mut index = Self::new();
        for doc in docs {
            index.upsert(doc)?;
        }
        Ok(index)
    }

    /// The ranking parameters.
    pub fn params(&self) -> &Bm25Params {
        &self.params
    }

    /// Replaces the ranking parameters (takes effect on the next search).
    pub fn set_params(&mut self, params: Bm25Params) {
        self.params = params;
    }

    /// Opens a stored segment written by [`SearchIndex::to_snapshot`]: only
    /// its small tables are read now; posting lists and documents are read
    /// when a search needs them. With `verify`, every byte is checked against
    /// the checksum first (skip it only when the caller checked the bytes).
    pub fn open_segment(source: SegmentSource, verify: bool) -> Result<Self, SnapshotError> {
        let seg = Segment::open(source, verify)?;
        let mut index = Self::new();
        index.total_len = seg.total_len();
        index.dead = vec![0; (seg.n_slots() as usize).div_ceil(64)];
        index.base = Some(Arc::new(seg));
        Ok(index)
    }

    /// Whether a stored segment under the index could not be read after it
    /// was opened (the file was cut short or damaged since): results may be
    /// incomplete, and the owner should rebuild the index.
    pub fn is_damaged(&self) -> bool {
        self.base.as_ref().is_some_and(|b| b.failed())
    }

    /// Number of documents of the stored segment and of the in-memory part
    /// (live or dead): how much the in-memory part has grown.
    pub fn stored_and_changed(&self) -> (usize, usize) {
        (self.base_slots() as usize, self.ids.len() + self.n_dead)
    }

    /// Number of documents in the index.
    pub fn len(&self) -> usize {
        self.base_slots() as usize - self.n_dead + self.ids.len()
    }

    /// Whether the index holds no document.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The document stored under `id`.
    pub fn get(&self, id: &str) -> Option<Cow<'_, Document>> {
        if let Some(&slot) = self.ids.get(id) {
            return self.stored(slot).map(|s| Cow::Borrowed(&s.doc));
        }
        let base = self.base.as_ref()?;
        let slot = base.find_id(id)?;
        if self.is_dead(slot) {
            return None;
        }
        base.doc(slot).map(Cow::Owned)
    }

    /// Iterates over all documents (the stored segment's in id order, then
    /// the in-memory ones in slot order). Documents of a stored segment are
    /// read one by one.
    pub fn documents(&self) -> impl Iterator<Item = Cow<'_, Document>> {
        let base = self.base.as_deref();
        (0..self.base_slots())
            .filter(|&s| !self.is_dead(s))
            .filter_map(move |s| base?.doc(s).map(Cow::Owned))
            .chain(self.docs.iter().flatten().map(|s| Cow::Borrowed(&s.doc)))
    }

    /// Ids of the stored segment's documents (live or dead) made of `prefix`
    /// and digits (`<path>#<n>` for `prefix` = `<path>#`).
    pub fn stored_ids_with_prefix(&self, prefix: &str) -> Vec<String> {
        let Some(base) = self.base.as_ref() else {
            return Vec::new();
        };
        base.id_prefix_range(prefix)
            .filter_map(|s| base.id(s))
            .filter(|id| id.get(prefix.len()..).is_some_and(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit())))
            .map(str::to_owned)
            .collect()
    }

    /// How many documents were read from the stored segment since it was
    /// opened (each is a file read when the segment is a file).
    pub fn stored_doc_reads(&self) -> u64 {
        self.base.as_ref().map_or(0, |b| b.doc_reads())
    }

    /// The order of the ids of two live slots' documents. The stored
    /// segment's slots are in id order, so two of them need no id read.
    pub(super) fn cmp_ids(&self, a: u32, b: u32) -> std::cmp::Ordering {
        let stored = self.base_slots();
        if a < stored && b < stored {
            a.cmp(&b)
        } else {
            self.id_at(a).unwrap_or_default().cmp(&self.id_at(b).unwrap_or_default())
        }
    }

    fn base_slots(&self) -> u32 {
        self.base.as_ref().map_or(0, |b| b.n_slots())
    }

    pub(super) fn is_dead(&self, slot: u32) -> bool {
        self.dead.get(slot as usize / 64).is_some_and(|w| w & (1 << (slot % 64)) != 0)
    }

    /// Marks a live document of the segment dead.
    fn kill_base(&mut self, slot: u32) {
        let Some(base) = self.base.clone() else { return };
        let Some(w) = self.dead.get_mut(slot as usize / 64) else { return };
        *w |= 1 << (slot % 64);
        self.n_dead += 1;
        if let Some(l) = base.lens(slot) {
            for (total, len) in self.total_len.iter_mut().zip(l) {
                *total = total.saturating_sub(u64::from(len));
            }
        }
        // Its terms lose a document (document frequencies stay exact).
        if let Some(doc) = base.doc(slot) {
            for (text, _) in analyze(&mut self.tokenizer, &doc).1 {
                if let Some(t) = base.find_term(&text) {
                    *self.dead_df.entry(t).or_insert(0) += 1;
                }
            }
        }
    }

    pub(super) fn stored(&self, slot: u32) -> Option<&Stored> {
        self.docs.get(slot as usize).and_then(Option::as_ref)
    }

    /// Inserts `doc`, replacing any document with the same id.
    ///
    /// Returns `true` when a document was replaced. Fails only when the index
    /// cannot address more documents or terms.
    pub fn upsert(&mut self, doc: Document) -> Result<bool, SearchError> {
        // Every new term takes at least one byte of text, so this bounds term ids.
        let text_bytes = 64
            + doc.title.len()
            + doc.body.len()
            + doc.context.len()
            + doc.tags.iter().map(|t| t.len() + 1).sum::<usize>();
        if self.terms.len().saturating_add(text_bytes) >= u32::MAX as usize {
            return Err(SearchError::IndexFull);
        }
        let replaced = self.remove(&doc.id);
        // Slots are allocated append-only, so the new postings go at the end
        // of their lists (reusing a freed slot would insert them in the middle
        // of long lists); freed slots are reclaimed by compaction.
        if self.free.len() >= COMPACT_MIN_FREE && self.free.len() * 2 >= self.docs.len() {
            self.compact();
        }
        let slot = u32::try_from(self.docs.len()).map_err(|_| SearchError::IndexFull)?;
        if slot == u32::MAX {
            return Err(SearchError::IndexFull);
        }
        self.docs.push(None);
        self.lens.push([0; Field::COUNT]);

        self.scratch.clear();
        let lens = {
            let Self {
                tokenizer,
                term_ids,
                terms,
                scratch,
                ..
            } = self;
            for_each_term(tokenizer, &doc, |fi, text| {
                let id = intern(term_ids, terms, text);
                let tf = scratch.entry(id).or_insert([0; Field::COUNT]);
                tf[fi] = tf[fi].saturating_add(1);
            })
        };

        let mut entries: Vec<(u32, FieldTf)> = self.scratch.drain().collect();
        entries.sort_unstable_by_key(|e| e.0);
        for &(id, tf) in &entries {
            if let Some(term) = self.terms.get_mut(id as usize) {
                insert_posting(&mut term.postings, Posting { doc: slot, tf });
            }
        }
        for (total, len) in self.total_len.iter_mut().zip(lens) {
            *total += u64::from(len);
        }
        if let Some(l) = self.lens.get_mut(slot as usize) {
            *l = lens;
        }
        self.ids.insert(doc.id.clone(), slot);
        if let Some(s) = self.docs.get_mut(slot as usize) {
            *s = Some(Stored {
                doc,
                terms: entries.into_iter().map(|e| e.0).collect(),
            });
        }
        Ok(replaced)
    }

    /// Removes the document `id`. Returns whether it was present.
    pub fn remove(&mut self, id: &str) -> bool {
        let Some(slot) = self.ids.remove(id) else {
            let Some(slot) = self.base.as_ref().and_then(|b| b.find_id(id)) else {
                return false;
            };
            if self.is_dead(slot) {
                return false;
            }
            self.kill_base(slot);
            return true;
        };
        let Some(stored) = self.docs.get_mut(slot as usize).and_then(Option::take) else {
            return true;
        };
        for &t in stored.terms.iter() {
            if let Some(term) = self.terms.get_mut(t as usize)
                && let Ok(p) = term.postings.binary_search_by_key(&slot, |p| p.doc)
            {
                term.postings.remove(p);
            }
        }
        if let Some(l) = self.lens.get_mut(slot as usize) {
            for (total, len) in self.total_len.iter_mut().zip(*l) {
                *total = total.saturating_sub(u64::from(len));
            }
            *l = [0; Field::COUNT];
        }
        self.free.push(slot);
        true
    }

    /// Renumbers the live documents into consecutive slots (keeping their
    /// order, so posting lists stay sorted) and drops the freed slots.
    fn compact(&mut self) {
        let mut new_slot = vec![u32::MAX; self.docs.len()];
        let mut next = 0u32;
        for (old, d) in self.docs.iter().enumerate() {
            if d.is_some() {
                new_slot[old] = next;
                next += 1;
            }
        }
        for term in &mut self.terms {
            term.postings.retain_mut(|p| match new_slot.get(p.doc as usize) {
                Some(&n) if n != u32::MAX => {
                    p.doc = n;
                    true
                }
                _ => false,
            });
        }
        let mut lens = Vec::with_capacity(next as usize);
        let mut docs = Vec::with_capacity(next as usize);
        for (d, l) in std::mem::take(&mut self.docs).into_iter().zip(std::mem::take(&mut self.lens)) {
            if let Some(stored) = d {
                docs.push(Some(stored));
                lens.push(l);
            }
        }
        for slot in self.ids.values_mut() {
            if let Some(&n) = new_slot.get(*slot as usize) {
                *slot = n;
            }
        }
        self.docs = docs;
        self.lens = lens;
        self.free.clear();
    }

    /// Id of an existing term.
    fn term_id(&self, text: &str) -> Option<u32> {
        self.term_ids.get(text).copied()
    }

    // Read access for ranking. Ranking (`rank.rs`) reads the index only
    // through these, so the storage behind them (in memory, or a stored
    // segment read in place) can change without touching the ranking.

    /// Number of document slots (live or free); slots are `0..slot_count()`:
    /// the stored segment's first, then the in-memory part's.
    pub(super) fn slot_count(&self) -> usize {
        self.base_slots() as usize + self.docs.len()
    }

    /// Where a slot is: `Ok(segment slot)` or `Err(in-memory slot)`.
    fn locate(&self, slot: u32) -> Result<u32, u32> {
        let b = self.base_slots();
        if slot < b { Ok(slot) } else { Err(slot - b) }
    }

    /// Token count of each field of a slot (zeros for a free slot).
    pub(super) fn field_lens(&self, slot: u32) -> Option<[u32; Field::COUNT]> {
        match self.locate(slot) {
            Ok(s) => self.base.as_ref()?.lens(s),
            Err(s) => self.lens.get(s as usize).copied(),
        }
    }

    /// The field lengths of a live slot (`None` for a dead or free one).
    pub(super) fn live_lens(&self, slot: u32) -> Option<[u32; Field::COUNT]> {
        match self.locate(slot) {
            Ok(s) if self.is_dead(s) => None,
            Ok(s) => self.base.as_ref()?.lens(s),
            Err(s) => {
                self.stored(s)?;
                self.lens.get(s as usize).copied()
            }
        }
    }

    /// The norm the stored segment's block bounds are computed under: the
    /// current parameters with the segment's own average field lengths.
    pub(super) fn segment_norm(&self) -> Option<Norm> {
        let b = self.base.as_ref()?;
        Some(Norm::new(&self.params, b.total_len(), b.n_slots() as usize))
    }

    /// Sum of the field lengths of all live documents.
    pub(super) fn total_field_lens(&self) -> [u64; Field::COUNT] {
        self.total_len
    }

    /// The postings of a term (live documents only, sorted by slot); `None`
    /// when no live document has it.
    pub(super) fn postings(&self, text: &str) -> Option<PostingList<'_>> {
        self.postings_bounded(text, None)
    }

    /// [`Self::postings`], with the stored part's block bounds under
    /// `bounds_under` (the segment's [`Norm`]) when given.
    pub(super) fn postings_bounded(&self, text: &str, bounds_under: Option<&Norm>) -> Option<PostingList<'_>> {
        let mem = self
            .term_id(text)
            .and_then(|id| self.terms.get(id as usize))
            .map_or(&[][..], |t| t.postings.as_slice());
        let mut list = PostingList { stored: None, bounds: None, dead: None, mem, shift: 0, len: mem.len() };
        if let Some(base) = self.base.as_ref() {
            list.shift = base.n_slots();
            if let Some(t) = base.find_term(text) {
                let dead = self.dead_df.get(&t).copied().unwrap_or(0);
                let stored = match bounds_under {
                    Some(norm) => {
                        let (stored, bounds) = base.postings_bounded(t, norm);
                        list.bounds = Some(bounds);
                        stored
                    }
                    None => base.postings_shared(t),
                };
                list.len += stored.len().saturating_sub(dead as usize);
                // Dead documents are skipped only where the term has some.
                list.dead = (dead > 0).then_some(self.dead.as_slice());
                list.stored = Some(stored);
            }
        }
        (list.len > 0).then_some(list)
    }

    /// The stored segment's documents holding `term` (live or dead) with
    /// their distance in time from `t`, nearest first; then the caller stops.
    pub(super) fn stored_near_in_time(&self, term: &str, t: i64) -> impl Iterator<Item = (u64, u32)> + use<> {
        let list = self.base.as_ref().and_then(|b| Some(b.by_time(b.find_term(term)?))).unwrap_or_default();
        let at = list.partition_point(|e| e.0 < t);
        Outward { list, t, down: at, up: at }
    }

    /// The in-memory part's documents holding `term`.
    pub(super) fn changed_with(&self, term: &str) -> impl Iterator<Item = u32> + '_ {
        let shift = self.base_slots();
        self.term_id(term)
            .and_then(|id| self.terms.get(id as usize))
            .map_or(&[][..], |t| t.postings.as_slice())
            .iter()
            .map(move |p| p.doc + shift)
    }

    /// Number of live documents that contain a term.
    pub(super) fn doc_freq(&self, text: &str) -> usize {
        let mem = self
            .term_id(text)
            .and_then(|id| self.terms.get(id as usize))
            .map_or(0, |t| t.postings.len());
        let stored = self.base.as_ref().and_then(|b| {
            let t = b.find_term(text)?;
            let dead = self.dead_df.get(&t).copied().unwrap_or(0);
            Some(b.term_df(t).saturating_sub(dead) as usize)
        });
        mem + stored.unwrap_or(0)
    }

    /// The document in a slot (`None` for a free or dead slot).
    pub(super) fn doc_at(&self, slot: u32) -> Option<Cow<'_, Document>> {
        match self.locate(slot) {
            Ok(s) if !self.is_dead(s) => self.base.as_ref()?.doc(s).map(Cow::Owned),
            Ok(_) => None,
            Err(s) => self.stored(s).map(|s| Cow::Borrowed(&s.doc)),
        }
    }

    /// The id of the document in a slot.
    pub(super) fn id_at(&self, slot: u32) -> Option<Cow<'_, str>> {
        match self.locate(slot) {
            Ok(s) if !self.is_dead(s) => self.base.as_ref()?.id(s).map(Cow::Borrowed),
            Ok(_) => None,
            Err(s) => self.stored(s).map(|s| Cow::Borrowed(s.doc.id.as_str())),
        }
    }

    /// The time and group (pack, kind, category, memory type, path) of the
    /// document in a slot, without reading a stored document.
    pub(super) fn meta_at(&self, slot: u32) -> Option<DocMeta<'_>> {
        match self.locate(slot) {
            Ok(s) if !self.is_dead(s) => self.base.as_ref()?.meta(s),
            Ok(_) => None,
            Err(s) => self.stored(s).map(|s| DocMeta::of(&s.doc)),
        }
    }

    /// The time of the document in a slot.
    pub(super) fn time_at(&self, slot: u32) -> Option<i64> {
        self.meta_at(slot)?.time
    }

    /// Whether the document in a slot is live and passes `filter` (a stored
    /// document is read only when the filter names tags).
    pub(super) fn passes(&self, slot: u32, filter: &Filter) -> bool {
        match self.meta_at(slot) {
            None => false,
            Some(_) if filter.is_empty() => true,
            Some(m) if !filter.matches_meta(&m) => false,
            Some(_) if !filter.needs_tags() => true,
            Some(_) => self.doc_at(slot).is_some_and(|d| filter.matches(&d)),
        }
    }

    /// The distinct terms of the document in a slot with their per-field frequencies.
    pub(super) fn doc_terms(&self, slot: u32) -> Vec<(Box<str>, FieldTf)> {
        let s = match self.locate(slot) {
            Ok(_) => {
                let Some(doc) = self.doc_at(slot) else {
                    return Vec::new();
                };
                return analyze(&mut Tokenizer::new(), &doc).1;
            }
            Err(s) => s,
        };
        let Some(stored) = self.stored(s) else {
            return Vec::new();
        };
        stored
            .terms
            .iter()
            .filter_map(|&t| {
                let term = self.terms.get(t as usize)?;
                let i = term.postings.binary_search_by_key(&s, |p| p.doc).ok()?;
                Some((term.text.clone(), term.postings.get(i)?.tf))
            })
            .collect()
    }
}

/// Calls `visit(field index, term)` for every term occurrence of a document
/// (its fields' tokens, then the date terms of its time); returns the token
/// count of each field.
fn for_each_term(
    tokenizer: &mut Tokenizer,
    doc: &Document,
    mut visit: impl FnMut(usize, &str),
) -> [u32; Field::COUNT] {
    let mut lens = [0u32; Field::COUNT];
    for field in Field::ALL {
        let text = doc.field_text(field);
        let fi = field.index();
        tokenizer.tokenize(&text, |t| {
            lens[fi] = lens[fi].saturating_add(1);
            visit(fi, t.text);
        });
    }
    if let Some(time) = doc.time {
        let fi = Field::Time.index();
        for term in doc_date_terms(time) {
            lens[fi] = lens[fi].saturating_add(1);
            visit(fi, &term);
        }
    }
    lens
}

/// The distinct terms of a document with their per-field frequencies, and
/// its field lengths (what indexing it records).
fn analyze(tokenizer: &mut Tokenizer, doc: &Document) -> ([u32; Field::COUNT], Vec<(Box<str>, FieldTf)>) {
    let mut tfs: HashMap<Box<str>, FieldTf> = HashMap::new();
    let lens = for_each_term(tokenizer, doc, |fi, text| {
        let tf = match tfs.get_mut(text) {
            Some(tf) => tf,
            None => tfs.entry(text.into()).or_insert([0; Field::COUNT]),
        };
        tf[fi] = tf[fi].saturating_add(1);
    });
    (lens, tfs.into_iter().collect())
}

/// Returns the id of `text`, adding it to the dictionary if needed.
fn intern(term_ids: &mut HashMap<Box<str>, u32>, terms: &mut Vec<Term>, text: &str) -> u32 {
    if let Some(&id) = term_ids.get(text) {
        return id;
    }
    // `upsert` checked that the dictionary cannot outgrow u32 with this document.
    let id = terms.len() as u32;
    terms.push(Term {
        text: text.into(),
        postings: Vec::new(),
    });
    term_ids.insert(text.into(), id);
    id
}

/// Inserts `p` keeping the list sorted by slot (appending is the common case).
fn insert_posting(list: &mut Vec<Posting>, p: Posting) {
    match list.last() {
        None => list.push(p),
        Some(last) if last.doc < p.doc => list.push(p),
        Some(_) => match list.binary_search_by_key(&p.doc, |q| q.doc) {
            Ok(i) => list[i] = p,
            Err(i) => list.insert(i, p),
        },
    }
}
