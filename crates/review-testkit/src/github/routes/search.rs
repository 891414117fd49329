//! `search/issues-and-pull-requests`: the qualifiers the poller uses (`is:pr`, `is:open`,
//! `label:"…"`, `org:`, `repo:`, `user:`, `author:`, negation with `-`), GitHub's quoting
//! rules, and plain words matched against title and body.

use serde_json::json;

use super::super::api::{ApiError, Context, Reply, paginate_with};
use super::super::model::{PullRequest, Repository};
use super::super::render;
use super::super::state::SimState;
use super::can_see;

/// One search term: a qualifier (`label:bug`) or a word, possibly negated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Term {
    pub negated: bool,
    /// The qualifier's name, lower-cased; `None` for a plain word.
    pub qualifier: Option<String>,
    pub value: String,
}

/// Splits a query into terms. Double quotes group words (`label:"needs review"`,
/// `"exact phrase"`); an unterminated quote runs to the end.
pub(crate) fn parse_query(query: &str) -> Vec<Term> {
    let mut tokens: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut has_token = false;
    for character in query.chars() {
        match character {
            '"' => {
                quoted = !quoted;
                has_token = true;
            }
            character if character.is_whitespace() && !quoted => {
                if has_token {
                    tokens.push(std::mem::take(&mut current));
                    has_token = false;
                }
            }
            character => {
                current.push(character);
                has_token = true;
            }
        }
    }
    if has_token {
        tokens.push(current);
    }
    tokens
        .into_iter()
        .filter(|token| !token.is_empty())
        .map(|token| {
            let (negated, rest) = match token.strip_prefix('-') {
                Some(rest) if !rest.is_empty() => (true, rest.to_owned()),
                _ => (false, token),
            };
            match rest.split_once(':') {
                Some((name, value)) if !name.is_empty() && is_qualifier(name) => Term {
                    negated,
                    qualifier: Some(name.to_ascii_lowercase()),
                    value: value.to_owned(),
                },
                _ => Term {
                    negated,
                    qualifier: None,
                    value: rest,
                },
            }
        })
        .collect()
}

fn is_qualifier(name: &str) -> bool {
    matches!(
        name.to_ascii_lowercase().as_str(),
        "is" | "type" | "state" | "label" | "repo" | "org" | "user" | "author" | "in" | "draft"
    )
}

/// Whether a pull request matches one term (before negation).
fn term_matches(term: &Term, repository: &Repository, pull: &PullRequest) -> bool {
    let value = term.value.as_str();
    match term.qualifier.as_deref() {
        Some("is" | "type") => match value.to_ascii_lowercase().as_str() {
            "pr" | "pull-request" => true,
            "open" => pull.open,
            "closed" => !pull.open,
            "draft" => pull.draft,
            "merged" | "unmerged" => value.eq_ignore_ascii_case("unmerged"),
            _ => false,
        },
        Some("state") => match value.to_ascii_lowercase().as_str() {
            "open" => pull.open,
            "closed" => !pull.open,
            _ => false,
        },
        Some("draft") => pull.draft == value.eq_ignore_ascii_case("true"),
        // `label:a,b` matches either label.
        Some("label") => value.split(',').any(|wanted| {
            pull.labels
                .iter()
                .any(|label| label.eq_ignore_ascii_case(wanted.trim()))
        }),
        Some("repo") => repository.full_name().eq_ignore_ascii_case(value),
        Some("org" | "user") => repository.owner.eq_ignore_ascii_case(value),
        Some("author") => pull.author.eq_ignore_ascii_case(value),
        Some("in") => true,
        _ => {
            let needle = value.to_lowercase();
            pull.title.to_lowercase().contains(&needle)
                || pull
                    .body
                    .as_deref()
                    .is_some_and(|body| body.to_lowercase().contains(&needle))
        }
    }
}

/// `GET /search/issues`
pub(super) fn issues_and_pull_requests(
    state: &mut SimState,
    context: &Context,
) -> Result<Reply, ApiError> {
    let query = context.query_value("q").unwrap_or_default();
    if query.trim().is_empty() {
        return Err(ApiError::validation_failed(vec![ApiError::field_error(
            "Search", "q", "missing", None,
        )]));
    }
    if query.len() > 256 {
        return Err(ApiError::validation_failed(vec![json!({
            "message": "The search is longer than 256 characters.",
            "resource": "Search",
            "field": "q",
            "code": "invalid",
        })]));
    }
    let terms = parse_query(query);
    let mut hits: Vec<(&Repository, &PullRequest)> = Vec::new();
    for repository in state.repositories.values() {
        if !can_see(state, &context.actor, repository) {
            continue;
        }
        for pull in repository.pulls.values() {
            let matches = terms
                .iter()
                .all(|term| term_matches(term, repository, pull) != term.negated);
            if matches {
                hits.push((repository, pull));
            }
        }
    }
    let ascending = context.query_value("order") == Some("asc");
    match context.query_value("sort") {
        Some("created") => hits.sort_by_key(|(_, pull)| (pull.created_at, pull.id)),
        Some("comments") => hits.sort_by_key(|(_, pull)| (pull.issue_comments.len(), pull.id)),
        // "updated", and best match (which has no meaning without text): most recent last.
        _ => hits.sort_by_key(|(_, pull)| (pull.updated_at, pull.id)),
    }
    if !ascending {
        hits.reverse();
    }
    let total = hits.len();
    let items = hits
        .into_iter()
        .map(|(repository, pull)| render::search_item(state, repository, pull))
        .collect();
    Ok(paginate_with(context, &state.base_url, items, |page| {
        json!({
            "total_count": total,
            "incomplete_results": false,
            "search_type": "lexical",
            "items": page,
        })
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_labels_and_negation() {
        let terms =
            parse_query(r#"is:pr is:open label:"bot review needed" -label:wip org:acme fix"#);
        assert_eq!(terms.len(), 6);
        assert_eq!(terms[2].qualifier.as_deref(), Some("label"));
        assert_eq!(terms[2].value, "bot review needed");
        assert!(terms[3].negated);
        assert_eq!(terms[3].value, "wip");
        assert_eq!(terms[5].qualifier, None);
        assert_eq!(terms[5].value, "fix");
    }

    #[test]
    fn quotes_around_the_whole_term_and_unknown_qualifiers() {
        let terms = parse_query(r#""label:bot-review-needed" repo:acme/widgets foo:bar"#);
        assert_eq!(terms[0].qualifier.as_deref(), Some("label"));
        assert_eq!(terms[0].value, "bot-review-needed");
        assert_eq!(terms[1].value, "acme/widgets");
        assert_eq!(terms[2].qualifier, None);
        assert_eq!(terms[2].value, "foo:bar");
    }
}
