//! What ranking and filters read of a document without reading the document:
//! its time and its group (pack, kind, category, memory type, path).
//!
//! A stored segment keeps these for every slot in one small table loaded at
//! open (`Section::Meta`): a list of distinct groups, then per slot its time
//! and group number (12 bytes a document). So the boosts (neighbours in time,
//! time spans), the filters and the grouping by path never read a document
//! record from the file; only the few hits returned are read.

use std::collections::HashMap;

use super::doc::Document;
use super::error::SnapshotError;
use super::snapshot::{Reader, put_opt_str, put_str};

/// The metadata a document shares with the others of its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct GroupRef<'a> {
    pub pack: &'a str,
    pub kind: &'a str,
    pub category: Option<&'a str>,
    pub memory_type: Option<&'a str>,
    pub path: &'a str,
}

/// A document's metadata, borrowed from the document or from a segment's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct DocMeta<'a> {
    pub group: GroupRef<'a>,
    pub time: Option<i64>,
}

impl<'a> DocMeta<'a> {
    /// The metadata of a document.
    pub(super) fn of(d: &'a Document) -> Self {
        DocMeta {
            group: GroupRef {
                pack: &d.pack,
                kind: &d.kind,
                category: d.category.as_deref(),
                memory_type: d.memory_type.as_deref(),
                path: &d.path,
            },
            time: d.time,
        }
    }
}

/// An owned group of a segment's table.
#[derive(Debug)]
struct Group {
    pack: Box<str>,
    kind: Box<str>,
    category: Option<Box<str>>,
    memory_type: Option<Box<str>>,
    path: Box<str>,
}

impl Group {
    fn as_ref(&self) -> GroupRef<'_> {
        GroupRef {
            pack: &self.pack,
            kind: &self.kind,
            category: self.category.as_deref(),
            memory_type: self.memory_type.as_deref(),
            path: &self.path,
        }
    }
}

/// Set in a slot's group word when the document has a time.
const HAS_TIME: u32 = 1 << 31;

/// The metadata table of a segment, decoded.
#[derive(Debug, Default)]
pub(super) struct MetaTable {
    groups: Vec<Group>,
    /// Per slot: time (0 when none) and group number | [`HAS_TIME`].
    slots: Vec<(i64, u32)>,
}

impl MetaTable {
    /// Decodes the table of a segment with `n_slots` documents.
    pub(super) fn decode(bytes: &[u8], n_slots: u32) -> Result<Self, SnapshotError> {
        let mut r = Reader::new(bytes);
        let n_groups = r.count(4 * 3 + 2)?;
        let mut groups = Vec::with_capacity(n_groups);
        for _ in 0..n_groups {
            let pack = r.str()?.into();
            let kind = r.str()?.into();
            let category = r.opt_string()?.map(Into::into);
            let memory_type = r.opt_string()?.map(Into::into);
            let path = r.str()?.into();
            groups.push(Group { pack, kind, category, memory_type, path });
        }
        let n = n_slots as usize;
        let rest = r.take(n.checked_mul(12).ok_or(SnapshotError::Corrupt("meta size"))?)?;
        if !r.at_end() {
            return Err(SnapshotError::Corrupt("meta size"));
        }
        let mut slots = Vec::with_capacity(n);
        for c in rest.chunks_exact(12) {
            let (t, g) = c.split_at(8);
            let time = i64::from_le_bytes(t.try_into().map_err(|_| SnapshotError::Truncated)?);
            let g = u32::from_le_bytes(g.try_into().map_err(|_| SnapshotError::Truncated)?);
            if (g & !HAS_TIME) as usize >= groups.len() || (g & HAS_TIME == 0 && time != 0) {
                return Err(SnapshotError::Corrupt("meta group"));
            }
            slots.push((time, g));
        }
        Ok(MetaTable { groups, slots })
    }

    /// The metadata of a slot.
    pub(super) fn get(&self, slot: u32) -> Option<DocMeta<'_>> {
        let &(time, g) = self.slots.get(slot as usize)?;
        let group = self.groups.get((g & !HAS_TIME) as usize)?.as_ref();
        Some(DocMeta { group, time: (g & HAS_TIME != 0).then_some(time) })
    }
}

/// Writes a metadata table (the slots' metadata in slot order).
#[derive(Default)]
pub(super) struct MetaWriter<'a> {
    groups: HashMap<GroupRef<'a>, u32>,
    group_bytes: Vec<u8>,
    slot_bytes: Vec<u8>,
}

impl<'a> MetaWriter<'a> {
    /// Adds the next slot's metadata.
    pub(super) fn push(&mut self, m: DocMeta<'a>) -> Result<(), SnapshotError> {
        let next = u32::try_from(self.groups.len())
            .ok()
            .filter(|n| n & HAS_TIME == 0)
            .ok_or(SnapshotError::Corrupt("too many groups"))?;
        let g = *self.groups.entry(m.group).or_insert_with(|| {
            let out = &mut self.group_bytes;
            let g = m.group;
            put_str(out, g.pack);
            put_str(out, g.kind);
            put_opt_str(out, g.category);
            put_opt_str(out, g.memory_type);
            put_str(out, g.path);
            next
        });
        let (time, flag) = m.time.map_or((0, 0), |t| (t, HAS_TIME));
        self.slot_bytes.extend_from_slice(&time.to_le_bytes());
        self.slot_bytes.extend_from_slice(&(g | flag).to_le_bytes());
        Ok(())
    }

    /// The table's bytes.
    pub(super) fn finish(self) -> Vec<u8> {
        let mut out = Vec::with_capacity(4 + self.group_bytes.len() + self.slot_bytes.len());
        out.extend_from_slice(&(self.groups.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.group_bytes);
        out.extend_from_slice(&self.slot_bytes);
        out
    }
}
