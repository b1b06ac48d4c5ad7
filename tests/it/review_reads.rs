//! What a proposing client (`serve --propose`, or the pack's setting) reads: the pack as it
//! is now plus its own proposals — also after the pack's branch moved on, in every toolset
//! (load, search, files; notes, graph, personal) — while the pack's branch never shows the
//! proposal until it is accepted, and then exactly once. The pack's setting reaches a running
//! server; a proposing client is not offered `review_proposal`.

use std::path::Path;

use serde_json::json;

use crate::common::*;

fn capture(category: &str, content: &str) -> serde_json::Value {
    json!({"name": "team", "category": category, "content": content, "summary": content})
}

fn head(pack: &Path) -> String {
    git(pack, &["rev-parse", "HEAD"]).trim().to_owned()
}

/// The memory entry lines of a `load_engram` answer that contain `text`.
fn entries_with(load: &str, text: &str) -> usize {
    load.lines().filter(|l| l.starts_with("- `memory/") && l.contains(text)).count()
}

#[tokio::test]
async fn a_proposer_sees_the_packs_later_commits_and_its_proposal_reaches_main_once() {
    let env = TestEnv::new();
    env.init("team");
    let pack = env.pack("team");
    let proposer = env.client_named("alice", &["--propose"]).await;
    let direct = env.client_named("bob", &[]).await;

    ok(&proposer, "capture_memory", capture("facts", "Okapi-proposed fact")).await;
    // The pack's branch moves on after the proposal started, in the same category file too.
    ok(&direct, "capture_memory", capture("facts", "Heron-main fact")).await;
    ok(&direct, "capture_memory", capture("people", "Ibis-main person")).await;
    let main = head(&pack);

    // The proposer's loads, searches and file reads see both; the pack's branch does not move.
    let seen = ok(&proposer, "load_engram", json!({"name": "team", "query": "x"})).await;
    for fact in ["Okapi-proposed", "Heron-main", "Ibis-main"] {
        assert_eq!(entries_with(&seen, fact), 1, "{fact} in {seen}");
    }
    let found = ok(&proposer, "search_memory", json!({"query": "Heron", "name": "team"})).await;
    assert!(found.contains("Heron-main"), "{found}");
    let found = ok(&proposer, "search_memory", json!({"query": "Okapi", "name": "team"})).await;
    assert!(found.contains("Okapi-proposed"), "{found}");
    let file = ok(&proposer, "read_engram_file", json!({"name": "team", "path": "memory/facts.md"})).await;
    assert!(file.contains("Okapi-proposed") && file.contains("Heron-main"), "{file}");
    assert_eq!(head(&pack), main, "reads of a proposer never move the pack's branch");
    assert!(!git(&pack, &["log", "--format=%s%n%b", "HEAD"]).contains("Okapi"));
    assert!(!env.read("team", "memory/_index_full.md").contains("Okapi"));
    assert_clean(&pack);
    // The pack's branch is an ancestor of the proposal now: nothing of it to review.
    assert_eq!(git(&pack, &["merge-base", "--is-ancestor", "HEAD", "proposals/alice"]), "");
    let listed = cli_ok(&env, &["review", "list", "team"]);
    assert!(listed.contains("proposals/alice — 1 commit(s) to review, main moved 0 commit(s)"), "{listed}");

    // Others still see the pack without it.
    let other = ok(&direct, "load_engram", json!({"name": "team", "query": "x"})).await;
    assert_eq!(entries_with(&other, "Okapi"), 0, "{other}");

    // A later proposal builds on that; the review shows only the proposer's own entries.
    ok(&proposer, "capture_memory", capture("facts", "Quokka-proposed fact")).await;
    ok(&direct, "capture_memory", capture("facts", "Kestrel-main fact")).await;
    let seen = ok(&proposer, "load_engram", json!({"name": "team", "query": "x"})).await;
    for fact in ["Okapi-proposed", "Heron-main", "Ibis-main", "Quokka-proposed", "Kestrel-main"] {
        assert_eq!(entries_with(&seen, fact), 1, "{fact} in {seen}");
    }
    let shown = cli_ok(&env, &["review", "show", "team", "proposals/alice"]);
    assert!(shown.contains("memories added): 2") && shown.contains("memories removed): 0"), "{shown}");
    assert!(shown.contains("Okapi-proposed") && shown.contains("Quokka-proposed"), "{shown}");
    assert!(!shown.contains("Heron") && !shown.contains("Kestrel"), "{shown}");
    assert!(shown.contains("(commits): 2"), "{shown}");

    // Accepted: every memory exactly once, nothing in conflict.
    let accepted = cli_ok(&env, &["review", "accept", "team", "proposals/alice"]);
    assert!(accepted.contains("accepted"), "{accepted}");
    let index = env.read("team", "memory/_index_full.md");
    let facts = env.read("team", "memory/facts.md");
    for fact in ["Okapi-proposed", "Heron-main", "Quokka-proposed", "Kestrel-main"] {
        assert_eq!(index.matches(fact).count(), 1, "{fact} in {index}");
        assert_eq!(facts.matches(fact).count(), 1, "{fact} in {facts}");
    }
    assert_eq!(index.matches("Ibis-main").count(), 1, "{index}");
    assert!(!pack.join("memory/_conflicts.md").exists());
    for client in [&proposer, &direct] {
        let seen = ok(client, "load_engram", json!({"name": "team", "query": "x"})).await;
        for fact in ["Okapi-proposed", "Heron-main", "Ibis-main", "Quokka-proposed", "Kestrel-main"] {
            assert_eq!(entries_with(&seen, fact), 1, "{fact} in {seen}");
        }
    }
    assert_clean(&pack);
    assert_fsck(&pack);
    proposer.close().await.expect("close");
    direct.close().await.expect("close");
}

