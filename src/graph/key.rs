//! File names of graph records: a stable hash of the exact name, a shard
//! directory and a readable, traversal-safe slug.
//!
//! Every path is a pure function of the exact name (its UTF-8 bytes, no
//! normalisation) and a probe number, so the same name maps to the same file
//! on every device, and two devices adding different names never touch the
//! same file (unless their 64-bit hashes collide, which the probe chain in
//! `tx.rs` handles).

/// The directory (relative to the pack root) that holds the whole graph.
pub const GRAPH_DIR: &str = "graph";

/// Longest readable prefix kept in a file name, in bytes (ASCII only).
const MAX_SLUG_LEN: usize = 40;

/// The kinds of files in the graph layout, each with its own directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// `graph/entities/`: one entity per file.
    Entity,
    /// `graph/relations/`: the outgoing relations of one `from` name.
    Relations,
    /// `graph/incoming/`: index of the `from` names pointing at one `to` name.
    Incoming,
    /// `graph/unknown/`: one preserved line of an imported JSONL file that
    /// is not a valid entity or relation record.
    Unknown,
}

impl FileKind {
    /// Returns the directory of this kind, relative to the pack root.
    pub fn dir(self) -> &'static str {
        match self {
            Self::Entity => "graph/entities",
            Self::Relations => "graph/relations",
            Self::Incoming => "graph/incoming",
            Self::Unknown => "graph/unknown",
        }
    }

    /// Returns the kind of a path inside the graph layout, or `None` for a
    /// path that is not a `.json` file in one of the four directories.
    pub fn of_path(path: &str) -> Option<Self> {
        if !path.ends_with(".json") {
            return None;
        }
        [Self::Entity, Self::Relations, Self::Incoming, Self::Unknown]
            .into_iter()
            .find(|kind| path.strip_prefix(kind.dir()).is_some_and(|rest| rest.starts_with('/')))
    }
}

/// Returns the 64-bit FNV-1a hash of `bytes`.
///
/// FNV-1a is tiny, fast on short names and stable across platforms and
/// releases; it is not collision resistant, which is why lookups compare the
/// name stored inside the file and fall back to a probe chain.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    fnv1a64_extend(FNV_OFFSET_BASIS, bytes)
}

/// FNV-1a of several strings, each followed by a `0xff` byte (which UTF-8 text never holds),
/// so `["ab", "c"]` and `["a", "bc"]` differ. For short ids (not security relevant).
pub fn fnv1a64_parts(parts: &[&str]) -> u64 {
    parts
        .iter()
        .fold(FNV_OFFSET_BASIS, |hash, part| fnv1a64_extend(fnv1a64_extend(hash, part.as_bytes()), &[0xff]))
}

const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a of `bytes` after the bytes that made `hash` (`fnv1a64(a + b)` is
/// `fnv1a64_extend(fnv1a64(a), b)`).
pub fn fnv1a64_extend(mut hash: u64, bytes: &[u8]) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    for &byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(PRIME);
    }
    hash
}

