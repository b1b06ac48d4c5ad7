//! The graph toolset over stdio: the reference server's nine tools, their
//! results and errors, one commit per call, import/export, concurrency.

use serde_json::{Value, json};

use crate::common::*;

async fn graph_client(env: &TestEnv) -> StdioClient {
    env.client_with(&["--tools", "graph"]).await
}

fn structured(r: &ToolReply) -> Value {
    r.structured.clone().unwrap_or(Value::Null)
}

fn graph_commits(env: &TestEnv) -> Vec<String> {
    if !env.pack("personal").exists() {
        return Vec::new();
    }
    let log = git(&env.pack("personal"), &["log", "--format=%s"]);
    log.lines().filter(|l| l.starts_with("graph: ")).map(str::to_owned).collect()
}

/// The definition of `delete_entities`, written here from the reference's documented `tools/list`.
const DELETE_ENTITIES: &str = r#"{"name":"delete_entities","title":"Delete Entities","description":"Delete multiple entities and their associated relations from the knowledge graph","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"entityNames":{"type":"array","items":{"type":"string"},"description":"An array of entity names to delete"}},"required":["entityNames"]},"outputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"success":{"type":"boolean"},"message":{"type":"string"}},"required":["success","message"],"additionalProperties":false},"annotations":{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":true,"openWorldHint":false}}"#;

/// Keys rmcp's `Tool` can carry (it has no `execution`).
fn comparable(tool: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for key in ["name", "title", "description", "inputSchema", "outputSchema", "annotations"] {
        if let Some(v) = tool.get(key) {
            out.insert(key.to_owned(), v.clone());
        }
    }
    Value::Object(out)
}

#[tokio::test]
async fn tools_list_is_the_reference_list() {
    let env = TestEnv::new();
    let client = graph_client(&env).await;
    let tools = client.tools_json().await.expect("tools/list");
    let tools = tools.as_array().expect("array").clone();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "create_entities",
            "create_relations",
            "add_observations",
            "delete_entities",
            "delete_observations",
            "delete_relations",
            "read_graph",
            "search_nodes",
            "open_nodes"
        ]
    );
    let by_name = |name: &str| tools.iter().find(|t| t["name"] == name).cloned().unwrap_or(Value::Null);
    let expected: Value = serde_json::from_str(DELETE_ENTITIES).expect("fixture");
    assert_eq!(comparable(&by_name("delete_entities")), expected);
    // The reference's own list, when the shared material is here.
    let reference = shared_dir()
        .map(|d| d.join("reference/server-memory-tools.json"))
        .or_else(|| {
            Some(
                std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                    .join("../shared/reference/server-memory-tools.json"),
            )
        })
        .filter(|p| p.is_file());
    let Some(path) = reference else {
        eprintln!(
            "skipping the comparison with the reference tools/list: server-memory-tools.json not present"
        );
        return;
    };
    let reference: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json");
    let reference = reference["tools"].as_array().expect("tools").clone();
    assert_eq!(reference.len(), tools.len());
    for (ours, theirs) in tools.iter().zip(&reference) {
        let mut theirs = comparable(theirs);
        if theirs["name"] == "read_graph" {
            // engram adds optional paging properties (none required).
            let props = ours["inputSchema"]["properties"].as_object().expect("props");
            assert_eq!(props.keys().collect::<Vec<_>>(), ["offset", "limit"]);
            assert!(ours["inputSchema"].get("required").is_none());
            theirs["inputSchema"]["properties"] = ours["inputSchema"]["properties"].clone();
        }
        assert_eq!(comparable(ours), theirs, "definition of {}", theirs["name"]);
    }
    client.close().await.expect("close");
}

