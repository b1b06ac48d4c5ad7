//! A stored, immutable segment of a search index, read in place.
//!
//! Opening a segment reads only its small tables (the term dictionary, the
//! field lengths, the document ids and offsets, each document's time and
//! group — what boosts and filters read); posting lists and documents
//! stay where they are (in memory or in a file) and are read when a query
//! needs them. So opening costs a few megabytes of reads at 100,000
//! documents instead of decoding every posting and document, and the process
//! holds only what it reads. Layout: see `snapshot.rs`.
//!
//! Opening checks the header and the small tables against the segment's
//! checksum; every posting list and document record carries its own, checked
//! when it is read, so opening costs the same whatever the size of the rest.
//! A read that fails later (a damaged list or record, a file cut short after
//! it was opened) marks the segment failed ([`Segment::failed`]); the owner
//! then rebuilds instead of trusting partial results.

use std::borrow::Cow;
use std::fs::File;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::doc::{Document, Field};
use super::error::SnapshotError;
use super::index::{FieldTf, Posting};
use super::meta::{DocMeta, MetaTable};
use super::prune::{self, Norm};
use super::snapshot::{self, Reader};

/// Where the bytes of a segment are.
#[derive(Debug, Clone)]
pub enum SegmentSource {
    /// The whole segment in memory.
    Bytes(Arc<[u8]>),
    /// A region of an open file, read on demand (the file must not change
    /// in place while open: writers replace it by renaming a new file over it).
    File {
        /// The open file.
        file: Arc<File>,
        /// Where the segment starts in the file.
        offset: u64,
        /// The segment's length.
        len: u64,
    },
}

impl SegmentSource {
    fn len(&self) -> u64 {
        match self {
            SegmentSource::Bytes(b) => b.len() as u64,
            SegmentSource::File { len, .. } => *len,
        }
    }

    /// Reads `len` bytes at `off`; `None` when out of range or unreadable.
    pub fn read_all(&self, off: u64, len: usize) -> Option<Vec<u8>> {
        self.read(off, len).ok().map(Cow::into_owned)
    }

    /// Reads `len` bytes at `off` (relative to the segment).
    pub(super) fn read(&self, off: u64, len: usize) -> Result<Cow<'_, [u8]>, SnapshotError> {
        let end = off.checked_add(len as u64).ok_or(SnapshotError::Truncated)?;
        if end > self.len() {
            return Err(SnapshotError::Truncated);
        }
        match self {
            SegmentSource::Bytes(b) => b
                .get(off as usize..end as usize)
                .map(Cow::Borrowed)
                .ok_or(SnapshotError::Truncated),
            SegmentSource::File { file, offset, .. } => {
                let mut buf = vec![0u8; len];
                read_exact_at(file, &mut buf, offset + off).map_err(|_| SnapshotError::Truncated)?;
                Ok(Cow::Owned(buf))
            }
        }
    }
}

#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], off: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, off)
}

#[cfg(windows)]
fn read_exact_at(file: &File, mut buf: &mut [u8], mut off: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, off)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                off += n as u64;
            }
        }
    }
    Ok(())
}

/// Sections of a segment, in file order.
#[derive(Debug, Clone, Copy)]
pub(super) enum Section {
    /// `n_terms` × (text offset u32, text length u32, postings offset u64,
    /// postings length u32, document frequency u32), sorted by text.
    TermIndex = 0,
    /// Term texts.
    TermText,
    /// `n_slots` × 5 × u32 field lengths.
    Lens,
    /// `n_slots + 1` × u32 offsets into the id texts (ids sorted).
    IdIndex,
    /// Document ids.
    IdText,
    /// `n_slots + 1` × u64 offsets into the document records.
    DocIndex,
    /// Distinct groups (pack, kind, category, memory type, path), then per
    /// slot its time and group (`meta.rs`).
    Meta,
    /// Posting lists.
    Postings,
    /// Document records (everything but the id).
    Docs,
}

