//! Automatic tool traces (`engram serve --auto-trace`): after the reference's
//! traced tools, one `tool_trace` entry in `memory/tool-trace.md`, written by
//! [`Engram::capture_tool_trace`] with the reference's texts, tags and
//! compaction. Each trace is one more commit, so they are off by default.
//!
//! Traced, as in the reference: `get_engram_info` (found only), `load_engram`,
//! `read_engram_file`, `write_engram_file`, `capture_memory`, `list_tool_traces`,
//! `consolidate_memory`, `delete_memory`, `correct_memory`, `add_knowledge`.
//! Never traced: `capture_tool_trace` itself, listings, install/init/lint/search/stats,
//! the draft assistant, engram's own tools (search, history, sync, …), the CLI and
//! the web page.

use super::TraceRequest;
use crate::ops::{Caller, Engram};

/// A traced tool call: the tool and the arguments its trace names.
#[derive(Debug, Clone)]
pub enum TracedCall {
    /// `get_engram_info(name)`.
    GetInfo {
        /// Pack name.
        name: String,
    },
    /// `load_engram(name, query)`.
    Load {
        /// Pack name.
        name: String,
        /// The query.
        query: String,
    },
    /// `read_engram_file(name, path)`.
    Read {
        /// Pack name.
        name: String,
        /// The path asked for.
        path: String,
    },
    /// `write_engram_file(name, path, content, mode)`.
    Write {
        /// Pack name.
        name: String,
        /// The path.
        path: String,
        /// The mode as given (`append` appends; anything else overwrites).
        mode: String,
    },
    /// `capture_memory`.
    Capture {
        /// Pack name (a global capture traces into this pack).
        name: String,
        /// Category.
        category: String,
        /// The memory type as given (`general` when missing).
        memory_type: Option<String>,
        /// Global memory.
        is_global: bool,
        /// The summary.
        summary: String,
    },
    /// `list_tool_traces(name, limit)`.
    ListTraces {
        /// Pack name.
        name: String,
        /// The limit as given (clamped to 1–50).
        limit: i64,
    },
    /// `consolidate_memory`.
    Consolidate {
        /// Pack name.
        name: String,
        /// Category.
        category: String,
        /// The new summary.
        summary: String,
    },
    /// `delete_memory`.
    Delete {
        /// Pack name.
        name: String,
        /// Category.
        category: String,
        /// The summary looked for.
        summary: String,
    },
    /// `correct_memory`.
    Correct {
        /// Pack name.
        name: String,
        /// Category.
        category: String,
        /// The new type as given.
        memory_type: Option<String>,
        /// The summary looked for.
        old_summary: String,
        /// The new summary.
        new_summary: String,
    },
    /// `add_knowledge(name, filename, …)`.
    AddKnowledge {
        /// Pack name.
        name: String,
        /// The file name as given.
        filename: String,
    },
}

/// What a trace says: intent, result, arguments, status and an extra tag.
struct TraceText {
    intent: String,
    result: String,
    args: String,
    ok: bool,
    extra_tag: Option<String>,
}

/// The reference's compaction: whitespace runs become one space (Python's `str.split`),
/// text over `max` characters becomes `max - 1` characters and `…`.
pub(crate) fn compact(text: &str, max: usize) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= max {
        return joined;
    }
    let mut cut: String = joined.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

