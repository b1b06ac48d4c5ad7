//! `engram build <name> --from <dir>` through the real binary: without an API key
//! (heuristic), against a stand-in Messages API on loopback, and its refusals.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::path::Path;

use serde_json::{Value, json};

use crate::common::*;

/// A ~20 KB Chinese document with four chapters (so it is imported as chapters).
fn chaptered_doc() -> String {
    let mut doc = String::from("# 力量训练手册\n\n本手册说明力量训练的方法。\n\n");
    for i in 1..=4 {
        doc.push_str(&format!("## 第{i}章 训练要点\n\n"));
        for p in 0..6 {
            doc.push_str(&format!("第{i}章第{p}段：循序渐进地增加负荷，注意动作质量与恢复。"));
            doc.push_str(&"每周记录训练量，评估疲劳，保证睡眠。".repeat(12));
            doc.push_str("\n\n");
        }
    }
    doc.push_str("## 案例：久坐上班族\n\n每天久坐八小时，膝盖不适，先从靠墙静蹲开始。\n");
    doc
}

/// A folder of documents: Chinese (chaptered), English, text, and files to skip.
fn documents(root: &Path) -> std::path::PathBuf {
    let docs = root.join("docs");
    std::fs::create_dir_all(docs.join("notes")).expect("mkdir");
    std::fs::write(docs.join("strength.md"), chaptered_doc()).expect("write");
    std::fs::write(
        docs.join("sleep.md"),
        "# Sleep and recovery\n\nRecovery happens during sleep.\n\n1. Sleep eight hours\n2. Keep a fixed bedtime\n\nYou should never train through sharp pain.\n",
    )
    .expect("write");
    std::fs::write(docs.join("notes/膝盖.txt"), "膝盖疼时必须先做风险筛查，不要盲目负重。\n").expect("write");
    std::fs::write(docs.join("latin1.md"), b"caf\xe9 au lait\n").expect("write");
    std::fs::write(docs.join("photo.png"), b"\x89PNG").expect("write");
    docs
}

fn subjects(dir: &Path) -> Vec<String> {
    git(dir, &["log", "--format=%s"]).lines().map(str::to_owned).collect()
}

fn no_staging_left(packs: &Path) {
    let left: Vec<String> = std::fs::read_dir(packs)
        .expect("packs")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".engram-install-"))
        .collect();
    assert!(left.is_empty(), "staging left behind: {left:?}");
}

