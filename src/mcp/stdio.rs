//! MCP over stdin/stdout: one JSON-RPC message per line, and an answer to every line
//! that is not one.
//!
//! rmcp's own line transport drops a line it cannot parse without a word (a lone
//! surrogate, nesting deeper than serde_json's 128 levels, `NaN`, a truncated line,
//! plain text, a line over its length limit), so a client that sent one waits for its
//! own timeout. [`LineTransport`] reads the lines itself and answers:
//!
//! | the line | the answer |
//! |---|---|
//! | not JSON (any syntax error, or longer than [`MAX_LINE_BYTES`]) | `-32700 Parse error: …` |
//! | JSON, but not a JSON-RPC request, notification or response | `-32600 Invalid Request: …` |
//! | a notification (no `id`) rmcp does not know | nothing (JSON-RPC never answers a notification) |
//!
//! The error carries the request's `id` when it can be read from the raw text (a
//! top-level `"id"` before the damage), else `null`; then the next line is read as
//! usual. Every line the process writes (rmcp's messages and these errors) goes
//! through one buffer under one lock and is appended whole, so two lines never
//! interleave, even when a write is cancelled halfway.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};
use tokio::sync::Mutex;

/// Longest request line accepted, in bytes (newline excluded). The largest legitimate
/// request is a 256 KiB text argument, at most 1.5 MiB once JSON-escaped; a longer line
/// is answered `-32700` and skipped without being buffered.
pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// JSON-RPC's code for a line that is not JSON.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's code for JSON that is not a request.
const INVALID_REQUEST: i64 = -32600;

/// The output side: whole lines waiting to be written, and the pipe.
struct Out<W> {
    /// `None` once closed.
    pipe: Option<W>,
    /// Bytes not yet written; always whole lines from `pos` on, except that the first
    /// one may have been partly written already.
    buf: Vec<u8>,
    /// How much of `buf` is written.
    pos: usize,
}

impl<W: AsyncWrite + Unpin> Out<W> {
    /// Writes what is buffered. Cancel-safe: `pos` moves only after a write returned,
    /// so a cancelled flush leaves the rest for the next one.
    async fn flush(&mut self) -> std::io::Result<()> {
        let Some(pipe) = self.pipe.as_mut() else {
            return Err(std::io::Error::new(std::io::ErrorKind::NotConnected, "stdout is closed"));
        };
        while self.pos < self.buf.len() {
            let n = pipe.write(&self.buf[self.pos..]).await?;
            if n == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            self.pos += n;
        }
        self.buf.clear();
        self.pos = 0;
        pipe.flush().await
    }
}

/// How a bounded line read ended.
enum LineRead {
    /// A whole line (without its newline) is in `line`.
    Line,
    /// The line is longer than [`MAX_LINE_BYTES`]; `line` holds its first bytes.
    Oversized,
    /// The input ended; `line` holds an unterminated last line, if any.
    Eof,
    /// Reading failed.
    Failed,
}

/// The stdio transport of `engram serve` (see the module docs).
pub struct LineTransport<R, W> {
    read: BufReader<R>,
    /// The line being read (kept across cancelled reads).
    line: Vec<u8>,
    /// Skipping the rest of an oversized line.
    discarding: bool,
    /// An error answer not yet handed to the output buffer.
    pending: Option<Vec<u8>>,
    /// Output may hold bytes a cancelled flush left behind.
    unflushed: bool,
    out: Arc<Mutex<Out<W>>>,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// A transport reading requests from `read` and writing answers to `write`.
    pub fn new(read: R, write: W) -> Self {
        Self {
            read: BufReader::new(read),
            line: Vec::new(),
            discarding: false,
            pending: None,
            unflushed: false,
            out: Arc::new(Mutex::new(Out { pipe: Some(write), buf: Vec::new(), pos: 0 })),
        }
    }

