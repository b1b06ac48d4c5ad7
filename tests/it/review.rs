//! Review before merge (`serve --propose`, `engram review`, the `review` toolset): a
//! proposal is invisible on the pack's branch until accepted, then there exactly once; a
//! rejected one leaves the branch untouched; the secret guard holds on proposal writes; two
//! clients' proposals stay apart; an accept after the branch moved on loses nothing.

use std::path::Path;

use serde_json::json;

use crate::common::*;

fn capture(content: &str) -> serde_json::Value {
    json!({"name": "team", "category": "facts", "content": content, "summary": content})
}

/// The subjects of `git log <branch>`.
fn log(pack: &Path, branch: &str) -> String {
    git(pack, &["log", "--format=%s%n%b", branch])
}

fn head(pack: &Path) -> String {
    git(pack, &["rev-parse", "HEAD"]).trim().to_owned()
}

#[tokio::test]
async fn a_proposal_is_invisible_on_main_until_accepted_then_present_exactly_once() {
    let env = TestEnv::new();
    env.init("team");
    let pack = env.pack("team");
    let proposer = env.client_named("Alice Agent", &["--propose"]).await;
    let other = env.client_named("bob-agent", &[]).await;
    let before = head(&pack);

    let r = ok(&proposer, "capture_memory", capture("Zebrafish-proposal fact")).await;
    assert!(r.contains("commit: "), "{r}");
    // One commit on proposals/Alice-Agent; main, its working tree and other clients see nothing.
    assert_eq!(head(&pack), before, "main did not move");
    assert!(branches(&pack).contains("proposals/Alice-Agent"), "{}", branches(&pack));
    assert_eq!(git(&pack, &["rev-list", "--count", "HEAD..proposals/Alice-Agent"]).trim(), "1");
    assert!(!log(&pack, "HEAD").contains("Zebrafish"));
    assert!(!env.read("team", "memory/_index_full.md").contains("Zebrafish"));
    assert_clean(&pack);
    let seen = ok(&other, "load_engram", json!({"name": "team", "query": "x"})).await;
    assert!(!seen.contains("Zebrafish"), "{seen}");
    let found = ok(&other, "search_memory", json!({"query": "Zebrafish", "name": "team"})).await;
    assert!(!found.contains("Zebrafish-proposal"), "{found}");
    // The proposer sees main plus its own proposals, in loads and searches.
    let own = ok(&proposer, "load_engram", json!({"name": "team", "query": "x"})).await;
    assert!(own.contains("Zebrafish-proposal fact") && own.contains("proposals/Alice-Agent"), "{own}");
    let found = ok(&proposer, "search_memory", json!({"query": "Zebrafish", "name": "team"})).await;
    assert!(found.contains("Zebrafish-proposal"), "{found}");

    // A reviewer lists and reads it.
    let listed = cli_ok(&env, &["review", "list", "team"]);
    assert!(listed.contains("proposals/Alice-Agent — 1 commit(s)"), "{listed}");
    let shown = cli_ok(&env, &["review", "show", "team", "proposals/Alice-Agent"]);
    assert!(shown.contains("memories added): 1") && shown.contains("+ `memory/facts.md`"), "{shown}");
    assert!(shown.contains("Zebrafish-proposal fact") && shown.contains("memories removed): 0"), "{shown}");

    // Accepted: one merge commit on main, the branch gone, the memory there once.
    let accepted = cli_ok(&env, &["review", "accept", "team", "proposals/Alice-Agent"]);
    assert!(accepted.contains("accepted") && accepted.contains("branch deleted"), "{accepted}");
    assert_eq!(
        git(&pack, &["rev-list", "--count", &format!("{before}..HEAD"), "--first-parent"]).trim(),
        "1"
    );
    let merge = git(&pack, &["log", "-1", "--format=%P%n%s", "HEAD"]);
    assert_eq!(merge.lines().next().unwrap_or_default().split(' ').count(), 2, "{merge}");
    assert!(merge.contains("review: accept proposals/Alice-Agent"), "{merge}");
    assert!(!branches(&pack).contains("proposals/"), "{}", branches(&pack));
    assert_eq!(env.read("team", "memory/_index_full.md").matches("Zebrafish-proposal").count(), 1);
    assert_eq!(env.read("team", "memory/facts.md").matches("Zebrafish-proposal").count(), 1);
    let seen = ok(&other, "load_engram", json!({"name": "team", "query": "x"})).await;
    let entry_lines = seen.lines().filter(|l| l.starts_with("- `memory/") && l.contains("Zebrafish"));
    assert_eq!(entry_lines.count(), 1, "{seen}");
    let found = ok(&other, "search_memory", json!({"query": "Zebrafish", "name": "team"})).await;
    assert!(found.contains("Zebrafish-proposal"), "{found}");
    assert_clean(&pack);
    assert_fsck(&pack);
    proposer.close().await.expect("close");
    other.close().await.expect("close");
}

