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
