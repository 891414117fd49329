//! `review_bot_github_requests_total`: every HTTP attempt counted once by
//! resource, method and outcome, retries included.
//!
//! The counts go to a recorder of the test's own, set as the thread's default
//! (`metrics::set_default_local_recorder`); `#[tokio::test]` runs the client on
//! that one thread, so no other test's requests are counted.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use review_github::{
    Credentials, GitHubClient, GitHubError, REQUESTS_METRIC, RequestOutcome, SearchScope,
};
use review_testkit::github::{Fault, FaultRule};
use secrecy::SecretString;

use crate::support::{fixture, settings, statuses_and_costs, token_client};

/// A metric's labels, sorted by key.
type Labels = Vec<(String, String)>;

/// Counters by name and labels; gauges and histograms are ignored.
#[derive(Debug, Default)]
struct CountingRecorder {
    counters: Mutex<BTreeMap<(String, Labels), Arc<AtomicU64>>>,
}

impl CountingRecorder {
    /// The value of `name` with exactly `labels` (0 when never counted).
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        let mut labels: Labels = labels
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect();
        labels.sort();
        self.counters
            .lock()
            .unwrap()
            .get(&(name.to_owned(), labels))
            .map_or(0, |counter| counter.load(Ordering::Relaxed))
    }

    /// Every series of `name`, as `(labels, value)`.
    fn series(&self, name: &str) -> Vec<(Labels, u64)> {
        self.counters
            .lock()
            .unwrap()
            .iter()
            .filter(|((series_name, _), _)| series_name == name)
            .map(|((_, labels), counter)| (labels.clone(), counter.load(Ordering::Relaxed)))
            .collect()
    }
}

impl Recorder for CountingRecorder {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        let mut labels: Labels = key
            .labels()
            .map(|label| (label.key().to_owned(), label.value().to_owned()))
            .collect();
        labels.sort();
        let counter = Arc::clone(
            self.counters
                .lock()
                .unwrap()
                .entry((key.name().to_owned(), labels))
                .or_default(),
        );
        Counter::from_arc(counter)
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }

    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

/// Attempts of `method` on `resource` that ended with `outcome`.
fn attempts(
    recorder: &CountingRecorder,
    resource: &str,
    method: &str,
    outcome: RequestOutcome,
) -> u64 {
    recorder.value(
        REQUESTS_METRIC,
        &[
            ("resource", resource),
            ("method", method),
            ("outcome", outcome.as_str()),
        ],
    )
}

#[tokio::test]
async fn every_attempt_is_counted_by_outcome() {
    let recorder = CountingRecorder::default();
    let _guard = metrics::set_default_local_recorder(&recorder);
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    let repository = &fixture.repository;

    // 200, then a conditional 304 served from the cache.
    client.get_pull_request(repository, 1).await.unwrap();
    client.get_pull_request(repository, 1).await.unwrap();
    // 404.
    let missing = client.get_pull_request(repository, 99).await.unwrap_err();
    assert!(matches!(missing, GitHubError::NotFound { .. }), "{missing}");
    // 502, retried: the retry is a 304 again.
    fixture
        .sim
        .inject(FaultRule::operation("pulls/get", Fault::ServerError(502)));
    client.get_pull_request(repository, 1).await.unwrap();
    // A secondary limit with `retry-after: 0`, retried: a 304.
    fixture.sim.inject(FaultRule::operation(
        "pulls/get",
        Fault::SecondaryRateLimit { retry_after: 0 },
    ));
    client.get_pull_request(repository, 1).await.unwrap();
    // A search spends its own resource.
    client
        .search_pull_requests(
            &SearchScope::Organization("acme".into()),
            "bot-review-needed",
        )
        .await
        .unwrap();

    assert_eq!(
        statuses_and_costs(&fixture.sim, "pulls/get"),
        vec![
            (200, 1),
            (304, 0),
            (404, 1),
            (502, 0),
            (304, 0),
            (403, 0),
            (304, 0)
        ]
    );
    let core = |outcome| attempts(&recorder, "core", "GET", outcome);
    assert_eq!(core(RequestOutcome::Ok), 1);
    assert_eq!(core(RequestOutcome::NotModified), 3);
    assert_eq!(core(RequestOutcome::ClientError), 1);
    assert_eq!(core(RequestOutcome::ServerError), 1);
    assert_eq!(core(RequestOutcome::RateLimited), 1);
    assert_eq!(core(RequestOutcome::Network), 0);
    assert_eq!(attempts(&recorder, "search", "GET", RequestOutcome::Ok), 1);
    let total: u64 = recorder
        .series(REQUESTS_METRIC)
        .iter()
        .map(|(_, value)| value)
        .sum();
    assert_eq!(total, 8, "one count per attempt and no other series");
}

#[tokio::test]
async fn an_attempt_without_an_answer_is_a_network_outcome() {
    let recorder = CountingRecorder::default();
    let _guard = metrics::set_default_local_recorder(&recorder);
    let fixture = fixture();
    let mut settings = settings(
        &fixture.sim,
        Credentials::PersonalAccessToken(SecretString::from(fixture.bot.token.clone())),
    );
    // The first attempt never gets an answer; the retry must have time to get
    // one even on a loaded machine (200 ms was too tight: the retry timed out
    // too and two network outcomes were counted).
    settings.request_timeout = Duration::from_secs(3);
    let client = GitHubClient::new(settings).unwrap();
    fixture.sim.inject(FaultRule::operation(
        "issues/list-labels-on-issue",
        Fault::Hang(Duration::from_hours(1)),
    ));

    let labels = client.list_labels(&fixture.repository, 1).await.unwrap();

    assert_eq!(labels, vec!["bot-review-needed"]);
    assert_eq!(
        attempts(&recorder, "core", "GET", RequestOutcome::Network),
        1,
        "{:?}",
        recorder.series(REQUESTS_METRIC)
    );
    assert_eq!(attempts(&recorder, "core", "GET", RequestOutcome::Ok), 1);
}
