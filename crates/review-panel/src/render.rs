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
//! is clicked instead of following a dead link. Every spelling is resolved
//! once (no read) and every file read once, by canonical path, however many
//! ways it is spelled; the spellings and where they lead are kept with the
//! rendering ([`Rendered::references`]): they are the only files the page's
//! file view will open.
//!
//! **Bounded** ([`crate::Limits`]): only the first `max_markdown_bytes` of a
//! document are rendered; tables hold at most `max_table_cells` cells in all
//! (Markdown pads every row to its header's width, so a 20 KB review of wide
//! tables made 2 million cells); the parse stops after [`MAX_PARSE_STEPS`]
//! (the document is then shown as plain text); and the HTML stops growing at
//! `max_rendered_bytes` (content at seven eighths of it, later headings as
//! plain text in the rest). Every cut leaves a notice where it was made.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::fmt::{self, Write as _};
use std::hash::{Hash as _, Hasher as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use comrak::html::{ChildRendering, Context, format_document_with_formatter, format_node_default};
use comrak::nodes::{AstNode, NodeValue};
use comrak::options::Plugins;
use comrak::{Arena, Options, try_parse_document};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Serialize;

use crate::Limits;
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
    /// Every file reference's path as spelled, and where it leads: the only
    /// files the file view shows for this version.
    #[serde(skip)]
    pub references: HashMap<String, Result<PathBuf, FileError>>,
    /// What was cut to stay within the limits, as the notices say it.
    #[serde(skip)]
    pub cuts: Vec<String>,
}

impl Rendered {
    /// Roughly the heap this rendering holds, for the retained-bytes bound.
    pub fn weight(&self) -> usize {
        let sections: usize = self
            .sections
            .iter()
            .map(|section| section.key.len() + section.hash.len() + section.html.len() + 72)
            .sum();
        let toc: usize = self
            .toc
            .iter()
            .map(|entry| entry.key.len() + entry.text.len() + 56)
            .sum();
        let references: usize = self
            .references
            .iter()
            .map(|(spelling, target)| {
                spelling.len() + target.as_ref().map_or(64, |path| path.as_os_str().len()) + 96
            })
            .sum();
        sections + toc + references
    }
}

/// How many parse steps (a line, an inline or a node each) a render may take
/// before the document is shown as plain text instead. A 50-finding review
/// takes about 20 thousand; a million bounds the parse to about a second and
/// its syntax tree to tens of MiB.
pub const MAX_PARSE_STEPS: u32 = 1_000_000;

/// Longest section key made from a heading, in characters.
const MAX_SLUG_CHARS: usize = 64;

/// Longest heading text kept in the table of contents, in characters.
const MAX_HEADING_CHARS: usize = 200;

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
    /// Every spelling met, and where it leads (resolved once, nothing read).
    resolved: HashMap<String, Result<PathBuf, FileError>>,
    /// Every file met, and its line count: one read per file however it is spelled.
    line_counts: HashMap<PathBuf, Result<usize, FileError>>,
}

