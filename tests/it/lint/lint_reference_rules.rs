//! The reference (Python Engram) lint rules: messages, `file` strings and emit order.

use super::common::{Packs, e, triples, w};
use engram::lang::Lang;
use engram::lint::{lint_pack, render_report};

#[test]
fn valid_pack_is_clean() {
    let packs = Packs::new();
    packs.valid("ok");
    assert!(packs.lint("ok").is_empty());
    assert_eq!(render_report("ok", &packs.lint("ok"), Lang::Zh), "ok: 0 errors, 0 warnings");
}

#[test]
fn missing_pack_dir_or_file_instead_of_dir() {
    let packs = Packs::new();
    let missing = packs.pack("nope");
    let msgs = lint_pack(&missing, &packs.root());
    let file = missing.to_string_lossy().into_owned();
    assert_eq!(triples(&msgs), vec![e(&file, "Engram 目录不存在")]);

    packs.write("plain", "not a dir");
    let msgs = lint_pack(&packs.pack("plain"), &packs.root());
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].message, "Engram 目录不存在");
}

#[test]
fn meta_missing_invalid_and_falsy_fields() {
    let packs = Packs::new();
    packs.valid("p");
    packs.remove("p/meta.json");
    assert_eq!(triples(&packs.lint("p")), vec![e("meta.json", "缺少 meta.json")]);

    packs.write("p/meta.json", "{\"name\": \"p\",");
    assert_eq!(triples(&packs.lint("p")), vec![e("meta.json", "meta.json 不是合法 JSON")]);

    // A UTF-8 BOM is not accepted by json.loads either.
    packs.write("p/meta.json", "\u{feff}{\"name\": \"p\", \"description\": \"d\"}");
    assert_eq!(triples(&packs.lint("p")), vec![e("meta.json", "meta.json 不是合法 JSON")]);

    packs.write("p/meta.json", "{\"name\": \"\", \"description\": null}");
    assert_eq!(
        triples(&packs.lint("p")),
        vec![e("meta.json", "meta.json 缺少 name 字段"), e("meta.json", "meta.json 缺少 description 字段"),]
    );

    packs.write("p/meta.json", "{\"name\": 0, \"description\": []}");
    assert_eq!(packs.lint("p").len(), 2);

    // Python truthiness: any non-empty value passes, NaN included.
    packs.write("p/meta.json", "{\"name\": [1], \"description\": NaN}");
    assert!(packs.lint("p").is_empty());

    packs.remove("p/meta.json");
    std::fs::create_dir(packs.pack("p").join("meta.json")).expect("mkdir");
    assert_eq!(triples(&packs.lint("p")), vec![e("meta.json", "缺少 meta.json")]);
}

#[test]
fn extends_checks_sibling_dir_only() {
    let packs = Packs::new();
    packs.valid("child");
    packs.write("child/meta.json", "{\"name\": \"child\", \"description\": \"d\", \"extends\": \"parent\"}");
    assert_eq!(triples(&packs.lint("child")), vec![e("meta.json", "extends 引用的父 Engram 不存在：parent")]);
    std::fs::create_dir(packs.pack("parent")).expect("mkdir");
    assert!(packs.lint("child").is_empty());

    // The raw value is used (not stripped); blank and non-string values are ignored.
    packs.write("child/meta.json", "{\"name\": \"c\", \"description\": \"d\", \"extends\": \" parent \"}");
    assert_eq!(
        triples(&packs.lint("child")),
        vec![e("meta.json", "extends 引用的父 Engram 不存在： parent ")]
    );
    for extends in ["\"  \"", "5", "null", "[\"x\"]"] {
        packs.write(
            "child/meta.json",
            format!("{{\"name\": \"c\", \"description\": \"d\", \"extends\": {extends}}}"),
        );
        assert!(packs.lint("child").is_empty(), "extends {extends}");
    }
}

#[test]
fn role_and_sections_required() {
    let packs = Packs::new();
    packs.valid("p");
    packs.remove("p/role.md");
    assert_eq!(triples(&packs.lint("p")), vec![e("role.md", "缺少最小必需文件 role.md")]);

    packs.valid("q");
    packs.remove("q/knowledge");
    packs.remove("q/examples");
    assert_eq!(
        triples(&packs.lint("q")),
        vec![e("knowledge", "缺少目录：knowledge/"), e("examples", "缺少目录：examples/"),]
    );

    // A file where the directory should be is reported the same way; the example's `uses`
    // target is then missing too.
    packs.valid("r");
    packs.remove("r/knowledge");
    packs.write("r/knowledge", "file");
    assert_eq!(
        triples(&packs.lint("r")),
        vec![
            e("knowledge", "缺少目录：knowledge/"),
            e("examples/e.md", "uses 引用文件不存在：knowledge/a.md"),
        ]
    );
}

