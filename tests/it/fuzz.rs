//! Property-based fuzzing (proptest) of every parser of pack files and of the tools' argument
//! handling: no panic, no hang, and parse → render → parse is stable.
//!
//! Short by default so `cargo test` stays fast; `PROPTEST_CASES=100000 cargo test --release
//! fuzz_ -- --nocapture` runs long. Each property prints how many inputs it ran.
//! Parsers of later toolsets get a property here of the same shape (as the graph records and
//! the notes' front matter have): `fuzz(name, default_cases, strategy, |input| { parse; render;
//! parse again; compare })`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use engram::memory::{
    self, EntryMeta, IndexEntry, entry_text, parse_blocks, parse_category_summary, parse_index_line,
    render_blocks, render_hot_index,
};
use engram::ops::{Caller, CaptureRequest, Clock, Config, CorrectRequest, Engram};
use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, TestCaseError, TestRunner};

/// Longest any single parse may take before we call it a hang.
const HANG: Duration = Duration::from_secs(2);

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A tool call may include packing the repository's objects (seconds on a big history).
const TOOL_HANG: Duration = Duration::from_secs(60);

/// Runs `check` on `cases` inputs of `strategy`; prints the execution count.
fn fuzz<S: Strategy>(
    name: &str,
    default_cases: u32,
    strategy: S,
    check: impl FnMut(S::Value) -> Result<(), TestCaseError>,
) where
    S::Value: std::fmt::Debug,
{
    fuzz_within(name, default_cases, HANG, strategy, check)
}

/// [`fuzz`] with another per-input time limit.
fn fuzz_within<S: Strategy>(
    name: &str,
    default_cases: u32,
    hang: Duration,
    strategy: S,
    check: impl FnMut(S::Value) -> Result<(), TestCaseError>,
) where
    S::Value: std::fmt::Debug,
{
    let n = cases(default_cases);
    let mut runner =
        TestRunner::new(RunnerConfig { cases: n, failure_persistence: None, ..RunnerConfig::default() });
    let executions = std::cell::Cell::new(0u64);
    let check = std::cell::RefCell::new(check);
    let started = Instant::now();
    let result = runner.run(&strategy, |v| {
        executions.set(executions.get() + 1);
        let t = Instant::now();
        let r = (check.borrow_mut())(v);
        prop_assert!(t.elapsed() < hang, "one input took {:?}", t.elapsed());
        r
    });
    eprintln!("fuzz {name}: {} executions in {:.2?}", executions.get(), started.elapsed());
    if let Err(e) = result {
        panic!("fuzz {name} failed: {e}");
    }
}

/// Strings built from the format's own tokens plus arbitrary characters: they reach the parsers' corners.
fn formatish(max_parts: usize) -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just("\n---\n".to_owned()),
        Just("---".to_owned()),
        Just("\r\n".to_owned()),
        Just("\n".to_owned()),
        Just("- `memory/".to_owned()),
        Just(".md` [".to_owned()),
        Just("`".to_owned()),
        Just("[".to_owned()),
        Just("] [".to_owned()),
        Just("]".to_owned()),
        Just(" ".to_owned()),
        Just("2026-02-25 10:00".to_owned()),
        Just("expires:".to_owned()),
        Just("2026-04-01".to_owned()),
        Just("type:".to_owned()),
        Just("tags:".to_owned()),
        Just("conv:".to_owned()),
        Just(",".to_owned()),
        Just("## 分类摘要\n".to_owned()),
        Just("## 最近记忆（最多50条）\n".to_owned()),
        Just("(无摘要)".to_owned()),
        Just("uses:".to_owned()),
        Just("- ".to_owned()),
        "[a-z]{1,6}",
        any::<char>().prop_map(|c| c.to_string()),
    ];
    proptest::collection::vec(token, 0..max_parts).prop_map(|v| v.concat())
}

fn label() -> impl Strategy<Value = String> {
    "[a-z0-9_-]{1,12}"
}

fn timestamp() -> impl Strategy<Value = String> {
    (2000u32..2100, 1u32..13, 1u32..29, 0u32..24, 0u32..60)
        .prop_map(|(y, m, d, h, mi)| format!("{y:04}-{m:02}-{d:02} {h:02}:{mi:02}"))
}

fn date() -> impl Strategy<Value = String> {
    (2000u32..2100, 1u32..13, 1u32..29).prop_map(|(y, m, d)| format!("{y:04}-{m:02}-{d:02}"))
}

