//! LoCoMo retrieval benchmark (`engram bench-search locomo`).
//!
//! Every conversation is written into its own pack in three layouts
//! ([`Layout`]: one memory entry per turn; one memory category per speaker
//! with summaries cut from the text; the notes toolset's files) and searched
//! through [`Engram::search`] — the extraction and ranking of `search_memory`,
//! the same engine for every layout. Every question of categories 1–4 with
//! resolvable evidence is asked; reported per layout: turn-level
//! recall@5/@10 (any / all evidence turns) and session-level any@5, next to a
//! plain BM25 reference; the headline is the minimum over the layouts.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use serde_json::Value;

use super::{BenchEntry, TempDir, engram_with, ts_of, write_files, write_pack};
use crate::ops::SearchQuery;
use crate::search::{Document, Filter, SearchIndex, SearchRequest};

/// Where the data set lies by default, relative to the checkout engram is built from
/// (`engram bench-search --locomo PATH` names another file).
pub const DEFAULT_RELATIVE_PATH: &str = "../shared/bench/locomo10.json";
/// Turns retrieved per question.
const DEPTH: usize = 50;

/// One turn of a conversation.
#[derive(Clone)]
struct Turn {
    session: u32,
    turn: u32,
    speaker: String,
    text: String,
    caption: Option<String>,
    date: String,
    time: Option<i64>,
}

/// One question with its resolvable evidence.
struct Question {
    text: String,
    evidence: Vec<(u32, u32)>,
}

struct Conversation {
    id: String,
    turns: Vec<Turn>,
    questions: Vec<Question>,
}

#[derive(Default)]
struct Tally {
    n: usize,
    any5: usize,
    any10: usize,
    all5: usize,
    all10: usize,
    tol_any5: usize,
    tol_any10: usize,
    tol_all5: usize,
    tol_all10: usize,
    sess_any5: usize,
    sess_rank_any5: usize,
}

impl Tally {
    fn add(&mut self, ranked: &[(u32, u32)], evidence: &[(u32, u32)]) {
        let hit = |k: usize, e: &(u32, u32), tol: u32| {
            ranked.iter().take(k).any(|r| r.0 == e.0 && r.1.abs_diff(e.1) <= tol)
        };
        let any = |k, tol| evidence.iter().any(|e| hit(k, e, tol));
        let all = |k, tol| evidence.iter().all(|e| hit(k, e, tol));
        self.n += 1;
        self.any5 += usize::from(any(5, 0));
        self.any10 += usize::from(any(10, 0));
        self.all5 += usize::from(all(5, 0));
        self.all10 += usize::from(all(10, 0));
        self.tol_any5 += usize::from(any(5, 1));
        self.tol_any10 += usize::from(any(10, 1));
        self.tol_all5 += usize::from(all(5, 1));
        self.tol_all10 += usize::from(all(10, 1));
        let ev_sessions: HashSet<u32> = evidence.iter().map(|e| e.0).collect();
        // Sessions of the top-5 turns.
        self.sess_any5 += usize::from(ranked.iter().take(5).any(|r| ev_sessions.contains(&r.0)));
        // Top-5 distinct sessions in turn-rank order.
        let mut distinct = Vec::new();
        for r in ranked {
            if !distinct.contains(&r.0) {
                distinct.push(r.0);
            }
        }
        self.sess_rank_any5 += usize::from(distinct.iter().take(5).any(|s| ev_sessions.contains(s)));
    }

    fn pct(&self, v: usize) -> f64 {
        100.0 * v as f64 / self.n.max(1) as f64
    }

    fn print(&self, out: &mut String, name: &str) {
        let _ = writeln!(
            out,
            "{name:<38} {:>5} | {:>5.1} {:>5.1} {:>5.1} {:>5.1} | {:>5.1} | {:>5.1} {:>5.1} {:>5.1} {:>5.1} | {:>5.1}",
            self.n,
            self.pct(self.any5),
            self.pct(self.any10),
            self.pct(self.all5),
            self.pct(self.all10),
            self.pct(self.sess_any5),
            self.pct(self.tol_any5),
            self.pct(self.tol_any10),
            self.pct(self.tol_all5),
            self.pct(self.tol_all10),
            self.pct(self.sess_rank_any5),
        );
    }
}

/// How a conversation is laid out in a pack (the engine knows nothing of these).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// (a) One memory entry per turn: category `conversation`, the speaker as
    /// tag and as summary, the session date as time, the session as conversation id.
    TurnEntries,
    /// (b) One memory category per speaker; the summary is cut from the text
    /// (as the notes toolset derives titles); no tag, no conversation id.
    SpeakerCategories,
    /// (c) The notes toolset's files: one note per turn in one long-running
    /// category, title derived from the text, body `Speaker: text`, `created`
    /// the turn's time.
    Notes,
}

