//! A pull request's labels — the state machine's truth. Every call here is
//! idempotent in effect (adding a present label, setting the same set,
//! removing an absent label), so all are retried like reads.

use http::{Method, StatusCode};

use crate::client::{GitHubClient, Scope, decode, ensure_success, repository_path};
use crate::error::GitHubError;
use crate::model::RepositoryName;
use crate::transport::{ApiRequest, Retry, SendFailure};
use crate::wire;

/// Pages of labels we read at most.
const MAX_LABEL_PAGES: usize = 10;

impl GitHubClient {
    /// `GET /repos/{owner}/{repo}/issues/{issue_number}/labels`, every page.
    pub async fn list_labels(
        &self,
        repository: &RepositoryName,
        number: u64,
    ) -> Result<Vec<String>, GitHubError> {
        let paged = self
            .get_repository_pages(
                repository,
                "/repos/{owner}/{repo}/issues/{issue_number}/labels",
                &["issues", &number.to_string(), "labels"],
                MAX_LABEL_PAGES,
                |page: Vec<wire::Label>| page,
            )
            .await?;
        Ok(paged.items.into_iter().map(|label| label.name).collect())
    }

    /// Adds `labels` (GitHub creates a label the repository lacks). Returns
    /// the pull request's labels afterwards.
    pub async fn add_labels(
        &self,
        repository: &RepositoryName,
        number: u64,
        labels: &[String],
    ) -> Result<Vec<String>, GitHubError> {
        if labels.is_empty() {
            return self.list_labels(repository, number).await;
        }
        self.write_labels(
            Method::POST,
            "/repos/{owner}/{repo}/issues/{issue_number}/labels",
            repository,
            number,
            labels,
        )
        .await
    }

    /// Replaces the pull request's labels with `labels`. An empty set removes
    /// each present label (the set-labels body requires at least one).
    pub async fn set_labels(
        &self,
        repository: &RepositoryName,
        number: u64,
        labels: &[String],
    ) -> Result<Vec<String>, GitHubError> {
        if labels.is_empty() {
            for label in self.list_labels(repository, number).await? {
                self.remove_label(repository, number, &label).await?;
            }
            return Ok(Vec::new());
        }
        self.write_labels(
            Method::PUT,
            "/repos/{owner}/{repo}/issues/{issue_number}/labels",
            repository,
            number,
            labels,
        )
        .await
    }

    /// Removes `label`. Returns `false` when the pull request did not have it
    /// (GitHub's 404 there is not an error for us).
    pub async fn remove_label(
        &self,
        repository: &RepositoryName,
        number: u64,
        label: &str,
    ) -> Result<bool, GitHubError> {
        let request = ApiRequest::write(
            Method::DELETE,
            "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}",
            repository_path(
                repository,
                &["issues", &number.to_string(), "labels", label],
            ),
            None,
            Retry::Safe,
        );
        let answer = match self
            .send(&Scope::Repository(repository.clone()), &request)
            .await
        {
            Ok(answer) => answer,
            Err(SendFailure::Error(error)) => return Err(error),
            Err(SendFailure::MaybeApplied(_)) => unreachable!("label removal is retried safely"),
        };
        if answer.status == StatusCode::NOT_FOUND {
            tracing::debug!(repository = %repository, pull_request = number, label, "label was not present");
            return Ok(false);
        }
        ensure_success(&request, answer)?;
        Ok(true)
    }

    async fn write_labels(
        &self,
        method: Method,
        route: &'static str,
        repository: &RepositoryName,
        number: u64,
        labels: &[String],
    ) -> Result<Vec<String>, GitHubError> {
        let request = ApiRequest::write(
            method,
            route,
            repository_path(repository, &["issues", &number.to_string(), "labels"]),
            Some(serde_json::to_value(wire::Labels { labels }).expect("labels serialise")),
            Retry::Safe,
        );
        let answer = self
            .send_expecting_success(&Scope::Repository(repository.clone()), &request)
            .await?;
        let labels: Vec<wire::Label> = decode(&request, &answer)?;
        Ok(labels.into_iter().map(|label| label.name).collect())
    }
}
