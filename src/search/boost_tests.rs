//! Behaviour tests of the boosts after the lexical scores: neighbours in
//! time, time expressions, word-vector re-ranking.

use std::sync::Arc;

use super::*;

const DAY: i64 = 86_400;
/// 2023-05-25 12:00 UTC, a Thursday.
const NOW: i64 = 1_685_016_000;

fn at(id: &str, body: &str, time: i64) -> Document {
    Document {
        pack: "p".into(),
        kind: "memory".into(),
        path: "memory/log.md".into(),
        time: Some(time),
        ..Document::new(id, "", body)
    }
}

fn ids(hits: &[Hit]) -> Vec<&str> {
    hits.iter().map(|h| h.id.as_str()).collect()
}

#[test]
fn the_entry_after_a_strong_hit_rises_with_it_and_says_so() {
    let idx = SearchIndex::build(vec![
        at("q", "Where did you travel in the summer?", NOW),
        at("b-next", "Lake Tahoe, it was calm that summer", NOW + 60),
        at("c-unrelated", "It was so calm", NOW + 120),
        at("a-other-day", "Lake Tahoe, it was calm that summer", NOW + DAY),
        at("d-far", "Lake Tahoe, it was calm that summer", NOW + 3 * 3600),
    ])
    .expect("build");
    let plain = idx.search_with(&SearchRequest::new("travel summer").limit(10).neighbour_weight(0.0));
    assert_eq!(ids(&plain), ["q", "a-other-day", "b-next", "d-far"], "a tie, broken by id");
    assert!(plain.iter().all(|h| h.beside.is_none()));
    let hits = idx.search_with(&SearchRequest::new("travel summer").limit(10));
    assert_eq!(
        ids(&hits),
        ["b-next", "q", "a-other-day", "d-far"],
        "the next entry rises, past the question it answers; not another day's, not three hours later"
    );
    assert_eq!(hits[0].beside.as_deref(), Some("q"), "it says whose context it is");
    assert!(hits.iter().all(|h| h.id == "b-next" || h.beside.is_none()));
    // An entry that holds none of the query's words is never a hit, however near.
    let hits = idx.search_with(&SearchRequest::new("travel").limit(10));
    assert_eq!(ids(&hits), ["q"]);
}

#[test]
fn an_entry_answering_every_part_of_the_question_beats_one_repeating_a_part() {
    let idx = SearchIndex::build(vec![
        Document::new("a-repeat", "", "kayak kayak kayak kayak trip"),
        Document::new("b-both", "", "kayak on the lake"),
        Document::new("c", "", "lake view"),
        Document::new("d", "", "lake house"),
        Document::new("e", "", "quiet lake"),
        Document::new("f", "", "mountain hut"),
        Document::new("g", "", "city walk"),
    ])
    .expect("build");
    let hits = idx.search_with(&SearchRequest::new("kayak lake").limit(3));
    assert_eq!(ids(&hits)[..2], ["b-both", "a-repeat"]);
}

#[test]
fn a_time_expression_raises_the_entries_of_that_time() {
    let idx = SearchIndex::build(vec![
        at("a-old", "team meeting about the budget", NOW - 10 * DAY),
        at("b-yesterday", "team meeting about the budget", NOW - DAY),
        at("a-zh-old", "预算会议", NOW - 40 * DAY),
        at("b-zh-last-week", "预算会议", NOW - 7 * DAY),
    ])
    .expect("build");
    let ask = |q: &str, now: Option<i64>| {
        let mut req = SearchRequest::new(q).limit(10).neighbour_weight(0.0);
        req.now = now;
        idx.search_with(&req).into_iter().map(|h| h.id).collect::<Vec<_>>()
    };
    assert_eq!(ask("budget meeting", Some(NOW))[0], "a-old", "a tie, broken by id");
    assert_eq!(ask("budget meeting yesterday", Some(NOW))[0], "b-yesterday");
    assert_eq!(ask("上周的预算会议", Some(NOW))[0], "b-zh-last-week");
    assert_eq!(ask("预算会议", Some(NOW))[0], "a-zh-old");
    // Memories that stopped a year ago: "today" is the day of the newest hit.
    assert_eq!(ask("budget meeting today", Some(NOW + 365 * DAY))[0], "b-yesterday");
    // Without `now`, the newest entry is the anchor.
    assert_eq!(ask("budget meeting today", None)[0], "b-yesterday");
}

#[test]
fn a_question_of_only_a_time_lists_the_entries_of_that_time() {
    let idx = SearchIndex::build(vec![
        at("mon", "dentist appointment", NOW - 3 * DAY),
        at("thu", "bought groceries", NOW),
    ])
    .expect("build");
    let mut req = SearchRequest::new("what did I do on Monday?").limit(10);
    req.now = Some(NOW);
    assert_eq!(ids(&idx.search_with(&req)), ["mon"]);
    let mut req = SearchRequest::new("我昨天做了什么").limit(10);
    req.now = Some(NOW + DAY);
    assert_eq!(ids(&idx.search_with(&req)), ["thu"]);
}

#[test]
fn word_vectors_re_rank_the_lexical_hits() {
    let model = "4 3\npet 0 0 1\ncat 1 0 0\nkitten 0.95 0.05 0\ndog 0 1 0\n";
    let emb = Arc::new(Embeddings::read(model.as_bytes(), "tiny").expect("model"));
    let idx = SearchIndex::build(vec![
        at("a-dog", "pet dog", NOW),
        at("b-kitten", "pet kitten", NOW + DAY),
    ])
    .expect("build");
    let lexical = idx.search_with(&SearchRequest::new("pet cat").limit(2).neighbour_weight(0.0));
    assert_eq!(ids(&lexical), ["a-dog", "b-kitten"], "a tie, broken by id");
    let mut req = SearchRequest::new("pet cat").limit(2).neighbour_weight(0.0);
    req.embeddings = Some(SharedEmbeddings(emb));
    assert_eq!(ids(&idx.search_with(&req)), ["b-kitten", "a-dog"]);
}
