//! The MCP server: tool and prompt definitions over [`crate::ops::Engram`].
//!
//! This is the only module that knows rmcp. Each tool is a thin async
//! function that moves its blocking work (git, files) to
//! `spawn_blocking` and maps errors to tool errors (`isError: true`) whose
//! text the model can act on.

mod access;
mod authoring_tools;
mod call_gate;
pub mod client;
mod engram_tools;
mod graph_tools;
mod history_tools;
pub mod http;
pub(crate) mod http_conn;
mod http_sessions;
mod notes_tools;
mod params;
mod personal_tools;
mod resources;
mod review_tools;
mod search_tools;
pub mod stdio;
mod sync_tools;
mod tool_json;
mod ui_tools;
pub mod users;
mod workspace_tools;

use std::sync::Arc;

use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, GetPromptRequestParams, GetPromptResponse, GetPromptResult,
    Implementation, ListPromptsResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams, Prompt,
    PromptMessage, ReadResourceRequestParams, ReadResourceResponse, Role, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler, ServiceExt, tool_handler};

use crate::ops::{Caller, Engram, EngramError, Personal, StructuredConfig, UserGraph};
pub use params::*;
pub use tool_json::{ToolOptions, dotted_name};

/// Name of the system prompt.
pub const SYSTEM_PROMPT_NAME: &str = "engram-system-prompt";

/// The toolsets a server can expose (`--tools engram,graph,…` or `all`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Toolset {
    /// The Engram tools (default).
    Engram,
    /// store / recall / forget notes (`notes_tools.rs`).
    Notes,
    /// Memory for a code workspace (`workspace_tools.rs`).
    Workspace,
    /// Sync status of packs shared through a git remote.
    Sync,
    /// `search_engram_knowledge`: knowledge and example passages of a pack.
    Knowledge,
    /// The knowledge-graph tools of the reference MCP memory server.
    Graph,
    /// Profile, entity and event tools of one user.
    Personal,
    /// `open_ui`: the local web page (`crate::ui`).
    Ui,
    /// Making and checking packs, the registry, statistics, tool traces (`authoring_tools.rs`).
    Authoring,
    /// `list_proposals`, `review_proposal`: reviewing proposal branches (`review_tools.rs`).
    Review,
}

impl Toolset {
    /// Every toolset, in the order `all` enables them.
    pub const ALL: &'static [Self] = &[
        Self::Engram,
        Self::Knowledge,
        Self::Notes,
        Self::Workspace,
        Self::Sync,
        Self::Graph,
        Self::Personal,
        Self::Ui,
        Self::Authoring,
        Self::Review,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Engram => "engram",
            Self::Notes => "notes",
            Self::Workspace => "workspace",
            Self::Sync => "sync",
            Self::Knowledge => "knowledge",
            Self::Graph => "graph",
            Self::Personal => "personal",
            Self::Ui => "ui",
            Self::Authoring => "authoring",
            Self::Review => "review",
        }
    }

    /// Parses a `--tools` list: comma-separated names, or `all`.
    pub fn parse_list(s: &str) -> Result<Vec<Self>, String> {
        let mut out: Vec<Self> = Vec::new();
        for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if name == "all" {
                out.extend_from_slice(Self::ALL);
                continue;
            }
            match Self::ALL.iter().find(|t| t.name() == name) {
                Some(t) => out.push(*t),
                None => {
                    let names: Vec<&str> = Self::ALL.iter().map(|t| t.name()).collect();
                    return Err(format!("unknown toolset {name:?}; available: {}, all", names.join(", ")));
                }
            }
        }
        if out.is_empty() {
            out.push(Self::Engram);
        }
        let mut seen = Vec::new();
        out.retain(|t| {
            if seen.contains(t) {
                false
            } else {
                seen.push(*t);
                true
            }
        });
        Ok(out)
    }
}

/// The engram MCP server.
#[derive(Clone)]
pub struct EngramServer {
    engram: Arc<Engram>,
    /// Shared by every clone: an HTTP session is a clone, and copying the routes cost each one kilobytes.
    tool_router: Arc<ToolRouter<Self>>,
    options: Arc<ToolOptions>,
    after_call: Option<Arc<dyn Fn() + Send + Sync>>,
    structured: Option<Arc<Structured>>,
    toolsets: Vec<Toolset>,
    /// With `--users-file`: each user's own server for the personal, graph and notes tools.
    users: Option<Arc<users::UserScopes>>,
    /// The caller's token is read-only: its calls write no automatic trace.
    untraced: bool,
    /// The caller's token is read-only: its calls make no commit of any kind (no
    /// proposal branch is brought up to date for it either).
    read_only_caller: bool,
    /// `--propose`: every tool write lands on the caller's proposal branch (otherwise only in
    /// packs whose `.git/config` sets `engram.propose`).
    propose: bool,
    /// The user of the request's token (`--users-file`), set per request: names its
    /// proposal branch.
    user: Option<String>,
    /// The graph pack and user of the graph and personal toolsets (`--graph-pack`, `--user`),
    /// also when those toolsets are off: the page `open_ui` starts shows them.
    graph_config: StructuredConfig,
}

