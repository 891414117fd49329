//! `github-sim`: the GitHub simulator as a standalone server, so a person can try review-bot
//! offline and anyone can probe the simulator from outside the test suite.
//!
//! ```text
//! github-sim --repo PATH --head BRANCH --base BRANCH [--label NAME]… [--addr 127.0.0.1:PORT]
//! github-sim --scenario FILE [--addr 127.0.0.1:PORT]
//! ```
//!
//! With `--repo` it serves one repository, `acme/widgets`, copied from a local git
//! repository, with one open pull request #1 from `--head` into `--base`. With `--scenario`
//! it serves the repositories and pull requests a JSON file describes (below). When ready it
//! prints one JSON line on stdout and serves until killed:
//!
//! ```json
//! {"api_url": "http://127.0.0.1:PORT", "token": "ghp_…", "ci_token": "ghs_…",
//!  "clone_url": "http://127.0.0.1:PORT/acme/widgets.git",
//!  "repositories": [{"name": "acme/widgets", "clone_url": "…", "ci_token": "ghs_…",
//!                    "pull_requests": [{"number": 1, "head": "feature-a", "author": "octocat",
//!                                       "person_token": "ghp_…"}, …]}, …]},
//!  "person_token": "ghp_…"}
//! ```
//!
//! `token` is a personal access token of the user `review-bot`. `person_token` is a personal
//! access token of a person who is not the bot — the first pull request's author (`octocat`
//! unless the scenario names another), and per pull request its own author's — so a test or
//! a person can comment, relabel, push, close and reopen as somebody else while the bot
//! works. A GitHub App `ci` is
//! installed on every owner served (check runs take App tokens only); each repository's
//! `ci_token` is an installation token of its owner's installation, valid for an hour like
//! GitHub's. `ci_token` and `clone_url` at the top are the first repository's.
//!
//! # The scenario file
//!
//! ```json
//! {"repositories": [
//!   {"name": "acme/widgets", "path": "widgets", "default_branch": "main",
//!    "pull_requests": [
//!      {"head": "feature-a", "base": "main", "title": "Add a", "labels": ["bot-review-needed"]},
//!      {"head": "feature-b", "labels": ["bot-ci-pending"],
//!       "statuses": [{"context": "ci/test", "state": "success"}]}]},
//!   {"name": "acme/gadgets", "path": "/src/gadgets", "pull_requests": [{"head": "fix"}]}]}
//! ```
//!
//! - `repositories` (required, at least one), each:
//!   - `name` (required): `owner/name`, unique (case-insensitively, as on GitHub);
//!   - `path` (required): a local git repository (working copy or bare), absolute or relative
//!     to the scenario file's directory; every branch and tag is copied, the original is only
//!     read;
//!   - `default_branch` (default `main`): must exist in `path`;
//!   - `pull_requests`: opened in order, numbered from 1 in each repository, each:
//!     - `head` (required) and `base` (default: `default_branch`): branches of `path`; one
//!       pull request per head and base, as on GitHub;
//!     - `title` (default `Merge HEAD into BASE`), `body`, `author` (default `octocat`),
//!       `draft` (default `false`), `labels` (names, created in the repository as needed);
//!     - `statuses`: commit statuses on the head commit, oldest first, each `{"context": …,
//!       "state": "error" | "failure" | "pending" | "success", "target_url": …}` (`context`
//!       defaults to `default`, as on GitHub).
//!
//! A malformed scenario (not JSON, an unknown key, a missing or mistyped field, a duplicate
//! repository, a path that is not a git repository, a branch that does not exist) is refused
//! before anything is served, with the JSON path of the problem
//! (`$.repositories[1].pull_requests[0].head: …`), and exit status 2.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use review_testkit::github::{GithubSim, RepoHandle, RepositorySelection, SimError, SimOptions};
use review_testkit::json_input::{Malformed, kind, malformed, object, only_keys};
use serde_json::{Map, Value};

