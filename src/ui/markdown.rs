//! A pack file's Markdown (role, workflow, rules, indexes) as HTML, safely: pulldown-cmark's
//! events, with every raw HTML block or inline piece turned into text (escaped like any text),
//! and link and image targets kept only when they are relative or `http(s):` / `mailto:` (any
//! other scheme, `javascript:` first, becomes `#`). The page's Content-Security-Policy allows no
//! inline script and images from this server only, so even a missed case could not run or load.

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, html};

/// A link or image target, or `#` when it is not a safe one.
fn safe_url(url: CowStr<'_>) -> CowStr<'_> {
    let lower = url.trim().to_ascii_lowercase();
    let scheme = lower.split_once(':').map(|(s, _)| s);
    let relative = scheme.is_none_or(|s| s.contains(['/', '?', '#']));
    if relative || matches!(scheme, Some("http" | "https" | "mailto")) { url } else { CowStr::from("#") }
}

/// The HTML of `markdown`, with no markup taken from the text itself.
pub(crate) fn render(markdown: &str) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let events = Parser::new_ext(markdown, options).map(|e| match e {
        Event::Html(t) | Event::InlineHtml(t) => Event::Text(t),
        Event::Start(Tag::Link { link_type, dest_url, title, id }) => {
            Event::Start(Tag::Link { link_type, dest_url: safe_url(dest_url), title, id })
        }
        Event::Start(Tag::Image { link_type, dest_url, title, id }) => {
            Event::Start(Tag::Image { link_type, dest_url: safe_url(dest_url), title, id })
        }
        other => other,
    });
    let mut out = String::with_capacity(markdown.len() * 3 / 2);
    html::push_html(&mut out, events);
    out
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn markdown_is_rendered_and_markup_in_it_is_text() {
        let html = render(
            "# 角色\n\n- **bold** item\n\n<script>alert(1)</script>\n\nand <img src=x onerror=alert(1)> inline",
        );
        assert!(html.contains("<h1>角色</h1>") && html.contains("<strong>bold</strong>"), "{html}");
        assert!(!html.contains("<script") && html.contains("&lt;script&gt;"), "{html}");
        assert!(!html.contains("<img") && html.contains("&lt;img"), "{html}");
    }

    #[test]
    fn only_safe_link_targets_are_kept() {
        let html = render(
            "[a](javascript:alert(1)) [b](https://example.org) [c](knowledge/x.md) [d](JaVaScRiPt&#58;alert(1)) ![e](data:image/png;base64,AAAA)",
        );
        assert!(!html.to_lowercase().contains("javascript"), "{html}");
        assert!(!html.contains("data:"), "{html}");
        assert!(
            html.contains("href=\"https://example.org\"") && html.contains("href=\"knowledge/x.md\""),
            "{html}"
        );
    }
}
