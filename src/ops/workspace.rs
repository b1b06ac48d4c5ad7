//! The workspace toolset's operations: memories of a code workspace.
//!
//! Workspace memories live in one pack (default `workspace`, created on first
//! write), one markdown file per memory, `memories/<YYYY-MM>/<id>.md`, with a
//! flat front matter (`id`, `kind`, `created`, `source`, `workspace`,
//! `topics`, …). Kinds: `note` (engram_add), `git-summary` (engram_ingest_git)
//! and `learning` (engram_summarize with `store: true`). Each memory records
//! the workspace it is about, so one pack serves every workspace.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Duration, NaiveDate, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};

use super::files::PackFiles;
use super::packs::own_pack::PackSeed;
use super::{Caller, Engram, EngramError, limits};
use crate::frontmatter;
use crate::graph::fnv1a64_parts;
use crate::search::{Document, Filter, SearchIndex};
use crate::store::{Changes, CommitMessage, Edit, StoreError, WorkspaceHistory, read_workspace_history};

/// The pack workspace memories go to unless `--workspace-pack` says otherwise.
pub const DEFAULT_WORKSPACE_PACK: &str = "workspace";
/// Default history window of `engram_ingest_git` and `engram_summarize`, in days.
pub const DEFAULT_DAYS: u32 = 7;
/// Longest history window, in days.
pub const MAX_DAYS: u32 = 3650;
/// Default `minConfidence` of `engram_summarize`.
pub const DEFAULT_MIN_CONFIDENCE: f64 = 0.5;

const MEMORIES_DIR: &str = "memories";
const MAX_TOPICS: usize = 32;
const MAX_PROMPT_COMMITS: usize = 200;

const SEED: PackSeed = PackSeed {
    description: "代码工作区记忆 (engram workspace toolset) / memories of code workspaces: notes, git summaries, learnings",
    tags: &["workspace", "工作区"],
    role: "# 工作区记忆 / Workspace memory\n\n这个包保存 workspace 工具集的记忆：`memories/<YYYY-MM>/<id>.md`，每条记忆记录它所属的工作区。\nMemories of code workspaces stored by the workspace toolset (engram_add, engram_ingest_git, engram_summarize), one markdown file each.\n",
};

/// Errors of the workspace tools; [`WorkspaceError::code`] is the machine-readable code.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// The workspace is not inside a git repository.
    #[error(
        "{dir} is not inside a git repository ({reason}); pass `workspace` with the path of a git working tree"
    )]
    NotARepository {
        /// The directory given.
        dir: String,
        /// libgit2's reason.
        reason: String,
    },
    /// No LLM can be reached.
    #[error(
        "engram_summarize needs an LLM: set ANTHROPIC_API_KEY in the environment of the engram server (the Anthropic API is used), or call it from an MCP client that supports sampling (sampling/createMessage); this client offers neither"
    )]
    LlmUnavailable,
    /// The LLM call failed.
    #[error("the LLM call failed: {0}")]
    LlmFailed(String),
    /// The LLM answered something that is not the asked-for JSON.
    #[error("the LLM's answer is not the expected JSON ({reason}); answer started with: {start}")]
    BadLlmAnswer {
        /// What is wrong.
        reason: String,
        /// The first characters of the answer.
        start: String,
    },
    /// The pack or the store failed.
    #[error(transparent)]
    Engram(#[from] EngramError),
}

impl WorkspaceError {
    /// A stable code for clients: `invalid_argument`, `not_a_repository`,
    /// `llm_unavailable`, `llm_failed`, `bad_llm_answer`, `pack_error` or `storage_error`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotARepository { .. } => "not_a_repository",
            Self::LlmUnavailable => "llm_unavailable",
            Self::LlmFailed(_) => "llm_failed",
            Self::BadLlmAnswer { .. } => "bad_llm_answer",
            Self::Engram(e) => e.code(),
        }
    }
}

type Result<T, E = WorkspaceError> = std::result::Result<T, E>;

