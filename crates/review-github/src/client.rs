//! The client: construction, credential resolution, and the typed helpers
//! every operation module uses (JSON decoding, pagination, status mapping).
//!
//! Authentication is octocrab's: a personal access token is a static header;
//! a GitHub App signs a JWT per `/app/...` request, and for everything else we
//! hand octocrab an installation id, and it mints, caches, refreshes (30 s
//! before expiry) and, after a 401, re-mints the installation token once. We
//! find the installation per repository (`GET /repos/{o}/{r}/installation`) or
//! per account (`GET /app/installations`) and cache it.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use http::StatusCode;
use octocrab::Octocrab;
use octocrab::models::{AppId, InstallationId};
use secrecy::ExposeSecret;
use serde::de::DeserializeOwned;

use crate::error::{CredentialKind, GitHubError};
use crate::model::{RateLimitSnapshot, RepositoryName};
use crate::pagination::next_page_path;
use crate::pulls::PAGE_SIZE;
use crate::settings::{ClientSettings, Credentials};
use crate::transport::{ApiRequest, ApiResponse, RecordedWait, SendFailure, Transport};
use crate::wire;

/// Whose credential a request needs.
#[derive(Debug, Clone)]
pub(crate) enum Scope {
    /// A repository's (its App installation, or the token).
    Repository(RepositoryName),
    /// An account's (the installation on that organisation or user).
    Account(String),
    /// The App itself (JWT), for `/app/...` endpoints; the token with a PAT.
    App,
    /// An installation chosen by id (`/installation/...`), or the token.
    Installation(u64),
}

/// A resolved credential: the octocrab instance that carries it (shared, not
/// cloned: cloning an installation's octocrab copies its token cache, so a
/// token minted by the copy would be lost).
struct Resolved {
    client: Arc<Octocrab>,
    credential: CredentialKind,
    cache_scope: String,
}

enum Authentication {
    Token(Arc<Octocrab>),
    App {
        app_client: Arc<Octocrab>,
        pinned_installation: Option<u64>,
        /// `owner/name` → installation id.
        by_repository: Mutex<HashMap<String, u64>>,
        /// Lower-cased account login → installation id.
        by_account: Mutex<HashMap<String, u64>>,
        /// Installation id → octocrab carrying that installation's token cache.
        installations: Mutex<HashMap<u64, Arc<Octocrab>>>,
    },
}

struct Inner {
    transport: Transport,
    authentication: Authentication,
}

/// The GitHub REST client. Cheap to clone; clones share the credential,
/// caches, rate-limit state and write spacing.
#[derive(Clone)]
pub struct GitHubClient {
    inner: Arc<Inner>,
}

impl fmt::Debug for GitHubClient {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let settings = self.inner.transport.settings();
        formatter
            .debug_struct("GitHubClient")
            .field("api_url", &settings.api_url)
            .field("credentials", &settings.credentials)
            .field("write_spacing", &settings.write_spacing)
            .finish_non_exhaustive()
    }
}

impl GitHubClient {
    /// Builds a client. Fails with a clear message for a malformed URL, token
    /// or private key; it does not contact GitHub.
    pub fn new(settings: ClientSettings) -> Result<Self, GitHubError> {
        let builder = || -> Result<_, GitHubError> {
            Octocrab::builder()
                .base_uri(settings.api_url.trim_end_matches('/'))
                .map_err(|error| {
                    GitHubError::Settings(format!(
                        "the GitHub API URL {:?} is not a valid URL ({error}); set \
                         REVIEW_BOT_GITHUB_API_URL to e.g. https://api.github.com or \
                         https://HOST/api/v3",
                        settings.api_url
                    ))
                })
        };
        let authentication = match &settings.credentials {
            Credentials::PersonalAccessToken(token) => {
                let token = Credentials::validated_token(token)?;
                let client = builder()?
                    .personal_token(token.expose_secret().to_owned())
                    .build()
                    .map_err(|error| {
                        GitHubError::Settings(format!("could not build the HTTP client: {error}"))
                    })?;
                Authentication::Token(Arc::new(client))
            }
            Credentials::App {
                app_id,
                private_key_pem,
                installation_id,
            } => {
                let key = octocrab::auth::EncodingKey::from_rsa_pem(
                    private_key_pem.expose_secret().as_bytes(),
                )
                .map_err(|_| {
                    GitHubError::Settings(
                        "the GitHub App private key is not an RSA key in PEM format; download a \
                         new one from the App's settings page and point \
                         REVIEW_BOT_GITHUB_APP_PRIVATE_KEY_FILE at it"
                            .to_owned(),
                    )
                })?;
                let app_client = builder()?
                    .app(AppId(*app_id), key)
                    .build()
                    .map_err(|error| {
                        GitHubError::Settings(format!("could not build the HTTP client: {error}"))
                    })?;
                Authentication::App {
                    app_client: Arc::new(app_client),
                    pinned_installation: *installation_id,
                    by_repository: Mutex::new(HashMap::new()),
                    by_account: Mutex::new(HashMap::new()),
                    installations: Mutex::new(HashMap::new()),
                }
            }
        };
        Ok(Self {
            inner: Arc::new(Inner {
                transport: Transport::new(settings),
                authentication,
            }),
        })
    }

