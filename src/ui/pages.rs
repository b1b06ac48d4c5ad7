//! The server-rendered pages and their form posts (they work without JavaScript).
//!
//! | page | what |
//! |---|---|
//! | `/` | packs with memory counts by category and the last commit |
//! | `/p/<pack>` | description, role, workflow and rules (as text) |
//! | `/p/<pack>/memory?q=&category=&type=&page=` | memories newest first, 50 a page; add, correct, delete |
//! | `/p/<pack>/history?page=` | commits with their memory changes; "revert this" |
//!
//! A form post answers 303 back to its page with `?done=<commit>` (shown as a status line), or
//! the page again with the error; a correction or deletion of a memory that changed since the
//! page's `base` answers 409 with what the memory says now and the person's text kept.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::api::{Correction, Filter, query_pairs};
use super::html::{LANG_COOKIE, Lang, esc, page, url};
use super::{Failure, UiState, blocking};
use crate::ops::{CaptureRequest, EngramError, MemoryItem};

/// Memories on one page of the list.
const PAGE_SIZE: usize = 50;
/// Commits on one page of the history.
const HISTORY_PAGE: usize = 30;

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
pub(crate) struct Ctx {
    pub(crate) lang: Lang,
    pairs: Vec<(String, String)>,
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

fn see_other(to: &str) -> Response {
    (StatusCode::SEE_OTHER, [(header::LOCATION, to.to_owned())]).into_response()
}

fn short(id: &str) -> &str {
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
    if packs.is_empty() {
        body.push_str(&format!("<p>{}</p>", esc(l.t("no_packs"))));
    } else {
        body.push_str(&format!(
            "<table class=\"packs\"><thead><tr><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th></tr></thead><tbody>\n",
            l.t("pack"),
            l.t("memories"),
            l.t("categories"),
            l.t("last_commit")
        ));
        for p in &packs {
            let name = p["name"].as_str().unwrap_or_default();
            let cats: Vec<String> = p["categories"]
                .as_object()
                .map(|m| m.iter().map(|(c, n)| format!("{} ({n})", esc(c))).collect())
                .unwrap_or_default();
            let head = p["head"].as_str().map(short).unwrap_or("—");
            let desc = p["description"].as_str().unwrap_or_default();
            body.push_str(&format!(
                "<tr><td><a href=\"/p/{u}\">{n}</a><div class=\"muted\">{d}</div></td><td><a href=\"/p/{u}/memory\">{c}</a></td><td>{cats}</td><td><a href=\"/p/{u}/history\"><code>{h}</code></a></td></tr>\n",
                u = url(name),
                n = esc(name),
                d = esc(desc),
                c = p["memories"],
                cats = cats.join(", "),
                h = esc(head),
            ));
        }
        body.push_str("</tbody></table>");
    }
    cx.html(StatusCode::OK, page(l, l.t("packs"), None, "/", &body))
}

/// `GET /p/<pack>`.
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
        let pack = state.engram.resolve(&n)?;
        let (head, items) = state.memories(&n, None)?;
        let files: Vec<(&'static str, Option<String>)> = ["role.md", "workflow.md", "rules.md"]
            .into_iter()
            .map(|f| (f, state.engram.read_engram_file(&n, f).ok()))
            .collect();
        let desc = crate::pack::read_meta(&pack.dir)
            .ok()
            .and_then(|m| m.get("description").and_then(|d| d.as_str().map(str::to_owned)))
            .unwrap_or_default();
        Ok((head, super::by_category(&items), files, desc))
    })
    .await;
    let here = format!("/p/{}", url(&name));
    let (head, cats, files, desc) = match read {
        Ok(r) => r,
        Err(f) => return cx.failure(&f, "/"),
    };
    let mut body = format!("<h1>{}</h1><p>{}</p>\n", esc(&name), esc(&desc));
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
    for (file, text) in files {
        let title = match file {
            "role.md" => l.t("role"),
            "workflow.md" => l.t("workflow"),
            _ => l.t("rules"),
        };
        if let Some(t) = text {
            body.push_str(&format!(
                "<section><h2>{title}</h2><div class=\"text\">{}</div></section>\n",
                esc(&t)
            ));
        }
    }
    cx.html(StatusCode::OK, page(l, &name, Some(&name), &here, &body))
}

