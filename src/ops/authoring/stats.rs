//! `stats_engrams(format)` and `engram stats [--json|--csv]`: packs, knowledge and
//! example counts (from `meta.json`, as the reference), memory entries by type and
//! category from each index (tool traces included), and the newest entries.

use serde_json::{Map, Value, json};

use crate::memory::{IndexEntry, parse_index_line};
use crate::ops::{Damage, Engram, Result};

/// The CSV's type columns, in the reference's order.
const CSV_TYPES: [&str; 7] = ["fact", "preference", "decision", "history", "general", "inferred", "stated"];

/// One pack's figures.
struct PackStats {
    name: String,
    knowledge: i64,
    examples: i64,
    /// Index entries, newest first (stable for equal timestamps).
    recent: Vec<IndexEntry>,
    /// Entries per type, in first-seen order.
    types: Vec<(String, usize)>,
}

/// Counts `items` by key, keeping the order in which keys first appear.
fn count_in_order<'a>(items: impl Iterator<Item = &'a str>) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for k in items {
        match out.iter_mut().find(|(x, _)| x == k) {
            Some((_, n)) => *n += 1,
            None => out.push((k.to_owned(), 1)),
        }
    }
    out
}

/// Entries sorted by timestamp, newest first; equal timestamps keep file order.
fn newest_first(mut entries: Vec<IndexEntry>) -> Vec<IndexEntry> {
    entries.sort_by(|a, b| b.ts.cmp(&a.ts));
    entries
}

fn as_map(pairs: &[(String, usize)]) -> Value {
    Value::Object(pairs.iter().map(|(k, n)| (k.clone(), json!(n))).collect::<Map<_, _>>())
}

/// A CSV field with Python's minimal quoting.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_owned() }
}

/// Pads to `width` code points on the right (`left`) or the left.
fn pad(s: &str, width: usize, left: bool) -> String {
    let fill = " ".repeat(width.saturating_sub(s.chars().count()));
    if left { format!("{s}{fill}") } else { format!("{fill}{s}") }
}

impl Engram {
    fn entries_of(&self, dir: &std::path::Path) -> Vec<IndexEntry> {
        super::memory_index(self, dir)
            .unwrap_or_default()
            .iter()
            .filter_map(|l| parse_index_line(l))
            .collect()
    }

    /// Each listed pack's figures (a damaged one's are what can be read), the global
    /// memory's entries, and the damaged packs ([`Engram::survey`]).
    fn pack_stats(&self) -> (Vec<PackStats>, Vec<IndexEntry>, Vec<Damage>) {
        let packs = self.packs();
        let survey = self.survey();
        let mut out = Vec::new();
        for (p, _) in &survey.packs {
            let count = |k: &str| p.meta.get(k).and_then(Value::as_i64).unwrap_or(0);
            let entries = self.entries_of(&p.dir);
            let types = count_in_order(entries.iter().map(|e| e.memory_type.as_str()));
            out.push(PackStats {
                name: p.name.clone(),
                knowledge: count("knowledge_count"),
                examples: count("examples_count"),
                recent: newest_first(entries),
                types,
            });
        }
        let global = self.entries_of(&packs.global_dir());
        (out, global, survey.damaged())
    }

    /// `stats_engrams(format)`: `plain` (or empty), `json` or `csv`; anything else is refused
    /// with the reference's text. Reads only. A damaged pack adds a warning line to the plain
    /// text and a `damaged` list to the JSON; the CSV stays a table.
    pub fn stats_engrams(&self, format: &str) -> Result<String> {
        Ok(self.stats_report(format, true)?.0)
    }

