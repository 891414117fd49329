//! Integration tests of `review-github` against the GitHub simulator in
//! `review-testkit`: real HTTP, real git underneath, GitHub's rules. Every test
//! also checks that each request body the client sent validates against its
//! operation's request schema in the OpenAPI subset.

mod auth;
mod ci;
mod conditional;
mod cycle_cost;
mod labels;
mod pagination;
mod pulls;
mod rate_limits;
mod request_metrics;
mod retries;
mod reviews;
mod support;
