//! The poller: one search per trigger label per watched owner or repository,
//! the hits merged into one job per pull request.
//!
//! The searches are review-github's conditional `search_pull_requests`: an
//! unchanged answer is a 304 that costs no rate-limit points, and the
//! client keeps the searches within GitHub's 30 a minute: it reads the
//! search budget from every answer's `x-ratelimit-*` headers and, once it is
//! spent, waits for its reset before the next search.

use std::collections::HashSet;
use std::fmt;

use review_core::labels::{Job, Label};
use review_github::{GitHubClient, RepositoryName, SearchScope};

/// What `daemon.repositories` names: a whole owner (organisation or user) or
/// one repository.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum WatchTarget {
    /// Every repository of an organisation or user.
    Owner(String),
    /// One repository.
    Repository(RepositoryName),
}

impl WatchTarget {
    /// `OWNER/REPO` or `OWNER`; the error says which forms are accepted.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let usage = || {
            format!(
                "`{text}` is neither OWNER/REPO nor OWNER (for example \"octo/widgets\" or \"octo\")"
            )
        };
        if text.contains('/') {
            return RepositoryName::parse(text)
                .map(Self::Repository)
                .map_err(|_| usage());
        }
        let valid = !text.is_empty()
            && text
                .chars()
                .all(|character| character.is_ascii_alphanumeric() || character == '-');
        if valid {
            Ok(Self::Owner(text.to_owned()))
        } else {
            Err(usage())
        }
    }

    /// The search qualifier's scope.
    pub fn scope(&self) -> SearchScope {
        match self {
            Self::Owner(owner) => SearchScope::Organization(owner.clone()),
            Self::Repository(repository) => SearchScope::Repository(repository.clone()),
        }
    }
}

impl fmt::Display for WatchTarget {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Owner(owner) => formatter.write_str(owner),
            Self::Repository(repository) => write!(formatter, "{repository}"),
        }
    }
}

/// One pull request to advance, and the job its trigger label calls for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Hit {
    /// The repository.
    pub repository: RepositoryName,
    /// The pull request.
    pub number: u64,
    /// The job of the first trigger label found, in the loop's order.
    pub job: Job,
}

impl fmt::Display for Hit {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}#{}", self.repository, self.number)
    }
}

/// One poll's answer.
#[derive(Debug, Default)]
pub struct Poll {
    /// One per pull request, in the order found.
    pub hits: Vec<Hit>,
    /// The searches that failed, each with its target and label.
    pub errors: Vec<String>,
    /// How many searches ran.
    pub searches: usize,
    /// How many were answered 304 (no rate-limit cost).
    pub unchanged: usize,
}

/// Searches every target for every trigger label. One failed search never
/// stops the others; it is reported in [`Poll::errors`].
pub async fn poll(github: &GitHubClient, targets: &[WatchTarget]) -> Poll {
    let mut found = Poll::default();
    let mut seen = HashSet::new();
    for target in targets {
        let scope = target.scope();
        // The loop's order: a PR carrying two triggers gets the first's job,
        // as `step` would choose.
        for label in Label::TRIGGERS {
            let job = label.job().expect("a trigger label starts a job");
            found.searches += 1;
            match github.search_pull_requests(&scope, label.name()).await {
                Ok(results) => {
                    if results.unchanged {
                        found.unchanged += 1;
                    }
                    if results.incomplete {
                        tracing::warn!(%target, label = label.name(), "search results incomplete");
                    }
                    for hit in results.hits {
                        if seen.insert((hit.repository.clone(), hit.number)) {
                            found.hits.push(Hit {
                                repository: hit.repository,
                                number: hit.number,
                                job,
                            });
                        }
                    }
                }
                Err(error) => found.errors.push(format!(
                    "searching {target} for `{}`: {error}",
                    label.name()
                )),
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_owners_or_repositories_and_bad_ones_say_the_forms() {
        assert_eq!(
            WatchTarget::parse("acme").unwrap(),
            WatchTarget::Owner("acme".to_owned())
        );
        assert_eq!(
            WatchTarget::parse(" acme/widgets ").unwrap(),
            WatchTarget::Repository(RepositoryName::parse("acme/widgets").unwrap())
        );
        assert_eq!(
            WatchTarget::parse("acme/widgets").unwrap().to_string(),
            "acme/widgets"
        );
        for bad in ["", "a b", "acme/", "/x", "a/b/c", "org:acme"] {
            let error = WatchTarget::parse(bad).unwrap_err();
            assert!(error.contains("OWNER/REPO"), "{bad}: {error}");
        }
    }
}