/// Front matter of a workspace memory (flat; every field optional when reading).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct MemoryMeta {
    /// Stable id.
    #[serde(default)]
    pub id: String,
    /// `note`, `git-summary` or `learning`.
    #[serde(default)]
    pub kind: String,
    /// RFC 3339.
    #[serde(default)]
    pub created: String,
    /// Where it came from (free text: a tool, a URL, `git:<path>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The workspace directory it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// Topics (searchable tags).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topics: Vec<String>,
    /// Date range of a git summary or learning (`YYYY-MM-DD..YYYY-MM-DD`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<String>,
    /// Fingerprint of the commits a git summary covers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commits: Option<String>,
    /// Confidence of a learning (0–1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// Evidence of a learning (commit ids, files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
}

/// A workspace memory read from the pack.
#[derive(Debug, Clone, PartialEq)]
pub struct Memory {
    /// Front matter.
    pub meta: MemoryMeta,
    /// Body.
    pub content: String,
    /// Path in the pack.
    pub path: String,
}

/// `engram_add`'s answer.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Added {
    /// The new memory's id.
    pub id: String,
    /// RFC 3339.
    pub created_at: String,
}

/// One `engram_search` result.
#[derive(Debug, Clone, Serialize)]
pub struct SearchResult {
    /// The memory's text.
    pub content: String,
    /// Relevance (higher is better; comparable within one search).
    pub score: f32,
    /// id, kind, topics, source, workspace, createdAt, path, pack, snippet, matched.
    pub metadata: serde_json::Value,
}

/// `engram_stats`' answer.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    /// Number of workspace memories.
    pub total_memories: usize,
    /// Memories with an embedding (engram is lexical: always 0).
    pub memories_with_embeddings: usize,
    /// Memories per pack.
    pub by_pack: BTreeMap<String, usize>,
    /// Memories per kind.
    pub by_kind: BTreeMap<String, usize>,
}

/// `engram_ingest_git`'s answer.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ingested {
    /// True when a new summary memory was stored (the seed contract's boolean).
    pub added: bool,
    /// The summary memory's id: set whenever one was added, and also when the
    /// range's summary already existed (absent when the range has no commits).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_id: Option<String>,
    /// True when an existing summary of the same range was brought up to date.
    pub updated: bool,
    /// Commits in the range.
    pub commits: usize,
    /// `YYYY-MM-DD..YYYY-MM-DD`.
    pub range: String,
    /// A sentence for the model.
    pub message: String,
}

/// A learning extracted by the LLM.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Learning {
    /// The learning, one or two sentences.
    pub text: String,
    /// 0–1.
    pub confidence: f64,
    /// Commit ids or files supporting it.
    pub evidence: Vec<String>,
}

