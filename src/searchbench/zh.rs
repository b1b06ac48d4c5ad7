//! The Chinese (and mixed Chinese/English) set (`engram bench-search zh`):
//! hand-written memories and queries with known answers in
//! `tests/fixtures/zh_memories.json` and `tests/fixtures/zh_queries.json`.
//! Reports recall@3 for the engine alone and through a real pack
//! ([`Engram::search`], the code path of `search_memory`).

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::Deserialize;

use super::{BenchEntry, TempDir, engram_over, ts_of, write_pack};
use crate::ops::{EngramError, SearchQuery};
use crate::search::{Document, Filter, SearchIndex};

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

/// Runs the set; returns the report.
pub fn run() -> Result<String, String> {
    let (docs, queries) = fixtures()?;
    let index = SearchIndex::build(docs.clone()).map_err(|e| e.to_string())?;
    let engine: Vec<Vec<String>> = queries
        .iter()
        .map(|q| index.search(&q.query, &Filter::all(), K).into_iter().map(|h| h.id).collect())
        .collect();
    let product = through_pack(&docs, &queries).map_err(|e| e.to_string())?;
    let (e_recall, _) = score(&queries, &engine);
    let (p_recall, misses) = score(&queries, &product);
    let mut out = format!("Chinese set: {} memories, {} queries\n\n", docs.len(), queries.len());
    let _ = writeln!(out, "{:<34} recall@{K}", "run");
    let _ = writeln!(out, "{:<34} {e_recall:.1}%", "engine only");
    let _ = writeln!(out, "{:<34} {p_recall:.1}%", "engram pack (search_memory path)");
    for m in misses {
        let _ = writeln!(out, "  miss: {m}");
    }
    Ok(out)
}

/// Ranked answer ids of every query, searched through a real pack.
pub fn through_pack(docs: &[Document], queries: &[Query]) -> Result<Vec<Vec<String>>, EngramError> {
    let tmp = TempDir::new("zh").map_err(|e| EngramError::Unreadable {
        path: std::env::temp_dir().display().to_string(),
        reason: e.to_string(),
    })?;
    let (entries, by_ts) = entries(docs);
    write_pack(tmp.path(), "zh-bench", &entries)?;
    let engram = engram_over(tmp.path())?;
    let mut out = Vec::new();
    for q in queries {
        let query = SearchQuery {
            query: q.query.clone(),
            name: Some("zh-bench".into()),
            limit: Some(K),
            ..SearchQuery::default()
        };
        let hits = engram.search(&query)?.hits;
        out.push(hits.iter().filter_map(|h| by_ts.get(h.entry.as_deref()?).cloned()).collect());
    }
    Ok(out)
}
