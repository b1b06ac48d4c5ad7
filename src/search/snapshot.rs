//! Stored segments of a [`SearchIndex`]: the bytes [`SearchIndex::to_snapshot`]
//! writes and [`SearchIndex::open_segment`] reads in place (`segment.rs`).
//!
//! Layout (little endian; offsets relative to the segment's start):
//! ```text
//! magic "ENGRMSEG" | format u32 | tokenizer u32 | n_slots u32 | n_terms u32
//! | 5 × u64 total field lengths | 8 × (u64 offset, u64 length) sections | sections
//! | u64 checksum of the header and the first seven sections (up to the postings)
//! term index  n_terms × (u32 text offset, u32 text length, u64 postings offset,
//!             u32 postings length, u32 document frequency), sorted by term text
//! term text   the terms' UTF-8
//! lens        n_slots × 5 × u32 token count of each field
//! id index    (n_slots + 1) × u32 offsets into the id text; ids sorted (slot order)
//! id text     the documents' ids
//! doc index   (n_slots + 1) × u64 offsets into the records
//! meta        u32 n_groups × (str pack, kind, opt-str category, memory_type, str path),
//!             then n_slots × (i64 time or 0, u32 group | 1 << 31 when it has a time)
//! postings    per term: per document, varint slot delta (the first from 0),
//!             u8 field mask, one u8 tf per field in the mask; then u32 checksum
//! docs        per slot: str title, body, context, pack, kind, opt-str category,
//!             memory_type, u32 n tags × str, opt-i64 time, str path; then u32 checksum
//!             (str = u32 length + UTF-8; opt = u8 0 | u8 1 + value;
//!             u32 checksum = low half of `checksum` of the list or record before it)
//! ```
//! A segment holds only live documents, in id order. Opening validates the
//! header, the section table and the small tables against the trailing
//! checksum; posting lists and records are checked when read (all of them
//! at open when asked to verify), and a damaged one makes the index report
//! itself damaged ([`SearchIndex::is_damaged`]) instead of panicking.

use std::sync::Arc;

use super::doc::{Document, Field};
use super::error::SnapshotError;
use super::index::{Posting, SearchIndex};
use super::meta::{DocMeta, MetaWriter};
use super::segment::{HEADER_LEN, SECTIONS, Section, SegmentSource, TERM_ENTRY};
use super::tokenize::TOKENIZER_VERSION;

/// First bytes of a segment.
pub(super) const SEGMENT_MAGIC: &[u8; 8] = b"ENGRMSEG";
/// Format version of segments this build writes and reads.
pub(super) const FORMAT_VERSION: u32 = 4;

/// Where a live document of the index is.
#[derive(Clone, Copy)]
enum Loc {
    Base(u32),
    Overlay(u32),
}

