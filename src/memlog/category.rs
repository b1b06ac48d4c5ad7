//! A category's memory blocks across its rolled segments and head file: read, found,
//! changed and written back with each untouched block's exact text.

use super::*;

/// A category file's text as it is, line endings included (`Snapshot::read_text`
/// turns CRLF into LF, which would rewrite every line of a file saved on Windows).
/// Reads a category file as [`CategoryLog::load`] does (bytes kept, invalid UTF-8 replaced).
pub fn read_category_file(snap: &Snapshot<'_>, path: &str) -> Result<Option<String>, StoreError> {
    Ok(snap.read(path)?.map(|b| match String::from_utf8(b) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }))
}

/// One file of a category log: its blocks, each with the exact text it has in the
/// file (`None` once replaced, or for a new block), and the text before the first.
/// Rendering keeps those texts, so a write's diff touches only the blocks it changes
/// (a pack written by hand or by the reference keeps its own spacing).
#[derive(Debug, Clone)]
pub(super) struct LogFile {
    path: String,
    lead: String,
    blocks: Vec<Block>,
    raw: Vec<Option<String>>,
    dirty: bool,
}

impl LogFile {
    fn parse(path: String, text: &str) -> Self {
        let split = memory::split_blocks(text);
        let (raw, blocks) = split.blocks.into_iter().map(|(r, b)| (Some(r.to_owned()), b)).unzip();
        Self { path, lead: split.lead.to_owned(), blocks, raw, dirty: false }
    }

    fn new(path: String, blocks: Vec<Block>, raw: Vec<Option<String>>) -> Self {
        Self { path, lead: String::new(), blocks, raw, dirty: true }
    }

    /// The file's text: kept blocks as they were, changed and new ones in the normal form.
    fn render(&self) -> String {
        let mut out = self.lead.clone();
        for (block, raw) in self.blocks.iter().zip(&self.raw) {
            match raw {
                Some(r) => out.push_str(r),
                None => {
                    out.push_str(memory::BLOCK_SEPARATOR);
                    out.push_str(&block.text);
                    out.push('\n');
                }
            }
        }
        out
    }
}

/// A category's blocks across its segments and head file.
#[derive(Debug, Clone)]
pub struct CategoryLog {
    category: String,
    pub(super) files: Vec<LogFile>,
    /// The segments in the tree: all of them after [`load`](Self::load), only
    /// the newest after [`load_head`](Self::load_head).
    segments_on_disk: Vec<String>,
    head_existed: bool,
    /// Every segment was read (so a segment missing from `files` was removed on purpose).
    loaded_all: bool,
}

/// Where a block sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct BlockPos {
    pub(super) file: usize,
    pub(super) block: usize,
}

impl CategoryLog {
    /// Reads a category.
    pub fn load(snap: &Snapshot<'_>, category: &str) -> Result<Self, StoreError> {
        Self::load_with(snap, category, true)
    }

    /// Reads only the head file (and the names of the segments): enough to append.
    pub fn load_head(snap: &Snapshot<'_>, category: &str) -> Result<Self, StoreError> {
        Self::load_with(snap, category, false)
    }

    fn load_with(snap: &Snapshot<'_>, category: &str, all: bool) -> Result<Self, StoreError> {
        let segments =
            if all { segment_paths(snap, category)? } else { newest_segment_path(snap, category)? };
        let mut files = Vec::new();
        for path in segments.iter().filter(|_| all) {
            let text = read_category_file(snap, path)?.unwrap_or_default();
            files.push(LogFile::parse(path.clone(), &text));
        }
        let head_path = category_path(category);
        let head = read_category_file(snap, &head_path)?;
        let head_existed = head.is_some();
        files.push(LogFile::parse(head_path, &head.unwrap_or_default()));
        Ok(Self {
            category: category.to_owned(),
            files,
            segments_on_disk: segments,
            head_existed,
            loaded_all: all,
        })
    }

    /// The category's whole text as the reference would see it in one file.
    pub fn concatenated_text(&self) -> String {
        self.files.iter().map(|f| render_blocks(&f.blocks)).collect()
    }

