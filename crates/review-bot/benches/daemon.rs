//! What the daemon (`review-bot run`) costs while it waits, and how fast it
//! works through a queue, against the GitHub simulator (real git underneath)
//! and, for the throughput part, the real Claude Code CLI pointed at the
//! scripted model server.
//!
//! Three parts, each printed, all of them written to
//! `target/daemon-bench.json`:
//!
//! - **polls**: in this process, a `review_github::GitHubClient` (default
//!   settings) and `review_pipeline::daemon::poll` over three watched
//!   repositories with no labelled pull request, back to back: requests and
//!   rate-limit points per poll (the first poll against the later ones) from
//!   the simulator's request log, and this process's `VmRSS` at cycles 1, 100,
//!   500 and 1,000 (the simulator runs in this process too; its request log is
//!   cleared after every poll).
//! - **idle**: the real `review-bot run` watching the same three idle
//!   repositories every second; its `VmRSS` after the 1st, 10th and 60th poll
//!   and every 60th after, the poll count read from its `/metrics`
//!   (`review_bot_polls_total`), never guessed from the clock.
//! - **throughput**: pull requests labelled `bot-review-needed` spread over the
//!   three repositories, every model request answered "No issues found." after
//!   a delay standing for the model's latency, `review-bot run --once` at each
//!   `daemon.concurrency`: wall time and reviews per minute.
//!
//! `cargo bench --profile dev -p review-bot --bench daemon`. The environment
//! changes what it does:
//! - `REVIEW_BOT_BENCH_PARTS`: the parts to run (`polls,idle,throughput`);
//! - `REVIEW_BOT_BENCH_POLL_CYCLES`: in-process polls (1000);
//! - `REVIEW_BOT_BENCH_IDLE_SECS`: how long the idle daemon runs (120);
//! - `REVIEW_BOT_BENCH_PULL_REQUESTS`: pull requests to review (8);
//! - `REVIEW_BOT_BENCH_CONCURRENCY`: the levels (`1,2,4`);
//! - `REVIEW_BOT_BENCH_MODEL_DELAY_MS`: each model answer's delay (500);
//! - `REVIEW_BOT_BENCH_WRITE_SPACING_MS`: `github.write_spacing_ms` of the
//!   throughput runs (unset: the default, 1 s between two writes; the spacing
//!   is per process, so it serialises the writes of concurrent jobs — `0`
//!   shows what concurrency does without it);
//! - `REVIEW_BOT_BENCH_QUICK=1`: 200 polls, 20 idle seconds, 4 pull requests
//!   at concurrency 1 and 4 (each still overridable).
//!
//! The throughput part needs the pinned CLI (`scripts/install-test-deps`) and
//! is skipped, saying so, without it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use review_github::{ClientSettings, Credentials, GitHubClient, RepositoryName};
use review_pipeline::daemon::{WatchTarget, poll};
use review_testkit::github::{GithubSim, PullRequestHandle, RequestRecord, SimUser};
use review_testkit::model::{ModelServer, Script, Turn};
use secrecy::SecretString;
use serde_json::{Value, json};

const BOT: &str = "review-bot";

/// The watched repositories.
const REPOSITORIES: [&str; 3] = ["acme/widgets", "acme/gadgets", "acme/gizmos"];

const README: &str =
    "# widgets\n\n## Build\n\n```sh\nsh build.sh\n```\n\n## Test\n\n```sh\nsh test.sh\n```\n";

/// The model's answer to every request of both passes.
const ANSWER: &str = "No issues found.";

/// What to run, from the environment (see the module docs).
struct Options {
    parts: Vec<String>,
    poll_cycles: u64,
    idle: Duration,
    pull_requests: usize,
    concurrency: Vec<usize>,
    model_delay: Duration,
    write_spacing_ms: Option<u64>,
}

