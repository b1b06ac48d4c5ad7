//! The notes toolset (`--tools notes`): store / recall / forget and categories.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{Peer, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::EngramServer;
use crate::ops::StoreNote;

/// `store`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct StoreParams {
    /// The note's text (markdown).
    pub content: String,
    /// A short name the note is found by. Strongly suggested; derived from the content when missing.
    #[serde(default)]
    pub title: Option<String>,
    /// Category (see list_categories); default `general`.
    #[serde(default)]
    pub category: Option<String>,
    /// 1 (trivia) … 5 (essential); default 3.
    #[serde(default)]
    pub importance: Option<i64>,
}

/// `recall`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RecallParams {
    /// Words to look for in titles and bodies; omit to list the newest notes.
    #[serde(default)]
    pub query: Option<String>,
    /// Only notes of this category.
    #[serde(default)]
    pub category: Option<String>,
    /// Most notes returned (default 10, at most 100).
    #[serde(default)]
    pub limit: Option<i64>,
}

/// `forget`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ForgetParams {
    /// The note's id (from store or recall).
    #[serde(default)]
    pub id: Option<String>,
    /// The note's title (exact, or a unique part of it).
    #[serde(default)]
    pub title: Option<String>,
}

/// `create_category`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CreateCategoryParams {
    /// Category name (becomes the directory notes/<name>/).
    pub name: String,
    /// What belongs in it.
    #[serde(default)]
    pub description: Option<String>,
}

#[tool_router(router = notes_tools, vis = "pub(super)")]
impl EngramServer {
    #[tool(
        description = "Store a note (one git commit). Give a short `title` — recall finds notes by title first; without one a title is derived from the content. Storing a title that already exists in the category updates that note. `category` must exist (list_categories; default `general`). 记一条笔记。",
        annotations(read_only_hint = false, idempotent_hint = true)
    )]
    async fn store(&self, peer: Peer<RoleServer>, Parameters(p): Parameters<StoreParams>) -> CallToolResult {
        let pack = self.options.notes_pack.clone();
        self.run_json("store", &peer, move |e, c| {
            let req = StoreNote {
                content: p.content,
                title: p.title,
                category: p.category,
                importance: p.importance,
            };
            e.notes(&pack).store(&req, c)
        })
        .await
    }

    #[tool(
        description = "Recall notes: title matches first, then body matches, then newest. Without `query`, lists the newest notes. 查找笔记。",
        annotations(read_only_hint = true)
    )]
    async fn recall(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<RecallParams>,
    ) -> CallToolResult {
        let pack = self.options.notes_pack.clone();
        self.run_json("recall", &peer, move |e, _| {
            let notes = e.notes(&pack).recall(p.query.as_deref(), p.category.as_deref(), p.limit)?;
            Ok::<_, crate::ops::NotesError>(json!({"count": notes.len(), "notes": notes}))
        })
        .await
    }

    #[tool(
        description = "Forget (delete) exactly one note, by `id` or by `title` (exact, or a unique part). When several match, the candidates are listed with their ids. One git commit; `git revert` brings it back. 删除一条笔记。"
    )]
    async fn forget(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<ForgetParams>,
    ) -> CallToolResult {
        let pack = self.options.notes_pack.clone();
        self.run_json("forget", &peer, move |e, c| {
            let (note, commit) = e.notes(&pack).forget(p.id.as_deref(), p.title.as_deref(), c)?;
            let message = format!("forgot note {} \"{}\" from {}", note.id, note.title, note.category);
            Ok::<_, crate::ops::NotesError>(json!({"forgotten": note, "commit": commit, "message": message}))
        })
        .await
    }

    #[tool(
        description = "List the note categories with their descriptions and note counts. 列出笔记分类。",
        annotations(read_only_hint = true)
    )]
    async fn list_categories(&self, peer: Peer<RoleServer>) -> CallToolResult {
        let pack = self.options.notes_pack.clone();
        self.run_json("list_categories", &peer, move |e, _| {
            let categories = e.notes(&pack).list_categories()?;
            Ok::<_, crate::ops::NotesError>(json!({"categories": categories}))
        })
        .await
    }

    #[tool(
        description = "Create a note category (or change its description). Names may be Chinese; no `/`, no leading `.` or `_`. 创建笔记分类。",
        annotations(idempotent_hint = true)
    )]
    async fn create_category(
        &self,
        peer: Peer<RoleServer>,
        Parameters(p): Parameters<CreateCategoryParams>,
    ) -> CallToolResult {
        let pack = self.options.notes_pack.clone();
        self.run_json("create_category", &peer, move |e, c| {
            let (category, created, commit) =
                e.notes(&pack).create_category(&p.name, p.description.as_deref(), c)?;
            Ok::<_, crate::ops::NotesError>(
                json!({"category": category, "created": created, "commit": commit}),
            )
        })
        .await
    }
}