#[tokio::test]
async fn a_rejected_proposal_leaves_main_untouched_and_a_proposer_cannot_review_itself() {
    let env = TestEnv::new();
    env.init("team");
    let pack = env.pack("team");
    let proposer = env.client_named("alice", &["--propose", "--tools", "all"]).await;
    let reviewer = env.client_named("reviewer", &["--tools", "all"]).await;
    let names = reviewer.tool_names().await.expect("tools");
    assert!(names.iter().any(|n| n == "list_proposals") && names.iter().any(|n| n == "review_proposal"));
    let before = head(&pack);
    let files_before = git(&pack, &["ls-tree", "-r", "HEAD"]);

    ok(&proposer, "capture_memory", capture("Rejected-idea one")).await;
    ok(
        &proposer,
        "write_engram_file",
        json!({"name": "team", "path": "knowledge/idea.md", "content": "# Idea\n"}),
    )
    .await;
    // The proposer may not accept or reject its own proposals.
    let refused = err(
        &proposer,
        "review_proposal",
        json!({"name": "team", "branch": "proposals/alice", "action": "accept"}),
    )
    .await;
    assert!(refused.contains("proposals themselves"), "{refused}");

    let listed = ok(&reviewer, "list_proposals", json!({"name": "team"})).await;
    assert!(listed.contains("proposals/alice — 2 commit(s)"), "{listed}");
    let shown = ok(
        &reviewer,
        "review_proposal",
        json!({"name": "team", "branch": "proposals/alice", "action": "show"}),
    )
    .await;
    assert!(shown.contains("Rejected-idea one") && shown.contains("A knowledge/idea.md"), "{shown}");
    let rejected = ok(
        &reviewer,
        "review_proposal",
        json!({"name": "team", "branch": "proposals/alice", "action": "reject"}),
    )
    .await;
    assert!(rejected.contains("rejected"), "{rejected}");
    assert_eq!(head(&pack), before);
    assert_eq!(git(&pack, &["ls-tree", "-r", "HEAD"]), files_before);
    assert!(!branches(&pack).contains("proposals/"));
    assert!(!pack.join("knowledge/idea.md").exists());
    let again = err(
        &reviewer,
        "review_proposal",
        json!({"name": "team", "branch": "proposals/alice", "action": "accept"}),
    )
    .await;
    assert!(again.contains("no branch proposals/alice"), "{again}");
    assert_clean(&pack);
    assert_fsck(&pack);
    proposer.close().await.expect("close");
    reviewer.close().await.expect("close");
}

