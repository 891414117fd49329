//! Fault injection: a test tells the simulator that the next N requests matching a route
//! answer with a failure instead of (or after) doing their work.

use std::time::Duration;

/// What a matching request gets instead of its normal answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Answer this 5xx status (GitHub's error JSON) without doing anything.
    ServerError(u16),
    /// Answer 403 with GitHub's secondary-rate-limit message and this `retry-after` (seconds).
    SecondaryRateLimit {
        /// Seconds in the `retry-after` header.
        retry_after: u64,
    },
    /// Answer 403 with GitHub's secondary-rate-limit message and no `retry-after` (GitHub
    /// does this too: clients are to wait at least a minute, then back off exponentially).
    SecondaryRateLimitWithoutRetryAfter,
    /// Answer 429 with this `retry-after` (seconds).
    TooManyRequests {
        /// Seconds in the `retry-after` header.
        retry_after: u64,
    },
    /// Sleep this long, then handle the request normally (a write still happens — as on
    /// GitHub when a client times out on a request that landed).
    Hang(Duration),
    /// Perform the request (the write lands) but answer 502 — the idempotency case
    /// ("applied, answered 502"; GitHub does this when a proxy gives up on a slow write).
    DropResponse,
    /// Handle the request normally but answer with this `Link` header instead of the real one
    /// (a header a client cannot parse must not read as "last page").
    ReplaceLinkHeader(String),
}

impl Fault {
    /// A short description for the request log.
    pub fn describe(&self) -> String {
        match self {
            Self::ServerError(status) => format!("server error {status}"),
            Self::SecondaryRateLimit { retry_after } => {
                format!("secondary rate limit (retry-after {retry_after})")
            }
            Self::SecondaryRateLimitWithoutRetryAfter => {
                "secondary rate limit (no retry-after)".to_owned()
            }
            Self::TooManyRequests { retry_after } => format!("429 (retry-after {retry_after})"),
            Self::Hang(duration) => format!("hang {}ms", duration.as_millis()),
            Self::DropResponse => "performed, response dropped (502)".to_owned(),
            Self::ReplaceLinkHeader(link) => format!("link header replaced by {link:?}"),
        }
    }
}

/// Which requests a rule matches.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Matcher {
    /// An operation id from the OpenAPI subset (`pulls/create-review`), or one of the
    /// simulator's git operations (`git/upload-pack`, `git/receive-pack`, `git/info-refs`).
    Operation(String),
    /// A method and an OpenAPI path template (`/repos/{owner}/{repo}/pulls/{pull_number}`).
    Route { method: String, template: String },
}

/// "The next `times` requests matching this answer with `fault`."
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultRule {
    matcher: Matcher,
    /// Only requests to exactly this path (e.g. `/repos/acme/widgets/pulls/1/reviews`).
    path: Option<String>,
    pub(crate) remaining: u64,
    pub(crate) fault: Fault,
}

impl FaultRule {
    /// Matches an operation id (`pulls/create-review`, `git/receive-pack`…), once.
    pub fn operation(operation_id: &str, fault: Fault) -> Self {
        Self {
            matcher: Matcher::Operation(operation_id.to_owned()),
            path: None,
            remaining: 1,
            fault,
        }
    }

    /// Matches a method and an OpenAPI path template, once.
    pub fn route(method: &str, template: &str, fault: Fault) -> Self {
        Self {
            matcher: Matcher::Route {
                method: method.to_ascii_uppercase(),
                template: template.to_owned(),
            },
            path: None,
            remaining: 1,
            fault,
        }
    }

    /// Matches the next `times` requests instead of one.
    #[must_use]
    pub fn times(mut self, times: u64) -> Self {
        self.remaining = times;
        self
    }

    /// Narrows the rule to one concrete request path.
    #[must_use]
    pub fn on_path(mut self, path: &str) -> Self {
        self.path = Some(path.to_owned());
        self
    }

    pub(crate) fn matches(
        &self,
        operation_id: &str,
        method: &str,
        template: &str,
        path: &str,
    ) -> bool {
        if self.remaining == 0 {
            return false;
        }
        if self.path.as_deref().is_some_and(|wanted| wanted != path) {
            return false;
        }
        match &self.matcher {
            Matcher::Operation(id) => id == operation_id,
            Matcher::Route {
                method: wanted_method,
                template: wanted_template,
            } => wanted_method == method && wanted_template == template,
        }
    }
}