/// Serve local git repositories as GitHub repositories with open pull requests: one
/// (`--repo`, as `acme/widgets` with pull request #1) or several (`--scenario`).
#[derive(Debug, Parser)]
#[command(name = "github-sim", version)]
struct Arguments {
    /// The local git repository to serve (a working copy or a bare repository).
    #[arg(long, value_name = "PATH", required_unless_present = "scenario")]
    repo: Option<PathBuf>,
    /// The pull request's head branch.
    #[arg(long, value_name = "BRANCH", required_unless_present = "scenario")]
    head: Option<String>,
    /// The pull request's base branch (also the repository's default branch).
    #[arg(long, value_name = "BRANCH", required_unless_present = "scenario")]
    base: Option<String>,
    /// Where to listen; port 0 picks a free port.
    #[arg(long, value_name = "ADDRESS", default_value = "127.0.0.1:0")]
    addr: SocketAddr,
    /// A label to put on the pull request (repeatable).
    #[arg(long = "label", value_name = "NAME")]
    labels: Vec<String>,
    /// Serve the repositories and pull requests of this JSON file instead: `{"repositories":
    /// [{"name": "owner/name", "path": PATH, "pull_requests": [{"head": BRANCH, "base":
    /// BRANCH, "labels": […], "statuses": […]}]}]}` (see the README).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["repo", "head", "base", "labels"])]
    scenario: Option<PathBuf>,
}

/// A parsed scenario file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Scenario {
    repositories: Vec<RepositorySpec>,
}

/// One repository of the scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RepositorySpec {
    name: String,
    /// Resolved against the scenario file's directory.
    path: PathBuf,
    /// `None`: `main`, not written in the file.
    default_branch: Option<String>,
    pull_requests: Vec<PullSpec>,
}

/// One pull request of the scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PullSpec {
    head: String,
    base: Option<String>,
    title: Option<String>,
    body: Option<String>,
    author: Option<String>,
    draft: bool,
    labels: Vec<String>,
    statuses: Vec<StatusSpec>,
}

/// A commit status on a pull request's head.
#[derive(Debug, Clone, PartialEq, Eq)]
struct StatusSpec {
    context: String,
    state: String,
    target_url: Option<String>,
}

/// Why serving failed: the scenario (exit status 2) or the simulator itself.
#[derive(Debug)]
enum Failure {
    Scenario(String),
    Sim(SimError),
}

impl From<SimError> for Failure {
    fn from(error: SimError) -> Self {
        Self::Sim(error)
    }
}

/// An optional non-empty string field.
fn string(map: &Map<String, Value>, path: &str, key: &str) -> Result<Option<String>, Malformed> {
    let path = format!("{path}.{key}");
    match map.get(key) {
        None => Ok(None),
        Some(Value::String(text)) if text.trim().is_empty() => {
            Err(malformed(&path, "empty; leave the key out for the default"))
        }
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(other) => Err(malformed(
            &path,
            format!("expected a string, found {}", kind(other)),
        )),
    }
}

/// A required non-empty string field; `hint` says what to write.
fn required(
    map: &Map<String, Value>,
    path: &str,
    key: &str,
    hint: &str,
) -> Result<String, Malformed> {
    string(map, path, key)?
        .ok_or_else(|| malformed(&format!("{path}.{key}"), format!("missing; {hint}")))
}

/// An optional array field (empty when missing).
fn array<'a>(map: &'a Map<String, Value>, path: &str, key: &str) -> Result<&'a [Value], Malformed> {
    match map.get(key) {
        None => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(other) => Err(malformed(
            &format!("{path}.{key}"),
            format!("expected an array, found {}", kind(other)),
        )),
    }
}