    /// Reads one line into `self.line` without letting it grow past [`MAX_LINE_BYTES`].
    /// Cancel-safe: bytes are moved from the reader's buffer into `line` (or skipped)
    /// with no await in between.
    async fn read_line(&mut self) -> LineRead {
        loop {
            let (used, ended) = {
                let available = match self.read.fill_buf().await {
                    Ok(a) => a,
                    Err(_) => return LineRead::Failed,
                };
                if available.is_empty() {
                    self.discarding = false;
                    return LineRead::Eof;
                }
                let newline = memchr::memchr(b'\n', available);
                let take = newline.map_or(available.len(), |i| i + 1);
                if !self.discarding {
                    let room = (MAX_LINE_BYTES + 1).saturating_sub(self.line.len());
                    self.line.extend_from_slice(&available[..take.min(room)]);
                }
                (take, newline.is_some())
            };
            self.read.consume(used);
            if self.discarding {
                if ended {
                    self.discarding = false;
                }
                continue;
            }
            if ended {
                self.line.pop();
            }
            if self.line.len() > MAX_LINE_BYTES {
                self.discarding = !ended;
                return LineRead::Oversized;
            }
            if ended {
                return LineRead::Line;
            }
        }
    }

    /// Hands a pending error answer to the output and writes what is buffered.
    async fn flush_pending(&mut self) -> bool {
        let mut out = self.out.lock().await;
        if let Some(line) = self.pending.take() {
            out.buf.extend_from_slice(&line);
        }
        self.unflushed = true;
        let ok = out.flush().await.is_ok();
        self.unflushed = false;
        ok
    }
}

/// What to do with a line that is not a message rmcp understands.
fn answer_to(line: &[u8], parse_error: &serde_json::Error) -> Option<Vec<u8>> {
    match serde_json::from_slice::<Value>(line) {
        Err(e) => Some(error_line(recover_id(line), PARSE_ERROR, &format!("Parse error: {e}"))),
        Ok(Value::Object(m)) => {
            let id = m.get("id").filter(|v| v.is_string() || v.is_number()).cloned();
            if id.is_none()
                && (m.contains_key("method") || m.contains_key("result") || m.contains_key("error"))
            {
                // A notification, or a response to a request of ours: never answered.
                return None;
            }
            Some(error_line(id, INVALID_REQUEST, &format!("Invalid Request: {parse_error}")))
        }
        Ok(_) => Some(error_line(
            None,
            INVALID_REQUEST,
            "Invalid Request: a message is one JSON object (batches are not supported)",
        )),
    }
}

/// One JSON-RPC error answer, newline included.
fn error_line(id: Option<Value>, code: i64, message: &str) -> Vec<u8> {
    let v = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id.unwrap_or(Value::Null),
        "error": {"code": code, "message": message},
    });
    let mut line = v.to_string().into_bytes();
    line.push(b'\n');
    line
}

/// The top-level `"id"` of a (possibly damaged or cut) JSON object, when it comes
/// before the damage and is a number or a valid string.
pub fn recover_id(text: &[u8]) -> Option<Value> {
    let mut s = Scanner { b: text, i: 0 };
    s.ws();
    s.eat(b'{')?;
    loop {
        s.ws();
        let key = s.string()?;
        s.ws();
        s.eat(b':')?;
        s.ws();
        if key == b"\"id\"" {
            let start = s.i;
            match s.peek()? {
                b'"' => {
                    let token = s.string()?;
                    return serde_json::from_slice::<String>(token).ok().map(Value::String);
                }
                b'-' | b'0'..=b'9' => {
                    while s
                        .peek()
                        .is_some_and(|c| matches!(c, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                    {
                        s.i += 1;
                    }
                    // A number cut by the end of the text may be incomplete: not trusted.
                    s.peek()?;
                    return serde_json::from_slice::<serde_json::Number>(&text[start..s.i])
                        .ok()
                        .map(Value::Number);
                }
                _ => return None,
            }
        }
        s.skip_value()?;
        s.ws();
        match s.peek()? {
            b',' => s.i += 1,
            _ => return None,
        }
    }
}

/// A forgiving byte scanner for [`recover_id`].
struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while self.peek().is_some_and(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n')) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// A string token, quotes included.
    fn string(&mut self) -> Option<&'a [u8]> {
        let start = self.i;
        self.eat(b'"')?;
        loop {
            match self.peek()? {
                b'"' => {
                    self.i += 1;
                    return Some(&self.b[start..self.i]);
                }
                b'\\' => self.i += 2,
                _ => self.i += 1,
            }
        }
    }

    /// Skips one value: a string, a container (by depth) or a scalar up to the next delimiter.
    fn skip_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(|_| ()),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.i += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
            }
            _ => {
                while !matches!(self.peek()?, b',' | b'}' | b']') {
                    self.i += 1;
                }
                Some(())
            }
        }
    }
}