#[tokio::test]
async fn build_without_an_api_key_makes_a_pack_that_lints_loads_and_shows_its_stages() {
    let env = TestEnv::new();
    let docs = documents(env.dir.path());
    let out = env.cli(&["build", "coach", "--from", docs.to_str().expect("utf8")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("ANTHROPIC_API_KEY is not set: heuristic extraction"), "{stderr}");
    assert!(stderr.contains("skipped latin1.md: not UTF-8 text"), "{stderr}");
    assert!(stderr.contains("skipped photo.png: not Markdown or text"), "{stderr}");
    assert!(stderr.contains("[3/3] extract"), "progress on stderr: {stderr}");
    assert!(stdout.contains("3 documents") && stdout.contains("lint: 0 errors, 0 warnings"), "{stdout}");

    let dir = env.pack("coach");
    assert_eq!(
        subjects(&dir),
        vec![
            "build: extract — role, workflow, rules, summaries, 1 examples (heuristic, no API key)"
                .to_owned(),
            "build: knowledge — 3 documents, 7 files".to_owned(),
            "adopt: existing pack files".to_owned(),
        ]
    );
    // The large Chinese document became chapters through the chapter import's layout.
    let index = env.read("coach", "knowledge/_index.md");
    assert!(index.contains("- `knowledge/力量训练手册/_index.md` - 力量训练手册：本手册说明力量训练的方法。（5 章 / chapters）"), "{index}");
    assert!(
        index.contains(
            "- `knowledge/Sleep-and-recovery.md` - Sleep and recovery: Recovery happens during sleep."
        ),
        "{index}"
    );
    for n in 1..=4 {
        assert!(dir.join(format!("knowledge/力量训练手册/0{n}-第{n}章-训练要点.md")).is_file());
    }
    let chapters = env.read("coach", "knowledge/力量训练手册/_index.md");
    assert!(chapters.contains("`knowledge/力量训练手册/05-案例-久坐上班族.md`"), "{chapters}");
    let rules = env.read("coach", "rules.md");
    assert!(
        rules.contains("膝盖疼时必须先做风险筛查") && rules.contains("never train through sharp pain"),
        "{rules}"
    );
    let workflow = env.read("coach", "workflow.md");
    assert!(workflow.contains("1. Sleep eight hours (Sleep and recovery)\n"), "{workflow}");
    let examples = env.read("coach", "examples/_index.md");
    assert!(
        examples.contains("- `examples/案例-久坐上班族.md` - 每天久坐八小时，膝盖不适，先从靠墙静蹲开始。\n  uses: knowledge/力量训练手册/05-案例-久坐上班族.md\n"),
        "{examples}"
    );

    let lint = env.cli(&["lint", "coach"]);
    assert!(lint.status.success(), "{}", String::from_utf8_lossy(&lint.stdout));
    assert_eq!(String::from_utf8_lossy(&lint.stdout).trim(), "coach: 0 errors, 0 warnings");
    let c = env.client().await;
    let loaded = ok(&c, "load_engram", json!({"name": "coach", "query": "膝盖"})).await;
    c.close().await.expect("close");
    assert!(loaded.contains("## 角色") && loaded.contains("你是 coach 专家"), "{loaded}");
    assert!(loaded.contains("knowledge/力量训练手册/_index.md"), "{loaded}");
    assert_fsck(&dir);
    assert_clean(&dir);
    no_staging_left(&env.packs);
}

#[test]
fn build_refuses_a_missing_or_empty_folder_and_an_existing_name_unless_forced() {
    let env = TestEnv::new();
    let missing = env.dir.path().join("nope");
    let out = env.cli(&["build", "coach", "--from", missing.to_str().expect("utf8")]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("build failed) at stage read"), "{out:?}");
    let empty = env.dir.path().join("empty");
    std::fs::create_dir_all(empty.join("sub")).expect("mkdir");
    std::fs::write(empty.join("sub/x.bin"), b"\0").expect("write");
    let out = env.cli(&["build", "coach", "--from", empty.to_str().expect("utf8")]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no Markdown or text documents"), "{out:?}");
    assert!(!out.status.success());
    assert!(!env.pack("coach").exists());

    env.init("coach");
    let before = git(&env.pack("coach"), &["rev-parse", "HEAD"]);
    let docs = documents(env.dir.path());
    let docs = docs.to_str().expect("utf8");
    let out = env.cli(&["build", "coach", "--from", docs]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("already exists (give --force"), "{out:?}");
    assert_eq!(git(&env.pack("coach"), &["rev-parse", "HEAD"]), before, "the pack is untouched");
    let out = env.cli(&["build", "coach", "--from", docs, "--force"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(commit_count(&env.pack("coach")), 3, "a new pack, its own history");
    let bad = env.cli(&["build", "../x", "--from", docs]);
    assert!(!bad.status.success());
    // A document holding a credential is skipped (file and line named, the secret masked),
    // the rest is built; alone, it leaves nothing to build and nothing behind.
    let secret = env.dir.path().join("secret");
    std::fs::create_dir_all(&secret).expect("mkdir");
    std::fs::write(
        secret.join("keys.md"),
        "# Keys\n\naws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzz9a8b7c6d\n",
    )
    .expect("write");
    let out = env.cli(&["build", "keys", "--from", secret.to_str().expect("utf8")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("skipped keys.md: line 3 holds what looks like a"), "{stderr}");
    assert!(stderr.contains("no Markdown or text documents"), "{stderr}");
    assert!(!stderr.contains("wJalrXUtnFEMI"), "the secret is masked: {stderr}");
    assert!(!env.pack("keys").exists());
    std::fs::write(secret.join("ok.md"), "# Fine\n\nYou should stretch before training.\n").expect("write");
    std::fs::create_dir_all(secret.join("drafts")).expect("mkdir");
    std::fs::write(secret.join("drafts/wip.md"), "# WIP\n\nUnfinished notes.\n").expect("write");
    let out = env.cli(&["build", "keys", "--from", secret.to_str().expect("utf8"), "--exclude", "drafts"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("1 documents") && stdout.contains("lint: 0 errors, 0 warnings"), "{stdout}");
    let tree = git(&env.pack("keys"), &["ls-files"]);
    assert!(tree.contains("knowledge/Fine.md") && !tree.contains("Keys") && !tree.contains("WIP"), "{tree}");
    no_staging_left(&env.packs);
}

/// One request the stand-in received: its path, `x-api-key` and JSON body.
struct Seen {
    path: String,
    key: String,
    body: Value,
}

/// A stand-in for the Anthropic Messages API on loopback: answers each request with the
/// next `(status, text)` (a text answer as a Messages response; an error status with an
/// error body), until a `QUIT` line. Returns its base URL and the thread with what it saw.
fn stand_in(answers: Vec<(u16, String)>) -> (String, std::thread::JoinHandle<Vec<Seen>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let handle = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut answers = answers.into_iter();
        for stream in listener.incoming() {
            let mut stream = stream.expect("accept");
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut line = String::new();
            reader.read_line(&mut line).expect("request line");
            if line.starts_with("QUIT") {
                break;
            }
            let path = line.split_whitespace().nth(1).unwrap_or_default().to_owned();
            let (mut len, mut key) = (0usize, String::new());
            loop {
                let mut h = String::new();
                reader.read_line(&mut h).expect("header");
                let h = h.trim_end();
                if h.is_empty() {
                    break;
                }
                let (name, value) = h.split_once(':').unwrap_or((h, ""));
                match name.to_ascii_lowercase().as_str() {
                    "content-length" => len = value.trim().parse().expect("length"),
                    "x-api-key" => key = value.trim().to_owned(),
                    _ => {}
                }
            }
            let mut body = vec![0; len];
            reader.read_exact(&mut body).expect("body");
            let body: Value = serde_json::from_slice(&body).expect("json body");
            let (status, text) = answers.next().unwrap_or((500, "no more answers".into()));
            let reply = if status == 200 {
                json!({"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                       "content": [{"type": "text", "text": text}], "stop_reason": "end_turn"})
            } else {
                json!({"type": "error", "error": {"type": "overloaded_error", "message": text}})
            }
            .to_string();
            seen.push(Seen { path, key, body });
            let head = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                reply.len()
            );
            stream.write_all(head.as_bytes()).expect("answer");
            stream.write_all(reply.as_bytes()).expect("answer");
        }
        seen
    });
    (url, handle)
}

fn stop(url: &str) {
    let mut s = std::net::TcpStream::connect(url.trim_start_matches("http://")).expect("connect");
    s.write_all(b"QUIT\r\n\r\n").expect("quit");
}

#[tokio::test]
async fn build_with_a_stand_in_api_asks_the_configured_models_and_keeps_their_answers() {
    let mut env = TestEnv::new();
    let docs = documents(env.dir.path());
    let extraction = json!({
        "description": "力量与恢复教练（模型提炼）",
        "tags": ["力量", "recovery"],
        "role": "# 角色\n\nEXTRACTED-ROLE 你是力量教练。",
        "workflow": "# 工作流程\n\n1. EXTRACTED-WORKFLOW 先问目标。",
        "rules": "# 规则\n\n- EXTRACTED-RULES 先筛查风险。\n\n## Onboarding\n- 了解目标。",
        "summaries": {"knowledge/Sleep-and-recovery.md": "MODEL-SUMMARY 睡眠与恢复"},
        "examples": [{"title": "Knee pain at the desk", "summary": "MODEL-EXAMPLE 久坐膝痛",
                      "problem": "久坐膝痛", "assessment": "筛查", "plan": "靠墙静蹲", "review": "两周后好转",
                      "uses": ["knowledge/Sleep-and-recovery.md", "knowledge/not-there.md"]}]
    });
    let polish = json!({"role": "# 角色\n\nPOLISHED-ROLE 你是经验丰富的力量教练。",
                        "rules": "# 规则\n\n- POLISHED-RULES 先筛查风险。\n\n## Onboarding\n- 了解目标。"});
    let (url, server) =
        stand_in(vec![(200, format!("```json\n{extraction}\n```")), (200, polish.to_string())]);
    env.vars.push(("ANTHROPIC_API_KEY".into(), "sk-test-stand-in".into()));
    env.vars.push(("ANTHROPIC_BASE_URL".into(), url.clone()));
    env.vars.push(("ENGRAM_BUILD_POLISH_MODEL".into(), "big-polisher-1".into()));
    let out = env.cli(&[
        "build",
        "coach",
        "--from",
        docs.to_str().expect("utf8"),
        "--extract-model",
        "tiny-extractor-1",
    ]);
    stop(&url);
    let seen = server.join().expect("stand-in");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{stderr}", String::from_utf8_lossy(&out.stdout));
    assert!(!stderr.contains("heuristic"), "{stderr}");
    assert!(stderr.contains("[4/4] polish"), "{stderr}");

    // Two requests, in stage order, with the configured models and the key.
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].body["model"], "tiny-extractor-1");
    assert_eq!(seen[1].body["model"], "big-polisher-1");
    for s in &seen {
        assert_eq!((s.path.as_str(), s.key.as_str()), ("/v1/messages", "sk-test-stand-in"));
        assert!(s.body["max_tokens"].as_u64().is_some() && s.body["system"].is_string());
    }
    let asked = seen[0].body["messages"][0]["content"].as_str().expect("prompt");
    assert!(
        asked.contains("Recovery happens during sleep.") && asked.contains("膝盖疼时必须先做风险筛查"),
        "{asked}"
    );
    assert!(seen[1].body["messages"][0]["content"].as_str().expect("prompt").contains("EXTRACTED-ROLE"));

    // The answers are in the pack, each stage its own commit.
    let dir = env.pack("coach");
    assert_eq!(
        subjects(&dir),
        vec![
            "build: polish — role, workflow, rules (by big-polisher-1)".to_owned(),
            "build: extract — role, workflow, rules, summaries, 1 examples (by tiny-extractor-1)".to_owned(),
            "build: knowledge — 3 documents, 7 files".to_owned(),
            "adopt: existing pack files".to_owned(),
        ]
    );
    assert!(env.read("coach", "role.md").contains("POLISHED-ROLE"));
    assert!(env.read("coach", "rules.md").contains("POLISHED-RULES"));
    assert!(
        env.read("coach", "workflow.md").contains("EXTRACTED-WORKFLOW"),
        "the polish left it as extracted"
    );
    let extracted_role = git(&dir, &["show", "HEAD~1:role.md"]);
    assert!(extracted_role.contains("EXTRACTED-ROLE"), "history keeps the extracted draft: {extracted_role}");
    assert!(
        env.read("coach", "knowledge/_index.md")
            .contains("- `knowledge/Sleep-and-recovery.md` - MODEL-SUMMARY 睡眠与恢复")
    );
    let examples = env.read("coach", "examples/_index.md");
    assert!(
        examples.contains("MODEL-EXAMPLE 久坐膝痛\n  uses: knowledge/Sleep-and-recovery.md\n"),
        "{examples}"
    );
    let meta: Value = serde_json::from_str(&env.read("coach", "meta.json")).expect("meta");
    assert_eq!(meta["description"], "力量与恢复教练（模型提炼）");
    assert_eq!(meta["tags"], json!(["力量", "recovery"]));
    let lint = env.cli(&["lint", "coach"]);
    assert!(lint.status.success(), "{}", String::from_utf8_lossy(&lint.stdout));
    let c = env.client().await;
    let loaded = ok(&c, "load_engram", json!({"name": "coach", "query": "膝盖"})).await;
    c.close().await.expect("close");
    assert!(loaded.contains("POLISHED-ROLE"), "{loaded}");
    assert!(!git(&dir, &["log", "-p"]).contains("sk-test-stand-in"), "the key is never written");
}

#[test]
fn an_api_error_leaves_no_pack_and_says_which_stage_failed() {
    let mut env = TestEnv::new();
    let docs = documents(env.dir.path());
    let extraction = json!({"role": "# 角色\n\nEXTRACTED"}).to_string();
    for (answers, stage) in [
        (vec![(529, "Overloaded".to_owned())], "extract"),
        (vec![(200, extraction), (200, "not json at all".to_owned())], "polish"),
    ] {
        let (url, server) = stand_in(answers);
        env.vars =
            vec![("ANTHROPIC_API_KEY".into(), "sk-x".into()), ("ANTHROPIC_BASE_URL".into(), url.clone())];
        let out = env.cli(&["build", "coach", "--from", docs.to_str().expect("utf8")]);
        stop(&url);
        server.join().expect("stand-in");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(stderr.contains(&format!("build failed) at stage {stage}")), "{stderr}");
        assert!(stderr.contains("nothing was written"), "{stderr}");
        if stage == "extract" {
            assert!(stderr.contains("HTTP 529: Overloaded"), "{stderr}");
        }
        assert!(!env.pack("coach").exists(), "no half-built pack");
        no_staging_left(&env.packs);
    }
}
