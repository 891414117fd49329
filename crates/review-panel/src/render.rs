//! A review's Markdown as the page shows it: sections, a table of contents,
//! and file references turned into links the page opens in its file view.
//!
//! GitHub-flavoured Markdown (tables, task lists, strikethrough, autolinks)
//! by comrak, fenced code highlighted by [`crate::highlight`]. The agent's
//! raw HTML is shown as text, never rendered (`render.escape`; `unsafe_` stays
//! off, so comrak also empties `javascript:`, `vbscript:`, `file:` and
//! non-image `data:` link targets).
//!
//! The document is cut into sections at every top-level heading, each with a
//! stable key (from its heading, made unique) and a hash of its HTML, so the
//! page can replace only the sections that changed and mark them.
//!
//! Each file reference ([`crate::references`]) is checked when rendered: a
//! missing file, one outside the base, or a line past its end is marked
//! broken with the reason as its title, and the page shows the reason when it
//! is clicked instead of following a dead link.

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::hash::{Hash as _, Hasher as _};
use std::path::Path;
use std::sync::Arc;

use comrak::html::{ChildRendering, Context, format_document_with_formatter, format_node_default};
use comrak::nodes::{AstNode, NodeValue};
use comrak::options::Plugins;
use comrak::{Arena, Options, parse_document};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Serialize;

use crate::files::{self, FileError};
use crate::highlight::{Highlighter, escape};
use crate::references::{self, FileReference};

/// One section of the rendered review.
#[derive(Debug, Clone, Serialize)]
pub struct Section {
    /// Stable across versions while the heading stays (`s-error-handling`); the element id.
    pub key: String,
    /// Changes whenever the section's HTML does.
    pub hash: String,
    /// The section's HTML.
    pub html: String,
}

/// One table-of-contents entry.
#[derive(Debug, Clone, Serialize)]
pub struct TocEntry {
    /// Heading level, 1 to 6.
    pub level: u8,
    /// The heading's text.
    pub text: String,
    /// The section it opens.
    pub key: String,
}

/// A rendered review.
#[derive(Debug, Clone, Serialize)]
pub struct Rendered {
    /// The sections, in order.
    pub sections: Vec<Section>,
    /// The headings.
    pub toc: Vec<TocEntry>,
}

/// Query-string escaping for file reference hrefs.
const QUERY: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~')
    .remove(b'/');

/// What file links resolve against.
struct Links<'r> {
    base: Option<&'r Path>,
    max_file_bytes: u64,
    line_counts: HashMap<String, Result<usize, FileError>>,
}

impl Links<'_> {
    /// Why the reference is broken, if it is.
    fn broken(&mut self, reference: &FileReference) -> Option<String> {
        let Some(base) = self.base else {
            return Some("the review has no usable base directory".to_owned());
        };
        let max = self.max_file_bytes;
        let count = self
            .line_counts
            .entry(reference.path.clone())
            .or_insert_with(|| {
                files::read_under(base, &reference.path, max).map(|file| file.line_count())
            });
        match count {
            Err(error) => Some(error.to_string()),
            Ok(count) => {
                let last = reference.end.or(reference.line).unwrap_or(0) as usize;
                (last > *count).then(|| {
                    format!(
                        "{} has {count} lines; line {last} is past its end",
                        reference.path
                    )
                })
            }
        }
    }
}

/// The page's href for a reference (also a plain link that works without
/// script, resolved against the latest version). It names no version, so a
/// section's HTML, and its hash, stay the same from one version to the next;
/// the page adds the version on screen when it opens the file.
pub fn reference_href(reference: &FileReference) -> String {
    let mut href = format!("/file?path={}", utf8_percent_encode(&reference.path, QUERY));
    if let Some(line) = reference.line {
        let _ = write!(href, "&line={line}");
    }
    if let Some(end) = reference.end {
        let _ = write!(href, "&end={end}");
    }
    if let Some(pattern) = &reference.pattern {
        let _ = write!(href, "&pattern={}", utf8_percent_encode(pattern, QUERY));
    }
    href
}

