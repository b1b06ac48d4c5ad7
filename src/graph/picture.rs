//! A picture of the graph for a person: which entities to draw and where.
//!
//! A small graph is drawn whole. A large one is drawn as a **neighbourhood**: one entity (the
//! chosen one, else the first search match, else the one with the most relations) and the
//! entities within two relations of it, nearest and best connected first, at most
//! [`MAX_NODES`], so 2,000 entities never become a hairball. Positions come from a small
//! force-directed layout (Fruchterman–Reingold) started from rings around the centre, with no
//! randomness: the same graph gives the same picture. Pure: no IO.

use std::collections::{HashMap, HashSet, VecDeque};

use super::snapshot::GraphSnapshot;

/// Entities drawn at most.
pub const MAX_NODES: usize = 80;
/// Relations drawn at most.
pub const MAX_EDGES: usize = 240;
/// Hops from the centre a neighbourhood reaches.
pub const HOPS: u8 = 2;
/// The drawing's width and height (the SVG's view box).
pub const WIDTH: f64 = 1000.0;
/// See [`WIDTH`].
pub const HEIGHT: f64 = 700.0;
/// Steps of the layout.
const STEPS: usize = 120;

/// One drawn entity (or a name a relation points at that is no entity).
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The name.
    pub name: String,
    /// Its type (empty for a name that is no entity).
    pub entity_type: String,
    /// Relations from the centre (0: the centre; 0 for every node of a whole graph).
    pub hop: u8,
    /// Its position, inside `0..WIDTH` × `0..HEIGHT`.
    pub x: f64,
    /// See `x`.
    pub y: f64,
}

/// One drawn relation, between two nodes by index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// Where it starts.
    pub from: usize,
    /// Where it ends.
    pub to: usize,
    /// Its type.
    pub relation_type: String,
}

/// What is drawn.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Picture {
    /// The nodes.
    pub nodes: Vec<Node>,
    /// The relations between them.
    pub edges: Vec<Edge>,
    /// The centre of a neighbourhood (`None`: the whole graph is drawn).
    pub center: Option<String>,
    /// Entities in the graph.
    pub total: usize,
    /// Entities within reach that were left out for [`MAX_NODES`].
    pub left_out: usize,
}

/// The picture of `graph`: whole when it has at most [`MAX_NODES`] names, otherwise the
/// neighbourhood of `focus` (when it is a name of the graph), else of the first of `matches`,
/// else of the entity with the most relations.
pub fn draw(graph: &GraphSnapshot, focus: Option<&str>, matches: &[&str]) -> Picture {
    // Every name with its neighbours (relations both ways), in graph order.
    let mut order: Vec<&str> = graph.entities().map(|e| e.name.as_str()).collect();
    let mut known: HashSet<&str> = order.iter().copied().collect();
    let mut adjacent: HashMap<&str, Vec<&str>> = HashMap::new();
    for r in graph.relations() {
        for (a, b) in [(r.from.as_str(), r.to.as_str()), (r.to.as_str(), r.from.as_str())] {
            adjacent.entry(a).or_default().push(b);
            if known.insert(a) {
                order.push(a);
            }
        }
    }
    let degree = |n: &str| adjacent.get(n).map_or(0, Vec::len);
    let total = graph.entity_count();
    let (chosen, hops, center, left_out) = if order.len() <= MAX_NODES {
        let hops = vec![0; order.len()];
        (order.clone(), hops, None, 0)
    } else {
        let start = focus
            .filter(|f| known.contains(f))
            .or_else(|| matches.iter().copied().find(|m| known.contains(m)))
            .or_else(|| order.iter().copied().max_by_key(|n| (degree(n), std::cmp::Reverse(*n))));
        let Some(start) = start else { return Picture { total, ..Picture::default() } };
        let (chosen, hops, left_out) = neighbourhood(start, &adjacent, &degree);
        (chosen, hops, Some(start.to_owned()), left_out)
    };
    let index: HashMap<&str, usize> = chosen.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let mut edges = Vec::new();
    let mut seen = HashSet::new();
    for r in graph.relations() {
        if edges.len() == MAX_EDGES {
            break;
        }
        let (Some(&from), Some(&to)) = (index.get(r.from.as_str()), index.get(r.to.as_str())) else {
            continue;
        };
        if seen.insert((from, to, r.relation_type.as_str())) {
            edges.push(Edge { from, to, relation_type: r.relation_type.clone() });
        }
    }
    let positions = layout(&hops, &edges);
    let nodes = chosen
        .iter()
        .zip(hops)
        .zip(positions)
        .map(|((name, hop), (x, y))| Node {
            name: (*name).to_owned(),
            entity_type: graph.entity(name).map(|e| e.entity_type.clone()).unwrap_or_default(),
            hop,
            x,
            y,
        })
        .collect();
    Picture { nodes, edges, center, total, left_out }
}

