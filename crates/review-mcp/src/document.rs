//! The review document `present_review` builds up, and its three edit modes.
//!
//! Pure functions: the server keeps the current markdown, and each call turns
//! it into the next one.
//!
//! - `replace`: the content becomes the whole document.
//! - `append`: the content is added at the end, after a blank line.
//! - `update-section`: a *section* is a heading and everything after it up to
//!   the next heading of the same or a higher level (fewer `#`), or the end of
//!   the document. The first top-level heading whose text matches the section
//!   name (ignoring case, surrounding `#` and extra white space) is replaced.
//!   If the content starts with a heading of its own, it replaces the heading
//!   too (seed 001's example renames "Error Handling" to "Updated Error
//!   Handling"); otherwise the old heading is kept and only the body replaced.
//!   A section that does not exist is appended (under a `##` heading named
//!   after it when the content brings none).
//!
//! Headings are found with comrak's Markdown parser, so a `#` line inside a
//! fenced code block is not a heading, and setext headings (`Title` over
//! `===`) count. Line endings are normalised to `\n`.

use comrak::nodes::{NodeValue, Sourcepos};
use comrak::{Arena, Options, parse_document};

/// How `present_review` combines new content with the current document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PresentMode {
    /// Replace the whole document.
    Replace,
    /// Replace one section (or append it when missing).
    UpdateSection,
    /// Add to the end.
    Append,
}

impl PresentMode {
    /// Parses seed 001's spelling: `replace`, `update-section`, `append`.
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim() {
            "replace" => Some(Self::Replace),
            "update-section" => Some(Self::UpdateSection),
            "append" => Some(Self::Append),
            _ => None,
        }
    }

    /// Seed 001's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Replace => "replace",
            Self::UpdateSection => "update-section",
            Self::Append => "append",
        }
    }
}

/// What happened to the document, for the tool's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// The document was replaced.
    Replaced,
    /// Content was appended.
    Appended,
    /// The named section was found and replaced.
    SectionUpdated,
    /// The named section did not exist and was appended.
    SectionAppended,
}

/// A heading at the top level of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Heading {
    /// 1 to 6.
    level: u8,
    /// Its plain text.
    text: String,
    /// 0-based index of its first line.
    first_line: usize,
    /// 0-based index one past its last line (a setext heading spans two).
    end_line: usize,
}

/// Applies one `present_review` call to the current document.
///
/// `section` is only read in [`PresentMode::UpdateSection`], where the caller
/// has already checked it is present.
pub fn apply(current: &str, mode: PresentMode, content: &str, section: &str) -> (String, Edit) {
    let current = normalise_line_endings(current);
    let content = normalise_line_endings(content);
    match mode {
        PresentMode::Replace => (content, Edit::Replaced),
        PresentMode::Append => (append(&current, &content), Edit::Appended),
        PresentMode::UpdateSection => update_section(&current, &content, section),
    }
}

fn update_section(current: &str, content: &str, section: &str) -> (String, Edit) {
    let wanted = normalise_heading_text(section);
    let headings = top_level_headings(current);
    let Some(index) = headings
        .iter()
        .position(|heading| normalise_heading_text(&heading.text) == wanted)
    else {
        let addition = if starts_with_heading(content) {
            content.to_owned()
        } else {
            format!(
                "## {}\n\n{}",
                section.trim().trim_start_matches('#').trim(),
                content
            )
        };
        return (append(current, &addition), Edit::SectionAppended);
    };
    let heading = &headings[index];
    let end_line = headings[index + 1..]
        .iter()
        .find(|next| next.level <= heading.level)
        .map(|next| next.first_line);

    let lines: Vec<&str> = current.split('\n').collect();
    let before = lines[..heading.first_line].join("\n");
    let after = end_line.map(|end| lines[end..].join("\n"));
    let replacement = if starts_with_heading(content) {
        content.trim_end().to_owned()
    } else {
        let kept_heading = lines[heading.first_line..heading.end_line].join("\n");
        format!("{kept_heading}\n\n{}", content.trim())
    };

    let mut document = String::new();
    if !before.trim().is_empty() {
        document.push_str(before.trim_end());
        document.push_str("\n\n");
    }
    document.push_str(&replacement);
    document.push('\n');
    if let Some(after) = after.filter(|after| !after.trim().is_empty()) {
        document.push('\n');
        document.push_str(after.trim_start_matches('\n'));
        if !document.ends_with('\n') {
            document.push('\n');
        }
    }
    (document, Edit::SectionUpdated)
}

fn append(current: &str, content: &str) -> String {
    if current.trim().is_empty() {
        return content.to_owned();
    }
    let mut document = current.trim_end().to_owned();
    document.push_str("\n\n");
    document.push_str(content.trim_start_matches('\n'));
    document
}