#[tokio::test]
async fn create_read_search_open_with_reference_results() {
    let env = TestEnv::new();
    let client = graph_client(&env).await;
    let r = call(
        &client,
        "create_entities",
        json!({"entities": [
            {"name": "张伟", "entityType": "person", "observations": ["喜欢喝咖啡", "住在上海"]},
            {"name": "Mimi 🐱", "entityType": "pet", "observations": ["Likes FISH"]},
            {"name": "张伟", "entityType": "person", "observations": ["duplicate in the same call"]}
        ]}),
    )
    .await;
    assert!(!r.is_error, "{}", r.text);
    let created = json!([
        {"name": "张伟", "entityType": "person", "observations": ["喜欢喝咖啡", "住在上海"]},
        {"name": "Mimi 🐱", "entityType": "pet", "observations": ["Likes FISH"]}
    ]);
    assert_eq!(r.text, serde_json::to_string_pretty(&created).expect("json"));
    assert_eq!(structured(&r), json!({"entities": created}));
    // Existing names are skipped: nothing new, no commit.
    let before = commit_count(&env.pack("personal"));
    let r = call(
        &client,
        "create_entities",
        json!({"entities": [{"name": "张伟", "entityType": "x", "observations": []}]}),
    )
    .await;
    assert_eq!(r.text, "[]");
    assert_eq!(commit_count(&env.pack("personal")), before);

    let r = call(
        &client,
        "create_relations",
        json!({"relations": [
            {"from": "张伟", "to": "Mimi 🐱", "relationType": "owns"},
            {"from": "张伟", "to": "Mimi 🐱", "relationType": "owns"}
        ]}),
    )
    .await;
    assert_eq!(
        structured(&r),
        json!({"relations": [{"from": "张伟", "to": "Mimi 🐱", "relationType": "owns"}]})
    );

    let r = call(&client, "search_nodes", json!({"query": "fish"})).await;
    assert_eq!(
        structured(&r),
        json!({"entities": [{"name": "Mimi 🐱", "entityType": "pet", "observations": ["Likes FISH"]}],
               "relations": [{"from": "张伟", "to": "Mimi 🐱", "relationType": "owns"}]})
    );
    assert_eq!(r.text, serde_json::to_string_pretty(&structured(&r)).expect("json"));
    let r = call(&client, "open_nodes", json!({"names": ["张伟", "nobody"]})).await;
    assert_eq!(structured(&r)["entities"].as_array().map(Vec::len), Some(1));
    assert_eq!(structured(&r)["relations"].as_array().map(Vec::len), Some(1));
    let r = call(&client, "read_graph", json!({})).await;
    assert_eq!(structured(&r)["entities"].as_array().map(Vec::len), Some(2));

    // add_observations: duplicates skipped; unknown entity is the reference's error.
    let r = call(
        &client,
        "add_observations",
        json!({"observations": [{"entityName": "Mimi 🐱", "contents": ["naps 😴", "Likes FISH", "naps 😴"]}]}),
    )
    .await;
    assert_eq!(
        structured(&r),
        json!({"results": [{"entityName": "Mimi 🐱", "addedObservations": ["naps 😴"]}]})
    );
    let r = call(
        &client,
        "add_observations",
        json!({"observations": [{"entityName": "Nobody", "contents": ["x"]}]}),
    )
    .await;
    assert!(r.is_error);
    assert_eq!(r.text, "Entity with name Nobody not found");
    assert!(r.structured.is_none());

    let r = call(
        &client,
        "delete_observations",
        json!({"deletions": [{"entityName": "Mimi 🐱", "observations": ["naps 😴", "never there"]}]}),
    )
    .await;
    assert_eq!(r.text, "Observations deleted successfully");
    assert_eq!(structured(&r), json!({"success": true, "message": "Observations deleted successfully"}));
    let r = call(
        &client,
        "delete_relations",
        json!({"relations": [{"from": "a", "to": "b", "relationType": "none"}]}),
    )
    .await;
    assert_eq!(r.text, "Relations deleted successfully");

    // Cascading delete: the relation goes with the entity.
    let r = call(&client, "delete_entities", json!({"entityNames": ["Mimi 🐱", "never existed"]})).await;
    assert_eq!(r.text, "Entities deleted successfully");
    let r = call(&client, "read_graph", json!({})).await;
    assert_eq!(
        structured(&r),
        json!({"entities": [{"name": "张伟", "entityType": "person", "observations": ["喜欢喝咖啡", "住在上海"]}], "relations": []})
    );
    let pack = env.pack("personal");
    assert!(
        !git(&pack, &["ls-tree", "-r", "--name-only", "HEAD", "users/default/graph/relations"])
            .contains(".json")
    );
    client.close().await.expect("close");
    // The index is brought up to date when the server exits.
    assert_clean(&pack);
    assert_fsck(&pack);
}

