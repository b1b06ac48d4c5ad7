//! Dispatch of a `tools/call` by name: parse the raw arguments, then run
//! a write against the files or a read against a snapshot.

use serde_json::Value;

use super::args::{
    AddObservationsArgs, CreateEntitiesArgs, CreateRelationsArgs, DeleteEntitiesArgs, DeleteObservationsArgs,
    DeleteRelationsArgs, OpenNodesArgs, ReadGraphArgs, SearchNodesArgs, ToolArgs,
};
use super::error::GraphError;
use super::files::{GraphChanges, GraphFiles};
use super::output::ToolOutput;
use super::snapshot::GraphSnapshot;
use super::tools;

/// The nine tool names, in the reference's `tools/list` order.
pub const TOOL_NAMES: [&str; 9] = [
    "create_entities",
    "create_relations",
    "add_observations",
    "delete_entities",
    "delete_observations",
    "delete_relations",
    "read_graph",
    "search_nodes",
    "open_nodes",
];

/// A parsed call of a tool that changes the graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteCall {
    /// `create_entities`.
    CreateEntities(CreateEntitiesArgs),
    /// `create_relations`.
    CreateRelations(CreateRelationsArgs),
    /// `add_observations`.
    AddObservations(AddObservationsArgs),
    /// `delete_entities`.
    DeleteEntities(DeleteEntitiesArgs),
    /// `delete_observations`.
    DeleteObservations(DeleteObservationsArgs),
    /// `delete_relations`.
    DeleteRelations(DeleteRelationsArgs),
}

/// A parsed call of a tool that only reads the graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadCall {
    /// `read_graph`.
    ReadGraph(ReadGraphArgs),
    /// `search_nodes`.
    SearchNodes(SearchNodesArgs),
    /// `open_nodes`.
    OpenNodes(OpenNodesArgs),
}

/// A parsed call of one of the nine tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GraphCall {
    /// A call that changes the graph: run it inside a commit.
    Write(WriteCall),
    /// A call that only reads: run it on the snapshot of the head commit.
    Read(ReadCall),
}

fn parse<A: ToolArgs>(
    arguments: Option<&Value>,
    wrap: impl FnOnce(A) -> GraphCall,
) -> Result<GraphCall, ToolOutput> {
    A::parse(arguments).map(wrap)
}

impl GraphCall {
    /// Parses a call of `tool` with its raw `arguments` (`None` when the
    /// request had none).
    ///
    /// Returns `None` when `tool` is not a graph tool, and `Some(Err(_))`
    /// with the reference's validation error result when the arguments do
    /// not fit the tool's input schema.
    pub fn parse(tool: &str, arguments: Option<&Value>) -> Option<Result<Self, ToolOutput>> {
        use ReadCall as R;
        use WriteCall as W;
        Some(match tool {
            "create_entities" => parse(arguments, |a| Self::Write(W::CreateEntities(a))),
            "create_relations" => parse(arguments, |a| Self::Write(W::CreateRelations(a))),
            "add_observations" => parse(arguments, |a| Self::Write(W::AddObservations(a))),
            "delete_entities" => parse(arguments, |a| Self::Write(W::DeleteEntities(a))),
            "delete_observations" => parse(arguments, |a| Self::Write(W::DeleteObservations(a))),
            "delete_relations" => parse(arguments, |a| Self::Write(W::DeleteRelations(a))),
            "read_graph" => parse(arguments, |a| Self::Read(R::ReadGraph(a))),
            "search_nodes" => parse(arguments, |a| Self::Read(R::SearchNodes(a))),
            "open_nodes" => parse(arguments, |a| Self::Read(R::OpenNodes(a))),
            _ => return None,
        })
    }
}

impl WriteCall {
    /// Runs the call on the files of the commit being modified; `now_ms`
    /// (milliseconds since the Unix epoch) orders what it creates.
    ///
    /// Returns the tool result and the files to commit (empty when nothing
    /// changed, including on an `is_error` result).
    pub fn run(self, files: &dyn GraphFiles, now_ms: u64) -> Result<(ToolOutput, GraphChanges), GraphError> {
        match self {
            Self::CreateEntities(args) => tools::create_entities(files, args, now_ms),
            Self::CreateRelations(args) => tools::create_relations(files, args, now_ms),
            Self::AddObservations(args) => tools::add_observations(files, args),
            Self::DeleteEntities(args) => tools::delete_entities(files, args),
            Self::DeleteObservations(args) => tools::delete_observations(files, args),
            Self::DeleteRelations(args) => tools::delete_relations(files, args),
        }
    }
}

impl ReadCall {
    /// Runs the call on a snapshot.
    pub fn run(&self, snapshot: &GraphSnapshot) -> ToolOutput {
        match self {
            Self::ReadGraph(args) => tools::read_graph(snapshot, args),
            Self::SearchNodes(args) => tools::search_nodes(snapshot, args),
            Self::OpenNodes(args) => tools::open_nodes(snapshot, args),
        }
    }
}
