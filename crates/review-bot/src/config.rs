//! review-bot's configuration: one TOML file with the tables `[github]`,
//! `[agent]`, `[store]`, `[review]`, `[ci]`, `[git]`, `[sandbox]` and
//! `[daemon]` (plus the top-level
//! `work_dir`), every key overridable by an environment variable; and
//! `[repositories."OWNER/REPO".build]`, one repository's build and test
//! commands (a nested table: file only, no environment override).
//!
//! Where the file is: `--config FILE`, else `REVIEW_BOT_CONFIG`, else
//! `./review-bot.toml` when it exists; with none, every key has its default.
//! The override for `table.key` is `REVIEW_BOT_<TABLE>_<KEY>` upper-cased
//! (`agent.max_turns` ← `REVIEW_BOT_AGENT_MAX_TURNS`, `work_dir` ←
//! `REVIEW_BOT_WORK_DIR`), which keeps the names review-github already reads
//! (`REVIEW_BOT_GITHUB_TOKEN`, …); `REVIEW_BOT_DATABASE_URL`, the name the
//! store commands use, is accepted for `store.database_url`.
//!
//! Layering is figment's (defaults < file < environment). The file is also
//! parsed on its own with the `toml` crate first, because figment's errors do
//! not carry line numbers: an unknown key or a bad value is reported with the
//! file, the line, the key and the form it expects. [`KEYS`] lists every key
//! once, for the environment names, those messages and `doctor`'s listing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use figment::Figment;
use figment::providers::{Format as _, Serialized, Toml};
use secrecy::SecretString;
use serde::{Deserialize, Serialize, Serializer};

/// The environment variable naming the configuration file.
pub const CONFIG_VARIABLE: &str = "REVIEW_BOT_CONFIG";
/// The file read from the working directory when no other is named.
pub const DEFAULT_FILE_NAME: &str = "review-bot.toml";
/// Prefix of every override.
const ENV_PREFIX: &str = "REVIEW_BOT_";
/// The older name of `REVIEW_BOT_STORE_DATABASE_URL`, still honoured.
pub const DATABASE_URL_ALIAS: &str = "REVIEW_BOT_DATABASE_URL";
/// Variables under a table's prefix that belong to other commands, not to a key.
const OTHER_VARIABLES: &[&str] = &["REVIEW_BOT_REVIEW_PANEL_SOCKET"];

/// One configuration key: its dotted path, the form its value takes, and
/// whether its value is a secret (shown only as set/unset).
#[derive(Debug, Clone, Copy)]
pub struct Key {
    /// `table.key`, or `key` at the top level.
    pub path: &'static str,
    /// The expected form, for error messages.
    pub expected: &'static str,
    /// Never shown, only whether it is set.
    pub secret: bool,
    /// A string (a path, a name, a URL): its variable's value is taken as
    /// text, never read as a number or boolean (`REVIEW_BOT_AGENT_MODEL=1`).
    pub text: bool,
}

/// A key whose value is a number, a boolean, a list or a choice.
const fn key(path: &'static str, expected: &'static str) -> Key {
    Key {
        path,
        expected,
        secret: false,
        text: false,
    }
}

/// A key whose value is a string.
const fn text(path: &'static str, expected: &'static str) -> Key {
    Key {
        path,
        expected,
        secret: false,
        text: true,
    }
}

/// A string that is a secret.
const fn secret(path: &'static str, expected: &'static str) -> Key {
    Key {
        path,
        expected,
        secret: true,
        text: true,
    }
}

/// Every key, in the order `doctor` lists them.
pub const KEYS: &[Key] = &[
    text("work_dir", "a directory path"),
    text("github.api_url", "a URL such as \"https://api.github.com\""),
    secret("github.token", "a personal access token (a string)"),
    key("github.app_id", "the GitHub App's numeric id"),
    secret("github.app_private_key", "the App's private key, PEM text"),
    text(
        "github.app_private_key_file",
        "the path of the App's .pem file",
    ),
    key("github.app_installation_id", "a numeric installation id"),
    key("github.write_spacing_ms", "a whole number of milliseconds"),
    text(
        "github.bot_login",
        "the login the token posts as, such as \"octo-reviewer\"",
    ),
    text("agent.claude_path", "a path, or a name looked up in PATH"),
    text("agent.model", "a model name or alias (a string)"),
    key("agent.max_turns", "a whole number"),
    key(
        "agent.thinking",
        "one of \"enabled\", \"adaptive\", \"disabled\"",
    ),
    key("agent.max_budget_usd", "a number of US dollars such as 5.0"),
    key("agent.max_retries", "a whole number"),
    key("agent.max_attempts", "a whole number of at least 1"),
    key(
        "agent.max_cost_per_pr_usd",
        "a number of US dollars such as 20.0 (0: no cap)",
    ),
    key(
        "agent.max_cost_per_day_usd",
        "a number of US dollars such as 200.0 (0: no cap)",
    ),
    key("agent.timeout_secs", "a whole number of seconds"),
    text("agent.config_dir", "a directory path"),
    text("agent.home_dir", "a directory path"),
    key(
        "agent.inherited_environment",
        "a list of variable names such as [\"PATH\", \"LANG\"]",
    ),
    key(
        "agent.containment",
        "one of \"bubblewrap\", \"process-group\"",
    ),
    text("agent.bwrap_path", "a path, or a name looked up in PATH"),
    key("agent.mcp_tool_timeout_secs", "a whole number of seconds"),
    key("agent.max_model_requests", "a whole number of requests"),
    text(
        "agent.prompts_dir",
        "a directory of prompt files (base.md, …, guides/*.md)",
    ),
    secret(
        "store.database_url",
        "\"sqlite://PATH\" or \"postgres://USER:PASSWORD@HOST/DATABASE\"",
    ),
    key("review.build_timeout_secs", "a whole number of seconds"),
    key("review.max_cycles", "a whole number of review cycles"),
    key("review.verify", "true or false"),
    text(
        "review.min_severity",
        "one of \"critical\", \"security\", \"performance\", \"logic\", \"improvement\", \"clarity\"",
    ),
    key("review.min_confidence", "a whole number from 0 to 100"),
    key("review.max_inline_comments", "a whole number of comments"),
    key("ci.timeout_secs", "a whole number of seconds"),
    text("git.author_name", "a name (a string)"),
    text("git.author_email", "an email address (a string)"),
    key("git.timeout_secs", "a whole number of seconds"),
    key("sandbox.mode", "one of \"required\", \"off\""),
    key("sandbox.build_network", "true or false"),
    key("sandbox.shared_caches", "true or false"),
    key("sandbox.dependency_caches", "true or false"),
    key(
        "sandbox.readable_paths",
        "a list of absolute paths such as [\"/opt/toolchains\"]",
    ),
    key(
        "sandbox.pass_environment",
        "a list of variable names such as [\"JAVA_TOOL_OPTIONS\"]",
    ),
    key(
        "sandbox.environment",
        "a table of variables such as { GOFLAGS = \"-mod=mod\" }",
    ),
    key(
        "sandbox.tmp_size_mib",
        "a whole number of MiB (0: no limit)",
    ),
    key(
        "sandbox.memory_limit_mib",
        "a whole number of MiB (0: no limit)",
    ),
    key(
        "sandbox.process_limit",
        "a whole number of processes (0: no limit)",
    ),
    key(
        "sandbox.file_size_limit_mib",
        "a whole number of MiB (0: no limit)",
    ),
    key(
        "sandbox.cgroup",
        "\"auto\", \"off\" or an absolute path to a cgroup v2 directory",
    ),
    key(
        "sandbox.runs_max_age_days",
        "a whole number of days (0: kept by age)",
    ),
    key(
        "sandbox.runs_max_size_mib",
        "a whole number of MiB (0: no limit)",
    ),
    key(
        "daemon.repositories",
        "a list of \"OWNER/REPO\" and \"OWNER\" such as [\"octo/widgets\", \"acme\"]",
    ),
    key("daemon.poll_interval_secs", "a whole number of seconds"),
    key("daemon.concurrency", "a whole number of jobs, at least 1"),
    text(
        "daemon.listen",
        "an address and port such as \"127.0.0.1:9464\"",
    ),
    key("daemon.shutdown_grace_secs", "a whole number of seconds"),
];

impl Key {
    /// The environment variable that overrides this key.
    pub fn variable(&self) -> String {
        format!(
            "{ENV_PREFIX}{}",
            self.path.replace('.', "_").to_ascii_uppercase()
        )
    }

    /// Every variable that sets this key, weakest first.
    pub fn variables(&self) -> Vec<String> {
        let mut names = Vec::new();
        if self.path == "store.database_url" {
            names.push(DATABASE_URL_ALIAS.to_owned());
        }
        names.push(self.variable());
        names
    }
}

