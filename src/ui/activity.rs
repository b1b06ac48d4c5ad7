//! `/p/<pack>/activity`: commits per day over the last 90 days as an SVG bar chart, stacked
//! by client, and a table of who wrote what (client, commits, last write) — drawn in the
//! server from the pack's history ([`crate::ops::Engram::activity`]), no script, no CDN.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::html::{Lang, esc, page, url};
use super::pages::Ctx;
use super::{UiState, blocking};
use crate::ops::Activity;

/// Days the chart shows.
const DAYS: u32 = 90;
/// Clients drawn in their own colour; the others share the last one.
const PALETTE: [&str; 8] =
    ["#2f6fdf", "#e07b00", "#2a9d5c", "#b5179e", "#6c757d", "#c0392b", "#0097a7", "#8d6e63"];

/// The colour of each writer (by rank), the ninth and later sharing the last.
fn colour(rank: usize) -> &'static str {
    PALETTE[rank.min(PALETTE.len() - 1)]
}

/// The chart: one bar per day, stacked by client in the writers' order, scaled to the
/// busiest day; a `viewBox`, so it shrinks to a phone's width.
pub(crate) fn chart(a: &Activity, l: Lang) -> String {
    let (bar, gap, height) = (8.0_f64, 2.0_f64, 120.0_f64);
    let width = a.days.len() as f64 * (bar + gap);
    let max = a.busiest_day().max(1) as f64;
    let title = match l {
        Lang::Zh => format!("最近 {} 天每天的提交（按客户端）", a.days.len()),
        Lang::En => format!("Commits per day over the last {} days, by client", a.days.len()),
    };
    let mut svg = format!(
        "<svg id=\"activity-chart\" role=\"img\" aria-label=\"{t}\" viewBox=\"0 0 {w} {h}\" width=\"100%\" preserveAspectRatio=\"none\" class=\"chart\"><title>{t}</title>",
        t = esc(&title),
        w = width,
        h = height + 16.0
    );
    for (i, day) in a.days.iter().enumerate() {
        let x = i as f64 * (bar + gap);
        let mut y = height;
        let date = a.first_day + chrono::Duration::days(i as i64);
        for (rank, w) in a.writers.iter().enumerate() {
            let Some(&n) = day.get(&w.client) else { continue };
            let h = n as f64 / max * height;
            y -= h;
            let _ = write!(
                svg,
                "<rect class=\"bar\" x=\"{x}\" y=\"{y:.1}\" width=\"{bar}\" height=\"{h:.1}\" fill=\"{}\"><title>{date} · {}: {n}</title></rect>",
                colour(rank),
                esc(&w.client)
            );
        }
    }
    let last = a.first_day + chrono::Duration::days(a.days.len() as i64 - 1);
    let _ = write!(
        svg,
        "<text x=\"0\" y=\"{y}\" font-size=\"10\">{}</text><text x=\"{width}\" y=\"{y}\" font-size=\"10\" text-anchor=\"end\">{}</text></svg>",
        a.first_day,
        last,
        y = height + 12.0
    );
    svg
}

/// The table of who wrote what, each row with its colour.
fn writers_table(a: &Activity, l: Lang) -> String {
    let (client, commits, last) = match l {
        Lang::Zh => ("客户端", "提交", "最近一次写入"),
        Lang::En => ("Client", "Commits", "Last write"),
    };
    let mut t = format!(
        "<table id=\"writers\"><thead><tr><th>{client}</th><th>{commits}</th><th>{last}</th></tr></thead><tbody>"
    );
    for (rank, w) in a.writers.iter().enumerate() {
        let when = chrono::DateTime::<chrono::Utc>::from_timestamp(w.last, 0)
            .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
            .unwrap_or_default();
        let _ = write!(
            t,
            "<tr><td data-label=\"{client}\"><span class=\"swatch\" style=\"background:{}\"></span> {}</td><td data-label=\"{commits}\">{}</td><td data-label=\"{last}\">{when}</td></tr>",
            colour(rank),
            esc(&w.client),
            w.commits
        );
    }
    t.push_str("</tbody></table>");
    t
}

/// `GET /p/<pack>/activity`.
pub(crate) async fn activity(
    State(state): State<Arc<UiState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    let cx = Ctx::new(&headers, q.as_deref());
    let l = cx.lang;
    let n = name.clone();
    let read = blocking(move || Ok(state.engram.activity(&n, DAYS)?)).await;
    let a = match read {
        Ok(a) => a,
        Err(f) => return cx.failure(&f, &format!("/p/{}", url(&name))),
    };
    let heading = match l {
        Lang::Zh => "活动",
        Lang::En => "Activity",
    };
    let mut body = format!("<h1>{} · {heading}</h1>\n", esc(&name));
    if a.writers.is_empty() {
        body.push_str(match l {
            Lang::Zh => "<p class=\"muted\">最近 90 天没有提交。</p>",
            Lang::En => "<p class=\"muted\">No commits in the last 90 days.</p>",
        });
    } else {
        body.push_str(&chart(&a, l));
        body.push_str(&writers_table(&a, l));
    }
    let here = format!("/p/{}/activity", url(&name));
    cx.html(StatusCode::OK, page(l, heading, Some(&name), &here, &body))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::ops::Writer;

    #[test]
    fn the_chart_stacks_each_days_clients_scaled_to_the_busiest_day() {
        let day = |pairs: &[(&str, usize)]| {
            pairs.iter().map(|(c, n)| ((*c).to_owned(), *n)).collect::<BTreeMap<_, _>>()
        };
        let a = Activity {
            first_day: chrono::NaiveDate::from_ymd_opt(2026, 1, 1).expect("date"),
            days: vec![day(&[("cursor", 3), ("git", 1)]), day(&[]), day(&[("cursor", 2)])],
            writers: vec![
                Writer { client: "cursor".into(), commits: 5, last: 0 },
                Writer { client: "<git>".into(), commits: 1, last: 0 },
            ],
        };
        let svg = chart(&a, Lang::En);
        assert_eq!(svg.matches("<rect").count(), 2, "git is not a writer of this listing: {svg}");
        assert!(
            svg.contains("height=\"90.0\"") && svg.contains("2026-01-01") && svg.contains("2026-01-03"),
            "{svg}"
        );
        assert!(writers_table(&a, Lang::En).contains("&lt;git&gt;"), "escaped");
    }
}
