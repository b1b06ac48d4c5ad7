//! A pack's memory files parsed once per blob, for the memory list of the web page
//! ([`super::memory_items`]): each file of the full index and each category file becomes a
//! [`Part`] (its entries' fields in one text, with what a list needs of them precomputed: the
//! folded-text hash for likely duplicates), kept by blob id in [`ParsedMemoryFiles`], and kept
//! between launches in `.git/engram-memory-files` in a binary form that loads without parsing
//! (a launch reads one file and copies ≈ 300 texts instead of decoding ≈ 100,000 strings).
//!
//! A blob id names its content, so a part kept under it is right whoever made the commits:
//! a list at a new commit parses only the files whose blob it has not seen.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::memlog::{blocks_in, index_entries_in};
use crate::ops::Result;
use crate::store::Snapshot;

/// Where a field sits in its part's text (byte offsets).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Span {
    start: u32,
    end: u32,
}

/// One index entry or one block with a meta line, as spans of its part's text.
#[derive(Debug, Clone, Copy, Default)]
struct Rec {
    /// Category (index entries; empty for blocks).
    category: Span,
    ts: Span,
    memory_type: Span,
    expires: Option<Span>,
    /// The tags joined with `,` (no tag holds one: both parsers split on it), and their count.
    tags: Span,
    ntags: u32,
    /// The summary (index entries) or the content (blocks).
    text: Span,
    /// The hash of `text` folded for likely duplicates ([`folded_hash`]), when it is long
    /// enough to count (a summary: 3 characters; a content: 4).
    fold: Option<u64>,
}

/// A meta (time, type, expiry, tag count, joined tags): what joins an index entry to its block.
pub(crate) type MetaRef<'a> = (&'a str, &'a str, Option<&'a str>, u32, &'a str);

/// The fields of one entry of a [`Part`] (see [`Rec`]).
pub(crate) struct Fields<'a> {
    pub(crate) category: &'a str,
    pub(crate) ts: &'a str,
    pub(crate) memory_type: &'a str,
    pub(crate) expires: Option<&'a str>,
    pub(crate) tags: (u32, &'a str),
    pub(crate) text: &'a str,
    pub(crate) fold: Option<u64>,
}

/// One memory file, parsed: the entries of a full-index file, or the blocks (with a meta line)
/// of a category file, in file order.
#[derive(Debug, Default)]
pub(crate) struct Part {
    text: String,
    recs: Vec<Rec>,
}

impl Part {
    /// The entries of a full-index file's text.
    pub(crate) fn of_index(text: &str) -> Self {
        let mut part = Part::default();
        for e in index_entries_in(text) {
            let category = part.push(&e.category);
            part.push_rec(category, &e.ts, &e.memory_type, e.expires.as_deref(), &e.tags, &e.summary, 3);
        }
        part
    }

    /// The blocks with a meta line of a category file's text.
    pub(crate) fn of_blocks(text: &str) -> Self {
        let mut part = Part::default();
        for b in blocks_in(text) {
            let Some(m) = &b.meta else { continue };
            part.push_rec(
                Span::default(),
                &m.ts,
                &m.memory_type,
                m.expires.as_deref(),
                &m.tags,
                b.content(),
                4,
            );
        }
        part
    }

    #[allow(clippy::too_many_arguments)]
    fn push_rec(
        &mut self,
        category: Span,
        ts: &str,
        memory_type: &str,
        expires: Option<&str>,
        tags: &[String],
        text: &str,
        min_fold: usize,
    ) {
        let rec = Rec {
            category,
            ts: self.push(ts),
            memory_type: self.push(memory_type),
            expires: expires.map(|e| self.push(e)),
            tags: self.push(&tags.join(",")),
            ntags: u32::try_from(tags.len()).unwrap_or(u32::MAX),
            text: self.push(text),
            fold: Some(folded_hash(text)).filter(|&(_, n)| n >= min_fold).map(|(h, _)| h),
        };
        self.recs.push(rec);
    }

