//! GitHub's GraphQL API, for the one thing REST cannot do: review threads'
//! resolution (issue 28, item 1).
//!
//! Two operations, written against the schema subset in
//! `shared/github-graphql/subset.graphql`:
//!
//! - [`GitHubClient::review_threads`] reads `repository.pullRequest.reviewThreads`
//!   (id, isResolved, isOutdated, path, line, and the comments' databaseId,
//!   author login and body), 100 threads a page with 100 comments each, and
//!   `rateLimit { cost remaining }` so every call reports its points;
//! - [`GitHubClient::resolve_review_thread`] runs the `resolveReviewThread`
//!   mutation.
//!
//! Same credentials as REST (`Authorization: bearer …`), through the same
//! transport (retries, rate-limit waits, write spacing for the mutation).
//! The endpoint is `API_URL/graphql` for github.com and the simulator, and
//! `https://HOST/api/graphql` for GitHub Enterprise Server, whose REST root
//! is `https://HOST/api/v3`. GitHub answers refusals with HTTP 200 and an
//! `errors` list: those become [`GitHubError::GraphQl`] naming the operation
//! and GitHub's messages.

use std::sync::atomic::{AtomicU64, Ordering};

use http::Method;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::client::{GitHubClient, Scope, decode};
use crate::error::GitHubError;
use crate::model::RepositoryName;
use crate::transport::{ApiRequest, Retry};

/// Route name in logs and errors.
const ROUTE: &str = "POST /graphql";

/// Pages of threads read at most (100 threads each).
const MAX_THREAD_PAGES: usize = 10;

/// The review-thread query: one page of threads with their comments.
pub const REVIEW_THREADS_QUERY: &str =
    "query ReviewThreads($owner: String!, $name: String!, $number: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $after) {
        pageInfo { hasNextPage endCursor }
        nodes {
          id
          isResolved
          isOutdated
          path
          line
          originalLine
          diffSide
          comments(first: 100) {
            totalCount
            nodes { databaseId body author { login } }
          }
        }
      }
    }
  }
  rateLimit { cost remaining }
}";

/// The mutation that resolves one thread.
pub const RESOLVE_THREAD_MUTATION: &str = "mutation ResolveThread($threadId: ID!) {
  resolveReviewThread(input: {threadId: $threadId}) {
    thread { id isResolved }
  }
}";

/// A review thread as GraphQL shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphQlThread {
    /// The thread's node id (what `resolveReviewThread` takes).
    pub id: String,
    /// Whether someone resolved it.
    pub is_resolved: bool,
    /// Whether the commented lines changed since the comment was made.
    pub is_outdated: bool,
    /// The file.
    pub path: String,
    /// The line now (`None` when outdated).
    pub line: Option<u32>,
    /// The line when the comment was made.
    pub original_line: Option<u32>,
    /// Its comments, oldest first.
    pub comments: Vec<GraphQlComment>,
    /// Whether the thread has more comments than were read.
    pub comments_truncated: bool,
}

impl GraphQlThread {
    /// The REST id of the thread's first comment.
    pub fn root_database_id(&self) -> Option<u64> {
        self.comments
            .first()
            .and_then(|comment| comment.database_id)
    }
}

/// One comment of a thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphQlComment {
    /// Its REST id.
    pub database_id: Option<u64>,
    /// Who wrote it (`None`: a deleted account).
    pub author: Option<String>,
    /// Its text.
    pub body: String,
}

/// What GraphQL calls cost, as GitHub reported them.
#[derive(Debug, Default)]
pub struct GraphQlUsage {
    requests: AtomicU64,
    points: AtomicU64,
}

impl GraphQlUsage {
    /// Requests sent and points spent so far (`rateLimit { cost }`; a
    /// mutation counts 1 point, GitHub's minimum).
    pub fn totals(&self) -> (u64, u64) {
        (
            self.requests.load(Ordering::Relaxed),
            self.points.load(Ordering::Relaxed),
        )
    }

    fn add(&self, points: u64) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.points.fetch_add(points, Ordering::Relaxed);
    }
}

#[derive(Deserialize)]
#[serde(bound(deserialize = "T: Deserialize<'de>"))]
struct Answer<T> {
    data: Option<T>,
    #[serde(default)]
    errors: Vec<AnswerError>,
}

