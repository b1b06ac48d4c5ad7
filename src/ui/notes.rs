//! `/notes`: the notes toolset's categories (create, describe, delete when empty) and notes
//! (title, body, importance) — the settings page of the AICowork design. Reads and writes are
//! the notes tools' operations (`ops/notes.rs`: `list_categories`, `create_category`, `store`,
//! `recall`, `forget`), on the same pack (`--notes-pack`), one commit each by client `web-ui`.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::html::{Lang, esc, page, url};
use super::pages::{Ctx, field, form, optional, see_other, short};
use super::{Failure, UiState, blocking};
use crate::ops::{Category, Note, NotesError, StoreNote};

impl From<NotesError> for Failure {
    fn from(e: NotesError) -> Self {
        use axum::http::StatusCode as S;
        match e {
            NotesError::Engram(e) => Failure::Engram(e),
            e @ NotesError::NotFound { .. } => Failure::Status(S::NOT_FOUND, e.to_string()),
            e @ NotesError::UnknownCategory { .. } => Failure::Status(S::BAD_REQUEST, e.to_string()),
            e @ NotesError::Ambiguous { .. } => Failure::Status(S::UNPROCESSABLE_ENTITY, e.to_string()),
        }
    }
}

/// Notes the page lists at most (the `recall` tool's limit).
const MAX_NOTES: i64 = 100;

/// `GET /notes?category=&q=`: the categories, and the notes `recall` finds (all, newest first,
/// without `q`).
pub(crate) async fn page_get(
    State(state): State<Arc<UiState>>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    let cx = Ctx::new(&headers, q.as_deref());
    let c = cx.clone();
    let read = blocking(move || {
        let notes = state.engram.notes(&state.notes_pack);
        let categories = notes.list_categories()?;
        let shown = notes.recall(c.get("q"), c.get("category"), Some(MAX_NOTES))?;
        Ok((state.notes_pack.clone(), categories, shown))
    })
    .await;
    match read {
        Ok((pack, categories, shown)) => {
            let body = render(&cx, &pack, &categories, &shown);
            cx.html(StatusCode::OK, page(cx.lang, cx.lang.t("notes"), None, "/notes", &body))
        }
        Err(f) => cx.failure(&f, "/"),
    }
}

fn importance_options(l: Lang, chosen: u8) -> String {
    (1..=5)
        .map(|i| {
            let sel = if i == chosen { " selected" } else { "" };
            let word = match i {
                1 => l.t("imp_1"),
                5 => l.t("imp_5"),
                _ => "",
            };
            let word = if word.is_empty() { String::new() } else { format!(" — {word}") };
            format!("<option value=\"{i}\"{sel}>{i}{word}</option>")
        })
        .collect()
}

