//! The `engram-system-prompt` prompt: the reference's intro and its 12 rules,
//! word for word (rules 7–8 follow how tool traces work in this server), then
//! engram's own rules (search, history, undo, secrets, install by name).

use crate::ops::Engram;

/// The prompt's description (`prompts/list`, `prompts/get`), as the reference gives it.
pub const SYSTEM_PROMPT_DESCRIPTION: &str =
    "Engram 专家记忆系统提示词。将此注入 system prompt 以启用自动专家加载。";

/// The prompt when no pack is installed (the reference's text).
const NO_PACKS: &str = "# Engram 记忆印记\n\n暂无可用记忆印记。请使用 install_engram 工具安装专家记忆包。";

/// The reference's intro: the heading and the paragraph before the pack list.
const INTRO: &str = "# Engram 记忆印记\n\n\
你有一个专家记忆系统可用。你可以加载专家的记忆印记——加载后，你将获得该专家的人格、\n\
认知方式和专业知识，以该专家的身份思考和回答问题。\n\
记忆印记不会覆盖你的基础能力，只在相关场景下激活。\n\n\
## 可用记忆印记\n\n<engrams>\n";

/// The reference's rules 1–6.
const RULES_1_6: &str = "1. 对话开始时，调用 list_engrams() 查看可用专家\n\
2. 当用户问题匹配某个记忆印记，或用户用 @name 指定时，\n\
\x20  调用 load_engram(name, query) 加载角色/工作流程/规则 + 索引\n\
3. 根据返回的知识索引（含摘要）和案例索引（含 uses 关联），\n\
\x20  判断需要深入哪些主题\n\
4. 需要细节时，调用 read_engram_file(name, path) 读取完整知识或案例\n\
5. 加载后以该专家的人格回答：保持其沟通风格、判断倾向和价值观\n\
6. 对话中发现用户的重要偏好、个人情况或关键决定时，\n\
\x20  调用 capture_memory(name, content, category, summary,\n\
\x20  memory_type, tags, conversation_id, expires, is_global) 记录下来\n\
\x20  memory_type 可选：preference / fact / decision / history / general\n\
\x20                    inferred（LLM推断）/ stated（用户明确表达）\n\
\x20  expires 可选：ISO日期字符串，如 '2026-06-01'，到期后自动归档到 {category}-expired.md 并隐藏\n\
\x20  is_global=True：写入跨专家共享的全局记忆（如用户年龄、城市等基础信息）\n\
\x20  tags 可选：用于分类过滤，如 [\"fitness\", \"injury\"]\n";

/// The reference's rule 7, true when `capture_tool_trace` is served.
const RULE_7: &str = "7. 任何工具调用（Skills / MCP / Subagent / 第三方工具）完成后，\n\
\x20  立即调用 capture_tool_trace(name, tool_name, intent, result_summary, ...)\n\
\x20  记录：调用了什么、为什么调用、结果如何；失败也要记录（status=error）\n";

/// Rule 7 when `capture_tool_trace` is not served (only `--tools all` or `authoring` has it).
const RULE_7_NO_TOOL: &str = "7. 本服务器未提供 capture_tool_trace（`engram serve --tools all` 或 authoring 工具集才有），\n\
\x20  外部工具（Skills / MCP / Subagent / 第三方工具）的调用无需记录轨迹；结论值得记住时用 capture_memory 记录\n";

/// The reference's rule 8, true with `engram serve --auto-trace`.
const RULE_8: &str = "8. engram-server 内部的关键工具（load/read/write/memory/knowledge）会自动写入 tool-trace，\n\
\x20  但外部工具仍需你显式调用 capture_tool_trace 记录\n";

/// Rule 8 without automatic traces (a trace would cost a commit per call).
const RULE_8_NO_AUTO: &str = "8. engram 内部的工具不会自动写入 tool-trace：\n\
\x20  它们的每次写入本身就是一次 git 提交，可用 memory_history 查看\n";

