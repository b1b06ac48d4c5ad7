//! The Chinese (and mixed Chinese/English) set (`engram bench-search zh`):
//! hand-written memories (`tests/fixtures/zh_memories.json`, queries in
//! `zh_queries.json`), hand-written notes (`zh_notes.json`) and the 12 example
//! packs, with queries over the notes and the packs (`zh_queries_packs.json`).
//! Every query searches every pack through [`crate::ops::Engram::search`] (the
//! code path of `search_memory`); recall@3 is reported next to a plain
//! character-bigram BM25 over the same documents.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::Deserialize;

use super::{BenchEntry, TempDir, engram_with, ts_of, write_files, write_pack};
use crate::ops::{EngramError, SearchQuery};
use crate::search::Document;

/// The fixture memories (engine documents with id, title, body, category, tags).
pub const MEMORIES: &str = include_str!("../../tests/fixtures/zh_memories.json");
/// The fixture queries (`query` + `answers`, ids of the memories that answer it).
pub const QUERIES: &str = include_str!("../../tests/fixtures/zh_queries.json");
/// Cut-off of the recall figure.
pub const K: usize = 3;

/// A fixture query.
#[derive(Debug, Clone, Deserialize)]
pub struct Query {
    /// The query text.
    pub query: String,
    /// Ids of the memories that answer it.
    pub answers: Vec<String>,
}

/// The fixture memories and queries.
pub fn fixtures() -> Result<(Vec<Document>, Vec<Query>), String> {
    let docs: Vec<Document> = serde_json::from_str(MEMORIES).map_err(|e| format!("memories fixture: {e}"))?;
    let queries: Vec<Query> = serde_json::from_str(QUERIES).map_err(|e| format!("queries fixture: {e}"))?;
    Ok((docs, queries))
}

/// The fixture memories as pack entries (summary = title, content = body),
/// each with a distinct timestamp; returns the entries and timestamp → id.
pub fn entries(docs: &[Document]) -> (Vec<BenchEntry>, HashMap<String, String>) {
    let mut by_ts = HashMap::new();
    let entries = docs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let ts = ts_of(1_767_225_600 + i as i64 * 3600);
            by_ts.insert(ts.clone(), d.id.clone());
            BenchEntry {
                category: d.category.clone().unwrap_or_else(|| "general".into()),
                ts,
                memory_type: d.memory_type.clone().unwrap_or_else(|| "fact".into()),
                tags: d.tags.clone(),
                conversation_id: None,
                summary: d.title.clone(),
                content: d.body.clone(),
            }
        })
        .collect();
    (entries, by_ts)
}

/// The notes fixture (`title`, `category`, `content`).
pub const NOTES: &str = include_str!("../../tests/fixtures/zh_notes.json");
/// Queries over the fixture memories written as a person asks: colloquial, with
/// particles, in traditional characters, with English words.
pub const COLLOQUIAL_QUERIES: &str = include_str!("../../tests/fixtures/zh_queries_colloquial.json");
/// Queries over the example packs and the notes (answers `pack:path` or `note:<title>`).
pub const PACK_QUERIES: &str = include_str!("../../tests/fixtures/zh_queries_packs.json");
/// The pack holding the fixture memories.
const MEMORY_PACK: &str = "zh-bench";
/// The pack holding the notes.
const NOTES_PACK: &str = "personal";

#[derive(Deserialize)]
struct NoteFixture {
    title: String,
    category: String,
    content: String,
}

/// Recall@K of ranked answer lists: (share with any answer, misses).
fn score(queries: &[Query], ranked: &[Vec<String>]) -> (f64, Vec<String>) {
    let mut misses = Vec::new();
    for (q, got) in queries.iter().zip(ranked) {
        if !got.iter().take(K).any(|g| q.answers.contains(g)) {
            misses.push(format!("{} → want {:?}, got {:?}", q.query, q.answers, &got[..got.len().min(K)]));
        }
    }
    (100.0 * (queries.len() - misses.len()) as f64 / queries.len().max(1) as f64, misses)
}

/// The packs of the run: the fixture memories, the notes and the 12 example
/// packs, as (pack, files); plus timestamp → id of the fixture memories.
type Corpus = (Vec<(String, Vec<(String, String)>)>, Vec<BenchEntry>, HashMap<String, String>);

