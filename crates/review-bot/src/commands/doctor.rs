//! `review-bot doctor`: prints the effective configuration (each value with
//! where it came from; secrets only as set/unset) and checks every outside
//! part review-bot needs: the Claude Code CLI and the flags we pass it, a
//! model credential, bubblewrap, the GitHub credential and what it reaches, git, the store,
//! and the work directory; with `--repo`, each repository's build commands
//! and their programs (`doctor_build`). One line per check, `✓` or `✗`, and for each `✗`
//! what to do. Exit 0 when every check passes, 1 when one fails, 2 when the
//! configuration itself cannot be read.
//!
//! Every check runs the real thing (the CLI with our real argument list, a
//! real `bwrap`, real GitHub requests, the store's real open-and-migrate);
//! none of them writes to GitHub or calls a model: the flag probe points the
//! CLI at a closed local port, so it gets as far as its first API request and
//! stops there with an API error, which proves every flag was accepted (an
//! unknown flag is refused before any request).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use review_agent::claude::{
    AgentOutcome, ClaudeCode, ClaudeCodeRun, McpConfig, McpServerCommand, ProcessContainment,
};
use secrecy::SecretString;

use crate::config::{self, Config, KEYS, Loaded, Source};

/// How long a version probe (`claude --version`, `git --version`, `bwrap … true`) may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the flag probe (one CLI run that stops at its first API request) may take.
const FLAG_PROBE_TIMEOUT: Duration = Duration::from_mins(2);
/// How many repositories a line names before it only counts the rest.
const LISTED_REPOSITORIES: usize = 10;

/// `review-bot doctor`'s arguments.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Also check that the GitHub credential reaches this repository
    /// (OWNER/REPO), resolve its build and test commands as a review would
    /// (configuration, the default branch's .review-bot.toml, README…) and
    /// start each command's program confined; repeat for several. A GitHub
    /// App's repositories are listed without it; a personal access token's
    /// cannot be.
    #[arg(long = "repo", value_name = "OWNER/REPO")]
    pub repositories: Vec<String>,
}

/// One check's verdict.
struct Check {
    /// What was checked, e.g. `git`.
    name: &'static str,
    /// What was found, or what is wrong and what to do.
    verdict: Result<String, Failure>,
}

/// A failed check: what is wrong, and what to do about it.
pub(crate) struct Failure {
    problem: String,
    fix: String,
}

pub(crate) fn failure(problem: impl Into<String>, fix: impl Into<String>) -> Failure {
    Failure {
        problem: problem.into(),
        fix: fix.into(),
    }
}

