//! A damaged pack is isolated: with one of three packs damaged (its branch unreadable, an
//! object of its last commit missing, or its `meta.json` broken), every reading tool and
//! command keeps answering for the other two and names the damaged one with the
//! `engram doctor` command — MCP `search_memory`, `load_engram`, `list_engrams`,
//! `stats_engrams`; `engram search`, `list`, `stats`, `log`, `sync`; the web page (`/`,
//! `/api/packs`, a pack's page).

use std::path::Path;

use serde_json::{Value, json};

use crate::common::*;
use crate::ui::UiServer;

/// The packs; the middle one is damaged.
const PACKS: [&str; 3] = ["alpha", "beta", "gamma"];
const DAMAGED: &str = "beta";
const DOCTOR: &str = "engram doctor beta";

#[derive(Debug, Clone, Copy)]
enum Damage {
    /// Garbage in `refs/heads/<branch>`: HEAD "cannot be peeled".
    UnreadableBranch,
    /// The loose blob of a memory file of HEAD deleted.
    MissingObject,
    /// `meta.json` is not JSON.
    BrokenMeta,
}

/// The three packs, each with one memory (all matching `marmalade`) and a remote that is a
/// local bare repository.
async fn three_packs() -> TestEnv {
    let env = TestEnv::new();
    for p in PACKS {
        env.init(p);
        let bare = env.dir.path().join("remotes").join(format!("{p}.git"));
        let made = git_command().args(["init", "--bare", "-q"]).arg(&bare).output().expect("git init --bare");
        assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
        cli_ok(&env, &["remote", "add", p, &bare.display().to_string()]);
    }
    let c = env.client().await;
    for p in PACKS {
        let args = json!({"name": p, "category": "pantry", "content": format!("{p} keeps marmalade on the top shelf"), "summary": format!("{p} marmalade")});
        ok(&c, "capture_memory", args).await;
    }
    drop(c);
    env
}

fn damage(env: &TestEnv, kind: Damage) {
    let pack = env.pack(DAMAGED);
    match kind {
        Damage::UnreadableBranch => {
            let branch = git(&pack, &["symbolic-ref", "HEAD"]).trim().to_owned();
            std::fs::write(pack.join(".git").join(&branch), "this is not a commit id\n").expect("write ref");
        }
        Damage::MissingObject => {
            let blob = memory_blob(&pack);
            let loose = pack.join(".git/objects").join(&blob[..2]).join(&blob[2..]);
            std::fs::remove_file(&loose).unwrap_or_else(|e| panic!("remove {}: {e}", loose.display()));
        }
        Damage::BrokenMeta => {
            std::fs::write(pack.join("meta.json"), "{\"name\": \"beta\", oops").expect("write meta");
        }
    }
}

/// The blob id of the pack's category log of `pantry` memories.
fn memory_blob(pack: &Path) -> String {
    let listing = git(pack, &["ls-tree", "-r", "HEAD", "memory/"]);
    let line =
        listing.lines().find(|l| l.contains("pantry")).unwrap_or_else(|| panic!("no pantry file: {listing}"));
    line.split_whitespace().nth(2).expect("an object id").to_owned()
}

/// `text` answers for alpha and gamma and names beta with the doctor command.
fn isolated(what: &str, text: &str) {
    for p in ["alpha", "gamma"] {
        assert!(text.contains(p), "{what}: {p} is missing:\n{text}");
    }
    assert!(text.contains(DOCTOR), "{what}: the damaged pack is not named with `{DOCTOR}`:\n{text}");
}

fn run(env: &TestEnv, args: &[&str]) -> (String, String) {
    let out = env.cli(args);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "engram {args:?} exited {:?}:\n{stdout}\n{stderr}", out.status);
    (stdout, stderr)
}