    /// The latest rate-limit budget per resource, as GitHub's answers reported
    /// it (for metrics and the dashboard).
    pub fn rate_limit_state(&self) -> Vec<RateLimitSnapshot> {
        self.inner.transport.rate_limits().all()
    }

    /// The most recent waits (rate limits, backoff, write spacing), oldest first.
    pub fn recent_waits(&self) -> Vec<RecordedWait> {
        self.inner.transport.recent_waits()
    }

    /// Entries and bytes held by the conditional-request cache.
    pub fn conditional_cache_usage(&self) -> (usize, usize) {
        self.inner.transport.cache_usage()
    }

    pub(crate) fn settings(&self) -> &ClientSettings {
        self.inner.transport.settings()
    }

    pub(crate) fn record_rate_limit(&self, snapshot: RateLimitSnapshot) {
        self.inner.transport.rate_limits().record(snapshot);
    }

    /// Sends one request with the credential `scope` needs.
    pub(crate) async fn send(
        &self,
        scope: &Scope,
        request: &ApiRequest,
    ) -> Result<ApiResponse, SendFailure> {
        let resolved = self.resolve(scope).await?;
        self.inner
            .transport
            .send(
                &resolved.client,
                resolved.credential,
                &resolved.cache_scope,
                request,
            )
            .await
    }

    /// Sends a request that is safe to retry and turns error statuses into errors.
    pub(crate) async fn send_expecting_success(
        &self,
        scope: &Scope,
        request: &ApiRequest,
    ) -> Result<ApiResponse, GitHubError> {
        let answer = self
            .send(scope, request)
            .await
            .map_err(|failure| match failure {
                SendFailure::Error(error) => error,
                SendFailure::MaybeApplied(cause) => GitHubError::WriteUnconfirmed {
                    what: format!("{} {}", request.method, request.route),
                    cause,
                    check: "no check exists for this call".to_owned(),
                },
            })?;
        ensure_success(request, answer)
    }

    /// Sends a GET and decodes its JSON.
    pub(crate) async fn get_json<T: DeserializeOwned>(
        &self,
        scope: &Scope,
        request: &ApiRequest,
    ) -> Result<(T, bool), GitHubError> {
        let answer = self.send_expecting_success(scope, request).await?;
        Ok((decode(request, &answer)?, answer.from_cache))
    }

    /// Follows `Link: rel="next"` from `first`, decoding each page with
    /// `items`, for at most `max_pages` pages. Returns the items, whether the
    /// page cap cut the list short, and whether every page came from the cache.
    pub(crate) async fn get_all_pages<Page, Item>(
        &self,
        scope: &Scope,
        first: ApiRequest,
        max_pages: usize,
        mut items: impl FnMut(Page) -> Vec<Item>,
    ) -> Result<Paged<Item>, GitHubError>
    where
        Page: DeserializeOwned,
    {
        let mut collected = Vec::new();
        let mut request = first;
        let mut pages = 0;
        let mut all_cached = true;
        loop {
            let answer = self.send_expecting_success(scope, &request).await?;
            pages += 1;
            all_cached &= answer.from_cache;
            let page: Page = decode(&request, &answer)?;
            collected.extend(items(page));
            let next = answer
                .headers
                .get(http::header::LINK)
                .and_then(|value| value.to_str().ok())
                .and_then(next_page_path);
            match next {
                Some(path) if pages < max_pages => request.path = path,
                Some(_) => {
                    tracing::warn!(
                        route = request.route,
                        pages,
                        "stopped following pages at the cap; the list is incomplete"
                    );
                    return Ok(Paged {
                        items: collected,
                        truncated: true,
                        unchanged: all_cached,
                    });
                }
                None => {
                    return Ok(Paged {
                        items: collected,
                        truncated: false,
                        unchanged: all_cached,
                    });
                }
            }
        }
    }

