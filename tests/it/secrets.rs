//! The secret guard: every write tool refuses credentials; ordinary packs pass.

use std::fs;
use std::path::Path;

use serde_json::json;

use crate::common::*;
use crate::engram_tools::make_pack;

fn fake_aws() -> String {
    ["AKIA", "Q3EXAMPLEKEY7Z2W"].concat()
}

fn fake_github() -> String {
    ["ghp_", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"].concat()
}

/// Deterministic pseudo-random text for test credentials (xorshift): nothing
/// real, and nothing a secret scanner of this repository's host would match.
struct Noise(u64);

impl Noise {
    fn byte(&mut self) -> u8 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 24) as u8
    }

    fn text(&mut self, n: usize) -> String {
        let a = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        (0..n).map(|_| a[usize::from(self.byte()) % a.len()] as char).collect()
    }
}

fn base64(bytes: &[u8]) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            out.push(if i <= chunk.len() { A[(n >> (18 - 6 * i) & 63) as usize] as char } else { '=' });
        }
    }
    out
}

/// The attacks of issue 15 items 4 and 6: (content, the kind the error must
/// name, the text whose masked form it must show, a raw part it must not show).
fn evasions() -> Vec<(String, &'static str, String, String)> {
    let mut noise = Noise(42);
    let random40 = noise.text(40);
    let random32 = noise.text(32);
    let aws = fake_aws();
    let gh = fake_github();
    let pem_line = base64(&(0..48).map(|_| noise.byte()).collect::<Vec<u8>>());
    let zero_width: String = aws.chars().flat_map(|c| [c, '\u{200B}']).collect();
    let full_width: String =
        aws.chars().map(|c| char::from_u32(c as u32 - 0x21 + 0xFF01).unwrap_or(c)).collect();
    let b64_aws = base64(aws.as_bytes());
    let b64_gh = base64(gh.as_bytes());
    let b64_secret = base64(random40.as_bytes());
    let same = |s: &str| (s.to_owned(), s.to_owned());
    let rows: Vec<(String, &'static str, (String, String))> = vec![
        ("DB_PASSWORD=Tr0ub4dor&3".into(), "password assignment", same("Tr0ub4dor&3")),
        ("POSTGRES_PASSWORD: pg-Pass-2024".into(), "password assignment", same("pg-Pass-2024")),
        ("MYSQL_ROOT_PASSWORD=r00t-Secret".into(), "password assignment", same("r00t-Secret")),
        (format!("AWS_SECRET_ACCESS_KEY={random40}"), "secret assignment", same(&random40)),
        (format!("GITHUB_TOKEN={random32}"), "secret assignment", same(&random32)),
        (format!("X_API_KEY={random32}"), "secret assignment", same(&random32)),
        ("数据库密码：Tr0ub4dor&3".into(), "password assignment", same("Tr0ub4dor&3")),
        ("口令: hunter2x".into(), "password assignment", same("hunter2x")),
        (format!("密钥：{random32}"), "secret assignment", same(&random32)),
        ("管理员密码是Tr0ub4dor&3".into(), "password in prose", same("Tr0ub4dor&3")),
        ("pw=hunter2x".into(), "password assignment", same("hunter2x")),
        ("the password is hunter2X!".into(), "password in prose", same("hunter2X!")),
        (
            format!("backup {b64_aws}"),
            "base64-encoded AWS access key id",
            (b64_aws.trim_end_matches('=').into(), aws.clone()),
        ),
        (
            format!("ci {b64_gh}"),
            "base64-encoded GitHub token",
            (b64_gh.trim_end_matches('=').into(), gh.clone()),
        ),
        (
            format!("s3 {b64_secret}"),
            "base64-encoded high-entropy token",
            (b64_secret.trim_end_matches('=').into(), random40.clone()),
        ),
        (pem_line.clone(), "private key body", same(&pem_line)),
        (format!("key {zero_width}"), "AWS access key id", (aws.clone(), zero_width.clone())),
        (format!("key {full_width}"), "AWS access key id", (aws.clone(), full_width.clone())),
        (format!("deploykey{aws}backup"), "AWS access key id", same(&aws)),
        (format!("use {random40} for the bucket"), "high-entropy token", same(&random40)),
    ];
    rows.into_iter().map(|(content, kind, (shown, raw))| (content, kind, shown, raw)).collect()
}

/// The pack `coach` with one captured memory: the client, the pack's directory and its
/// commit count, so a test can prove a refused write added no commit.
async fn pack_with_one_memory(env: &TestEnv) -> (StdioClient, std::path::PathBuf, usize) {
    make_pack(env, "coach");
    let c = env.client().await;
    ok(
        &c,
        "capture_memory",
        json!({"name": "coach", "category": "prefs", "content": "早上训练", "summary": "早上训练"}),
    )
    .await;
    let dir = env.pack("coach");
    let before = commit_count(&dir);
    (c, dir, before)
}