/// A list of label names.
fn labels(map: &Map<String, Value>, path: &str) -> Result<Vec<String>, Malformed> {
    array(map, path, "labels")?
        .iter()
        .enumerate()
        .map(|(index, label)| match label {
            Value::String(name) if !name.trim().is_empty() => Ok(name.clone()),
            Value::String(_) => Err(malformed(
                &format!("{path}.labels[{index}]"),
                "empty label name",
            )),
            other => Err(malformed(
                &format!("{path}.labels[{index}]"),
                format!("expected a label name (a string), found {}", kind(other)),
            )),
        })
        .collect()
}

/// Whether `name` is a plausible `owner/name` (GitHub's characters).
fn valid_full_name(name: &str) -> bool {
    let part = |part: &str| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    matches!(name.split_once('/'), Some((owner, repo)) if part(owner) && part(repo))
}

/// Parses a scenario; relative repository paths are resolved against `base_dir`.
fn parse_scenario(value: &Value, base_dir: &Path) -> Result<Scenario, Malformed> {
    let top = object(value, "$", r#"an object {"repositories": […]}"#)?;
    only_keys(top, "$", &["repositories"])?;
    let items = match top.get("repositories") {
        None => {
            return Err(malformed(
                "$.repositories",
                r#"missing; list the repositories to serve, e.g. [{"name": "acme/widgets", "path": "…"}]"#,
            ));
        }
        Some(Value::Array(items)) if items.is_empty() => {
            return Err(malformed(
                "$.repositories",
                "empty; list at least one repository to serve",
            ));
        }
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(malformed(
                "$.repositories",
                format!("expected an array of repositories, found {}", kind(other)),
            ));
        }
    };
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut repositories = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let path = format!("$.repositories[{index}]");
        let repository = parse_repository(item, &path, base_dir)?;
        if let Some(first) = seen.insert(repository.name.to_ascii_lowercase(), index) {
            return Err(malformed(
                &format!("{path}.name"),
                format!(
                    "{:?} is already $.repositories[{first}] (names are case-insensitive); \
                     give each repository its own name",
                    repository.name
                ),
            ));
        }
        repositories.push(repository);
    }
    Ok(Scenario { repositories })
}

fn parse_repository(
    value: &Value,
    path: &str,
    base_dir: &Path,
) -> Result<RepositorySpec, Malformed> {
    let map = object(
        value,
        path,
        r#"a repository {"name": "owner/name", "path": "…", "pull_requests": […]}"#,
    )?;
    only_keys(
        map,
        path,
        &["name", "path", "default_branch", "pull_requests"],
    )?;
    let name = required(
        map,
        path,
        "name",
        "the repository's owner/name, e.g. acme/widgets",
    )?;
    if !valid_full_name(&name) {
        return Err(malformed(
            &format!("{path}.name"),
            format!(
                "{name:?} is not owner/name (letters, digits, `-`, `_` and `.` on each side of \
                 one `/`), e.g. acme/widgets"
            ),
        ));
    }
    let source = required(
        map,
        path,
        "path",
        "the local git repository to serve, absolute or relative to the scenario file",
    )?;
    let source = base_dir.join(source);
    if !source.is_dir() {
        return Err(malformed(
            &format!("{path}.path"),
            format!(
                "{} is not a directory; give a local git repository (a working copy or a bare \
                 repository), absolute or relative to the scenario file's directory",
                source.display()
            ),
        ));
    }
    let default_branch = string(map, path, "default_branch")?;
    let mut pull_requests: Vec<PullSpec> = Vec::new();
    for (index, item) in array(map, path, "pull_requests")?.iter().enumerate() {
        let pull_path = format!("{path}.pull_requests[{index}]");
        let pull = parse_pull(item, &pull_path)?;
        let base_of = |pull: &PullSpec| {
            pull.base
                .clone()
                .or_else(|| default_branch.clone())
                .unwrap_or_else(|| "main".to_owned())
        };
        let base = base_of(&pull);
        if pull.head == base {
            return Err(malformed(
                &pull_path,
                format!(
                    "head and base are both {base:?}; a pull request merges one branch into \
                     another (GitHub refuses it) — name another head or base branch"
                ),
            ));
        }
        if let Some(first) = pull_requests
            .iter()
            .position(|other| other.head == pull.head && base_of(other) == base)
        {
            return Err(malformed(
                &pull_path,
                format!(
                    "the same head and base as {path}.pull_requests[{first}]; GitHub allows \
                     one open pull request per head and base branch — use another head branch"
                ),
            ));
        }
        pull_requests.push(pull);
    }
    Ok(RepositorySpec {
        name,
        path: source,
        default_branch,
        pull_requests,
    })
}