impl Layout {
    /// Every layout, in report order.
    pub const ALL: [Layout; 3] = [Layout::TurnEntries, Layout::SpeakerCategories, Layout::Notes];

    fn name(self) -> &'static str {
        match self {
            Self::TurnEntries => "(a) entry per turn, speaker tag",
            Self::SpeakerCategories => "(b) category per speaker, cut title",
            Self::Notes => "(c) notes, title + body",
        }
    }
}

/// Runs the benchmark; returns the report, or `None` when the data is absent.
/// `variants` adds the engine alone on the documents it was first tuned on.
pub fn run(
    path: &std::path::Path,
    variants: bool,
    embeddings: Option<&super::Embeddings>,
) -> Result<Option<String>, String> {
    let raw = match std::fs::read_to_string(path) {
        Ok(r) => r,
        Err(_) => return Ok(None),
    };
    let convs = parse(&raw)?;
    let turns: usize = convs.iter().map(|c| c.turns.len()).sum();
    let qs: usize = convs.iter().map(|c| c.questions.len()).sum();
    let mut out = format!(
        "LoCoMo: {} conversations, {turns} turns, {qs} questions (categories 1-4 with evidence)\n\n",
        convs.len()
    );
    let _ = writeln!(
        out,
        "{:<38} {:>5} | {:>5} {:>5} {:>5} {:>5} | {:>5} | {:>5} {:>5} {:>5} {:>5} | {:>5}",
        "run", "n", "any5", "any10", "all5", "all10", "sess5", "±any5", "±an10", "±all5", "±al10", "sessR5"
    );
    let mut base = Tally::default();
    for c in &convs {
        plain_bm25(c, &mut base);
    }
    base.print(&mut out, "plain BM25 (reference)");
    if variants {
        engine_only(&convs).print(&mut out, "engine only (colleague layout)");
    }
    let mut min: Option<(f64, f64)> = None;
    for layout in Layout::ALL {
        let tally = product(&convs, layout, embeddings).map_err(|e| e.to_string())?;
        tally.print(&mut out, &format!("engram, {}", layout.name()));
        let (a, b) = (tally.pct(tally.any5), tally.pct(tally.all5));
        min = Some(min.map_or((a, b), |(x, y)| (x.min(a), y.min(b))));
    }
    if let Some((any5, all5)) = min {
        let _ = writeln!(
            out,
            "\nheadline (minimum over layouts): turn any@5 {any5:.1}%, all@5 {all5:.1}% \
             (plain BM25 {:.1}%, {:.1}%)",
            base.pct(base.any5),
            base.pct(base.all5)
        );
    }
    out.push_str(
        "\nany/all = an evidence turn / every evidence turn among the top k; sess5 = an evidence session among the\n\
         top-5 turns; ± = a turn within ±1 of an evidence turn counts; sessR5 = an evidence session among the\n\
         first 5 distinct sessions of the top 50 turns.\n",
    );
    Ok(Some(out))
}

/// The engine alone, documents built as in the colleague's benchmark
/// (text + caption in the body; speaker, date and neighbour turns as context).
fn engine_only(convs: &[Conversation]) -> Tally {
    let mut tally = Tally::default();
    for c in convs {
        let mut index = SearchIndex::new();
        for (i, t) in c.turns.iter().enumerate() {
            let _ = index.upsert(turn_doc(c, i, t));
        }
        let key: HashMap<String, (u32, u32)> =
            c.turns.iter().map(|t| (format!("D{}:{}", t.session, t.turn), (t.session, t.turn))).collect();
        for q in &c.questions {
            let req = SearchRequest::new(q.text.as_str()).limit(DEPTH).filter(Filter::all());
            let ranked: Vec<(u32, u32)> =
                index.search_with(&req).iter().filter_map(|h| key.get(&h.id).copied()).collect();
            tally.add(&ranked, &q.evidence);
        }
    }
    tally
}

fn turn_text(t: &Turn) -> String {
    match &t.caption {
        Some(cap) => format!("{} [image: {cap}]", t.text),
        None => t.text.clone(),
    }
}

