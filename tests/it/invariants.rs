//! The memory invariant, checked from the files with engram's own parsers: every entry block
//! (with a meta line) of the category files and their segments has exactly one line in the full
//! index (and its segments) with the same (category, time, type, expiry, tags), and vice versa.

use engram::memory::{parse_blocks, parse_index_line};

/// Block metas of a pack's memory against its index lines (all segments): the core invariant.
/// (category, time, type, expiry, tags): what an index line and its block share.
type EntryKey = (String, String, String, Option<String>, Vec<String>);

pub fn index_agrees_with_blocks(pack: &std::path::Path) -> Result<(), String> {
    let mut index: Vec<EntryKey> = Vec::new();
    let mut blocks = Vec::new();
    let mem = pack.join("memory");
    let mut files: Vec<std::path::PathBuf> = Vec::new();
    fn walk(d: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() { walk(&p, out) } else { out.push(p) }
        }
    }
    walk(&mem, &mut files);
    for f in files {
        let rel = f.strip_prefix(&mem).map_err(|e| e.to_string())?.to_string_lossy().replace('\\', "/");
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        if rel == "_index_full.md" || rel.starts_with("_log/_index_full/") {
            for l in text.lines().filter_map(parse_index_line) {
                index.push((l.category, l.ts, l.memory_type, l.expires, l.tags));
            }
        } else if rel.starts_with('_') && !rel.starts_with("_log/")
            || rel.ends_with("-archive.md")
            || rel.ends_with("-expired.md")
        {
            continue;
        } else {
            let category = if let Some(r) = rel.strip_prefix("_log/") {
                r.split('/').next().unwrap_or_default().to_owned()
            } else {
                rel.trim_end_matches(".md").to_owned()
            };
            for b in parse_blocks(&text) {
                if let Some(m) = b.meta {
                    blocks.push((category.clone(), m.ts, m.memory_type, m.expires, m.tags));
                }
            }
        }
    }
    index.sort();
    blocks.sort();
    if index != blocks {
        let only_index: Vec<_> = index.iter().filter(|x| !blocks.contains(x)).take(3).collect();
        let only_blocks: Vec<_> = blocks.iter().filter(|x| !index.contains(x)).take(3).collect();
        return Err(format!(
            "index and category files disagree in {}: {} index lines, {} entry blocks; only in the index: {only_index:?}; only in blocks: {only_blocks:?}",
            pack.display(),
            index.len(),
            blocks.len()
        ));
    }
    Ok(())
}
