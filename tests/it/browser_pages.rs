//! The pages beyond the memory list, in a real browser (headless chromium over WebDriver, see
//! `webdriver.rs`): `/notes` (a note added there is what the notes tools recall, in its file),
//! `/personal` and `/graph` (the records the personal and graph tools wrote, searchable), the
//! memory search (a Chinese memory found by the search engine), word diffs on the history page,
//! a likely duplicate merged in one `consolidate` commit,
//! creating and installing a pack from `/`, and editing a pack file; the activity chart, a
//! damaged pack's badge and the search ranked as `search_memory` ranks it.
//!
//! With `ENGRAM_UI_SCREENSHOTS=<dir>`, `screenshots_of_the_new_pages` saves screenshots of the
//! notes and personal pages and a search (`docs/screenshots/`), in English and Chinese.

use std::time::Duration;

use serde_json::json;

use crate::common::*;
use crate::ui::UiServer;
use crate::webdriver::{Browser, wait_for};

const WAIT: Duration = Duration::from_secs(30);

/// A browser holding the page's cookie.
pub(crate) fn open(b: &Browser, ui: &UiServer) -> String {
    b.goto(&ui.url);
    wait_for(WAIT, "the redirect without the token", || (!b.url().contains("token=")).then_some(()));
    crate::webdriver::origin(&b.url())
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime")
}

#[test]
fn notes_page_in_a_browser_is_the_notes_tools() {
    let Some(b) = Browser::start() else { return };
    let env = TestEnv::new();
    let ui = UiServer::start(&env);
    let base = open(&b, &ui);
    b.goto(&format!("{base}/notes"));
    assert!(b.body_text().contains("general"), "the default category: {}", b.body_text());

    // A category, then a note in it: one commit each, by web-ui, in the notes tools' files.
    b.click(&b.find("#new-category > summary"));
    b.fill(&b.find("#cat-name"), "家务");
    b.fill(&b.find("#cat-desc"), "家里的安排");
    b.submit(&b.find("#new-category button[type=submit]"), WAIT);
    let dir = env.pack("personal");
    let n = commit_count(&dir);
    b.click(&b.find("details.add > summary"));
    b.eval_on(&b.find("#note-category"), "arguments[0].value = '家务';");
    b.fill(&b.find("#note-title"), "倒垃圾");
    b.eval_on(&b.find("#note-importance"), "arguments[0].value = '4';");
    b.fill(&b.find("#note-content"), "每周二晚上倒垃圾。");
    let text = b.submit(&b.find("#add-note button[type=submit]"), WAIT);
    assert!(text.contains("每周二晚上倒垃圾。"), "{text}");
    assert_eq!(commit_count(&dir), n + 1, "one commit");
    let msg = git(&dir, &["log", "-1", "--format=%B"]);
    assert!(msg.contains("Engram-Tool: store") && msg.contains("Engram-Client: web-ui"), "{msg}");
    let file = std::fs::read_to_string(dir.join("notes/家务/倒垃圾.md")).expect("the note's file");
    assert!(file.contains("importance: 4") && file.contains("每周二晚上倒垃圾。"), "{file}");

    // The notes tool recalls it.
    let recalled = runtime().block_on(async {
        let c = env.client_with(&["--tools", "notes"]).await;
        call(&c, "recall", json!({"query": "倒垃圾"})).await.text
    });
    assert!(recalled.contains("每周二晚上倒垃圾。"), "{recalled}");

    // A category that holds a note cannot be deleted (no button); an empty one can.
    let row = |name: &str| b.find(&format!("tr[data-category=\"{name}\"]"));
    assert!(
        b.eval_on(&row("家务"), "return arguments[0].querySelector('button.danger') === null;")
            == json!(true)
    );
    b.click(&b.find(&format!("#n-{} details.menu > summary", note_id(&b))));
    b.submit(&b.find("article.note button.danger"), WAIT);
    assert!(!dir.join("notes/家务/倒垃圾.md").exists(), "forget removed the file");
    b.goto(&format!("{base}/notes"));
    let text = b.submit(&b.find("tr[data-category=\"家务\"] button.danger"), WAIT);
    assert!(!text.contains("家里的安排"), "{text}");
    assert!(git(&dir, &["log", "-1", "--format=%s"]).contains("category: delete 家务"));
    assert_fsck(&dir);
}