#[derive(Deserialize)]
struct AnswerError {
    #[serde(default)]
    message: String,
    #[serde(default, rename = "type")]
    kind: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ThreadsData {
    repository: Option<RepositoryNode>,
    rate_limit: Option<RateLimitNode>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RepositoryNode {
    pull_request: Option<PullRequestNode>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PullRequestNode {
    review_threads: Connection<ThreadNode>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", bound(deserialize = "T: Deserialize<'de>"))]
struct Connection<T> {
    #[serde(default)]
    page_info: Option<PageInfo>,
    #[serde(default)]
    total_count: Option<u64>,
    #[serde(default)]
    nodes: Vec<Option<T>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PageInfo {
    has_next_page: bool,
    end_cursor: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ThreadNode {
    id: String,
    is_resolved: bool,
    is_outdated: bool,
    path: String,
    line: Option<u32>,
    original_line: Option<u32>,
    comments: Connection<CommentNode>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CommentNode {
    database_id: Option<u64>,
    #[serde(default)]
    body: String,
    author: Option<AuthorNode>,
}

#[derive(Deserialize)]
struct AuthorNode {
    login: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RateLimitNode {
    cost: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResolveData {
    resolve_review_thread: Option<Value>,
}

/// The GraphQL endpoint for a REST API root.
fn endpoint(api_url: &str) -> String {
    let root = api_url.trim_end_matches('/');
    match root.strip_suffix("/api/v3") {
        Some(host) => format!("{host}/api/graphql"),
        None => "/graphql".to_owned(),
    }
}

impl GitHubClient {
    /// What this client's GraphQL calls have cost so far.
    pub fn graphql_usage(&self) -> (u64, u64) {
        self.graphql_counter().totals()
    }

    /// Every review thread of a pull request, with its comments.
    ///
    /// # Errors
    ///
    /// GitHub refused (an `errors` entry: the message is GitHub's), the
    /// repository or pull request does not exist for this credential, or the
    /// answer could not be read.
    pub async fn review_threads(
        &self,
        repository: &RepositoryName,
        number: u64,
    ) -> Result<Vec<GraphQlThread>, GitHubError> {
        let mut threads = Vec::new();
        let mut after: Option<String> = None;
        for _ in 0..MAX_THREAD_PAGES {
            let variables = json!({
                "owner": repository.owner,
                "name": repository.name,
                "number": number,
                "after": after,
            });
            let data: ThreadsData = self
                .graphql(
                    repository,
                    "reviewThreads",
                    REVIEW_THREADS_QUERY,
                    variables,
                    Retry::Safe,
                )
                .await?;
            let points = data.rate_limit.map_or(1, |limit| limit.cost.max(1));
            self.graphql_counter().add(points);
            let connection = data
                .repository
                .and_then(|repository| repository.pull_request)
                .map(|pull| pull.review_threads)
                .ok_or_else(|| GitHubError::NotFound {
                    method: "POST".to_owned(),
                    route: ROUTE,
                    path: format!("pull request {repository}#{number} (GraphQL)"),
                })?;
            for node in connection.nodes.into_iter().flatten() {
                let read = node.comments.nodes.len() as u64;
                threads.push(GraphQlThread {
                    id: node.id,
                    is_resolved: node.is_resolved,
                    is_outdated: node.is_outdated,
                    path: node.path,
                    line: node.line,
                    original_line: node.original_line,
                    comments_truncated: node.comments.total_count.is_some_and(|total| total > read),
                    comments: node
                        .comments
                        .nodes
                        .into_iter()
                        .flatten()
                        .map(|comment| GraphQlComment {
                            database_id: comment.database_id,
                            author: comment.author.map(|author| author.login),
                            body: comment.body,
                        })
                        .collect(),
                });
            }
            match connection.page_info {
                Some(PageInfo {
                    has_next_page: true,
                    end_cursor: Some(cursor),
                }) => after = Some(cursor),
                _ => return Ok(threads),
            }
        }
        Err(GitHubError::IncompleteList {
            route: ROUTE,
            pages: MAX_THREAD_PAGES,
            what: "every review thread".to_owned(),
        })
    }

    /// Resolves one review thread (`resolveReviewThread`). Resolving a
    /// resolved thread changes nothing, so the call is safe to repeat.
    ///
    /// # Errors
    ///
    /// GitHub refused: an unknown thread id (`NOT_FOUND`), a credential that
    /// may not write to the repository (`FORBIDDEN`), …
    pub async fn resolve_review_thread(
        &self,
        repository: &RepositoryName,
        thread_id: &str,
    ) -> Result<(), GitHubError> {
        let data: ResolveData = self
            .graphql(
                repository,
                "resolveReviewThread",
                RESOLVE_THREAD_MUTATION,
                json!({ "threadId": thread_id }),
                Retry::Safe,
            )
            .await?;
        self.graphql_counter().add(1);
        if data.resolve_review_thread.is_none() {
            return Err(GitHubError::GraphQl {
                operation: "resolveReviewThread",
                message: format!("no thread came back for {thread_id}"),
            });
        }
        Ok(())
    }

    /// One GraphQL call: `query` with `variables`, the `errors` list turned
    /// into an error.
    async fn graphql<T: serde::de::DeserializeOwned>(
        &self,
        repository: &RepositoryName,
        operation: &'static str,
        query: &str,
        variables: Value,
        retry: Retry,
    ) -> Result<T, GitHubError> {
        let mut request = ApiRequest::write(
            Method::POST,
            ROUTE,
            endpoint(&self.settings().api_url),
            Some(json!({ "query": query, "variables": variables })),
            retry,
        );
        request.resource = "graphql";
        // A read is not spaced like a write; the mutation is.
        request.spaced = operation == "resolveReviewThread";
        let answer = self
            .send_expecting_success(&Scope::Repository(repository.clone()), &request)
            .await?;
        let answer: Answer<T> = decode(&request, &answer)?;
        if !answer.errors.is_empty() {
            let message = answer
                .errors
                .iter()
                .map(|error| match &error.kind {
                    Some(kind) => format!("{kind}: {}", error.message),
                    None => error.message.clone(),
                })
                .collect::<Vec<_>>()
                .join("; ");
            self.graphql_counter().add(1);
            return Err(GitHubError::GraphQl { operation, message });
        }
        let data = answer.data.ok_or_else(|| GitHubError::UnexpectedResponse {
            method: "POST".to_owned(),
            route: ROUTE,
            detail: "neither data nor errors".to_owned(),
        })?;
        Ok(data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_follows_the_api_root() {
        assert_eq!(endpoint("https://api.github.com"), "/graphql");
        assert_eq!(endpoint("http://127.0.0.1:8080/"), "/graphql");
        assert_eq!(
            endpoint("https://ghe.example.com/api/v3"),
            "https://ghe.example.com/api/graphql"
        );
    }
}
