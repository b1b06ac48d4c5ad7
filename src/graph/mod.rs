//! The knowledge-graph toolset: the nine tools of the reference MCP memory
//! server (`@modelcontextprotocol/server-memory`), same names, schemas and
//! results, stored as many small files in a pack.
//!
//! This module is pure: no git, no MCP, no filesystem. The core hands it
//! the files of the commit being modified ([`GraphFiles`]) and commits the
//! [`GraphChanges`] a write returns; reads run on a [`GraphSnapshot`] the
//! core builds once per commit and keeps current with
//! [`GraphSnapshot::apply`].
//!
//! # Using it
//!
//! ```
//! use engram::graph::{GraphCall, GraphSnapshot, MemFiles};
//! use serde_json::json;
//!
//! let mut files = MemFiles::new(); // the core: files of the head commit
//! let mut snapshot = GraphSnapshot::build(&files).unwrap();
//! let args = json!({"entities": [{"name": "张伟", "entityType": "person", "observations": ["喜欢喝咖啡"]}]});
//! match GraphCall::parse("create_entities", Some(&args)) {
//!     Some(Ok(GraphCall::Write(call))) => {
//!         let (output, changes) = call.run(&files, 1_763_769_600_000).unwrap();
//!         assert!(!output.is_error);
//!         files.apply(&changes); // the core: one commit
//!         snapshot.apply(&changes); // cached snapshot of the new commit
//!     }
//!     _ => unreachable!(),
//! }
//! let args = json!({"query": "咖啡"});
//! let Some(Ok(GraphCall::Read(call))) = GraphCall::parse("search_nodes", Some(&args)) else { unreachable!() };
//! assert!(call.run(&snapshot).text().contains("张伟"));
//! ```
//!
//! # Layout of the graph files
//!
//! Everything lives below `graph/` in the pack; every file is pretty JSON
//! (2-space indent, one observation / relation / name per line, final
//! newline), so diffs read well and two devices that add different
//! entities change different files and merge cleanly.
//!
//! ```text
//! graph/entities/<ss>/<slug>-<hash>.json   one entity
//! graph/relations/<ss>/<slug>-<hash>.json  the relations going out of one name
//! graph/incoming/<ss>/<slug>-<hash>.json   index: the names with a relation to one name
//! graph/unknown/<ss>/<hash>.json           an imported JSONL line that is no valid record
//! ```
//!
//! * `<hash>` is the 16-hex-digit FNV-1a 64 hash of the exact name's UTF-8
//!   bytes and `<ss>` its first two digits (256 shards, ~40 files each at
//!   10,000 entities). `<slug>` is a readable ASCII prefix of the name
//!   (letters and digits lower-cased, anything else collapsed to `-`, at
//!   most 40 bytes, left out when empty): file names are a pure, stable
//!   function of the name, contain only `[a-z0-9-.]`, cannot traverse
//!   (`..`, `/` become `-`), and differ for `Alice` and `alice` even on
//!   case-insensitive filesystems (the hash differs). Any name works:
//!   Chinese, emoji, spaces, the empty string.
//! * The name is also stored inside the file and is what identifies it. On
//!   a hash collision the next name goes to `…-<hash>-1.json`, `-2`, …
//!   (a probe chain with no gaps, see `tx.rs`).
//! * An entity file is
//!   `{"name", "entityType", "observations", …extra fields, "seq"}`. Extra
//!   fields (e.g. `id` and `attributes` written by the personal toolset, or
//!   unknown fields of an imported line) round-trip but are not shown by
//!   the nine tools; see [`Entity`]. `seq` orders the graph: the line number
//!   for imported records, `creation ms × 1000 + index` for new ones.
//! * A relation file is `{"from", "relations": [{"to", "relationType",
//!   "seq"}, …]}`, sorted by `(to, relationType)`. Relations live with their
//!   `from` name whether or not it is an entity (the reference has no
//!   referential integrity), so creating one touches this file and the
//!   `to` name's incoming index: O(1) files.
//! * The incoming index (`{"to", "from": [sorted names]}`) lets
//!   `delete_entities` find the relations pointing at a name without
//!   reading every relation file: a cascade touches only the affected
//!   files. It is derived data: [`GraphSnapshot::problems`] reports it when
//!   stale and [`GraphSnapshot::index_repair`] rebuilds it.
//!
//! A file that does not parse is skipped by every tool, never overwritten,
//! and reported ([`GraphProblem`]); the rest of the graph keeps working.

mod args;
mod call;
mod definitions;
mod entity_access;
mod error;
mod files;
mod jsonl;
mod key;
mod layout;
mod mem_files;
mod model;
mod output;
pub mod picture;
mod query;
mod record;
mod repair;
mod schema;
mod snapshot;
mod tools;
mod tx;
mod validate;

pub use args::{
    AddObservationsArgs, CreateEntitiesArgs, CreateRelationsArgs, DEFAULT_READ_LIMIT, DeleteEntitiesArgs,
    DeleteObservationsArgs, DeleteRelationsArgs, ObservationAddition, ObservationDeletion, OpenNodesArgs,
    ReadGraphArgs, SearchNodesArgs, ToolArgs,
};
pub use call::{GraphCall, ReadCall, TOOL_NAMES, WriteCall};
pub use definitions::{GRAPH_RESOURCE_URI, resource_definition, tool_definitions};
pub use entity_access::{read_entity, upsert_entity};
pub use error::GraphError;
pub use files::{GraphChanges, GraphFiles, GraphProblem, ProblemKind};
pub use jsonl::{GraphImport, ImportReport, export_jsonl, import_jsonl};
pub use key::{GRAPH_DIR, fnv1a64, fnv1a64_extend, fnv1a64_parts};
pub use mem_files::MemFiles;
pub use model::{Entity, Relation};
pub use output::ToolOutput;
pub use query::{GraphPage, GraphView};
pub use record::{
    EntityFile, IncomingFile, NamedRecord, RawLine, RelationEntry, RelationsFile, UnknownFile,
    is_reserved_entity_key,
};
pub use schema::{Field, Shape};
pub use snapshot::GraphSnapshot;
pub use tools::{
    add_observations, create_entities, create_relations, creation_seq, delete_entities, delete_observations,
    delete_relations, open_nodes, read_graph, read_resource, search_nodes,
};
