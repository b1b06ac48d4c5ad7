//! The JSON API under `/api/` (documented in the README), used by scripts and by the page.
//!
//! | request | answer |
//! |---|---|
//! | `GET /api/packs` | `[{name, description, memories, head, categories, types, knowledge, examples, sync, lint}]` |
//! | `GET /api/packs/<pack>/memories?q=&category=&type=&tags=&time_range=&from=&to=&old=&limit=&offset=` | `{commit, total, offset, limit, items, duplicates, past}` newest first (best first with `q`) |
//! | `POST /api/packs/<pack>/memories` `{category, summary, content, type?, tags?, expires?}` | 201 `{id, commit, text}` |
//! | `PATCH /api/packs/<pack>/memories/<id>` `{base, summary, content, type?, tags?}` | `{id, commit, text}`, 409 `{current}` |
//! | `DELETE /api/packs/<pack>/memories/<id>` `{base}` (or `?base=`) | `{commit, text}`, 409 `{current}` |
//! | `GET /api/packs/<pack>/history?limit=&offset=` | `[{id, time, subject, tool, client, changes}]` |
//! | `POST /api/packs/<pack>/revert` `{commit}` | `{commit, text}` |
//!
//! Errors are `{error, code}` with a status: 400 bad argument, 401/403 (auth.rs), 404 unknown
//! pack or memory, 409 stale `base` or a conflicting revert, 422 refused (a credential in the
//! text), 500 storage trouble.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::filter::Filter;
use super::{Failure, UiState, blocking};
use crate::ops::{CaptureRequest, CorrectRequest, EngramError, HistoryFilter, MemoryItem, MemoryTarget};

/// Most items one page of the list answers.
pub(crate) const MAX_LIMIT: usize = 200;

fn json_response(status: StatusCode, v: &Value) -> Response {
    (status, [(axum::http::header::CONTENT_TYPE, "application/json")], v.to_string()).into_response()
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let status = self.status();
        let mut body = json!({ "error": self.message() });
        match &self {
            Failure::Engram(e) => {
                body["code"] = json!(e.code());
                if let EngramError::Stale { current, .. } = e {
                    body["current"] = serde_json::to_value(current).unwrap_or(Value::Null);
                }
            }
            Failure::Status(..) => body["code"] = json!("bad_request"),
        }
        json_response(status, &body)
    }
}

/// The query string as pairs.
pub(crate) fn query_pairs(q: Option<&str>) -> Vec<(String, String)> {
    form_urlencoded::parse(q.unwrap_or_default().as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

fn param<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str()).filter(|v| !v.is_empty())
}

fn number(pairs: &[(String, String)], key: &str, default: usize) -> Result<usize, Failure> {
    match param(pairs, key) {
        None => Ok(default),
        Some(v) => {
            v.parse().map_err(|_| Failure::bad_request(format!("`{key}` must be a number, not {v:?}")))
        }
    }
}

fn body<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, Failure> {
    serde_json::from_slice(bytes)
        .map_err(|e| Failure::bad_request(format!("the body is not the expected JSON: {e}")))
}

/// `GET /api/packs`.
pub(crate) async fn packs(State(state): State<Arc<UiState>>) -> Result<Response, Failure> {
    let list = blocking(move || pack_overview(&state)).await?;
    Ok(json_response(StatusCode::OK, &Value::Array(list)))
}

