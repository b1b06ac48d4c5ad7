//! Issue 17: the system prompt, the registry of example packs, the authoring
//! toolset (init, lint, search, stats, drafts, tool traces) and chaptered knowledge.

use crate::common::*;

/// The `engram-system-prompt` section of the reference format (§2.22), when ../shared is present.
fn reference_prompt_section() -> Option<String> {
    let Some(shared) = shared_dir() else {
        eprintln!("skipped: ../shared (the reference) is absent");
        return None;
    };
    let text = std::fs::read_to_string(shared.join("reference/engram-format.md")).ok()?;
    let start = text.find("### 2.22 Prompt `engram-system-prompt`")?;
    let rest = &text[start..];
    let end = rest.find("\n## ").unwrap_or(rest.len());
    Some(rest[..end].to_owned())
}

/// The backticked literals of a text, `\n` escapes decoded.
fn backticked(text: &str) -> Vec<String> {
    text.split('`').skip(1).step_by(2).map(|s| s.replace("\\n", "\n")).collect()
}

#[tokio::test]
async fn system_prompt_keeps_the_reference_intro_and_rules_then_engrams_own() {
    let env = TestEnv::new();
    let c = env.client().await;
    let empty = c.prompt("engram-system-prompt").await.expect("prompt");
    make_demo_pack(&env, "coach");
    let p = c.prompt("engram-system-prompt").await.expect("prompt");
    let listed = c.prompts_json().await.expect("prompts/list");
    let got = c.prompt_json("engram-system-prompt").await.expect("prompts/get");
    c.close().await.expect("close");

    let description = got["description"].as_str().expect("prompts/get carries a description");
    assert_eq!(listed[0]["description"].as_str(), Some(description));
    // The reference's parts, in order; its 12 rules, then engram's own (13 on).
    let parts = [
        "# Engram 记忆印记\n\n你有一个专家记忆系统可用。",
        "## 可用记忆印记\n\n<engrams>\n  <engram>\n    <name>coach</name>",
        "</engrams>\n\n## 使用规则\n\n1. 对话开始时，调用 list_engrams() 查看可用专家\n",
    ];
    let mut at = 0;
    for part in parts {
        let found = p[at..].find(part).unwrap_or_else(|| panic!("{part:?} missing (in order) from {p}"));
        at += found + part.len();
    }
    let numbers: Vec<u32> =
        p.lines().filter_map(|l| l.split_once(". ").and_then(|(n, _)| n.parse().ok())).collect();
    assert_eq!(numbers, (1..=17).collect::<Vec<_>>(), "{p}");
    let rules_12 = &p[p.find("1. 对话").expect("rule 1")..p.find("\n13. ").expect("rule 13")];
    let own = &p[p.find("\n13. ").expect("rule 13")..];
    for tool in ["search_memory", "memory_history", "revert_memory", "undo_last"] {
        assert!(own.contains(tool), "engram's rules name {tool}: {own}");
    }
    // Without the authoring toolset and --auto-trace, rules 7–8 say how traces work here.
    assert!(rules_12.contains("7. 本服务器未提供 capture_tool_trace"), "{rules_12}");
    assert!(rules_12.contains("8. engram 内部的工具不会自动写入 tool-trace"), "{rules_12}");

    let Some(reference) = reference_prompt_section() else { return };
    let literals = backticked(&reference);
    // The header names the description; the first bullet the text without packs.
    assert_eq!(Some(description), literals.iter().map(String::as_str).find(|l| l.starts_with("Engram 专家")));
    let no_packs =
        literals.iter().find(|l| l.starts_with("# Engram")).expect("no-pack text in the reference");
    assert_eq!(&empty, no_packs);
    for literal in literals.iter().filter(|l| l.starts_with("## ") || l.starts_with('{')) {
        assert!(p.contains(literal.as_str()), "{literal:?} (reference §2.22) missing from {p}");
    }
    // What the reference says the 12 rules cover.
    for topic in [
        "list_engrams",
        "load_engram",
        "read_engram_file",
        "capture_memory",
        "preference / fact / decision / history / general",
        "is_global",
        "capture_tool_trace",
        "超过 30 条",
        "consolidate_memory",
        "首次引导",
        "继承知识索引",
    ] {
        assert!(rules_12.contains(topic), "rule about {topic:?} missing: {rules_12}");
    }
}

