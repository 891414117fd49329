//! The poll query: open pull requests carrying a label, in an organisation or
//! a repository. Conditional, so an unchanged answer is a free 304.

use crate::client::{GitHubClient, Scope, with_query};
use crate::error::GitHubError;
use crate::model::{RepositoryName, SearchHit, SearchResults, SearchScope};
use crate::pulls::PAGE_SIZE;
use crate::transport::ApiRequest;
use crate::wire;

/// GitHub's search returns at most 1,000 results: 10 pages of 100.
const MAX_SEARCH_PAGES: usize = 10;

/// `is:pr is:open label:"LABEL" org:ORG` (or `repo:OWNER/NAME`).
pub(crate) fn pull_request_query(scope: &SearchScope, label: &str) -> String {
    let label = label.replace('"', "");
    let qualifier = match scope {
        SearchScope::Organization(organization) => format!("org:{organization}"),
        SearchScope::Repository(repository) => format!("repo:{repository}"),
    };
    format!("is:pr is:open label:\"{label}\" {qualifier}")
}

/// `owner/name` from a search item's `repository_url` (`…/repos/OWNER/NAME`).
fn repository_from_url(repository_url: &str) -> Option<RepositoryName> {
    let mut parts = repository_url.trim_end_matches('/').rsplit('/');
    let name = parts.next()?;
    let owner = parts.next()?;
    (parts.next()? == "repos")
        .then(|| RepositoryName::new(owner, name).ok())
        .flatten()
}

impl GitHubClient {
    /// Open pull requests labelled `label` in `scope`
    /// (`search/issues-and-pull-requests`, every page up to GitHub's 1,000
    /// results). Spends the search budget (30/minute), except when every page
    /// is answered 304 — then `unchanged` is true and it cost nothing.
    pub async fn search_pull_requests(
        &self,
        scope: &SearchScope,
        label: &str,
    ) -> Result<SearchResults, GitHubError> {
        let mut request = ApiRequest::get(
            "/search/issues",
            with_query(
                "/search/issues",
                &[
                    ("q", &pull_request_query(scope, label)),
                    ("per_page", &PAGE_SIZE.to_string()),
                ],
            ),
        );
        request.resource = "search";
        let credential_scope = match scope {
            SearchScope::Organization(organization) => Scope::Account(organization.clone()),
            SearchScope::Repository(repository) => Scope::Repository(repository.clone()),
        };
        let mut total_count = 0;
        let mut incomplete = false;
        let paged = self
            .get_all_pages(
                &credential_scope,
                request,
                MAX_SEARCH_PAGES,
                |page: wire::SearchPage| {
                    total_count = page.total_count;
                    incomplete |= page.incomplete_results;
                    page.items
                },
            )
            .await?;
        let mut hits = Vec::with_capacity(paged.items.len());
        for item in paged.items {
            let Some(repository) = repository_from_url(&item.repository_url) else {
                tracing::warn!(
                    repository_url = item.repository_url,
                    number = item.number,
                    "skipping a search hit whose repository URL we cannot read"
                );
                continue;
            };
            hits.push(SearchHit {
                repository,
                number: item.number,
                title: item.title,
                labels: item
                    .labels
                    .into_iter()
                    .filter_map(|label| label.name)
                    .collect(),
                updated_at: item.updated_at,
            });
        }
        Ok(SearchResults {
            hits,
            total_count,
            incomplete: incomplete || paged.truncated,
            unchanged: paged.unchanged,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_quotes_the_label_and_names_the_scope() {
        assert_eq!(
            pull_request_query(
                &SearchScope::Organization("acme".into()),
                "bot-review-needed"
            ),
            "is:pr is:open label:\"bot-review-needed\" org:acme"
        );
        assert_eq!(
            pull_request_query(
                &SearchScope::Repository(RepositoryName::parse("acme/widgets").unwrap()),
                "a \"b\""
            ),
            "is:pr is:open label:\"a b\" repo:acme/widgets"
        );
    }

    #[test]
    fn repository_names_come_from_the_repository_url() {
        assert_eq!(
            repository_from_url("https://api.github.com/repos/acme/widgets"),
            Some(RepositoryName::parse("acme/widgets").unwrap())
        );
        assert_eq!(
            repository_from_url("https://ghe.example/api/v3/repos/acme/widgets/"),
            Some(RepositoryName::parse("acme/widgets").unwrap())
        );
        assert_eq!(repository_from_url("https://example/acme/widgets"), None);
    }
}