/// The names within [`HOPS`] of `start` (breadth first; at each hop the best connected first,
/// then by name), at most [`MAX_NODES`], with their hops and how many were left out.
fn neighbourhood<'g>(
    start: &'g str,
    adjacent: &HashMap<&'g str, Vec<&'g str>>,
    degree: &dyn Fn(&str) -> usize,
) -> (Vec<&'g str>, Vec<u8>, usize) {
    let mut chosen = vec![start];
    let mut hops = vec![0u8];
    let mut reached: HashSet<&str> = HashSet::from([start]);
    let mut frontier = VecDeque::from([start]);
    let mut left_out = 0;
    for hop in 1..=HOPS {
        let mut next: Vec<&str> = Vec::new();
        for n in frontier.drain(..) {
            for &m in adjacent.get(n).map(Vec::as_slice).unwrap_or_default() {
                if reached.insert(m) {
                    next.push(m);
                }
            }
        }
        next.sort_by(|a, b| degree(b).cmp(&degree(a)).then(a.cmp(b)));
        for m in next {
            if chosen.len() < MAX_NODES {
                chosen.push(m);
                hops.push(hop);
                frontier.push_back(m);
            } else {
                left_out += 1;
            }
        }
    }
    (chosen, hops, left_out)
}

/// Positions for nodes at `hops` joined by `edges`: rings by hop, then [`STEPS`] steps of
/// repulsion between every pair and attraction along edges, cooling as it goes; scaled into
/// the drawing with a margin.
fn layout(hops: &[u8], edges: &[Edge]) -> Vec<(f64, f64)> {
    let n = hops.len();
    if n == 0 {
        return Vec::new();
    }
    // Rings: each hop on its own circle, the nodes of a ring spread evenly.
    let mut ring_sizes: HashMap<u8, usize> = HashMap::new();
    for h in hops {
        *ring_sizes.entry(*h).or_default() += 1;
    }
    let whole = hops.iter().all(|h| *h == 0) && n > 1;
    let mut placed: HashMap<u8, usize> = HashMap::new();
    let mut pos: Vec<(f64, f64)> = hops
        .iter()
        .map(|h| {
            let k = placed.entry(*h).or_default();
            let i = *k as f64;
            *k += 1;
            let size = ring_sizes[h] as f64;
            let radius = if whole { 1.0 } else { f64::from(*h) };
            let angle = std::f64::consts::TAU * i / size + f64::from(*h) * 0.5;
            (radius * angle.cos(), radius * angle.sin())
        })
        .collect();
    let ideal = (4.0 / n as f64).sqrt().max(0.15);
    let mut heat = 0.3;
    for _ in 0..STEPS {
        let mut shift = vec![(0.0f64, 0.0f64); n];
        for i in 0..n {
            for j in i + 1..n {
                let (dx, dy) = (pos[i].0 - pos[j].0, pos[i].1 - pos[j].1);
                let d2 = (dx * dx + dy * dy).max(1e-4);
                let push = ideal * ideal / d2;
                shift[i].0 += dx * push;
                shift[i].1 += dy * push;
                shift[j].0 -= dx * push;
                shift[j].1 -= dy * push;
            }
        }
        for e in edges.iter().filter(|e| e.from != e.to) {
            let (dx, dy) = (pos[e.from].0 - pos[e.to].0, pos[e.from].1 - pos[e.to].1);
            let d = (dx * dx + dy * dy).sqrt().max(1e-3);
            let pull = d / ideal;
            shift[e.from].0 -= dx * pull;
            shift[e.from].1 -= dy * pull;
            shift[e.to].0 += dx * pull;
            shift[e.to].1 += dy * pull;
        }
        for (p, s) in pos.iter_mut().zip(&shift) {
            let len = (s.0 * s.0 + s.1 * s.1).sqrt();
            if len > 0.0 {
                let step = len.min(heat);
                p.0 += s.0 / len * step;
                p.1 += s.1 / len * step;
            }
        }
        heat *= 0.96;
    }
    // Into the drawing, the aspect kept, with room for the names.
    let (min_x, max_x) = pos.iter().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let (min_y, max_y) = pos.iter().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.1), b.max(p.1)));
    let margin = 60.0;
    let span = ((max_x - min_x) / (WIDTH - 2.0 * margin)).max((max_y - min_y) / (HEIGHT - 2.0 * margin));
    let scale = if span > 0.0 { 1.0 / span } else { 1.0 };
    let (cx, cy) = ((min_x + max_x) / 2.0, (min_y + max_y) / 2.0);
    pos.iter()
        .map(|p| {
            let x = WIDTH / 2.0 + (p.0 - cx) * scale;
            let y = HEIGHT / 2.0 + (p.1 - cy) * scale;
            ((x * 10.0).round() / 10.0, (y * 10.0).round() / 10.0)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{MemFiles, import_jsonl};

    fn graph(entities: &[&str], relations: &[(&str, &str)]) -> GraphSnapshot {
        let mut text = String::new();
        for n in entities {
            text.push_str(
                &serde_json::json!({"type": "entity", "name": n, "entityType": "thing", "observations": []})
                    .to_string(),
            );
            text.push('\n');
        }
        for (a, b) in relations {
            text.push_str(
                &serde_json::json!({"type": "relation", "from": a, "to": b, "relationType": "knows"})
                    .to_string(),
            );
            text.push('\n');
        }
        let mut files = MemFiles::new();
        files.apply(&import_jsonl(&text).changes);
        GraphSnapshot::build(&files).expect("memory files never fail")
    }

    #[test]
    fn a_small_graph_is_drawn_whole_inside_the_picture_and_the_same_every_time() {
        let g = graph(&["a", "b", "c"], &[("a", "b"), ("b", "c")]);
        let p = draw(&g, None, &[]);
        assert_eq!(p.nodes.len(), 3);
        assert_eq!(p.edges.len(), 2);
        assert_eq!(p.center, None);
        for n in &p.nodes {
            assert!((0.0..=WIDTH).contains(&n.x) && (0.0..=HEIGHT).contains(&n.y), "{n:?}");
        }
        assert_eq!(p, draw(&g, None, &[]), "deterministic");
        let (a, c) = (&p.nodes[0], &p.nodes[2]);
        assert!((a.x - c.x).abs() + (a.y - c.y).abs() > 100.0, "spread out: {p:?}");
    }

    #[test]
    fn a_large_graph_is_drawn_as_a_bounded_two_hop_neighbourhood() {
        // A chain of 300: the neighbourhood of n100 is n98..n102.
        let names: Vec<String> = (0..300).map(|i| format!("n{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let rels: Vec<(&str, &str)> = refs.windows(2).map(|w| (w[0], w[1])).collect();
        let g = graph(&refs, &rels);
        let p = draw(&g, Some("n100"), &[]);
        assert_eq!(p.center.as_deref(), Some("n100"));
        let mut drawn: Vec<&str> = p.nodes.iter().map(|n| n.name.as_str()).collect();
        drawn.sort_unstable();
        assert_eq!(drawn, ["n100", "n101", "n102", "n98", "n99"]);
        assert_eq!(p.edges.len(), 4);
        assert_eq!(p.total, 300);
        // A star of 500 around a hub: capped, the rest counted.
        let spokes: Vec<String> = (0..500).map(|i| format!("s{i}")).collect();
        let mut all: Vec<&str> = vec!["hub"];
        all.extend(spokes.iter().map(String::as_str));
        let rels: Vec<(&str, &str)> = spokes.iter().map(|s| ("hub", s.as_str())).collect();
        let p = draw(&graph(&all, &rels), None, &[]);
        assert_eq!(p.center.as_deref(), Some("hub"), "the best connected");
        assert_eq!(p.nodes.len(), MAX_NODES);
        assert_eq!(p.left_out, 500 - (MAX_NODES - 1));
    }
}
