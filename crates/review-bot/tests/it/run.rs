//! `review-bot run` end to end: the real binary polling the GitHub simulator
//! (two repositories, one named as OWNER/REPO and one through its owner), the
//! real Claude Code CLI pointed at the scripted model, a real SQLite store.
//! Tests wait for events (the model's request log, the store, the process's
//! end), never for a fixed time.
//!
//! The agent tests skip (saying why) without the pinned CLI, unless
//! `REVIEW_BOT_REQUIRE_ALL_TEST_DEPS=1`.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use review_testkit::github::{GithubSim, PullRequestHandle, SimUser};
use review_testkit::model::{ModelServer, Script, Turn};
use tempfile::TempDir;

use crate::{BUILD_AND_TEST_README as README, free_port, library};

const BOT: &str = "review-bot";

/// `acme/widgets` (watched as a repository) with a pull request labelled
/// `bot-review-needed` and one with no bot label; `beta/gadgets` (watched
/// through its owner `beta`) with one labelled `bot-ci-pending` whose CI passed.
struct World {
    sim: GithubSim,
    bot: SimUser,
    review: PullRequestHandle,
    unlabelled: PullRequestHandle,
    ci: PullRequestHandle,
    model: ModelServer,
    dir: TempDir,
}

impl World {
    /// `None` (after saying why) when the pinned CLI is not installed and not required.
    async fn start(script: Script) -> Option<Self> {
        review_testkit::tools::claude_for_test()?;
        let sim = GithubSim::start().expect("the simulator starts");
        let bot = sim.user(BOT);
        let mut pulls = Vec::new();
        for (name, labels) in [
            ("acme/widgets", &["bot-review-needed", ""][..]),
            ("beta/gadgets", &["bot-ci-pending"][..]),
        ] {
            let repo = sim
                .repo(name)
                .file("README.md", README)
                .file("build.sh", "echo building\n")
                .file("test.sh", "echo ok\n")
                .file("src/lib.rs", &library("pub fn five() -> u32 { 5 }"))
                .create()
                .expect("the repository is created");
            repo.add_collaborator(BOT, "write").unwrap();
            for (index, label) in labels.iter().enumerate() {
                let mut builder = repo
                    .pull_request(&format!("feature-{index}"))
                    .modify(
                        "src/lib.rs",
                        &library(&format!("pub fn five() -> u32 {{ 5 + {index} }}")),
                    )
                    .title(&format!("Change five ({index})"));
                if !label.is_empty() {
                    builder = builder.label(label);
                }
                pulls.push(builder.open().expect("the pull request opens"));
            }
        }
        let ci = pulls.pop().unwrap();
        let unlabelled = pulls.pop().unwrap();
        let review = pulls.pop().unwrap();
        ci.add_status("ci/test", "success").unwrap();
        let model = ModelServer::start(script)
            .await
            .expect("the model server starts");
        Some(Self {
            sim,
            bot,
            review,
            unlabelled,
            ci,
            model,
            dir: tempfile::tempdir().unwrap(),
        })
    }

    fn database_url(&self) -> String {
        format!(
            "sqlite://{}",
            self.dir.path().join("store.sqlite3").display()
        )
    }

    /// `review-bot run ARGUMENTS`, with an environment built from nothing but what it needs.
    fn command(&self, arguments: &[&str]) -> Command {
        let mut command = crate::bot_command(
            self.dir.path(),
            &self.sim,
            &self.bot,
            &self.model.base_url(),
        );
        command
            .arg("run")
            .args(arguments)
            .env("REVIEW_BOT_DAEMON_REPOSITORIES", "acme/widgets, beta")
            .stdin(Stdio::null());
        command
    }

    async fn active_leases(&self) -> Vec<review_store::Lease> {
        let store = review_store::Store::open(&self.database_url())
            .await
            .expect("the store opens");
        let leases = store.active_leases().await.expect("the leases are listed");
        store.close().await;
        leases
    }
}

