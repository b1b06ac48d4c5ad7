//! `search_memory` and `search_engram_knowledge`: ranked search over packs.
//!
//! Each pack (and the global memory) has its own index ([`crate::packsearch`]),
//! brought to HEAD (or to the `as_of` commit) from the git diff before every
//! query. Hits of several packs are merged by score.
//!
//! Text output (what the model reads), one block per hit:
//! ```text
//! 找到 2 条结果 (2 results) for "深蹲" — packs: coach, _global
//!
//! 1. [memory] coach · memory/health.md · [2026-02-25 10:00] fact · 膝盖旧伤
//!    score 7.42 · matched: title, body · tags: 伤病
//!    > 用户去年打篮球时扭伤了左膝，现在做深蹲…
//! ```
//! A hit that ranks where it does mostly for being written next to a stronger
//! hit (the engine's neighbour boost) says so after `matched:`
//! (`context: written next to [2026-02-25 10:00], a stronger hit`).
//! Knowledge and example hits show `[knowledge] pack · path · file title › heading`.

use serde::Serialize;

use crate::ops::{Damage, Engram, EngramError, Result};
use crate::pack::GLOBAL_DIR;
use crate::packsearch::extract::{KIND_EXAMPLE, KIND_KNOWLEDGE, KIND_MEMORY, KINDS, format_ts};
use crate::packsearch::{At, PackIndex};
use crate::search::{Filter, SearchRequest};
use crate::store::PackRepo;

/// Default number of hits.
pub(crate) const DEFAULT_LIMIT: usize = 10;
/// Largest number of hits one search returns.
pub(crate) const MAX_LIMIT: usize = 100;
/// Snippet length of `search_engram_knowledge` passages (characters).
const PASSAGE_CHARS: usize = 600;

/// Arguments of a search (`search_memory`, `engram search`).
#[derive(Debug, Clone, Default)]
pub struct SearchQuery {
    /// Free text, any language.
    pub query: String,
    /// Only this pack (and the global memory); all packs when `None`.
    pub name: Option<String>,
    /// Only these kinds (`memory`, `knowledge`, `example`, `note`); all when empty.
    pub kinds: Vec<String>,
    /// Only memories of this category.
    pub category: Option<String>,
    /// Only memories of this type.
    pub memory_type: Option<String>,
    /// Only entries carrying all these tags.
    pub tags: Vec<String>,
    /// `last_week`, `2024-05`, `2024-01..2024-03`… (see [`crate::timerange`]).
    pub time_range: Option<String>,
    /// Search the packs as they were at this date (`YYYY-MM-DD`, end of day
    /// UTC) or commit (needs `name`).
    pub as_of: Option<String>,
    /// Maximum hits (default 10, at most 100).
    pub limit: Option<usize>,
    /// Include the global memory (default for `search_memory`).
    pub include_global: bool,
    /// Snippet length in characters (`None`: the engine's default).
    pub snippet_chars: Option<usize>,
}

/// One search result: where it is and why it matched.
#[derive(Debug, Clone, Serialize)]
pub struct SearchHit {
    /// Pack name (`_global` for the global memory).
    pub pack: String,
    /// `memory`, `knowledge`, `example`, …
    pub kind: String,
    /// File in the pack.
    pub path: String,
    /// Document id (`<path>#<n>`).
    pub id: String,
    /// Memory summary, or passage title.
    pub title: String,
    /// Memory entry timestamp `YYYY-MM-DD HH:MM`, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    /// Memory category.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// Memory type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_type: Option<String>,
    /// Tags.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Relevance (comparable within one search).
    pub score: f32,
    /// Fields where the query matched (`title`, `body`, `tags`, `context`, `time`).
    pub fields: Vec<String>,
    /// Excerpt around the best match.
    pub snippet: String,
    /// A stronger hit this one was written next to (its entry time, or its
    /// title), when that nearness weighs more in the score than its own
    /// words: this hit is context of that one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub beside: Option<String>,
}

/// The result of a search.
#[derive(Debug, Clone, Serialize)]
pub struct SearchOutcome {
    /// The query text.
    pub query: String,
    /// Packs searched.
    pub packs: Vec<String>,
    /// Hits, best first.
    pub hits: Vec<SearchHit>,
    /// `as_of` as given, when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub as_of: Option<String>,
    /// Packs left out of a search over all packs because they are damaged
    /// ([`Engram::pack_health`]), or because reading them failed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub damaged: Vec<Damage>,
}

fn invalid(field: &'static str, reason: impl Into<String>) -> EngramError {
    EngramError::Invalid { field, reason: reason.into() }
}