/// An entry meta as engram writes it (validated fields).
fn entry_meta() -> impl Strategy<Value = EntryMeta> {
    (
        timestamp(),
        label(),
        proptest::option::of(date()),
        proptest::collection::vec("[a-zA-Z0-9中文_-]{1,8}", 0..4),
        proptest::option::of("[a-zA-Z0-9:_-]{1,20}"),
    )
        .prop_map(|(ts, memory_type, expires, tags, conversation_id)| EntryMeta {
            ts,
            memory_type,
            expires,
            tags,
            conversation_id,
        })
}

/// A summary as `check_summary` accepts it (single line, no leading `[` / `expires:`).
fn summary() -> impl Strategy<Value = String> {
    formatish(12).prop_map(|s| memory::single_line(&s)).prop_filter("accepted summary", |s| {
        !s.starts_with('[') && !s.starts_with("expires:") && s != "(无摘要)"
    })
}

#[test]
fn fuzz_category_blocks() {
    fuzz("category blocks: parse→render→parse", 512, formatish(60), |text| {
        let blocks = parse_blocks(&text);
        let rendered = render_blocks(&blocks);
        let again = parse_blocks(&rendered);
        prop_assert_eq!(&again, &blocks);
        prop_assert_eq!(render_blocks(&again), rendered);
        for b in &blocks {
            let _ = b.content();
        }
        Ok(())
    });
}

#[test]
fn fuzz_entry_meta_lines() {
    fuzz("entry meta line: arbitrary parse stable", 512, formatish(20), |line| {
        if let Some(m) = EntryMeta::parse_line(&line) {
            prop_assert_eq!(EntryMeta::parse_line(&m.render_line()), Some(m));
        }
        Ok(())
    });
    fuzz("entry meta line: render→parse identity", 512, entry_meta(), |m| {
        prop_assert_eq!(EntryMeta::parse_line(&m.render_line()), Some(m));
        Ok(())
    });
}

#[test]
fn fuzz_entry_content_never_splits_its_block() {
    fuzz(
        "entry text: one block whatever the content",
        512,
        (entry_meta(), formatish(40)),
        |(meta, content)| {
            let text =
                format!("{}{}", memory::render_block(&meta, "first"), memory::render_block(&meta, &content));
            let blocks = parse_blocks(&text);
            let expected = entry_text(&content);
            prop_assert_eq!(blocks.len(), 2, "content {:?} split its block", content);
            prop_assert_eq!(blocks[1].meta.as_ref(), Some(&meta));
            prop_assert_eq!(blocks[1].content(), expected.trim());
            Ok(())
        },
    );
    // What capture's fast path relies on: a rendered head plus one rendered
    // block is the head with that block appended, rendered.
    fuzz(
        "entry text: appended to a rendered head",
        512,
        (formatish(40), entry_meta(), formatish(20)),
        |(head, meta, content)| {
            let mut blocks = parse_blocks(&head);
            let appended = format!("{}{}", render_blocks(&blocks), memory::render_block(&meta, &content));
            let text = format!("{}\n{}", meta.render_line(), entry_text(&content));
            blocks.push(memory::Block { text, meta: Some(meta) });
            prop_assert_eq!(&appended, &render_blocks(&blocks));
            prop_assert_eq!(parse_blocks(&appended).len(), blocks.len());
            Ok(())
        },
    );
}

fn index_entry() -> impl Strategy<Value = IndexEntry> {
    (label(), entry_meta(), summary()).prop_map(|(category, m, summary)| IndexEntry {
        category,
        ts: m.ts,
        memory_type: m.memory_type,
        expires: m.expires,
        tags: m.tags,
        summary,
    })
}

#[test]
fn fuzz_index_lines() {
    fuzz("index line: arbitrary input never panics", 1024, formatish(24), |line| {
        if let Some(e) = parse_index_line(&line) {
            // Lines engram would write (no leading `[`/`expires:` in the summary) are stable.
            if !e.summary.starts_with('[') && !e.summary.starts_with("expires:") {
                prop_assert_eq!(parse_index_line(&e.render()), Some(e));
            }
        }
        Ok(())
    });
    fuzz("index line: render→parse identity", 1024, index_entry(), |e| {
        prop_assert_eq!(parse_index_line(&e.render()), Some(e));
        Ok(())
    });
}