impl SearchIndex {
    /// Serialises the index (its live documents and their postings) into one
    /// segment. Fails only when a stored segment under the index can no longer
    /// be read.
    pub fn to_snapshot(&self) -> Result<Vec<u8>, SnapshotError> {
        let base = self.base.as_deref();
        let base_slots = base.map_or(0, |b| b.n_slots());
        // Live documents in id order: their new slots.
        let mut live: Vec<(&str, Loc)> = Vec::with_capacity(self.len());
        if let Some(b) = base {
            for slot in 0..base_slots {
                if !self.is_dead(slot) {
                    live.push((b.id(slot).ok_or(SnapshotError::Corrupt("id"))?, Loc::Base(slot)));
                }
            }
        }
        for (slot, d) in self.docs.iter().enumerate() {
            if let Some(d) = d {
                live.push((d.doc.id.as_str(), Loc::Overlay(slot as u32)));
            }
        }
        live.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let mut base_map = vec![u32::MAX; base_slots as usize];
        let mut over_map = vec![u32::MAX; self.docs.len()];
        for (new, (_, loc)) in live.iter().enumerate() {
            match *loc {
                Loc::Base(s) => base_map[s as usize] = new as u32,
                Loc::Overlay(s) => over_map[s as usize] = new as u32,
            }
        }

        // Terms: the base's (sorted) merged with the overlay's (sorted).
        let mut over_terms: Vec<&super::index::Term> =
            self.terms.iter().filter(|t| !t.postings.is_empty()).collect();
        over_terms.sort_unstable_by(|a, b| a.text.cmp(&b.text));
        let n_base_terms = base.map_or(0, |b| b.n_terms());
        let (mut bi, mut oi) = (0u32, 0usize);
        let mut term_index = Vec::new();
        let mut term_text = Vec::new();
        let mut postings = Vec::new();
        let mut list: Vec<Posting> = Vec::new();
        let mut scratch: Vec<Posting> = Vec::new();
        let mut n_terms = 0u32;
        loop {
            let bt = base.filter(|_| bi < n_base_terms).map(|b| b.term_text(bi));
            let ot = over_terms.get(oi).map(|t| &*t.text);
            let text = match (bt, ot) {
                (None, None) => break,
                (Some(b), Some(o)) => b.min(o),
                (Some(b), None) => b,
                (None, Some(o)) => o,
            };
            list.clear();
            if let (Some(b), Some(bt)) = (base, bt)
                && bt == text
            {
                b.postings(bi, &mut scratch);
                list.extend(scratch.iter().filter_map(|p| {
                    let new = *base_map.get(p.doc as usize)?;
                    (new != u32::MAX).then_some(Posting { doc: new, tf: p.tf })
                }));
                bi += 1;
            }
            if let Some(ot) = ot
                && ot == text
            {
                list.extend(over_terms[oi].postings.iter().filter_map(|p| {
                    let new = *over_map.get(p.doc as usize)?;
                    (new != u32::MAX).then_some(Posting { doc: new, tf: p.tf })
                }));
                oi += 1;
            }
            if base.is_some_and(|b| b.failed()) {
                return Err(SnapshotError::Corrupt("unreadable postings"));
            }
            if list.is_empty() {
                continue;
            }
            list.sort_unstable_by_key(|p| p.doc);
            let start = postings.len() as u64;
            let mut prev = 0;
            for p in &list {
                put_varint(&mut postings, p.doc - prev);
                prev = p.doc;
                let mask = p.tf.iter().enumerate().filter(|(_, tf)| **tf > 0).fold(0u8, |m, (f, _)| m | 1 << f);
                postings.push(mask);
                postings.extend(p.tf.iter().filter(|tf| **tf > 0));
            }
            let sum = checksum(&postings[start as usize..]) as u32;
            put_u32(&mut postings, sum);
            put_u32(&mut term_index, u32_len(term_text.len())?);
            put_u32(&mut term_index, u32_len(text.len())?);
            term_index.extend_from_slice(&start.to_le_bytes());
            put_u32(&mut term_index, u32_len(postings.len() - start as usize)?);
            put_u32(&mut term_index, list.len() as u32);
            term_text.extend_from_slice(text.as_bytes());
            n_terms += 1;
        }
        debug_assert_eq!(term_index.len(), n_terms as usize * TERM_ENTRY);

        // Documents.
        let mut lens = Vec::with_capacity(live.len() * 4 * Field::COUNT);
        let mut id_index = Vec::with_capacity((live.len() + 1) * 4);
        let mut id_text = Vec::new();
        let mut doc_index = Vec::with_capacity((live.len() + 1) * 8);
        let mut docs = Vec::new();
        let mut meta = MetaWriter::default();
        let mut total_len = [0u64; Field::COUNT];
        put_u32(&mut id_index, 0);
        doc_index.extend_from_slice(&0u64.to_le_bytes());
        for (id, loc) in &live {
            let start = docs.len();
            let l = match *loc {
                Loc::Base(s) => {
                    let b = base.ok_or(SnapshotError::Corrupt("base"))?;
                    docs.extend_from_slice(&b.raw_doc(s).ok_or(SnapshotError::Corrupt("unreadable document"))?);
                    meta.push(b.meta(s).ok_or(SnapshotError::Corrupt("meta"))?)?;
                    b.lens(s).unwrap_or_default()
                }
                Loc::Overlay(s) => {
                    let d = &self.docs.get(s as usize).and_then(Option::as_ref).ok_or(SnapshotError::Corrupt("slot"))?.doc;
                    put_doc_record(&mut docs, d);
                    meta.push(DocMeta::of(d))?;
                    self.lens.get(s as usize).copied().unwrap_or_default()
                }
            };
            let sum = checksum(&docs[start..]) as u32;
            put_u32(&mut docs, sum);
            for (t, v) in total_len.iter_mut().zip(l) {
                *t += u64::from(v);
                put_u32(&mut lens, v);
            }
            id_text.extend_from_slice(id.as_bytes());
            put_u32(&mut id_index, u32_len(id_text.len())?);
            doc_index.extend_from_slice(&(docs.len() as u64).to_le_bytes());
        }

        let meta = meta.finish();
        let sections: [&[u8]; SECTIONS] =
            [&term_index, &term_text, &lens, &id_index, &id_text, &doc_index, &meta, &postings, &docs];
        let body_len: usize = sections.iter().map(|s| s.len()).sum();
        let mut out = Vec::with_capacity(HEADER_LEN + body_len + 8);
        out.extend_from_slice(SEGMENT_MAGIC);
        put_u32(&mut out, FORMAT_VERSION);
        put_u32(&mut out, TOKENIZER_VERSION);
        put_u32(&mut out, u32_len(live.len())?);
        put_u32(&mut out, n_terms);
        for t in total_len {
            out.extend_from_slice(&t.to_le_bytes());
        }
        let mut off = HEADER_LEN as u64;
        for s in sections {
            out.extend_from_slice(&off.to_le_bytes());
            out.extend_from_slice(&(s.len() as u64).to_le_bytes());
            off += s.len() as u64;
        }
        debug_assert_eq!(out.len(), HEADER_LEN);
        for s in sections {
            out.extend_from_slice(s);
        }
        // The header and the small tables (up to the postings); lists and
        // records carry their own.
        let tables = Section::Postings as usize;
        let sum = checksum(&out[..HEADER_LEN + sections[..tables].iter().map(|s| s.len()).sum::<usize>()]);
        out.extend_from_slice(&sum.to_le_bytes());
        debug_assert_eq!(Section::Docs as usize, SECTIONS - 1);
        Ok(out)
    }