/// Every pack with its counts (the home page uses the same). A damaged pack
/// ([`crate::ops::Engram::survey`]) carries `"damaged": {"name", "diagnosis", "doctor"}`
/// (else `null`), a pack whose `meta.json` is broken included; it never hides the others.
pub(crate) fn pack_overview(state: &UiState) -> Result<Vec<Value>, Failure> {
    let survey = state.engram.survey();
    let mut out = Vec::new();
    for (p, health) in &survey.packs {
        let damage = health.damage().cloned();
        let (head, listing) = match state.memories(&p.name, None) {
            Ok(read) => read,
            Err(e) => {
                let damage = damage.unwrap_or_else(|| state.engram.damage_of(&p.dir, &e));
                let mut row = empty_row(&p.name, p.meta.get("description").cloned(), &damage);
                row["error"] = json!(crate::secrets::mask_url_credentials(&e.to_string()));
                out.push(row);
                continue;
            }
        };
        let count = |by: &[(String, usize)]| -> serde_json::Map<String, Value> {
            by.iter().map(|(c, n)| (c.clone(), json!(n))).collect()
        };
        let meta_count = |k: &str| p.meta.get(k).and_then(Value::as_i64).unwrap_or(0);
        out.push(json!({
            "name": p.name,
            "description": p.meta.get("description").cloned().unwrap_or(Value::Null),
            "memories": listing.len(),
            "head": head,
            "categories": count(listing.by_category()),
            "types": count(listing.by_type()),
            "knowledge": meta_count("knowledge_count"),
            "examples": meta_count("examples_count"),
            "sync": super::packs::sync_state(state, &p.name),
            "lint": super::packs::lint_counts(state, &p.name, head.as_deref())
                .map(|(e, w)| json!({"errors": e, "warnings": w})),
            "damaged": damage,
        }));
    }
    for damage in &survey.unlisted {
        out.push(empty_row(&damage.name, None, damage));
    }
    Ok(out)
}

/// The row of a pack nothing could be read from.
fn empty_row(name: &str, description: Option<Value>, damage: &crate::ops::Damage) -> Value {
    json!({
        "name": name,
        "description": description.unwrap_or(Value::Null),
        "memories": 0,
        "head": Value::Null,
        "categories": {},
        "types": {},
        "knowledge": 0,
        "examples": 0,
        "sync": Value::Null,
        "lint": Value::Null,
        "damaged": damage,
    })
}

/// `GET /api/packs/<pack>/memories`.
pub(crate) async fn list(
    State(state): State<Arc<UiState>>,
    Path(pack): Path<String>,
    RawQuery(q): RawQuery,
) -> Result<Response, Failure> {
    let pairs = query_pairs(q.as_deref());
    let limit = number(&pairs, "limit", 50)?.clamp(1, MAX_LIMIT);
    let offset = number(&pairs, "offset", 0)?;
    let filter = Filter::from_pairs(&pairs);
    let v = blocking(move || {
        let (commit, listing) = state.memories(&pack, None)?;
        let shown = filter.apply(&state, &pack, commit.as_deref(), &listing)?;
        let positions: Vec<usize> = shown.items.iter().skip(offset).take(limit).copied().collect();
        let page: Vec<MemoryItem> = positions.iter().filter_map(|&i| listing.item(i)).collect();
        let duplicates: serde_json::Map<String, Value> = positions
            .iter()
            .filter_map(|&i| {
                let first = listing.get(listing.duplicate_of(i)?)?;
                Some((listing.get(i)?.id_hex(), json!(first.id_hex())))
            })
            .collect();
        Ok(json!({
            "commit": commit, "total": shown.items.len(), "offset": offset, "limit": limit, "items": page,
            "duplicates": duplicates, "capped": shown.capped, "past": shown.past,
        }))
    })
    .await?;
    Ok(json_response(StatusCode::OK, &v))
}

#[derive(Deserialize)]
struct AddBody {
    category: String,
    #[serde(default)]
    summary: String,
    content: String,
    #[serde(default, rename = "type")]
    memory_type: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    expires: Option<String>,
}

/// Captures a memory as `capture_memory` does; answers the new entry's id and the commit.
pub(crate) fn add_request(
    state: &Arc<UiState>,
    req: &CaptureRequest,
) -> Result<crate::ops::WriteOutcome, Failure> {
    let mut out = state.engram.capture_memory_item(req, &UiState::caller("capture_memory"))?;
    if out.commit.is_some() {
        state.catch_up_later(&req.name);
    }
    // Capture names the new entry's id when the index head tells its rank (nearly always);
    // otherwise (and for a duplicate) it is looked up in the list of the commit.
    if out.id.is_none()
        && let Some(commit) = out.commit.clone()
    {
        let (_, listing) = state.memories(&req.name, Some(&commit))?;
        let category = req.category.trim();
        let summary = crate::memory::single_line(&req.summary);
        out.id = listing
            .list
            .iter()
            .rev()
            .find(|i| i.category == category && i.summary == summary)
            .map(|i| i.id_hex());
    }
    Ok(out)
}

