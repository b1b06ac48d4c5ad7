//! Wording of every finding, as a [`Said`]: `zh` is what the MCP tool `lint_engrams` answers
//! (the reference linter's exact Chinese text for its rules; for the findings the reference
//! does not have, Chinese, then ` / ` and English), `en` is English alone for the CLI.

use std::io;

use crate::lang::Said;

/// The pack directory is missing.
pub(crate) fn pack_dir_missing() -> Said {
    Said::new("Engram 目录不存在", "the pack directory does not exist")
}

/// `meta.json` is missing.
pub(crate) fn meta_missing() -> Said {
    Said::new("缺少 meta.json", "meta.json is missing")
}

/// `meta.json` is not JSON.
pub(crate) fn meta_not_json() -> Said {
    Said::new("meta.json 不是合法 JSON", "meta.json is not valid JSON")
}

/// `meta.json` has no (truthy) `name`.
pub(crate) fn meta_no_name() -> Said {
    Said::new("meta.json 缺少 name 字段", "meta.json has no name field")
}

/// `meta.json`'s `name` cannot be used (`problem` is English).
pub(crate) fn meta_name_ignored(problem: &str) -> Said {
    let en = format!("meta.json {problem} — the name is ignored (the pack answers to its directory's name)");
    Said::new(en.clone(), en)
}

/// `meta.json` has no (truthy) `description`.
pub(crate) fn meta_no_description() -> Said {
    Said::new("meta.json 缺少 description 字段", "meta.json has no description field")
}

/// `extends` names a sibling directory that does not exist.
pub(crate) fn extends_missing(parent: &str) -> Said {
    Said::new(
        format!("extends 引用的父 Engram 不存在：{parent}"),
        format!("the parent pack named by extends does not exist: {parent}"),
    )
}

/// `role.md` is missing.
pub(crate) fn role_missing() -> Said {
    Said::new("缺少最小必需文件 role.md", "role.md is missing (every pack needs it)")
}

/// `knowledge/` or `examples/` is missing.
pub(crate) fn section_missing(section: &str) -> Said {
    Said::new(format!("缺少目录：{section}/"), format!("directory missing: {section}/"))
}

/// A section has no `_index.md`.
pub(crate) fn section_index_missing(section: &str) -> Said {
    Said::new(
        format!("缺少索引文件：{section}/_index.md"),
        format!("index file missing: {section}/_index.md"),
    )
}

/// A file no index lists.
pub(crate) fn orphan(section: &str) -> Said {
    Said::new(
        format!("孤儿文件：未在 {section} 索引中列出"),
        format!("orphan file: not listed in the {section} index"),
    )
}

/// An index names a file that does not exist.
pub(crate) fn index_ref_missing(rel: &str) -> Said {
    Said::new(
        format!("索引引用文件不存在：`{rel}`"),
        format!("the index names a file that does not exist: `{rel}`"),
    )
}

/// An index names a sub-index that does not exist.
pub(crate) fn sub_index_missing(rel: &str) -> Said {
    Said::new(
        format!("索引引用子索引不存在：{rel}"),
        format!("the index names a sub-index that does not exist: {rel}"),
    )
}

/// A case's `uses` leads out of the pack.
pub(crate) fn uses_outside(target: &str) -> Said {
    Said::new(format!("uses 路径越界：{target}"), format!("uses points outside the pack: {target}"))
}

/// A case's `uses` names a file that does not exist.
pub(crate) fn uses_missing(target: &str) -> Said {
    Said::new(
        format!("uses 引用文件不存在：{target}"),
        format!("uses names a file that does not exist: {target}"),
    )
}

/// An empty knowledge file.
pub(crate) fn knowledge_empty() -> Said {
    Said::new("知识文件为空（0 字节）", "knowledge file is empty (0 bytes)")
}

/// `meta.json` is not valid UTF-8 (the reference crashes with `UnicodeDecodeError`).
pub(crate) fn meta_not_utf8() -> Said {
    both("meta.json 不是合法的 UTF-8 文本", "meta.json is not valid UTF-8")
}

/// `meta.json` holds valid JSON that is not an object (the reference crashes).
pub(crate) fn meta_not_object() -> Said {
    both("meta.json 顶层不是 JSON 对象", "meta.json is not a JSON object")
}

