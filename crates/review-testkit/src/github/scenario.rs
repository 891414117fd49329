//! The test-facing handles: start a simulator, build scenarios in a few lines (users and
//! tokens, repositories with files, branches with commits, pull requests with changes,
//! labels, comments and reviews by other users, check runs and statuses, apps and
//! installations), inject faults, and read back what clients did.
//!
//! All repository content goes through the real git CLI. Actions other users take (a
//! comment, a review, a reply) go through the same handlers and rules as the HTTP API, so a
//! scenario can never hold something GitHub would not.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::http::HeaderMap;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::api::{Actor, Context};
use super::auth;
use super::faults::FaultRule;
use super::git::{GitRepository, Signature, TreeChange};
use super::log::{RequestCounters, RequestRecord};
use super::model::{
    AccountKind, App, CheckRun, CommitStatus, Installation, IssueComment, Label, PullRequest,
    Repository, RepositorySelection, Review, ReviewComment,
};
use super::rate::{Budget, RateLimitSnapshot, Resource};
use super::render;
use super::routes::OPERATIONS;
use super::server::{self, ServerHandle, Shared};
use super::state::{SimState, Token, TokenSubject};
use super::{SimError, SimOptions};

/// Owns the server and the repositories' directory; dropped with the last handle.
#[derive(Debug)]
struct Inner {
    // Field order matters: the server stops before the directory is deleted.
    _server: ServerHandle,
    shared: Arc<Shared>,
    api_url: String,
    _root: tempfile::TempDir,
}

/// A running GitHub simulator. Cheap to clone; the server stops when the last clone (and
/// every handle made from it) is dropped.
#[derive(Debug, Clone)]
pub struct GithubSim {
    inner: Arc<Inner>,
}

/// A user account and its first personal access token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimUser {
    /// The login.
    pub login: String,
    /// GitHub's numeric id.
    pub id: u64,
    /// A personal access token (`ghp_…`) that authenticates as this user.
    pub token: String,
}

/// A GitHub App registered in the simulator.
#[derive(Debug, Clone)]
pub struct SimApp {
    /// The app id (the JWT's `iss`).
    pub id: u64,
    /// The app's slug; its bot account is `{slug}[bot]`.
    pub slug: String,
    /// The app's client id (also accepted as `iss`).
    pub client_id: String,
    /// The app's private key, PKCS#8 PEM, for signing RS256 JWTs.
    pub private_key_pem: String,
}

fn lock(sim: &GithubSim) -> std::sync::MutexGuard<'_, SimState> {
    sim.inner.shared.lock()
}

fn default_signature(login: &str, date: Option<DateTime<Utc>>) -> Signature {
    Signature {
        name: login.to_owned(),
        email: render::commit_email(login),
        date: date.unwrap_or_else(Utc::now),
    }
}

impl GithubSim {
    /// Starts a simulator with GitHub.com's limits on `127.0.0.1:0`.
    pub fn start() -> Result<Self, SimError> {
        Self::start_with(SimOptions::default())
    }