fn turn_doc(c: &Conversation, i: usize, t: &Turn) -> Document {
    let mut context = format!("{} {}", t.speaker, t.date);
    let lo = i.saturating_sub(2);
    let hi = (i + 1).min(c.turns.len().saturating_sub(1));
    for (j, n) in c.turns.iter().enumerate().take(hi + 1).skip(lo) {
        if j != i && n.session == t.session {
            context.push_str(" \n");
            context.push_str(&turn_text(n));
        }
    }
    Document {
        id: format!("D{}:{}", t.session, t.turn),
        body: turn_text(t),
        context,
        pack: c.id.clone(),
        kind: "event".into(),
        time: t.time,
        path: format!("{}/session_{}", c.id, t.session),
        ..Document::default()
    }
}

/// Through the product: one pack per conversation laid out as `layout`,
/// searched with [`crate::ops::Engram::search`] (the code path of `search_memory`).
fn product(
    convs: &[Conversation],
    layout: Layout,
    embeddings: Option<&super::Embeddings>,
) -> Result<Tally, crate::ops::EngramError> {
    let tmp = TempDir::new("locomo").map_err(|e| crate::ops::EngramError::Unreadable {
        path: std::env::temp_dir().display().to_string(),
        reason: e.to_string(),
    })?;
    let mut tally = Tally::default();
    for c in convs {
        let pack = format!("locomo-{}", c.id.to_lowercase().replace(|ch: char| !ch.is_alphanumeric(), "-"));
        // Hits are mapped back to turns by entry time (memories) or path (notes).
        let mut turn_of: HashMap<String, (u32, u32)> = HashMap::new();
        let mut entries = Vec::new();
        let mut files = Vec::new();
        let mut used: HashSet<i64> = HashSet::new();
        for t in &c.turns {
            // The session date (UTC midnight) plus one minute per turn, kept unique.
            let mut at = t.time.unwrap_or(0) + i64::from(t.turn) * 60;
            while !used.insert(at) {
                at += 60;
            }
            let ts = ts_of(at);
            let text = turn_text(t);
            match layout {
                Layout::TurnEntries => {
                    turn_of.insert(ts.clone(), (t.session, t.turn));
                    entries.push(BenchEntry {
                        category: "conversation".into(),
                        ts,
                        memory_type: "history".into(),
                        tags: vec![t.speaker.replace([',', '[', ']', '`', ' '], "_")],
                        conversation_id: Some(format!("{}-s{}", c.id, t.session)),
                        summary: t.speaker.clone(),
                        content: text,
                    });
                }
                Layout::SpeakerCategories => {
                    turn_of.insert(ts.clone(), (t.session, t.turn));
                    entries.push(BenchEntry {
                        category: crate::ops::slug(&t.speaker),
                        ts,
                        memory_type: "history".into(),
                        tags: Vec::new(),
                        conversation_id: None,
                        summary: crate::ops::derive_title(&text),
                        content: text,
                    });
                }
                Layout::Notes => {
                    let title = crate::ops::derive_title(&text);
                    let mut path = format!("notes/dialogue/{}.md", crate::ops::slug(&title));
                    let mut k = 2;
                    while turn_of.contains_key(&path) {
                        path = format!("notes/dialogue/{}-{k}.md", crate::ops::slug(&title));
                        k += 1;
                    }
                    let created = chrono::DateTime::from_timestamp(at, 0)
                        .map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
                        .unwrap_or_default();
                    let note = crate::ops::Note {
                        id: format!("{:08x}", files.len()),
                        title,
                        category: "dialogue".into(),
                        importance: 3,
                        created: created.clone(),
                        updated: created,
                        content: format!("{}: {text}", t.speaker),
                        path: path.clone(),
                    };
                    let body = crate::ops::render_note(&note).map_err(|e| {
                        crate::ops::EngramError::Invalid { field: "note", reason: e.to_string() }
                    })?;
                    turn_of.insert(path.clone(), (t.session, t.turn));
                    files.push((path, body));
                }
            }
        }
        match layout {
            Layout::Notes => write_files(tmp.path(), &pack, &files)?,
            _ => write_pack(tmp.path(), &pack, &entries)?,
        }
        let engram = engram_with(tmp.path(), embeddings)?;
        for q in &c.questions {
            let query = SearchQuery {
                query: q.text.clone(),
                name: Some(pack.clone()),
                limit: Some(DEPTH),
                ..SearchQuery::default()
            };
            let ranked: Vec<(u32, u32)> = match engram.search(&query) {
                Ok(o) => o
                    .hits
                    .iter()
                    .filter_map(|h| match layout {
                        Layout::Notes => turn_of.get(&h.path).copied(),
                        _ => turn_of.get(h.entry.as_deref()?).copied(),
                    })
                    .collect(),
                Err(crate::ops::EngramError::Invalid { .. }) => Vec::new(),
                Err(e) => return Err(e),
            };
            tally.add(&ranked, &q.evidence);
        }
    }
    Ok(tally)
}