#[test]
fn fuzz_hot_index_and_category_summary() {
    fuzz("hot index: arbitrary category summary parse", 512, formatish(40), |text| {
        let parsed = parse_category_summary(&text);
        let lines: Vec<String> = parsed.values().map(IndexEntry::render).collect();
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let again = parse_category_summary(&render_hot_index(&refs, &BTreeMap::new()));
        prop_assert_eq!(again.keys().collect::<Vec<_>>(), parsed.keys().collect::<Vec<_>>());
        Ok(())
    });
    fuzz(
        "hot index: render→parse keeps each category's newest entry",
        256,
        proptest::collection::vec(index_entry(), 0..70),
        |entries| {
            let lines: Vec<String> = entries.iter().map(IndexEntry::render).collect();
            let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
            let hot = render_hot_index(&refs, &BTreeMap::new());
            let parsed = parse_category_summary(&hot);
            let mut newest: BTreeMap<String, &IndexEntry> = BTreeMap::new();
            for e in &entries {
                newest.insert(e.category.clone(), e);
            }
            prop_assert_eq!(parsed.len(), newest.len());
            for (c, e) in newest {
                let p = &parsed[&c];
                prop_assert_eq!((&p.ts, &p.memory_type, &p.summary), (&e.ts, &e.memory_type, &e.summary));
            }
            let recent = hot.lines().filter(|l| memory::is_entry_line(l)).count();
            prop_assert_eq!(recent, entries.len().min(memory::HOT_INDEX_LIMIT));
            // Rendering the parsed summary again is a fixed point.
            let hot2 = render_hot_index(&refs, &parsed);
            prop_assert_eq!(hot2, hot);
            Ok(())
        },
    );
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<i64>().prop_map(|n| serde_json::json!(n)),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| serde_json::json!(f)),
        formatish(6).prop_map(serde_json::Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
            proptest::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

#[test]
fn fuzz_meta_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    fuzz(
        "meta.json: arbitrary bytes never panic",
        512,
        proptest::collection::vec(any::<u8>(), 0..400),
        |bytes| {
            std::fs::write(dir.path().join("meta.json"), &bytes)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let _ = engram::pack::read_meta(dir.path());
            Ok(())
        },
    );
    fuzz("meta.json: python_pretty→parse identity", 512, json_value(), |v| {
        let text = engram::jsonfmt::python_pretty(&v);
        let back: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
        prop_assert_eq!(&back, &v);
        prop_assert_eq!(engram::jsonfmt::python_pretty(&back), text);
        Ok(())
    });
}

/// Lint reads meta.json, every markdown file and each case's front matter (`uses`).
#[test]
fn fuzz_lint_front_matter_and_files() {
    let root = tempfile::tempdir().expect("tempdir");
    let pack = root.path().join("p");
    std::fs::create_dir_all(pack.join("examples")).expect("mkdir");
    std::fs::create_dir_all(pack.join("memory")).expect("mkdir");
    let front_matter = (formatish(20), proptest::collection::vec(formatish(6), 0..5), any::<bool>())
        .prop_map(|(head, uses, inline)| {
            if inline {
                format!("---\n{head}\nuses: [{}]\n---\nbody", uses.join(", "))
            } else {
                let items: String = uses.iter().map(|u| format!("  - {u}\n")).collect();
                format!("---\nuses:\n{items}{head}\n---\nbody")
            }
        });
    fuzz(
        "lint: front matter, meta.json, memory files",
        256,
        (front_matter, formatish(30), formatish(30)),
        |(case, meta, mem)| {
            let w = |rel: &str, text: &str| {
                std::fs::write(pack.join(rel), text).map_err(|e| TestCaseError::fail(e.to_string()))
            };
            w("examples/case.md", &case)?;
            w("meta.json", &meta)?;
            w("memory/_index.md", &mem)?;
            w("memory/c.md", &mem)?;
            let _ = engram::lint::lint_pack(&pack, root.path());
            Ok(())
        },
    );
}

fn engram_over(dir: &std::path::Path) -> Engram {
    let config = Config {
        clock: Clock::fixed(
            chrono::DateTime::parse_from_rfc3339("2026-11-22T10:00:00Z").expect("time").into(),
        ),
        ..Config::new(dir.to_owned())
    };
    Engram::new(config).expect("engram")
}

fn head(dir: &std::path::Path) -> String {
    let out = crate::common::git_in(dir).args(["rev-parse", "HEAD"]).output().expect("git");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The subjects of the commits made since `before` that are not `expire:` commits. A memory
/// write, even one refused afterwards, first moves entries that expired meanwhile in their own
/// `expire:` commit (an earlier capture may have been given a past `expires`); nothing else
/// may be committed by a refused call.
fn commits_other_than_expiry_since(dir: &std::path::Path, before: &str) -> Vec<String> {
    let out = crate::common::git_in(dir)
        .args(["log", "--format=%s", &format!("{}..HEAD", before.trim())])
        .output()
        .expect("git");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|s| !s.starts_with("expire:"))
        .map(str::to_owned)
        .collect()
}

