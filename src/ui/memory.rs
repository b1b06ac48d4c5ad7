//! `/p/<pack>/memory`: the memories of a commit, newest first (best first for a text filter),
//! 50 a page; one search box (the search engine) and the other filters folded until asked for
//! (category, type, tags, time range, expired and archived entries); likely duplicates marked,
//! each offering a merge with the entry it repeats (one `consolidate` commit); each memory's
//! history, opened in its card; its menu (correct, delete); several ticked and deleted in one
//! commit; add; consolidate a category. Every form works without JavaScript; every write is the
//! MCP tool's operation, one commit by client `web-ui`.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::api::Correction;
use super::filter::{Filter, Listing, MAX_HITS, Shown};
use super::html::{Lang, esc, page, url};
use super::pages::{Ctx, field, form, optional, see_other, short};
use super::{Failure, UiState, blocking};
use crate::ops::{CaptureRequest, EngramError, MemoryItem, MemoryRef, PastItem};

/// Memories on one page of the list.
const PAGE_SIZE: usize = 50;
/// A category's text is offered in the consolidate form up to this many entries.
const CONSOLIDATE_PREFILL: usize = 60;

/// One memory: its text, its marks and its menu (the forms to correct and delete it when
/// `base` is given — the page shows HEAD —, and its history).
pub(crate) fn memory_html(
    l: Lang,
    pack: &str,
    base: Option<&str>,
    m: &MemoryItem,
    draft: Option<(&str, &str)>,
    duplicate_of: Option<&MemoryItem>,
    expired: bool,
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
        .map(|e| {
            let class = if expired { "badge expired" } else { "muted" };
            let word = if expired { l.t("expired") } else { l.t("expires") };
            format!(" <span class=\"{class}\">{word} {}</span>", esc(e))
        })
        .unwrap_or_default();
    let dup = duplicate_of
        .map(|d| {
            format!(
                " <a class=\"badge dup\" href=\"#m-{}\" title=\"{}\">{}</a>",
                esc(&d.id),
                esc(&d.summary),
                l.t("likely_duplicate")
            )
        })
        .unwrap_or_default();
    let (summary, content) = draft.unwrap_or((&m.summary, &m.content));
    // Ticked, it joins the list's "delete the selected" form (`#bulk`, outside the article).
    let pick = match base {
        Some(_) => format!(
            "<label class=\"pick\"><input type=\"checkbox\" name=\"id\" value=\"{id}\" form=\"bulk\"><span class=\"visually-hidden\">{sel}: {sum}</span></label>",
            sel = l.t("select"),
            sum = esc(&m.summary),
        ),
        None => String::new(),
    };
    // Beside the mark, outside the menu: the likely duplicate merged with the entry it repeats.
    let merge = match (base, duplicate_of) {
        (Some(base), Some(d)) => merge_form(l, pack, base, d, m),
        _ => String::new(),
    };
    let mut out = format!(
        "<article class=\"memory\" id=\"m-{id}\" data-id=\"{id}\">\
<div class=\"meta\">{pick}<time>{ts}</time> · <span class=\"cat\">{cat}</span> · <span class=\"type\">{ty}</span>{tags}{expires}{dup}</div>\
<h3 class=\"summary\">{sum}</h3><div class=\"content text\">{text}</div>{merge}\
<details class=\"history\" data-src=\"/p/{u}/history?memory={id}&amp;part=1\"><summary aria-label=\"{hist}: {sum}\">{lh}</summary>\
<div class=\"commits\"><a class=\"memory-history\" href=\"/p/{u}/history?memory={id}\">{hist}</a></div></details>\
<details class=\"menu\"{open}><summary aria-label=\"{menu}: {sum}\">{menu}</summary>",
        lh = l.t("history"),
        ts = esc(&m.ts),
        cat = esc(&m.category),
        ty = esc(&m.memory_type),
        sum = esc(&m.summary),
        text = esc(&m.content),
        open = if draft.is_some() { " open" } else { "" },
        menu = l.t("menu"),
        hist = l.t("memory_history"),
    );
    if let Some(base) = base {
        out.push_str(&format!(
            "<form method=\"post\" action=\"/p/{u}/memory/{id}/edit\" class=\"edit\">\
<input type=\"hidden\" name=\"base\" value=\"{base}\">\
<label for=\"s-{id}\">{ls}</label><input id=\"s-{id}\" name=\"summary\" value=\"{fs}\" required>\
<label for=\"c-{id}\">{lc}</label><textarea id=\"c-{id}\" name=\"content\" rows=\"4\" required>{fc}</textarea>\
<button type=\"submit\" class=\"save\">{save}</button></form></details>\
<form method=\"post\" action=\"/p/{u}/memory/{id}/delete\" class=\"delete\">\
<input type=\"hidden\" name=\"base\" value=\"{base}\">\
<button type=\"submit\" class=\"danger\" aria-label=\"{del}: {sum}\">{del}</button></form></article>\n",
            sum = esc(&m.summary),
            base = esc(base),
            ls = l.t("summary"),
            lc = l.t("content"),
            fs = esc(summary),
            fc = esc(content),
            save = l.t("save"),
            del = l.t("delete"),
        ));
        return out;
    }
    out.push_str("</details></article>\n");
    out
}

