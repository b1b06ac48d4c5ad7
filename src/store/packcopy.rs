//! Merging small packs without a delta search: their entries are copied as they are stored.
//!
//! libgit2's packbuilder never reuses a delta: a merge inflates every object and searches
//! a delta for it again. Merging the per-write packs (`packwrite`) of a busy pack that way
//! took half of the server's CPU under load (issue #14), and the captures waited for the
//! CPU it held. A merge of few objects (`gc::pack_geometric`) copies the packs instead:
//! each pack's entries go into the new pack as one block, so offset deltas keep the
//! distance to their bases and id deltas find theirs by id, in the same pack; loose
//! objects are added whole. Deltas come with the rarer large merges and `engram gc`.

use std::collections::HashSet;
use std::path::Path;

use git2::{ObjectType, Oid};

use super::Result;
use super::packwrite::{EncodedPack, IDX_HEADER_LEN, IDX_MAGIC, PACK_HEADER_LEN, PackEncoder};

/// The SHA-1 at the end of a pack and of an index.
const CHECKSUM: usize = 20;

/// A pack whose entries can be copied.
struct Source {
    bytes: Vec<u8>,
    /// (id, offset in the pack, crc32 of the entry), from its index.
    entries: Vec<(Oid, u64, u32)>,
}

impl Source {
    /// The entries without the header and the checksum.
    fn body(&self) -> &[u8] {
        &self.bytes[PACK_HEADER_LEN..self.bytes.len() - CHECKSUM]
    }
}

/// Reads a pack (`base` without its extension) and its version-2 index, checked: the
/// pack's header and checksum, the index naming that pack with as many objects as the
/// pack's header, every offset inside the pack. `None` when anything is off.
fn read_source(base: &Path) -> Option<Source> {
    let bytes = std::fs::read(base.with_extension("pack")).ok()?;
    let idx = std::fs::read(base.with_extension("idx")).ok()?;
    if bytes.len() < PACK_HEADER_LEN + CHECKSUM || bytes[..4] != *b"PACK" || bytes[4..8] != [0, 0, 0, 2] {
        return None;
    }
    let count = u32::from_be_bytes(bytes[8..12].try_into().ok()?) as usize;
    let (content, trailer) = bytes.split_at(bytes.len() - CHECKSUM);
    if super::checksum::sha1(content)[..] != *trailer {
        return None;
    }
    if idx.get(..4)? != IDX_MAGIC || idx.get(4..8)? != [0, 0, 0, 2] {
        return None;
    }
    let listed = u32::from_be_bytes(idx.get(IDX_HEADER_LEN - 4..IDX_HEADER_LEN)?.try_into().ok()?) as usize;
    let ids_at = IDX_HEADER_LEN;
    let crcs_at = ids_at + listed * 20;
    let offsets_at = crcs_at + listed * 4;
    let names_pack_at = offsets_at + listed * 4;
    // A pack this small has no large-offset table: the pack's checksum comes next.
    if listed != count || idx.get(names_pack_at..names_pack_at + CHECKSUM)? != trailer {
        return None;
    }
    let word = |at: usize| idx.get(at..at + 4).and_then(|w| w.try_into().ok()).map(u32::from_be_bytes);
    let mut entries = Vec::with_capacity(count);
    for i in 0..count {
        let id = Oid::from_bytes(idx.get(ids_at + i * 20..ids_at + i * 20 + 20)?).ok()?;
        let offset = u64::from(word(offsets_at + i * 4)?);
        if offset < PACK_HEADER_LEN as u64 || offset >= content.len() as u64 {
            return None;
        }
        entries.push((id, offset, word(crcs_at + i * 4)?));
    }
    Some(Source { bytes, entries })
}