/// Returns the readable part of a file name for `name`: ASCII letters and
/// digits lower-cased, every other run of characters turned into one `-`,
/// trimmed, at most 40 bytes. Empty for names with no ASCII alphanumerics
/// (e.g. `张伟`, `🐱`).
pub fn slug(name: &str) -> String {
    let mut out = String::new();
    for ch in name.chars() {
        if out.len() >= MAX_SLUG_LEN {
            break;
        }
        if ch.is_ascii_alphanumeric() {
            out.push(ch.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    while out.ends_with('-') {
        out.pop();
    }
    out
}

/// Returns the path of probe `probe` for `name` in the directory of `kind`:
/// `<dir>/<2 hex>/<slug>-<16 hex>.json`, with `-<probe>` before `.json` for
/// probes after the first, and without `<slug>-` when the slug is empty.
///
/// The shard is the first two hex digits of the hash (256 shards), so a
/// directory holds about 40 files at 10,000 entities.
pub fn record_path(kind: FileKind, name: &str, probe: u32) -> String {
    let hex = format!("{:016x}", fnv1a64(name.as_bytes()));
    let shard = &hex[..2];
    let slug = slug(name);
    let mut path = String::with_capacity(kind.dir().len() + slug.len() + 32);
    path.push_str(kind.dir());
    path.push('/');
    path.push_str(shard);
    path.push('/');
    if !slug.is_empty() {
        path.push_str(&slug);
        path.push('-');
    }
    path.push_str(&hex);
    if probe > 0 {
        path.push('-');
        path.push_str(&probe.to_string());
    }
    path.push_str(".json");
    path
}

/// Returns the path of a preserved unknown line: its hash (seeded with the
/// line's position) decides the file, so identical lines at two positions get
/// two files.
pub fn unknown_path(seq: u64, line: &str, probe: u32) -> String {
    let mut bytes = Vec::with_capacity(line.len() + 8);
    bytes.extend_from_slice(&seq.to_le_bytes());
    bytes.extend_from_slice(line.as_bytes());
    let hex = format!("{:016x}", fnv1a64(&bytes));
    let mut path = format!("{}/{}/{hex}", FileKind::Unknown.dir(), &hex[..2]);
    if probe > 0 {
        path.push('-');
        path.push_str(&probe.to_string());
    }
    path.push_str(".json");
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_published_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn fnv_parts_end_each_part_with_0xff() {
        // The ids of notes and workspace memories (and a git summary's fingerprint) depend on it.
        assert_eq!(fnv1a64_parts(&["a", "bc"]), fnv1a64(b"a\xffbc\xff"));
        assert_eq!(fnv1a64_parts(&["a", "bc"]), 0xa0a3_542c_19b9_00ab);
        assert_ne!(fnv1a64_parts(&["ab", "c"]), fnv1a64_parts(&["a", "bc"]));
        assert_eq!(fnv1a64_parts(&[]), fnv1a64(b""));
    }

    #[test]
    fn slugs_are_ascii_and_safe() {
        assert_eq!(slug("Alice_Chen"), "alice-chen");
        assert_eq!(slug("../../etc/passwd"), "etc-passwd");
        assert_eq!(slug("张伟"), "");
        assert_eq!(slug("🐱 Mimi"), "mimi");
        assert_eq!(slug("  a  b  "), "a-b");
        assert!(slug(&"x".repeat(500)).len() <= MAX_SLUG_LEN);
    }

    #[test]
    fn paths_are_stable_distinct_and_contained() {
        let names = ["Alice", "alice", "张伟", "🐱", "..", "/", "a/../../b", "", " "];
        let mut seen = std::collections::HashSet::new();
        for name in names {
            let path = record_path(FileKind::Entity, name, 0);
            assert_eq!(path, record_path(FileKind::Entity, name, 0));
            assert!(path.starts_with("graph/entities/"), "{path}");
            let file = &path["graph/entities/".len()..];
            assert_eq!(file.matches('/').count(), 1, "{path}");
            assert!(!file.contains(".."), "{path}");
            assert!(file.bytes().all(|b| b.is_ascii_alphanumeric() || b"-./".contains(&b)), "{path}");
            assert!(seen.insert(path.to_ascii_lowercase()), "case clash {path}");
            assert_eq!(FileKind::of_path(&path), Some(FileKind::Entity));
        }
        assert_eq!(
            record_path(FileKind::Relations, "Alice", 2),
            format!(
                "graph/relations/{0}/alice-{1:016x}-2.json",
                &format!("{:016x}", fnv1a64(b"Alice"))[..2],
                fnv1a64(b"Alice")
            )
        );
        assert_eq!(FileKind::of_path("graph/entities.json"), None);
        assert_eq!(FileKind::of_path("graph/entitiesx/a.json"), None);
        assert_eq!(FileKind::of_path("graph/unknown/ab/cd.json"), Some(FileKind::Unknown));
    }
}