/// The form that merges a likely duplicate `m` with the `earlier` entry it repeats: one
/// `consolidate` commit, the merged text shown and editable first.
fn merge_form(l: Lang, pack: &str, base: &str, earlier: &MemoryItem, m: &MemoryItem) -> String {
    let id = esc(&m.id);
    format!(
        "<details class=\"merge\"><summary>{title}</summary>\
<form method=\"post\" action=\"/p/{u}/memory/merge\" class=\"merge\"><p class=\"muted\">{help}</p>\
<input type=\"hidden\" name=\"base\" value=\"{base}\">\
<input type=\"hidden\" name=\"id\" value=\"{first}\"><input type=\"hidden\" name=\"id\" value=\"{id}\">\
<label for=\"ms-{id}\">{ls}</label><input id=\"ms-{id}\" name=\"summary\" value=\"{sum}\" required>\
<label for=\"mc-{id}\">{lc}</label><textarea id=\"mc-{id}\" name=\"content\" rows=\"5\" required>{text}</textarea>\
<button type=\"submit\">{merge}</button></form></details>",
        title = l.t("merge_these"),
        u = url(pack),
        help = l.t("merge_help"),
        base = esc(base),
        first = esc(&earlier.id),
        ls = l.t("summary"),
        sum = esc(&earlier.summary),
        lc = l.t("content"),
        text = esc(&merged_text(&earlier.content, &m.content)),
        merge = l.t("merge"),
    )
}

/// What a merge of two likely duplicates offers: the earlier text, and the later one after it
/// when it says more than the same words.
fn merged_text(earlier: &str, later: &str) -> String {
    let (a, b) = (earlier.trim(), later.trim());
    if crate::ops::fold_for_duplicates(a).eq(crate::ops::fold_for_duplicates(b)) {
        a.to_owned()
    } else {
        format!("{a}\n\n{b}")
    }
}