/// The whole configuration, defaults filled in.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Mirrors, worktrees and run directories. `None`: `$XDG_CACHE_HOME/review-bot`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work_dir: Option<PathBuf>,
    /// GitHub access.
    pub github: GithubConfig,
    /// The Claude Code CLI.
    pub agent: AgentConfig,
    /// The database.
    pub store: StoreConfig,
    /// The review flow.
    pub review: ReviewConfig,
    /// The CI check.
    pub ci: CiConfig,
    /// The bot's own commits.
    pub git: GitConfig,
    /// How code from pull requests is confined.
    pub sandbox: SandboxConfig,
    /// `review-bot run`.
    pub daemon: DaemonConfig,
    /// `[repositories."OWNER/REPO"]`: settings of one repository (its build
    /// commands). Not overridable from the environment.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub repositories: BTreeMap<String, RepositoryConfig>,
    /// The file this configuration was read from (set by [`load`]; not a
    /// key): confined code must never see it.
    #[serde(skip)]
    pub source_file: Option<PathBuf>,
}

/// `[github]`: where GitHub is and which credential to use (a personal access
/// token, or a GitHub App); read through review-github's own rules.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct GithubConfig {
    /// The REST API root.
    pub api_url: String,
    /// A personal access token.
    #[serde(
        serialize_with = "set_or_unset",
        skip_serializing_if = "Option::is_none"
    )]
    pub token: Option<SecretString>,
    /// A GitHub App's id (instead of a token).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app_id: Option<u64>,
    /// The App's private key as PEM text.
    #[serde(
        serialize_with = "set_or_unset",
        skip_serializing_if = "Option::is_none"
    )]
    pub app_private_key: Option<SecretString>,
    /// The App's private key file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app_private_key_file: Option<PathBuf>,
    /// Pins one installation instead of looking it up per repository.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app_installation_id: Option<u64>,
    /// Minimum time between two writes (GitHub's advice: 1 s).
    pub write_spacing_ms: u64,
    /// The login the bot posts as (a GitHub App's is read from its installation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bot_login: Option<String>,
}

impl Default for GithubConfig {
    fn default() -> Self {
        Self {
            api_url: review_github::DEFAULT_API_URL.to_owned(),
            token: None,
            app_id: None,
            app_private_key: None,
            app_private_key_file: None,
            app_installation_id: None,
            write_spacing_ms: 1_000,
            bot_login: None,
        }
    }
}

/// `agent.thinking`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingSetting {
    /// `--thinking enabled`.
    #[default]
    Enabled,
    /// `--thinking adaptive`.
    Adaptive,
    /// `--thinking disabled`.
    Disabled,
}

/// `agent.containment`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ContainmentSetting {
    /// A PID namespace per run, made by bubblewrap.
    #[default]
    Bubblewrap,
    /// Only the CLI's process group (weaker: see README).
    ProcessGroup,
}

/// `[agent]`: the fields of `review_agent::claude::ClaudeCodeSettings`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    /// The `claude` executable.
    pub claude_path: PathBuf,
    /// `--model`.
    pub model: String,
    /// `--max-turns`, per pass.
    pub max_turns: u32,
    /// `--thinking`.
    pub thinking: ThinkingSetting,
    /// `--max-budget-usd`, per pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_budget_usd: Option<f64>,
    /// `CLAUDE_CODE_MAX_RETRIES`.
    pub max_retries: u32,
    /// The daemon: failed reviews or fixes of one head before the pull
    /// request is handed to a human.
    pub max_attempts: u32,
    /// What the agent may cost on one pull request, all its runs together
    /// (US dollars; 0: no cap): a review or fix that would start past it is
    /// not started, and the pull request goes to a human.
    pub max_cost_per_pr_usd: f64,
    /// What the agent may cost in one day (UTC), every repository together
    /// (US dollars; 0: no cap): past it, reviews and fixes wait for the next day.
    pub max_cost_per_day_usd: f64,
    /// Wall clock per pass.
    pub timeout_secs: u64,
    /// `CLAUDE_CONFIG_DIR` (a logged-in Claude Code's); `None`: fresh per run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_dir: Option<PathBuf>,
    /// `HOME` for the CLI; `None`: fresh per run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub home_dir: Option<PathBuf>,
    /// Variables copied from review-bot's environment into the CLI's.
    pub inherited_environment: Vec<String>,
    /// How a run's processes are held together and killed.
    pub containment: ContainmentSetting,
    /// The `bwrap` executable (with `containment = "bubblewrap"`).
    pub bwrap_path: PathBuf,
    /// How long one MCP tool call may take.
    pub mcp_tool_timeout_secs: u64,
    /// Model requests one pass may make through its key proxy; `None`:
    /// `8 × max_turns + 16`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_model_requests: Option<u32>,
    /// Prompt and guide files replacing the shipped ones; `None`: the shipped ones.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompts_dir: Option<PathBuf>,
}

/// The defaults, taken from review-agent so the two cannot drift.
fn default_claude_settings() -> review_agent::claude::ClaudeCodeSettings {
    review_agent::claude::ClaudeCodeSettings::new("claude", "claude-opus-4-6")
}

/// Failed attempts on one head before the daemon hands a pull request to a human.
const DEFAULT_MAX_ATTEMPTS: u32 = 3;

/// MCP tool-call timeout review-agent uses by default (2 minutes).
const DEFAULT_MCP_TOOL_TIMEOUT_SECS: u64 = 120;

impl Default for AgentConfig {
    fn default() -> Self {
        let settings = default_claude_settings();
        let bwrap_path = match settings.containment {
            review_agent::claude::ProcessContainment::PidNamespace { bwrap } => bwrap,
            review_agent::claude::ProcessContainment::ProcessGroupOnly => PathBuf::from("bwrap"),
        };
        Self {
            claude_path: settings.executable,
            model: settings.model,
            max_turns: settings.max_turns,
            thinking: ThinkingSetting::default(),
            max_budget_usd: settings.max_budget_usd,
            max_retries: settings.max_retries,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            max_cost_per_pr_usd: 0.0,
            max_cost_per_day_usd: 0.0,
            timeout_secs: settings.timeout.as_secs(),
            config_dir: settings.config_directory,
            home_dir: settings.home_directory,
            inherited_environment: settings.inherited_environment,
            containment: ContainmentSetting::default(),
            bwrap_path,
            mcp_tool_timeout_secs: DEFAULT_MCP_TOOL_TIMEOUT_SECS,
            max_model_requests: settings.max_model_requests,
            prompts_dir: None,
        }
    }
}

/// `[store]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct StoreConfig {
    /// `sqlite://PATH` or `postgres://…`; `None`: the per-user SQLite file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub database_url: Option<String>,
}

/// `[review]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReviewConfig {
    /// Limit for the build and test gate.
    pub build_timeout_secs: u64,
    /// The cycle (a review or a CI failure, and its fix) at which the write
    /// flow hands a pull request to a human instead of fixing.
    pub max_cycles: u32,
    /// Run the verification pass (`review --local`, `eval`, GitHub reviews):
    /// a fresh agent run re-examines each finding; what it refutes, or
    /// confirms under `min_confidence`, is withheld.
    pub verify: bool,
    /// The least urgent severity a review shows (`clarity`: everything).
    pub min_severity: review_core::findings::Severity,
    /// The lowest confidence a review shows (0–100).
    pub min_confidence: review_core::findings::noise::Confidence,
    /// At most this many inline comments per review; the rest go in its body.
    pub max_inline_comments: u32,
}

impl Default for ReviewConfig {
    fn default() -> Self {
        let noise = review_core::findings::noise::NoiseControl::default();
        Self {
            build_timeout_secs: 1_200,
            max_cycles: 5,
            verify: false,
            min_severity: noise.min_severity,
            min_confidence: noise.min_confidence,
            max_inline_comments: noise.max_inline_comments,
        }
    }
}

/// `[ci]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct CiConfig {
    /// How long CI may stay pending, from the head commit's date, before it
    /// counts as failed.
    pub timeout_secs: u64,
}

impl Default for CiConfig {
    fn default() -> Self {
        Self {
            timeout_secs: 3_600,
        }
    }
}

/// `[git]`: the identity of the bot's commits.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct GitConfig {
    /// `user.name` of the bot's commits.
    pub author_name: String,
    /// `user.email` of the bot's commits.
    pub author_email: String,
    /// Limit for each git command (fetch, worktree, push).
    pub timeout_secs: u64,
}

impl Default for GitConfig {
    fn default() -> Self {
        Self {
            author_name: "review-bot".to_owned(),
            author_email: "review-bot@users.noreply.github.com".to_owned(),
            timeout_secs: review_pipeline::checkout::DEFAULT_GIT_TIMEOUT.as_secs(),
        }
    }
}

/// `sandbox.mode`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Builds and agents run confined to their job's files (bubblewrap);
    /// where that cannot start, nothing runs.
    #[default]
    Required,
    /// No filesystem confinement (PID namespace only): for trusted
    /// repositories on hosts without user namespaces.
    Off,
}

