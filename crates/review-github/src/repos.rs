//! A repository's own facts: where to clone it from and its default branch
//! (`doctor --repo` resolves the default branch's build commands).

use serde::Deserialize;

use crate::client::{GitHubClient, Scope, repository_path};
use crate::error::GitHubError;
use crate::model::{RepositoryInfo, RepositoryName};
use crate::transport::ApiRequest;

/// `repository` (the fields we read).
#[derive(Debug, Deserialize)]
struct Repository {
    clone_url: Option<String>,
    default_branch: Option<String>,
}

impl GitHubClient {
    /// `GET /repos/{owner}/{repo}`: the clone URL and default branch.
    pub async fn get_repository(
        &self,
        repository: &RepositoryName,
    ) -> Result<RepositoryInfo, GitHubError> {
        let request = ApiRequest::get("/repos/{owner}/{repo}", repository_path(repository, &[]));
        let (found, _) = self
            .get_json::<Repository>(&Scope::Repository(repository.clone()), &request)
            .await?;
        Ok(RepositoryInfo {
            clone_url: found.clone_url,
            default_branch: found.default_branch.unwrap_or_else(|| "main".to_owned()),
        })
    }
}
