//! How the page is laid out, in a real browser (headless chromium over WebDriver, see
//! `webdriver.rs`): every page fits a phone (390×844) as well as a desktop (1280×900) with no
//! sideways scrolling, tables turn into cards on the phone; the pack page hides the template's
//! HTML comments and links its knowledge index to the files; the home page's create and install
//! forms are on the first screen however many packs there are.

use serde_json::json;

use crate::browser_pages::{open, runtime};
use crate::common::*;
use crate::ui::UiServer;
use crate::webdriver::Browser;

/// The sizes every page is tried at: a desktop, then a phone.
const SIZES: [(u32, u32); 2] = [(1280, 900), (390, 844)];

/// Text with no place to break (a long address), which must wrap rather than widen the page.
fn long_word() -> String {
    format!("https://example.org/{}", "a-long-path-segment-without-spaces-".repeat(8))
}

#[test]
fn every_page_fits_a_phone_and_a_desktop_in_a_browser() {
    let Some(b) = Browser::start() else { return };
    let env = TestEnv::new();
    env.init("p");
    runtime().block_on(async {
        let c = env.client_with(&["--tools", "graph,personal,notes"]).await;
        ok(&c, "store", json!({"title": "Release checklist", "content": long_word(), "importance": 4})).await;
        ok(&c, "update_profile", json!({"key": "homepage", "value": long_word()})).await;
        ok(
            &c,
            "create_entity",
            json!({"entity_type": "person", "name": "Alice", "attributes": {"role": "mobile lead"}}),
        )
        .await;
        ok(
            &c,
            "create_entities",
            json!({"entities": [{"name": "engram", "entityType": "project", "observations": [long_word()]}]}),
        )
        .await;
        ok(
            &c,
            "create_relations",
            json!({"relations": [{"from": "Alice", "to": "engram", "relationType": "reviews"}]}),
        )
        .await;
    });
    let ui = UiServer::start(&env);
    for (summary, content) in [("tea", "The user likes green tea.".to_owned()), ("link", long_word())] {
        let (status, v) = ui.api(
            "POST",
            "/api/packs/p/memories",
            Some(json!({"category": "prefs", "summary": summary, "content": content, "type": "preference"})),
        );
        assert_eq!(status, 201, "{v}");
    }
    let (_, list) = ui.api("GET", "/api/packs/p/memories", None);
    let id = list["items"][0]["id"].as_str().expect("a memory id").to_owned();
    let base = open(&b, &ui);
    let pages = [
        "/".to_owned(),
        "/p/p".to_owned(),
        "/p/p/memory".to_owned(),
        "/p/p/memory?q=tea".to_owned(),
        "/p/p/memory?old=1".to_owned(),
        "/p/p/history".to_owned(),
        format!("/p/p/history?memory={id}"),
        "/p/p/file?path=role.md".to_owned(),
        "/notes".to_owned(),
        "/personal".to_owned(),
        "/personal?key=homepage".to_owned(),
        "/graph".to_owned(),
        "/sync".to_owned(),
    ];
    for (width, height) in SIZES {
        b.set_size(width, height);
        for lang in ["en", "zh"] {
            for path in &pages {
                let sep = if path.contains('?') { '&' } else { '?' };
                b.goto(&format!("{base}{path}{sep}lang={lang}"));
                b.find("main");
                let fit = b.eval("return [document.documentElement.scrollWidth, window.innerWidth];");
                let (scroll, inner) = (fit[0].as_u64().unwrap_or(u64::MAX), fit[1].as_u64().unwrap_or(0));
                assert_eq!(inner, u64::from(width), "the viewport is the window");
                assert!(scroll <= inner, "{path} ({lang}) scrolls sideways at {width}px: {scroll} > {inner}");
            }
        }
        // Tables are cards on the phone: a row is a block, its cells named by their columns.
        b.goto(&format!("{base}/?lang=en"));
        let row = b.find("table.packs tbody tr");
        let display = b.eval_on(&row, "return getComputedStyle(arguments[0]).display;");
        let label = b.eval_on(
            &b.find("table.packs tbody td[data-label]"),
            "return getComputedStyle(arguments[0], '::before').content;",
        );
        if width < 600 {
            assert_eq!(display, "block", "a card on the phone");
            assert_eq!(label, "\"Memories: \"", "the cell says what it is");
        } else {
            assert_eq!(display, "table-row", "a table on the desktop");
        }
    }
}

#[test]
fn pack_page_hides_template_comments_links_knowledge_and_home_forms_come_first_in_a_browser() {
    let Some(b) = Browser::start() else { return };
    let env = TestEnv::new();
    for i in 0..15 {
        env.init(&format!("pack-{i:02}"));
    }
    let ui = UiServer::start(&env);
    let base = open(&b, &ui);
    b.set_size(1280, 900);

    // The create and install forms are on the first screen, above fifteen packs.
    b.goto(&format!("{base}/"));
    assert_eq!(b.find_all("table.packs tbody tr").len(), 15);
    for summary in ["#create > summary", "#install > summary"] {
        let bottom = b.eval_on(&b.find(summary), "return arguments[0].getBoundingClientRect().bottom;");
        let seen = b.eval("return window.innerHeight;");
        assert!(bottom.as_f64() < seen.as_f64(), "{summary} is below the first screen: {bottom} ≥ {seen}");
    }

    // The template's comments are not shown; its knowledge index entries link to the files.
    b.goto(&format!("{base}/p/pack-00"));
    let source = b.eval("return document.querySelector('main').innerHTML;");
    let source = source.as_str().unwrap_or_default();
    let text = b.body_text();
    assert!(!text.contains("<!--") && !source.contains("&lt;!--"), "a comment shown as text: {text}");
    let knowledge = b.find_all("div.md a[href*=\"file?path=knowledge\"]");
    assert!(!knowledge.is_empty(), "no knowledge link: {source}");
    let name = b.text(&knowledge[0]);
    assert!(name.starts_with("knowledge/") && name.ends_with(".md"), "{name}");
    b.click(&knowledge[0]);
    let editor = b.find("#file-text");
    let shown = b.eval_on(&editor, "return arguments[0].value;");
    let file = std::fs::read_to_string(env.pack("pack-00").join(&name)).expect("the linked file exists");
    assert_eq!(shown.as_str().map(str::trim_end), Some(file.trim_end()), "the linked file's page");
}
