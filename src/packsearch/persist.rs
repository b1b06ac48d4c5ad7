//! The on-disk copy of a pack's search index, in `.git/engram/` (never committed).
//!
//! Layout: magic `ENGRPIX1` | u32 extraction version | u32 length + commit id |
//! u64 length + JSON of the summary lines per index file | the engine's own
//! checksummed snapshot ([`SearchIndex::to_snapshot`]). Anything unexpected
//! makes [`load`] return `None`, and the caller rebuilds.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::extract::EXTRACT_VERSION;
use crate::search::SearchIndex;

const MAGIC: &[u8; 8] = b"ENGRPIX1";
/// File name of the stored index inside the derived-data directory.
pub const FILE_NAME: &str = "search.idx";

/// Summary lines (join key, summary) per index file path.
pub type SummaryFiles = HashMap<String, Vec<(String, String)>>;

/// What a stored index holds.
pub struct Stored {
    /// The commit it was built from.
    pub commit: String,
    /// Summary lines per index file.
    pub summary_files: SummaryFiles,
    /// The documents and postings.
    pub index: SearchIndex,
}

/// The path of the stored index in a derived-data directory.
pub fn path_in(derived_dir: &Path) -> PathBuf {
    derived_dir.join(FILE_NAME)
}

/// Serialises an index.
pub fn encode(commit: &str, summary_files: &SummaryFiles, index: &SearchIndex) -> Vec<u8> {
    let json = serde_json::to_vec(summary_files).unwrap_or_else(|_| b"{}".to_vec());
    let snapshot = index.to_snapshot();
    let mut out = Vec::with_capacity(32 + commit.len() + json.len() + snapshot.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&EXTRACT_VERSION.to_le_bytes());
    out.extend_from_slice(&(commit.len() as u32).to_le_bytes());
    out.extend_from_slice(commit.as_bytes());
    out.extend_from_slice(&(json.len() as u64).to_le_bytes());
    out.extend_from_slice(&json);
    out.extend_from_slice(&snapshot);
    out
}

/// Decodes a stored index; `None` when it is not one this build wrote.
pub fn decode(bytes: &[u8]) -> Option<Stored> {
    let mut rest = bytes.strip_prefix(MAGIC.as_slice())?;
    let version = u32::from_le_bytes(take(&mut rest, 4)?.try_into().ok()?);
    if version != EXTRACT_VERSION {
        return None;
    }
    let len = u32::from_le_bytes(take(&mut rest, 4)?.try_into().ok()?) as usize;
    let commit = std::str::from_utf8(take(&mut rest, len)?).ok()?.to_owned();
    let len = usize::try_from(u64::from_le_bytes(take(&mut rest, 8)?.try_into().ok()?)).ok()?;
    let summary_files: SummaryFiles = serde_json::from_slice(take(&mut rest, len)?).ok()?;
    let index = SearchIndex::from_snapshot(rest).ok()?;
    Some(Stored { commit, summary_files, index })
}

fn take<'a>(rest: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if rest.len() < n {
        return None;
    }
    let (head, tail) = rest.split_at(n);
    *rest = tail;
    Some(head)
}

/// Reads the stored index of a pack; `None` when absent or unreadable.
pub fn load(derived_dir: &Path) -> Option<Stored> {
    let bytes = std::fs::read(path_in(derived_dir)).ok()?;
    decode(&bytes)
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

    #[test]
    fn round_trips_and_rejects_damage() {
        let index = SearchIndex::build([Document::new("a#0", "深蹲", "膝盖")]).expect("build");
        let mut files = SummaryFiles::new();
        files.insert("memory/_index_full.md".into(), vec![("k".into(), "s".into())]);
        let bytes = encode("abc", &files, &index);
        let back = decode(&bytes).expect("decodes");
        assert_eq!(back.commit, "abc");
        assert_eq!(back.summary_files, files);
        assert_eq!(back.index.len(), 1);
        assert!(decode(&bytes[..bytes.len() - 3]).is_none());
        let mut flipped = bytes.clone();
        let last = flipped.len() - 20;
        flipped[last] ^= 0xff;
        assert!(decode(&flipped).is_none());
        assert!(decode(b"garbage").is_none());
    }
}