/// The tools' argument handling, in process: arbitrary arguments never panic; a refused call
/// commits nothing (but the expiry of earlier entries); an accepted one keeps the index in
/// agreement with the category files.
#[test]
fn fuzz_tool_arguments() {
    let root = tempfile::tempdir().expect("tempdir");
    let engram = Arc::new(engram_over(root.path()));
    engram.init_engram("p", false, engram::lang::Lang::Zh).expect("init");
    let pack = root.path().join("p");
    let caller = Caller { tool: "fuzz".into(), client: Some("proptest".into()) };
    let arg = || prop_oneof![formatish(10), label(), Just(String::new())];
    let capture = (
        arg(),
        formatish(30),
        arg(),
        arg(),
        proptest::option::of(arg()),
        proptest::collection::vec(arg(), 0..4),
        proptest::option::of(arg()),
        proptest::option::of(prop_oneof![date(), arg()]),
    );
    let mut n = 0u64;
    fuzz_within(
        "tools: capture_memory arguments",
        128,
        TOOL_HANG,
        capture,
        |(category, content, summary, name_noise, memory_type, tags, conv, expires)| {
            n += 1;
            let before = head(&pack);
            let req = CaptureRequest {
                name: if name_noise.len() % 5 == 0 { name_noise } else { "p".into() },
                content: format!("{content} #{n}"),
                category,
                summary,
                memory_type,
                tags,
                conversation_id: conv,
                expires,
                is_global: false,
            };
            match engram.capture_memory(&req, &caller) {
                Ok(_) => crate::invariants::index_agrees_with_blocks(&pack).map_err(TestCaseError::fail)?,
                Err(_) => prop_assert_eq!(
                    commits_other_than_expiry_since(&pack, &before),
                    Vec::<String>::new(),
                    "a refused capture committed"
                ),
            }
            Ok(())
        },
    );
    fuzz_within(
        "tools: delete/correct arguments",
        128,
        TOOL_HANG,
        (arg(), arg(), formatish(20), any::<bool>()),
        |(category, summary, content, delete)| {
            let before = head(&pack);
            let res = if delete {
                engram.delete_memory("p", &category, &summary, &caller)
            } else {
                let req = CorrectRequest {
                    name: "p".into(),
                    category,
                    old_summary: summary,
                    new_content: content,
                    new_summary: "corrected".into(),
                    memory_type: None,
                    tags: None,
                    target: None,
                };
                engram.correct_memory(&req, &caller)
            };
            match res {
                Ok(_) => crate::invariants::index_agrees_with_blocks(&pack).map_err(TestCaseError::fail)?,
                Err(_) => prop_assert_eq!(
                    commits_other_than_expiry_since(&pack, &before),
                    Vec::<String>::new(),
                    "a refused call committed"
                ),
            }
            Ok(())
        },
    );
    let outside = root.path().join("outside-marker");
    fuzz_within(
        "tools: path arguments stay inside the pack",
        256,
        TOOL_HANG,
        (
            formatish(8),
            prop_oneof![Just("../"), Just("/"), Just("%2e%2e/"), Just(".git/"), Just("knowledge/"), Just("")],
        ),
        |(tail, prefix)| {
            let path = format!("{prefix}{tail}");
            let before = head(&pack);
            let _ = engram.read_engram_file("p", &path);
            match engram.write_engram_file("p", &path, "fuzz", "overwrite", &caller) {
                Ok(_) => {
                    let committed = git_paths(&pack);
                    prop_assert!(
                        committed.iter().all(|p| !p.starts_with(".git") && !p.contains("..")),
                        "{:?}",
                        committed
                    );
                }
                Err(_) => prop_assert_eq!(head(&pack), before),
            }
            prop_assert!(!outside.exists());
            Ok(())
        },
    );
}

fn git_paths(dir: &std::path::Path) -> Vec<String> {
    let out = crate::common::git_in(dir).args(["ls-files"]).output().expect("git");
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect()
}

