//! Compact binary snapshots of a [`SearchIndex`].
//!
//! Layout (little endian):
//! ```text
//! magic "ENGRMSIX" | format u32 | tokenizer u32 | payload length u64 | payload | u64 checksum of payload
//! payload = terms: u32 n, n × (str text, u32 m, m × posting)
//! posting  = varint slot delta (from the previous posting of the term, the first from 0),
//!            u8 field mask, one u8 tf per field in the mask
//!           slots: u32 n, n × (u8 0 = free | u8 1, 5 × u32 field length, document)
//! document = str id, title, body, context, pack, kind, opt-str category, memory_type,
//!            u32 n tags × str, opt-i64 time, str path        (str = u32 length + UTF-8)
//! ```
//! Loading validates everything (magic, versions, checksum, bounds, UTF-8,
//! references, ordering) and returns [`SnapshotError`] instead of panicking.

use std::collections::HashSet;

use super::doc::{Document, Field};
use super::error::SnapshotError;
use super::index::{FieldTf, Posting, SearchIndex, Stored, Term};
use super::tokenize::TOKENIZER_VERSION;

const MAGIC: &[u8; 8] = b"ENGRMSIX";
const FORMAT_VERSION: u32 = 2;
const HEADER_LEN: usize = 8 + 4 + 4 + 8;

impl SearchIndex {
    /// Serialises the index (documents and postings) into a snapshot.
    pub fn to_snapshot(&self) -> Vec<u8> {
        let mut p = Vec::new();
        let live: Vec<&Term> = self
            .terms
            .iter()
            .filter(|t| !t.postings.is_empty())
            .collect();
        put_u32(&mut p, live.len() as u32);
        for term in live {
            put_str(&mut p, &term.text);
            put_u32(&mut p, term.postings.len() as u32);
            let mut prev = 0;
            for posting in &term.postings {
                put_varint(&mut p, posting.doc - prev);
                prev = posting.doc;
                let mask = posting
                    .tf
                    .iter()
                    .enumerate()
                    .filter(|(_, tf)| **tf > 0)
                    .fold(0u8, |m, (f, _)| m | 1 << f);
                p.push(mask);
                p.extend(posting.tf.iter().filter(|tf| **tf > 0));
            }
        }
        put_u32(&mut p, self.docs.len() as u32);
        for (slot, stored) in self.docs.iter().enumerate() {
            match stored {
                None => p.push(0),
                Some(s) => {
                    p.push(1);
                    let lens = self.lens.get(slot).copied().unwrap_or_default();
                    for len in lens {
                        put_u32(&mut p, len);
                    }
                    put_doc(&mut p, &s.doc);
                }
            }
        }
        let mut out = Vec::with_capacity(HEADER_LEN + p.len() + 8);
        out.extend_from_slice(MAGIC);
        put_u32(&mut out, FORMAT_VERSION);
        put_u32(&mut out, TOKENIZER_VERSION);
        out.extend_from_slice(&(p.len() as u64).to_le_bytes());
        out.extend_from_slice(&p);
        out.extend_from_slice(&checksum(&p).to_le_bytes());
        out
    }

    /// Restores an index from [`SearchIndex::to_snapshot`] output (with default parameters).
    ///
    /// Any damage (truncation, bit flips, another version) yields an error.
    pub fn from_snapshot(bytes: &[u8]) -> Result<Self, SnapshotError> {
        let mut header = Reader::new(bytes);
        if header.take(8)? != MAGIC {
            return Err(SnapshotError::BadMagic);
        }
        for expected in [FORMAT_VERSION, TOKENIZER_VERSION] {
            let found = header.u32()?;
            if found != expected {
                return Err(SnapshotError::Version { found, expected });
            }
        }
        let len = usize::try_from(header.u64()?).map_err(|_| SnapshotError::Truncated)?;
        let payload = header.take(len)?;
        let sum = header.u64()?;
        if !header.at_end() {
            return Err(SnapshotError::Corrupt("trailing bytes"));
        }
        if checksum(payload) != sum {
            return Err(SnapshotError::Checksum);
        }
        decode_payload(payload)
    }
}

