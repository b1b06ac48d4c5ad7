//! `engram ui`: a local web page (and its JSON API) over the same packs the MCP tools serve.
//!
//! The server runs on the axum stack of `serve --http` (its accept loop with header-read and idle
//! timeouts and a connection cap, `mcp::http_conn`; its token rules, `mcp::http::check_options`).
//! Who may use it (`auth.rs`): a random per-launch token, given once in the printed URL
//! (`…/?token=…`) and then kept in an `HttpOnly`, `SameSite=Strict` cookie (scripts may send it as
//! `Authorization: Bearer …`); loopback `Host` names only unless `--host` is given with a
//! configured token; every state-changing request from another origin gets 403. No CORS header is
//! ever sent.
//!
//! Every write goes through the operations the MCP tools call (`ops`: validation, limits, the
//! secret guard, one commit), signed `Engram-Tool: <tool>` and `Engram-Client: web-ui`. Reads come
//! from a commit (HEAD or the page's `base`), so a page can say which commit it shows, and a write
//! that carries `base` is refused with 409 when its memory changed since (`api.rs`).
//!
//! - `api.rs` — the JSON API under `/api/`;
//! - `pages.rs` — the server-rendered pages and their form posts;
//! - `memory.rs` — `/p/<pack>/memory`: the list, its filters and forms; `filter.rs` — what a
//!   list shows (the search engine for text), likely duplicates, archived/expired entries;
//! - `diff.rs` — word-level diffs of prose on the history page; `markdown.rs` — pack files'
//!   Markdown as HTML, with no markup taken from the text;
//! - `notes.rs` — `/notes` (the notes toolset); `personal.rs` — `/personal` and `/graph`, whose
//!   picture (an SVG laid out in the server, a neighbourhood of a large graph) is `graph.rs`;
//! - `packs.rs` — create and install packs (with progress), edit a pack's files;
//! - `actions.rs` — "undo the last n"; `sync.rs` — the `/sync` page: each pack's state, "sync
//!   now", and the conflicts a sync left, each resolved in one commit;
//! - `html.rs` — escaping, the page frame, the interface texts (Chinese and English);
//! - `assets/` — the stylesheet and script, embedded in the binary.

mod actions;
mod activity;
mod api;
mod auth;
mod diff;
mod filter;
mod graph;
mod html;
mod markdown;
mod memory;
mod notes;
mod packs;
mod pages;
mod personal;
mod sync;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::routing::{get, post};

use crate::mcp::http::{HttpError, HttpOptions, check_options};
use crate::mcp::http_conn::{self, ConnLimits};
use crate::ops::{
    Caller, Engram, EngramError, EntryHistory, MemoryItem, ParsedMemoryFiles, Personal, StructuredConfig,
    UserGraph,
};
use filter::Listing;

/// The client name every commit made from the page records (`Engram-Client`).
pub const CLIENT: &str = "web-ui";

/// Default `engram ui --port`.
pub const DEFAULT_PORT: u16 = 8766;

/// How to serve the page.
#[derive(Debug, Clone)]
pub struct UiOptions {
    /// Address to bind (port 0 picks a free one).
    pub addr: SocketAddr,
    /// A configured token (`--auth-token` / `ENGRAM_AUTH_TOKEN`): required off loopback;
    /// otherwise a random one is made for this launch.
    pub token: Option<String>,
}

/// A running page server.
#[derive(Debug, Clone)]
pub struct Listening {
    /// The bound address.
    pub addr: SocketAddr,
    /// The token of this launch.
    pub token: String,
}

impl Listening {
    /// The URL to open: the page with the token, which the page then keeps in a cookie.
    pub fn url(&self) -> String {
        let host = match self.addr {
            SocketAddr::V4(a) if a.ip().is_unspecified() => format!("127.0.0.1:{}", a.port()),
            SocketAddr::V6(a) if a.ip().is_unspecified() => format!("[::1]:{}", a.port()),
            a => a.to_string(),
        };
        format!("http://{host}/?token={}", self.token)
    }
}

/// Most commits one memory's history shows.
const MEMORY_COMMITS: usize = 100;

/// Most memory lists kept in memory (one per pack and commit).
const LIST_CACHE: usize = 8;

/// How long one step of an entry index build holds a pack's repository handle.
const INDEX_STEP: std::time::Duration = std::time::Duration::from_millis(20);

/// The pause between two steps while a list is under way, in which it takes the handle.
const INDEX_PAUSE: std::time::Duration = std::time::Duration::from_millis(2);

