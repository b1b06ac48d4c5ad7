//! Cases where the reference crashes or would follow paths out of the pack: we report clearly
//! and never panic.

use super::common::{Packs, e, triples, w};
use engram::lint::Level;

const NOT_UTF8: &str = "文件不是合法的 UTF-8 文本，已按替换字符解析 / \
     file is not valid UTF-8; parsed with replacement characters";
const OUTSIDE: &str = "路径指向 Engram 目录之外（符号链接或 ..），未跟随 / \
     path points outside the pack (symlink or ..); not followed";

#[test]
fn non_utf8_meta_and_non_object_meta() {
    let packs = Packs::new();
    packs.valid("p");
    packs.write("p/meta.json", b"{\"name\": \"\xff\"}");
    assert_eq!(
        triples(&packs.lint("p")),
        vec![e("meta.json", "meta.json 不是合法的 UTF-8 文本 / meta.json is not valid UTF-8")]
    );
    packs.write("p/meta.json", "[]");
    assert_eq!(
        triples(&packs.lint("p")),
        vec![e("meta.json", "meta.json 顶层不是 JSON 对象 / meta.json is not a JSON object")]
    );
}

#[test]
fn non_utf8_index_and_example_are_parsed_lossily() {
    let packs = Packs::new();
    packs.valid("p");
    packs.write("p/knowledge/_index.md", b"\xfe\xff - `knowledge/a.md` - \xc3(\n");
    packs.write("p/examples/e.md", b"---\nid: \xff\nuses: [knowledge/a.md, knowledge/x.md]\n---\n");
    assert_eq!(
        triples(&packs.lint("p")),
        vec![
            w("knowledge/_index.md", NOT_UTF8),
            w("examples/e.md", NOT_UTF8),
            e("examples/e.md", "uses 引用文件不存在：knowledge/x.md"),
        ]
    );
}

#[test]
fn index_reference_with_dotdot_leaving_the_pack() {
    let packs = Packs::new();
    packs.valid("p");
    packs.valid("other");
    packs.write(
        "p/knowledge/_index.md",
        "- `knowledge/a.md`\n- `knowledge/../../other/role.md`\n→ 详见 knowledge/../../other/knowledge/_index.md\n",
    );
    let msgs = packs.lint("p");
    assert_eq!(msgs.len(), 2);
    assert!(msgs.iter().all(|m| m.level == Level::Error));
    assert!(msgs[0].message.contains("`knowledge/../../other/role.md`"));
    assert!(msgs[0].message.contains("outside the pack"));
    assert!(msgs[1].message.contains("knowledge/../../other/knowledge/_index.md"));
}

#[test]
fn nfc_and_nfd_names_match() {
    let packs = Packs::new();
    packs.valid("p");
    let nfc = "caf\u{e9}";
    let nfd = "cafe\u{301}";
    packs.write(
        "p/knowledge/_index.md",
        format!("- `knowledge/a.md`\n- `knowledge/{nfc}.md`\n→ 详见 knowledge/{nfc}/_index.md\n"),
    );
    packs.write(&format!("p/knowledge/{nfd}.md"), "x");
    packs.write(&format!("p/knowledge/{nfd}/_index.md"), format!("- `knowledge/{nfd}/{nfc}2.md`\n"));
    packs.write(&format!("p/knowledge/{nfd}/{nfd}2.md"), "y");
    packs.write("p/examples/e.md", format!("---\nuses: [knowledge/a.md, knowledge/{nfc}.md]\n---\n"));
    assert_eq!(triples(&packs.lint("p")), vec![]);
}

#[cfg(unix)]
mod unix {
    use super::*;
    use std::os::unix::fs::{PermissionsExt, symlink};

