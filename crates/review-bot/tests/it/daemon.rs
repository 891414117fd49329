//! `review-bot run` at scale and under failure: the real binary (as a daemon,
//! polling every second) against the GitHub simulator, the real Claude Code
//! CLI pointed at the scripted model, real git and bubblewrap, and a real
//! SQLite file or PostgreSQL database.
//!
//! The model answers by what each request carries, never by arrival order,
//! so any number of sessions can run at once: the user message says which
//! pass it is and for which pull request, and the detailed pass reads
//! `src/lib.rs` and finds the finding only while line 5 is not fixed yet.
//!
//! Tests wait for events (a label, a review or a push on the simulator, a
//! line on the daemon's stderr, a `/metrics` value, a `/healthz` answer),
//! never for a fixed time; every bound below only matters when something is
//! wrong. Every daemon started here is killed, with its process group, when
//! its guard is dropped, so a failing test leaves nothing running.
//!
//! The tests skip (saying why) without the pinned CLI, and the PostgreSQL
//! ones without a test server, unless `REVIEW_BOT_REQUIRE_ALL_TEST_DEPS=1`.

use std::collections::BTreeMap;
use std::io::BufRead as _;
use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use review_testkit::github::{
    Fault, FaultRule, GithubSim, PullRequestHandle, RepoHandle, SimOptions, SimUser,
};
use review_testkit::model::{ModelServer, RecordedRequest, Script, ToolCall, Turn};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::{BUILD_AND_TEST_README as README, free_port, library, listed_comment};

/// The bot's login on the simulator.
const BOT: &str = "review-bot";

/// Line 5 on the base branch.
const ORIGINAL: &str = "pub fn five() -> u32 { 5 }";
/// Line 5 as the pull requests change it: what the review finds.
const CHANGED: &str = "pub fn five() -> u32 { 5 + 1 }";
/// Line 5 as the fix pass leaves it: what the re-review is happy with.
const FIXED: &str = "pub fn six() -> u32 { 5 + 1 }";
/// The review's one finding, on line 5.
const FINDING: &str = "`five` returns 6: rename it.";

/// A bound on a wait for the daemon's work, which only matters when it is
/// broken: then the test fails with the daemon's log before nextest stops
/// it (after five minutes).
const PATIENCE: Duration = Duration::from_mins(3);

// ---------------------------------------------------------------------------
// The model: answers by what the request carries.
// ---------------------------------------------------------------------------

/// Which agent run a model request belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Pass {
    Architecture,
    Detailed,
    Fix,
}

/// The pass, from the user message review-bot wrote.
fn pass_of(request: &RecordedRequest) -> Option<Pass> {
    let prompt = request.user_text();
    if prompt.contains("— pass 1 of 2, the architecture pass") {
        Some(Pass::Architecture)
    } else if prompt.contains("— pass 2 of 2, the detailed pass") {
        Some(Pass::Detailed)
    } else if prompt.contains("Address the unresolved review threads of pull request #") {
        Some(Pass::Fix)
    } else {
        None
    }
}

/// `(owner/name, number)` of the pull request the user message names
/// (`… pull request #7 of "acme/widgets" …`).
fn pull_request_of(request: &RecordedRequest) -> Option<(String, u64)> {
    let prompt = request.user_text();
    let rest = &prompt[prompt.find("pull request #")? + "pull request #".len()..];
    let (number, rest) = rest.split_once(" of \"")?;
    let (repository, _) = rest.split_once('"')?;
    Some((repository.to_owned(), number.parse().ok()?))
}

/// The agent's working directory, as Claude Code tells the model.
fn working_directory(request: &RecordedRequest) -> Option<std::path::PathBuf> {
    let text = format!("{}\n{}", request.system_text(), request.user_text());
    text.lines().find_map(|line| {
        line.trim()
            .trim_start_matches("- ")
            .strip_prefix("Primary working directory: ")
            .map(|directory| std::path::PathBuf::from(directory.trim()))
    })
}

fn mcp(name: &str, input: Value) -> ToolCall {
    ToolCall::new(format!("mcp__review__{name}"), input)
}

/// `Read src/lib.rs` in the agent's working directory.
fn read_library(request: &RecordedRequest) -> Turn {
    match working_directory(request) {
        Some(directory) => Turn::tool("Read", json!({ "file_path": directory.join("src/lib.rs") })),
        None => Turn::text("The CLI did not say where the checkout is."),
    }
}

/// What the scripted model answers, for any pass of any pull request:
/// - architecture: nothing to say;
/// - detailed: reads `src/lib.rs`; one finding on line 5 unless it is fixed;
/// - fix: lists the threads, reads and edits line 5, replies to the
///   finding, answers (through the CLI's `StructuredOutput` tool).
fn answer(request: &RecordedRequest) -> Turn {
    if request
        .user_text()
        .contains("You verify findings of a code review")
    {
        return verify_answer(request);
    }
    let last = request.last_tool_results().into_iter().next();
    let last_tool = last
        .as_ref()
        .and_then(|result| result.tool_name.clone())
        .unwrap_or_default();
    match pass_of(request) {
        Some(Pass::Architecture) => Turn::text("No architectural concerns."),
        Some(Pass::Detailed) => match last_tool.as_str() {
            "" => read_library(request),
            "Read" if last.is_some_and(|result| result.text.contains(FIXED)) => {
                Turn::text("No issues found.")
            }
            "Read" => Turn::tools([mcp(
                "leave_inline_comment",
                json!({"path": "src/lib.rs", "line": 5, "message": FINDING}),
            )]),
            _ => Turn::text("Detailed pass done."),
        },
        Some(Pass::Fix) => match last_tool.as_str() {
            "" => Turn::tool(
                "mcp__review__github_get_pr_comments",
                json!({ "include_replied": true }),
            ),
            "mcp__review__github_get_pr_comments" => read_library(request),
            "Read" => match working_directory(request) {
                Some(directory) => Turn::tool(
                    "Edit",
                    json!({
                        "file_path": directory.join("src/lib.rs"),
                        "old_string": CHANGED,
                        "new_string": FIXED,
                    }),
                ),
                None => Turn::text("The CLI did not say where the checkout is."),
            },
            "Edit" => match listed_comment(request, "rename it") {
                Some(finding) => Turn::tools([mcp(
                    "github_post_pr_reply",
                    json!({ "comment_id": finding, "message": "Renamed `five` to `six`." }),
                )]),
                None => Turn::text("The finding was not listed."),
            },
            _ => Turn::tool(
                "StructuredOutput",
                json!({
                    "threads_addressed": listed_comment(request, "rename it").into_iter().collect::<Vec<_>>(),
                    "build_passed": true,
                    "summary": "Renamed five to six.",
                }),
            ),
        },
        None => Turn::text("Nothing to do."),
    }
}