fn note_id(b: &Browser) -> String {
    let art = b.find("article.note");
    b.eval_on(&art, "return arguments[0].getAttribute('data-id');").as_str().unwrap_or_default().to_owned()
}

#[test]
fn personal_and_graph_pages_in_a_browser_show_the_tools_records() {
    let Some(b) = Browser::start() else { return };
    let env = TestEnv::new();
    runtime().block_on(async {
        let c = env.client_with(&["--tools", "graph,personal"]).await;
        ok(&c, "update_profile", json!({"key": "city", "value": "Berlin"})).await;
        ok(&c, "update_profile", json!({"key": "city", "value": "上海"})).await;
        ok(&c, "create_entity", json!({"entity_type": "person", "name": "Alice", "attributes": {"role": "manager"}})).await;
        let bob = ok(&c, "create_entity", json!({"entity_type": "person", "name": "Bob"})).await;
        let bob_id = serde_json::from_str::<serde_json::Value>(&bob).ok().and_then(|v| v["id"].as_str().map(str::to_owned));
        if let Some(id) = bob_id {
            ok(&c, "delete_entity", json!({"entity_id": id})).await;
        }
        ok(&c, "add_event", json!({"event_type": "activity", "description": "和 Alice 讨论预算", "related_entity_ids": ["Alice"]})).await;
        ok(&c, "create_entities", json!({"entities": [{"name": "Engram", "entityType": "project", "observations": ["written in Rust"]}]})).await;
        ok(&c, "create_relations", json!({"relations": [{"from": "Alice", "to": "Engram", "relationType": "leads"}]})).await;
    });
    let ui = UiServer::start(&env);
    let base = open(&b, &ui);
    b.goto(&format!("{base}/personal"));
    let text = b.body_text();
    assert!(text.contains("上海") && text.contains("Alice") && text.contains("manager"), "{text}");
    assert!(text.contains("和 Alice 讨论预算"), "the events timeline: {text}");
    let bob_status =
        b.find_all("tr[data-entity]").into_iter().find(|r| b.text(r).contains("Bob")).map(|r| b.text(&r));
    assert!(bob_status.is_some_and(|t| t.contains("inactive")), "the status of a deleted entity");
    b.click(&b.find("tr[data-key=\"city\"] a"));
    b.find("#history");
    let hist = b.text(&b.find("#history"));
    assert!(hist.contains("Berlin") && hist.contains("上海"), "the key's values over time: {hist}");

    b.goto(&format!("{base}/graph"));
    let text = b.body_text();
    assert!(text.contains("Engram") && text.contains("written in Rust") && text.contains("leads"), "{text}");
    b.fill(&b.find("#f-q"), "Rust");
    b.click(&b.find("form.filter button[type=submit]"));
    wait_for(WAIT, "the search", || b.url().contains("q=Rust").then_some(()));
    let names: Vec<String> = b.find_all("article.entity h3").iter().map(|e| b.text(e)).collect();
    assert_eq!(names, ["Engram"], "search_nodes finds by observation");
}