fn format_node<'a>(
    context: &mut Context<'_, '_, Links<'_>>,
    node: &'a AstNode<'a>,
    entering: bool,
) -> Result<ChildRendering, fmt::Error> {
    if let NodeValue::Link(link) = &node.data().value
        && let Some(reference) = references::parse(&link.url)
    {
        if entering {
            let broken = context.user.broken(&reference);
            let href = reference_href(&reference);
            let class = if broken.is_some() {
                "file-ref broken"
            } else {
                "file-ref"
            };
            let title = broken.unwrap_or_else(|| reference.path.clone());
            write!(
                context,
                "<a class=\"{class}\" href=\"{}\" title=\"{}\">",
                escape(&href),
                escape(&title)
            )?;
        } else {
            context.write_str("</a>")?;
        }
        return Ok(ChildRendering::HTML);
    }
    if let NodeValue::Link(link) = &node.data().value
        && !is_safe_link(&link.url)
    {
        // Comrak would keep the element with an empty href, which reloads
        // the page when clicked: keep only the text, and say why.
        context.write_str(if entering {
            "<a class=\"unsafe-link\" title=\"link removed: only http, https and mailto links are kept\">"
        } else {
            "</a>"
        })?;
        return Ok(ChildRendering::HTML);
    }
    format_node_default(context, node, entering)
}

/// Links other than file references keep their target only for `http:`,
/// `https:`, `mailto:` and in-page or relative targets.
fn is_safe_link(url: &str) -> bool {
    let url = url.trim();
    let Some((scheme, _)) = url.split_once(':') else {
        return true;
    };
    if scheme.contains(['/', '?', '#']) {
        return true;
    }
    matches!(
        scheme.to_ascii_lowercase().as_str(),
        "http" | "https" | "mailto"
    )
}

fn options() -> Options<'static> {
    let mut options = Options::default();
    options.extension.table = true;
    options.extension.tasklist = true;
    options.extension.strikethrough = true;
    options.extension.autolink = true;
    // The agent's raw HTML is shown as text; `unsafe_` stays false.
    options.render.escape = true;
    options.parse.broken_link_callback = Some(Arc::new(
        |reference: comrak::options::BrokenLinkReference<'_>| {
            references::rustdoc_reference(reference.original).map(|url| comrak::ResolvedReference {
                url,
                title: String::new(),
            })
        },
    ));
    options
}

/// Renders `markdown`; file references resolve against `base` (canonical).
pub fn render(markdown: &str, base: Option<&Path>, max_file_bytes: u64) -> Rendered {
    let options = options();
    let highlighter = Highlighter;
    let mut plugins = Plugins::default();
    plugins.render.codefence_syntax_highlighter = Some(&highlighter);
    let arena = Arena::new();
    let root = parse_document(&arena, markdown, &options);

    let mut links = Links {
        base,
        max_file_bytes,
        line_counts: HashMap::new(),
    };
    let mut sections: Vec<Section> = Vec::new();
    let mut toc = Vec::new();
    let mut used_keys: HashMap<String, usize> = HashMap::new();
    let mut current: Option<(String, String)> = None;
    for node in root.children() {
        let heading = match &node.data().value {
            NodeValue::Heading(heading) => Some(heading.level),
            _ => None,
        };
        if let Some(level) = heading {
            if let Some((key, html)) = current.take() {
                sections.push(section(key, html));
            }
            let text = node.collect_text();
            let key = unique_key(&slug(&text), &mut used_keys);
            toc.push(TocEntry {
                level,
                text: text.trim().to_owned(),
                key: key.clone(),
            });
            current = Some((key, String::new()));
        }
        let (_, html) = current.get_or_insert_with(|| ("s-top".to_owned(), String::new()));
        links = format_document_with_formatter(node, &options, html, &plugins, format_node, links)
            .unwrap_or_else(|_| unreachable!("writing to a String cannot fail"));
    }
    if let Some((key, html)) = current {
        sections.push(section(key, html));
    }
    Rendered { sections, toc }
}

fn section(key: String, html: String) -> Section {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    html.hash(&mut hasher);
    Section {
        key,
        hash: format!("{:016x}", hasher.finish()),
        html,
    }
}