fn normalise_line_endings(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// Heading text compared loosely: case, `#` marks and runs of white space do not matter.
fn normalise_heading_text(text: &str) -> String {
    text.trim()
        .trim_start_matches('#')
        .trim_end_matches('#')
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

fn starts_with_heading(markdown: &str) -> bool {
    top_level_headings(markdown).first().is_some_and(|heading| {
        markdown
            .split('\n')
            .take(heading.first_line)
            .all(|line| line.trim().is_empty())
    })
}

/// The headings that are direct children of the document (not inside a list
/// or block quote), in order.
fn top_level_headings(markdown: &str) -> Vec<Heading> {
    let arena = Arena::new();
    let options = Options::default();
    let root = parse_document(&arena, markdown, &options);
    root.children()
        .filter_map(|node| {
            let data = node.data.borrow();
            let NodeValue::Heading(heading) = &data.value else {
                return None;
            };
            let Sourcepos { start, end } = data.sourcepos;
            let text: String = node
                .descendants()
                .filter_map(|child| match &child.data.borrow().value {
                    NodeValue::Text(text) => Some(text.to_string()),
                    NodeValue::Code(code) => Some(code.literal.clone()),
                    NodeValue::SoftBreak | NodeValue::LineBreak => Some(" ".to_owned()),
                    _ => None,
                })
                .collect();
            Some(Heading {
                level: heading.level,
                text,
                first_line: start.line.saturating_sub(1),
                end_line: end.line.max(start.line),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const REVIEW: &str = "# Code Review\n\nSummary.\n\n## Error Handling\n\nOld text.\n\n### Details\n\nOld details.\n\n## Next Steps\n\n- ship\n";

    fn update(current: &str, section: &str, content: &str) -> (String, Edit) {
        apply(current, PresentMode::UpdateSection, content, section)
    }

    #[test]
    fn modes_parse_as_seed_001_spells_them() {
        for mode in [
            PresentMode::Replace,
            PresentMode::UpdateSection,
            PresentMode::Append,
        ] {
            assert_eq!(PresentMode::parse(mode.as_str()), Some(mode));
        }
        assert_eq!(PresentMode::parse("update_section"), None);
    }

    #[test]
    fn replace_and_append() {
        assert_eq!(
            apply(REVIEW, PresentMode::Replace, "# New\n", ""),
            ("# New\n".to_owned(), Edit::Replaced)
        );
        let (document, edit) = apply("# A\n\ntext\n\n\n", PresentMode::Append, "\n## B\n", "");
        assert_eq!(edit, Edit::Appended);
        assert_eq!(document, "# A\n\ntext\n\n## B\n");
        assert_eq!(apply("", PresentMode::Append, "## B\n", "").0, "## B\n");
    }

    #[test]
    fn a_section_runs_to_the_next_heading_of_the_same_or_higher_level() {
        let (document, edit) = update(
            REVIEW,
            "Error Handling",
            "## Updated Error Handling\n\nNew text.\n",
        );
        assert_eq!(edit, Edit::SectionUpdated);
        assert_eq!(
            document,
            "# Code Review\n\nSummary.\n\n## Updated Error Handling\n\nNew text.\n\n## Next Steps\n\n- ship\n"
        );
    }

    #[test]
    fn content_without_a_heading_keeps_the_old_heading() {
        let (document, _) = update(REVIEW, "error handling", "New text.");
        assert_eq!(
            document,
            "# Code Review\n\nSummary.\n\n## Error Handling\n\nNew text.\n\n## Next Steps\n\n- ship\n"
        );
    }

    #[test]
    fn a_subsection_ends_at_its_parents_sibling() {
        let (document, _) = update(REVIEW, "### Details", "Fresh details.");
        assert_eq!(
            document,
            "# Code Review\n\nSummary.\n\n## Error Handling\n\nOld text.\n\n### Details\n\nFresh details.\n\n## Next Steps\n\n- ship\n"
        );
    }

    #[test]
    fn the_last_section_runs_to_the_end() {
        let (document, _) = update(REVIEW, "Next Steps", "- ship it\n- celebrate\n");
        assert!(
            document.ends_with("## Next Steps\n\n- ship it\n- celebrate\n"),
            "{document}"
        );
        assert!(document.contains("### Details\n\nOld details.\n\n## Next Steps"));
    }

    #[test]
    fn a_missing_section_is_appended() {
        let (document, edit) = update(REVIEW, "Security", "No issues.");
        assert_eq!(edit, Edit::SectionAppended);
        assert!(
            document.ends_with("- ship\n\n## Security\n\nNo issues."),
            "{document}"
        );
        let (document, _) = update(REVIEW, "Security", "### Security notes\n\nNone.");
        assert!(
            document.ends_with("- ship\n\n### Security notes\n\nNone."),
            "{document}"
        );
    }

    #[test]
    fn headings_inside_code_fences_are_not_sections() {
        let current =
            "# Review\n\n```sh\n# Error Handling\necho hi\n```\n\n## Error Handling\n\nold\n";
        let (document, edit) = update(current, "Error Handling", "new");
        assert_eq!(edit, Edit::SectionUpdated);
        assert_eq!(
            document,
            "# Review\n\n```sh\n# Error Handling\necho hi\n```\n\n## Error Handling\n\nnew\n"
        );
        // A fence inside the section is part of the section, not a boundary.
        let current = "## A\n\n```\n## B\n```\n\n## C\n";
        assert_eq!(update(current, "A", "x").0, "## A\n\nx\n\n## C\n");
    }

    #[test]
    fn setext_headings_and_crlf_are_understood() {
        let current = "Review\r\n======\r\n\r\nIntro\r\n\r\nRisks\r\n-----\r\n\r\nold\r\n";
        let (document, edit) = update(current, "Risks", "none");
        assert_eq!(edit, Edit::SectionUpdated);
        assert_eq!(
            document,
            "Review\n======\n\nIntro\n\nRisks\n-----\n\nnone\n"
        );
    }

    #[test]
    fn headings_in_lists_and_quotes_are_not_sections() {
        let current = "> ## Quoted\n> text\n\n## Real\n\nbody\n";
        let (document, edit) = update(current, "Quoted", "x");
        assert_eq!(edit, Edit::SectionAppended);
        assert!(document.ends_with("body\n\n## Quoted\n\nx"), "{document}");
    }

    #[test]
    fn the_first_matching_section_is_updated() {
        let current = "## Notes\n\none\n\n## Notes\n\ntwo\n";
        assert_eq!(
            update(current, "notes", "uno").0,
            "## Notes\n\nuno\n\n## Notes\n\ntwo\n"
        );
    }
}