    /// The report of `stats_engrams` and the damaged packs; with `notes`, the report names
    /// them itself (the tool), without, the caller does (`engram stats`, on standard error).
    pub fn stats_report(&self, format: &str, notes: bool) -> Result<(String, Vec<Damage>)> {
        let format = format.trim().to_lowercase();
        if !matches!(format.as_str(), "" | "plain" | "json" | "csv") {
            return Ok(("不支持的 format。可选：plain/json/csv".to_owned(), Vec::new()));
        }
        let (packs, global, damaged) = self.pack_stats();
        // JSON keeps first-seen order, the plain text sorts (both as the reference does).
        let global_cats = count_in_order(global.iter().map(|e| e.category.as_str()));
        let text = match format.as_str() {
            "json" => {
                let engrams: Vec<Value> = packs
                    .iter()
                    .map(|p| {
                        let recent: Vec<Value> = p
                            .recent
                            .iter()
                            .take(5)
                            .map(|e| json!({"category": e.category, "timestamp": e.ts, "memory_type": e.memory_type, "summary": e.summary}))
                            .collect();
                        json!({"name": p.name, "knowledge_count": p.knowledge, "examples_count": p.examples,
                               "memory_count": p.recent.len(), "memory_types": as_map(&p.types), "recent_entries": recent})
                    })
                    .collect();
                let generated = self.now().to_rfc3339_opts(chrono::SecondsFormat::AutoSi, false);
                let mut report = json!({
                    "generated_at": generated,
                    "engrams": engrams,
                    "global_memory": {
                        "entry_count": global.len(),
                        "categories": as_map(&global_cats),
                        "type_distribution": as_map(&count_in_order(global.iter().map(|e| e.memory_type.as_str()))),
                    },
                });
                if notes && !damaged.is_empty() {
                    report["damaged"] = json!(damaged);
                }
                crate::jsonfmt::python_pretty(&report)
            }
            "csv" => {
                let mut out = format!(
                    "name,knowledge_count,examples_count,memory_count,{},recent_date\r\n",
                    CSV_TYPES.join(",")
                );
                for p in &packs {
                    let mut row = vec![
                        csv_field(&p.name),
                        p.knowledge.to_string(),
                        p.examples.to_string(),
                        p.recent.len().to_string(),
                    ];
                    for t in CSV_TYPES {
                        row.push(p.types.iter().find(|(k, _)| k == t).map_or(0, |(_, n)| *n).to_string());
                    }
                    row.push(csv_field(p.recent.first().map(|e| e.ts.as_str()).unwrap_or("")));
                    out.push_str(&row.join(","));
                    out.push_str("\r\n");
                }
                out
            }
            _ => {
                let mut sorted = global_cats;
                sorted.sort_by(|a, b| a.0.cmp(&b.0));
                let text = self.stats_plain(&packs, &global, &sorted);
                if notes { crate::ops::with_notes(text, &damaged) } else { text }
            }
        };
        Ok((text, damaged))
    }

    fn stats_plain(
        &self,
        packs: &[PackStats],
        global: &[IndexEntry],
        global_cats: &[(String, usize)],
    ) -> String {
        let roots: Vec<String> = self
            .packs()
            .roots()
            .iter()
            .filter(|r| r.is_dir())
            .map(|r| r.canonicalize().unwrap_or_else(|_| r.clone()).display().to_string())
            .fold(Vec::new(), |mut v, r| {
                if !v.contains(&r) {
                    v.push(r);
                }
                v
            });
        let sum = |f: fn(&PackStats) -> i64| packs.iter().map(f).sum::<i64>();
        let mut lines = vec![
            "Engram Stats".to_owned(),
            "=".repeat(50),
            format!("Packs dirs: {}", roots.join(", ")),
            format!("Total engrams: {}", packs.len()),
            format!("Total knowledge files: {}", sum(|p| p.knowledge)),
            format!("Total examples files: {}", sum(|p| p.examples)),
            format!("Total memory entries: {}", packs.iter().map(|p| p.recent.len()).sum::<usize>()),
            String::new(),
            "Per-Engram Breakdown:".to_owned(),
            "  Name                      Knowledge Examples Memory".to_owned(),
            "  ------------------------- --------- -------- ------".to_owned(),
        ];
        for p in packs {
            lines.push(format!(
                "  {} {} {} {}",
                pad(&p.name, 25, true),
                pad(&p.knowledge.to_string(), 9, false),
                pad(&p.examples.to_string(), 8, false),
                pad(&p.recent.len().to_string(), 6, false)
            ));
        }
        lines.push(String::new());
        let mut by_count: Vec<(String, usize)> = Vec::new();
        for (t, n) in packs.iter().flat_map(|p| p.types.iter()) {
            match by_count.iter_mut().find(|(x, _)| x == t) {
                Some((_, m)) => *m += n,
                None => by_count.push((t.clone(), *n)),
            }
        }
        by_count.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
        if !by_count.is_empty() {
            lines.push("Memory Type Distribution:".to_owned());
            lines.extend(by_count.iter().map(|(t, n)| format!("  {} {n}", pad(t, 15, true))));
            lines.push(String::new());
        }
        if !global.is_empty() {
            lines.push(format!("Global Memory: {} entries", global.len()));
            lines.extend(global_cats.iter().map(|(c, n)| format!("  {c}: {n}")));
            lines.push(String::new());
        }
        let mut recent: Vec<(String, &IndexEntry)> = Vec::new();
        for p in packs {
            recent.extend(p.recent.iter().map(|e| (p.name.clone(), e)));
        }
        recent.extend(global.iter().map(|e| ("_global".to_owned(), e)));
        recent.sort_by(|a, b| b.1.ts.cmp(&a.1.ts));
        if !recent.is_empty() {
            lines.push("Recent Activity (last 10):".to_owned());
            for (pack, e) in recent.iter().take(10) {
                lines.push(format!("  [{}] {pack}/{} [{}] {}", e.ts, e.category, e.memory_type, e.summary));
            }
        }
        lines.join("\n")
    }
}