/// Text shaped like a graph record file: a JSON object with the record's keys (sometimes of the
/// wrong type), random extra fields, or arbitrary text.
fn graph_recordish() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("name"),
        Just("entityType"),
        Just("observations"),
        Just("seq"),
        Just("duplicateLines"),
        Just("from"),
        Just("to"),
        Just("relations"),
        Just("relationType"),
        Just("dupSeqs"),
        Just("line"),
        Just("type"),
        Just("id"),
        Just("attributes"),
    ];
    let string_list = proptest::collection::vec(formatish(4), 0..4)
        .prop_map(|v| serde_json::Value::Array(v.into_iter().map(serde_json::Value::String).collect()));
    let relation =
        (formatish(4), formatish(3), proptest::option::of(any::<u32>()), proptest::option::of(json_value()))
            .prop_map(|(to, t, seq, extra)| {
                let mut m = serde_json::Map::new();
                m.insert("to".into(), to.into());
                m.insert("relationType".into(), t.into());
                if let Some(seq) = seq {
                    m.insert("seq".into(), seq.into());
                }
                if let Some(extra) = extra {
                    m.insert("extra".into(), extra);
                }
                serde_json::Value::Object(m)
            });
    let raw_line =
        (any::<u32>(), formatish(6)).prop_map(|(seq, line)| serde_json::json!({"seq": seq, "line": line}));
    let value = prop_oneof![
        3 => formatish(6).prop_map(serde_json::Value::String),
        2 => string_list,
        1 => any::<u32>().prop_map(|n| serde_json::json!(n)),
        2 => proptest::collection::vec(prop_oneof![relation, json_value()], 0..4).prop_map(serde_json::Value::Array),
        1 => proptest::collection::vec(raw_line, 0..3).prop_map(serde_json::Value::Array),
        1 => json_value(),
    ];
    let object = proptest::collection::vec((key, value), 0..9).prop_map(|fields| {
        serde_json::Value::Object(fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()).to_string()
    });
    prop_oneof![
        6 => object,
        1 => formatish(30),
        1 => proptest::collection::vec(any::<u8>(), 0..200).prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ]
}

/// parse → render → parse of one kind of graph record: once parsed, rendering is a fixed point
/// and the parsed value survives it.
fn graph_round_trip<T>(text: &str) -> Result<(), TestCaseError>
where
    T: engram::graph::NamedRecord + PartialEq + std::fmt::Debug,
{
    let Ok(first) = T::parse(text) else { return Ok(()) };
    let rendered = first.render();
    prop_assert!(rendered.ends_with('\n'), "render ends in a newline: {:?}", rendered);
    let second = T::parse(&rendered).map_err(|e| TestCaseError::fail(format!("{e}: {rendered}")))?;
    prop_assert_eq!(second.name(), first.name());
    let again = second.render();
    prop_assert_eq!(&again, &rendered);
    prop_assert_eq!(T::parse(&again).ok(), Some(second));
    Ok(())
}

/// Every kind of graph file (`src/graph/record.rs`): no panic on anything, parse → render → parse
/// stable, and records built by engram round-trip exactly.
#[test]
fn fuzz_graph_record_files() {
    use engram::graph::{EntityFile, IncomingFile, NamedRecord as _, RawLine, RelationsFile, UnknownFile};
    fuzz("graph records: parse → render → parse", 1024, graph_recordish(), |text| {
        graph_round_trip::<EntityFile>(&text)?;
        graph_round_trip::<RelationsFile>(&text)?;
        graph_round_trip::<IncomingFile>(&text)?;
        if let Ok(unknown) = UnknownFile::parse(&text) {
            let rendered = unknown.render();
            prop_assert_eq!(UnknownFile::parse(&rendered).ok(), Some(unknown));
        }
        Ok(())
    });
    let extra = proptest::collection::btree_map("[a-z]{1,8}", json_value(), 0..3).prop_map(|m| {
        m.into_iter()
            .filter(|(k, _)| !engram::graph::is_reserved_entity_key(k))
            .collect::<serde_json::Map<_, _>>()
    });
    let entity_file = (
        formatish(6),
        formatish(4),
        proptest::collection::vec(formatish(8), 0..5),
        extra,
        proptest::option::of(any::<u64>()),
        proptest::collection::vec((any::<u64>(), formatish(8)), 0..3),
    )
        .prop_map(|(name, kind, observations, extra, seq, dups)| {
            let observations: Vec<&str> = observations.iter().map(String::as_str).collect();
            let mut entity = engram::graph::Entity::new(&name, &kind, &observations);
            entity.extra = extra;
            EntityFile {
                entity,
                seq,
                duplicate_lines: dups.into_iter().map(|(seq, line)| RawLine { seq, line }).collect(),
            }
        });
    fuzz("graph records: engram's entity files render → parse identity", 512, entity_file, |file| {
        let text = file.render();
        prop_assert_eq!(EntityFile::parse(&text), Ok(file));
        Ok(())
    });
}

