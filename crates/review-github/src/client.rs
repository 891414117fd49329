//! The client: construction, credential resolution, and the typed helpers
//! every operation module uses (JSON decoding, pagination, status mapping).
//!
//! Authentication: a personal access token is a static header; a GitHub App
//! signs a JWT per `/app/...` request (octocrab). Installation tokens we mint
//! ourselves through the transport (`POST /app/installations/{id}/access_tokens`
//! with the JWT), so a rate-limited mint is retried under the rate-limit rules
//! with GitHub's `retry-after` and message kept; we cache each token, refresh
//! it 30 s before expiry, and send it through octocrab as a bearer token. We
//! find the installation per repository (`GET /repos/{o}/{r}/installation`) or
//! per account (`GET /app/installations`) and cache it.
//!
//! Recovery: a 401 on an installation token drops the token and mints a new
//! one; a mint answered 404 or 403 (the App was uninstalled, reinstalled under
//! a new id, or suspended) forgets the cached installation and looks it up
//! again. Each call re-mints once and looks up once at most, then reports
//! GitHub's message.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use http::{Method, StatusCode};
use octocrab::Octocrab;
use octocrab::models::AppId;
use secrecy::{ExposeSecret, SecretString};
use serde::de::DeserializeOwned;

use crate::error::{CredentialKind, GitHubError};
use crate::model::{RateLimitSnapshot, RepositoryName};
use crate::pagination::next_page_path;
use crate::pulls::PAGE_SIZE;
use crate::settings::{ClientSettings, Credentials};
use crate::transport::{ApiRequest, ApiResponse, RecordedWait, Retry, SendFailure, Transport};
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

/// A resolved credential: the octocrab instance that carries it.
struct Resolved {
    client: Arc<Octocrab>,
    credential: CredentialKind,
    cache_scope: String,
    /// The installation, for an installation token.
    installation: Option<u64>,
}

/// A minted installation token, carried by an octocrab instance that sends it.
struct MintedToken {
    client: Arc<Octocrab>,
    /// The token itself, for git over HTTPS (`GitHubClient::git_token`).
    token: SecretString,
    expires_at: Option<DateTime<Utc>>,
}

impl MintedToken {
    /// Usable for at least 30 more seconds (octocrab's margin, kept).
    fn fresh(&self, now: DateTime<Utc>) -> bool {
        self.expires_at
            .is_none_or(|expires_at| expires_at - chrono::Duration::seconds(30) > now)
    }
}

#[expect(
    clippy::large_enum_variant,
    reason = "one per client, behind its Arc; boxing would only add a pointer chase"
)]
enum Authentication {
    Token(Arc<Octocrab>),
    App {
        app_client: Arc<Octocrab>,
        pinned_installation: Option<u64>,
        /// `owner/name` → installation id.
        by_repository: Mutex<HashMap<String, u64>>,
        /// Lower-cased account login → installation id.
        by_account: Mutex<HashMap<String, u64>>,
        /// Installation id → its current token.
        tokens: Mutex<HashMap<u64, MintedToken>>,
        /// Held while minting, so concurrent calls mint one token, not one each.
        minting: tokio::sync::Mutex<()>,
    },
}

