//! The stdio wire: every line that is not a message gets a JSON-RPC error, and the server
//! keeps serving (a raw child process, bytes in, lines out).

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::*;

/// `engram serve` over raw pipes.
pub struct RawStdio {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl RawStdio {
    pub fn start(env: &TestEnv, extra: &[&str]) -> Self {
        let mut cmd = Command::new(bin());
        cmd.args(["serve", "--packs-dir"]).arg(&env.packs).args(extra);
        cmd.env_clear().envs(base_env()).env("HOME", env.dir.path()).current_dir(env.dir.path());
        if let Some(now) = &env.now {
            cmd.env("ENGRAM_NOW", now);
        }
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
        let mut child = cmd.spawn().expect("spawn engram serve");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut s = Self { child, stdin, lines };
        s.send(br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#);
        assert_eq!(s.next()["id"], json!(0));
        s.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        s
    }

    /// Writes `bytes` and a newline.
    pub fn send(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write");
        stdin.write_all(b"\n").expect("write");
        stdin.flush().expect("flush");
    }

    /// The next line the server writes, as JSON (waits at most 60 s).
    pub fn next(&mut self) -> Value {
        let line = self.lines.recv_timeout(Duration::from_secs(60)).expect("the server answered in time");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Closes stdin and waits for the server to exit.
    pub fn finish(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        self.child.wait().expect("wait")
    }
}

impl Drop for RawStdio {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn malformed_lines_get_a_parse_error_and_the_server_keeps_serving() {
    let env = TestEnv::new();
    env.init("p");
    let mut s = RawStdio::start(&env, &[]);
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"ping","params":{{"x":{}{}}}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    let long = format!(
        r#"{{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{{"name":"ping","arguments":{{"x":"{}"}}}}}}"#,
        "a".repeat(engram::mcp::stdio::MAX_LINE_BYTES)
    );
    // (line, expected id, expected code)
    let cases: Vec<(Vec<u8>, Value, i64)> = vec![
        (br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ping","arguments":{"x":"\ud800"}}}"#.to_vec(), json!(1), -32700),
        (deep.into_bytes(), json!(2), -32700),
        (br#"{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":NaN}}"#.to_vec(), json!(3), -32700),
        (br#"{"jsonrpc":"2.0","id":"four","method":"tools/li"#.to_vec(), json!("four"), -32700),
        (b"this is not json".to_vec(), Value::Null, -32700),
        (long.into_bytes(), json!(6), -32700),
        (b"\xff\xfe\x00garbage".to_vec(), Value::Null, -32700),
        (br#"{"jsonrpc":"2.0","id":8}"#.to_vec(), json!(8), -32600),
        (b"[1,2]".to_vec(), Value::Null, -32600),
    ];
    for (i, (line, id, code)) in cases.into_iter().enumerate() {
        s.send(&line);
        let answer = s.next();
        assert_eq!(answer["error"]["code"], json!(code), "case {i}: {answer}");
        assert_eq!(answer["id"], id, "case {i}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with(if code == -32700 { "Parse error" } else { "Invalid Request" }),
            "{message}"
        );
        // The next valid request is answered.
        let ping_id = 100 + i;
        s.send(format!(r#"{{"jsonrpc":"2.0","id":{ping_id},"method":"ping"}}"#).as_bytes());
        let pong = s.next();
        assert_eq!(pong["id"], json!(ping_id), "case {i}: {pong}");
        assert!(pong.get("result").is_some(), "{pong}");
    }
    // A notification nobody knows is not answered: the next answer is the ping's.
    s.send(br#"{"jsonrpc":"2.0","method":"notifications/unknown","params":{"x":1}}"#);
    s.send(br#"{"jsonrpc":"2.0","id":200,"method":"tools/list"}"#);
    let list = s.next();
    assert_eq!(list["id"], json!(200), "{list}");
    assert!(list["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()), "{list}");
    assert!(s.finish().success());
}

/// Answers and errors never interleave: a burst of valid calls mixed with garbage gives
/// exactly one whole JSON line per request.
#[test]
fn error_answers_and_tool_answers_stay_whole_lines() {
    let env = TestEnv::new();
    env.init("p");
    let mut s = RawStdio::start(&env, &[]);
    let n = 200;
    for i in 0..n {
        s.send(format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"load_engram","arguments":{{"name":"p"}}}}}}"#).as_bytes());
        s.send(format!(r#"{{"jsonrpc":"2.0","id":"bad{i}","method":"tools/call","par"#).as_bytes());
    }
    let mut ok = 0;
    let mut bad = 0;
    for _ in 0..2 * n {
        let v = s.next();
        if v["id"].is_number() {
            assert!(v.get("result").is_some(), "{v}");
            ok += 1;
        } else {
            assert_eq!(v["error"]["code"], json!(-32700), "{v}");
            bad += 1;
        }
    }
    assert_eq!((ok, bad), (n, n));
    assert!(s.finish().success());
}