/// Number of sections.
pub(super) const SECTIONS: usize = 9;
/// Bytes of one term-index entry.
pub(super) const TERM_ENTRY: usize = 24;
/// Fixed header: magic, format, tokenizer, slot and term counts, field
/// length totals, section table.
pub(super) const HEADER_LEN: usize = 8 + 4 + 4 + 4 + 4 + 8 * Field::COUNT + 16 * SECTIONS;

/// An open segment: its small tables in memory, the rest read on demand.
#[derive(Debug)]
pub(super) struct Segment {
    source: SegmentSource,
    n_slots: u32,
    n_terms: u32,
    total_len: [u64; Field::COUNT],
    term_index: Vec<u8>,
    term_text: Vec<u8>,
    /// Field lengths per slot, decoded (read once per posting by the ranking).
    lens: Vec<[u32; Field::COUNT]>,
    id_index: Vec<u8>,
    id_text: Vec<u8>,
    doc_index: Vec<u8>,
    /// Time and group of every slot: what boosts and filters read.
    meta: MetaTable,
    postings: (u64, u64),
    docs: (u64, u64),
    failed: AtomicBool,
    /// Document records read so far (what a query costs in reads).
    doc_reads: AtomicU64,
    /// Decoded posting lists of frequent terms, kept between queries.
    cache: Mutex<PostingCache>,
    /// Block bounds of the cached lists (`prune.rs`), under one norm.
    bounds: Mutex<BoundCache>,
    /// Lists ordered by time, by term (`by_time`).
    by_time: Mutex<HashMap<u32, TimeOrder>>,
}

/// Posting lists at least this long are kept decoded once read.
const CACHE_MIN_DF: u32 = 256;
/// Postings the cache holds at most (12 bytes each); when full it starts over.
const CACHE_MAX_POSTINGS: usize = 2_000_000;

#[derive(Debug, Default)]
struct PostingCache {
    lists: HashMap<u32, Arc<[Posting]>>,
    postings: usize,
}

/// A list's (time, slot) entries in time order.
type TimeOrder = Arc<[(i64, u32)]>;

/// Block bounds of frequent terms' lists, all under `norm` (a search under
/// another norm, after the parameters changed, starts the cache over).
#[derive(Debug, Default)]
struct BoundCache {
    norm: Option<Norm>,
    lists: HashMap<u32, Arc<[f32]>>,
}

fn u32_at(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(i..i + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], i: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(i..i + 8)?.try_into().ok()?))
}

