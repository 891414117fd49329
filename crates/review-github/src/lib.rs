//! GitHub REST adapter.
//!
//! The only crate that knows GitHub's wire types. It authenticates (personal
//! access token or GitHub App), paginates, honours rate limits, makes
//! conditional requests, and makes every write idempotent. Pipelines talk to it
//! in domain types from `review-core`.
