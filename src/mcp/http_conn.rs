//! Accepting HTTP connections with bounds, so slow or silent clients cannot hold the server.
//!
//! `axum::serve` sets no timeout: a connection that never finished its request head
//! stayed open for good, and about 1,020 of them used up the process's file
//! descriptors and locked every client out. Here each connection is served by
//! hyper's HTTP/1 connection with:
//!
//! - a **header-read timeout**: a request head (the first one, or the next one on a
//!   kept-alive connection) must arrive whole within `header_timeout`, else the
//!   connection is closed;
//! - an **idle timeout**: a connection on which no byte moved either way for
//!   `idle_timeout` is closed (SSE streams send a keep-alive every 15 s, so a
//!   listening client is never idle);
//! - a **connection cap**: at most `max_connections` are open. When one more
//!   arrives, the oldest connection that has not sent a complete request head yet is
//!   closed to make room; when every open connection has been served at least once,
//!   the newcomer gets `503` and is closed.

use std::collections::BTreeMap;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};

/// Bounds on the connections of one server.
#[derive(Debug, Clone, Copy)]
pub struct ConnLimits {
    /// Time allowed for a complete request head.
    pub header_timeout: Duration,
    /// Time a connection may stay without any byte read or written.
    pub idle_timeout: Duration,
    /// Most connections open at once (at least 1).
    pub max_connections: usize,
}

/// Longest wait, at shutdown, for open connections to finish.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Serves `router` on `listener` within `limits` until `shutdown` completes, then
/// lets open connections finish (at most [`SHUTDOWN_GRACE`]).
pub async fn serve(
    listener: TcpListener,
    router: axum::Router,
    limits: ConnLimits,
    shutdown: impl Future<Output = ()>,
) {
    let table = Arc::new(ConnTable { max: limits.max_connections.max(1), ..ConnTable::default() });
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut tasks = tokio::task::JoinSet::new();
    let mut shutdown = pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        while tasks.try_join_next().is_some() {}
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) if is_connection_error(&e) => continue,
            Err(e) => {
                // Out of file descriptors (or memory): let connections close, then go on.
                eprintln!("engram: accepting an HTTP connection failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Some(guard) = table.admit() else {
            let _ = stream.try_write(
                b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\nRetry-After: 1\r\n\r\n",
            );
            continue;
        };
        let _ = stream.set_nodelay(true);
        tasks.spawn(serve_one(stream, router.clone(), limits, guard, stop_rx.clone()));
    }
    let _ = stop_tx.send(true);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, async { while tasks.join_next().await.is_some() {} }).await;
}

async fn serve_one(
    stream: TcpStream,
    router: axum::Router,
    limits: ConnLimits,
    guard: ConnGuard,
    mut stop: watch::Receiver<bool>,
) {
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(IdleIo { inner: stream, activity: activity.clone() });
    let service = TowerToHyperService::new(router);
    let served = guard.served.clone();
    let service = hyper::service::service_fn(move |req| {
        served.store(true, Ordering::Relaxed);
        hyper::service::Service::call(&service, req)
    });
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(limits.header_timeout);
    let mut conn = pin!(builder.serve_connection(io, service));
    let mut stopping = *stop.borrow();
    if stopping {
        conn.as_mut().graceful_shutdown();
    }
    loop {
        tokio::select! {
            _ = conn.as_mut() => break,
            () = guard.kill.notified() => break,
            () = activity.expired(limits.idle_timeout) => break,
            _ = stop.changed(), if !stopping => {
                stopping = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

fn is_connection_error(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(e.kind(), ConnectionRefused | ConnectionAborted | ConnectionReset)
}

/// The open connections, oldest first.
#[derive(Default)]
struct ConnTable {
    max: usize,
    next: AtomicU64,
    open: Mutex<BTreeMap<u64, OpenConn>>,
}

#[derive(Clone)]
struct OpenConn {
    /// A complete request head arrived on it.
    served: Arc<AtomicBool>,
    /// Closes it.
    kill: Arc<Notify>,
}

impl ConnTable {
    fn open(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, OpenConn>> {
        self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Room for one more connection: closes the oldest one still waiting for its first
    /// request head if the table is full; `None` when every open one has been served.
    fn admit(self: &Arc<Self>) -> Option<ConnGuard> {
        let mut open = self.open();
        if open.len() >= self.max {
            let victim = open.iter().find(|(_, c)| !c.served.load(Ordering::Relaxed)).map(|(id, _)| *id)?;
            if let Some(c) = open.remove(&victim) {
                c.kill.notify_one();
            }
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let conn = OpenConn { served: Arc::default(), kill: Arc::default() };
        open.insert(id, conn.clone());
        Some(ConnGuard { table: self.clone(), id, served: conn.served, kill: conn.kill })
    }
}

/// A slot in the table, freed on drop.
struct ConnGuard {
    table: Arc<ConnTable>,
    id: u64,
    served: Arc<AtomicBool>,
    kill: Arc<Notify>,
}

impl Drop for ConnGuard {
    fn drop(&mut self) {
        self.table.open().remove(&self.id);
    }
}

/// When a byte last moved on a connection.
struct Activity {
    start: Instant,
    /// Milliseconds since `start`.
    last: AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Self { start: Instant::now(), last: AtomicU64::new(0) }
    }

    fn touch(&self) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last.store(ms, Ordering::Relaxed);
    }

    /// Completes once `idle` has passed without a touch.
    async fn expired(&self, idle: Duration) {
        loop {
            let deadline = self.start + Duration::from_millis(self.last.load(Ordering::Relaxed)) + idle;
            if Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep_until(deadline.into()).await;
        }
    }
}

/// A TCP stream that records when bytes move.
struct IdleIo {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for IdleIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let res = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(res, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.touch();
        }
        res
    }
}

impl AsyncWrite for IdleIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let res = Pin::new(&mut self.inner).poll_write(cx, data);
        if matches!(res, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        res
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let res = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(res, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        res
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_table_makes_room_by_closing_the_oldest_unserved_connection() {
        let table = Arc::new(ConnTable { max: 3, ..ConnTable::default() });
        let a = table.admit().expect("a");
        let b = table.admit().expect("b");
        let c = table.admit().expect("c");
        a.served.store(true, Ordering::Relaxed);
        let d = table.admit().expect("d evicts b, the oldest unserved");
        assert_eq!(table.open().keys().copied().collect::<Vec<_>>(), [a.id, c.id, d.id]);
        c.served.store(true, Ordering::Relaxed);
        d.served.store(true, Ordering::Relaxed);
        assert!(table.admit().is_none(), "every open connection was served: no room");
        drop(b);
        assert_eq!(table.open().len(), 3, "an evicted guard's drop frees nothing twice");
        drop(a);
        assert!(table.admit().is_some());
    }
}