/// The verifier (`review.verify`, a run with `--json-schema`): refutes
/// every finding it is shown.
fn verify_answer(request: &RecordedRequest) -> Turn {
    if !request.last_tool_results().is_empty() {
        return Turn::text("Verified.");
    }
    let verdicts: Vec<Value> = (1..=request.user_text().matches("## Finding ").count())
        .map(|finding| {
            json!({"finding": finding, "verdict": "refuted", "confidence": 90,
                   "reason": "scripted"})
        })
        .collect();
    Turn::tool("StructuredOutput", json!({ "verdicts": verdicts }))
}

/// The agent runs the model saw, by pull request: one entry per session (its
/// first request), in order.
fn sessions(model: &ModelServer) -> BTreeMap<(String, u64), Vec<Pass>> {
    let mut sessions: BTreeMap<(String, u64), Vec<Pass>> = BTreeMap::new();
    for request in model.requests() {
        if request.messages().len() != 1 {
            continue;
        }
        let pass = pass_of(&request).expect("every session is a pass of review-bot's");
        let pull = pull_request_of(&request).expect("every pass names its pull request");
        sessions.entry(pull).or_default().push(pass);
    }
    sessions
}

fn sorted(mut passes: Vec<Pass>) -> Vec<Pass> {
    passes.sort();
    passes
}

// ---------------------------------------------------------------------------
// The world: the simulator, the model, the bot's directories.
// ---------------------------------------------------------------------------

struct World {
    sim: GithubSim,
    bot: SimUser,
    model: ModelServer,
    dir: TempDir,
}

impl World {
    /// `None` (after saying why) when the pinned CLI is not installed and not required.
    async fn start() -> Option<Self> {
        Self::start_with(SimOptions::default()).await
    }

    /// [`World::start`] with a simulator of these limits.
    async fn start_with(options: SimOptions) -> Option<Self> {
        review_testkit::tools::claude_for_test()?;
        let sim = GithubSim::start_with(options).expect("the simulator starts");
        let bot = sim.user(BOT);
        let model = ModelServer::start(Script::new([]).then_forever(Turn::decide(answer)))
            .await
            .expect("the model server starts");
        Some(Self {
            sim,
            bot,
            model,
            dir: tempfile::tempdir().unwrap(),
        })
    }

    /// A repository with a documented build and test, the bot a collaborator.
    fn repository(&self, name: &str) -> RepoHandle {
        let repo = self
            .sim
            .repo(name)
            .file("README.md", README)
            .file("build.sh", "echo building\n")
            .file("test.sh", "echo ok\n")
            .file("src/lib.rs", &library(ORIGINAL))
            .create()
            .expect("the repository is created");
        repo.add_collaborator(BOT, "write").unwrap();
        repo
    }

    fn sqlite_url(&self) -> String {
        format!(
            "sqlite://{}",
            self.dir.path().join("store.sqlite3").display()
        )
    }

    /// `review-bot run`, polling every second, with an environment built from
    /// nothing but what it needs; `work` names its work directory.
    fn command(&self, work: &str, database_url: &str, repositories: &str) -> Command {
        let mut command = crate::bot_command(
            self.dir.path(),
            &self.sim,
            &self.bot,
            &self.model.base_url(),
        );
        command
            .arg("run")
            .env("REVIEW_BOT_WORK_DIR", self.dir.path().join(work))
            .env("REVIEW_BOT_DATABASE_URL", database_url)
            .env("REVIEW_BOT_DAEMON_REPOSITORIES", repositories)
            .env("REVIEW_BOT_DAEMON_POLL_INTERVAL_SECS", "1")
            .env("REVIEW_BOT_DAEMON_CONCURRENCY", "2");
        command
    }

    /// Every bot pass the model was asked for, by pull request.
    fn sessions(&self) -> BTreeMap<(String, u64), Vec<Pass>> {
        sessions(&self.model)
    }
}

/// A pull request changing line 5 of `src/lib.rs` to `line_five`, and the
/// head it was opened with.
struct Pull {
    handle: PullRequestHandle,
    repository: String,
    opened_at: String,
}

impl Pull {
    fn open(repo: &RepoHandle, index: usize, line_five: &str, label: &str) -> Self {
        let mut builder = repo
            .pull_request(&format!("feature-{index}"))
            .modify("src/lib.rs", &library(line_five))
            .title(&format!("Change five ({index})"));
        if !label.is_empty() {
            builder = builder.label(label);
        }
        let handle = builder.open().expect("the pull request opens");
        let opened_at = handle.head_sha().unwrap();
        Self {
            repository: repo.full_name(),
            handle,
            opened_at,
        }
    }

    fn number(&self) -> u64 {
        self.handle.number()
    }

    fn key(&self) -> (String, u64) {
        (self.repository.clone(), self.number())
    }

    fn name(&self) -> String {
        format!("{}#{}", self.repository, self.number())
    }

    fn labels(&self) -> Vec<String> {
        let mut labels = self.handle.labels().unwrap();
        labels.sort();
        labels
    }

    fn has_label(&self, label: &str) -> bool {
        self.labels() == [label]
    }

    /// The bot's reviews (not the empty reviews its replies make).
    fn bot_reviews(&self) -> Vec<review_testkit::github::Review> {
        self.handle
            .reviews()
            .unwrap()
            .into_iter()
            .filter(|review| review.user == BOT && review.body.contains("review::"))
            .collect()
    }