    /// Restores an index from [`SearchIndex::to_snapshot`] output (with
    /// default parameters), checking every byte against the checksum.
    pub fn from_snapshot(bytes: &[u8]) -> Result<Self, SnapshotError> {
        Self::open_segment(SegmentSource::Bytes(Arc::from(bytes)), true)
    }
}

fn u32_len(n: usize) -> Result<u32, SnapshotError> {
    u32::try_from(n).map_err(|_| SnapshotError::Corrupt("segment too large"))
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(super) fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u32(out, s.len() as u32);
    out.extend_from_slice(s.as_bytes());
}

pub(super) fn put_opt_str(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        None => out.push(0),
        Some(s) => {
            out.push(1);
            put_str(out, s);
        }
    }
}

/// Writes a document record (every field but the id, which the segment keeps apart).
fn put_doc_record(out: &mut Vec<u8>, d: &Document) {
    for s in [&d.title, &d.body, &d.context, &d.pack, &d.kind] {
        put_str(out, s);
    }
    put_opt_str(out, d.category.as_deref());
    put_opt_str(out, d.memory_type.as_deref());
    put_u32(out, d.tags.len() as u32);
    for t in &d.tags {
        put_str(out, t);
    }
    match d.time {
        None => out.push(0),
        Some(t) => {
            out.push(1);
            out.extend_from_slice(&t.to_le_bytes());
        }
    }
    put_str(out, &d.path);
}

