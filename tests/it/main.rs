//! Integration tests: the real `engram` binary driven over stdio by a real MCP client.

mod background_gc;
mod common;
mod compat;
mod concurrency;
mod corruption;
mod engram_tools;
mod fuzz;
mod graph_tools;
mod history;
mod history_cli;
mod http;
mod invariants;
mod limits;
mod lint;
mod load_freshness;
mod notes_tools;
mod pack_compat;
mod personal_tools;
mod search;
mod secrets;
mod security;
mod stress;
mod sync;
mod workspace_tools;