async fn check(kind: Damage) {
    let env = three_packs().await;
    damage(&env, kind);
    let k = format!("{kind:?}");

    // The tools (`stats_engrams` is in the authoring toolset).
    let c = env.client_with(&["--tools", "all"]).await;
    let found = ok(&c, "search_memory", json!({"query": "marmalade"})).await;
    isolated(&format!("{k} search_memory"), &found);
    assert!(found.contains("] alpha ·") && found.contains("] gamma ·"), "{k}: hits of both:\n{found}");
    for p in ["alpha", "gamma"] {
        let load = ok(&c, "load_engram", json!({"name": p, "query": "marmalade"})).await;
        assert!(load.contains("marmalade"), "{k}: load_engram {p}:\n{load}");
    }
    let listed = ok(&c, "list_engrams", json!({})).await;
    isolated(&format!("{k} list_engrams"), &listed);
    assert!(listed.contains("- alpha:") && listed.contains("- gamma:"), "{k}:\n{listed}");
    let stats = ok(&c, "stats_engrams", json!({})).await;
    isolated(&format!("{k} stats_engrams"), &stats);
    drop(c);

    // The commands: the report on standard output, the damaged pack on standard error.
    let (out, err) = run(&env, &["search", "marmalade"]);
    assert!(out.contains("] alpha ·") && out.contains("] gamma ·"), "{k} engram search:\n{out}\n{err}");
    isolated(&format!("{k} engram search"), &format!("{out}{err}"));
    assert!(err.contains(DOCTOR), "{k}: engram search warns on standard error: {err}");
    let (out, err) = run(&env, &["list"]);
    isolated(&format!("{k} engram list"), &format!("{out}{err}"));
    let (out, err) = run(&env, &["stats"]);
    assert!(out.contains("alpha") && out.contains("gamma"), "{k} engram stats:\n{out}");
    assert!(err.contains(DOCTOR), "{k}: engram stats warns on standard error: {err}");
    let (out, err) = run(&env, &["stats", "--json"]);
    let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{k} stats --json: {e}\n{out}"));
    assert!(report["engrams"].as_array().is_some_and(|a| a.len() >= 2), "{k}: {report}");
    assert!(err.contains(DOCTOR), "{k}: {err}");
    let (out, err) = run(&env, &["log"]);
    assert!(out.contains("=== alpha ===") && out.contains("=== gamma ==="), "{k} engram log:\n{out}\n{err}");
    assert!(err.contains(DOCTOR), "{k}: engram log names the damaged pack: {err}");
    let (out, err) = run(&env, &["sync", "--all"]);
    assert!(err.contains(DOCTOR), "{k}: engram sync names the skipped pack: {out}\n{err}");
    for p in ["alpha", "gamma"] {
        let bare = env.dir.path().join("remotes").join(format!("{p}.git"));
        assert!(
            !git(&bare, &["rev-parse", "--all"]).trim().is_empty(),
            "{k}: {p} was not pushed: {out}\n{err}"
        );
    }
    let doctor = env.cli(&["doctor", DAMAGED]);
    assert_eq!(doctor.status.code(), Some(1), "{k}: engram doctor finds the damage");

    // The web page.
    let ui = UiServer::start(&env);
    let (status, packs) = ui.api("GET", "/api/packs", None);
    assert_eq!(status, 200, "{k}: {packs}");
    let rows = packs.as_array().expect("a list of packs");
    for p in ["alpha", "gamma"] {
        let row =
            rows.iter().find(|r| r["name"] == p).unwrap_or_else(|| panic!("{k}: {p} not listed: {packs}"));
        assert_eq!(row["memories"], 1, "{k}: {row}");
        assert!(row["damaged"].is_null(), "{k}: {row}");
    }
    let beta =
        rows.iter().find(|r| r["name"] == DAMAGED).unwrap_or_else(|| panic!("{k}: beta not listed: {packs}"));
    assert_eq!(beta["damaged"]["doctor"], DOCTOR, "{k}: {beta}");
    assert!(!beta["damaged"]["diagnosis"].as_str().unwrap_or_default().is_empty(), "{k}: {beta}");
    let auth = format!("Bearer {}", ui.token);
    let (status, _, home) = ui.request("GET", "/", &[("Authorization", &auth)], "");
    assert_eq!(status, 200, "{k}: {home}");
    assert!(home.contains("href=\"/p/alpha\"") && home.contains("href=\"/p/gamma\""), "{k}: {home}");
    assert!(
        home.contains("badge damaged") && home.contains(DOCTOR),
        "{k}: no warning on the home page: {home}"
    );
    assert_eq!(home.matches("badge damaged").count(), 1, "{k}: only beta is damaged: {home}");
    let (status, _, page) = ui.request("GET", "/p/beta", &[("Authorization", &auth)], "");
    assert_eq!(status, 200, "{k}: {page}");
    assert!(
        page.contains("badge damaged") && page.contains(DOCTOR),
        "{k}: no warning on beta's page: {page}"
    );
    let (status, _, page) = ui.request("GET", "/p/alpha", &[("Authorization", &auth)], "");
    assert_eq!(status, 200, "{k}: {page}");
    assert!(!page.contains("badge damaged"), "{k}: alpha is not damaged: {page}");
}

#[tokio::test]
async fn an_unreadable_branch_is_named_and_the_other_packs_keep_working() {
    check(Damage::UnreadableBranch).await;
}

#[tokio::test]
async fn a_missing_object_is_named_and_the_other_packs_keep_working() {
    check(Damage::MissingObject).await;
}

#[tokio::test]
async fn a_broken_meta_json_is_named_and_the_other_packs_keep_working() {
    check(Damage::BrokenMeta).await;
}
