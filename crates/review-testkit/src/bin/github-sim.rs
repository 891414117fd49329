//! `github-sim`: the GitHub simulator as a standalone server, so a person can try review-bot
//! offline and anyone can probe the simulator from outside the test suite.
//!
//! It serves one repository, `acme/widgets`, copied from a local git repository, with one open
//! pull request #1 from `--head` into `--base`. When ready it prints one JSON line on stdout —
//! `{"api_url": …, "token": …, "ci_token": …, "clone_url": …}` — and serves until killed.
//! `token` is a personal access token of the user `review-bot`; `ci_token` is an installation
//! token of a GitHub App `ci` installed on `acme` (check runs take App tokens only), valid for
//! an hour like GitHub's.

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use review_testkit::github::{GithubSim, RepositorySelection, SimError, SimOptions};

/// Serve a local git repository as `acme/widgets` with an open pull request #1.
#[derive(Debug, Parser)]
#[command(name = "github-sim", version)]
struct Arguments {
    /// The local git repository to serve (a working copy or a bare repository).
    #[arg(long, value_name = "PATH")]
    repo: PathBuf,
    /// The pull request's head branch.
    #[arg(long, value_name = "BRANCH")]
    head: String,
    /// The pull request's base branch (also the repository's default branch).
    #[arg(long, value_name = "BRANCH")]
    base: String,
    /// Where to listen; port 0 picks a free port.
    #[arg(long, value_name = "ADDRESS", default_value = "127.0.0.1:0")]
    addr: SocketAddr,
    /// A label to put on the pull request (repeatable).
    #[arg(long = "label", value_name = "NAME")]
    labels: Vec<String>,
}

fn serve(arguments: &Arguments) -> Result<GithubSim, SimError> {
    let sim = GithubSim::start_on(arguments.addr, SimOptions::default())?;
    let user = sim.user("review-bot");
    let repo = sim.import_repo("acme/widgets", &arguments.repo, &arguments.base)?;
    // Fails with "acme/widgets has no branch …" when the head branch is missing.
    repo.branch_sha(&arguments.head)?;
    let mut pull = repo
        .pull_request(&arguments.head)
        .base(&arguments.base)
        .title(&format!("Merge {} into {}", arguments.head, arguments.base));
    for label in &arguments.labels {
        pull = pull.label(label);
    }
    pull.open()?;
    let ci = sim.create_app("ci")?;
    let installation = sim.install_app(&ci, "acme", RepositorySelection::All)?;
    let ready = serde_json::json!({
        "api_url": sim.api_url(),
        "token": user.token,
        "ci_token": sim.installation_token(installation)?,
        "clone_url": repo.clone_url(),
    });
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{ready}")
        .and_then(|()| stdout.flush())
        .map_err(|source| SimError::Io {
            path: PathBuf::from("<stdout>"),
            source,
        })?;
    Ok(sim)
}

fn main() -> ExitCode {
    let arguments = Arguments::parse();
    match serve(&arguments) {
        Ok(_sim) => loop {
            // The server runs on its own thread; this one only keeps the process alive.
            std::thread::park();
        },
        Err(error) => {
            eprintln!("github-sim: {error}");
            ExitCode::FAILURE
        }
    }
}