fn parse_pull(value: &Value, path: &str) -> Result<PullSpec, Malformed> {
    let map = object(
        value,
        path,
        r#"a pull request {"head": "BRANCH", "base": "BRANCH", "labels": […]}"#,
    )?;
    only_keys(
        map,
        path,
        &[
            "head", "base", "title", "body", "author", "draft", "labels", "statuses",
        ],
    )?;
    let head = required(map, path, "head", "the pull request's head branch")?;
    let draft = match map.get("draft") {
        None => false,
        Some(Value::Bool(draft)) => *draft,
        Some(other) => {
            return Err(malformed(
                &format!("{path}.draft"),
                format!("expected true or false, found {}", kind(other)),
            ));
        }
    };
    let statuses = array(map, path, "statuses")?
        .iter()
        .enumerate()
        .map(|(index, status)| parse_status(status, &format!("{path}.statuses[{index}]")))
        .collect::<Result<_, _>>()?;
    Ok(PullSpec {
        head,
        base: string(map, path, "base")?,
        title: string(map, path, "title")?,
        body: string(map, path, "body")?,
        author: string(map, path, "author")?,
        draft,
        labels: labels(map, path)?,
        statuses,
    })
}

const STATES: [&str; 4] = ["error", "failure", "pending", "success"];

fn parse_status(value: &Value, path: &str) -> Result<StatusSpec, Malformed> {
    let map = object(
        value,
        path,
        r#"a commit status {"context": "ci/test", "state": "success"}"#,
    )?;
    only_keys(map, path, &["context", "state", "target_url"])?;
    let state = required(
        map,
        path,
        "state",
        "one of `error`, `failure`, `pending`, `success`",
    )?;
    if !STATES.contains(&state.as_str()) {
        return Err(malformed(
            &format!("{path}.state"),
            format!("{state:?} is not one of `error`, `failure`, `pending`, `success`"),
        ));
    }
    Ok(StatusSpec {
        context: string(map, path, "context")?.unwrap_or_else(|| "default".to_owned()),
        state,
        target_url: string(map, path, "target_url")?,
    })
}

/// Reads and parses the scenario file; the error is the whole message.
fn load(path: &Path) -> Result<Scenario, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("cannot read the scenario {}: {error}", path.display()))?;
    let value: Value = serde_json::from_str(&text).map_err(|error| {
        format!(
            "{}:{}:{}: not JSON: {error}",
            path.display(),
            error.line(),
            error.column()
        )
    })?;
    let base_dir = path.parent().unwrap_or_else(|| Path::new(""));
    let base_dir = if base_dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        base_dir
    };
    parse_scenario(&value, base_dir).map_err(|error| format!("{}: {error}", path.display()))
}

/// Who opens a pull request when the scenario names nobody (the simulator's own default).
const DEFAULT_AUTHOR: &str = "octocat";

/// What the ready line says about one repository.
struct Served {
    repo: RepoHandle,
    owner: String,
    /// `(number, head, author)` of each pull request.
    pulls: Vec<(u64, String, String)>,
}

