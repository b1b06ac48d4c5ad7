//! Pruned top-k (`prune.rs`) gives exactly what scoring every posting gives:
//! same hits, same order, same scores, fields, snippets and neighbours —
//! over a generated corpus of Chinese and English with frequent words,
//! duplicates (ties), entries minutes apart (neighbours), names, filters,
//! a stored segment with changes over it, and changed parameters.

use std::sync::Arc;

use super::*;

use crate::searchbench::speed::Rng;

/// Small indices much more often (a skewed vocabulary: long lists).
fn skewed(rng: &mut Rng, n: usize) -> usize {
    let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
    ((n as f64) * u * u * u) as usize % n
}

const EN: [&str; 24] = [
    "memory", "agent", "coffee", "tokyo", "knee", "training", "Caroline", "Melanie", "garden", "budget", "review",
    "deploy", "guitar", "hiking", "dinner", "flight", "doctor", "recovery", "painting", "weekend", "rust", "kernel",
    "recipe", "sister",
];
const HAN: &str = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面";

fn text(rng: &mut Rng, words: usize) -> String {
    let han: Vec<char> = HAN.chars().collect();
    let mut s = String::new();
    for _ in 0..words {
        if rng.below(100) < 45 {
            for _ in 0..2 + rng.below(2) {
                s.push(han[skewed(rng, han.len())]);
            }
        } else {
            s.push(' ');
            s.push_str(EN[skewed(rng, EN.len())]);
            s.push(' ');
        }
    }
    s
}

/// `n` memory entries over a few packs and categories, a minute or two apart
/// (so many are neighbours in time), every 50th a copy of the one before.
fn corpus(n: usize, seed: u64) -> Vec<Document> {
    let mut rng = Rng(seed);
    let mut out: Vec<Document> = Vec::new();
    let mut time = 1_700_000_000i64;
    for i in 0..n {
        time += 30 + rng.below(120) as i64;
        let pack = ["p", "q"][rng.below(2)];
        let path = format!("memory/c{}.md", rng.below(4));
        let mut d = if i % 50 == 49 && !out.is_empty() {
            let prev = out[out.len() - 1].clone();
            Document { id: String::new(), ..prev }
        } else {
            let (title_words, body_words) = (2 + rng.below(4), 6 + rng.below(20));
            let title = text(&mut rng, title_words);
            let mut d = Document::new("", title, text(&mut rng, body_words));
            d.tags = (0..rng.below(3)).map(|t| format!("t{t}")).collect();
            d.category = Some(path.clone());
            d.time = Some(time);
            d
        };
        d.id = format!("{path}#{i:05}");
        d.pack = pack.into();
        d.kind = ["memory", "memory", "knowledge"][rng.below(3)].into();
        d.path = path;
        out.push(d);
    }
    out
}

fn requests() -> Vec<SearchRequest> {
    let mut rng = Rng(11);
    let mut queries: Vec<String> = vec![
        "memory".into(),
        "的".into(),
        "的一".into(),
        "的是 memory".into(),
        "When did Caroline go hiking with Melanie?".into(),
        "coffee tokyo 的时候".into(),
        "nothing-matches-this".into(),
        "memory agent coffee tokyo knee training garden budget".into(),
    ];
    for _ in 0..30 {
        let words = 1 + rng.below(3);
        queries.push(text(&mut rng, words));
    }
    let mut out = Vec::new();
    for (i, q) in queries.iter().enumerate() {
        out.push(SearchRequest::new(q.as_str()).limit(10));
        out.push(SearchRequest::new(q.as_str()).limit(1 + i % 40));
        out.push(SearchRequest::new(q.as_str()).limit(10).neighbour_weight(0.0));
        let mut f = Filter::all().kinds(["memory"]);
        if i % 2 == 0 {
            f.tags = vec!["t0".into()];
        }
        if i % 3 == 0 {
            f.category = Some("memory/c1.md".into());
        }
        out.push(SearchRequest::new(q.as_str()).limit(20).filter(f.time_range(Some(1_700_050_000), None)));
        out.push(SearchRequest::new(q.as_str()).limit(5).filter(Filter::all().pack("q")));
        if i % 4 == 0 {
            out.push(SearchRequest::new(q.as_str()).limit(10).feedback(FeedbackParams::default()));
        }
    }
    out
}

/// Every request answers the same pruned and exhaustive; returns how many
/// hits were compared.
fn assert_same_pruned(idx: &SearchIndex, what: &str) -> usize {
    let mut compared = 0;
    for req in requests() {
        let exhaustive = idx.search_with(&SearchRequest { prune: false, ..req.clone() });
        let pruned = idx.search_with(&req);
        assert_eq!(pruned, exhaustive, "{what}: {req:?}");
        compared += pruned.len();
    }
    compared
}

