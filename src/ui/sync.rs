//! `/sync`: each pack's sync as a person reads it — the remote (credentials masked), ahead and
//! behind, the last sync as a relative time and a state badge (ok, failed, conflicts, never) —
//! with "sync now", and the conflicts a sync left, each resolved in one commit:
//!
//! - a memory changed differently on two devices (`memory/_conflicts.md`): both versions side by
//!   side, "keep mine" / "keep theirs" / "keep both" (`Engram::resolve_memory_conflict`: the
//!   version not kept deleted as `delete_memory` does, the item removed from the file);
//! - a file's copy `<name>.conflict-<host>.<ext>`: its word diff against the file, "keep this
//!   version" / "discard the copy" (`Engram::resolve_conflict_copy`).
//!
//! A conflict resolved meanwhile (another tab, another device) answers 409 with what happened.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use chrono::{DateTime, Utc};

use super::html::{Lang, esc, page, url};
use super::pages::{Ctx, field, form, see_other, short};
use super::{Failure, UiState, blocking};
use crate::memmerge::ListedConflict;
use crate::ops::{ConflictCopy, KeepVersion, SyncOverview, SyncState};

/// `GET /sync`.
pub(crate) async fn sync_page(
    State(state): State<Arc<UiState>>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    let cx = Ctx::new(&headers, q.as_deref());
    let l = cx.lang;
    let read = blocking(move || {
        let now = state.engram.now();
        let packs = state
            .engram
            .packs()
            .list()
            .into_iter()
            .map(|p| {
                let overview = state.engram.has_remote(&p.name).then(|| state.engram.sync_overview(&p.name));
                (p.name, overview)
            })
            .collect::<Vec<_>>();
        Ok((now, packs))
    })
    .await;
    let (now, packs) = match read {
        Ok(p) => p,
        Err(f) => return cx.failure(&f, "/"),
    };
    let mut body = format!("<h1>{}</h1>\n", l.t("sync"));
    if let Some(done) = cx.get("done") {
        body.push_str(&format!("<p role=\"status\" id=\"status\">{} · {}</p>", l.t("done"), esc(done)));
    }
    if let Some(report) = cx.get("report") {
        body.push_str(&format!("<pre class=\"diff\" id=\"report\">{}</pre>", esc(report)));
    }
    for (name, overview) in packs {
        let u = url(&name);
        body.push_str(&format!(
            "<section class=\"sync\" id=\"sync-{}\" data-pack=\"{}\">",
            esc(&u),
            esc(&name)
        ));
        match overview {
            None => body.push_str(&format!(
                "<h2>{}</h2><p class=\"muted\">{}</p>",
                esc(&name),
                esc(l.t("no_remote"))
            )),
            Some(Err(e)) => body.push_str(&format!(
                "<h2>{}</h2><p class=\"error\">{}</p>",
                esc(&name),
                esc(&Failure::from(e).message())
            )),
            Some(Ok(o)) => body.push_str(&pack_html(l, &name, &o, now)),
        }
        body.push_str("</section>\n");
    }
    cx.html(StatusCode::OK, page(l, l.t("sync"), None, "/sync", &body))
}

/// One pack with a remote: its status line, "sync now", the last report and its conflicts.
fn pack_html(l: Lang, name: &str, o: &SyncOverview, now: DateTime<Utc>) -> String {
    let u = url(name);
    let state = o.state();
    let (class, word) = match state {
        SyncState::Ok => ("ok", l.t("sync_ok")),
        SyncState::Failed => ("failed", l.t("sync_failed")),
        SyncState::Conflicts => ("conflicts", l.t("sync_conflicts")),
        SyncState::Never => ("never", l.t("sync_never")),
    };
    let ahead = match o.ahead_behind {
        Some((a, b)) => format!("{a} {} · {b} {}", l.t("ahead"), l.t("behind")),
        None => l.t("never_fetched").to_owned(),
    };
    let last = match &o.last {
        None => l.t("sync_never").to_owned(),
        Some(last) => match last.time {
            Some(t) => format!(
                "<time datetime=\"{}\" title=\"{}\">{}</time>",
                t.to_rfc3339(),
                t.format("%Y-%m-%d %H:%M UTC"),
                esc(&ago(l, now, t))
            ),
            None => "—".to_owned(),
        },
    };
    let mut s = format!(
        "<h2>{n} <span class=\"badge sync-state {class}\" data-state=\"{class}\">{word}</span></h2>\
<p class=\"sync-line\"><span>{lr} <code>{remote}</code> <code class=\"url\">{url}</code></span> · <span>{lb} <code>{branch}</code></span> · <span class=\"ahead\">{ahead}</span> · <span class=\"last\">{ll} {last}</span></p>\
<form method=\"post\" action=\"/sync/{u}\" class=\"inline\"><button type=\"submit\" class=\"sync-now\">{now}</button></form>",
        n = esc(name),
        lr = l.t("remote"),
        remote = esc(&o.remote),
        url = esc(&o.url),
        lb = l.t("branch"),
        branch = esc(&o.branch),
        ll = l.t("last_sync"),
        now = l.t("sync_now"),
    );
    if let Some(last) = &o.last {
        s.push_str(&format!(
            "<details class=\"report\"><summary>{}</summary><pre class=\"diff\">{}</pre></details>",
            l.t("last_report"),
            esc(&last.report)
        ));
    }
    if !o.memory_conflicts.is_empty() {
        s.push_str(&format!(
            "<h3>{} ({})</h3><p class=\"muted\">{}</p>",
            l.t("memory_conflicts"),
            o.memory_conflicts.len(),
            l.t("memory_conflicts_hint")
        ));
        for c in &o.memory_conflicts {
            s.push_str(&memory_conflict_html(l, &u, c, &o.host));
        }
    }
    if !o.copies.is_empty() {
        s.push_str(&format!("<h3>{} ({})</h3>", l.t("file_conflicts"), o.copies.len()));
        for c in &o.copies {
            s.push_str(&copy_html(l, &u, c));
        }
    }
    s
}