/// Installs the `ci` app on every owner served and prints the ready line.
fn announce(sim: &GithubSim, token: &str, served: &[Served]) -> Result<(), SimError> {
    let ci = sim.create_app("ci")?;
    let mut ci_tokens: BTreeMap<String, String> = BTreeMap::new();
    for repository in served {
        let owner = repository.owner.to_ascii_lowercase();
        if let Entry::Vacant(entry) = ci_tokens.entry(owner) {
            let installation = sim.install_app(&ci, &repository.owner, RepositorySelection::All)?;
            entry.insert(sim.installation_token(installation)?);
        }
    }
    let ci_token = |repository: &Served| ci_tokens[&repository.owner.to_ascii_lowercase()].clone();
    let first = &served[0];
    let repositories: Vec<Value> = served
        .iter()
        .map(|repository| {
            serde_json::json!({
                "name": repository.repo.full_name(),
                "clone_url": repository.repo.clone_url(),
                "ci_token": ci_token(repository),
                "pull_requests": repository
                    .pulls
                    .iter()
                    .map(|(number, head, author)| {
                        serde_json::json!({
                            "number": number,
                            "head": head,
                            "author": author,
                            "person_token": sim.user(author).token,
                        })
                    })
                    .collect::<Vec<_>>(),
            })
        })
        .collect();
    let person = first
        .pulls
        .first()
        .map_or(DEFAULT_AUTHOR, |(_, _, author)| author.as_str());
    let ready = serde_json::json!({
        "api_url": sim.api_url(),
        "token": token,
        "person_token": sim.user(person).token,
        "ci_token": ci_token(first),
        "clone_url": first.repo.clone_url(),
        "repositories": repositories,
    });
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{ready}")
        .and_then(|()| stdout.flush())
        .map_err(|source| SimError::Io {
            path: PathBuf::from("<stdout>"),
            source,
        })
}

/// `--repo`: one repository, `acme/widgets`, with pull request #1.
fn serve_one(
    arguments: &Arguments,
    source: &Path,
    head: &str,
    base: &str,
) -> Result<GithubSim, SimError> {
    let sim = GithubSim::start_on(arguments.addr, SimOptions::default())?;
    let user = sim.user("review-bot");
    let repo = sim.import_repo("acme/widgets", source, base)?;
    // Fails with "acme/widgets has no branch …" when the head branch is missing.
    repo.branch_sha(head)?;
    let mut pull = repo
        .pull_request(head)
        .base(base)
        .title(&format!("Merge {head} into {base}"));
    for label in &arguments.labels {
        pull = pull.label(label);
    }
    let number = pull.open()?.number();
    let served = [Served {
        repo,
        owner: "acme".to_owned(),
        pulls: vec![(number, head.to_owned(), DEFAULT_AUTHOR.to_owned())],
    }];
    announce(&sim, &user.token, &served)?;
    Ok(sim)
}