/// One memory: its text and the forms to correct and delete it.
/// One memory: its text and, when `base` is given (the commit the page shows is HEAD), the
/// forms to correct and delete it.
fn memory_html(
    l: Lang,
    pack: &str,
    base: Option<&str>,
    m: &MemoryItem,
    draft: Option<(&str, &str)>,
) -> String {
    let u = url(pack);
    let id = esc(&m.id);
    let tags = if m.tags.is_empty() {
        String::new()
    } else {
        format!(
            " <span class=\"tags\">{}</span>",
            m.tags.iter().map(|t| format!("#{}", esc(t))).collect::<Vec<_>>().join(" ")
        )
    };
    let expires = m
        .expires
        .as_deref()
        .map(|e| format!(" <span class=\"muted\">{} {}</span>", l.t("expires"), esc(e)))
        .unwrap_or_default();
    let (summary, content) = draft.unwrap_or((&m.summary, &m.content));
    let shown = format!(
        "<article class=\"memory\" id=\"m-{id}\" data-id=\"{id}\">\
<div class=\"meta\"><time>{ts}</time> · <span class=\"cat\">{cat}</span> · <span class=\"type\">{ty}</span>{tags}{expires}</div>\
<h3 class=\"summary\">{sum}</h3><div class=\"content text\">{text}</div>",
        ts = esc(&m.ts),
        cat = esc(&m.category),
        ty = esc(&m.memory_type),
        sum = esc(&m.summary),
        text = esc(&m.content),
    );
    let Some(base) = base else { return format!("{shown}</article>\n") };
    format!(
        "{shown}<details{open}><summary>{edit}</summary>\
<form method=\"post\" action=\"/p/{u}/memory/{id}/edit\" class=\"edit\">\
<input type=\"hidden\" name=\"base\" value=\"{base}\">\
<label for=\"s-{id}\">{ls}</label><input id=\"s-{id}\" name=\"summary\" value=\"{fs}\" required>\
<label for=\"c-{id}\">{lc}</label><textarea id=\"c-{id}\" name=\"content\" rows=\"4\" required>{fc}</textarea>\
<button type=\"submit\" class=\"save\">{save}</button></form></details>\
<form method=\"post\" action=\"/p/{u}/memory/{id}/delete\" class=\"delete\">\
<input type=\"hidden\" name=\"base\" value=\"{base}\">\
<button type=\"submit\" class=\"danger\" aria-label=\"{del}: {sum}\">{del}</button></form></article>\n",
        sum = esc(&m.summary),
        open = if draft.is_some() { " open" } else { "" },
        edit = l.t("edit"),
        base = esc(base),
        ls = l.t("summary"),
        lc = l.t("content"),
        fs = esc(summary),
        fc = esc(content),
        save = l.t("save"),
        del = l.t("delete"),
    )
}

/// `GET /p/<pack>/memory`.
pub(crate) async fn memory(
    State(state): State<Arc<UiState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    let cx = Ctx::new(&headers, q.as_deref());
    let n = name.clone();
    let at = cx.get("at").map(str::to_owned);
    let read = blocking(move || Ok(state.memories(&n, at.as_deref())?)).await;
    let (head, items) = match read {
        Ok(r) => r,
        Err(f) => return cx.failure(&f, "/"),
    };
    let body = memory_list(&cx, &name, head.as_deref().unwrap_or_default(), &items, cx.get("at").is_none());
    let here = format!("/p/{}/memory", url(&name));
    cx.html(StatusCode::OK, page(cx.lang, cx.lang.t("memories"), Some(&name), &here, &body))
}