fn labels(pull: &PullRequestHandle) -> Vec<String> {
    let mut labels = pull.labels().unwrap();
    labels.sort();
    labels
}

/// `GET path` on loopback `port`: the status line and the body.
fn http_get(port: u16, path: &str) -> (String, String) {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    (
        head.lines().next().unwrap_or("").to_owned(),
        body.to_owned(),
    )
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn once_advances_each_labelled_pull_request_by_one_step_and_leaves_the_rest() {
    let script = Script::new([
        Turn::text("No architectural concerns."),
        Turn::text("No issues found."),
    ]);
    let Some(world) = World::start(script).await else {
        return;
    };
    let mut command = world.command(&["--once"]);
    let output = tokio::task::spawn_blocking(move || command.output().expect("review-bot runs"))
        .await
        .unwrap();
    let log = stderr(&output);
    assert!(output.status.success(), "{log}");
    // The review: one LGTM review, handed to a human.
    assert_eq!(labels(&world.review), ["human-review-needed"], "{log}");
    let reviews = world.review.reviews().unwrap();
    assert_eq!(reviews.len(), 1, "{log}");
    assert!(reviews[0].body.contains("LGTM"), "{}", reviews[0].body);
    assert_eq!(world.model.requests().len(), 2, "one review, two passes");
    // The CI check: passed, so a review is asked for — and not yet made.
    assert_eq!(labels(&world.ci), ["bot-review-needed"], "{log}");
    assert!(world.ci.reviews().unwrap().is_empty());
    // No bot label: untouched, never even read.
    assert!(labels(&world.unlabelled).is_empty());
    let number = world.unlabelled.number();
    let touched: Vec<_> = world
        .sim
        .requests()
        .into_iter()
        .filter(|request| {
            request.path.starts_with("/repos/acme/widgets/")
                && (request.path.contains(&format!("/pulls/{number}"))
                    || request.path.contains(&format!("/issues/{number}")))
        })
        .map(|request| format!("{} {}", request.method, request.path))
        .collect();
    assert!(touched.is_empty(), "{touched:?}");
    // One search per trigger label per watched target.
    let searches = world.sim.requests_for("search/issues-and-pull-requests");
    assert_eq!(searches.len(), 6, "{searches:?}");
    assert!(log.contains("acme/widgets#1: job completed"), "{log}");
    assert!(log.contains("beta/gadgets#1: job completed"), "{log}");
    assert!(world.active_leases().await.is_empty());
}

#[test]
fn without_configuration_it_names_every_missing_piece_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_review-bot"))
        .arg("run")
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let log = stderr(&output);
    for expected in [
        "no repositories to watch",
        "REVIEW_BOT_DAEMON_REPOSITORIES",
        "no GitHub credential",
        "REVIEW_BOT_GITHUB_TOKEN",
        "no model credential",
        "ANTHROPIC_API_KEY",
        "review-bot.example.toml",
        "review-bot doctor",
    ] {
        assert!(log.contains(expected), "{expected}: {log}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_mid_job_stops_within_the_grace_period_and_releases_the_lease() {
    // The review's first pass never gets an answer.
    let script = Script::new([Turn::hang()]);
    let Some(world) = World::start(script).await else {
        return;
    };
    let port = free_port();
    let child = world
        .command(&[])
        .env("REVIEW_BOT_DAEMON_SHUTDOWN_GRACE_SECS", "1")
        .env("REVIEW_BOT_DAEMON_LISTEN", format!("127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        world
            .model
            .wait_for_requests(1, Duration::from_mins(5))
            .await,
        "the review's agent never asked the model"
    );
    let leases = world.active_leases().await;
    assert_eq!(leases.len(), 1, "{leases:?}");
    assert_eq!(leases[0].repository, "acme/widgets");
    assert_eq!(leases[0].pull_request, world.review.number());
    // The operations endpoints answer while the job runs.
    let (status, body) = http_get(port, "/healthz");
    assert!(status.contains("200"), "{status}: {body}");
    assert!(
        body.contains("store: ok") && body.contains("poll: ok"),
        "{body}"
    );
    let (status, metrics) = http_get(port, "/metrics");
    assert!(status.contains("200"), "{status}: {metrics}");
    for expected in [
        "review_bot_polls_total{outcome=\"ok\"} 1",
        "review_bot_searches_total{result=\"changed\"} 6",
        "review_bot_github_rate_limit_remaining{",
        "# TYPE review_bot_leases_held gauge",
    ] {
        assert!(metrics.contains(expected), "{expected}: {metrics}");
    }
    let signalled = Instant::now();
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    let log = stderr(&output);
    // One second of grace, then the agent is stopped and the lease released:
    // well under the agent's own 300 s timeout.
    assert!(
        signalled.elapsed() < Duration::from_secs(30),
        "took {:?}: {log}",
        signalled.elapsed()
    );
    assert!(output.status.success(), "{log}");
    assert!(log.contains("SIGTERM"), "{log}");
    assert!(
        log.contains("acme/widgets#1: job stopped at shutdown"),
        "{log}"
    );
    assert!(world.active_leases().await.is_empty(), "{log}");
    // Nothing was posted for the stopped review.
    assert!(world.review.reviews().unwrap().is_empty());
    assert_eq!(labels(&world.review), ["bot-review-needed"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polls_after_the_first_cost_no_rate_limit_points_while_nothing_changes() {
    // No agent runs here: nothing is labelled.
    let sim = GithubSim::start().expect("the simulator starts");
    let bot = sim.user(BOT);
    let repo = sim
        .repo("acme/widgets")
        .file("README.md", README)
        .create()
        .unwrap();
    repo.add_collaborator(BOT, "write").unwrap();
    repo.pull_request("feature")
        .modify("README.md", "# widgets, changed\n")
        .title("Untouched")
        .open()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_review-bot"))
        .arg("run")
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir.path().join("home"))
        .env("REVIEW_BOT_GITHUB_TOKEN", &bot.token)
        .env("REVIEW_BOT_GITHUB_API_URL", sim.api_url())
        .env("REVIEW_BOT_GITHUB_BOT_LOGIN", BOT)
        .env("REVIEW_BOT_WORK_DIR", dir.path().join("work"))
        .env(
            "REVIEW_BOT_DATABASE_URL",
            format!("sqlite://{}", dir.path().join("store.sqlite3").display()),
        )
        .env("REVIEW_BOT_DAEMON_REPOSITORIES", "acme/widgets")
        .env("REVIEW_BOT_DAEMON_POLL_INTERVAL_SECS", "1")
        .env(
            "REVIEW_BOT_DAEMON_LISTEN",
            format!("127.0.0.1:{}", free_port()),
        )
        .env("REVIEW_BOT_AGENT_CLAUDE_PATH", "/bin/true")
        .env("ANTHROPIC_API_KEY", "sk-ant-unused")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Three polls: three searches each (one per trigger label).
    let deadline = Instant::now() + Duration::from_mins(1);
    while sim.requests_for("search/issues-and-pull-requests").len() < 9 {
        assert!(Instant::now() < deadline, "no three polls within a minute");
        std::thread::sleep(Duration::from_millis(20));
    }
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let output = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let searches = sim.requests_for("search/issues-and-pull-requests");
    let first: Vec<_> = searches[..3].iter().map(|r| (r.status, r.cost)).collect();
    assert_eq!(first, [(200, 1); 3]);
    for later in &searches[3..] {
        assert_eq!(
            (later.status, later.cost),
            (304, 0),
            "{} {}",
            later.path,
            later.query
        );
    }
}

/// Waits (re-reading the simulator) until `pull` carries exactly `expected`.
async fn wait_for_labels(pull: &PullRequestHandle, expected: &[&str], what: &str) {
    let deadline = Instant::now() + Duration::from_mins(5);
    loop {
        let now = labels(pull);
        if now == expected {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: labels still {now:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_failing_on_one_head_backs_off_then_goes_to_a_human_and_a_relabel_tries_again() {
    // Two answers of 500 (each attempt's first pass fails), then a clean review.
    let script = Script::new([Turn::http_error(500), Turn::http_error(500)])
        .then_forever(Turn::text("No issues found."));
    let Some(world) = World::start(script).await else {
        return;
    };
    let child = world
        .command(&[])
        .env("REVIEW_BOT_DAEMON_REPOSITORIES", "acme/widgets")
        .env("REVIEW_BOT_DAEMON_POLL_INTERVAL_SECS", "1")
        .env("REVIEW_BOT_AGENT_MAX_ATTEMPTS", "2")
        .env(
            "REVIEW_BOT_DAEMON_LISTEN",
            format!("127.0.0.1:{}", free_port()),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let guard = KillOnDrop(Some(child));
    wait_for_labels(&world.review, &["bot-human-intervention"], "the hand-over").await;
    // Two attempts, one model request each; the polls between them (every
    // second, the backoff is two) skipped the pull request.
    assert_eq!(world.model.requests().len(), 2);
    let comments = world.review.issue_comments().unwrap();
    let bodies: Vec<&str> = comments
        .iter()
        .map(|comment| comment.body.as_str())
        .collect();
    // One status comment, updated by the second failure, then turned into
    // "stopped" by the hand-over — the only other comment (issue 25 item 10).
    assert_eq!(
        bodies.len(),
        2,
        "one status comment and the hand-over: {bodies:#?}"
    );
    assert!(comments.iter().all(|comment| comment.user == BOT));
    let hand_over_anchor = format!("#issuecomment-{}", comments[1].id);
    for expected in [
        "review-bot stopped",
        "**Attempt 2 of 2**",
        &hand_over_anchor,
    ] {
        assert!(bodies[0].contains(expected), "{expected}: {}", bodies[0]);
    }
    let hand_over = bodies[1];
    for expected in [
        "2 failed attempts",
        "`agent.max_attempts`",
        "replace `bot-human-intervention` with `bot-review-needed`",
    ] {
        assert!(hand_over.contains(expected), "{expected}: {hand_over}");
    }
    assert!(world.review.reviews().unwrap().is_empty());
    // A person hands it back on the same head: a fresh try, which succeeds.
    world.review.remove_label("bot-human-intervention").unwrap();
    world.review.add_label("bot-review-needed").unwrap();
    wait_for_labels(
        &world.review,
        &["human-review-needed"],
        "the retried review",
    )
    .await;
    let reviews = world.review.reviews().unwrap();
    assert_eq!(reviews.len(), 1);
    assert!(reviews[0].body.contains("LGTM"), "{}", reviews[0].body);
    assert_eq!(world.model.requests().len(), 4);
    assert_eq!(
        world.review.issue_comments().unwrap().len(),
        2,
        "no comment twice"
    );
    let output = guard.terminate().await;
    let log = stderr(&output);
    assert!(output.status.success(), "{log}");
    for expected in [
        "acme/widgets#1: attempt 1 of 2 failed at ",
        "acme/widgets#1: skipped: 1 failed attempt at ",
        "acme/widgets#1: 2 failed attempts: handed to a human (",
    ] {
        assert!(log.contains(expected), "{expected}: {log}");
    }
}

/// A daemon that is killed if the test ends before it does.
struct KillOnDrop(Option<std::process::Child>);

impl KillOnDrop {
    /// SIGTERM, then its output.
    async fn terminate(mut self) -> Output {
        let child = self.0.take().expect("the daemon runs");
        Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
            .await
            .unwrap()
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
