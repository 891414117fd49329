//! review-store's integration tests: one binary, every store test run against
//! a SQLite file and against a real PostgreSQL (see `support`).

mod attempts;
mod base_builds;
mod costs;
mod job_plans;
mod leases;
mod open;
mod race;
mod replies;
mod runs;
mod support;