    /// Commits between the head it was opened with and its head now, as
    /// `author: subject`.
    fn commits_since_opened(&self) -> Vec<String> {
        let head = self.handle.head_sha().unwrap();
        let output = Command::new("git")
            .arg(format!(
                "--git-dir={}",
                self.handle.repo().git_dir().display()
            ))
            .args(["log", "--format=%an: %s"])
            .arg(format!("{}..{head}", self.opened_at))
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Asserts the whole loop happened once: a review with the finding on
    /// the opened head, one fix commit by the bot, one reply on the
    /// finding's thread, an LGTM review on the fixed head, nothing else
    /// posted, and five agent passes.
    fn assert_went_through_the_loop_once(&self, sessions: &BTreeMap<(String, u64), Vec<Pass>>) {
        let name = self.name();
        assert_eq!(self.labels(), ["human-review-needed"], "{name}");
        let head = self.handle.head_sha().unwrap();
        assert_ne!(head, self.opened_at, "{name}: nothing was pushed");
        let commits = self.commits_since_opened();
        assert_eq!(commits.len(), 1, "{name}: {commits:?}");
        assert!(
            commits[0].starts_with("Review Bot: "),
            "{name}: {commits:?}"
        );
        let reviews = self.bot_reviews();
        assert_eq!(reviews.len(), 2, "{name}: {reviews:#?}");
        assert_eq!(reviews[0].commit_id, self.opened_at, "{name}");
        assert!(
            !reviews[0].body.contains("LGTM"),
            "{name}: {}",
            reviews[0].body
        );
        assert_eq!(reviews[1].commit_id, head, "{name}");
        assert!(
            reviews[1].body.contains("LGTM"),
            "{name}: {}",
            reviews[1].body
        );
        let comments = self.handle.review_comments().unwrap();
        let findings: Vec<_> = comments
            .iter()
            .filter(|comment| comment.in_reply_to.is_none())
            .collect();
        assert_eq!(findings.len(), 1, "{name}: {comments:#?}");
        assert_eq!(
            (findings[0].user.as_str(), findings[0].line),
            (BOT, Some(5)),
            "{name}"
        );
        assert!(findings[0].body.contains(FINDING), "{name}");
        let replies: Vec<_> = comments
            .iter()
            .filter(|comment| comment.in_reply_to == Some(findings[0].id))
            .collect();
        assert_eq!(replies.len(), 1, "{name}: {comments:#?}");
        assert_eq!(replies[0].user, BOT, "{name}");
        assert_eq!(comments.len(), 2, "{name}: {comments:#?}");
        let conversation = self.handle.issue_comments().unwrap();
        assert!(conversation.is_empty(), "{name}: {conversation:#?}");
        assert_eq!(
            sorted(sessions.get(&self.key()).cloned().unwrap_or_default()),
            [
                Pass::Architecture,
                Pass::Architecture,
                Pass::Detailed,
                Pass::Detailed,
                Pass::Fix
            ],
            "{name}"
        );
    }

    /// Asserts one LGTM review on the opened head, nothing else posted or
    /// pushed, and two agent passes.
    fn assert_reviewed_once(&self, sessions: &BTreeMap<(String, u64), Vec<Pass>>) {
        let name = self.name();
        assert_eq!(self.labels(), ["human-review-needed"], "{name}");
        assert_eq!(self.handle.head_sha().unwrap(), self.opened_at, "{name}");
        let reviews = self.bot_reviews();
        assert_eq!(reviews.len(), 1, "{name}: {reviews:#?}");
        assert!(
            reviews[0].body.contains("LGTM"),
            "{name}: {}",
            reviews[0].body
        );
        assert!(self.handle.review_comments().unwrap().is_empty(), "{name}");
        assert!(self.handle.issue_comments().unwrap().is_empty(), "{name}");
        assert_eq!(
            sorted(sessions.get(&self.key()).cloned().unwrap_or_default()),
            [Pass::Architecture, Pass::Detailed],
            "{name}"
        );
    }
}

// ---------------------------------------------------------------------------
// A running daemon.
// ---------------------------------------------------------------------------

/// A `review-bot run` process in a process group of its own, its stderr read
/// line by line into [`Daemon::log`]. Dropping it kills the whole group.
struct Daemon {
    name: &'static str,
    /// `None` once the process is reaped: from then on its pid, and so its
    /// process group's id, may be another process's (`pid_max` can be
    /// 32768), so nothing is sent to the group any more.
    child: Option<Child>,
    /// The process group (the daemon's pid).
    group: u32,
    /// `/healthz` and `/metrics`.
    port: u16,
    log: Arc<Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Daemon {
    fn start(name: &'static str, mut command: Command) -> Self {
        let port = free_port();
        command
            .env("REVIEW_BOT_DAEMON_LISTEN", format!("127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = command.spawn().expect("review-bot starts");
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let reader = {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                for line in std::io::BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    let mut log = log.lock().unwrap();
                    log.push_str(&line);
                    log.push('\n');
                }
            })
        };
        Self {
            name,
            group: child.id(),
            child: Some(child),
            port,
            log,
            reader: Some(reader),
        }
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Panics (with the log) if the process ended.
    fn assert_running(&mut self) {
        let child = self.child.as_mut().expect("the daemon is running");
        if let Some(status) = child.try_wait().unwrap() {
            self.child = None;
            panic!("{} ended early ({status}):\n{}", self.name, self.log());
        }
    }

    /// Kills the whole process group, while the daemon is not reaped yet.
    fn kill_group(&self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.group)])
            .stderr(Stdio::null())
            .status();
    }

    /// Waits for the process's end (reaping it), then for the rest of its
    /// stderr (unless something it started holds the pipe: then the log is
    /// what was read so far).
    async fn wait_for_exit(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("the daemon is running");
        let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
            .await
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while self
            .reader
            .as_ref()
            .is_some_and(|reader| !reader.is_finished())
            && Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if let Some(reader) = self.reader.take_if(|reader| reader.is_finished()) {
            reader.join().unwrap();
        }
        status
    }

    /// Waits until `/healthz` and `/metrics` are served.
    async fn wait_until_serving(&mut self) {
        let log = Arc::clone(&self.log);
        wait_until(
            &mut [&mut *self],
            "the daemon serves /healthz",
            Duration::from_mins(2),
            || {
                log.lock()
                    .unwrap()
                    .contains("serving /healthz and /metrics")
            },
        )
        .await;
    }

    async fn healthz(&self) -> (String, String) {
        http_get(self.port, "/healthz").await
    }

    /// A sample's value on `/metrics` (0 when absent).
    async fn metric(&self, sample: &str) -> f64 {
        let (_, metrics) = http_get(self.port, "/metrics").await;
        metrics
            .lines()
            .find_map(|line| {
                line.strip_prefix(sample)
                    .and_then(|rest| rest.strip_prefix(' '))
                    .and_then(|value| value.trim().parse().ok())
            })
            .unwrap_or(0.0)
    }

    /// SIGKILL to the daemon and everything in its process group, as `kill
    /// -9` (or a container's end) does: no drain, nothing released. Returns
    /// the log.
    async fn kill_dash_9(mut self) -> String {
        self.kill_group();
        self.wait_for_exit().await;
        self.log()
    }

    /// SIGTERM (the daemon drains), then waits for its end: its exit status and log.
    async fn terminate(mut self) -> (ExitStatus, String) {
        let status = Command::new("kill")
            .args(["-TERM", &self.daemon_pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let status = self.wait_for_exit().await;
        (status, self.log())
    }
}

impl Daemon {
    /// The daemon's own process: the leader, or — when the leader is the
    /// `unshare` that put it in a PID namespace (which does not pass signals
    /// on) — the leader's child.
    fn daemon_pid(&self) -> u32 {
        let leader = self.group;
        let comm = std::fs::read_to_string(format!("/proc/{leader}/comm")).unwrap_or_default();
        if comm.trim() != "unshare" {
            return leader;
        }
        std::fs::read_to_string(format!("/proc/{leader}/task/{leader}/children"))
            .ok()
            .and_then(|children| children.split_whitespace().next()?.parse().ok())
            .unwrap_or(leader)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // The daemon and whatever it left in its group (an agent, git).
            self.kill_group();
            let _ = child.wait();
        }
        if std::thread::panicking() {
            eprintln!("--- {} stderr ---\n{}", self.name, self.log());
        }
    }
}