/// What `engram_summarize` asks the LLM, and about what.
#[derive(Debug, Clone)]
pub struct SummaryRequest {
    /// System prompt.
    pub system: String,
    /// User message (the history and the instructions).
    pub prompt: String,
    /// The workspace root.
    pub workspace: String,
    /// `YYYY-MM-DD..YYYY-MM-DD`.
    pub range: String,
    /// Commits in the range (the LLM is not asked when 0).
    pub commits: usize,
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn memory_path(id: &str, created: &str) -> String {
    let month = created.get(..7).filter(|m| m.len() == 7).unwrap_or("undated");
    format!("{MEMORIES_DIR}/{month}/{id}.md")
}

fn parse_memory(path: &str, text: &str) -> Memory {
    let split = frontmatter::split(text);
    let (mut meta, body) = match split.yaml.map(frontmatter::parse::<MemoryMeta>) {
        Some(Ok(meta)) => (meta, split.body),
        Some(Err(_)) => (MemoryMeta::default(), split.body),
        None => (MemoryMeta::default(), text),
    };
    if meta.id.trim().is_empty() {
        meta.id = path.rsplit('/').next().unwrap_or(path).trim_end_matches(".md").to_owned();
    }
    if meta.kind.trim().is_empty() {
        meta.kind = "note".into();
    }
    Memory { meta, content: body.trim_matches('\n').to_owned(), path: path.to_owned() }
}

fn load_memories(files: &dyn PackFiles) -> Result<Vec<Memory>> {
    let mut out = Vec::new();
    for month in files.names(MEMORIES_DIR)? {
        if month.starts_with('.') {
            continue;
        }
        let dir = format!("{MEMORIES_DIR}/{month}");
        for file in files.names(&dir)? {
            if file.starts_with('.') || !file.ends_with(".md") {
                continue;
            }
            let path = format!("{dir}/{file}");
            if let Some(text) = files.text(&path)? {
                out.push(parse_memory(&path, &text));
            }
        }
    }
    Ok(out)
}

fn render_memory(m: &Memory) -> Result<String> {
    frontmatter::render(&m.meta, &m.content)
        .map_err(|reason| WorkspaceError::from(EngramError::Invalid { field: "content", reason }))
}

fn title_of(content: &str) -> String {
    content
        .lines()
        .find(|l| !l.trim().is_empty())
        .filter(|l| l.trim_start().starts_with('#'))
        .map(|l| l.trim().trim_start_matches('#').trim().to_owned())
        .unwrap_or_default()
}

fn check_days(days: Option<i64>) -> Result<u32> {
    match days {
        None => Ok(DEFAULT_DAYS),
        Some(d) if (1..=i64::from(MAX_DAYS)).contains(&d) => Ok(d as u32),
        Some(d) => Err(WorkspaceError::from(EngramError::Invalid {
            field: "days",
            reason: format!("{d}: use 1 … {MAX_DAYS}"),
        })),
    }
}

/// The date range `[today - days, today]` (UTC) and its bounds in seconds.
fn date_range(now: DateTime<Utc>, days: u32) -> (NaiveDate, NaiveDate, i64, i64) {
    let until = now.date_naive();
    let since = until - Duration::days(i64::from(days));
    let start = since.and_hms_opt(0, 0, 0).map_or(0, |t| t.and_utc().timestamp());
    let end = (until + Duration::days(1)).and_hms_opt(0, 0, 0).map_or(i64::MAX, |t| t.and_utc().timestamp());
    (since, until, start, end)
}

fn short(id: &str) -> &str {
    id.get(..7).unwrap_or(id)
}

fn day(t: i64) -> String {
    DateTime::from_timestamp(t, 0).map(|d| d.format("%Y-%m-%d").to_string()).unwrap_or_default()
}

/// The dated summary of a history: authors, most-touched files, commits.
pub fn summarize_history(h: &WorkspaceHistory, range: &str) -> String {
    let name = h.root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut authors: BTreeMap<&str, usize> = BTreeMap::new();
    let mut files: BTreeMap<&str, usize> = BTreeMap::new();
    for c in &h.commits {
        *authors.entry(c.author.as_str()).or_default() += 1;
        for f in &c.files {
            *files.entry(f.as_str()).or_default() += 1;
        }
    }
    let mut out = format!("# Git activity in {name} ({range})\n\n");
    out.push_str(&format!(
        "{} commits by {} authors on {}; {} files touched. Workspace: {}\n",
        h.commits.len(),
        authors.len(),
        h.branch.as_deref().unwrap_or("HEAD"),
        files.len(),
        h.root.display()
    ));
    let mut by_count: Vec<(&str, usize)> = authors.into_iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    out.push_str("\n## Authors\n");
    for (a, n) in &by_count {
        out.push_str(&format!("- {a}: {n} commits\n"));
    }
    let mut hot: Vec<(&str, usize)> = files.into_iter().collect();
    hot.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    out.push_str("\n## Most touched files\n");
    for (f, n) in hot.iter().take(15) {
        out.push_str(&format!("- {f} ({n})\n"));
    }
    out.push_str("\n## Commits\n");
    for c in &h.commits {
        let mut shown: Vec<&str> = c.files.iter().take(5).map(String::as_str).collect();
        if c.files_changed > shown.len() {
            shown.push("…");
        }
        out.push_str(&format!(
            "- {} {} {}: {} [{}]\n",
            day(c.time),
            short(&c.id),
            c.author,
            c.subject,
            shown.join(", ")
        ));
    }
    if h.truncated {
        out.push_str("- … (older commits of the range left out)\n");
    }
    out
}

/// Extracts `{learnings: [...]}` (or a bare array) from an LLM answer and keeps
/// those with `confidence >= min_confidence`.
pub fn parse_learnings(answer: &str, min_confidence: f64) -> Result<Vec<Learning>> {
    let bad = |reason: &str| WorkspaceError::BadLlmAnswer {
        reason: reason.to_owned(),
        start: answer.chars().take(120).collect(),
    };
    let candidates = [
        Some(answer.trim()),
        answer.find('{').zip(answer.rfind('}')).and_then(|(a, b)| answer.get(a..=b)),
        answer.find('[').zip(answer.rfind(']')).and_then(|(a, b)| answer.get(a..=b)),
    ];
    let value = candidates
        .into_iter()
        .flatten()
        .find_map(|s| serde_json::from_str::<serde_json::Value>(s).ok())
        .ok_or_else(|| bad("no JSON object found"))?;
    let items = match &value {
        serde_json::Value::Array(a) => a,
        serde_json::Value::Object(o) => {
            o.get("learnings").and_then(|l| l.as_array()).ok_or_else(|| bad("no `learnings` array"))?
        }
        _ => return Err(bad("not an object")),
    };
    let mut out = Vec::new();
    for item in items {
        let text = match item {
            serde_json::Value::String(s) => s.clone(),
            other => other["text"].as_str().unwrap_or_default().to_owned(),
        };
        let text = text.trim().to_owned();
        if text.is_empty() {
            continue;
        }
        let mut confidence = item["confidence"].as_f64().unwrap_or(0.5);
        if confidence > 1.0 && confidence <= 100.0 {
            confidence /= 100.0;
        }
        let confidence = confidence.clamp(0.0, 1.0);
        let evidence = match &item["evidence"] {
            serde_json::Value::Array(a) => a
                .iter()
                .filter_map(|e| e.as_str().map(str::to_owned).or_else(|| Some(e.to_string())))
                .collect(),
            serde_json::Value::String(s) if !s.trim().is_empty() => vec![s.clone()],
            _ => Vec::new(),
        };
        if confidence >= min_confidence {
            out.push(Learning { text, confidence, evidence });
        }
    }
    Ok(out)
}

/// The workspace memories of one pack.
pub struct Workspace<'e> {
    engram: &'e Engram,
    pack: String,
}