impl Options {
    fn from_environment() -> Self {
        let quick = std::env::var("REVIEW_BOT_BENCH_QUICK").is_ok_and(|value| value == "1");
        let number = |name: &str, default: u64| -> u64 {
            std::env::var(name).ok().map_or(default, |value| {
                value
                    .trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("{name}={value:?} is not a whole number"))
            })
        };
        let list = |name: &str, default: &str| -> Vec<String> {
            std::env::var(name)
                .unwrap_or_else(|_| default.to_owned())
                .split(',')
                .map(|item| item.trim().to_owned())
                .filter(|item| !item.is_empty())
                .collect()
        };
        let concurrency = list(
            "REVIEW_BOT_BENCH_CONCURRENCY",
            if quick { "1,4" } else { "1,2,4" },
        )
        .iter()
        .map(|level| match level.parse() {
            Ok(level) if level > 0 => level,
            _ => panic!("REVIEW_BOT_BENCH_CONCURRENCY: {level:?} is not a number of jobs"),
        })
        .collect();
        Self {
            parts: list("REVIEW_BOT_BENCH_PARTS", "polls,idle,throughput"),
            poll_cycles: number(
                "REVIEW_BOT_BENCH_POLL_CYCLES",
                if quick { 200 } else { 1_000 },
            )
            .max(1),
            idle: Duration::from_secs(number(
                "REVIEW_BOT_BENCH_IDLE_SECS",
                if quick { 20 } else { 120 },
            )),
            pull_requests: usize::try_from(number(
                "REVIEW_BOT_BENCH_PULL_REQUESTS",
                if quick { 4 } else { 8 },
            ))
            .expect("a pull-request count fits a usize"),
            concurrency,
            model_delay: Duration::from_millis(number("REVIEW_BOT_BENCH_MODEL_DELAY_MS", 500)),
            write_spacing_ms: std::env::var("REVIEW_BOT_BENCH_WRITE_SPACING_MS")
                .ok()
                .map(|_| number("REVIEW_BOT_BENCH_WRITE_SPACING_MS", 1_000)),
        }
    }

    fn runs(&self, part: &str) -> bool {
        self.parts.iter().any(|wanted| wanted == part)
    }
}

/// 40 lines; line 5 is what the pull requests change.
fn library(line_five: &str) -> String {
    (1..=40)
        .map(|line| {
            if line == 5 {
                format!("{line_five}\n")
            } else {
                format!("pub fn line_{line}() {{}}\n")
            }
        })
        .collect()
}

/// The watched repositories, each with a README naming the build and test
/// commands and one open pull request without a bot label, and `labelled`
/// more pull requests labelled `bot-review-needed`, spread over them.
fn world(labelled: usize) -> (GithubSim, SimUser, Vec<PullRequestHandle>) {
    let sim = GithubSim::start().expect("the simulator starts");
    let bot = sim.user(BOT);
    let repositories: Vec<_> = REPOSITORIES
        .iter()
        .map(|name| {
            let repository = sim
                .repo(name)
                .file("README.md", README)
                .file("build.sh", "echo building\n")
                .file("test.sh", "echo ok\n")
                .file("src/lib.rs", &library("pub fn five() -> u32 { 5 }"))
                .create()
                .expect("the repository is created");
            repository.add_collaborator(BOT, "write").unwrap();
            repository
                .pull_request("not-for-the-bot")
                .modify("src/lib.rs", &library("pub fn five() -> u32 { 50 }"))
                .title("Not for the bot")
                .open()
                .expect("the pull request opens");
            repository
        })
        .collect();
    let pulls = (0..labelled)
        .map(|index| {
            repositories[index % repositories.len()]
                .pull_request(&format!("feature-{index}"))
                .modify(
                    "src/lib.rs",
                    &library(&format!("pub fn five() -> u32 {{ 5 + {index} }}")),
                )
                .title(&format!("Change five ({index})"))
                .label("bot-review-needed")
                .open()
                .expect("the pull request opens")
        })
        .collect();
    (sim, bot, pulls)
}