    /// Every page of the repository list operation `route` (the path is the
    /// repository's followed by `segments`), 100 items per page, for at most
    /// `max_pages` pages; `items` takes a page's entries out of its JSON.
    pub(crate) async fn get_repository_pages<Page, Item>(
        &self,
        repository: &RepositoryName,
        route: &'static str,
        segments: &[&str],
        max_pages: usize,
        items: impl FnMut(Page) -> Vec<Item>,
    ) -> Result<Paged<Item>, GitHubError>
    where
        Page: DeserializeOwned,
    {
        let request = ApiRequest::get(
            route,
            with_query(
                &repository_path(repository, segments),
                &[("per_page", &PAGE_SIZE.to_string())],
            ),
        );
        self.get_all_pages(
            &Scope::Repository(repository.clone()),
            request,
            max_pages,
            items,
        )
        .await
    }

    /// Whose budget a request in `scope` spends (`token`, `app`, `installation:{id}`).
    pub(crate) async fn credential_label(&self, scope: &Scope) -> Result<String, GitHubError> {
        Ok(self.resolve(scope).await?.cache_scope)
    }

    /// The credential for `scope`, looking up (and caching) App installations.
    async fn resolve(&self, scope: &Scope) -> Result<Resolved, GitHubError> {
        let (app_client, pinned) = match &self.inner.authentication {
            Authentication::Token(client) => {
                return Ok(Resolved {
                    client: client.clone(),
                    credential: CredentialKind::PersonalAccessToken,
                    cache_scope: "token".to_owned(),
                });
            }
            Authentication::App {
                app_client,
                pinned_installation,
                ..
            } => (app_client, *pinned_installation),
        };
        let installation_id = match (scope, pinned) {
            (Scope::App, _) => {
                return Ok(Resolved {
                    client: app_client.clone(),
                    credential: CredentialKind::AppJsonWebToken,
                    cache_scope: "app".to_owned(),
                });
            }
            (Scope::Installation(id), _) => *id,
            (_, Some(pinned)) => pinned,
            (Scope::Repository(repository), None) => {
                Box::pin(self.installation_for_repository(repository)).await?
            }
            (Scope::Account(account), None) => {
                Box::pin(self.installation_for_account(account)).await?
            }
        };
        self.installation_client(installation_id)
    }

    fn installation_client(&self, installation_id: u64) -> Result<Resolved, GitHubError> {
        let Authentication::App {
            app_client,
            installations,
            ..
        } = &self.inner.authentication
        else {
            unreachable!("installations exist only with App authentication");
        };
        let mut installations = installations.lock().expect("installations lock");
        let client = if let Some(client) = installations.get(&installation_id) {
            client.clone()
        } else {
            let client = Arc::new(
                app_client
                    .installation(InstallationId(installation_id))
                    .map_err(|error| {
                        GitHubError::Settings(format!(
                            "could not use installation {installation_id}: {error}"
                        ))
                    })?,
            );
            installations.insert(installation_id, client.clone());
            client
        };
        Ok(Resolved {
            client,
            credential: CredentialKind::AppInstallationToken,
            cache_scope: format!("installation:{installation_id}"),
        })
    }

    /// `GET /repos/{owner}/{repo}/installation`, cached.
    async fn installation_for_repository(
        &self,
        repository: &RepositoryName,
    ) -> Result<u64, GitHubError> {
        let Authentication::App { by_repository, .. } = &self.inner.authentication else {
            unreachable!("installations exist only with App authentication");
        };
        let key = repository.to_string();
        if let Some(id) = by_repository
            .lock()
            .expect("installation map lock")
            .get(&key)
        {
            return Ok(*id);
        }
        let installation = self.get_repository_installation(repository).await?;
        by_repository
            .lock()
            .expect("installation map lock")
            .insert(key, installation.id);
        Ok(installation.id)
    }

