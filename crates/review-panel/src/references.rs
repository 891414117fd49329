//! File references in a review's links, every form seed 001 lists.
//!
//! - `[auth.ts](src/auth.ts)`: the file;
//! - `(src/auth.ts#L42)`: line 42; `(src/auth.ts#L42-L50)`: lines 42 to 50;
//! - `(src/auth.ts?validateUser)`: the first line containing `validateUser`;
//! - `` [`src/auth.ts:23`][] ``: rustdoc style, a collapsed reference with no
//!   definition, turned into `src/auth.ts#L23` by [`rustdoc_reference`].
//!
//! Also `path:42` and `path:42-50` as a link target, and `file://` URLs.
//! Links with a URL scheme (`https:`, `mailto:`, `javascript:` …), in-page
//! anchors and protocol-relative URLs are not file references.

use percent_encoding::percent_decode_str;

/// A link target that names a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileReference {
    /// The path as written (percent-decoded), relative to the base or absolute.
    pub path: String,
    /// The first line to mark, 1-based.
    pub line: Option<u32>,
    /// The last line to mark (inclusive), when a range.
    pub end: Option<u32>,
    /// A literal text whose first occurrence is the line to mark.
    pub pattern: Option<String>,
}

/// The file reference a link's URL makes, or `None` for any other link.
pub fn parse(url: &str) -> Option<FileReference> {
    let url = url.trim();
    if url.is_empty() || url.starts_with('#') || url.starts_with("//") {
        return None;
    }
    let url = match url.strip_prefix("file://") {
        // `file:///abs` → `/abs`; `file://host/…` is not ours.
        Some(rest) if rest.starts_with('/') => rest,
        Some(_) => return None,
        None if has_scheme(url) => return None,
        None => url,
    };
    let (before_fragment, fragment) = match url.split_once('#') {
        Some((before, fragment)) => (before, Some(fragment)),
        None => (url, None),
    };
    let (path_part, query) = match before_fragment.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (before_fragment, None),
    };
    let mut path = percent_decode_str(path_part)
        .decode_utf8_lossy()
        .into_owned();
    let mut range = fragment.and_then(line_fragment);
    if range.is_none()
        && let Some((rest, suffix)) = path.rsplit_once(':')
        && let Some(parsed) = line_range(suffix)
        && !rest.is_empty()
    {
        range = Some(parsed);
        path = rest.to_owned();
    }
    if path.is_empty() {
        return None;
    }
    let pattern = query
        .map(|query| percent_decode_str(query).decode_utf8_lossy().into_owned())
        .filter(|pattern| !pattern.is_empty());
    let (line, end) = match range {
        Some((line, end)) => (Some(line), end),
        None => (None, None),
    };
    Some(FileReference {
        path,
        line,
        end,
        pattern,
    })
}

/// The URL for a rustdoc-style reference label (`` `src/auth.ts:23` ``), or
/// `None` when the label does not look like a file.
pub fn rustdoc_reference(label: &str) -> Option<String> {
    let inner = label.trim().trim_matches('`').trim();
    if inner.is_empty() || inner.chars().any(char::is_whitespace) {
        return None;
    }
    if has_scheme(inner) {
        return None;
    }
    let (path, range) = match inner.rsplit_once(':') {
        Some((path, suffix)) => (path, Some(line_range(suffix)?)),
        None => (inner, None),
    };
    if path.is_empty() || !(path.contains('/') || path.contains('.')) {
        return None;
    }
    let encoded = percent_encoding::utf8_percent_encode(path, PATH_ESCAPES).to_string();
    Some(match range {
        Some((line, Some(end))) => format!("{encoded}#L{line}-L{end}"),
        Some((line, None)) => format!("{encoded}#L{line}"),
        None => encoded,
    })
}

/// Characters escaped when a path becomes a URL's path.
const PATH_ESCAPES: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
    .add(b' ')
    .add(b'%')
    .add(b'#')
    .add(b'?')
    .add(b'"')
    .add(b'<')
    .add(b'>')
    .add(b'`');

