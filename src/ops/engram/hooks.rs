//! Texts the client hooks inject (`engram hook <event>`): read-only, fast, no network.

use super::load::{active_lines, open_root, read_pack_text};
use crate::ops::{Engram, HOT_INDEX_PATH};

impl Engram {
    /// SessionStart context: the system prompt, then the hot memory of each named pack.
    pub fn session_context(&self, packs: &[String], after_compact: bool) -> String {
        let mut out = self.system_prompt();
        let today = self.now().date_naive();
        for name in packs {
            let Ok(pack) = self.resolve(name) else {
                out.push_str(&format!("\n\n## Engram {name}\n(未找到此 Engram / pack not found: check .claude/engram.json or ENGRAM_PACKS)"));
                continue;
            };
            let text = open_root(&pack.dir)
                .and_then(|root| read_pack_text(&root, HOT_INDEX_PATH))
                .ok()
                .flatten()
                .unwrap_or_default();
            let (active, _) = active_lines(&text, today);
            let body = if active.is_empty() { "(暂无记忆 / no memories yet)".to_owned() } else { active };
            out.push_str(&format!(
                "\n\n## Engram {name} — 动态记忆 (hot memory)\n<memory>\n{body}\n</memory>\n调用 load_engram(\"{name}\", query) 加载完整上下文。"
            ));
        }
        if after_compact {
            out.push_str(&format!("\n\n{}", compact_reminder()));
        }
        out
    }
}

/// What PreCompact (and SessionStart after a compaction) reminds of.
pub fn compact_reminder() -> &'static str {
    "上下文即将被压缩 (context is being compacted): 把本次对话中值得长期记住的内容（用户偏好、决定、事实、纠正）用 capture_memory 记录下来，别让它们在压缩中丢失。Capture what matters with capture_memory before it is cut."
}