/// An archived or expired entry (read only).
fn past_html(l: Lang, p: &PastItem) -> String {
    let word = if p.kind == "archived" { l.t("archived") } else { l.t("expired") };
    format!(
        "<article class=\"memory past\"><div class=\"meta\"><span class=\"badge {kind}\">{word}</span> · <time>{ts}</time> · <span class=\"cat\">{cat}</span> · <span class=\"type\">{ty}</span></div>\
<div class=\"content text\">{text}</div></article>\n",
        kind = esc(p.kind),
        ts = esc(p.ts.as_deref().unwrap_or("—")),
        cat = esc(&p.category),
        ty = esc(p.memory_type.as_deref().unwrap_or("—")),
        text = esc(&p.content),
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
    let (n, c) = (name.clone(), cx.clone());
    let read = blocking(move || {
        let at = c.get("at").map(str::to_owned);
        let (head, listing) = state.memories(&n, at.as_deref())?;
        let head = head.unwrap_or_default();
        let filter = Filter::from_pairs(&c.pairs);
        let shown =
            filter.apply(&state, &n, Some(&head).filter(|h| !h.is_empty()).map(String::as_str), &listing)?;
        let today = state.engram.now().format("%Y-%m-%d").to_string();
        Ok(memory_list(&c, &n, &head, &listing, &filter, &shown, at.is_none(), &today))
    })
    .await;
    let here = format!("/p/{}/memory", url(&name));
    match read {
        Ok(body) => cx.html(StatusCode::OK, page(cx.lang, cx.lang.t("memories"), Some(&name), &here, &body)),
        Err(f) => cx.failure(&f, &here),
    }
}

/// `<option>`s of `all`, `chosen` selected, with an "all" first.
fn options(l: Lang, all: &[(String, usize)], chosen: Option<&str>) -> String {
    let mut s = format!("<option value=\"\">{}</option>", l.t("all"));
    for (v, n) in all {
        let sel = if chosen == Some(v.as_str()) { " selected" } else { "" };
        s.push_str(&format!("<option value=\"{v}\"{sel}>{v} ({n})</option>", v = esc(v)));
    }
    s
}

/// The memory list; `editable` when it shows HEAD (else a read-only view of a past commit).
#[allow(clippy::too_many_arguments)]
fn memory_list(
    cx: &Ctx,
    name: &str,
    head: &str,
    listing: &Listing,
    filter: &Filter,
    shown: &Shown<'_>,
    editable: bool,
    today: &str,
) -> String {
    let l = cx.lang;
    let u = url(name);
    let pages = shown.items.len().div_ceil(PAGE_SIZE).max(1);
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
    let cats = listing.by_category();
    let types = listing.by_type();
    let v = |o: &Option<String>| esc(o.as_deref().unwrap_or_default());
    body.push_str(&format!(
        "<form method=\"get\" class=\"filter\" role=\"search\">\
<label for=\"q\">{ls}</label><div class=\"searchbox\"><input id=\"q\" name=\"q\" type=\"search\" value=\"{q}\" placeholder=\"{lsh}\">\
<button type=\"submit\">{lf}</button></div>\
<details class=\"filters\"{folded}><summary>{more}</summary><div class=\"fields\">\
<label for=\"category\">{lc}</label><select id=\"category\" name=\"category\">{co}</select>\
<label for=\"type\">{lt}</label><select id=\"type\" name=\"type\">{to}</select>\
<label for=\"f-tags\">{lg}</label><input id=\"f-tags\" name=\"tags\" value=\"{tags}\">\
<label for=\"from\">{lfrom}</label><input id=\"from\" name=\"from\" type=\"date\" value=\"{from}\">\
<label for=\"to\">{lto}</label><input id=\"to\" name=\"to\" type=\"date\" value=\"{tov}\">\
<label class=\"check\"><input type=\"checkbox\" id=\"old\" name=\"old\" value=\"1\"{old}> {lold}</label>{at}\
<button type=\"submit\">{lf}</button></div></details></form>\n",
        // Folded until asked for, or until one of them is set.
        folded = if filter.category.is_some()
            || filter.memory_type.is_some()
            || !filter.tags.is_empty()
            || filter.from.is_some()
            || filter.to.is_some()
            || filter.old
        {
            " open"
        } else {
            ""
        },
        more = l.t("more_filters"),
        at = if editable {
            String::new()
        } else {
            format!("<input type=\"hidden\" name=\"at\" value=\"{}\">", esc(head))
        },
        ls = l.t("search"),
        lsh = l.t("search_hint"),
        q = v(&filter.q),
        lc = l.t("category"),
        co = options(l, cats, filter.category.as_deref()),
        lt = l.t("type"),
        to = options(l, types, filter.memory_type.as_deref()),
        lg = l.t("tags"),
        tags = esc(&filter.tags.join(", ")),
        lfrom = l.t("from"),
        from = v(&filter.from),
        lto = l.t("to"),
        tov = v(&filter.to),
        old = if filter.old { " checked" } else { "" },
        lold = l.t("show_old"),
        lf = l.t("filter"),
    ));
    if !editable {
        body.push_str(&format!(
            "<p role=\"note\" class=\"note\" id=\"as-of\">{} <code>{}</code> — <a href=\"/p/{u}/memory\">{}</a></p>\n",
            l.t("read_only_view"),
            esc(short(head)),
            l.t("to_current")
        ));
    } else {
        body.push_str(&add_form(l, name, filter.category.as_deref()));
        if let Some(c) = filter.category.as_deref() {
            body.push_str(&consolidate_form(l, name, head, c, listing));
        }
    }
    let ranked = if filter.q.is_some() { format!(" · {}", l.t("ranked")) } else { String::new() };
    let capped = if shown.capped { format!(" · {} {MAX_HITS}", l.t("capped")) } else { String::new() };
    body.push_str(&format!(
        "<p class=\"muted\" id=\"count\">{} {}{ranked}{capped} · {} <code>{}</code></p>\n",
        shown.items.len(),
        l.t("shown"),
        l.t("as_of"),
        esc(short(head))
    ));
    if shown.items.is_empty() {
        body.push_str(&format!("<p>{}</p>", l.t("no_memories")));
    } else if editable {
        // The memories' checkboxes belong to this form (`form="bulk"`): one commit for all.
        body.push_str(&format!(
            "<form method=\"post\" action=\"/p/{u}/memory/delete\" id=\"bulk\" class=\"bulk\">\
<input type=\"hidden\" name=\"base\" value=\"{}\"><button type=\"submit\" class=\"danger\">{}</button></form>\n",
            esc(head),
            l.t("delete_selected")
        ));
    }
    for &i in shown.items.iter().skip((page_no - 1) * PAGE_SIZE).take(PAGE_SIZE) {
        let Some(m) = listing.item(i) else { continue };
        let expired = m.expires.as_deref().is_some_and(|e| e < today);
        let duplicate_of = listing.duplicate_of(i).and_then(|first| listing.item(first));
        body.push_str(&memory_html(
            l,
            name,
            editable.then_some(head),
            &m,
            None,
            duplicate_of.as_ref(),
            expired,
        ));
    }
    if pages > 1 {
        body.push_str(&page_nav(cx, l, &u, page_no, pages));
    }
    if filter.old {
        body.push_str(&format!(
            "<section class=\"past\" id=\"past\"><h2>{} ({})</h2>\n",
            l.t("past_entries"),
            shown.past.len()
        ));
        for p in shown.past.iter().take(PAGE_SIZE * 4) {
            body.push_str(&past_html(l, p));
        }
        body.push_str("</section>\n");
    }
    body
}

fn page_nav(cx: &Ctx, l: Lang, u: &str, page_no: usize, pages: usize) -> String {
    let link = |p: usize| {
        let mut pairs: Vec<(String, String)> =
            cx.pairs.iter().filter(|(k, _)| k != "page" && k != "done" && k != "lang").cloned().collect();
        pairs.push(("page".into(), p.to_string()));
        let q: Vec<String> = pairs.iter().map(|(k, v)| format!("{}={}", url(k), url(v))).collect();
        format!("/p/{u}/memory?{}", q.join("&"))
    };
    let mut out = format!("<nav aria-label=\"{}\" class=\"pages\">", l.t("page_nav"));
    if page_no > 1 {
        out.push_str(&format!(
            "<a rel=\"prev\" href=\"{}\">{}</a> ",
            esc(&link(page_no - 1)),
            l.t("previous")
        ));
    }
    out.push_str(&format!("<span>{page_no} / {pages}</span>"));
    if page_no < pages {
        out.push_str(&format!(" <a rel=\"next\" href=\"{}\">{}</a>", esc(&link(page_no + 1)), l.t("next")));
    }
    out.push_str("</nav>");
    out
}

fn add_form(l: Lang, name: &str, category: Option<&str>) -> String {
    format!(
        "<details class=\"add\"><summary>{add}</summary><form method=\"post\" action=\"/p/{u}/memory\" id=\"add\">\
<label for=\"add-category\">{lc}</label><input id=\"add-category\" name=\"category\" value=\"{cat}\" required>\
<label for=\"add-summary\">{ls}</label><input id=\"add-summary\" name=\"summary\" required>\
<label for=\"add-content\">{lt}</label><textarea id=\"add-content\" name=\"content\" rows=\"4\" required></textarea>\
<label for=\"add-type\">{ly}</label><input id=\"add-type\" name=\"type\" placeholder=\"fact, preference, decision…\">\
<label for=\"add-tags\">{lg}</label><input id=\"add-tags\" name=\"tags\">\
<label for=\"add-expires\">{le}</label><input id=\"add-expires\" name=\"expires\" type=\"date\">\
<button type=\"submit\">{add}</button></form></details>\n",
        u = url(name),
        add = l.t("add"),
        lc = l.t("category"),
        cat = esc(category.unwrap_or("general")),
        ls = l.t("summary"),
        lt = l.t("content"),
        ly = l.t("type"),
        lg = l.t("tags"),
        le = l.t("expires"),
    )
}

/// The form that consolidates a category (`consolidate_memory`): its entries become one, the
/// originals go to `<category>-archive.md`.
fn consolidate_form(l: Lang, name: &str, head: &str, category: &str, listing: &Listing) -> String {
    let of_cat: Vec<MemoryRef<'_>> = listing.list.iter().filter(|i| i.category == category).collect();
    if of_cat.len() < 2 {
        return String::new();
    }
    let prefill = if of_cat.len() <= CONSOLIDATE_PREFILL {
        of_cat.iter().map(|i| format!("- {}", i.content.trim())).collect::<Vec<_>>().join("\n")
    } else {
        String::new()
    };
    format!(
        "<details class=\"consolidate\"><summary>{title} ({n})</summary>\
<form method=\"post\" action=\"/p/{u}/consolidate\" id=\"consolidate\">\
<p class=\"muted\">{help}</p>\
<input type=\"hidden\" name=\"base\" value=\"{base}\"><input type=\"hidden\" name=\"category\" value=\"{cat}\">\
<label for=\"cons-summary\">{ls}</label><input id=\"cons-summary\" name=\"summary\" required>\
<label for=\"cons-content\">{lc}</label><textarea id=\"cons-content\" name=\"content\" rows=\"8\" required>{pre}</textarea>\
<button type=\"submit\">{title}</button></form></details>\n",
        title = l.t("consolidate"),
        n = of_cat.len(),
        u = url(name),
        help = l.t("consolidate_help"),
        base = esc(head),
        cat = esc(category),
        ls = l.t("summary"),
        lc = l.t("content"),
        pre = esc(&prefill),
    )
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
            expires: optional(&f, "expires"),
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
    let out = blocking(move || super::api::delete_memory(&st, &n, &[id], base.as_deref())).await;
    written(state, &headers, &name, out, None).await
}

/// `POST /p/<pack>/memory/delete` (`base`, `id` once per memory): deletes them all in one
/// commit, or none when one changed since `base` (409).
pub(crate) async fn memory_delete_many(
    State(state): State<Arc<UiState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    let f = form(&bytes);
    let ids: Vec<String> = f.iter().filter(|(k, _)| k == "id").map(|(_, v)| v.clone()).collect();
    let (st, n, base) = (state.clone(), name.clone(), optional(&f, "base"));
    let out = blocking(move || super::api::delete_memory(&st, &n, &ids, base.as_deref())).await;
    written(state, &headers, &name, out, None).await
}

/// `POST /p/<pack>/memory/merge` (`base`, `id` twice, `summary`, `content`): the memories
/// become one, as `consolidate_memory` does, in one commit — or nothing when one of them
/// changed since `base` (409).
pub(crate) async fn memory_merge(
    State(state): State<Arc<UiState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    let f = form(&bytes);
    let ids: Vec<String> = f.iter().filter(|(k, _)| k == "id").map(|(_, v)| v.clone()).collect();
    let (st, n, base) = (state.clone(), name.clone(), optional(&f, "base"));
    let (summary, content) = (field(&f, "summary"), field(&f, "content"));
    let out =
        blocking(move || super::api::merge_memories(&st, &n, &ids, base.as_deref(), &summary, &content))
            .await;
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
        Some(m) => body.push_str(&memory_html(l, name, Some(&head), m, draft, None, false)),
        None => body.push_str(&format!("<p>{}</p>", l.t("stale_gone"))),
    }
    body.push_str(&format!("<p><a href=\"{}\">{}</a></p>", esc(&back), l.t("back")));
    cx.html(StatusCode::CONFLICT, page(l, l.t("stale_title"), Some(name), &back, &body))
}