/// A pack's entry → commits index, and who is bringing it up to HEAD in the background.
#[derive(Default)]
struct IndexSlot {
    /// The index.
    index: Mutex<EntryHistory>,
    /// Held by the one background build of this pack.
    building: Mutex<()>,
}

/// Memory lists by (pack, commit), oldest use first.
type ListCache = Vec<((String, String), Arc<Listing>)>;

/// Where the notes, graph and personal pages read and write (the tools' `--notes-pack`,
/// `--graph-pack` and `--user`).
#[derive(Debug, Clone)]
pub struct Stores {
    /// The notes toolset's pack.
    pub notes_pack: String,
    /// The graph and personal toolsets' pack and user.
    pub structured: StructuredConfig,
}

impl Default for Stores {
    fn default() -> Self {
        Self {
            notes_pack: crate::ops::DEFAULT_NOTES_PACK.to_owned(),
            structured: StructuredConfig::default(),
        }
    }
}

/// What every handler shares.
pub(crate) struct UiState {
    engram: Arc<Engram>,
    /// Memory lists by (pack, commit): a list at a commit never changes.
    lists: Mutex<ListCache>,
    /// Token checks and cookie name.
    guard: auth::Guard,
    /// The notes toolset's pack.
    notes_pack: String,
    /// The graph of the graph/personal toolsets' user (an error when it cannot be opened).
    graph: Result<Arc<UserGraph>, String>,
    /// Installs started from the page, with their progress.
    jobs: packs::Jobs,
    /// Each pack's entry → commits index (one memory's history), brought up to HEAD when asked
    /// and, in the background, after each write of the page.
    entry_histories: Mutex<HashMap<String, Arc<IndexSlot>>>,
    /// Each pack's memory files as its last list parsed them: a list at a new commit (of this
    /// process or another) reads only the files that changed.
    parsed: Mutex<HashMap<String, Arc<Mutex<ParsedMemoryFiles>>>>,
    /// Lists under way: the background index build pauses between its steps only for them.
    listing: std::sync::atomic::AtomicUsize,
}

impl UiState {
    /// The caller a page write commits as.
    fn caller(tool: &str) -> Caller {
        Caller { tool: tool.to_owned(), client: Some(CLIENT.to_owned()) }
    }

    /// A pack's memories at `at` (HEAD when `None`), oldest first, and the commit they are from.
    fn memories(&self, pack: &str, at: Option<&str>) -> Result<(Option<String>, Arc<Listing>), EngramError> {
        self.listing.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let out = self.memories_now(pack, at);
        self.listing.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        out
    }