/// The reference's rules 9–12.
const RULES_9_12: &str = "9. 下次加载同一专家时，动态记忆和全局记忆会自动带入，无需用户重复说明\n\
10. 当某个 category 的记忆条目超过 30 条时，先用 read_engram_file 读取原始内容，\n\
\x20  再调用 consolidate_memory(name, category, consolidated_content, summary)\n\
\x20  将多条原始记录压缩为一条密集摘要，原始条目自动归档\n\
11. 若加载后看到「首次引导」区块，请在对话中自然地收集所列信息并 capture_memory\n\
12. 若 Engram 有「继承知识索引」区块，其知识来自父 Engram，可按需 read_engram_file 读取\n";

/// engram's own rules, after the reference's twelve.
const ENGRAM_RULES: &str = "13. 需要回忆以前的信息时，调用 search_memory(query) 在所有印记与全局记忆中检索（中英文均可，\n\
\x20   可按 name、category、memory_type、tags、time_range 过滤，as_of 查看过去的版本）\n\
14. 每次写入都是该印记 git 仓库中的一次提交：memory_history(name) 查看记忆的变更历史，\n\
\x20   revert_memory(name, commit) 撤销某一次提交，undo_last(name) 撤销最近的写入（撤销本身也是新的提交）\n\
15. 记忆有误时用 correct_memory 修正，用户要求忘记时用 delete_memory；两者按摘要精确匹配唯一一条，\n\
\x20   匹配不唯一时会列出候选，请用完整摘要重试\n\
16. 不要把密码、密钥、令牌等机密写入记忆或文件：含机密的写入会被拒绝\n\
17. 没有合适的印记时，用 install_engram 安装（git URL、本地路径，或 registry 名称如 old-friend）\n";

/// How tool traces work in the serving process (rules 7–8 of the prompt say it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TraceRules {
    /// `capture_tool_trace` is served (the `authoring` toolset).
    pub tool: bool,
    /// engram's own tools write traces (`engram serve --auto-trace`).
    pub auto: bool,
}

impl Engram {
    /// The system prompt of a server without tool traces (hooks, the default toolset).
    pub fn system_prompt(&self) -> String {
        self.system_prompt_with(TraceRules::default())
    }

    /// The system prompt: the available packs and the rules for using the tools,
    /// rules 7–8 as `traces` makes them true.
    pub fn system_prompt_with(&self, traces: TraceRules) -> String {
        let packs = self.packs().list();
        if packs.is_empty() {
            return NO_PACKS.into();
        }
        let mut s = String::from(INTRO);
        for p in &packs {
            let desc = crate::pack::python_str(p.meta.get("description"), "");
            s.push_str(&format!(
                "  <engram>\n    <name>{}</name>\n    <description>{desc}</description>\n  </engram>\n",
                p.name
            ));
        }
        s.push_str("</engrams>\n\n## 使用规则\n\n");
        s.push_str(RULES_1_6);
        s.push_str(if traces.tool { RULE_7 } else { RULE_7_NO_TOOL });
        match (traces.auto, traces.tool) {
            (true, true) => s.push_str(RULE_8),
            (true, false) => s.push_str(
                "8. engram 内部的关键工具（load/read/write/memory/knowledge）会自动写入 tool-trace（每条一次 git 提交）\n",
            ),
            (false, true) => {
                s.push_str(RULE_8_NO_AUTO);
                s.push_str("\x20  外部工具仍需你显式调用 capture_tool_trace 记录\n");
            }
            (false, false) => s.push_str(RULE_8_NO_AUTO),
        }
        s.push_str(RULES_9_12);
        s.push_str(ENGRAM_RULES);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_are_numbered_one_to_seventeen_in_every_trace_mode() {
        for (tool, auto) in [(false, false), (true, false), (false, true), (true, true)] {
            let traces = TraceRules { tool, auto };
            let mut text = String::from(RULES_1_6);
            text.push_str(if traces.tool { RULE_7 } else { RULE_7_NO_TOOL });
            text.push_str(if auto { RULE_8 } else { RULE_8_NO_AUTO });
            text.push_str(RULES_9_12);
            text.push_str(ENGRAM_RULES);
            let numbers: Vec<u32> =
                text.lines().filter_map(|l| l.split_once(". ").and_then(|(n, _)| n.parse().ok())).collect();
            assert_eq!(numbers, (1..=17).collect::<Vec<_>>());
        }
    }
}