#[tokio::test]
async fn a_proposal_brought_up_to_date_and_then_rejected_leaves_main_untouched() {
    let env = TestEnv::new();
    env.init("team");
    let pack = env.pack("team");
    let proposer = env.client_named("alice", &["--propose"]).await;
    let direct = env.client_named("bob", &[]).await;
    ok(&proposer, "capture_memory", capture("facts", "Rejected-proposal fact")).await;
    ok(&direct, "capture_memory", capture("facts", "Kept-main fact")).await;
    let seen = ok(&proposer, "load_engram", json!({"name": "team", "query": "x"})).await;
    assert!(seen.contains("Kept-main") && seen.contains("Rejected-proposal"), "{seen}");
    let (main, tree) = (head(&pack), git(&pack, &["ls-tree", "-r", "HEAD"]));
    let rejected = cli_ok(&env, &["review", "reject", "team", "proposals/alice"]);
    assert!(rejected.contains("rejected"), "{rejected}");
    assert_eq!(head(&pack), main);
    assert_eq!(git(&pack, &["ls-tree", "-r", "HEAD"]), tree);
    assert!(!branches(&pack).contains("proposals/"));
    // The proposer reads the pack as it is again.
    let seen = ok(&proposer, "load_engram", json!({"name": "team", "query": "x"})).await;
    assert!(seen.contains("Kept-main") && !seen.contains("Rejected-proposal"), "{seen}");
    assert_clean(&pack);
    assert_fsck(&pack);
    proposer.close().await.expect("close");
    direct.close().await.expect("close");
}