/// A memory conflict: the two versions side by side (this device's first) and the three
/// choices.
fn memory_conflict_html(l: Lang, u: &str, c: &ListedConflict, host: &str) -> String {
    let side = |class: &str, label: &str, versions: &[String]| -> String {
        let texts = if versions.is_empty() {
            format!("<p class=\"muted\">{}</p>", l.t("deleted_there"))
        } else {
            versions.iter().map(|v| format!("<p class=\"text\">{}</p>", esc(v))).collect()
        };
        format!("<div class=\"version {class}\"><h4>{}</h4>{texts}</div>", esc(label))
    };
    // The file says "ours" for the device that merged: on another device, its own is the remote's.
    let (mine, theirs) = if c.host.is_empty() || c.host == host {
        (c.ours.as_slice(), (c.theirs_label.as_str(), c.theirs.as_slice()))
    } else {
        (c.theirs.as_slice(), (c.host.as_str(), c.ours.as_slice()))
    };
    format!(
        "<article class=\"conflict\" data-key=\"{key}\"><p><strong>[{cat}]</strong> <time>{ts}</time> {base}</p>\
<div class=\"versions\">{mine}{theirs}</div>\
<form method=\"post\" action=\"/sync/{u}/memory\" class=\"inline resolve\"><input type=\"hidden\" name=\"key\" value=\"{key}\">\
<button type=\"submit\" name=\"keep\" value=\"mine\" class=\"keep-mine\">{km}</button>\
<button type=\"submit\" name=\"keep\" value=\"theirs\" class=\"keep-theirs\">{kt}</button>\
<button type=\"submit\" name=\"keep\" value=\"both\" class=\"keep-both\">{kb}</button></form></article>",
        key = esc(&c.key),
        cat = esc(&c.category),
        ts = esc(&c.ts),
        base = esc(&c.base_summary),
        mine = side("mine", &format!("{} · {host}", l.t("mine")), mine),
        theirs = side("theirs", &format!("{} · {}", l.t("theirs"), theirs.0), theirs.1),
        km = l.t("keep_mine"),
        kt = l.t("keep_theirs"),
        kb = l.t("keep_both"),
    )
}

/// A file's conflict copy: its diff against the file and the two choices.
fn copy_html(l: Lang, u: &str, c: &ConflictCopy) -> String {
    let diff = match (&c.original_text, &c.copy_text) {
        (Some(file), Some(copy)) => super::diff::word_diff(file, copy)
            .map(|d| format!("<div class=\"wdiff\"><div class=\"text\">{d}</div></div>"))
            .unwrap_or_else(|| format!("<p class=\"muted\">{}</p>", l.t("copy_same"))),
        (None, Some(copy)) => format!("<pre class=\"diff\">{}</pre>", esc(copy)),
        _ => format!("<p class=\"muted\">{}</p>", l.t("copy_binary")),
    };
    format!(
        "<article class=\"copy\" data-copy=\"{copy}\"><p><code>{copy}</code> → <code>{orig}</code></p>{diff}\
<form method=\"post\" action=\"/sync/{u}/file\" class=\"inline resolve\"><input type=\"hidden\" name=\"copy\" value=\"{copy}\">\
<button type=\"submit\" name=\"action\" value=\"keep\" class=\"keep-copy\">{kc}</button>\
<button type=\"submit\" name=\"action\" value=\"discard\" class=\"discard-copy danger\">{dc}</button></form></article>",
        copy = esc(&c.copy),
        orig = esc(&c.original),
        kc = l.t("keep_copy"),
        dc = l.t("discard_copy"),
    )
}

