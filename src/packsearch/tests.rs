//! A pack's index read in place from `.git/engram/search.idx` and brought
//! forward from the git diff answers exactly as an index built from scratch
//! at the same commit: after captures, corrections, deletions (in head files
//! and rolled segments), expiry, a save of the merged state, and a new process.

use super::*;
use crate::ops::{Caller, CaptureRequest, CorrectRequest, Engram};
use crate::search::{Filter, SearchRequest};
use crate::searchbench::{BenchEntry, TempDir, engram_over, ts_of, write_pack};
use crate::store::StoreOptions;

const PACK: &str = "p";

fn entries(n: usize) -> Vec<BenchEntry> {
    let words = ["膝盖", "训练", "早上", "coffee", "tokyo", "knee", "squat", "深蹲", "plan", "旧伤"];
    (0..n)
        .map(|i| BenchEntry {
            category: format!("c{}", i % 3),
            ts: ts_of(1_700_000_000 + (i as i64 / 2) * 60),
            memory_type: ["fact", "preference"][i % 2].to_owned(),
            tags: if i % 4 == 0 { vec!["t".into()] } else { Vec::new() },
            conversation_id: (i % 5 == 0).then(|| format!("conv{}", i % 10)),
            summary: format!("{} {} {i}", words[i % 10], words[(i * 7) % 10]),
            content: format!("{} {} {} entry {i}", words[(i * 3) % 10], words[(i * 5) % 10], words[i % 10]),
        })
        .collect()
}

fn docs_of(index: &PackIndex) -> Vec<Document> {
    let mut docs: Vec<Document> = index.index.documents().map(|d| d.into_owned()).collect();
    docs.sort_by(|a, b| a.id.cmp(&b.id));
    docs
}

fn assert_same(fresh: &PackIndex, got: &PackIndex, what: &str) {
    assert_eq!(fresh.commit(), got.commit(), "{what}: commit");
    assert_eq!(docs_of(fresh), docs_of(got), "{what}: documents");
    for q in ["膝盖 训练", "coffee", "knee squat entry", "深蹲", "plan tokyo 早上", "旧伤 7", "corrected"]
    {
        for req in [
            SearchRequest::new(q).limit(40),
            SearchRequest::new(q).limit(5).filter(Filter { tags: vec!["t".into()], ..Filter::all() }),
        ] {
            assert_eq!(fresh.search(&req), got.search(&req), "{what}: {req:?}");
        }
    }
}

fn check(engram: &Engram, repo: &PackRepo, cache: &SearchCache, what: &str) {
    let _ = engram;
    let head = repo.current_head().expect("head").expect("a commit");
    let fresh = PackIndex::build(repo, PACK, &head).expect("build");
    cache.with_index(repo, PACK, At::Head, |got, _| assert_same(&fresh, got, what)).expect("index");
    // A new process: loads the stored file and walks the diff.
    let new = SearchCache::new();
    new.with_index(repo, PACK, At::Head, |got, _| assert_same(&fresh, got, &format!("{what}, new process")))
        .expect("index");
}

fn capture(engram: &Engram, category: &str, content: &str, summary: &str, expires: Option<&str>) {
    let req = CaptureRequest {
        name: PACK.into(),
        content: content.into(),
        category: category.into(),
        summary: summary.into(),
        memory_type: Some("fact".into()),
        expires: expires.map(str::to_owned),
        ..CaptureRequest::default()
    };
    engram.capture_memory(&req, &Caller::default()).expect("capture");
}