/// UTF-8 byte order mark, which RFC 8259 lets a parser ignore.
const BOM: &[u8] = b"\xEF\xBB\xBF";

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let out = self.out.clone();
        async move {
            let mut line = serde_json::to_vec(&item)?;
            line.push(b'\n');
            let mut out = out.lock().await;
            out.buf.extend_from_slice(&line);
            out.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if (self.pending.is_some() || self.unflushed) && !self.flush_pending().await {
                return None;
            }
            let read = self.read_line().await;
            let mut line = std::mem::take(&mut self.line);
            let answer = match read {
                LineRead::Failed => return None,
                LineRead::Oversized => Some(error_line(
                    recover_id(&line),
                    PARSE_ERROR,
                    &format!(
                        "Parse error: the message is longer than {MAX_LINE_BYTES} bytes, the limit of one line"
                    ),
                )),
                LineRead::Line | LineRead::Eof => {
                    let eof = matches!(read, LineRead::Eof);
                    let mut text = line.as_slice();
                    text = text.strip_suffix(b"\r").unwrap_or(text);
                    text = text.strip_prefix(BOM).unwrap_or(text);
                    if text.iter().all(u8::is_ascii_whitespace) {
                        if eof {
                            return None;
                        }
                        line.clear();
                        self.line = line;
                        continue;
                    }
                    match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(text) {
                        Ok(message) => {
                            line.clear();
                            self.line = line;
                            return Some(message);
                        }
                        Err(e) => answer_to(text, &e),
                    }
                }
            };
            let eof = matches!(read, LineRead::Eof);
            line.clear();
            self.line = line;
            self.pending = answer;
            if eof {
                self.flush_pending().await;
                return None;
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let mut out = self.out.lock().await;
        let flushed = out.flush().await;
        if let Some(mut pipe) = out.pipe.take() {
            let _ = pipe.shutdown().await;
        }
        flushed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_are_recovered_from_damaged_text() {
        assert_eq!(recover_id(br#"{"jsonrpc":"2.0","id":7,"method":"tools/li"#), Some(json!(7)));
        assert_eq!(recover_id(br#"{"id":"a-1","params":{"x":"\ud800"}}"#), Some(json!("a-1")));
        assert_eq!(
            recover_id(br#" { "method" : "x", "params": {"id": 3, "y": [1, {"id": 4}]}, "id": -2 }"#),
            Some(json!(-2))
        );
        assert_eq!(recover_id(br#"{"params":{"id":3},"method":"#), None, "a nested id is not the request's");
        assert_eq!(
            recover_id(br#"{"jsonrpc":"2.0","id":12"#),
            None,
            "a number cut at the end may be incomplete"
        );
        assert_eq!(recover_id(br#"{"id":"\ud800"}"#), None);
        assert_eq!(recover_id(br#"{"id":null}"#), None);
        assert_eq!(recover_id(b"not json"), None);
        assert_eq!(recover_id(br#"{"a":"x\"y","b":true,"id":1.5e3,"#), Some(json!(1500.0)));
    }

    #[test]
    fn answers_name_the_kind_of_damage() {
        let parse = |t: &[u8]| serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(t).expect_err("bad");
        let text: &[u8] = br#"{"jsonrpc":"2.0","id":3,"method":"ping","x":NaN}"#;
        let a: Value =
            serde_json::from_slice(&answer_to(text, &parse(text)).expect("answered")).expect("json");
        assert_eq!(a["id"], json!(3));
        assert_eq!(a["error"]["code"], json!(-32700));
        let text: &[u8] = br#"{"jsonrpc":"2.0","id":"q","nomethod":1}"#;
        let a: Value =
            serde_json::from_slice(&answer_to(text, &parse(text)).expect("answered")).expect("json");
        assert_eq!((a["id"].clone(), a["error"]["code"].clone()), (json!("q"), json!(-32600)));
        let text: &[u8] = br#"{"jsonrpc":"2.0","method":"notifications/whatever","params":7}"#;
        assert!(answer_to(text, &parse(text)).is_none(), "notifications are never answered");
    }
}