#[test]
fn pruned_top_k_equals_scoring_every_posting() {
    let built = SearchIndex::build(corpus(3000, 5)).expect("build");
    let compared = assert_same_pruned(&built, "in memory");
    assert!(compared > 1000, "{compared} hits compared");

    // A stored segment with changes over it: replaced, removed and new documents.
    let mut layered = SearchIndex::from_snapshot(&built.to_snapshot().expect("snapshot")).expect("open");
    assert_same_pruned(&layered, "stored");
    for (i, mut d) in corpus(400, 9).into_iter().enumerate() {
        if i % 2 == 0 {
            d.id = format!("new#{i:05}");
        }
        layered.upsert(d).expect("upsert");
    }
    for i in (0..3000).step_by(7) {
        for c in 0..4 {
            layered.remove(&format!("memory/c{c}.md#{i:05}"));
        }
    }
    assert_same_pruned(&layered, "stored + changes");
    // Neighbours in time found through the stored day lists (walked outward
    // from an entry) are those a fresh in-memory build finds.
    let fresh = SearchIndex::build(layered.documents().map(|d| d.into_owned()).collect::<Vec<_>>()).expect("build");
    for req in requests() {
        assert_eq!(layered.search_with(&req), fresh.search_with(&req), "fresh: {req:?}");
    }

    // Other parameters: the bounds follow them.
    layered.set_params(Bm25Params { k1: 1.4, weights: [3.0, 2.0, 1.5, 0.4, 1.0], b: [0.9, 0.5, 0.5, 0.75, 0.0] });
    assert_same_pruned(&layered, "other parameters");
}

#[test]
fn pruning_skips_most_postings_of_a_frequent_word() {
    let idx = SearchIndex::from_snapshot(&SearchIndex::build(corpus(6000, 3)).expect("build").to_snapshot().expect("snapshot"))
        .expect("open");
    let term = parse_query(&mut tokenize::Tokenizer::new(), "memory").remove(0).text;
    let df = idx.doc_freq(&term);
    assert!(df > 2000, "memory in {df} documents");
    let req = SearchRequest::new("memory").limit(10);
    prune::evaluated_reset();
    let hits = idx.search_with(&req);
    let scored = prune::evaluated_reset();
    assert_eq!(hits, idx.search_with(&SearchRequest { prune: false, ..req }));
    eprintln!("SCORED {scored} of {df}");
    assert!(scored * 4 < df, "{scored} of {df} documents scored");
}

#[test]
fn boosts_still_apply_when_pruning() {
    // The neighbour of a strong hit rises above a lone entry of the same words.
    let mut docs = corpus(2000, 21);
    let t = 1_800_000_000;
    let at = |id: &str, body: &str, time: i64| Document {
        pack: "p".into(),
        kind: "memory".into(),
        path: "memory/log.md".into(),
        time: Some(time),
        ..Document::new(id, "", body)
    };
    docs.push(at("log#a", "zebra zebra quokka 斑马", t));
    docs.push(at("log#b", "quokka", t + 60));
    docs.push(at("log#c", "quokka", t + 10 * 86_400));
    let idx = SearchIndex::build(docs).expect("build");
    let req = SearchRequest::new("zebra quokka").limit(3);
    let hits = idx.search_with(&req);
    assert_eq!(hits, idx.search_with(&SearchRequest { prune: false, ..req }));
    let ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, ["log#a", "log#b", "log#c"], "the neighbour first");
    assert_eq!(hits[1].beside.as_deref(), Some("log#a"));
    // A name weighs more; a time span still boosts (scored exhaustively).
    let mut dated = SearchRequest::new("quokka yesterday").limit(3);
    dated.now = Some(t + 10 * 86_400 + 86_400);
    let hits = idx.search_with(&dated);
    assert_eq!(hits, idx.search_with(&SearchRequest { prune: false, ..dated }));
    assert_eq!(hits.first().map(|h| h.id.as_str()), Some("log#c"), "yesterday's entry first");
    // Word vectors re-rank the pruned top 50.
    let vectors = "3 2\nquokka 1 0\nzebra 0 1\n斑 1 1\n";
    let emb = SharedEmbeddings(Arc::new(Embeddings::read(vectors.as_bytes(), "tiny").expect("vectors")));
    let mut req = SearchRequest::new("quokka 的").limit(5);
    req.embeddings = Some(emb);
    assert_eq!(idx.search_with(&req), idx.search_with(&SearchRequest { prune: false, ..req.clone() }));
}
