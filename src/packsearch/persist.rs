//! The on-disk copy of a pack's search index, in `.git/engram/` (never committed).
//!
//! Layout (little endian):
//! ```text
//! magic "ENGRPIX2" | u32 extraction version | u32 length + commit id
//! | u64 join tables length | u64 their checksum | u64 segment length
//! | u64 checksum of the header before it | join tables | the engine's segment (`search::snapshot`)
//! join tables: u32 n_keys | u32 n_files | 6 × u64 section lengths |
//!   keys  n_keys × (u32 text offset, u32 text length, u32 first id, u32 ids,
//!         u32 first summary, u32 summaries), sorted by key text
//!   ids   × (u32 offset, u32 length): ids of the memory documents of a key
//!   sums  × (u32 file rank, u32 line, u32 offset, u32 length): a key's summaries in order
//!   files n_files × (u32 path offset, u32 path length, u32 first line, u32 lines), sorted by path
//!   lines × (u32 key, u32 summary): an index file's lines in order
//!   blob  the texts
//! ```
//! [`load`] opens the file once and keeps the segment's small tables in
//! memory; posting lists and documents are read from the open file when a
//! search needs them, the join tables when the index is first brought
//! forward from a git diff — each checked against its own checksum when read.
//! Writers replace the file by renaming a new one over it, so an open file
//! never changes under a reader. Anything unexpected makes [`load`] return
//! `None`, and the caller rebuilds; damage found later makes the index report
//! itself damaged, and the caller rebuilds then.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use super::SummaryPos;
use super::extract::EXTRACT_VERSION;
use crate::search::{SearchIndex, SegmentSource};

const MAGIC: &[u8; 8] = b"ENGRPIX2";
/// File name of the stored index inside the derived-data directory.
pub const FILE_NAME: &str = "search.idx";

/// What a stored index holds.
pub struct Stored {
    /// The commit it was built from.
    pub commit: String,
    /// Which memory entries and summaries share a join key, and the lines of each index file.
    pub joins: LazyJoins,
    /// The documents and postings.
    pub index: SearchIndex,
}

/// The path of the stored index in a derived-data directory.
pub fn path_in(derived_dir: &Path) -> PathBuf {
    derived_dir.join(FILE_NAME)
}

/// One join key of [`encode`]'s input: the key, the ids of its memory
/// documents and its summaries in order.
pub type KeyRow<'a> = (&'a str, &'a [String], &'a [(SummaryPos, String)]);

