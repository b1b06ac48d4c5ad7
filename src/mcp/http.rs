//! MCP over streamable HTTP: one process serving many clients at `http://HOST:PORT/mcp`.
//!
//! Every client gets its own MCP session (rmcp's `LocalSessionManager`) on a
//! clone of the same [`EngramServer`], so all sessions share one [`crate::ops::Engram`]
//! (one repository handle per pack, one in-process mutex per pack) and the
//! same toolsets as stdio.
//!
//! Who may talk to it:
//! - bound to a loopback address (the default), anyone on this machine may,
//!   but a browser page may not: a request whose `Origin` is not a loopback
//!   origin is refused with 403 (DNS rebinding), and so is a request whose
//!   `Host` is not a loopback name;
//! - bound to any other address, a bearer token is required
//!   (`--auth-token` / `ENGRAM_AUTH_TOKEN`); the server refuses to start
//!   without one;
//! - when a token is set, every request without `Authorization: Bearer <token>`
//!   gets 401 before it reaches MCP, so it never touches a pack. Tokens are
//!   compared in constant time; the scheme name is case-insensitive (RFC 9110);
//! - with `--users-file`, each token is a user's (`users.rs`): the request carries its
//!   [`Identity`] to the tools; SIGHUP re-reads the file without dropping sessions.
//!
//! `GET /healthz` answers `ok` without a token (for load balancers and container
//! health checks); it reads nothing.
//!
//! What a client may hold: sessions end after `--session-idle-timeout` without a
//! request and at most `--max-sessions` live (`http_sessions.rs`); connections
//! have a header-read timeout, an idle timeout and a cap (`http_conn.rs`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use subtle::ConstantTimeEq as _;

use super::EngramServer;
use super::http_conn::{self, ConnLimits};
use super::http_sessions::BoundedSessions;
use super::users::{Identity, UsersFile};

/// The path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";
/// The health check: `200 ok`, no token needed, nothing read.
pub const HEALTH_PATH: &str = "/healthz";

/// Browser origins accepted when bound to loopback (any port).
const LOOPBACK_ORIGINS: &[&str] = &[
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// Default `--session-idle-timeout`: an MCP session ends after this long without a request.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(30 * 60);
/// Default `--max-sessions` (about 65 KB each: 1,000 hold about 65 MB).
pub const DEFAULT_MAX_SESSIONS: usize = 1000;
/// Default `--header-timeout`: time allowed for a complete request head.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Default `--connection-idle-timeout` (SSE streams send a keep-alive every 15 s).
pub const DEFAULT_CONNECTION_IDLE: Duration = Duration::from_secs(120);
/// Default `--max-connections` (half of the usual 1,024 open files a process may have).
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;

/// How to serve over HTTP.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Address to bind (port 0 picks a free port; the chosen one is logged).
    pub addr: SocketAddr,
    /// Bearer token every request must carry; required off loopback (unless `users`).
    pub auth_token: Option<String>,
    /// The users file: each request's token names its user (instead of `auth_token`).
    pub users: Option<Arc<UsersFile>>,
    /// An MCP session ends after this long without a request.
    pub session_idle: Duration,
    /// Most live MCP sessions; one more closes the one idle longest.
    pub max_sessions: usize,
    /// Timeouts and cap of the TCP connections.
    pub connections: ConnLimits,
}

impl HttpOptions {
    /// Options with the default bounds.
    pub fn new(addr: SocketAddr, auth_token: Option<String>) -> Self {
        Self {
            addr,
            auth_token,
            users: None,
            session_idle: DEFAULT_SESSION_IDLE,
            max_sessions: DEFAULT_MAX_SESSIONS,
            connections: ConnLimits {
                header_timeout: DEFAULT_HEADER_TIMEOUT,
                idle_timeout: DEFAULT_CONNECTION_IDLE,
                max_connections: DEFAULT_MAX_CONNECTIONS,
            },
        }
    }
}

/// Errors starting the HTTP server.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// A non-loopback address without a token.
    #[error(
        "refusing to serve on {addr} without a token: any address other than loopback (127.0.0.1, ::1) requires --auth-token, ENGRAM_AUTH_TOKEN or --users-file"
    )]
    TokenRequired {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// An empty or unusable token.
    #[error("the auth token must be at least 16 visible ASCII characters (no spaces)")]
    WeakToken,
    /// Binding failed.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Cause.
        source: std::io::Error,
    },
}

