//! Who may use the page: `Host`, `Origin` and the per-launch token, checked before any handler.
//!
//! In this order, for every request:
//! 1. bound to loopback, the `Host` must be a loopback name (`localhost`, `127.0.0.1`, `[::1]`):
//!    a DNS-rebound name gets 403;
//! 2. a state-changing request (any method but GET/HEAD) whose `Origin` is not this server's own
//!    origin, or whose `Sec-Fetch-Site` says another site or origin, gets 403 — before the token is
//!    looked at, so a cross-origin form or fetch never reaches an operation;
//! 3. `?token=<token>` on a GET at a loopback address redirects to the page's own host name,
//!    `<random>.localhost:<port>` (a name of this launch alone, which browsers resolve to
//!    loopback), with the token; there it sets the cookie, scoped to that host name only (no
//!    `Domain`), and redirects to the same address without the token (it does not stay in the
//!    address bar or the history). Browsers keep cookies apart by host name but not by port: a
//!    cookie set for `127.0.0.1` would be sent to every other server on `127.0.0.1`;
//! 4. the token must come in the cookie (at the page's host name only) or as
//!    `Authorization: Bearer <token>`, else 401.
//!
//! Every answer carries a strict Content-Security-Policy (scripts and styles from this server
//! only, no frames), `no-store`, `nosniff` and `Referrer-Policy: same-origin` (with `no-referrer`,
//! Chrome sends `Origin: null` on the page's own form posts); none carries
//! `Access-Control-Allow-Origin`.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::UiState;

/// The page's Content-Security-Policy.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The token and what the checks need to know about the server.
pub(crate) struct Guard {
    token: String,
    /// Cookie name, per port: two launches' pages at one host name keep their own.
    cookie: String,
    loopback: bool,
    /// Bound to loopback: the page's own host and port, `<random>.localhost:<port>`, the only
    /// host its cookie is set for and accepted at.
    page_host: Option<String>,
}

impl Guard {
    /// The guard of a server bound to `addr` with `token`; `label` (random, of this launch)
    /// names the page's host, `<label>.localhost`.
    pub(crate) fn new(token: String, addr: SocketAddr, label: &str) -> Self {
        let loopback = addr.ip().is_loopback();
        Self {
            token,
            cookie: format!("engram_ui_{}", addr.port()),
            loopback,
            page_host: loopback.then(|| format!("{}.localhost:{}", label.to_ascii_lowercase(), addr.port())),
        }
    }

    /// Whether `host` (a `Host` header) is the page's own host name.
    fn is_page_host(&self, host: &str) -> bool {
        self.page_host.as_deref().is_some_and(|p| p.eq_ignore_ascii_case(host))
    }

    /// Whether a cookie sent with `Host: host` counts: at the page's host name only, when it
    /// has one.
    fn cookie_counts_at(&self, host: &str) -> bool {
        self.page_host.is_none() || self.is_page_host(host)
    }

    /// Constant-time check of a given token.
    fn matches(&self, given: &str) -> bool {
        use subtle::ConstantTimeEq as _;
        bool::from(given.as_bytes().ct_eq(self.token.as_bytes()))
    }

    fn cookie_token<'h>(&self, headers: &'h HeaderMap) -> Option<&'h str> {
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|kv| kv.trim().split_once('='))
            .find(|(k, _)| *k == self.cookie)
            .map(|(_, v)| v)
    }

    fn authorised(&self, headers: &HeaderMap, host: &str) -> bool {
        let bearer = headers.get(header::AUTHORIZATION).map(HeaderValue::as_bytes);
        crate::mcp::http::bearer_matches(bearer, &self.token)
            || (self.cookie_counts_at(host) && self.cookie_token(headers).is_some_and(|t| self.matches(t)))
    }
}

/// True for `localhost`, `127.0.0.1` (any 127/8) and `[::1]`, with or without a port.
fn loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or_default()
    } else {
        host.rsplit_once(':').map_or(host, |(h, _)| h)
    };
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The reason a state-changing request comes from somewhere else, if it does.
fn foreign_origin(headers: &HeaderMap, host: &str) -> Option<String> {
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("?");
        let own = [format!("http://{host}"), format!("https://{host}")];
        if !own.iter().any(|o| o.eq_ignore_ascii_case(origin)) {
            return Some(format!("Origin {origin} is not this page's origin"));
        }
    }
    match headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
        Some(site) if !matches!(site, "same-origin" | "none") => {
            Some(format!("Sec-Fetch-Site: {site} (a request from another page)"))
        }
        _ => None,
    }
}

