//! The simulator's whole in-memory state behind one lock: accounts, tokens, repositories and
//! their records, apps and installations, budgets, injected faults, the request log, and a
//! cache of diffs computed by git.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::diff::PullDiff;
use super::faults::FaultRule;
use super::git::GitRepository;
use super::log::RequestRecord;
use super::model::{Account, AccountKind, App, Installation, PullRequest, Repository};
use super::rate::Budget;
use super::{SimError, SimOptions};

/// Who a token authenticates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TokenSubject {
    /// A personal access token of this login.
    User(String),
    /// An installation access token.
    Installation(u64),
}

/// A token the simulator accepts.
#[derive(Debug, Clone)]
pub(crate) struct Token {
    pub subject: TokenSubject,
    /// When it stops working (installation tokens).
    pub expires_at: Option<DateTime<Utc>>,
    /// The repositories an installation token was narrowed to (lower-cased `owner/name`);
    /// `None` for everything the installation covers.
    pub repositories: Option<Vec<String>>,
}

/// The state of one simulator.
#[derive(Debug)]
pub(crate) struct SimState {
    pub options: SimOptions,
    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub base_url: String,
    /// Where the bare repositories live (`ROOT/owner/name.git`).
    pub root: PathBuf,
    next_id: u64,
    /// Accounts by lower-cased login.
    pub accounts: BTreeMap<String, Account>,
    /// Tokens by their secret value.
    pub tokens: HashMap<String, Token>,
    /// Tokens a test revoked, by their secret value, kept so it can reinstate them.
    pub revoked_tokens: HashMap<String, Token>,
    /// Issue order of personal access tokens (a user's "first" token is the oldest).
    pub token_order: HashMap<String, u64>,
    /// Repositories by lower-cased `owner/name`.
    pub repositories: BTreeMap<String, Repository>,
    pub apps: BTreeMap<u64, App>,
    pub installations: BTreeMap<u64, Installation>,
    /// Budgets by holder (`token:…`, `installation:ID`, `app:ID`, `anonymous`).
    pub budgets: HashMap<String, Budget>,
    /// Per-holder primary limits a test set explicitly.
    pub limit_overrides: HashMap<String, u64>,
    pub faults: Vec<FaultRule>,
    pub log: Vec<RequestRecord>,
    /// Diffs by (repository, base SHA, head SHA): commits are immutable, so this never goes stale.
    pub diff_cache: HashMap<(String, String, String), Arc<PullDiff>>,
}

impl SimState {
    pub fn new(options: SimOptions, base_url: String, root: PathBuf) -> Self {
        Self {
            options,
            base_url,
            root,
            next_id: 1_000,
            accounts: BTreeMap::new(),
            tokens: HashMap::new(),
            revoked_tokens: HashMap::new(),
            token_order: HashMap::new(),
            repositories: BTreeMap::new(),
            apps: BTreeMap::new(),
            installations: BTreeMap::new(),
            budgets: HashMap::new(),
            limit_overrides: HashMap::new(),
            faults: Vec::new(),
            log: Vec::new(),
            diff_cache: HashMap::new(),
        }
    }

    /// A fresh id (ids are unique across all record kinds, which GitHub's are not — harmless).
    pub fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// The account with this login, created as `kind` when it does not exist yet.
    pub fn ensure_account(&mut self, login: &str, kind: AccountKind) -> Account {
        let key = login.to_ascii_lowercase();
        if let Some(account) = self.accounts.get(&key) {
            return account.clone();
        }
        let account = Account {
            id: self.next_id(),
            login: login.to_owned(),
            kind,
        };
        self.accounts.insert(key, account.clone());
        account
    }

    pub fn account(&self, login: &str) -> Option<&Account> {
        self.accounts.get(&login.to_ascii_lowercase())
    }

    pub fn repository(&self, owner: &str, name: &str) -> Option<&Repository> {
        self.repositories
            .get(&format!("{owner}/{name}").to_ascii_lowercase())
    }

    /// The bare git repository behind a repository record.
    pub fn git(&self, repository: &Repository) -> GitRepository {
        GitRepository::open(self.git_dir(&repository.owner, &repository.name))
    }

    pub fn git_dir(&self, owner: &str, name: &str) -> PathBuf {
        self.root
            .join(owner.to_ascii_lowercase())
            .join(format!("{}.git", name.to_ascii_lowercase()))
    }

    /// The pull request's current head SHA, read from git.
    pub fn head_sha(
        &self,
        repository: &Repository,
        pull: &PullRequest,
    ) -> Result<String, SimError> {
        self.git(repository)
            .branch_sha(&pull.head_ref)?
            .ok_or_else(|| {
                SimError::Scenario(format!(
                    "{}#{}: head branch {:?} no longer exists",
                    repository.full_name(),
                    pull.number,
                    pull.head_ref
                ))
            })
    }

    /// The base branch's current SHA, read from git.
    pub fn base_sha(
        &self,
        repository: &Repository,
        pull: &PullRequest,
    ) -> Result<String, SimError> {
        self.git(repository)
            .branch_sha(&pull.base_ref)?
            .ok_or_else(|| {
                SimError::Scenario(format!(
                    "{}#{}: base branch {:?} no longer exists",
                    repository.full_name(),
                    pull.number,
                    pull.base_ref
                ))
            })
    }

    /// The diff GitHub shows for a pull request at `head` (`git diff base...head`: from the
    /// merge base of the base branch and `head`), cached.
    pub fn pull_diff(
        &mut self,
        repository_key: &str,
        base_sha: &str,
        head_sha: &str,
    ) -> Result<Arc<PullDiff>, SimError> {
        let key = (
            repository_key.to_owned(),
            base_sha.to_owned(),
            head_sha.to_owned(),
        );
        if let Some(diff) = self.diff_cache.get(&key) {
            return Ok(diff.clone());
        }
        let repository = self
            .repositories
            .get(repository_key)
            .ok_or_else(|| SimError::Scenario(format!("no repository {repository_key}")))?;
        let git = self.git(repository);
        let merge_base = git.merge_base(base_sha, head_sha)?;
        let from = merge_base.as_deref();
        let diff = PullDiff::from_git(
            git.raw_diff(from, head_sha)?,
            git.numstat(from, head_sha)?,
            git.patch(from, head_sha)?,
        )?;
        let diff = Arc::new(diff);
        self.diff_cache.insert(key, diff.clone());
        Ok(diff)
    }

    /// The primary limit of a budget holder: a test's override, or the default for its kind.
    pub fn core_limit_for(&self, budget_key: &str) -> u64 {
        if let Some(limit) = self.limit_overrides.get(budget_key) {
            return *limit;
        }
        if budget_key.starts_with("installation:") {
            self.options.installation_limit
        } else if budget_key.starts_with("app:") {
            self.options.app_limit
        } else if budget_key == "anonymous" {
            self.options.anonymous_limit
        } else {
            self.options.primary_limit
        }
    }

    /// Who a budget belongs to, for a token.
    pub fn budget_key(token: &Token, secret: &str) -> String {
        match &token.subject {
            TokenSubject::User(_) => format!("token:{secret}"),
            TokenSubject::Installation(id) => format!("installation:{id}"),
        }
    }
}