    /// Starts a simulator with custom limits on `127.0.0.1:0`.
    pub fn start_with(options: SimOptions) -> Result<Self, SimError> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), options)
    }

    /// Starts a simulator on a given address.
    pub fn start_on(address: SocketAddr, options: SimOptions) -> Result<Self, SimError> {
        let root = tempfile::Builder::new()
            .prefix("github-sim-")
            .tempdir()
            .map_err(|source| SimError::Io {
                path: std::env::temp_dir(),
                source,
            })?;
        let listener = server::bind(address)?;
        let local = listener
            .local_addr()
            .map_err(|source| SimError::Bind { address, source })?;
        let api_url = format!("http://{local}");
        let state = SimState::new(options, api_url.clone(), root.path().to_owned());
        let shared = Arc::new(Shared::new(state));
        let server = server::spawn(listener, shared.clone())?;
        Ok(Self {
            inner: Arc::new(Inner {
                _server: server,
                shared,
                api_url,
                _root: root,
            }),
        })
    }

    /// The REST API's base URL (`http://127.0.0.1:PORT`, no trailing slash).
    pub fn api_url(&self) -> &str {
        &self.inner.api_url
    }

    /// The HTTP clone URL of a repository (`http://127.0.0.1:PORT/owner/name.git`).
    pub fn clone_url(&self, full_name: &str) -> String {
        format!("{}/{full_name}.git", self.inner.api_url)
    }

    /// The user `login` (created on first use) with its first personal access token.
    pub fn user(&self, login: &str) -> SimUser {
        let mut state = lock(self);
        let account = state.ensure_account(login, AccountKind::User);
        let existing = state
            .tokens
            .iter()
            .filter(|(_, token)| token.subject == TokenSubject::User(account.login.clone()))
            .map(|(secret, _)| secret.clone())
            .min_by_key(|secret| state.token_order.get(secret).copied().unwrap_or(u64::MAX));
        let token = existing.unwrap_or_else(|| issue_token(&mut state, &account.login));
        SimUser {
            login: account.login,
            id: account.id,
            token,
        }
    }

    /// Issues another personal access token for `login` (each token has its own budget).
    pub fn new_token(&self, login: &str) -> String {
        let mut state = lock(self);
        let account = state.ensure_account(login, AccountKind::User);
        issue_token(&mut state, &account.login)
    }

    /// Revokes a token (as its owner or an administrator does on GitHub): every request
    /// carrying it, API or git, answers 401 `Bad credentials` until
    /// [`GithubSim::reinstate_token`].
    pub fn revoke_token(&self, token: &str) -> Result<(), SimError> {
        let mut state = lock(self);
        let revoked = state
            .tokens
            .remove(token)
            .ok_or_else(|| SimError::Scenario("no such token to revoke".to_owned()))?;
        state.revoked_tokens.insert(token.to_owned(), revoked);
        Ok(())
    }

    /// Makes a token [`GithubSim::revoke_token`] revoked work again, with its budget. GitHub
    /// never revives a token; this stands for access being restored to a client that reads
    /// its token once (a daemon), without restarting it.
    pub fn reinstate_token(&self, token: &str) -> Result<(), SimError> {
        let mut state = lock(self);
        let revoked = state
            .revoked_tokens
            .remove(token)
            .ok_or_else(|| SimError::Scenario("no such revoked token".to_owned()))?;
        state.tokens.insert(token.to_owned(), revoked);
        Ok(())
    }

    /// Mints an installation access token for an installation, as
    /// `apps/create-installation-access-token` does (all its repositories, the configured
    /// lifetime — an hour by default), without an app JWT: for callers that cannot sign one,
    /// such as a person driving `github-sim` with `curl`.
    pub fn installation_token(&self, installation_id: u64) -> Result<String, SimError> {
        let mut state = lock(self);
        if !state.installations.contains_key(&installation_id) {
            return Err(SimError::Scenario(format!(
                "no installation {installation_id}"
            )));
        }
        let lifetime = chrono::Duration::from_std(state.options.installation_token_lifetime)
            .unwrap_or_else(|_| chrono::Duration::hours(1));
        let secret = format!("ghs_{}", uuid::Uuid::new_v4().simple());
        state.tokens.insert(
            secret.clone(),
            Token {
                subject: TokenSubject::Installation(installation_id),
                expires_at: Some(Utc::now() + lifetime),
                repositories: None,
            },
        );
        Ok(secret)
    }

    /// Starts building a repository `owner/name`.
    pub fn repo(&self, full_name: &str) -> RepoBuilder {
        RepoBuilder {
            sim: self.clone(),
            full_name: full_name.to_owned(),
            default_branch: "main".to_owned(),
            private: false,
            files: Vec::new(),
            labels: Vec::new(),
        }
    }

    /// A handle on an existing repository.
    pub fn repository(&self, full_name: &str) -> Result<RepoHandle, SimError> {
        let (owner, name) = split_full_name(full_name)?;
        let state = lock(self);
        let repository = state
            .repository(owner, name)
            .ok_or_else(|| SimError::Scenario(format!("no repository {full_name}")))?;
        Ok(RepoHandle {
            sim: self.clone(),
            owner: repository.owner.clone(),
            name: repository.name.clone(),
        })
    }

    /// Serves a copy of an existing local git repository (every branch and tag) as
    /// `owner/name`. Its default branch is `default_branch`.
    pub fn import_repo(
        &self,
        full_name: &str,
        source: &Path,
        default_branch: &str,
    ) -> Result<RepoHandle, SimError> {
        let (owner, name) = split_full_name(full_name)?;
        let dir = {
            let state = lock(self);
            if state.repository(owner, name).is_some() {
                return Err(SimError::Scenario(format!(
                    "repository {full_name} already exists"
                )));
            }
            state.git_dir(owner, name)
        };
        GitRepository::init_bare(&dir, default_branch)?;
        let mut command = super::git::isolated_git_command();
        command
            .arg("--git-dir")
            .arg(&dir)
            .arg("fetch")
            .arg("--quiet")
            .arg("--no-tags")
            .arg(source)
            .arg("+refs/heads/*:refs/heads/*")
            .arg("+refs/tags/*:refs/tags/*");
        let output = command.output().map_err(|source| SimError::GitSpawn {
            command: format!("{command:?}"),
            source,
        })?;
        if !output.status.success() {
            return Err(SimError::Git {
                command: format!("{command:?}"),
                status: output.status.to_string(),
                stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
            });
        }
        let repository = GitRepository::open(&dir);
        if repository.branch_sha(default_branch)?.is_none() {
            return Err(SimError::Scenario(format!(
                "{} has no branch {default_branch:?}",
                source.display()
            )));
        }
        Ok(register_repository(
            self,
            owner,
            name,
            default_branch,
            false,
            &[],
        ))
    }

    /// Registers a GitHub App with a fresh RSA key pair.
    pub fn create_app(&self, slug: &str) -> Result<SimApp, SimError> {
        let key = auth::generate_app_key()?;
        let mut state = lock(self);
        let id = state.next_id();
        let client_id = format!("Iv23li{id:014}");
        state.ensure_account(&format!("{slug}[bot]"), AccountKind::Bot);
        state.apps.insert(
            id,
            App {
                id,
                slug: slug.to_owned(),
                client_id: client_id.clone(),
                public_modulus: key.modulus,
                public_exponent: key.exponent,
            },
        );
        Ok(SimApp {
            id,
            slug: slug.to_owned(),
            client_id,
            private_key_pem: key.private_key_pem,
        })
    }

    /// Installs an app on an account (all its repositories, or selected ones); returns the
    /// installation id.
    pub fn install_app(
        &self,
        app: &SimApp,
        account: &str,
        selection: RepositorySelection,
    ) -> Result<u64, SimError> {
        let mut state = lock(self);
        if !state.apps.contains_key(&app.id) {
            return Err(SimError::Scenario(format!("no app {}", app.id)));
        }
        state.ensure_account(account, AccountKind::Organization);
        let id = state.next_id();
        state.installations.insert(
            id,
            Installation {
                id,
                app_id: app.id,
                account: account.to_owned(),
                selection,
                created_at: Utc::now(),
                suspended_at: None,
            },
        );
        Ok(id)
    }

    /// Makes every installation token issued so far expire now (the next request with one
    /// answers 401, exercising a client's refresh).
    pub fn expire_installation_tokens(&self) {
        let now = Utc::now();
        let mut state = lock(self);
        for token in state.tokens.values_mut() {
            if matches!(token.subject, TokenSubject::Installation(_)) {
                token.expires_at = Some(now);
            }
        }
    }

    /// Removes an installation (the App is uninstalled from that account): its tokens stop
    /// working (401) and minting one answers 404. Installing the App again gives a new id.
    pub fn uninstall_app(&self, installation_id: u64) -> Result<(), SimError> {
        let mut state = lock(self);
        if state.installations.remove(&installation_id).is_none() {
            return Err(SimError::Scenario(format!(
                "no installation {installation_id}"
            )));
        }
        state
            .tokens
            .retain(|_, token| token.subject != TokenSubject::Installation(installation_id));
        Ok(())
    }

    /// Suspends (or, with `false`, unsuspends) an installation: while suspended, its tokens
    /// are refused and minting one answers 403 "This installation has been suspended".
    pub fn suspend_installation(
        &self,
        installation_id: u64,
        suspended: bool,
    ) -> Result<(), SimError> {
        let mut state = lock(self);
        let installation = state
            .installations
            .get_mut(&installation_id)
            .ok_or_else(|| SimError::Scenario(format!("no installation {installation_id}")))?;
        installation.suspended_at = suspended.then(Utc::now);
        if suspended {
            state
                .tokens
                .retain(|_, token| token.subject != TokenSubject::Installation(installation_id));
        }
        Ok(())
    }

    /// Hides new reviews, review comments and issue comments from the list endpoints for
    /// `lag` after their creation (GitHub's lists can lag behind a write it acknowledged).
    pub fn set_list_lag(&self, lag: std::time::Duration) {
        lock(self).options.list_lag = lag;
    }

    /// The most API requests the simulator ever served at the same time.
    pub fn peak_concurrent_requests(&self) -> usize {
        self.inner.shared.peak_concurrency()
    }

    /// Sets the primary limit of the budget a token spends (for an installation token, the
    /// installation's budget). Takes effect for the current window.
    pub fn set_primary_limit(&self, token: &str, limit: u64) -> Result<(), SimError> {
        let mut state = lock(self);
        let key = budget_key_of(&state, token)?;
        state.limit_overrides.insert(key.clone(), limit);
        if let Some(budget) = state.budgets.get_mut(&key) {
            budget.core.limit = limit;
        }
        Ok(())
    }

    /// The primary (`core`) budget a token spends, as the headers would report it now.
    pub fn rate_limit(&self, token: &str) -> Result<RateLimitSnapshot, SimError> {
        self.budget_snapshot(token, Resource::Core)
    }

    /// The search budget a token spends.
    pub fn search_rate_limit(&self, token: &str) -> Result<RateLimitSnapshot, SimError> {
        self.budget_snapshot(token, Resource::Search)
    }

    fn budget_snapshot(
        &self,
        token: &str,
        resource: Resource,
    ) -> Result<RateLimitSnapshot, SimError> {
        let now = Utc::now();
        let mut state = lock(self);
        let key = budget_key_of(&state, token)?;
        let limit = state.core_limit_for(&key);
        let options = state.options.clone();
        let budget = state
            .budgets
            .entry(key)
            .or_insert_with(|| Budget::new(limit, &options, now));
        Ok(budget.window(resource, now).snapshot())
    }

    /// Adds a fault rule (rules are tried in the order added; each answers `times` requests).
    pub fn inject(&self, rule: FaultRule) {
        lock(self).faults.push(rule);
    }

    /// Removes every pending fault rule.
    pub fn clear_faults(&self) {
        lock(self).faults.clear();
    }

    /// Every request answered so far, in order.
    pub fn requests(&self) -> Vec<RequestRecord> {
        lock(self).log.clone()
    }

    /// The requests to one operation (`pulls/create-review`, `git/receive-pack`…).
    pub fn requests_for(&self, operation_id: &str) -> Vec<RequestRecord> {
        lock(self)
            .log
            .iter()
            .filter(|record| record.operation_id.as_deref() == Some(operation_id))
            .cloned()
            .collect()
    }

    /// Totals over the request log: requests and budget spent, per operation and status.
    pub fn counters(&self) -> RequestCounters {
        RequestCounters::from_log(&lock(self).log)
    }

    /// Forgets the request log (counters restart).
    pub fn clear_requests(&self) {
        lock(self).log.clear();
    }

    /// Every request-body schema violation seen so far, as `"{operation}: {violation}"`.
    /// Client tests assert this is empty: every client test doubles as a conformance check.
    pub fn request_schema_violations(&self) -> Vec<String> {
        lock(self)
            .log
            .iter()
            .flat_map(|record| {
                let operation = record.operation_id.clone().unwrap_or_default();
                record
                    .schema_violations
                    .iter()
                    .map(move |violation| format!("{operation}: {violation}"))
            })
            .collect()
    }

    /// Runs an operation's handler in-process on behalf of `login` (no HTTP, no log, no
    /// budget): the scenario helpers use it so other users' actions obey GitHub's rules.
    fn invoke(
        &self,
        operation_id: &str,
        login: &str,
        params: &[(&str, String)],
        body: Option<Value>,
    ) -> Result<Value, SimError> {
        let operation = OPERATIONS
            .iter()
            .find(|operation| operation.id == operation_id)
            .ok_or_else(|| SimError::Scenario(format!("no operation {operation_id}")))?;
        let mut path_params = HashMap::new();
        for segment in operation.template.split('/') {
            if let Some(name) = segment
                .strip_prefix('{')
                .and_then(|rest| rest.strip_suffix('}'))
            {
                let value = params
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| value.clone())
                    .unwrap_or_default();
                path_params.insert(name, value);
            }
        }
        let mut state = lock(self);
        let account = state.ensure_account(login, AccountKind::User);
        let context = Context {
            params: path_params,
            query: Vec::new(),
            headers: HeaderMap::new(),
            path: String::new(),
            body,
            actor: Actor::User {
                login: account.login,
            },
            budget_key: "scenario".to_owned(),
            now: Utc::now(),
            max_per_page: usize::MAX,
        };
        match (operation.handler)(&mut state, &context) {
            Ok(reply) => Ok(match reply.body {
                super::api::ReplyBody::Json(value) => value,
                super::api::ReplyBody::Text { text, .. } => Value::String(text),
            }),
            Err(error) => Err(SimError::Rejected {
                status: error.status.as_u16(),
                message: error.body(operation.documentation_url).to_string(),
            }),
        }
    }
}

