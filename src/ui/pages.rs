//! The server-rendered pages and their form posts (they work without JavaScript).
//!
//! | page | what |
//! |---|---|
//! | `/` | packs with memory counts by category and the last commit |
//! | `/p/<pack>` | description, role, workflow, rules and indexes (Markdown; files named are links) |
//! | `/p/<pack>/memory?q=&category=&type=&page=` | memories newest first, 50 a page; add, correct, delete |
//! | `/p/<pack>/history?page=` | commits with their memory changes; "revert this" |
//! | `/p/<pack>/history?memory=<id>[&part=1]` | one memory's commits (`part`: only them, for its card) |
//!
//! A form post answers 303 back to its page with `?done=<commit>` (shown as a status line), or
//! the page again with the error; a correction or deletion of a memory that changed since the
//! page's `base` answers 409 with what the memory says now and the person's text kept.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use serde_json::Value;

use super::api::query_pairs;
use super::html::{LANG_COOKIE, Lang, esc, page, url};
use super::{Failure, UiState, blocking};
use crate::ops::HistoryFilter;

/// Commits on one page of the history.
const HISTORY_PAGE: usize = 15;
/// The last page number of the history a link may ask for (the commits before it are walked
/// over without their files).
const MAX_PAGE: usize = 100_000;

const APP_CSS: &str = include_str!("assets/app.css");
const APP_JS: &str = include_str!("assets/app.js");

/// `GET /assets/<name>`: the embedded stylesheet and script.
pub(crate) async fn asset(Path(name): Path<String>) -> Response {
    let (ty, body) = match name.as_str() {
        "app.css" => ("text/css; charset=utf-8", APP_CSS),
        "app.js" => ("text/javascript; charset=utf-8", APP_JS),
        _ => return (StatusCode::NOT_FOUND, "404 Not Found\n").into_response(),
    };
    ([(header::CONTENT_TYPE, ty)], body).into_response()
}

/// What a page handler knows about the request.
#[derive(Clone)]
pub(crate) struct Ctx {
    pub(crate) lang: Lang,
    pub(crate) pairs: Vec<(String, String)>,
    /// The language was chosen with the switch: keep it in a cookie.
    set_lang: bool,
}

