//! `review-bot doctor --repo OWNER/REPO`'s build check: resolves that
//! repository's build and test commands as a review would (the operator's
//! `[repositories."OWNER/REPO".build]`, the default branch's
//! `.review-bot.toml`, its CLAUDE.md/README.md), prints them with their
//! source, and starts each command's program confined with the build's
//! environment (`PROGRAM --version`), naming what is missing.
//!
//! The default branch is fetched (one commit, `--depth 1`) into a temporary
//! checkout through the hardened git runner, rather than read file by file
//! through the contents API: discovery then reads exactly what a review's
//! worktree holds (the base commit's `.review-bot.toml` through
//! `command_sources::read_at_commit`, documents and manifests through
//! `build_gate::discover`), and the simulator needs no new endpoint.

use std::path::Path;
use std::time::Duration;

use review_core::build_commands::{DiscoveredCommands, Discovery};
use review_github::{GitHubClient, RepositoryName};
use review_pipeline::GitCredential;
use review_pipeline::build_gate::{self, BuildGateSettings, CommandEnd, GateOutcome};
use review_pipeline::command_sources::{self, RepositoryFile};
use review_pipeline::git::Git;

use super::doctor::{Failure, failure};
use crate::config::Config;

/// Shell words that are not programs to look for.
const BUILTINS: &[&str] = &[
    ".", ":", "[", "alias", "cd", "command", "exec", "exit", "export", "false", "printf", "pwd",
    "read", "set", "shift", "source", "test", "true", "umask", "unset", "echo", "if", "then",
    "else", "fi", "for", "do", "done", "while", "case", "esac", "!", "{", "}",
];

/// The build check of one repository.
pub async fn check(config: &Config, repository: &str) -> Result<String, Failure> {
    let name = RepositoryName::parse(repository).map_err(|error| {
        failure(
            format!("--repo {repository}: {error}"),
            "give repositories as OWNER/REPO",
        )
    })?;
    let directory = tempfile::tempdir().map_err(|error| {
        failure(
            format!("cannot make a temporary directory: {error}"),
            "check TMPDIR",
        )
    })?;
    let operator = config
        .operator_commands()
        .for_repository(&name.to_string())
        .cloned();
    let checkout = directory.path().join("checkout");
    let (file, discovery) = resolve(
        config,
        &name,
        directory.path(),
        &checkout,
        operator.as_ref(),
    )
    .await
    .map_err(|problem| {
        failure(
            format!("{name}: {problem}"),
            "check the GitHub check above and that git can fetch the repository",
        )
    })?;
    let file_note = file
        .problem()
        .map(|problem| format!(" ({problem}; the next source is used)"))
        .unwrap_or_default();
    let found = match discovery {
        Discovery::NothingFound { searched } => {
            return Ok(format!(
                "{name}: no build or test commands (looked in the configuration, \
                 .review-bot.toml, {}){file_note}; reviews skip the build gate",
                searched.join(", ")
            ));
        }
        Discovery::Found(found) => found,
    };
    let listed = describe(&found);
    let settings = build_settings(config).for_repository(&name.to_string());
    let run_directory = directory.path().join("run");
    std::fs::create_dir_all(&run_directory).map_err(|error| {
        failure(
            format!("cannot make {}: {error}", run_directory.display()),
            "check TMPDIR",
        )
    })?;
    let mut present = Vec::new();
    let mut missing = Vec::new();
    for program in programs(&found.commands()) {
        match probe(&settings, &checkout, &run_directory, &program).await {
            Ok(()) => present.push(program),
            Err(problem) => missing.push(format!("`{program}` {problem}")),
        }
    }
    if missing.is_empty() {
        Ok(format!(
            "{name}: {listed}{file_note}; programs start confined: {}",
            if present.is_empty() {
                "(none outside the repository)".to_owned()
            } else {
                present.join(", ")
            }
        ))
    } else {
        Err(failure(
            format!(
                "{name}: {listed}{file_note}; missing in the build's sandbox: {}",
                missing.join("; ")
            ),
            format!(
                "install what is missing for the service's user where the build's PATH ({}) \
                 finds it (a toolchain under a home directory must be visible read-only inside \
                 the sandbox: see [sandbox]), or change the commands \
                 ([repositories.\"{name}\".build] in the configuration, or the repository's \
                 .review-bot.toml)",
                settings.path.to_string_lossy()
            ),
        ))
    }
}

