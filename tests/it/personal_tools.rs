//! The personal toolset over stdio: profile (with history), entities (one
//! store with the graph), events, time ranges, templates, user isolation.

use serde_json::{Value, json};

use crate::common::*;

async fn personal_client(env: &TestEnv, user: &str) -> StdioClient {
    env.client_with(&["--tools", "graph,personal", "--user", user]).await
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

async fn okj(client: &StdioClient, tool: &str, args: Value) -> Value {
    parse(&ok(client, tool, args).await)
}

#[tokio::test]
async fn tools_are_listed_with_all() {
    let env = TestEnv::new();
    let client = env.client_with(&["--tools", "all"]).await;
    let names = client.tool_names().await.expect("tools");
    for t in [
        "ping",
        "create_entities",
        "open_nodes",
        "update_profile",
        "query_profile",
        "delete_profile",
        "profile_history",
        "create_entity",
        "update_entity",
        "list_entities",
        "delete_entity",
        "add_event",
        "search_events",
        "query_entity_timeline",
    ] {
        assert!(names.iter().any(|n| n == t), "{t} missing from {names:?}");
    }
    let resources = client.resources_json().await.expect("resources");
    let uris: Vec<&str> =
        resources.as_array().expect("array").iter().filter_map(|r| r["uri"].as_str()).collect();
    assert_eq!(uris, ["memory://knowledge-graph", "memory://event-templates"]);
    let templates = parse(&client.read_resource("memory://event-templates").await.expect("read"));
    assert!(templates["event_types"]["illness"]["metadata"].get("cost").is_some());
    assert_eq!(templates["event_types"].as_object().map(|m| m.len()), Some(6));
    client.close().await.expect("close");
}

#[tokio::test]
async fn profile_replaces_with_history_and_deletes() {
    let env = TestEnv::new();
    let c = personal_client(&env, "alice").await;
    let r =
        okj(&c, "update_profile", json!({"key": "city", "value": "北京", "category": "basic_info"})).await;
    assert_eq!(r["replaced"], false);
    // The seed contract's keys, with its types.
    assert_eq!((r["updated"].clone(), r["had_previous_value"].clone()), (json!(true), json!(false)));
    assert_eq!(r["previous_value"], Value::Null);
    let r = okj(&c, "update_profile", json!({"key": "city", "value": "上海"})).await;
    assert_eq!(r["replaced"], true);
    assert_eq!((r["updated"].clone(), r["had_previous_value"].clone()), (json!(true), json!(true)));
    assert_eq!(r["previous_value"], "北京");
    assert_eq!(r["category"], "basic_info");
    // Same value again: nothing replaced, no commit.
    let r = okj(&c, "update_profile", json!({"key": "city", "value": "上海"})).await;
    assert_eq!((r["replaced"].clone(), r["changed"].clone()), (json!(false), json!(false)));
    okj(
        &c,
        "update_profile",
        json!({"key": "饮料 ☕", "value": ["coffee", "tea"], "category": "preferences"}),
    )
    .await;

    let r = okj(&c, "query_profile", json!({})).await;
    assert_eq!(r["profile"].as_array().map(Vec::len), Some(2));
    let r = okj(&c, "query_profile", json!({"category": "preferences"})).await;
    assert_eq!(r["profile"][0]["value"], json!(["coffee", "tea"]));
    let r = okj(&c, "query_profile", json!({"keys": ["city", "age"]})).await;
    assert_eq!(r["profile"][0]["value"], "上海");
    assert_eq!(r["missing"], json!(["age"]));

    let h = okj(&c, "profile_history", json!({"key": "city"})).await;
    let values: Vec<&Value> = h["history"].as_array().expect("history").iter().map(|e| &e["value"]).collect();
    assert_eq!(values, [&json!("上海"), &json!("北京")]);
    assert!(h["history"][0]["committed_at"].as_str().is_some_and(|d| d.starts_with("2026-11-22")));
    let pack = env.pack("personal");
    let log = git(&pack, &["log", "--format=%s", "--", "users/alice/profile/city.json"]);
    assert_eq!(log.lines().count(), 2, "{log}");

    let r = okj(&c, "delete_profile", json!({"key": "city"})).await;
    assert_eq!(r["previous_value"], "上海");
    let e = err(&c, "delete_profile", json!({"key": "city"})).await;
    assert!(e.contains("no profile key"), "{e}");
    let h = okj(&c, "profile_history", json!({"key": "city"})).await;
    assert_eq!(h["history"][0]["deleted"], true);
    assert_eq!(h["history"].as_array().map(Vec::len), Some(3));

    for (args, needle) in [
        (json!({"key": "x", "value": 1, "category": "hobbies"}), "basic_info, preferences, habits"),
        (json!({"key": "../etc", "value": 1}), "cannot be a profile key"),
        (json!({"key": "", "value": 1}), "must not be empty"),
    ] {
        let e = err(&c, "update_profile", args).await;
        assert!(e.contains(needle), "{e}");
    }
    let e = err(&c, "update_profile", json!({"key": 5, "value": 1})).await;
    assert!(e.to_lowercase().contains("invalid"), "{e}");
    c.close().await.expect("close");
    assert_clean(&pack);
}

#[tokio::test]
async fn entities_are_graph_entities() {
    let env = TestEnv::new();
    let c = personal_client(&env, "default").await;
    let pet = okj(&c, "create_entity", json!({"entity_type": "pet", "name": "旺财 🐕", "attributes": {"species": "dog", "breed": "柴犬", "age": 3}})).await;
    let id = pet["id"].as_str().expect("id").to_owned();
    assert!(id.starts_with("ent_"));
    // The graph tools see it: name, type, attributes as observations.
    let r = call(&c, "search_nodes", json!({"query": "柴犬"})).await;
    assert_eq!(
        r.structured.clone().expect("structured")["entities"],
        json!([{"name": "旺财 🐕", "entityType": "pet", "observations": ["species: dog", "breed: 柴犬", "age: 3"]}])
    );
    let r = call(&c, "open_nodes", json!({"names": ["旺财 🐕"]})).await;
    assert_eq!(r.structured.clone().expect("structured")["entities"][0]["entityType"], "pet");
    // Graph edits keep the personal fields.
    ok(&c, "add_observations", json!({"observations": [{"entityName": "旺财 🐕", "contents": ["怕打雷"]}]}))
        .await;
    let up =
        okj(&c, "update_entity", json!({"entity_id": id, "attributes": {"age": 4, "breed": null}})).await;
    assert_eq!(up["attributes"], json!({"species": "dog", "age": 4}));
    assert_eq!(up["observations"], json!(["怕打雷", "species: dog", "age: 4"]));
    let dup = err(&c, "create_entity", json!({"entity_type": "pet", "name": "旺财 🐕"})).await;
    assert!(dup.contains("already exists"), "{dup}");

    let car = okj(&c, "create_entity", json!({"entity_type": "vehicle", "name": "Model 3"})).await;
    let car_id = car["id"].as_str().expect("id").to_owned();
    let renamed = okj(&c, "update_entity", json!({"entity_id": car_id, "name": "特斯拉"})).await;
    assert_eq!(renamed["name"], "特斯拉");
    let r = call(&c, "open_nodes", json!({"names": ["Model 3", "特斯拉"]})).await;
    assert_eq!(r.structured.clone().expect("s")["entities"].as_array().map(Vec::len), Some(1));

    // A rename would orphan relations (they name their endpoints): refused.
    ok(
        &c,
        "create_relations",
        json!({"relations": [{"from": "旺财 🐕", "to": "特斯拉", "relationType": "rides_in"}]}),
    )
    .await;
    let e = err(&c, "update_entity", json!({"entity_id": id, "name": "Wangcai"})).await;
    assert!(e.contains("has relations"), "{e}");
    let list = okj(&c, "list_entities", json!({})).await;
    assert_eq!(list["count"], 2);
    let pets = okj(&c, "list_entities", json!({"entity_type": "pet"})).await;
    assert_eq!(pets["entities"][0]["id"], id.as_str());
    let gone = okj(&c, "delete_entity", json!({"entity_id": car_id})).await;
    assert_eq!(gone["status"], "inactive");
    assert_eq!(okj(&c, "list_entities", json!({})).await["count"], 1);
    assert_eq!(
        okj(&c, "list_entities", json!({"status": "inactive"})).await["entities"][0]["name"],
        "特斯拉"
    );
    assert_eq!(okj(&c, "list_entities", json!({"status": "all"})).await["count"], 2);
    // Soft delete: still in the graph.
    let r = call(&c, "search_nodes", json!({"query": "status: inactive"})).await;
    assert_eq!(r.structured.clone().expect("s")["entities"][0]["name"], "特斯拉");

    for (tool, args, needle) in [
        ("update_entity", json!({"entity_id": "ent_000000000000", "name": "x"}), "no entity"),
        ("delete_entity", json!({"entity_id": "nope"}), "no entity"),
        ("update_entity", json!({"entity_id": id, "status": "dead"}), "active or inactive"),
        ("list_entities", json!({"status": "some"}), "active, inactive or all"),
        ("create_entity", json!({"entity_type": ""}), "must not be empty"),
        ("create_entity", json!({"entity_type": "pet", "attributes": [1, 2]}), "invalid"),
    ] {
        let e = err(&c, tool, args).await;
        assert!(e.to_lowercase().contains(&needle.to_lowercase()), "{tool}: {e}");
    }
    c.close().await.expect("close");
    assert_clean(&env.pack("personal"));
}

#[tokio::test]
async fn events_search_time_ranges_and_timelines() {
    let env = TestEnv::new(); // now = 2026-11-22T10:00:00Z
    let c = personal_client(&env, "default").await;
    let dog = okj(&c, "create_entity", json!({"entity_type": "pet", "name": "旺财"})).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    // A plain graph entity can be linked by name: it gets an id.
    ok(
        &c,
        "create_entities",
        json!({"entities": [{"name": "Honda Civic", "entityType": "vehicle", "observations": []}]}),
    )
    .await;

    let ill = okj(&c, "add_event", json!({"event_type": "illness", "description": "旺财生病了，花了 2000 元",
        "related_entity_ids": [dog], "metadata": {"cost": 2000, "currency": "CNY"}, "timestamp": "2026-11-21"})).await;
    assert_eq!(ill["timestamp"], "2026-11-21T00:00:00Z");
    assert_eq!(ill["importance"], 0.5);
    let ill_id = ill["id"].as_str().expect("id").to_owned();
    let service = okj(
        &c,
        "add_event",
        json!({"event_type": "maintenance", "description": "oil change",
        "related_entity_ids": ["Honda Civic"], "timestamp": "2026-03-05T09:30:00+08:00", "importance": 0.9}),
    )
    .await;
    let car_id = service["related_entity_ids"][0].as_str().expect("linked id").to_owned();
    assert!(car_id.starts_with("ent_"));
    okj(
        &c,
        "add_event",
        json!({"event_type": "purchase", "description": "bought dog food 🦴",
        "related_entity_ids": [dog], "timestamp": "2025-12-31T23:59:59Z"}),
    )
    .await;
    okj(&c, "add_event", json!({"event_type": "milestone", "description": "today"})).await;

    let files = git(&env.pack("personal"), &["ls-tree", "-r", "--name-only", "HEAD", "users/default/events"]);
    assert!(files.contains(&format!("users/default/events/2026/11/{ill_id}.json")), "{files}");

    let count = |v: &Value| v["events"].as_array().map_or(0, Vec::len);
    assert_eq!(count(&okj(&c, "search_events", json!({})).await), 4);
    assert_eq!(count(&okj(&c, "search_events", json!({"time_range": "last_week"})).await), 2);
    assert_eq!(count(&okj(&c, "search_events", json!({"time_range": "2026-03"})).await), 1);
    assert_eq!(count(&okj(&c, "search_events", json!({"time_range": "2025"})).await), 1);
    assert_eq!(count(&okj(&c, "search_events", json!({"time_range": "2026-11-21"})).await), 1);
    assert_eq!(count(&okj(&c, "search_events", json!({"time_range": "2025-12..2026-03"})).await), 2);
    assert_eq!(
        count(&okj(&c, "search_events", json!({"time_range": "last_year", "event_type": "purchase"})).await),
        1
    );
    assert_eq!(count(&okj(&c, "search_events", json!({"query": "CNY"})).await), 1);
    assert_eq!(count(&okj(&c, "search_events", json!({"query": "旺财"})).await), 2); // description or related name
    let limited = okj(&c, "search_events", json!({"limit": 1})).await;
    assert_eq!((count(&limited), limited["total"].clone()), (1, json!(4)));
    assert_eq!(limited["events"][0]["description"], "today");

    for bad in ["yesterday", "2026-13", "2026-02-30", "2026..2025", "12345"] {
        let e = err(&c, "search_events", json!({"time_range": bad})).await;
        // The error lists the accepted forms.
        for form in ["last_week", "last_month", "last_year", "YYYY-MM-DD", "START..END"] {
            assert!(e.contains(form), "{bad}: {e}");
        }
    }
    let e = err(&c, "search_events", json!({"event_type": "party"})).await;
    assert!(e.contains("purchase, illness"), "{e}");
    for (args, needle) in [
        (json!({"event_type": "other", "description": "x", "related_entity_ids": ["ghost"]}), "ghost"),
        (json!({"event_type": "other", "description": "x", "timestamp": "last tuesday"}), "ISO 8601"),
        (json!({"event_type": "other", "description": "x", "importance": 2}), "between 0 and 1"),
        (json!({"event_type": "other", "description": "x", "importance": "high"}), "invalid"),
        (json!({"event_type": "party", "description": "x"}), "not an event type"),
        (json!({"event_type": "other", "description": "  "}), "must not be empty"),
    ] {
        let e = err(&c, "add_event", args).await;
        assert!(e.to_lowercase().contains(&needle.to_lowercase()), "{e}");
    }

    let t = okj(&c, "query_entity_timeline", json!({"entity_id": dog})).await;
    let descriptions: Vec<&str> =
        t["events"].as_array().expect("events").iter().filter_map(|e| e["description"].as_str()).collect();
    assert_eq!(descriptions, ["旺财生病了，花了 2000 元", "bought dog food 🦴"]);
    let t = okj(&c, "query_entity_timeline", json!({"entity_id": dog, "limit": 1})).await;
    assert_eq!(t["count"], 1);
    let t = okj(&c, "query_entity_timeline", json!({"entity_id": car_id})).await;
    assert_eq!(t["entity"]["name"], "Honda Civic");
    let e = err(&c, "query_entity_timeline", json!({"entity_id": "ent_unknown"})).await;
    assert!(e.contains("no entity"), "{e}");
    c.close().await.expect("close");
}

#[tokio::test]
async fn users_never_see_or_change_each_others_records() {
    let env = TestEnv::new();
    let alice = personal_client(&env, "alice").await;
    let bob = personal_client(&env, "bob").await;
    ok(&alice, "update_profile", json!({"key": "secret", "value": "alice's"})).await;
    let pet = okj(&alice, "create_entity", json!({"entity_type": "pet", "name": "Mimi"})).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    ok(
        &alice,
        "add_event",
        json!({"event_type": "other", "description": "alice only", "related_entity_ids": [pet]}),
    )
    .await;
    ok(
        &alice,
        "create_entities",
        json!({"entities": [{"name": "Alice graph", "entityType": "t", "observations": []}]}),
    )
    .await;

    assert_eq!(okj(&bob, "query_profile", json!({})).await["profile"], json!([]));
    assert_eq!(okj(&bob, "query_profile", json!({"keys": ["secret"]})).await["missing"], json!(["secret"]));
    assert_eq!(okj(&bob, "profile_history", json!({"key": "secret"})).await["history"], json!([]));
    assert!(err(&bob, "delete_profile", json!({"key": "secret"})).await.contains("no profile key"));
    assert_eq!(okj(&bob, "list_entities", json!({"status": "all"})).await["count"], 0);
    assert!(
        err(&bob, "update_entity", json!({"entity_id": pet, "name": "stolen"})).await.contains("no entity")
    );
    assert!(err(&bob, "delete_entity", json!({"entity_id": pet})).await.contains("no entity"));
    assert!(err(&bob, "query_entity_timeline", json!({"entity_id": pet})).await.contains("no entity"));
    assert!(
        err(
            &bob,
            "add_event",
            json!({"event_type": "other", "description": "x", "related_entity_ids": [pet]})
        )
        .await
        .contains("unknown entities")
    );
    assert!(
        err(
            &bob,
            "add_event",
            json!({"event_type": "other", "description": "x", "related_entity_ids": ["Mimi"]})
        )
        .await
        .contains("unknown entities")
    );
    assert_eq!(okj(&bob, "search_events", json!({})).await["total"], 0);
    let r = call(&bob, "read_graph", json!({})).await;
    assert_eq!(r.structured.clone().expect("s"), json!({"entities": [], "relations": []}));
    // Bob's writes with the same names land in his own records.
    ok(&bob, "update_profile", json!({"key": "secret", "value": "bob's"})).await;
    ok(
        &bob,
        "create_entities",
        json!({"entities": [{"name": "Mimi", "entityType": "cat", "observations": []}]}),
    )
    .await;
    ok(&bob, "delete_entities", json!({"entityNames": ["Mimi", "Alice graph"]})).await;
    assert_eq!(
        okj(&alice, "query_profile", json!({"keys": ["secret"]})).await["profile"][0]["value"],
        "alice's"
    );
    assert_eq!(okj(&alice, "list_entities", json!({})).await["entities"][0]["name"], "Mimi");
    let r = call(&alice, "open_nodes", json!({"names": ["Alice graph", "Mimi"]})).await;
    assert_eq!(r.structured.clone().expect("s")["entities"].as_array().map(Vec::len), Some(2));
    alice.close().await.expect("close");
    bob.close().await.expect("close");

    let out = env.cli(&["serve", "--tools", "personal", "--user", "../alice"]);
    assert!(!out.status.success());
    let out = env.cli(&["graph", "export", "--user", "bad/user"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid user id"));
}