impl Engram {
    /// Runs a search and returns structured hits.
    pub fn search(&self, q: &SearchQuery) -> Result<SearchOutcome> {
        let query = q.query.trim();
        if query.is_empty() {
            return Err(invalid("query", "must not be empty; give words to look for (any language)"));
        }
        crate::ops::limits::check_query("query", query)?;
        let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
        if limit == 0 || limit > MAX_LIMIT {
            return Err(invalid("limit", format!("must be between 1 and {MAX_LIMIT}")));
        }
        for k in &q.kinds {
            if !KINDS.contains(&k.as_str()) {
                return Err(invalid(
                    "kinds",
                    format!("unknown kind {k:?}; known kinds: {}", KINDS.join(", ")),
                ));
            }
        }
        let range = match q.time_range.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
            Some(r) => Some(
                crate::timerange::parse(r, self.now()).map_err(|e| invalid("time_range", e.to_string()))?,
            ),
            None => None,
        };
        let as_of = q.as_of.as_deref().map(str::trim).filter(|s| !s.is_empty());
        let as_of_day = as_of.and_then(crate::timerange::parse_day);
        if as_of.is_some() && as_of_day.is_none() && q.name.is_none() {
            return Err(invalid(
                "as_of",
                "a commit id names one pack's history: give `name` too, or use a date YYYY-MM-DD",
            ));
        }
        let mut filter = Filter::all().kinds(q.kinds.iter().cloned());
        filter.category = q.category.clone().filter(|c| !c.trim().is_empty());
        filter.memory_type = q.memory_type.clone().filter(|c| !c.trim().is_empty());
        filter.tags = q.tags.iter().filter(|t| !t.trim().is_empty()).cloned().collect();
        if let Some(r) = range {
            filter = filter.time_range(r.start, r.end);
        }
        let mut req = SearchRequest::new(query).limit(limit).filter(filter);
        req.now = Some(self.now().timestamp());
        req.embeddings = self.config.embeddings.clone().map(crate::search::SharedEmbeddings);
        if let Some(n) = q.snippet_chars {
            req.snippet_chars = n;
        }

        // Over all packs, a damaged one is left out and named: it never fails the search.
        let mut damaged = Vec::new();
        let mut targets: Vec<(String, std::path::PathBuf)> = match &q.name {
            Some(name) => {
                let pack = self.resolve(name)?;
                vec![(name.clone(), pack.dir)]
            }
            None => {
                let survey = self.survey();
                damaged = survey.damaged();
                survey.healthy().map(|p| (p.name.clone(), p.dir.clone())).collect()
            }
        };
        let wants_memory = q.kinds.is_empty() || q.kinds.iter().any(|k| k == KIND_MEMORY);
        let global = self.packs().global_dir();
        if q.include_global && wants_memory && PackRepo::is_repository(&global) {
            targets.push((GLOBAL_DIR.to_owned(), global));
        }

        let mut hits = Vec::new();
        let mut searched = Vec::new();
        for (name, dir) in targets {
            let found = self.with_existing_repo(&dir, |repo| {
                let commit = match (as_of, as_of_day) {
                    // A proposing caller searches its proposal branch (`serve --propose`).
                    (None, _) => repo.read_target()?,
                    (Some(_), Some((_, end))) => match repo.commit_before(end)? {
                        Some(c) => Some(c),
                        None => return Ok(Vec::new()),
                    },
                    (Some(rev), None) => Some(repo.resolve_revision(rev)?.ok_or_else(|| {
                        invalid(
                            "as_of",
                            format!("{rev:?} is neither a date YYYY-MM-DD nor a commit of pack {name}"),
                        )
                    })?),
                };
                let at = commit.as_deref().map_or(At::Head, At::Commit);
                Ok(self.search_cache.with_index(repo, &name, at, |index, _| hits_of(index, &name, &req))?)
            });
            let found = match found {
                Ok(found) => found,
                Err(e) if q.name.is_none() && matches!(e, EngramError::Store(_)) => {
                    damaged.push(self.damage_of(&dir, &e));
                    continue;
                }
                Err(e) => return Err(e),
            };
            let found = match found {
                Some(found) => found,
                // A folder that is not a repository yet: searched as it is (no history to search).
                None if as_of.is_none() => {
                    hits_of(&PackIndex::of_files(&name, working_tree_files(&dir)), &name, &req)
                }
                None => Vec::new(),
            };
            hits.extend(found);
            searched.push(name);
        }
        hits.sort_by(|a, b| {
            b.score.total_cmp(&a.score).then_with(|| (&a.pack, &a.id).cmp(&(&b.pack, &b.id)))
        });
        hits.truncate(limit);
        Ok(SearchOutcome {
            query: query.to_owned(),
            packs: searched,
            hits,
            as_of: as_of.map(str::to_owned),
            damaged,
        })
    }

    /// `search_memory`: a search rendered as text.
    pub fn search_memory(&self, q: &SearchQuery) -> Result<String> {
        let q = SearchQuery { include_global: true, ..q.clone() };
        let outcome = self.search(&q)?;
        Ok(with_notes(render(&outcome), &outcome.damaged))
    }

    /// `search_engram_knowledge`: the knowledge and example passages of one
    /// pack that answer a query.
    pub fn search_engram_knowledge(&self, name: &str, query: &str, limit: Option<usize>) -> Result<String> {
        let q = SearchQuery {
            query: query.to_owned(),
            name: Some(name.to_owned()),
            kinds: vec![KIND_KNOWLEDGE.to_owned(), KIND_EXAMPLE.to_owned()],
            limit: Some(limit.unwrap_or(5)),
            snippet_chars: Some(PASSAGE_CHARS),
            ..SearchQuery::default()
        };
        let outcome = self.search(&q)?;
        let mut text = render(&outcome);
        if !outcome.hits.is_empty() {
            text.push_str(&format!(
                "\n用 read_engram_file(\"{name}\", path) 读取全文 (read the whole file).\n"
            ));
        }
        Ok(text)
    }
}