fn python_bool(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

fn type_or_general(t: &Option<String>) -> &str {
    t.as_deref().map(str::trim).filter(|t| !t.is_empty()).unwrap_or("general")
}

impl TracedCall {
    /// The pack the trace goes to.
    pub fn name(&self) -> &str {
        match self {
            Self::GetInfo { name }
            | Self::Load { name, .. }
            | Self::Read { name, .. }
            | Self::Write { name, .. }
            | Self::Capture { name, .. }
            | Self::ListTraces { name, .. }
            | Self::Consolidate { name, .. }
            | Self::Delete { name, .. }
            | Self::Correct { name, .. }
            | Self::AddKnowledge { name, .. } => name,
        }
    }

    /// The tool's name.
    pub fn tool(&self) -> &'static str {
        match self {
            Self::GetInfo { .. } => "get_engram_info",
            Self::Load { .. } => "load_engram",
            Self::Read { .. } => "read_engram_file",
            Self::Write { .. } => "write_engram_file",
            Self::Capture { .. } => "capture_memory",
            Self::ListTraces { .. } => "list_tool_traces",
            Self::Consolidate { .. } => "consolidate_memory",
            Self::Delete { .. } => "delete_memory",
            Self::Correct { .. } => "correct_memory",
            Self::AddKnowledge { .. } => "add_knowledge",
        }
    }

    /// The reference's trace texts for this call and its answer; `None` when the call is not
    /// traced (`get_engram_info` of a missing pack).
    fn text(&self, answer: Result<&str, &str>) -> Option<TraceText> {
        let ok = answer.is_ok();
        let t = |intent: String, result: String, args: String, ok: bool| TraceText {
            intent,
            result,
            args,
            ok,
            extra_tag: None,
        };
        let category_tag = |c: &str| ok.then(|| format!("memory_category:{c}"));
        Some(match self {
            Self::GetInfo { name } => {
                if !ok {
                    return None;
                }
                t("查看专家元信息".into(), "读取 meta.json 成功".into(), format!("name={name}"), true)
            }
            Self::Load { query, .. } => match answer {
                Ok(_) => t(
                    format!("加载专家上下文（query: {query}）"),
                    "成功加载 role/workflow/rules 与索引".into(),
                    format!("query={query}"),
                    true,
                ),
                Err(_) => t(
                    "加载专家上下文".into(),
                    "加载失败：无法读取基础层".into(),
                    format!("query={query}"),
                    false,
                ),
            },
            Self::Read { path, .. } => {
                let result = match answer {
                    Err(_) => format!("读取失败：文件不存在 {path}"),
                    Ok(a) if a.starts_with("文件为空: ") => format!("读取成功但文件为空 {path}"),
                    Ok(_) => "读取成功".into(),
                };
                t(format!("读取文件 {path}"), result, format!("path={path}"), ok)
            }
            Self::Write { path, mode, .. } => {
                let verb = if mode == "append" { "追加文件" } else { "写入文件" };
                let result =
                    if ok { format!("写入成功: {path}") } else { format!("写入失败: {path}") };
                t(format!("{verb} {path}"), result, format!("mode={mode}, path={path}"), ok)
            }
            Self::Capture { category, memory_type, is_global, summary, .. } => {
                let result = if ok {
                    format!("已记录: {summary}")
                } else {
                    format!("记忆写入失败: {summary}")
                };
                let args = format!(
                    "category={category}, type={}, is_global={}",
                    type_or_general(memory_type),
                    python_bool(*is_global)
                );
                TraceText {
                    extra_tag: category_tag(category),
                    ..t(format!("记录记忆 [{category}]"), result, args, ok)
                }
            }
            Self::ListTraces { limit, .. } => {
                let n = answer
                    .ok()
                    .and_then(|a| a.strip_prefix("最近工具调用轨迹（"))
                    .and_then(|a| a.split_once(' '))
                    .map(|(n, _)| n.to_owned());
                let result = match n {
                    Some(n) => format!("返回 {n} 条工具轨迹"),
                    None => "当前没有工具轨迹".into(),
                };
                // An unknown pack is not traced (no pack to trace into), as in the reference.
                t("查看最近工具轨迹".into(), result, format!("limit={}", (*limit).clamp(1, 50)), true)
            }
            Self::Consolidate { category, summary, .. } => {
                let result =
                    if ok { format!("压缩成功: {summary}") } else { format!("压缩失败: {summary}") };
                TraceText {
                    extra_tag: Some(format!("memory_category:{category}")),
                    ..t(format!("压缩记忆 [{category}]"), result, format!("category={category}"), ok)
                }
            }
            Self::Delete { category, summary, .. } => {
                let result = if ok {
                    format!("删除成功: {summary}")
                } else {
                    format!("未找到匹配条目: {summary}")
                };
                TraceText {
                    extra_tag: Some(format!("memory_category:{category}")),
                    ..t(format!("删除记忆 [{category}]"), result, format!("category={category}"), ok)
                }
            }
            Self::Correct { category, memory_type, old_summary, new_summary, .. } => {
                let result = if ok {
                    format!("修正成功: {new_summary}")
                } else {
                    format!("修正失败: {old_summary}")
                };
                let args = format!("category={category}, type={}", type_or_general(memory_type));
                TraceText {
                    extra_tag: Some(format!("memory_category:{category}")),
                    ..t(format!("修正记忆 [{category}]"), result, args, ok)
                }
            }
            Self::AddKnowledge { filename, .. } => {
                let fname =
                    if filename.ends_with(".md") { filename.clone() } else { format!("{filename}.md") };
                let (intent, result) = if ok {
                    (format!("新增知识 {fname}"), format!("写入成功: knowledge/{fname}"))
                } else {
                    (format!("新增知识 {filename}"), format!("写入失败: knowledge/{filename}"))
                };
                t(intent, result, format!("filename={filename}"), ok)
            }
        })
    }
}

