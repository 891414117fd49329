//! How the client is configured: where GitHub is, which credential to use, and
//! the limits that keep us polite (write spacing, retries, waits, cache size).
//!
//! The binary owns the configuration file; this module owns the meaning of the
//! GitHub settings and the environment variable names, so both stay in one
//! place ([`Credentials::from_environment`]).

use std::fmt;
use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};

use crate::error::GitHubError;

/// The public GitHub API.
pub const DEFAULT_API_URL: &str = "https://api.github.com";

/// Environment variable holding a personal access token.
pub const TOKEN_VARIABLE: &str = "REVIEW_BOT_GITHUB_TOKEN";
/// Environment variable holding a GitHub App's numeric id.
pub const APP_ID_VARIABLE: &str = "REVIEW_BOT_GITHUB_APP_ID";
/// Environment variable holding a GitHub App's private key (PEM text).
pub const APP_PRIVATE_KEY_VARIABLE: &str = "REVIEW_BOT_GITHUB_APP_PRIVATE_KEY";
/// Environment variable naming a file holding a GitHub App's private key (PEM).
pub const APP_PRIVATE_KEY_FILE_VARIABLE: &str = "REVIEW_BOT_GITHUB_APP_PRIVATE_KEY_FILE";
/// Environment variable pinning one GitHub App installation id (optional).
pub const APP_INSTALLATION_ID_VARIABLE: &str = "REVIEW_BOT_GITHUB_APP_INSTALLATION_ID";
/// Environment variable holding the API base URL (GitHub Enterprise Server, the simulator).
pub const API_URL_VARIABLE: &str = "REVIEW_BOT_GITHUB_API_URL";
/// Environment variable holding the minimum spacing between writes, in milliseconds.
pub const WRITE_SPACING_VARIABLE: &str = "REVIEW_BOT_GITHUB_WRITE_SPACING_MS";

/// The credential the client authenticates with.
#[derive(Clone)]
pub enum Credentials {
    /// A personal access token (classic or fine-grained).
    PersonalAccessToken(SecretString),
    /// A GitHub App: a JWT signed with the private key mints installation
    /// tokens, one installation per repository (looked up and cached) unless
    /// `installation_id` pins one.
    App {
        /// The App's numeric id.
        app_id: u64,
        /// The App's RSA private key, PEM encoded.
        private_key_pem: SecretString,
        /// Use this installation for every repository instead of looking it up.
        installation_id: Option<u64>,
    },
}

impl fmt::Debug for Credentials {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::PersonalAccessToken(_) => formatter
                .debug_tuple("PersonalAccessToken")
                .field(&"[redacted]")
                .finish(),
            Self::App {
                app_id,
                installation_id,
                ..
            } => formatter
                .debug_struct("App")
                .field("app_id", app_id)
                .field("private_key_pem", &"[redacted]")
                .field("installation_id", installation_id)
                .finish(),
        }
    }
}

