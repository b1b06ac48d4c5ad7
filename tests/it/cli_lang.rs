//! The CLI speaks the reader's language (issue #35, item 8): `ENGRAM_LANG=zh|en` wins, else
//! the locale (`LC_ALL`, `LC_MESSAGES`, `LANG`; `zh…` is Chinese, anything else or none
//! English). The MCP tools answer the Python Engram server's Chinese texts whatever the locale.

use std::process::Output;

use serde_json::json;

use crate::common::{NOW, TestEnv, bin, ok};

/// English (`ENGRAM_LANG=en`), Chinese by locale (`LANG=zh_CN.UTF-8`), and no locale at all
/// (English).
const EN: &[(&str, &str)] = &[("ENGRAM_LANG", "en")];
const ZH: &[(&str, &str)] = &[("LANG", "zh_CN.UTF-8")];
const NO_LOCALE: &[(&str, &str)] = &[];

/// Runs the CLI from a cleared environment (`PATH`, `HOME`, the pinned clock) plus `vars`:
/// unlike `TestEnv::cli`, no `ENGRAM_LANG` unless `vars` sets one.
fn cli(env: &TestEnv, vars: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = std::process::Command::new(bin());
    cmd.args(args).arg("--packs-dir").arg(&env.packs).current_dir(env.dir.path());
    cmd.env_clear().envs(engram::settings::child_env());
    cmd.env("HOME", env.dir.path()).env("ENGRAM_NOW", NOW).envs(vars.iter().copied());
    cmd.output().expect("run engram")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn has_cjk(s: &str) -> bool {
    s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
}

#[test]
fn install_results_and_errors_follow_the_locale() {
    let env = TestEnv::new();
    let first = cli(&env, EN, &["install", "builtin:demo"]);
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(stdout(&first).starts_with("installed: demo - "), "{}", stdout(&first));

    // Install into a directory that exists.
    let en = cli(&env, EN, &["install", "builtin:demo"]);
    assert_eq!(en.status.code(), Some(1));
    assert_eq!(stderr(&en).trim(), "install failed: the directory already exists: demo");
    let zh = cli(&env, ZH, &["install", "builtin:demo"]);
    assert_eq!(zh.status.code(), Some(1));
    assert_eq!(stderr(&zh).trim(), "安装失败：目标目录已存在 demo");
    let none = cli(&env, NO_LOCALE, &["install", "builtin:demo"]);
    assert_eq!(stderr(&none).trim(), "install failed: the directory already exists: demo");
    // ENGRAM_LANG wins over the locale, both ways.
    let both = [("LANG", "zh_CN.UTF-8"), ("ENGRAM_LANG", "en")];
    assert!(stderr(&cli(&env, &both, &["install", "builtin:demo"])).starts_with("install failed:"));
    let both = [("LC_ALL", "en_US.UTF-8"), ("ENGRAM_LANG", "zh")];
    assert!(stderr(&cli(&env, &both, &["install", "builtin:demo"])).starts_with("安装失败："));

    // A source that is neither a directory nor a registry entry.
    let en = cli(&env, EN, &["install", "no-such-pack"]);
    assert_eq!(en.status.code(), Some(1));
    let text = stderr(&en);
    assert!(text.starts_with("install failed: no pack named no-such-pack in the registry"), "{text}");
    assert!(!has_cjk(&text), "{text}");
    let zh = cli(&env, ZH, &["install", "no-such-pack"]);
    assert_eq!(stderr(&zh).trim(), "安装失败：未在 registry 中找到 no-such-pack");
    let missing = env.dir.path().join("nowhere").join("pack");
    let en = cli(&env, EN, &["install", &missing.display().to_string()]);
    assert!(stderr(&en).contains("is neither a directory nor a pack in the registry"), "{}", stderr(&en));
}

#[test]
fn lint_findings_and_the_error_line_follow_the_locale() {
    let env = TestEnv::new();
    assert!(cli(&env, ZH, &["init", "coach"]).status.success());
    std::fs::remove_file(env.pack("coach").join("knowledge/主题A.md")).expect("remove a knowledge file");

    let en = cli(&env, EN, &["lint", "coach"]);
    assert_eq!(en.status.code(), Some(1));
    let text = stdout(&en);
    assert!(text.starts_with("coach: 3 errors, 0 warnings\n"), "{text}");
    assert!(
        text.contains(
            "[error] knowledge/_index.md: the index names a file that does not exist: `knowledge/主题A.md`"
        ),
        "{text}"
    );
    assert!(text.contains("uses names a file that does not exist: knowledge/主题A.md"), "{text}");
    assert!(!text.contains("索引引用"), "{text}");
    let zh = cli(&env, ZH, &["lint", "coach"]);
    assert_eq!(zh.status.code(), Some(1));
    assert!(stdout(&zh).contains("[error] knowledge/_index.md: 索引引用文件不存在：`knowledge/主题A.md`"));

    let en = cli(&env, EN, &["lint", "nope"]);
    assert_eq!(stdout(&en).trim(), "nope: 1 errors, 0 warnings\n  [error] .: no such pack");
    let zh = cli(&env, ZH, &["lint", "nope"]);
    assert_eq!(stdout(&zh).trim(), "nope: 1 errors, 0 warnings\n  [error] .: 未找到 Engram");

    // The CLI's error line.
    let en = cli(&env, EN, &["show", "nope", "abc123"]);
    assert_eq!(en.status.code(), Some(1));
    assert!(stderr(&en).starts_with("engram: no pack named nope"), "{}", stderr(&en));
    let zh = cli(&env, ZH, &["show", "nope", "abc123"]);
    assert!(stderr(&zh).starts_with("engram: 未找到 Engram: nope"), "{}", stderr(&zh));
}

#[test]
fn init_lang_en_writes_an_english_template_that_lints_clean() {
    let env = TestEnv::new();
    let out = cli(&env, ZH, &["init", "english", "--lang", "en"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Messages follow the locale; `--lang` is the template's language.
    assert!(stdout(&out).starts_with("初始化成功："), "{}", stdout(&out));
    let pack = env.pack("english");
    for f in [
        "meta.json",
        "role.md",
        "workflow.md",
        "rules.md",
        "knowledge/_index.md",
        "knowledge/topic-a.md",
        "knowledge/topic-b.md",
        "examples/_index.md",
        "examples/finished-example.md",
        "examples/blank-example.md",
        "memory/_index.md",
    ] {
        assert!(pack.join(f).is_file(), "{f}");
    }
    assert!(!pack.join("knowledge/主题A.md").exists());
    assert!(env.read("english", "role.md").starts_with("# Background\n"));
    assert!(env.read("english", "meta.json").contains("\"description\": \"english expert pack\""));
    let lint = cli(&env, EN, &["lint", "english"]);
    assert!(lint.status.success(), "{}", stdout(&lint));
    assert_eq!(stdout(&lint).trim(), "english: 0 errors, 0 warnings");

    // Nested, with the template following the locale (English: ENGRAM_LANG=en).
    let out = cli(&env, EN, &["init", "nested", "--nested"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("initialized: "), "{}", stdout(&out));
    assert!(env.pack("nested").join("knowledge/example-group/_index.md").is_file());
    let lint = cli(&env, EN, &["lint", "nested"]);
    assert_eq!(stdout(&lint).trim(), "nested: 0 errors, 0 warnings");

    // `--lang zh` and a Chinese locale keep the reference's template.
    for (name, vars, args) in
        [("zh1", EN, &["--lang", "zh"][..]), ("zh2", ZH, &[][..]), ("zh3", ZH, &["--nested"][..])]
    {
        let mut all = vec!["init", name];
        all.extend_from_slice(args);
        assert!(cli(&env, vars, &all).status.success(), "{name}");
        assert!(env.pack(name).join("knowledge/主题A.md").is_file(), "{name}");
        assert_eq!(stdout(&cli(&env, vars, &["lint", name])).trim(), format!("{name}: 0 errors, 0 warnings"));
    }

    // Init into a directory that exists.
    let en = cli(&env, EN, &["init", "english"]);
    assert_eq!(stderr(&en).trim(), "init failed: the directory already exists: english");
    let zh = cli(&env, ZH, &["init", "english"]);
    assert_eq!(stderr(&zh).trim(), "初始化失败：目标目录已存在 english");
}

/// The MCP tools answer the reference's Chinese whatever the server's locale.
#[tokio::test]
async fn mcp_texts_do_not_follow_the_locale() {
    let mut env = TestEnv::new();
    env.vars = vec![("ENGRAM_LANG".into(), "en".into()), ("LANG".into(), "en_US.UTF-8".into())];
    let c = env.client_with(&["--tools", "engram,authoring"]).await;
    let init = ok(&c, "init_engram", json!({"name": "coach"})).await;
    assert!(init.starts_with("初始化成功："), "{init}");
    assert!(env.pack("coach").join("knowledge/主题A.md").is_file());
    std::fs::remove_file(env.pack("coach").join("knowledge/主题A.md")).expect("remove a knowledge file");
    let lint = ok(&c, "lint_engrams", json!({"name": "coach"})).await;
    assert!(lint.contains("[error] knowledge/_index.md: 索引引用文件不存在：`knowledge/主题A.md`"), "{lint}");
    assert!(lint.ends_with("总计: 1 Engram, 3 errors, 0 warnings"), "{lint}");
    let installed = ok(&c, "install_engram", json!({"source": "builtin:demo"})).await;
    assert!(installed.starts_with("安装成功：demo - "), "{installed}");
    let again = c.call("install_engram", json!({"source": "builtin:demo"})).await.expect("call");
    assert!(again.is_error);
    assert!(again.text.contains("安装失败：目标目录已存在 demo"), "{}", again.text);
    c.close().await.expect("close");
}
