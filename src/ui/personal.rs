//! `/personal` (profile keys with their history, entities with their status, the events
//! timeline) and `/graph` (a picture, `graph.rs`, then entities and relations, searchable): read through the personal and
//! graph toolsets' operations (`Personal::query_profile`, `profile_history`, `list_entities`,
//! `search_events`; `UserGraph::call("read_graph" | "search_nodes")`), whose answers are the
//! tools' JSON, for the user and pack of `--user` / `--graph-pack`.

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{Value, json};

use super::html::{Lang, esc, page, url};
use super::pages::Ctx;
use super::{Failure, UiState, blocking};

/// Events shown at most.
const MAX_EVENTS: usize = 200;
/// Graph entities shown on one page.
const GRAPH_PAGE: i64 = 200;

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// A JSON value as short text: strings as they are, anything else as JSON.
fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "—".to_owned(),
        other => other.to_string(),
    }
}

fn filter_form(l: Lang, action: &str, fields: &[(&str, &'static str, Option<&str>)]) -> String {
    let mut out = format!("<form method=\"get\" action=\"{action}\" class=\"filter\" role=\"search\">");
    for (name, label, value) in fields {
        out.push_str(&format!(
            "<label for=\"f-{name}\">{}</label><input id=\"f-{name}\" name=\"{name}\" value=\"{}\"{}>",
            l.t(label),
            esc(value.unwrap_or_default()),
            if *name == "q" { " type=\"search\"" } else { "" }
        ));
    }
    out.push_str(&format!("<button type=\"submit\">{}</button></form>\n", l.t("filter")));
    out
}

/// `GET /personal?key=&q=&event_type=&time_range=`.
pub(crate) async fn personal_page(
    State(state): State<Arc<UiState>>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    let cx = Ctx::new(&headers, q.as_deref());
    let c = cx.clone();
    let read = blocking(move || {
        let p = state.personal()?;
        let profile = parse(&p.query_profile(None, None)?);
        let history = match c.get("key") {
            Some(k) => Some(parse(&p.profile_history(k, 20)?)),
            None => None,
        };
        let entities = parse(&p.list_entities(None, "all")?);
        let events =
            parse(&p.search_events(c.get("q"), c.get("event_type"), c.get("time_range"), MAX_EVENTS)?);
        Ok((profile, history, entities, events))
    })
    .await;
    let (profile, history, entities, events) = match read {
        Ok(r) => r,
        Err(f) => return cx.failure(&f, "/"),
    };
    let l = cx.lang;
    let mut body = format!("<h1>{}</h1>\n", l.t("personal"));
    // Profile.
    body.push_str(&format!(
        "<section id=\"profile\"><h2>{}</h2><table><thead><tr><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th></tr></thead><tbody>\n",
        l.t("profile"),
        l.t("key"),
        l.t("value"),
        l.t("category"),
        l.t("updated")
    ));
    let records = profile["profile"].as_array().cloned().unwrap_or_default();
    for r in &records {
        let key = show(&r["key"]);
        body.push_str(&format!(
            "<tr data-key=\"{k}\"><td><a href=\"/personal?key={u}#history\">{k}</a></td><td class=\"text\">{v}</td><td data-label=\"{lc}\">{c}</td><td data-label=\"{lu}\"><time>{t}</time></td></tr>\n",
            lc = l.t("category"),
            lu = l.t("updated"),
            k = esc(&key),
            u = url(&key),
            v = esc(&show(&r["value"])),
            c = esc(&show(&r["category"])),
            t = esc(&show(&r["updated_at"])),
        ));
    }
    body.push_str("</tbody></table>");
    if records.is_empty() {
        body.push_str(&format!("<p>{}</p>", l.t("nothing_yet")));
    }
    if let Some(h) = history {
        body.push_str(&format!(
            "<section id=\"history\"><h3>{} · <code>{}</code></h3><ol class=\"timeline\">",
            l.t("key_history"),
            esc(&show(&h["key"]))
        ));
        for e in h["history"].as_array().cloned().unwrap_or_default() {
            let value = if e["deleted"].as_bool() == Some(true) {
                l.t("deleted").to_owned()
            } else {
                show(&e["value"])
            };
            body.push_str(&format!(
                "<li><time>{}</time> <code>{}</code> <span class=\"text\">{}</span></li>",
                esc(&show(&e["committed_at"])),
                esc(&show(&e["commit"])),
                esc(&value)
            ));
        }
        body.push_str("</ol></section>");
    }
    body.push_str("</section>\n");
    // Entities.
    body.push_str(&format!(
        "<section id=\"entities\"><h2>{}</h2><table><thead><tr><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th></tr></thead><tbody>\n",
        l.t("entities"),
        l.t("name"),
        l.t("type"),
        l.t("status"),
        l.t("attributes"),
        l.t("updated")
    ));
    let list = entities["entities"].as_array().cloned().unwrap_or_default();
    for e in &list {
        let status = show(&e["status"]);
        body.push_str(&format!(
            "<tr data-entity=\"{id}\"><td>{n}</td><td data-label=\"{lt}\">{t}</td><td><span class=\"badge status-{s}\">{s}</span></td><td class=\"text\">{a}</td><td data-label=\"{lu}\"><time>{u}</time></td></tr>\n",
            lt = l.t("type"),
            lu = l.t("updated"),
            id = esc(&show(&e["id"])),
            n = esc(&show(&e["name"])),
            t = esc(&show(&e["entity_type"])),
            s = esc(&status),
            a = esc(&e["attributes"].as_object().map(|m| m.iter().map(|(k, v)| format!("{k}: {}", show(v))).collect::<Vec<_>>().join("; ")).unwrap_or_default()),
            u = esc(&show(&e["updated_at"])),
        ));
    }
    body.push_str("</tbody></table>");
    if list.is_empty() {
        body.push_str(&format!("<p>{}</p>", l.t("nothing_yet")));
    }
    body.push_str("</section>\n");
    // Events.
    body.push_str(&format!("<section id=\"events\"><h2>{}</h2>", l.t("events")));
    body.push_str(&filter_form(
        l,
        "/personal#events",
        &[
            ("q", "search", cx.get("q")),
            ("event_type", "type", cx.get("event_type")),
            ("time_range", "time_range", cx.get("time_range")),
        ],
    ));
    body.push_str(&format!(
        "<p class=\"muted\">{} / {}</p><ol class=\"timeline\">",
        events["count"].as_u64().unwrap_or(0),
        events["total"].as_u64().unwrap_or(0)
    ));
    let names: std::collections::HashMap<String, String> =
        list.iter().map(|e| (show(&e["id"]), show(&e["name"]))).collect();
    for e in events["events"].as_array().cloned().unwrap_or_default() {
        let related: Vec<String> = e["related_entity_ids"]
            .as_array()
            .map(|a| a.iter().map(|id| names.get(&show(id)).cloned().unwrap_or_else(|| show(id))).collect())
            .unwrap_or_default();
        body.push_str(&format!(
            "<li class=\"event\"><time>{}</time> <span class=\"badge\">{}</span> <span class=\"text\">{}</span>{}</li>",
            esc(&show(&e["timestamp"])),
            esc(&show(&e["event_type"])),
            esc(&show(&e["description"])),
            if related.is_empty() { String::new() } else { format!(" <span class=\"muted\">— {}</span>", esc(&related.join(", "))) }
        ));
    }
    body.push_str("</ol></section>\n");
    cx.html(StatusCode::OK, page(l, l.t("personal"), None, "/personal", &body))
}

/// `GET /graph?q=&offset=`: `search_nodes` for `q`, else `read_graph` a page at a time.
pub(crate) async fn graph_page(
    State(state): State<Arc<UiState>>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    let cx = Ctx::new(&headers, q.as_deref());
    let c = cx.clone();
    if cx.get("part").is_some() {
        // The picture and a node's panel alone, for the page's script to show in place.
        let read = blocking(move || {
            let graph = state.user_graph()?;
            Ok(graph.read(|snap| super::graph::drawing(snap, c.get("focus"), c.get("q")))?)
        })
        .await;
        return match read {
            Ok(d) => cx.html(StatusCode::OK, super::graph::render(cx.lang, &d, cx.get("q"))),
            Err(f) => cx.failure(&f, "/graph"),
        };
    }
    let read = blocking(move || {
        let graph = state.user_graph()?;
        let caller = UiState::caller("read_graph");
        let offset: i64 = c.get("offset").and_then(|o| o.parse().ok()).unwrap_or(0).max(0);
        let (tool, args) = match c.get("q") {
            Some(q) => ("search_nodes", json!({"query": q})),
            None => ("read_graph", json!({"offset": offset, "limit": GRAPH_PAGE})),
        };
        let out = graph
            .call(tool, Some(&args), &caller)
            .ok_or_else(|| Failure::bad_request(format!("no graph tool {tool}")))??;
        if out.is_error {
            return Err(Failure::bad_request(out.text().to_owned()));
        }
        let drawing = graph.read(|snap| super::graph::drawing(snap, c.get("focus"), c.get("q")))?;
        Ok((out.structured_content.unwrap_or(Value::Null), out.content.get(1).cloned(), offset, drawing))
    })
    .await;
    let (graph, note, offset, drawing) = match read {
        Ok(r) => r,
        Err(f) => return cx.failure(&f, "/"),
    };
    let l = cx.lang;
    let mut body = format!("<h1>{}</h1>\n", l.t("graph"));
    body.push_str(&filter_form(l, "/graph", &[("q", "search", cx.get("q"))]));
    body.push_str(&super::graph::render(l, &drawing, cx.get("q")));
    let entities = graph["entities"].as_array().cloned().unwrap_or_default();
    let relations = graph["relations"].as_array().cloned().unwrap_or_default();
    body.push_str(&format!(
        "<section id=\"graph-entities\"><h2>{} ({})</h2>",
        l.t("entities"),
        entities.len()
    ));
    if entities.is_empty() {
        body.push_str(&format!("<p>{}</p>", l.t("nothing_yet")));
    }
    for e in &entities {
        let obs: String = e["observations"]
            .as_array()
            .map(|a| a.iter().map(|o| format!("<li>{}</li>", esc(&show(o)))).collect())
            .unwrap_or_default();
        body.push_str(&format!(
            "<article class=\"entity memory\" data-name=\"{n}\"><div class=\"meta\"><span class=\"type\">{t}</span></div><h3 class=\"summary\">{n}</h3><ul class=\"text\">{obs}</ul></article>\n",
            n = esc(&show(&e["name"])),
            t = esc(&show(&e["entityType"])),
        ));
    }
    body.push_str(&format!(
        "</section><section id=\"relations\"><h2>{} ({})</h2><table><thead><tr><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th></tr></thead><tbody>",
        l.t("relations"),
        relations.len(),
        l.t("from"),
        l.t("relation"),
        l.t("to")
    ));
    for r in &relations {
        body.push_str(&format!(
            "<tr><td data-label=\"{}\">{}</td><td data-label=\"{}\">{}</td><td data-label=\"{}\">{}</td></tr>",
            l.t("from"),
            esc(&show(&r["from"])),
            l.t("relation"),
            esc(&show(&r["relationType"])),
            l.t("to"),
            esc(&show(&r["to"]))
        ));
    }
    body.push_str("</tbody></table></section>\n");
    if let Some(n) = note {
        body.push_str(&format!(
            "<p class=\"muted\">{}</p><nav class=\"pages\" aria-label=\"{}\"><a rel=\"next\" href=\"/graph?offset={}\">{}</a></nav>",
            esc(&n),
            l.t("page_nav"),
            offset + GRAPH_PAGE,
            l.t("next")
        ));
    }
    cx.html(StatusCode::OK, page(l, l.t("graph"), None, "/graph", &body))
}