impl Segment {
    /// Opens a segment: checks the header (and, with `verify`, the checksum
    /// of every byte) and reads the small tables.
    pub(super) fn open(source: SegmentSource, verify: bool) -> Result<Self, SnapshotError> {
        let total = source.len();
        if total < (HEADER_LEN + 8) as u64 {
            return Err(if total >= 8 && source.read(0, 8)?.as_ref() != snapshot::SEGMENT_MAGIC {
                SnapshotError::BadMagic
            } else {
                SnapshotError::Truncated
            });
        }
        let header = source.read(0, HEADER_LEN)?.into_owned();
        let mut r = Reader::new(&header);
        if r.array::<8>()? != *snapshot::SEGMENT_MAGIC {
            return Err(SnapshotError::BadMagic);
        }
        let format = r.u32()?;
        if format != snapshot::FORMAT_VERSION {
            return Err(SnapshotError::Version { found: format, expected: snapshot::FORMAT_VERSION });
        }
        let tokenizer = r.u32()?;
        if tokenizer != super::tokenize::TOKENIZER_VERSION {
            return Err(SnapshotError::Version {
                found: tokenizer,
                expected: super::tokenize::TOKENIZER_VERSION,
            });
        }
        let n_slots = r.u32()?;
        let n_terms = r.u32()?;
        let mut total_len = [0u64; Field::COUNT];
        for t in &mut total_len {
            *t = r.u64()?;
        }
        let mut ranges = [(0u64, 0u64); SECTIONS];
        let mut prev_end = HEADER_LEN as u64;
        for range in &mut ranges {
            let (off, len) = (r.u64()?, r.u64()?);
            let end = off.checked_add(len).ok_or(SnapshotError::Corrupt("section out of range"))?;
            if off != prev_end || end > total - 8 {
                return Err(SnapshotError::Corrupt("section out of range"));
            }
            prev_end = end;
            *range = (off, len);
        }
        if prev_end != total - 8 {
            return Err(SnapshotError::Corrupt("trailing bytes"));
        }
        let slots = n_slots as u64;
        let expect = [
            (Section::TermIndex, Some(n_terms as u64 * TERM_ENTRY as u64)),
            (Section::Lens, Some(slots * 4 * Field::COUNT as u64)),
            (Section::IdIndex, Some((slots + 1) * 4)),
            (Section::DocIndex, Some((slots + 1) * 8)),
        ];
        for (s, len) in expect {
            if len.is_some_and(|l| ranges[s as usize].1 != l) {
                return Err(SnapshotError::Corrupt("section size"));
            }
        }
        let load = |s: Section| -> Result<Vec<u8>, SnapshotError> {
            let (off, len) = ranges[s as usize];
            let len = usize::try_from(len).map_err(|_| SnapshotError::Corrupt("section size"))?;
            Ok(source.read(off, len)?.into_owned())
        };
        // The header and the small tables against the trailing checksum;
        // posting lists and records carry their own (checked when read).
        let stored_sum = source
            .read(total - 8, 8)?
            .as_ref()
            .try_into()
            .map(u64::from_le_bytes)
            .map_err(|_| SnapshotError::Truncated)?;
        let tables = [
            load(Section::TermIndex)?,
            load(Section::TermText)?,
            load(Section::Lens)?,
            load(Section::IdIndex)?,
            load(Section::IdText)?,
            load(Section::DocIndex)?,
            load(Section::Meta)?,
        ];
        let mut h = snapshot::Checksum::new(ranges[Section::Postings as usize].0);
        h.update(&header);
        for t in &tables {
            h.update(t);
        }
        if h.finish() != stored_sum {
            return Err(SnapshotError::Checksum);
        }
        let [term_index, term_text, lens_bytes, id_index, id_text, doc_index, meta] = tables;
        let meta = MetaTable::decode(&meta, n_slots)?;
        let lens = lens_bytes
            .chunks_exact(4 * Field::COUNT)
            .map(|c| {
                let mut l = [0u32; Field::COUNT];
                for (f, v) in l.iter_mut().enumerate() {
                    *v = u32_at(c, f * 4).unwrap_or(0);
                }
                l
            })
            .collect();
        let seg = Segment {
            n_slots,
            n_terms,
            total_len,
            term_index,
            term_text,
            lens,
            id_index,
            id_text,
            doc_index,
            meta,
            postings: ranges[Section::Postings as usize],
            docs: ranges[Section::Docs as usize],
            failed: AtomicBool::new(false),
            doc_reads: AtomicU64::new(0),
            cache: Mutex::default(),
            bounds: Mutex::default(),
            by_time: Mutex::default(),
            source,
        };
        seg.check_tables()?;
        if verify {
            // Every posting list and record too.
            let mut list = Vec::new();
            for t in 0..seg.n_terms {
                seg.postings(t, &mut list);
            }
            for slot in 0..seg.n_slots {
                seg.raw_doc(slot);
            }
            if seg.failed() {
                return Err(SnapshotError::Checksum);
            }
        }
        Ok(seg)
    }