impl Engram {
    /// The workspace tools over pack `pack` (created on the first write).
    pub fn workspace(&self, pack: &str) -> Workspace<'_> {
        Workspace { engram: self, pack: pack.to_owned() }
    }
}

impl Workspace<'_> {
    fn memories(&self) -> Result<Vec<Memory>> {
        match self.engram.existing_pack(&self.pack)? {
            Some(dir) => self.engram.read_pack_files(&dir, load_memories),
            None => Ok(Vec::new()),
        }
    }

    /// Runs one write on the workspace pack (created when missing).
    fn write<T>(
        &self,
        caller: &Caller,
        mut edit: impl FnMut(&[Memory]) -> Result<Edit<T>>,
    ) -> Result<(Option<String>, T)> {
        self.engram.write_own_pack(&self.pack, &SEED, caller, |snap| edit(&load_memories(snap)?))
    }

    /// `engram_add`.
    pub fn add(
        &self,
        content: &str,
        topics: &[String],
        source: Option<&str>,
        workspace: Option<&Path>,
        caller: &Caller,
    ) -> Result<Added> {
        let content = content.trim_matches('\n');
        limits::check_content("content", content)?;
        let topics: Vec<String> =
            topics.iter().map(|t| crate::memory::single_line(t)).filter(|t| !t.is_empty()).collect();
        if topics.len() > MAX_TOPICS || topics.iter().any(|t| t.chars().count() > limits::MAX_LABEL_CHARS) {
            return Err(WorkspaceError::from(EngramError::Invalid {
                field: "topics",
                reason: format!(
                    "at most {MAX_TOPICS} topics of at most {} characters",
                    limits::MAX_LABEL_CHARS
                ),
            }));
        }
        let created = rfc3339(self.engram.now());
        let (_, id) = self.write(caller, |existing| {
            let mut attempt = 0u32;
            let id = loop {
                let id =
                    format!("m-{:08x}", fnv1a64_parts(&[content, &created, &attempt.to_string()]) as u32);
                if !existing.iter().any(|m| m.meta.id == id) {
                    break id;
                }
                attempt += 1;
            };
            let memory = Memory {
                meta: MemoryMeta {
                    id: id.clone(),
                    kind: "note".into(),
                    created: created.clone(),
                    source: source.map(crate::memory::single_line).filter(|s| !s.is_empty()),
                    workspace: workspace.map(|w| w.display().to_string()),
                    topics: topics.clone(),
                    ..MemoryMeta::default()
                },
                content: content.to_owned(),
                path: memory_path(&id, &created),
            };
            let mut changes = Changes::default();
            changes.put(memory.path.clone(), render_memory(&memory)?);
            let first: String = content.lines().next().unwrap_or_default().chars().take(60).collect();
            let message = CommitMessage::new(format!("add: {id} — {first}"));
            Ok(Edit::Commit { changes, message, value: id })
        })?;
        Ok(Added { id, created_at: created })
    }

    /// `engram_search`: BM25F over the workspace memories.
    pub fn search(&self, query: &str, limit: Option<i64>) -> Result<Vec<SearchResult>> {
        if query.trim().is_empty() {
            return Err(WorkspaceError::from(EngramError::Invalid {
                field: "query",
                reason: "must not be empty".into(),
            }));
        }
        let limit = match limit {
            None => 10,
            Some(n @ 1..=100) => n as usize,
            Some(n) => {
                return Err(WorkspaceError::from(EngramError::Invalid {
                    field: "limit",
                    reason: format!("{n}: use 1 … 100"),
                }));
            }
        };
        let memories = self.memories()?;
        let docs = memories.iter().map(|m| Document {
            id: m.path.clone(),
            title: title_of(&m.content),
            body: m.content.clone(),
            pack: self.pack.clone(),
            kind: m.meta.kind.clone(),
            tags: m.meta.topics.clone(),
            time: DateTime::parse_from_rfc3339(&m.meta.created).ok().map(|t| t.timestamp()),
            path: m.path.clone(),
            ..Document::default()
        });
        let index = SearchIndex::build(docs).map_err(|e| {
            WorkspaceError::from(EngramError::Invalid {
                field: "query",
                reason: format!("search index: {e}"),
            })
        })?;
        let by_path: BTreeMap<&str, &Memory> = memories.iter().map(|m| (m.path.as_str(), m)).collect();
        Ok(index
            .search(query, &Filter::all(), limit)
            .into_iter()
            .filter_map(|hit| {
                let m = by_path.get(hit.id.as_str())?;
                let matched: Vec<&str> = hit.fields.iter().map(|f| f.name()).collect();
                Some(SearchResult {
                    content: m.content.clone(),
                    score: hit.score,
                    metadata: serde_json::json!({
                        "id": m.meta.id,
                        "kind": m.meta.kind,
                        "topics": m.meta.topics,
                        "source": m.meta.source,
                        "workspace": m.meta.workspace,
                        "createdAt": m.meta.created,
                        "pack": self.pack,
                        "path": m.path,
                        "snippet": hit.snippet,
                        "matched": matched,
                    }),
                })
            })
            .collect())
    }

    /// `engram_stats`.
    pub fn stats(&self) -> Result<Stats> {
        let memories = self.memories()?;
        let mut by_kind = BTreeMap::new();
        for m in &memories {
            *by_kind.entry(m.meta.kind.clone()).or_default() += 1;
        }
        let mut by_pack = BTreeMap::new();
        by_pack.insert(self.pack.clone(), memories.len());
        Ok(Stats { total_memories: memories.len(), memories_with_embeddings: 0, by_pack, by_kind })
    }

    fn history(&self, dir: &Path, days: Option<i64>) -> Result<(WorkspaceHistory, String)> {
        let days = check_days(days)?;
        let (since, until, start, end) = date_range(self.engram.now(), days);
        let history = read_workspace_history(dir, start, end).map_err(|e| match e {
            StoreError::Open { source, .. } => WorkspaceError::NotARepository {
                dir: dir.display().to_string(),
                reason: source.message().to_owned(),
            },
            other => EngramError::from(other).into(),
        })?;
        Ok((history, format!("{since}..{until}")))
    }

    /// `engram_ingest_git`: stores one dated summary of the workspace's history
    /// for `[today - days, today]`; a second run over the same range and the
    /// same commits adds nothing (new commits in the range update the summary).
    pub fn ingest_git(&self, dir: &Path, days: Option<i64>, caller: &Caller) -> Result<Ingested> {
        let (history, range) = self.history(dir, days)?;
        let root = history.root.canonicalize().unwrap_or_else(|_| history.root.clone());
        let root_text = root.display().to_string();
        if history.commits.is_empty() {
            return Ok(Ingested {
                added: false,
                memory_id: None,
                updated: false,
                commits: 0,
                message: format!("no commits in {root_text} between {range}; nothing stored"),
                range,
            });
        }
        let ids: Vec<&str> = history.commits.iter().map(|c| c.id.as_str()).collect();
        let fingerprint = format!("{:016x}", fnv1a64_parts(&ids));
        let id = format!("git-{:08x}", fnv1a64_parts(&[&root_text, &range]) as u32);
        let content = summarize_history(&history, &range);
        let created = rfc3339(self.engram.now());
        let until = range.rsplit("..").next().unwrap_or_default().to_owned();
        let (_, (added, updated)) = self.write(caller, |existing| {
            let old = existing.iter().find(|m| m.meta.id == id);
            if old.is_some_and(|m| m.meta.commits.as_deref() == Some(fingerprint.as_str())) {
                return Ok(Edit::Nothing((false, false)));
            }
            let memory = Memory {
                meta: MemoryMeta {
                    id: id.clone(),
                    kind: "git-summary".into(),
                    created: old.map_or_else(|| created.clone(), |m| m.meta.created.clone()),
                    source: Some(format!("git:{root_text}")),
                    workspace: Some(root_text.clone()),
                    topics: vec!["git".into(), "history".into()],
                    range: Some(range.clone()),
                    commits: Some(fingerprint.clone()),
                    ..MemoryMeta::default()
                },
                content: content.clone(),
                path: old.map_or_else(|| memory_path(&id, &until), |m| m.path.clone()),
            };
            let mut changes = Changes::default();
            changes.put(memory.path.clone(), render_memory(&memory)?);
            let verb = if old.is_some() { "ingest-git: update" } else { "ingest-git" };
            let message = CommitMessage::new(format!(
                "{verb}: {} commits of {} ({range})",
                history.commits.len(),
                root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
            ));
            Ok(Edit::Commit { changes, message, value: (old.is_none(), old.is_some()) })
        })?;
        let message = match (added, updated) {
            (true, _) => format!("stored a summary of {} commits ({range}) as {id}", history.commits.len()),
            (_, true) => format!("updated the summary {id} of {range}: new commits arrived"),
            _ => format!("the summary of {range} is already stored as {id}; nothing added"),
        };
        Ok(Ingested { added, memory_id: Some(id), updated, commits: history.commits.len(), range, message })
    }

    /// The prompt `engram_summarize` sends, built from the workspace's history.
    pub fn summary_request(&self, dir: &Path, days: Option<i64>) -> Result<SummaryRequest> {
        let (mut history, range) = self.history(dir, days)?;
        let commits = history.commits.len();
        history.commits.truncate(MAX_PROMPT_COMMITS);
        let summary = summarize_history(&history, &range);
        let system =
            "You extract durable, actionable learnings about a software project from its git history. \
                      You answer with JSON only, no prose and no code fences."
                .to_owned();
        let prompt = format!(
            "{summary}\n\nFrom this history, extract at most 8 learnings a developer working in this workspace should remember: conventions, areas that change often or break, recurring problems and their fixes, who works on what. \
             Give each a confidence between 0 and 1 and the evidence (short commit ids or file paths) it rests on. \
             Answer with exactly this JSON shape: {{\"learnings\": [{{\"text\": \"…\", \"confidence\": 0.8, \"evidence\": [\"abc1234\", \"src/lib.rs\"]}}]}}"
        );
        let workspace = history.root.canonicalize().unwrap_or(history.root).display().to_string();
        Ok(SummaryRequest { system, prompt, workspace, range, commits })
    }

    /// Stores learnings as `learning` memories, one commit; learnings already
    /// stored for the workspace (same text) are skipped. Returns the ids stored.
    pub fn store_learnings(
        &self,
        req: &SummaryRequest,
        learnings: &[Learning],
        caller: &Caller,
    ) -> Result<Vec<String>> {
        if learnings.is_empty() {
            return Ok(Vec::new());
        }
        let created = rfc3339(self.engram.now());
        let (_, ids) = self.write(caller, |existing| {
            let mut changes = Changes::default();
            let mut ids = Vec::new();
            for l in learnings {
                let id = format!("l-{:08x}", fnv1a64_parts(&[&req.workspace, &l.text]) as u32);
                if existing.iter().any(|m| m.meta.id == id) || ids.contains(&id) {
                    continue;
                }
                let memory = Memory {
                    meta: MemoryMeta {
                        id: id.clone(),
                        kind: "learning".into(),
                        created: created.clone(),
                        source: Some("engram_summarize".into()),
                        workspace: Some(req.workspace.clone()),
                        topics: vec!["learning".into()],
                        range: Some(req.range.clone()),
                        confidence: Some(l.confidence),
                        evidence: l.evidence.clone(),
                        ..MemoryMeta::default()
                    },
                    content: l.text.clone(),
                    path: memory_path(&id, &created),
                };
                changes.put(memory.path.clone(), render_memory(&memory)?);
                ids.push(id);
            }
            if ids.is_empty() {
                return Ok(Edit::Nothing(ids));
            }
            let message = CommitMessage::new(format!("learn: {} learnings ({})", ids.len(), req.range));
            Ok(Edit::Commit { changes, message, value: ids })
        })?;
        Ok(ids)
    }
}

