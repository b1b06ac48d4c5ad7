//! MCP sessions over HTTP with a bounded life and a bounded number.
//!
//! Every `initialize` creates a session (a task, channels, a clone of the server:
//! about 65 KB). rmcp's [`LocalSessionManager`] keeps one until it has seen no
//! message for its keep-alive, so a client that initializes in a loop made the
//! process grow by that much per request (13,000 sessions: 975 MB). Here:
//!
//! - a session ends after `idle` without a message (rmcp's keep-alive, set to our
//!   `--session-idle-timeout`);
//! - at most `max` sessions live: creating one more first closes the one that has
//!   been idle longest (`--max-sessions`).
//!
//! A request naming an ended session gets rmcp's 404, which `http.rs` words as
//! "session expired" (the MCP client then initializes again).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures_core::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, SessionConfig,
};
use rmcp::transport::streamable_http_server::session::{
    RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};

/// [`LocalSessionManager`] with an idle expiry and a cap (see the module docs).
pub struct BoundedSessions {
    inner: LocalSessionManager,
    max: usize,
    /// When each live session last received a message.
    last_used: Mutex<HashMap<SessionId, Instant>>,
}

impl BoundedSessions {
    /// Sessions that end after `idle` without a message; at most `max` of them (at least 1).
    pub fn new(idle: Duration, max: usize) -> Self {
        let mut inner = LocalSessionManager::default();
        let mut config = SessionConfig::default();
        config.keep_alive = Some(idle);
        inner.session_config = config;
        Self { inner, max: max.max(1), last_used: Mutex::new(HashMap::new()) }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Instant>> {
        // The map holds plain values: a panic elsewhere cannot leave it inconsistent.
        self.last_used.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn touch(&self, id: &SessionId) {
        if let Some(t) = self.table().get_mut(id) {
            *t = Instant::now();
        }
    }

    /// The session idle longest, taken out of the table, when the table is full.
    fn take_oldest_if_full(&self) -> Option<SessionId> {
        let mut table = self.table();
        if table.len() < self.max {
            return None;
        }
        let oldest = table.iter().min_by_key(|(_, t)| **t).map(|(id, _)| id.clone())?;
        table.remove(&oldest);
        Some(oldest)
    }
}

impl SessionManager for BoundedSessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        while let Some(oldest) = self.take_oldest_if_full() {
            self.inner.close_session(&oldest).await?;
        }
        let (id, transport) = self.inner.create_session().await?;
        self.table().insert(id.clone(), Instant::now());
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.touch(id);
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.table().remove(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        self.touch(id);
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.resume(id, last_event_id).await
    }

    async fn restore_session(&self, _id: SessionId) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        // No external session store: an ended session stays ended.
        Ok(RestoreOutcome::NotSupported)
    }
}
