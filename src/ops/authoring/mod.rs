//! The `authoring` toolset: `init_engram`, `lint_engrams`, `search_engrams`
//! (in `packs/registry.rs`), `stats_engrams`, the draft assistant pair and
//! tool traces (`capture_tool_trace`, `list_tool_traces`), with the Python
//! server's names, parameters and texts.

mod auto_trace;
mod build;
mod build_extract;
pub(super) mod draft;
pub(super) mod stats;

use std::path::Path;

use crate::memlog::FullIndex;
use crate::ops::{Caller, CaptureRequest, Engram, EngramError, Result};

pub use auto_trace::TracedCall;
pub use build::{BuildEvent, BuildModels, BuildReport, BuildRequest};
pub use draft::{DraftRequest, FinalizeRequest, create_engram_assistant};

/// The category tool traces are kept in (`memory/tool-trace.md`).
pub const TRACE_CATEGORY: &str = "tool-trace";

/// The failure text of `capture_tool_trace` when a field is blank (the reference's).
const TRACE_EMPTY: &str = "工具轨迹记录失败，请检查 tool_name/intent/result_summary 是否为空。";

/// The arguments of `capture_tool_trace`.
#[derive(Debug, Clone, Default)]
pub struct TraceRequest {
    /// Pack name.
    pub name: String,
    /// The tool that was called.
    pub tool_name: String,
    /// Why it was called.
    pub intent: String,
    /// What it returned.
    pub result_summary: String,
    /// Its arguments, in short (kept only when not blank).
    pub args_summary: String,
    /// `ok` (default), `error`, … (stripped, lower-cased).
    pub status: String,
    /// The index line's summary (default `<tool> [<status>] <intent>`).
    pub summary: Option<String>,
    /// Extra tags.
    pub tags: Vec<String>,
    /// Conversation id.
    pub conversation_id: Option<String>,
}

/// `未找到 Engram: <name>`, the reference's text when the tool traces' pack is missing.
fn not_found(name: &str) -> EngramError {
    EngramError::Init(crate::lang::Said::new(
        format!("未找到 Engram: {name}"),
        format!("no pack named {name}"),
    ))
}

/// The raw lines and entries of a pack's (or the global) memory index, read from HEAD or,
/// for a folder that is not a repository yet, as it is.
pub(crate) fn memory_index(engram: &Engram, dir: &Path) -> Result<Vec<String>> {
    let read = |snap: &crate::store::Snapshot<'_>| -> Result<Vec<String>> {
        let index = FullIndex::load(snap)?;
        Ok(index.entries().into_iter().map(|(pos, _)| index.line(pos).to_owned()).collect())
    };
    match engram.with_existing_repo(dir, |r| r.read_head(read))? {
        Some(lines) => Ok(lines),
        None => crate::store::read_folder(dir, "memory", read),
    }
}

impl Engram {
    /// `lint_engrams(name?)`: the lint report of one pack or of every pack, with the
    /// reference's `总计` line when `total`; and the number of errors. The texts are in `lang`
    /// ([`Lang::Zh`](crate::lang::Lang::Zh), the reference's, over MCP). All packs are
    /// labelled by meta name, as in the reference, but each is linted in its own directory
    /// (the reference re-resolves the meta name as a directory name, so it lints the packs
    /// root for a pack named `""` and misses a renamed pack: §11.3).
    pub fn lint_engrams(&self, name: Option<&str>, total: bool, lang: crate::lang::Lang) -> (String, usize) {
        let packs = self.packs();
        let targets: Vec<(String, Option<std::path::PathBuf>)> = match name.filter(|n| !n.is_empty()) {
            Some(n) => vec![(n.to_owned(), packs.resolve(n).ok().map(|p| p.dir))],
            None => packs.list().into_iter().map(|p| (p.name, Some(p.dir))).collect(),
        };
        if targets.is_empty() {
            return (lang.pick("暂无可校验 Engram。", "No packs to check.").to_owned(), 0);
        }
        let (mut errors, mut warnings) = (0, 0);
        let mut out = Vec::new();
        for (t, dir) in &targets {
            let msgs = match dir {
                Some(dir) => crate::lint::lint_pack(dir, dir.parent().unwrap_or(packs.packs_dir())),
                None => vec![crate::lint::LintMessage::error(
                    ".",
                    crate::lang::Said::new("未找到 Engram", "no such pack"),
                )],
            };
            let e = msgs.iter().filter(|m| m.level == crate::lint::Level::Error).count();
            errors += e;
            warnings += msgs.len() - e;
            out.push(crate::lint::render_report(t, &msgs, lang));
        }
        if total {
            let label = lang.pick("总计", "Total");
            out.push(format!("{label}: {} Engram, {errors} errors, {warnings} warnings", targets.len()));
        }
        (out.join("\n"), errors)
    }