    fn push(&mut self, s: &str) -> Span {
        let start = self.text.len();
        self.text.push_str(s);
        let at = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Span { start: at(start), end: at(self.text.len()) }
    }

    fn s(&self, span: Span) -> &str {
        self.text.get(span.start as usize..span.end as usize).unwrap_or_default()
    }

    /// How many entries (or blocks) it has.
    pub(crate) fn len(&self) -> usize {
        self.recs.len()
    }

    fn rec(&self, i: usize) -> Rec {
        self.recs.get(i).copied().unwrap_or_default()
    }

    /// Every field of entry `i` at once.
    pub(crate) fn fields(&self, i: usize) -> Option<Fields<'_>> {
        let r = self.recs.get(i)?;
        Some(Fields {
            category: self.s(r.category),
            ts: self.s(r.ts),
            memory_type: self.s(r.memory_type),
            expires: r.expires.map(|e| self.s(e)),
            tags: (r.ntags, self.s(r.tags)),
            text: self.s(r.text),
            fold: r.fold,
        })
    }

    /// Entry `i`'s category.
    pub(crate) fn category(&self, i: usize) -> &str {
        self.s(self.rec(i).category)
    }

    /// Entry `i`'s time.
    pub(crate) fn ts(&self, i: usize) -> &str {
        self.s(self.rec(i).ts)
    }

    /// Entry `i`'s type.
    pub(crate) fn memory_type(&self, i: usize) -> &str {
        self.s(self.rec(i).memory_type)
    }

    /// Entry `i`'s expiry.
    pub(crate) fn expires(&self, i: usize) -> Option<&str> {
        self.rec(i).expires.map(|e| self.s(e))
    }

    /// Entry `i`'s tags: (their count, joined with `,`).
    pub(crate) fn tags(&self, i: usize) -> (u32, &str) {
        let r = self.rec(i);
        (r.ntags, self.s(r.tags))
    }

    /// Entry `i`'s summary (index) or content (blocks).
    #[cfg(test)]
    pub(crate) fn text(&self, i: usize) -> &str {
        self.s(self.rec(i).text)
    }

    /// The folded hash of [`text`](Self::text), when long enough to count.
    pub(crate) fn fold(&self, i: usize) -> Option<u64> {
        self.rec(i).fold
    }

    /// Entry `i`'s meta, as joins compare it.
    pub(crate) fn meta(&self, i: usize) -> MetaRef<'_> {
        let r = self.rec(i);
        (self.s(r.ts), self.s(r.memory_type), r.expires.map(|e| self.s(e)), r.ntags, self.s(r.tags))
    }
}

/// The tags of a joined tag text with `n` tags.
pub(crate) fn split_tags(n: u32, joined: &str) -> impl Iterator<Item = &str> {
    joined.split(',').take(if n == 0 { 0 } else { usize::MAX })
}

/// Text as likely duplicates are compared: lowercase, letters and digits only (any script).
pub(crate) fn fold(s: &str) -> impl Iterator<Item = char> + '_ {
    s.chars().flat_map(char::to_lowercase).filter(|c| c.is_alphanumeric())
}

/// The hash of a folded text and its length in characters (nothing is allocated).
pub(crate) fn folded_hash(s: &str) -> (u64, usize) {
    let mut buf = [0u8; 4];
    fold(s).fold((crate::graph::fnv1a64(b""), 0), |(h, n), c| {
        (crate::graph::fnv1a64_extend(h, c.encode_utf8(&mut buf).as_bytes()), n + 1)
    })
}

/// The memory files of a pack, parsed, by blob id: a list at a new commit reads and parses
/// only the files that changed since the last list (a blob id names its content, so what is
/// kept is right whoever made the commits). Holds the files of the last list read through it,
/// and keeps them between launches in `.git/engram-memory-files` ([`KEPT_FILE`]): the first
/// list of a launch reads that one file instead of every memory file, and parses only the
/// files whose blob is not in it (changed by another process, a sync or a person's commit).
#[derive(Debug, Default)]
pub struct ParsedMemoryFiles {
    pub(super) index: HashMap<String, Arc<Part>>,
    pub(super) blocks: HashMap<String, Arc<Part>>,
    /// The kept file, once a list has looked for it.
    kept: Option<PathBuf>,
    /// Files parsed since the kept file was written (or read).
    pub(super) changed: usize,
    /// When the kept file was last written (or read).
    kept_at: Option<Instant>,
}