/// A text file that had to be decoded lossily (the reference crashes on it).
pub(crate) fn not_utf8() -> Said {
    both(
        "文件不是合法的 UTF-8 文本，已按替换字符解析",
        "file is not valid UTF-8; parsed with replacement characters",
    )
}

/// `memory` exists but is not a directory.
pub(crate) fn memory_not_dir() -> Said {
    both("memory 不是目录", "memory is not a directory")
}

/// A path that is a symlink (or `..` chain) leading out of the pack; it was not followed.
pub(crate) fn outside_symlink_not_read() -> Said {
    both(
        "路径指向 Engram 目录之外（符号链接或 ..），未跟随",
        "path points outside the pack (symlink or ..); not followed",
    )
}

/// A path could not be inspected (e.g. permission denied).
pub(crate) fn cannot_access(err: &io::Error) -> Said {
    both(&format!("无法访问：{err}"), &format!("cannot access: {err}"))
}

/// A file could not be read.
pub(crate) fn cannot_read_file(err: &io::Error) -> Said {
    both(&format!("文件无法读取：{err}"), &format!("file could not be read: {err}"))
}

/// A directory could not be listed, so its content was skipped.
pub(crate) fn cannot_read_dir(err: &io::Error) -> Said {
    both(&format!("目录无法读取，已跳过：{err}"), &format!("directory could not be read; skipped: {err}"))
}

/// An index reference leads outside the pack.
pub(crate) fn index_ref_outside(rel: &str) -> Said {
    Said::new(
        format!(
            "索引引用路径指向 Engram 目录之外，未跟随：`{rel}` / index reference points outside the pack; not followed"
        ),
        format!("index reference points outside the pack; not followed: `{rel}`"),
    )
}

/// An index reference could not be inspected.
pub(crate) fn index_ref_inaccessible(rel: &str, err: &io::Error) -> Said {
    Said::new(
        format!("索引引用文件无法访问：`{rel}`（{err}）/ index reference cannot be accessed: {err}"),
        format!("index reference cannot be accessed: `{rel}` ({err})"),
    )
}

/// A memory index entry line whose target does not exist.
pub(crate) fn memory_target_missing(target: &str, first_line: usize, count: usize) -> Said {
    if count > 1 {
        both(
            &format!("记忆索引条目指向的文件不存在：{target}（第 {first_line} 行起，共 {count} 条）"),
            &format!(
                "memory index entries point to a missing file: {target} (from line {first_line}, {count} entries)"
            ),
        )
    } else {
        both(
            &format!("记忆索引条目指向的文件不存在：{target}（第 {first_line} 行）"),
            &format!("memory index entry points to a missing file: {target} (line {first_line})"),
        )
    }
}

/// A memory index entry line that points outside `memory/`.
pub(crate) fn memory_target_outside(target: &str, line: usize) -> Said {
    both(
        &format!("记忆索引条目路径越出 memory/ 目录：{target}（第 {line} 行）"),
        &format!("memory index entry points outside memory/: {target} (line {line})"),
    )
}

/// A memory index entry line that could not be inspected.
pub(crate) fn memory_target_inaccessible(target: &str, line: usize, err: &io::Error) -> Said {
    both(
        &format!("记忆索引条目指向的文件无法访问：{target}（第 {line} 行，{err}）"),
        &format!("memory index entry target cannot be accessed: {target} (line {line}: {err})"),
    )
}

/// A line that looks like a memory entry (``- `memory/``) but has no ``memory/<category>.md``
/// path.
pub(crate) fn memory_entry_malformed(line: usize) -> Said {
    both(
        &format!("记忆索引条目格式无法识别，应为 - `memory/<category>.md` …（第 {line} 行）"),
        &format!("malformed memory index entry, expected - `memory/<category>.md` … (line {line})"),
    )
}

/// A hot-index entry that is not in the full index.
pub(crate) fn hot_entry_not_in_full(line: usize) -> Said {
    both(
        &format!("_index.md 中的条目不在 _index_full.md 中（第 {line} 行）"),
        &format!("hot index entry is missing from _index_full.md (line {line})"),
    )
}

/// A finding the reference does not have: over MCP `<zh> / <en>` (`<zh>/ <en>` after a
/// full-width parenthesis), on an English CLI `<en>`.
fn both(zh: &str, en: &str) -> Said {
    let sep = if zh.ends_with('）') { "/ " } else { " / " };
    Said::new(format!("{zh}{sep}{en}"), en)
}