/// The memory list; `editable` when it shows HEAD (else a read-only view of a past commit).
fn memory_list(cx: &Ctx, name: &str, head: &str, items: &[MemoryItem], editable: bool) -> String {
    let l = cx.lang;
    let u = url(name);
    let filter = Filter::from_pairs(&cx.pairs);
    let shown = filter.apply(items);
    let pages = shown.len().div_ceil(PAGE_SIZE).max(1);
    let page_no = cx.get("page").and_then(|p| p.parse::<usize>().ok()).unwrap_or(1).clamp(1, pages);
    let mut body = format!("<h1>{} · {}</h1>\n", esc(name), l.t("memories"));
    if let Some(done) = cx.get("done") {
        body.push_str(&format!(
            "<p role=\"status\" id=\"status\">{} · {} <code>{}</code></p>",
            l.t("done"),
            l.t("commit"),
            esc(done)
        ));
    }
    let mut cats: Vec<&str> = items.iter().map(|i| i.category.as_str()).collect();
    cats.sort_unstable();
    cats.dedup();
    let mut types: Vec<&str> = items.iter().map(|i| i.memory_type.as_str()).collect();
    types.sort_unstable();
    types.dedup();
    let options = |all: &[&str], chosen: Option<&str>| -> String {
        let mut s = format!("<option value=\"\">{}</option>", l.t("all"));
        for v in all {
            let sel = if chosen == Some(*v) { " selected" } else { "" };
            s.push_str(&format!("<option value=\"{v}\"{sel}>{v}</option>", v = esc(v)));
        }
        s
    };
    body.push_str(&format!(
        "<form method=\"get\" class=\"filter\" role=\"search\">\
<label for=\"q\">{ls}</label><input id=\"q\" name=\"q\" type=\"search\" value=\"{q}\">\
<label for=\"category\">{lc}</label><select id=\"category\" name=\"category\">{co}</select>\
<label for=\"type\">{lt}</label><select id=\"type\" name=\"type\">{to}</select>{at}\
<button type=\"submit\">{lf}</button></form>\n",
        at = if editable {
            String::new()
        } else {
            format!("<input type=\"hidden\" name=\"at\" value=\"{}\">", esc(head))
        },
        ls = l.t("search"),
        q = esc(filter.q.as_deref().unwrap_or_default()),
        lc = l.t("category"),
        co = options(&cats, filter.category.as_deref()),
        lt = l.t("type"),
        to = options(&types, filter.memory_type.as_deref()),
        lf = l.t("filter"),
    ));
    if !editable {
        body.push_str(&format!(
            "<p role=\"note\" class=\"note\" id=\"as-of\">{} <code>{}</code> — <a href=\"/p/{u}/memory\">{}</a></p>\n",
            l.t("read_only_view"),
            esc(short(head)),
            l.t("to_current")
        ));
    }
    body.push_str(&if !editable { String::new() } else { format!(
        "<details class=\"add\"><summary>{add}</summary><form method=\"post\" action=\"/p/{u}/memory\" id=\"add\">\
<label for=\"add-category\">{lc}</label><input id=\"add-category\" name=\"category\" value=\"{cat}\" required>\
<label for=\"add-summary\">{ls}</label><input id=\"add-summary\" name=\"summary\" required>\
<label for=\"add-content\">{lt}</label><textarea id=\"add-content\" name=\"content\" rows=\"4\" required></textarea>\
<label for=\"add-type\">{ly}</label><input id=\"add-type\" name=\"type\" placeholder=\"fact, preference, decision…\">\
<label for=\"add-tags\">{lg}</label><input id=\"add-tags\" name=\"tags\">\
<button type=\"submit\">{add}</button></form></details>\n",
        add = l.t("add"),
        lc = l.t("category"),
        cat = esc(filter.category.as_deref().unwrap_or("general")),
        ls = l.t("summary"),
        lt = l.t("content"),
        ly = l.t("type"),
        lg = l.t("tags"),
    ) });
    body.push_str(&format!(
        "<p class=\"muted\" id=\"count\">{} {} · {} <code>{}</code></p>\n",
        shown.len(),
        l.t("shown"),
        l.t("as_of"),
        esc(short(head))
    ));
    if shown.is_empty() {
        body.push_str(&format!("<p>{}</p>", l.t("no_memories")));
    }
    for m in shown.iter().skip((page_no - 1) * PAGE_SIZE).take(PAGE_SIZE) {
        body.push_str(&memory_html(l, name, editable.then_some(head), m, None));
    }
    if pages > 1 {
        let link = |p: usize| {
            let mut pairs: Vec<(String, String)> =
                cx.pairs.iter().filter(|(k, _)| k != "page" && k != "done" && k != "lang").cloned().collect();
            pairs.push(("page".into(), p.to_string()));
            let q: Vec<String> = pairs.iter().map(|(k, v)| format!("{}={}", url(k), url(v))).collect();
            format!("/p/{u}/memory?{}", q.join("&"))
        };
        body.push_str(&format!("<nav aria-label=\"{}\" class=\"pages\">", l.t("page_nav")));
        if page_no > 1 {
            body.push_str(&format!(
                "<a rel=\"prev\" href=\"{}\">{}</a> ",
                esc(&link(page_no - 1)),
                l.t("previous")
            ));
        }
        body.push_str(&format!("<span>{page_no} / {pages}</span>"));
        if page_no < pages {
            body.push_str(&format!(
                " <a rel=\"next\" href=\"{}\">{}</a>",
                esc(&link(page_no + 1)),
                l.t("next")
            ));
        }
        body.push_str("</nav>");
    }
    body
}