/// `VmRSS` and `VmHWM` (peak) of a process (`self` or a pid), in KiB.
fn memory_kib(process: &str) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{process}/status"))
        .unwrap_or_else(|error| panic!("reading /proc/{process}/status: {error}"));
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in /proc/{process}/status"))
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn mebibytes(kibibytes: u64) -> f64 {
    as_float(kibibytes) / 1024.0
}

#[allow(
    clippy::cast_precision_loss,
    reason = "counts and sizes here are far below 2^52"
)]
fn as_float(value: u64) -> f64 {
    value as f64
}

fn count(value: usize) -> u64 {
    u64::try_from(value).expect("a count fits a u64")
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values.get(values.len() / 2).copied().unwrap_or_default()
}

/// What one poll asked of GitHub, from the simulator's request log.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct PollCost {
    requests: u64,
    /// Answered 200: one rate-limit point each.
    fresh: u64,
    /// Answered 304: free.
    not_modified: u64,
    /// Any other status.
    other: u64,
    search_points: u64,
    core_points: u64,
}

impl PollCost {
    fn of(log: &[RequestRecord]) -> Self {
        let mut cost = Self::default();
        for record in log {
            cost.requests += 1;
            match record.status {
                200 => cost.fresh += 1,
                304 => cost.not_modified += 1,
                _ => cost.other += 1,
            }
            if record.resource.as_deref() == Some("search") {
                cost.search_points += record.cost;
            } else {
                cost.core_points += record.cost;
            }
        }
        cost
    }

    fn add(&mut self, other: Self) {
        self.requests += other.requests;
        self.fresh += other.fresh;
        self.not_modified += other.not_modified;
        self.other += other.other;
        self.search_points += other.search_points;
        self.core_points += other.core_points;
    }

    fn describe(&self, polls: u64) -> String {
        let repositories = as_float(count(REPOSITORIES.len()));
        let polls_float = as_float(polls.max(1));
        let per_poll = |value: u64| as_float(value) / polls_float;
        format!(
            "{:.1} requests per poll ({:.1} answered 200, {:.1} answered 304, {:.1} other), \
             {:.2} search + {:.2} core points per poll; per repository {:.2} requests, {:.2} points",
            per_poll(self.requests),
            per_poll(self.fresh),
            per_poll(self.not_modified),
            per_poll(self.other),
            per_poll(self.search_points),
            per_poll(self.core_points),
            per_poll(self.requests) / repositories,
            per_poll(self.search_points + self.core_points) / repositories,
        )
    }

    fn to_json(self, polls: u64) -> Value {
        json!({
            "polls": polls,
            "requests": self.requests,
            "answered_200": self.fresh,
            "answered_304": self.not_modified,
            "other": self.other,
            "search_points": self.search_points,
            "core_points": self.core_points,
        })
    }
}

fn targets() -> Vec<WatchTarget> {
    REPOSITORIES
        .iter()
        .map(|name| WatchTarget::Repository(RepositoryName::parse(name).unwrap()))
        .collect()
}

