//! Our extra rule: memory-index consistency (warnings only).

use super::common::{Packs, triples, w};

const ENTRY_A: &str = "- `memory/prefs.md` [2026-01-01 10:00] [preference] [x] 喜欢早上训练";
const ENTRY_B: &str = "- `memory/profile.md` [2026-01-02 10:00] [fact] 28 岁";

fn missing(target: &str, line: usize) -> String {
    format!(
        "记忆索引条目指向的文件不存在：{target}（第 {line} 行）/ \
         memory index entry points to a missing file: {target} (line {line})"
    )
}

#[test]
fn no_memory_dir_or_no_entries_is_clean() {
    let packs = Packs::new();
    packs.valid("p");
    assert!(packs.lint("p").is_empty());
    packs.write(
        "p/memory/_index.md",
        "## 动态记忆\n<!-- 格式：- `memory/{category}.md` [...] -->\n- `preferences` [2026-01-01 10:00] [x] y\n",
    );
    assert!(packs.lint("p").is_empty());
}

#[test]
fn hand_written_hot_index_entries_must_exist() {
    let packs = Packs::new();
    packs.valid("p");
    packs.write(
        "p/memory/_index.md",
        format!("## 动态记忆\n\n### 偏好\n{ENTRY_A}\n  {ENTRY_B}  \n{ENTRY_B}\n"),
    );
    packs.write("p/memory/prefs.md", "\n---\n[2026-01-01 10:00] type:preference\nx\n");
    assert_eq!(
        triples(&packs.lint("p")),
        vec![w(
            "memory/_index.md",
            "记忆索引条目指向的文件不存在：memory/profile.md（第 5 行起，共 2 条）/ \
             memory index entries point to a missing file: memory/profile.md (from line 5, 2 entries)"
        )]
    );
    packs.write("p/memory/profile.md", "\n---\n[2026-01-02 10:00] type:fact\n28\n");
    assert!(packs.lint("p").is_empty());
}

#[test]
fn full_index_targets_and_hot_subset() {
    let packs = Packs::new();
    packs.valid("p");
    packs.write("p/memory/prefs.md", "x");
    packs.write("p/memory/_index_full.md", format!("# header\n{ENTRY_A}\n{ENTRY_B}\n"));
    packs.write(
        "p/memory/_index.md",
        format!("## 分类摘要\n- `prefs` [2026-01-01 10:00] [preference] 喜欢\n\n## 最近记忆（最多50条）\n{ENTRY_A}\n- `memory/prefs.md` [2026-01-03 10:00] [fact] hand edit\n"),
    );
    assert_eq!(
        triples(&packs.lint("p")),
        vec![
            w("memory/_index_full.md", &missing("memory/profile.md", 3)),
            w(
                "memory/_index.md",
                "_index.md 中的条目不在 _index_full.md 中（第 6 行）/ \
                 hot index entry is missing from _index_full.md (line 6)"
            ),
        ]
    );
}

#[test]
fn hot_index_missing_targets_are_not_rechecked_when_full_exists() {
    let packs = Packs::new();
    packs.valid("p");
    packs.write("p/memory/_index_full.md", "");
    packs.write("p/memory/_index.md", format!("{ENTRY_A}\n"));
    let msgs = packs.lint("p");
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].file, "memory/_index.md");
    assert!(msgs[0].message.contains("(line 1)"));
}

#[test]
fn malformed_and_escaping_entries() {
    let packs = Packs::new();
    packs.valid("p");
    packs.write(
        "p/memory/_index.md",
        "- `memory/no-close.md [2026-01-01 10:00] [x] y\n- `memory/notes.txt` [2026-01-01 10:00] [x] y\n- `memory/../role.md` [2026-01-01 10:00] [x] y\n- `memory/sub/deep.md` [2026-01-01 10:00] [x] y\n",
    );
    packs.write("p/memory/sub/deep.md", "x");
    assert_eq!(
        triples(&packs.lint("p")),
        vec![
            w(
                "memory/_index.md",
                "记忆索引条目格式无法识别，应为 - `memory/<category>.md` …（第 1 行）/ \
                 malformed memory index entry, expected - `memory/<category>.md` … (line 1)"
            ),
            w(
                "memory/_index.md",
                "记忆索引条目格式无法识别，应为 - `memory/<category>.md` …（第 2 行）/ \
                 malformed memory index entry, expected - `memory/<category>.md` … (line 2)"
            ),
            w(
                "memory/_index.md",
                "记忆索引条目路径越出 memory/ 目录：memory/../role.md（第 3 行）/ \
                 memory index entry points outside memory/: memory/../role.md (line 3)"
            ),
        ]
    );
}

#[test]
fn memory_file_instead_of_dir() {
    let packs = Packs::new();
    packs.valid("p");
    packs.write("p/memory", "oops");
    assert_eq!(triples(&packs.lint("p")), vec![w("memory", "memory 不是目录 / memory is not a directory")]);
}

#[test]
fn runs_after_reference_rules() {
    let packs = Packs::new();
    packs.valid("p");
    packs.remove("p/role.md");
    packs.write("p/memory/_index.md", format!("{ENTRY_A}\n"));
    let files: Vec<String> = packs.lint("p").into_iter().map(|m| m.file).collect();
    assert_eq!(files, vec!["role.md", "memory/_index.md"]);
}
