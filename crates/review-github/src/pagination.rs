//! Following GitHub's `Link: <…>; rel="next"` headers.
//!
//! The header is parsed by RFC 8288's grammar (a URI between `<` and `>`,
//! then `;`-separated parameters whose values may be quoted strings), so a
//! comma inside a URL or a quoted value does not split a link. A header that
//! does not parse is an error, never "no next page": reading it as the last
//! page would return a list cut short without a sign.
//!
//! Only the path and query of the next URL are kept: the request then goes to
//! our configured API host with our credential, so a `Link` pointing anywhere
//! else can neither redirect us nor receive the token.

/// The path and query of the `rel="next"` link in a `Link` header; `Ok(None)`
/// when the header has no such link; an error (what is wrong) when the header
/// does not parse.
pub(crate) fn next_page_path(link_header: &str) -> Result<Option<String>, String> {
    let mut rest = link_header.trim();
    let mut next = None;
    while !rest.is_empty() {
        rest = rest
            .strip_prefix('<')
            .ok_or_else(|| format!("a link must start with '<' at {:?}", excerpt(rest)))?;
        let end = rest
            .find('>')
            .ok_or_else(|| format!("a '<' is never closed in {:?}", excerpt(rest)))?;
        let target = &rest[..end];
        rest = rest[end + 1..].trim_start();
        let mut is_next = false;
        while let Some(after) = rest.strip_prefix(';') {
            let (name, value, after) = parameter(after.trim_start())?;
            rest = after;
            if name.eq_ignore_ascii_case("rel")
                && value
                    .split_ascii_whitespace()
                    .any(|relation| relation.eq_ignore_ascii_case("next"))
            {
                is_next = true;
            }
        }
        if is_next {
            if next.is_some() {
                return Err("two links are marked rel=\"next\"".to_owned());
            }
            next = Some(
                path_and_query(target)
                    .ok_or_else(|| format!("the next link {target:?} is not a URL"))?,
            );
        }
        if rest.is_empty() {
            break;
        }
        rest = rest
            .strip_prefix(',')
            .ok_or_else(|| format!("links must be separated by ',' at {:?}", excerpt(rest)))?
            .trim_start();
    }
    Ok(next)
}

/// One `name[=value]` link parameter at the start of `text`: its name, its
/// value (unquoted), and the text after it.
fn parameter(text: &str) -> Result<(&str, String, &str), String> {
    let is_separator = |character: char| {
        matches!(character, '=' | ';' | ',' | '"') || character.is_ascii_whitespace()
    };
    let name_end = text.find(is_separator).unwrap_or(text.len());
    let name = &text[..name_end];
    if name.is_empty() {
        return Err(format!(
            "a link parameter has no name at {:?}",
            excerpt(text)
        ));
    }
    let mut rest = text[name_end..].trim_start();
    let mut value = String::new();
    if let Some(after) = rest.strip_prefix('=') {
        rest = after.trim_start();
        if let Some(quoted) = rest.strip_prefix('"') {
            let mut characters = quoted.char_indices();
            let mut closed_at = None;
            while let Some((index, character)) = characters.next() {
                match character {
                    '\\' => {
                        if let Some((_, escaped)) = characters.next() {
                            value.push(escaped);
                        }
                    }
                    '"' => {
                        closed_at = Some(index);
                        break;
                    }
                    other => value.push(other),
                }
            }
            let closed_at = closed_at.ok_or_else(|| {
                format!("a quoted value is never closed in {:?}", excerpt(quoted))
            })?;
            rest = quoted[closed_at + 1..].trim_start();
        } else {
            let end = rest.find(is_separator).unwrap_or(rest.len());
            value.push_str(&rest[..end]);
            rest = rest[end..].trim_start();
        }
    }
    Ok((name, value, rest))
}

/// The start of `text`, for error messages.
fn excerpt(text: &str) -> String {
    text.chars().take(40).collect()
}

/// `/path?query` of an absolute or relative URL.
fn path_and_query(target: &str) -> Option<String> {
    if target.starts_with('/') {
        return Some(target.to_owned());
    }
    let url = url::Url::parse(target).ok()?;
    Some(match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_next_link_among_others() {
        let header = "<https://api.github.com/repositories/1/pulls/2/files?per_page=100&page=2>; rel=\"next\", \
                      <https://api.github.com/repositories/1/pulls/2/files?per_page=100&page=3>; rel=\"last\"";
        assert_eq!(
            next_page_path(header).unwrap().as_deref(),
            Some("/repositories/1/pulls/2/files?per_page=100&page=2")
        );
    }

    #[test]
    fn keeps_an_enterprise_path_prefix_and_drops_the_host() {
        let header = "<https://elsewhere.example/api/v3/search/issues?q=x&page=3>; rel=\"next\"";
        assert_eq!(
            next_page_path(header).unwrap().as_deref(),
            Some("/api/v3/search/issues?q=x&page=3")
        );
    }

    #[test]
    fn commas_inside_a_url_or_a_quoted_value_do_not_split_links() {
        let header = "<https://api.github.com/x?q=a,b&page=1>; rel=\"prev\"; title=\"one, two\", \
                      <https://api.github.com/x?q=a,b&page=3>; rel=next";
        assert_eq!(
            next_page_path(header).unwrap().as_deref(),
            Some("/x?q=a,b&page=3")
        );
        let relations = "<https://api.github.com/x?page=2>; rel=\"last next\"";
        assert_eq!(
            next_page_path(relations).unwrap().as_deref(),
            Some("/x?page=2")
        );
    }

    #[test]
    fn no_next_on_the_last_page_and_garbage_is_an_error() {
        let header = "<https://api.github.com/x?page=1>; rel=\"prev\", <https://api.github.com/x?page=1>; rel=\"first\"";
        assert_eq!(next_page_path(header), Ok(None));
        assert_eq!(next_page_path(""), Ok(None));
        assert!(next_page_path("garbage").is_err());
        assert!(next_page_path("<https://api.github.com/x?page=2; rel=\"next\"").is_err());
        assert!(next_page_path("<https://api.github.com/x?page=2>; rel=\"next").is_err());
        assert!(next_page_path("<https://api.github.com/x?page=2>; rel=\"next\" junk").is_err());
    }
}