/// Part a: polls in this process, their cost and this process's memory.
fn measure_polls(runtime: &tokio::runtime::Runtime, options: &Options) -> Value {
    let cycles = options.poll_cycles;
    println!(
        "== polls: {cycles} in-process polls of {} idle repositories",
        REPOSITORIES.len()
    );
    let (sim, bot, _) = world(0);
    let _entered = runtime.enter();
    let client = GitHubClient::new(ClientSettings::new(
        sim.api_url(),
        Credentials::PersonalAccessToken(SecretString::from(bot.token.clone())),
    ))
    .expect("the client is configured");
    let targets = targets();
    sim.clear_requests();
    let checkpoints: Vec<u64> = [1, 100, 500, 1_000]
        .into_iter()
        .filter(|checkpoint| *checkpoint < cycles)
        .chain([cycles])
        .collect();
    let mut first = PollCost::default();
    let mut later = PollCost::default();
    let mut later_costs = BTreeMap::<(u64, u64), u64>::new();
    let mut durations = Vec::new();
    let mut memory = Vec::new();
    for cycle in 1..=cycles {
        let started = Instant::now();
        let found = runtime.block_on(poll(&client, &targets));
        durations.push(started.elapsed());
        assert!(found.errors.is_empty(), "poll {cycle}: {:?}", found.errors);
        assert!(found.hits.is_empty(), "poll {cycle}: {:?}", found.hits);
        let cost = PollCost::of(&sim.requests());
        sim.clear_requests();
        if cycle == 1 {
            first = cost;
        } else {
            later.add(cost);
            *later_costs
                .entry((cost.requests, cost.search_points + cost.core_points))
                .or_default() += 1;
        }
        if checkpoints.contains(&cycle) {
            memory.push((cycle, memory_kib("self")));
        }
    }
    let search_budget = sim
        .search_rate_limit(&bot.token)
        .expect("the search budget");
    let (cache_entries, cache_bytes) = client.conditional_cache_usage();
    println!("first poll: {}", first.describe(1));
    if cycles > 1 {
        println!(
            "later polls ({}): {}",
            cycles - 1,
            later.describe(cycles - 1)
        );
        for ((requests, points), polls) in &later_costs {
            println!("    {polls} polls of {requests} requests and {points} points");
        }
    }
    let first_duration = durations[0];
    let later_median = median(durations[1..].to_vec());
    println!(
        "time per poll: first {:.1} ms, later median {:.1} ms",
        first_duration.as_secs_f64() * 1_000.0,
        later_median.as_secs_f64() * 1_000.0
    );
    println!(
        "search budget left after the polls: {} of {} (the simulator enforces GitHub's 30 a \
         minute; a 304 costs nothing); conditional cache {cache_entries} entries, {cache_bytes} bytes",
        search_budget.remaining, search_budget.limit
    );
    for (cycle, (resident, peak)) in &memory {
        println!(
            "    bench process after poll {cycle:>5}: VmRSS {:.1} MiB (peak {:.1} MiB)",
            mebibytes(*resident),
            mebibytes(*peak)
        );
    }
    json!({
        "repositories": REPOSITORIES.len(),
        "first_poll": first.to_json(1),
        "later_polls": later.to_json(cycles - 1),
        "first_poll_ms": first_duration.as_secs_f64() * 1_000.0,
        "later_poll_median_ms": later_median.as_secs_f64() * 1_000.0,
        "search_budget_remaining": search_budget.remaining,
        "memory": memory
            .iter()
            .map(|(cycle, (resident, peak))| json!({"poll": cycle, "vm_rss_kib": resident, "vm_hwm_kib": peak}))
            .collect::<Vec<_>>(),
    })
}

/// A loopback port nobody listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The body of `GET path` on loopback `port`, or `None` when nothing answers.
fn http_get(port: u16, path: &str) -> Option<String> {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.to_owned())
}

/// The sum of every series of `name` in a Prometheus text page.
fn metric_sum(page: &str, name: &str) -> u64 {
    page.lines()
        .filter(|line| {
            line.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|value| {
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "counters are small whole numbers"
            )]
            let value = value as u64;
            value
        })
        .sum()
}

/// A `review-bot run` that is stopped (SIGKILL) if the bench ends early.
struct Daemon {
    child: Child,
    log: PathBuf,
}