impl Ctx {
    pub(crate) fn new(headers: &HeaderMap, q: Option<&str>) -> Self {
        let pairs = query_pairs(q);
        let asked = pairs.iter().find(|(k, _)| k == "lang").map(|(_, v)| v.clone());
        let lang = Lang::choose(asked.as_deref(), headers);
        Self { lang, pairs, set_lang: asked.is_some() }
    }

    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str()).filter(|v| !v.is_empty())
    }

    /// An HTML answer (with the language cookie when the switch was used).
    pub(crate) fn html(&self, status: StatusCode, body: String) -> Response {
        let mut res = (status, [(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response();
        if self.set_lang {
            let v = format!("{LANG_COOKIE}={}; SameSite=Strict; Path=/; Max-Age=31536000", self.lang.code());
            if let Ok(v) = HeaderValue::from_str(&v) {
                res.headers_mut().insert(header::SET_COOKIE, v);
            }
        }
        res
    }

    /// The error page of a failure.
    pub(crate) fn failure(&self, f: &Failure, back: &str) -> Response {
        let body = format!(
            "<h1>{}</h1><p role=\"alert\" class=\"error\">{}</p><p><a href=\"{}\">{}</a></p>",
            self.lang.t("error"),
            esc(&f.message()),
            esc(back),
            self.lang.t("back")
        );
        self.html(f.status(), page(self.lang, self.lang.t("error"), None, back, &body))
    }
}

/// A 303 to `to`.
pub(crate) fn see_other(to: &str) -> Response {
    (StatusCode::SEE_OTHER, [(header::LOCATION, to.to_owned())]).into_response()
}

/// The short form of a commit id.
pub(crate) fn short(id: &str) -> &str {
    id.get(..7).unwrap_or(id)
}

/// `GET /`.
pub(crate) async fn home(
    State(state): State<Arc<UiState>>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    let cx = Ctx::new(&headers, q.as_deref());
    let l = cx.lang;
    let packs = match blocking(move || super::api::pack_overview(&state)).await {
        Ok(p) => p,
        Err(f) => return cx.failure(&f, "/"),
    };
    let mut body = format!("<h1>{}</h1>\n", l.t("packs"));
    if let Some(done) = cx.get("done") {
        body.push_str(&format!("<p role=\"status\" id=\"status\">{} · {}</p>", l.t("done"), esc(done)));
    }
    // Above the list, so that creating or installing a pack never means scrolling past all.
    body.push_str(&super::packs::home_forms(l));
    if packs.is_empty() {
        body.push_str(&format!("<p>{}</p>", esc(l.t("no_packs"))));
    } else {
        let th: String = ["pack", "memories", "categories", "types", "files", "sync", "lint", "last_commit"]
            .iter()
            .map(|k| format!("<th scope=\"col\">{}</th>", l.t(k)))
            .collect();
        body.push_str(&format!("<table class=\"packs\"><thead><tr>{th}</tr></thead><tbody>\n"));
        for p in &packs {
            let name = p["name"].as_str().unwrap_or_default();
            let counts = |key: &str| -> String {
                p[key]
                    .as_object()
                    .map(|m| {
                        m.iter().map(|(c, n)| format!("{} ({n})", esc(c))).collect::<Vec<_>>().join(", ")
                    })
                    .unwrap_or_default()
            };
            let head = p["head"].as_str().map(short).unwrap_or("—");
            let desc = p["description"].as_str().unwrap_or_default();
            let lint = match (p["lint"]["errors"].as_u64(), p["lint"]["warnings"].as_u64()) {
                (Some(0), Some(0)) => format!("<span class=\"badge ok\">{}</span>", l.t("lint_ok")),
                (Some(e), Some(w)) => format!(
                    "<span class=\"badge{}\">{e} {} · {w} {}</span>",
                    if e > 0 { " expired" } else { "" },
                    l.t("errors"),
                    l.t("warnings")
                ),
                _ => "—".to_owned(),
            };
            let damage = p["damaged"]
                .as_object()
                .map(|d| {
                    damage_badge(
                        l,
                        d.get("diagnosis").and_then(Value::as_str).unwrap_or_default(),
                        d.get("doctor").and_then(Value::as_str).unwrap_or_default(),
                    )
                })
                .unwrap_or_default();
            body.push_str(&format!(
                "<tr><td><a href=\"/p/{u}\">{n}</a>{damage}<div class=\"muted\">{d}</div></td><td data-label=\"{lm}\"><a href=\"/p/{u}/memory\">{c}</a></td><td data-label=\"{lcat}\">{cats}</td><td data-label=\"{lty}\">{types}</td><td data-label=\"{lf}\">{k} {lk} · {e} {le}</td><td data-label=\"{ls}\">{sync}</td><td data-label=\"{ll}\">{lint}</td><td data-label=\"{lh}\"><a href=\"/p/{u}/history\"><code>{h}</code></a></td></tr>\n",
                lm = l.t("memories"),
                lcat = l.t("categories"),
                lty = l.t("types"),
                lf = l.t("files"),
                ls = l.t("sync"),
                ll = l.t("lint"),
                lh = l.t("last_commit"),
                u = url(name),
                n = esc(name),
                d = esc(desc),
                c = p["memories"],
                cats = counts("categories"),
                types = counts("types"),
                k = p["knowledge"],
                lk = l.t("knowledge"),
                e = p["examples"],
                le = l.t("examples"),
                sync = esc(p["sync"].as_str().unwrap_or(l.t("no_remote_short"))),
                h = esc(head),
            ));
        }
        body.push_str("</tbody></table>");
    }
    cx.html(StatusCode::OK, page(l, l.t("packs"), None, "/", &body))
}

/// The warning a damaged pack carries on the home page and its own: a badge, the one-line
/// diagnosis and the `engram doctor` command.
fn damage_badge(l: Lang, diagnosis: &str, doctor: &str) -> String {
    format!(
        " <span class=\"badge damaged\" title=\"{d}\">⚠ {b}</span><div class=\"damage\" role=\"alert\">{d}<br>{h} <code>{c}</code></div>",
        b = l.t("damaged"),
        d = esc(diagnosis),
        h = esc(l.t("damaged_hint")),
        c = esc(doctor),
    )
}

/// `GET /p/<pack>`. A damaged pack shows its warning and what can still be read.
pub(crate) async fn pack(
    State(state): State<Arc<UiState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    let cx = Ctx::new(&headers, q.as_deref());
    let l = cx.lang;
    let n = name.clone();
    let read = blocking(move || {
        let pack = state.engram.packs().resolve_for_repair(&n).map_err(crate::ops::EngramError::from)?;
        let mut damage = state.engram.pack_health(&pack.dir).damage().cloned();
        let (head, cats) = match state.memories(&n, None) {
            Ok((head, listing)) => (head, listing.by_category().to_vec()),
            Err(e) => {
                damage.get_or_insert_with(|| state.engram.damage_of(&pack.dir, &e));
                (None, Vec::new())
            }
        };
        let editable = match super::packs::editable_files(&state, &n) {
            Ok(files) => files,
            Err(_) if damage.is_some() => Vec::new(),
            Err(f) => return Err(f),
        };
        let files: Vec<(&'static str, Option<String>)> =
            ["role.md", "workflow.md", "rules.md", "knowledge/_index.md", "examples/_index.md"]
                .into_iter()
                .map(|f| (f, state.engram.read_engram_file(&n, f).ok()))
                .collect();
        let desc = crate::pack::read_meta(&pack.dir)
            .ok()
            .and_then(|m| m.get("description").and_then(|d| d.as_str().map(str::to_owned)))
            .unwrap_or_default();
        Ok((head, cats, files, desc, editable, damage))
    })
    .await;
    let here = format!("/p/{}", url(&name));
    let (head, cats, files, desc, editable, damage) = match read {
        Ok(r) => r,
        Err(f) => return cx.failure(&f, "/"),
    };
    let warning = damage.map(|d| damage_badge(l, &d.diagnosis, &d.doctor)).unwrap_or_default();
    let mut body = format!("<h1>{}</h1>{warning}<p>{}</p>\n", esc(&name), esc(&desc));
    if let Some(h) = head {
        body.push_str(&format!(
            "<p class=\"muted\">{} <code>{}</code></p>",
            l.t("last_commit"),
            esc(short(&h))
        ));
    }
    body.push_str(&format!("<h2>{}</h2><ul>", l.t("categories")));
    for (c, n) in &cats {
        body.push_str(&format!(
            "<li><a href=\"{here}/memory?category={}\">{}</a> ({n})</li>",
            url(c),
            esc(c)
        ));
    }
    body.push_str("</ul>\n");
    // A file the pack holds, named in a text (`knowledge/topic.md` in the index), is a link.
    let links = |f: &str| editable.iter().any(|e| e == f).then(|| format!("{here}/file?path={}", url(f)));
    for (file, text) in files {
        let title = match file {
            "role.md" => l.t("role"),
            "workflow.md" => l.t("workflow"),
            "rules.md" => l.t("rules"),
            "knowledge/_index.md" => l.t("knowledge"),
            _ => l.t("examples"),
        };
        if let Some(t) = text {
            body.push_str(&format!(
                "<section><h2>{title} <a class=\"edit-file\" href=\"{here}/file?path={}\">{}</a></h2><div class=\"md\">{}</div></section>\n",
                url(file),
                l.t("edit_file"),
                super::markdown::render_with(&super::packs::file_text(file, &t), &links)
            ));
        }
    }
    body.push_str(&format!("<section id=\"files\"><h2>{}</h2><ul>", l.t("files")));
    for f in &editable {
        body.push_str(&format!(
            "<li><a href=\"{here}/file?path={}\"><code>{}</code></a></li>",
            url(f),
            esc(f)
        ));
    }
    body.push_str("</ul></section>\n");
    cx.html(StatusCode::OK, page(l, &name, Some(&name), &here, &body))
}

/// The fields of a form post.
pub(crate) fn form(bytes: &[u8]) -> Vec<(String, String)> {
    form_urlencoded::parse(bytes).map(|(k, v)| (k.into_owned(), v.into_owned())).collect()
}

/// A form field (empty when missing).
pub(crate) fn field(f: &[(String, String)], key: &str) -> String {
    f.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()).unwrap_or_default()
}

/// A trimmed, non-empty form field.
pub(crate) fn optional(f: &[(String, String)], key: &str) -> Option<String> {
    Some(field(f, key)).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// The word diffs of a commit's prose files (memory indexes and markers aside).
fn word_diffs(c: &crate::store::CommitInfo) -> String {
    let mut out = String::new();
    for f in &c.files {
        let p = f.path.as_str();
        let derived = p.starts_with("memory/_index")
            || p.starts_with("memory/_log/_index_full/")
            || p == "memory/_onboarded";
        if derived || !(p.ends_with(".md") || p.ends_with(".yaml") || p.ends_with(".json")) {
            continue;
        }
        let (Some(old), Some(new)) = (f.old.as_deref().or(Some("")), f.new.as_deref()) else { continue };
        if let Some(d) = super::diff::word_diff(old, new) {
            out.push_str(&format!(
                "<div class=\"wdiff\" data-path=\"{p}\"><div class=\"muted\"><code>{p}</code></div><div class=\"text\">{d}</div></div>",
                p = esc(p)
            ));
        }
    }
    out
}

/// `GET /p/<pack>/history?page=` — or `?memory=<id>`: the commits that added or removed that
/// memory's entry (its category and time), from its menu on the memory page.
pub(crate) async fn history(
    State(state): State<Arc<UiState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    let cx = Ctx::new(&headers, q.as_deref());
    let l = cx.lang;
    let page_no = cx.get("page").and_then(|p| p.parse::<usize>().ok()).unwrap_or(1).clamp(1, MAX_PAGE);
    let n = name.clone();
    let memory = cx.get("memory").map(str::to_owned);
    let read = blocking(move || {
        let (commits, item, more) = match memory {
            Some(id) => {
                let (_, listing) = state.memories(&n, None)?;
                let Some(item) = listing.find(&id) else {
                    return Err(Failure::Status(
                        StatusCode::NOT_FOUND,
                        format!("no memory {id} in pack {n}"),
                    ));
                };
                (state.memory_commits(&n, &item)?, Some(item), false)
            }
            None => {
                // Only the commits of this page are read with their files.
                let filter = HistoryFilter { limit: HISTORY_PAGE, ..HistoryFilter::default() };
                let page = state.engram.history_page(&n, &filter, (page_no - 1) * HISTORY_PAGE)?;
                (page.commits, None, page.more)
            }
        };
        let rows: Vec<(serde_json::Value, String)> =
            commits.iter().map(|c| (super::api::history_entry(c), word_diffs(c))).collect();
        Ok((rows, item, more))
    })
    .await;
    let (rows, item, more) = match read {
        Ok(c) => c,
        Err(f) => return cx.failure(&f, &format!("/p/{}/memory", url(&name))),
    };
    let u = url(&name);
    let here = format!("/p/{u}/history");
    // `part=1`: only the memory's commits, for its card on the memory page (`app.js`).
    if let (Some(m), Some(_)) = (&item, cx.get("part")) {
        let mut part: String = rows.iter().map(|(c, diffs)| commit_html(l, &u, c, diffs)).collect();
        part.push_str(&format!(
            "<a class=\"memory-history\" href=\"{here}?memory={}\">{}</a>",
            url(&m.id),
            l.t("full_page")
        ));
        return cx.html(StatusCode::OK, part);
    }
    let mut body = format!("<h1>{} · {}</h1>\n", esc(&name), l.t("history"));
    match &item {
        Some(m) => body.push_str(&format!(
            "<p role=\"note\" class=\"note\" id=\"memory-history\">{} <strong>{}</strong> ({} · {}) — <a href=\"{here}\">{}</a></p>\n",
            l.t("memory_history"),
            esc(&m.summary),
            esc(&m.category),
            esc(&m.ts),
            l.t("all_commits")
        )),
        None => body.push_str(&format!(
            "<form method=\"post\" action=\"/p/{u}/undo\" class=\"undo\"><label for=\"undo-n\">{}: {}</label>\
<input id=\"undo-n\" name=\"n\" type=\"number\" min=\"1\" max=\"100\" value=\"1\"><button type=\"submit\">{}</button></form>\n",
            l.t("undo_last"),
            l.t("how_many"),
            l.t("undo_last")
        )),
    }
    if let Some(done) = cx.get("done") {
        body.push_str(&format!(
            "<p role=\"status\" id=\"status\">{} · {} <code>{}</code></p>",
            l.t("done"),
            l.t("commit"),
            esc(done)
        ));
    }
    for (c, diffs) in &rows {
        body.push_str(&commit_html(l, &u, c, diffs));
    }
    if more {
        body.push_str(&format!(
            "<nav aria-label=\"{}\" class=\"pages\"><a rel=\"next\" href=\"{here}?page={}\">{}</a></nav>",
            l.t("page_nav"),
            page_no + 1,
            l.t("next")
        ));
    }
    cx.html(StatusCode::OK, page(l, l.t("history"), Some(&name), &here, &body))
}

/// One commit on the history page (and in a memory's card): what it changed, the word diffs,
/// the list as of it and "revert this".
fn commit_html(l: Lang, u: &str, c: &Value, diffs: &str) -> String {
    let id = c["id"].as_str().unwrap_or_default();
    let when = chrono::DateTime::from_timestamp(c["time"].as_i64().unwrap_or_default(), 0)
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_default();
    format!(
        "<article class=\"commit\" data-commit=\"{id}\"><div class=\"meta\"><code>{s}</code> · <time>{when}</time> · {lt} {tool} · {lc} {client}</div>\
<h3 class=\"subject\">{subject}</h3><pre class=\"diff\">{changes}</pre>{diffs}\
<a href=\"/p/{u}/memory?at={id}\" class=\"as-of\">{va}</a> \
<form method=\"post\" action=\"/p/{u}/revert\" class=\"inline\"><input type=\"hidden\" name=\"commit\" value=\"{id}\">\
<button type=\"submit\" class=\"revert\" aria-label=\"{rv}: {subject}\">{rv}</button></form></article>\n",
        id = esc(id),
        s = esc(short(id)),
        lt = l.t("tool"),
        tool = esc(c["tool"].as_str().unwrap_or("—")),
        lc = l.t("client"),
        client = esc(c["client"].as_str().unwrap_or("—")),
        subject = esc(c["subject"].as_str().unwrap_or_default()),
        changes = esc(c["changes"].as_str().unwrap_or_default()),
        rv = l.t("revert"),
        va = l.t("view_as_of"),
    )
}

/// `POST /p/<pack>/revert`.
pub(crate) async fn revert(
    State(state): State<Arc<UiState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    let cx = Ctx::new(&headers, None);
    let f = form(&bytes);
    let (n, commit) = (name.clone(), field(&f, "commit"));
    let out = blocking(move || {
        Ok(state.engram.revert_memory_item(&n, &commit, &UiState::caller("revert_memory"))?)
    })
    .await;
    let back = format!("/p/{}/history", url(&name));
    match out {
        Ok(o) => see_other(&format!("{back}?done={}", url(o.commit.as_deref().map(short).unwrap_or("-")))),
        Err(f) => cx.failure(&f, &back),
    }
}