#[test]
fn missing_root_index_makes_files_orphans() {
    let packs = Packs::new();
    packs.valid("p");
    packs.remove("p/knowledge/_index.md");
    packs.remove("p/examples/_index.md");
    assert_eq!(
        triples(&packs.lint("p")),
        vec![
            e("knowledge/_index.md", "缺少索引文件：knowledge/_index.md"),
            w("knowledge/a.md", "孤儿文件：未在 knowledge 索引中列出"),
            e("examples/_index.md", "缺少索引文件：examples/_index.md"),
            w("examples/e.md", "孤儿文件：未在 examples 索引中列出"),
        ]
    );
}

#[test]
fn missing_reference_and_orphan() {
    let packs = Packs::new();
    packs.valid("p");
    packs.write(
        "p/knowledge/_index.md",
        "- `knowledge/a.md`\n- `knowledge/gone.md` and `examples/x.md` and `knowledge/x.txt`\n",
    );
    packs.write("p/knowledge/orphan.md", "o");
    packs.write("p/knowledge/_index_old.md", "- `knowledge/old.md`");
    packs.write("p/knowledge/notes.txt", "not markdown");
    assert_eq!(
        triples(&packs.lint("p")),
        vec![
            e("knowledge/_index.md", "索引引用文件不存在：`knowledge/gone.md`"),
            w("knowledge/orphan.md", "孤儿文件：未在 knowledge 索引中列出"),
        ]
    );
}

#[test]
fn nested_indexes_are_followed_recursively() {
    let packs = Packs::new();
    packs.valid("p");
    packs.write(
        "p/knowledge/_index.md",
        "- `knowledge/a.md`\n### 分组\n- `knowledge/g/_index.md` - 分组\n  → 详见 knowledge/g/_index.md\n",
    );
    packs.write("p/knowledge/g/_index.md", "- `knowledge/g/b.md`\n→ 详见 knowledge/g/deep/_index.md\n");
    packs.write("p/knowledge/g/b.md", "b");
    packs.write("p/knowledge/g/deep/_index.md", "- `knowledge/g/deep/c.md`\n");
    packs.write("p/knowledge/g/deep/c.md", "c");
    assert!(packs.lint("p").is_empty());

    packs.remove("p/knowledge/g/deep/c.md");
    assert_eq!(
        triples(&packs.lint("p")),
        vec![e("knowledge/g/deep/_index.md", "索引引用文件不存在：`knowledge/g/deep/c.md`")]
    );

    packs.remove("p/knowledge/g/deep");
    assert_eq!(
        triples(&packs.lint("p")),
        vec![e("knowledge/g/_index.md", "索引引用子索引不存在：knowledge/g/deep/_index.md")]
    );
}

#[test]
fn unreferenced_indexes_are_scanned_in_path_order() {
    let packs = Packs::new();
    packs.valid("p");
    // Component-wise order: a < a-b < a.b < z < z/y ; strings would put "a-b/" before "a/".
    for dir in ["z/y", "a.b", "a", "z", "a-b"] {
        packs.write(&format!("p/knowledge/{dir}/_index.md"), format!("- `knowledge/{dir}/missing.md`"));
    }
    let files: Vec<String> = packs.lint("p").into_iter().map(|m| m.file).collect();
    assert_eq!(
        files,
        vec![
            "knowledge/a/_index.md",
            "knowledge/a-b/_index.md",
            "knowledge/a.b/_index.md",
            "knowledge/z/_index.md",
            "knowledge/z/y/_index.md",
        ]
    );
}

#[test]
fn orphans_sorted_by_code_point_string() {
    let packs = Packs::new();
    packs.valid("p");
    for name in ["b.md", "a/b.md", "a-b.md", "B.md", "é.md", "中.md", ".hidden.md"] {
        packs.write(&format!("p/knowledge/{name}"), "x");
    }
    // A directory named like a markdown file is discovered too (non-empty, so size > 0).
    packs.write("p/knowledge/dir.md/inner.txt", "x");
    let files: Vec<String> = packs.lint("p").into_iter().map(|m| m.file).collect();
    assert_eq!(
        files,
        vec![
            "knowledge/.hidden.md",
            "knowledge/B.md",
            "knowledge/a-b.md",
            "knowledge/a/b.md",
            "knowledge/b.md",
            "knowledge/dir.md",
            "knowledge/é.md",
            "knowledge/中.md",
        ]
    );
}