/// Serialises an index. `keys` must be sorted by key and `files` by path;
/// `rank_of` gives the file rank of an index file (as in the summaries).
pub fn encode(
    commit: &str,
    keys: &[KeyRow<'_>],
    files: &[(&str, &[(String, String)])],
    rank_of: impl Fn(&str) -> u32,
    index: &SearchIndex,
) -> Option<Vec<u8>> {
    let joins = encode_joins(keys, files, rank_of)?;
    let segment = index.to_snapshot().ok()?;
    let mut out = Vec::with_capacity(64 + commit.len() + joins.len() + segment.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&EXTRACT_VERSION.to_le_bytes());
    out.extend_from_slice(&u32::try_from(commit.len()).ok()?.to_le_bytes());
    out.extend_from_slice(commit.as_bytes());
    out.extend_from_slice(&(joins.len() as u64).to_le_bytes());
    out.extend_from_slice(&crate::search::checksum(&joins).to_le_bytes());
    out.extend_from_slice(&(segment.len() as u64).to_le_bytes());
    let sum = crate::search::checksum(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out.extend_from_slice(&joins);
    out.extend_from_slice(&segment);
    Some(out)
}

fn put(out: &mut Vec<u8>, v: usize) -> Option<()> {
    out.extend_from_slice(&u32::try_from(v).ok()?.to_le_bytes());
    Some(())
}

fn encode_joins(
    keys: &[KeyRow<'_>],
    files: &[(&str, &[(String, String)])],
    rank_of: impl Fn(&str) -> u32,
) -> Option<Vec<u8>> {
    let (mut k, mut ids, mut sums, mut f, mut lines, mut blob) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let text = |blob: &mut Vec<u8>, out: &mut Vec<u8>, s: &str| -> Option<()> {
        put(out, blob.len())?;
        put(out, s.len())?;
        blob.extend_from_slice(s.as_bytes());
        Some(())
    };
    let mut key_index: HashMap<&str, (usize, usize, usize)> = HashMap::with_capacity(keys.len());
    for (i, (key, key_ids, key_sums)) in keys.iter().enumerate() {
        text(&mut blob, &mut k, key)?;
        put(&mut k, ids.len() / 8)?;
        put(&mut k, key_ids.len())?;
        let first_sum = sums.len() / 16;
        put(&mut k, first_sum)?;
        put(&mut k, key_sums.len())?;
        key_index.insert(key, (i, first_sum, key_sums.len()));
        for id in *key_ids {
            text(&mut blob, &mut ids, id)?;
        }
        for ((rank, line), s) in *key_sums {
            sums.extend_from_slice(&rank.to_le_bytes());
            sums.extend_from_slice(&line.to_le_bytes());
            text(&mut blob, &mut sums, s)?;
        }
    }
    for (path, file_lines) in files {
        text(&mut blob, &mut f, path)?;
        put(&mut f, lines.len() / 8)?;
        put(&mut f, file_lines.len())?;
        let rank = rank_of(path);
        for (n, (key, _)) in file_lines.iter().enumerate() {
            let (ki, first, count) = *key_index.get(key.as_str())?;
            // The summary of this line among its key's summaries.
            let pos = keys.get(ki)?.2.iter().position(|e| e.0 == (rank, n as u32))?;
            if pos >= count {
                return None;
            }
            put(&mut lines, ki)?;
            put(&mut lines, first + pos)?;
        }
    }
    let mut out = Vec::new();
    put(&mut out, keys.len())?;
    put(&mut out, files.len())?;
    for s in [&k, &ids, &sums, &f, &lines, &blob] {
        out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    }
    for s in [k, ids, sums, f, lines, blob] {
        out.extend_from_slice(&s);
    }
    Some(out)
}

/// The join tables of a stored index, read by offset.
#[derive(Debug)]
pub struct Joins {
    bytes: Vec<u8>,
    n_keys: u32,
    n_files: u32,
    /// Start of each section in `bytes` (keys, ids, sums, files, lines, blob, end).
    at: [usize; 7],
}

fn u32_at(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(i..i.checked_add(4)?)?.try_into().ok()?))
}

impl Joins {
    fn parse(bytes: Vec<u8>) -> Option<Self> {
        let n_keys = u32_at(&bytes, 0)?;
        let n_files = u32_at(&bytes, 4)?;
        let mut at = [0usize; 7];
        at[0] = 8 + 6 * 8;
        for i in 0..6 {
            let len = u64::from_le_bytes(bytes.get(8 + i * 8..16 + i * 8)?.try_into().ok()?);
            at[i + 1] = at[i].checked_add(usize::try_from(len).ok()?)?;
        }
        if at[6] != bytes.len()
            || at[1] - at[0] != n_keys as usize * 24
            || at[4] - at[3] != n_files as usize * 16
        {
            return None;
        }
        let j = Self { bytes, n_keys, n_files, at };
        // Every reference stays inside its section.
        let blob = at[6] - at[5];
        let n_ids = (at[2] - at[1]) / 8;
        let n_sums = (at[3] - at[2]) / 16;
        let n_lines = (at[5] - at[4]) / 8;
        let span = |first: u32, n: u32, total: usize| {
            (first as usize).checked_add(n as usize).is_some_and(|e| e <= total)
        };
        let text_ok = |sec: usize, i: usize| {
            let (Some(o), Some(l)) = (j.u32(sec, i), j.u32(sec, i + 4)) else { return false };
            span(o, l, blob) && std::str::from_utf8(j.text_raw(o, l)).is_ok()
        };
        for i in 0..n_keys as usize {
            let e = i * 24;
            let ok = text_ok(0, e)
                && span(j.u32(0, e + 8)?, j.u32(0, e + 12)?, n_ids)
                && span(j.u32(0, e + 16)?, j.u32(0, e + 20)?, n_sums);
            if !ok || (i > 0 && j.key(i as u32 - 1) >= j.key(i as u32)) {
                return None;
            }
        }
        for i in 0..n_ids {
            text_ok(1, i * 8).then_some(())?;
        }
        for i in 0..n_sums {
            text_ok(2, i * 16 + 8).then_some(())?;
        }
        for i in 0..n_files as usize {
            let e = i * 16;
            (text_ok(3, e) && span(j.u32(3, e + 8)?, j.u32(3, e + 12)?, n_lines)).then_some(())?;
            if i > 0 && j.file(i as u32 - 1) >= j.file(i as u32) {
                return None;
            }
        }
        for i in 0..n_lines {
            (j.u32(4, i * 8)? < n_keys && (j.u32(4, i * 8 + 4)? as usize) < n_sums).then_some(())?;
        }
        Some(j)
    }

    /// A u32 at byte `i` of section `sec`.
    fn u32(&self, sec: usize, i: usize) -> Option<u32> {
        if self.at[sec] + i + 4 > self.at[sec + 1] {
            return None;
        }
        u32_at(&self.bytes, self.at[sec] + i)
    }

    fn text_raw(&self, off: u32, len: u32) -> &[u8] {
        let s = self.at[5] + off as usize;
        self.bytes.get(s..s + len as usize).unwrap_or_default()
    }

    /// The text referenced at byte `i` of section `sec`.
    fn text(&self, sec: usize, i: usize) -> &str {
        let (Some(o), Some(l)) = (self.u32(sec, i), self.u32(sec, i + 4)) else { return "" };
        std::str::from_utf8(self.text_raw(o, l)).unwrap_or_default()
    }

    fn key(&self, i: u32) -> &str {
        self.text(0, i as usize * 24)
    }

    fn file(&self, i: u32) -> &str {
        self.text(3, i as usize * 16)
    }

    fn find<'a>(n: u32, at: impl Fn(u32) -> &'a str, want: &str) -> Option<u32> {
        let (mut lo, mut hi) = (0u32, n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match at(mid).cmp(want) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// Number of join keys.
    pub fn n_keys(&self) -> u32 {
        self.n_keys
    }

    /// Number of index files.
    pub fn n_files(&self) -> u32 {
        self.n_files
    }

    /// The text of key `i` (keys are sorted).
    pub fn key_at(&self, i: u32) -> &str {
        self.key(i)
    }

    /// The path of index file `i` (paths are sorted).
    pub fn file_at(&self, i: u32) -> &str {
        self.file(i)
    }

    /// The index of a key.
    pub fn find_key(&self, key: &str) -> Option<u32> {
        Self::find(self.n_keys, |i| self.key(i), key)
    }

    /// The index of an index file.
    pub fn find_file(&self, path: &str) -> Option<u32> {
        Self::find(self.n_files, |i| self.file(i), path)
    }

    /// Ids of the memory documents of key `i`.
    pub fn key_docs(&self, i: u32) -> Vec<String> {
        let e = i as usize * 24;
        let (first, n) = (self.u32(0, e + 8).unwrap_or(0), self.u32(0, e + 12).unwrap_or(0));
        (first..first.saturating_add(n)).map(|x| self.text(1, x as usize * 8).to_owned()).collect()
    }

    /// Summaries of key `i`, in order.
    pub fn summaries(&self, i: u32) -> Vec<(SummaryPos, String)> {
        let e = i as usize * 24;
        let (first, n) = (self.u32(0, e + 16).unwrap_or(0), self.u32(0, e + 20).unwrap_or(0));
        (first..first.saturating_add(n)).map(|x| self.sum(x)).collect()
    }

    fn sum(&self, x: u32) -> (SummaryPos, String) {
        let e = x as usize * 16;
        let pos = (self.u32(2, e).unwrap_or(0), self.u32(2, e + 4).unwrap_or(0));
        (pos, self.text(2, e + 8).to_owned())
    }

    /// The (key, summary) lines of index file `i`, in order.
    pub fn file_lines(&self, i: u32) -> Vec<(String, String)> {
        let e = i as usize * 16;
        let (first, n) = (self.u32(3, e + 8).unwrap_or(0), self.u32(3, e + 12).unwrap_or(0));
        (first..first.saturating_add(n))
            .map(|x| {
                let key = self.key(self.u32(4, x as usize * 8).unwrap_or(0)).to_owned();
                (key, self.sum(self.u32(4, x as usize * 8 + 4).unwrap_or(0)).1)
            })
            .collect()
    }
}

/// Opens a stored index file without following a link (it is a regular
/// file of the pack's `.git`, or not ours).
fn open_file(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    options.open(path)
}

/// The join tables of a stored file, read and checked when first needed (a
/// process that only searches never reads them).
#[derive(Debug)]
pub struct LazyJoins {
    source: SegmentSource,
    sum: u64,
    cell: OnceLock<Option<Joins>>,
}

impl LazyJoins {
    /// The tables; `None` when they cannot be read or are damaged (see [`LazyJoins::failed`]).
    pub fn get(&self) -> Option<&Joins> {
        self.cell
            .get_or_init(|| {
                let len = usize::try_from(self.source_len()).ok()?;
                let bytes = self.source.read_all(0, len)?;
                (crate::search::checksum(&bytes) == self.sum).then_some(())?;
                Joins::parse(bytes)
            })
            .as_ref()
    }

    fn source_len(&self) -> u64 {
        match &self.source {
            SegmentSource::File { len, .. } => *len,
            SegmentSource::Bytes(b) => b.len() as u64,
        }
    }

    /// Whether reading the tables failed (the index must be rebuilt).
    pub fn failed(&self) -> bool {
        matches!(self.cell.get(), Some(None))
    }
}

/// Opens the stored index of a pack; `None` when absent, unreadable, damaged
/// or written by another version. Reads the header and the segment's small
/// tables (checked against their checksums); the join tables, posting lists
/// and documents are read, and checked, when needed.
pub fn load(derived_dir: &Path) -> Option<Stored> {
    let file = Arc::new(open_file(&path_in(derived_dir)).ok()?);
    let meta = file.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    let len = meta.len();
    let whole = SegmentSource::File { file: file.clone(), offset: 0, len };
    let head = whole.read_all(0, 16)?;
    if head.get(..8)? != MAGIC || u32_at(&head, 8)? != EXTRACT_VERSION {
        return None;
    }
    let commit_len = u32_at(&head, 12)? as usize;
    if commit_len > 256 {
        return None;
    }
    let header_len = 16 + commit_len as u64 + 24;
    let header = whole.read_all(0, header_len as usize + 8)?;
    let (header, sum) = header.split_at(header_len as usize);
    if crate::search::checksum(header) != u64::from_le_bytes(sum.try_into().ok()?) {
        return None;
    }
    let commit = String::from_utf8(header.get(16..16 + commit_len)?.to_vec()).ok()?;
    let u64_at = |i: usize| Some(u64::from_le_bytes(header.get(i..i + 8)?.try_into().ok()?));
    let at = 16 + commit_len;
    let (joins_len, joins_sum, seg_len) = (u64_at(at)?, u64_at(at + 8)?, u64_at(at + 16)?);
    let joins_at = header_len + 8;
    if joins_at.checked_add(joins_len)?.checked_add(seg_len)? != len {
        return None;
    }
    let joins = LazyJoins {
        source: SegmentSource::File { file: file.clone(), offset: joins_at, len: joins_len },
        sum: joins_sum,
        cell: OnceLock::new(),
    };
    let source = SegmentSource::File { file, offset: joins_at + joins_len, len: seg_len };
    let index = SearchIndex::open_segment(source, false).ok()?;
    Some(Stored { commit, joins, index })
}

/// Writes the stored index (temp file + rename). Failures are returned, and
/// callers treat them as "not saved": the index is derived data.
pub fn save(derived_dir: &Path, bytes: &[u8]) -> Result<(), crate::store::StoreError> {
    std::fs::create_dir_all(derived_dir).map_err(|source| crate::store::StoreError::Io {
        step: "create directory",
        path: derived_dir.to_owned(),
        source,
    })?;
    crate::store::write_file_atomic(&path_in(derived_dir), bytes, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::Document;

    fn sample() -> (Vec<u8>, SearchIndex) {
        let index = SearchIndex::build([Document::new("a#0", "深蹲", "膝盖")]).expect("build");
        let ids = vec!["memory/c.md#0".to_owned()];
        let sums = vec![((u32::MAX, 0), "s".to_owned())];
        let lines = vec![("k".to_owned(), "s".to_owned())];
        let bytes =
            encode("abc", &[("k", &ids, &sums)], &[("memory/_index_full.md", &lines)], |_| u32::MAX, &index)
                .expect("encode");
        (bytes, index)
    }

    #[test]
    fn round_trips_and_rejects_damage() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (bytes, _) = sample();
        save(dir.path(), &bytes).expect("save");
        let back = load(dir.path()).expect("loads");
        assert_eq!(back.commit, "abc");
        let joins = back.joins.get().expect("joins");
        assert_eq!(joins.find_key("k"), Some(0));
        assert_eq!(joins.key_docs(0), ["memory/c.md#0"]);
        assert_eq!(joins.summaries(0), [((u32::MAX, 0), "s".to_owned())]);
        assert_eq!(joins.find_file("memory/_index_full.md"), Some(0));
        assert_eq!(joins.file_lines(0), [("k".to_owned(), "s".to_owned())]);
        assert_eq!(back.index.len(), 1);
        assert_eq!(back.index.search("深蹲", &crate::search::Filter::all(), 3).len(), 1);
        for n in [0, 10, bytes.len() / 2, bytes.len() - 3, bytes.len() - 1] {
            save(dir.path(), &bytes[..n]).expect("save");
            assert!(load(dir.path()).is_none(), "cut at {n}");
        }
        // Every flipped byte is found: at open, or when its part is read
        // (then the index or the joins say they are damaged).
        for i in 0..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[i] ^= 0x20;
            save(dir.path(), &flipped).expect("save");
            let Some(back) = load(dir.path()) else { continue };
            // Reads every posting list and record of this small index.
            let _ = back.index.search("深蹲 膝盖", &crate::search::Filter::all(), 3);
            let _ = back.index.get("a#0");
            let found = back.joins.get().is_none() || back.index.is_damaged();
            assert!(found, "flip at {i}");
        }
        save(dir.path(), b"garbage").expect("save");
        assert!(load(dir.path()).is_none());
    }

    /// Damaged join tables under a valid checksum are rejected, never a panic.
    #[test]
    fn structurally_damaged_joins_never_panic() {
        let (bytes, _) = sample();
        let len = u64::from_le_bytes(bytes[16 + 3..16 + 3 + 8].try_into().expect("8 bytes")) as usize;
        let start = 16 + 3 + 24 + 8;
        let joins = &bytes[start..start + len];
        for i in 0..joins.len() {
            for x in [0x01u8, 0x80, 0xff] {
                let mut j = joins.to_vec();
                j[i] ^= x;
                if let Some(j) = Joins::parse(j) {
                    for k in 0..j.n_keys() {
                        let _ = (j.key_at(k), j.key_docs(k), j.summaries(k));
                    }
                    for f in 0..j.n_files() {
                        let _ = (j.file_at(f), j.file_lines(f));
                    }
                }
            }
        }
    }
}