    /// Checks what every later read relies on: ids and terms are valid UTF-8,
    /// strictly sorted, and every offset stays inside its section.
    fn check_tables(&self) -> Result<(), SnapshotError> {
        let bad = |what| Err(SnapshotError::Corrupt(what));
        let mut prev: Option<&[u8]> = None;
        for i in 0..self.n_terms {
            let Some(text) = self.term_bytes(i) else { return bad("term out of range") };
            if std::str::from_utf8(text).is_err() {
                return bad("invalid UTF-8");
            }
            if prev.is_some_and(|p| p >= text) {
                return bad("terms out of order");
            }
            prev = Some(text);
            let e = i as usize * TERM_ENTRY;
            let (Some(off), Some(len)) = (u64_at(&self.term_index, e + 8), u32_at(&self.term_index, e + 16)) else {
                return bad("term out of range");
            };
            if off.checked_add(u64::from(len)).is_none_or(|end| end > self.postings.1) {
                return bad("postings out of range");
            }
        }
        if u32_at(&self.id_index, 0) != Some(0)
            || u32_at(&self.id_index, self.n_slots as usize * 4).map(|e| e as usize) != Some(self.id_text.len())
        {
            return bad("id index");
        }
        let mut prev: Option<&[u8]> = None;
        for slot in 0..self.n_slots {
            let Some(id) = self.id_bytes(slot) else { return bad("id out of range") };
            if std::str::from_utf8(id).is_err() {
                return bad("invalid UTF-8");
            }
            if prev.is_some_and(|p| p >= id) {
                return bad("ids out of order");
            }
            prev = Some(id);
        }
        let mut prev = 0;
        for i in 0..=self.n_slots as usize {
            let Some(off) = u64_at(&self.doc_index, i * 8) else { return bad("doc index") };
            if off < prev || off > self.docs.1 || (i == 0 && off != 0) {
                return bad("doc index");
            }
            prev = off;
        }
        if prev != self.docs.1 {
            return bad("doc index");
        }
        Ok(())
    }

    /// How many document records were read since the segment was opened.
    pub(super) fn doc_reads(&self) -> u64 {
        self.doc_reads.load(Ordering::Relaxed)
    }

    /// Whether a read after opening failed (the owner should rebuild).
    pub(super) fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    fn fail<T>(&self) -> Option<T> {
        self.failed.store(true, Ordering::Relaxed);
        None
    }

    pub(super) fn n_slots(&self) -> u32 {
        self.n_slots
    }

    pub(super) fn n_terms(&self) -> u32 {
        self.n_terms
    }

    pub(super) fn total_len(&self) -> [u64; Field::COUNT] {
        self.total_len
    }

    fn term_bytes(&self, i: u32) -> Option<&[u8]> {
        let e = i as usize * TERM_ENTRY;
        let off = u32_at(&self.term_index, e)? as usize;
        let len = u32_at(&self.term_index, e + 4)? as usize;
        self.term_text.get(off..off.checked_add(len)?)
    }

    /// The text of term `i` (terms are sorted by text).
    pub(super) fn term_text(&self, i: u32) -> &str {
        self.term_bytes(i).and_then(|b| std::str::from_utf8(b).ok()).unwrap_or_default()
    }

    /// Number of documents of the segment (dead or not) with term `i`.
    pub(super) fn term_df(&self, i: u32) -> u32 {
        u32_at(&self.term_index, i as usize * TERM_ENTRY + 20).unwrap_or(0)
    }

    /// The index of a term.
    pub(super) fn find_term(&self, text: &str) -> Option<u32> {
        let i = self.first_term_from(text.as_bytes());
        (i < self.n_terms && self.term_bytes(i)? == text.as_bytes()).then_some(i)
    }

    /// Calls `visit` with every term that starts with `prefix`, in order.
    pub(super) fn terms_with_prefix(&self, prefix: &str, mut visit: impl FnMut(&str)) {
        for i in self.first_term_from(prefix.as_bytes())..self.n_terms {
            let Some(t) = self.term_bytes(i) else { return };
            if !t.starts_with(prefix.as_bytes()) {
                return;
            }
            if let Ok(t) = std::str::from_utf8(t) {
                visit(t);
            }
        }
    }