/// The kept file is written again when a quarter of the files were parsed since, else at most
/// this often (a list after each commit parses only a head file or two: rewriting the whole
/// file each time would cost more than it saves).
const KEEP_EVERY: Duration = Duration::from_secs(60);

/// The name of the kept file under `.git/` (`engram-memory-files`).
pub const KEPT_FILE: &str = "memory-files";
/// Its first line, with the version of its format; a file of another version is not read.
const KEPT_VERSION: &[u8] = b"engram memory-files 2\n";

/// What [`ParsedMemoryFiles::to_keep`] hands over: the parsed files to write to the kept file.
#[derive(Debug)]
pub struct KeepJob {
    file: PathBuf,
    index: Vec<(String, Arc<Part>)>,
    blocks: Vec<(String, Arc<Part>)>,
}

impl KeepJob {
    /// Writes the kept file (a new file renamed over the old one, so a reader sees one or the
    /// other whole). A failure only costs the next launch a full read.
    pub fn write(self) {
        let bytes = encode(&self.index, &self.blocks);
        static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = self.file.with_extension(format!("tmp{}-{n}", std::process::id()));
        let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, &self.file));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

impl ParsedMemoryFiles {
    /// Reads the kept file at `file` the first time (a missing, damaged or other-version file
    /// is as none: the files are parsed from the commit).
    pub(super) fn look_for_kept(&mut self, file: PathBuf) {
        if self.kept.is_some() {
            return;
        }
        if let Some((index, blocks)) = std::fs::read(&file).ok().and_then(|b| decode(&b)) {
            self.index.extend(index.into_iter().map(|(id, p)| (id, Arc::new(p))));
            self.blocks.extend(blocks.into_iter().map(|(id, p)| (id, Arc::new(p))));
        }
        self.kept = Some(file);
        self.kept_at = Some(Instant::now());
    }

    /// An empty cache that writes to the same kept file as `self`, with its counts.
    pub(super) fn successor(&self) -> Self {
        Self { kept: self.kept.clone(), changed: self.changed, kept_at: self.kept_at, ..Self::default() }
    }

    /// The files to write to the kept file when enough were parsed since it was written (see
    /// [`KEEP_EVERY`]; then marked written): the caller writes them with [`KeepJob::write`],
    /// off the answer's path.
    pub fn to_keep(&mut self) -> Option<KeepJob> {
        let files = self.index.len() + self.blocks.len();
        let due = self.changed * 4 >= files || self.kept_at.is_none_or(|t| t.elapsed() >= KEEP_EVERY);
        if self.changed == 0 || !due {
            return None;
        }
        let file = self.kept.clone()?;
        self.changed = 0;
        self.kept_at = Some(Instant::now());
        Some(KeepJob {
            file,
            index: self.index.iter().map(|(id, v)| (id.clone(), v.clone())).collect(),
            blocks: self.blocks.iter().map(|(id, v)| (id.clone(), v.clone())).collect(),
        })
    }
}

/// A file through `cache` (by its blob id), else read and parsed (then counted in `changed`);
/// kept in `next`.
pub(super) fn parsed(
    snap: &Snapshot<'_>,
    path: &str,
    cache: &HashMap<String, Arc<Part>>,
    next: &mut HashMap<String, Arc<Part>>,
    changed: &mut usize,
    parse: impl FnOnce() -> Result<Part>,
) -> Result<Arc<Part>> {
    let Some(id) = snap.file_id(path)? else { return Ok(Arc::new(parse()?)) };
    let value = match cache.get(&id) {
        Some(v) => v.clone(),
        None => {
            *changed += 1;
            Arc::new(parse()?)
        }
    };
    next.insert(id, value.clone());
    Ok(value)
}

