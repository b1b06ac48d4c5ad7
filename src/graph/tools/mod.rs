//! The nine tools. Write tools take the files of the commit being modified
//! and return the result plus the files to commit; read tools take a
//! [`crate::graph::GraphSnapshot`].

mod add_observations;
mod create_entities;
mod create_relations;
mod delete_entities;
mod delete_observations;
mod delete_relations;
mod incoming;
mod open_nodes;
mod read_graph;
mod search_nodes;
#[cfg(test)]
pub(crate) mod testing;

pub use add_observations::add_observations;
pub use create_entities::create_entities;
pub use create_relations::create_relations;
pub use delete_entities::delete_entities;
pub use delete_observations::delete_observations;
pub use delete_relations::delete_relations;
pub use open_nodes::open_nodes;
pub use read_graph::{read_graph, read_resource};
pub use search_nodes::search_nodes;

/// Returns the order key of the `index`-th record a call creates at
/// `now_ms` (milliseconds since the Unix epoch): `now_ms × 1000 + index`,
/// which stays below 2^53 (exact in JSON readers that use doubles) until
/// the year 2255. Imported records use their line number instead, so they
/// sort before anything created later.
pub fn creation_seq(now_ms: u64, index: usize) -> u64 {
    now_ms.saturating_mul(1000).saturating_add(u64::try_from(index).unwrap_or(u64::MAX))
}

/// Returns `items` without repeats, keeping the first of each.
fn dedup_keep_order(items: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::with_capacity(items.len());
    items.into_iter().filter(|item| seen.insert(item.clone())).collect()
}
#[cfg(test)]
mod scenario_tests;
