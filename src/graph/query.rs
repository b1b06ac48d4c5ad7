//! The three read queries over a [`GraphSnapshot`], with the reference's
//! selection rules: substring search, exact-name open, and (engram's
//! addition) paged reads.

use std::collections::{BTreeSet, HashSet};

use super::model::{Entity, Relation};
use super::output::ToolOutput;
use super::snapshot::{GraphSnapshot, Key};

/// When the selected names are more than one in this many relations, the
/// relations are found by one ordered scan of all relations instead of
/// merging the per-name indexes (each name costs two index lookups and a
/// few ordered inserts, a scan costs two hash lookups per relation).
const SCAN_RATIO: usize = 8;

/// A selection of the graph, in graph order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphView<'a> {
    /// Selected entities.
    pub entities: Vec<&'a Entity>,
    /// Selected relations.
    pub relations: Vec<&'a Relation>,
}

impl GraphView<'_> {
    /// Returns the reference's read/search/open result for this view.
    pub fn to_output(&self) -> ToolOutput {
        ToolOutput::graph(
            self.entities.iter().map(|e| e.to_reference_json()).collect(),
            self.relations.iter().map(|r| r.to_reference_json()).collect(),
        )
    }
}

/// One page of `read_graph`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphPage<'a> {
    /// The entities and relations of the page.
    pub view: GraphView<'a>,
    /// Index of the first entity of the page.
    pub offset: usize,
    /// Number of entities in the whole graph.
    pub total: usize,
}

impl GraphSnapshot {
    /// Returns the entities whose name, type or an observation contains
    /// `query` case-insensitively (JS `toLowerCase` on both sides, plain
    /// substring, `""` matches all), and every relation with either endpoint
    /// among them.
    pub fn search(&self, query: &str) -> GraphView<'_> {
        let needle = query.to_lowercase();
        let entities: Vec<&Entity> = if needle.contains('\0') {
            // `\0` separates the fields of the folded text: match per field.
            self.entities
                .values()
                .filter(|slot| slot.visible && field_match(&slot.file.entity, &needle))
                .map(|slot| &slot.file.entity)
                .collect()
        } else {
            self.entities
                .values()
                .filter(|slot| slot.visible && slot.folded.contains(needle.as_str()))
                .map(|slot| &slot.file.entity)
                .collect()
        };
        let relations = self.relations_touching(&entities);
        GraphView { entities, relations }
    }

    /// Returns the entities whose name is exactly one of `names`, and every
    /// relation with either endpoint among the entities found; unknown names
    /// are skipped.
    pub fn open(&self, names: &[String]) -> GraphView<'_> {
        let mut keys: BTreeSet<&Key> = BTreeSet::new();
        for name in names {
            if let Some(key) = self.by_name.get(name).and_then(BTreeSet::first) {
                keys.insert(key);
            }
        }
        let entities: Vec<&Entity> =
            keys.into_iter().filter_map(|key| self.entities.get(key)).map(|slot| &slot.file.entity).collect();
        let relations = self.relations_touching(&entities);
        GraphView { entities, relations }
    }

    /// Returns up to `limit` entities from `offset`, in graph order.
    ///
    /// A page that holds the whole graph (offset 0, no more than `limit`
    /// entities) has every relation, exactly as the reference's `read_graph`.
    /// Otherwise each relation is on exactly one page: the page of its
    /// `from` entity, else of its `to` entity, and relations with neither
    /// endpoint an entity are on the last page.
    pub fn page(&self, offset: usize, limit: usize) -> GraphPage<'_> {
        let total = self.entity_count();
        let entities: Vec<&Entity> = self.entities().skip(offset).take(limit).collect();
        let relations = if offset == 0 && total <= limit {
            self.relations().collect()
        } else {
            let on_page: HashSet<&str> = entities.iter().map(|e| e.name.as_str()).collect();
            let last_page = offset.saturating_add(limit) >= total;
            self.relations()
                .filter(|r| {
                    let anchor = if self.by_name.contains_key(&r.from) {
                        Some(r.from.as_str())
                    } else if self.by_name.contains_key(&r.to) {
                        Some(r.to.as_str())
                    } else {
                        None
                    };
                    anchor.map_or(last_page, |name| on_page.contains(name))
                })
                .collect()
        };
        GraphPage { view: GraphView { entities, relations }, offset, total }
    }

    /// Returns every relation whose `from` or `to` is one of `entities`'
    /// names, in graph order.
    fn relations_touching(&self, entities: &[&Entity]) -> Vec<&Relation> {
        if entities.len().saturating_mul(SCAN_RATIO) > self.relation_count() {
            let names: HashSet<&str> = entities.iter().map(|e| e.name.as_str()).collect();
            return self
                .relations()
                .filter(|r| names.contains(r.from.as_str()) || names.contains(r.to.as_str()))
                .collect();
        }
        let mut keys: BTreeSet<&Key> = BTreeSet::new();
        for entity in entities {
            if let Some(found) = self.by_from.get(&entity.name) {
                keys.extend(found);
            }
            if let Some(found) = self.by_to.get(&entity.name) {
                keys.extend(found);
            }
        }
        keys.into_iter().filter_map(|key| self.relations.get(key)).map(|slot| &slot.relation).collect()
    }
}

/// Matches `needle` (already lower-cased) against each field separately.
fn field_match(entity: &Entity, needle: &str) -> bool {
    entity.name.to_lowercase().contains(needle)
        || entity.entity_type.to_lowercase().contains(needle)
        || entity.observations.iter().any(|o| o.to_lowercase().contains(needle))
}
