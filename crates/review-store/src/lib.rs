//! Persistence for review-bot.
//!
//! SQLite by default (one file, no server), PostgreSQL when several replicas
//! share work. Holds reply tracking, run history, posted-comment fingerprints
//! and job leases, so that no state lives only in memory.
