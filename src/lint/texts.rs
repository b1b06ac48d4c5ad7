//! Wording of the findings that the reference linter does not have (robustness cases and the
//! memory-index rule). Each is bilingual: Chinese first, then ` / ` and English.
//! The reference rules' exact Chinese messages live next to the rules themselves.

use std::io;

/// `meta.json` is not valid UTF-8 (the reference crashes with `UnicodeDecodeError`).
pub(crate) const META_NOT_UTF8: &str = "meta.json 不是合法的 UTF-8 文本 / meta.json is not valid UTF-8";

/// `meta.json` holds valid JSON that is not an object (the reference crashes).
pub(crate) const META_NOT_OBJECT: &str = "meta.json 顶层不是 JSON 对象 / meta.json is not a JSON object";

/// A text file that had to be decoded lossily (the reference crashes on it).
pub(crate) const NOT_UTF8: &str = "文件不是合法的 UTF-8 文本，已按替换字符解析 / \
     file is not valid UTF-8; parsed with replacement characters";

/// `memory` exists but is not a directory.
pub(crate) const MEMORY_NOT_DIR: &str = "memory 不是目录 / memory is not a directory";

/// A path that is a symlink (or `..` chain) leading out of the pack; it was not followed.
pub(crate) fn outside_symlink_not_read() -> String {
    "路径指向 Engram 目录之外（符号链接或 ..），未跟随 / \
     path points outside the pack (symlink or ..); not followed"
        .to_string()
}

/// A path could not be inspected (e.g. permission denied).
pub(crate) fn cannot_access(err: &io::Error) -> String {
    format!("无法访问：{err} / cannot access: {err}")
}

/// A file could not be read.
pub(crate) fn cannot_read_file(err: &io::Error) -> String {
    format!("文件无法读取：{err} / file could not be read: {err}")
}

/// A directory could not be listed, so its content was skipped.
pub(crate) fn cannot_read_dir(err: &io::Error) -> String {
    format!("目录无法读取，已跳过：{err} / directory could not be read; skipped: {err}")
}

/// An index reference leads outside the pack.
pub(crate) fn index_ref_outside(rel: &str) -> String {
    format!(
        "索引引用路径指向 Engram 目录之外，未跟随：`{rel}` / \
         index reference points outside the pack; not followed"
    )
}

/// An index reference could not be inspected.
pub(crate) fn index_ref_inaccessible(rel: &str, err: &io::Error) -> String {
    format!("索引引用文件无法访问：`{rel}`（{err}）/ index reference cannot be accessed: {err}")
}

/// A memory index entry line whose target does not exist.
pub(crate) fn memory_target_missing(target: &str, first_line: usize, count: usize) -> String {
    if count > 1 {
        format!(
            "记忆索引条目指向的文件不存在：{target}（第 {first_line} 行起，共 {count} 条）/ \
             memory index entries point to a missing file: {target} (from line {first_line}, \
             {count} entries)"
        )
    } else {
        format!(
            "记忆索引条目指向的文件不存在：{target}（第 {first_line} 行）/ \
             memory index entry points to a missing file: {target} (line {first_line})"
        )
    }
}

/// A memory index entry line that points outside `memory/`.
pub(crate) fn memory_target_outside(target: &str, line: usize) -> String {
    format!(
        "记忆索引条目路径越出 memory/ 目录：{target}（第 {line} 行）/ \
         memory index entry points outside memory/: {target} (line {line})"
    )
}

/// A memory index entry line that could not be inspected.
pub(crate) fn memory_target_inaccessible(target: &str, line: usize, err: &io::Error) -> String {
    format!(
        "记忆索引条目指向的文件无法访问：{target}（第 {line} 行，{err}）/ \
         memory index entry target cannot be accessed: {target} (line {line}: {err})"
    )
}

/// A line that looks like a memory entry (``- `memory/``) but has no ``memory/<category>.md``
/// path.
pub(crate) fn memory_entry_malformed(line: usize) -> String {
    format!(
        "记忆索引条目格式无法识别，应为 - `memory/<category>.md` …（第 {line} 行）/ \
         malformed memory index entry, expected - `memory/<category>.md` … (line {line})"
    )
}

/// A hot-index entry that is not in the full index.
pub(crate) fn hot_entry_not_in_full(line: usize) -> String {
    format!(
        "_index.md 中的条目不在 _index_full.md 中（第 {line} 行）/ \
         hot index entry is missing from _index_full.md (line {line})"
    )
}