    /// `capture_tool_trace`: one entry in `memory/tool-trace.md` (type `tool_trace`,
    /// tags `tool:<t>`, `status:<s>` and the caller's), through `capture_memory` (one
    /// commit; the same trace again within 5 s writes nothing).
    pub fn capture_tool_trace(&self, req: &TraceRequest, caller: &Caller) -> Result<String> {
        self.resolve(&req.name).map_err(|_| not_found(&req.name))?;
        let (tool, intent, result) = (req.tool_name.trim(), req.intent.trim(), req.result_summary.trim());
        if tool.is_empty() || intent.is_empty() || result.is_empty() {
            return Err(EngramError::Init(crate::lang::Said::new(
                TRACE_EMPTY,
                "recording the tool trace failed: tool_name, intent and result_summary must not be empty.",
            )));
        }
        let status = match req.status.trim().to_lowercase() {
            s if s.is_empty() => "ok".to_owned(),
            s => s,
        };
        let mut content = vec![format!("tool: {tool}"), format!("intent: {intent}")];
        if !req.args_summary.trim().is_empty() {
            content.push(format!("args: {}", req.args_summary.trim()));
        }
        content.push(format!("result: {result}"));
        content.push(format!("status: {status}"));
        let mut tags = vec![format!("tool:{tool}"), format!("status:{status}")];
        for t in req.tags.iter().map(|t| t.trim()).filter(|t| !t.is_empty()) {
            if !tags.iter().any(|x| x == t) {
                tags.push(t.to_owned());
            }
        }
        let summary = req
            .summary
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map_or_else(|| format!("{tool} [{status}] {intent}"), str::to_owned);
        let capture = CaptureRequest {
            name: req.name.clone(),
            content: content.join("\n"),
            category: TRACE_CATEGORY.to_owned(),
            summary,
            memory_type: Some("tool_trace".to_owned()),
            tags,
            conversation_id: req.conversation_id.clone(),
            expires: None,
            is_global: false,
        };
        let written = self.capture_memory(&capture, caller)?;
        // The reference's answer, then engram's `commit:` line (or the duplicate note).
        let tail = written.split_once('\n').map(|(_, t)| format!("\n{t}")).unwrap_or_default();
        let echoed = req.status.trim().to_lowercase();
        let echoed = if echoed.is_empty() { "ok".to_owned() } else { echoed };
        Ok(format!("已记录工具轨迹: {} [{echoed}] {}{tail}", req.tool_name, req.intent))
    }

    /// `list_tool_traces(name, limit=10)`: the newest `limit` (1–50) trace index lines
    /// that have not expired, oldest first. Reads only.
    pub fn list_tool_traces(&self, name: &str, limit: i64) -> Result<String> {
        let pack = self.resolve(name).map_err(|_| not_found(name))?;
        let limit = limit.clamp(1, 50) as usize;
        let today = self.now().date_naive();
        let needle = format!("`memory/{TRACE_CATEGORY}.md`");
        let lines: Vec<String> = memory_index(self, &pack.dir)?
            .into_iter()
            .filter(|l| l.contains(&needle) && !crate::memory::is_expired(l, today))
            .collect();
        if lines.is_empty() {
            return Ok("暂无工具调用轨迹".to_owned());
        }
        let newest = &lines[lines.len().saturating_sub(limit)..];
        let mut out = format!("最近工具调用轨迹（{} 条）", newest.len());
        for l in newest {
            out.push_str("\n- ");
            out.push_str(l);
        }
        Ok(out)
    }
}
