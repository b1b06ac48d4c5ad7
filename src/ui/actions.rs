//! The page's other actions: "undo the last n" on the history page, and `/sync` (each pack's
//! remote, ahead/behind, last result and conflicts, with a Sync button) — the `undo_last`,
//! `sync_status` and `engram sync` operations.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::html::{esc, page, url};
use super::pages::Ctx;
use super::{Failure, UiState, blocking};

fn see_other(to: &str) -> Response {
    (StatusCode::SEE_OTHER, [(header::LOCATION, to.to_owned())]).into_response()
}

fn form_field(bytes: &[u8], key: &str) -> String {
    form_urlencoded::parse(bytes).find(|(k, _)| k == key).map(|(_, v)| v.into_owned()).unwrap_or_default()
}

/// `POST /p/<pack>/undo` (`n`): `undo_last`, one commit.
pub(crate) async fn undo(
    State(state): State<Arc<UiState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    let cx = Ctx::new(&headers, None);
    let back = format!("/p/{}/history", url(&name));
    let Ok(n) = form_field(&bytes, "n").trim().parse::<usize>() else {
        return cx.failure(&Failure::bad_request("`n` must be a number from 1 to 100"), &back);
    };
    let pack = name.clone();
    let out = blocking(move || {
        let before = state.engram.head_commit(&pack)?;
        state.engram.undo_last(&pack, n, None, &UiState::caller("undo_last"))?;
        let after = state.engram.head_commit(&pack)?;
        Ok(after.filter(|a| Some(a) != before.as_ref()))
    })
    .await;
    match out {
        Ok(commit) => {
            let done = commit.as_deref().map(|c| c.get(..7).unwrap_or(c)).unwrap_or("-").to_owned();
            see_other(&format!("{back}?done={}", url(&done)))
        }
        Err(f) => cx.failure(&f, &back),
    }
}

/// `GET /sync`.
pub(crate) async fn sync_page(
    State(state): State<Arc<UiState>>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    let cx = Ctx::new(&headers, q.as_deref());
    let l = cx.lang;
    let read = blocking(move || {
        Ok(state
            .engram
            .packs()
            .list()
            .into_iter()
            .map(|p| {
                let status = state.engram.has_remote(&p.name).then(|| state.engram.sync_status(&p.name));
                (p.name, status)
            })
            .collect::<Vec<_>>())
    })
    .await;
    let packs = match read {
        Ok(p) => p,
        Err(f) => return cx.failure(&f, "/"),
    };
    let mut body = format!("<h1>{}</h1>\n", l.t("sync"));
    if let Some(report) = cx.get("report") {
        body.push_str(&format!("<pre role=\"status\" id=\"status\" class=\"diff\">{}</pre>", esc(report)));
    }
    for (name, status) in packs {
        body.push_str(&format!("<section class=\"sync\"><h2>{}</h2>", esc(&name)));
        match status {
            None => body.push_str(&format!("<p class=\"muted\">{}</p>", esc(l.t("no_remote")))),
            Some(Err(e)) => body.push_str(&format!("<p class=\"error\">{}</p>", esc(&e.to_string()))),
            Some(Ok(text)) => body.push_str(&format!(
                "<pre class=\"diff\">{}</pre><form method=\"post\" action=\"/sync/{}\"><button type=\"submit\">{}</button></form>",
                esc(&text),
                url(&name),
                l.t("sync_now")
            )),
        }
        body.push_str("</section>\n");
    }
    cx.html(StatusCode::OK, page(l, l.t("sync"), None, "/sync", &body))
}

/// `POST /sync/<pack>`: `engram sync <pack>` (fetch, memory-aware merge, push; never forced).
pub(crate) async fn sync_now(
    State(state): State<Arc<UiState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response {
    let cx = Ctx::new(&headers, None);
    let out = blocking(move || Ok(state.engram.sync_pack(&name, &UiState::caller("sync"))?.render())).await;
    match out {
        Ok(report) => see_other(&format!("/sync?report={}", url(&report))),
        Err(f) => cx.failure(&f, "/sync"),
    }
}