/// A small valid pack made by hand (meta, role, indexes).
pub fn make_demo_pack(env: &TestEnv, name: &str) {
    let dir = env.pack(name);
    std::fs::create_dir_all(dir.join("knowledge")).expect("mkdir");
    std::fs::create_dir_all(dir.join("examples")).expect("mkdir");
    std::fs::write(
        dir.join("meta.json"),
        format!("{{\"name\": \"{name}\", \"description\": \"测试包 test pack\"}}\n"),
    )
    .expect("meta");
    std::fs::write(dir.join("role.md"), "# 角色\n").expect("role");
    std::fs::write(dir.join("knowledge/_index.md"), "## 知识索引\n").expect("k");
    std::fs::write(dir.join("examples/_index.md"), "## 案例索引\n").expect("e");
}

#[tokio::test]
async fn the_twelve_example_packs_install_by_name_offline_each_with_one_commit() {
    let env = TestEnv::new();
    // No network: a registry URL that refuses connections must not matter.
    let packs = env.packs.display().to_string();
    let home = env.dir.path().display().to_string();
    let envs = [("HOME", home.as_str()), ("ENGRAM_REGISTRY_URL", "http://127.0.0.1:9/registry.json")];
    let c = StdioClient::spawn_in(&bin(), &["serve", "--packs-dir", &packs], &envs, env.dir.path())
        .await
        .expect("spawn");
    for name in EXAMPLE_PACKS {
        let text = ok(&c, "install_engram", serde_json::json!({"source": name})).await;
        assert!(text.starts_with("安装成功："), "{name}: {text}");
        assert!(text.ends_with(&format!(" (来源: 本地 examples/{name})")), "{name}: {text}");
        let dir = env.pack(name);
        assert_eq!(commit_count(&dir), 1, "{name}: one initial commit");
        assert_clean(&dir);
        assert_fsck(&dir);
    }
    let again = call(&c, "install_engram", serde_json::json!({"source": "old-friend"})).await;
    assert_eq!(again.text, "安装失败：目标目录已存在 old-friend", "no registry fallback when taken");
    let loaded = ok(&c, "load_engram", serde_json::json!({"name": "old-friend", "query": "近况"})).await;
    assert!(loaded.contains("阿凯"), "{loaded}");
    c.close().await.expect("close");
    for name in EXAMPLE_PACKS.iter().filter(|n| **n != "template") {
        let out = env.cli(&["lint", name]);
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stdout));
    }

    // The CLI installs by name too; a case-insensitive registry match finds the same pack.
    let env = TestEnv::new();
    let out = env.cli(&["install", "old-friend"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("(来源: 本地 examples/old-friend)"));
    let out = env.cli(&["install", "Fitness-Coach"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(commit_count(&env.pack("fitness-coach")), 1);
    let out = env.cli(&["install", "no-such-pack"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("安装失败：未在 registry 中找到 no-such-pack"));
}

/// Serves `body` to every HTTP request on a local port (a stand-in community registry).
fn serve_registry(body: String) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let mut seen = Vec::new();
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => seen.extend_from_slice(&buf[..n]),
                }
            }
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
        }
    });
    format!("http://{addr}/registry.json")
}