fn issue_token(state: &mut SimState, login: &str) -> String {
    let secret = format!("ghp_{}", uuid::Uuid::new_v4().simple());
    state.tokens.insert(
        secret.clone(),
        Token {
            subject: TokenSubject::User(login.to_owned()),
            expires_at: None,
            repositories: None,
        },
    );
    let order = state.token_order.len() as u64;
    state.token_order.insert(secret.clone(), order);
    secret
}

fn budget_key_of(state: &SimState, token: &str) -> Result<String, SimError> {
    let record = state
        .tokens
        .get(token)
        .ok_or_else(|| SimError::Scenario("unknown token".to_owned()))?;
    Ok(SimState::budget_key(record, token))
}

fn split_full_name(full_name: &str) -> Result<(&str, &str), SimError> {
    match full_name.split_once('/') {
        Some((owner, name)) if !owner.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok((owner, name))
        }
        _ => Err(SimError::Scenario(format!(
            "{full_name:?} is not an owner/name repository name"
        ))),
    }
}

fn register_repository(
    sim: &GithubSim,
    owner: &str,
    name: &str,
    default_branch: &str,
    private: bool,
    labels: &[(String, String)],
) -> RepoHandle {
    let now = Utc::now();
    let mut state = lock(sim);
    if state.account(owner).is_none() {
        state.ensure_account(owner, AccountKind::Organization);
    }
    let id = state.next_id();
    let mut repository = Repository {
        id,
        owner: owner.to_owned(),
        name: name.to_owned(),
        default_branch: default_branch.to_owned(),
        private,
        created_at: now,
        pushed_at: now,
        labels: Vec::new(),
        pulls: std::collections::BTreeMap::new(),
        next_number: 1,
        check_runs: Vec::new(),
        statuses: Vec::new(),
        collaborators: std::collections::BTreeMap::new(),
    };
    for (label, color) in labels {
        let label_id = state.next_id();
        repository.labels.push(Label {
            id: label_id,
            name: label.clone(),
            color: color.clone(),
            description: None,
        });
    }
    state
        .repositories
        .insert(format!("{owner}/{name}").to_ascii_lowercase(), repository);
    RepoHandle {
        sim: sim.clone(),
        owner: owner.to_owned(),
        name: name.to_owned(),
    }
}