impl Links<'_> {
    /// Why the reference is broken, if it is.
    fn broken(&mut self, reference: &FileReference) -> Option<String> {
        let Some(base) = self.base else {
            return Some("the review has no usable base directory".to_owned());
        };
        let resolved = self
            .resolved
            .entry(reference.path.clone())
            .or_insert_with(|| files::resolve_under(base, &reference.path));
        let canonical = match resolved {
            Err(error) => return Some(error.to_string()),
            Ok(canonical) => canonical.clone(),
        };
        let max = self.max_file_bytes;
        let count = self
            .line_counts
            .entry(canonical)
            .or_insert_with_key(|canonical| {
                files::count_lines(base, canonical, &reference.path, max)
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

/// Renders `markdown`; file references resolve against `base` (canonical);
/// `limits` bound the work and the result.
pub fn render(markdown: &str, base: Option<&Path>, limits: &Limits) -> Rendered {
    let mut cuts = Vec::new();
    let source = cut_source(markdown, limits.max_markdown_bytes, &mut cuts);
    let source_notice = cuts.first().cloned();
    let source = limit_tables(source, limits.max_table_cells, &mut cuts);
    let options = options();
    let highlighter = Highlighter;
    let mut plugins = Plugins::default();
    plugins.render.codefence_syntax_highlighter = Some(&highlighter);
    let arena = Arena::new();
    // Comrak asks every 256 steps whether to stop.
    let asked = Cell::new(0_u32);
    let parsed = try_parse_document(&arena, &source, &options, &|| {
        asked.set(asked.get() + 1);
        asked.get() > MAX_PARSE_STEPS / 256
    });
    let Ok(root) = parsed else {
        return plain_text(&source, limits.max_rendered_bytes, cuts);
    };
    let links = Links {
        base,
        max_file_bytes: limits.max_file_bytes,
        resolved: HashMap::new(),
        line_counts: HashMap::new(),
    };
    let mut rendered = render_blocks(root, &options, &plugins, links, limits, cuts);
    if let Some(notice) = source_notice {
        let mut recorded_already = Vec::new();
        append_notice(&mut rendered.sections, notice, &mut recorded_already);
    }
    rendered
}

/// Renders the document's top-level blocks into sections, within
/// `limits.max_rendered_bytes`.
fn render_blocks<'a>(
    root: &'a AstNode<'a>,
    options: &Options<'_>,
    plugins: &Plugins<'_>,
    mut links: Links<'_>,
    limits: &Limits,
    mut cuts: Vec<String>,
) -> Rendered {
    let mut sections: Vec<Section> = Vec::new();
    let mut toc = Vec::new();
    let mut used_keys: HashSet<String> = HashSet::new();
    // The open section: key, HTML, whether the cut was made in it.
    let mut current: Option<(String, String, bool)> = None;
    let mut rendered_bytes = 0_usize;
    let budget = limits.max_rendered_bytes;
    // Content stops here; the last eighth is for later headings, as plain
    // text, so the table of contents stays whole as far as it can.
    let content_budget = budget - budget / 8;
    let mut cut = false;
    let mut dropped_headings = 0_usize;
    let cut_notice = format!(
        "The panel cut the review here: the rest of this section and the content of every later \
         section are not shown, because the rendered review reached the panel's limit of {}. \
         Shorten the review to see it all.",
        human_bytes(budget)
    );
    for node in root.children() {
        let heading = match &node.data().value {
            NodeValue::Heading(heading) => Some(heading.level),
            _ => None,
        };
        if let Some(level) = heading {
            let text = node.collect_text();
            let text = shorten(text.trim(), MAX_HEADING_CHARS);
            let html = if cut {
                format!("<h{level}>{}</h{level}>\n", escape(&text))
            } else {
                let (html, rest) = format_block(node, options, plugins, links);
                links = rest;
                html
            };
            if rendered_bytes + html.len() > budget {
                dropped_headings += 1;
                continue;
            }
            if let Some((key, html, cut_here)) = current.take() {
                sections.push(section(key, with_notice(html, cut_here, &cut_notice)));
            }
            let key = unique_key(&slug(&text), &mut used_keys);
            toc.push(TocEntry {
                level,
                text,
                key: key.clone(),
            });
            rendered_bytes += html.len();
            current = Some((key, html, false));
            continue;
        }
        let (_, html, cut_here) = current.get_or_insert_with(|| {
            used_keys.insert("s-top".to_owned());
            ("s-top".to_owned(), String::new(), false)
        });
        if cut {
            continue;
        }
        let (block, rest) = format_block(node, options, plugins, links);
        links = rest;
        if rendered_bytes + block.len() > content_budget {
            // This block and every later one are left out: the cut is here.
            cut = true;
            *cut_here = true;
            continue;
        }
        rendered_bytes += block.len();
        html.push_str(&block);
    }
    if let Some((key, html, cut_here)) = current {
        sections.push(section(key, with_notice(html, cut_here, &cut_notice)));
    }
    if cut {
        cuts.push(cut_notice);
    }
    if dropped_headings > 0 {
        let notice = format!(
            "{dropped_headings} more heading{} past the panel's limit of {} not shown.",
            if dropped_headings == 1 {
                " is"
            } else {
                "s are"
            },
            human_bytes(budget)
        );
        append_notice(&mut sections, notice, &mut cuts);
    }
    Rendered {
        sections,
        toc,
        references: links.resolved,
        cuts,
    }
}

/// One block's HTML, and the links state back.
fn format_block<'a, 'r>(
    node: &'a AstNode<'a>,
    options: &Options<'_>,
    plugins: &Plugins<'_>,
    links: Links<'r>,
) -> (String, Links<'r>) {
    let mut html = String::new();
    let links =
        format_document_with_formatter(node, options, &mut html, plugins, format_node, links)
            .unwrap_or_else(|_| unreachable!("writing to a String cannot fail"));
    (html, links)
}

/// Adds a notice at the end of the last section, and records it in `cuts`.
fn append_notice(sections: &mut [Section], notice: String, cuts: &mut Vec<String>) {
    if let Some(last) = sections.last_mut() {
        let html = format!("{}{}", last.html, notice_html(&notice));
        *last = section(std::mem::take(&mut last.key), html);
    }
    cuts.push(notice);
}

/// A notice paragraph.
fn notice_html(text: &str) -> String {
    format!(
        "<p class=\"panel-notice\" role=\"note\">{}</p>\n",
        escape(text)
    )
}

/// The section's HTML, with the cut notice when the cut was made in it.
fn with_notice(mut html: String, cut_here: bool, notice: &str) -> String {
    if cut_here {
        html.push_str(&notice_html(notice));
    }
    html
}

/// The first `max_bytes` of `markdown`, cut at a line's end, with a notice
/// recorded when anything was cut.
fn cut_source<'m>(markdown: &'m str, max_bytes: usize, cuts: &mut Vec<String>) -> &'m str {
    if markdown.len() <= max_bytes {
        return markdown;
    }
    let mut end = max_bytes;
    while !markdown.is_char_boundary(end) {
        end -= 1;
    }
    if let Some(newline) = markdown[..end].rfind('\n') {
        end = newline + 1;
    }
    cuts.push(format!(
        "The review is {} long; the panel shows its first {} and cut the rest here.",
        human_bytes(markdown.len()),
        human_bytes(max_bytes)
    ));
    &markdown[..end]
}

