//! engram: a git-native memory server for AI agents.
//!
//! Packs (persona + knowledge + examples + memory) are git repositories; every
//! write an agent makes through the MCP tools is exactly one commit. See
//! `ARCHITECTURE.md` for the map of modules and the path from a tool call to a
//! commit.

// No unsafe code, but for one call that hands libgit2 its network timeout (`remote`).
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod cli;
pub mod frontmatter;
pub mod graph;
pub mod jsonfmt;
pub mod lang;
pub mod lint;
pub mod llm;
pub mod markdown_text;
pub mod mcp;
pub mod memlog;
pub mod memmerge;
pub mod memory;
pub mod ops;
pub mod pack;
pub mod pack_path;
pub mod pack_root;
pub mod packsearch;
pub mod proposal;
pub mod remote;
// Copied unchanged from the engine's scratch crate (formatted with rustfmt defaults there).
#[rustfmt::skip]
pub mod search;
pub mod searchbench;
pub mod secrets;
pub mod settings;
pub mod store;
pub mod templates;
pub mod timerange;
pub mod ui;
pub mod workspace_git;