/// Builds a repository: its files on the default branch, labels, visibility.
#[derive(Debug)]
#[must_use = "call .create() to make the repository"]
pub struct RepoBuilder {
    sim: GithubSim,
    full_name: String,
    default_branch: String,
    private: bool,
    files: Vec<TreeChange>,
    labels: Vec<(String, String)>,
}

impl RepoBuilder {
    /// A text file in the initial commit.
    pub fn file(mut self, path: &str, contents: &str) -> Self {
        self.files.push(TreeChange::Write {
            path: path.to_owned(),
            contents: contents.as_bytes().to_vec(),
            executable: false,
        });
        self
    }

    /// A binary file in the initial commit.
    pub fn binary_file(mut self, path: &str, contents: &[u8]) -> Self {
        self.files.push(TreeChange::Write {
            path: path.to_owned(),
            contents: contents.to_vec(),
            executable: false,
        });
        self
    }

    /// An executable file (mode 100755) in the initial commit.
    pub fn executable_file(mut self, path: &str, contents: &str) -> Self {
        self.files.push(TreeChange::Write {
            path: path.to_owned(),
            contents: contents.as_bytes().to_vec(),
            executable: true,
        });
        self
    }

    /// The default branch (`main` unless set).
    pub fn default_branch(mut self, branch: &str) -> Self {
        branch.clone_into(&mut self.default_branch);
        self
    }

    /// Makes the repository private (invisible to anonymous requests and uncovered
    /// installations).
    pub fn private(mut self) -> Self {
        self.private = true;
        self
    }

    /// A label defined in the repository (color `ededed`).
    pub fn label(self, name: &str) -> Self {
        self.label_with_color(name, "ededed")
    }

    /// A label with a color (six hex digits).
    pub fn label_with_color(mut self, name: &str, color: &str) -> Self {
        self.labels.push((name.to_owned(), color.to_owned()));
        self
    }

    /// Creates the bare repository and its initial commit (when it has files).
    pub fn create(self) -> Result<RepoHandle, SimError> {
        let (owner, name) = split_full_name(&self.full_name)?;
        let dir = {
            let state = lock(&self.sim);
            if state.repository(owner, name).is_some() {
                return Err(SimError::Scenario(format!(
                    "repository {} already exists",
                    self.full_name
                )));
            }
            state.git_dir(owner, name)
        };
        let git = GitRepository::init_bare(&dir, &self.default_branch)?;
        if !self.files.is_empty() {
            let sha = git.commit_changes(
                None,
                &self.files,
                "Initial commit",
                &default_signature(owner, None),
            )?;
            git.update_branch(&self.default_branch, &sha, None)?;
        }
        Ok(register_repository(
            &self.sim,
            owner,
            name,
            &self.default_branch,
            self.private,
            &self.labels,
        ))
    }
}

/// A repository in the simulator.
#[derive(Debug, Clone)]
pub struct RepoHandle {
    sim: GithubSim,
    owner: String,
    name: String,
}

