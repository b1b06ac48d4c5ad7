//! Speed over a pack of synthetic memories (`engram bench-search speed`):
//! full index build from git, opening the stored index (in process and as a
//! new `engram search` process), search latency through [`Engram::search`],
//! incremental update after one `capture_memory`.
//! Text is mixed Chinese/English with skewed word frequencies (generator from
//! the engine's own benchmark). Run it on a release build.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use super::{BenchEntry, TempDir, engram_over, ts_of, write_pack};
use crate::ops::{Caller, CaptureRequest, EngramError, SearchQuery};
use crate::packsearch::{At, PackIndex, SearchCache};
use crate::search::SearchRequest;
use crate::store::{PackRepo, StoreOptions};

const PACK: &str = "speed";

/// Deterministic xorshift64* generator (no external crate needed); the search tests'
/// generated corpora use it too.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// Zipf-like pick: small indices are much more frequent.
    fn skewed(&mut self, n: usize) -> usize {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        ((n as f64) * u * u * u) as usize % n.max(1)
    }
}

const HAN: &str = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处理府研质";

const EN: &[&str] = &[
    "memory",
    "agent",
    "server",
    "rust",
    "python",
    "search",
    "index",
    "query",
    "commit",
    "branch",
    "merge",
    "deploy",
    "release",
    "docker",
    "kernel",
    "network",
    "cache",
    "latency",
    "fitness",
    "running",
    "training",
    "protein",
    "coffee",
    "travel",
    "tokyo",
    "kyoto",
    "seoul",
    "hiking",
    "painting",
    "guitar",
    "music",
    "family",
    "sister",
    "birthday",
    "doctor",
    "knee",
    "injury",
    "recovery",
    "swimming",
    "budget",
    "invest",
    "rent",
    "apartment",
    "meeting",
    "review",
    "design",
    "prototype",
    "feedback",
    "customer",
    "ticket",
    "incident",
    "database",
    "postgres",
    "redis",
    "schedule",
    "weekend",
    "morning",
    "evening",
    "dinner",
    "recipe",
    "garden",
    "tomato",
    "cat",
    "dog",
    "vaccine",
    "flight",
    "hotel",
    "passport",
    "camera",
    "photo",
    "book",
    "novel",
    "podcast",
    "the",
    "a",
    "and",
    "to",
    "of",
    "in",
    "is",
    "for",
    "with",
    "on",
    "my",
    "we",
    "it",
    "this",
];

fn make_vocab(rng: &mut Rng) -> (Vec<String>, Vec<String>) {
    let han: Vec<char> = HAN.chars().collect();
    let zh: Vec<String> = (0..3000)
        .map(|_| {
            let n = 2 + rng.below(2);
            (0..n).map(|_| han[rng.skewed(han.len())]).collect()
        })
        .collect();
    let syll = ["ka", "to", "ri", "ne", "mo", "la", "sen", "dor", "vi", "pex", "qu", "zan"];
    let mut en: Vec<String> = EN.iter().map(|s| s.to_string()).collect();
    while en.len() < 5000 {
        let n = 2 + rng.below(3);
        en.push((0..n).map(|_| syll[rng.below(syll.len())]).collect());
    }
    (zh, en)
}

fn sentence(rng: &mut Rng, zh: &[String], en: &[String], words: usize) -> String {
    let mut s = String::new();
    for i in 0..words {
        if rng.below(100) < 45 {
            s.push_str(&zh[rng.skewed(zh.len())]);
            if rng.below(6) == 0 {
                s.push('，');
            }
        } else {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(&en[rng.skewed(en.len())]);
            if rng.below(8) == 0 {
                s.push_str(". ");
            }
        }
    }
    s
}