impl Daemon {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM, then wait for the end.
    fn stop(mut self) -> String {
        let signalled = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(signalled.success(), "the daemon could not be signalled");
        let status = self.child.wait().expect("the daemon ends");
        let log = self.log();
        assert!(
            status.success(),
            "review-bot run ended with {status}: {log}"
        );
        log
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `review-bot run ARGUMENTS` with an environment built from nothing but what
/// it needs, working in `directory`.
fn daemon_command(
    sim: &GithubSim,
    bot: &SimUser,
    directory: &Path,
    claude: &Path,
    anthropic_base_url: &str,
) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_review-bot"));
    command
        .arg("run")
        .current_dir(directory)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", directory.join("home"))
        .env("REVIEW_BOT_GITHUB_TOKEN", &bot.token)
        .env("REVIEW_BOT_GITHUB_API_URL", sim.api_url())
        .env("REVIEW_BOT_GITHUB_BOT_LOGIN", BOT)
        .env("REVIEW_BOT_WORK_DIR", directory.join("work"))
        .env(
            "REVIEW_BOT_DATABASE_URL",
            format!("sqlite://{}", directory.join("store.sqlite3").display()),
        )
        .env("REVIEW_BOT_DAEMON_REPOSITORIES", REPOSITORIES.join(", "))
        .env("REVIEW_BOT_AGENT_CLAUDE_PATH", claude)
        .env("REVIEW_BOT_AGENT_MAX_RETRIES", "0")
        .env("REVIEW_BOT_AGENT_TIMEOUT_SECS", "300")
        .env("REVIEW_BOT_REVIEW_BUILD_TIMEOUT_SECS", "300")
        .env("ANTHROPIC_API_KEY", "sk-ant-scripted-model-server")
        .env("ANTHROPIC_BASE_URL", anthropic_base_url)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    command
}

/// Polls after which the idle daemon's memory is sampled: 1, 10, 60, 120, …
fn is_memory_checkpoint(polls: u64) -> bool {
    polls == 1 || polls == 10 || (polls > 0 && polls.is_multiple_of(60))
}

/// The idle daemon's memory after one poll.
struct MemorySample {
    polls: u64,
    at: Duration,
    resident_kib: u64,
    peak_kib: u64,
}

/// Reads the daemon's `/metrics` until `idle` has passed, sampling its
/// memory at each checkpoint and at the end; the samples and the last page.
fn watch(daemon: &mut Daemon, port: u16, idle: Duration) -> (Vec<MemorySample>, String) {
    let pid = daemon.child.id().to_string();
    let started = Instant::now();
    let mut samples: Vec<MemorySample> = Vec::new();
    let mut page = String::new();
    loop {
        if let Ok(Some(status)) = daemon.child.try_wait() {
            panic!("review-bot run ended early with {status}: {}", daemon.log());
        }
        assert!(
            started.elapsed() < idle + Duration::from_mins(2),
            "the daemon stopped polling: {}",
            daemon.log()
        );
        let polls = http_get(port, "/metrics").map_or(0, |body| {
            let polls = metric_sum(&body, "review_bot_polls_total");
            page = body;
            polls
        });
        let last_sampled = samples.last().map_or(0, |sample| sample.polls);
        let over = started.elapsed() >= idle && polls > 0;
        if polls > last_sampled && (is_memory_checkpoint(polls) || over) {
            let (resident_kib, peak_kib) = memory_kib(&pid);
            samples.push(MemorySample {
                polls,
                at: started.elapsed(),
                resident_kib,
                peak_kib,
            });
        }
        if over {
            return (samples, page);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// What the idle daemon asked of GitHub, from the simulator's log: printed,
/// and as JSON.
fn idle_requests(log: &[RequestRecord]) -> Value {
    const SEARCH: &str = "search/issues-and-pull-requests";
    let searches: Vec<RequestRecord> = log
        .iter()
        .filter(|record| record.operation_id.as_deref() == Some(SEARCH))
        .cloned()
        .collect();
    let searches_per_poll = REPOSITORIES.len() * 3;
    let split = searches_per_poll.min(searches.len());
    let first = PollCost::of(&searches[..split]);
    let later = PollCost::of(&searches[split..]);
    let later_polls = count((searches.len() - split) / searches_per_poll);
    let everything = PollCost::of(log);
    println!(
        "GitHub saw {} requests in all ({} search points, {} core points)",
        everything.requests, everything.search_points, everything.core_points,
    );
    println!("first poll's searches: {}", first.describe(1));
    println!(
        "later polls' searches ({later_polls}): {}",
        later.describe(later_polls)
    );
    let mut others = BTreeMap::<String, u64>::new();
    for record in log {
        if record.operation_id.as_deref() != Some(SEARCH) {
            *others
                .entry(record.operation_id.clone().unwrap_or_default())
                .or_default() += 1;
        }
    }
    if !others.is_empty() {
        println!("    other requests: {others:?}");
    }
    json!({
        "requests": everything.requests,
        "search_points": everything.search_points,
        "core_points": everything.core_points,
        "first_poll_searches": first.to_json(1),
        "later_poll_searches": later.to_json(later_polls),
        "other_requests": others,
    })
}

/// Part b: the real daemon, idle, and its memory over time.
fn measure_idle(options: &Options) -> Value {
    println!(
        "== idle: review-bot run watching {} idle repositories every second for {} s",
        REPOSITORIES.len(),
        options.idle.as_secs()
    );
    let (sim, bot, _) = world(0);
    let directory = tempfile::tempdir().unwrap();
    let port = free_port();
    let log = directory.path().join("daemon.log");
    let child = daemon_command(
        &sim,
        &bot,
        directory.path(),
        Path::new("/bin/true"),
        "http://127.0.0.1:9",
    )
    .env("REVIEW_BOT_DAEMON_POLL_INTERVAL_SECS", "1")
    .env("REVIEW_BOT_DAEMON_LISTEN", format!("127.0.0.1:{port}"))
    .stderr(std::fs::File::create(&log).unwrap())
    .spawn()
    .expect("review-bot run starts");
    let mut daemon = Daemon { child, log };
    let (samples, page) = watch(&mut daemon, port, options.idle);
    let daemon_log = daemon.stop();
    assert!(
        !daemon_log.contains("poll error"),
        "poll errors: {daemon_log}"
    );
    let last = samples.last().expect("at least one poll");
    println!("{} polls in {:.0} s", last.polls, last.at.as_secs_f64());
    let requests = idle_requests(&sim.requests());
    for sample in &samples {
        println!(
            "    daemon after poll {:>4} ({:>5.1} s): VmRSS {:.1} MiB (peak {:.1} MiB)",
            sample.polls,
            sample.at.as_secs_f64(),
            mebibytes(sample.resident_kib),
            mebibytes(sample.peak_kib)
        );
    }
    let requests_metric: Vec<&str> = page
        .lines()
        .filter(|line| line.starts_with(review_github::REQUESTS_METRIC))
        .collect();
    println!("    its {} at the end:", review_github::REQUESTS_METRIC);
    for line in &requests_metric {
        println!("        {line}");
    }
    json!({
        "repositories": REPOSITORIES.len(),
        "polls": last.polls,
        "seconds": last.at.as_secs_f64(),
        "github": requests,
        "github_requests_metric": requests_metric,
        "memory": samples
            .iter()
            .map(|sample| json!({
                "poll": sample.polls,
                "seconds": sample.at.as_secs_f64(),
                "vm_rss_kib": sample.resident_kib,
                "vm_hwm_kib": sample.peak_kib,
            }))
            .collect::<Vec<_>>(),
    })
}

/// Every main request of every session answered with [`ANSWER`] after `delay`.
fn script(delay: Duration) -> Script {
    let answer = Turn::text(ANSWER);
    let answer = if delay.is_zero() {
        answer
    } else {
        answer.delayed(delay)
    };
    Script::new([]).then_forever(answer)
}

/// Part c: `run --once` through a queue of reviews at each concurrency.
fn measure_throughput(
    runtime: &tokio::runtime::Runtime,
    options: &Options,
    claude: &Path,
) -> Value {
    let pull_requests = options.pull_requests;
    println!(
        "== throughput: {pull_requests} pull requests labelled bot-review-needed, model answers \
         after {} ms, write spacing {}",
        options.model_delay.as_millis(),
        options.write_spacing_ms.map_or_else(
            || "the default (1 s)".to_owned(),
            |spacing| format!("{spacing} ms")
        )
    );
    let mut runs = Vec::new();
    for &concurrency in &options.concurrency {
        let (sim, bot, pulls) = world(pull_requests);
        let model = runtime
            .block_on(ModelServer::start(script(options.model_delay)))
            .expect("the model server starts");
        let directory = tempfile::tempdir().unwrap();
        let mut command = daemon_command(&sim, &bot, directory.path(), claude, &model.base_url());
        command
            .arg("--once")
            .env("REVIEW_BOT_DAEMON_CONCURRENCY", concurrency.to_string())
            .stderr(Stdio::piped());
        if let Some(spacing) = options.write_spacing_ms {
            command.env("REVIEW_BOT_GITHUB_WRITE_SPACING_MS", spacing.to_string());
        }
        let started = Instant::now();
        let output = command.output().expect("review-bot runs");
        let wall = started.elapsed();
        let log = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "review-bot run --once failed: {log}"
        );
        for pull in &pulls {
            let reviews = pull.reviews().unwrap();
            assert_eq!(reviews.len(), 1, "#{}: {log}", pull.number());
            assert_eq!(
                pull.labels().unwrap(),
                ["human-review-needed"],
                "#{}: {log}",
                pull.number()
            );
        }
        let model_requests = model.requests().len();
        assert_eq!(model_requests, 2 * pull_requests, "two passes per review");
        let counters = sim.counters();
        let writes: u64 = sim
            .requests()
            .iter()
            .filter(|record| record.method != "GET")
            .map(|_| 1)
            .sum();
        let per_minute = as_float(count(pull_requests)) / wall.as_secs_f64() * 60.0;
        let per_review = |value: u64| as_float(value) / as_float(count(pull_requests));
        println!(
            "concurrency {concurrency}: {:.1} s wall, {per_minute:.1} reviews a minute; per \
             review {:.1} GitHub requests ({:.1} writes), {:.1} points, {:.1} model requests",
            wall.as_secs_f64(),
            per_review(counters.requests),
            per_review(writes),
            per_review(counters.cost),
            per_review(count(model_requests)),
        );
        runs.push(json!({
            "concurrency": concurrency,
            "pull_requests": pull_requests,
            "wall_seconds": wall.as_secs_f64(),
            "reviews_per_minute": per_minute,
            "github_requests": counters.requests,
            "github_writes": writes,
            "github_points": counters.cost,
            "model_requests": model_requests,
        }));
    }
    json!({
        "model_delay_ms": u64::try_from(options.model_delay.as_millis()).unwrap_or(u64::MAX),
        "write_spacing_ms": options.write_spacing_ms,
        "runs": runs,
    })
}

/// `target/` (the review-bot binary lives in `target/PROFILE/`).
fn target_directory() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_review-bot"))
        .parent()
        .and_then(Path::parent)
        .expect("the binary lives in target/PROFILE")
        .to_path_buf()
}

fn main() {
    let options = Options::from_environment();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut report = serde_json::Map::new();
    if options.runs("polls") {
        report.insert("polls".to_owned(), measure_polls(&runtime, &options));
    }
    if options.runs("idle") {
        report.insert("idle".to_owned(), measure_idle(&options));
    }
    if options.runs("throughput") {
        match review_testkit::tools::claude_binary() {
            Ok(claude) => {
                report.insert(
                    "throughput".to_owned(),
                    measure_throughput(&runtime, &options, &claude),
                );
            }
            Err(error) => println!("== throughput: skipped: {error}"),
        }
    }
    let path = target_directory().join("daemon-bench.json");
    std::fs::write(
        &path,
        serde_json::to_string_pretty(&Value::Object(report)).unwrap(),
    )
    .unwrap_or_else(|error| panic!("writing {}: {error}", path.display()));
    println!("written to {}", path.display());
}
