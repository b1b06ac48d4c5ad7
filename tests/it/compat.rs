//! The reference project's 12 example packs and its fixtures: install, load and
//! lint as the reference does. Works on copies; skips when `../shared` is absent.

use std::fs;

use serde_json::json;

use crate::common::*;
use crate::concurrency::assert_consistent;

fn meta_of(dir: &std::path::Path) -> serde_json::Map<String, serde_json::Value> {
    serde_json::from_str(&fs::read_to_string(dir.join("meta.json")).expect("meta")).expect("json")
}

/// Installs copies of the example packs into a fresh packs dir; returns the env.
fn install_examples() -> Option<TestEnv> {
    let Some(shared) = shared_dir() else {
        eprintln!("skipping: ../shared/engram-packs is absent");
        return None;
    };
    let env = TestEnv::new();
    let src = env.dir.path().join("src");
    for name in EXAMPLE_PACKS {
        let from = shared.join("engram-packs/examples").join(name);
        copy_tree(&from, &src.join(name));
        let out = env.cli(&["install", &src.join(name).display().to_string()]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let meta = meta_of(&from);
        let shown = meta.get("name").and_then(|v| v.as_str()).filter(|s| !s.is_empty()).unwrap_or(name);
        let desc = meta.get("description").and_then(|v| v.as_str()).unwrap_or("");
        assert_eq!(stdout.trim_end(), format!("安装成功：{shown} - {desc}").trim_end(), "{name}");
        assert!(env.pack(name).join(".git").exists());
    }
    // The global sample memory, as the reference ships it beside the packs.
    copy_tree(&shared.join("engram-packs/examples/_global"), &env.packs.join("_global"));
    Some(env)
}

/// `engram lint <name>` for every example: the reference's results (only `template`, with its
/// empty name and description, has errors).
fn assert_lint_like_the_reference(env: &TestEnv) {
    for name in EXAMPLE_PACKS {
        let out = env.cli(&["lint", name]);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if name == "template" {
            assert_eq!(
                stdout,
                "template: 2 errors, 0 warnings\n  [error] meta.json: meta.json 缺少 name 字段\n  [error] meta.json: meta.json 缺少 description 字段\n"
            );
            assert_eq!(out.status.code(), Some(1));
        } else {
            assert_eq!(stdout, format!("{name}: 0 errors, 0 warnings\n"));
            assert!(out.status.success());
        }
    }
}

/// How many `*-expired.md` files the pack's `memory/` holds.
fn expired_files(pack: &std::path::Path) -> usize {
    fs::read_dir(pack.join("memory"))
        .expect("memory")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with("-expired.md"))
        .count()
}