    /// Appends a block to the head, rolling when full.
    pub fn append(&mut self, meta: &EntryMeta, content: &str) {
        let text = format!("{}\n{}", meta.render_line(), crate::memory::entry_text(content));
        self.push_block(Block { text, meta: Some(meta.clone()) });
    }

    /// Appends a block as it is (a revert putting an entry back), rolling when full.
    pub fn push_block(&mut self, block: Block) {
        let head_idx = self.files.len() - 1;
        let head = &mut self.files[head_idx];
        head.blocks.push(block);
        head.raw.push(None);
        head.dirty = true;
        if head.blocks.len() > HEAD_LIMIT {
            // The oldest blocks move, bytes and all, into a new segment; the rest of the head stays as it was.
            let blocks: Vec<Block> = head.blocks.drain(..ROLL_SIZE).collect();
            let raw: Vec<Option<String>> = head.raw.drain(..ROLL_SIZE).collect();
            let lead = std::mem::take(&mut head.lead);
            let mut existing: Vec<String> = self.files[..head_idx].iter().map(|f| f.path.clone()).collect();
            existing.extend(self.segments_on_disk.iter().cloned());
            let path = next_segment_path(&existing, &self.category);
            let mut rolled = LogFile::new(path, blocks, raw);
            rolled.lead = lead;
            self.files.insert(head_idx, rolled);
        }
    }

    /// Finds the block an index entry describes: the k-th block with the same
    /// meta, where k is the entry's rank among same-meta entries of the index.
    pub fn find(&self, entry: &IndexEntry, rank: usize) -> Option<BlockPos> {
        let mut seen = 0;
        for (fi, f) in self.files.iter().enumerate() {
            for (bi, b) in f.blocks.iter().enumerate() {
                if b.meta.as_ref().is_some_and(|m| entry.describes(m)) {
                    if seen == rank {
                        return Some(BlockPos { file: fi, block: bi });
                    }
                    seen += 1;
                }
            }
        }
        None
    }

    /// Every block, oldest first (segments, then the head file).
    pub fn blocks(&self) -> impl Iterator<Item = &Block> {
        self.files.iter().flat_map(|f| f.blocks.iter())
    }

    /// The block at a position.
    pub fn block(&self, pos: BlockPos) -> &Block {
        &self.files[pos.file].blocks[pos.block]
    }

    /// Removes a block, returning it.
    pub fn remove(&mut self, pos: BlockPos) -> Block {
        let f = &mut self.files[pos.file];
        f.dirty = true;
        f.raw.remove(pos.block);
        f.blocks.remove(pos.block)
    }

    /// Replaces a block.
    pub fn replace(&mut self, pos: BlockPos, block: Block) {
        let f = &mut self.files[pos.file];
        f.dirty = true;
        f.raw[pos.block] = None;
        f.blocks[pos.block] = block;
    }

    /// Replaces the whole category by one block (consolidate): segments go, the head holds `text`.
    pub fn replace_all(&mut self, head_text: String) {
        let head_path = category_path(&self.category);
        self.files = vec![LogFile::new(head_path, vec![Block { text: head_text, meta: None }], vec![None])];
    }

    /// Writes changed files.
    pub fn write(&self, changes: &mut Changes) {
        let present: Vec<&String> = self.files.iter().map(|f| &f.path).collect();
        for seg in self.segments_on_disk.iter().filter(|_| self.loaded_all) {
            if !present.contains(&seg) {
                changes.remove(seg.clone());
            }
        }
        for f in self.files.iter().filter(|f| f.dirty) {
            let is_head = f.path == category_path(&self.category);
            if f.blocks.is_empty() && !is_head && self.segments_on_disk.contains(&f.path) {
                changes.remove(f.path.clone());
            } else if !f.blocks.is_empty() || is_head && self.head_existed {
                let text = f.render();
                if is_head {
                    remember_rendered_head(&f.path, &text, f.blocks.len());
                }
                changes.put(f.path.clone(), text);
            }
        }
    }
}