    fn memories_now(
        &self,
        pack: &str,
        at: Option<&str>,
    ) -> Result<(Option<String>, Arc<Listing>), EngramError> {
        let commit = match at {
            Some(rev) => Some(rev.to_owned()),
            None => self.engram.head_commit(pack)?,
        };
        let Some(commit) = commit else { return Ok((None, Arc::new(Listing::empty()))) };
        let key = (pack.to_owned(), commit.clone());
        let cached = || self.lock_lists().iter().find(|(k, _)| *k == key).map(|(_, l)| l.clone());
        if let Some(listing) = cached() {
            return Ok((Some(commit), listing));
        }
        let parsed = self.parsed_files(pack);
        let (list, keep) = {
            let mut parsed = parsed.lock().unwrap_or_else(|p| p.into_inner());
            // Another list of this commit (the launch's warm-up) may have been made meanwhile.
            if let Some(listing) = cached() {
                return Ok((Some(commit), listing));
            }
            let list = self.engram.memory_items_with(pack, Some(&commit), &mut parsed)?;
            (list, parsed.to_keep())
        };
        // The parsed files for the next launch, written after this answer.
        if let Some(job) = keep {
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => drop(runtime.spawn_blocking(move || job.write())),
                Err(_) => job.write(),
            }
        }
        let commit = list.commit.clone().unwrap_or(commit);
        let listing = Arc::new(Listing::new(list));
        let mut lists = self.lock_lists();
        lists.retain(|(k, _)| k.0 != pack || k.1 != commit);
        if lists.len() >= LIST_CACHE {
            lists.remove(0);
        }
        lists.push(((pack.to_owned(), commit.clone()), listing.clone()));
        Ok((Some(commit), listing))
    }

    /// The parsed memory files of `pack`'s last list.
    fn parsed_files(&self, pack: &str) -> Arc<Mutex<ParsedMemoryFiles>> {
        let mut all = self.parsed.lock().unwrap_or_else(|p| p.into_inner());
        all.entry(pack.to_owned()).or_default().clone()
    }

    /// The entry → commits index of `pack`.
    fn entry_history(&self, pack: &str) -> Arc<IndexSlot> {
        let mut all = self.entry_histories.lock().unwrap_or_else(|p| p.into_inner());
        all.entry(pack.to_owned()).or_default().clone()
    }

    /// The commits that added, corrected or removed memory `m` of `pack`, newest first.
    fn memory_commits(
        &self,
        pack: &str,
        m: &MemoryItem,
    ) -> Result<Vec<crate::store::CommitInfo>, EngramError> {
        let index = self.entry_history(pack);
        let mut index = index.index.lock().unwrap_or_else(|p| p.into_inner());
        self.engram.memory_commits(pack, &mut index, m, MEMORY_COMMITS)
    }

    /// After a write: brings `pack`'s entry index up to HEAD on a blocking thread, unless that
    /// is already under way (then the next look reads the rest), so a memory's history does not
    /// wait for the commits made from the page.
    fn catch_up_later(self: &Arc<Self>, pack: &str) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let (state, pack) = (self.clone(), pack.to_owned());
        drop(runtime.spawn_blocking(move || state.catch_up_in_steps(&pack)));
    }

    /// Brings `pack`'s entry index up to HEAD in steps of [`INDEX_STEP`], each holding the
    /// pack's repository handle (and the index) only that long, so a list or a write asked for
    /// meanwhile waits at most one step. Returns at once when another thread is at it.
    /// A failure here shows (and is retried) when a memory's history is asked for.
    fn catch_up_in_steps(&self, pack: &str) {
        let index = self.entry_history(pack);
        let Ok(_alone) = index.building.try_lock() else { return };
        loop {
            let done = {
                let mut index = index.index.lock().unwrap_or_else(|p| p.into_inner());
                self.engram.catch_up_entry_history(pack, &mut index, Some(INDEX_STEP))
            };
            if !matches!(done, Ok(false)) {
                return;
            }
            // A list under way may wait for the handle: let it take it before the next step.
            if self.listing.load(std::sync::atomic::Ordering::SeqCst) > 0 {
                std::thread::sleep(INDEX_PAUSE);
            }
        }
    }

    /// At start, on a blocking thread: reads every pack's memories and brings its entry index up
    /// to HEAD (in steps), so the first pages need not (a page asked for meanwhile waits for
    /// that pack's read instead of doing it twice). Failures show when the page is asked for.
    fn warm_up(self: &Arc<Self>) {
        let state = self.clone();
        drop(tokio::task::spawn_blocking(move || {
            for p in state.engram.packs().list() {
                let _ = state.memories(&p.name, None);
            }
            for p in state.engram.packs().list() {
                state.catch_up_in_steps(&p.name);
            }
        }));
    }

    fn lock_lists(&self) -> std::sync::MutexGuard<'_, ListCache> {
        self.lists.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The personal toolset over the page's user.
    fn personal(&self) -> Result<Personal, Failure> {
        Ok(Personal::new(self.user_graph()?))
    }

    /// The graph of the page's user.
    fn user_graph(&self) -> Result<Arc<UserGraph>, Failure> {
        self.graph.clone().map_err(|e| Failure::Status(axum::http::StatusCode::INTERNAL_SERVER_ERROR, e))
    }
}

