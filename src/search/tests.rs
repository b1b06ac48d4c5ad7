//! Behaviour tests of the index: ranking, filters, updates, snapshots.

use super::*;

fn doc(id: &str, title: &str, body: &str) -> Document {
    Document {
        pack: "p".into(),
        kind: "memory".into(),
        path: format!("memory/{id}.md"),
        ..Document::new(id, title, body)
    }
}

fn ids(hits: &[Hit]) -> Vec<&str> {
    hits.iter().map(|h| h.id.as_str()).collect()
}

fn index(docs: Vec<Document>) -> SearchIndex {
    SearchIndex::build(docs).expect("build")
}

#[test]
fn finds_english_with_stemming() {
    let idx = index(vec![
        doc("a", "", "Melanie painted a sunset over the lake"),
        doc("b", "", "Caroline went hiking in the mountains"),
    ]);
    assert_eq!(
        ids(&idx.search("paintings of sunsets", &Filter::all(), 5)),
        ["a"]
    );
    assert_eq!(ids(&idx.search("who hikes?", &Filter::all(), 5)), ["b"]);
}

#[test]
fn traditional_and_simplified_characters_find_each_other() {
    let idx = index(vec![
        doc("meeting", "周会时间", "团队每周二上午十点开周会"),
        doc("passport", "護照到期", "護照將在明年五月到期"),
        doc("run", "跑步", "周末去公园慢跑五公里"),
    ]);
    assert_eq!(ids(&idx.search("週會是星期幾啊", &Filter::all(), 1)), ["meeting"]);
    assert_eq!(ids(&idx.search("护照啥时候过期", &Filter::all(), 1)), ["passport"]);
    let hit = &idx.search("週會", &Filter::all(), 1)[0];
    assert!(hit.snippet.contains("周会"), "the snippet shows the text as written: {}", hit.snippet);
}

#[test]
fn one_char_cjk_query_matches() {
    let idx = index(vec![
        doc("cat", "", "我家的猫叫咪咪"),
        doc("dog", "", "我家的狗叫旺财"),
    ]);
    assert_eq!(ids(&idx.search("猫", &Filter::all(), 5)), ["cat"]);
    assert_eq!(ids(&idx.search("狗", &Filter::all(), 5)), ["dog"]);
}

#[test]
fn chinese_japanese_korean_and_mixed_queries() {
    let idx = index(vec![
        doc("zh", "", "我最近在学习机器学习和深度学习"),
        doc("mix", "", "周末用Rust写了一个MCP服务器"),
        doc("ja", "", "東京で美味しい寿司を食べました"),
        doc("ko", "", "서울에서 친구와 함께 여행했어요"),
        doc("en", "", "I like sushi and machine learning"),
    ]);
    assert_eq!(ids(&idx.search("机器学习", &Filter::all(), 1)), ["zh"]);
    assert_eq!(
        ids(&idx.search("rust mcp 服务器", &Filter::all(), 1)),
        ["mix"]
    );
    assert_eq!(ids(&idx.search("ＲＵＳＴ", &Filter::all(), 1)), ["mix"]);
    assert_eq!(ids(&idx.search("東京 寿司", &Filter::all(), 1)), ["ja"]);
    assert_eq!(ids(&idx.search("서울 여행", &Filter::all(), 1)), ["ko"]);
}

#[test]
fn emoji_and_punctuation_only_queries_are_sane() {
    let idx = index(vec![
        doc("e", "", "今天很开心 🎉🎉"),
        doc("f", "", "plain text"),
    ]);
    assert_eq!(ids(&idx.search("🎉", &Filter::all(), 5)), ["e"]);
    assert!(idx.search("?!…，。", &Filter::all(), 5).is_empty());
    assert!(idx.search("", &Filter::all(), 5).is_empty());
}

#[test]
fn title_hit_ranks_above_body_only_hit() {
    let idx = index(vec![
        doc(
            "body",
            "Weekly notes",
            "We discussed the deployment of the new server and deployment risks",
        ),
        doc(
            "title",
            "Deployment checklist",
            "Steps to follow before shipping a release",
        ),
        doc("zh-body", "周末安排", "周六去健身房练腿，然后去超市买菜"),
        doc("zh-title", "健身计划", "每周三次力量训练"),
    ]);
    let hits = idx.search("deployment", &Filter::all(), 5);
    assert_eq!(ids(&hits), ["title", "body"]);
    assert_eq!(hits[0].fields, [Field::Title]);
    assert_eq!(hits[1].fields, [Field::Body]);
    assert_eq!(
        ids(&idx.search("健身", &Filter::all(), 5)),
        ["zh-title", "zh-body"]
    );
}