/// Runs `doctor`.
pub fn run(args: &DoctorArgs, config_file: Option<&Path>) -> anyhow::Result<ExitCode> {
    let loaded = config::load(config_file)?;
    let mut stdout = std::io::stdout().lock();
    print_configuration(&mut stdout, &loaded)?;
    writeln!(stdout)?;
    writeln!(stdout, "Checks")?;
    stdout.flush()?;
    let checks = super::block_on(run_checks(
        &loaded.config,
        loaded.file.as_deref(),
        &args.repositories,
    ))?;
    let mut failed = false;
    for check in checks {
        match check.verdict {
            Ok(found) => writeln!(stdout, "✓ {}: {found}", check.name)?,
            Err(Failure { problem, fix }) => {
                failed = true;
                writeln!(stdout, "✗ {}: {problem} → {fix}", check.name)?;
            }
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn environment(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

fn print_configuration(out: &mut impl std::io::Write, loaded: &Loaded) -> anyhow::Result<()> {
    match &loaded.file {
        Some(file) => writeln!(out, "Configuration (file: {})", file.display())?,
        None => writeln!(
            out,
            "Configuration (no file: pass --config FILE or create ./{}; defaults and the \
             environment apply)",
            config::DEFAULT_FILE_NAME
        )?,
    }
    let file_name = loaded
        .file
        .as_ref()
        .map_or_else(String::new, |file| file.display().to_string());
    for key in KEYS {
        let value = config::display_value(&loaded.config, key);
        let source = match loaded.source(key, environment) {
            Source::Default => "default".to_owned(),
            Source::File { line } => format!("{file_name}:{line}"),
            Source::Environment(variable) => variable,
        };
        writeln!(out, "  {} = {value}  ({source})", key.path)?;
    }
    // The CLI's own variables pass through to it; shown so a missing key is visible here.
    let api_key = if environment("ANTHROPIC_API_KEY").is_some() {
        "set"
    } else {
        "unset"
    };
    writeln!(out, "  ANTHROPIC_API_KEY = {api_key}  (environment)")?;
    let base_url = environment("ANTHROPIC_BASE_URL").unwrap_or_else(|| "(Anthropic's API)".into());
    writeln!(
        out,
        "  ANTHROPIC_BASE_URL = {}  (environment)",
        config::redact_url(&base_url)
    )?;
    Ok(())
}

async fn run_checks(
    config: &Config,
    config_file: Option<&Path>,
    repositories: &[String],
) -> Vec<Check> {
    let mut checks = Vec::new();
    let claude = check_claude_found(config).await;
    let claude_found = claude.verdict.is_ok();
    checks.push(claude);
    checks.push(Check {
        name: "Claude Code flags",
        verdict: if claude_found {
            probe_flags(config).await
        } else {
            Err(failure(
                "not probed: the Claude Code CLI was not found",
                "fix the check above first",
            ))
        },
    });
    checks.push(Check {
        name: "model credential",
        verdict: check_model_credential(config),
    });
    checks.push(Check {
        name: "bubblewrap",
        verdict: check_bubblewrap(config).await,
    });
    checks.extend(check_sandbox(config, config_file).await);
    checks.push(Check {
        name: "sandbox: secret files hidden",
        verdict: check_secret_files(config).await,
    });
    checks.push(Check {
        name: "sandbox: resource bounds",
        verdict: check_resource_bounds(config).await,
    });
    checks.push(Check {
        name: "prompts",
        verdict: check_prompts(config),
    });
    checks.push(Check {
        name: "GitHub",
        verdict: check_github(config, repositories).await,
    });
    checks.push(Check {
        name: "git",
        verdict: check_git().await,
    });
    for repository in repositories {
        checks.push(Check {
            name: "build commands",
            verdict: super::doctor_build::check(config, repository).await,
        });
    }
    checks.push(Check {
        name: "store",
        verdict: check_store(config).await,
    });
    checks.push(Check {
        name: "work directory",
        verdict: check_work_dir(config),
    });
    checks
}

/// Runs `program args…` with a timeout; its trimmed standard output, or why not.
async fn output_of(program: &Path, args: &[&str]) -> Result<String, String> {
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = match tokio::time::timeout(PROBE_TIMEOUT, command.output()).await {
        Err(_) => {
            return Err(format!(
                "{} did not finish within {} s",
                program.display(),
                PROBE_TIMEOUT.as_secs()
            ));
        }
        Ok(Err(error)) => return Err(format!("cannot run {}: {error}", program.display())),
        Ok(Ok(output)) => output,
    };
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    } else {
        Err(format!(
            "{} exited with {}: {}",
            program.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// `name` as given when it holds a `/`, else the first executable of that name in `PATH`.
fn find_executable(name: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let executable = |path: &Path| {
        path.metadata()
            .is_ok_and(|metadata| metadata.is_file() && metadata.permissions().mode() & 0o111 != 0)
    };
    if name.components().count() > 1 || name.is_absolute() {
        return executable(name).then(|| name.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|directory| directory.join(name))
        .find(|candidate| executable(candidate))
}

async fn check_claude_found(config: &Config) -> Check {
    let configured = &config.agent.claude_path;
    let verdict = match find_executable(configured) {
        None => Err(failure(
            format!("{} not found or not executable", configured.display()),
            "install Claude Code (npm install -g @anthropic-ai/claude-code) or set \
             agent.claude_path (REVIEW_BOT_AGENT_CLAUDE_PATH) to its path",
        )),
        Some(path) => match confined_version(config).await {
            Ok(version) => Ok(format!(
                "{} ({version}), started as a review starts it",
                path.display()
            )),
            Err(problem) => Err(problem),
        },
    };
    Check {
        name: "Claude Code",
        verdict,
    }
}

/// `claude --version` through the same runner, containment and confinement
/// a review uses (issue 26): a CLI that only works unconfined (a symbolic
/// link bubblewrap cannot recreate, an install directory not shown) fails
/// here as it would in every review.
async fn confined_version(config: &Config) -> Result<String, Failure> {
    let mut settings = config.claude_settings(|_| None).with_timeout(PROBE_TIMEOUT);
    settings.confinement = config
        .agent_confinement(&settings.executable)
        .map_err(|error| failure(format!("{error:#}"), "fix the sandbox settings"))?;
    let directory = tempfile::Builder::new()
        .prefix("review-bot-doctor-")
        .tempdir()
        .map_err(|error| {
            failure(
                format!("cannot create a temporary directory: {error}"),
                "check that TMPDIR is writable",
            )
        })?;
    // The run directory inside the temporary one, so its scratch directory
    // (beside it) is inside too.
    ClaudeCode::new(settings)
        .version(&directory.path().join("run"))
        .await
        .map_err(|error| {
            let fix = match &error {
                review_agent::AgentError::Containment { .. } => "fix the bubblewrap check",
                review_agent::AgentError::ConfinementSetup { .. } => {
                    "point agent.claude_path at the installed CLI itself, or at a link in a \
                     directory the sandbox shows"
                }
                _ => "reinstall Claude Code, or point agent.claude_path at a working one",
            };
            failure(error.to_string(), fix)
        })
}

/// One real CLI run with every flag review-bot passes, our MCP server
/// included, against a closed local port: it must get as far as the API.
async fn probe_flags(config: &Config) -> Result<String, Failure> {
    let directory = tempfile::Builder::new()
        .prefix("review-bot-doctor-")
        .tempdir()
        .map_err(|error| {
            failure(
                format!("cannot create a temporary directory: {error}"),
                "check that TMPDIR is writable",
            )
        })?;
    let closed_port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map_err(|error| {
            failure(
                format!("cannot pick a local port: {error}"),
                "check loopback networking",
            )
        })?
        .port();
    let mut settings = config
        .claude_settings(|_| None)
        .with_api_key(SecretString::from("review-bot-doctor-probe"))
        .with_base_url(format!("http://127.0.0.1:{closed_port}"))
        .with_max_retries(0)
        .with_timeout(FLAG_PROBE_TIMEOUT);
    settings.max_budget_usd = Some(config.agent.max_budget_usd.unwrap_or(1.0));
    // Confined as a review is, so what passes here works there.
    settings.confinement = config
        .agent_confinement(&settings.executable)
        .map_err(|error| failure(format!("{error:#}"), "fix the sandbox settings"))?;
    let prompt_file = directory.path().join("system-prompt.md");
    let write = std::fs::write(&prompt_file, "review-bot doctor's flag probe.");
    write.map_err(|error| {
        failure(
            format!("cannot write {}: {error}", prompt_file.display()),
            "check that TMPDIR is writable",
        )
    })?;
    let server =
        McpServerCommand::current_review_bot(Vec::new(), BTreeMap::new()).map_err(|error| {
            failure(
                format!("cannot find review-bot's own executable: {error}"),
                "run review-bot from an installed path",
            )
        })?;
    // The checkout and the run directory apart, as in a review (the run
    // directory is read-only to the run), and its scratch directory beside
    // the run directory, inside the temporary one.
    let checkout = directory.path().join("checkout");
    std::fs::create_dir_all(&checkout).map_err(|error| {
        failure(
            format!("cannot create {}: {error}", checkout.display()),
            "check that TMPDIR is writable",
        )
    })?;
    let run = ClaudeCodeRun::new("Say ok.", &checkout, directory.path().join("run"))
        .with_system_prompt_file(&prompt_file)
        .with_mcp(
            McpConfig::review(server)
                .with_tool_timeout(Duration::from_secs(config.agent.mcp_tool_timeout_secs)),
        )
        .with_allowed_tools([format!(
            "mcp__{}__leave_general_comment",
            review_agent::claude::REVIEW_SERVER
        )]);
    let claude = ClaudeCode::new(settings);
    let flags: Vec<String> = claude
        .arguments(&run, Some(&directory.path().join("mcp-config.json")))
        .into_iter()
        .filter_map(|argument| argument.into_string().ok())
        .filter(|argument| argument.starts_with("--"))
        .collect();
    match claude.run(&run).await {
        Ok(agent_run)
            if matches!(
                agent_run.outcome,
                AgentOutcome::ApiError { .. } | AgentOutcome::Success
            ) =>
        {
            Ok(format!(
                "accepted {} and review-bot's MCP server connected",
                flags.join(" ")
            ))
        }
        Ok(agent_run) => Err(failure(
            format!(
                "the probe ended as {:?}, not at its first API request",
                agent_run.outcome
            ),
            "run it again with REVIEW_BOT_LOG=review_agent=debug and report the output",
        )),
        Err(review_agent::AgentError::Containment { .. }) => Err(failure(
            "not probed: bubblewrap cannot run (see the bubblewrap check)",
            "fix the bubblewrap check",
        )),
        Err(error) => Err(failure(
            error.to_string(),
            "use the Claude Code version review-bot is tested with (see README) and point \
             agent.claude_path at it",
        )),
    }
}

/// The CLI needs an API key or a logged-in configuration directory; without
/// either every pass would fail at its first request.
fn check_model_credential(config: &Config) -> Result<String, Failure> {
    if environment("ANTHROPIC_API_KEY").is_some_and(|key| !key.trim().is_empty()) {
        return Ok("ANTHROPIC_API_KEY is set (passed to the CLI only)".to_owned());
    }
    match &config.agent.config_dir {
        Some(directory) if directory.is_dir() => Ok(format!(
            "agent.config_dir {} (that Claude Code's login)",
            directory.display()
        )),
        Some(directory) => Err(failure(
            format!(
                "agent.config_dir {} is not a directory",
                directory.display()
            ),
            "point it at a logged-in Claude Code's directory (~/.claude), or set \
             ANTHROPIC_API_KEY",
        )),
        None => Err(failure(
            "neither ANTHROPIC_API_KEY nor agent.config_dir is set",
            "export ANTHROPIC_API_KEY, or set agent.config_dir to a logged-in Claude Code's \
             directory (~/.claude)",
        )),
    }
}

async fn check_bubblewrap(config: &Config) -> Result<String, Failure> {
    let settings = config.claude_settings(|_| None);
    let ProcessContainment::PidNamespace { bwrap } = settings.containment else {
        return Ok(
            "not used (agent.containment = \"process-group\": a process that starts a session \
             of its own can outlive a run)"
                .to_owned(),
        );
    };
    let fix = "install bubblewrap (apt-get install bubblewrap), allow unprivileged user \
               namespaces, or set agent.containment = \"process-group\"";
    let Some(path) = find_executable(&bwrap) else {
        return Err(failure(format!("{} not found", bwrap.display()), fix));
    };
    // The runner's own bubblewrap arguments, with `true` as the command.
    let mut args = review_agent::claude::BWRAP_ARGUMENTS.to_vec();
    args.push("true");
    match output_of(&path, &args).await {
        Ok(_) => Ok(format!("{} runs a PID namespace", path.display())),
        Err(problem) => Err(failure(problem, fix)),
    }
}

/// The prompts and guides: shipped, or which files an override directory replaces.
fn check_prompts(config: &Config) -> Result<String, Failure> {
    let prompts = review_agent::prompts::Prompts::load(config.agent.prompts_dir.as_deref())
        .map_err(|error| {
            failure(
                error.to_string(),
                "fix the files in agent.prompts_dir, or unset it to use the shipped prompts",
            )
        })?;
    let overridden: Vec<String> = prompts
        .sources()
        .into_iter()
        .filter(|(_, source)| matches!(source, review_agent::prompts::PromptSource::Overridden(_)))
        .map(|(name, _)| name)
        .collect();
    Ok(if overridden.is_empty() {
        "the shipped prompts and guides".to_owned()
    } else {
        format!(
            "shipped, with {} from agent.prompts_dir",
            overridden.join(", ")
        )
    })
}

/// The sandbox a build runs in, tried with a hostile probe: it tries to read
/// the configuration file, to write outside its directory, and leaves a
/// process of a session of its own behind. One check each.
async fn check_sandbox(config: &Config, config_file: Option<&Path>) -> Vec<Check> {
    const NAMES: [&str; 3] = [
        "sandbox: config file unreadable",
        "sandbox: no writes outside",
        "sandbox: no survivor",
    ];
    let all = |verdict: &Result<String, Failure>| {
        NAMES
            .into_iter()
            .map(|name| Check {
                name,
                verdict: match verdict {
                    Ok(found) => Ok(found.clone()),
                    Err(Failure { problem, fix }) => Err(failure(problem.clone(), fix.clone())),
                },
            })
            .collect::<Vec<_>>()
    };
    let Some(confinement) = config.build_confinement() else {
        return all(&Ok(
            "not checked: sandbox.mode = \"off\" (pull-request code is not confined)".to_owned(),
        ));
    };
    match sandbox_probe(config, config_file, confinement).await {
        Ok(findings) => NAMES
            .into_iter()
            .zip(findings)
            .map(|(name, verdict)| Check { name, verdict })
            .collect(),
        Err(problem) => all(&Err(problem)),
    }
}

/// Runs the probe; one verdict per name of [`check_sandbox`].
async fn sandbox_probe(
    config: &Config,
    config_file: Option<&Path>,
    confinement: review_sandbox::Confinement,
) -> Result<Vec<Result<String, Failure>>, Failure> {
    let fix = "install bubblewrap (apt-get install bubblewrap) and allow unprivileged user \
               namespaces, or set sandbox.mode = \"off\" for trusted repositories only";
    let containment = config.claude_settings(|_| None).containment;
    let work_dir = config
        .work_dir()
        .map_err(|error| failure(format!("{error:#}"), "set work_dir"))?;
    std::fs::create_dir_all(&work_dir).map_err(|error| {
        failure(
            format!("cannot create {}: {error}", work_dir.display()),
            "make work_dir writable",
        )
    })?;
    let probe_dir = tempfile::Builder::new()
        .prefix("doctor-probe-")
        .tempdir_in(&work_dir)
        .map_err(|error| {
            failure(
                format!(
                    "cannot create a probe directory in {}: {error}",
                    work_dir.display()
                ),
                "make work_dir writable",
            )
        })?;
    let outside = work_dir.join(format!(
        "doctor-outside-{}",
        probe_dir
            .path()
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default()
    ));
    let config_path = config_file
        .and_then(|file| file.canonicalize().ok())
        .unwrap_or_default();
    let script = "if [ -n \"$CONFIG\" ] && cat \"$CONFIG\" >/dev/null 2>&1; then echo read-config; fi\n\
                  if : > \"$OUTSIDE\" 2>/dev/null; then echo wrote-outside; fi\n\
                  setsid sleep 600 </dev/null >/dev/null 2>&1 &\n\
                  echo done\n";
    let (out, err, finished) = run_probe(
        &containment,
        confinement.with_writable(probe_dir.path()),
        probe_dir.path(),
        script,
        &[
            ("CONFIG", config_path.as_os_str()),
            ("OUTSIDE", outside.as_os_str()),
        ],
    )
    .await
    .map_err(|error| failure(error.to_string(), fix))?;
    let wrote = outside.exists();
    let _ = std::fs::remove_file(&outside);
    if !out.contains("done") {
        let reason = match &finished {
            Err(error) => error.to_string(),
            Ok(_) => err.trim().to_owned(),
        };
        return Err(failure(
            format!("the confined probe did not run: {reason}"),
            fix,
        ));
    }
    let config_verdict = if config_path.as_os_str().is_empty() {
        Ok("no configuration file to hide (nothing of the bot's is shown anyway)".to_owned())
    } else if out.contains("read-config") {
        Err(failure(
            format!("a confined build read {}", config_path.display()),
            "move the configuration file out of the toolchain directories on PATH, or report \
             this as a bug",
        ))
    } else {
        Ok(format!(
            "{} is not visible to a build",
            config_path.display()
        ))
    };
    let write_verdict = if wrote {
        Err(failure(
            format!("a confined build wrote {}", outside.display()),
            "report this as a bug; set sandbox.mode only after it is fixed",
        ))
    } else {
        Ok("a build writes only its checkout and run directory".to_owned())
    };
    let survivor_verdict = match finished {
        Ok(_) => Ok("a `setsid` process left by a build is gone when it ends".to_owned()),
        Err(error) => Err(failure(error.to_string(), fix)),
    };
    Ok(vec![config_verdict, write_verdict, survivor_verdict])
}

/// Which resource bounds confined runs get here
/// ([`review_sandbox::cgroups::describe`]): a cgroup of their own, or
/// rlimits and why. With a cgroup, a confined run is started in one, as a
/// review starts it, so what this passes works.
async fn check_resource_bounds(config: &Config) -> Result<String, Failure> {
    let fix = "set sandbox.cgroup to a cgroup v2 directory the bot may write that holds no \
               process of its own (or to \"auto\" under systemd with Delegate=yes), or to \
               \"off\" to bound runs by rlimits only";
    let Some(confinement) = config.build_confinement() else {
        return Ok("none: sandbox.mode = \"off\" (pull-request code is not confined)".to_owned());
    };
    let bounds = review_sandbox::cgroups::describe(
        &config.sandbox.cgroup_setting(),
        &config.sandbox.limits(),
    )
    .map_err(|error| failure(error.to_string(), fix))?;
    if confinement.cgroup.is_none() {
        return Ok(bounds);
    }
    let containment = config.claude_settings(|_| None).containment;
    let directory = std::env::temp_dir();
    let confinement = review_sandbox::Confinement::new()
        .with_limits(confinement.limits)
        .with_cgroup(confinement.cgroup);
    let (_, err, finished) = run_probe(&containment, confinement, &directory, "exit 0", &[])
        .await
        .map_err(|error| failure(error.to_string(), fix))?;
    match finished {
        Ok(status) if status.success() => Ok(bounds),
        Ok(status) => Err(failure(
            format!(
                "a confined run in its own cgroup ended {status}: {}",
                err.trim()
            ),
            fix,
        )),
        Err(error) => Err(failure(error.to_string(), fix)),
    }
}

/// Every secret file the configuration names ([`Config::secret_files`]),
/// whether it exists now or not, from inside a build and an agent, each
/// confined as a review confines it (the build with the detected toolchains,
/// the agent with its CLI's install directory): one that exists is tried
/// with a real confined `cat` (a directory: listed); one that does not (the
/// store before the first run, its `-wal`) must be neither creatable now nor
/// visible once made, so the probe tries to create it, and the check says
/// how it is kept out (outside what a run sees, or its directory hidden).
async fn check_secret_files(config: &Config) -> Result<String, Failure> {
    use review_sandbox::confinement::SecretVisibility;
    let fix = "report this as a bug; meanwhile keep the file outside the toolchain directories \
               and sandbox.readable_paths";
    let Some(build) = config.build_confinement() else {
        return Ok(
            "not checked: sandbox.mode = \"off\" (pull-request code is not confined)".to_owned(),
        );
    };
    let secrets = config.secret_files();
    if secrets.is_empty() {
        return Ok("no secret file is configured".to_owned());
    }
    let existed: Vec<bool> = secrets
        .iter()
        .map(|path| std::fs::symlink_metadata(path).is_ok())
        .collect();
    let settings = config.claude_settings(|_| None);
    let agent = config
        .agent_confinement(&settings.executable)
        .map_err(|error| failure(format!("{error:#}"), "fix the sandbox settings"))?;
    let build = build.with_readable_paths(review_sandbox::toolchain_directories());
    let directory = tempfile::Builder::new()
        .prefix("doctor-secrets-")
        .tempdir()
        .map_err(|error| {
            failure(
                format!("cannot create a temporary directory: {error}"),
                "check that TMPDIR is writable",
            )
        })?;
    // Prints `read N` for each secret it could read something of, and tries
    // to create each missing one.
    let script = "i=0\n\
                  for secret in \"$@\"; do\n\
                    if [ -e \"$secret\" ] || [ -L \"$secret\" ]; then\n\
                      if [ -d \"$secret\" ]; then found=$(ls -A \"$secret\" 2>/dev/null);\n\
                      else found=$(head -c 1 \"$secret\" 2>/dev/null | od -An -c); fi\n\
                      if [ -n \"$found\" ]; then echo \"read $i\"; fi\n\
                    else (: > \"$secret\") 2>/dev/null; fi\n\
                    i=$((i + 1))\n\
                  done\n\
                  echo done\n";
    let mut confined_as = vec![("a build", build)];
    confined_as.extend(agent.map(|agent| ("the agent", agent)));
    let mut visibilities: Vec<Vec<SecretVisibility>> = Vec::new();
    for (who, confinement) in confined_as {
        let visibility: Vec<SecretVisibility> = secrets
            .iter()
            .map(|path| confinement.secret_visibility(path))
            .collect();
        refuse_exposed(who, &secrets, &visibility)?;
        visibilities.push(visibility);
        let probed = run_probe_with_arguments(
            &settings.containment,
            confinement.with_writable(directory.path()),
            directory.path(),
            script,
            &secrets,
        )
        .await;
        // A missing secret the probe could create shows on the host (inside,
        // a private /tmp would take it too, harmlessly).
        let created: Vec<String> = secrets
            .iter()
            .zip(&existed)
            .filter(|(path, existed)| !**existed && std::fs::symlink_metadata(path).is_ok())
            .map(|(path, _)| format!("create {} (remove it)", path.display()))
            .collect();
        let (out, err, finished) = probed.map_err(|error| failure(error.to_string(), fix))?;
        if !out.contains("done") {
            let reason = match &finished {
                Err(error) => error.to_string(),
                Ok(_) => err.trim().to_owned(),
            };
            return Err(failure(
                format!("the confined probe did not run: {reason}"),
                "fix the bubblewrap check",
            ));
        }
        let mut reached: Vec<String> = secrets
            .iter()
            .enumerate()
            .filter(|(index, _)| out.lines().any(|line| line == format!("read {index}")))
            .map(|(_, path)| format!("read {}", path.display()))
            .collect();
        reached.extend(created);
        if !reached.is_empty() {
            return Err(failure(format!("{who} could {}", reached.join(", ")), fix));
        }
    }
    Ok(describe_secrets(&secrets, &existed, &visibilities))
}

/// A failure when a missing secret would be visible to `who` once made.
fn refuse_exposed(
    who: &str,
    secrets: &[PathBuf],
    visibility: &[review_sandbox::SecretVisibility],
) -> Result<(), Failure> {
    use review_sandbox::SecretVisibility;
    let Some((path, SecretVisibility::Exposed(shown))) = secrets
        .iter()
        .zip(visibility)
        .find(|(_, visibility)| matches!(visibility, SecretVisibility::Exposed(_)))
    else {
        return Ok(());
    };
    Err(failure(
        format!(
            "{} does not exist now, and {who} would read it once made: it would appear in {}, \
             which {who} is shown",
            path.display(),
            shown.display()
        ),
        "move it out of the toolchain directories and sandbox.readable_paths, or create the \
         directory it goes in (its directory is then hidden)",
    ))
}

/// What the secret check says of each secret path: not readable (it
/// exists), or how a missing one is kept out; paths that stand the same
/// way said once (`a, b, c missing now, …`).
fn describe_secrets(
    secrets: &[PathBuf],
    existed: &[bool],
    visibilities: &[Vec<review_sandbox::SecretVisibility>],
) -> String {
    use review_sandbox::SecretVisibility;
    let described: Vec<(String, String)> = secrets
        .iter()
        .enumerate()
        .map(|(index, path)| {
            let path_text = path.display().to_string();
            let how: Vec<&SecretVisibility> =
                visibilities.iter().map(|each| &each[index]).collect();
            if existed[index] {
                // Masked where it is, in a directory a run is shown: a file
                // put in its place while a run lasts would not be.
                let replaceable = path.is_file()
                    && how
                        .iter()
                        .any(|visibility| matches!(visibility, SecretVisibility::Masked));
                return (
                    path_text,
                    if replaceable {
                        "not readable, but a file put in its place while a run lasts would be \
                         (its directory is shown to runs): keep it in a directory of its own"
                            .to_owned()
                    } else {
                        "not readable".to_owned()
                    },
                );
            }
            let hidden: Vec<String> = how
                .iter()
                .filter_map(|visibility| match visibility {
                    SecretVisibility::DirectoryMasked(directory) => {
                        Some(directory.display().to_string())
                    }
                    _ => None,
                })
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            let how = if hidden.is_empty() {
                "missing now, outside what a run sees".to_owned()
            } else {
                format!(
                    "missing now, not creatable; its directory {} is hidden",
                    hidden.join(", ")
                )
            };
            (path_text, how)
        })
        .collect();
    // Paths that stand the same way, said once: `a, b, c missing now, …`.
    let mut groups: Vec<(Vec<String>, String)> = Vec::new();
    for (path, how) in described {
        match groups.last_mut() {
            Some((paths, last)) if *last == how => paths.push(path),
            _ => groups.push((vec![path], how)),
        }
    }
    let groups: Vec<String> = groups
        .into_iter()
        .map(|(paths, how)| format!("{} {how}", paths.join(", ")))
        .collect();
    format!("from a build or the agent: {}", groups.join("; "))
}

/// Runs `sh -c script` confined as a build is, in `directory`; its standard
/// output and error, and how finishing it went (survivors are an error).
async fn run_probe(
    containment: &review_sandbox::Containment,
    confinement: review_sandbox::Confinement,
    directory: &Path,
    script: &str,
    environment: &[(&str, &std::ffi::OsStr)],
) -> Result<
    (
        String,
        String,
        Result<std::process::ExitStatus, review_sandbox::SandboxError>,
    ),
    review_sandbox::SandboxError,
> {
    run_probe_in(
        containment,
        confinement,
        directory,
        script,
        environment,
        &[],
    )
    .await
}

/// [`run_probe`] with the script's positional arguments.
async fn run_probe_with_arguments(
    containment: &review_sandbox::Containment,
    confinement: review_sandbox::Confinement,
    directory: &Path,
    script: &str,
    arguments: &[PathBuf],
) -> Result<
    (
        String,
        String,
        Result<std::process::ExitStatus, review_sandbox::SandboxError>,
    ),
    review_sandbox::SandboxError,
> {
    run_probe_in(containment, confinement, directory, script, &[], arguments).await
}

async fn run_probe_in(
    containment: &review_sandbox::Containment,
    confinement: review_sandbox::Confinement,
    directory: &Path,
    script: &str,
    environment: &[(&str, &std::ffi::OsStr)],
    arguments: &[PathBuf],
) -> Result<
    (
        String,
        String,
        Result<std::process::ExitStatus, review_sandbox::SandboxError>,
    ),
    review_sandbox::SandboxError,
> {
    use tokio::io::AsyncReadExt as _;
    let mut command = containment.confined_command("sh", &confinement)?;
    command
        .args(["-c", script, "sh"])
        .args(arguments)
        .current_dir(directory)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .envs(environment.iter().copied())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut contained = review_sandbox::Contained::spawn(containment, "sh", &mut command)?;
    let mut stdout = contained
        .child_mut()
        .stdout
        .take()
        .expect("stdout is piped");
    let mut stderr = contained
        .child_mut()
        .stderr
        .take()
        .expect("stderr is piped");
    let read = async {
        let mut out = String::new();
        let mut err = String::new();
        let _ = tokio::join!(
            stdout.read_to_string(&mut out),
            stderr.read_to_string(&mut err)
        );
        (out, err)
    };
    let (out, err) = match tokio::time::timeout(PROBE_TIMEOUT, async {
        contained.leader_exited().await;
        read.await
    })
    .await
    {
        Ok(output) => output,
        Err(_) => (String::new(), "the probe did not finish in time".to_owned()),
    };
    let finished = contained.finish().await;
    // bubblewrap's own status channel, never the probe's output, says
    // whether it started the probe.
    let finished = match finished {
        Ok(status) => contained.failure(&err).map_or(Ok(status), Err),
        Err(error) => Err(error),
    };
    Ok((out, err, finished))
}

async fn check_github(config: &Config, repositories: &[String]) -> Result<String, Failure> {
    let mut settings = config.github_settings().map_err(|error| {
        failure(
            format!("{error:#}"),
            "set a credential: github.token (REVIEW_BOT_GITHUB_TOKEN), or github.app_id and \
             github.app_private_key_file",
        )
    })?;
    // A diagnosis answers now: one retry, no long sleeps for a rate limit.
    settings.max_retries = 1;
    settings.max_rate_limit_wait = Duration::from_secs(10);
    let is_app = matches!(settings.credentials, review_github::Credentials::App { .. });
    let api_url = settings.api_url.clone();
    let client = review_github::GitHubClient::new(settings)
        .map_err(|error| failure(error.to_string(), "fix the [github] keys named above"))?;
    let refused = |error: review_github::GitHubError| {
        failure(
            error.to_string(),
            "set github.token (REVIEW_BOT_GITHUB_TOKEN) to a valid credential, or check \
             github.api_url",
        )
    };
    let mut found = Vec::new();
    if is_app {
        let installations = client.list_app_installations().await.map_err(refused)?;
        let mut reached = Vec::new();
        for installation in &installations {
            let names = client
                .list_installation_repositories(installation.id)
                .await
                .map_err(refused)?;
            reached.extend(names.iter().map(ToString::to_string));
        }
        found.push(format!(
            "GitHub App at {api_url}: {} installation(s), reaches {}",
            installations.len(),
            list(&reached)
        ));
    } else {
        let limits = client.get_rate_limit(None).await.map_err(refused)?;
        let core = limits.iter().find(|limit| limit.resource == "core");
        found.push(format!(
            "personal access token accepted by {api_url}{}",
            core.map_or(String::new(), |core| format!(
                " ({} of {} requests left this hour)",
                core.remaining, core.limit
            ))
        ));
        if repositories.is_empty() {
            found.push(
                "the repositories a token reaches are not listed: pass --repo OWNER/REPO to \
                 check one"
                    .to_owned(),
            );
        }
    }
    let mut reached = Vec::new();
    for repository in repositories {
        let name = review_github::RepositoryName::parse(repository).map_err(|error| {
            failure(
                format!("--repo {repository}: {error}"),
                "give repositories as OWNER/REPO",
            )
        })?;
        client.get_commit(&name, "HEAD").await.map_err(|error| {
            failure(
                format!("cannot reach {repository}: {error}"),
                "grant the credential access to it (the token's repositories, or install the \
                 App on it)",
            )
        })?;
        reached.push(repository.clone());
    }
    if !reached.is_empty() {
        found.push(format!("reaches {}", reached.join(", ")));
    }
    Ok(found.join("; "))
}

fn list(names: &[String]) -> String {
    match names.len() {
        0 => "no repositories".to_owned(),
        count if count <= LISTED_REPOSITORIES => names.join(", "),
        count => format!(
            "{} and {} more",
            names[..LISTED_REPOSITORIES].join(", "),
            count - LISTED_REPOSITORIES
        ),
    }
}

async fn check_git() -> Result<String, Failure> {
    output_of(Path::new("git"), &["--version"])
        .await
        .map_err(|problem| {
            failure(
                problem,
                "install git (apt-get install git) and put it on PATH",
            )
        })
}

async fn check_store(config: &Config) -> Result<String, Failure> {
    let url = config.database_url().map_err(|error| {
        failure(
            format!("{error:#}"),
            "set store.database_url (REVIEW_BOT_DATABASE_URL)",
        )
    })?;
    match review_store::Store::open(&url).await {
        Ok(store) => {
            let found = format!(
                "{} opened, schema version {}",
                store.location(),
                review_store::SCHEMA_VERSION
            );
            store.close().await;
            Ok(found)
        }
        Err(error) => Err(failure(
            error.to_string(),
            "point store.database_url (REVIEW_BOT_DATABASE_URL) at a reachable database",
        )),
    }
}

fn check_work_dir(config: &Config) -> Result<String, Failure> {
    let fix = "set work_dir (REVIEW_BOT_WORK_DIR) to a directory this user can write";
    let directory = config
        .work_dir()
        .map_err(|error| failure(format!("{error:#}"), fix))?;
    std::fs::create_dir_all(&directory)
        .with_context(|| format!("cannot create {}", directory.display()))
        .and_then(|()| {
            tempfile::Builder::new()
                .prefix(".review-bot-doctor-")
                .tempfile_in(&directory)
                .with_context(|| format!("cannot write in {}", directory.display()))
        })
        .map(|_| format!("{} is writable", directory.display()))
        .map_err(|error| failure(format!("{error:#}"), fix))
}