/// Why a tool call failed: the tool's own error, or its task died (a panic).
#[derive(Debug)]
pub(crate) enum Failed<E> {
    /// The tool's error.
    Tool(E),
    /// The blocking task failed (a panic): what to tell the client.
    Task(String),
}

impl<E: std::fmt::Display> std::fmt::Display for Failed<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Tool(e) => e.fmt(f),
            Self::Task(message) => f.write_str(message),
        }
    }
}

/// The graph and personal tools of one user (see [`StructuredConfig`]).
pub struct Structured {
    graph: Arc<UserGraph>,
    personal: Personal,
}

impl Structured {
    /// The graph and personal tools of `config.user` in `config.pack`.
    pub fn new(engram: Arc<Engram>, config: StructuredConfig) -> Result<Self, EngramError> {
        let graph = Arc::new(UserGraph::new(engram, config)?);
        Ok(Self { personal: Personal::new(graph.clone()), graph })
    }

    /// The user's graph.
    pub fn graph(&self) -> &Arc<UserGraph> {
        &self.graph
    }
}

fn client_name(peer: &Peer<RoleServer>) -> Option<String> {
    peer.peer_info().map(|info| {
        let c = &info.client_info;
        format!("{} {}", c.name, c.version).trim().to_owned()
    })
}

impl EngramServer {
    /// A server over `engram` with the given toolsets.
    pub fn new(engram: Arc<Engram>, toolsets: &[Toolset]) -> Self {
        let structured = Structured::new(engram.clone(), StructuredConfig::default()).ok().map(Arc::new);
        Self::with_structured(engram, toolsets, structured)
    }

    /// A server whose graph and personal toolsets use `structured`.
    pub fn with_structured(
        engram: Arc<Engram>,
        toolsets: &[Toolset],
        structured: Option<Arc<Structured>>,
    ) -> Self {
        let mut tool_router = ToolRouter::new();
        for t in toolsets {
            match t {
                Toolset::Engram => {
                    tool_router.merge(Self::engram_tools());
                    tool_router.merge(Self::search_tools());
                    tool_router.merge(Self::history_tools());
                }
                Toolset::Knowledge => tool_router.merge(Self::knowledge_tools()),
                Toolset::Notes => tool_router.merge(Self::notes_tools()),
                Toolset::Workspace => tool_router.merge(Self::workspace_tools()),
                Toolset::Sync => tool_router.merge(Self::sync_tools()),
                Toolset::Graph => tool_router.merge(graph_tools::graph_tools()),
                Toolset::Personal => tool_router.merge(Self::personal_tools()),
                Toolset::Ui => tool_router.merge(Self::ui_tools()),
                Toolset::Authoring => tool_router.merge(Self::authoring_tools()),
                Toolset::Review => tool_router.merge(Self::review_tools()),
            }
        }
        Self {
            engram,
            tool_router: Arc::new(tool_router),
            options: Arc::default(),
            after_call: None,
            structured,
            toolsets: toolsets.to_vec(),
            users: None,
            untraced: false,
            read_only_caller: false,
            propose: false,
            user: None,
            graph_config: StructuredConfig::default(),
        }
    }

    /// The graph pack and user (`--graph-pack`, `--user`) the page of `open_ui` shows: the
    /// same as the graph and personal toolsets', whether or not they are served.
    pub fn with_graph_config(mut self, config: StructuredConfig) -> Self {
        self.graph_config = config;
        self
    }

    /// `--propose`: tool writes land on `proposals/<client>` (`proposals/<user>` with a users
    /// file) instead of the pack's branch, for review (`engram review`, the `review` tools).
    pub fn with_propose(mut self, on: bool) -> Self {
        self.propose = on;
        self
    }

    /// Who proposes in a call from `peer`: the token's user, else the MCP client's name.
    /// Nobody for a caller that may not write (a read-only token, a `--read-only` server):
    /// a proposer's reads first bring the pack's branch into its proposal branch (a commit),
    /// and a caller that may not write makes no commit, not even that one.
    fn proposer(&self, peer: &Peer<RoleServer>) -> Option<crate::store::Proposer> {
        if self.read_only_caller || self.engram.config().store.read_only {
            return None;
        }
        let name = match &self.user {
            Some(user) => user.clone(),
            None => peer.peer_info().map(|i| i.client_info.name.clone()).unwrap_or_default(),
        };
        Some(crate::store::Proposer {
            branch: crate::proposal::ProposalBranch::for_client(&name),
            always: self.propose,
        })
    }

