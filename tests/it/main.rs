//! Integration tests: the real `engram` binary driven over stdio by a real MCP client.

mod common;
mod compat;
mod concurrency;
mod engram_tools;
mod graph_tools;
mod lint;
mod personal_tools;
