//! CI state of a commit: check runs, commit statuses, the combined status,
//! and the commit's own dates (the CI timeout is measured from them).

use crate::client::{GitHubClient, Scope, repository_path, with_query};
use crate::error::GitHubError;
use crate::model::{CiReport, CombinedStatus, CommitInfo, RepositoryName};
use crate::pulls::PAGE_SIZE;
use crate::transport::ApiRequest;
use crate::wire;

/// Pages of check runs or statuses we read at most.
const MAX_CI_PAGES: usize = 10;

impl GitHubClient {
    /// `GET /repos/{owner}/{repo}/commits/{ref}/check-runs`, every page.
    pub async fn list_check_runs(
        &self,
        repository: &RepositoryName,
        git_ref: &str,
    ) -> Result<Vec<crate::model::CheckRun>, GitHubError> {
        let paged = self
            .get_repository_pages(
                repository,
                "/repos/{owner}/{repo}/commits/{ref}/check-runs",
                &["commits", git_ref, "check-runs"],
                MAX_CI_PAGES,
                |page: wire::CheckRunList| page.check_runs,
            )
            .await?;
        Ok(paged.items.into_iter().map(Into::into).collect())
    }

    /// `GET /repos/{owner}/{repo}/commits/{ref}/statuses`, every page.
    pub async fn list_commit_statuses(
        &self,
        repository: &RepositoryName,
        git_ref: &str,
    ) -> Result<Vec<crate::model::CommitStatus>, GitHubError> {
        let paged = self
            .get_repository_pages(
                repository,
                "/repos/{owner}/{repo}/commits/{ref}/statuses",
                &["commits", git_ref, "statuses"],
                MAX_CI_PAGES,
                |page: Vec<wire::Status>| page,
            )
            .await?;
        Ok(paged.items.into_iter().map(Into::into).collect())
    }

    /// Check runs and statuses of `git_ref`, fetched in parallel. CI is
    /// decided from both: the combined status alone is `pending` for a
    /// repository that only uses checks.
    pub async fn ci_report(
        &self,
        repository: &RepositoryName,
        git_ref: &str,
    ) -> Result<CiReport, GitHubError> {
        let (check_runs, statuses) = futures::try_join!(
            self.list_check_runs(repository, git_ref),
            self.list_commit_statuses(repository, git_ref),
        )?;
        Ok(CiReport {
            check_runs,
            statuses,
        })
    }

    /// `GET /repos/{owner}/{repo}/commits/{ref}/status`.
    pub async fn get_combined_status(
        &self,
        repository: &RepositoryName,
        git_ref: &str,
    ) -> Result<CombinedStatus, GitHubError> {
        let request = ApiRequest::get(
            "/repos/{owner}/{repo}/commits/{ref}/status",
            with_query(
                &repository_path(repository, &["commits", git_ref, "status"]),
                &[("per_page", &PAGE_SIZE.to_string())],
            ),
        );
        let (combined, _) = self
            .get_json::<wire::CombinedStatus>(&Scope::Repository(repository.clone()), &request)
            .await?;
        Ok(CombinedStatus {
            state: combined.state,
            total_count: combined.total_count,
            statuses: combined.statuses.into_iter().map(Into::into).collect(),
        })
    }

    /// `GET /repos/{owner}/{repo}/commits/{ref}`: the commit's SHA and dates.
    pub async fn get_commit(
        &self,
        repository: &RepositoryName,
        git_ref: &str,
    ) -> Result<CommitInfo, GitHubError> {
        let request = ApiRequest::get(
            "/repos/{owner}/{repo}/commits/{ref}",
            repository_path(repository, &["commits", git_ref]),
        );
        let (commit, _) = self
            .get_json::<wire::Commit>(&Scope::Repository(repository.clone()), &request)
            .await?;
        Ok(CommitInfo {
            sha: commit.sha,
            committed_at: commit.commit.committer.and_then(|user| user.date),
            authored_at: commit.commit.author.and_then(|user| user.date),
        })
    }
}
