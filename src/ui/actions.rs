//! The page's other actions: "undo the last n" on the history page (`undo_last`).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::html::url;
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