/// The fields of a form post.
fn form(bytes: &[u8]) -> Vec<(String, String)> {
    form_urlencoded::parse(bytes).map(|(k, v)| (k.into_owned(), v.into_owned())).collect()
}

fn field(f: &[(String, String)], key: &str) -> String {
    f.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()).unwrap_or_default()
}

fn optional(f: &[(String, String)], key: &str) -> Option<String> {
    Some(field(f, key)).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// `POST /p/<pack>/memory`: add.
pub(crate) async fn memory_add(
    State(state): State<Arc<UiState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    let cx = Ctx::new(&headers, None);
    let f = form(&bytes);
    let n = name.clone();
    let out = blocking(move || {
        let tags =
            field(&f, "tags").split(',').map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()).collect();
        let req = CaptureRequest {
            name: n,
            category: field(&f, "category"),
            summary: field(&f, "summary"),
            content: field(&f, "content"),
            memory_type: optional(&f, "type"),
            tags,
            ..CaptureRequest::default()
        };
        super::api::add_request(&state, &req)
    })
    .await;
    let back = format!("/p/{}/memory", url(&name));
    match out {
        Ok(o) => see_other(&format!("{back}?done={}", url(o.commit.as_deref().map(short).unwrap_or("-")))),
        Err(f) => cx.failure(&f, &back),
    }
}

/// `POST /p/<pack>/memory/<id>/edit`: correct.
pub(crate) async fn memory_edit(
    State(state): State<Arc<UiState>>,
    Path((name, id)): Path<(String, String)>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    let f = form(&bytes);
    let (summary, content) = (field(&f, "summary"), field(&f, "content"));
    let c = Correction { summary: summary.clone(), content: content.clone(), memory_type: None, tags: None };
    let (st, n, i, base) = (state.clone(), name.clone(), id.clone(), optional(&f, "base"));
    let out = blocking(move || super::api::correct_memory(&st, &n, &i, base.as_deref(), c)).await;
    written(state, &headers, &name, out, Some((&summary, &content))).await
}

/// `POST /p/<pack>/memory/<id>/delete`.
pub(crate) async fn memory_delete(
    State(state): State<Arc<UiState>>,
    Path((name, id)): Path<(String, String)>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    let f = form(&bytes);
    let (st, n, base) = (state.clone(), name.clone(), optional(&f, "base"));
    let out = blocking(move || super::api::delete_memory(&st, &n, &id, base.as_deref())).await;
    written(state, &headers, &name, out, None).await
}