    /// The index of the first term not below `text` in byte order (`n_terms` when none is;
    /// a term that cannot be read counts as not below).
    fn first_term_from(&self, text: &[u8]) -> u32 {
        let (mut lo, mut hi) = (0u32, self.n_terms);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.term_bytes(mid) {
                Some(t) if t < text => lo = mid + 1,
                _ => hi = mid,
            }
        }
        lo
    }

    /// The postings of term `i`, decoded (frequent terms from the cache).
    pub(super) fn postings_shared(&self, i: u32) -> Arc<[Posting]> {
        let cacheable = self.term_df(i) >= CACHE_MIN_DF;
        if cacheable
            && let Some(list) = self.cache.lock().unwrap_or_else(|p| p.into_inner()).lists.get(&i)
        {
            return list.clone();
        }
        let mut out = Vec::new();
        self.postings(i, &mut out);
        let list: Arc<[Posting]> = out.into();
        if cacheable && !self.failed() {
            let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            if cache.postings + list.len() > CACHE_MAX_POSTINGS {
                *cache = PostingCache::default();
            }
            cache.postings += list.len();
            cache.lists.insert(i, list.clone());
        }
        list
    }

    /// The postings of term `i` and the largest saturating frequency of each
    /// block of them under `norm` ([`prune::block_maxima`]); frequent
    /// terms' bounds are kept with their lists, short lists (read per query)
    /// get looser bounds that read no field length.
    pub(super) fn postings_bounded(&self, i: u32, norm: &Norm) -> (Arc<[Posting]>, Arc<[f32]>) {
        let list = self.postings_shared(i);
        if self.term_df(i) < CACHE_MIN_DF {
            let bounds = prune::block_bounds_by_counts(&list, norm).into();
            return (list, bounds);
        }
        {
            let mut cache = self.bounds.lock().unwrap_or_else(|p| p.into_inner());
            if cache.norm.as_ref() != Some(norm) {
                *cache = BoundCache { norm: Some(*norm), lists: HashMap::new() };
            }
            if let Some(b) = cache.lists.get(&i) {
                return (list, b.clone());
            }
        }
        let bounds: Arc<[f32]> = prune::block_maxima(&list, norm, |slot| self.lens(slot)).into();
        if !self.failed() {
            // At most 4 bytes per BLOCK postings of the segment: no cap needed.
            let mut cache = self.bounds.lock().unwrap_or_else(|p| p.into_inner());
            if cache.norm.as_ref() == Some(norm) {
                cache.lists.insert(i, bounds.clone());
            }
        }
        (list, bounds)
    }

    /// The documents of term `i` that have a time, as (time, slot) in that
    /// order: for a day's term, that day's entries in time order. Kept once
    /// built (each document has one day: at most 12 bytes a document).
    pub(super) fn by_time(&self, i: u32) -> TimeOrder {
        if let Some(list) = self.by_time.lock().unwrap_or_else(|p| p.into_inner()).get(&i) {
            return list.clone();
        }
        let mut list: Vec<(i64, u32)> = self
            .postings_shared(i)
            .iter()
            .filter_map(|p| Some((self.meta(p.doc)?.time?, p.doc)))
            .collect();
        list.sort_unstable();
        let list: TimeOrder = list.into();
        if !self.failed() {
            self.by_time.lock().unwrap_or_else(|p| p.into_inner()).insert(i, list.clone());
        }
        list
    }

    /// Decodes the postings of term `i` into `out` (cleared first). A damaged
    /// list marks the segment failed and yields nothing.
    pub(super) fn postings(&self, i: u32, out: &mut Vec<Posting>) {
        out.clear();
        let e = i as usize * TERM_ENTRY;
        let (Some(off), Some(len), Some(df)) = (
            u64_at(&self.term_index, e + 8),
            u32_at(&self.term_index, e + 16),
            u32_at(&self.term_index, e + 20),
        ) else {
            return;
        };
        let Ok(bytes) = self.source.read(self.postings.0 + off, len as usize) else {
            self.fail::<()>();
            return;
        };
        if snapshot::strip_sum(&bytes).and_then(|b| decode_postings(b, df, self.n_slots, out)).is_none() {
            out.clear();
            self.fail::<()>();
        }
    }

    /// Field lengths of a slot.
    pub(super) fn lens(&self, slot: u32) -> Option<[u32; Field::COUNT]> {
        self.lens.get(slot as usize).copied()
    }

    fn id_bytes(&self, slot: u32) -> Option<&[u8]> {
        let s = u32_at(&self.id_index, slot as usize * 4)? as usize;
        let e = u32_at(&self.id_index, slot as usize * 4 + 4)? as usize;
        self.id_text.get(s..e)
    }

    /// The id of the document in a slot.
    pub(super) fn id(&self, slot: u32) -> Option<&str> {
        if slot >= self.n_slots {
            return None;
        }
        std::str::from_utf8(self.id_bytes(slot)?).ok()
    }

    /// The slot of a document id.
    pub(super) fn find_id(&self, id: &str) -> Option<u32> {
        let (mut lo, mut hi) = (0u32, self.n_slots);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.id_bytes(mid)?.cmp(id.as_bytes()) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// The slots whose id starts with `prefix` (ids are sorted).
    pub(super) fn id_prefix_range(&self, prefix: &str) -> std::ops::Range<u32> {
        let first = |pred: &dyn Fn(&[u8]) -> bool| {
            let (mut lo, mut hi) = (0u32, self.n_slots);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if self.id_bytes(mid).is_some_and(pred) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            lo
        };
        let p = prefix.as_bytes();
        let start = first(&|id| id < p);
        let end = first(&|id| id < p || id.starts_with(p));
        start..end.max(start)
    }

    /// The stored record of a slot (everything but the id), checked against its checksum.
    pub(super) fn raw_doc(&self, slot: u32) -> Option<Cow<'_, [u8]>> {
        if slot >= self.n_slots {
            return None;
        }
        let s = u64_at(&self.doc_index, slot as usize * 8)?;
        let e = u64_at(&self.doc_index, slot as usize * 8 + 8)?;
        let len = usize::try_from(e.checked_sub(s)?).ok()?;
        self.doc_reads.fetch_add(1, Ordering::Relaxed);
        let bytes = match self.source.read(self.docs.0 + s, len) {
            Ok(b) => b,
            Err(_) => return self.fail(),
        };
        if snapshot::strip_sum(&bytes).is_none() {
            return self.fail();
        }
        // The record without its checksum.
        Some(match bytes {
            Cow::Borrowed(b) => Cow::Borrowed(&b[..b.len() - 4]),
            Cow::Owned(mut b) => {
                b.truncate(b.len() - 4);
                Cow::Owned(b)
            }
        })
    }

    /// The time and group of the document in a slot (no read).
    pub(super) fn meta(&self, slot: u32) -> Option<DocMeta<'_>> {
        self.meta.get(slot)
    }

    /// The document in a slot.
    pub(super) fn doc(&self, slot: u32) -> Option<Document> {
        let id = self.id(slot)?.to_owned();
        let raw = self.raw_doc(slot)?;
        match snapshot::get_doc_record(id, &raw) {
            Ok(d) => Some(d),
            Err(_) => self.fail(),
        }
    }
}

/// Decodes one posting list; `None` when it is damaged.
fn decode_postings(bytes: &[u8], df: u32, n_slots: u32, out: &mut Vec<Posting>) -> Option<()> {
    let mut r = Reader::new(bytes);
    out.reserve(df.min(n_slots) as usize);
    let mut doc = 0u32;
    for i in 0..df {
        let delta = r.varint().ok()?;
        if i > 0 && delta == 0 {
            return None;
        }
        doc = doc.checked_add(delta)?;
        if doc >= n_slots {
            return None;
        }
        let mask = r.u8().ok()?;
        if mask == 0 || mask >> Field::COUNT != 0 {
            return None;
        }
        let mut tf: FieldTf = [0; Field::COUNT];
        for (f, v) in tf.iter_mut().enumerate() {
            if mask & (1 << f) != 0 {
                *v = r.u8().ok()?;
                if *v == 0 {
                    return None;
                }
            }
        }
        out.push(Posting { doc, tf });
    }
    r.at_end().then_some(())
}