/// `POST /p/<pack>/consolidate` (`base`, `category`, `summary`, `content`): `consolidate_memory`,
/// one commit — refused (409) when the category's entries changed since the page's `base`.
pub(crate) async fn consolidate(
    State(state): State<Arc<UiState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    let cx = Ctx::new(&headers, None);
    let f = form(&bytes);
    let n = name.clone();
    let category = field(&f, "category");
    let back = format!("/p/{}/memory?category={}", url(&name), url(&category));
    let out = blocking(move || {
        let Some(base) = optional(&f, "base") else {
            return Err(Failure::bad_request("`base` is required"));
        };
        let of = |listing: &Listing| -> Vec<MemoryItem> {
            listing.list.iter().filter(|i| i.category == category).map(|i| i.to_item()).collect()
        };
        let (_, at_base) = state.memories(&n, Some(&base))?;
        let (_, now) = state.memories(&n, None)?;
        if of(&at_base) != of(&now) {
            return Err(Failure::Status(
                StatusCode::CONFLICT,
                "the category changed after this page was opened; nothing was written — reload and consolidate again"
                    .into(),
            ));
        }
        state.engram.consolidate_memory(
            &n,
            &category,
            &field(&f, "content"),
            &field(&f, "summary"),
            &UiState::caller("consolidate_memory"),
        )?;
        Ok(state.engram.head_commit(&n)?)
    })
    .await;
    match out {
        Ok(commit) => see_other(&format!("{back}&done={}", url(commit.as_deref().map(short).unwrap_or("-")))),
        Err(f) => cx.failure(&f, &back),
    }
}