/// A random token of 32 hex digits from the system's random source.
fn random_token() -> std::io::Result<String> {
    use std::io::Read as _;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The router: pages, their form posts, the API and the assets, behind the guard.
fn router(state: Arc<UiState>) -> Router {
    Router::new()
        .route("/", get(pages::home))
        .route("/assets/{name}", get(pages::asset))
        .route("/p/{pack}", get(pages::pack))
        .route("/p/{pack}/memory", get(memory::memory).post(memory::memory_add))
        .route("/p/{pack}/memory/{id}/edit", post(memory::memory_edit))
        .route("/p/{pack}/memory/{id}/delete", post(memory::memory_delete))
        .route("/p/{pack}/memory/delete", post(memory::memory_delete_many))
        .route("/p/{pack}/memory/merge", post(memory::memory_merge))
        .route("/p/{pack}/consolidate", post(memory::consolidate))
        .route("/p/{pack}/file", get(packs::file_page).post(packs::file_save))
        .route("/packs/init", post(packs::init))
        .route("/packs/install", post(packs::install))
        .route("/jobs/{id}", get(packs::job_page))
        .route("/notes", get(notes::page_get))
        .route("/notes/category", post(notes::category))
        .route("/notes/category/delete", post(notes::category_delete))
        .route("/notes/note", post(notes::store))
        .route("/notes/note/delete", post(notes::forget))
        .route("/personal", get(personal::personal_page))
        .route("/graph", get(personal::graph_page))
        .route("/p/{pack}/history", get(pages::history))
        .route("/p/{pack}/activity", get(activity::activity))
        .route("/p/{pack}/revert", post(pages::revert))
        .route("/p/{pack}/undo", post(actions::undo))
        .route("/sync", get(sync::sync_page))
        .route("/sync/{pack}", post(sync::sync_now))
        .route("/sync/{pack}/memory", post(sync::resolve_memory))
        .route("/sync/{pack}/file", post(sync::resolve_file))
        .route("/api/packs", get(api::packs))
        .route("/api/packs/{pack}/memories", get(api::list).post(api::add))
        .route("/api/packs/{pack}/memories/{id}", axum::routing::patch(api::correct).delete(api::delete))
        .route("/api/packs/{pack}/history", get(api::history))
        .route("/api/packs/{pack}/revert", post(api::revert))
        .layer(axum::middleware::from_fn(text_rules))
        .layer(axum::middleware::from_fn_with_state(state.clone(), auth::check))
        .layer(axum::middleware::from_fn(server_timing))
        .with_state(state)
}

/// Stamps every answer with the server's own time on it, as the standard header
/// `Server-Timing: app;dur=<ms>`: from the request's arrival at the router (its head read) to
/// its answer, the guard included (every body here is built before the answer is returned).
/// Browsers' developer tools and `benches/tools/ui_bench.py` read it.
async fn server_timing(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let started = std::time::Instant::now();
    let mut res = next.run(req).await;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    if let Ok(v) = axum::http::HeaderValue::from_str(&format!("app;dur={ms:.2}")) {
        res.headers_mut().insert(SERVER_TIMING, v);
    }
    res
}

/// Largest request body the page reads (a form or a JSON body; axum's own default).
const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// The text rule of the MCP tools for everything the page is sent: no field of a form and
/// no text of a JSON body may hold a control character other than tab, LF and CR (a NUL
/// would make git treat a memory file as binary). Refused with 400 before any handler.
async fn text_rules(req: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse as _;
    if matches!(*req.method(), axum::http::Method::GET | axum::http::Method::HEAD) {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY_BYTES).await else {
        let text = format!("413 Payload Too Large: the body is over {MAX_BODY_BYTES} bytes\n");
        return (StatusCode::PAYLOAD_TOO_LARGE, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text)
            .into_response();
    };
    let json = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.to_ascii_lowercase().contains("json"));
    let checked = if json {
        match serde_json::from_slice::<serde_json::Value>(&bytes) {
            Ok(value) => crate::ops::limits::check_controls_in(&value),
            Err(_) => Ok(()), // the handler says what is wrong with it
        }
    } else {
        form_urlencoded::parse(&bytes).try_for_each(|(k, v)| {
            crate::ops::limits::check_controls(&k, &k)?;
            crate::ops::limits::check_controls(&k, &v)
        })
    };
    if let Err(e) = checked {
        if json {
            let body = serde_json::json!({"error": e.to_string()}).to_string();
            return (StatusCode::BAD_REQUEST, [(header::CONTENT_TYPE, "application/json")], body)
                .into_response();
        }
        let text = format!("400 Bad Request: {e}; nothing was changed\n");
        return (StatusCode::BAD_REQUEST, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text)
            .into_response();
    }
    next.run(axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes))).await
}

/// The `Server-Timing` header's name.
const SERVER_TIMING: axum::http::HeaderName = axum::http::HeaderName::from_static("server-timing");

/// Binds `opts.addr` and serves the page until `shutdown` completes. `on_listening` gets the
/// address and token once the socket is bound. Notes, graph and personal records are the
/// default ones ([`Stores::default`]).
pub async fn serve(
    engram: Arc<Engram>,
    opts: UiOptions,
    on_listening: impl FnOnce(&Listening),
    shutdown: impl Future<Output = ()>,
) -> Result<(), HttpError> {
    serve_with(engram, opts, Stores::default(), on_listening, shutdown).await
}

