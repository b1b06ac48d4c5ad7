//! The picture on `/graph`: an SVG of entities and relations laid out in the server
//! ([`crate::graph::picture`]), the whole graph when small, else the neighbourhood of the chosen
//! entity (`?focus=`) or of the first search match (`?q=`), which are highlighted. A node is a
//! link to `?focus=<name>`, which draws around it and shows its observations and relations
//! (`#node-info`); `app.js` adds pan and zoom (drag, wheel, the +/−/reset buttons) and shows
//! a clicked node's panel in place (`?focus=<name>&part=1`: the picture and the panel alone;
//! the picture is kept when it is the whole graph, else the new one drawn around the node
//! replaces it). No script or style comes from elsewhere, so it works offline.

use std::collections::HashSet;

use super::html::{Lang, esc, url};
use crate::graph::picture::{HEIGHT, Picture, WIDTH};
use crate::graph::{Entity, GraphSnapshot, Relation};

/// What the graph page draws: the picture, the search matches, the chosen entity.
pub(crate) struct Drawing {
    picture: Picture,
    matches: HashSet<String>,
    focus: Option<(Entity, Vec<Relation>)>,
}

/// Most relations listed for the chosen entity.
const MAX_LISTED: usize = 200;

/// The drawing of `graph` for `?focus=` and `?q=`.
pub(crate) fn drawing(graph: &GraphSnapshot, focus: Option<&str>, q: Option<&str>) -> Drawing {
    let matched: Vec<&str> =
        q.map(|q| graph.search(q).entities.iter().map(|e| e.name.as_str()).collect()).unwrap_or_default();
    let picture = crate::graph::picture::draw(graph, focus, &matched);
    let focus = focus.and_then(|name| {
        let entity = graph.entity(name)?.clone();
        let view = graph.open(&[name.to_owned()]);
        let relations = view.relations.into_iter().take(MAX_LISTED).cloned().collect();
        Some((entity, relations))
    });
    Drawing { matches: matched.into_iter().map(str::to_owned).collect(), picture, focus }
}

/// The picture and the chosen entity's panel, as HTML.
pub(crate) fn render(l: Lang, d: &Drawing, q: Option<&str>) -> String {
    let p = &d.picture;
    let keep_q = q.map(|q| format!("&amp;q={}", url(q))).unwrap_or_default();
    let mut s = String::from("<section id=\"graph-view\">");
    let around = match &p.center {
        Some(c) => format!(
            " · {} <strong>{}</strong>{}",
            l.t("graph_around"),
            esc(c),
            if p.left_out > 0 {
                format!(" · {} {}", p.left_out, l.t("graph_left_out"))
            } else {
                String::new()
            }
        ),
        None => String::new(),
    };
    s.push_str(&format!(
        "<div class=\"graph-tools\"><button type=\"button\" class=\"zoom-in\" aria-label=\"{zi}\">+</button>\
<button type=\"button\" class=\"zoom-out\" aria-label=\"{zo}\">−</button>\
<button type=\"button\" class=\"zoom-reset\">{zr}</button>\
<span class=\"muted\" id=\"graph-count\">{n} / {t} {le}{around}</span></div>",
        zi = l.t("zoom_in"),
        zo = l.t("zoom_out"),
        zr = l.t("zoom_reset"),
        n = p.nodes.len(),
        t = p.total,
        le = l.t("entities"),
    ));
    s.push_str(&format!(
        "<svg id=\"graph-picture\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" data-view=\"0 0 {WIDTH} {HEIGHT}\"{whole} role=\"img\" aria-label=\"{}\">\
<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"19\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M 0 0 L 10 5 L 0 10 z\" class=\"arrow\"/></marker></defs><g class=\"edges\">",
        l.t("graph"),
        // The whole graph: the same picture whichever node is chosen.
        whole = if p.center.is_none() { " data-whole=\"1\"" } else { "" },
    ));
    for e in &p.edges {
        let (a, b) = (&p.nodes[e.from], &p.nodes[e.to]);
        s.push_str(&format!(
            "<line class=\"edge\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" marker-end=\"url(#arrow)\" data-from=\"{f}\" data-to=\"{t}\"><title>{f} — {r} → {t}</title></line>",
            a.x,
            a.y,
            b.x,
            b.y,
            f = esc(&a.name),
            t = esc(&b.name),
            r = esc(&e.relation_type),
        ));
    }
    s.push_str("</g><g class=\"nodes\">");
    let chosen = d.focus.as_ref().map(|(e, _)| e.name.as_str());
    for n in &p.nodes {
        let mut class = format!("node hop-{}", n.hop.min(2));
        if d.matches.contains(&n.name) {
            class.push_str(" match");
        }
        if Some(n.name.as_str()) == chosen {
            class.push_str(" chosen");
        }
        let label: String = n.name.chars().take(24).collect();
        let label = if label.len() < n.name.len() { format!("{label}…") } else { label };
        s.push_str(&format!(
            "<a href=\"/graph?focus={u}{keep_q}\" class=\"{class}\" data-name=\"{name}\"><circle cx=\"{x}\" cy=\"{y}\" r=\"{r}\"/><text x=\"{x}\" y=\"{ty}\">{label}</text><title>{name} ({ty_name})</title></a>",
            u = url(&n.name),
            name = esc(&n.name),
            x = n.x,
            y = n.y,
            r = if n.hop == 0 && p.center.is_some() { 11 } else { 8 },
            ty = n.y + 22.0,
            label = esc(&label),
            ty_name = esc(&n.entity_type),
        ));
    }
    s.push_str("</g></svg></section>\n");
    s.push_str(&panel(l, d, q));
    s
}

/// The chosen entity's panel (`#node-info`), empty when none is chosen.
fn panel(l: Lang, d: &Drawing, q: Option<&str>) -> String {
    let keep_q = q.map(|q| format!("&amp;q={}", url(q))).unwrap_or_default();
    let mut s = String::new();
    if let Some((e, relations)) = &d.focus {
        let obs: String = e.observations.iter().map(|o| format!("<li>{}</li>", esc(o))).collect();
        let rels: String = relations
            .iter()
            .map(|r| {
                let link = |n: &str| format!("<a href=\"/graph?focus={}{keep_q}\">{}</a>", url(n), esc(n));
                format!("<li>{} — {} → {}</li>", link(&r.from), esc(&r.relation_type), link(&r.to))
            })
            .collect();
        s.push_str(&format!(
            "<aside id=\"node-info\" data-name=\"{n}\"><h2>{n} <span class=\"type\">{t}</span></h2>\
<h3>{lo}</h3><ul class=\"observations text\">{obs}</ul><h3>{lr}</h3><ul class=\"relations\">{rels}</ul></aside>\n",
            n = esc(&e.name),
            t = esc(&e.entity_type),
            lo = l.t("observations"),
            lr = l.t("relations"),
        ));
    }
    s
}
