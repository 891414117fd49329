//! The lines a command prints for its operator: plain text on standard error
//! (`--log-format text`, the default), or, with `--log-format json`, an `info`
//! event in the current span — so a daemon's per-job lines carry the job's
//! repository, pull request and head commit as JSON fields, interleaved with
//! the other log events instead of breaking a log shipper's parse.

use std::fmt::Display;
use std::sync::atomic::{AtomicBool, Ordering};

static JSON: AtomicBool = AtomicBool::new(false);

/// Chooses how [`line`] prints, once, at start.
pub fn set_json(json: bool) {
    JSON.store(json, Ordering::Relaxed);
}

/// Whether lines go out as JSON log events.
pub fn is_json() -> bool {
    JSON.load(Ordering::Relaxed)
}

/// One line for the operator.
pub fn line(text: impl Display) {
    if is_json() {
        tracing::info!(target: "review_bot::output", "{text}");
    } else {
        eprintln!("{text}");
    }
}
