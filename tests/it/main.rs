//! Integration tests: the real `engram` binary driven over stdio by a real MCP client.

mod common;
mod compat;
mod concurrency;
mod engram_tools;
mod history;
mod history_cli;
mod lint;
mod notes_tools;
mod search;
mod secrets;
mod sync;
mod workspace_tools;