impl RepoHandle {
    /// `owner/name`.
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }

    /// The simulator this repository lives in.
    pub fn sim(&self) -> &GithubSim {
        &self.sim
    }

    /// The HTTP clone URL.
    pub fn clone_url(&self) -> String {
        self.sim.clone_url(&self.full_name())
    }

    /// The bare repository on disk (for assertions with git).
    pub fn git_dir(&self) -> PathBuf {
        lock(&self.sim).git_dir(&self.owner, &self.name)
    }

    fn git(&self) -> GitRepository {
        GitRepository::open(self.git_dir())
    }

    fn key(&self) -> String {
        self.full_name().to_ascii_lowercase()
    }

    fn with_repository<T>(&self, read: impl FnOnce(&Repository) -> T) -> Result<T, SimError> {
        let state = lock(&self.sim);
        let repository = state
            .repositories
            .get(&self.key())
            .ok_or_else(|| SimError::Scenario(format!("no repository {}", self.full_name())))?;
        Ok(read(repository))
    }

    /// The default branch.
    pub fn default_branch(&self) -> Result<String, SimError> {
        self.with_repository(|repository| repository.default_branch.clone())
    }

    /// The SHA a branch points at.
    pub fn branch_sha(&self, branch: &str) -> Result<String, SimError> {
        self.git().branch_sha(branch)?.ok_or_else(|| {
            SimError::Scenario(format!("{} has no branch {branch:?}", self.full_name()))
        })
    }

    /// Starts a commit on `branch`. If the branch does not exist it is created from the
    /// default branch (or from [`CommitBuilder::from`]).
    pub fn branch(&self, branch: &str) -> CommitBuilder {
        CommitBuilder {
            repo: self.clone(),
            branch: branch.to_owned(),
            from: None,
            force_from: None,
            changes: Vec::new(),
            message: None,
            author: None,
            date: None,
        }
    }

    /// Starts a pull request from `head` (created with the builder's changes if it does not
    /// exist) into the default branch.
    pub fn pull_request(&self, head: &str) -> PullRequestBuilder {
        PullRequestBuilder {
            commit: self.branch(head),
            base: None,
            title: None,
            body: None,
            author: None,
            labels: Vec::new(),
            draft: false,
            fork: None,
        }
    }

    /// A handle on an existing pull request.
    pub fn pull(&self, number: u64) -> Result<PullRequestHandle, SimError> {
        self.with_repository(|repository| repository.pulls.contains_key(&number))?
            .then(|| PullRequestHandle {
                repo: self.clone(),
                number,
            })
            .ok_or_else(|| {
                SimError::Scenario(format!(
                    "{} has no pull request #{number}",
                    self.full_name()
                ))
            })
    }

    /// The labels defined in the repository.
    pub fn labels(&self) -> Result<Vec<Label>, SimError> {
        self.with_repository(|repository| repository.labels.clone())
    }

    /// Makes `login` a collaborator with a role (`admin`, `maintain`, `write`, `triage` or
    /// `read`), as `repos/get-collaborator-permission-level` then reports it.
    pub fn add_collaborator(&self, login: &str, role: &str) -> Result<(), SimError> {
        const ROLES: [&str; 5] = ["admin", "maintain", "write", "triage", "read"];
        if !ROLES.contains(&role) {
            return Err(SimError::Scenario(format!(
                "collaborator role {role:?} is not one of {ROLES:?}"
            )));
        }
        let mut state = lock(&self.sim);
        state.ensure_account(login, AccountKind::User);
        let repository = state
            .repositories
            .get_mut(&self.key())
            .ok_or_else(|| SimError::Scenario(format!("no repository {}", self.full_name())))?;
        repository
            .collaborators
            .insert(login.to_ascii_lowercase(), role.to_owned());
        Ok(())
    }

    /// Every check run in the repository, as posted or updated (oldest first).
    pub fn check_runs(&self) -> Result<Vec<CheckRun>, SimError> {
        self.with_repository(|repository| repository.check_runs.clone())
    }

    /// Every commit status in the repository, as posted (oldest first).
    pub fn statuses(&self) -> Result<Vec<CommitStatus>, SimError> {
        self.with_repository(|repository| repository.statuses.clone())
    }

    /// Defines a label in the repository.
    pub fn create_label(&self, name: &str, color: &str) -> Result<(), SimError> {
        let mut state = lock(&self.sim);
        let id = state.next_id();
        let repository = state
            .repositories
            .get_mut(&self.key())
            .ok_or_else(|| SimError::Scenario(format!("no repository {}", self.full_name())))?;
        if repository.label(name).is_some() {
            return Err(SimError::Scenario(format!("label {name:?} already exists")));
        }
        repository.labels.push(Label {
            id,
            name: name.to_owned(),
            color: color.to_owned(),
            description: None,
        });
        Ok(())
    }

    /// Adds a check run on a commit (`status`: `queued`, `in_progress`, `completed`…;
    /// `conclusion` is required exactly when completed). Returns its id.
    pub fn add_check_run(
        &self,
        sha: &str,
        name: &str,
        status: &str,
        conclusion: Option<&str>,
    ) -> Result<u64, SimError> {
        const STATUSES: [&str; 6] = [
            "queued",
            "in_progress",
            "completed",
            "waiting",
            "requested",
            "pending",
        ];
        const CONCLUSIONS: [&str; 8] = [
            "success",
            "failure",
            "neutral",
            "cancelled",
            "skipped",
            "timed_out",
            "action_required",
            "stale",
        ];
        if !STATUSES.contains(&status) {
            return Err(SimError::Scenario(format!(
                "check run status {status:?} is not one of {STATUSES:?}"
            )));
        }
        match (status, conclusion) {
            ("completed", Some(conclusion)) if CONCLUSIONS.contains(&conclusion) => {}
            ("completed", _) => {
                return Err(SimError::Scenario(format!(
                    "a completed check run needs a conclusion, one of {CONCLUSIONS:?}"
                )));
            }
            (_, Some(_)) => {
                return Err(SimError::Scenario(
                    "only a completed check run has a conclusion".to_owned(),
                ));
            }
            _ => {}
        }
        let sha = self.resolve(sha)?;
        let now = Utc::now();
        let mut state = lock(&self.sim);
        let id = state.next_id();
        let full_name = self.full_name();
        let repository = state
            .repositories
            .get_mut(&self.key())
            .ok_or_else(|| SimError::Scenario(format!("no repository {full_name}")))?;
        repository.check_runs.push(CheckRun {
            id,
            head_sha: sha,
            name: name.to_owned(),
            status: status.to_owned(),
            conclusion: conclusion.map(str::to_owned),
            details_url: Some(format!("https://ci.example.com/{full_name}/runs/{id}")),
            external_id: None,
            output_title: None,
            output_summary: None,
            output_text: None,
            app_id: None,
            started_at: now,
            completed_at: (status == "completed").then_some(now),
        });
        Ok(id)
    }

    /// Adds a commit status (`state`: `error`, `failure`, `pending`, `success`). Returns its id.
    pub fn add_status(
        &self,
        sha: &str,
        context: &str,
        state_name: &str,
        target_url: Option<&str>,
    ) -> Result<u64, SimError> {
        const STATES: [&str; 4] = ["error", "failure", "pending", "success"];
        if !STATES.contains(&state_name) {
            return Err(SimError::Scenario(format!(
                "status state {state_name:?} is not one of {STATES:?}"
            )));
        }
        let sha = self.resolve(sha)?;
        let mut state = lock(&self.sim);
        state.ensure_account("ci-bot", AccountKind::User);
        let id = state.next_id();
        let repository = state
            .repositories
            .get_mut(&self.key())
            .ok_or_else(|| SimError::Scenario(format!("no repository {}", self.full_name())))?;
        repository.statuses.push(CommitStatus {
            id,
            sha,
            state: state_name.to_owned(),
            context: context.to_owned(),
            description: Some(format!("{context}: {state_name}")),
            target_url: target_url.map(str::to_owned),
            creator: "ci-bot".to_owned(),
            created_at: Utc::now(),
        });
        Ok(id)
    }

    fn resolve(&self, revision: &str) -> Result<String, SimError> {
        self.git().resolve_commit(revision)?.ok_or_else(|| {
            SimError::Scenario(format!("{} has no commit {revision:?}", self.full_name()))
        })
    }
}