/// The answer to a correction or deletion: back to the list, or the 409 page.
async fn written(
    state: Arc<UiState>,
    headers: &HeaderMap,
    name: &str,
    out: Result<crate::ops::WriteOutcome, Failure>,
    draft: Option<(&str, &str)>,
) -> Response {
    let cx = Ctx::new(headers, None);
    let l = cx.lang;
    let back = format!("/p/{}/memory", url(name));
    let f = match out {
        Ok(o) => {
            return see_other(&format!("{back}?done={}", url(o.commit.as_deref().map(short).unwrap_or("-"))));
        }
        Err(f) => f,
    };
    let Failure::Engram(EngramError::Stale { current, .. }) = &f else { return cx.failure(&f, &back) };
    let n = name.to_owned();
    let head = blocking(move || Ok(state.engram.head_commit(&n)?)).await.ok().flatten().unwrap_or_default();
    let mut body = format!(
        "<h1>{}</h1><p role=\"alert\" class=\"error\" id=\"stale\">{}</p>",
        l.t("stale_title"),
        l.t("stale_text")
    );
    match current {
        Some(m) => body.push_str(&memory_html(l, name, Some(&head), m, draft)),
        None => body.push_str(&format!("<p>{}</p>", l.t("stale_gone"))),
    }
    body.push_str(&format!("<p><a href=\"{}\">{}</a></p>", esc(&back), l.t("back")));
    cx.html(StatusCode::CONFLICT, page(l, l.t("stale_title"), Some(name), &back, &body))
}

/// `GET /p/<pack>/history`.
pub(crate) async fn history(
    State(state): State<Arc<UiState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    let cx = Ctx::new(&headers, q.as_deref());
    let l = cx.lang;
    let page_no = cx.get("page").and_then(|p| p.parse::<usize>().ok()).unwrap_or(1).clamp(1, 16);
    let n = name.clone();
    let read = blocking(move || super::api::history_entries(&state, &n, page_no * HISTORY_PAGE + 1)).await;
    let commits = match read {
        Ok(c) => c,
        Err(f) => return cx.failure(&f, "/"),
    };
    let u = url(&name);
    let here = format!("/p/{u}/history");
    let mut body = format!("<h1>{} · {}</h1>\n", esc(&name), l.t("history"));
    body.push_str(&format!(
        "<form method=\"post\" action=\"/p/{u}/undo\" class=\"undo\"><label for=\"undo-n\">{}: {}</label>\
<input id=\"undo-n\" name=\"n\" type=\"number\" min=\"1\" max=\"100\" value=\"1\"><button type=\"submit\">{}</button></form>\n",
        l.t("undo_last"),
        l.t("how_many"),
        l.t("undo_last")
    ));
    if let Some(done) = cx.get("done") {
        body.push_str(&format!(
            "<p role=\"status\" id=\"status\">{} · {} <code>{}</code></p>",
            l.t("done"),
            l.t("commit"),
            esc(done)
        ));
    }
    for c in commits.iter().skip((page_no - 1) * HISTORY_PAGE).take(HISTORY_PAGE) {
        let id = c["id"].as_str().unwrap_or_default();
        let when = chrono::DateTime::from_timestamp(c["time"].as_i64().unwrap_or_default(), 0)
            .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
            .unwrap_or_default();
        body.push_str(&format!(
            "<article class=\"commit\" data-commit=\"{id}\"><div class=\"meta\"><code>{s}</code> · <time>{when}</time> · {lt} {tool} · {lc} {client}</div>\
<h3 class=\"subject\">{subject}</h3><pre class=\"diff\">{changes}</pre>\
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
        ));
    }
    if commits.len() > page_no * HISTORY_PAGE {
        body.push_str(&format!(
            "<nav aria-label=\"{}\" class=\"pages\"><a rel=\"next\" href=\"{here}?page={}\">{}</a></nav>",
            l.t("page_nav"),
            page_no + 1,
            l.t("next")
        ));
    }
    cx.html(StatusCode::OK, page(l, l.t("history"), Some(&name), &here, &body))
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