#[tokio::test]
async fn bad_arguments_are_validation_errors_and_commit_nothing() {
    let env = TestEnv::new();
    let client = graph_client(&env).await;
    for (tool, args) in [
        ("create_entities", json!({"entities": "x"})),
        ("create_entities", json!({"entities": [{"name": 1, "entityType": "t", "observations": []}]})),
        ("create_relations", json!({})),
        ("add_observations", json!({"observations": [{"entityName": "a"}]})),
        ("search_nodes", json!({"query": 5})),
        ("open_nodes", json!({"names": [null]})),
        ("read_graph", json!({"limit": 0})),
    ] {
        let r = call(&client, tool, args.clone()).await;
        assert!(r.is_error, "{tool} {args}: {}", r.text);
        assert!(r.text.starts_with("MCP error -32602: Input validation error"), "{tool}: {}", r.text);
    }
    assert!(graph_commits(&env).is_empty());
    client.close().await.expect("close");
}

#[tokio::test]
async fn one_commit_per_changing_call_with_a_readable_subject() {
    let env = TestEnv::new();
    let client = graph_client(&env).await;
    ok(
        &client,
        "create_entities",
        json!({"entities": [
        {"name": "Alice", "entityType": "person", "observations": []},
        {"name": "Bob", "entityType": "person", "observations": []}]}),
    )
    .await;
    ok(
        &client,
        "create_relations",
        json!({"relations": [{"from": "Alice", "to": "Bob", "relationType": "knows"}]}),
    )
    .await;
    ok(&client, "delete_relations", json!({"relations": [{"from": "x", "to": "y", "relationType": "z"}]}))
        .await;
    ok(&client, "delete_entities", json!({"entityNames": ["nobody"]})).await;
    let commits = graph_commits(&env);
    assert_eq!(
        commits,
        ["graph: create_relations — Alice —knows→ Bob", "graph: create_entities — Alice, Bob"]
    );
    let pack = env.pack("personal");
    let msg = git(&pack, &["log", "-1", "--format=%B"]);
    assert!(msg.contains("Engram-Tool: create_relations") && msg.contains("Engram-User: default"), "{msg}");
    // Files are pretty JSON, one per entity, under the user's graph directory.
    let files = git(&pack, &["ls-tree", "-r", "--name-only", "HEAD", "users/default/graph/entities"]);
    assert_eq!(files.lines().count(), 2, "{files}");
    let alice = files.lines().find(|l| l.contains("alice-")).expect("alice file");
    let text = std::fs::read_to_string(pack.join(alice)).expect("read");
    assert!(text.contains("\"name\": \"Alice\""), "{text}");
    assert!(
        std::fs::read_to_string(pack.join("meta.json")).expect("meta").contains("\"name\": \"personal\"")
    );
    client.close().await.expect("close");
}

#[tokio::test]
async fn hand_edits_are_seen_by_reads() {
    let env = TestEnv::new();
    let client = graph_client(&env).await;
    ok(
        &client,
        "create_entities",
        json!({"entities": [{"name": "A", "entityType": "t", "observations": []}]}),
    )
    .await;
    // Another process changes the graph: our cached snapshot must follow HEAD.
    let other = graph_client(&env).await;
    ok(
        &other,
        "create_entities",
        json!({"entities": [{"name": "B", "entityType": "t", "observations": []}]}),
    )
    .await;
    other.close().await.expect("close");
    let r = call(&client, "search_nodes", json!({"query": ""})).await;
    assert_eq!(structured(&r)["entities"].as_array().map(Vec::len), Some(2));
    client.close().await.expect("close");
}

/// A file as the reference writes it: compact records, entities first, no final newline.
const REFERENCE_JSONL: &str = concat!(
    r#"{"type":"entity","name":"张伟","entityType":"person","observations":["喜欢喝咖啡","Works at \"ACME\""]}"#,
    "\n",
    r#"{"type":"entity","name":"Rex 🐶","entityType":"pet","observations":[]}"#,
    "\n",
    r#"{"type":"entity","name":"ACME","entityType":"company","observations":["founded 1999"]}"#,
    "\n",
    r#"{"type":"relation","from":"张伟","to":"ACME","relationType":"works_at"}"#,
    "\n",
    r#"{"type":"relation","from":"张伟","to":"Rex 🐶","relationType":"owns"}"#
);