/// One commit on a branch, built from changes to its parent's tree.
#[derive(Debug)]
#[must_use = "call .commit() to make the commit"]
pub struct CommitBuilder {
    repo: RepoHandle,
    branch: String,
    from: Option<String>,
    /// A force-push: the commit's parent, whatever the branch holds now.
    force_from: Option<String>,
    changes: Vec<TreeChange>,
    message: Option<String>,
    author: Option<String>,
    date: Option<DateTime<Utc>>,
}

impl CommitBuilder {
    /// Where a new branch starts (a branch name or SHA; default: the default branch).
    pub fn from(mut self, revision: &str) -> Self {
        self.from = Some(revision.to_owned());
        self
    }

    /// Makes the commit on `revision` (a branch name or SHA) even when the
    /// branch exists, and moves the branch to it whether or not its old tip
    /// is an ancestor: a force-push, as after a rebase or a squash.
    pub fn force_from(mut self, revision: &str) -> Self {
        self.force_from = Some(revision.to_owned());
        self
    }

    /// Writes a text file (creates or overwrites).
    pub fn write(mut self, path: &str, contents: &str) -> Self {
        self.changes.push(TreeChange::Write {
            path: path.to_owned(),
            contents: contents.as_bytes().to_vec(),
            executable: false,
        });
        self
    }

    /// Adds a new text file (same as [`Self::write`], reads better in a scenario).
    pub fn add(self, path: &str, contents: &str) -> Self {
        self.write(path, contents)
    }

    /// Replaces a file's contents (same as [`Self::write`]).
    pub fn modify(self, path: &str, contents: &str) -> Self {
        self.write(path, contents)
    }

    /// Writes a binary file.
    pub fn binary(mut self, path: &str, contents: &[u8]) -> Self {
        self.changes.push(TreeChange::Write {
            path: path.to_owned(),
            contents: contents.to_vec(),
            executable: false,
        });
        self
    }

    /// Deletes a file (it must exist).
    pub fn delete(mut self, path: &str) -> Self {
        self.changes.push(TreeChange::Delete {
            path: path.to_owned(),
        });
        self
    }

    /// Renames a file, keeping its contents.
    pub fn rename(mut self, from: &str, to: &str) -> Self {
        self.changes.push(TreeChange::Rename {
            from: from.to_owned(),
            to: to.to_owned(),
            contents: None,
        });
        self
    }

    /// Renames a file and changes its contents.
    pub fn rename_with(mut self, from: &str, to: &str, contents: &str) -> Self {
        self.changes.push(TreeChange::Rename {
            from: from.to_owned(),
            to: to.to_owned(),
            contents: Some(contents.as_bytes().to_vec()),
        });
        self
    }

    /// The commit message (default: "Update {branch}").
    pub fn message(mut self, message: &str) -> Self {
        self.message = Some(message.to_owned());
        self
    }

    /// The commit's author and committer login (default: the repository owner).
    pub fn author(mut self, login: &str) -> Self {
        self.author = Some(login.to_owned());
        self
    }

    /// The commit date (default: now). The CI handler measures timeouts from it.
    pub fn date(mut self, date: DateTime<Utc>) -> Self {
        self.date = Some(date);
        self
    }

    /// Makes the commit and moves the branch to it; returns the new SHA. Pull requests whose
    /// head is this branch see the new head (and a new `updated_at`), as after a push.
    pub fn commit(self) -> Result<String, SimError> {
        let git = self.repo.git();
        let current = git.branch_sha(&self.branch)?;
        let forced = match &self.force_from {
            Some(revision) => Some(self.repo.resolve(revision)?),
            None => None,
        };
        let parent = match (&current, &self.from) {
            _ if forced.is_some() => forced,
            (Some(current), _) => Some(current.clone()),
            (None, Some(from)) => Some(self.repo.resolve(from)?),
            (None, None) => {
                let default = self.repo.default_branch()?;
                git.branch_sha(&default)?
            }
        };
        let author = self.author.unwrap_or_else(|| self.repo.owner.clone());
        let message = self
            .message
            .unwrap_or_else(|| format!("Update {}", self.branch));
        let sha = git.commit_changes(
            parent.as_deref(),
            &self.changes,
            &message,
            &default_signature(&author, self.date),
        )?;
        git.update_branch(&self.branch, &sha, current.as_deref())?;
        let now = Utc::now();
        let mut moved = Vec::new();
        {
            let mut state = lock(&self.repo.sim);
            if let Some(repository) = state.repositories.get_mut(&self.repo.key()) {
                repository.pushed_at = now;
                for pull in repository.pulls.values_mut() {
                    if pull.head_ref == self.branch && pull.last_head_sha != sha {
                        pull.last_head_sha.clone_from(&sha);
                        pull.updated_at = now;
                        moved.push(pull.number);
                    }
                }
            }
        }
        for number in moved {
            git.update_pull_ref(number, &sha)?;
        }
        Ok(sha)
    }
}

/// A pull request, with the changes its head branch makes.
#[derive(Debug)]
#[must_use = "call .open() to open the pull request"]
pub struct PullRequestBuilder {
    commit: CommitBuilder,
    base: Option<String>,
    title: Option<String>,
    body: Option<String>,
    author: Option<String>,
    labels: Vec<String>,
    draft: bool,
    fork: Option<String>,
}

impl PullRequestBuilder {
    /// Shows the pull request as coming from a fork: `head.repo` is the
    /// simulator's repository `full_name` (create it first), as for a
    /// contributor's fork on GitHub. The head branch still lives here.
    pub fn from_fork(mut self, full_name: &str) -> Self {
        self.fork = Some(full_name.to_ascii_lowercase());
        self
    }