#[test]
fn memory_search_finds_chinese_and_history_shows_word_diffs_in_a_browser() {
    let Some(b) = Browser::start() else { return };
    let env = TestEnv::new();
    env.init("p");
    let ui = UiServer::start(&env);
    for (summary, content) in [
        ("喜欢绿茶", "用户喜欢下午喝绿茶，不加糖。"),
        ("walks", "The user walks to work every day."),
        ("Alice", "Alice leads the mobile team."),
    ] {
        let (status, v) = ui.api(
            "POST",
            "/api/packs/p/memories",
            Some(json!({"category": "prefs", "summary": summary, "content": content})),
        );
        assert_eq!(status, 201, "{v}");
    }
    let base = open(&b, &ui);
    b.goto(&format!("{base}/p/p/memory"));
    b.fill(&b.find("#q"), "绿茶");
    b.click(&b.find("form.filter button[type=submit]"));
    wait_for(WAIT, "the search", || b.url().contains("q=").then_some(()));
    let shown: Vec<String> = b.find_all("article.memory h3").iter().map(|e| b.text(e)).collect();
    // Best first: entries written beside a strong hit and holding a word of the
    // query may follow it (the engine's neighbour boost), but the one that holds
    // the words leads.
    assert_eq!(shown.first().map(String::as_str), Some("喜欢绿茶"), "{}", b.body_text());

    // A correction from the memory's menu; the history shows the changed words.
    b.goto(&format!("{base}/p/p/memory?q=walks"));
    let art = b.find("article.memory");
    let id = b.eval_on(&art, "return arguments[0].getAttribute('data-id');").as_str().unwrap().to_owned();
    b.click(&b.find(&format!("#m-{id} details.menu > summary")));
    b.fill(&b.find(&format!("#c-{id}")), "The user cycles to work every day.");
    b.submit(&b.find(&format!("#m-{id} button.save")), WAIT);
    b.goto(&format!("{base}/p/p/history"));
    let first = b.find("article.commit");
    let del: Vec<String> =
        b.find_all("article.commit:first-of-type .wdiff del").iter().map(|e| b.text(e)).collect();
    let ins: Vec<String> =
        b.find_all("article.commit:first-of-type .wdiff ins").iter().map(|e| b.text(e)).collect();
    assert!(del.contains(&"walks".to_owned()) && ins.contains(&"cycles".to_owned()), "{}", b.text(&first));

    // The memory's own history, opened in its card, then on its own page.
    b.goto(&format!("{base}/p/p/memory?q=cycles"));
    b.click(&b.find(&format!("#m-{id} details.history > summary")));
    b.find(&format!("#m-{id} details.history .commits[data-state=loaded]"));
    assert!(b.url().contains("/p/p/memory"), "in place: {}", b.url());
    let in_card = b.find_all(&format!("#m-{id} details.history article.commit"));
    assert_eq!(in_card.len(), 2, "its capture and its correction");
    let ins: Vec<String> =
        b.find_all(&format!("#m-{id} details.history .wdiff ins")).iter().map(|e| b.text(e)).collect();
    assert!(ins.contains(&"cycles".to_owned()), "the word diff in the card: {ins:?}");
    b.click(&b.find(&format!("#m-{id} details.history a.memory-history")));
    b.find("#memory-history");
    assert_eq!(b.find_all("article.commit").len(), 2, "the same commits on their own page");
}