/// The document as plain text, when it is too complex to render.
fn plain_text(source: &str, max_bytes: usize, mut cuts: Vec<String>) -> Rendered {
    let notice = format!(
        "This review is too complex for the panel to render (more than {MAX_PARSE_STEPS} Markdown \
         elements); it is shown as plain text."
    );
    let mut end = source.len().min(max_bytes / 2);
    while !source.is_char_boundary(end) {
        end -= 1;
    }
    let mut html = notice_html(&notice);
    cuts.push(notice);
    let _ = write!(html, "<pre class=\"code\">{}</pre>", escape(&source[..end]));
    if end < source.len() {
        let cut = format!(
            "The panel cut the text here: it shows {} of the review.",
            human_bytes(end)
        );
        html.push_str(&notice_html(&cut));
        cuts.push(cut);
    }
    Rendered {
        sections: vec![section("s-top".to_owned(), html)],
        toc: Vec::new(),
        references: HashMap::new(),
        cuts,
    }
}

/// `2 MiB`, `512 KiB`, `100 bytes`.
fn human_bytes(bytes: usize) -> String {
    if bytes >= 1024 * 1024 && bytes.is_multiple_of(1024 * 1024) {
        format!("{} MiB", bytes / (1024 * 1024))
    } else if bytes >= 1024 {
        format!("{} KiB", bytes.div_ceil(1024))
    } else {
        format!("{bytes} bytes")
    }
}

/// At most `max` characters of `text`, with `…` when cut.
fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((index, _)) => format!("{}…", &text[..index]),
        None => text.to_owned(),
    }
}

/// A line with its containers (`>` quotes, list markers, indentation) taken off,
/// as far as telling a table apart needs.
fn without_containers(line: &str) -> &str {
    let mut rest = line;
    loop {
        let trimmed = rest.trim_start();
        if let Some(after) = trimmed.strip_prefix('>') {
            rest = after;
            continue;
        }
        let bullet = trimmed
            .strip_prefix(['-', '*', '+'])
            .filter(|after| after.starts_with([' ', '\t']));
        let digits = trimmed.len()
            - trimmed
                .trim_start_matches(|c: char| c.is_ascii_digit())
                .len();
        let ordered = (digits > 0 && digits <= 9)
            .then(|| trimmed[digits..].strip_prefix(['.', ')']))
            .flatten()
            .filter(|after| after.starts_with([' ', '\t']));
        match bullet.or(ordered) {
            Some(after) => rest = after,
            None => return trimmed.trim_end(),
        }
    }
}

/// The number of columns of a table's delimiter row (`|---|:-:|`), or `None`.
fn delimiter_columns(line: &str) -> Option<usize> {
    if !line.contains('|')
        || !line.contains('-')
        || !line
            .chars()
            .all(|c| matches!(c, '|' | '-' | ':' | ' ' | '\t'))
    {
        return None;
    }
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    Some(inner.split('|').count())
}