#[test]
fn uses_out_of_bounds_and_missing() {
    let packs = Packs::new();
    packs.valid("p");
    packs.write("p/examples/_index.md", "- `examples/e.md`\n- `examples/f.md`\n- `examples/sub/g.md`\n");
    packs.write(
        "p/examples/e.md",
        "---\nuses:\n  - knowledge/a.md\n\n  - ../other/role.md\n  - /etc/hostname\n  - knowledge/none.md\n  - knowledge/../role.md\nother: x\n  - ignored.md\n---\n",
    );
    packs.write("p/examples/f.md", "---\r\nuses: [knowledge/a.md, , knowledge/b.md ]\r\n---\r\n");
    packs.write("p/examples/sub/g.md", "no frontmatter\nuses: [knowledge/zzz.md]\n");
    assert_eq!(
        triples(&packs.lint("p")),
        vec![
            e("examples/e.md", "uses 路径越界：../other/role.md"),
            e("examples/e.md", "uses 路径越界：/etc/hostname"),
            e("examples/e.md", "uses 引用文件不存在：knowledge/none.md"),
            e("examples/f.md", "uses 引用文件不存在：knowledge/b.md"),
        ]
    );
}

#[test]
fn uses_are_checked_for_unlisted_examples_too() {
    let packs = Packs::new();
    packs.valid("p");
    packs.write("p/examples/x.md", "---\nuses: [knowledge/q.md]\n---\n");
    assert_eq!(
        triples(&packs.lint("p")),
        vec![
            w("examples/x.md", "孤儿文件：未在 examples 索引中列出"),
            e("examples/x.md", "uses 引用文件不存在：knowledge/q.md"),
        ]
    );
}

#[test]
fn empty_knowledge_files_warn() {
    let packs = Packs::new();
    packs.valid("p");
    packs.write("p/knowledge/a.md", "");
    packs.write("p/knowledge/z.md", "");
    assert_eq!(
        triples(&packs.lint("p")),
        vec![
            w("knowledge/z.md", "孤儿文件：未在 knowledge 索引中列出"),
            w("knowledge/a.md", "知识文件为空（0 字节）"),
            w("knowledge/z.md", "知识文件为空（0 字节）"),
        ]
    );
}

#[test]
fn backtick_tokens_follow_python_findall() {
    let packs = Packs::new();
    packs.valid("p");
    // An empty pair "``" matches nothing and scanning resumes at its second backtick, so
    // "``knowledge/c.md``" still yields `knowledge/c.md`; a token may span lines.
    packs.write("p/knowledge/_index.md", "``knowledge/a.md`\n`knowledge/d\n.md` ``knowledge/c.md``");
    packs.write("p/knowledge/d\n.md", "d");
    assert_eq!(
        triples(&packs.lint("p")),
        vec![e("knowledge/_index.md", "索引引用文件不存在：`knowledge/c.md`")]
    );
}

#[test]
fn full_emit_order() {
    let packs = Packs::new();
    packs.valid("p");
    packs.write("p/meta.json", "{\"name\": \"\", \"extends\": \"nobody\"}");
    packs.remove("p/role.md");
    packs.write("p/knowledge/_index.md", "- `knowledge/a.md`\n- `knowledge/gone.md`\n");
    packs.write("p/knowledge/a.md", "");
    packs.write("p/knowledge/orphan.md", "x");
    packs.write("p/examples/e.md", "---\nuses: [../x.md, knowledge/none.md]\n---\n");
    let report = render_report("p", &packs.lint("p"), Lang::Zh);
    assert_eq!(
        report,
        "p: 7 errors, 2 warnings\n\
         \x20 [error] meta.json: meta.json 缺少 name 字段\n\
         \x20 [error] meta.json: meta.json 缺少 description 字段\n\
         \x20 [error] meta.json: extends 引用的父 Engram 不存在：nobody\n\
         \x20 [error] role.md: 缺少最小必需文件 role.md\n\
         \x20 [error] knowledge/_index.md: 索引引用文件不存在：`knowledge/gone.md`\n\
         \x20 [warning] knowledge/orphan.md: 孤儿文件：未在 knowledge 索引中列出\n\
         \x20 [error] examples/e.md: uses 路径越界：../x.md\n\
         \x20 [error] examples/e.md: uses 引用文件不存在：knowledge/none.md\n\
         \x20 [warning] knowledge/a.md: 知识文件为空（0 字节）"
    );
}

#[test]
fn index_paths_use_stat_semantics_but_uses_are_resolved() {
    let packs = Packs::new();
    packs.valid("p");
    // pathlib's is_file() lets the kernel walk the path: a missing or non-directory component
    // before `..` makes it fail; `uses` targets are resolve()d first, so `..` is applied
    // lexically past missing components.
    packs.write(
        "p/knowledge/_index.md",
        "- `knowledge/a.md`\n- `knowledge/nodir/../a.md`\n- `knowledge/a.md/../a.md`\n",
    );
    packs.write("p/examples/e.md", "---\nuses: [knowledge/nodir/../a.md, knowledge/x/../../role.md]\n---\n");
    assert_eq!(
        triples(&packs.lint("p")),
        vec![
            e("knowledge/_index.md", "索引引用文件不存在：`knowledge/a.md/../a.md`"),
            e("knowledge/_index.md", "索引引用文件不存在：`knowledge/nodir/../a.md`"),
        ]
    );
}