    /// The base branch (default: the repository's default branch).
    pub fn base(mut self, branch: &str) -> Self {
        self.base = Some(branch.to_owned());
        self
    }

    /// Writes a text file on the head branch.
    pub fn write(mut self, path: &str, contents: &str) -> Self {
        self.commit = self.commit.write(path, contents);
        self
    }

    /// Adds a text file on the head branch.
    pub fn add(self, path: &str, contents: &str) -> Self {
        self.write(path, contents)
    }

    /// Modifies a text file on the head branch.
    pub fn modify(self, path: &str, contents: &str) -> Self {
        self.write(path, contents)
    }

    /// Writes a binary file on the head branch.
    pub fn binary(mut self, path: &str, contents: &[u8]) -> Self {
        self.commit = self.commit.binary(path, contents);
        self
    }

    /// Deletes a file on the head branch.
    pub fn delete(mut self, path: &str) -> Self {
        self.commit = self.commit.delete(path);
        self
    }

    /// Renames a file on the head branch.
    pub fn rename(mut self, from: &str, to: &str) -> Self {
        self.commit = self.commit.rename(from, to);
        self
    }

    /// Renames a file and changes its contents on the head branch.
    pub fn rename_with(mut self, from: &str, to: &str, contents: &str) -> Self {
        self.commit = self.commit.rename_with(from, to, contents);
        self
    }

    /// The head commit's message.
    pub fn commit_message(mut self, message: &str) -> Self {
        self.commit = self.commit.message(message);
        self
    }

    /// The head commit's date.
    pub fn commit_date(mut self, date: DateTime<Utc>) -> Self {
        self.commit = self.commit.date(date);
        self
    }

    /// The title (default: the head branch's name).
    pub fn title(mut self, title: &str) -> Self {
        self.title = Some(title.to_owned());
        self
    }

    /// The description.
    pub fn body(mut self, body: &str) -> Self {
        self.body = Some(body.to_owned());
        self
    }

    /// Who opened it (default: `octocat`); also the head commit's author.
    pub fn author(mut self, login: &str) -> Self {
        self.author = Some(login.to_owned());
        self.commit = self.commit.author(login);
        self
    }

    /// A label on the pull request (created in the repository if missing).
    pub fn label(mut self, name: &str) -> Self {
        self.labels.push(name.to_owned());
        self
    }

    /// Opens it as a draft.
    pub fn draft(mut self) -> Self {
        self.draft = true;
        self
    }

    /// Commits the changes on the head branch (creating it from the base when missing) and
    /// opens the pull request.
    pub fn open(self) -> Result<PullRequestHandle, SimError> {
        let repo = self.commit.repo.clone();
        let head = self.commit.branch.clone();
        let base = match self.base {
            Some(base) => base,
            None => repo.default_branch()?,
        };
        let git = repo.git();
        if git.branch_sha(&base)?.is_none() {
            return Err(SimError::Scenario(format!(
                "{} has no base branch {base:?}",
                repo.full_name()
            )));
        }
        let head_exists = git.branch_sha(&head)?.is_some();
        let commit = if head_exists || !self.commit.changes.is_empty() {
            self.commit
        } else {
            return Err(SimError::Scenario(format!(
                "head branch {head:?} does not exist and the pull request makes no changes"
            )));
        };
        let commit = if commit.from.is_none() {
            commit.from(&base)
        } else {
            commit
        };
        let head_sha = if commit.changes.is_empty() {
            repo.branch_sha(&head)?
        } else {
            commit.commit()?
        };
        let author = self.author.unwrap_or_else(|| "octocat".to_owned());
        let now = Utc::now();
        let number = {
            let mut state = lock(&repo.sim);
            state.ensure_account(&author, AccountKind::User);
            let id = state.next_id();
            let issue_id = state.next_id();
            let repository = state
                .repositories
                .get_mut(&repo.key())
                .ok_or_else(|| SimError::Scenario(format!("no repository {}", repo.full_name())))?;
            let number = repository.next_number;
            repository.next_number += 1;
            repository.pulls.insert(
                number,
                PullRequest {
                    id,
                    issue_id,
                    number,
                    title: self.title.unwrap_or_else(|| head.clone()),
                    body: self.body,
                    author,
                    head_ref: head,
                    base_ref: base,
                    open: true,
                    draft: self.draft,
                    labels: Vec::new(),
                    created_at: now,
                    updated_at: now,
                    closed_at: None,
                    last_head_sha: head_sha.clone(),
                    reviews: Vec::new(),
                    review_comments: Vec::new(),
                    issue_comments: Vec::new(),
                    resolved_threads: std::collections::BTreeSet::new(),
                    head_repository: self.fork,
                },
            );
            number
        };
        git.update_pull_ref(number, &head_sha)?;
        let pull = PullRequestHandle { repo, number };
        if !self.labels.is_empty() {
            pull.add_labels(&self.labels.iter().map(String::as_str).collect::<Vec<_>>())?;
        }
        Ok(pull)
    }
}

/// A pull request in the simulator.
#[derive(Debug, Clone)]
pub struct PullRequestHandle {
    repo: RepoHandle,
    number: u64,
}

impl PullRequestHandle {
    /// The pull request's number.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// Its repository.
    pub fn repo(&self) -> &RepoHandle {
        &self.repo
    }

    /// The review threads resolved, by the id of their first comment.
    pub fn resolved_threads(&self) -> Result<Vec<u64>, SimError> {
        self.read(|pull| pull.resolved_threads.iter().copied().collect())
    }

    fn read<T>(&self, read: impl FnOnce(&PullRequest) -> T) -> Result<T, SimError> {
        self.repo
            .with_repository(|repository| repository.pulls.get(&self.number).map(read))?
            .ok_or_else(|| SimError::Scenario(format!("no pull request #{}", self.number)))
    }

    fn write<T>(&self, write: impl FnOnce(&mut PullRequest) -> T) -> Result<T, SimError> {
        let mut state = lock(&self.repo.sim);
        state
            .repositories
            .get_mut(&self.repo.key())
            .and_then(|repository| repository.pulls.get_mut(&self.number))
            .map(write)
            .ok_or_else(|| SimError::Scenario(format!("no pull request #{}", self.number)))
    }