    /// The installation on `account`, from `GET /app/installations`, cached.
    async fn installation_for_account(&self, account: &str) -> Result<u64, GitHubError> {
        let Authentication::App { by_account, .. } = &self.inner.authentication else {
            unreachable!("installations exist only with App authentication");
        };
        let key = account.to_ascii_lowercase();
        if let Some(id) = by_account.lock().expect("installation map lock").get(&key) {
            return Ok(*id);
        }
        let installations = self.list_app_installations().await?;
        let mut map = by_account.lock().expect("installation map lock");
        for installation in &installations {
            if let Some(login) = &installation.account_login {
                map.insert(login.to_ascii_lowercase(), installation.id);
            }
        }
        map.get(&key)
            .copied()
            .ok_or_else(|| GitHubError::NoInstallation {
                target: format!("the account {account}"),
            })
    }

    /// Forgets the cached installation of `repository` (after GitHub said it is gone).
    pub(crate) fn forget_installation(&self, repository: &RepositoryName) {
        if let Authentication::App { by_repository, .. } = &self.inner.authentication {
            by_repository
                .lock()
                .expect("installation map lock")
                .remove(&repository.to_string());
        }
    }
}

/// A list gathered across pages.
#[derive(Debug)]
pub(crate) struct Paged<T> {
    pub items: Vec<T>,
    pub truncated: bool,
    pub unchanged: bool,
}

/// Decodes a JSON answer, or says what was wrong with it.
pub(crate) fn decode<T: DeserializeOwned>(
    request: &ApiRequest,
    answer: &ApiResponse,
) -> Result<T, GitHubError> {
    serde_json::from_slice(&answer.body).map_err(|error| GitHubError::UnexpectedResponse {
        method: request.method.to_string(),
        route: request.route,
        detail: format!("not the JSON GitHub documents: {error}"),
    })
}

/// Turns a non-2xx answer into the matching error.
pub(crate) fn ensure_success(
    request: &ApiRequest,
    answer: ApiResponse,
) -> Result<ApiResponse, GitHubError> {
    if answer.status.is_success() {
        return Ok(answer);
    }
    Err(status_error(request, &answer))
}

/// The error for a non-2xx answer.
pub(crate) fn status_error(request: &ApiRequest, answer: &ApiResponse) -> GitHubError {
    let method = request.method.to_string();
    let route = request.route;
    let body: wire::ErrorBody = answer.error_body();
    match answer.status {
        StatusCode::FORBIDDEN => GitHubError::Forbidden {
            method,
            route,
            message: answer.error_message(),
        },
        StatusCode::NOT_FOUND => GitHubError::NotFound {
            method,
            route,
            path: request
                .path
                .split('?')
                .next()
                .unwrap_or_default()
                .to_owned(),
        },
        StatusCode::UNPROCESSABLE_ENTITY => GitHubError::Unprocessable {
            method,
            route,
            message: answer.error_message(),
            errors: body.error_texts(),
        },
        status => GitHubError::UnexpectedStatus {
            status: status.as_u16(),
            method,
            route,
            message: answer.error_message(),
        },
    }
}

/// Percent-encodes path segments (label names, refs) into `/a/b/c`.
pub(crate) fn encoded_path(segments: &[&str]) -> String {
    let mut url = url::Url::parse("http://encoder.invalid/").expect("static URL parses");
    url.path_segments_mut()
        .expect("http URLs have path segments")
        .extend(segments);
    url.path().to_owned()
}

/// `/repos/{owner}/{repo}` followed by `rest`, encoded.
pub(crate) fn repository_path(repository: &RepositoryName, rest: &[&str]) -> String {
    let mut segments = vec!["repos", repository.owner.as_str(), repository.name.as_str()];
    segments.extend_from_slice(rest);
    encoded_path(&segments)
}

/// A query string from pairs.
pub(crate) fn with_query(path: &str, pairs: &[(&str, &str)]) -> String {
    let query = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish();
    format!("{path}?{query}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_segments_are_encoded() {
        assert_eq!(
            encoded_path(&[
                "repos",
                "o",
                "r",
                "issues",
                "1",
                "labels",
                "needs review/now"
            ]),
            "/repos/o/r/issues/1/labels/needs%20review%2Fnow"
        );
    }

    #[test]
    fn queries_are_form_encoded() {
        assert_eq!(
            with_query("/search/issues", &[("q", "label:\"bot review\" org:acme")]),
            "/search/issues?q=label%3A%22bot+review%22+org%3Aacme"
        );
    }
}