/// `[sandbox]`: what code from a pull request (its build and tests, the
/// agent and what it runs) can reach.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct SandboxConfig {
    /// Whether confinement is required.
    pub mode: SandboxMode,
    /// Whether builds and tests may use the network (to fetch dependencies).
    pub build_network: bool,
    /// Whether a repository's builds share their whole `HOME` across jobs,
    /// under `work_dir/caches/OWNER/REPO/home` (implies
    /// `dependency_caches`). Off: a fresh one per job.
    pub shared_caches: bool,
    /// Whether each repository keeps writable dependency caches (cargo,
    /// npm, pip, Go, `XDG_CACHE_HOME`) under `work_dir/caches/OWNER/REPO`,
    /// so its second build does not download again.
    pub dependency_caches: bool,
    /// Directories or files shown read-only to builds and agents, besides
    /// the detected toolchains.
    #[serde(deserialize_with = "paths_or_commas")]
    pub readable_paths: Vec<PathBuf>,
    /// Variables copied from review-bot's environment into every build's.
    #[serde(deserialize_with = "list_or_commas")]
    pub pass_environment: Vec<String>,
    /// Variables set in every build's environment (they win over all others).
    pub environment: BTreeMap<String, String>,
    /// MiB of a confined run's private `/tmp` (and `/var/tmp`), a tmpfs
    /// held in memory; 0: bubblewrap's default, half the host's memory.
    pub tmp_size_mib: u64,
    /// MiB of memory of a confined run: the whole run's (`memory.max`) in a
    /// cgroup of its own, else per process (data segment, `RLIMIT_DATA`);
    /// 0: no limit.
    pub memory_limit_mib: u64,
    /// Processes a confined run may have: the whole run's (`pids.max`) in a
    /// cgroup of its own, else of the run's user (`RLIMIT_NPROC`); 0: no
    /// limit.
    pub process_limit: u64,
    /// MiB of one file a confined run writes (`RLIMIT_FSIZE`); 0: no limit.
    pub file_size_limit_mib: u64,
    /// Where each confined run's own cgroup is made: `auto` (the bot's own
    /// cgroup, when delegated), `off` (rlimits only) or a cgroup v2
    /// directory ([`review_sandbox::cgroups::CgroupSetting`]).
    pub cgroup: String,
    /// Days after which a run directory (`work_dir/runs/…`) no job is
    /// working in is removed; 0: kept by age.
    pub runs_max_age_days: u64,
    /// MiB all run directories may take; past it, the oldest no job is
    /// working in are removed; 0: no limit.
    pub runs_max_size_mib: u64,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        let limits = review_sandbox::Limits::DEFAULT;
        let mib = |bytes: Option<u64>| bytes.map_or(0, |bytes| bytes >> 20);
        Self {
            mode: SandboxMode::Required,
            build_network: true,
            shared_caches: false,
            dependency_caches: true,
            readable_paths: Vec::new(),
            pass_environment: Vec::new(),
            environment: BTreeMap::new(),
            tmp_size_mib: mib(limits.tmp_size),
            memory_limit_mib: mib(limits.memory),
            process_limit: limits.processes.unwrap_or(0),
            file_size_limit_mib: mib(limits.file_size),
            cgroup: "auto".to_owned(),
            runs_max_age_days: 14,
            runs_max_size_mib: 20 * 1024,
        }
    }
}

impl SandboxConfig {
    /// The resource bounds of every confined run (0 is none).
    pub fn limits(&self) -> review_sandbox::Limits {
        let bytes = |mib: u64| (mib > 0).then(|| mib.saturating_mul(1 << 20));
        review_sandbox::Limits {
            tmp_size: bytes(self.tmp_size_mib),
            memory: bytes(self.memory_limit_mib),
            processes: (self.process_limit > 0).then_some(self.process_limit),
            file_size: bytes(self.file_size_limit_mib),
        }
    }

    /// `sandbox.cgroup`, parsed (checked when the configuration is loaded;
    /// `auto` if it does not parse).
    pub fn cgroup_setting(&self) -> review_sandbox::cgroups::CgroupSetting {
        self.cgroup.parse().unwrap_or_default()
    }

    /// Where confined runs' cgroups are made: `None` for rlimits only (off,
    /// nothing delegated, or a directory that cannot be used: logged once,
    /// and `review-bot doctor` fails on it).
    pub fn run_cgroups(&self) -> Option<review_sandbox::cgroups::RunCgroups> {
        review_sandbox::cgroups::prepare(&self.cgroup_setting()).unwrap_or(None)
    }

    /// How run directories are pruned.
    pub fn runs_pruning(&self) -> review_pipeline::runs::Pruning {
        review_pipeline::runs::Pruning {
            max_age: (self.runs_max_age_days > 0).then(|| {
                std::time::Duration::from_hours(self.runs_max_age_days.saturating_mul(24))
            }),
            max_bytes: (self.runs_max_size_mib > 0)
                .then(|| self.runs_max_size_mib.saturating_mul(1 << 20)),
        }
    }
}

/// Variables never given to a build, whatever the configuration says: the
/// GitHub credentials and the model's keys.
const CREDENTIAL_VARIABLES: &[&str] = &[
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "GH_ENTERPRISE_TOKEN",
    "GITHUB_ENTERPRISE_TOKEN",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
];

/// Variables the gate sets per job, which configuration cannot replace.
const JOB_VARIABLES: &[&str] = &["HOME", "TMPDIR"];

impl SandboxConfig {
    /// Checks `readable_paths`, `pass_environment` and `environment`: paths
    /// absolute and existing, names well formed, no GitHub credential or
    /// model key passed by name or by value (`secrets`: the configured
    /// token and keys; `variable` looks up review-bot's environment).
    pub fn check(
        &self,
        secrets: &[&str],
        variable: impl Fn(&str) -> Option<String>,
    ) -> anyhow::Result<()> {
        if let Err(error) = self
            .cgroup
            .parse::<review_sandbox::cgroups::CgroupSetting>()
        {
            bail!("sandbox.cgroup: {error}");
        }
        for path in &self.readable_paths {
            if !path.is_absolute() {
                bail!(
                    "sandbox.readable_paths: `{}` is not an absolute path; write it from `/`",
                    path.display()
                );
            }
            if path.parent().is_none() {
                bail!(
                    "sandbox.readable_paths: `/` would show the whole machine to pull-request \
                     code; name the toolchain's own directory"
                );
            }
            if !path.exists() {
                bail!(
                    "sandbox.readable_paths: `{}` does not exist; install what it is for, or \
                     remove it from the list",
                    path.display()
                );
            }
        }
        let secret_in = |value: &str| {
            secrets
                .iter()
                .any(|secret| secret.len() >= 8 && value.contains(secret))
        };
        let check_name = |key: &str, name: &str| -> anyhow::Result<()> {
            let well_formed = name
                .chars()
                .next()
                .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
                && name
                    .chars()
                    .all(|character| character.is_ascii_alphanumeric() || character == '_');
            if !well_formed {
                bail!(
                    "{key}: `{name}` is not a variable name (letters, digits and `_`, not \
                     starting with a digit)"
                );
            }
            if CREDENTIAL_VARIABLES.contains(&name) || name.starts_with(ENV_PREFIX) {
                bail!(
                    "{key}: `{name}` is a credential of the bot's; pull-request code must never \
                     get it. Remove it (a build that needs a token of its own should get a \
                     read-only one under another name)"
                );
            }
            if JOB_VARIABLES.contains(&name) {
                bail!(
                    "{key}: `{name}` is set by the build gate for each job; remove it \
                     (sandbox.shared_caches keeps HOME per repository)"
                );
            }
            Ok(())
        };
        for name in &self.pass_environment {
            check_name("sandbox.pass_environment", name)?;
            if variable(name).is_some_and(|value| secret_in(&value)) {
                bail!(
                    "sandbox.pass_environment: `{name}` holds the bot's GitHub token or model \
                     key in review-bot's environment; remove it from the list"
                );
            }
        }
        for (name, value) in &self.environment {
            check_name("sandbox.environment", name)?;
            if secret_in(value) {
                bail!(
                    "sandbox.environment: the value of `{name}` contains the bot's GitHub token \
                     or model key; remove it"
                );
            }
        }
        Ok(())
    }
}

/// A list of paths, or one string of comma-separated paths.
fn paths_or_commas<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<PathBuf>, D::Error> {
    Ok(list_or_commas(deserializer)?
        .into_iter()
        .map(PathBuf::from)
        .collect())
}

/// `[repositories."OWNER/REPO"]`: what the operator sets for one repository.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RepositoryConfig {
    /// `[repositories."OWNER/REPO".build]`: the build and test commands,
    /// before the base branch's `.review-bot.toml` and CLAUDE.md/README.md.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<BuildCommandsConfig>,
    /// `[repositories."OWNER/REPO".review]`: `min_severity`,
    /// `min_confidence`, `max_inline_comments` for this repository, before
    /// the base branch's `.review-bot.toml` `[review]` and `[review]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<review_core::findings::noise::NoiseOverrides>,
    /// `[repositories."OWNER/REPO".agent]`: this repository's cost caps,
    /// each instead of `[agent]`'s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<RepositoryAgentConfig>,
}