/// Fetches the default branch into `checkout` and discovers its commands.
async fn resolve(
    config: &Config,
    name: &RepositoryName,
    directory: &Path,
    checkout: &Path,
    operator: Option<&review_core::build_commands::CommandSet>,
) -> Result<(RepositoryFile, Discovery), String> {
    let client = GitHubClient::new(
        config
            .github_settings()
            .map_err(|error| error.to_string())?,
    )
    .map_err(|error| error.to_string())?;
    let info = client
        .get_repository(name)
        .await
        .map_err(|error| format!("cannot read the repository: {error}"))?;
    let credential = client.git_token(name).await.ok().map(GitCredential::new);
    let url = info
        .clone_url
        .unwrap_or_else(|| format!("https://github.com/{name}.git"));
    let home = directory.join("git-home");
    for path in [&home, &checkout.to_path_buf()] {
        std::fs::create_dir_all(path)
            .map_err(|error| format!("cannot make {}: {error}", path.display()))?;
    }
    let git = Git {
        program: "git".into(),
        home,
        timeout: Duration::from_secs(config.git.timeout_secs),
        containment: config
            .claude_settings(|name| std::env::var(name).ok())
            .containment,
    };
    let branch = format!("refs/heads/{}", info.default_branch);
    let error = |error: review_pipeline::CheckoutError| error.to_string();
    git.run(checkout, &["init", "--quiet"], None)
        .await
        .map_err(error)?;
    git.run(
        checkout,
        &[
            "fetch",
            "--quiet",
            "--depth",
            "1",
            "--no-tags",
            &url,
            &branch,
        ],
        credential.as_ref(),
    )
    .await
    .map_err(error)?;
    git.run(
        checkout,
        &["checkout", "--quiet", "--detach", "FETCH_HEAD"],
        None,
    )
    .await
    .map_err(error)?;
    let file = if operator.is_some() {
        RepositoryFile::Absent
    } else {
        command_sources::read_at_commit(&git, checkout, "FETCH_HEAD")
            .await
            .map_err(error)?
    };
    let explicit = command_sources::explicit(operator, &file);
    let discovery = build_gate::discover(
        checkout,
        explicit
            .as_ref()
            .map(|(source, commands)| (source.clone(), commands)),
    )
    .await
    .map_err(|error| error.to_string())?;
    Ok((file, discovery))
}

/// The gate's settings as `review` makes them.
fn build_settings(config: &Config) -> BuildGateSettings {
    let containment = config
        .claude_settings(|name| std::env::var(name).ok())
        .containment;
    config.build_gate_settings(
        BuildGateSettings::new(Duration::from_mins(2)).with_containment(containment),
    )
}

/// "N commands from SOURCE: `a`, `b`".
fn describe(found: &DiscoveredCommands) -> String {
    let commands = found.commands();
    format!(
        "{} command{} from {}: {}",
        commands.len(),
        if commands.len() == 1 { "" } else { "s" },
        found.source.name(),
        commands
            .iter()
            .map(|command| format!("`{command}`"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// The programs the commands start, in order, once each: the first word of
/// each simple command after its variable assignments, leaving out shell
/// built-ins and the repository's own files (a word with a `/`).
pub fn programs(commands: &[String]) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for command in commands {
        for part in command.split(['&', '|', ';', '(', ')', '\n']) {
            let program = part
                .split_whitespace()
                .map(|word| word.trim_matches(['"', '\'']))
                .find(|word| !is_assignment(word));
            let Some(program) = program else {
                continue;
            };
            let plain = !program.is_empty()
                && program.chars().all(|character| {
                    character.is_ascii_alphanumeric() || "._+-".contains(character)
                });
            if plain && !BUILTINS.contains(&program) && !found.iter().any(|known| known == program)
            {
                found.push(program.to_owned());
            }
        }
    }
    found
}

/// `NAME=value`.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name
                .chars()
                .all(|character| character.is_ascii_alphanumeric() || character == '_')
    })
}

/// Starts `PROGRAM --version` confined as a build runs (the build gate's own
/// runner, environment and sandbox); `Err` says why it cannot start. A
/// program that is found but refuses `--version` (dash's `sh`) still counts
/// as present (which is why this is not `build_gate::probe`, which wants a
/// version line: `doctor --repo` asks only whether each program starts).
async fn probe(
    settings: &BuildGateSettings,
    checkout: &Path,
    run_directory: &Path,
    program: &str,
) -> Result<(), String> {
    let command = format!(
        "(command -v {program} >/dev/null 2>&1 || exit 127; {program} --version </dev/null \
         >/dev/null 2>&1; exit 0)"
    );
    let commands = DiscoveredCommands {
        setup: Vec::new(),
        build: vec![command],
        test: Vec::new(),
        environment: std::collections::BTreeMap::new(),
        source: review_core::build_commands::Source::Operator,
    };
    match build_gate::run_commands(settings, checkout, run_directory, &commands).await {
        Ok(GateOutcome::Passed { .. } | GateOutcome::NoCommands { .. }) => Ok(()),
        Ok(GateOutcome::Failed(failure) | GateOutcome::EnvironmentFailure(failure)) => {
            Err(match failure.end {
                CommandEnd::Exited(127) => "is not found".to_owned(),
                end => format!("cannot start: `{program} --version` {end}"),
            })
        }
        Err(error) => Err(format!("cannot be probed: {error}")),
    }
}

#[cfg(test)]
mod tests {
    use super::programs;

    #[test]
    fn programs_are_the_first_words_without_builtins_or_repository_files() {
        let commands = [
            "python3 -m venv .venv".to_owned(),
            ". .venv/bin/activate && pip install -e '.[test]'".to_owned(),
            "RUST_LOG=debug cargo test --locked | tee out.txt".to_owned(),
            "./check.sh; cd web && npm ci".to_owned(),
            "cargo build".to_owned(),
        ];
        assert_eq!(
            programs(&commands),
            ["python3", "pip", "cargo", "tee", "npm"]
        );
    }
}