/// `scheme:` at the start, where a scheme has no `.` (so `auth.ts:23` is a path).
fn has_scheme(url: &str) -> bool {
    let Some((scheme, _)) = url.split_once(':') else {
        return false;
    };
    let mut characters = scheme.chars();
    characters
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic())
        && characters.all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '-')
}

/// `L42`, `L42-L50`, `L42-50`.
fn line_fragment(fragment: &str) -> Option<(u32, Option<u32>)> {
    let rest = fragment
        .strip_prefix('L')
        .or_else(|| fragment.strip_prefix('l'))?;
    let (start, end) = match rest.split_once('-') {
        Some((start, end)) => (start, Some(end.trim_start_matches(['L', 'l']))),
        None => (rest, None),
    };
    range(start, end)
}

/// `42`, `42-50`.
fn line_range(text: &str) -> Option<(u32, Option<u32>)> {
    match text.split_once('-') {
        Some((start, end)) => range(start, Some(end)),
        None => range(text, None),
    }
}

fn range(start: &str, end: Option<&str>) -> Option<(u32, Option<u32>)> {
    let start: u32 = start.parse().ok().filter(|line| *line > 0)?;
    match end {
        None => Some((start, None)),
        Some(end) => {
            let end: u32 = end.parse().ok()?;
            Some((start, Some(end.max(start))))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(
        path: &str,
        line: Option<u32>,
        end: Option<u32>,
        pattern: Option<&str>,
    ) -> FileReference {
        FileReference {
            path: path.to_owned(),
            line,
            end,
            pattern: pattern.map(str::to_owned),
        }
    }

    #[test]
    fn every_seed_form_parses() {
        assert_eq!(
            parse("src/auth.ts"),
            Some(reference("src/auth.ts", None, None, None))
        );
        assert_eq!(
            parse("src/auth.ts#L42"),
            Some(reference("src/auth.ts", Some(42), None, None))
        );
        assert_eq!(
            parse("src/auth.ts#L42-L50"),
            Some(reference("src/auth.ts", Some(42), Some(50), None))
        );
        assert_eq!(
            parse("src/auth.ts?validateUser"),
            Some(reference("src/auth.ts", None, None, Some("validateUser")))
        );
        assert_eq!(
            parse("auth.ts:23"),
            Some(reference("auth.ts", Some(23), None, None))
        );
        assert_eq!(
            parse("src/my%20file.rs:3-4"),
            Some(reference("src/my file.rs", Some(3), Some(4), None))
        );
        assert_eq!(
            parse("file:///work/a.rs#L2"),
            Some(reference("/work/a.rs", Some(2), None, None))
        );
    }

    #[test]
    fn other_links_are_not_file_references() {
        for url in [
            "https://example.com/a.rs",
            "mailto:a@example.com",
            "javascript:alert(1)",
            "JavaScript:alert(1)",
            "data:text/html,x",
            "#section",
            "//example.com/x",
            "",
            "file://host/share/a.rs",
        ] {
            assert_eq!(parse(url), None, "{url}");
        }
    }

    #[test]
    fn rustdoc_labels_become_urls() {
        assert_eq!(
            rustdoc_reference("`src/auth.ts:23`").as_deref(),
            Some("src/auth.ts#L23")
        );
        assert_eq!(
            rustdoc_reference("`README.md:1`").as_deref(),
            Some("README.md#L1")
        );
        assert_eq!(
            rustdoc_reference("`src/a.rs:3-9`").as_deref(),
            Some("src/a.rs#L3-L9")
        );
        assert_eq!(
            rustdoc_reference("`package.json`").as_deref(),
            Some("package.json")
        );
        assert_eq!(rustdoc_reference("not a file"), None);
        assert_eq!(rustdoc_reference("`Vec`"), None);
        assert_eq!(rustdoc_reference("`https://x.y`"), None);
    }
}