/// `POST /api/packs/<pack>/memories`.
pub(crate) async fn add(
    State(state): State<Arc<UiState>>,
    Path(pack): Path<String>,
    bytes: Bytes,
) -> Result<Response, Failure> {
    let b: AddBody = body(&bytes)?;
    let out = blocking(move || {
        let req = CaptureRequest {
            name: pack,
            content: b.content,
            category: b.category,
            summary: b.summary,
            memory_type: b.memory_type,
            tags: b.tags,
            expires: b.expires,
            ..CaptureRequest::default()
        };
        add_request(&state, &req)
    })
    .await?;
    Ok(json_response(StatusCode::CREATED, &json!({"id": out.id, "commit": out.commit, "text": out.text})))
}

#[derive(Deserialize)]
struct CorrectBody {
    #[serde(default)]
    base: Option<String>,
    summary: String,
    content: String,
    #[serde(default, rename = "type")]
    memory_type: Option<String>,
    #[serde(default)]
    tags: Option<Vec<String>>,
}

/// The target of a write at `base`: the memory as it was there (409 when it was not there).
pub(crate) fn target_at(
    state: &UiState,
    pack: &str,
    id: &str,
    base: Option<&str>,
) -> Result<MemoryTarget, Failure> {
    let Some(base) = base.map(str::trim).filter(|b| !b.is_empty()) else {
        return Err(Failure::bad_request(
            "`base` is required: the commit the memory was read at (the list's `commit`), so a change made since is never overwritten",
        ));
    };
    if base.len() > 64 || !base.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Failure::bad_request(
            "`base` is a commit id: 4 to 64 hexadecimal digits (the list's `commit`)",
        ));
    }
    let (_, at_base) = state.memories(pack, Some(base))?;
    match at_base.find(id) {
        Some(item) => Ok(MemoryTarget { id: id.to_owned(), expected: Some(item) }),
        None => {
            let (_, now) = state.memories(pack, None)?;
            match now.find(id).map(Box::new) {
                // Added since `base`: the writer did not see it.
                Some(current) => Err(EngramError::Stale { id: id.to_owned(), current: Some(current) }.into()),
                None => Err(Failure::Status(
                    StatusCode::NOT_FOUND,
                    format!("no memory {id} in {pack} (neither at `base` nor now)"),
                )),
            }
        }
    }
}

/// A correction's new fields.
pub(crate) struct Correction {
    /// New summary.
    pub summary: String,
    /// New text.
    pub content: String,
    /// New type (kept when `None`).
    pub memory_type: Option<String>,
    /// New tags (kept when `None`).
    pub tags: Option<Vec<String>>,
}

/// Corrects a memory as `correct_memory` does, if it is unchanged since `base`.
pub(crate) fn correct_memory(
    state: &Arc<UiState>,
    pack: &str,
    id: &str,
    base: Option<&str>,
    c: Correction,
) -> Result<crate::ops::WriteOutcome, Failure> {
    let target = target_at(state, pack, id, base)?;
    let req = CorrectRequest {
        name: pack.to_owned(),
        new_content: c.content,
        new_summary: c.summary,
        memory_type: c.memory_type,
        tags: c.tags,
        target: Some(target),
        ..CorrectRequest::default()
    };
    let out = state.engram.correct_memory_item(&req, &UiState::caller("correct_memory"))?;
    state.catch_up_later(pack);
    Ok(out)
}

/// `PATCH /api/packs/<pack>/memories/<id>`.
pub(crate) async fn correct(
    State(state): State<Arc<UiState>>,
    Path((pack, id)): Path<(String, String)>,
    bytes: Bytes,
) -> Result<Response, Failure> {
    let b: CorrectBody = body(&bytes)?;
    let out = blocking(move || {
        let c =
            Correction { summary: b.summary, content: b.content, memory_type: b.memory_type, tags: b.tags };
        correct_memory(&state, &pack, &id, b.base.as_deref(), c)
    })
    .await?;
    Ok(json_response(StatusCode::OK, &json!({"id": out.id, "commit": out.commit, "text": out.text})))
}

#[derive(Deserialize, Default)]
struct BaseBody {
    #[serde(default)]
    base: Option<String>,
}