fn corpus(docs: &[Document]) -> Result<Corpus, String> {
    let notes: Vec<NoteFixture> = serde_json::from_str(NOTES).map_err(|e| format!("notes fixture: {e}"))?;
    let mut packs = Vec::new();
    let mut note_files = Vec::new();
    for (i, n) in notes.iter().enumerate() {
        let created = ts_of(1_767_225_600 + i as i64 * 86_400).replace(' ', "T") + ":00Z";
        let note = crate::ops::Note {
            id: format!("{i:08x}"),
            title: n.title.clone(),
            category: n.category.clone(),
            importance: 3,
            created: created.clone(),
            updated: created,
            content: n.content.clone(),
            path: format!("notes/{}/{}.md", n.category, crate::ops::slug(&n.title)),
        };
        let text = crate::ops::render_note(&note).map_err(|e| e.to_string())?;
        note_files.push((note.path, text));
    }
    packs.push((NOTES_PACK.to_owned(), note_files));
    for name in crate::templates::example_names() {
        let files = crate::templates::example_pack(name).unwrap_or_default();
        let files = files
            .into_iter()
            .filter(|(p, _)| crate::packsearch::extract::is_searchable(p) || p == "meta.json")
            .map(|(p, b)| (p, String::from_utf8_lossy(b).into_owned()))
            .collect();
        packs.push((name.to_owned(), files));
    }
    let (entries, by_ts) = entries(docs);
    Ok((packs, entries, by_ts))
}

/// Runs the set; returns the report.
pub fn run(embeddings: Option<&super::Embeddings>) -> Result<String, String> {
    let (docs, mut queries) = fixtures()?;
    let memory_queries = queries.len();
    let colloquial: Vec<Query> =
        serde_json::from_str(COLLOQUIAL_QUERIES).map_err(|e| format!("colloquial queries fixture: {e}"))?;
    queries.extend(colloquial);
    let spoken = memory_queries..queries.len();
    let more: Vec<Query> =
        serde_json::from_str(PACK_QUERIES).map_err(|e| format!("pack queries fixture: {e}"))?;
    queries.extend(more);
    let (packs, entries, by_ts) = corpus(&docs)?;
    let engram = through_packs(&packs, &entries, &by_ts, &queries, embeddings).map_err(|e| e.to_string())?;
    let bm25 = bigram_bm25(&packs, &docs, &queries);
    let n_docs = bm25.1;
    let bm25 = bm25.0;
    let (e_all, misses) = score(&queries, &engram);
    let (b_all, _) = score(&queries, &bm25);
    let (e_mem, _) = score(&queries[..memory_queries], &engram[..memory_queries]);
    let (b_mem, _) = score(&queries[..memory_queries], &bm25[..memory_queries]);
    let (e_co, _) = score(&queries[spoken.clone()], &engram[spoken.clone()]);
    let (b_co, _) = score(&queries[spoken.clone()], &bm25[spoken.clone()]);
    let (e_pk, _) = score(&queries[spoken.end..], &engram[spoken.end..]);
    let (b_pk, _) = score(&queries[spoken.end..], &bm25[spoken.end..]);
    let mut out = format!(
        "Chinese set: {} queries over {} packs ({} fixture memories, {} notes, 12 example packs; {n_docs} documents), \
         every pack searched\n\n",
        queries.len(),
        packs.len() + 1,
        docs.len(),
        packs[0].1.len(),
    );
    let _ = writeln!(
        out,
        "{:<34} {:>10} {:>12} {:>12} {:>12}",
        "run", "all", "memories", "colloquial", "packs+notes"
    );
    let _ = writeln!(
        out,
        "{:<34} {:>9.1}% {:>11.1}% {:>11.1}% {:>11.1}%",
        "engram (search_memory path)", e_all, e_mem, e_co, e_pk
    );
    let _ = writeln!(
        out,
        "{:<34} {:>9.1}% {:>11.1}% {:>11.1}% {:>11.1}%",
        "plain character-bigram BM25", b_all, b_mem, b_co, b_pk
    );
    let _ = writeln!(
        out,
        "({} memory queries, {} colloquial ones, {} over packs and notes)",
        memory_queries,
        spoken.len(),
        queries.len() - spoken.end
    );
    let _ = writeln!(out, "(recall@{K}: an answer among the top {K})");
    for m in misses {
        let _ = writeln!(out, "  miss: {m}");
    }
    Ok(out)
}