/// "3 minutes ago" (or "3 分钟前") from `then` to `now`.
fn ago(l: Lang, now: DateTime<Utc>, then: DateTime<Utc>) -> String {
    let secs = (now - then).num_seconds().max(0);
    let (n, unit_en, unit_zh) = match secs {
        0..60 => return l.t("just_now").to_owned(),
        60..3600 => (secs / 60, "minute", "分钟"),
        3600..86_400 => (secs / 3600, "hour", "小时"),
        _ => (secs / 86_400, "day", "天"),
    };
    match l {
        Lang::Zh => format!("{n} {unit_zh}前"),
        Lang::En => format!("{n} {unit_en}{} ago", if n == 1 { "" } else { "s" }),
    }
}

/// `POST /sync/<pack>`: `engram sync <pack>` (fetch, memory-aware merge, push; never forced).
pub(crate) async fn sync_now(
    State(state): State<Arc<UiState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response {
    let cx = Ctx::new(&headers, None);
    let pack = name.clone();
    let out = blocking(move || Ok(state.engram.sync_pack(&pack, &UiState::caller("sync"))?.render())).await;
    match out {
        Ok(report) => {
            see_other(&format!("/sync?done={}&report={}#sync-{}", url(&name), url(&report), url(&name)))
        }
        Err(f) => cx.failure(&f, "/sync"),
    }
}

/// `POST /sync/<pack>/memory` (`key`, `keep` = `mine` | `theirs` | `both`): one commit.
pub(crate) async fn resolve_memory(
    State(state): State<Arc<UiState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    let cx = Ctx::new(&headers, None);
    let f = form(&bytes);
    let Some(keep) = KeepVersion::parse(&field(&f, "keep")) else {
        return cx.failure(&Failure::bad_request("`keep` must be mine, theirs or both"), "/sync");
    };
    let (pack, key) = (name.clone(), field(&f, "key"));
    let out = blocking(move || {
        let caller = UiState::caller("resolve_conflict");
        let done = state.engram.resolve_memory_conflict(&pack, &key, keep, &caller)?;
        state.catch_up_later(&pack);
        Ok(done.commit)
    })
    .await;
    answer(&cx, &name, out)
}

/// `POST /sync/<pack>/file` (`copy`, `action` = `keep` | `discard`): one commit.
pub(crate) async fn resolve_file(
    State(state): State<Arc<UiState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    let cx = Ctx::new(&headers, None);
    let f = form(&bytes);
    let keep_copy = match field(&f, "action").as_str() {
        "keep" => true,
        "discard" => false,
        _ => return cx.failure(&Failure::bad_request("`action` must be keep or discard"), "/sync"),
    };
    let (pack, copy) = (name.clone(), field(&f, "copy"));
    let out = blocking(move || {
        let caller = UiState::caller("resolve_conflict");
        Ok(state.engram.resolve_conflict_copy(&pack, &copy, keep_copy, &caller)?)
    })
    .await;
    answer(&cx, &name, out)
}

/// Back to the pack's section of `/sync` with the commit, or the error (409 when stale).
fn answer(cx: &Ctx, name: &str, out: Result<Option<String>, Failure>) -> Response {
    match out {
        Ok(commit) => {
            let done = commit.as_deref().map(short).unwrap_or("-").to_owned();
            see_other(&format!("/sync?done={}#sync-{}", url(&done), url(name)))
        }
        Err(f) => cx.failure(&f, "/sync"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_sync_reads_as_a_relative_time() {
        let now = DateTime::parse_from_rfc3339("2026-12-07T15:00:00Z").unwrap().with_timezone(&Utc);
        let at = |s: i64| now - chrono::Duration::seconds(s);
        assert_eq!(ago(Lang::En, now, at(5)), "just now");
        assert_eq!(ago(Lang::En, now, at(60)), "1 minute ago");
        assert_eq!(ago(Lang::En, now, at(3 * 60 + 20)), "3 minutes ago");
        assert_eq!(ago(Lang::En, now, at(2 * 3600)), "2 hours ago");
        assert_eq!(ago(Lang::En, now, at(3 * 86_400)), "3 days ago");
        assert_eq!(ago(Lang::Zh, now, at(3 * 60)), "3 分钟前");
        assert_eq!(ago(Lang::En, now, at(-30)), "just now", "a clock behind is not the future");
    }
}