    #[test]
    fn symlinks_leading_out_of_the_pack_are_not_followed() {
        let packs = Packs::new();
        packs.valid("p");
        let secret = packs.write("secret/data.md", "---\nuses: [../../etc/x]\n---\n");
        let pack = packs.pack("p");
        // unlisted escaping symlink: one warning, no orphan, not read as an example
        symlink(&secret, pack.join("examples/leak.md")).expect("symlink");
        // listed escaping symlink: one error at the index
        symlink(&secret, pack.join("knowledge/linked.md")).expect("symlink");
        packs.write("p/knowledge/_index.md", "- `knowledge/a.md`\n- `knowledge/linked.md`\n");
        // symlinked directory leading out: not descended into
        symlink(packs.root().join("secret"), pack.join("knowledge/ext")).expect("symlink");
        // in-pack symlinks behave like the reference (followed)
        symlink("a.md", pack.join("knowledge/alias.md")).expect("symlink");
        assert_eq!(
            triples(&packs.lint("p")),
            vec![
                e(
                    "knowledge/_index.md",
                    "索引引用路径指向 Engram 目录之外，未跟随：`knowledge/linked.md` / \
                     index reference points outside the pack; not followed"
                ),
                w("knowledge/alias.md", "孤儿文件：未在 knowledge 索引中列出"),
                w("examples/leak.md", OUTSIDE),
            ]
        );
    }

    #[test]
    fn escaping_meta_role_and_section_symlinks() {
        let packs = Packs::new();
        packs.valid("p");
        packs.valid("outside");
        let pack = packs.pack("p");
        for rel in ["meta.json", "role.md", "knowledge"] {
            packs.remove(&format!("p/{rel}"));
            symlink(packs.pack("outside").join(rel), pack.join(rel)).expect("symlink");
        }
        assert_eq!(
            triples(&packs.lint("p")),
            vec![
                e("meta.json", OUTSIDE),
                e("role.md", OUTSIDE),
                e("knowledge", OUTSIDE),
                // the example's `uses` now resolves out of the pack too (reference rule)
                e("examples/e.md", "uses 路径越界：knowledge/a.md"),
            ]
        );
    }

    #[test]
    fn symlinked_pack_dir_and_loops() {
        let packs = Packs::new();
        packs.valid("real");
        symlink(packs.pack("real"), packs.pack("alias")).expect("symlink");
        assert!(packs.lint("alias").is_empty());

        let pack = packs.pack("real");
        symlink("loop2.md", pack.join("knowledge/loop1.md")).expect("symlink");
        symlink("loop1.md", pack.join("knowledge/loop2.md")).expect("symlink");
        packs.write(
            "real/knowledge/_index.md",
            "- `knowledge/a.md`\n- `knowledge/loop1.md`\n- `knowledge/nul\0.md`\n",
        );
        let msgs = packs.lint("real");
        assert_eq!(
            triples(&msgs),
            vec![
                e("knowledge/_index.md", "索引引用文件不存在：`knowledge/loop1.md`"),
                e("knowledge/_index.md", "索引引用文件不存在：`knowledge/nul\0.md`"),
                w("knowledge/loop2.md", "孤儿文件：未在 knowledge 索引中列出"),
            ]
        );
    }

    #[test]
    fn non_utf8_file_names_do_not_panic() {
        use std::ffi::OsStr;
        use std::os::unix::ffi::OsStrExt;
        let packs = Packs::new();
        packs.valid("p");
        let name = OsStr::from_bytes(b"bad\xff.md");
        std::fs::write(packs.pack("p").join("knowledge").join(name), "x").expect("write");
        assert_eq!(
            triples(&packs.lint("p")),
            vec![w("knowledge/bad\u{fffd}.md", "孤儿文件：未在 knowledge 索引中列出")]
        );
    }

    #[test]
    fn unreadable_directory_is_reported() {
        let packs = Packs::new();
        packs.valid("p");
        packs.write("p/knowledge/locked/x.md", "x");
        let locked = packs.pack("p").join("knowledge/locked");
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).expect("chmod");
        let readable_anyway = std::fs::read_dir(&locked).is_ok();
        let msgs = packs.lint("p");
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        if readable_anyway {
            println!("skipped: running with privileges that ignore directory permissions");
            return;
        }
        assert_eq!(msgs.len(), 1, "{msgs:?}");
        assert_eq!(msgs[0].level, Level::Warning);
        assert_eq!(msgs[0].file, "knowledge/locked");
        assert!(msgs[0].message.starts_with("目录无法读取，已跳过"));
    }
}
