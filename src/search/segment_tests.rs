//! An index read from a stored segment, then changed, answers exactly as an
//! index built in memory from the same documents.

use super::*;

/// Deterministic documents: mixed Chinese/English words, tags, times, paths.
fn docs(n: usize, seed: u64) -> Vec<Document> {
    let words = ["膝盖", "训练", "早上", "coffee", "tokyo", "knee", "squat", "深蹲", "plan", "旧伤"];
    let mut x = seed;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..n)
        .map(|i| {
            let body: Vec<&str> = (0..3 + next() % 8).map(|_| words[(next() % 10) as usize]).collect();
            let mut d = Document::new(format!("p{}#{i}", i % 7), words[(next() % 10) as usize], body.join(" "));
            d.path = format!("p{}", i % 7);
            d.kind = ["memory", "knowledge"][i % 2].into();
            d.category = Some(format!("c{}", i % 3));
            d.tags = (0..next() % 3).map(|t| format!("t{t}")).collect();
            d.time = Some(1_700_000_000 + (next() % 1000) as i64 * 86_400);
            d
        })
        .collect()
}

fn requests() -> Vec<SearchRequest> {
    let mut out = Vec::new();
    for q in ["膝盖 训练", "coffee", "knee squat", "深蹲", "plan tokyo 早上", "旧伤", "nothing here"] {
        out.push(SearchRequest::new(q).limit(50));
        out.push(SearchRequest::new(q).limit(5).filter(Filter::all().kinds(["memory"])));
        out.push(SearchRequest::new(q).limit(10).feedback(FeedbackParams::default()).group_weight(0.3));
        let mut f = Filter::all();
        f.category = Some("c1".into());
        f.tags = vec!["t0".into()];
        out.push(SearchRequest::new(q).limit(10).filter(f));
    }
    out
}

fn assert_same(a: &SearchIndex, b: &SearchIndex, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: len");
    for req in requests() {
        assert_eq!(a.search_with(&req), b.search_with(&req), "{what}: {req:?}");
    }
    let mut da: Vec<Document> = a.documents().map(|d| d.into_owned()).collect();
    let mut db: Vec<Document> = b.documents().map(|d| d.into_owned()).collect();
    da.sort_by(|x, y| x.id.cmp(&y.id));
    db.sort_by(|x, y| x.id.cmp(&y.id));
    assert_eq!(da, db, "{what}: documents");
    for d in &da {
        assert_eq!(b.get(&d.id).as_deref(), Some(d), "{what}: get");
    }
}

#[test]
fn a_stored_segment_answers_as_the_index_it_was_written_from() {
    let built = SearchIndex::build(docs(300, 7)).expect("build");
    let opened = SearchIndex::from_snapshot(&built.to_snapshot().expect("snapshot")).expect("open");
    assert_same(&built, &opened, "opened");
}

#[test]
fn changes_over_a_stored_segment_equal_a_fresh_build() {
    let first = docs(300, 7);
    let mut live = SearchIndex::build(first.clone()).expect("build");
    let mut layered = SearchIndex::from_snapshot(&live.to_snapshot().expect("snapshot")).expect("open");
    // Replace, remove and add documents on both.
    let changes = docs(120, 99);
    for (i, mut d) in changes.into_iter().enumerate() {
        if i % 3 == 0 {
            d.id = format!("new#{i}");
        }
        live.upsert(d.clone()).expect("upsert");
        layered.upsert(d).expect("upsert");
    }
    for i in (0..300).step_by(5) {
        let id = format!("p{}#{i}", i % 7);
        assert_eq!(live.remove(&id), layered.remove(&id), "{id}");
    }
    assert!(!layered.remove("p0#0"), "removed twice");
    assert_same(&live, &layered, "layered");
    // A fresh build of the surviving documents answers the same.
    let fresh = SearchIndex::build(live.documents().map(|d| d.into_owned()).collect::<Vec<_>>()).expect("build");
    assert_same(&fresh, &layered, "fresh");
    // Written again (segment + changes merged) and reopened: the same.
    let reopened = SearchIndex::from_snapshot(&layered.to_snapshot().expect("snapshot")).expect("open");
    assert_same(&fresh, &reopened, "reopened");
    assert!(!layered.is_damaged() && !reopened.is_damaged());
}

#[test]
fn a_file_segment_cut_short_after_opening_reports_damage() {
    let built = SearchIndex::build(docs(200, 3)).expect("build");
    let bytes = built.to_snapshot().expect("snapshot");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("seg");
    std::fs::write(&path, &bytes).expect("write");
    let file = std::sync::Arc::new(std::fs::File::open(&path).expect("open"));
    let source = SegmentSource::File { file, offset: 0, len: bytes.len() as u64 };
    let opened = SearchIndex::open_segment(source, true).expect("open");
    assert_same(&built, &opened, "file");
    // Someone cuts the file in place: reads fail, the index says so instead of panicking.
    std::fs::OpenOptions::new().write(true).open(&path).expect("open").set_len(200).expect("truncate");
    let _ = opened.search("膝盖 训练 coffee", &Filter::all(), 10);
    assert!(opened.is_damaged());
}

#[test]
fn boosts_and_filters_read_only_the_returned_documents() {
    // One busy day: every entry is a time neighbour of every other.
    let docs: Vec<Document> = (0..2000)
        .map(|i| {
            let mut d = Document::new(format!("memory/log.md#{i:05}"), "", format!("coffee tokyo note {i}"));
            d.pack = "p".into();
            d.kind = "memory".into();
            d.path = "memory/log.md".into();
            d.category = Some("log".into());
            d.time = Some(1_700_000_000 + i * 30);
            d
        })
        .collect();
    let built = SearchIndex::build(docs).expect("build");
    let opened = SearchIndex::from_snapshot(&built.to_snapshot().expect("snapshot")).expect("open");
    let before = opened.stored_doc_reads();
    let mut reqs = vec![
        SearchRequest::new("coffee").limit(10),
        SearchRequest::new("coffee tokyo").limit(5).filter(Filter::all().kinds(["memory"]).time_range(Some(0), None)),
        SearchRequest::new("coffee").limit(10).group_weight(0.3),
    ];
    let mut f = Filter::all();
    f.category = Some("log".into());
    reqs.push(SearchRequest::new("tokyo").limit(10).filter(f));
    let mut dated = SearchRequest::new("last week").limit(10);
    dated.now = Some(1_700_000_000 + 7 * 86_400);
    reqs.push(dated);
    for req in &reqs {
        let reads = opened.stored_doc_reads();
        let hits = opened.search_with(req);
        assert_eq!(hits, built.search_with(req), "{req:?}");
        assert!(!hits.is_empty(), "{req:?}");
        let read = opened.stored_doc_reads() - reads;
        assert!(read <= req.limit as u64, "{req:?}: {read} documents read for {} hits", hits.len());
    }
    assert!(opened.stored_doc_reads() > before);
}