/// The notes' own fields, as `src/ops/notes.rs` writes them in a note's front matter.
#[derive(Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct NoteFrontMatter {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    importance: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    created: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    updated: Option<String>,
}

/// Note files: front matter split/parse/render (`src/frontmatter.rs`) is stable, and the notes
/// tools read any file in `notes/` (hand edits, corruption) without panicking.
#[test]
fn fuzz_notes_front_matter() {
    let note_file = (
        proptest::collection::vec(
            (
                prop_oneof![
                    Just("id"),
                    Just("title"),
                    Just("importance"),
                    Just("created"),
                    Just("updated"),
                    Just("tags")
                ],
                formatish(6),
            ),
            0..6,
        ),
        formatish(20),
        any::<bool>(),
    )
        .prop_map(|(fields, body, crlf)| {
            let nl = if crlf { "\r\n" } else { "\n" };
            let head: String = fields.iter().map(|(k, v)| format!("{k}: {v}{nl}")).collect();
            format!("---{nl}{head}---{nl}{body}")
        });
    let any_text = prop_oneof![
        4 => note_file,
        1 => formatish(30),
        1 => proptest::collection::vec(any::<u8>(), 0..300).prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ];
    fuzz("notes: front matter split → parse → render → parse", 1024, any_text, |text| {
        let split = engram::frontmatter::split(&text);
        prop_assert!(text.ends_with(split.body), "the body is the file's tail");
        let Some(yaml) = split.yaml else { return Ok(()) };
        let Ok(meta) = engram::frontmatter::parse::<NoteFrontMatter>(yaml) else { return Ok(()) };
        let rendered =
            engram::frontmatter::render(&meta, split.body).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let again = engram::frontmatter::split(&rendered);
        let yaml = again.yaml.ok_or_else(|| TestCaseError::fail(format!("no front matter: {rendered:?}")))?;
        let meta2 = engram::frontmatter::parse::<NoteFrontMatter>(yaml)
            .map_err(|e| TestCaseError::fail(format!("{e}: {rendered:?}")))?;
        prop_assert_eq!(&meta2, &meta);
        prop_assert_eq!(again.body.trim_end_matches('\n'), split.body.trim_end_matches('\n'));
        let rendered2 = engram::frontmatter::render(&meta2, again.body)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(rendered2, rendered);
        Ok(())
    });
    let values = (
        proptest::option::of(formatish(8)),
        proptest::option::of(formatish(8)),
        proptest::option::of(any::<i64>()),
        formatish(20),
    );
    fuzz(
        "notes: engram's front matter render → parse identity",
        512,
        values,
        |(id, title, importance, body)| {
            let meta = NoteFrontMatter {
                id,
                title,
                importance,
                created: Some("2026-11-22T10:00:00Z".into()),
                updated: None,
            };
            let text =
                engram::frontmatter::render(&meta, &body).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let split = engram::frontmatter::split(&text);
            let yaml = split.yaml.ok_or_else(|| TestCaseError::fail(format!("no front matter: {text:?}")))?;
            let back = engram::frontmatter::parse::<NoteFrontMatter>(yaml)
                .map_err(|e| TestCaseError::fail(format!("{e}: {text:?}")))?;
            prop_assert_eq!(back, meta);
            Ok(())
        },
    );
    // The notes tools over hand-edited files: recall and list_categories never panic.
    let dir = tempfile::tempdir().expect("tempdir");
    let engram = engram_over(dir.path());
    let caller = Caller { tool: "fuzz".into(), client: Some("proptest".into()) };
    let seed_note = engram::ops::StoreNote { content: "seed note".into(), ..Default::default() };
    engram.notes("personal").store(&seed_note, &caller).expect("store the first note");
    let notes_dir = dir.path().join("personal/notes/general");
    fuzz("notes: recall over arbitrary note files", 256, (formatish(40), formatish(4)), |(text, query)| {
        std::fs::write(notes_dir.join("hand.md"), &text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let notes = engram.notes("personal");
        let _ = notes.list_categories();
        let found = notes.recall(Some(&query), None, Some(50));
        prop_assert!(found.is_ok(), "a hand-edited note never breaks recall: {:?}", found.err());
        Ok(())
    });
}