/// Checks the options before binding: a token off loopback, and a usable token.
pub fn check_options(opts: &HttpOptions) -> Result<(), HttpError> {
    if let Some(token) = &opts.auth_token
        && (token.len() < 16 || !token.bytes().all(|b| b.is_ascii_graphic()))
    {
        return Err(HttpError::WeakToken);
    }
    if !opts.addr.ip().is_loopback() && opts.auth_token.is_none() && opts.users.is_none() {
        return Err(HttpError::TokenRequired { addr: opts.addr });
    }
    Ok(())
}

/// The credentials of an `Authorization: Bearer <credentials>` value (the scheme name
/// is case-insensitive, RFC 9110 §11.1).
pub(super) fn bearer_value(value: &[u8]) -> Option<&[u8]> {
    let (scheme, given) = value.split_at_checked(7)?;
    scheme.eq_ignore_ascii_case(b"Bearer ").then(|| given.trim_ascii_start())
}

/// Constant-time check of an `Authorization` header value against the token.
pub fn bearer_matches(header_value: Option<&[u8]>, token: &str) -> bool {
    let Some(given) = header_value.and_then(bearer_value) else { return false };
    // `ct_eq` on slices of different lengths returns false without comparing
    // bytes: only the token's length can leak, not its content.
    bool::from(given.ct_eq(token.as_bytes()))
}

/// Who may call: anyone (loopback, no token), the holder of one token, or the users of a file.
enum Auth {
    Open,
    Token(String),
    Users(Arc<UsersFile>),
}

async fn require_token(State(auth): State<Arc<Auth>>, mut req: Request, next: Next) -> Response {
    let given = req.headers().get(header::AUTHORIZATION).map(HeaderValue::as_bytes);
    let allowed = match auth.as_ref() {
        Auth::Open => true,
        Auth::Token(expected) => bearer_matches(given, expected),
        Auth::Users(file) => match file.current().authenticate(given).cloned() {
            Some(identity) => {
                req.extensions_mut().insert::<Identity>(identity);
                true
            }
            None => false,
        },
    };
    if !allowed {
        let mut res = (
            StatusCode::UNAUTHORIZED,
            "401 Unauthorized: send `Authorization: Bearer <token>` (the server's --auth-token, or a token of its --users-file)\n",
        )
            .into_response();
        res.headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"engram\""));
        return res;
    }
    next.run(req).await
}

/// Re-reads the users file on every SIGHUP; a file that fails keeps the previous tokens.
fn reload_users_on_hangup(file: Arc<UsersFile>) {
    #[cfg(unix)]
    tokio::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let Ok(mut hup) = signal(SignalKind::hangup()) else { return };
        while hup.recv().await.is_some() {
            match file.reload() {
                Ok(n) => eprintln!("engram: re-read {} ({n} tokens)", file.path().display()),
                Err(e) => eprintln!("engram: {e} — the previous tokens stay in force"),
            }
        }
    });
    #[cfg(not(unix))]
    let _ = file;
}

/// Words rmcp's bare 404 for a request naming a session that ended.
async fn explain_ended_sessions(State(note): State<Arc<String>>, req: Request, next: Next) -> Response {
    let names_session = req.headers().contains_key("mcp-session-id");
    let res = next.run(req).await;
    if names_session && res.status() == StatusCode::NOT_FOUND {
        return (StatusCode::NOT_FOUND, note.as_str().to_owned()).into_response();
    }
    res
}

/// Answers a session's end (`DELETE /mcp`) with 204 No Content. rmcp says 202 Accepted, but
/// the session is gone when it answers, and clients read anything but 200 or 204 as a failed
/// termination (the Python SDK logs "Session termination failed: 202" on every close).
async fn end_sessions_with_no_content(req: Request, next: Next) -> Response {
    let delete = req.method() == axum::http::Method::DELETE;
    let res = next.run(req).await;
    if delete && res.status() == StatusCode::ACCEPTED {
        return StatusCode::NO_CONTENT.into_response();
    }
    res
}