/// [`serve`] with the notes, graph and personal records in `stores`.
pub async fn serve_with(
    engram: Arc<Engram>,
    opts: UiOptions,
    stores: Stores,
    on_listening: impl FnOnce(&Listening),
    shutdown: impl Future<Output = ()>,
) -> Result<(), HttpError> {
    let http = HttpOptions::new(opts.addr, opts.token.clone());
    check_options(&http)?;
    let token = match opts.token {
        Some(t) => t,
        None => random_token().map_err(|source| HttpError::Bind { addr: opts.addr, source })?,
    };
    let listener = tokio::net::TcpListener::bind(opts.addr)
        .await
        .map_err(|source| HttpError::Bind { addr: opts.addr, source })?;
    let local = listener.local_addr().map_err(|source| HttpError::Bind { addr: opts.addr, source })?;
    let listening = Listening { addr: local, token: token.clone() };
    // The browser keeps the page's cookie under a host name of this launch alone: cookies are
    // not kept apart by port, so one set for 127.0.0.1 would go to every local server.
    let label = random_token().map_err(|source| HttpError::Bind { addr: opts.addr, source })?;
    let graph = UserGraph::new(engram.clone(), stores.structured).map(Arc::new).map_err(|e| e.to_string());
    let state = Arc::new(UiState {
        engram,
        lists: Mutex::new(Vec::new()),
        guard: auth::Guard::new(token, local, &label[..16]),
        notes_pack: stores.notes_pack,
        graph,
        jobs: packs::Jobs::default(),
        entry_histories: Mutex::default(),
        parsed: Mutex::default(),
        listing: Default::default(),
    });
    // libgit2's global start (its TLS certificates) before the first page needs a repository.
    let _ = tokio::task::spawn_blocking(crate::store::init_git).await;
    on_listening(&listening);
    state.warm_up();
    let limits = ConnLimits {
        header_timeout: crate::mcp::http::DEFAULT_HEADER_TIMEOUT,
        idle_timeout: crate::mcp::http::DEFAULT_CONNECTION_IDLE,
        max_connections: 64,
    };
    http_conn::serve(listener, router(state), limits, shutdown).await;
    Ok(())
}

/// Serves the page until SIGINT/SIGTERM (`engram ui`).
pub async fn serve_until_signal(
    engram: Arc<Engram>,
    opts: UiOptions,
    stores: Stores,
    on_listening: impl FnOnce(&Listening),
) -> Result<(), HttpError> {
    serve_with(engram, opts, stores, on_listening, crate::mcp::http::shutdown_signal()).await
}

/// Why a request failed: an operation's error, or a status with a message.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The operation refused or failed.
    Engram(EngramError),
    /// Anything else (a bad request body, a panic).
    Status(axum::http::StatusCode, String),
}

impl From<EngramError> for Failure {
    fn from(e: EngramError) -> Self {
        Self::Engram(e)
    }
}

impl Failure {
    /// A 400 with a message.
    fn bad_request(msg: impl Into<String>) -> Self {
        Self::Status(axum::http::StatusCode::BAD_REQUEST, msg.into())
    }

    /// The HTTP status of the failure.
    fn status(&self) -> axum::http::StatusCode {
        use axum::http::StatusCode as S;
        match self {
            Self::Status(s, _) => *s,
            Self::Engram(e) => match e {
                EngramError::Pack(
                    crate::pack::PackError::NotFound { .. } | crate::pack::PackError::InvalidName { .. },
                )
                | EngramError::NoMatch { .. }
                | EngramError::FileNotFound { .. } => S::NOT_FOUND,
                EngramError::Invalid { .. }
                | EngramError::InvalidText { .. }
                | EngramError::BadPath { .. } => S::BAD_REQUEST,
                EngramError::Store(crate::store::StoreError::UnknownCommit { .. }) => S::BAD_REQUEST,
                EngramError::Secret(_) | EngramError::Refused(_) | EngramError::Ambiguous { .. } => {
                    S::UNPROCESSABLE_ENTITY
                }
                EngramError::Stale { .. }
                | EngramError::ConflictGone { .. }
                | EngramError::RevertConflict { .. } => S::CONFLICT,
                _ => S::INTERNAL_SERVER_ERROR,
            },
        }
    }

    /// The message shown to the person.
    pub(crate) fn message(&self) -> String {
        let text = match self {
            Self::Status(_, m) => m.clone(),
            Self::Engram(e) => e.to_string(),
        };
        crate::secrets::mask_url_credentials(&text).into_owned()
    }
}

/// Runs a blocking operation off the event loop.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Failure> + Send + 'static,
) -> Result<T, Failure> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r,
        Err(e) => Err(Failure::Status(
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            format!("internal error: {e}"),
        )),
    }
}