#[tokio::test]
async fn env_names_chinese_labels_and_evasions_are_refused_by_every_write_and_commit_nothing() {
    let env = TestEnv::new();
    let (c, dir, before) = pack_with_one_memory(&env).await;
    for (content, kind, shown, raw) in evasions() {
        let masked = engram::secrets::mask(&shown);
        let e = err(
            &c,
            "capture_memory",
            json!({"name": "coach", "category": "ops", "content": format!("部署笔记\n{content}\n"), "summary": "部署笔记"}),
        )
        .await;
        assert!(e.contains(kind) && e.contains(&masked), "capture {content:?}: wants {kind} `{masked}`: {e}");
        assert!(e.contains("memory/ops.md"), "capture {content:?}: names the file: {e}");
        let tail = &raw[raw.len().saturating_sub(12)..];
        assert!(!e.contains(tail), "capture {content:?}: the error shows the secret: {e}");
        let e = err(
            &c,
            "write_engram_file",
            json!({"name": "coach", "path": "knowledge/ops.md", "content": format!("# ops\n{content}\n")}),
        )
        .await;
        assert!(e.contains(&format!("knowledge/ops.md line 2: {kind} `{masked}`")), "write {content:?}: {e}");
        assert_eq!(commit_count(&dir), before, "{content:?}: a refused write commits nothing");
    }
    assert_clean(&dir);
    assert!(!dir.join("memory/ops.md").exists() && !dir.join("knowledge/ops.md").exists());
    // Ordinary text of the same shapes goes through.
    let mut ordinary = vec![
        "修复在 commit 2fef455a1b2c3d4e5f60718293a4b5c6d7e8f901，会话 123e4567-e89b-12d3-a456-426614174000。"
            .to_owned(),
        "密码至少 8 位；密码学很有趣。The password is required and case-sensitive.".to_owned(),
        "spec https://docs.google.com/document/d/1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms/edit"
            .to_owned(),
        "see src/components/UserProfileCard/index.tsx and AbstractSingletonProxyFactoryBean".to_owned(),
        "at 2024-05-01T08:30:00+08:00 (1714523400000); DB_PASSWORD=${DB_PASSWORD}".to_owned(),
    ];
    ordinary.push(format!("note {}", base64("an ordinary note about morning training".as_bytes())));
    for text in ordinary {
        ok(
            &c,
            "capture_memory",
            json!({"name": "coach", "category": "ops", "content": text, "summary": "ok"}),
        )
        .await;
    }
    assert_eq!(commit_count(&dir), before + 6);
    c.close().await.expect("close");
}

fn scan_tree(dir: &Path, hits: &mut Vec<String>) {
    for e in fs::read_dir(dir).expect("read_dir").flatten() {
        let p = e.path();
        if p.file_name().is_some_and(|n| n == ".git") {
            continue;
        }
        if p.is_dir() {
            scan_tree(&p, hits);
        } else if let Ok(text) = fs::read_to_string(&p) {
            for f in engram::secrets::scan(&text) {
                hits.push(format!("{}: {f}", p.display()));
            }
        }
    }
}

#[test]
fn example_packs_raise_no_false_alarm() {
    let Some(shared) = shared_dir() else {
        eprintln!("skipping: shared example packs are absent");
        return;
    };
    let examples = shared.join("engram-packs/examples");
    if !examples.is_dir() {
        eprintln!("skipping: {} is absent", examples.display());
        return;
    }
    let packs = fs::read_dir(&examples).expect("read_dir").flatten().filter(|e| e.path().is_dir()).count();
    assert!(packs >= 12, "expected the 12 example packs, found {packs}");
    let mut hits = Vec::new();
    scan_tree(&examples, &mut hits);
    assert!(hits.is_empty(), "false alarms on the example packs:\n{}", hits.join("\n"));
}

#[tokio::test]
async fn every_write_tool_refuses_a_secret_and_commits_nothing() {
    let env = TestEnv::new();
    let (c, dir, before) = pack_with_one_memory(&env).await;
    let aws = fake_aws();
    let e = err(
        &c,
        "capture_memory",
        json!({"name": "coach", "category": "prefs", "content": format!("deploy key {aws}"), "summary": "deploy"}),
    )
    .await;
    assert!(e.contains("AWS access key id") && e.contains("prefs.md") && e.contains("line"), "{e}");
    assert!(!e.contains(&aws), "the error must mask the secret: {e}");
    assert!(e.contains("[REDACTED]"), "the error says how to store a redacted version: {e}");
    let gh = fake_github();
    let e = err(
        &c,
        "write_engram_file",
        json!({"name": "coach", "path": "notes/ci.md", "content": format!("token\n{gh}\n")}),
    )
    .await;
    assert!(e.contains("GitHub token") && e.contains("notes/ci.md line 2"), "{e}");
    let e = err(
        &c,
        "add_knowledge",
        json!({"name": "coach", "filename": "db", "content": "连接数据库：\npassword=Tr0ub4dor&3\n", "summary": "db"}),
    )
    .await;
    assert!(e.contains("password assignment") && e.contains("knowledge/db.md line 2"), "{e}");
    let e = err(&c, "correct_memory", json!({"name": "coach", "category": "prefs", "old_summary": "早上训练", "new_content": "-----BEGIN RSA PRIVATE KEY-----", "new_summary": "k"})).await;
    assert!(e.contains("private key"), "{e}");
    assert_eq!(commit_count(&dir), before, "a refused write commits nothing");
    assert_clean(&dir);
    // The redacted version goes through.
    ok(&c, "capture_memory", json!({"name": "coach", "category": "prefs", "content": "deploy key [REDACTED] (in the vault)", "summary": "deploy"})).await;
    // Ordinary prose, Chinese, commit ids and UUIDs pass.
    ok(
        &c,
        "capture_memory",
        json!({"name": "coach", "category": "prefs", "summary": "ids", "content": "修复在 commit 2fef455a1b2c3d4e5f60718293a4b5c6d7e8f901，会话 123e4567-e89b-12d3-a456-426614174000。密码至少 8 位。"}),
    )
    .await;
    assert_eq!(commit_count(&dir), before + 2);
}

