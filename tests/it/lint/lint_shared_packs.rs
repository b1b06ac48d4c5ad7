//! Lints the reference's shipped example packs and test fixtures (read in place, never copied)
//! and checks the results the reference linter gives for them.
//!
//! The packs are looked up in `$ENGRAM_SHARED_DIR/engram-packs` (default `../shared` beside the
//! checkout, `common::shared_dir`); the test is skipped with a message when they are absent.

use std::path::PathBuf;

use engram::lang::Lang;
use engram::lint::{lint_pack, render_report};

fn shared_packs_dir() -> Option<PathBuf> {
    crate::common::shared_dir().map(|base| base.join("engram-packs"))
}

/// `(group, pack, expected report)`: what `engram lint` prints for each pack, identical to the
/// reference (our memory-index rule adds nothing on these packs).
const EXPECTED: &[(&str, &str, &str)] = &[
    (
        "examples",
        "_global",
        "_global: 4 errors, 0 warnings\n\
         \x20 [error] meta.json: 缺少 meta.json\n\
         \x20 [error] role.md: 缺少最小必需文件 role.md\n\
         \x20 [error] knowledge: 缺少目录：knowledge/\n\
         \x20 [error] examples: 缺少目录：examples/",
    ),
    ("examples", "brand-support", "brand-support: 0 errors, 0 warnings"),
    ("examples", "fitness-coach", "fitness-coach: 0 errors, 0 warnings"),
    ("examples", "historical-figure", "historical-figure: 0 errors, 0 warnings"),
    ("examples", "language-partner", "language-partner: 0 errors, 0 warnings"),
    ("examples", "mock-interviewer", "mock-interviewer: 0 errors, 0 warnings"),
    ("examples", "novel-character", "novel-character: 0 errors, 0 warnings"),
    ("examples", "old-friend", "old-friend: 0 errors, 0 warnings"),
    ("examples", "past-self", "past-self: 0 errors, 0 warnings"),
    ("examples", "project-context", "project-context: 0 errors, 0 warnings"),
    ("examples", "sports-nutritionist", "sports-nutritionist: 0 errors, 0 warnings"),
    (
        "examples",
        "template",
        "template: 2 errors, 0 warnings\n\
         \x20 [error] meta.json: meta.json 缺少 name 字段\n\
         \x20 [error] meta.json: meta.json 缺少 description 字段",
    ),
    ("examples", "user-persona", "user-persona: 0 errors, 0 warnings"),
    (
        "fixtures",
        "contract-lawyer",
        "contract-lawyer: 1 errors, 0 warnings\n\
         \x20 [error] examples: 缺少目录：examples/",
    ),
    ("fixtures", "fitness-coach", "fitness-coach: 0 errors, 0 warnings"),
];

#[test]
fn shipped_packs_lint_like_the_reference() {
    let Some(dir) = shared_packs_dir() else {
        println!("skipped: shared engram-packs not found (set ENGRAM_SHARED_DIR)");
        return;
    };
    for (group, pack, expected) in EXPECTED {
        let root = dir.join(group);
        let msgs = lint_pack(&root.join(pack), &root);
        assert_eq!(&render_report(pack, &msgs, Lang::Zh), expected, "{group}/{pack}");
    }
}

#[test]
fn every_shipped_pack_is_covered() {
    let Some(dir) = shared_packs_dir() else {
        println!("skipped: shared engram-packs not found (set ENGRAM_SHARED_DIR)");
        return;
    };
    for group in ["examples", "fixtures"] {
        let mut on_disk: Vec<String> = std::fs::read_dir(dir.join(group))
            .expect("read packs dir")
            .flatten()
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        on_disk.sort();
        let mut expected: Vec<String> =
            EXPECTED.iter().filter(|(g, _, _)| *g == group).map(|(_, p, _)| p.to_string()).collect();
        expected.sort();
        assert_eq!(on_disk, expected, "{group}");
    }
}