/// `[repositories."OWNER/REPO".agent]`: one repository's cost caps (US
/// dollars; 0: no cap). `max_cost_per_pr_usd` replaces `[agent]`'s for its
/// pull requests; `max_cost_per_day_usd` caps the repository's own day, on
/// top of `[agent]`'s cap on every repository's day together.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RepositoryAgentConfig {
    /// The repository's cap per pull request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cost_per_pr_usd: Option<f64>,
    /// The repository's cap per day.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cost_per_day_usd: Option<f64>,
}

/// `[repositories."OWNER/REPO".build]`: the same keys as `.review-bot.toml`'s
/// `[build]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct BuildCommandsConfig {
    /// Commands that prepare the checkout (dependencies, a virtualenv), run first.
    pub setup: Vec<String>,
    /// Build commands, run after the setup.
    pub build: Vec<String>,
    /// Test commands, run last; all in one shell.
    pub test: Vec<String>,
    /// Variables set for the commands.
    pub environment: BTreeMap<String, String>,
}

impl BuildCommandsConfig {
    /// The commands as the pipelines take them.
    pub fn command_set(&self) -> review_core::build_commands::CommandSet {
        review_core::build_commands::CommandSet {
            setup: self.setup.clone(),
            build: self.build.clone(),
            test: self.test.clone(),
            environment: self.environment.clone(),
        }
    }
}

/// `[daemon]`: what `review-bot run` watches and how it schedules.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct DaemonConfig {
    /// `OWNER/REPO` (one repository) or `OWNER` (every repository of an
    /// organisation or user); checked by `run` at start. A string is read
    /// as a comma-separated list (for the environment variable).
    #[serde(deserialize_with = "list_or_commas")]
    pub repositories: Vec<String>,
    /// Between the starts of two polls.
    pub poll_interval_secs: u64,
    /// Jobs (pull requests) worked on at once.
    pub concurrency: usize,
    /// Where `/healthz` and `/metrics` are served.
    pub listen: std::net::SocketAddr,
    /// How long running jobs may go on after SIGTERM or SIGINT before they
    /// are stopped.
    pub shutdown_grace_secs: u64,
}

impl Default for DaemonConfig {
    fn default() -> Self {
        Self {
            repositories: Vec::new(),
            poll_interval_secs: 60,
            concurrency: 2,
            listen: std::net::SocketAddr::from(([127, 0, 0, 1], 9464)),
            shutdown_grace_secs: 30,
        }
    }
}

/// A list of strings, or one string of comma-separated items.
fn list_or_commas<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum ListOrText {
        List(Vec<String>),
        Text(String),
    }
    Ok(match ListOrText::deserialize(deserializer)? {
        ListOrText::List(items) => items,
        ListOrText::Text(text) => text
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(str::to_owned)
            .collect(),
    })
}

/// Secrets serialise as `"set"`, so a listing can never show one.
#[allow(clippy::ref_option, reason = "serde's serialize_with signature")]
fn set_or_unset<S: Serializer>(
    value: &Option<SecretString>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(if value.is_some() { "set" } else { "unset" })
}

impl Config {
    /// The work directory: `work_dir`, else `$XDG_CACHE_HOME/review-bot`.
    pub fn work_dir(&self) -> anyhow::Result<PathBuf> {
        if let Some(directory) = &self.work_dir {
            return Ok(directory.clone());
        }
        let cache = dirs::cache_dir().context(
            "no cache directory (neither XDG_CACHE_HOME nor HOME is set): set work_dir \
             in the configuration file or REVIEW_BOT_WORK_DIR",
        )?;
        Ok(cache.join("review-bot"))
    }

    /// The operator's build and test commands per repository
    /// (`[repositories."OWNER/REPO".build]`).
    pub fn operator_commands(&self) -> review_pipeline::command_sources::OperatorCommands {
        review_pipeline::command_sources::OperatorCommands::new(
            self.repositories.iter().filter_map(|(name, repository)| {
                repository
                    .build
                    .as_ref()
                    .map(|build| (name.clone(), build.command_set()))
            }),
        )
    }

    /// The operator's noise control: `[review]` for every repository, and
    /// `[repositories."OWNER/REPO".review]` per repository.
    pub fn operator_noise(&self) -> review_pipeline::command_sources::OperatorNoise {
        review_pipeline::command_sources::OperatorNoise::new(
            review_core::findings::noise::NoiseControl {
                min_severity: self.review.min_severity,
                min_confidence: self.review.min_confidence,
                max_inline_comments: self.review.max_inline_comments,
            },
            self.repositories.iter().filter_map(|(name, repository)| {
                repository.review.map(|review| (name.clone(), review))
            }),
        )
    }

    /// The cost caps: `[agent]`'s for every repository, and
    /// `[repositories."OWNER/REPO".agent]` per repository.
    pub fn cost_caps(&self) -> review_pipeline::cost::CostCaps {
        review_pipeline::cost::CostCaps::new(
            review_pipeline::cost::Caps {
                per_pull_request_usd: self.agent.max_cost_per_pr_usd,
                per_day_usd: self.agent.max_cost_per_day_usd,
            },
            self.repositories.iter().filter_map(|(name, repository)| {
                repository.agent.map(|agent| {
                    (
                        name.clone(),
                        review_pipeline::cost::RepositoryCaps {
                            per_pull_request_usd: agent.max_cost_per_pr_usd,
                            per_day_usd: agent.max_cost_per_day_usd,
                        },
                    )
                })
            }),
        )
    }

    /// Where the repositories' build caches live (`work_dir/caches`), with
    /// `sandbox.dependency_caches` or `sandbox.shared_caches`.
    pub fn build_caches(&self) -> Option<PathBuf> {
        if !self.sandbox.dependency_caches && !self.sandbox.shared_caches {
            return None;
        }
        self.work_dir().ok().map(|work_dir| work_dir.join("caches"))
    }

    /// `settings` with what `[sandbox]` says of the builds' environment: the
    /// confinement, the caches (`sandbox.dependency_caches`,
    /// `sandbox.shared_caches`) and the variables (`sandbox.pass_environment`
    /// from review-bot's environment, then `sandbox.environment`).
    #[must_use]
    pub fn build_gate_settings(
        &self,
        mut settings: review_pipeline::build_gate::BuildGateSettings,
    ) -> review_pipeline::build_gate::BuildGateSettings {
        settings.confinement = self.build_confinement();
        settings.caches = self.build_caches();
        settings.shared_home = self.sandbox.shared_caches;
        for name in &self.sandbox.pass_environment {
            if let Some(value) = std::env::var_os(name) {
                settings.environment.push((name.clone(), value));
            }
        }
        for (name, value) in &self.sandbox.environment {
            settings.environment.push((name.clone(), value.into()));
        }
        settings
    }

    /// The confinement of the build and test gate, per `[sandbox]`; the gate
    /// adds the job's worktree, build directory, caches and the detected
    /// toolchains itself.
    pub fn build_confinement(&self) -> Option<review_sandbox::Confinement> {
        (self.sandbox.mode == SandboxMode::Required).then(|| {
            self.hide_own_files(
                review_sandbox::Confinement::new()
                    .with_readable_paths(self.sandbox.readable_paths.iter().cloned())
                    .with_network(self.sandbox.build_network)
                    .with_limits(self.sandbox.limits())
                    .with_cgroup(self.sandbox.run_cgroups()),
            )
        })
    }

    /// The confinement of the agent (the CLI, its tools, our MCP server), per
    /// `[sandbox]`; the runner adds the job's paths and the executables. The
    /// agent keeps the network: it reaches the model's API over it. Refuses
    /// `mode = "required"` with process-group containment, which cannot
    /// confine anything.
    pub fn agent_confinement(
        &self,
        claude_executable: &Path,
    ) -> anyhow::Result<Option<review_sandbox::Confinement>> {
        if self.sandbox.mode == SandboxMode::Off {
            return Ok(None);
        }
        if self.agent.containment == ContainmentSetting::ProcessGroup {
            anyhow::bail!(
                "sandbox.mode = \"required\" needs agent.containment = \"bubblewrap\": a process \
                 group cannot keep pull-request code away from the bot's files. Install \
                 bubblewrap (apt-get install bubblewrap) and use it, or set sandbox.mode = \"off\" \
                 (REVIEW_BOT_SANDBOX_MODE=off) for trusted repositories only"
            );
        }
        let mut confinement = review_sandbox::Confinement::new()
            .with_readable_paths(review_sandbox::toolchain_directories())
            .with_readable_paths(self.sandbox.readable_paths.iter().cloned())
            .with_limits(self.sandbox.limits())
            .with_cgroup(self.sandbox.run_cgroups());
        if let Some(install) = install_directory(claude_executable) {
            confinement = confinement.with_readable(install);
        }
        // `agent.config_dir` is not shown: its login is copied into each
        // run's fresh configuration directory (review_agent's
        // `claude::config_directory`), which the run directory holds.
        Ok(Some(self.hide_own_files(confinement)))
    }

