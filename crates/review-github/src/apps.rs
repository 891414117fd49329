//! GitHub App installations and the rate-limit endpoint.

use chrono::DateTime;

use crate::client::{GitHubClient, Scope, repository_path, with_query};
use crate::error::GitHubError;
use crate::model::{Installation, RateLimitSnapshot, RepositoryName};
use crate::pulls::PAGE_SIZE;
use crate::transport::ApiRequest;
use crate::wire;

/// Pages of installations or repositories we read at most.
const MAX_INSTALLATION_PAGES: usize = 50;

impl GitHubClient {
    /// `GET /app/installations` (as the App, with its JWT), every page.
    pub async fn list_app_installations(&self) -> Result<Vec<Installation>, GitHubError> {
        let mut request = ApiRequest::get(
            "/app/installations",
            with_query(
                "/app/installations",
                &[("per_page", &PAGE_SIZE.to_string())],
            ),
        );
        // Each JWT request is signed afresh; nothing to revalidate against.
        request.conditional = false;
        let paged = self
            .get_all_pages(
                &Scope::App,
                request,
                MAX_INSTALLATION_PAGES,
                |page: Vec<wire::Installation>| page,
            )
            .await?;
        Ok(paged.items.into_iter().map(Into::into).collect())
    }

    /// `GET /repos/{owner}/{repo}/installation` (as the App): the installation
    /// covering `repository`.
    pub async fn get_repository_installation(
        &self,
        repository: &RepositoryName,
    ) -> Result<Installation, GitHubError> {
        let mut request = ApiRequest::get(
            "/repos/{owner}/{repo}/installation",
            repository_path(repository, &["installation"]),
        );
        request.conditional = false;
        match self
            .get_json::<wire::Installation>(&Scope::App, &request)
            .await
        {
            Ok((installation, _)) => Ok(installation.into()),
            Err(GitHubError::NotFound { .. }) => Err(GitHubError::NoInstallation {
                target: repository.to_string(),
                message: "404 Not Found on GET /repos/{owner}/{repo}/installation".to_owned(),
            }),
            Err(error) => Err(error),
        }
    }

    /// `GET /user`: the login of the personal access token's user (an
    /// installation token has no user: GitHub answers 403, returned as the
    /// error). Conditional, so asking again costs nothing.
    pub async fn authenticated_user_login(&self) -> Result<String, GitHubError> {
        let request = ApiRequest::get("/user", "/user".to_owned());
        let (user, _) = self
            .get_json::<wire::AuthenticatedUser>(&Scope::App, &request)
            .await?;
        Ok(user.login)
    }

    /// The login everything the bot writes is posted as: with an App,
    /// `{slug}[bot]` read from the installation covering `repository`; with a
    /// personal access token, the token's user from `GET /user`. The bot
    /// recognises its own reviews, replies and `thread::` ids by this login,
    /// and counts review cycles with it, so callers must not go on without
    /// it (`github.bot_login` overrides it).
    pub async fn bot_login(&self, repository: &RepositoryName) -> Result<String, GitHubError> {
        if self.is_app() {
            match self.app_bot_login(repository).await? {
                Some(login) => Ok(login),
                None => Err(GitHubError::UnexpectedResponse {
                    method: "GET".to_owned(),
                    route: "/repos/{owner}/{repo}/installation",
                    detail: "the installation does not name its App (no app_slug); set \
                             github.bot_login to the App's login, SLUG[bot]"
                        .to_owned(),
                }),
            }
        } else {
            self.authenticated_user_login().await
        }
    }

    /// The login the App posts as in `repository` (`{slug}[bot]`), read from
    /// the installation covering it; `None` with a personal access token
    /// ([`GitHubClient::bot_login`] asks `GET /user` for that).
    pub async fn app_bot_login(
        &self,
        repository: &RepositoryName,
    ) -> Result<Option<String>, GitHubError> {
        if !self.is_app() {
            return Ok(None);
        }
        let installation = self.get_repository_installation(repository).await?;
        Ok(installation.app_slug.map(|slug| format!("{slug}[bot]")))
    }

    /// `GET /installation/repositories` with installation `installation_id`'s
    /// token (with a personal access token, that token): the repositories it
    /// can reach.
    pub async fn list_installation_repositories(
        &self,
        installation_id: u64,
    ) -> Result<Vec<RepositoryName>, GitHubError> {
        let request = ApiRequest::get(
            "/installation/repositories",
            with_query(
                "/installation/repositories",
                &[("per_page", &PAGE_SIZE.to_string())],
            ),
        );
        let paged = self
            .get_all_pages(
                &Scope::Installation(installation_id),
                request,
                MAX_INSTALLATION_PAGES,
                |page: wire::InstallationRepositories| page.repositories,
            )
            .await?;
        paged
            .items
            .into_iter()
            .map(|repository| RepositoryName::parse(&repository.full_name))
            .collect()
    }

    /// `GET /rate_limit`: every budget (this call itself is free). The
    /// answer also updates [`GitHubClient::rate_limit_state`].
    pub async fn get_rate_limit(
        &self,
        scope_repository: Option<&RepositoryName>,
    ) -> Result<Vec<RateLimitSnapshot>, GitHubError> {
        let mut request = ApiRequest::get("/rate_limit", "/rate_limit".to_owned());
        request.conditional = false;
        let scope = match scope_repository {
            Some(repository) => Scope::Repository(repository.clone()),
            None => Scope::App,
        };
        let credential = self.credential_label(&scope).await?;
        let (overview, _) = self
            .get_json::<wire::RateLimitOverview>(&scope, &request)
            .await?;
        let snapshots: Vec<RateLimitSnapshot> = overview
            .resources
            .into_iter()
            .filter_map(|(resource, limit)| {
                Some(RateLimitSnapshot {
                    credential: credential.clone(),
                    resource,
                    limit: limit.limit,
                    remaining: limit.remaining,
                    used: limit.used,
                    reset_at: DateTime::from_timestamp(limit.reset, 0)?,
                })
            })
            .collect();
        for snapshot in &snapshots {
            self.record_rate_limit(snapshot.clone());
        }
        Ok(snapshots)
    }
}
