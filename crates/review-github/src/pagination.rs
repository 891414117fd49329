//! Following GitHub's `Link: <…>; rel="next"` headers.
//!
//! Only the path and query of the next URL are kept: the request then goes to
//! our configured API host with our credential, so a `Link` pointing anywhere
//! else can neither redirect us nor receive the token.

/// The path and query of the `rel="next"` link in a `Link` header.
pub(crate) fn next_page_path(link_header: &str) -> Option<String> {
    link_header.split(',').find_map(|part| {
        let (target, parameters) = part.split_once(';')?;
        let is_next = parameters.split(';').any(|parameter| {
            let parameter = parameter.trim();
            parameter == "rel=\"next\"" || parameter == "rel=next"
        });
        if !is_next {
            return None;
        }
        let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        path_and_query(target)
    })
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
            next_page_path(header).as_deref(),
            Some("/repositories/1/pulls/2/files?per_page=100&page=2")
        );
    }

    #[test]
    fn keeps_an_enterprise_path_prefix_and_drops_the_host() {
        let header = "<https://elsewhere.example/api/v3/search/issues?q=x&page=3>; rel=\"next\"";
        assert_eq!(
            next_page_path(header).as_deref(),
            Some("/api/v3/search/issues?q=x&page=3")
        );
    }

    #[test]
    fn no_next_on_the_last_page() {
        let header = "<https://api.github.com/x?page=1>; rel=\"prev\", <https://api.github.com/x?page=1>; rel=\"first\"";
        assert_eq!(next_page_path(header), None);
        assert_eq!(next_page_path(""), None);
        assert_eq!(next_page_path("garbage"), None);
    }
}