#[tokio::test]
async fn proposal_writes_keep_the_secret_guard() {
    let env = TestEnv::new();
    env.init("team");
    let pack = env.pack("team");
    let proposer = env.client_named("alice", &["--propose"]).await;
    let token = ["ghp_", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"].concat();
    let refused = err(&proposer, "capture_memory", capture(&format!("the deploy token is {token}"))).await;
    assert!(!refused.contains(&token), "masked: {refused}");
    assert!(!branches(&pack).contains("proposals/"), "nothing written: {}", branches(&pack));
    // A proposal branch that exists refuses it too, and keeps its tip.
    ok(&proposer, "capture_memory", capture("harmless fact")).await;
    let tip = git(&pack, &["rev-parse", "proposals/alice"]);
    err(&proposer, "write_engram_file", json!({"name": "team", "path": "knowledge/k.md", "content": token}))
        .await;
    assert_eq!(git(&pack, &["rev-parse", "proposals/alice"]), tip);
    assert_fsck(&pack);
    proposer.close().await.expect("close");
}

#[tokio::test]
async fn two_clients_proposals_stay_apart() {
    let env = TestEnv::new();
    env.init("team");
    let pack = env.pack("team");
    let a = env.client_named("alice", &["--propose"]).await;
    let c = env.client_named("carol", &["--propose"]).await;
    ok(&a, "capture_memory", capture("Alice-only-proposal")).await;
    ok(&c, "capture_memory", capture("Carol-only-proposal")).await;
    ok(&a, "capture_memory", capture("Alice-second-proposal")).await;
    let seen_a = ok(&a, "load_engram", json!({"name": "team", "query": "x"})).await;
    assert!(seen_a.contains("Alice-only") && seen_a.contains("Alice-second"), "{seen_a}");
    assert!(!seen_a.contains("Carol-only"), "{seen_a}");
    let seen_c = ok(&c, "load_engram", json!({"name": "team", "query": "x"})).await;
    assert!(seen_c.contains("Carol-only") && !seen_c.contains("Alice"), "{seen_c}");
    let found = ok(&c, "search_memory", json!({"query": "proposal", "name": "team"})).await;
    assert!(found.contains("Carol-only") && !found.contains("Alice"), "{found}");
    let show_a = cli_ok(&env, &["review", "show", "team", "proposals/alice"]);
    assert!(show_a.contains("memories added): 2") && !show_a.contains("Carol"), "{show_a}");
    let show_c = cli_ok(&env, &["review", "show", "team", "alice"]);
    assert!(!show_c.contains("Carol"), "{show_c}");
    let show_c = cli_ok(&env, &["review", "show", "team", "proposals/carol"]);
    assert!(show_c.contains("memories added): 1") && !show_c.contains("Alice"), "{show_c}");
    // Accepting one leaves the other waiting.
    cli_ok(&env, &["review", "accept", "team", "proposals/carol"]);
    assert!(branches(&pack).contains("proposals/alice") && !branches(&pack).contains("proposals/carol"));
    let index = env.read("team", "memory/_index_full.md");
    assert!(index.contains("Carol-only") && !index.contains("Alice"), "{index}");
    a.close().await.expect("close");
    c.close().await.expect("close");
}

#[tokio::test]
async fn accept_after_main_moved_on_merges_without_loss() {
    let env = TestEnv::new();
    env.init("team");
    let pack = env.pack("team");
    let proposer = env.client_named("alice", &["--propose"]).await;
    let direct = env.client_named("bob", &[]).await;
    ok(&proposer, "capture_memory", capture("First-proposed fact")).await;
    ok(&direct, "capture_memory", capture("Main-moved fact")).await;
    ok(&proposer, "capture_memory", capture("Second-proposed fact")).await;
    ok(&direct, "capture_memory", json!({"name": "team", "category": "people", "content": "Main-people fact", "summary": "Main-people fact"})).await;
    let listed = cli_ok(&env, &["review", "list", "team"]);
    // Its second write brought the first "Main-moved" in: only "Main-people" is new to it.
    assert!(listed.contains("2 commit(s) to review, main moved 1 commit(s)"), "{listed}");
    let accepted = cli_ok(&env, &["review", "accept", "team", "proposals/alice"]);
    assert!(accepted.contains("2 memories"), "{accepted}");
    let index = env.read("team", "memory/_index_full.md");
    for fact in ["First-proposed", "Main-moved", "Second-proposed", "Main-people"] {
        assert_eq!(index.matches(fact).count(), 1, "{fact} in {index}");
    }
    let facts = env.read("team", "memory/facts.md");
    for fact in ["First-proposed", "Main-moved", "Second-proposed"] {
        assert_eq!(facts.matches(fact).count(), 1, "{fact} in {facts}");
    }
    assert!(!pack.join("memory/_conflicts.md").exists());
    let seen = ok(&direct, "load_engram", json!({"name": "team", "query": "x"})).await;
    let entry_lines: Vec<&str> = seen.lines().filter(|l| l.starts_with("- `memory/")).collect();
    for fact in ["First-proposed", "Main-moved", "Second-proposed", "Main-people"] {
        assert_eq!(entry_lines.iter().filter(|l| l.contains(fact)).count(), 1, "{fact} in {seen}");
    }
    assert_clean(&pack);
    assert_fsck(&pack);
    proposer.close().await.expect("close");
    direct.close().await.expect("close");
}

#[tokio::test]
async fn the_pack_setting_makes_every_clients_writes_proposals() {
    let env = TestEnv::new();
    env.init("team");
    env.init("free");
    let pack = env.pack("team");
    cli_ok(&env, &["review", "enable", "team"]);
    let client = env.client_named("carol", &[]).await;
    let before = head(&pack);
    ok(&client, "capture_memory", capture("Setting-proposed fact")).await;
    ok(
        &client,
        "capture_memory",
        json!({"name": "free", "category": "facts", "content": "free fact", "summary": "free fact"}),
    )
    .await;
    assert_eq!(head(&pack), before);
    assert!(branches(&pack).contains("proposals/carol"));
    assert!(env.read("free", "memory/_index_full.md").contains("free fact"), "other packs write as usual");
    assert!(!branches(&env.pack("free")).contains("proposals/"));
    client.close().await.expect("close");
}

#[tokio::test]
async fn sync_pushes_proposal_branches_under_their_own_name() {
    let env = TestEnv::new();
    env.init("team");
    let pack = env.pack("team");
    let bare = env.dir.path().join("remote.git");
    std::fs::create_dir_all(&bare).expect("mkdir");
    git(&bare, &["init", "--bare", "-q"]);
    cli_ok(&env, &["remote", "add", "team", &bare.display().to_string()]);
    let proposer = env.client_named("alice", &["--propose"]).await;
    ok(&proposer, "capture_memory", capture("Pushed-proposal fact")).await;
    let report = cli_ok(&env, &["sync", "team"]);
    assert!(report.contains("proposal proposals/alice: pushed"), "{report}");
    let tip = git(&pack, &["rev-parse", "proposals/alice"]);
    assert_eq!(git(&bare, &["rev-parse", "proposals/alice"]), tip);
    let main = git(&pack, &["symbolic-ref", "--short", "HEAD"]);
    assert!(!git(&bare, &["log", "--format=%s", main.trim()]).contains("Pushed-proposal"));
    // Nothing new: not pushed again.
    let again = cli_ok(&env, &["sync", "team"]);
    assert!(!again.contains("proposals/alice"), "{again}");
    proposer.close().await.expect("close");
}