#[tokio::test]
async fn hand_edits_with_a_secret_are_not_auto_committed() {
    let env = TestEnv::new();
    let (c, dir, before) = pack_with_one_memory(&env).await;
    fs::write(dir.join("knowledge/keys.md"), format!("aws {}\n", fake_aws())).expect("write");
    let e = err(
        &c,
        "capture_memory",
        json!({"name": "coach", "category": "prefs", "content": "晚上拉伸", "summary": "拉伸"}),
    )
    .await;
    assert!(e.contains("hand edits") && e.contains("knowledge/keys.md line 1"), "{e}");
    assert_eq!(commit_count(&dir), before);
    fs::write(dir.join("knowledge/keys.md"), "aws [REDACTED]\n").expect("write");
    ok(
        &c,
        "capture_memory",
        json!({"name": "coach", "category": "prefs", "content": "晚上拉伸", "summary": "拉伸"}),
    )
    .await;
    assert_eq!(commit_count(&dir), before + 2, "the hand edit and the capture");
}

/// The graph, notes and personal toolsets go through the same guard: a credential in an
/// observation, a note or a profile value is refused, named (masked) in the error, and nothing
/// is committed.
#[tokio::test]
async fn graph_notes_and_profile_refuse_a_secret_and_commit_nothing() {
    let env = TestEnv::new();
    let c = env.client_with(&["--tools", "graph,notes,personal"]).await;
    ok(
        &c,
        "create_entities",
        json!({"entities": [{"name": "张伟", "entityType": "person", "observations": ["喜欢喝咖啡"]}]}),
    )
    .await;
    ok(&c, "store", json!({"content": "周五交周报。", "title": "周报"})).await;
    ok(&c, "update_profile", json!({"key": "city", "value": "上海"})).await;
    let dir = env.pack("personal");
    assert_worktree_matches_head(&dir);
    let before = commit_count(&dir);
    let (aws, gh) = (fake_aws(), fake_github());

    let refusals = [
        (
            "create_entities",
            json!({"entities": [{"name": "deploy", "entityType": "server", "observations": [format!("key {aws}")]}]}),
            "AWS access key id",
            &aws,
        ),
        (
            "add_observations",
            json!({"observations": [{"entityName": "张伟", "contents": [format!("token {gh}")]}]}),
            "GitHub token",
            &gh,
        ),
        ("store", json!({"content": format!("CI token:\n{gh}\n"), "title": "ci"}), "GitHub token", &gh),
        ("update_profile", json!({"key": "aws", "value": format!("id {aws}")}), "AWS access key id", &aws),
    ];
    for (tool, args, found, secret) in refusals {
        let e = err(&c, tool, args).await;
        assert!(e.contains(found), "{tool}: the error names what was found: {e}");
        assert!(!e.contains(secret.as_str()), "{tool}: the error masks the secret: {e}");
        assert_eq!(commit_count(&dir), before, "{tool}: a refused write commits nothing");
        assert_worktree_matches_head(&dir);
    }
    // Nothing of them is visible either.
    let r = call(&c, "open_nodes", json!({"names": ["张伟", "deploy"]})).await;
    assert_eq!(
        r.structured.clone().expect("structured")["entities"],
        json!([{"name": "张伟", "entityType": "person", "observations": ["喜欢喝咖啡"]}])
    );
    let recalled = ok(&c, "recall", json!({"query": "ci"})).await;
    assert!(!recalled.contains(&gh), "{recalled}");
    let profile = ok(&c, "query_profile", json!({"keys": ["aws"]})).await;
    assert!(profile.contains("\"missing\"") && !profile.contains(&aws), "{profile}");
    // No object in the repository holds them.
    let all = git(&dir, &["log", "-p", "--all"]);
    assert!(!all.contains(&aws) && !all.contains(&gh), "a secret reached the history");
    // A redacted version goes through.
    ok(
        &c,
        "add_observations",
        json!({"observations": [{"entityName": "张伟", "contents": ["token [REDACTED]"]}]}),
    )
    .await;
    assert_eq!(commit_count(&dir), before + 1);
    c.close().await.expect("close");
}