impl Credentials {
    /// Reads the credential from environment variables through `lookup`
    /// (pass `|name| std::env::var(name).ok()` in production).
    ///
    /// `REVIEW_BOT_GITHUB_TOKEN` selects a personal access token;
    /// `REVIEW_BOT_GITHUB_APP_ID` with `REVIEW_BOT_GITHUB_APP_PRIVATE_KEY` or
    /// `REVIEW_BOT_GITHUB_APP_PRIVATE_KEY_FILE` (and optionally
    /// `REVIEW_BOT_GITHUB_APP_INSTALLATION_ID`) selects a GitHub App. Setting
    /// both, or neither, is an error that says which variables to set.
    pub fn from_environment(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, GitHubError> {
        let present = |name: &str| lookup(name).filter(|value| !value.trim().is_empty());
        let token = present(TOKEN_VARIABLE);
        let app_id = present(APP_ID_VARIABLE);
        match (token, app_id) {
            (Some(_), Some(_)) => Err(GitHubError::Settings(format!(
                "both {TOKEN_VARIABLE} and {APP_ID_VARIABLE} are set; set only one \
                 (a personal access token or a GitHub App)"
            ))),
            (None, None) => Err(GitHubError::Settings(format!(
                "no GitHub credential: set {TOKEN_VARIABLE} to a personal access token, or \
                 {APP_ID_VARIABLE} and {APP_PRIVATE_KEY_FILE_VARIABLE} for a GitHub App"
            ))),
            (Some(token), None) => Ok(Self::PersonalAccessToken(SecretString::from(token))),
            (None, Some(app_id)) => {
                let app_id = app_id.trim().parse::<u64>().map_err(|_| {
                    GitHubError::Settings(format!(
                        "{APP_ID_VARIABLE} must be the App's numeric id, got {app_id:?}"
                    ))
                })?;
                let private_key_pem = match (
                    present(APP_PRIVATE_KEY_VARIABLE),
                    present(APP_PRIVATE_KEY_FILE_VARIABLE),
                ) {
                    (Some(pem), _) => pem,
                    (None, Some(path)) => std::fs::read_to_string(&path).map_err(|error| {
                        GitHubError::Settings(format!(
                            "cannot read the GitHub App private key from {path} \
                             ({APP_PRIVATE_KEY_FILE_VARIABLE}): {error}"
                        ))
                    })?,
                    (None, None) => {
                        return Err(GitHubError::Settings(format!(
                            "{APP_ID_VARIABLE} is set but no private key: set \
                             {APP_PRIVATE_KEY_FILE_VARIABLE} to the App's .pem file"
                        )));
                    }
                };
                let installation_id = present(APP_INSTALLATION_ID_VARIABLE)
                    .map(|value| {
                        value.trim().parse::<u64>().map_err(|_| {
                            GitHubError::Settings(format!(
                                "{APP_INSTALLATION_ID_VARIABLE} must be a numeric installation \
                                 id, got {value:?}"
                            ))
                        })
                    })
                    .transpose()?;
                Ok(Self::App {
                    app_id,
                    private_key_pem: SecretString::from(private_key_pem),
                    installation_id,
                })
            }
        }
    }

    /// Checks that a token can be sent in an HTTP header, with an error that
    /// says what is wrong (never the token itself).
    pub(crate) fn validated_token(token: &SecretString) -> Result<SecretString, GitHubError> {
        let trimmed = token.expose_secret().trim();
        if trimmed.is_empty() {
            return Err(GitHubError::Settings(format!(
                "the GitHub token is empty: set {TOKEN_VARIABLE}"
            )));
        }
        if !trimmed.bytes().all(|byte| byte.is_ascii_graphic()) {
            return Err(GitHubError::Settings(format!(
                "the GitHub token in {TOKEN_VARIABLE} contains spaces or non-ASCII characters; \
                 copy it again without surrounding text"
            )));
        }
        Ok(SecretString::from(trimmed.to_owned()))
    }
}

/// Everything the client needs; [`ClientSettings::new`] fills in GitHub's
/// documented good practice for the rest.
#[derive(Debug, Clone)]
pub struct ClientSettings {
    /// The REST API root: `https://api.github.com`, `https://HOST/api/v3` for
    /// GitHub Enterprise Server, or the simulator's URL.
    pub api_url: String,
    /// The credential.
    pub credentials: Credentials,
    /// Minimum time between two content-creating requests (POST, PATCH, PUT,
    /// DELETE). GitHub asks for at least one second; 0 in tests.
    pub write_spacing: Duration,
    /// How long one request may take, answer body included.
    pub request_timeout: Duration,
    /// How many times one call is retried (5xx, timeouts, rate limits) before
    /// its error is returned.
    pub max_retries: u32,
    /// First backoff delay for retries; doubled per attempt, jittered.
    pub retry_base_delay: Duration,
    /// Largest backoff delay for 5xx and timeout retries.
    pub retry_max_delay: Duration,
    /// First wait after a secondary rate limit that gave no `retry-after`
    /// (GitHub says: at least a minute); doubled per attempt.
    pub secondary_limit_base_delay: Duration,
    /// How long without a secondary-limit refusal before the shared backoff
    /// starts again from `secondary_limit_base_delay` (default: ten base
    /// delays).
    pub secondary_limit_calm_period: Duration,
    /// The longest we sleep for a rate limit (primary reset or `retry-after`);
    /// past it, the call fails with a clear error instead of blocking for an hour.
    pub max_rate_limit_wait: Duration,
    /// How many answers the conditional-request (`ETag`) cache keeps.
    pub conditional_cache_entries: usize,
    /// How many body bytes the conditional-request cache keeps in total.
    pub conditional_cache_bytes: usize,
    /// How many requests may be in flight at once, across every clone of the
    /// client (GitHub's secondary limit allows 100 concurrent requests).
    pub max_concurrent_requests: usize,
    /// After a write's answer was lost, how long we keep looking for what it
    /// would have created before posting it again (GitHub's lists can lag
    /// behind a write it already applied).
    pub write_check_window: Duration,
    /// The first wait between two such looks; doubled after each.
    pub write_check_base_delay: Duration,
}

impl ClientSettings {
    /// Settings from environment variables through `lookup`: the credential
    /// ([`Credentials::from_environment`]), `REVIEW_BOT_GITHUB_API_URL`
    /// (default `https://api.github.com`) and
    /// `REVIEW_BOT_GITHUB_WRITE_SPACING_MS` (default 1000); defaults for the rest.
    pub fn from_environment(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, GitHubError> {
        let credentials = Credentials::from_environment(&lookup)?;
        let present = |name: &str| lookup(name).filter(|value| !value.trim().is_empty());
        let api_url = present(API_URL_VARIABLE).unwrap_or_else(|| DEFAULT_API_URL.to_owned());
        let mut settings = Self::new(api_url.trim(), credentials);
        if let Some(spacing) = present(WRITE_SPACING_VARIABLE) {
            let milliseconds = spacing.trim().parse::<u64>().map_err(|_| {
                GitHubError::Settings(format!(
                    "{WRITE_SPACING_VARIABLE} must be a whole number of milliseconds, got \
                     {spacing:?}"
                ))
            })?;
            settings.write_spacing = Duration::from_millis(milliseconds);
        }
        Ok(settings)
    }

    /// Settings for `api_url` and `credentials`, with defaults for the rest.
    pub fn new(api_url: impl Into<String>, credentials: Credentials) -> Self {
        Self {
            api_url: api_url.into(),
            credentials,
            write_spacing: Duration::from_secs(1),
            request_timeout: Duration::from_secs(30),
            max_retries: 4,
            retry_base_delay: Duration::from_millis(500),
            retry_max_delay: Duration::from_secs(30),
            secondary_limit_base_delay: Duration::from_mins(1),
            secondary_limit_calm_period: Duration::from_mins(10),
            max_rate_limit_wait: Duration::from_mins(15),
            conditional_cache_entries: 512,
            conditional_cache_bytes: 32 * 1024 * 1024,
            max_concurrent_requests: 100,
            write_check_window: Duration::from_secs(15),
            write_check_base_delay: Duration::from_secs(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.clone())
        }
    }

    #[test]
    fn token_variable_selects_a_personal_access_token() {
        let credentials =
            Credentials::from_environment(lookup(&[(TOKEN_VARIABLE, "ghp_secret")])).unwrap();
        assert!(matches!(credentials, Credentials::PersonalAccessToken(_)));
        assert!(!format!("{credentials:?}").contains("ghp_secret"));
    }

    #[test]
    fn both_credentials_is_an_error_naming_the_variables() {
        let error = Credentials::from_environment(lookup(&[
            (TOKEN_VARIABLE, "ghp_secret"),
            (APP_ID_VARIABLE, "12"),
        ]))
        .unwrap_err()
        .to_string();
        assert!(error.contains(TOKEN_VARIABLE) && error.contains(APP_ID_VARIABLE));
        assert!(!error.contains("ghp_secret"));
    }

    #[test]
    fn no_credential_says_what_to_set() {
        let error = Credentials::from_environment(lookup(&[]))
            .unwrap_err()
            .to_string();
        assert!(error.contains(TOKEN_VARIABLE));
    }

    #[test]
    fn app_needs_a_numeric_id_and_a_key() {
        let error = Credentials::from_environment(lookup(&[(APP_ID_VARIABLE, "twelve")]))
            .unwrap_err()
            .to_string();
        assert!(error.contains("numeric"));
        let error = Credentials::from_environment(lookup(&[(APP_ID_VARIABLE, "12")]))
            .unwrap_err()
            .to_string();
        assert!(error.contains(APP_PRIVATE_KEY_FILE_VARIABLE));
        let credentials = Credentials::from_environment(lookup(&[
            (APP_ID_VARIABLE, "12"),
            (APP_PRIVATE_KEY_VARIABLE, "-----BEGIN PRIVATE KEY-----"),
            (APP_INSTALLATION_ID_VARIABLE, "99"),
        ]))
        .unwrap();
        assert!(matches!(
            credentials,
            Credentials::App {
                app_id: 12,
                installation_id: Some(99),
                ..
            }
        ));
        assert!(!format!("{credentials:?}").contains("BEGIN"));
    }

    #[test]
    fn settings_read_the_api_url_and_write_spacing() {
        let settings = ClientSettings::from_environment(lookup(&[
            (TOKEN_VARIABLE, "ghp_secret"),
            (API_URL_VARIABLE, "https://ghe.example/api/v3"),
            (WRITE_SPACING_VARIABLE, "2500"),
        ]))
        .unwrap();
        assert_eq!(settings.api_url, "https://ghe.example/api/v3");
        assert_eq!(settings.write_spacing, Duration::from_millis(2500));
        let defaults =
            ClientSettings::from_environment(lookup(&[(TOKEN_VARIABLE, "ghp_secret")])).unwrap();
        assert_eq!(defaults.api_url, DEFAULT_API_URL);
        assert_eq!(defaults.write_spacing, Duration::from_secs(1));
        let error = ClientSettings::from_environment(lookup(&[
            (TOKEN_VARIABLE, "ghp_secret"),
            (WRITE_SPACING_VARIABLE, "1s"),
        ]))
        .unwrap_err()
        .to_string();
        assert!(error.contains(WRITE_SPACING_VARIABLE), "{error}");
    }

    #[test]
    fn token_with_a_trailing_newline_is_trimmed_and_inner_spaces_are_refused() {
        let token = Credentials::validated_token(&SecretString::from("ghp_abc\n")).unwrap();
        assert_eq!(token.expose_secret(), "ghp_abc");
        let error = Credentials::validated_token(&SecretString::from("ghp abc"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("spaces") && !error.contains("ghp"));
    }
}
