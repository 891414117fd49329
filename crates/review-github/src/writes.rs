//! Posting content exactly once.
//!
//! A POST that creates a review or a comment is never resent blindly. When its
//! answer is lost (timeout, dropped connection, 5xx after sending), we look on
//! GitHub for what it would have created — by the `review::`/`thread::` id in
//! its footer, or by its exact body — and post again only when it is absent.
//!
//! GitHub can apply a write and answer 502/504, and its lists can lag behind
//! a write for seconds, so one look is not enough: we look again with
//! doubling waits (`write_check_base_delay`) until `write_check_window` has
//! passed, and only then post again. Most looks are free 304s: the list has
//! not changed. A look that read the page cap without finding the item is
//! "unknown", not "absent" ([`GitHubError::IncompleteList`]): nothing is
//! re-posted. The number of re-posts is capped by the client's `max_retries`.

use std::future::Future;

use serde::de::DeserializeOwned;

use crate::client::{GitHubClient, Scope, decode, status_error};
use crate::error::GitHubError;
use crate::transport::{ApiRequest, SendFailure, WaitReason};

/// What a checked post produced.
pub(crate) enum CheckedPost<Wire, Found> {
    /// Our request created it; GitHub's answer.
    Created(Wire),
    /// It was found on GitHub after an answer was lost.
    Found(Found),
    /// GitHub answered with this error status (422 and friends); nothing was created.
    Refused(GitHubError),
}

impl GitHubClient {
    /// Sends `request` (an [`crate::transport::Retry::Unsafe`] POST); after a
    /// lost answer, runs `find` and re-posts only if it finds nothing.
    pub(crate) async fn post_checked<Wire, Found, Check, CheckFuture>(
        &self,
        scope: &Scope,
        request: &ApiRequest,
        what: &str,
        find: Check,
    ) -> Result<CheckedPost<Wire, Found>, GitHubError>
    where
        Wire: DeserializeOwned,
        Check: Fn() -> CheckFuture,
        CheckFuture: Future<Output = Result<Option<Found>, GitHubError>>,
    {
        let settings = self.settings();
        let mut round: u32 = 0;
        loop {
            round += 1;
            match self.send(scope, request).await {
                Ok(answer) if answer.status.is_success() => {
                    return Ok(CheckedPost::Created(decode(request, &answer)?));
                }
                Ok(answer) => return Ok(CheckedPost::Refused(status_error(request, &answer))),
                Err(SendFailure::Error(error)) => return Err(error),
                Err(SendFailure::MaybeApplied(cause)) => {
                    tracing::warn!(
                        route = request.route,
                        what,
                        %cause,
                        "a write's answer was lost; checking GitHub before posting again"
                    );
                    match self.look_for_landed_write(request.route, &find).await {
                        Ok(Some(found)) => {
                            tracing::info!(what, "the write had landed; not posting it again");
                            return Ok(CheckedPost::Found(found));
                        }
                        Ok(None) if round <= settings.max_retries => {
                            tracing::info!(
                                what,
                                window_ms = settings.write_check_window.as_millis(),
                                "the write did not appear within the check window; posting it again"
                            );
                        }
                        Ok(None) => {
                            return Err(GitHubError::WriteUnconfirmed {
                                what: what.to_owned(),
                                cause,
                                check: format!(
                                    "it was absent after {round} attempts, giving up for now"
                                ),
                            });
                        }
                        Err(check) => {
                            return Err(GitHubError::WriteUnconfirmed {
                                what: what.to_owned(),
                                cause,
                                check: check.to_string(),
                            });
                        }
                    }
                }
            }
        }
    }
}

impl GitHubClient {
    /// Runs `find` until it finds the write or `write_check_window` has
    /// passed, waiting `write_check_base_delay`, then twice as long, … between
    /// looks. An error from `find` (an incomplete list included) ends the search.
    async fn look_for_landed_write<Found, Check, CheckFuture>(
        &self,
        route: &'static str,
        find: &Check,
    ) -> Result<Option<Found>, GitHubError>
    where
        Check: Fn() -> CheckFuture,
        CheckFuture: Future<Output = Result<Option<Found>, GitHubError>>,
    {
        let settings = self.settings();
        let started = tokio::time::Instant::now();
        let mut delay = settings.write_check_base_delay;
        loop {
            if let Some(found) = find().await? {
                return Ok(Some(found));
            }
            let elapsed = started.elapsed();
            if elapsed >= settings.write_check_window {
                return Ok(None);
            }
            let wait = delay.min(settings.write_check_window.saturating_sub(elapsed));
            self.record_wait(route, WaitReason::WriteCheck, wait);
            tokio::time::sleep(wait).await;
            delay = delay.saturating_mul(2);
        }
    }
}

/// Bodies equal up to line endings and surrounding whitespace (GitHub stores
/// `\r\n` for some clients and trims).
pub(crate) fn same_body(left: &str, right: &str) -> bool {
    left.replace("\r\n", "\n").trim() == right.replace("\r\n", "\n").trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_compare_across_line_endings() {
        assert!(same_body("a\r\nb\n", "a\nb"));
        assert!(!same_body("a b", "a  b"));
    }
}