/// One new pack holding the entries of `packs` (bases without extension) as they are
/// stored and the `loose` objects whole (those also in one of the packs are left out).
/// `None` when a pack cannot be copied as it is — a file that does not check out, or an
/// object in two of them — and the caller merges with the builder instead.
pub(super) fn concatenate(
    packs: &[&Path],
    loose: &[(ObjectType, Oid, Vec<u8>)],
) -> Result<Option<EncodedPack>> {
    let mut sources = Vec::with_capacity(packs.len());
    for base in packs {
        let Some(source) = read_source(base) else { return Ok(None) };
        sources.push(source);
    }
    let mut seen: HashSet<Oid> = HashSet::new();
    for source in &sources {
        if !source.entries.iter().all(|(id, _, _)| seen.insert(*id)) {
            return Ok(None);
        }
    }
    let size = sources.iter().map(|s| s.bytes.len()).sum::<usize>()
        + loose.iter().map(|(_, _, b)| b.len() / 2 + 32).sum::<usize>();
    let mut pack = PackEncoder::new(size);
    for source in &sources {
        pack.add_copied(source.body(), &source.entries);
    }
    for (kind, id, bytes) in loose {
        if seen.insert(*id) {
            pack.add_whole(*kind, *id, bytes)?;
        }
    }
    pack.finish().map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository with a few commits, each written by libgit2 and packed alone, so
    /// that the packs hold deltas (id deltas, as libgit2 writes them) and whole objects.
    fn packed_history() -> (tempfile::TempDir, git2::Repository, Vec<std::path::PathBuf>) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let repo = git2::Repository::init(tmp.path()).expect("init");
        let sig = git2::Signature::now("t", "t@example.com").expect("sig");
        let mut parent: Option<Oid> = None;
        let mut text = String::new();
        let pack_dir = repo.path().join("objects/pack");
        for round in 0..3 {
            let mut builder = repo.packbuilder().expect("packbuilder");
            for i in 0..20 {
                text.push_str(&format!("line {round}-{i}: the user likes tea with milk and honey\n"));
                let blob = repo.blob(text.as_bytes()).expect("blob");
                let mut tree = repo.treebuilder(None).expect("treebuilder");
                tree.insert("notes.md", blob, 0o100644).expect("insert");
                let tree = repo.find_tree(tree.write().expect("tree")).expect("find tree");
                let parents: Vec<git2::Commit<'_>> =
                    parent.iter().map(|p| repo.find_commit(*p).expect("parent")).collect();
                let refs: Vec<&git2::Commit<'_>> = parents.iter().collect();
                let id = repo.commit(Some("HEAD"), &sig, &sig, "c", &tree, &refs).expect("commit");
                builder.insert_commit(id).expect("insert commit");
                parent = Some(id);
            }
            let mut indexer = git2::Indexer::new(None, &pack_dir, 0o444, false).expect("indexer");
            let mut bytes = git2::Buf::new();
            builder.write_buf(&mut bytes).expect("write");
            std::io::Write::write_all(&mut indexer, &bytes).expect("index");
            indexer.commit().expect("commit pack");
        }
        let packs = std::fs::read_dir(&pack_dir)
            .expect("pack dir")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "pack"))
            .map(|p| p.with_extension(""))
            .collect();
        (tmp, repo, packs)
    }

    #[test]
    fn copied_packs_are_one_valid_pack_with_every_object() {
        let (_tmp, repo, packs) = packed_history();
        assert!(packs.len() >= 3, "{packs:?}");
        let bases: Vec<&Path> = packs.iter().map(|p| p.as_path()).collect();
        let extra = b"a loose blob\n".to_vec();
        let extra_id = Oid::hash_object(ObjectType::Blob, &extra).expect("hash");
        let merged = concatenate(&bases, &[(ObjectType::Blob, extra_id, extra.clone())])
            .expect("encode")
            .expect("copyable");
        // libgit2's indexer reads the new pack from scratch: every entry inflates, every
        // delta resolves and every id is what the index says.
        let out = tempfile::tempdir().expect("tempdir");
        let mut indexer = git2::Indexer::new(None, out.path(), 0o444, false).expect("indexer");
        std::io::Write::write_all(&mut indexer, &merged.pack).expect("index");
        assert_eq!(indexer.commit().expect("a valid pack"), merged.name);
        let theirs =
            std::fs::read(out.path().join(format!("pack-{}.idx", merged.name))).expect("their index");
        assert_eq!(theirs, merged.index, "the index is the one git's indexer writes");
        let mut want: Vec<Oid> = Vec::new();
        repo.odb()
            .expect("odb")
            .foreach(|id| {
                want.push(*id);
                true
            })
            .expect("list");
        let copied = read_source(&out.path().join(format!("pack-{}", merged.name))).expect("readable");
        let deltas = copied.entries.iter().filter(|e| matches!((copied.bytes[e.1 as usize] >> 4) & 7, 6 | 7));
        assert!(deltas.count() > 0, "the copied packs held deltas");
        let mut got: Vec<Oid> = copied.entries.iter().map(|e| e.0).collect();
        want.push(extra_id);
        want.sort();
        want.dedup();
        got.sort();
        assert_eq!(got, want);
    }

    #[test]
    fn a_damaged_pack_or_an_object_in_two_packs_is_not_copied() {
        let (_tmp, _repo, packs) = packed_history();
        let first: &Path = &packs[0];
        assert!(concatenate(&[first, first], &[]).expect("encode").is_none(), "the same objects twice");
        let pack = first.with_extension("pack");
        let mut bytes = std::fs::read(&pack).expect("read");
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0xff;
        let mut perms = std::fs::metadata(&pack).expect("meta").permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        std::fs::set_permissions(&pack, perms).expect("writable");
        std::fs::write(&pack, bytes).expect("damage");
        assert!(concatenate(&[first], &[]).expect("encode").is_none(), "a pack whose checksum is off");
    }
}