fn render(cx: &Ctx, pack: &str, categories: &[Category], notes: &[Note]) -> String {
    let l = cx.lang;
    let chosen = cx.get("category");
    let mut body = format!(
        "<h1>{}</h1><p class=\"muted\">{} <a href=\"/p/{}\"><code>{}</code></a></p>\n",
        l.t("notes"),
        l.t("notes_help"),
        url(pack),
        esc(pack)
    );
    if let Some(done) = cx.get("done") {
        body.push_str(&format!(
            "<p role=\"status\" id=\"status\">{} · {} <code>{}</code></p>",
            l.t("done"),
            l.t("commit"),
            esc(done)
        ));
    }
    body.push_str(&format!(
        "<section id=\"categories\"><h2>{}</h2><table class=\"packs\"><thead><tr><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\"></th></tr></thead><tbody>\n",
        l.t("categories"),
        l.t("category"),
        l.t("description"),
        l.t("notes")
    ));
    for c in categories {
        let delete = if c.notes == 0 && c.name != crate::ops::DEFAULT_CATEGORY {
            format!(
                "<form method=\"post\" action=\"/notes/category/delete\" class=\"inline\"><input type=\"hidden\" name=\"name\" value=\"{n}\"><button type=\"submit\" class=\"danger\" aria-label=\"{d}: {n}\">{d}</button></form>",
                n = esc(&c.name),
                d = l.t("delete")
            )
        } else {
            String::new()
        };
        body.push_str(&format!(
            "<tr data-category=\"{n}\"><td><a href=\"/notes?category={u}\">{n}</a></td><td>\
<form method=\"post\" action=\"/notes/category\" class=\"inline describe\"><input type=\"hidden\" name=\"name\" value=\"{n}\">\
<label class=\"visually-hidden\" for=\"desc-{n}\">{ld}: {n}</label><input id=\"desc-{n}\" name=\"description\" value=\"{d}\">\
<button type=\"submit\">{save}</button></form></td><td data-label=\"{ln}\">{count}</td><td>{delete}</td></tr>\n",
            ln = l.t("notes"),
            n = esc(&c.name),
            u = url(&c.name),
            ld = l.t("description"),
            d = esc(&c.description),
            save = l.t("describe"),
            count = c.notes,
        ));
    }
    body.push_str(&format!(
        "</tbody></table><details id=\"new-category\"><summary>{t}</summary><form method=\"post\" action=\"/notes/category\">\
<label for=\"cat-name\">{ln}</label><input id=\"cat-name\" name=\"name\" required>\
<label for=\"cat-desc\">{ld}</label><input id=\"cat-desc\" name=\"description\">\
<button type=\"submit\">{t}</button></form></details></section>\n",
        t = l.t("new_category"),
        ln = l.t("category"),
        ld = l.t("description"),
    ));
    let cat_options: String = categories
        .iter()
        .map(|c| {
            let sel = if Some(c.name.as_str()) == chosen { " selected" } else { "" };
            format!("<option value=\"{n}\"{sel}>{n}</option>", n = esc(&c.name))
        })
        .collect();
    body.push_str(&format!(
        "<section id=\"notes\"><h2>{h}</h2>\
<form method=\"get\" class=\"filter\" role=\"search\"><label for=\"q\">{ls}</label><input id=\"q\" name=\"q\" type=\"search\" value=\"{q}\">\
<label for=\"category\">{lc}</label><select id=\"category\" name=\"category\"><option value=\"\">{all}</option>{co}</select>\
<button type=\"submit\">{lf}</button></form>\
<details class=\"add\"><summary>{add}</summary><form method=\"post\" action=\"/notes/note\" id=\"add-note\">\
<label for=\"note-category\">{lc}</label><select id=\"note-category\" name=\"category\">{co}</select>\
<label for=\"note-title\">{lt}</label><input id=\"note-title\" name=\"title\">\
<label for=\"note-importance\">{li}</label><select id=\"note-importance\" name=\"importance\">{imp}</select>\
<label for=\"note-content\">{lb}</label><textarea id=\"note-content\" name=\"content\" rows=\"5\" required></textarea>\
<button type=\"submit\">{add}</button></form></details>\n",
        h = l.t("notes"),
        ls = l.t("search"),
        q = esc(cx.get("q").unwrap_or_default()),
        lc = l.t("category"),
        all = l.t("all"),
        co = cat_options,
        lf = l.t("filter"),
        add = l.t("add_note"),
        lt = l.t("title"),
        li = l.t("importance"),
        imp = importance_options(l, crate::ops::DEFAULT_IMPORTANCE),
        lb = l.t("content"),
    ));
    if notes.is_empty() {
        body.push_str(&format!("<p>{}</p>", l.t("no_notes")));
    }
    for n in notes {
        body.push_str(&format!(
            "<article class=\"note memory\" id=\"n-{id}\" data-id=\"{id}\"><div class=\"meta\"><span class=\"cat\">{cat}</span> · {li} <span class=\"importance\">{imp}</span> · <time>{upd}</time> · <code>{path}</code></div>\
<h3 class=\"summary\">{title}</h3><div class=\"content text\">{text}</div>\
<details class=\"menu\"><summary aria-label=\"{edit}: {title}\">{edit}</summary>\
<form method=\"post\" action=\"/notes/note\" class=\"edit\"><input type=\"hidden\" name=\"category\" value=\"{cat}\"><input type=\"hidden\" name=\"title\" value=\"{title}\">\
<label for=\"ni-{id}\">{li}</label><select id=\"ni-{id}\" name=\"importance\">{imps}</select>\
<label for=\"nc-{id}\">{lb}</label><textarea id=\"nc-{id}\" name=\"content\" rows=\"5\" required>{text}</textarea>\
<button type=\"submit\" class=\"save\">{save}</button></form>\
<form method=\"post\" action=\"/notes/note/delete\" class=\"delete\"><input type=\"hidden\" name=\"id\" value=\"{id}\">\
<button type=\"submit\" class=\"danger\" aria-label=\"{del}: {title}\">{del}</button></form></details></article>\n",
            id = esc(&n.id),
            cat = esc(&n.category),
            li = l.t("importance"),
            imp = n.importance,
            upd = esc(&n.updated),
            path = esc(&n.path),
            title = esc(&n.title),
            text = esc(&n.content),
            edit = l.t("edit"),
            imps = importance_options(l, n.importance),
            lb = l.t("content"),
            save = l.t("save"),
            del = l.t("delete"),
        ));
    }
    body.push_str("</section>\n");
    body
}