// The kept file: `KEPT_VERSION`, then the parts, each: kind (`i` index, `b` blocks), blob id
// (length byte, bytes), text (u32 length, UTF-8 bytes), record count (u32), records (each
// `REC_BYTES`: 14 u32 and a u64, little-endian). A part whose text is not UTF-8 or whose spans
// do not fall on its characters makes the whole file as none.

/// An absent expiry is written as this start.
const NONE: u32 = u32::MAX;
const REC_BYTES: usize = 14 * 4 + 8;

fn encode(index: &[(String, Arc<Part>)], blocks: &[(String, Arc<Part>)]) -> Vec<u8> {
    let size: usize = index
        .iter()
        .chain(blocks)
        .map(|(id, p)| 50 + id.len() + p.text.len() + p.recs.len() * REC_BYTES)
        .sum();
    let mut out = Vec::with_capacity(KEPT_VERSION.len() + size);
    out.extend_from_slice(KEPT_VERSION);
    let parts = index.iter().map(|p| (b'i', p)).chain(blocks.iter().map(|p| (b'b', p)));
    for (kind, (id, part)) in parts {
        let (Ok(id_len), Ok(text_len), Ok(n)) =
            (u8::try_from(id.len()), u32::try_from(part.text.len()), u32::try_from(part.recs.len()))
        else {
            continue;
        };
        out.push(kind);
        out.push(id_len);
        out.extend_from_slice(id.as_bytes());
        out.extend_from_slice(&text_len.to_le_bytes());
        out.extend_from_slice(part.text.as_bytes());
        out.extend_from_slice(&n.to_le_bytes());
        for r in &part.recs {
            let expires = r.expires.unwrap_or(Span { start: NONE, end: NONE });
            let words = [
                r.category.start,
                r.category.end,
                r.ts.start,
                r.ts.end,
                r.memory_type.start,
                r.memory_type.end,
                expires.start,
                expires.end,
                r.tags.start,
                r.tags.end,
                r.ntags,
                r.text.start,
                r.text.end,
                u32::from(r.fold.is_some()),
            ];
            for w in words {
                out.extend_from_slice(&w.to_le_bytes());
            }
            out.extend_from_slice(&r.fold.unwrap_or_default().to_le_bytes());
        }
    }
    out
}

/// Index parts and block parts by blob id.
type Decoded = (Vec<(String, Part)>, Vec<(String, Part)>);

fn decode(bytes: &[u8]) -> Option<Decoded> {
    let mut r = Reader(bytes.strip_prefix(KEPT_VERSION)?);
    let (mut index, mut blocks) = (Vec::new(), Vec::new());
    while !r.0.is_empty() {
        let kind = r.take(1)?[0];
        let id_len = usize::from(r.take(1)?[0]);
        let id = std::str::from_utf8(r.take(id_len)?).ok()?.to_owned();
        let text_len = r.u32()? as usize;
        let text = std::str::from_utf8(r.take(text_len)?).ok()?.to_owned();
        let n = r.u32()? as usize;
        if n > r.0.len() / REC_BYTES {
            return None;
        }
        let mut recs = Vec::with_capacity(n);
        for _ in 0..n {
            let mut w = [0u32; 14];
            for x in &mut w {
                *x = r.u32()?;
            }
            let fold = r.u64()?;
            let span = |start: u32, end: u32| -> Option<Span> {
                text.get(start as usize..end as usize).map(|_| Span { start, end })
            };
            let expires = if w[6] == NONE { None } else { Some(span(w[6], w[7])?) };
            recs.push(Rec {
                category: span(w[0], w[1])?,
                ts: span(w[2], w[3])?,
                memory_type: span(w[4], w[5])?,
                expires,
                tags: span(w[8], w[9])?,
                ntags: w[10],
                text: span(w[11], w[12])?,
                fold: (w[13] != 0).then_some(fold),
            });
        }
        let part = Part { text, recs };
        match kind {
            b'i' => index.push((id, part)),
            b'b' => blocks.push((id, part)),
            _ => return None,
        }
    }
    Some((index, blocks))
}