/// `markdown` with its tables holding at most `max_cells` cells in all: the
/// rows past the budget are left out, with a notice where they were.
fn limit_tables<'m>(markdown: &'m str, max_cells: usize, cuts: &mut Vec<String>) -> Cow<'m, str> {
    let lines: Vec<&str> = markdown.split_inclusive('\n').collect();
    let mut output: Option<String> = None;
    let mut cells = 0_usize;
    let mut fence: Option<&str> = None;
    let mut index = 0;
    while index < lines.len() {
        let line = without_containers(lines[index]);
        if let Some(marker) = fence {
            if line.starts_with(marker) {
                fence = None;
            }
        } else if line.starts_with("```") || line.starts_with("~~~") {
            fence = Some(&line[..3]);
        } else if line.contains('|')
            && let Some(columns) = lines
                .get(index + 1)
                .and_then(|next| delimiter_columns(without_containers(next)))
        {
            let rows_start = index + 2;
            let mut rows_end = rows_start;
            while rows_end < lines.len() {
                let row = without_containers(lines[rows_end]);
                if row.is_empty() || row.starts_with('#') {
                    break;
                }
                rows_end += 1;
            }
            let rows = rows_end - rows_start;
            let left = max_cells.saturating_sub(cells);
            let (kept_lines, notice) = if columns > left {
                (
                    0,
                    Some(format!(
                        "⚠ The panel left out a table here: its {columns} columns and {rows} rows are past \
                         the panel's limit of {max_cells} table cells in a review."
                    )),
                )
            } else {
                let kept_rows = rows.min((left - columns) / columns.max(1));
                let notice = (kept_rows < rows).then(|| {
                    format!(
                        "⚠ The panel cut the table above here: {} of its {rows} rows are not shown \
                         (the panel shows at most {max_cells} table cells in a review, and every row \
                         has the header's {columns} cells).",
                        rows - kept_rows
                    )
                });
                (2 + kept_rows, notice)
            };
            cells += columns * (kept_lines.saturating_sub(1));
            if let Some(notice) = notice {
                let output = output.get_or_insert_with(|| lines[..index].concat());
                for kept in &lines[index..index + kept_lines] {
                    output.push_str(kept);
                }
                if !output.is_empty() && !output.ends_with('\n') {
                    output.push('\n');
                }
                let _ = write!(output, "\n*{notice}*\n\n");
                cuts.push(notice);
            } else if let Some(output) = &mut output {
                for kept in &lines[index..rows_end] {
                    output.push_str(kept);
                }
            }
            index = rows_end;
            continue;
        }
        if let Some(output) = &mut output {
            output.push_str(lines[index]);
        }
        index += 1;
    }
    output.map_or(Cow::Borrowed(markdown), Cow::Owned)
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
    if let Some((index, _)) = slug.char_indices().nth(MAX_SLUG_CHARS) {
        slug.truncate(index);
    }
    let trimmed = slug.trim_end_matches('-');
    if trimmed.len() <= 2 {
        "s-section".to_owned()
    } else {
        trimmed.to_owned()
    }
}