fn done(commit: Option<&str>, category: Option<&str>) -> Response {
    let mut to = format!("/notes?done={}", url(commit.map(short).unwrap_or("-")));
    if let Some(c) = category {
        to.push_str(&format!("&category={}", url(c)));
    }
    see_other(&to)
}

/// `POST /notes/category` (`name`, `description`): `create_category` (creates or describes).
pub(crate) async fn category(
    State(state): State<Arc<UiState>>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    let cx = Ctx::new(&headers, None);
    let f = form(&bytes);
    let out = blocking(move || {
        let (cat, _, commit) = state.engram.notes(&state.notes_pack).create_category(
            &field(&f, "name"),
            optional(&f, "description").as_deref(),
            &UiState::caller("create_category"),
        )?;
        Ok((cat.name, commit))
    })
    .await;
    match out {
        Ok((name, commit)) => done(commit.as_deref(), Some(&name)),
        Err(f) => cx.failure(&f, "/notes"),
    }
}

/// `POST /notes/category/delete` (`name`): deletes an empty category.
pub(crate) async fn category_delete(
    State(state): State<Arc<UiState>>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    let cx = Ctx::new(&headers, None);
    let f = form(&bytes);
    let out = blocking(move || {
        Ok(state
            .engram
            .notes(&state.notes_pack)
            .delete_category(&field(&f, "name"), &UiState::caller("delete_category"))?)
    })
    .await;
    match out {
        Ok(commit) => done(commit.as_deref(), None),
        Err(f) => cx.failure(&f, "/notes"),
    }
}

/// `POST /notes/note` (`category`, `title`, `importance`, `content`): `store` (a note with the
/// same title in the category is updated).
pub(crate) async fn store(State(state): State<Arc<UiState>>, headers: HeaderMap, bytes: Bytes) -> Response {
    let cx = Ctx::new(&headers, None);
    let f = form(&bytes);
    let out = blocking(move || {
        let importance = match optional(&f, "importance") {
            Some(i) => Some(i.parse::<i64>().map_err(|_| Failure::bad_request("importance is 1 to 5"))?),
            None => None,
        };
        let req = StoreNote {
            content: field(&f, "content").replace("\r\n", "\n"),
            title: optional(&f, "title"),
            category: optional(&f, "category"),
            importance,
        };
        let stored = state.engram.notes(&state.notes_pack).store(&req, &UiState::caller("store"))?;
        Ok((stored.commit, stored.note.category))
    })
    .await;
    match out {
        Ok((commit, category)) => done(commit.as_deref(), Some(&category)),
        Err(f) => cx.failure(&f, "/notes"),
    }
}

/// `POST /notes/note/delete` (`id`): `forget`.
pub(crate) async fn forget(State(state): State<Arc<UiState>>, headers: HeaderMap, bytes: Bytes) -> Response {
    let cx = Ctx::new(&headers, None);
    let f = form(&bytes);
    let out = blocking(move || {
        let (note, commit) = state.engram.notes(&state.notes_pack).forget(
            optional(&f, "id").as_deref(),
            None,
            &UiState::caller("forget"),
        )?;
        Ok((commit, note.category))
    })
    .await;
    match out {
        Ok((commit, category)) => done(commit.as_deref(), Some(&category)),
        Err(f) => cx.failure(&f, "/notes"),
    }
}
