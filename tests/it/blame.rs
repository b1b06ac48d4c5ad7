//! Errors point to `engram doctor` only when the pack may be damaged (issue 15,
//! item 14): a working tree another program rearranged, an unreachable remote
//! or an untrusted host key, and git commands busy beside engram are not damage.

use std::fs;

use serde_json::json;

use crate::common::*;

/// A tracked file replaced by a directory (as a local process swapping folders
/// does): the write is refused with what to do, and no blame on the pack.
#[tokio::test]
async fn a_file_replaced_by_a_directory_is_refused_without_blaming_damage() {
    let env = TestEnv::new();
    env.init("p");
    let pack = env.pack("p");
    let file = pack.join("knowledge/主题A.md");
    fs::remove_file(&file).expect("remove");
    fs::create_dir_all(file.join("inside")).expect("a directory in its place");
    let client = env.client().await;
    let text =
        err(&client, "capture_memory", json!({"name": "p", "category": "c", "content": "x", "summary": "x"}))
            .await;
    client.close().await.expect("close");
    assert!(text.contains("knowledge/主题A.md replaced by a directory"), "{text}");
    assert!(text.contains("Put back what was there"), "{text}");
    assert!(!text.contains("doctor") && !text.contains("damaged"), "{text}");
}

/// A remote nobody answers at, and one that speaks something other than ssh:
/// `engram sync` fails and says why, without pointing to `engram doctor`.
#[test]
fn transport_errors_blame_no_damage() {
    let env = TestEnv::new();
    env.init("p");
    // A port nobody listens on: bound, then let go.
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    // A server that answers with garbage instead of an ssh greeting.
    let garbage = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let garbage_port = garbage.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        use std::io::Write as _;
        for mut conn in garbage.incoming().flatten().take(8) {
            let _ = conn.write_all(b"SSH-2.0-fake\r\nnot an ssh server\r\n");
        }
    });
    for url in [
        format!("ssh://git@127.0.0.1:{port}/p.git"),
        format!("ssh://git@127.0.0.1:{garbage_port}/p.git"),
        format!("http://127.0.0.1:{port}/p.git"),
    ] {
        let out = env.cli(&["remote", "add", "p", &url]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let out = env.cli(&["sync", "p"]);
        let text =
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(!out.status.success(), "{url}: {text}");
        assert!(text.contains("127.0.0.1"), "{url}: {text}");
        assert!(!text.contains("doctor") && !text.contains("damaged"), "{url}: {text}");
        let out = env.cli(&["remote", "remove", "p"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
}