/// `slug`, or the first of `slug_2`, `slug_3` … not used yet. Slugs never
/// contain `_`, so a numbered key never equals another heading's slug
/// (`# A`, `# A`, `# A 2` → `s-a`, `s-a_2`, `s-a-2`); the same headings in the
/// same order get the same keys in every version.
fn unique_key(slug: &str, used: &mut HashSet<String>) -> String {
    let mut key = slug.to_owned();
    let mut number = 1_usize;
    while used.contains(&key) {
        number += 1;
        key = format!("{slug}_{number}");
    }
    used.insert(key.clone());
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            max_file_bytes: 1024,
            ..Limits::default()
        }
    }

    fn keys(rendered: &Rendered) -> Vec<&str> {
        rendered
            .sections
            .iter()
            .map(|section| section.key.as_str())
            .collect()
    }

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
            &limits(),
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
                "s-error-handling_2"
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
            &limits(),
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
            &limits(),
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

    #[test]
    fn colliding_headings_get_distinct_keys_stable_across_versions() {
        let document = "Intro\n\n# A\n\none\n\n# A\n\ntwo\n\n# A 2\n\nthree\n\n# Top\n\n# A_2\n";
        let first = render(document, None, &limits());
        assert_eq!(
            keys(&first),
            ["s-top", "s-a", "s-a_2", "s-a-2", "s-top_2", "s-a-2_2"]
        );
        let toc: Vec<_> = first.toc.iter().map(|entry| entry.key.as_str()).collect();
        assert_eq!(toc, keys(&first)[1..]);
        // The next version, with one section changed: the same keys, one hash differs.
        let second = render(&document.replace("two", "TWO"), None, &limits());
        assert_eq!(keys(&first), keys(&second));
        let changed: Vec<_> = first
            .sections
            .iter()
            .zip(&second.sections)
            .filter(|(old, new)| old.hash != new.hash)
            .map(|(old, _)| old.key.as_str())
            .collect();
        assert_eq!(changed, ["s-a_2"]);
    }

    #[test]
    fn wide_tables_are_cut_with_a_notice_and_the_page_stays_small() {
        let mut document = String::from("# Tables\n\n");
        for _ in 0..4 {
            document.push_str(&"|a".repeat(1100));
            document.push_str("|\n");
            document.push_str(&"|-".repeat(1100));
            document.push_str("|\n");
            document.push_str(&"|a|\n".repeat(440));
            document.push('\n');
        }
        // The same inside a quote and a list, which the pre-scan sees through.
        document.push_str("> |a|a|a|a|\n> |-|-|-|-|\n");
        document.push_str(&">|\n".repeat(10_000));
        let rendered = render(&document, None, &limits());
        let all = html(&rendered);
        assert!(all.len() < 512 * 1024, "{} bytes", all.len());
        let cells =
            all.matches("<td").count() + all.matches("<th>").count() + all.matches("<th ").count();
        assert!(cells <= Limits::default().max_table_cells, "{cells} cells");
        assert!(
            all.contains("The panel cut the table above here: 423 of its 440 rows are not shown"),
            "{}",
            &all[..2000]
        );
        assert!(
            all.contains("The panel left out a table here"),
            "notices: {:?}",
            rendered.cuts
        );
    }

    #[test]
    fn the_rendered_size_is_bounded_and_the_cut_is_marked() {
        let limits = Limits {
            max_rendered_bytes: 64 * 1024,
            ..limits()
        };
        let mut document = String::new();
        for section in 0..40 {
            let _ = write!(document, "# Part {section}\n\n");
            for paragraph in 0..20 {
                let _ = write!(document, "Paragraph {paragraph} {}\n\n", "text ".repeat(40));
            }
        }
        let rendered = render(&document, None, &limits);
        let all = html(&rendered);
        assert!(all.len() <= 64 * 1024 + 1024, "{} bytes", all.len());
        assert_eq!(
            rendered.toc.len(),
            40,
            "every heading stays in the contents"
        );
        assert!(all.contains("The panel cut the review here"), "{all}");
        assert_eq!(
            all.matches("panel-notice").count(),
            1,
            "one notice, where the cut is"
        );
        // The source bound: the rest past it is cut at a line, with a notice.
        let limits = Limits {
            max_markdown_bytes: 1000,
            ..limits
        };
        let long = format!("# É\n\n{}", "é word\n".repeat(1000));
        let rendered = render(&long, None, &limits);
        let all = html(&rendered);
        assert!(
            all.contains("the panel shows its first 1000 bytes"),
            "{all}"
        );
    }

    #[test]
    fn a_document_too_complex_to_parse_is_shown_as_text() {
        let document = "*a* ".repeat(600_000);
        let limits = Limits {
            max_markdown_bytes: 8 * 1024 * 1024,
            ..limits()
        };
        let rendered = render(&document, None, &limits);
        let all = html(&rendered);
        assert!(
            all.contains("too complex for the panel to render"),
            "{}",
            &all[..300]
        );
        assert!(all.len() <= limits.max_rendered_bytes, "{}", all.len());
    }

    #[test]
    fn a_file_spelled_many_ways_is_resolved_per_spelling_and_read_once() {
        let directory = tempfile::tempdir().unwrap();
        let base = directory.path().canonicalize().unwrap();
        std::fs::create_dir(base.join("src")).unwrap();
        std::fs::write(base.join("src/a.rs"), "a\nb\n").unwrap();
        let document = format!(
            "[1](src/a.rs) [2](./src/a.rs#L1) [3](src//a.rs) [4]({}/src/a.rs) [5](.env) [6](src/a.rs#L9)",
            base.display()
        );
        let rendered = render(&document, Some(&base), &limits());
        let canonical = base.join("src/a.rs");
        let mut spellings: Vec<_> = rendered
            .references
            .iter()
            .filter(|(_, target)| target.as_ref().ok() == Some(&canonical))
            .map(|(spelling, _)| spelling.clone())
            .collect();
        spellings.sort();
        assert_eq!(spellings.len(), 4, "{spellings:?}");
        assert!(matches!(
            rendered.references.get(".env"),
            Some(Err(FileError::Missing(_)))
        ));
        assert!(html(&rendered).contains("line 9 is past its end"));
    }
}
