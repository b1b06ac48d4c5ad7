//! Integration tests: the real `engram` binary driven over stdio by a real MCP client.

mod common;
mod compat;
mod concurrency;
mod corruption;
mod engram_tools;
mod fuzz;
mod http;
mod invariants;
mod limits;
mod lint;
mod security;
mod stress;
