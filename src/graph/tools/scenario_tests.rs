//! A long pseudo-random scenario checked against a plain in-memory model of
//! the reference's semantics (with engram's de-duplication), through the
//! harness that also checks the cached snapshot after every write.

use serde_json::{Value, json};

use super::testing::Harness;
use crate::graph::model::{Entity, Relation};

const NAMES: [&str; 8] = ["张伟", "Alice", "alice", "🐱", "../x", "a b", "", "Ω"];
const WORDS: [&str; 5] = ["咖啡", "tea", "TEA", "ΣΊΣΥΦΟΣ", "x"];

/// A tiny deterministic generator (64-bit LCG).
struct Rng(u64);

impl Rng {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        usize::try_from(self.0 >> 33).unwrap_or(0) % n
    }
    fn name(&mut self) -> String {
        NAMES[self.next(NAMES.len())].to_owned()
    }
    fn word(&mut self) -> String {
        WORDS[self.next(WORDS.len())].to_owned()
    }
    fn words(&mut self) -> Vec<String> {
        (0..self.next(4)).map(|_| self.word()).collect()
    }
}

#[derive(Default, Clone)]
struct Model {
    entities: Vec<Entity>,
    relations: Vec<Relation>,
}

impl Model {
    fn graph(&self, entities: &[&Entity], relations: &[&Relation]) -> Value {
        json!({
            "entities": entities.iter().map(|e| e.to_reference_json()).collect::<Vec<_>>(),
            "relations": relations.iter().map(|r| r.to_reference_json()).collect::<Vec<_>>(),
        })
    }

    fn search(&self, query: &str) -> Value {
        let q = query.to_lowercase();
        let found: Vec<&Entity> = self
            .entities
            .iter()
            .filter(|e| {
                e.name.to_lowercase().contains(&q)
                    || e.entity_type.to_lowercase().contains(&q)
                    || e.observations.iter().any(|o| o.to_lowercase().contains(&q))
            })
            .collect();
        let relations: Vec<&Relation> = self
            .relations
            .iter()
            .filter(|r| found.iter().any(|e| e.name == r.from || e.name == r.to))
            .collect();
        self.graph(&found, &relations)
    }
}

fn dedup(items: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

#[test]
fn random_scenario_matches_the_model() {
    let mut rng = Rng(42);
    let mut h = Harness::new();
    let mut model = Model::default();
    let (mut peak_entities, mut peak_relations, mut errors) = (0, 0, 0);
    for _ in 0..400 {
        match rng.next(7) {
            0 => {
                let batch: Vec<Entity> = (0..1 + rng.next(3))
                    .map(|_| Entity {
                        name: rng.name(),
                        entity_type: rng.word(),
                        observations: rng.words(),
                        extra: serde_json::Map::new(),
                    })
                    .collect();
                h.call("create_entities", json!({ "entities": batch }));
                for e in batch {
                    if !model.entities.iter().any(|m| m.name == e.name) {
                        model.entities.push(Entity { observations: dedup(e.observations), ..e });
                    }
                }
            }
            1 => {
                let batch: Vec<Relation> = (0..1 + rng.next(3))
                    .map(|_| Relation { from: rng.name(), to: rng.name(), relation_type: rng.word() })
                    .collect();
                h.call("create_relations", json!({ "relations": batch }));
                for r in batch {
                    if !model.relations.contains(&r) {
                        model.relations.push(r);
                    }
                }
            }
            2 => {
                let items: Vec<(String, Vec<String>)> =
                    (0..1 + rng.next(2)).map(|_| (rng.name(), rng.words())).collect();
                let args: Vec<Value> =
                    items.iter().map(|(n, c)| json!({"entityName": n, "contents": c})).collect();
                let out = h.call("add_observations", json!({ "observations": args }));
                let mut next = model.clone();
                let mut missing = None;
                for (name, contents) in items {
                    let Some(entity) = next.entities.iter_mut().find(|e| e.name == name) else {
                        missing = Some(name);
                        break;
                    };
                    for content in contents {
                        if !entity.observations.contains(&content) {
                            entity.observations.push(content);
                        }
                    }
                }
                match missing {
                    Some(name) => {
                        errors += 1;
                        assert_eq!(out.text(), format!("Entity with name {name} not found"));
                    }
                    None => model = next,
                }
            }
            3 => {
                let names: Vec<String> = (0..1 + rng.next(2)).map(|_| rng.name()).collect();
                h.call("delete_entities", json!({ "entityNames": names }));
                model.entities.retain(|e| !names.contains(&e.name));
                model.relations.retain(|r| !names.contains(&r.from) && !names.contains(&r.to));
            }
            4 => {
                let (name, gone) = (rng.name(), rng.words());
                h.call(
                    "delete_observations",
                    json!({"deletions": [{"entityName": name, "observations": gone}]}),
                );
                if let Some(e) = model.entities.iter_mut().find(|e| e.name == name) {
                    e.observations.retain(|o| !gone.contains(o));
                }
            }
            5 => {
                let r = Relation { from: rng.name(), to: rng.name(), relation_type: rng.word() };
                h.call("delete_relations", json!({ "relations": [r] }));
                model.relations.retain(|m| *m != r);
            }
            _ => {
                let query = if rng.next(2) == 0 { rng.word() } else { rng.name() };
                let out = h.call("search_nodes", json!({ "query": query }));
                assert_eq!(out.structured_content, Some(model.search(&query)), "search {query:?}");
            }
        }
        let all = h.call("read_graph", json!({}));
        let entities: Vec<&Entity> = model.entities.iter().collect();
        let relations: Vec<&Relation> = model.relations.iter().collect();
        assert_eq!(all.structured_content, Some(model.graph(&entities, &relations)));
        assert!(h.snapshot.problems().is_empty(), "{:?}", h.snapshot.problems());
        peak_entities = peak_entities.max(model.entities.len());
        peak_relations = peak_relations.max(model.relations.len());
    }
    // The scenario exercised a populated graph and the error path.
    assert!(
        peak_entities >= 6 && peak_relations >= 10 && errors > 0,
        "{peak_entities} {peak_relations} {errors}"
    );
}
