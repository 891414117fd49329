//! Rate limits: reading GitHub's `x-ratelimit-*` headers, remembering the
//! latest budget per resource, and deciding what a 403/429 means.
//!
//! GitHub signals three different things with 403/429:
//! - a **primary** limit: `x-ratelimit-remaining: 0` and `x-ratelimit-reset`
//!   (wait until the reset);
//! - a **secondary** limit: `retry-after` (wait that long), or a message about
//!   a secondary limit / abuse without headers (back off exponentially, from a
//!   minute);
//! - a plain **permission** refusal, which must not be retried.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};
use http::{HeaderMap, StatusCode};

use crate::model::RateLimitSnapshot;

/// Reads the budget GitHub reported on one answer, if it did.
pub(crate) fn snapshot_from_headers(
    credential: &str,
    headers: &HeaderMap,
) -> Option<RateLimitSnapshot> {
    let number =
        |name: &str| -> Option<u64> { headers.get(name)?.to_str().ok()?.trim().parse().ok() };
    let limit = number("x-ratelimit-limit")?;
    let remaining = number("x-ratelimit-remaining")?;
    let reset = number("x-ratelimit-reset")?;
    let used = number("x-ratelimit-used").unwrap_or_else(|| limit.saturating_sub(remaining));
    let resource = headers
        .get("x-ratelimit-resource")
        .and_then(|value| value.to_str().ok())
        .unwrap_or("core")
        .to_owned();
    Some(RateLimitSnapshot {
        credential: credential.to_owned(),
        resource,
        limit,
        remaining,
        used,
        reset_at: DateTime::from_timestamp(i64::try_from(reset).ok()?, 0)?,
    })
}

/// The latest budget per credential and resource, as the answers reported it.
#[derive(Debug, Default)]
pub(crate) struct RateLimitTracker {
    latest: Mutex<BTreeMap<(String, String), RateLimitSnapshot>>,
}

impl RateLimitTracker {
    /// Records an answer's headers.
    pub fn observe(&self, credential: &str, headers: &HeaderMap) -> Option<RateLimitSnapshot> {
        let snapshot = snapshot_from_headers(credential, headers)?;
        self.record(snapshot.clone());
        Some(snapshot)
    }

    /// Records a budget read from `GET /rate_limit`.
    pub fn record(&self, snapshot: RateLimitSnapshot) {
        self.latest.lock().expect("rate-limit tracker lock").insert(
            (snapshot.credential.clone(), snapshot.resource.clone()),
            snapshot,
        );
    }

    /// Every resource's latest budget.
    pub fn all(&self) -> Vec<RateLimitSnapshot> {
        self.latest
            .lock()
            .expect("rate-limit tracker lock")
            .values()
            .cloned()
            .collect()
    }

    /// When `credential`'s `resource` is known to be spent, the time it resets.
    pub fn exhausted_until(
        &self,
        credential: &str,
        resource: &str,
        now: DateTime<Utc>,
    ) -> Option<DateTime<Utc>> {
        let latest = self.latest.lock().expect("rate-limit tracker lock");
        let snapshot = latest.get(&(credential.to_owned(), resource.to_owned()))?;
        (snapshot.remaining == 0 && snapshot.reset_at > now).then_some(snapshot.reset_at)
    }
}

/// What a 403 or 429 answer means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Primary budget spent; it resets at this time.
    PrimaryExhausted {
        /// Which budget.
        resource: String,
        /// When it refills.
        reset_at: DateTime<Utc>,
    },
    /// Secondary limit with an explicit wait.
    SecondaryRetryAfter(Duration),
    /// Secondary limit without a wait: back off exponentially.
    SecondaryWithoutHeaders,
    /// Not a rate limit: a permission problem.
    Forbidden,
}

/// Classifies a 403/429 from its headers and error message.
pub(crate) fn classify_refusal(status: StatusCode, headers: &HeaderMap, message: &str) -> Refusal {
    if let Some(seconds) = headers
        .get(http::header::RETRY_AFTER)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u64>().ok())
    {
        return Refusal::SecondaryRetryAfter(Duration::from_secs(seconds));
    }
    if let Some(snapshot) = snapshot_from_headers("", headers)
        && snapshot.remaining == 0
    {
        return Refusal::PrimaryExhausted {
            resource: snapshot.resource,
            reset_at: snapshot.reset_at,
        };
    }
    let lowered = message.to_ascii_lowercase();
    if status == StatusCode::TOO_MANY_REQUESTS
        || lowered.contains("secondary rate limit")
        || lowered.contains("abuse")
        || lowered.contains("rate limit")
    {
        return Refusal::SecondaryWithoutHeaders;
    }
    Refusal::Forbidden
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    #[test]
    fn reads_the_budget_headers() {
        let snapshot = snapshot_from_headers(
            "token",
            &headers(&[
                ("x-ratelimit-limit", "5000"),
                ("x-ratelimit-remaining", "4990"),
                ("x-ratelimit-used", "10"),
                ("x-ratelimit-reset", "1700000000"),
                ("x-ratelimit-resource", "search"),
            ]),
        )
        .unwrap();
        assert_eq!(snapshot.resource, "search");
        assert_eq!(
            (snapshot.limit, snapshot.remaining, snapshot.used),
            (5000, 4990, 10)
        );
        assert_eq!(snapshot.reset_at.timestamp(), 1_700_000_000);
    }

    #[test]
    fn retry_after_wins_over_everything() {
        let refusal = classify_refusal(
            StatusCode::FORBIDDEN,
            &headers(&[("retry-after", "7"), ("x-ratelimit-remaining", "0")]),
            "",
        );
        assert_eq!(
            refusal,
            Refusal::SecondaryRetryAfter(Duration::from_secs(7))
        );
    }

    #[test]
    fn remaining_zero_is_the_primary_limit() {
        let refusal = classify_refusal(
            StatusCode::FORBIDDEN,
            &headers(&[
                ("x-ratelimit-limit", "5000"),
                ("x-ratelimit-remaining", "0"),
                ("x-ratelimit-reset", "1700000000"),
            ]),
            "API rate limit exceeded",
        );
        assert!(matches!(refusal, Refusal::PrimaryExhausted { .. }));
    }

    #[test]
    fn secondary_message_without_headers_backs_off_and_plain_403_is_forbidden() {
        assert_eq!(
            classify_refusal(
                StatusCode::FORBIDDEN,
                &HeaderMap::new(),
                "You have exceeded a secondary rate limit"
            ),
            Refusal::SecondaryWithoutHeaders
        );
        assert_eq!(
            classify_refusal(StatusCode::TOO_MANY_REQUESTS, &HeaderMap::new(), ""),
            Refusal::SecondaryWithoutHeaders
        );
        assert_eq!(
            classify_refusal(
                StatusCode::FORBIDDEN,
                &headers(&[
                    ("x-ratelimit-limit", "5000"),
                    ("x-ratelimit-remaining", "4000"),
                    ("x-ratelimit-reset", "1700000000"),
                ]),
                "Resource not accessible by integration"
            ),
            Refusal::Forbidden
        );
    }
}