#[tokio::test]
async fn notes_graph_and_personal_reads_of_a_proposer_see_its_proposals_over_the_current_pack() {
    let env = TestEnv::new();
    let tools = ["--tools", "notes,graph,personal"];
    let proposer = env.client_named("alice", &["--propose", tools[0], tools[1]]).await;
    let direct = env.client_named("bob", &tools).await;
    // The pack exists on its branch first (the direct client's write).
    ok(&direct, "store", json!({"title": "Main note one", "content": "written on the branch"})).await;
    let pack = env.pack("personal");
    let main = head(&pack);

    ok(&proposer, "store", json!({"title": "Proposed note", "content": "only in the proposal"})).await;
    ok(
        &proposer,
        "create_entities",
        json!({"entities": [{"name": "Proposed-Entity", "entityType": "project", "observations": ["from alice"]}]}),
    )
    .await;
    ok(&proposer, "update_profile", json!({"key": "city", "value": "Proposed-City"})).await;
    assert_eq!(head(&pack), main, "the proposer's writes land on its proposal branch");
    assert!(branches(&pack).contains("proposals/alice"), "{}", branches(&pack));

    // The pack's branch moves on after the proposal started.
    ok(&direct, "store", json!({"title": "Main note two", "content": "written later on the branch"})).await;
    ok(
        &direct,
        "create_entities",
        json!({"entities": [{"name": "Main-Entity", "entityType": "project", "observations": ["from bob"]}]}),
    )
    .await;
    ok(&direct, "update_profile", json!({"key": "language", "value": "Main-Language"})).await;

    let recalled = ok(&proposer, "recall", json!({})).await;
    for title in ["Main note one", "Proposed note", "Main note two"] {
        assert!(recalled.contains(title), "{title} in {recalled}");
    }
    let graph = ok(&proposer, "read_graph", json!({})).await;
    assert!(graph.contains("Proposed-Entity") && graph.contains("Main-Entity"), "{graph}");
    let found = ok(&proposer, "search_nodes", json!({"query": "Entity"})).await;
    assert!(found.contains("Proposed-Entity") && found.contains("Main-Entity"), "{found}");
    let profile = ok(&proposer, "query_profile", json!({})).await;
    assert!(profile.contains("Proposed-City") && profile.contains("Main-Language"), "{profile}");

    // The direct client sees the branch only.
    let recalled = ok(&direct, "recall", json!({})).await;
    assert!(recalled.contains("Main note two") && !recalled.contains("Proposed note"), "{recalled}");
    let graph = ok(&direct, "read_graph", json!({})).await;
    assert!(graph.contains("Main-Entity") && !graph.contains("Proposed-Entity"), "{graph}");
    let profile = ok(&direct, "query_profile", json!({})).await;
    assert!(profile.contains("Main-Language") && !profile.contains("Proposed-City"), "{profile}");

    // Accepted: each record once on the branch.
    cli_ok(&env, &["review", "accept", "personal", "proposals/alice"]);
    let recalled = ok(&direct, "recall", json!({})).await;
    assert_eq!(recalled.matches("Proposed note").count(), 1, "{recalled}");
    assert_eq!(recalled.matches("Main note two").count(), 1, "{recalled}");
    let graph = ok(&direct, "read_graph", json!({})).await;
    assert_eq!(graph.matches("Proposed-Entity").count(), 1, "{graph}");
    assert_clean(&pack);
    assert_fsck(&pack);
    proposer.close().await.expect("close");
    direct.close().await.expect("close");
}

#[tokio::test]
async fn the_pack_setting_reaches_a_running_server_both_ways() {
    let env = TestEnv::new();
    env.init("team");
    let pack = env.pack("team");
    let client = env.client_named("carol", &[]).await;
    ok(&client, "capture_memory", capture("facts", "Before-setting fact")).await;
    assert!(env.read("team", "memory/_index_full.md").contains("Before-setting"));

    cli_ok(&env, &["review", "enable", "team"]);
    let before = head(&pack);
    ok(&client, "capture_memory", capture("facts", "While-setting fact")).await;
    assert_eq!(head(&pack), before, "the same server now proposes");
    assert!(branches(&pack).contains("proposals/carol"), "{}", branches(&pack));
    let seen = ok(&client, "load_engram", json!({"name": "team", "query": "x"})).await;
    assert!(seen.contains("While-setting") && seen.contains("proposals/carol"), "{seen}");

    cli_ok(&env, &["review", "disable", "team"]);
    ok(&client, "capture_memory", capture("facts", "After-setting fact")).await;
    let index = env.read("team", "memory/_index_full.md");
    assert!(index.contains("After-setting") && !index.contains("While-setting"), "{index}");
    assert_ne!(head(&pack), before);
    client.close().await.expect("close");
}

#[tokio::test]
async fn a_proposing_client_is_not_offered_review_proposal() {
    let env = TestEnv::new();
    let proposer = env.client_named("alice", &["--propose", "--tools", "all"]).await;
    let names = proposer.tool_names().await.expect("tools");
    assert!(names.iter().any(|n| n == "list_proposals"), "{names:?}");
    assert!(!names.iter().any(|n| n == "review_proposal"), "{names:?}");
    assert_eq!(names.len(), 58, "update the README's tool counts: {names:?}");
    let reviewer = env.client_named("reviewer", &["--tools", "review"]).await;
    let names = reviewer.tool_names().await.expect("tools");
    assert!(names.iter().any(|n| n == "review_proposal"), "{names:?}");
    proposer.close().await.expect("close");
    reviewer.close().await.expect("close");
}
