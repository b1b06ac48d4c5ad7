//! The Engram toolset: the reference server's tools, same names and texts.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::{Peer, RoleServer, tool, tool_router};

use super::EngramServer;
use super::params::*;
use crate::ops::{CaptureRequest, CorrectRequest, TracedCall};

#[tool_router(router = engram_tools, vis = "pub(super)")]
impl EngramServer {
    /// Health check.
    #[tool(description = "Health check. Returns `pong`.", annotations(read_only_hint = true))]
    async fn ping(&self) -> String {
        self.engram.ping()
    }

    #[tool(
        description = "列出所有可用的 Engram 专家记忆包（名称、描述、知识与案例数量）。List the available Engram packs. Use load_engram(name, query) to load one.",
        annotations(read_only_hint = true)
    )]
    async fn list_engrams(&self, peer: Peer<RoleServer>) -> Result<String, String> {
        self.run("list_engrams", &peer, |e, _| Ok(e.list_engrams())).await
    }

    #[tool(
        description = "查看某个 Engram 的 meta.json 元信息。Show a pack's meta.json.",
        annotations(read_only_hint = true)
    )]
    async fn get_engram_info(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<NameParams>,
    ) -> Result<String, String> {
        let traced = self.tracing().then(|| TracedCall::GetInfo { name: p.name.clone() });
        let answer = self.run("get_engram_info", &peer, move |e, _| e.get_engram_info(&p.name)).await;
        self.trace(traced, &answer, &peer).await;
        answer
    }

    #[tool(
        description = "加载 Engram 专家上下文：角色、工作流程、规则、知识索引、案例索引与动态记忆。先 list_engrams 找到名称，加载后按需调用 read_engram_file 读取全文。Load a pack's context (role, workflow, rules, knowledge and example indexes, memory).",
        // Reads only: never commits (expired entries are hidden; the next memory write moves them).
        annotations(read_only_hint = true)
    )]
    async fn load_engram(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<LoadParams>,
    ) -> Result<String, String> {
        // Most loads read a few small files: answered here, they skip the hand-off to a
        // blocking thread, which costs more than the load. A load that must read git (HEAD
        // moved since this process looked, or `as_of`) goes to a blocking thread below.
        let traced =
            self.tracing().then(|| TracedCall::Load { name: p.name.clone(), query: p.query.clone() });
        if p.as_of.as_deref().is_none_or(|a| a.trim().is_empty())
            && let Some(answer) = crate::store::proposing(self.proposer(&peer), || {
                self.engram.load_engram_if_settled(&p.name, &p.query)
            })
        {
            if answer.is_ok()
                && let Some(hook) = &self.after_call
            {
                hook();
            }
            let answer = answer.map_err(|e| e.to_string());
            self.trace(traced, &answer, &peer).await;
            return answer;
        }
        let answer = self
            .run("load_engram", &peer, move |e, _| {
                match p.as_of.as_deref().map(str::trim).filter(|a| !a.is_empty()) {
                    Some(as_of) => e.load_engram_as_of(&p.name, &p.query, as_of),
                    None => e.load_engram(&p.name, &p.query),
                }
            })
            .await;
        self.trace(traced, &answer, &peer).await;
        answer
    }

    #[tool(
        description = "读取 Engram 内的文件（如 knowledge/xxx.md、examples/xxx.md），路径相对于包根目录。Read a file of a pack by its path relative to the pack; as_of (commit id or YYYY-MM-DD) reads it as it was.",
        annotations(read_only_hint = true)
    )]
    async fn read_engram_file(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<ReadFileParams>,
    ) -> Result<String, String> {
        let traced = self.tracing().then(|| TracedCall::Read { name: p.name.clone(), path: p.path.clone() });
        let answer = self
            .run("read_engram_file", &peer, move |e, _| {
                match p.as_of.as_deref().map(str::trim).filter(|a| !a.is_empty()) {
                    Some(as_of) => e.read_engram_file_as_of(&p.name, &p.path, as_of),
                    None => e.read_engram_file(&p.name, &p.path),
                }
            })
            .await;
        self.trace(traced, &answer, &peer).await;
        answer
    }

    #[tool(
        description = "写入 Engram 内的文件（mode=append 追加；其他任何值，包括默认的 overwrite，都覆盖）。每次写入是一次 git 提交（undo_last 可撤销）。memory/ 由记忆工具维护，不能直接写。Write a file of a pack (one git commit): mode `append` (exactly) appends, any other mode overwrites."
    )]
    async fn write_engram_file(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<WriteFileParams>,
    ) -> Result<String, String> {
        let traced = self.tracing().then(|| TracedCall::Write {
            name: p.name.clone(),
            path: p.path.clone(),
            mode: p.mode.clone().unwrap_or_else(|| "overwrite".to_owned()),
        });
        let answer = self
            .run("write_engram_file", &peer, move |e, c| {
                e.write_engram_file(&p.name, &p.path, &p.content, p.mode.as_deref().unwrap_or("overwrite"), c)
            })
            .await;
        self.trace(traced, &answer, &peer).await;
        answer
    }

    #[tool(
        description = "记录一条记忆到 Engram 的 memory/<category>.md，并更新记忆索引（一次 git 提交）。memory_type: preference/fact/decision/history/general/inferred/stated；expires 为 YYYY-MM-DD；is_global=true 记录到所有印记共享的全局记忆。30 秒内重复记录相同内容会被识别为重复而不再写入。Capture a memory (one git commit). Duplicate content captured within 30 seconds is not written twice."
    )]
    async fn capture_memory(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<CaptureParams>,
    ) -> Result<String, String> {
        let req = CaptureRequest {
            name: p.name,
            content: p.content,
            category: p.category,
            summary: p.summary,
            memory_type: p.memory_type,
            tags: p.tags.unwrap_or_default(),
            conversation_id: p.conversation_id,
            expires: p.expires,
            is_global: p.is_global.unwrap_or(false),
        };
        let traced = self.tracing().then(|| TracedCall::Capture {
            name: req.name.clone(),
            category: req.category.clone(),
            memory_type: req.memory_type.clone(),
            is_global: req.is_global,
            summary: req.summary.clone(),
        });
        let answer = self.run("capture_memory", &peer, move |e, c| e.capture_memory(&req, c)).await;
        self.trace(traced, &answer, &peer).await;
        answer
    }

    #[tool(
        description = "把某个 category 的全部记忆压缩成一条综合记忆；原始条目归档到 memory/<category>-archive.md。Consolidate a category into one entry; originals are archived."
    )]
    async fn consolidate_memory(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<ConsolidateParams>,
    ) -> Result<String, String> {
        let traced = self.tracing().then(|| TracedCall::Consolidate {
            name: p.name.clone(),
            category: p.category.clone(),
            summary: p.summary.clone(),
        });
        let answer = self
            .run("consolidate_memory", &peer, move |e, c| {
                e.consolidate_memory(&p.name, &p.category, &p.consolidated_content, &p.summary, c)
            })
            .await;
        self.trace(traced, &answer, &peer).await;
        answer
    }

    #[tool(
        description = "删除一条记忆：先按摘要精确匹配，否则按唯一的子串匹配；匹配不到或不唯一时返回候选列表。Delete exactly one memory entry, found by its summary."
    )]
    async fn delete_memory(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<DeleteParams>,
    ) -> Result<String, String> {
        let traced = self.tracing().then(|| TracedCall::Delete {
            name: p.name.clone(),
            category: p.category.clone(),
            summary: p.summary.clone(),
        });
        let answer = self
            .run("delete_memory", &peer, move |e, c| e.delete_memory(&p.name, &p.category, &p.summary, c))
            .await;
        self.trace(traced, &answer, &peer).await;
        answer
    }

    #[tool(
        description = "修正一条记忆：按 old_summary 找到唯一一条，替换内容与摘要（保留原时间、过期日与会话）。Correct exactly one memory entry, found by its summary."
    )]
    async fn correct_memory(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<CorrectParams>,
    ) -> Result<String, String> {
        let req = CorrectRequest {
            name: p.name,
            category: p.category,
            old_summary: p.old_summary,
            new_content: p.new_content,
            new_summary: p.new_summary,
            memory_type: p.memory_type,
            tags: p.tags,
            target: None,
        };
        let traced = self.tracing().then(|| TracedCall::Correct {
            name: req.name.clone(),
            category: req.category.clone(),
            memory_type: req.memory_type.clone(),
            old_summary: req.old_summary.clone(),
            new_summary: req.new_summary.clone(),
        });
        let answer = self.run("correct_memory", &peer, move |e, c| e.correct_memory(&req, c)).await;
        self.trace(traced, &answer, &peer).await;
        answer
    }

    #[tool(
        description = "向 Engram 添加一个知识文件 knowledge/<filename>（自动补 .md），并在知识索引中登记摘要。Add a knowledge file and list it in the knowledge index."
    )]
    async fn add_knowledge(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<AddKnowledgeParams>,
    ) -> Result<String, String> {
        let traced = self
            .tracing()
            .then(|| TracedCall::AddKnowledge { name: p.name.clone(), filename: p.filename.clone() });
        let answer = self
            .run("add_knowledge", &peer, move |e, c| {
                e.add_knowledge(&p.name, &p.filename, &p.content, &p.summary, c)
            })
            .await;
        self.trace(traced, &answer, &peer).await;
        answer
    }

    #[tool(
        description = "安装 Engram：git URL、本地路径或 registry 中的名称。Install a pack from a git URL, a local path or a registry name."
    )]
    async fn install_engram(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<InstallParams>,
    ) -> Result<String, String> {
        self.run("install_engram", &peer, move |e, _| {
            e.install_engram(&p.source, &mut |_, _| {}).map(|said| said.zh)
        })
        .await
    }
}
