//! Packs as a whole from the page: create one (`init_engram`), install one (`install_engram`:
//! a git URL, a local path or a registry name) with its progress on `/jobs/<id>`, each pack's
//! sync and lint state for the home page, and opening and saving one of a pack's files
//! (`/p/<pack>/file?path=`: `write_engram_file`, one commit; a save whose file changed since the
//! page was opened answers 409 with the file as it is now).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::html::{esc, page, url};
use super::pages::{Ctx, field, form, optional, see_other, short};
use super::{Failure, UiState, blocking};

/// One install started from the page.
#[derive(Debug, Clone, Default)]
pub(crate) struct Job {
    /// What is installed.
    source: String,
    /// Objects received and expected (git's transfer progress).
    progress: (usize, usize),
    /// `None` while it runs; then the tool's answer or its error.
    done: Option<Result<String, String>>,
}

/// Lint errors and warnings by pack, with the HEAD they were counted at.
type LintCache = HashMap<String, (Option<String>, (usize, usize))>;

/// The installs started from the page, by id (the last 32 kept).
#[derive(Default)]
pub(crate) struct Jobs {
    list: Mutex<Vec<(u64, Job)>>,
    /// Lint counts by pack, for the HEAD they were made at.
    lint: Mutex<LintCache>,
}

impl Jobs {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, Job)>> {
        self.list.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn update(&self, id: u64, f: impl FnOnce(&mut Job)) {
        if let Some((_, j)) = self.lock().iter_mut().find(|(k, _)| *k == id) {
            f(j);
        }
    }
}

/// A pack's lint errors and warnings (cached per HEAD).
pub(crate) fn lint_counts(state: &UiState, name: &str, head: Option<&str>) -> Option<(usize, usize)> {
    let head = head.map(str::to_owned);
    {
        let cache = state.jobs.lint.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((h, counts)) = cache.get(name)
            && *h == head
        {
            return Some(*counts);
        }
    }
    let pack = state.engram.resolve(name).ok()?;
    let root = pack.dir.parent().map(std::path::Path::to_path_buf).unwrap_or_else(|| pack.dir.clone());
    let msgs = crate::lint::lint_pack(&pack.dir, &root);
    let errors = msgs.iter().filter(|m| m.level == crate::lint::Level::Error).count();
    let counts = (errors, msgs.len() - errors);
    state.jobs.lint.lock().unwrap_or_else(|p| p.into_inner()).insert(name.to_owned(), (head, counts));
    Some(counts)
}

/// A pack's "ahead a, behind b" as of its last fetch, when it has a remote.
pub(crate) fn sync_state(state: &UiState, name: &str) -> Option<String> {
    if !state.engram.has_remote(name) {
        return None;
    }
    let text = state.engram.sync_status(name).ok()?;
    let line = text.lines().find(|l| l.contains("ahead") || l.contains("never synced"))?;
    Some(line.split_once(": ").map_or(line, |(_, r)| r).replace(" (as of the last fetch)", ""))
}

/// The home page's forms: create a pack, install one.
pub(crate) fn home_forms(l: super::html::Lang) -> String {
    format!(
        "<section class=\"pack-forms\"><details id=\"create\"><summary>{create}</summary>\
<form method=\"post\" action=\"/packs/init\"><label for=\"init-name\">{ln}</label>\
<input id=\"init-name\" name=\"name\" required pattern=\"[^/\\\\]+\">\
<label class=\"check\"><input type=\"checkbox\" name=\"nested\" value=\"1\"> {nested}</label>\
<button type=\"submit\">{create}</button></form></details>\
<details id=\"install\"><summary>{install}</summary>\
<form method=\"post\" action=\"/packs/install\"><label for=\"install-source\">{ls}</label>\
<input id=\"install-source\" name=\"source\" required placeholder=\"https://…/pack.git, ./path, name\">\
<button type=\"submit\">{install}</button></form></details></section>\n",
        create = l.t("create_pack"),
        ln = l.t("pack_name"),
        nested = l.t("nested"),
        install = l.t("install_pack"),
        ls = l.t("install_source"),
    )
}

/// `POST /packs/init` (`name`, `nested`): `init_engram`.
pub(crate) async fn init(State(state): State<Arc<UiState>>, headers: HeaderMap, bytes: Bytes) -> Response {
    let cx = Ctx::new(&headers, None);
    let f = form(&bytes);
    let name = field(&f, "name").trim().to_owned();
    let nested = optional(&f, "nested").is_some();
    if let Err(e) = crate::pack::validate_new_name(&name) {
        return cx.failure(&Failure::bad_request(e.to_string()), "/");
    }
    let n = name.clone();
    match blocking(move || Ok(state.engram.init_engram(&n, nested, crate::lang::Lang::Zh)?)).await {
        Ok(_) => see_other(&format!("/p/{}?done=init", url(&name))),
        Err(f) => cx.failure(&f, "/"),
    }
}