/// Copies one repository of the scenario into the simulator and opens its pull requests.
fn serve_repository(sim: &GithubSim, spec: &RepositorySpec, path: &str) -> Result<Served, Failure> {
    let default_branch = spec.default_branch.as_deref().unwrap_or("main");
    let repo = match sim.import_repo(&spec.name, &spec.path, default_branch) {
        Ok(repo) => repo,
        Err(SimError::Git { stderr, .. }) => {
            return Err(Failure::Scenario(format!(
                "{path}.path: {} is not a git repository (git: {}); give a working copy or a \
                 bare repository",
                spec.path.display(),
                stderr.lines().next().unwrap_or_default()
            )));
        }
        Err(SimError::Scenario(_)) if spec.default_branch.is_some() => {
            return Err(Failure::Scenario(format!(
                "{path}.default_branch: {} has no branch {default_branch:?}; name one of its \
                 branches",
                spec.path.display()
            )));
        }
        Err(SimError::Scenario(_)) => {
            return Err(Failure::Scenario(format!(
                "{path}: {} has no branch \"main\"; set `default_branch` to its default branch",
                spec.path.display()
            )));
        }
        Err(other) => return Err(other.into()),
    };
    let mut pulls = Vec::with_capacity(spec.pull_requests.len());
    for (index, pull_spec) in spec.pull_requests.iter().enumerate() {
        let pull_path = format!("{path}.pull_requests[{index}]");
        let base = pull_spec.base.as_deref().unwrap_or(default_branch);
        for (key, branch) in [("head", pull_spec.head.as_str()), ("base", base)] {
            if repo.branch_sha(branch).is_err() {
                return Err(Failure::Scenario(format!(
                    "{pull_path}.{key}: {} has no branch {branch:?}; create it there (git branch \
                     {branch}) or name an existing branch",
                    spec.path.display()
                )));
            }
        }
        let title = pull_spec
            .title
            .clone()
            .unwrap_or_else(|| format!("Merge {} into {base}", pull_spec.head));
        let mut pull = repo.pull_request(&pull_spec.head).base(base).title(&title);
        if let Some(body) = &pull_spec.body {
            pull = pull.body(body);
        }
        if let Some(author) = &pull_spec.author {
            pull = pull.author(author);
        }
        if pull_spec.draft {
            pull = pull.draft();
        }
        for label in &pull_spec.labels {
            pull = pull.label(label);
        }
        let pull = pull.open()?;
        let head_sha = pull.head_sha()?;
        for status in &pull_spec.statuses {
            repo.add_status(
                &head_sha,
                &status.context,
                &status.state,
                status.target_url.as_deref(),
            )?;
        }
        pulls.push((
            pull.number(),
            pull_spec.head.clone(),
            pull_spec
                .author
                .clone()
                .unwrap_or_else(|| DEFAULT_AUTHOR.to_owned()),
        ));
    }
    let owner = spec
        .name
        .split_once('/')
        .map_or_else(String::new, |(owner, _)| owner.to_owned());
    Ok(Served { repo, owner, pulls })
}

/// `--scenario`: every repository and pull request of the file.
fn serve_scenario(arguments: &Arguments, scenario: &Scenario) -> Result<GithubSim, Failure> {
    let sim = GithubSim::start_on(arguments.addr, SimOptions::default())?;
    let user = sim.user("review-bot");
    let served = scenario
        .repositories
        .iter()
        .enumerate()
        .map(|(index, spec)| serve_repository(&sim, spec, &format!("$.repositories[{index}]")))
        .collect::<Result<Vec<_>, _>>()?;
    announce(&sim, &user.token, &served)?;
    Ok(sim)
}