fn decode_payload(payload: &[u8]) -> Result<SearchIndex, SnapshotError> {
    let mut r = Reader::new(payload);
    let n_terms = r.count(8)?;
    let mut terms = Vec::with_capacity(n_terms);
    let mut seen = HashSet::with_capacity(n_terms);
    for _ in 0..n_terms {
        let text: Box<str> = r.str()?.into();
        if !seen.insert(text.clone()) {
            return Err(SnapshotError::Corrupt("duplicate term"));
        }
        let n = r.count(3)?;
        let mut postings = Vec::with_capacity(n);
        let mut doc = 0u32;
        for i in 0..n {
            let delta = r.varint()?;
            if i > 0 && delta == 0 {
                return Err(SnapshotError::Corrupt("postings out of order"));
            }
            doc = doc
                .checked_add(delta)
                .ok_or(SnapshotError::Corrupt("slot out of range"))?;
            let mask = r.u8()?;
            if mask == 0 || mask >> Field::COUNT != 0 {
                return Err(SnapshotError::Corrupt("bad field mask"));
            }
            let mut tf: FieldTf = [0; Field::COUNT];
            for (f, slot) in tf.iter_mut().enumerate() {
                if mask & (1 << f) != 0 {
                    *slot = r.u8()?;
                    if *slot == 0 {
                        return Err(SnapshotError::Corrupt("zero term frequency"));
                    }
                }
            }
            postings.push(Posting { doc, tf });
        }
        terms.push(Term { text, postings });
    }

    let n_slots = r.count(1)?;
    let mut docs: Vec<Option<Stored>> = Vec::with_capacity(n_slots);
    let mut lens = Vec::with_capacity(n_slots);
    let mut ids = HashSet::new();
    for _ in 0..n_slots {
        match r.u8()? {
            0 => {
                docs.push(None);
                lens.push([0; Field::COUNT]);
            }
            1 => {
                let mut l = [0u32; Field::COUNT];
                for v in &mut l {
                    *v = r.u32()?;
                }
                let doc = get_doc(&mut r)?;
                if !ids.insert(doc.id.clone()) {
                    return Err(SnapshotError::Corrupt("duplicate document id"));
                }
                lens.push(l);
                docs.push(Some(Stored {
                    doc,
                    terms: Box::new([]),
                }));
            }
            _ => return Err(SnapshotError::Corrupt("bad slot tag")),
        }
    }
    if !r.at_end() {
        return Err(SnapshotError::Corrupt("trailing payload bytes"));
    }

    // Rebuild each document's term list from the postings.
    let mut doc_terms: Vec<Vec<u32>> = vec![Vec::new(); docs.len()];
    for (id, term) in terms.iter().enumerate() {
        for p in &term.postings {
            match (docs.get(p.doc as usize), doc_terms.get_mut(p.doc as usize)) {
                (Some(Some(_)), Some(list)) => list.push(id as u32),
                _ => return Err(SnapshotError::Corrupt("posting for a missing document")),
            }
        }
    }
    for (stored, list) in docs.iter_mut().zip(doc_terms) {
        if let Some(stored) = stored {
            stored.terms = list.into_boxed_slice();
        }
    }
    Ok(SearchIndex::from_parts(terms, docs, lens))
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

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u32(out, s.len() as u32);
    out.extend_from_slice(s.as_bytes());
}

fn put_opt_str(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        None => out.push(0),
        Some(s) => {
            out.push(1);
            put_str(out, s);
        }
    }
}

fn put_doc(out: &mut Vec<u8>, d: &Document) {
    for s in [&d.id, &d.title, &d.body, &d.context, &d.pack, &d.kind] {
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

fn get_doc(r: &mut Reader<'_>) -> Result<Document, SnapshotError> {
    let id = r.string()?;
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
/// fast enough for large snapshots; it detects damage, not tampering.
fn checksum(bytes: &[u8]) -> u64 {
    const PRIME: u64 = 0x0100_0000_01b3;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = (h ^ u64::from_le_bytes(w)).wrapping_mul(PRIME);
        h ^= h >> 29;
    }
    for &b in chunks.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(PRIME);
    }
    h
}

/// Bounds-checked little-endian reader.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    fn at_end(&self) -> bool {
        self.pos == self.buf.len()
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], SnapshotError> {
        let end = self.pos.checked_add(n).ok_or(SnapshotError::Truncated)?;
        let s = self
            .buf
            .get(self.pos..end)
            .ok_or(SnapshotError::Truncated)?;
        self.pos = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], SnapshotError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    fn u8(&mut self) -> Result<u8, SnapshotError> {
        Ok(self.array::<1>()?[0])
    }

    fn u32(&mut self) -> Result<u32, SnapshotError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, SnapshotError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// Reads an item count, rejecting counts the remaining bytes cannot hold
    /// (each item takes at least `min_item_len` bytes), so a corrupt count
    /// never triggers a huge allocation.
    fn count(&mut self, min_item_len: usize) -> Result<usize, SnapshotError> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_item_len) > self.buf.len() - self.pos {
            return Err(SnapshotError::Truncated);
        }
        Ok(n)
    }

    /// Reads a LEB128 varint of at most 5 bytes that fits in a u32.
    fn varint(&mut self) -> Result<u32, SnapshotError> {
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

    fn str(&mut self) -> Result<&'a str, SnapshotError> {
        let n = self.u32()? as usize;
        std::str::from_utf8(self.take(n)?).map_err(|_| SnapshotError::Corrupt("invalid UTF-8"))
    }

    fn string(&mut self) -> Result<String, SnapshotError> {
        self.str().map(str::to_owned)
    }

    fn opt_string(&mut self) -> Result<Option<String>, SnapshotError> {
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

    /// Damaged payloads with a *valid* checksum must still fail cleanly (or
    /// load), never panic: this exercises the structural validation.
    #[test]
    fn structurally_corrupt_payloads_never_panic() {
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
        let bytes = index.to_snapshot();
        let payload = &bytes[HEADER_LEN..bytes.len() - 8];
        let reseal = |p: &[u8]| {
            let mut out = bytes[..HEADER_LEN].to_vec();
            out[16..24].copy_from_slice(&(p.len() as u64).to_le_bytes());
            out.extend_from_slice(p);
            out.extend_from_slice(&checksum(p).to_le_bytes());
            out
        };
        assert!(SearchIndex::from_snapshot(&reseal(payload)).is_ok());
        for i in 0..payload.len() {
            for x in [0x01u8, 0x80, 0xff] {
                let mut p = payload.to_vec();
                p[i] ^= x;
                let _ = SearchIndex::from_snapshot(&reseal(&p));
            }
            let _ = SearchIndex::from_snapshot(&reseal(&payload[..i]));
        }
    }
}
