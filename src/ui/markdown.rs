//! A pack file's Markdown (role, workflow, rules, indexes) as HTML, safely: pulldown-cmark's
//! events, with HTML comments (the templates' notes to the author) dropped and every other raw
//! HTML block or inline piece turned into text (escaped like any text), and link and image
//! targets kept only when they are relative or `http(s):` / `mailto:` (any other scheme,
//! `javascript:` first, becomes `#`). The page's Content-Security-Policy allows no inline script
//! and images from this server only, so even a missed case could not run or load.
//!
//! A code span that names one of the pack's files (`` `knowledge/topic.md` `` in an index)
//! becomes a link to that file's page.

use pulldown_cmark::{CowStr, Event, LinkType, Options, Parser, Tag, TagEnd, html};

/// A link or image target, or `#` when it is not a safe one.
fn safe_url(url: CowStr<'_>) -> CowStr<'_> {
    let lower = url.trim().to_ascii_lowercase();
    let scheme = lower.split_once(':').map(|(s, _)| s);
    let relative = scheme.is_none_or(|s| s.contains(['/', '?', '#']));
    if relative || matches!(scheme, Some("http" | "https" | "mailto")) { url } else { CowStr::from("#") }
}

/// `text` without its HTML comments (`<!-- … -->`; an unclosed one runs to the end).
fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<!--") {
        out.push_str(&rest[..start]);
        rest = match rest[start + 4..].find("-->") {
            Some(end) => &rest[start + 4 + end + 3..],
            None => "",
        };
    }
    out.push_str(rest);
    out
}

/// Where the files named in a text link to: `link(path)` answers the address of a file's
/// page, or `None` when `path` is not one of the pack's files.
pub(crate) type FileLinks<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The HTML of `markdown`, with no markup taken from the text itself.
#[cfg(test)]
pub(crate) fn render(markdown: &str) -> String {
    render_with(markdown, &|_| None)
}

/// The HTML of `markdown`, with no markup taken from the text itself; a code span that is a
/// file `links` knows becomes a link to it.
pub(crate) fn render_with(markdown: &str, links: FileLinks<'_>) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    // A raw HTML block comes line by line: gathered, its comments dropped, the rest as text.
    let mut block: Option<String> = None;
    let mut events = Vec::new();
    for e in Parser::new_ext(markdown, options) {
        match e {
            Event::Start(Tag::HtmlBlock) => block = Some(String::new()),
            Event::End(TagEnd::HtmlBlock) => {
                let text = without_comments(&block.take().unwrap_or_default());
                if !text.trim().is_empty() {
                    events.push(Event::Start(Tag::Paragraph));
                    events.push(Event::Text(CowStr::from(text.trim().to_owned())));
                    events.push(Event::End(TagEnd::Paragraph));
                }
            }
            Event::Html(t) | Event::InlineHtml(t) if block.is_some() => {
                block.get_or_insert_with(String::new).push_str(&t);
            }
            Event::Html(t) | Event::InlineHtml(t) => {
                let text = without_comments(&t);
                if !text.is_empty() {
                    events.push(Event::Text(CowStr::from(text)));
                }
            }
            Event::Code(code) => match links(&code) {
                Some(to) => {
                    let link = |end: bool| match end {
                        false => Event::Start(Tag::Link {
                            link_type: LinkType::Inline,
                            dest_url: CowStr::from(to.clone()),
                            title: CowStr::from(""),
                            id: CowStr::from(""),
                        }),
                        true => Event::End(TagEnd::Link),
                    };
                    events.extend([link(false), Event::Code(code), link(true)]);
                }
                None => events.push(Event::Code(code)),
            },
            Event::Start(Tag::Link { link_type, dest_url, title, id }) => {
                events.push(Event::Start(Tag::Link { link_type, dest_url: safe_url(dest_url), title, id }));
            }
            Event::Start(Tag::Image { link_type, dest_url, title, id }) => {
                events.push(Event::Start(Tag::Image { link_type, dest_url: safe_url(dest_url), title, id }));
            }
            other => events.push(other),
        }
    }
    let mut out = String::with_capacity(markdown.len() * 3 / 2);
    html::push_html(&mut out, events.into_iter());
    out
}

#[cfg(test)]
mod tests {
    use super::{render, render_with};

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

    #[test]
    fn comments_are_dropped_and_other_markup_stays_text() {
        let html = render(
            "## 知识索引\n\n<!-- 当知识文件较多时，\n建议分组 -->\n\ntext <!-- inline note --> after\n\n<div>kept <!-- gone --></div>\n",
        );
        assert!(
            !html.contains("知识文件较多") && !html.contains("inline note") && !html.contains("gone"),
            "{html}"
        );
        assert!(!html.contains("&lt;!--") && !html.contains("<!--"), "{html}");
        assert!(html.contains("text  after") || html.contains("text after"), "{html}");
        assert!(html.contains("&lt;div&gt;kept") && !html.contains("<div>"), "{html}");
    }

    #[test]
    fn a_code_span_naming_a_pack_file_links_to_it() {
        let links = |p: &str| (p == "knowledge/a.md").then(|| format!("/p/x/file?path={p}"));
        let html = render_with("- `knowledge/a.md` - one\n- `knowledge/missing.md` - two\n", &links);
        assert!(
            html.contains("<a href=\"/p/x/file?path=knowledge/a.md\"><code>knowledge/a.md</code></a>"),
            "{html}"
        );
        assert!(
            html.contains("<code>knowledge/missing.md</code>") && !html.contains("missing.md\"><"),
            "{html}"
        );
    }
}