    /// Serves many users (`--users-file`): the personal, graph and notes tools of a request
    /// act on the packs of its token's user (`users.rs`); `structured` names the graph
    /// pack (its `user` is replaced by each token's).
    pub fn with_users(mut self, structured: crate::ops::StructuredConfig) -> Self {
        self.users = Some(Arc::new(users::UserScopes::new(&self, structured)));
        self
    }

    /// The server a request runs on: for a user's token and one of the user's own tools,
    /// that user's server; otherwise this one.
    fn scoped(&self, identity: Option<&users::Identity>, tool: Option<&str>) -> Result<Self, EngramError> {
        match (&self.users, identity) {
            (Some(scopes), Some(id)) if tool.is_none_or(|t| scopes.is_own_tool(t)) => {
                scopes.server_for(&id.user, self)
            }
            _ => Ok(self.clone()),
        }
    }

    /// Sets the options of the notes and workspace toolsets (`--dotted-names` renames tools here).
    pub fn with_options(mut self, options: ToolOptions) -> Self {
        if options.dotted_names {
            let router = std::mem::take(Arc::make_mut(&mut self.tool_router));
            self.tool_router = Arc::new(tool_json::rename_dotted(router));
        }
        self.options = Arc::new(options);
        self
    }

    /// Calls `hook` after every tool call that succeeded (e.g. to push new commits in the background).
    /// The hook must return at once.
    pub fn with_after_call(mut self, hook: Arc<dyn Fn() + Send + Sync>) -> Self {
        self.after_call = Some(hook);
        self
    }

    /// How tool traces work in this server: what rules 7–8 of the system prompt say.
    fn trace_rules(&self) -> crate::ops::TraceRules {
        let names = self.tool_router.list_all();
        crate::ops::TraceRules {
            tool: names.iter().any(|t| t.name.ends_with("capture_tool_trace")),
            auto: self.engram.config().auto_trace,
        }
    }

    /// The names of the tools this server lists.
    pub fn tool_names(&self) -> Vec<String> {
        self.tool_router.list_all().into_iter().map(|t| t.name.to_string()).collect()
    }

    /// Runs a tool's blocking work (git, files) on a blocking thread with the tool's
    /// [`Caller`], then the after-call hook when it succeeded: the one wrapper of every
    /// toolset (text answers: [`EngramServer::run`]; JSON: `tool_json`; graph, personal).
    pub(crate) async fn call<T, E>(
        &self,
        tool: String,
        peer: &Peer<RoleServer>,
        f: impl FnOnce(&Caller) -> Result<T, E> + Send + 'static,
    ) -> Result<T, Failed<E>>
    where
        T: Send + 'static,
        E: Send + 'static,
    {
        let caller = Caller { tool, client: client_name(peer) };
        let proposer = self.proposer(peer);
        let outcome =
            match tokio::task::spawn_blocking(move || crate::store::proposing(proposer, || f(&caller))).await
            {
                Ok(outcome) => outcome.map_err(Failed::Tool),
                Err(e) => Err(Failed::Task(format!("internal error: the tool task failed: {e}"))),
            };
        self.finish(outcome)
    }

    /// Whether calls write automatic tool traces (`engram serve --auto-trace`).
    pub(crate) fn tracing(&self) -> bool {
        self.engram.config().auto_trace && !self.untraced
    }

    /// Writes the automatic trace of a call that answered `answer` (`call` is `None` when
    /// tracing is off), on a blocking thread and before the answer goes out, so the next
    /// call sees it. A trace that cannot be written is skipped: the answer stands.
    pub(crate) async fn trace(
        &self,
        call: Option<crate::ops::TracedCall>,
        answer: &Result<String, String>,
        peer: &Peer<RoleServer>,
    ) {
        let Some(call) = call else { return };
        // The trace reads only the start of an answer (a count, an empty file).
        let head = |a: &String| a.chars().take(40).collect::<String>();
        let answer = answer.as_ref().map(head).map_err(head);
        let (engram, client) = (self.engram.clone(), client_name(peer));
        let _ = tokio::task::spawn_blocking(move || {
            engram.auto_trace(&call, answer.as_deref().map_err(String::as_str), client)
        })
        .await;
    }

    /// Runs an Engram tool's work (see [`EngramServer::call`]); the answer is its text or its
    /// error's text.
    pub(crate) async fn run<F>(&self, tool: &str, peer: &Peer<RoleServer>, f: F) -> Result<String, String>
    where
        F: FnOnce(&Engram, &Caller) -> Result<String, EngramError> + Send + 'static,
    {
        let engram = self.engram.clone();
        self.call(tool.to_owned(), peer, move |c| f(&engram, c)).await.map_err(|e| e.to_string())
    }