    /// Every file of secrets the configuration names, wherever it lives:
    /// the configuration file itself, the GitHub App's private key, the
    /// SQLite store (with its journal files) and the operator's Claude Code
    /// login (`agent.config_dir`). Hidden from builds and agents; `doctor`
    /// checks that a confined run cannot read them.
    pub fn secret_files(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        files.extend(self.source_file.clone());
        files.extend(self.github.app_private_key_file.clone());
        if let Ok(url) = self.database_url()
            && let Some(path) = url.strip_prefix("sqlite://")
        {
            let path = path.split_once('?').map_or(path, |(path, _)| path);
            files.push(PathBuf::from(path));
            for suffix in ["-wal", "-shm", "-journal"] {
                files.push(PathBuf::from(format!("{path}{suffix}")));
            }
        }
        files.extend(self.agent.config_dir.clone());
        files
    }

    /// Masks the bot's secret files ([`Config::secret_files`]) and the work
    /// directory's shared parts should a readable path cover them.
    fn hide_own_files(
        &self,
        mut confinement: review_sandbox::Confinement,
    ) -> review_sandbox::Confinement {
        for file in self.secret_files() {
            confinement = confinement.with_hidden(file);
        }
        if let Ok(work_dir) = self.work_dir() {
            confinement = confinement.with_hidden(work_dir.join("mirrors"));
        }
        confinement
    }

    /// [`SandboxConfig::check`] against the configured GitHub token and App
    /// key and the model key in `variable` (review-bot's environment).
    /// Every cost cap is a number of dollars, 0 or more.
    fn check_cost_caps(&self) -> anyhow::Result<()> {
        let check = |key: String, value: f64| {
            if value.is_finite() && value >= 0.0 {
                Ok(())
            } else {
                Err(anyhow::anyhow!(
                    "`{key}` is {value}: give a number of US dollars, 0 or more, such as 20.0 \
                     (0 means no cap)"
                ))
            }
        };
        check(
            "agent.max_cost_per_pr_usd".to_owned(),
            self.agent.max_cost_per_pr_usd,
        )?;
        check(
            "agent.max_cost_per_day_usd".to_owned(),
            self.agent.max_cost_per_day_usd,
        )?;
        for (name, repository) in &self.repositories {
            let Some(agent) = repository.agent else {
                continue;
            };
            for (key, value) in [
                ("max_cost_per_pr_usd", agent.max_cost_per_pr_usd),
                ("max_cost_per_day_usd", agent.max_cost_per_day_usd),
            ] {
                if let Some(value) = value {
                    check(format!("repositories.{name:?}.agent.{key}"), value)?;
                }
            }
        }
        Ok(())
    }

    fn check_sandbox(&self, variable: impl Fn(&str) -> Option<String>) -> anyhow::Result<()> {
        let api_key = variable("ANTHROPIC_API_KEY");
        let mut secrets: Vec<&str> = [&self.github.token, &self.github.app_private_key]
            .into_iter()
            .flatten()
            .map(secrecy::ExposeSecret::expose_secret)
            .collect();
        secrets.extend(api_key.as_deref());
        self.sandbox
            .check(&secrets, variable)
            .context("in the [sandbox] configuration (REVIEW_BOT_SANDBOX_… variables or the file)")
    }

    /// The database URL: `store.database_url`, else the per-user SQLite file.
    pub fn database_url(&self) -> anyhow::Result<String> {
        match &self.store.database_url {
            Some(url) => Ok(url.clone()),
            None => review_store::default_database_url().context(
                "no data directory for the default database: set store.database_url \
                 or REVIEW_BOT_DATABASE_URL",
            ),
        }
    }

    /// review-github's settings, through its own reading rules (so a file
    /// and the environment mean exactly what the environment alone meant).
    pub fn github_settings(&self) -> anyhow::Result<review_github::ClientSettings> {
        use secrecy::ExposeSecret as _;
        let github = &self.github;
        let lookup = |name: &str| -> Option<String> {
            match name {
                review_github::TOKEN_VARIABLE => github
                    .token
                    .as_ref()
                    .map(|token| token.expose_secret().to_owned()),
                review_github::APP_ID_VARIABLE => github.app_id.map(|id| id.to_string()),
                review_github::APP_PRIVATE_KEY_VARIABLE => github
                    .app_private_key
                    .as_ref()
                    .map(|key| key.expose_secret().to_owned()),
                review_github::APP_PRIVATE_KEY_FILE_VARIABLE => github
                    .app_private_key_file
                    .as_ref()
                    .map(|path| path.display().to_string()),
                review_github::APP_INSTALLATION_ID_VARIABLE => {
                    github.app_installation_id.map(|id| id.to_string())
                }
                review_github::API_URL_VARIABLE => Some(github.api_url.clone()),
                review_github::WRITE_SPACING_VARIABLE => Some(github.write_spacing_ms.to_string()),
                _ => None,
            }
        };
        review_github::ClientSettings::from_environment(lookup).map_err(|error| {
            anyhow::anyhow!(
                "{error} (in the configuration file: the [github] keys token, or app_id and \
                 app_private_key_file)"
            )
        })
    }

    /// review-agent's settings for every Claude Code run. `ANTHROPIC_API_KEY`
    /// and `ANTHROPIC_BASE_URL` come from the environment: they are the
    /// CLI's own variables and pass through to it.
    pub fn claude_settings(
        &self,
        environment: impl Fn(&str) -> Option<String>,
    ) -> review_agent::claude::ClaudeCodeSettings {
        use review_agent::claude::{ClaudeCodeSettings, ProcessContainment, Thinking};
        let agent = &self.agent;
        let mut settings = ClaudeCodeSettings::new(&agent.claude_path, &agent.model)
            .with_max_turns(agent.max_turns)
            .with_max_retries(agent.max_retries)
            .with_timeout(std::time::Duration::from_secs(agent.timeout_secs))
            .with_thinking(match agent.thinking {
                ThinkingSetting::Enabled => Thinking::Enabled,
                ThinkingSetting::Adaptive => Thinking::Adaptive,
                ThinkingSetting::Disabled => Thinking::Disabled,
            })
            .with_containment(match agent.containment {
                ContainmentSetting::Bubblewrap => ProcessContainment::PidNamespace {
                    bwrap: agent.bwrap_path.clone(),
                },
                ContainmentSetting::ProcessGroup => ProcessContainment::ProcessGroupOnly,
            });
        settings.max_budget_usd = agent.max_budget_usd;
        settings.config_directory.clone_from(&agent.config_dir);
        settings.max_model_requests = agent.max_model_requests;
        settings.home_directory.clone_from(&agent.home_dir);
        settings
            .inherited_environment
            .clone_from(&agent.inherited_environment);
        let present = |name: &str| environment(name).filter(|value| !value.trim().is_empty());
        if let Some(key) = present("ANTHROPIC_API_KEY") {
            settings = settings.with_api_key(SecretString::from(key));
        }
        if let Some(url) = present("ANTHROPIC_BASE_URL") {
            settings = settings.with_base_url(url);
        }
        settings
    }
}

/// The directory an agent CLI is installed in, so that what it loads beside
/// its executable is readable: the `node_modules` directory an npm install
/// keeps it in, else the directory of the resolved executable.
fn install_directory(executable: &Path) -> Option<PathBuf> {
    let resolved = if executable.components().count() == 1 {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .map(|directory| directory.join(executable))
            .find(|candidate| candidate.is_file())?
    } else {
        executable.to_owned()
    };
    let canonical = resolved.canonicalize().ok()?;
    canonical
        .ancestors()
        .find(|ancestor| {
            ancestor
                .file_name()
                .is_some_and(|name| name == "node_modules")
        })
        .map(Path::to_owned)
        .or_else(|| canonical.parent().map(Path::to_owned))
        .filter(|directory| directory != Path::new("/") && !directory.starts_with("/usr"))
}

/// Where a key's effective value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Nobody set it.
    Default,
    /// The configuration file, at this line.
    File {
        /// 1-based line of the key.
        line: usize,
    },
    /// This environment variable.
    Environment(String),
}

/// The configuration as loaded, with what is needed to say where each value came from.
#[derive(Debug)]
pub struct Loaded {
    /// The values.
    pub config: Config,
    /// The file read, if any.
    pub file: Option<PathBuf>,
    /// The file's text (for line numbers).
    file_text: String,
}

impl Loaded {
    /// Where `key`'s value came from.
    pub fn source(&self, key: &Key, environment: impl Fn(&str) -> Option<String>) -> Source {
        if let Some(variable) = key
            .variables()
            .into_iter()
            .rev()
            .find(|name| environment(name).is_some())
        {
            return Source::Environment(variable);
        }
        match key_line(&self.file_text, key.path) {
            Some(line) => Source::File { line },
            None => Source::Default,
        }
    }
}

/// Which file to read: `explicit` (`--config` or `REVIEW_BOT_CONFIG`), else
/// `./review-bot.toml` when it exists.
pub fn locate(explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(path) = explicit {
        return Some(path.to_path_buf());
    }
    let default = PathBuf::from(DEFAULT_FILE_NAME);
    default.is_file().then_some(default)
}

