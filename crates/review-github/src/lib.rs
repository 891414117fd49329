//! GitHub REST adapter.
//!
//! The only crate that knows GitHub's wire types. It authenticates (personal
//! access token or GitHub App), paginates, honours rate limits, makes
//! conditional requests, and makes every write idempotent. Pipelines talk to
//! it through [`GitHubClient`] in the plain types of [`model`].
//!
//! - Transport and policies: `transport` (retries, rate limits, write
//!   spacing, `ETag`s), `rate_limit`, `conditional_cache`, `pagination`.
//! - Credentials: `client` (PAT, App JWT → installation token per repository).
//! - Operations: `pulls`, `reviews`, `comments`, `labels`, `checks`,
//!   `search`, `apps`; exactly-once posting in `writes`, 422 recovery in
//!   `anchoring`; review threads' resolution through GraphQL in `graphql`.

mod anchoring;
mod apps;
mod checks;
mod client;
mod comments;
mod conditional_cache;
mod error;
mod graphql;
mod labels;
pub mod model;
mod pagination;
mod pulls;
mod rate_limit;
mod repos;
mod reviews;
mod search;
mod settings;
mod transport;
mod wire;
mod writes;

pub use client::GitHubClient;
pub use error::{CredentialKind, GitHubError};
pub use graphql::{GraphQlComment, GraphQlThread, RESOLVE_THREAD_MUTATION, REVIEW_THREADS_QUERY};
pub use model::*;
pub use pulls::MAX_PULL_REQUEST_FILES;
pub use reviews::OUTSIDE_THE_DIFF_HEADING;
pub use settings::{
    API_URL_VARIABLE, APP_ID_VARIABLE, APP_INSTALLATION_ID_VARIABLE, APP_PRIVATE_KEY_FILE_VARIABLE,
    APP_PRIVATE_KEY_VARIABLE, ClientSettings, Credentials, DEFAULT_API_URL, TOKEN_VARIABLE,
    WRITE_SPACING_VARIABLE,
};
pub use transport::{REQUESTS_METRIC, RecordedWait, RequestOutcome, WaitReason};