#[test]
fn hits_carry_metadata_and_snippet() {
    let long = format!(
        "{} 我最喜欢的运动是游泳，每周去三次。{}",
        "无关的内容。".repeat(40),
        "结尾。".repeat(40)
    );
    let idx = index(vec![doc("a", "运动", &long)]);
    let hits = idx.search("游泳", &Filter::all(), 5);
    assert_eq!(hits.len(), 1);
    let h = &hits[0];
    assert_eq!((h.path.as_str(), h.pack.as_str()), ("memory/a.md", "p"));
    assert!(h.snippet.contains("游泳"), "{}", h.snippet);
    assert!(h.snippet.chars().count() <= SNIPPET_CHARS + 2);
}

#[test]
fn filters_restrict_results() {
    let mut a = doc("a", "", "running every morning");
    a.pack = "fitness".into();
    a.kind = "memory".into();
    a.category = Some("habits".into());
    a.memory_type = Some("fact".into());
    a.tags = vec!["sport".into(), "daily".into()];
    a.time = Some(1_000);
    let mut b = doc("b", "", "running a marathon");
    b.pack = "fitness".into();
    b.kind = "knowledge".into();
    b.tags = vec!["sport".into()];
    b.time = Some(2_000);
    let mut c = doc("c", "", "running the server");
    c.pack = "work".into();
    c.kind = "note".into();
    let idx = index(vec![a, b, c]);
    let run = |f: Filter| {
        let mut v: Vec<String> = idx
            .search("running", &f, 10)
            .into_iter()
            .map(|h| h.id)
            .collect();
        v.sort();
        v
    };
    assert_eq!(run(Filter::all()), ["a", "b", "c"]);
    assert_eq!(run(Filter::all().pack("fitness")), ["a", "b"]);
    assert_eq!(run(Filter::all().kinds(["memory", "note"])), ["a", "c"]);
    assert_eq!(
        run(Filter {
            category: Some("habits".into()),
            ..Filter::all()
        }),
        ["a"]
    );
    assert_eq!(
        run(Filter {
            memory_type: Some("fact".into()),
            ..Filter::all()
        }),
        ["a"]
    );
    assert_eq!(
        run(Filter {
            tags: vec!["sport".into(), "daily".into()],
            ..Filter::all()
        }),
        ["a"]
    );
    assert_eq!(
        run(Filter {
            tags: vec!["sport".into()],
            ..Filter::all()
        }),
        ["a", "b"]
    );
    assert_eq!(
        run(Filter {
            any_tags: vec!["daily".into(), "x".into()],
            ..Filter::all()
        }),
        ["a"]
    );
    assert_eq!(
        run(Filter::all().time_range(Some(1_000), Some(2_000))),
        ["a"]
    );
    assert_eq!(run(Filter::all().time_range(Some(1_001), None)), ["b"]);
    assert_eq!(run(Filter::all().time_range(None, Some(5_000))), ["a", "b"]);
}

#[test]
fn upsert_replaces_and_remove_deletes() {
    let mut idx = index(vec![
        doc("a", "", "apples and pears"),
        doc("b", "", "bananas"),
    ]);
    assert_eq!(idx.len(), 2);
    assert!(idx.upsert(doc("a", "", "cherries")).expect("upsert"));
    assert_eq!(idx.len(), 2);
    assert!(idx.search("apples", &Filter::all(), 5).is_empty());
    assert_eq!(ids(&idx.search("cherries", &Filter::all(), 5)), ["a"]);
    assert!(idx.remove("b"));
    assert!(!idx.remove("b"));
    assert!(idx.search("bananas", &Filter::all(), 5).is_empty());
    assert_eq!(idx.len(), 1);
    // The freed slot is reused and postings stay consistent.
    assert!(
        !idx.upsert(doc("c", "", "bananas and cherries"))
            .expect("upsert")
    );
    let mut got: Vec<String> = idx
        .search("cherries", &Filter::all(), 5)
        .into_iter()
        .map(|h| h.id)
        .collect();
    got.sort();
    assert_eq!(got, ["a", "c"]);
    assert_eq!(
        idx.get("c").map(|d| d.body.clone()).as_deref(),
        Some("bananas and cherries")
    );
}