/// Loads the configuration: defaults, then the file (if any), then the
/// environment. Errors name the key, where it was set, and the expected form.
pub fn load(explicit: Option<&Path>) -> anyhow::Result<Loaded> {
    let file = locate(explicit);
    let mut figment = Figment::new();
    let mut file_text = String::new();
    if let Some(path) = &file {
        file_text = std::fs::read_to_string(path).with_context(|| {
            format!(
                "cannot read the configuration file {}: check the path given to --config or \
                 {CONFIG_VARIABLE} (review-bot.example.toml shows every key)",
                path.display()
            )
        })?;
        match toml::from_str::<Config>(&file_text) {
            Err(error) => bail!("{}", describe_file_error(path, &file_text, &error)),
            Ok(parsed) => check_repositories(path, &file_text, &parsed.repositories)?,
        }
        figment = figment.merge(Toml::string(&file_text));
    }
    check_unknown_variables(std::env::vars_os().filter_map(|(name, _)| name.into_string().ok()))?;
    figment = merge_environment(figment);
    let mut config: Config = figment
        .extract()
        .map_err(|error| anyhow::anyhow!(describe_environment_error(error)))?;
    config.check_sandbox(|name| std::env::var(name).ok())?;
    config.check_cost_caps()?;
    config.source_file = file.as_ref().and_then(|file| file.canonicalize().ok());
    Ok(Loaded {
        config,
        file,
        file_text,
    })
}

/// The overrides: each known key's variables that are set, weakest first,
/// each a provider of its own. Figment's `Env` provider reads every value as
/// TOML-ish (`1` a number, `true` a boolean), which would make
/// `REVIEW_BOT_GIT_AUTHOR_NAME=123` a type error; string keys take the text as is.
fn merge_environment(mut figment: Figment) -> Figment {
    for key in KEYS {
        for variable in key.variables() {
            let Some(raw) = std::env::var_os(&variable) else {
                continue;
            };
            let raw = raw.to_string_lossy().into_owned();
            let value = if key.text {
                figment::value::Value::from(raw)
            } else {
                raw.parse::<figment::value::Value>()
                    .unwrap_or_else(|_| figment::value::Value::from(raw))
            };
            figment = figment.merge(Serialized::default(key.path, value));
        }
    }
    figment
}

/// `config` with one key set from `SETTING=VALUE` (`eval --compare
/// review.verify=true`): the key must be one of [`KEYS`] (not a secret, so
/// it can be printed) and the value of its form, read as its environment
/// variable's would be. Errors say what to give.
pub fn with_setting(config: &Config, setting: &str) -> anyhow::Result<Config> {
    let Some((path, raw)) = setting.split_once('=') else {
        bail!(
            "{setting:?} is not SETTING=VALUE; give a key and a value, such as review.verify=true"
        );
    };
    let path = path.trim();
    let Some(key) = KEYS.iter().find(|key| key.path == path) else {
        let paths: Vec<&str> = KEYS
            .iter()
            .filter(|key| !key.secret)
            .map(|key| key.path)
            .collect();
        bail!(
            "`{path}` is not a configuration key; use one of: {}",
            paths.join(", ")
        );
    };
    if key.secret {
        bail!(
            "`{path}` is a secret and cannot be compared (it would be printed); set it in the file or the environment"
        );
    }
    let value = if key.text {
        figment::value::Value::from(raw.to_owned())
    } else {
        raw.parse::<figment::value::Value>()
            .unwrap_or_else(|_| figment::value::Value::from(raw.to_owned()))
    };
    let mut compared: Config = Figment::from(Serialized::defaults(config))
        .merge(Serialized::default(key.path, value))
        .extract()
        .map_err(|error| {
            anyhow::anyhow!(
                "`{path}` = {raw:?}: {}; expected {}",
                error.kind,
                key.expected
            )
        })?;
    // Secrets serialise as "set": take them back from the original.
    compared.github.token.clone_from(&config.github.token);
    compared
        .github
        .app_private_key
        .clone_from(&config.github.app_private_key);
    compared
        .store
        .database_url
        .clone_from(&config.store.database_url);
    compared.source_file.clone_from(&config.source_file);
    compared.check_sandbox(|name| std::env::var(name).ok())?;
    Ok(compared)
}

/// Every `[repositories."NAME"]` is `OWNER/REPO` (once, whatever the case),
/// and its build commands can be given to a shell.
fn check_repositories(
    path: &Path,
    text: &str,
    repositories: &BTreeMap<String, RepositoryConfig>,
) -> anyhow::Result<()> {
    let line_of = |name: &str| {
        text.lines()
            .position(|line| line.trim_start().starts_with('[') && line.contains(name))
            .map_or(0, |index| index + 1)
    };
    let mut seen = std::collections::BTreeSet::new();
    for (name, repository) in repositories {
        let line = line_of(name);
        if let Err(error) = review_github::RepositoryName::parse(name) {
            bail!(
                "{}:{line}: `repositories.{name:?}`: {error}; name one repository as [repositories.\"OWNER/REPO\".build], such as [repositories.\"octo/widgets\".build]",
                path.display()
            );
        }
        if !seen.insert(name.to_ascii_lowercase()) {
            bail!(
                "{}:{line}: `repositories.{name:?}`: the repository is configured twice (names are matched without regard to case); merge the two tables",
                path.display()
            );
        }
        let Some(build) = &repository.build else {
            continue;
        };
        let commands = build.setup.iter().chain(&build.build).chain(&build.test);
        if commands.clone().any(|command| command.contains('\0')) {
            bail!(
                "{}: `repositories.{name:?}.build`: a command contains a NUL character; remove it",
                path.display()
            );
        }
        if let Some(variable) = build.environment.keys().find(|variable| {
            let mut characters = variable.chars();
            !(characters
                .next()
                .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
                && characters
                    .all(|character| character.is_ascii_alphanumeric() || character == '_'))
        }) {
            bail!(
                "{}: `repositories.{name:?}.build.environment`: {variable:?} is not an environment variable name; use letters, digits and underscores, not starting with a digit",
                path.display()
            );
        }
    }
    Ok(())
}

/// A `REVIEW_BOT_<TABLE>_…` variable that is no key is a typo: say so
/// rather than ignore it.
fn check_unknown_variables(names: impl Iterator<Item = String>) -> anyhow::Result<()> {
    const TABLES: &[&str] = &[
        "GITHUB", "AGENT", "STORE", "REVIEW", "GIT", "DAEMON", "SANDBOX",
    ];
    for name in names {
        let Some(rest) = name.strip_prefix(ENV_PREFIX) else {
            continue;
        };
        let Some(table) = TABLES.iter().find(|table| {
            rest.strip_prefix(*table)
                .is_some_and(|r| r.starts_with('_'))
        }) else {
            continue;
        };
        let known = KEYS.iter().any(|key| key.variables().contains(&name));
        if known || OTHER_VARIABLES.contains(&name.as_str()) {
            continue;
        }
        let prefix = format!("{}.", table.to_ascii_lowercase());
        let valid: Vec<String> = KEYS
            .iter()
            .filter(|key| key.path.starts_with(&prefix))
            .map(Key::variable)
            .collect();
        bail!(
            "the environment variable {name} is not a configuration key; unset it, or use one of: {}",
            valid.join(", ")
        );
    }
    Ok(())
}

