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
//!   compared in constant time.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use subtle::ConstantTimeEq as _;

use super::EngramServer;

/// The path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

/// Browser origins accepted when bound to loopback (any port).
const LOOPBACK_ORIGINS: &[&str] = &[
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// How to serve over HTTP.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Address to bind (port 0 picks a free port; the chosen one is logged).
    pub addr: SocketAddr,
    /// Bearer token every request must carry; required off loopback.
    pub auth_token: Option<String>,
}

/// Errors starting the HTTP server.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// A non-loopback address without a token.
    #[error(
        "refusing to serve on {addr} without a token: any address other than loopback (127.0.0.1, ::1) requires --auth-token or ENGRAM_AUTH_TOKEN"
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
    /// The server stopped with an error.
    #[error("the HTTP server failed: {0}")]
    Serve(std::io::Error),
}

/// Checks the options before binding: a token off loopback, and a usable token.
pub fn check_options(opts: &HttpOptions) -> Result<(), HttpError> {
    if let Some(token) = &opts.auth_token
        && (token.len() < 16 || !token.bytes().all(|b| b.is_ascii_graphic()))
    {
        return Err(HttpError::WeakToken);
    }
    if !opts.addr.ip().is_loopback() && opts.auth_token.is_none() {
        return Err(HttpError::TokenRequired { addr: opts.addr });
    }
    Ok(())
}

/// Constant-time check of an `Authorization` header value against the token.
pub fn bearer_matches(header_value: Option<&[u8]>, token: &str) -> bool {
    let Some(value) = header_value else { return false };
    let Some(given) = value.strip_prefix(b"Bearer ") else { return false };
    // `ct_eq` on slices of different lengths returns false without comparing
    // bytes: only the token's length can leak, not its content.
    bool::from(given.ct_eq(token.as_bytes()))
}

async fn require_token(State(token): State<Arc<Option<String>>>, req: Request, next: Next) -> Response {
    if let Some(expected) = token.as_deref() {
        let given = req.headers().get(header::AUTHORIZATION).map(HeaderValue::as_bytes);
        if !bearer_matches(given, expected) {
            let mut res = (
                StatusCode::UNAUTHORIZED,
                "401 Unauthorized: send `Authorization: Bearer <token>` (the server's --auth-token)\n",
            )
                .into_response();
            res.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"engram\""));
            return res;
        }
    }
    next.run(req).await
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
        let service: StreamableHttpService<EngramServer, LocalSessionManager> = StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let token = Arc::new(opts.auth_token.clone());
        let router = axum::Router::new()
            .nest_service(MCP_PATH, service)
            .layer(axum::middleware::from_fn_with_state(token, require_token));
        let listener = tokio::net::TcpListener::bind(opts.addr)
            .await
            .map_err(|source| HttpError::Bind { addr: opts.addr, source })?;
        let local = listener.local_addr().map_err(|source| HttpError::Bind { addr: opts.addr, source })?;
        on_listening(local);
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                shutdown_signal().await;
                // Close the open SSE streams so the graceful shutdown can finish.
                cancel.cancel();
            })
            .await
            .map_err(HttpError::Serve)
    }
}

async fn shutdown_signal() {
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
        HttpOptions { addr: addr.parse().expect("addr"), auth_token: token.map(str::to_owned) }
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
        assert!(!bearer_matches(Some(b"bearer 0123456789abcdef"), t));
        assert!(!bearer_matches(Some(b"0123456789abcdef"), t));
        assert!(!bearer_matches(None, t));
    }
}