#[test]
fn an_index_read_in_place_and_updated_equals_a_fresh_build() {
    let tmp = TempDir::new("packsearch-layers").expect("tmp");
    // 400 entries over 3 categories: rolled segments and head files.
    write_pack(tmp.path(), PACK, &entries(400)).expect("pack");
    let engram = engram_over(tmp.path()).expect("engram");
    let repo = PackRepo::open(&tmp.path().join(PACK), StoreOptions::default()).expect("repo");
    let cache = SearchCache::new();
    let refresh = cache.with_index(&repo, PACK, At::Head, |_, r| r).expect("index");
    assert_eq!(refresh, Refresh::Rebuilt);
    assert!(persist::path_in(&repo.derived_dir()).is_file(), "saved");
    // The cached index now reads the saved file in place.
    let stored = cache.with_index(&repo, PACK, At::Head, |i, _| i.joins.is_some()).expect("index");
    assert!(stored, "read in place after the save");
    check(&engram, &repo, &cache, "loaded");

    capture(&engram, "c1", "膝盖 coffee 新的 entry", "新 膝盖", None);
    capture(&engram, "c9", "a new category tokyo", "tokyo 新", Some("2020-01-01"));
    check(&engram, &repo, &cache, "captures");

    // Delete one entry of a rolled segment and one of a head file; correct one.
    let caller = Caller::default();
    engram.delete_memory(PACK, "c0", "膝盖 膝盖 0", &caller).expect("delete rolled");
    engram.delete_memory(PACK, "c1", "新 膝盖", &caller).expect("delete head");
    let correct = CorrectRequest {
        name: PACK.into(),
        category: "c2".into(),
        old_summary: "plan squat 398".into(),
        new_content: "corrected squat text".into(),
        new_summary: "corrected 深蹲".into(),
        memory_type: None,
        tags: None,
        target: None,
    };
    engram.correct_memory(&correct, &caller).expect("correct");
    // The expired capture went away with the writes above (the expiry pass).
    check(&engram, &repo, &cache, "deletes, correction, expiry");
    let tokyo = cache
        .with_index(&repo, PACK, At::Head, |i, _| i.search(&SearchRequest::new("tokyo 新").limit(50)))
        .expect("index");
    assert!(tokyo.iter().all(|h| !h.path.starts_with("memory/c9.md")), "expired: {tokyo:?}");

    // The merged state saved and read in place again answers the same.
    let slot = cache.slot(repo.dir());
    {
        let mut slot = slot.lock().expect("lock");
        let index = slot.head.as_mut().expect("cached");
        index.unsaved = usize::MAX;
        index.maybe_save(&repo.derived_dir());
        assert!(index.summary_files.0.is_empty(), "read in place after the save");
    }
    check(&engram, &repo, &cache, "saved again");
    for i in 0..70 {
        capture(&engram, "c0", &format!("roll {i} 膝盖"), &format!("roll {i}"), None);
    }
    check(&engram, &repo, &cache, "a roll into a new segment");
}

#[test]
fn a_stale_or_damaged_stored_index_is_replaced() {
    let tmp = TempDir::new("packsearch-damage").expect("tmp");
    write_pack(tmp.path(), PACK, &entries(150)).expect("pack");
    let engram = engram_over(tmp.path()).expect("engram");
    let repo = PackRepo::open(&tmp.path().join(PACK), StoreOptions::default()).expect("repo");
    SearchCache::new().with_index(&repo, PACK, At::Head, |_, _| ()).expect("index");
    let file = persist::path_in(&repo.derived_dir());
    let old = std::fs::read(&file).expect("read");
    capture(&engram, "c1", "膝盖 coffee later", "later 膝盖", None);
    // Stale (an older commit): loaded, then brought forward.
    let r = SearchCache::new().with_index(&repo, PACK, At::Head, |_, r| r).expect("index");
    assert_eq!(r, Refresh::Loaded);
    check(&engram, &repo, &SearchCache::new(), "stale");
    // Cut short, a flipped byte, empty: rebuilt.
    for (what, bytes) in [
        ("truncated", old[..old.len() / 2].to_vec()),
        ("flipped", {
            let mut b = old.clone();
            let i = b.len() / 3;
            b[i] ^= 0x10;
            b
        }),
        ("empty", Vec::new()),
    ] {
        std::fs::write(&file, &bytes).expect("write");
        let r = SearchCache::new().with_index(&repo, PACK, At::Head, |_, r| r).expect("index");
        assert_eq!(r, Refresh::Rebuilt, "{what}");
        check(&engram, &repo, &SearchCache::new(), what);
    }
    // A link in place of the file is not followed.
    #[cfg(unix)]
    {
        let elsewhere = tmp.path().join("elsewhere.idx");
        std::fs::write(&elsewhere, std::fs::read(&file).expect("read")).expect("write");
        std::fs::remove_file(&file).expect("rm");
        std::os::unix::fs::symlink(&elsewhere, &file).expect("symlink");
        let r = SearchCache::new().with_index(&repo, PACK, At::Head, |_, r| r).expect("index");
        assert_eq!(r, Refresh::Rebuilt, "link");
    }
}

#[test]
fn a_file_cut_short_while_open_is_rebuilt_and_answers_in_full() {
    let tmp = TempDir::new("packsearch-cut").expect("tmp");
    write_pack(tmp.path(), PACK, &entries(150)).expect("pack");
    let repo = PackRepo::open(&tmp.path().join(PACK), StoreOptions::default()).expect("repo");
    let head = repo.current_head().expect("head").expect("commit");
    let fresh = PackIndex::build(&repo, PACK, &head).expect("build");
    let cache = SearchCache::new();
    cache.with_index(&repo, PACK, At::Head, |_, _| ()).expect("index");
    let file = persist::path_in(&repo.derived_dir());
    // Cut in place under the open file (not what engram does: it renames).
    std::fs::OpenOptions::new().write(true).open(&file).expect("open").set_len(4096).expect("cut");
    let req = SearchRequest::new("膝盖 训练 coffee").limit(40);
    let mut runs = 0;
    let hits = cache
        .with_index(&repo, PACK, At::Head, |i, _| {
            runs += 1;
            i.search(&req)
        })
        .expect("index");
    assert_eq!(runs, 2, "ran again on the rebuilt index");
    assert_eq!(hits, fresh.search(&req));
}