impl EngramServer {
    /// Serves MCP over streamable HTTP at `http://<addr>/mcp` until SIGINT/SIGTERM.
    ///
    /// `on_listening` is called with the bound address (useful with port 0).
    pub async fn serve_http(
        self,
        opts: HttpOptions,
        on_listening: impl FnOnce(SocketAddr),
    ) -> Result<(), HttpError> {
        check_options(&opts)?;
        let loopback = opts.addr.ip().is_loopback();
        let mut config = StreamableHttpServerConfig::default();
        if loopback {
            // Host: loopback names only (rmcp's default); Origin: loopback origins only.
            config =
                config.with_allowed_origins(LOOPBACK_ORIGINS.iter().copied()).enforce_origin_validation();
        } else {
            // Reached by other names and from other origins: the bearer token is the guard.
            config = config.disable_allowed_hosts().disable_allowed_origins();
        }
        let cancel = config.cancellation_token.clone();
        let server = self;
        let sessions = Arc::new(BoundedSessions::new(opts.session_idle, opts.max_sessions));
        let service: StreamableHttpService<EngramServer, BoundedSessions> =
            StreamableHttpService::new(move || Ok(server.clone()), sessions, config);
        let auth = Arc::new(match (&opts.users, &opts.auth_token) {
            (Some(users), _) => {
                reload_users_on_hangup(users.clone());
                Auth::Users(users.clone())
            }
            (None, Some(token)) => Auth::Token(token.clone()),
            (None, None) => Auth::Open,
        });
        let note = Arc::new(format!(
            "404 Not Found: session expired or unknown: a session ends after {} s without a request, and the one idle longest is closed when {} are open. Send initialize again to start a new session.\n",
            opts.session_idle.as_secs(),
            opts.max_sessions
        ));
        let mcp = axum::Router::new()
            .nest_service(MCP_PATH, service)
            .layer(axum::middleware::from_fn_with_state(note, explain_ended_sessions))
            .layer(axum::middleware::from_fn(end_sessions_with_no_content))
            .layer(axum::middleware::from_fn_with_state(auth, require_token));
        let router =
            axum::Router::new().route(HEALTH_PATH, axum::routing::get(|| async { "ok\n" })).merge(mcp);
        let listener = tokio::net::TcpListener::bind(opts.addr)
            .await
            .map_err(|source| HttpError::Bind { addr: opts.addr, source })?;
        let local = listener.local_addr().map_err(|source| HttpError::Bind { addr: opts.addr, source })?;
        on_listening(local);
        http_conn::serve(listener, router, opts.connections, async move {
            shutdown_signal().await;
            // Close the open SSE streams so the graceful shutdown can finish.
            cancel.cancel();
        })
        .await;
        Ok(())
    }
}

pub(crate) async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(addr: &str, token: Option<&str>) -> HttpOptions {
        HttpOptions::new(addr.parse().expect("addr"), token.map(str::to_owned))
    }

    #[test]
    fn tokens_are_required_off_loopback() {
        assert!(check_options(&opts("127.0.0.1:0", None)).is_ok());
        assert!(check_options(&opts("[::1]:0", None)).is_ok());
        assert!(matches!(check_options(&opts("0.0.0.0:0", None)), Err(HttpError::TokenRequired { .. })));
        assert!(matches!(check_options(&opts("192.168.1.2:80", None)), Err(HttpError::TokenRequired { .. })));
        assert!(check_options(&opts("0.0.0.0:0", Some("0123456789abcdef"))).is_ok());
        assert!(matches!(check_options(&opts("0.0.0.0:0", Some("short"))), Err(HttpError::WeakToken)));
        assert!(matches!(
            check_options(&opts("0.0.0.0:0", Some("has a space 12345"))),
            Err(HttpError::WeakToken)
        ));
    }

    #[test]
    fn bearer_comparison() {
        let t = "0123456789abcdef";
        assert!(bearer_matches(Some(b"Bearer 0123456789abcdef"), t));
        assert!(!bearer_matches(Some(b"Bearer 0123456789abcdeX"), t));
        assert!(!bearer_matches(Some(b"Bearer 0123456789abcde"), t));
        assert!(bearer_matches(Some(b"bearer 0123456789abcdef"), t));
        assert!(bearer_matches(Some(b"BEARER 0123456789abcdef"), t));
        assert!(!bearer_matches(Some(b"Bearer0123456789abcdef"), t));
        assert!(!bearer_matches(Some(b"Basic  0123456789abcdef"), t));
        assert!(bearer_matches(Some(b"Bearer  0123456789abcdef"), t), "1*SP (RFC 9110)");
        assert!(!bearer_matches(Some(b"0123456789abcdef"), t));
        assert!(!bearer_matches(None, t));
    }
}
