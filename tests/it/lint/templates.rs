//! Our bundled templates: the init template (the reference's `examples/template`) lints clean once its meta is finalised, and the
//! demo pack lints clean as shipped, with a hot memory index consistent with its full index.

use std::fs;
use std::path::PathBuf;

use super::common::copy_tree;
use engram::lint::{finalize_template_meta, lint_pack};

fn templates_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("templates")
}

#[test]
fn init_template_lints_clean_after_finalize() {
    let packs = tempfile::tempdir().expect("temp dir");
    let target = packs.path().join("my-pack");
    copy_tree(&templates_dir().join("examples/template"), &target);

    // As shipped the template has an empty name/description, like the reference's.
    assert_eq!(lint_pack(&target, packs.path()).len(), 2);

    let meta_path = target.join("meta.json");
    let meta = fs::read_to_string(&meta_path).expect("read meta");
    let finalized = finalize_template_meta(&meta, "my-pack").expect("finalize");
    fs::write(&meta_path, &finalized).expect("write meta");
    assert!(finalized.starts_with("{\n  \"name\": \"my-pack\",\n"));
    assert!(finalized.contains("\n  \"description\": \"my-pack 专家记忆包\",\n"));
    assert!(finalized.ends_with("}\n"));

    let msgs = lint_pack(&target, packs.path());
    assert!(msgs.is_empty(), "{msgs:?}");
}

#[test]
fn init_template_has_the_reference_layout() {
    let dir = templates_dir().join("examples/template");
    for rel in [
        "meta.json",
        "role.md",
        "workflow.md",
        "rules.md",
        "knowledge/_index.md",
        "examples/_index.md",
        "memory/_index.md",
    ] {
        assert!(dir.join(rel).is_file(), "{rel}");
    }
    let rules = fs::read_to_string(dir.join("rules.md")).expect("rules");
    assert!(rules.contains("\n## Onboarding\n"));
    // No memory entries and no category files: onboarding shows for a fresh pack.
    let memory: Vec<_> = fs::read_dir(dir.join("memory")).expect("memory").flatten().collect();
    assert_eq!(memory.len(), 1);
    let hot = fs::read_to_string(dir.join("memory/_index.md")).expect("hot index");
    assert!(!hot.lines().any(|l| l.trim().starts_with("- `memory/")));
    for (section, count) in [("knowledge", 2), ("examples", 2)] {
        let files = fs::read_dir(dir.join(section))
            .expect("section")
            .flatten()
            .filter(|e| e.file_name() != "_index.md")
            .count();
        assert_eq!(files, count, "{section}");
    }
}

#[test]
fn demo_pack_lints_clean() {
    let root = templates_dir();
    let msgs = lint_pack(&root.join("demo"), &root);
    assert!(msgs.is_empty(), "{msgs:?}");
    let meta = fs::read_to_string(root.join("demo/meta.json")).expect("meta");
    assert!(meta.contains("\"name\": \"demo\""));
}

/// The hot index must be exactly what the server regenerates from the full index
/// (`## 分类摘要` per category, latest appended entry wins, then the last 50 entry lines).
#[test]
fn demo_hot_index_matches_its_full_index() {
    let memory = templates_dir().join("demo/memory");
    let full = fs::read_to_string(memory.join("_index_full.md")).expect("full index");
    let hot = fs::read_to_string(memory.join("_index.md")).expect("hot index");
    let entries: Vec<&str> =
        full.split_inclusive('\n').filter(|l| l.trim().starts_with("- `memory/")).collect();
    let mut latest: std::collections::BTreeMap<String, String> = Default::default();
    for line in entries.iter().rev() {
        let rest = line.trim().strip_prefix("- `memory/").expect("entry");
        let (category, rest) = rest.split_once(".md` [").expect("category");
        let (ts, rest) = rest.split_once("] [").expect("timestamp");
        let (kind, rest) = rest.split_once(']').expect("type");
        let rest = rest.trim_start();
        let rest = match rest.strip_prefix("expires:") {
            Some(r) => r.split_once(' ').map_or("", |(_, r)| r),
            None => rest,
        };
        let summary = match rest.strip_prefix('[') {
            Some(r) => r.split_once(']').map_or("", |(_, s)| s).trim(),
            None => rest.trim(),
        };
        latest
            .entry(category.to_string())
            .or_insert_with(|| format!("- `{category}` [{ts}] [{kind}] {summary}\n"));
    }
    let start = entries.len().saturating_sub(50);
    let expected = format!(
        "## 分类摘要\n{}\n## 最近记忆（最多50条）\n{}",
        latest.values().cloned().collect::<String>(),
        entries[start..].concat()
    );
    assert_eq!(hot, expected);
}

#[test]
fn demo_memory_files_follow_the_raw_entry_format() {
    let memory = templates_dir().join("demo/memory");
    let full = fs::read_to_string(memory.join("_index_full.md")).expect("full index");
    for line in full.lines() {
        let rest = line.strip_prefix("- `memory/").expect("only entry lines");
        let (category, rest) = rest.split_once(".md` [").expect("category");
        let ts = &rest[..16];
        let raw = fs::read_to_string(memory.join(format!("{category}.md"))).expect("category");
        assert!(raw.starts_with("\n---\n["), "{category}");
        assert!(raw.contains(&format!("\n---\n[{ts}] type:")), "{category} {ts}");
        if let Some((_, date)) = line.split_once("expires:") {
            assert!(&date[..10] > "2099-01-01", "no near or past expiry dates");
        }
    }
}