#[test]
fn memory_list_folds_filters_and_deletes_several_memories_in_one_commit_in_a_browser() {
    let Some(b) = Browser::start() else { return };
    let env = TestEnv::new();
    env.init("p");
    let ui = UiServer::start(&env);
    let dir = env.pack("p");
    for (category, summary) in
        [("prefs", "tea"), ("prefs", "coffee"), ("work", "standup"), ("work", "review")]
    {
        let content = format!("The user's {summary} habit.");
        let (status, v) = ui.api(
            "POST",
            "/api/packs/p/memories",
            Some(json!({"category": category, "summary": summary, "content": content})),
        );
        assert_eq!(status, 201, "{v}");
    }
    let base = open(&b, &ui);

    // One search box; the other filters folded until asked for (or set).
    b.goto(&format!("{base}/p/p/memory"));
    let hidden = |css: &str| b.eval_on(&b.find(css), "return !arguments[0].checkVisibility();");
    assert_eq!(hidden("#q"), json!(false), "the search box is shown");
    assert_eq!(hidden("#category"), json!(true), "the filters are folded");
    b.click(&b.find("details.filters > summary"));
    assert_eq!(hidden("#category"), json!(false), "asked for, they unfold");
    b.goto(&format!("{base}/p/p/memory?category=work"));
    assert_eq!(hidden("#category"), json!(false), "a filter in use is shown");

    // Three ticked, one button: one commit by web-ui, and they are gone.
    b.goto(&format!("{base}/p/p/memory"));
    let n = commit_count(&dir);
    let ids: Vec<String> = ["tea", "standup", "review"]
        .iter()
        .map(|s| {
            let art = b
                .find_all("article.memory")
                .into_iter()
                .find(|a| b.text(a).contains(&format!("The user's {s} habit.")))
                .unwrap_or_else(|| panic!("memory {s}"));
            b.eval_on(&art, "return arguments[0].getAttribute('data-id');")
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    for id in &ids {
        b.click(&b.find(&format!("#m-{id} label.pick input")));
    }
    let text = b.submit(&b.find("#bulk button[type=submit]"), WAIT);
    assert_eq!(commit_count(&dir), n + 1, "one commit for three memories");
    let msg = git(&dir, &["log", "-1", "--format=%B"]);
    assert!(msg.starts_with("delete: 3 memories") && msg.contains("Engram-Tool: delete_memory"), "{msg}");
    assert!(msg.contains("Engram-Client: web-ui"), "{msg}");
    for gone in ["tea", "standup", "review"] {
        assert!(!text.contains(&format!("The user's {gone} habit.")), "{gone} is still listed: {text}");
    }
    assert!(text.contains("The user's coffee habit."), "{text}");
    let (_, list) = ui.api("GET", "/api/packs/p/memories", None);
    let left: Vec<&str> =
        list["items"].as_array().into_iter().flatten().filter_map(|i| i["summary"].as_str()).collect();
    assert_eq!(left, ["coffee"], "{list}");
    let files = git(&dir, &["grep", "-h", "-o", "The user's [a-z]* habit", "HEAD", "--", "memory"]);
    assert_eq!(files.trim(), "The user's coffee habit.".trim_end_matches('.'), "the entries left the files");
    assert_fsck(&dir);
}

#[test]
fn a_likely_duplicate_is_merged_in_one_consolidate_commit_in_a_browser() {
    let Some(b) = Browser::start() else { return };
    let env = TestEnv::new();
    env.init("p");
    let ui = UiServer::start(&env);
    let dir = env.pack("p");
    let mut ids = Vec::new();
    for (summary, content) in [
        ("green tea", "The user likes green tea."),
        ("coffee", "The user drinks coffee before nine."),
        ("Green tea!", "Green tea in the afternoon, no sugar."),
    ] {
        let (status, v) = ui.api(
            "POST",
            "/api/packs/p/memories",
            Some(json!({"category": "prefs", "summary": summary, "content": content})),
        );
        assert_eq!(status, 201, "{v}");
        ids.push(v["id"].as_str().expect("the new entry's id").to_owned());
    }
    let base = open(&b, &ui);
    b.goto(&format!("{base}/p/p/memory"));

    // Only the later of the two is marked, and it offers the merge, the two texts shown.
    let offers = b.find_all("article.memory details.merge");
    assert_eq!(offers.len(), 1, "{}", b.body_text());
    let card = format!("#m-{}", ids[2]);
    b.click(&b.find(&format!("{card} details.merge > summary")));
    let text = b.find(&format!("{card} form.merge textarea"));
    let shown = b.eval_on(&text, "return arguments[0].value;");
    assert_eq!(shown, "The user likes green tea.\n\nGreen tea in the afternoon, no sugar.");
    b.fill(&text, "The user likes green tea in the afternoon, no sugar.");

    // One commit, as consolidate_memory makes, by web-ui: the two are gone, one is new.
    let n = commit_count(&dir);
    let page = b.submit(&b.find(&format!("{card} form.merge button[type=submit]")), WAIT);
    assert_eq!(commit_count(&dir), n + 1, "one commit");
    let msg = git(&dir, &["log", "-1", "--format=%B"]);
    assert!(msg.starts_with("consolidate: prefs"), "{msg}");
    assert!(
        msg.contains("Engram-Tool: consolidate_memory") && msg.contains("Engram-Client: web-ui"),
        "{msg}"
    );
    assert!(page.contains("The user likes green tea in the afternoon, no sugar."), "{page}");
    assert!(b.find_all("details.merge").is_empty(), "no duplicate is left to merge");
    let (_, list) = ui.api("GET", "/api/packs/p/memories", None);
    let items = list["items"].as_array().cloned().unwrap_or_default();
    let left: Vec<(&str, &str)> =
        items.iter().filter_map(|i| Some((i["summary"].as_str()?, i["type"].as_str()?))).collect();
    assert_eq!(left, [("green tea", "consolidated"), ("coffee", "general")], "{list}");
    // (Ids are made of category, minute and rank: the test clock stands still, so the ones
    // after a removed entry move up; the texts tell the entries apart.)
    let texts: Vec<&str> = items.iter().filter_map(|i| i["content"].as_str()).collect();
    assert_eq!(
        texts,
        ["The user likes green tea in the afternoon, no sugar.", "The user drinks coffee before nine."],
        "{list}"
    );

    // The originals went to the category's archive, as a consolidation's do.
    let archive = std::fs::read_to_string(dir.join("memory/prefs-archive.md")).expect("the archive");
    assert!(
        archive.contains("The user likes green tea.")
            && archive.contains("Green tea in the afternoon, no sugar."),
        "{archive}"
    );
    let files = git(&dir, &["grep", "-h", "-c", "green tea", "HEAD", "--", "memory/prefs.md"]);
    assert_eq!(files.trim(), "1", "one entry about green tea is left in the log");
    assert_fsck(&dir);
}

#[test]
fn home_creates_and_installs_packs_and_a_pack_file_is_edited_in_a_browser() {
    let Some(b) = Browser::start() else { return };
    let env = TestEnv::new();
    env.init("src");
    let ui = UiServer::start(&env);
    let base = open(&b, &ui);
    b.click(&b.find("#create > summary"));
    b.fill(&b.find("#init-name"), "fresh");
    b.click(&b.find("#create button[type=submit]"));
    wait_for(WAIT, "the new pack's page", || b.url().contains("/p/fresh").then_some(()));
    assert!(env.pack("fresh").join("meta.json").is_file());

    // Install a copy of a pack from a path; the progress page follows it to the end.
    let source = env.dir.path().join("elsewhere").join("copied");
    copy_tree(&env.pack("src"), &source);
    std::fs::remove_dir_all(source.join(".git")).ok();
    b.goto(&base);
    b.click(&b.find("#install > summary"));
    b.fill(&b.find("#install-source"), &source.display().to_string());
    b.click(&b.find("#install button[type=submit]"));
    wait_for(WAIT, "the install to finish", || {
        b.find_all("#progress[data-state=done], #progress[data-state=failed]").first().cloned()
    });
    let progress = b.find("#progress");
    let state = b.eval_on(&progress, "return arguments[0].getAttribute('data-state');");
    assert_eq!(state, "done", "{}", b.body_text());
    assert!(env.pack("copied").join("meta.json").is_file(), "{}", b.body_text());

    // Open a pack file from the pack page, edit, save: one commit by web-ui.
    let dir = env.pack("src");
    let n = commit_count(&dir);
    b.goto(&format!("{base}/p/src"));
    b.click(&b.find("a.edit-file[href$=\"role.md\"]"));
    b.find("#file-text");
    b.fill(&b.find("#file-text"), "# Role\nA patient tutor.");
    b.submit(&b.find("#file-edit button.save"), WAIT);
    assert_eq!(std::fs::read_to_string(dir.join("role.md")).unwrap(), "# Role\nA patient tutor.\n");
    assert_eq!(commit_count(&dir), n + 1);
    assert!(git(&dir, &["log", "-1", "--format=%B"]).contains("Engram-Client: web-ui"));
}

/// Screenshots of the notes and personal pages and a search, in English and Chinese:
/// `ENGRAM_UI_SCREENSHOTS=$PWD/docs/screenshots cargo test --test it -- browser_pages::screenshots`.
#[test]
fn screenshots_of_the_new_pages() {
    let Some(out) = std::env::var_os("ENGRAM_UI_SCREENSHOTS") else { return };
    let Some(b) = Browser::start() else { return };
    let out = std::path::PathBuf::from(out);
    let env = TestEnv::new();
    env.init("coach");
    runtime().block_on(async {
        let c = env.client_with(&["--tools", "graph,personal,notes"]).await;
        ok(&c, "create_category", json!({"name": "work", "description": "projects and people"})).await;
        ok(&c, "store", json!({"category": "work", "title": "Release checklist", "content": "Freeze the code a week before; tag; write the notes.", "importance": 5})).await;
        ok(&c, "store", json!({"title": "咖啡偏好", "content": "每天早上一杯手冲咖啡，不加糖。", "importance": 3})).await;
        ok(&c, "update_profile", json!({"key": "city", "value": "Berlin"})).await;
        ok(&c, "update_profile", json!({"key": "language", "value": "中文 / English"})).await;
        ok(&c, "create_entity", json!({"entity_type": "person", "name": "Alice", "attributes": {"role": "mobile lead"}})).await;
        ok(&c, "add_event", json!({"event_type": "activity", "description": "和 Alice 讨论发布日期", "related_entity_ids": ["Alice"]})).await;
        ok(&c, "create_entities", json!({"entities": [{"name": "engram", "entityType": "project", "observations": ["git-native memory", "written in Rust"]}]})).await;
        ok(&c, "create_relations", json!({"relations": [{"from": "Alice", "to": "engram", "relationType": "reviews"}]})).await;
    });
    let ui = UiServer::start(&env);
    for (summary, content) in [
        ("prefers green tea", "The user prefers green tea in the afternoon, no sugar."),
        ("喜欢早上跑步", "用户喜欢早上六点跑步，每次五公里。"),
        ("喜欢绿茶", "用户下午喜欢喝绿茶。"),
    ] {
        ui.api(
            "POST",
            "/api/packs/coach/memories",
            Some(json!({"category": "preferences", "summary": summary, "content": content})),
        );
    }
    let base = open(&b, &ui);
    for lang in ["en", "zh"] {
        for (name, path) in [
            ("notes", "/notes?".to_owned()),
            ("personal", "/personal?".to_owned()),
            ("search", "/p/coach/memory?q=%E7%BB%BF%E8%8C%B6&".to_owned()),
        ] {
            b.goto(&format!("{base}{path}lang={lang}"));
            b.find("main");
            b.screenshot(&out.join(format!("{name}-{lang}.png")));
        }
    }
}

/// The activity chart, a damaged pack's badge and the memory search's order, as a person sees
/// them: the chart has a bar a day per client and the writers table names the tool clients and
/// the page; a pack with an unreadable branch carries the badge with `engram doctor` while the
/// other pack is listed and opens; the page lists a search's hits in the order `search_memory`
/// gives them.
#[test]
fn activity_chart_damaged_badge_and_search_order_like_the_tool_in_a_browser() {
    let Some(b) = Browser::start() else { return };
    let env = TestEnv::new();
    env.init("p");
    env.init("broken");
    let rt = runtime();
    let memories = [
        ("tea", "The user drinks green tea in the afternoon."),
        ("tea shop", "The tea shop on Elm street sells green tea and oolong."),
        ("coffee", "The user stopped drinking coffee; tea instead."),
        ("walks", "The user walks to work every day."),
    ];
    rt.block_on(async {
        let c = env.client().await;
        for (summary, content) in memories {
            let args = json!({"name": "p", "category": "prefs", "content": content, "summary": summary});
            ok(&c, "capture_memory", args).await;
        }
        drop(c);
    });
    let ui = UiServer::start(&env);
    let (status, v) = ui.api(
        "POST",
        "/api/packs/p/memories",
        Some(json!({"category": "prefs", "summary": "tea cups", "content": "Green tea cups are in the top drawer."})),
    );
    assert_eq!(status, 201, "{v}");
    let base = open(&b, &ui);

    // The activity page: an SVG chart with bars, and the writers table.
    b.goto(&format!("{base}/p/p/activity"));
    b.find("svg#activity-chart");
    assert!(!b.find_all("svg#activity-chart rect.bar").is_empty(), "no bars: {}", b.body_text());
    let writers = b.text(&b.find("table#writers"));
    assert!(writers.contains("web-ui"), "the page is a writer: {writers}");
    assert!(b.find_all("table#writers tbody tr").len() >= 2, "the test client and the page: {writers}");

    // The search on the page ranks like the tool.
    let tool = rt.block_on(async {
        let c = env.client().await;
        ok(&c, "search_memory", json!({"query": "green tea", "name": "p", "kinds": ["memory"]})).await
    });
    b.goto(&format!("{base}/p/p/memory?q=green+tea"));
    let shown: Vec<String> = b.find_all("article.memory h3").iter().map(|e| b.text(e)).collect();
    assert!(shown.len() >= 2, "{shown:?}");
    let at: Vec<usize> = shown
        .iter()
        .map(|s| tool.find(s.as_str()).unwrap_or_else(|| panic!("{s} is not a hit of the tool:\n{tool}")))
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "page order {shown:?} is not the tool's:\n{tool}");

    // A damaged pack: the badge with the doctor command on the home page; the other pack works.
    let pack = env.pack("broken");
    let branch = git(&pack, &["symbolic-ref", "HEAD"]).trim().to_owned();
    std::fs::write(pack.join(".git").join(&branch), "this is not a commit id\n").expect("write ref");
    b.goto(&format!("{base}/"));
    let badge = b.find(".badge.damaged");
    assert!(!b.text(&badge).is_empty());
    let home = b.body_text();
    assert!(home.contains("engram doctor broken"), "{home}");
    b.click(&b.find("a[href='/p/p']"));
    wait_for(WAIT, "the healthy pack's page", || b.url().ends_with("/p/p").then_some(()));
    assert!(b.find_all(".badge.damaged").is_empty(), "{}", b.body_text());
}
