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
    /// LoCoMo's generated observations that cite this turn (a paraphrase).
    observation: Option<String>,
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
    /// LoCoMo's generated summary of each session, by session number.
    summaries: HashMap<u32, String>,
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
    /// Counts one question: `ranked` holds the turns of each hit, best hit first
    /// (a hit on an entry that holds several turns holds each of them).
    fn add(&mut self, ranked: &[Vec<(u32, u32)>], evidence: &[(u32, u32)]) {
        let hit = |k: usize, e: &(u32, u32), tol: u32| {
            ranked.iter().take(k).flatten().any(|r| r.0 == e.0 && r.1.abs_diff(e.1) <= tol)
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
        // Sessions of the top-5 hits.
        self.sess_any5 += usize::from(ranked.iter().take(5).flatten().any(|r| ev_sessions.contains(&r.0)));
        // Top-5 distinct sessions in hit-rank order.
        let mut distinct = Vec::new();
        for r in ranked.iter().flatten() {
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
            "{name:<44} {:>5} | {:>5.1} {:>5.1} {:>5.1} {:>5.1} | {:>5.1} | {:>5.1} {:>5.1} {:>5.1} {:>5.1} | {:>5.1}",
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
/// The layouts differ the way real packs differ: the unit of a memory (a turn, a
/// speaker's part of a session, a session), where the words are (summary, content,
/// both, a paraphrase in one of them), where the date is (metadata or text) and the
/// language around it.
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
    /// (d) One memory per session written as a dated summary: the date is in the
    /// text (summary and content), the entry's time is when it was imported; the
    /// content is LoCoMo's session summary then the transcript.
    SessionSummaries,
    /// (e) Long entries, one category per speaker: everything a speaker said in a
    /// session is one entry, its summary cut from the first turn.
    LongSpeakerEntries,
    /// (f) One entry per turn whose summary paraphrases it (LoCoMo's generated
    /// observations of the turn, else only the speaker's name): a question's words
    /// are often in only one of summary and content; the time is the import time.
    Paraphrased,
    /// (g) Chinese and English in one pack: one entry per turn under a Chinese
    /// category and summary, beside the Chinese fixture memories.
    MixedLanguages,
}

impl Layout {
    /// Every layout, in report order.
    pub const ALL: [Layout; 7] = [
        Layout::TurnEntries,
        Layout::SpeakerCategories,
        Layout::Notes,
        Layout::SessionSummaries,
        Layout::LongSpeakerEntries,
        Layout::Paraphrased,
        Layout::MixedLanguages,
    ];

    /// The layouts named by their letters (`"acf"`), in report order.
    pub fn by_letters(letters: &str) -> Result<Vec<Layout>, String> {
        let mut out = Vec::new();
        for ch in letters.chars().filter(|c| !matches!(c, ',' | ' ')) {
            let i = (ch.to_ascii_lowercase() as usize).wrapping_sub('a' as usize);
            let layout = Self::ALL.get(i).copied().ok_or_else(|| {
                format!(
                    "unknown layout {ch:?}: the layouts are a to {}",
                    (b'a' + Self::ALL.len() as u8 - 1) as char
                )
            })?;
            if !out.contains(&layout) {
                out.push(layout);
            }
        }
        out.sort_by_key(|l| Self::ALL.iter().position(|x| x == l));
        Ok(out)
    }

    fn name(self) -> &'static str {
        match self {
            Self::TurnEntries => "(a) entry per turn, speaker tag",
            Self::SpeakerCategories => "(b) category per speaker, cut title",
            Self::Notes => "(c) notes, title + body",
            Self::SessionSummaries => "(d) dated summary per session",
            Self::LongSpeakerEntries => "(e) long entries, speaker category",
            Self::Paraphrased => "(f) paraphrased summaries",
            Self::MixedLanguages => "(g) Chinese and English, one pack",
        }
    }
}

/// Runs the benchmark; returns the report, or `None` when the data is absent.
/// `variants` adds the engine alone on the documents it was first tuned on.
pub fn run(
    path: &std::path::Path,
    layouts: &[Layout],
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
        "{:<44} {:>5} | {:>5} {:>5} {:>5} {:>5} | {:>5} | {:>5} {:>5} {:>5} {:>5} | {:>5}",
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
    for &layout in layouts {
        let tally = product(&convs, layout, embeddings).map_err(|e| e.to_string())?;
        tally.print(&mut out, &format!("engram, {}", layout.name()));
        let (a, b) = (tally.pct(tally.any5), tally.pct(tally.all5));
        min = Some(min.map_or((a, b), |(x, y)| (x.min(a), y.min(b))));
    }
    if let Some((any5, all5)) = min {
        let _ = writeln!(
            out,
            "\nheadline (minimum over the {} layouts run): turn any@5 {any5:.1}%, all@5 {all5:.1}% \
             (plain BM25 {:.1}%, {:.1}%)",
            layouts.len(),
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
            let ranked: Vec<Vec<(u32, u32)>> =
                index.search_with(&req).iter().filter_map(|h| key.get(&h.id).map(|t| vec![*t])).collect();
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

/// What one conversation becomes in a pack: memory entries or files, and the
/// turns each one holds (keyed by entry time or file path).
#[derive(Default)]
struct Laid {
    entries: Vec<BenchEntry>,
    files: Vec<(String, String)>,
    turns_of: HashMap<String, Vec<(u32, u32)>>,
}

impl Laid {
    fn entry(&mut self, entry: BenchEntry, turns: Vec<(u32, u32)>) {
        self.turns_of.insert(entry.ts.clone(), turns);
        self.entries.push(entry);
    }
}

/// The time a memory was written down long after the conversation (layouts that
/// keep the date in the text): 1 June 2024 plus a minute per entry.
fn import_ts(n: usize) -> String {
    ts_of(1_717_200_000 + n as i64 * 60)
}

/// "8 May, 2023" of "1:56 pm on 8 May, 2023".
fn day_text(date: &str) -> &str {
    date.split(" on ").nth(1).unwrap_or(date)
}

fn entry(category: String, ts: String, summary: String, content: String) -> BenchEntry {
    BenchEntry {
        category,
        ts,
        memory_type: "history".into(),
        tags: Vec::new(),
        conversation_id: None,
        summary,
        content,
    }
}

/// Lays a conversation out as `layout`.
fn lay_out(c: &Conversation, layout: Layout) -> Result<Laid, crate::ops::EngramError> {
    let mut laid = Laid::default();
    let mut used: HashSet<i64> = HashSet::new();
    // Turns grouped by session, then by (session, speaker) in order of first turn.
    let mut groups: Vec<((u32, String), Vec<&Turn>)> = Vec::new();
    for t in &c.turns {
        let key = match layout {
            Layout::SessionSummaries => (t.session, String::new()),
            _ => (t.session, t.speaker.clone()),
        };
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.1.push(t),
            None => groups.push((key, vec![t])),
        }
    }
    match layout {
        Layout::SessionSummaries => {
            for ((session, _), turns) in &groups {
                let Some(first) = turns.first() else { continue };
                let day = day_text(&first.date);
                let mut speakers: Vec<&str> = Vec::new();
                for t in turns {
                    if !speakers.contains(&t.speaker.as_str()) {
                        speakers.push(&t.speaker);
                    }
                }
                let mut content = format!("On {}:", first.date);
                if let Some(s) = c.summaries.get(session) {
                    content.push(' ');
                    content.push_str(s);
                }
                content.push('\n');
                for t in turns {
                    let _ = write!(content, "\n{}: {}", t.speaker, turn_text(t));
                }
                let summary = format!("{day}: {}", speakers.join(" and "));
                let ts = import_ts(laid.entries.len());
                laid.entry(entry("conversations".into(), ts, summary, content), turns_of(turns));
            }
        }
        Layout::LongSpeakerEntries => {
            for ((_, speaker), turns) in &groups {
                let text: Vec<String> = turns.iter().map(|t| turn_text(t)).collect();
                let summary = crate::ops::derive_title(text.first().map_or("", String::as_str));
                let at = turns.first().and_then(|t| t.time).unwrap_or(0);
                let ts = unique_ts(&mut used, at);
                laid.entry(entry(crate::ops::slug(speaker), ts, summary, text.join("\n\n")), turns_of(turns));
            }
        }
        _ => {
            for t in &c.turns {
                let at = t.time.unwrap_or(0) + i64::from(t.turn) * 60;
                lay_turn(c, t, layout, unique_ts(&mut used, at), &mut laid)?;
            }
        }
    }
    if layout == Layout::MixedLanguages {
        let (docs, _) = super::zh::fixtures()
            .map_err(|reason| crate::ops::EngramError::Invalid { field: "fixture", reason })?;
        let (zh_entries, _) = super::zh::entries(&docs);
        for e in zh_entries {
            laid.entry(e, Vec::new());
        }
    }
    Ok(laid)
}

fn turns_of(turns: &[&Turn]) -> Vec<(u32, u32)> {
    turns.iter().map(|t| (t.session, t.turn)).collect()
}

/// `YYYY-MM-DD HH:MM` of `at`, moved on a minute at a time until unused.
fn unique_ts(used: &mut HashSet<i64>, mut at: i64) -> String {
    while !used.insert(at) {
        at += 60;
    }
    ts_of(at)
}

/// One turn as one memory (layouts with a memory per turn).
fn lay_turn(
    c: &Conversation,
    t: &Turn,
    layout: Layout,
    ts: String,
    laid: &mut Laid,
) -> Result<(), crate::ops::EngramError> {
    let text = turn_text(t);
    let turns = vec![(t.session, t.turn)];
    match layout {
        Layout::TurnEntries => laid.entry(
            BenchEntry {
                category: "conversation".into(),
                ts,
                memory_type: "history".into(),
                tags: vec![t.speaker.replace([',', '[', ']', '`', ' '], "_")],
                conversation_id: Some(format!("{}-s{}", c.id, t.session)),
                summary: t.speaker.clone(),
                content: text,
            },
            turns,
        ),
        Layout::SpeakerCategories => {
            let summary = crate::ops::derive_title(&text);
            laid.entry(entry(crate::ops::slug(&t.speaker), ts, summary, text), turns);
        }
        Layout::Paraphrased => {
            let summary = t.observation.clone().unwrap_or_else(|| t.speaker.clone());
            let ts = import_ts(laid.entries.len());
            laid.entry(entry("conversation".into(), ts, summary, text), turns);
        }
        Layout::MixedLanguages => {
            let summary = format!("{}的聊天记录", t.speaker);
            laid.entry(entry("对话".into(), ts, summary, text), turns);
        }
        Layout::Notes => {
            let title = crate::ops::derive_title(&text);
            let mut path = format!("notes/dialogue/{}.md", crate::ops::slug(&title));
            let mut k = 2;
            while laid.turns_of.contains_key(&path) {
                path = format!("notes/dialogue/{}-{k}.md", crate::ops::slug(&title));
                k += 1;
            }
            let created = ts.replace(' ', "T") + ":00Z";
            let note = crate::ops::Note {
                id: format!("{:08x}", laid.files.len()),
                title,
                category: "dialogue".into(),
                importance: 3,
                created: created.clone(),
                updated: created,
                content: format!("{}: {text}", t.speaker),
                path: path.clone(),
            };
            let body = crate::ops::render_note(&note)
                .map_err(|e| crate::ops::EngramError::Invalid { field: "note", reason: e.to_string() })?;
            laid.turns_of.insert(path.clone(), turns);
            laid.files.push((path, body));
        }
        Layout::SessionSummaries | Layout::LongSpeakerEntries => {}
    }
    Ok(())
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
        let laid = lay_out(c, layout)?;
        if laid.files.is_empty() {
            write_pack(tmp.path(), &pack, &laid.entries)?;
        } else {
            write_files(tmp.path(), &pack, &laid.files)?;
        }
        let engram = engram_with(tmp.path(), embeddings)?;
        for q in &c.questions {
            let query = SearchQuery {
                query: q.text.clone(),
                name: Some(pack.clone()),
                limit: Some(DEPTH),
                ..SearchQuery::default()
            };
            // A hit that holds no turn (a fixture memory beside the conversation) still takes its rank.
            let ranked: Vec<Vec<(u32, u32)>> = match engram.search(&query) {
                Ok(o) => o
                    .hits
                    .iter()
                    .map(|h| {
                        let key =
                            if laid.files.is_empty() { h.entry.as_deref() } else { Some(h.path.as_str()) };
                        key.and_then(|k| laid.turns_of.get(k)).cloned().unwrap_or_default()
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
        let ranked: Vec<Vec<(u32, u32)>> = bm25
            .top(&words(&q.text), DEPTH)
            .into_iter()
            .map(|i| vec![(c.turns[i].session, c.turns[i].turn)])
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
        let observations = observations_of(s);
        let mut summaries = HashMap::new();
        let mut turns = Vec::new();
        for n in sessions {
            if let Some(text) = s["session_summary"][format!("session_{n}_summary")].as_str() {
                summaries.insert(n, text.to_owned());
            }
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
                    observation: observations.get(&(s_no, t_no)).map(|o| o.join(" ")),
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
        out.push(Conversation { id, turns, questions, summaries });
    }
    Ok(out)
}

/// LoCoMo's generated observations by the turns they cite
/// (`observation.session_N_observation.<speaker>: [[fact, "D1:3"], …]`).
fn observations_of(sample: &Value) -> HashMap<(u32, u32), Vec<String>> {
    let mut out: HashMap<(u32, u32), Vec<String>> = HashMap::new();
    let Some(sessions) = sample["observation"].as_object() else { return out };
    for speakers in sessions.values().filter_map(Value::as_object) {
        for fact in speakers.values().filter_map(Value::as_array).flatten() {
            let (Some(text), Some(cites)) = (fact[0].as_str(), fact.get(1)) else { continue };
            let ids: Vec<&str> = match cites {
                Value::String(id) => vec![id.as_str()],
                Value::Array(ids) => ids.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            for id in ids.iter().flat_map(|e| e.split(|c: char| c == ';' || c == ',' || c.is_whitespace())) {
                if let Some(turn) = parse_dia(id) {
                    out.entry(turn).or_default().push(text.to_owned());
                }
            }
        }
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Two sessions of two speakers, with an observation on one turn and a summary per session.
    const SAMPLE: &str = r#"[{"sample_id": "conv-x",
      "conversation": {"speaker_a": "Ann", "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a puppy."},
                      {"speaker": "Bo", "dia_id": "D1:2", "text": "What is its name?"},
                      {"speaker": "Ann", "dia_id": "D1:3", "text": "Biscuit, after the cookies."}],
        "session_2_date_time": "10:00 am on 2 June, 2023",
        "session_2": [{"speaker": "Bo", "dia_id": "D2:1", "text": "I ran a marathon."}]},
      "qa": [{"question": "What is the name of Ann's dog?", "answer": "Biscuit", "evidence": ["D1:3"], "category": 4},
             {"question": "Who lied?", "adversarial_answer": "x", "evidence": ["D1:1"], "category": 5}],
      "observation": {"session_1_observation": {"Ann": [["Ann named her new dog Biscuit.", "D1:3"]]}},
      "session_summary": {"session_1_summary": "Ann told Bo about her puppy.",
                          "session_2_summary": "Bo ran a marathon."}}]"#;

    fn conversation() -> Conversation {
        parse(SAMPLE).expect("sample parses").remove(0)
    }

    #[test]
    fn parse_keeps_observations_summaries_and_questions_of_categories_one_to_four() {
        let c = conversation();
        assert_eq!(c.turns.len(), 4);
        assert_eq!(c.turns[2].observation.as_deref(), Some("Ann named her new dog Biscuit."));
        assert_eq!(c.turns[0].observation, None);
        assert_eq!(c.summaries.get(&2).map(String::as_str), Some("Bo ran a marathon."));
        assert_eq!(c.questions.len(), 1, "category 5 is left out");
        assert_eq!(c.questions[0].evidence, [(1, 3)]);
    }

    #[test]
    fn a_session_summary_holds_every_turn_and_its_date_in_the_text() {
        let laid = lay_out(&conversation(), Layout::SessionSummaries).expect("laid out");
        assert_eq!(laid.entries.len(), 2);
        let first = &laid.entries[0];
        assert!(first.summary.starts_with("8 May, 2023"), "{}", first.summary);
        assert!(first.content.contains("Ann told Bo about her puppy."), "{}", first.content);
        assert!(first.content.contains("Ann: Biscuit, after the cookies."), "{}", first.content);
        assert!(
            first.ts.starts_with("2024-"),
            "the entry's time is the import, not the session: {}",
            first.ts
        );
        assert_eq!(laid.turns_of[&first.ts], [(1, 1), (1, 2), (1, 3)]);
    }

    #[test]
    fn long_entries_hold_a_speakers_part_of_a_session() {
        let laid = lay_out(&conversation(), Layout::LongSpeakerEntries).expect("laid out");
        let ann: Vec<&BenchEntry> = laid.entries.iter().filter(|e| e.category == "ann").collect();
        assert_eq!(ann.len(), 1);
        assert_eq!(laid.turns_of[&ann[0].ts], [(1, 1), (1, 3)]);
        assert_eq!(laid.entries.len(), 3, "Ann and Bo in session 1, Bo in session 2");
    }

    #[test]
    fn paraphrased_summaries_come_from_the_observations() {
        let laid = lay_out(&conversation(), Layout::Paraphrased).expect("laid out");
        let summaries: Vec<&str> = laid.entries.iter().map(|e| e.summary.as_str()).collect();
        assert_eq!(summaries, ["Ann", "Bo", "Ann named her new dog Biscuit.", "Bo"]);
        assert_eq!(laid.entries[2].content, "Biscuit, after the cookies.");
    }

    #[test]
    fn the_mixed_pack_holds_the_chinese_memories_beside_the_turns() {
        let laid = lay_out(&conversation(), Layout::MixedLanguages).expect("laid out");
        let turns = laid.entries.iter().filter(|e| !laid.turns_of[&e.ts].is_empty()).count();
        assert_eq!(turns, 4);
        assert!(laid.entries.len() > 50, "{}", laid.entries.len());
        assert!(laid.entries[0].summary.contains("聊天记录"));
    }

    #[test]
    fn layouts_by_letter() {
        assert_eq!(Layout::by_letters("c,a"), Ok(vec![Layout::TurnEntries, Layout::Notes]));
        assert!(Layout::by_letters("z").is_err());
    }

    #[test]
    fn a_hit_holding_several_turns_counts_for_each() {
        let mut tally = Tally::default();
        tally.add(&[vec![(2, 1)], vec![(1, 1), (1, 3)]], &[(1, 3)]);
        tally.add(&[vec![], vec![], vec![], vec![], vec![], vec![(1, 3)]], &[(1, 3)]);
        assert_eq!((tally.n, tally.any5, tally.any10), (2, 1, 2), "a hit holding no turn still takes a rank");
    }
}