/// Reads a record written by [`put_doc_record`] back into a document with `id`.
pub(super) fn get_doc_record(id: String, bytes: &[u8]) -> Result<Document, SnapshotError> {
    let mut r = Reader::new(bytes);
    let r = &mut r;
    let title = r.string()?;
    let body = r.string()?;
    let context = r.string()?;
    let pack = r.string()?;
    let kind = r.string()?;
    let category = r.opt_string()?;
    let memory_type = r.opt_string()?;
    let n_tags = r.count(4)?;
    let tags = (0..n_tags).map(|_| r.string()).collect::<Result<_, _>>()?;
    let time = match r.u8()? {
        0 => None,
        1 => Some(i64::from_le_bytes(r.array()?)),
        _ => return Err(SnapshotError::Corrupt("bad option tag")),
    };
    let path = r.string()?;
    if !r.at_end() {
        return Err(SnapshotError::Corrupt("trailing record bytes"));
    }
    Ok(Document {
        id,
        title,
        body,
        context,
        pack,
        kind,
        category,
        memory_type,
        tags,
        time,
        path,
    })
}

/// FNV-1a-style 64-bit hash taken over 8-byte words (then the tail bytes),
/// fast enough for large segments; it detects damage, not tampering.
pub fn checksum(bytes: &[u8]) -> u64 {
    let mut h = Checksum::new(bytes.len() as u64);
    h.update(bytes);
    h.finish()
}

/// `bytes` without their last 4 bytes when those are the low 32 bits of the
/// [`checksum`] of the rest (how posting lists and records end).
pub(super) fn strip_sum(bytes: &[u8]) -> Option<&[u8]> {
    let (body, sum) = bytes.split_at_checked(bytes.len().checked_sub(4)?)?;
    (u32::from_le_bytes(sum.try_into().ok()?) == checksum(body) as u32).then_some(body)
}

/// [`checksum`] over bytes given in pieces (of any sizes).
pub(super) struct Checksum {
    h: u64,
    tail: [u8; 8],
    tail_len: usize,
}

const PRIME: u64 = 0x0100_0000_01b3;

impl Checksum {
    /// Starts a checksum over `total` bytes.
    pub(super) fn new(total: u64) -> Self {
        Self { h: 0xcbf2_9ce4_8422_2325 ^ total, tail: [0; 8], tail_len: 0 }
    }

    fn word(&mut self, w: [u8; 8]) {
        self.h = (self.h ^ u64::from_le_bytes(w)).wrapping_mul(PRIME);
        self.h ^= self.h >> 29;
    }

    /// Adds the next bytes.
    pub(super) fn update(&mut self, mut bytes: &[u8]) {
        if self.tail_len > 0 {
            let n = (8 - self.tail_len).min(bytes.len());
            self.tail[self.tail_len..self.tail_len + n].copy_from_slice(&bytes[..n]);
            self.tail_len += n;
            bytes = &bytes[n..];
            if self.tail_len < 8 {
                return;
            }
            let w = self.tail;
            self.word(w);
            self.tail_len = 0;
        }
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.word(w);
        }
        let rest = chunks.remainder();
        self.tail[..rest.len()].copy_from_slice(rest);
        self.tail_len = rest.len();
    }

    /// The checksum.
    pub(super) fn finish(mut self) -> u64 {
        for &b in &self.tail[..self.tail_len] {
            self.h = (self.h ^ u64::from(b)).wrapping_mul(PRIME);
        }
        self.h
    }
}