/// Reads the kept file's bytes in order.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INDEX: &str = "# index\n\n- `memory/c.md` [2026-01-01 10:00] [fact] expires:2027-01-01 [a,b] Likes tea\n- `memory/c.md` [2026-01-01 10:01] [fact] ok\n";
    const BLOCKS: &str = "\n---\n[2026-01-01 10:00] type:fact expires:2027-01-01 tags:a,b\nThe user likes green tea.\n\n---\n[2026-01-01 10:01] type:fact tags:\nok\n";

    #[test]
    fn parts_hold_the_fields_the_parsers_read() {
        let index = Part::of_index(INDEX);
        assert_eq!(index.len(), 2);
        assert_eq!(
            (index.category(0), index.ts(0), index.memory_type(0), index.expires(0), index.text(0)),
            ("c", "2026-01-01 10:00", "fact", Some("2027-01-01"), "Likes tea")
        );
        assert_eq!(split_tags(index.tags(0).0, index.tags(0).1).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(split_tags(index.tags(1).0, index.tags(1).1).count(), 0);
        assert_eq!(index.fold(1), None, "a two-letter summary does not count for duplicates");
        assert_eq!(index.fold(0), Some(folded_hash("likes TEA!").0));
        let blocks = Part::of_blocks(BLOCKS);
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks.meta(0), index.meta(0), "the block of entry 0");
        assert_eq!(blocks.text(0), "The user likes green tea.");
        // `tags:` with nothing after it is one empty tag, which no index entry has.
        assert_eq!(blocks.tags(1), (1, ""));
        assert_ne!(blocks.meta(1), index.meta(1));
        assert_eq!(split_tags(blocks.tags(1).0, blocks.tags(1).1).collect::<Vec<_>>(), [""]);
    }

    #[test]
    fn the_kept_form_reads_back_and_a_damaged_one_is_none() {
        let index = Arc::new(Part::of_index(INDEX));
        let blocks = Arc::new(Part::of_blocks(BLOCKS));
        let bytes = encode(&[("i1".into(), index.clone())], &[("b1".into(), blocks.clone())]);
        let (i, b) = decode(&bytes).expect("reads back");
        assert_eq!((i.len(), b.len(), i[0].0.as_str(), b[0].0.as_str()), (1, 1, "i1", "b1"));
        for (back, part) in [(&i[0].1, &index), (&b[0].1, &blocks)] {
            assert_eq!(back.text, part.text);
            for k in 0..part.len() {
                assert_eq!(
                    (back.meta(k), back.text(k), back.fold(k)),
                    (part.meta(k), part.text(k), part.fold(k))
                );
                assert_eq!(back.category(k), part.category(k));
            }
        }
        assert!(decode(&bytes[..bytes.len() - 1]).is_none(), "cut short");
        assert!(decode(b"engram memory-files 1\n{}").is_none(), "another version");
        // A span that no longer falls on the text's characters.
        let mut bad = bytes.clone();
        let text_at = KEPT_VERSION.len() + 1 + 1 + "i1".len() + 4;
        assert_eq!(bad[text_at], b'c', "the text starts with entry 0's category");
        bad[text_at] = 0xff;
        assert!(decode(&bad).is_none(), "not UTF-8");
        // A span cut in the middle of a character: `第` is three bytes.
        let zh = Arc::new(Part::of_blocks("\n---\n[2026-01-01 10:00] type:fact\n第一\n"));
        let mut bad = encode(&[], &[("b".into(), zh)]);
        let at = bad.len() - 8 - 4 - 4; // the last record's text end, before its fold flag and fold
        let end = u32::from_le_bytes(bad[at..at + 4].try_into().unwrap());
        bad[at..at + 4].copy_from_slice(&(end - 1).to_le_bytes());
        assert!(decode(&bad).is_none(), "a span inside a character");
    }
}