#[tokio::test]
async fn example_packs_install_list_and_load() {
    let Some(env) = install_examples() else { return };
    assert_lint_like_the_reference(&env);
    let list = String::from_utf8_lossy(&env.cli(&["list"]).stdout).into_owned();
    assert_eq!(list.lines().count(), 12, "{list}");
    assert!(list.contains("- fitness-coach: "), "{list}");
    assert!(
        list.lines().any(|l| l == "- :  (knowledge=0, examples=0)"),
        "template lists with its empty name and description: {list}"
    );

    let c = env.client().await;
    for name in EXAMPLE_PACKS {
        let load = ok(&c, "load_engram", json!({"name": name, "query": "你好"})).await;
        assert!(
            load.starts_with(&format!("# 已加载 Engram: {name}\n\n## 用户关注方向\n你好\n\n## 角色\n")),
            "{name}: {load}"
        );
        assert!(
            load.contains("## 工作流程\n") && load.contains("## 规则\n") && load.contains("## 知识索引\n"),
            "{name}"
        );
        assert!(load.contains("## 全局用户记忆\n<global_memory>\n## 分类摘要\n- `user-profile` [2026-02-25 10:02] [preference] 偏好中文交流"), "{name}: {load}");
        assert!(
            load.contains(
                "- `memory/user-profile.md` [2026-02-25 10:00] [fact] 用户名叫 Jammy，32岁，佛山\n"
            ),
            "{name}"
        );
        if name == "template" {
            assert!(load.contains("## 首次引导\n> 这是用户首次使用此专家"), "{name}");
            continue;
        }
        assert!(load.contains("## 案例索引\n"), "{name}");
        assert!(load.contains("## 动态记忆\n<memory>\n## 分类摘要\n"), "{name}: {load}");
        assert!(!load.contains("首次引导"), "{name}: the example packs ship memory files");
        assert!(
            !load.contains("expires:2026-0"),
            "{name}: every example's expiry date is past and must not be shown"
        );
        let pack = env.pack(name);
        // Reads never commit: the expired entry is hidden, and moved by the next memory write.
        assert_eq!(expired_files(&pack), 0, "{name}: a load moved entries");
        assert!(git(&pack, &["log", "-1", "--format=%s"]).starts_with("adopt:"), "{name}");
        assert_clean(&pack);
        assert_fsck(&pack);
    }
    let sn = ok(&c, "load_engram", json!({"name": "sports-nutritionist", "query": ""})).await;
    assert!(sn.contains("## 继承知识索引（来自 fitness-coach）\n"), "{sn}");
    let fc = ok(&c, "load_engram", json!({"name": "fitness-coach", "query": ""})).await;
    assert!(fc.contains(
        "## 分类摘要\n- `preferences` [2026-02-25 08:00] [consolidated] 训练时间/设备/饮食偏好摘要（原始3条已归档至 preferences-archive.md）\n- `user-profile` [2026-02-25 09:30] [stated] 用户明确表示只在早晨训练\n\n## 最近记忆（最多50条）\n"
    ), "{fc}");
    // A capture into an example pack first moves the expired entry (and migrates the index)
    // in a commit of its own, and keeps everything consistent.
    ok(&c, "capture_memory", json!({"name": "fitness-coach", "category": "user-profile", "content": "膝盖已恢复", "summary": "膝盖已恢复"})).await;
    let fc_dir = env.pack("fitness-coach");
    assert_eq!(expired_files(&fc_dir), 1, "the inferred entry moved to -expired.md");
    assert!(git(&fc_dir, &["log", "-1", "--skip=1", "--format=%s"]).starts_with("expire: 1 entries"));
    // The hand-written headers stay in the full index as non-entry lines.
    assert!(env.read("fitness-coach", "memory/_index_full.md").starts_with("## 动态记忆\n\n### 用户档案\n"));
    let hot = env.read("fitness-coach", "memory/_index.md");
    assert!(hot.contains("- `user-profile` [2026-11-22 10:00] [general] 膝盖已恢复"), "{hot}");
    c.close().await.expect("close");
    // What we wrote (expiry moves, migrated indexes, a capture) still lints like the reference.
    assert_lint_like_the_reference(&env);
}

#[tokio::test]
async fn reference_fixtures_load_like_the_reference() {
    let Some(shared) = shared_dir() else {
        eprintln!("skipping: ../shared/engram-packs is absent");
        return;
    };
    let env = TestEnv::new();
    for name in ["fitness-coach", "contract-lawyer"] {
        copy_tree(&shared.join("engram-packs/fixtures").join(name), &env.pack(name));
    }
    let c = env.client().await;
    let list = ok(&c, "list_engrams", json!({})).await;
    assert!(list.contains("(knowledge=5, examples=3)"), "{list}");
    let info = ok(&c, "get_engram_info", json!({"name": "fitness-coach"})).await;
    assert!(info.contains("\"knowledge_count\": 5"));
    let load = ok(&c, "load_engram", json!({"name": "fitness-coach", "query": "膝盖疼能做深蹲吗"})).await;
    for s in ["## 角色", "## 工作流程", "## 规则", "## 知识索引", "摘要：", "## 案例索引", "uses:"]
    {
        assert!(load.contains(s), "{s}");
    }
    let read =
        ok(&c, "read_engram_file", json!({"name": "fitness-coach", "path": "knowledge/膝关节损伤训练.md"}))
            .await;
    assert!(read.starts_with("## knowledge/膝关节损伤训练.md\n"));
    let e =
        err(&c, "read_engram_file", json!({"name": "fitness-coach", "path": "../contract-lawyer/meta.json"}))
            .await;
    assert!(e.contains("未找到文件"), "{e}");
    let contract = ok(&c, "load_engram", json!({"name": "contract-lawyer", "query": ""})).await;
    assert!(!contract.contains("examples/"), "{contract}");
    // Reading never writes: fixtures without memory stay untouched.
    assert!(!env.pack("contract-lawyer").join(".git").exists());
    c.close().await.expect("close");
    let _ = assert_consistent;
}