/// Bounds-checked little-endian reader.
pub(super) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    pub(super) fn at_end(&self) -> bool {
        self.pos == self.buf.len()
    }

    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8], SnapshotError> {
        let end = self.pos.checked_add(n).ok_or(SnapshotError::Truncated)?;
        let s = self
            .buf
            .get(self.pos..end)
            .ok_or(SnapshotError::Truncated)?;
        self.pos = end;
        Ok(s)
    }

    pub(super) fn array<const N: usize>(&mut self) -> Result<[u8; N], SnapshotError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    pub(super) fn u8(&mut self) -> Result<u8, SnapshotError> {
        Ok(self.array::<1>()?[0])
    }

    pub(super) fn u32(&mut self) -> Result<u32, SnapshotError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    pub(super) fn u64(&mut self) -> Result<u64, SnapshotError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// Reads an item count, rejecting counts the remaining bytes cannot hold
    /// (each item takes at least `min_item_len` bytes), so a corrupt count
    /// never triggers a huge allocation.
    pub(super) fn count(&mut self, min_item_len: usize) -> Result<usize, SnapshotError> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_item_len) > self.buf.len() - self.pos {
            return Err(SnapshotError::Truncated);
        }
        Ok(n)
    }

    /// Reads a LEB128 varint of at most 5 bytes that fits in a u32.
    pub(super) fn varint(&mut self) -> Result<u32, SnapshotError> {
        let mut v: u64 = 0;
        for shift in (0..35).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return u32::try_from(v).map_err(|_| SnapshotError::Corrupt("varint overflow"));
            }
        }
        Err(SnapshotError::Corrupt("varint too long"))
    }

    pub(super) fn str(&mut self) -> Result<&'a str, SnapshotError> {
        let n = self.u32()? as usize;
        std::str::from_utf8(self.take(n)?).map_err(|_| SnapshotError::Corrupt("invalid UTF-8"))
    }

    pub(super) fn string(&mut self) -> Result<String, SnapshotError> {
        self.str().map(str::to_owned)
    }

    pub(super) fn opt_string(&mut self) -> Result<Option<String>, SnapshotError> {
        match self.u8()? {
            0 => Ok(None),
            1 => self.string().map(Some),
            _ => Err(SnapshotError::Corrupt("bad option tag")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::Filter;

    /// Damaged segments with a *valid* checksum must still fail cleanly (or
    /// load and then answer without panicking): this exercises the
    /// structural validation at open and the checks of every later read.
    #[test]
    fn structurally_corrupt_segments_never_panic() {
        let mut index = SearchIndex::new();
        for (i, text) in ["hello world", "你好世界 🎉", "rust mcp 服务器", ""]
            .iter()
            .enumerate()
        {
            let mut d = Document::new(format!("d{i}"), "t", *text);
            d.tags = vec!["x".into()];
            d.time = Some(i as i64 * 1000);
            d.category = Some("c".into());
            index.upsert(d).expect("upsert");
        }
        index.remove("d1");
        let bytes = index.to_snapshot().expect("snapshot");
        let body = &bytes[..bytes.len() - 8];
        // The trailer covers the header and the small tables, up to the
        // postings (whose offset is in the section table).
        let reseal = |b: &[u8]| {
            let at = HEADER_LEN - 16 * (SECTIONS - Section::Postings as usize);
            let end = b
                .get(at..at + 8)
                .map(|o| u64::from_le_bytes(o.try_into().expect("8 bytes")) as usize)
                .filter(|&e| e <= b.len())
                .unwrap_or(b.len());
            let mut out = b.to_vec();
            out.extend_from_slice(&checksum(&b[..end]).to_le_bytes());
            out
        };
        assert!(SearchIndex::from_snapshot(&reseal(body)).is_ok());
        let exercise = |b: &[u8]| {
            if let Ok(mut idx) = SearchIndex::from_snapshot(b) {
                for q in ["hello", "世界", "rust", "t", "x"] {
                    let _ = idx.search(q, &Filter::all(), 5);
                    let _ = idx.search(q, &Filter::all().kinds(["k"]), 5);
                }
                let _ = idx.documents().count();
                let _ = (idx.get("d0").is_some(), idx.get("d2").is_some());
                let _ = idx.remove("d3");
                let _ = idx.upsert(Document::new("d9", "", "hello again"));
                let _ = idx.to_snapshot();
            }
        };
        for i in 0..body.len() {
            for x in [0x01u8, 0x80, 0xff] {
                let mut p = body.to_vec();
                p[i] ^= x;
                exercise(&reseal(&p));
            }
            exercise(&reseal(&body[..i]));
        }
    }
}