fn main() -> ExitCode {
    let arguments = Arguments::parse();
    let served = match (
        &arguments.scenario,
        &arguments.repo,
        &arguments.head,
        &arguments.base,
    ) {
        (Some(file), ..) => {
            let scenario = match load(file) {
                Ok(scenario) => scenario,
                Err(message) => {
                    eprintln!("github-sim: {message}");
                    return ExitCode::from(2);
                }
            };
            serve_scenario(&arguments, &scenario).map_err(|failure| match failure {
                Failure::Scenario(message) => {
                    eprintln!("github-sim: {}: {message}", file.display());
                    ExitCode::from(2)
                }
                Failure::Sim(error) => {
                    eprintln!("github-sim: {error}");
                    ExitCode::FAILURE
                }
            })
        }
        (None, Some(source), Some(head), Some(base)) => serve_one(&arguments, source, head, base)
            .map_err(|error| {
                eprintln!("github-sim: {error}");
                ExitCode::FAILURE
            }),
        // clap requires --repo, --head and --base without --scenario.
        _ => unreachable!("clap checks the arguments"),
    };
    match served {
        Ok(_sim) => loop {
            // The server runs on its own thread; this one only keeps the process alive.
            std::thread::park();
        },
        Err(code) => code,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problem(scenario: &Value) -> String {
        parse_scenario(scenario, Path::new("/"))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn every_field_parses_and_paths_resolve_against_the_file() {
        let scenario = parse_scenario(
            &json!({"repositories": [{
                "name": "acme/widgets", "path": "tmp", "default_branch": "trunk",
                "pull_requests": [{
                    "head": "a", "base": "trunk", "title": "T", "body": "B", "author": "dev",
                    "draft": true, "labels": ["x"],
                    "statuses": [{"state": "success"}, {"context": "ci/test", "state": "failure",
                                  "target_url": "https://ci.example.com/1"}]
                }, {"head": "b"}]
            }]}),
            Path::new("/"),
        )
        .unwrap();
        let repository = &scenario.repositories[0];
        assert_eq!(repository.path, Path::new("/tmp"));
        assert_eq!(repository.default_branch.as_deref(), Some("trunk"));
        let pull = &repository.pull_requests[0];
        assert!(pull.draft);
        assert_eq!(pull.statuses[0].context, "default");
        assert_eq!(
            pull.statuses[1],
            StatusSpec {
                context: "ci/test".into(),
                state: "failure".into(),
                target_url: Some("https://ci.example.com/1".into()),
            }
        );
        assert_eq!(repository.pull_requests[1].base, None);
    }

    #[test]
    fn problems_name_their_json_path() {
        let repo = |extra: Value| {
            let mut repository = json!({"name": "acme/widgets", "path": "tmp"});
            repository
                .as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            json!({ "repositories": [repository] })
        };
        for (scenario, expected) in [
            (json!([]), "$: expected an object"),
            (json!({"repos": []}), "$.repos: unknown key"),
            (json!({}), "$.repositories: missing"),
            (json!({"repositories": []}), "$.repositories: empty"),
            (
                json!({"repositories": [{"path": "tmp"}]}),
                "$.repositories[0].name: missing",
            ),
            (
                json!({"repositories": [{"name": "widgets", "path": "tmp"}]}),
                "$.repositories[0].name: \"widgets\" is not owner/name",
            ),
            (
                json!({"repositories": [{"name": "acme/widgets"}]}),
                "$.repositories[0].path: missing",
            ),
            (
                repo(json!({"path": "no/such/dir"})),
                "$.repositories[0].path: /no/such/dir is not a directory",
            ),
            (
                repo(json!({"colour": 1})),
                "$.repositories[0].colour: unknown key",
            ),
            (
                repo(json!({"pull_requests": [{"head": "a", "labels": [1]}]})),
                "$.repositories[0].pull_requests[0].labels[0]: expected a label name",
            ),
            (
                repo(json!({"pull_requests": [{"base": "main"}]})),
                "$.repositories[0].pull_requests[0].head: missing",
            ),
            (
                repo(json!({"pull_requests": [{"head": "a", "draft": "yes"}]})),
                "$.repositories[0].pull_requests[0].draft: expected true or false",
            ),
            (
                repo(json!({"pull_requests": [{"head": "a"}, {"head": "a"}]})),
                "$.repositories[0].pull_requests[1]: the same head and base",
            ),
            (
                repo(json!({"pull_requests": [{"head": "a"}, {"head": "a", "base": "main"}]})),
                "$.repositories[0].pull_requests[1]: the same head and base",
            ),
            (
                repo(json!({"pull_requests": [{"head": "main"}]})),
                "$.repositories[0].pull_requests[0]: head and base are both \"main\"",
            ),
            (
                repo(json!({"pull_requests": [{"head": "a", "statuses": [{"state": "green"}]}]})),
                "$.repositories[0].pull_requests[0].statuses[0].state: \"green\" is not one of",
            ),
            (
                repo(json!({"pull_requests": [{"head": "a", "statuses": [{"context": "c"}]}]})),
                "$.repositories[0].pull_requests[0].statuses[0].state: missing",
            ),
            (
                json!({"repositories": [{"name": "acme/widgets", "path": "tmp"},
                                        {"name": "ACME/Widgets", "path": "tmp"}]}),
                "$.repositories[1].name: \"ACME/Widgets\" is already $.repositories[0]",
            ),
        ] {
            let problem = problem(&scenario);
            assert!(problem.starts_with(expected), "{scenario}: {problem}");
        }
    }
}