/// Waits until `done`, checking every few milliseconds that the daemons
/// still run; panics with their logs after `bound`.
async fn wait_until(
    daemons: &mut [&mut Daemon],
    what: &str,
    bound: Duration,
    mut done: impl FnMut() -> bool,
) {
    let deadline = Instant::now() + bound;
    loop {
        for daemon in daemons.iter_mut() {
            daemon.assert_running();
        }
        if done() {
            return;
        }
        if Instant::now() > deadline {
            let logs: Vec<String> = daemons
                .iter()
                .map(|daemon| format!("--- {} ---\n{}", daemon.name, daemon.log()))
                .collect();
            panic!("{what}: not within {bound:?}\n{}", logs.join("\n"));
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Waits until a sample on the daemon's `/metrics` reaches `at_least`.
async fn wait_for_metric(daemon: &mut Daemon, sample: &str, at_least: f64) {
    let deadline = Instant::now() + Duration::from_mins(2);
    loop {
        daemon.assert_running();
        let value = daemon.metric(sample).await;
        if value >= at_least {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{}: {sample} is {value}, not {at_least}:\n{}",
            daemon.name,
            daemon.log()
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// `GET path` on loopback `port`: the status line and the body.
async fn http_get(port: u16, path: &str) -> (String, String) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .await
        .unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let response = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    (
        head.lines().next().unwrap_or("").to_owned(),
        body.to_owned(),
    )
}

async fn active_leases(database_url: &str) -> Vec<review_store::Lease> {
    let store = review_store::Store::open(database_url)
        .await
        .expect("the store opens");
    let leases = store.active_leases().await.expect("the leases are listed");
    store.close().await;
    leases
}

// ---------------------------------------------------------------------------
// Scale.
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_pull_requests_across_three_repositories_each_go_through_the_loop_once() {
    // The test runs the loop on a compressed clock: polls every second (60 s
    // in production) and no spacing between writes (1 s in production). At
    // that pace 20 pull requests go past GitHub's search limit (30 a minute)
    // and its secondary limit (80 content-creating requests a minute), which
    // production's pace stays under; each costs a pause of up to a minute
    // that measures the limits, not the daemon (with them, this run took
    // 190 s instead of 60 on a 2-core machine, nothing duplicated).
    // review-github's `rate_limits` tests cover waiting them out; here they
    // are lifted.
    let options = SimOptions {
        search_limit: 10_000,
        content_creation_per_minute: 10_000,
        content_creation_per_hour: 100_000,
        ..SimOptions::default()
    };
    let Some(world) = World::start_with(options).await else {
        return;
    };
    // Two repositories watched by name, the third through its owner.
    let mut pulls = Vec::new();
    for (name, count) in [("acme/widgets", 7), ("acme/gizmos", 7), ("beta/gadgets", 6)] {
        let repo = world.repository(name);
        for index in 0..count {
            pulls.push(Pull::open(&repo, index, CHANGED, "bot-review-needed"));
        }
    }
    assert_eq!(pulls.len(), 20);
    let started = Instant::now();
    let mut command = world.command(
        "work",
        &world.sqlite_url(),
        "acme/widgets, acme/gizmos, beta",
    );
    command.env("REVIEW_BOT_DAEMON_CONCURRENCY", "4");
    let mut daemon = Daemon::start("daemon", command);
    // No CI is configured, so each `bot-ci-pending` step passes at once.
    wait_until(
        &mut [&mut daemon],
        "every pull request handed to a human",
        Duration::from_mins(4),
        || {
            pulls
                .iter()
                .all(|pull| pull.has_label("human-review-needed"))
        },
    )
    .await;
    let elapsed = started.elapsed();

    // Idle from now on: once each search has seen the final labels, every
    // poll is answered 304 and costs nothing.
    let settled = world
        .sim
        .requests_for("search/issues-and-pull-requests")
        .len();
    wait_until(
        &mut [&mut daemon],
        "three more polls",
        Duration::from_mins(2),
        || {
            world
                .sim
                .requests_for("search/issues-and-pull-requests")
                .len()
                >= settled + 27
        },
    )
    .await;
    let searches = world.sim.requests_for("search/issues-and-pull-requests");
    let idle: Vec<_> = searches[searches.len() - 9..]
        .iter()
        .map(|request| (request.status, request.cost))
        .collect();
    assert_eq!(idle, [(304, 0); 9]);

    let (status, log) = daemon.terminate().await;
    assert!(status.success(), "{log}");
    // First, with the daemon's log: any job that did not complete.
    let failed: Vec<&str> = log
        .lines()
        .filter(|line| {
            line.contains("job failed")
                || line.contains("job not started")
                || line.contains(" failed at ")
                || line.contains("✗")
        })
        .collect();
    assert!(failed.is_empty(), "{failed:#?}\n{log}");
    let sessions = world.sessions();
    for pull in &pulls {
        pull.assert_went_through_the_loop_once(&sessions);
    }
    let total: usize = sessions.values().map(Vec::len).sum();
    assert_eq!(total, 20 * (2 + 1 + 2), "{sessions:#?}");
    assert_eq!(sessions.len(), 20);
    assert!(world.sim.request_schema_violations().is_empty());
    assert!(active_leases(&world.sqlite_url()).await.is_empty(), "{log}");

    let counters = world.sim.counters();
    eprintln!(
        "20 pull requests through the whole loop in {:.1} s ({} agent runs, {} model requests); \
         GitHub: {} requests, {} rate-limit points, {} searches",
        elapsed.as_secs_f64(),
        total,
        world.model.requests().len(),
        counters.requests,
        counters.cost,
        searches.len(),
    );
    for (operation, counter) in &counters.by_operation {
        eprintln!(
            "  {operation}: {} requests, {} points, {:?}",
            counter.requests, counter.cost, counter.statuses
        );
    }
}

// ---------------------------------------------------------------------------
// Crashes.
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_dash_9_mid_job_then_restart_completes_with_nothing_duplicated() {
    let Some(world) = World::start().await else {
        return;
    };
    let repo = world.repository("acme/widgets");
    let pull = Pull::open(&repo, 0, CHANGED, "bot-review-needed");
    let database = world.sqlite_url();
    let daemon = |name| Daemon::start(name, world.command("work", &database, "acme/widgets"));

    // 1. Killed in the review, after the review is on GitHub and halfway
    //    through its label change: the new label is added first, then
    //    removing `bot-review-needed` hangs.
    world.sim.inject(FaultRule::operation(
        "issues/remove-label",
        Fault::Hang(Duration::from_hours(1)),
    ));
    let mut first = daemon("first daemon");
    wait_until(
        &mut [&mut first],
        "the review is posted and bot-changes-needed added",
        PATIENCE,
        || pull.labels().contains(&"bot-changes-needed".to_owned()),
    )
    .await;
    let first_log = first.kill_dash_9().await;
    world.sim.clear_faults();
    // Stopped between the two label writes, it still carries a trigger: the
    // next daemon finds it (removing first would have left no bot label).
    assert_eq!(
        pull.labels(),
        ["bot-changes-needed", "bot-review-needed"],
        "{first_log}"
    );
    assert_eq!(pull.bot_reviews().len(), 1);
    let leases = active_leases(&database).await;
    assert_eq!(
        leases.len(),
        1,
        "the killed daemon's lease is left: {leases:?}"
    );

    // 2. A new daemon finishes the review without asking the agent again,
    //    then is killed in the fix, after the push and before the reply
    //    (which hangs) and the label.
    world.sim.inject(FaultRule::operation(
        "pulls/create-reply-for-review-comment",
        Fault::Hang(Duration::from_hours(1)),
    ));
    let mut second = daemon("second daemon");
    wait_until(&mut [&mut second], "the fix is pushed", PATIENCE, || {
        pull.handle.head_sha().unwrap() != pull.opened_at
    })
    .await;
    let second_log = second.kill_dash_9().await;
    world.sim.clear_faults();
    assert!(
        second_log.contains("finishing an unfinished review of this head"),
        "{second_log}"
    );
    assert_eq!(pull.labels(), ["bot-changes-needed"], "{second_log}");
    assert_eq!(pull.bot_reviews().len(), 1, "{second_log}");
    assert!(
        pull.handle
            .review_comments()
            .unwrap()
            .iter()
            .all(|comment| comment.in_reply_to.is_none()),
        "the reply was posted before the kill"
    );
    assert_eq!(
        sorted(world.sessions().remove(&pull.key()).unwrap_or_default()),
        [Pass::Architecture, Pass::Detailed, Pass::Fix],
        "{second_log}"
    );

    // 3. A third daemon finishes the fix (no agent, no commit), passes CI
    //    and re-reviews: LGTM.
    let mut third = daemon("third daemon");
    wait_until(
        &mut [&mut third],
        "the pull request is handed to a human",
        PATIENCE,
        || pull.has_label("human-review-needed"),
    )
    .await;
    let (status, third_log) = third.terminate().await;
    assert!(status.success(), "{third_log}");
    assert!(third_log.contains("resumed"), "{third_log}");
    pull.assert_went_through_the_loop_once(&world.sessions());
    // The leases of the killed daemons were taken over at once, not after
    // they lapsed (the restarted daemon releases the leases of dead
    // processes of its host).
    for log in [&second_log, &third_log] {
        assert!(!log.contains("another holder has its lease"), "{log}");
    }
    assert!(active_leases(&database).await.is_empty());
}

// ---------------------------------------------------------------------------
// Replicas.
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_daemons_on_one_postgresql_never_process_a_pull_request_step_twice() {
    let Some(world) = World::start().await else {
        return;
    };
    let Some(server) = review_store::testing::postgres_server_url() else {
        return;
    };
    let database = review_store::testing::TestDatabase::create(&server).await;
    let repo = world.repository("acme/widgets");
    // Pull requests a review is happy with: one review each closes them.
    let pulls: Vec<Pull> = (0..8)
        .map(|index| Pull::open(&repo, index, FIXED, ""))
        .collect();
    let mut one = Daemon::start(
        "daemon one",
        world.command("work-one", &database.url, "acme"),
    );
    let mut two = Daemon::start(
        "daemon two",
        world.command("work-two", &database.url, "acme"),
    );
    one.wait_until_serving().await;
    two.wait_until_serving().await;
    // Both have polled before anything is labelled, so both see the labels.
    let polled = "review_bot_polls_total{outcome=\"ok\"}";
    wait_for_metric(&mut one, polled, 1.0).await;
    wait_for_metric(&mut two, polled, 1.0).await;
    for pull in &pulls {
        pull.handle.add_label("bot-review-needed").unwrap();
    }
    wait_until(
        &mut [&mut one, &mut two],
        "every pull request handed to a human",
        PATIENCE,
        || {
            pulls
                .iter()
                .all(|pull| pull.has_label("human-review-needed"))
        },
    )
    .await;
    let (status, one_log) = one.terminate().await;
    assert!(status.success(), "{one_log}");
    let (status, two_log) = two.terminate().await;
    assert!(status.success(), "{two_log}");

    let sessions = world.sessions();
    for pull in &pulls {
        pull.assert_reviewed_once(&sessions);
    }
    assert_eq!(sessions.values().map(Vec::len).sum::<usize>(), 8 * 2);
    // One review run per pull request in the store, whoever ran it.
    let store = review_store::Store::open(&database.url).await.unwrap();
    for pull in &pulls {
        let runs = store
            .runs_for_pull_request("acme/widgets", pull.number())
            .await
            .unwrap();
        assert_eq!(runs.len(), 1, "{}: {runs:#?}", pull.name());
        assert_eq!(runs[0].passes.len(), 2, "{}: {runs:#?}", pull.name());
    }
    assert!(store.active_leases().await.unwrap().is_empty());
    store.close().await;
    // Both did some of the work.
    let posted = |log: &str| {
        log.lines()
            .filter(|line| line.contains("✓ post the review"))
            .count()
    };
    let (by_one, by_two) = (posted(&one_log), posted(&two_log));
    eprintln!(
        "reviews posted: {by_one} by daemon one, {by_two} by daemon two; leases found taken: {} and {}",
        one_log.matches("another holder has its lease").count(),
        two_log.matches("another holder has its lease").count(),
    );
    assert_eq!(by_one + by_two, 8, "{one_log}\n{two_log}");
    assert!(by_one > 0 && by_two > 0, "{one_log}\n{two_log}");
    database.drop_database().await;
}

// ---------------------------------------------------------------------------
// Health.
// ---------------------------------------------------------------------------

/// A TCP forwarder between the daemon and PostgreSQL that the test can cut
/// (open connections closed, new ones accepted and closed at once) and
/// restore.
struct Forwarder {
    port: u16,
    open: Arc<AtomicBool>,
    connections: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
    accepting: tokio::task::JoinHandle<()>,
}

impl Forwarder {
    async fn start(upstream: String) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let open = Arc::new(AtomicBool::new(true));
        let connections: Arc<Mutex<Vec<tokio::task::AbortHandle>>> = Arc::default();
        let accepting = {
            let open = Arc::clone(&open);
            let connections = Arc::clone(&connections);
            tokio::spawn(async move {
                loop {
                    let Ok((mut inbound, _)) = listener.accept().await else {
                        continue;
                    };
                    if !open.load(Ordering::SeqCst) {
                        drop(inbound);
                        continue;
                    }
                    let upstream = upstream.clone();
                    let task = tokio::spawn(async move {
                        if let Ok(mut outbound) = tokio::net::TcpStream::connect(upstream).await {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        }
                    });
                    connections.lock().unwrap().push(task.abort_handle());
                }
            })
        };
        Self {
            port,
            open,
            connections,
            accepting,
        }
    }

    /// `url` with its host and port replaced by the forwarder's.
    fn url(&self, url: &str) -> String {
        let (scheme, rest) = url.split_once("://").unwrap();
        let (user, rest) = rest.split_once('@').unwrap();
        let (_, path) = rest.split_once('/').unwrap();
        format!("{scheme}://{user}@127.0.0.1:{}/{path}", self.port)
    }

    fn cut(&self) {
        self.open.store(false, Ordering::SeqCst);
        for connection in self.connections.lock().unwrap().drain(..) {
            connection.abort();
        }
    }

    fn restore(&self) {
        self.open.store(true, Ordering::SeqCst);
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.cut();
        self.accepting.abort();
    }
}

/// `host:port` of a `postgres://user@host:port/database` URL.
fn host_and_port(url: &str) -> String {
    let rest = url.split_once('@').unwrap().1;
    rest.split_once('/').unwrap().0.to_owned()
}

/// Polls `/healthz` until `done(status line, body)`; returns the body.
async fn wait_for_health(
    daemon: &mut Daemon,
    what: &str,
    done: impl Fn(&str, &str) -> bool,
) -> String {
    let deadline = Instant::now() + Duration::from_mins(2);
    loop {
        daemon.assert_running();
        let (status, body) = daemon.healthz().await;
        if done(&status, &body) {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: /healthz still says {status}: {body}\n{}",
            daemon.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The `/healthz` of a daemon with nothing wrong.
fn healthy(status: &str, body: &str) -> bool {
    status.contains(" 200 ")
        && body.lines().any(|line| line.starts_with("store: ok ("))
        && body.lines().any(|line| line == "poll: ok")
}

/// Cuts the store off, labels a pull request, and checks that `/healthz`
/// says so, the daemon keeps trying to take the pull request on, and does
/// once the store is back. Returns the pull request.
async fn survive_an_unreachable_store(
    daemon: &mut Daemon,
    forwarder: &Forwarder,
    repo: &RepoHandle,
    index: usize,
) -> Pull {
    forwarder.cut();
    let pull = Pull::open(repo, index, FIXED, "bot-review-needed");
    let body = wait_for_health(daemon, "the store is down", |status, body| {
        status.contains(" 503 ")
            && body
                .lines()
                .any(|line| line.starts_with("store: ") && !line.starts_with("store: ok"))
    })
    .await;
    assert!(body.lines().any(|line| line == "poll: ok"), "{body}");
    // The daemon finds the pull request and keeps trying to claim it.
    let attempts = format!("{}: job not started", pull.name());
    let log = Arc::clone(&daemon.log);
    wait_until(
        &mut [&mut *daemon],
        "two attempts while the store is down",
        Duration::from_mins(2),
        || log.lock().unwrap().matches(&attempts).count() >= 2,
    )
    .await;
    assert!(pull.bot_reviews().is_empty());
    assert_eq!(pull.labels(), ["bot-review-needed"]);
    forwarder.restore();
    wait_for_health(daemon, "the store is back", healthy).await;
    wait_until(
        &mut [&mut *daemon],
        "the pull request labelled while the store was down is reviewed",
        PATIENCE,
        || pull.has_label("human-review-needed"),
    )
    .await;
    pull
}

/// Revokes the bot's token, labels a pull request, and checks that
/// `/healthz` says so, the daemon keeps polling, and takes the pull request
/// on once the token works again. Returns the pull request.
async fn survive_a_revoked_token(
    daemon: &mut Daemon,
    world: &World,
    repo: &RepoHandle,
    index: usize,
) -> Pull {
    world.sim.revoke_token(&world.bot.token).unwrap();
    let body = wait_for_health(daemon, "the token is revoked", |status, body| {
        status.contains(" 503 ")
            && body
                .lines()
                .any(|line| line.starts_with("poll: the latest poll failed: "))
    })
    .await;
    assert!(body.contains("401 Bad credentials"), "{body}");
    assert!(
        body.lines().any(|line| line.starts_with("store: ok (")),
        "{body}"
    );
    let pull = Pull::open(repo, index, FIXED, "bot-review-needed");
    // Two more polls fail while the pull request waits.
    let failed = "review_bot_polls_total{outcome=\"error\"}";
    let before = daemon.metric(failed).await;
    wait_for_metric(daemon, failed, before + 2.0).await;
    assert!(pull.bot_reviews().is_empty());
    assert_eq!(pull.labels(), ["bot-review-needed"]);
    world.sim.reinstate_token(&world.bot.token).unwrap();
    wait_for_health(daemon, "the token works again", healthy).await;
    wait_until(
        &mut [&mut *daemon],
        "the pull request labelled while the token was revoked is reviewed",
        PATIENCE,
        || pull.has_label("human-review-needed"),
    )
    .await;
    pull
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_reports_an_unreachable_store_and_a_revoked_token_and_the_daemon_keeps_trying() {
    let Some(world) = World::start().await else {
        return;
    };
    // The store's half needs PostgreSQL (a network boundary to cut); without
    // a test server (and when not required) only the token's half runs, on SQLite.
    let database = if let Some(server) = review_store::testing::postgres_server_url() {
        Some(review_store::testing::TestDatabase::create(&server).await)
    } else {
        eprintln!("not testing an unreachable store: no test PostgreSQL server");
        None
    };
    let forwarder = match &database {
        Some(database) => Some(Forwarder::start(host_and_port(&database.url)).await),
        None => None,
    };
    let database_url = match (&database, &forwarder) {
        (Some(database), Some(forwarder)) => forwarder.url(&database.url),
        _ => world.sqlite_url(),
    };
    let repo = world.repository("acme/widgets");
    let mut daemon = Daemon::start(
        "daemon",
        world.command("work", &database_url, "acme/widgets"),
    );
    daemon.wait_until_serving().await;
    wait_for_health(&mut daemon, "healthy at start", healthy).await;
    let mut pulls = Vec::new();
    if let Some(forwarder) = &forwarder {
        pulls.push(survive_an_unreachable_store(&mut daemon, forwarder, &repo, pulls.len()).await);
    }
    pulls.push(survive_a_revoked_token(&mut daemon, &world, &repo, pulls.len()).await);

    let (status, log) = daemon.terminate().await;
    assert!(status.success(), "{log}");
    let sessions = world.sessions();
    for pull in &pulls {
        pull.assert_reviewed_once(&sessions);
    }
    drop(forwarder);
    match database {
        Some(database) => {
            assert!(active_leases(&database.url).await.is_empty());
            database.drop_database().await;
        }
        None => assert!(active_leases(&world.sqlite_url()).await.is_empty()),
    }
}

// ---------------------------------------------------------------------------
// Replicas in separate PID namespaces (issue 25, item 7's verification).
// ---------------------------------------------------------------------------

/// How to start a process in a PID namespace of its own on this machine:
/// `unshare --pid --fork --mount-proc` as root, with `--user
/// --map-root-user` otherwise. `None` (after saying why) when the machine
/// cannot create one; as root (CI) it must.
fn pid_namespace_prefix() -> Option<Vec<&'static str>> {
    let candidates: [&[&'static str]; 2] = [
        &["unshare", "--pid", "--fork", "--mount-proc"],
        &[
            "unshare",
            "--user",
            "--map-root-user",
            "--pid",
            "--fork",
            "--mount-proc",
        ],
    ];
    let own = std::fs::read_link("/proc/self/ns/pid").ok();
    for candidate in candidates {
        let probe = Command::new(candidate[0])
            .args(&candidate[1..])
            .args(["readlink", "/proc/self/ns/pid"])
            .stdin(Stdio::null())
            .output();
        if let Ok(output) = probe
            && output.status.success()
        {
            let inside = String::from_utf8_lossy(&output.stdout).trim().to_owned();
            if own
                .as_ref()
                .is_some_and(|own| own.to_string_lossy() != inside)
            {
                return Some(candidate.to_vec());
            }
        }
    }
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| String::from_utf8_lossy(&output.stdout).trim() == "0");
    assert!(
        !root && !review_store::testing::all_dependencies_required(),
        "this machine cannot start a process in a PID namespace of its own \
         (`unshare --pid --fork --mount-proc` failed), but the run requires it"
    );
    eprintln!(
        "note: not testing replicas in separate PID namespaces: this machine cannot create \
         one (`unshare --pid --fork --mount-proc` failed; run as root or allow unprivileged \
         user namespaces)"
    );
    None
}

/// `command` run through `prefix` (same arguments, environment and directory).
fn wrapped(prefix: &[&str], command: &Command) -> Command {
    let mut wrapped = Command::new(prefix[0]);
    wrapped
        .args(&prefix[1..])
        .arg(command.get_program())
        .args(command.get_args())
        .env_clear();
    for (name, value) in command.get_envs() {
        if let Some(value) = value {
            wrapped.env(name, value);
        }
    }
    if let Some(directory) = command.get_current_dir() {
        wrapped.current_dir(directory);
    }
    wrapped
}

/// Two daemons on one PostgreSQL store, on the same host (same host name and
/// boot), one of them in a PID namespace of its own — containers with the
/// host's network, Kubernetes `hostNetwork` — both watching the same
/// repository: each pull request gets exactly one review, and neither takes
/// the other's live lease for a lease "of a process that is gone".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_in_separate_pid_namespaces_never_take_each_others_live_leases() {
    let Some(world) = World::start().await else {
        return;
    };
    let Some(server) = review_store::testing::postgres_server_url() else {
        return;
    };
    let Some(prefix) = pid_namespace_prefix() else {
        return;
    };
    let database = review_store::testing::TestDatabase::create(&server).await;
    let repo = world.repository("acme/widgets");
    let pulls: Vec<Pull> = (0..6)
        .map(|index| Pull::open(&repo, index, FIXED, ""))
        .collect();
    let mut host = Daemon::start(
        "daemon on the host",
        world.command("work-host", &database.url, "acme"),
    );
    let mut contained = Daemon::start(
        "daemon in its own PID namespace",
        wrapped(
            &prefix,
            &world.command("work-contained", &database.url, "acme/widgets"),
        ),
    );
    host.wait_until_serving().await;
    contained.wait_until_serving().await;
    let polled = "review_bot_polls_total{outcome=\"ok\"}";
    wait_for_metric(&mut host, polled, 1.0).await;
    wait_for_metric(&mut contained, polled, 1.0).await;
    for pull in &pulls {
        pull.handle.add_label("bot-review-needed").unwrap();
    }
    wait_until(
        &mut [&mut host, &mut contained],
        "every pull request handed to a human",
        PATIENCE,
        || {
            pulls
                .iter()
                .all(|pull| pull.has_label("human-review-needed"))
        },
    )
    .await;
    let (status, host_log) = host.terminate().await;
    assert!(status.success(), "{host_log}");
    let (status, contained_log) = contained.terminate().await;
    assert!(status.success(), "{contained_log}");

    let sessions = world.sessions();
    for pull in &pulls {
        pull.assert_reviewed_once(&sessions);
    }
    assert_eq!(sessions.values().map(Vec::len).sum::<usize>(), 6 * 2);
    for (name, log) in [("host", &host_log), ("contained", &contained_log)] {
        assert!(
            !log.contains("process that is gone"),
            "the {name} daemon took a live lease for a dead one's:\n{log}"
        );
    }
    let store = review_store::Store::open(&database.url).await.unwrap();
    for pull in &pulls {
        let runs = store
            .runs_for_pull_request("acme/widgets", pull.number())
            .await
            .unwrap();
        assert_eq!(runs.len(), 1, "{}: {runs:#?}", pull.name());
    }
    assert!(store.active_leases().await.unwrap().is_empty());
    store.close().await;
    let posted = |log: &str| {
        log.lines()
            .filter(|line| line.contains("✓ post the review"))
            .count()
    };
    let (by_host, by_contained) = (posted(&host_log), posted(&contained_log));
    eprintln!(
        "reviews posted: {by_host} by the host's daemon, {by_contained} by the contained one"
    );
    assert_eq!(by_host + by_contained, 6, "{host_log}\n{contained_log}");
    database.drop_database().await;
}

// ---------------------------------------------------------------------------
// The day's cost cap (issue 28, item 5).
// ---------------------------------------------------------------------------

/// Past `agent.max_cost_per_day_usd` the daemon starts no agent: the pull
/// request's status comment says it waits (once), `/metrics` and `/healthz`
/// say a day cap holds jobs back; once the spend is no longer the day's (as
/// after midnight UTC: here the store's record of it is moved to yesterday)
/// the same daemon, not restarted, reviews the pull request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_day_cap_jobs_wait_visibly_and_run_when_the_day_turns_without_a_restart() {
    let Some(world) = World::start().await else {
        return;
    };
    let repo = world.repository("acme/widgets");
    // Today the agent already cost $3 on another pull request.
    spent_today(&world.sqlite_url(), 900, 3.0).await;
    let pull = Pull::open(&repo, 0, FIXED, "bot-review-needed");
    let mut command = world.command("work", &world.sqlite_url(), "acme/widgets");
    command.env("REVIEW_BOT_AGENT_MAX_COST_PER_DAY_USD", "2.5");
    let mut daemon = Daemon::start("daemon", command);
    daemon.wait_until_serving().await;

    wait_for_metric(
        &mut daemon,
        "review_bot_cost_day_cap_reached{scope=\"overall\"}",
        1.0,
    )
    .await;
    wait_for_metric(
        &mut daemon,
        "review_bot_jobs_held_by_cost_cap_total{cap=\"day\"}",
        2.0,
    )
    .await;
    assert!(daemon.metric("review_bot_agent_cost_today_usd").await >= 3.0);
    let body = wait_for_health(&mut daemon, "the day cap on /healthz", |status, body| {
        healthy(status, body) && body.contains("day cap reached")
    })
    .await;
    assert!(body.contains("$3.00 of $2.50"), "{body}");
    // Held at two polls at least, said once, no agent, the label kept.
    let comments = pull.handle.issue_comments().unwrap();
    assert_eq!(comments.len(), 1, "{comments:#?}");
    assert!(
        comments[0].body.contains("waits for tomorrow"),
        "{}",
        comments[0].body
    );
    assert!(pull.has_label("bot-review-needed"));
    assert!(!world.sessions().contains_key(&pull.key()));
    assert!(
        daemon.log().contains("waits for the next day"),
        "{}",
        daemon.log()
    );

    // Midnight UTC: the spend is yesterday's.
    {
        let mut connection =
            <sqlx::SqliteConnection as sqlx::Connection>::connect(&world.sqlite_url())
                .await
                .unwrap();
        sqlx::raw_sql("UPDATE agent_passes SET recorded_at = recorded_at - 86400000000")
            .execute(&mut connection)
            .await
            .unwrap();
    }
    let done = || pull.has_label("human-review-needed");
    wait_until(
        &mut [&mut daemon],
        "the review after the day turned",
        PATIENCE,
        done,
    )
    .await;
    wait_for_health(
        &mut daemon,
        "the day cap lifted on /healthz",
        |status, body| healthy(status, body) && !body.contains("day cap reached"),
    )
    .await;
    assert!(
        daemon
            .metric("review_bot_cost_day_cap_reached{scope=\"overall\"}")
            .await
            .abs()
            < f64::EPSILON
    );
    let (status, log) = daemon.terminate().await;
    assert!(status.success(), "{log}");
    assert_eq!(pull.bot_reviews().len(), 1, "{log}");
    assert!(
        pull.bot_reviews()[0]
            .body
            .contains("on this pull request so far"),
        "{}",
        pull.bot_reviews()[0].body
    );
    assert_eq!(pull.handle.issue_comments().unwrap().len(), 1);
    assert_eq!(
        sorted(
            world
                .sessions()
                .get(&pull.key())
                .cloned()
                .unwrap_or_default()
        ),
        [Pass::Architecture, Pass::Detailed]
    );
}

/// Records in the store at `database_url` a finished fix run of
/// `acme/widgets#number` whose one agent pass cost `usd`, now.
async fn spent_today(database_url: &str, number: u64, usd: f64) {
    let store = review_store::Store::open(database_url).await.unwrap();
    let run = store
        .start_run(&review_store::NewRun {
            key: &format!("earlier-today-{number}"),
            review_id: None,
            repository: "acme/widgets",
            pull_request: number,
            head_sha: "0123456789abcdef0123456789abcdef01234567",
            kind: review_store::JobKind::Write,
        })
        .await
        .unwrap();
    store
        .record_agent_pass(
            run,
            &review_store::AgentPass {
                name: "code-fix".to_owned(),
                transcript_path: None,
                session_id: None,
                turns: Some(20),
                cost_usd: Some(usd),
                duration: Some(Duration::from_mins(2)),
            },
        )
        .await
        .unwrap();
    store.finish_run(run, "pushed").await.unwrap();
    store.close().await;
}

// ---------------------------------------------------------------------------
// The verification pass.
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn findings_the_verification_pass_withholds_are_counted_on_metrics() {
    let Some(world) = World::start().await else {
        return;
    };
    let repo = world.repository("acme/verified");
    let pull = Pull::open(&repo, 0, CHANGED, "bot-review-needed");
    let mut command = world.command("work", &world.sqlite_url(), "acme/verified");
    command.env("REVIEW_BOT_REVIEW_VERIFY", "true");
    let mut daemon = Daemon::start("daemon", command);
    daemon.wait_until_serving().await;
    // The detailed pass leaves one finding; the verifier refutes it.
    wait_for_metric(
        &mut daemon,
        "review_bot_findings_withheld_total{repository=\"acme/verified\"}",
        1.0,
    )
    .await;
    // Nothing else left: an LGTM review that says what was withheld.
    wait_until(
        &mut [&mut daemon],
        "the pull request goes to a human",
        Duration::from_mins(2),
        || pull.has_label("human-review-needed"),
    )
    .await;
    let reviews = pull.bot_reviews();
    assert_eq!(reviews.len(), 1, "{reviews:#?}");
    assert!(
        reviews[0]
            .body
            .contains("1 finding withheld as unlikely by the verification pass"),
        "{}",
        reviews[0].body
    );
    assert!(pull.handle.review_comments().unwrap().is_empty());
    let withheld = daemon
        .metric("review_bot_findings_withheld_total{repository=\"acme/verified\"}")
        .await;
    assert!((withheld - 1.0).abs() < 1e-9, "counted once: {withheld}");
    let (status, log) = daemon.terminate().await;
    assert!(status.success(), "{log}");
}