impl Engram {
    /// Writes the automatic trace of a call that answered `answer` (best effort: a trace
    /// that cannot be written is skipped — the call's own answer stands). Nothing when the
    /// name is blank or the pack does not exist. Returns whether a commit was made.
    pub fn auto_trace(&self, call: &TracedCall, answer: Result<&str, &str>, client: Option<String>) -> bool {
        let name = call.name();
        if name.trim().is_empty() || !self.resolve(name).is_ok_and(|p| crate::pack::read_meta(&p.dir).is_ok())
        {
            return false;
        }
        let Some(text) = call.text(answer) else { return false };
        let tool = call.tool();
        let status = if text.ok { "ok" } else { "error" };
        let intent = compact(&text.intent, 120);
        let mut tags = vec!["auto".to_owned(), "source:mcp".to_owned(), format!("mcp_tool:{tool}")];
        tags.extend(text.extra_tag);
        let req = TraceRequest {
            name: name.to_owned(),
            tool_name: tool.to_owned(),
            summary: Some(format!("{tool} [{status}] {}", compact(&text.intent, 72))),
            intent,
            result_summary: compact(&text.result, 120),
            args_summary: compact(&text.args, 120),
            status: status.to_owned(),
            tags,
            conversation_id: None,
        };
        let caller = Caller { tool: tool.to_owned(), client };
        match self.capture_tool_trace(&req, &caller) {
            Ok(answer) => answer.contains("\ncommit: "),
            Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compaction_is_the_references() {
        assert_eq!(compact(" a\n b\u{3000}c  ", 120), "a b c");
        let long: String = "我".repeat(130);
        let c = compact(&long, 120);
        assert_eq!(c.chars().count(), 120);
        assert!(c.ends_with('…'));
        assert_eq!(compact("abc", 3), "abc");
    }

    #[test]
    fn a_missing_packs_info_is_not_traced_and_errors_say_so() {
        let info = TracedCall::GetInfo { name: "x".into() };
        assert!(info.text(Err("未找到 Engram: x")).is_none());
        let read = TracedCall::Read { name: "x".into(), path: "a.md".into() };
        let t = read.text(Err("未找到文件: a.md")).expect("traced");
        assert!(!t.ok);
        assert_eq!(t.result, "读取失败：文件不存在 a.md");
        let list = TracedCall::ListTraces { name: "x".into(), limit: 999 };
        let t = list.text(Ok("最近工具调用轨迹（8 条）\n- …")).expect("traced");
        assert_eq!((t.result.as_str(), t.args.as_str()), ("返回 8 条工具轨迹", "limit=50"));
    }
}