/// The directory a workspace argument names (relative paths against `default`).
pub fn workspace_dir(given: Option<&str>, default: &Path) -> PathBuf {
    match given.map(str::trim).filter(|s| !s.is_empty()) {
        Some(p) => {
            let p = Path::new(p);
            if p.is_absolute() { p.to_owned() } else { default.join(p) }
        }
        None => default.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learnings_are_found_in_chatty_answers() {
        let answer = "Sure! Here you go:\n```json\n{\"learnings\": [{\"text\": \"Parser breaks often\", \"confidence\": 0.9, \"evidence\": [\"abc1234\"]}, {\"text\": \"low\", \"confidence\": 0.2}, {\"text\": \"pct\", \"confidence\": 80, \"evidence\": \"src/a.rs\"}]}\n```";
        let l = parse_learnings(answer, 0.5).expect("parse");
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].evidence, vec!["abc1234"]);
        assert!((l[1].confidence - 0.8).abs() < 1e-9);
        assert_eq!(l[1].evidence, vec!["src/a.rs"]);
        assert!(matches!(parse_learnings("no json here", 0.0), Err(WorkspaceError::BadLlmAnswer { .. })));
    }

    #[test]
    fn memory_files_round_trip() {
        let m = Memory {
            meta: MemoryMeta {
                id: "m-1".into(),
                kind: "note".into(),
                created: "2026-11-22T10:00:00Z".into(),
                topics: vec!["构建".into(), "ci: fast".into()],
                ..MemoryMeta::default()
            },
            content: "用 cargo nextest 跑测试".into(),
            path: memory_path("m-1", "2026-11-22T10:00:00Z"),
        };
        assert_eq!(m.path, "memories/2026-11/m-1.md");
        let text = render_memory(&m).expect("render");
        assert_eq!(parse_memory(&m.path, &text), m);
    }
}