fn percentile(v: &mut [Duration], p: f64) -> Duration {
    v.sort_unstable();
    v.get(((v.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn entries(rng: &mut Rng, zh: &[String], en: &[String], n: usize) -> Vec<BenchEntry> {
    (0..n)
        .map(|i| {
            let (title_words, body_words) = (3 + rng.below(4), 15 + rng.below(25));
            BenchEntry {
                category: format!("cat-{}", rng.below(8)),
                ts: ts_of(1_600_000_000 + i as i64 * 60),
                memory_type: ["fact", "preference", "decision"][rng.below(3)].to_owned(),
                tags: (0..rng.below(3)).map(|_| format!("tag{}", rng.below(30))).collect(),
                conversation_id: None,
                summary: sentence(rng, zh, en, title_words),
                content: sentence(rng, zh, en, body_words),
            }
        })
        .collect()
}

fn io_err(e: std::io::Error) -> EngramError {
    EngramError::Unreadable { path: std::env::temp_dir().display().to_string(), reason: e.to_string() }
}

/// Runs the speed benchmark over `n` memories; returns the report. With
/// `engram_bin` (this binary), also times `engram search` as new processes.
/// With `keep`, the pack is written into that packs directory (as `speed`)
/// and left there, for benchmarks over MCP (`benches/tools/search_bench.py`).
pub fn run(
    n: usize,
    engram_bin: Option<&std::path::Path>,
    keep: Option<&std::path::Path>,
) -> Result<String, EngramError> {
    let mut out = String::new();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (zh, en) = make_vocab(&mut rng);
    let temp;
    let packs_dir = match keep {
        Some(dir) => dir,
        None => {
            temp = TempDir::new("speed").map_err(io_err)?;
            temp.path()
        }
    };
    let t = Instant::now();
    write_pack(packs_dir, PACK, &entries(&mut rng, &zh, &en, n))?;
    let _ = writeln!(out, "pack of {n} memories written in {:.1} s (one commit)", t.elapsed().as_secs_f64());
    let dir = packs_dir.join(PACK);
    let repo = PackRepo::open(&dir, StoreOptions::default())?;
    let head = repo.current_head()?.unwrap_or_default();

    // Full build from the commit's files (what a missing or corrupt index costs).
    let mut builds = Vec::new();
    let mut docs = 0;
    for _ in 0..3 {
        let t = Instant::now();
        let index = PackIndex::build(&repo, PACK, &head)?;
        builds.push(t.elapsed());
        docs = index.len();
    }
    let _ = writeln!(
        out,
        "index build from git ({docs} documents): median {:.0} ms",
        ms(percentile(&mut builds, 0.5))
    );

    // First query of a fresh process: builds and saves; then a second fresh process loads.
    let engram = engram_over(packs_dir)?;
    let q = |text: &str| SearchQuery { query: text.to_owned(), limit: Some(10), ..SearchQuery::default() };
    let t = Instant::now();
    engram.search(&q("memory")).map(|_| ())?;
    let first = t.elapsed();
    let stored = std::fs::metadata(repo.derived_dir().join(crate::packsearch::persist::FILE_NAME))
        .map_or(0, |m| m.len());
    let fresh = engram_over(packs_dir)?;
    let t = Instant::now();
    fresh.search(&q("memory")).map(|_| ())?;
    let loaded = t.elapsed();
    let _ = writeln!(
        out,
        "first search, no stored index (build + save): {:.0} ms; stored index {:.1} MB; first search of a new process (load): {:.0} ms",
        ms(first),
        stored as f64 / 1e6,
        ms(loaded)
    );

    // Opening the stored index, what every new process pays before its first search.
    let derived = repo.derived_dir();
    let mut opens = Vec::new();
    for _ in 0..9 {
        let t = Instant::now();
        let opened = crate::packsearch::persist::load(&derived);
        opens.push(t.elapsed());
        if opened.is_none() {
            return Err(EngramError::Unreadable {
                path: derived.display().to_string(),
                reason: "the stored index did not open".into(),
            });
        }
    }
    let _ = writeln!(
        out,
        "stored index open (read in place, in process, 9 runs): median {:.1} ms",
        ms(percentile(&mut opens, 0.5))
    );
    if let Some(bin) = engram_bin {
        let (mut searches, mut floors) = (Vec::new(), Vec::new());
        let time = |args: &[&str]| -> Result<Duration, EngramError> {
            let t = Instant::now();
            let status = std::process::Command::new(bin)
                .args(args)
                .env_clear()
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .map_err(io_err)?;
            let d = t.elapsed();
            if !status.success() {
                return Err(EngramError::Unreadable {
                    path: bin.display().to_string(),
                    reason: format!("{args:?}: {status}"),
                });
            }
            Ok(d)
        };
        let packs = packs_dir.display().to_string();
        for _ in 0..7 {
            floors.push(time(&["--version"])?);
            searches.push(time(&["search", "memory", "--packs-dir", &packs])?);
        }
        let (search, floor) = (ms(percentile(&mut searches, 0.5)), ms(percentile(&mut floors, 0.5)));
        let _ = writeln!(
            out,
            "`engram search` as a new process (start, open, search, exit; 7 runs): median {search:.0} ms; \
             a bare process (`engram --version`): {floor:.0} ms; difference {:.0} ms",
            search - floor
        );
    }

    // Search latency through Engram::search (HEAD check + search + hits).
    let queries: Vec<String> = (0..1000)
        .map(|_| {
            let words = 1 + rng.below(3);
            sentence(&mut rng, &zh, &en, words)
        })
        .collect();
    let mut times = Vec::new();
    let mut hits = 0;
    for text in &queries {
        let t = Instant::now();
        hits += engram.search(&q(text))?.hits.len();
        times.push(t.elapsed());
    }
    let _ = writeln!(
        out,
        "search_memory path, {} queries, top 10: p50 {:.2} ms, p95 {:.2} ms, mean hits {:.1}",
        queries.len(),
        ms(percentile(&mut times, 0.5)),
        ms(percentile(&mut times, 0.95)),
        hits as f64 / queries.len() as f64
    );

    // The engine alone on the same queries: pruned top-k against every posting
    // scored (`SearchRequest::prune`), with the results compared.
    let (mut pruned, mut full, mut differ) = (Vec::new(), Vec::new(), 0);
    SearchCache::new().with_index(&repo, PACK, At::Head, |index, _| {
        for text in &queries {
            let mut req = SearchRequest::new(text.as_str()).limit(10);
            let t = Instant::now();
            let a = index.search(&req);
            pruned.push(t.elapsed());
            req.prune = false;
            let t = Instant::now();
            let b = index.search(&req);
            full.push(t.elapsed());
            differ += usize::from(a != b);
        }
    })?;
    let _ = writeln!(
        out,
        "engine alone, same queries: pruned top-k p50 {:.2} ms, p95 {:.2} ms; every posting scored p50 {:.2} ms, p95 {:.2} ms; results differ for {differ}",
        ms(percentile(&mut pruned, 0.5)),
        ms(percentile(&mut pruned, 0.95)),
        ms(percentile(&mut full, 0.5)),
        ms(percentile(&mut full, 0.95)),
    );

    // Incremental update after one capture_memory (made through another handle,
    // as another process would): time to bring a warm cached index up to HEAD.
    let cache = SearchCache::new();
    cache.with_index(&repo, PACK, At::Head, |_, _| ())?;
    let mut writes = Vec::new();
    let mut updates = Vec::new();
    for i in 0..100 {
        let req = CaptureRequest {
            name: PACK.into(),
            content: format!("{} #{i}", sentence(&mut rng, &zh, &en, 20)),
            category: format!("cat-{}", rng.below(8)),
            summary: sentence(&mut rng, &zh, &en, 4),
            memory_type: Some("fact".into()),
            ..CaptureRequest::default()
        };
        let t = Instant::now();
        engram.capture_memory(&req, &Caller::default())?;
        writes.push(t.elapsed());
        let t = Instant::now();
        cache.with_index(&repo, PACK, At::Head, |_, _| ())?;
        updates.push(t.elapsed());
    }
    let _ = writeln!(
        out,
        "incremental update after one capture_memory (100 writes): p50 {:.2} ms, p95 {:.2} ms, max {:.2} ms",
        ms(percentile(&mut updates, 0.5)),
        ms(percentile(&mut updates, 0.95)),
        ms(percentile(&mut updates, 1.0))
    );
    let _ = writeln!(
        out,
        "capture_memory itself (not indexed on write): p50 {:.2} ms",
        ms(percentile(&mut writes, 0.5))
    );
    Ok(out)
}
