//! Read-only serving: only tools annotated `read_only_hint = true` are listed and callable.
//!
//! The filter works on the tool annotations, so a toolset added later is
//! covered without changes here: annotate every reading tool of a new toolset
//! with `annotations(read_only_hint = true)`, leave writing tools unannotated.
//! As a second guard, a read-only server's store refuses every commit
//! (`StoreOptions::read_only`), so a mis-annotated tool fails instead of writing.

use super::EngramServer;

impl EngramServer {
    /// Keeps only the tools whose annotations say they do not modify anything.
    pub fn read_only(mut self) -> Self {
        let writing: Vec<String> = self
            .tool_router
            .list_all()
            .into_iter()
            .filter(|t| !is_reading(t))
            .map(|t| t.name.to_string())
            .collect();
        let router = std::sync::Arc::make_mut(&mut self.tool_router);
        for name in writing {
            router.remove_route(&name);
        }
        self
    }
}

/// Whether a tool is annotated as one that only reads (the rule of `--read-only` and of
/// read-only tokens).
pub(super) fn is_reading(tool: &rmcp::model::Tool) -> bool {
    tool.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true)
}