/// `POST /packs/install` (`source`): starts `install_engram` on a blocking thread and answers
/// 303 to `/jobs/<id>`, which shows its progress until it ends.
pub(crate) async fn install(State(state): State<Arc<UiState>>, headers: HeaderMap, bytes: Bytes) -> Response {
    let cx = Ctx::new(&headers, None);
    let lang = cx.lang;
    let source = field(&form(&bytes), "source").trim().to_owned();
    if source.is_empty() {
        return cx.failure(&Failure::bad_request("give a git URL, a local path or a registry name"), "/");
    }
    let id = {
        let mut jobs = state.jobs.lock();
        let id = jobs.last().map_or(1, |(k, _)| k + 1);
        if jobs.len() >= 32 {
            jobs.remove(0);
        }
        jobs.push((id, Job { source: source.clone(), ..Job::default() }));
        id
    };
    let st = state.clone();
    tokio::task::spawn_blocking(move || {
        let progress_state = st.clone();
        let mut progress = move |got: usize, total: usize| {
            progress_state.jobs.update(id, |j| j.progress = (got, total));
        };
        let out = st
            .engram
            .install_engram(&source, &mut progress)
            .map(|said| said.get(lang).to_owned())
            .map_err(|e| e.text(lang));
        st.jobs.update(id, |j| j.done = Some(out));
    });
    see_other(&format!("/jobs/{id}"))
}

/// `GET /jobs/<id>`: an install's progress (the page reloads itself every second while it runs).
pub(crate) async fn job_page(
    State(state): State<Arc<UiState>>,
    Path(id): Path<u64>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    let cx = Ctx::new(&headers, q.as_deref());
    let l = cx.lang;
    let job = state.jobs.lock().iter().find(|(k, _)| *k == id).map(|(_, j)| j.clone());
    let Some(job) = job else {
        return cx.failure(&Failure::Status(StatusCode::NOT_FOUND, format!("no install {id}")), "/");
    };
    let mut body = format!("<h1>{} · {}</h1>\n", l.t("install_pack"), esc(&job.source));
    let (got, total) = job.progress;
    let refresh = match &job.done {
        None => {
            body.push_str(&format!(
                "<p role=\"status\" id=\"progress\" data-state=\"running\">{} <progress max=\"{}\" value=\"{got}\">{got}/{total}</progress> {got}/{total}</p>",
                l.t("installing"),
                total.max(1),
            ));
            true
        }
        Some(Ok(text)) => {
            body.push_str(&format!(
                "<p role=\"status\" id=\"progress\" data-state=\"done\">{}</p><pre class=\"diff\">{}</pre><p><a href=\"/\">{}</a></p>",
                l.t("done"),
                esc(text),
                l.t("packs")
            ));
            false
        }
        Some(Err(e)) => {
            body.push_str(&format!(
                "<p role=\"alert\" class=\"error\" id=\"progress\" data-state=\"failed\">{}</p><p><a href=\"/\">{}</a></p>",
                esc(e),
                l.t("back")
            ));
            false
        }
    };
    let mut html = page(l, l.t("install_pack"), None, &format!("/jobs/{id}"), &body);
    if refresh {
        html = html.replacen(
            "<meta charset=\"utf-8\">",
            "<meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"1\">",
            1,
        );
    }
    cx.html(StatusCode::OK, html)
}

/// The files of a pack the page offers to open: persona, indexes, knowledge and examples.
pub(crate) fn editable_files(state: &UiState, name: &str) -> Result<Vec<String>, Failure> {
    let pack = state.engram.resolve(name)?;
    let mut out = Vec::new();
    for f in ["role.md", "workflow.md", "rules.md", "knowledge/_index.md", "examples/_index.md"] {
        if pack.dir.join(f).is_file() {
            out.push(f.to_owned());
        }
    }
    for dir in ["knowledge", "examples"] {
        let mut found = Vec::new();
        walk(&pack.dir, dir, 0, &mut found);
        found.sort();
        found.retain(|f| !out.contains(f));
        out.extend(found);
    }
    Ok(out)
}

/// Markdown files under `rel` (two levels down, no symbolic links followed).
fn walk(root: &std::path::Path, rel: &str, depth: usize, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(root.join(rel)) else { return };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let Ok(ty) = e.file_type() else { continue };
        let path = format!("{rel}/{name}");
        if ty.is_dir() && depth < 2 {
            walk(root, &path, depth + 1, out);
        } else if ty.is_file() && name.ends_with(".md") && out.len() < 500 {
            out.push(path);
        }
    }
}