/// The answer key of a hit: the fixture id of a memory of the memory pack,
/// `note:<title>` of a note, else `pack:path`.
fn key_of(
    pack: &str,
    path: &str,
    kind: &str,
    title: &str,
    entry: Option<&str>,
    by_ts: &HashMap<String, String>,
) -> String {
    if pack == MEMORY_PACK {
        return entry.and_then(|e| by_ts.get(e)).cloned().unwrap_or_default();
    }
    if kind == crate::packsearch::extract::KIND_NOTE {
        return format!("note:{title}");
    }
    format!("{pack}:{path}")
}

/// Ranked answer keys of every query, searched through real packs (every pack).
fn through_packs(
    packs: &[(String, Vec<(String, String)>)],
    entries: &[BenchEntry],
    by_ts: &HashMap<String, String>,
    queries: &[Query],
    embeddings: Option<&super::Embeddings>,
) -> Result<Vec<Vec<String>>, EngramError> {
    let tmp = TempDir::new("zh").map_err(|e| EngramError::Unreadable {
        path: std::env::temp_dir().display().to_string(),
        reason: e.to_string(),
    })?;
    write_pack(tmp.path(), MEMORY_PACK, entries)?;
    for (name, files) in packs {
        write_files(tmp.path(), name, files)?;
    }
    let engram = engram_with(tmp.path(), embeddings)?;
    let mut out = Vec::new();
    for q in queries {
        let query = SearchQuery { query: q.query.clone(), limit: Some(K), ..SearchQuery::default() };
        let hits = engram.search(&query)?.hits;
        out.push(
            hits.iter()
                .map(|h| key_of(&h.pack, &h.path, &h.kind, &h.title, h.entry.as_deref(), by_ts))
                .collect(),
        );
    }
    Ok(out)
}

/// Plain BM25 (k1 = 1.2, b = 0.75) over the same documents, each the text of
/// its title and body: lower-cased words, and every CJK run as its character
/// bigrams (a single character as itself). Returns the rankings and the
/// number of documents.
fn bigram_bm25(
    packs: &[(String, Vec<(String, String)>)],
    memories: &[Document],
    queries: &[Query],
) -> (Vec<Vec<String>>, usize) {
    fn terms(s: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut run: Vec<char> = Vec::new();
        let mut word = String::new();
        let flush_run = |run: &mut Vec<char>, out: &mut Vec<String>| {
            match run.len() {
                0 => {}
                1 => out.push(run[0].to_string()),
                _ => out.extend(run.windows(2).map(|w| w.iter().collect())),
            }
            run.clear();
        };
        for c in s.chars().flat_map(char::to_lowercase) {
            if crate::search::tokenize::is_cjk(c) {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
                run.push(c);
            } else if c.is_alphanumeric() {
                flush_run(&mut run, &mut out);
                word.push(c);
            } else {
                flush_run(&mut run, &mut out);
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
            }
        }
        flush_run(&mut run, &mut out);
        if !word.is_empty() {
            out.push(word);
        }
        out
    }
    let mut keys: Vec<String> = Vec::new();
    let mut docs: Vec<Vec<String>> = Vec::new();
    for m in memories {
        keys.push(m.id.clone());
        docs.push(terms(&format!("{} {}", m.title, m.body)));
    }
    let none = HashMap::new();
    for (pack, files) in packs {
        for (path, text) in files {
            for d in crate::packsearch::extract::documents(pack, path, text) {
                keys.push(key_of(pack, path, &d.kind, &d.title, None, &none));
                docs.push(terms(&format!("{} {}", d.title, d.body)));
            }
        }
    }
    let bm25 = super::PlainBm25::new(&docs);
    let ranked = queries
        .iter()
        .map(|q| bm25.top(&terms(&q.query), K).into_iter().map(|i| keys[i].clone()).collect())
        .collect();
    (ranked, docs.len())
}