    fn params(&self) -> Vec<(&'static str, String)> {
        vec![
            ("owner", self.repo.owner.clone()),
            ("repo", self.repo.name.clone()),
            ("pull_number", self.number.to_string()),
            ("issue_number", self.number.to_string()),
        ]
    }

    /// The head branch's name.
    pub fn head_ref(&self) -> Result<String, SimError> {
        self.read(|pull| pull.head_ref.clone())
    }

    /// The head SHA (read from git).
    pub fn head_sha(&self) -> Result<String, SimError> {
        let head = self.head_ref()?;
        self.repo.branch_sha(&head)
    }

    /// The base branch's current SHA.
    pub fn base_sha(&self) -> Result<String, SimError> {
        let base = self.read(|pull| pull.base_ref.clone())?;
        self.repo.branch_sha(&base)
    }

    /// Starts a new commit on the head branch (as if someone pushed).
    pub fn new_commit(&self) -> Result<CommitBuilder, SimError> {
        Ok(self.repo.branch(&self.head_ref()?))
    }

    /// The labels on the pull request, in the order they were added.
    pub fn labels(&self) -> Result<Vec<String>, SimError> {
        self.read(|pull| pull.labels.clone())
    }

    /// Adds labels (creating missing ones in the repository), as a maintainer would.
    pub fn add_labels(&self, names: &[&str]) -> Result<(), SimError> {
        self.repo.sim.invoke(
            "issues/add-labels",
            &self.repo.owner,
            &self.params(),
            Some(json!({ "labels": names })),
        )?;
        Ok(())
    }

    /// Adds one label.
    pub fn add_label(&self, name: &str) -> Result<(), SimError> {
        self.add_labels(&[name])
    }

    /// Removes a label (an error if the pull request lacks it, like GitHub's 404).
    pub fn remove_label(&self, name: &str) -> Result<(), SimError> {
        let mut params = self.params();
        params.push(("name", name.to_owned()));
        self.repo
            .sim
            .invoke("issues/remove-label", &self.repo.owner, &params, None)?;
        Ok(())
    }

    /// Posts a conversation comment as `login`; returns its id.
    pub fn comment(&self, login: &str, body: &str) -> Result<u64, SimError> {
        let created = self.repo.sim.invoke(
            "issues/create-comment",
            login,
            &self.params(),
            Some(json!({ "body": body })),
        )?;
        id_of(&created)
    }

    /// Posts a review as `login` (`event`: `COMMENT`, `REQUEST_CHANGES`, `APPROVE`, or `None`
    /// for pending) with inline comments given as GitHub's JSON objects (`path`, `line`,
    /// `side`, `start_line`, `body`…). Refused exactly when the API would refuse it.
    pub fn review(
        &self,
        login: &str,
        event: Option<&str>,
        body: &str,
        comments: &[Value],
    ) -> Result<u64, SimError> {
        let mut request = json!({ "body": body, "comments": comments });
        if let Some(event) = event {
            request["event"] = json!(event);
        }
        let created =
            self.repo
                .sim
                .invoke("pulls/create-review", login, &self.params(), Some(request))?;
        id_of(&created)
    }

    /// Posts a single inline comment as `login` on `line` (RIGHT side) of `path` at the head
    /// commit; returns the comment's id.
    pub fn review_comment(
        &self,
        login: &str,
        path: &str,
        line: u64,
        body: &str,
    ) -> Result<u64, SimError> {
        let head = self.head_sha()?;
        let created = self.repo.sim.invoke(
            "pulls/create-review-comment",
            login,
            &self.params(),
            Some(json!({
                "body": body,
                "commit_id": head,
                "path": path,
                "line": line,
                "side": "RIGHT",
            })),
        )?;
        id_of(&created)
    }

    /// Replies as `login` to a top-level review comment; returns the reply's id.
    pub fn reply(&self, login: &str, comment_id: u64, body: &str) -> Result<u64, SimError> {
        let mut params = self.params();
        params.push(("comment_id", comment_id.to_string()));
        let created = self.repo.sim.invoke(
            "pulls/create-reply-for-review-comment",
            login,
            &params,
            Some(json!({ "body": body })),
        )?;
        id_of(&created)
    }

    /// Every review (pending ones included), oldest first.
    pub fn reviews(&self) -> Result<Vec<Review>, SimError> {
        self.read(|pull| pull.reviews.clone())
    }

    /// Every review comment (top-level and replies), oldest first.
    pub fn review_comments(&self) -> Result<Vec<ReviewComment>, SimError> {
        self.read(|pull| pull.review_comments.clone())
    }

    /// Every conversation comment, oldest first.
    pub fn issue_comments(&self) -> Result<Vec<IssueComment>, SimError> {
        self.read(|pull| pull.issue_comments.clone())
    }

    /// Adds a check run on the current head commit.
    pub fn add_check_run(
        &self,
        name: &str,
        status: &str,
        conclusion: Option<&str>,
    ) -> Result<u64, SimError> {
        let head = self.head_sha()?;
        self.repo.add_check_run(&head, name, status, conclusion)
    }

    /// Adds a commit status on the current head commit.
    pub fn add_status(&self, context: &str, state: &str) -> Result<u64, SimError> {
        let head = self.head_sha()?;
        self.repo.add_status(&head, context, state, None)
    }

    /// Closes the pull request.
    pub fn close(&self) -> Result<(), SimError> {
        let now = Utc::now();
        self.write(|pull| {
            pull.open = false;
            pull.closed_at = Some(now);
            pull.updated_at = now;
        })
    }

    /// Reopens the pull request.
    pub fn reopen(&self) -> Result<(), SimError> {
        let now = Utc::now();
        self.write(|pull| {
            pull.open = true;
            pull.closed_at = None;
            pull.updated_at = now;
        })
    }

    /// When the pull request last changed (labels, comments, reviews, pushes).
    pub fn updated_at(&self) -> Result<DateTime<Utc>, SimError> {
        self.read(|pull| pull.updated_at)
    }
}

fn id_of(value: &Value) -> Result<u64, SimError> {
    value
        .get("id")
        .and_then(Value::as_u64)
        .ok_or_else(|| SimError::Unexpected(format!("a created record has no id: {value}")))
}