/// Deletes memories as `delete_memory` does, all in one commit, if each is unchanged since `base`.
pub(crate) fn delete_memory(
    state: &Arc<UiState>,
    pack: &str,
    ids: &[String],
    base: Option<&str>,
) -> Result<crate::ops::WriteOutcome, Failure> {
    if ids.is_empty() {
        return Err(Failure::bad_request("no memory was selected"));
    }
    let targets = ids.iter().map(|id| target_at(state, pack, id, base)).collect::<Result<Vec<_>, _>>()?;
    let out = state.engram.delete_memory_items(pack, &targets, &UiState::caller("delete_memory"))?;
    state.catch_up_later(pack);
    Ok(out)
}

/// Merges memories into one as `consolidate_memory` does, in one commit, if each is unchanged
/// since `base`.
pub(crate) fn merge_memories(
    state: &Arc<UiState>,
    pack: &str,
    ids: &[String],
    base: Option<&str>,
    summary: &str,
    content: &str,
) -> Result<crate::ops::WriteOutcome, Failure> {
    if ids.len() < 2 {
        return Err(Failure::bad_request("name two memories to merge"));
    }
    let targets = ids.iter().map(|id| target_at(state, pack, id, base)).collect::<Result<Vec<_>, _>>()?;
    let out = state.engram.consolidate_memory_items(
        pack,
        &targets,
        content,
        summary,
        &UiState::caller("consolidate_memory"),
    )?;
    state.catch_up_later(pack);
    Ok(out)
}

/// `DELETE /api/packs/<pack>/memories/<id>`.
pub(crate) async fn delete(
    State(state): State<Arc<UiState>>,
    Path((pack, id)): Path<(String, String)>,
    RawQuery(q): RawQuery,
    bytes: Bytes,
) -> Result<Response, Failure> {
    let b: BaseBody = if bytes.is_empty() { BaseBody::default() } else { body(&bytes)? };
    let base = b.base.or_else(|| param(&query_pairs(q.as_deref()), "base").map(str::to_owned));
    let out = blocking(move || delete_memory(&state, &pack, &[id], base.as_deref())).await?;
    Ok(json_response(StatusCode::OK, &json!({"commit": out.commit, "text": out.text})))
}

/// A pack's commits, newest first, as the history page and the API show them.
pub(crate) fn history_entries(
    state: &UiState,
    pack: &str,
    limit: usize,
    offset: usize,
) -> Result<Vec<Value>, Failure> {
    let filter = HistoryFilter { limit, ..HistoryFilter::default() };
    let page = state.engram.history_page(pack, &filter, offset)?;
    Ok(page.commits.iter().map(history_entry).collect())
}

/// One commit as the API and the history page show it.
pub(crate) fn history_entry(c: &crate::store::CommitInfo) -> Value {
    json!({
        "id": c.id,
        "time": c.time,
        "subject": c.subject,
        "tool": c.trailer(crate::store::trailer::TOOL),
        "client": c.trailer(crate::store::trailer::CLIENT),
        "changes": crate::ops::describe_commit(c),
    })
}

/// `GET /api/packs/<pack>/history`.
pub(crate) async fn history(
    State(state): State<Arc<UiState>>,
    Path(pack): Path<String>,
    RawQuery(q): RawQuery,
) -> Result<Response, Failure> {
    let pairs = query_pairs(q.as_deref());
    let limit = number(&pairs, "limit", 50)?.clamp(1, 500);
    let offset = number(&pairs, "offset", 0)?;
    let list = blocking(move || history_entries(&state, &pack, limit, offset)).await?;
    Ok(json_response(StatusCode::OK, &Value::Array(list)))
}

#[derive(Deserialize)]
struct RevertBody {
    commit: String,
}

/// `POST /api/packs/<pack>/revert`.
pub(crate) async fn revert(
    State(state): State<Arc<UiState>>,
    Path(pack): Path<String>,
    bytes: Bytes,
) -> Result<Response, Failure> {
    let b: RevertBody = body(&bytes)?;
    let out = blocking(move || {
        Ok(state.engram.revert_memory_item(&pack, &b.commit, &UiState::caller("revert_memory"))?)
    })
    .await?;
    Ok(json_response(StatusCode::OK, &json!({"commit": out.commit, "text": out.text})))
}