/// The README's reference: one doc per turn with speaker and date, lowercase
/// word tokens, BM25 k1 = 1.2, b = 0.75.
fn plain_bm25(c: &Conversation, tally: &mut Tally) {
    fn words(s: &str) -> Vec<String> {
        s.split(|ch: char| !ch.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
    }
    let docs: Vec<Vec<String>> =
        c.turns.iter().map(|t| words(&format!("{} {} {}", t.speaker, t.date, t.text))).collect();
    let bm25 = super::PlainBm25::new(&docs);
    for q in &c.questions {
        let ranked: Vec<(u32, u32)> = bm25
            .top(&words(&q.text), DEPTH)
            .into_iter()
            .map(|i| (c.turns[i].session, c.turns[i].turn))
            .collect();
        tally.add(&ranked, &q.evidence);
    }
}

fn parse(raw: &str) -> Result<Vec<Conversation>, String> {
    let data: Value = serde_json::from_str(raw).map_err(|e| e.to_string())?;
    let samples = data.as_array().ok_or("top level is not a list")?;
    let mut out = Vec::new();
    for s in samples {
        let id = s["sample_id"].as_str().unwrap_or_default().to_string();
        let conv = s["conversation"].as_object().ok_or("no conversation")?;
        let mut sessions: Vec<u32> = conv
            .keys()
            .filter_map(|k| k.strip_prefix("session_")?.parse().ok())
            .filter(|n| conv.get(&format!("session_{n}")).is_some_and(Value::is_array))
            .collect();
        sessions.sort_unstable();
        let mut turns = Vec::new();
        for n in sessions {
            let date = conv
                .get(&format!("session_{n}_date_time"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let time = parse_locomo_date(&date);
            for t in conv[&format!("session_{n}")].as_array().into_iter().flatten() {
                let dia = t["dia_id"].as_str().unwrap_or_default();
                let Some((s_no, t_no)) = parse_dia(dia) else {
                    continue;
                };
                turns.push(Turn {
                    session: s_no,
                    turn: t_no,
                    speaker: t["speaker"].as_str().unwrap_or_default().to_string(),
                    text: t["text"].as_str().unwrap_or_default().to_string(),
                    caption: t["blip_caption"].as_str().map(str::to_string),
                    date: date.clone(),
                    time,
                });
            }
        }
        let known: HashSet<(u32, u32)> = turns.iter().map(|t| (t.session, t.turn)).collect();
        let mut questions = Vec::new();
        for q in s["qa"].as_array().into_iter().flatten() {
            let cat = q["category"].as_i64().unwrap_or(0);
            if !(1..=4).contains(&cat) {
                continue;
            }
            let mut evidence: Vec<(u32, u32)> = q["evidence"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .flat_map(|e| e.split(|c: char| c == ';' || c == ',' || c.is_whitespace()))
                .filter_map(parse_dia)
                .filter(|e| known.contains(e))
                .collect();
            evidence.sort_unstable();
            evidence.dedup();
            if evidence.is_empty() {
                continue;
            }
            questions
                .push(Question { text: q["question"].as_str().unwrap_or_default().to_string(), evidence });
        }
        out.push(Conversation { id, turns, questions });
    }
    Ok(out)
}

/// Parses `D<session>:<turn>` leniently (`D:11:26`, `D30:05`).
fn parse_dia(s: &str) -> Option<(u32, u32)> {
    let nums: Vec<u32> = s
        .trim()
        .trim_start_matches('D')
        .split(':')
        .filter(|p| !p.is_empty())
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    match nums[..] {
        [a, b] => Some((a, b)),
        _ => None,
    }
}

/// Parses "1:56 pm on 8 May, 2023" into unix seconds (UTC, time of day ignored).
fn parse_locomo_date(s: &str) -> Option<i64> {
    let date = s.split(" on ").nth(1)?;
    let parts: Vec<&str> = date.split([' ', ',']).filter(|p| !p.is_empty()).collect();
    let [day, month, year] = parts[..] else {
        return None;
    };
    let m = crate::search::dates::MONTHS.iter().position(|x| *x == month.to_lowercase())? as u32 + 1;
    let d: u32 = day.parse().ok()?;
    let y: i64 = year.parse().ok()?;
    Some(crate::search::dates::days_from_civil(y, m, d) * 86_400)
}