/// `GET /p/<pack>/file?path=`: a file of the pack in an editor.
pub(crate) async fn file_page(
    State(state): State<Arc<UiState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    let cx = Ctx::new(&headers, q.as_deref());
    let path = cx.get("path").unwrap_or_default().to_owned();
    let back = format!("/p/{}", url(&name));
    let (n, p) = (name.clone(), path.clone());
    let read = blocking(move || {
        let text = file_text(&p, &state.engram.read_engram_file(&n, &p)?);
        Ok((text, state.engram.head_commit(&n)?))
    })
    .await;
    match read {
        Ok((text, head)) => {
            let body = editor(&cx, &name, &path, &text, head.as_deref().unwrap_or_default(), None);
            cx.html(
                StatusCode::OK,
                page(cx.lang, &path, Some(&name), &format!("{back}/file?path={}", url(&path)), &body),
            )
        }
        Err(f) => cx.failure(&f, &back),
    }
}

/// The file's text from `read_engram_file`'s answer (`## <path>` and the text, trimmed).
pub(crate) fn file_text(path: &str, answer: &str) -> String {
    if answer == format!("文件为空: {path}") {
        return String::new();
    }
    let text = answer.strip_prefix(&format!("## {path}\n")).unwrap_or(answer);
    format!("{text}\n")
}

fn editor(cx: &Ctx, name: &str, path: &str, text: &str, base: &str, stale: Option<&str>) -> String {
    let l = cx.lang;
    let mut body = format!("<h1>{} · <code>{}</code></h1>\n", esc(name), esc(path));
    if let Some(done) = cx.get("done") {
        body.push_str(&format!(
            "<p role=\"status\" id=\"status\">{} · {} <code>{}</code></p>",
            l.t("done"),
            l.t("commit"),
            esc(done)
        ));
    }
    if let Some(now) = stale {
        body.push_str(&format!(
            "<p role=\"alert\" class=\"error\" id=\"stale\">{}</p><h2>{}</h2><pre class=\"text\" id=\"current\">{}</pre>",
            l.t("file_stale"),
            l.t("file_now"),
            esc(now)
        ));
    }
    body.push_str(&format!(
        "<form method=\"post\" action=\"/p/{u}/file\" id=\"file-edit\">\
<input type=\"hidden\" name=\"path\" value=\"{p}\"><input type=\"hidden\" name=\"base\" value=\"{b}\">\
<label for=\"file-text\">{lt}</label><textarea id=\"file-text\" name=\"content\" rows=\"24\" class=\"file\">{t}</textarea>\
<button type=\"submit\" class=\"save\">{save}</button></form>",
        u = url(name),
        p = esc(path),
        b = esc(base),
        lt = l.t("file_text"),
        t = esc(text),
        save = l.t("save_file"),
    ));
    body
}

/// `POST /p/<pack>/file` (`path`, `base`, `content`): `write_engram_file`, one commit; 409 when
/// the file changed since `base`.
pub(crate) async fn file_save(
    State(state): State<Arc<UiState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    let cx = Ctx::new(&headers, None);
    let f = form(&bytes);
    let path = field(&f, "path");
    let mut content = field(&f, "content").replace("\r\n", "\n");
    if !content.is_empty() && !content.ends_with('\n') {
        content.push('\n');
    }
    let base = optional(&f, "base");
    let back = format!("/p/{}/file?path={}", url(&name), url(&path));
    let (n, p, c) = (name.clone(), path.clone(), content.clone());
    let out = blocking(move || {
        let now = state.engram.read_engram_file(&n, &p).ok();
        if let Some(base) = base.as_deref() {
            let then = state.engram.read_engram_file_as_of(&n, &p, base).ok();
            if then != now {
                let now = now.map(|t| file_text(&p, &t)).unwrap_or_default();
                return Ok(Err((now, state.engram.head_commit(&n)?)));
            }
        }
        state.engram.write_engram_file(&n, &p, &c, "overwrite", &UiState::caller("write_engram_file"))?;
        Ok(Ok(state.engram.head_commit(&n)?))
    })
    .await;
    match out {
        Ok(Ok(head)) => see_other(&format!("{back}&done={}", url(head.as_deref().map(short).unwrap_or("-")))),
        Ok(Err((now, head))) => {
            let body = editor(&cx, &name, &path, &content, head.as_deref().unwrap_or_default(), Some(&now));
            cx.html(StatusCode::CONFLICT, page(cx.lang, cx.lang.t("stale_title"), Some(&name), &back, &body))
        }
        Err(f) => cx.failure(&f, &back),
    }
}