/// The searchable files of a pack folder that is not a repository yet, read
/// as they are: symbolic links and anything under `.git` are left out, and
/// files over the read limit too.
fn working_tree_files(dir: &std::path::Path) -> Vec<(String, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), String::new())];
    while let Some((folder, rel)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else { continue };
        for entry in entries.flatten() {
            let Ok(name) = entry.file_name().into_string() else { continue };
            let path = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() && !name.eq_ignore_ascii_case(".git") {
                stack.push((entry.path(), path));
            } else if kind.is_file()
                && crate::packsearch::extract::is_searchable(&path)
                && entry.metadata().is_ok_and(|m| m.len() as usize <= crate::ops::limits::MAX_READ_BYTES)
                && let Ok(bytes) = std::fs::read(entry.path())
            {
                out.push((path, Some(bytes)));
            }
        }
    }
    out
}

fn hits_of(index: &PackIndex, pack: &str, req: &SearchRequest) -> Vec<SearchHit> {
    index
        .search_documents(req)
        .into_iter()
        .map(|(h, doc)| SearchHit {
            pack: pack.to_owned(),
            kind: doc.kind.clone(),
            path: doc.path.clone(),
            id: doc.id.clone(),
            title: doc.title.clone(),
            entry: (doc.kind == KIND_MEMORY).then(|| doc.time.map(format_ts)).flatten(),
            category: doc.category.clone(),
            memory_type: doc.memory_type.clone(),
            tags: doc.tags.clone(),
            score: h.score,
            fields: h.fields.iter().map(|f| f.name().to_owned()).collect(),
            beside: h.beside.as_deref().and_then(|id| index.document(id)).map(|d| match d.time {
                Some(t) if d.kind == KIND_MEMORY => format!("[{}]", format_ts(t)),
                _ if !d.title.is_empty() => d.title.clone(),
                _ => d.path.clone(),
            }),
            snippet: h.snippet,
        })
        .collect()
}

/// `text`, then one line for each damaged pack a search over all packs left out (nothing
/// added when there is none).
pub fn with_notes(mut text: String, damaged: &[Damage]) -> String {
    for d in damaged {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&d.note());
    }
    text
}

/// Renders an outcome as the text the tools return (see the module docs); the damaged
/// packs it left out are not in it (see [`with_notes`]).
pub fn render(o: &SearchOutcome) -> String {
    let scope = if o.packs.is_empty() { "(no packs)".to_owned() } else { o.packs.join(", ") };
    let as_of = o.as_of.as_ref().map(|a| format!(" — as of {a}")).unwrap_or_default();
    if o.hits.is_empty() {
        return format!(
            "未找到匹配结果 (no results) for {:?} — packs: {scope}{as_of}\nTry other words (or the same words in another language), or fewer filters.",
            o.query
        );
    }
    let mut out = format!(
        "找到 {n} 条结果 ({n} results) for {:?} — packs: {scope}{as_of}\n",
        o.query,
        n = o.hits.len()
    );
    for (i, h) in o.hits.iter().enumerate() {
        let mut head = format!("\n{}. [{}] {} · {}", i + 1, h.kind, h.pack, h.path);
        if let Some(ts) = &h.entry {
            head.push_str(&format!(" · [{ts}]"));
            if let Some(t) = &h.memory_type {
                head.push_str(&format!(" {t}"));
            }
        }
        if !h.title.is_empty() {
            head.push_str(&format!(" · {}", h.title));
        }
        out.push_str(&head);
        out.push_str(&format!("\n   score {:.2} · matched: {}", h.score, h.fields.join(", ")));
        if let Some(b) = &h.beside {
            out.push_str(&format!(" · context: written next to {b}, a stronger hit"));
        }
        if !h.tags.is_empty() {
            out.push_str(&format!(" · tags: {}", h.tags.join(",")));
        }
        if !h.snippet.is_empty() {
            out.push_str(&format!("\n   > {}", h.snippet));
        }
        out.push('\n');
    }
    out
}