#[tokio::test]
async fn import_export_round_trip_is_byte_identical() {
    let env = TestEnv::new();
    let file = env.dir.path().join("memory.jsonl");
    std::fs::write(&file, REFERENCE_JSONL).expect("write");
    // Before the import, MEMORY_FILE_PATH makes read_graph say how to import.
    let packs = env.packs.display().to_string();
    let file_s = file.display().to_string();
    let client = StdioClient::spawn(
        &bin(),
        &["serve", "--packs-dir", &packs, "--tools", "graph"],
        &[("HOME", env.dir.path().to_str().unwrap_or(".")), ("MEMORY_FILE_PATH", &file_s)],
    )
    .await
    .expect("spawn");
    let items = client.call_items("read_graph", json!({})).await.expect("read_graph");
    assert_eq!(items[0], "{\n  \"entities\": [],\n  \"relations\": []\n}");
    assert!(
        items.get(1).is_some_and(|t| t.contains("engram graph import") && t.contains(&file_s)),
        "{items:?}"
    );
    client.close().await.expect("close");

    let out = env.cli(&["graph", "import", &file_s]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("imported 3 entities and 2 relations"));
    let out = env.cli(&["graph", "export"]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), REFERENCE_JSONL);
    // A second import refuses to overwrite without --replace.
    let out = env.cli(&["graph", "import", &file_s]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--replace"));

    // The imported graph serves the tools; a write then export keeps the order.
    let client = graph_client(&env).await;
    let r = call(&client, "search_nodes", json!({"query": "acme"})).await;
    assert_eq!(structured(&r)["entities"].as_array().map(Vec::len), Some(2));
    ok(
        &client,
        "create_entities",
        json!({"entities": [{"name": "New", "entityType": "t", "observations": ["o"]}]}),
    )
    .await;
    client.close().await.expect("close");
    let out = env.cli(&["graph", "export"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = text.split('\n').collect();
    assert_eq!(lines[3], r#"{"type":"entity","name":"New","entityType":"t","observations":["o"]}"#);
    assert_eq!(lines.len(), 6);
    // --replace swaps the graph for the file's.
    let out = env.cli(&["graph", "import", "--replace", &file_s]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&env.cli(&["graph", "export"]).stdout), REFERENCE_JSONL);
    assert_clean(&env.pack("personal"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_adding_200_entities_each_lose_nothing() {
    let env = TestEnv::with_real_clock();
    // Create the pack first so both processes start from the same repository.
    let first = graph_client(&env).await;
    ok(&first, "read_graph", json!({})).await;
    let second = graph_client(&env).await;
    tokio::join!(add_200(&first, "p1"), add_200(&second, "p2"));
    let r = call(&first, "read_graph", json!({"limit": 1000})).await;
    assert_eq!(structured(&r)["entities"].as_array().map(Vec::len), Some(400));
    first.close().await.expect("close");
    second.close().await.expect("close");
    assert_eq!(graph_commits(&env).len(), 400);
    let pack = env.pack("personal");
    assert_eq!(
        git(&pack, &["ls-tree", "-r", "--name-only", "HEAD", "users/default/graph/entities"]).lines().count(),
        400
    );
    assert_clean(&pack);
    assert_fsck(&pack);
}

async fn add_200(client: &StdioClient, tag: &str) {
    for i in 0..200 {
        let args = json!({"entities": [{"name": format!("{tag}-{i}"), "entityType": "t", "observations": [format!("{tag} {i}")]}]});
        let r = client.call("create_entities", args).await.expect("call");
        assert!(!r.is_error, "{}", r.text);
    }
}

#[tokio::test]
async fn a_hand_edit_of_a_touched_file_is_committed_first_and_kept() {
    let env = TestEnv::new();
    let client = graph_client(&env).await;
    ok(
        &client,
        "create_entities",
        json!({"entities": [{"name": "Alice", "entityType": "person", "observations": ["a"]}]}),
    )
    .await;
    let pack = env.pack("personal");
    let files = git(&pack, &["ls-tree", "-r", "--name-only", "HEAD", "users/default/graph/entities"]);
    let path = pack.join(files.lines().next().expect("entity file"));
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(&path, text.replace("\"a\"", "\"a\",\n    \"by hand\"")).expect("hand edit");
    ok(&client, "add_observations", json!({"observations": [{"entityName": "Alice", "contents": ["b"]}]}))
        .await;
    let r = call(&client, "open_nodes", json!({"names": ["Alice"]})).await;
    assert_eq!(structured(&r)["entities"][0]["observations"], json!(["a", "by hand", "b"]));
    let log = git(&pack, &["log", "--format=%s"]);
    let subjects: Vec<&str> = log.lines().take(2).collect();
    assert!(subjects[0].starts_with("graph: add_observations") && subjects[1].starts_with("edit: "), "{log}");
    client.close().await.expect("close");
    assert_clean(&pack);
}