#[test]
fn registry_search_and_a_community_registry_naming_git_urls() {
    let env = TestEnv::new();
    // A pack in a bare git repository, named by the community registry.
    let work = env.dir.path().join("work/coach");
    std::fs::create_dir_all(&work).expect("mkdir");
    std::fs::write(work.join("meta.json"), "{\"name\": \"remote-coach\", \"description\": \"远程教练\"}\n")
        .expect("meta");
    std::fs::write(work.join("role.md"), "# 角色\n").expect("role");
    git(&work, &["init", "-q", "-b", "main"]);
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-qm", "init"]);
    let bare = env.dir.path().join("remote-coach.git");
    let out = git_command().args(["clone", "-q", "--bare"]).arg(&work).arg(&bare).output().expect("git");
    assert!(out.status.success());
    let community = serde_json::json!([
        {"name": "remote-coach", "description": "社区的健身教练 community coach", "author": "community",
         "source": bare.display().to_string(), "tags": ["健身", "community"]}
    ]);
    let url = serve_registry(community.to_string());
    let extra = env.dir.path().join("extra-registry.json");
    std::fs::write(&extra, r#"[{"name": "old-friend", "description": "我的老朋友", "author": "me", "source": "builtin:old-friend", "tags": ["朋友"]}]"#)
        .expect("extra");
    let run = |args: &[&str]| {
        let mut cmd = std::process::Command::new(bin());
        cmd.args(args).arg("--packs-dir").arg(&env.packs).current_dir(env.dir.path());
        cmd.env_clear().envs(base_env()).env("HOME", env.dir.path());
        cmd.env("ENGRAM_REGISTRY_URL", &url).env("ENGRAM_REGISTRY_FILES", &extra);
        let out = cmd.output().expect("run");
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let (okay, text) = run(&["registry", "search", "健身"]);
    assert!(okay);
    let names: Vec<&str> = text.lines().filter_map(|l| l.split(" - ").next()).collect();
    assert_eq!(
        names,
        ["remote-coach", "sports-nutritionist", "fitness-coach"],
        "score 7, 7 (by name), 5: {text}"
    );
    let (_, text) = run(&["registry", "search", "community"]);
    assert_eq!(text.trim(), "remote-coach - 社区的健身教练 community coach [健身, community] (community)");
    let (_, text) = run(&["registry", "search", "FITNESS"]);
    assert!(text.starts_with("fitness-coach - "), "{text}");
    let (_, text) = run(&["registry", "search", "朋友"]);
    assert_eq!(
        text.trim(),
        "old-friend - 我的老朋友 [朋友] (me)",
        "the extra file overrides the bundled entry"
    );
    let (_, text) = run(&["registry", "search", "zzz-nomatch"]);
    assert_eq!(text.trim(), "未找到匹配的 Engram");
    // A registry entry naming a git URL installs by name (a clone, its own history kept).
    let (okay, text) = run(&["install", "remote-coach"]);
    assert!(okay, "{text}");
    assert_eq!(text.trim(), "安装成功：remote-coach - 远程教练");
    assert_eq!(commit_count(&env.pack("remote-coach")), 1);
}

fn subjects(dir: &std::path::Path) -> Vec<String> {
    git(dir, &["log", "--format=%s", "--reverse"]).lines().map(str::to_owned).collect()
}

#[tokio::test]
async fn drafts_are_git_native_and_cancelled_drafts_leave_nothing() {
    let env = TestEnv::new();
    let c = env.client_with(&["--tools", "all"]).await;
    let args = serde_json::json!({"mode": "guided", "name": "rehab-coach", "topic": "膝关节康复", "audience": "久坐上班族"});
    let draft = ok(&c, "create_engram_assistant", args).await;
    assert!(!env.pack("rehab-coach").exists(), "create writes nothing");
    let cancelled = serde_json::json!({"draft_json": draft, "confirm": false});
    assert_eq!(ok(&c, "finalize_engram_draft", cancelled).await, "已取消创建：未确认落盘。");
    assert!(!env.pack("rehab-coach").exists(), "confirm:false leaves nothing");
    let done = ok(&c, "finalize_engram_draft", serde_json::json!({"draft_json": draft})).await;
    assert_eq!(done, "创建完成：rehab-coach\n校验结果：0 errors, 0 warnings\n✅ 草稿已通过 lint 校验。");
    let dir = env.pack("rehab-coach");
    assert!(dir.join("knowledge/核心主题/方法论总览.md").is_file());
    assert!(!dir.join("knowledge/主题A.md").exists(), "the template's knowledge is replaced");
    assert!(!dir.join("examples/说明样本.md").exists(), "the template's examples are replaced");
    ok(
        &c,
        "write_engram_file",
        serde_json::json!({"name": "rehab-coach", "path": "rules.md", "content": "# 规则\n- 先评估疼痛\n"}),
    )
    .await;
    std::fs::write(dir.join("role.md"), "# 角色\n康复教练（手改）\n").expect("hand edit");
    ok(&c, "add_knowledge", serde_json::json!({"name": "rehab-coach", "filename": "拉伸", "content": "# 拉伸\n", "summary": "拉伸要点"})).await;
    c.close().await.expect("close");
    let log = subjects(&dir);
    assert_eq!(log.len(), 5, "{log:?}");
    assert!(log[0].starts_with("adopt:"), "the template: {log:?}");
    assert_eq!(log[1], "draft: rehab-coach — generated by finalize_engram_draft");
    assert_eq!(log[2], "write: rules.md");
    assert!(
        log[3].starts_with("edit:") && log[3].contains("role.md"),
        "the hand edit, its own commit: {log:?}"
    );
    assert!(log[4].starts_with("knowledge:"), "{log:?}");
    assert_clean(&dir);
    let out = env.cli(&["lint", "rehab-coach"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
}

#[tokio::test]
async fn tool_traces_init_lint_stats_and_the_prompt_of_the_authoring_toolset() {
    let env = TestEnv::new();
    let c = env.client_with(&["--tools", "all"]).await;
    let tools = c.tool_names().await.expect("tools");
    // The README's figures: `all` is over Cursor's 40 and Windsurf's 50 (choose toolsets there).
    assert_eq!(tools.len(), 59, "update the README's tool counts: {tools:?}");
    let init = ok(&c, "init_engram", serde_json::json!({"name": "coach", "nested": true})).await;
    assert!(init.starts_with("初始化成功：") && init.ends_with("coach"), "{init}");
    let dir = env.pack("coach");
    assert_eq!(commit_count(&dir), 1);
    assert!(dir.join("knowledge/分组示例/_index.md").is_file());
    assert_eq!(
        ok(&c, "lint_engrams", serde_json::json!({"name": "coach"})).await,
        "coach: 0 errors, 0 warnings\n总计: 1 Engram, 0 errors, 0 warnings"
    );
    assert_eq!(ok(&c, "list_tool_traces", serde_json::json!({"name": "coach"})).await, "暂无工具调用轨迹");
    let trace = serde_json::json!({"name": "coach", "tool_name": "web_search", "intent": "查找东京天气", "result_summary": "3 条结果", "status": " OK ", "tags": ["weather"]});
    let first = ok(&c, "capture_tool_trace", trace.clone()).await;
    assert!(first.starts_with("已记录工具轨迹: web_search [ok] 查找东京天气\ncommit: "), "{first}");
    ok(&c, "capture_tool_trace", trace).await;
    assert_eq!(commit_count(&dir), 2, "the same trace within 5 s is written once");
    let block = env.read("coach", "memory/tool-trace.md");
    assert!(block.contains("type:tool_trace tags:tool:web_search,status:ok,weather\ntool: web_search\nintent: 查找东京天气\nresult: 3 条结果\nstatus: ok"), "{block}");
    assert_eq!(
        ok(&c, "list_tool_traces", serde_json::json!({"name": "coach", "limit": 0})).await,
        "最近工具调用轨迹（1 条）\n- - `memory/tool-trace.md` [2026-11-22 10:00] [tool_trace] [tool:web_search,status:ok,weather] web_search [ok] 查找东京天气"
    );
    let failed = call(
        &c,
        "capture_tool_trace",
        serde_json::json!({"name": "coach", "tool_name": " ", "intent": "x", "result_summary": "y"}),
    )
    .await;
    assert_eq!(failed.text, "工具轨迹记录失败，请检查 tool_name/intent/result_summary 是否为空。");
    let stats = ok(&c, "stats_engrams", serde_json::json!({"format": "csv"})).await;
    assert_eq!(
        stats,
        "name,knowledge_count,examples_count,memory_count,fact,preference,decision,history,general,inferred,stated,recent_date\r\ncoach,0,0,1,0,0,0,0,0,0,0,2026-11-22 10:00\r\n"
    );
    assert_eq!(
        ok(&c, "stats_engrams", serde_json::json!({"format": "tui"})).await,
        "不支持的 format。可选：plain/json/csv"
    );
    // With capture_tool_trace served, rule 7 is the reference's own.
    let p = c.prompt("engram-system-prompt").await.expect("prompt");
    assert!(
        p.contains(
            "7. 任何工具调用（Skills / MCP / Subagent / 第三方工具）完成后，\n   立即调用 capture_tool_trace("
        ),
        "{p}"
    );
    c.close().await.expect("close");

    // The CLI twins.
    let out = env.cli(&["stats", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["engrams"][0]["memory_types"], serde_json::json!({"tool_trace": 1}));
    assert_eq!(v["generated_at"], "2026-11-22T10:00:00+00:00");
    let plain = String::from_utf8_lossy(&env.cli(&["stats"]).stdout).into_owned();
    assert!(
        plain.starts_with("Engram Stats\n")
            && plain.contains("  coach                             0        0      1"),
        "{plain}"
    );
    // The default toolset stays small; engram + authoring fits Cursor's 40.
    let c = env.client().await;
    assert!(!c.tool_names().await.expect("tools").iter().any(|t| t == "capture_tool_trace"));
    c.close().await.expect("close");
    let c = env.client_with(&["--tools", "engram,authoring"]).await;
    assert_eq!(c.tool_names().await.expect("tools").len(), 24);
    c.close().await.expect("close");
}

/// A ~30 KB Markdown document: a title and 8 chapters, Chinese and English.
fn eight_chapter_doc() -> String {
    let mut doc = String::from("# 训练手册 Training Handbook\n\n这本手册汇总了训练方法。\n\n");
    for i in 1..=8 {
        let title = if i % 2 == 0 {
            format!("Chapter {i}: Recovery and load")
        } else {
            format!("第{i}章 力量训练基础")
        };
        doc.push_str(&format!("## {title}\n\n"));
        for p in 0..8 {
            doc.push_str(&format!("第{i}章第{p}段：循序渐进地增加负荷，注意动作质量与恢复。Progressive overload needs good form and sleep. "));
            doc.push_str(&"每周记录训练量，评估疲劳。Track weekly volume. ".repeat(6));
            doc.push_str("\n\n");
        }
    }
    doc
}

#[tokio::test]
async fn a_large_document_imports_as_chapters_in_one_commit() {
    let env = TestEnv::new();
    env.init("coach");
    let dir = env.pack("coach");
    let c = env.client().await;
    let before = ok(&c, "load_engram", serde_json::json!({"name": "coach", "query": "训练"})).await;
    let doc = eight_chapter_doc();
    assert!((28_000..34_000).contains(&doc.len()), "{}", doc.len());
    let file = env.dir.path().join("handbook.md");
    std::fs::write(&file, &doc).expect("write");
    let commits = commit_count(&dir);
    let out = env.cli(&[
        "knowledge",
        "import",
        "coach",
        &file.display().to_string(),
        "--title",
        "训练手册 Handbook",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .starts_with("已导入知识: knowledge/训练手册-Handbook/_index.md — 8 章")
    );
    assert_eq!(commit_count(&dir), commits + 1, "exactly one commit");
    let group = dir.join("knowledge/训练手册-Handbook");
    let mut chapters: Vec<String> = std::fs::read_dir(&group)
        .expect("dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "_index.md")
        .collect();
    chapters.sort();
    assert_eq!(chapters.len(), 8, "{chapters:?}");
    assert_eq!(chapters[0], "01-第1章-力量训练基础.md");
    assert_eq!(chapters[1], "02-Chapter-2-Recovery-and-load.md");
    let index = std::fs::read_to_string(group.join("_index.md")).expect("chapter index");
    assert_eq!(
        index.lines().filter(|l| l.starts_with("- `knowledge/训练手册-Handbook/")).count(),
        8,
        "{index}"
    );
    let root = env.read("coach", "knowledge/_index.md");
    assert!(
        root.contains("- `knowledge/训练手册-Handbook/_index.md` - 训练手册 Handbook（8 章 / chapters）"),
        "{root}"
    );
    let first = std::fs::read_to_string(group.join(&chapters[0])).expect("chapter");
    assert!(first.starts_with("# 训练手册 Training Handbook"), "the title stays with chapter 1");
    let out = env.cli(&["lint", "coach"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "coach: 0 errors, 0 warnings");
    let after = ok(&c, "load_engram", serde_json::json!({"name": "coach", "query": "训练"})).await;
    let line = "- `knowledge/训练手册-Handbook/_index.md` - 训练手册 Handbook（8 章 / chapters）\n";
    assert!(
        after.len() <= before.len() + line.len(),
        "load grew by more than one line: {} → {}",
        before.len(),
        after.len()
    );
    assert_eq!(after.lines().count(), before.lines().count() + 1);

    // A chapter index that names a missing chapter is a lint error.
    std::fs::remove_file(group.join(&chapters[7])).expect("rm");
    let out = env.cli(&["lint", "coach"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("[error] knowledge/训练手册-Handbook/_index.md: 索引引用文件不存在")
    );
    git(&dir, &["checkout", "--", &format!("knowledge/训练手册-Handbook/{}", chapters[7])]);

    // add_knowledge with a large document without headings: split by size, one commit.
    let plain: String = (0..40)
        .map(|i| format!("第{i}段。没有标题的长文档 plain text without headings. {}\n\n", "内容".repeat(200)))
        .collect();
    let commits = commit_count(&dir);
    let text = ok(
        &c,
        "add_knowledge",
        serde_json::json!({"name": "coach", "filename": "notes", "content": plain, "summary": "长笔记"}),
    )
    .await;
    assert!(
        text.starts_with("已添加知识: knowledge/notes/_index.md — 长笔记\n(文档超过 16 KB，已按章节拆分为"),
        "{text}"
    );
    assert_eq!(commit_count(&dir), commits + 1);
    let parts = std::fs::read_dir(dir.join("knowledge/notes")).expect("dir").count() - 1;
    assert!(parts >= 3, "{parts}");
    let joined: String = (1..=parts).map(|_| String::new()).collect::<String>();
    assert!(joined.is_empty());
    c.close().await.expect("close");
}

/// Import writes summaries that never end inside Markdown: with chapters whose first
/// paragraphs are long runs of code spans, the pack still lints clean (an unbalanced
/// backtick made the next chapter an orphan), and `list` and `stats` count the chapters
/// (meta.json's `knowledge_count`, which the page reads too).
#[test]
fn imported_chapters_lint_clean_and_are_counted_everywhere() {
    let env = TestEnv::new();
    env.init("eng");
    let mut doc = String::from("# Guide\n\n");
    for i in 1..=4 {
        doc.push_str(&format!("## Part {i}\n\n"));
        doc.push_str("1. `mcp/call_gate.rs` checks raw arguments (`ops::limits::check_args`) and `ops` resolves the pack, e.g. `coach`, then calls `PackRepo::write`.\n\n");
        doc.push_str(&"Every write is one commit through the store's `publish` path. ".repeat(80));
        doc.push_str("\n\n");
    }
    let file = env.dir.path().join("guide.md");
    std::fs::write(&file, &doc).expect("write");
    cli_ok(&env, &["knowledge", "import", "eng", &file.display().to_string()]);
    let out = env.cli(&["lint", "eng"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "eng: 0 errors, 0 warnings");
    let chapters = env.read("eng", "knowledge/guide/_index.md");
    for line in chapters.lines().filter(|l| l.starts_with("- ")) {
        assert_eq!(line.matches('`').count(), 2, "only the path is a code span: {line}");
        assert!(
            line.contains(": mcp/call_gate.rs checks raw arguments"),
            "plain text, English joiner: {line}"
        );
    }
    let root = env.read("eng", "knowledge/_index.md");
    assert!(root.contains("- `knowledge/guide/_index.md` - guide (4 chapters)\n"), "{root}");
    // The template's two knowledge files and the four chapters.
    assert!(cli_ok(&env, &["list"]).contains("(knowledge=6, examples=0)"));
    let stats: serde_json::Value =
        serde_json::from_str(&cli_ok(&env, &["stats", "--json"])).expect("stats json");
    assert_eq!(stats["engrams"][0]["knowledge_count"], 6, "{stats}");
}

#[tokio::test]
async fn auto_traces_are_off_by_default_and_with_the_flag_one_commit_per_traced_call() {
    let env = TestEnv::new();
    env.init("coach");
    let dir = env.pack("coach");
    let load = serde_json::json!({"name": "coach", "query": "膝盖\n疼"});
    // Off by default: reads commit nothing, writes one commit each.
    let c = env.client_with(&["--tools", "all"]).await;
    ok(&c, "load_engram", load.clone()).await;
    ok(&c, "get_engram_info", serde_json::json!({"name": "coach"})).await;
    assert_eq!(commit_count(&dir), 1);
    assert_eq!(ok(&c, "list_tool_traces", serde_json::json!({"name": "coach"})).await, "暂无工具调用轨迹");
    c.close().await.expect("close");

    let c = env.client_with(&["--tools", "all", "--auto-trace"]).await;
    let p = c.prompt("engram-system-prompt").await.expect("prompt");
    assert!(
        p.contains(
            "8. engram-server 内部的关键工具（load/read/write/memory/knowledge）会自动写入 tool-trace"
        ),
        "{p}"
    );
    ok(&c, "load_engram", load).await;
    assert_eq!(commit_count(&dir), 2, "a traced read is one commit");
    let last = git(&dir, &["log", "-1", "--format=%B"]);
    assert!(
        last.starts_with("capture: tool-trace — load_engram [ok] 加载专家上下文（query: 膝盖 疼）"),
        "{last}"
    );
    assert!(last.contains("Engram-Tool: load_engram"), "{last}");
    // A write: its own commit, then its trace's.
    ok(&c, "capture_memory", serde_json::json!({"name": "coach", "content": "早上训练", "category": "preferences", "summary": "早上训练"})).await;
    assert_eq!(commit_count(&dir), 4);
    // Not traced: the trace tool itself, listings, a missing pack, lint.
    ok(
        &c,
        "capture_tool_trace",
        serde_json::json!({"name": "coach", "tool_name": "web", "intent": "查", "result_summary": "好"}),
    )
    .await;
    assert_eq!(commit_count(&dir), 5, "capture_tool_trace writes its own trace only");
    ok(&c, "list_engrams", serde_json::json!({})).await;
    err(&c, "get_engram_info", serde_json::json!({"name": "nope"})).await;
    ok(&c, "lint_engrams", serde_json::json!({"name": "coach"})).await;
    assert_eq!(commit_count(&dir), 5);
    // A failed read is traced as an error; the same trace again within 5 s is written once.
    err(&c, "read_engram_file", serde_json::json!({"name": "coach", "path": "knowledge/none.md"})).await;
    err(&c, "read_engram_file", serde_json::json!({"name": "coach", "path": "knowledge/none.md"})).await;
    assert_eq!(commit_count(&dir), 6);
    let traces = ok(&c, "list_tool_traces", serde_json::json!({"name": "coach"})).await;
    c.close().await.expect("close");
    assert!(traces.starts_with("最近工具调用轨迹（4 条）"), "{traces}");
    assert!(traces.contains("[tool:capture_memory,status:ok,auto,source:mcp,mcp_tool:capture_memory,memory_category:preferences] capture_memory [ok] 记录记忆 [preferences]"), "{traces}");
    assert!(traces.contains("read_engram_file [error] 读取文件 knowledge/none.md"), "{traces}");
    let file = env.read("coach", "memory/tool-trace.md");
    assert!(file.contains("tool: read_engram_file\nintent: 读取文件 knowledge/none.md\nargs: path=knowledge/none.md\nresult: 读取失败：文件不存在 knowledge/none.md\nstatus: error"), "{file}");
    assert_eq!(commit_count(&dir), 7, "list_tool_traces traces itself after its answer");
    let out = env.cli(&["lint", "coach"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    assert_fsck(&dir);
    // --auto-trace writes: it cannot go with --read-only.
    let out = env.cli(&["serve", "--auto-trace", "--read-only"]);
    assert!(!out.status.success());
}

/// `init` copies the reference's own template (`templates/examples/template`, the example data
/// engram ships): the same files and bytes, meta finished as the reference does; `nested` writes
/// the reference's index and group. Refused names get the reference's text and nothing more.
#[tokio::test]
async fn init_makes_the_references_template_and_refuses_names_with_its_text() {
    let env = TestEnv::new();
    env.init("plain");
    let template = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("templates/examples/template");
    let plain = env.pack("plain");
    let mut files = Vec::new();
    for f in [
        "role.md",
        "workflow.md",
        "rules.md",
        "knowledge/_index.md",
        "knowledge/主题A.md",
        "knowledge/主题B.md",
        "examples/_index.md",
        "examples/写好案例.md",
        "examples/说明样本.md",
        "memory/_index.md",
    ] {
        let want = std::fs::read(template.join(f)).expect("template file");
        assert_eq!(std::fs::read(plain.join(f)).ok(), Some(want), "{f}");
        files.push(f);
    }
    assert_eq!(
        env.read("plain", "meta.json"),
        "{\n  \"name\": \"plain\",\n  \"author\": \"\",\n  \"version\": \"1.0.0\",\n  \"description\": \"plain 专家记忆包\",\n  \"tags\": [],\n  \"knowledge_count\": 0,\n  \"examples_count\": 0\n}\n"
    );
    let tracked = git(&plain, &["ls-files"]);
    assert_eq!(tracked.lines().count(), files.len() + 1, "exactly the template's files: {tracked}");
    assert_eq!(commit_count(&plain), 1);
    let out = env.cli(&["init", "grouped", "--nested"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        env.read("grouped", "knowledge/_index.md"),
        "## 知识索引\n\n### 基础主题\n- `knowledge/主题A.md` - 主题A基础知识。\n- `knowledge/主题B.md` - 主题B基础知识。\n\n### 分组目录\n- `knowledge/分组示例/_index.md` - 分组索引入口。\n  → 详见 knowledge/分组示例/_index.md\n"
    );
    assert_eq!(
        env.read("grouped", "knowledge/分组示例/示例知识.md"),
        "# 示例知识\n\n在这里沉淀该分组下的系统性知识。"
    );
    let out = env.cli(&["lint"]);
    assert!(out.status.success(), "both lint clean: {}", String::from_utf8_lossy(&out.stdout));

    let c = env.client_with(&["--tools", "all"]).await;
    for bad in ["bad/name", " padded", "..", ""] {
        let r = call(&c, "init_engram", serde_json::json!({"name": bad})).await;
        assert_eq!(r.text, format!("初始化失败：非法名称 {bad}"));
    }
    // lint-all lints every pack in its own directory, labelled by meta name: a pack whose meta
    // name is not its directory's is linted, not "未找到 Engram" (the reference's §11.3).
    let meta = env.read("plain", "meta.json").replace("\"name\": \"plain\"", "\"name\": \"renamed\"");
    std::fs::write(plain.join("meta.json"), meta).expect("rename in meta");
    assert_eq!(
        ok(&c, "lint_engrams", serde_json::json!({})).await,
        "grouped: 0 errors, 0 warnings\nrenamed: 0 errors, 0 warnings\n总计: 2 Engram, 0 errors, 0 warnings"
    );
    c.close().await.expect("close");
}