#[test]
fn snapshot_round_trip_preserves_results() {
    let mut d = doc("a", "标题 Title", "身体 body text 🎉");
    d.tags = vec!["x".into()];
    d.time = Some(-5);
    d.category = Some("c".into());
    let mut idx = index(vec![
        d,
        doc("b", "", "other words"),
        doc("c", "", "more text"),
    ]);
    idx.remove("b");
    let bytes = idx.to_snapshot().expect("snapshot");
    let mut back = SearchIndex::from_snapshot(&bytes).expect("load");
    assert_eq!(back.len(), 2);
    for q in ["标题", "body", "text", "🎉", "x"] {
        assert_eq!(
            idx.search(q, &Filter::all(), 5),
            back.search(q, &Filter::all(), 5),
            "{q}"
        );
    }
    assert_eq!(back.get("a"), idx.get("a"));
    // The restored index stays updatable.
    back.upsert(doc("d", "", "fresh text")).expect("upsert");
    back.remove("a");
    assert_eq!(ids(&back.search("fresh", &Filter::all(), 5)), ["d"]);
    assert!(back.search("身体", &Filter::all(), 5).is_empty());
}

#[test]
fn corrupt_snapshots_are_errors() {
    let idx = index(vec![doc("a", "t", "hello world"), doc("b", "", "你好世界")]);
    let bytes = idx.to_snapshot().expect("snapshot");
    assert!(SearchIndex::from_snapshot(&[]).is_err());
    assert_eq!(
        SearchIndex::from_snapshot(b"not a snapshot at all, clearly").err(),
        Some(SnapshotError::BadMagic)
    );
    // Every truncation fails.
    for n in 0..bytes.len() {
        assert!(
            SearchIndex::from_snapshot(&bytes[..n]).is_err(),
            "truncated at {n}"
        );
    }
    // Every single-byte flip fails (checksum, header or structure).
    for i in 0..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 0x5a;
        assert!(SearchIndex::from_snapshot(&b).is_err(), "flip at {i}");
    }
    let mut extra = bytes.clone();
    extra.push(0);
    assert!(SearchIndex::from_snapshot(&extra).is_err());
}

#[test]
fn feedback_and_grouping_do_not_break_basic_results() {
    let mut docs = Vec::new();
    for i in 0..20 {
        let mut d = doc(
            &format!("d{i}"),
            "",
            &format!("turn {i} about gardening tomatoes and basil"),
        );
        d.path = format!("s{}", i % 4);
        docs.push(d);
    }
    let idx = index(docs);
    let req = SearchRequest::new("tomatoes")
        .limit(3)
        .feedback(FeedbackParams::default())
        .group_weight(0.5);
    assert_eq!(idx.search_with(&req).len(), 3);
}

#[test]
fn freed_slots_are_compacted_and_postings_stay_consistent() {
    let mut idx = SearchIndex::new();
    for i in 0..3000 {
        idx.upsert(doc(&format!("d{i}"), "", &format!("common word{i}")))
            .expect("upsert");
    }
    // Replace and remove enough documents to trigger compaction.
    for i in 0..2500 {
        if i % 2 == 0 {
            assert!(idx.remove(&format!("d{i}")));
        } else {
            idx.upsert(doc(&format!("d{i}"), "", &format!("changed word{i}")))
                .expect("upsert");
        }
    }
    assert!(idx.docs.len() < 3000 + 1250, "slots were compacted");
    assert_eq!(idx.len(), 3000 - 1250);
    assert_eq!(ids(&idx.search("word7", &Filter::all(), 5)), ["d7"]);
    assert_eq!(ids(&idx.search("word2999", &Filter::all(), 5)), ["d2999"]);
    assert!(idx.search("word8", &Filter::all(), 5).is_empty());
    assert_eq!(idx.search("changed", &Filter::all(), 2000).len(), 1250);
    assert_eq!(idx.search("common", &Filter::all(), 2000).len(), 500);
    for term in &idx.terms {
        assert!(term.postings.windows(2).all(|w| w[0].doc < w[1].doc));
    }
    let back = SearchIndex::from_snapshot(&idx.to_snapshot().expect("snapshot")).expect("load");
    assert_eq!(ids(&back.search("word7", &Filter::all(), 5)), ["d7"]);
}

#[test]
fn a_memory_that_asks_ranks_behind_one_that_tells() {
    let idx = index(vec![
        doc("asks", "", "Who is your favorite basketball player?"),
        doc("tells", "", "My favorite basketball player is LeBron, for his leadership."),
        doc("other", "", "We watched a basketball game on Sunday."),
    ]);
    for prune in [true, false] {
        for limit in [1, 3] {
            let mut req = SearchRequest::new("Who is John's favorite basketball player?").limit(limit);
            req.prune = prune;
            assert_eq!(ids(&idx.search_with(&req))[0], "tells", "prune {prune}, limit {limit}");
        }
    }
    let mut req = SearchRequest::new("favorite basketball player").limit(3);
    req.neighbour_weight = 0.0;
    assert_eq!(ids(&idx.search_with(&req)), ["tells", "asks", "other"]);
}
