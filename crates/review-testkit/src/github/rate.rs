//! Rate-limit budgets, kept the way GitHub keeps them: a primary budget per token (per
//! installation for installation tokens) that resets after a window, a separate search budget,
//! and the secondary content-creation limit (requests per minute and per hour).

use std::collections::VecDeque;
use std::time::Duration;

use chrono::{DateTime, Utc};

/// Which primary budget a request spends (`x-ratelimit-resource`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resource {
    Core,
    Search,
    /// GitHub's GraphQL API: points, not requests, from a budget of its own.
    Graphql,
}

/// Points an hour on the GraphQL API (GitHub's figure for a user or an installation).
pub(crate) const GRAPHQL_POINTS: u64 = 5_000;

impl Resource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Core => "core",
            Self::Search => "search",
            Self::Graphql => "graphql",
        }
    }
}

/// One fixed window: `limit` requests until `reset_at`.
#[derive(Debug, Clone)]
pub(crate) struct Window {
    pub limit: u64,
    pub used: u64,
    pub reset_at: DateTime<Utc>,
    pub length: Duration,
}

impl Window {
    fn new(limit: u64, length: Duration, now: DateTime<Utc>) -> Self {
        Self {
            limit,
            used: 0,
            reset_at: now + length,
            length,
        }
    }

    /// Starts a new window when the old one has run out.
    pub fn roll(&mut self, now: DateTime<Utc>) {
        if now >= self.reset_at {
            self.used = 0;
            self.reset_at = now + self.length;
        }
    }

    pub fn remaining(&self) -> u64 {
        self.limit.saturating_sub(self.used)
    }

    pub fn snapshot(&self) -> RateLimitSnapshot {
        RateLimitSnapshot {
            limit: self.limit,
            remaining: self.remaining(),
            used: self.used,
            reset: self.reset_at,
        }
    }
}

/// Everything one budget holder (a token, an installation, an app) has spent.
#[derive(Debug, Clone)]
pub(crate) struct Budget {
    pub core: Window,
    pub search: Window,
    pub graphql: Window,
    /// When each recent content-creating request arrived (kept for one hour).
    pub content: VecDeque<DateTime<Utc>>,
}

impl Budget {
    pub fn new(core_limit: u64, options: &super::SimOptions, now: DateTime<Utc>) -> Self {
        Self {
            core: Window::new(core_limit, options.primary_window, now),
            search: Window::new(options.search_limit, options.search_window, now),
            graphql: Window::new(GRAPHQL_POINTS, options.primary_window, now),
            content: VecDeque::new(),
        }
    }

    pub fn window(&mut self, resource: Resource, now: DateTime<Utc>) -> &mut Window {
        let window = match resource {
            Resource::Core => &mut self.core,
            Resource::Search => &mut self.search,
            Resource::Graphql => &mut self.graphql,
        };
        window.roll(now);
        window
    }

    /// Whether one more content-creating request would cross the secondary limit.
    pub fn content_limited(&mut self, now: DateTime<Utc>, per_minute: u64, per_hour: u64) -> bool {
        let hour_ago = now - chrono::Duration::hours(1);
        while self.content.front().is_some_and(|&at| at <= hour_ago) {
            self.content.pop_front();
        }
        let minute_ago = now - chrono::Duration::minutes(1);
        let last_minute = self.content.iter().filter(|&&at| at > minute_ago).count() as u64;
        last_minute >= per_minute || self.content.len() as u64 >= per_hour
    }
}

/// A budget as a test sees it (the numbers the `x-ratelimit-*` headers carry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimitSnapshot {
    /// Requests allowed in the window.
    pub limit: u64,
    /// Requests left.
    pub remaining: u64,
    /// Requests spent.
    pub used: u64,
    /// When the window resets.
    pub reset: DateTime<Utc>,
}