    /// A tool's outcome, after the after-call hook when it succeeded.
    fn finish<T, E>(&self, outcome: Result<T, E>) -> Result<T, E> {
        if outcome.is_ok()
            && let Some(hook) = &self.after_call
        {
            hook();
        }
        outcome
    }

    /// Serves MCP over stdin/stdout until the client closes stdin.
    ///
    /// Lines are read by [`stdio::LineTransport`], which answers a line that is
    /// not a message (`-32700 Parse error`) instead of dropping it. When both
    /// are pipes (as MCP clients start servers), they are read and written
    /// through the runtime's event loop; tokio's `stdin`/`stdout` hand every
    /// read and write to a blocking thread, which costs two thread hand-offs
    /// per message.
    pub async fn serve_stdio(self) -> anyhow::Result<()> {
        #[cfg(unix)]
        if let Some((read, write)) = stdio_pipes() {
            let service = self.serve(stdio::LineTransport::new(read, write)).await?;
            service.waiting().await?;
            return Ok(());
        }
        let service = self.serve(stdio::LineTransport::new(tokio::io::stdin(), tokio::io::stdout())).await?;
        service.waiting().await?;
        Ok(())
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for EngramServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_prompts().enable_resources().build())
            .with_server_info(Implementation::new("engram", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "engram: git-native long-term memory. Call list_engrams, then load_engram(name, query); capture what should be remembered with capture_memory. Every write is a git commit.",
            )
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let prompt = Prompt::new(SYSTEM_PROMPT_NAME, Some(crate::ops::SYSTEM_PROMPT_DESCRIPTION), None);
        Ok(ListPromptsResult::with_all_items(vec![prompt]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.gated_call(request, context).await
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // rmcp lists by name; the graph tools keep the reference's order (after the others).
        let mut tools = self.tool_router.list_all();
        if identity(&context).is_some_and(|id| id.read_only) {
            tools.retain(access::is_reading);
        }
        if self.propose {
            // A proposing client may not accept or reject (`review_proposal` refuses it):
            // not offered, so it takes no place in a client's tool limit.
            tools.retain(|t| t.name != review_tools::SELF_REVIEW_TOOL);
        }
        let rank = |name: &str| crate::graph::TOOL_NAMES.iter().position(|n| *n == name).map_or(0, |i| i + 1);
        tools.sort_by_key(|t| rank(&t.name));
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(resources::list(&self.toolsets)))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let server = self
            .scoped(identity(&context).as_ref(), None)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        resources::read(&server.toolsets, server.structured.clone(), request.uri).await.map(Into::into)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if request.name != SYSTEM_PROMPT_NAME {
            return Err(ErrorData::invalid_params(format!("unknown prompt {:?}", request.name), None));
        }
        let engram = self.engram.clone();
        let traces = self.trace_rules();
        let text = tokio::task::spawn_blocking(move || engram.system_prompt_with(traces))
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
            .with_description(crate::ops::SYSTEM_PROMPT_DESCRIPTION)
            .into())
    }
}

/// The user of an HTTP request's token (`--users-file`), when there is one.
fn identity(context: &RequestContext<RoleServer>) -> Option<users::Identity> {
    context.extensions.get::<axum::http::request::Parts>()?.extensions.get::<users::Identity>().cloned()
}

/// Router type used by the toolsets (kept for the other toolset modules).
pub type EngramPromptRouter = PromptRouter<EngramServer>;

/// stdin and stdout as non-blocking pipes, when both are pipes (checked
/// first: making one of them non-blocking and then falling back to tokio's
/// blocking `stdin` would break it).
#[cfg(unix)]
fn stdio_pipes() -> Option<(tokio::net::unix::pipe::Receiver, tokio::net::unix::pipe::Sender)> {
    use std::os::fd::AsFd as _;
    use std::os::unix::fs::FileTypeExt as _;
    let is_pipe = |fd: std::os::fd::BorrowedFd<'_>| {
        fd.try_clone_to_owned()
            .ok()
            .and_then(|owned| std::fs::File::from(owned).metadata().ok())
            .is_some_and(|m| m.file_type().is_fifo())
    };
    let (stdin, stdout) = (std::io::stdin(), std::io::stdout());
    if !is_pipe(stdin.as_fd()) || !is_pipe(stdout.as_fd()) {
        return None;
    }
    let reader =
        tokio::net::unix::pipe::Receiver::from_owned_fd(stdin.as_fd().try_clone_to_owned().ok()?).ok()?;
    let writer =
        tokio::net::unix::pipe::Sender::from_owned_fd(stdout.as_fd().try_clone_to_owned().ok()?).ok()?;
    Some((reader, writer))
}