fn slug(text: &str) -> String {
    let mut slug = String::from("s-");
    let mut dash = false;
    for character in text.trim().chars().flat_map(char::to_lowercase) {
        if character.is_alphanumeric() {
            slug.push(character);
            dash = false;
        } else if (character.is_whitespace() || character == '-' || character == '_') && !dash {
            slug.push('-');
            dash = true;
        }
    }
    let trimmed = slug.trim_end_matches('-');
    if trimmed.len() <= 2 {
        "s-section".to_owned()
    } else {
        trimmed.to_owned()
    }
}

fn unique_key(slug: &str, used: &mut HashMap<String, usize>) -> String {
    let count = used.entry(slug.to_owned()).or_insert(0);
    *count += 1;
    if *count == 1 {
        slug.to_owned()
    } else {
        format!("{slug}-{count}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn html(rendered: &Rendered) -> String {
        rendered
            .sections
            .iter()
            .map(|section| section.html.as_str())
            .collect()
    }

    #[test]
    fn markdown_is_cut_into_sections_with_a_table_of_contents() {
        let rendered = render(
            "Intro\n\n# Review\n\nText\n\n## Error Handling\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- [x] done\n\n## Error Handling\n",
            None,
            1024,
        );
        let keys: Vec<_> = rendered
            .sections
            .iter()
            .map(|section| section.key.as_str())
            .collect();
        assert_eq!(
            keys,
            [
                "s-top",
                "s-review",
                "s-error-handling",
                "s-error-handling-2"
            ]
        );
        assert_eq!(rendered.toc.len(), 3);
        assert_eq!(rendered.toc[1].text, "Error Handling");
        let all = html(&rendered);
        assert!(all.contains("<table>"), "{all}");
        assert!(all.contains("type=\"checkbox\""), "{all}");
    }

    #[test]
    fn raw_html_and_dangerous_links_are_inert() {
        let rendered = render(
            "<script>alert(1)</script>\n\n<img src=x onerror=alert(1)>\n\n[click](javascript:alert(1)) [x](JAVASCRIPT:alert(1))\n",
            None,
            1024,
        );
        let all = html(&rendered);
        assert!(!all.contains("<script"), "{all}");
        assert!(!all.contains("<img"), "{all}");
        assert!(!all.to_lowercase().contains("javascript:"), "{all}");
        assert!(all.contains("<a class=\"unsafe-link\""), "{all}");
        assert!(all.contains("&lt;script&gt;"), "{all}");
    }

    #[test]
    fn file_references_link_to_the_file_view_and_broken_ones_say_why() {
        let directory = tempfile::tempdir().unwrap();
        let base = directory.path().canonicalize().unwrap();
        std::fs::create_dir(base.join("src")).unwrap();
        std::fs::write(base.join("src/auth.ts"), "a\nb\nc\n").unwrap();
        let rendered = render(
            "[auth](src/auth.ts#L2) [`src/auth.ts:3`][] [gone](src/gone.ts) [far](src/auth.ts#L9) [p](src/auth.ts?validateUser) [out](../../etc/passwd) [web](https://example.com)",
            Some(&base),
            1024,
        );
        let all = html(&rendered);
        assert!(
            all.contains("<a class=\"file-ref\" href=\"/file?path=src/auth.ts&amp;line=2\""),
            "{all}"
        );
        assert!(
            all.contains("href=\"/file?path=src/auth.ts&amp;line=3\""),
            "{all}"
        );
        assert!(all.contains("<code>src/auth.ts:3</code></a>"), "{all}");
        assert!(all.contains("class=\"file-ref broken\" href=\"/file?path=src/gone.ts\" title=\"no such file: src/gone.ts\""), "{all}");
        assert!(all.contains("line 9 is past its end"), "{all}");
        assert!(all.contains("pattern=validateUser"), "{all}");
        assert!(
            all.contains("title=\"refused: `..` is not allowed"),
            "{all}"
        );
        assert!(
            all.contains("<a href=\"https://example.com\">web</a>"),
            "{all}"
        );
    }
}