/// A refusal: a small HTML page for a browser, plain text for a script.
fn refuse(headers: &HeaderMap, status: StatusCode, text: &str) -> Response {
    let html =
        headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).is_some_and(|a| a.contains("text/html"));
    if html {
        let body = format!(
            "<!doctype html><html><head><meta charset=\"utf-8\"><title>{}</title></head><body><p role=\"alert\">{}</p></body></html>\n",
            status.as_u16(),
            super::html::esc(text.trim())
        );
        return (status, [(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response();
    }
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text.to_owned()).into_response()
}

/// The address without `token=…` in its query.
fn without_token(req: &Request) -> String {
    let path = req.uri().path();
    let rest: Vec<&str> = req
        .uri()
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|kv| !kv.is_empty() && !kv.starts_with("token="))
        .collect();
    if rest.is_empty() { path.to_owned() } else { format!("{path}?{}", rest.join("&")) }
}

fn query_token(req: &Request) -> Option<String> {
    let q = req.uri().query()?;
    form_urlencoded::parse(q.as_bytes()).find(|(k, _)| k == "token").map(|(_, v)| v.into_owned())
}

/// The middleware in front of every route.
pub(crate) async fn check(State(state): State<Arc<UiState>>, req: Request, next: Next) -> Response {
    let mut res = decide(&state.guard, req, next).await;
    let h = res.headers_mut();
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    res
}

async fn decide(guard: &Guard, req: Request, next: Next) -> Response {
    let host = req.headers().get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default().to_owned();
    if guard.loopback && !loopback_host(&host) && !guard.is_page_host(&host) {
        return refuse(
            req.headers(),
            StatusCode::FORBIDDEN,
            "403 Forbidden: this page answers only at a loopback address (localhost, 127.0.0.1, [::1])\n",
        );
    }
    let safe = matches!(*req.method(), Method::GET | Method::HEAD);
    if !safe && let Some(why) = foreign_origin(req.headers(), &host) {
        return refuse(
            req.headers(),
            StatusCode::FORBIDDEN,
            &format!("403 Forbidden: {why}; nothing was changed\n"),
        );
    }
    if safe && let Some(given) = query_token(&req) {
        if !guard.matches(&given) {
            return refuse(
                req.headers(),
                StatusCode::UNAUTHORIZED,
                "401 Unauthorized: the token in the address is not this server's; open the URL `engram ui` printed\n",
            );
        }
        if let Some(page) = &guard.page_host
            && !guard.is_page_host(&host)
        {
            // No cookie at a shared name: on to the page's own, where the cookie stays.
            let location = format!("http://{page}{}", req.uri());
            return (StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response();
        }
        let cookie = format!("{}={}; HttpOnly; SameSite=Strict; Path=/", guard.cookie, guard.token);
        let mut res = (StatusCode::SEE_OTHER, [(header::LOCATION, without_token(&req))]).into_response();
        if let Ok(v) = HeaderValue::from_str(&cookie) {
            res.headers_mut().insert(header::SET_COOKIE, v);
        }
        return res;
    }
    if !guard.authorised(req.headers(), &host) {
        return refuse(
            req.headers(),
            StatusCode::UNAUTHORIZED,
            "401 Unauthorized: open the URL `engram ui` printed (it carries ?token=…), or send `Authorization: Bearer <token>`\n",
        );
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for h in ["localhost:8766", "127.0.0.1:1", "[::1]:80", "LOCALHOST", "127.0.0.2:9"] {
            assert!(loopback_host(h), "{h}");
        }
        for h in ["evil.example:8766", "localhost.evil.example", "10.0.0.1:80", "", "[::2]:1"] {
            assert!(!loopback_host(h), "{h}");
        }
    }

    #[test]
    fn origins() {
        let mut h = HeaderMap::new();
        assert!(foreign_origin(&h, "127.0.0.1:5").is_none(), "a script sends no Origin");
        h.insert(header::ORIGIN, HeaderValue::from_static("http://127.0.0.1:5"));
        assert!(foreign_origin(&h, "127.0.0.1:5").is_none());
        h.insert(header::ORIGIN, HeaderValue::from_static("http://127.0.0.1:6"));
        assert!(foreign_origin(&h, "127.0.0.1:5").is_some(), "another port is another origin");
        h.insert(header::ORIGIN, HeaderValue::from_static("null"));
        assert!(foreign_origin(&h, "127.0.0.1:5").is_some());
        h.remove(header::ORIGIN);
        h.insert("sec-fetch-site", HeaderValue::from_static("same-site"));
        assert!(foreign_origin(&h, "127.0.0.1:5").is_some());
    }
}
