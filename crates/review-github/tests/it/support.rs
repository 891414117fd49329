//! Small helpers shared by the tests: a simulator with one pull request, and
//! a client configured for tests (no write spacing, short waits).

use std::fmt::Write as _;
use std::time::Duration;

use review_core::footer::Footer;
use review_github::{
    ClientSettings, Credentials, GitHubClient, PayloadComment, RepositoryName, ReviewEvent,
    ReviewId, ReviewPayload, Side, ThreadId,
};
use review_testkit::github::{
    GithubSim, PullRequestHandle, RepositorySelection, SimApp, SimOptions, SimUser,
};
use secrecy::SecretString;

/// `src/lib.rs` before the pull request: 120 numbered lines.
pub fn lib_before() -> String {
    (1..=120).fold(String::new(), |mut text, line| {
        let _ = writeln!(text, "line {line}");
        text
    })
}

/// `src/lib.rs` in the pull request: lines 1–50 changed, the rest as before,
/// so the only hunk covers new lines 1–53 (50 changes plus 3 of context).
pub fn lib_after() -> String {
    (1..=120).fold(String::new(), |mut text, line| {
        let changed = if line <= 50 { " changed" } else { "" };
        let _ = writeln!(text, "line {line}{changed}");
        text
    })
}

/// A simulator with `acme/widgets` and pull request #1 (`feature` → `main`)
/// labelled `bot-review-needed`.
pub struct Fixture {
    pub sim: GithubSim,
    pub bot: SimUser,
    pub pull: PullRequestHandle,
    pub repository: RepositoryName,
}

pub fn fixture() -> Fixture {
    fixture_with(SimOptions::default())
}

/// [`fixture`] on a simulator started with `options`.
pub fn fixture_with(options: SimOptions) -> Fixture {
    let sim = GithubSim::start_with(options).expect("the simulator starts");
    let bot = sim.user("review-bot");
    let repo = sim
        .repo("acme/widgets")
        .file("src/lib.rs", &lib_before())
        .file("README.md", "# widgets\n")
        .create()
        .expect("repository");
    let pull = repo
        .pull_request("feature")
        .modify("src/lib.rs", &lib_after())
        .add("src/new.rs", "pub fn new() {}\n")
        .title("Improve widgets")
        .label("bot-review-needed")
        .open()
        .expect("pull request");
    Fixture {
        sim,
        bot,
        pull,
        repository: RepositoryName::parse("acme/widgets").unwrap(),
    }
}

/// Test settings: no write spacing, a short timeout, millisecond backoffs.
pub fn settings(sim: &GithubSim, credentials: Credentials) -> ClientSettings {
    let mut settings = ClientSettings::new(sim.api_url(), credentials);
    settings.write_spacing = Duration::ZERO;
    settings.request_timeout = Duration::from_secs(2);
    settings.retry_base_delay = Duration::from_millis(10);
    settings.retry_max_delay = Duration::from_millis(50);
    settings.secondary_limit_base_delay = Duration::from_millis(50);
    // The shared backoff never starts over within a test, however slow the
    // machine: tests that count backoff steps must not depend on timing.
    settings.secondary_limit_calm_period = Duration::from_mins(1);
    settings.max_rate_limit_wait = Duration::from_secs(5);
    settings.write_check_base_delay = Duration::from_millis(100);
    settings.write_check_window = Duration::from_millis(1_500);
    settings
}

/// Waits until `condition` holds (checked every few milliseconds), failing
/// the test after ten seconds: for states another task reaches.
pub async fn wait_until(what: &str, condition: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A client authenticated with a personal access token.
pub fn token_client(sim: &GithubSim, token: &str) -> GitHubClient {
    GitHubClient::new(settings(
        sim,
        Credentials::PersonalAccessToken(SecretString::from(token.to_owned())),
    ))
    .expect("client")
}

/// Every request body the client sent validated against its schema.
pub fn assert_conformant(sim: &GithubSim) {
    let violations = sim.request_schema_violations();
    assert!(
        violations.is_empty(),
        "request bodies outside the OpenAPI subset: {violations:#?}"
    );
}

/// The requests to one operation, as `(status, cost)`.
pub fn statuses_and_costs(sim: &GithubSim, operation: &str) -> Vec<(u16, u64)> {
    sim.requests_for(operation)
        .iter()
        .map(|record| (record.status, record.cost))
        .collect()
}

/// A fresh review id.
pub fn new_review_id() -> ReviewId {
    ReviewId(uuid::Uuid::new_v4())
}

/// A fresh thread id.
pub fn new_thread_id() -> ThreadId {
    ThreadId(uuid::Uuid::new_v4())
}

/// `text` with a footer carrying `thread`.
pub fn with_thread(text: &str, thread: ThreadId) -> String {
    Footer {
        review: None,
        thread: Some(thread),
    }
    .append_to(text)
}

/// An inline comment on `src/lib.rs` (RIGHT side) with its own thread footer.
pub fn inline(line: u32) -> PayloadComment {
    PayloadComment {
        path: "src/lib.rs".into(),
        body: with_thread(&format!("Finding on line {line}."), new_thread_id()),
        line,
        side: Side::Right,
        start_line: None,
        start_side: None,
    }
}

/// A COMMENT review whose body ends with `review`'s footer.
pub fn review_payload(
    commit_id: String,
    text: &str,
    review: Option<ReviewId>,
    comments: Vec<PayloadComment>,
) -> ReviewPayload {
    let footer = Footer {
        review,
        thread: None,
    };
    ReviewPayload {
        commit_id,
        body: footer.append_to(text),
        event: ReviewEvent::Comment,
        comments,
    }
}

/// GitHub App credentials for `app` with `private_key_pem`.
pub fn app_credentials(app: &SimApp, private_key_pem: &str) -> Credentials {
    Credentials::App {
        app_id: app.id,
        private_key_pem: SecretString::from(private_key_pem.to_owned()),
        installation_id: None,
    }
}

/// A client authenticating as `app`.
pub fn app_client(sim: &GithubSim, app: &SimApp) -> GitHubClient {
    GitHubClient::new(settings(sim, app_credentials(app, &app.private_key_pem))).unwrap()
}

/// An app installed on the `acme` account, every repository.
pub fn installed_app(fixture: &Fixture) -> SimApp {
    let app = fixture.sim.create_app("review-bot").unwrap();
    fixture
        .sim
        .install_app(&app, "acme", RepositorySelection::All)
        .unwrap();
    app
}
