//! Reading a pull request: its metadata, its diff, its files.

use http::StatusCode;

use crate::client::{GitHubClient, Scope, ensure_success, repository_path};
use crate::error::GitHubError;
use crate::model::{ChangedFiles, PullRequest, PullRequestCommit, PullRequestDiff, RepositoryName};
use crate::transport::{ApiRequest, DIFF_MEDIA_TYPE, SendFailure};
use crate::wire;

/// GitHub lists at most 3,000 files of a pull request.
pub const MAX_PULL_REQUEST_FILES: usize = 3_000;
/// GitHub lists at most 250 commits of a pull request.
pub const MAX_PULL_REQUEST_COMMITS: usize = 250;
/// The largest page GitHub serves.
pub(crate) const PAGE_SIZE: usize = 100;

impl GitHubClient {
    /// `GET /repos/{owner}/{repo}/pulls/{pull_number}` (conditional).
    pub async fn get_pull_request(
        &self,
        repository: &RepositoryName,
        number: u64,
    ) -> Result<PullRequest, GitHubError> {
        let request = ApiRequest::get(
            "/repos/{owner}/{repo}/pulls/{pull_number}",
            repository_path(repository, &["pulls", &number.to_string()]),
        );
        let (pull_request, _) = self
            .get_json::<wire::PullRequest>(&Scope::Repository(repository.clone()), &request)
            .await?;
        Ok(pull_request.into())
    }

    /// The pull request's unified diff (`application/vnd.github.diff`,
    /// conditional). When GitHub refuses it as too large (406, past 300 files
    /// or 20,000 lines), falls back to the per-file patches of the files list.
    pub async fn get_pull_request_diff(
        &self,
        repository: &RepositoryName,
        number: u64,
    ) -> Result<PullRequestDiff, GitHubError> {
        let mut request = ApiRequest::get(
            "/repos/{owner}/{repo}/pulls/{pull_number}",
            repository_path(repository, &["pulls", &number.to_string()]),
        );
        request.accept = DIFF_MEDIA_TYPE;
        let scope = Scope::Repository(repository.clone());
        let answer = match self.send(&scope, &request).await {
            Ok(answer) => answer,
            Err(SendFailure::Error(error)) => return Err(error),
            Err(SendFailure::MaybeApplied(_)) => unreachable!("GET is retried, never unsafe"),
        };
        if answer.status == StatusCode::NOT_ACCEPTABLE {
            tracing::info!(
                repository = %repository,
                pull_request = number,
                reason = %answer.error_message(),
                "GitHub refused the whole diff as too large; reading the per-file patches"
            );
            return Ok(PullRequestDiff::PerFile(
                self.list_pull_request_files(repository, number).await?,
            ));
        }
        let answer = ensure_success(&request, answer)?;
        Ok(PullRequestDiff::Unified(
            String::from_utf8_lossy(&answer.body).into_owned(),
        ))
    }

    /// `GET /repos/{owner}/{repo}/pulls/{pull_number}/files`, every page (up to
    /// GitHub's 3,000 files), conditional.
    pub async fn list_pull_request_files(
        &self,
        repository: &RepositoryName,
        number: u64,
    ) -> Result<ChangedFiles, GitHubError> {
        let paged = self
            .get_repository_pages(
                repository,
                "/repos/{owner}/{repo}/pulls/{pull_number}/files",
                &["pulls", &number.to_string(), "files"],
                MAX_PULL_REQUEST_FILES.div_ceil(PAGE_SIZE),
                |page: Vec<wire::DiffEntry>| page,
            )
            .await?;
        let truncated = paged.truncated || paged.items.len() >= MAX_PULL_REQUEST_FILES;
        Ok(ChangedFiles {
            files: paged.items.into_iter().map(Into::into).collect(),
            truncated,
        })
    }

    /// `GET /repos/{owner}/{repo}/pulls/{pull_number}/commits`, every page
    /// (GitHub lists at most 250), oldest first, conditional.
    pub async fn list_pull_request_commits(
        &self,
        repository: &RepositoryName,
        number: u64,
    ) -> Result<Vec<PullRequestCommit>, GitHubError> {
        let paged = self
            .get_repository_pages(
                repository,
                "/repos/{owner}/{repo}/pulls/{pull_number}/commits",
                &["pulls", &number.to_string(), "commits"],
                MAX_PULL_REQUEST_COMMITS.div_ceil(PAGE_SIZE),
                |page: Vec<wire::ListedCommit>| page,
            )
            .await?;
        Ok(paged.items.into_iter().map(Into::into).collect())
    }
}