/// A figment error (from the environment: the file was checked already) as
/// "VARIABLE: `key`: what is wrong; expected FORM".
fn describe_environment_error(error: figment::Error) -> String {
    error
        .into_iter()
        .map(|error| {
            let path = error.path.join(".");
            let known = KEYS.iter().find(|key| key.path == path);
            let variable = known
                .and_then(|key| {
                    key.variables()
                        .into_iter()
                        .rev()
                        .find(|name| std::env::var_os(name).is_some())
                })
                .unwrap_or_else(|| "the environment".to_owned());
            let expected =
                known.map_or(String::new(), |key| format!("; expected {}", key.expected));
            format!("{variable}: `{path}`: {}{expected}", error.kind)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A `toml` error as "`FILE:LINE`: `key`: what is wrong; expected FORM", with the line quoted.
fn describe_file_error(path: &Path, text: &str, error: &toml::de::Error) -> String {
    let Some(span) = error.span() else {
        return format!("{}: {}", path.display(), error.message().trim_end());
    };
    let start = span.start.min(text.len());
    let line_number = text[..start].matches('\n').count() + 1;
    let line_text = text.lines().nth(line_number - 1).unwrap_or("").trim();
    let dotted = key_path_at(text, line_number);
    // toml names the choices for an unknown key or variant itself.
    let expected = KEYS
        .iter()
        .find(|key| key.path == dotted && !error.message().contains("unknown"))
        .map_or(String::new(), |key| format!("; expected {}", key.expected));
    format!(
        "{}:{line_number}: `{dotted}`: {}{expected}\n    {line_text}\n(review-bot.example.toml \
         lists every key with its default)",
        path.display(),
        error.message().trim_end(),
    )
}

/// The dotted key on 1-based line `line` of a TOML text: the table header
/// above it plus the key before `=` (or the header itself).
fn key_path_at(text: &str, line: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let Some(current) = lines.get(line - 1).map(|line| line.trim()) else {
        return String::new();
    };
    if let Some(header) = table_header(current) {
        return header.to_owned();
    }
    let name = current
        .split('=')
        .next()
        .unwrap_or("")
        .trim()
        .trim_matches('"');
    let table = lines[..line - 1]
        .iter()
        .rev()
        .find_map(|line| table_header(line.trim()));
    match table {
        Some(table) => format!("{table}.{name}"),
        None => name.to_owned(),
    }
}

/// `[name]` → `name`.
fn table_header(line: &str) -> Option<&str> {
    let inner = line.strip_prefix('[')?;
    let end = inner.find(']')?;
    Some(inner[..end].trim())
}

/// The 1-based line where `dotted` is set in the file, if it is.
fn key_line(text: &str, dotted: &str) -> Option<usize> {
    (1..=text.lines().count()).find(|&line| {
        let current = text.lines().nth(line - 1).unwrap_or("").trim();
        !current.starts_with('#')
            && table_header(current).is_none()
            && current.contains('=')
            && key_path_at(text, line) == dotted
    })
}

/// A value for display: secrets as set/unset, a database URL without its password.
pub fn display_value(config: &Config, key: &Key) -> String {
    if key.path == "store.database_url" {
        return match config.database_url() {
            Ok(url) => redact_url(&url),
            Err(_) => "(no default location)".to_owned(),
        };
    }
    if key.path == "work_dir" {
        return match config.work_dir() {
            Ok(path) => format!("{:?}", path.display().to_string()),
            Err(_) => "(no default location)".to_owned(),
        };
    }
    let value = toml::Value::try_from(config).ok();
    let mut current = value.as_ref();
    for part in key.path.split('.') {
        current = current.and_then(|value| value.get(part));
    }
    match current {
        None if key.secret => "unset".to_owned(),
        None => "(none)".to_owned(),
        Some(toml::Value::String(text)) if key.secret => text.clone(),
        Some(value) => value.to_string(),
    }
}

/// `scheme://user:password@host/…` → `scheme://user:***@host/…`.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let Some((credentials, host)) = authority.rsplit_once('@') else {
        return url.to_owned();
    };
    let user = credentials.split(':').next().unwrap_or("");
    let masked = if credentials.contains(':') {
        format!("{user}:***")
    } else {
        user.to_owned()
    };
    format!("{scheme}://{masked}@{host}{}", &rest[authority_end..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serialised(config: &Config) -> toml::Value {
        toml::Value::try_from(config).unwrap()
    }

    #[test]
    fn the_example_file_parses_and_equals_the_defaults() {
        let example = include_str!("../../../review-bot.example.toml");
        let parsed: Config = toml::from_str(example).unwrap();
        assert_eq!(serialised(&parsed), serialised(&Config::default()));
    }

    #[test]
    fn the_example_file_mentions_every_key() {
        let example = include_str!("../../../review-bot.example.toml");
        for key in KEYS {
            let name = key.path.rsplit('.').next().unwrap();
            assert!(
                example.contains(&format!("{name} =")),
                "{} is missing from review-bot.example.toml",
                key.path
            );
        }
    }

    #[test]
    fn every_key_is_a_field_and_every_field_a_key() {
        let mut config = Config {
            work_dir: Some(PathBuf::from("/w")),
            ..Config::default()
        };
        config.github.token = Some(SecretString::from("t"));
        config.github.app_id = Some(1);
        config.github.app_private_key = Some(SecretString::from("k"));
        config.github.app_private_key_file = Some(PathBuf::from("/k"));
        config.github.app_installation_id = Some(2);
        config.agent.max_budget_usd = Some(1.0);
        config.agent.config_dir = Some(PathBuf::from("/c"));
        config.agent.home_dir = Some(PathBuf::from("/h"));
        config.agent.prompts_dir = Some(PathBuf::from("/p"));
        config.agent.max_model_requests = Some(100);
        config.github.bot_login = Some("octo-reviewer".to_owned());
        config.store.database_url = Some("sqlite:///x".to_owned());
        config.daemon.repositories = vec!["octo/widgets".to_owned()];
        let value = serialised(&config);
        let mut fields = Vec::new();
        for (name, value) in value.as_table().unwrap() {
            match value.as_table() {
                Some(table) => fields.extend(table.keys().map(|key| format!("{name}.{key}"))),
                None => fields.push(name.clone()),
            }
        }
        let mut keys: Vec<String> = KEYS.iter().map(|key| key.path.to_owned()).collect();
        fields.sort();
        keys.sort();
        assert_eq!(fields, keys);
    }

    #[test]
    fn the_mcp_tool_timeout_default_is_review_agents() {
        let server = review_agent::claude::McpServerCommand::review_bot(
            "review-bot",
            Vec::new(),
            BTreeMap::default(),
        );
        assert_eq!(
            review_agent::claude::McpConfig::review(server).tool_timeout(),
            std::time::Duration::from_secs(DEFAULT_MCP_TOOL_TIMEOUT_SECS)
        );
    }

    #[test]
    fn variables_follow_the_table_key_rule_and_keep_todays_names() {
        let variable = |path: &str| KEYS.iter().find(|key| key.path == path).unwrap().variable();
        assert_eq!(
            variable("agent.claude_path"),
            "REVIEW_BOT_AGENT_CLAUDE_PATH"
        );
        assert_eq!(variable("work_dir"), "REVIEW_BOT_WORK_DIR");
        assert_eq!(variable("github.token"), review_github::TOKEN_VARIABLE);
        assert_eq!(variable("github.api_url"), review_github::API_URL_VARIABLE);
        assert_eq!(variable("github.app_id"), review_github::APP_ID_VARIABLE);
        assert_eq!(
            variable("github.app_private_key"),
            review_github::APP_PRIVATE_KEY_VARIABLE
        );
        assert_eq!(
            variable("github.app_private_key_file"),
            review_github::APP_PRIVATE_KEY_FILE_VARIABLE
        );
        assert_eq!(
            variable("github.app_installation_id"),
            review_github::APP_INSTALLATION_ID_VARIABLE
        );
        assert_eq!(
            variable("github.write_spacing_ms"),
            review_github::WRITE_SPACING_VARIABLE
        );
    }

    #[test]
    fn a_bad_value_names_the_file_line_key_and_form() {
        let text = "[agent]\nmodel = \"m\"\nmax_turns = \"many\"\n";
        let error = toml::from_str::<Config>(text).unwrap_err();
        let message = describe_file_error(Path::new("r.toml"), text, &error);
        assert!(
            message.starts_with("r.toml:3: `agent.max_turns`: invalid type"),
            "{message}"
        );
        assert!(message.contains("expected a whole number"), "{message}");
    }

    #[test]
    fn a_compared_setting_changes_one_key_and_refuses_mistakes() {
        let config = Config {
            github: GithubConfig {
                token: Some(SecretString::from("ghp_kept".to_owned())),
                ..GithubConfig::default()
            },
            ..Config::default()
        };
        let compared = with_setting(&config, "review.verify=true").unwrap();
        assert!(compared.review.verify && !config.review.verify);
        let mut expected = serialised(&config);
        expected["review"]["verify"] = toml::Value::Boolean(true);
        assert_eq!(serialised(&compared), expected);
        assert_eq!(
            secrecy::ExposeSecret::expose_secret(compared.github.token.as_ref().unwrap()),
            "ghp_kept"
        );
        let compared = with_setting(&config, "agent.model=7").unwrap();
        assert_eq!(compared.agent.model, "7", "a text key takes the text");
        let error = with_setting(&config, "review.verfy=true")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("`review.verfy` is not a configuration key"),
            "{error}"
        );
        assert!(error.contains("review.verify"), "{error}");
        let error = with_setting(&config, "review.min_confidence=lots")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("expected a whole number from 0 to 100"),
            "{error}"
        );
        let error = with_setting(&config, "review.verify")
            .unwrap_err()
            .to_string();
        assert!(error.contains("SETTING=VALUE"), "{error}");
        let error = with_setting(&config, "github.token=x")
            .unwrap_err()
            .to_string();
        assert!(error.contains("secret"), "{error}");
    }

    fn load_text(text: &str) -> anyhow::Result<Loaded> {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("review-bot.toml");
        std::fs::write(&path, text).unwrap();
        load(Some(&path))
    }

    #[test]
    fn a_repository_build_table_is_read() {
        let loaded = load_text(
            "[repositories.\"octo/widgets\".build]\nsetup = [\"npm ci\"]\ntest = [\"npm test\"]\n\
             environment = { NODE_ENV = \"test\" }\n\n[repositories.\"octo/empty\"]\n",
        )
        .unwrap();
        let build = loaded.config.repositories["octo/widgets"]
            .build
            .as_ref()
            .unwrap()
            .command_set();
        assert_eq!(build.setup, ["npm ci"]);
        assert!(build.build.is_empty());
        assert_eq!(build.test, ["npm test"]);
        assert_eq!(build.environment["NODE_ENV"], "test");
        assert_eq!(loaded.config.repositories["octo/empty"].build, None);
    }

    #[test]
    fn an_unknown_key_in_a_repository_table_names_the_repository_and_key() {
        let error =
            load_text("[repositories.\"octo/widgets\".build]\ntest = [\"x\"]\ntset = [\"y\"]\n")
                .unwrap_err()
                .to_string();
        assert!(error.contains(":3:"), "{error}");
        assert!(error.contains("octo/widgets"), "{error}");
        assert!(error.contains("tset"), "{error}");
        let error = load_text("[repositories.\"octo/widgets\"]\nbiuld = { test = [\"x\"] }\n")
            .unwrap_err()
            .to_string();
        assert!(error.contains("biuld"), "{error}");
        let error = load_text("[repositories.\"octo/widgets\".build]\ntest = \"make test\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(":2:") && error.contains("invalid type"),
            "{error}"
        );
    }

    #[test]
    fn a_repository_name_that_is_not_owner_slash_repo_is_an_error() {
        for name in [
            "widgets",
            "octo/widgets/extra",
            "octo/",
            "../x",
            "octo/wid gets",
        ] {
            let error = load_text(&format!("[repositories.{name:?}.build]\ntest = [\"x\"]\n"))
                .unwrap_err()
                .to_string();
            assert!(error.contains(":1:"), "{name}: {error}");
            assert!(error.contains("OWNER/REPO"), "{name}: {error}");
        }
        let error = load_text(
            "[repositories.\"octo/widgets\".build]\ntest = [\"x\"]\n[repositories.\"Octo/Widgets\".build]\n",
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("configured twice"), "{error}");
        let error =
            load_text("[repositories.\"octo/widgets\".build]\nenvironment = { \"A-B\" = \"x\" }\n")
                .unwrap_err()
                .to_string();
        assert!(
            error.contains("\"A-B\" is not an environment variable name"),
            "{error}"
        );
    }

    #[test]
    fn sandbox_keys_refuse_credentials_and_bad_paths_and_say_what_to_do() {
        let token = "ghp_0123456789abcdef";
        let environment = |name: &str| match name {
            "LEAKY" => Some(format!("https://x-access-token:{token}@github.com")),
            "JAVA_TOOL_OPTIONS" => Some("-Xmx1g".to_owned()),
            _ => None,
        };
        let check = |sandbox: &SandboxConfig| {
            let mut config = Config::default();
            config.github.token = Some(SecretString::from(token));
            config.sandbox = sandbox.clone();
            config
                .check_sandbox(environment)
                .map_err(|error| format!("{error:#}"))
        };
        let existing = tempfile::tempdir().unwrap();
        let mut good = SandboxConfig {
            readable_paths: vec![existing.path().to_owned()],
            pass_environment: vec!["JAVA_TOOL_OPTIONS".to_owned(), "UNSET_HERE".to_owned()],
            ..SandboxConfig::default()
        };
        good.environment
            .insert("GOFLAGS".to_owned(), "-mod=mod".to_owned());
        check(&good).unwrap();

        let refused = |change: &dyn Fn(&mut SandboxConfig), expected: &str| {
            let mut sandbox = good.clone();
            change(&mut sandbox);
            let error = check(&sandbox).unwrap_err();
            assert!(error.contains(expected), "{error}");
            assert!(!error.contains(token), "{error}");
        };
        refused(
            &|sandbox| {
                sandbox.pass_environment.push("GITHUB_TOKEN".to_owned());
            },
            "`GITHUB_TOKEN` is a credential",
        );
        refused(
            &|sandbox| {
                sandbox
                    .pass_environment
                    .push("REVIEW_BOT_GITHUB_TOKEN".to_owned());
            },
            "is a credential",
        );
        refused(
            &|sandbox| {
                sandbox.pass_environment.push("LEAKY".to_owned());
            },
            "`LEAKY` holds the bot's GitHub token",
        );
        refused(
            &|sandbox| {
                sandbox.pass_environment.push("A B".to_owned());
            },
            "is not a variable name",
        );
        refused(
            &|sandbox| {
                sandbox
                    .environment
                    .insert("NPM_TOKEN".to_owned(), format!("{token}!"));
            },
            "the value of `NPM_TOKEN` contains",
        );
        refused(
            &|sandbox| {
                sandbox
                    .environment
                    .insert("HOME".to_owned(), "/root".to_owned());
            },
            "set by the build gate",
        );
        refused(
            &|sandbox| {
                sandbox.readable_paths.push(PathBuf::from("opt/tools"));
            },
            "`opt/tools` is not an absolute path",
        );
        refused(
            &|sandbox| {
                sandbox.readable_paths.push(existing.path().join("missing"));
            },
            "does not exist",
        );
        refused(
            &|sandbox| {
                sandbox.readable_paths.push(PathBuf::from("/"));
            },
            "the whole machine",
        );
    }

    #[test]
    fn an_unknown_sandbox_variable_is_an_error_naming_the_known_ones() {
        let error =
            check_unknown_variables(["REVIEW_BOT_SANDBOX_READABLE_PATH".to_owned()].into_iter())
                .unwrap_err()
                .to_string();
        assert!(
            error.contains("REVIEW_BOT_SANDBOX_READABLE_PATH is not a configuration key"),
            "{error}"
        );
        assert!(
            error.contains("REVIEW_BOT_SANDBOX_READABLE_PATHS"),
            "{error}"
        );
        check_unknown_variables(
            [
                "REVIEW_BOT_SANDBOX_PASS_ENVIRONMENT".to_owned(),
                "REVIEW_BOT_SANDBOX_ENVIRONMENT".to_owned(),
            ]
            .into_iter(),
        )
        .unwrap();
    }

    #[test]
    fn the_build_gate_gets_the_caches_and_the_variables() {
        let mut config = Config {
            work_dir: Some(PathBuf::from("/work")),
            ..Config::default()
        };
        config
            .sandbox
            .environment
            .insert("GOFLAGS".to_owned(), "-mod=mod".to_owned());
        config.sandbox.pass_environment = vec!["PATH".to_owned()];
        let settings = config.build_gate_settings(
            review_pipeline::build_gate::BuildGateSettings::new(std::time::Duration::from_secs(1)),
        );
        assert_eq!(settings.caches, Some(PathBuf::from("/work/caches")));
        assert!(!settings.shared_home);
        assert_eq!(
            settings.environment,
            [
                ("PATH".to_owned(), std::env::var_os("PATH").unwrap()),
                ("GOFLAGS".to_owned(), "-mod=mod".into())
            ]
        );
        config.sandbox.dependency_caches = false;
        let settings = config.build_gate_settings(
            review_pipeline::build_gate::BuildGateSettings::new(std::time::Duration::from_secs(1)),
        );
        assert_eq!(settings.caches, None);
    }

    #[test]
    fn cost_caps_are_read_overall_and_per_repository_and_checked() {
        let loaded = load_text(
            "[agent]\nmax_cost_per_pr_usd = 20.0\nmax_cost_per_day_usd = 200\n\n\
             [repositories.\"Octo/Widgets\".agent]\nmax_cost_per_pr_usd = 5.5\n\
             max_cost_per_day_usd = 50.0\n",
        )
        .unwrap();
        let caps = loaded.config.cost_caps();
        let widgets = caps.for_repository("octo/widgets");
        assert!((widgets.pull_request_usd - 5.5).abs() < f64::EPSILON);
        assert!((widgets.repository_day_usd - 50.0).abs() < f64::EPSILON);
        assert!((widgets.overall_day_usd - 200.0).abs() < f64::EPSILON);
        let other = caps.for_repository("octo/gadgets");
        assert!((other.pull_request_usd - 20.0).abs() < f64::EPSILON);
        assert!(other.repository_day_usd.abs() < f64::EPSILON);

        let error = load_text("[agent]\nmax_cost_per_day_usd = -1.0\n").unwrap_err();
        assert!(
            error
                .to_string()
                .contains("`agent.max_cost_per_day_usd` is -1"),
            "{error:#}"
        );
        let error = load_text("[repositories.\"octo/widgets\".agent]\nmax_cost_per_pr_usd = nan\n")
            .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("`repositories.\"octo/widgets\".agent.max_cost_per_pr_usd` is NaN"),
            "{error:#}"
        );
        let error =
            load_text("[repositories.\"octo/widgets\".agent]\nmax_budget_usd = 1.0\n").unwrap_err();
        assert!(error.to_string().contains("max_budget_usd"), "{error:#}");
    }

    #[test]
    fn passwords_are_redacted_from_urls() {
        assert_eq!(
            redact_url("postgres://bot:hunter2@db/review"),
            "postgres://bot:***@db/review"
        );
        assert_eq!(redact_url("sqlite:///var/x.db"), "sqlite:///var/x.db");
    }
}
