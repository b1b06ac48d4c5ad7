//! The graph's picture in a real browser (headless chromium over WebDriver, see `webdriver.rs`):
//! the SVG holds the nodes and relations of a small graph, a click on a node shows its
//! observations in place (no page load), a search highlights its match, the buttons zoom; a
//! graph of 2,000 entities is drawn as a bounded neighbourhood, redrawn in place around a
//! clicked node, and the page's `Server-Timing` says how long it took.

use std::time::Duration;

use serde_json::json;

use crate::browser_pages::{open, runtime};
use crate::common::*;
use crate::ui::UiServer;
use crate::webdriver::{Browser, wait_for};

const WAIT: Duration = Duration::from_secs(30);

/// The names of the nodes drawn.
fn drawn(b: &Browser) -> Vec<String> {
    b.find_all("#graph-picture a.node")
        .iter()
        .map(|n| b.eval_on(n, "return arguments[0].dataset.name;").as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn graph_picture_draws_nodes_and_relations_shows_a_node_and_highlights_a_search_in_a_browser() {
    let Some(b) = Browser::start() else { return };
    let env = TestEnv::new();
    runtime().block_on(async {
        let c = env.client_with(&["--tools", "graph"]).await;
        ok(
            &c,
            "create_entities",
            json!({"entities": [
                {"name": "Alice", "entityType": "person", "observations": ["leads the mobile team"]},
                {"name": "Engram", "entityType": "project", "observations": ["written in Rust", "stores memory in git"]},
                {"name": "Bob", "entityType": "person", "observations": ["reviews pull requests"]}
            ]}),
        )
        .await;
        ok(
            &c,
            "create_relations",
            json!({"relations": [
                {"from": "Alice", "to": "Engram", "relationType": "leads"},
                {"from": "Bob", "to": "Engram", "relationType": "reviews"}
            ]}),
        )
        .await;
    });
    let ui = UiServer::start(&env);
    let base = open(&b, &ui);
    b.set_size(1280, 900);
    b.goto(&format!("{base}/graph?lang=en"));
    let mut names = drawn(&b);
    names.sort();
    assert_eq!(names, ["Alice", "Bob", "Engram"]);
    let edges: Vec<String> = b
        .find_all("#graph-picture line.edge title")
        .iter()
        .map(|t| b.eval_on(t, "return arguments[0].textContent;").as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(edges.len(), 2, "{edges:?}");
    assert!(edges.contains(&"Alice — leads → Engram".to_owned()), "{edges:?}");
    // Every node inside the drawing, none on another.
    let boxes = b.eval(
        "return [...document.querySelectorAll('#graph-picture a.node circle')].map(c => [c.cx.baseVal.value, c.cy.baseVal.value]);",
    );
    let points: Vec<(f64, f64)> = boxes
        .as_array()
        .expect("positions")
        .iter()
        .map(|p| (p[0].as_f64().unwrap_or(-1.0), p[1].as_f64().unwrap_or(-1.0)))
        .collect();
    for (i, p) in points.iter().enumerate() {
        assert!((0.0..=1000.0).contains(&p.0) && (0.0..=700.0).contains(&p.1), "{points:?}");
        for q in &points[i + 1..] {
            assert!((p.0 - q.0).abs() + (p.1 - q.1).abs() > 40.0, "overlapping nodes: {points:?}");
        }
    }

    // Zoom: the buttons change the view box; reset brings it back.
    let view = || b.eval("return document.getElementById('graph-picture').getAttribute('viewBox');");
    let before = view();
    b.click(&b.find(".graph-tools .zoom-in"));
    assert_ne!(view(), before, "zoomed in");
    b.click(&b.find(".graph-tools .zoom-reset"));
    assert_eq!(view().as_str().map(|v| v.replace(".0", "")), before.as_str().map(str::to_owned));

    // A click on a node shows its observations and relations.
    b.click(&b.find("#graph-picture a.node[data-name=Engram] circle"));
    let info = wait_for(WAIT, "the node's panel", || {
        b.find_all("#node-info[data-name=Engram]").first().map(|e| b.text(e))
    });
    assert!(info.contains("written in Rust") && info.contains("stores memory in git"), "{info}");
    assert!(info.contains("Alice") && info.contains("leads") && info.contains("reviews"), "{info}");
    assert_eq!(
        b.find_all("#graph-picture a.node.chosen").len(),
        1,
        "the chosen node is marked: {}",
        b.body_text()
    );

    // A search highlights its match in the picture.
    b.goto(&format!("{base}/graph?lang=en"));
    b.fill(&b.find("#f-q"), "mobile");
    b.click(&b.find("form.filter button[type=submit]"));
    wait_for(WAIT, "the search", || b.url().contains("q=mobile").then_some(()));
    let matched: Vec<String> = b
        .find_all("#graph-picture a.node.match")
        .iter()
        .map(|n| b.eval_on(n, "return arguments[0].dataset.name;").as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(matched, ["Alice"]);
    let fill = b.eval_on(
        &b.find("#graph-picture a.node.match circle"),
        "return getComputedStyle(arguments[0]).fill;",
    );
    let plain = b.eval_on(
        &b.find("#graph-picture a.node:not(.match) circle"),
        "return getComputedStyle(arguments[0]).fill;",
    );
    assert_ne!(fill, plain, "a match looks different");
}

#[test]
fn clicking_a_node_opens_its_panel_in_place_without_a_page_load_in_a_browser() {
    let Some(b) = Browser::start() else { return };
    let env = TestEnv::new();
    runtime().block_on(async {
        let c = env.client_with(&["--tools", "graph"]).await;
        ok(
            &c,
            "create_entities",
            json!({"entities": [
                {"name": "Alice", "entityType": "person", "observations": ["leads the mobile team"]},
                {"name": "Engram", "entityType": "project", "observations": ["written in Rust"]}
            ]}),
        )
        .await;
        ok(
            &c,
            "create_relations",
            json!({"relations": [{"from": "Alice", "to": "Engram", "relationType": "leads"}]}),
        )
        .await;
    });
    let ui = UiServer::start(&env);
    let base = open(&b, &ui);
    b.set_size(1280, 900);
    b.goto(&format!("{base}/graph?lang=en"));
    assert!(b.find_all("#node-info").is_empty(), "no node chosen yet");
    // A mark a page load would wipe, and a zoom it would reset.
    b.eval("window.sameDocument = true;");
    b.click(&b.find(".graph-tools .zoom-in"));
    let view = || b.eval("return document.getElementById('graph-picture').getAttribute('viewBox');");
    let zoomed = view();

    for (name, says) in [("Engram", "written in Rust"), ("Alice", "leads the mobile team")] {
        b.click(&b.find(&format!("#graph-picture a.node[data-name={name}] circle")));
        let info = wait_for(WAIT, "the node's panel", || {
            b.find_all(&format!("#node-info[data-name={name}]")).first().map(|e| b.text(e))
        });
        assert!(info.contains(says) && info.contains("leads"), "{info}");
        assert_eq!(b.find_all("#node-info").len(), 1, "one panel at a time");
        let chosen: Vec<String> = b
            .find_all("#graph-picture a.node.chosen")
            .iter()
            .map(|n| {
                b.eval_on(n, "return arguments[0].dataset.name;").as_str().unwrap_or_default().to_owned()
            })
            .collect();
        assert_eq!(chosen, [name], "the clicked node is marked");
        assert_eq!(b.eval("return window.sameDocument === true;"), json!(true), "no page load");
        assert_eq!(view(), zoomed, "the picture stays as it was");
        assert!(b.url().contains(&format!("focus={name}")), "the address says the node: {}", b.url());
    }

    // What the script fetched: the picture and the panel, not a page.
    let auth = format!("Bearer {}", ui.token);
    let (status, _, part) = ui.request("GET", "/graph?focus=Alice&part=1", &[("Authorization", &auth)], "");
    assert_eq!(status, 200);
    assert!(part.starts_with("<section id=\"graph-view\">") && part.contains("id=\"node-info\""), "{part}");
    assert!(!part.contains("<html") && !part.contains("graph-entities"), "{part}");

    // The address shows the same panel when loaded.
    b.goto(&b.url());
    assert!(b.text(&b.find("#node-info[data-name=Alice]")).contains("leads the mobile team"));
    assert_ne!(b.eval("return window.sameDocument === true;"), json!(true), "a page load this time");
}

#[test]
fn a_graph_of_two_thousand_entities_is_drawn_as_a_bounded_neighbourhood_in_a_browser() {
    let Some(b) = Browser::start() else { return };
    let env = TestEnv::new();
    // 2,000 entities in a chain, each also a member of one of 20 groups (100 members each).
    let mut jsonl = String::new();
    for i in 0..2000 {
        let e = json!({"type": "entity", "name": format!("e{i:04}"), "entityType": "thing", "observations": [format!("observation {i}")]});
        jsonl.push_str(&format!("{e}\n"));
    }
    for i in 0..2000 {
        if i + 1 < 2000 {
            let r = json!({"type": "relation", "from": format!("e{i:04}"), "to": format!("e{:04}", i + 1), "relationType": "next"});
            jsonl.push_str(&format!("{r}\n"));
        }
        if i % 20 != i {
            let r = json!({"type": "relation", "from": format!("e{i:04}"), "to": format!("e{:04}", i % 20), "relationType": "member_of"});
            jsonl.push_str(&format!("{r}\n"));
        }
    }
    let file = env.dir.path().join("memory.jsonl");
    std::fs::write(&file, jsonl).expect("write the graph");
    let out = env.cli(&["graph", "import", &file.display().to_string()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let ui = UiServer::start(&env);
    let base = open(&b, &ui);
    b.set_size(1280, 900);
    b.goto(&format!("{base}/graph?lang=en&q=e0042"));
    let names = drawn(&b);
    assert!(names.len() <= 80 && names.len() > 3, "a bounded neighbourhood: {} nodes", names.len());
    assert!(b.find_all("#graph-picture line.edge").len() <= 240);
    let count = b.text(&b.find("#graph-count"));
    assert!(count.contains("/ 2000") && count.contains("around e0042"), "{count}");
    for near in ["e0042", "e0041", "e0043", "e0002"] {
        assert!(names.iter().any(|n| n == near), "{near} is within reach: {names:?}");
    }
    assert_eq!(b.find_all("#graph-picture a.node.match").len(), 1, "the search's match");

    // A chosen entity is the centre: its neighbours within two hops, and its panel, drawn in
    // place (no page load), the new picture panning and zooming too.
    b.eval("window.sameDocument = true;");
    b.click(&b.find("#graph-picture a.node[data-name=e0043] circle"));
    let info = wait_for(WAIT, "the node's panel", || {
        b.find_all("#node-info[data-name=e0043]").first().map(|e| b.text(e))
    });
    assert!(info.contains("observation 43"), "{info}");
    assert!(b.text(&b.find("#graph-count")).contains("around e0043"));
    assert!(drawn(&b).len() <= 80);
    assert_eq!(b.eval("return window.sameDocument === true;"), json!(true), "no page load");
    assert!(b.url().contains("focus=e0043"), "{}", b.url());
    let view = || b.eval("return document.getElementById('graph-picture').getAttribute('viewBox');");
    let before = view();
    b.click(&b.find(".graph-tools .zoom-in"));
    assert_ne!(view(), before, "the new picture zooms");

    // The server's time for the page, as its header says (the graph read once before).
    let auth = format!("Bearer {}", ui.token);
    let mut times = Vec::new();
    for path in ["/graph?q=e0042", "/graph?focus=e0500", "/graph"] {
        let (status, head, _) = ui.request("GET", path, &[("Authorization", &auth)], "");
        assert_eq!(status, 200);
        let ms: f64 = head
            .lines()
            .find_map(|l| l.to_ascii_lowercase().strip_prefix("server-timing: app;dur=").map(str::to_owned))
            .and_then(|v| v.trim().parse().ok())
            .expect("a Server-Timing header");
        times.push((path, ms));
    }
    eprintln!("graph page server time at 2,000 entities (this build): {times:?}");
    for (path, ms) in times {
        assert!(ms < 2000.0, "{path} took {ms} ms");
    }
}