struct Inner {
    transport: Transport,
    authentication: Authentication,
    /// GraphQL requests and points spent.
    graphql: crate::graphql::GraphQlUsage,
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
                    tokens: Mutex::new(HashMap::new()),
                    minting: tokio::sync::Mutex::new(()),
                }
            }
        };
        Ok(Self {
            inner: Arc::new(Inner {
                transport: Transport::new(settings),
                authentication,
                graphql: crate::graphql::GraphQlUsage::default(),
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

    /// The GraphQL usage counter.
    pub(crate) fn graphql_counter(&self) -> &crate::graphql::GraphQlUsage {
        &self.inner.graphql
    }

    pub(crate) fn settings(&self) -> &ClientSettings {
        self.inner.transport.settings()
    }

    pub(crate) fn record_wait(
        &self,
        route: &'static str,
        reason: crate::transport::WaitReason,
        duration: std::time::Duration,
    ) {
        self.inner.transport.record_wait(route, reason, duration);
    }

    pub(crate) fn record_rate_limit(&self, snapshot: RateLimitSnapshot) {
        self.inner.transport.rate_limits().record(snapshot);
    }

    /// Sends one request with the credential `scope` needs. With a GitHub
    /// App, a refused installation token is minted again and a vanished or
    /// suspended installation is looked up again (see the module doc).
    pub(crate) async fn send(
        &self,
        scope: &Scope,
        request: &ApiRequest,
    ) -> Result<ApiResponse, SendFailure> {
        let (mut reminted, mut looked_up_again) = (false, false);
        loop {
            let resolved = match self.resolve(scope).await {
                Ok(resolved) => resolved,
                Err(GitHubError::NoInstallation { .. })
                    if !looked_up_again && self.forget_installation_of(scope) =>
                {
                    looked_up_again = true;
                    tracing::warn!(
                        route = request.route,
                        "the GitHub App installation is gone or suspended; looking it up again"
                    );
                    continue;
                }
                Err(error) => return Err(error.into()),
            };
            let result = self
                .inner
                .transport
                .send(
                    &resolved.client,
                    resolved.credential,
                    &resolved.cache_scope,
                    request,
                )
                .await;
            if let (Err(SendFailure::Error(GitHubError::Unauthorized { .. })), Some(installation)) =
                (&result, resolved.installation)
                && !reminted
            {
                reminted = true;
                tracing::warn!(
                    route = request.route,
                    installation,
                    "GitHub refused the installation token; minting a new one"
                );
                self.forget_token(installation);
                continue;
            }
            return result;
        }
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
            let next = match answer.headers.get(http::header::LINK) {
                None => None,
                Some(value) => value
                    .to_str()
                    .map_err(|_| "it is not text".to_owned())
                    .and_then(next_page_path)
                    .map_err(|problem| GitHubError::UnexpectedResponse {
                        method: request.method.to_string(),
                        route: request.route,
                        detail: format!(
                            "its Link header could not be parsed ({problem}), so the list may be \
                             incomplete"
                        ),
                    })?,
            };
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
                        pages,
                        route: request.route,
                    });
                }
                None => {
                    return Ok(Paged {
                        items: collected,
                        truncated: false,
                        unchanged: all_cached,
                        pages,
                        route: request.route,
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
                    installation: None,
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
                    installation: None,
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
        let client = Box::pin(self.installation_token(installation_id)).await?;
        Ok(Resolved {
            client,
            credential: CredentialKind::AppInstallationToken,
            cache_scope: format!("installation:{installation_id}"),
            installation: Some(installation_id),
        })
    }

    /// An octocrab carrying a fresh token of `installation_id`, minted when
    /// the cached one is missing or about to expire.
    async fn installation_token(&self, installation_id: u64) -> Result<Arc<Octocrab>, GitHubError> {
        let Authentication::App {
            app_client,
            tokens,
            minting,
            ..
        } = &self.inner.authentication
        else {
            unreachable!("installations exist only with App authentication");
        };
        let cached = |now| {
            tokens
                .lock()
                .expect("installation tokens lock")
                .get(&installation_id)
                .filter(|token| token.fresh(now))
                .map(|token| token.client.clone())
        };
        if let Some(client) = cached(Utc::now()) {
            return Ok(client);
        }
        let _minting = minting.lock().await;
        if let Some(client) = cached(Utc::now()) {
            return Ok(client);
        }
        let route = "/app/installations/{installation_id}/access_tokens";
        let mut request = ApiRequest::write(
            Method::POST,
            route,
            format!("/app/installations/{installation_id}/access_tokens"),
            Some(serde_json::json!({})),
            // A second token is harmless: minting is safe to repeat.
            Retry::Safe,
        );
        // Minting creates no content: no write spacing.
        request.spaced = false;
        let answer = self
            .inner
            .transport
            .send(app_client, CredentialKind::AppJsonWebToken, "app", &request)
            .await
            .map_err(|failure| match failure {
                SendFailure::Error(error) => error,
                SendFailure::MaybeApplied(cause) => GitHubError::Transport {
                    method: "POST".to_owned(),
                    route,
                    attempts: 1,
                    detail: cause,
                },
            })?;
        match answer.status {
            StatusCode::NOT_FOUND | StatusCode::FORBIDDEN => {
                return Err(GitHubError::NoInstallation {
                    target: format!("installation {installation_id}"),
                    message: format!("{} {}", answer.status.as_u16(), answer.error_message()),
                });
            }
            _ => {}
        }
        let answer = ensure_success(&request, answer)?;
        let minted: wire::InstallationAccessToken = decode(&request, &answer)?;
        let token = SecretString::from(minted.token);
        let client = Arc::new(
            app_client
                .user_access_token(token.clone())
                .map_err(|error| {
                    GitHubError::Settings(format!(
                        "could not use installation {installation_id}'s token: {error}"
                    ))
                })?,
        );
        tokens.lock().expect("installation tokens lock").insert(
            installation_id,
            MintedToken {
                client: client.clone(),
                token,
                expires_at: minted.expires_at,
            },
        );
        Ok(client)
    }

    /// The token git should present for `repository` over HTTPS: the
    /// personal access token, or a (cached, fresh) installation token of the
    /// App installation covering the repository. Never logged; pass it to
    /// git per command (review-pipeline's `GitCredential`).
    pub async fn git_token(
        &self,
        repository: &RepositoryName,
    ) -> Result<SecretString, GitHubError> {
        if let Credentials::PersonalAccessToken(token) =
            &self.inner.transport.settings().credentials
        {
            return Ok(token.clone());
        }
        let installation = self
            .resolve(&Scope::Repository(repository.clone()))
            .await?
            .installation
            .expect("an App resolves a repository to an installation");
        let Authentication::App { tokens, .. } = &self.inner.authentication else {
            unreachable!("installations exist only with App authentication");
        };
        tokens
            .lock()
            .expect("installation tokens lock")
            .get(&installation)
            .map(|minted| minted.token.clone())
            .ok_or_else(|| GitHubError::NoInstallation {
                target: repository.to_string(),
                message: "the installation token was dropped while it was being read; retry"
                    .to_owned(),
            })
    }

    /// Whether the client authenticates as a GitHub App.
    pub fn is_app(&self) -> bool {
        matches!(self.inner.authentication, Authentication::App { .. })
    }

    /// Drops the cached token of `installation_id` (GitHub refused it).
    fn forget_token(&self, installation_id: u64) {
        if let Authentication::App { tokens, .. } = &self.inner.authentication {
            tokens
                .lock()
                .expect("installation tokens lock")
                .remove(&installation_id);
        }
    }

    /// Forgets what `scope`'s installation was cached as, so the next resolve
    /// looks it up again. False when there is nothing to look up (a pinned
    /// or explicit installation, a personal access token, the App itself).
    fn forget_installation_of(&self, scope: &Scope) -> bool {
        let Authentication::App {
            pinned_installation: None,
            by_repository,
            by_account,
            tokens,
            ..
        } = &self.inner.authentication
        else {
            return false;
        };
        let forgotten = match scope {
            Scope::Repository(repository) => by_repository
                .lock()
                .expect("installation map lock")
                .remove(&repository.to_string()),
            Scope::Account(account) => by_account
                .lock()
                .expect("installation map lock")
                .remove(&account.to_ascii_lowercase()),
            Scope::App | Scope::Installation(_) => None,
        };
        if let Some(installation) = forgotten {
            tokens
                .lock()
                .expect("installation tokens lock")
                .remove(&installation);
        }
        forgotten.is_some()
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
                message: format!(
                    "none of the App's {} installations is on this account",
                    installations.len()
                ),
            })
    }
}

/// A list gathered across pages.
#[derive(Debug)]
pub(crate) struct Paged<T> {
    pub items: Vec<T>,
    /// The page cap cut the list short: an item not in `items` may exist.
    pub truncated: bool,
    pub unchanged: bool,
    /// Pages read.
    pub pages: usize,
    /// Route template of the list.
    pub route: &'static str,
}

impl<T> Paged<T> {
    /// The same list with every item converted.
    pub fn map<U>(self, convert: impl FnMut(T) -> U) -> Paged<U> {
        Paged {
            items: self.items.into_iter().map(convert).collect(),
            truncated: self.truncated,
            unchanged: self.unchanged,
            pages: self.pages,
            route: self.route,
        }
    }

    /// The first item matching `predicate`; when none does and the list was
    /// cut short, "unknown" ([`GitHubError::IncompleteList`]), never "absent".
    pub fn find_or_unknown(
        self,
        what: &str,
        predicate: impl FnMut(&T) -> bool,
    ) -> Result<Option<T>, GitHubError> {
        let (truncated, pages, route) = (self.truncated, self.pages, self.route);
        match self.items.into_iter().find(predicate) {
            Some(found) => Ok(Some(found)),
            None if truncated => Err(GitHubError::IncompleteList {
                route,
                pages,
                what: what.to_owned(),
            }),
            None => Ok(None),
        }
    }
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

/// Characters a path segment keeps as they are: RFC 3986's unreserved set.
const PATH_SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Percent-encodes path segments (label names, refs) into `/a/b/c`. Every
/// segment is data: a `.` or `..` segment is sent as `%2E` or `%2E%2E`, never
/// as a dot segment a URL parser or server would collapse (a label named
/// `..` must not turn "remove this label" into "remove all labels").
pub(crate) fn encoded_path(segments: &[&str]) -> String {
    let mut path = String::new();
    for segment in segments {
        path.push('/');
        if segment.chars().all(|character| character == '.') && !segment.is_empty() {
            path.push_str(&"%2E".repeat(segment.len()));
        } else {
            path.extend(percent_encoding::utf8_percent_encode(segment, PATH_SEGMENT));
        }
    }
    if path.is_empty() {
        path.push('/');
    }
    path
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
    fn dot_segments_are_data() {
        assert_eq!(
            encoded_path(&["repos", "o", "r", "issues", "1", "labels", ".."]),
            "/repos/o/r/issues/1/labels/%2E%2E"
        );
        assert_eq!(encoded_path(&["a", ".", "b"]), "/a/%2E/b");
        assert_eq!(encoded_path(&["v1.2", "...x"]), "/v1.2/...x");
    }

    #[test]
    fn queries_are_form_encoded() {
        assert_eq!(
            with_query("/search/issues", &[("q", "label:\"bot review\" org:acme")]),
            "/search/issues?q=label%3A%22bot+review%22+org%3Aacme"
        );
    }
}
