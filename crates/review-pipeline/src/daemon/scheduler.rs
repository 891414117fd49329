//! The scheduler: one task per pull request found, at most `concurrency`
//! running at once, each holding the store's lease on its pull request for as
//! long as it runs (so two replicas, or two polls of one, never work on one
//! pull request at the same time).
//!
//! A task waits for a slot, claims the lease (someone else holding it: the
//! job is skipped as busy), runs the job while renewing the lease, and
//! releases the lease however the job ended — completed, failed, the lease
//! lost, or abandoned at shutdown (the job's future is dropped, which kills
//! its agent's processes).

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use review_github::RepositoryName;
use review_store::{Lease, Store};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

use super::attempts::job_kind;
use super::poller::Hit;

/// How a job the runner ran ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobOutcome {
    /// The step completed (whatever it found, or nothing to do).
    Completed,
    /// The step ended on an error.
    Failed(String),
    /// Not run now, and why (its earlier failures' backoff is not over).
    Skipped(String),
}

/// How a scheduled pull request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobEnd {
    /// The job ran to its end.
    Completed,
    /// The job ended on an error.
    Failed(String),
    /// The job chose not to run now, and why (backing off after failures).
    Skipped(String),
    /// Another holder (replica or task) holds the pull request's lease: not run.
    Busy,
    /// The lease could not be renewed (lapsed or taken over): the job was stopped.
    LeaseLost,
    /// Shut down before the job ended: the job was stopped.
    Abandoned,
    /// The store could not be asked for the lease.
    StoreFailed(String),
}

impl JobEnd {
    /// The outcome's metric label.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Failed(_) => "failed",
            Self::Skipped(_) => "skipped",
            Self::Busy => "busy",
            Self::LeaseLost => "lease_lost",
            Self::Abandoned => "abandoned",
            Self::StoreFailed(_) => "store_failed",
        }
    }

    /// Whether this counts against `run --once`'s exit code.
    pub fn is_failure(&self) -> bool {
        !matches!(self, Self::Completed | Self::Busy | Self::Skipped(_))
    }
}

/// A job in progress.
pub type JobFuture = Pin<Box<dyn Future<Output = JobOutcome> + Send>>;

/// Runs one job: what `review-bot step` does for the pull request.
pub type Runner = Arc<dyn Fn(Hit) -> JobFuture + Send + Sync>;

/// The scheduler's limits.
#[derive(Debug, Clone)]
pub struct SchedulerSettings {
    /// Jobs running at once.
    pub concurrency: usize,
    /// The lease's time to live; it is renewed at a third of what remains.
    pub lease_ttl: Duration,
    /// `HOST/BOOT/PIDNS:PID` ([`holder_prefix`]): each job's lease holder is
    /// this plus a fresh UUID.
    pub holder_prefix: String,
}

impl SchedulerSettings {
    /// `concurrency` jobs at once, two-minute leases, this process as holder.
    pub fn new(concurrency: usize) -> Self {
        Self {
            concurrency: concurrency.max(1),
            lease_ttl: Duration::from_mins(2),
            holder_prefix: holder_prefix(),
        }
    }
}

/// `HOST/BOOT/PIDNS:PID`: this process among every replica. The host name
/// alone does not tell two machines' or two containers' processes apart —
/// containers with the host's network (Kubernetes `hostNetwork`) share it while
/// each has a PID namespace of its own, where the same pid is another process,
/// or none (issue 25: a replica took over a live lease of another "gone"
/// process). So the identity also names the kernel's boot (`boot_id`) and the
/// PID namespace (its inode): only a holder with exactly ours is a process this
/// one can look up in `/proc`.
pub fn holder_prefix() -> String {
    format!("{}:{}", process_namespace_identity(), std::process::id())
}

/// `HOST/BOOT/PIDNS`: where this process's pids mean something.
fn process_namespace_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".to_owned());
    // A host name cannot hold '/' or ':'; replace them should one ever do.
    let host = host.replace(['/', ':'], "-");
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|id| {
            id.trim()
                .chars()
                .filter(char::is_ascii_hexdigit)
                .take(12)
                .collect::<String>()
        })
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| "unknown-boot".to_owned());
    // `pid:[4026531836]`
    let namespace = std::fs::read_link("/proc/self/ns/pid")
        .ok()
        .and_then(|link| {
            let link = link.to_string_lossy().into_owned();
            let inode: String = link.chars().filter(char::is_ascii_digit).collect();
            (!inode.is_empty()).then_some(inode)
        })
        .unwrap_or_else(|| "unknown-namespace".to_owned());
    format!("{host}/{boot}/{namespace}")
}

/// At start: releases the live leases held by processes of this host that
/// are gone (a daemon killed with `kill -9`, a crashed replica restarted on
/// the same machine), so their pull requests are taken over now rather than
/// when the leases lapse. A holder is `HOST/BOOT/PIDNS:PID:UUID`
/// ([`holder_prefix`]); a lease of another host, boot or PID namespace (a
/// replica in another container with the same host name), of a process still
/// running here, or in an older format, is left to expire on its own.
/// Returns the leases released.
pub async fn release_dead_holders(
    store: &Store,
    holder_prefix: &str,
) -> Result<Vec<Lease>, review_store::StoreError> {
    let Some((host, own_pid)) = holder_prefix.rsplit_once(':') else {
        return Ok(Vec::new());
    };
    let mut released = Vec::new();
    for lease in store.active_leases().await? {
        // This process has claimed nothing yet: a lease under its own pid is a
        // previous incarnation's (a container restarted as the same pid).
        let dead = holder_process(&lease.holder).is_some_and(|(lease_host, pid)| {
            lease_host == host && (pid == own_pid || !process_exists(pid))
        });
        if dead && store.release(&lease).await? {
            tracing::info!(
                repository = lease.repository,
                pull_request = lease.pull_request,
                holder = lease.holder,
                "released the lease of a process that is gone"
            );
            released.push(lease);
        }
    }
    Ok(released)
}

/// Whether process `pid` of this host's PID namespace is running.
fn process_exists(pid: &str) -> bool {
    std::path::Path::new("/proc").join(pid).exists()
}

/// Whether `holder` is a process of this host that is gone.
fn held_by_dead_local_process(holder: &str) -> bool {
    let prefix = holder_prefix();
    let Some((host, _)) = prefix.rsplit_once(':') else {
        return false;
    };
    holder_process(holder)
        .is_some_and(|(lease_host, pid)| lease_host == host && !process_exists(pid))
}

/// `(identity, pid)` of an `IDENTITY:PID:UUID` holder.
fn holder_process(holder: &str) -> Option<(&str, &str)> {
    let (process, _uuid) = holder.rsplit_once(':')?;
    let (host, pid) = process.rsplit_once(':')?;
    (!pid.is_empty() && pid.bytes().all(|byte| byte.is_ascii_digit())).then_some((host, pid))
}

/// Schedules jobs; see the module's documentation.
pub struct Scheduler {
    store: Store,
    runner: Runner,
    settings: SchedulerSettings,
    slots: Arc<Semaphore>,
    queued: Arc<Mutex<HashSet<(RepositoryName, u64)>>>,
    tasks: JoinSet<(Hit, JobEnd)>,
    abort: watch::Sender<bool>,
}

impl Scheduler {
    /// A scheduler whose jobs are `runner`'s, leased in `store`.
    pub fn new(store: Store, runner: Runner, settings: SchedulerSettings) -> Self {
        Self {
            store,
            runner,
            slots: Arc::new(Semaphore::new(settings.concurrency.max(1))),
            settings,
            queued: Arc::default(),
            tasks: JoinSet::new(),
            abort: watch::channel(false).0,
        }
    }

    /// Queues `hit`; `false` when this process already has a job queued or
    /// running for its pull request (one job per pull request at a time).
    pub fn submit(&mut self, hit: Hit) -> bool {
        let key = (hit.repository.clone(), hit.number);
        if !self.queued.lock().expect("queue lock").insert(key.clone()) {
            return false;
        }
        let task = Task {
            store: self.store.clone(),
            runner: Arc::clone(&self.runner),
            settings: self.settings.clone(),
            slots: Arc::clone(&self.slots),
            abort: self.abort.subscribe(),
        };
        let dequeue = Dequeue {
            queued: Arc::clone(&self.queued),
            key,
        };
        self.tasks.spawn(async move {
            // Even if the job panics, its pull request can be queued again.
            let _dequeue = dequeue;
            let end = task.run(&hit).await;
            metrics::counter!(
                "review_bot_jobs_total",
                "kind" => job_kind(hit.job).as_str(),
                "outcome" => end.name()
            )
            .increment(1);
            (hit, end)
        });
        true
    }

    /// Jobs queued or running.
    pub fn pending(&self) -> usize {
        self.tasks.len()
    }

    /// The next job to end; `None` when none is pending.
    pub async fn next_end(&mut self) -> Option<(Hit, JobEnd)> {
        loop {
            match self.tasks.join_next().await? {
                Ok(ended) => return Some(ended),
                // A job that panicked: its lease lapses on its own.
                Err(error) => tracing::error!(%error, "a job's task failed"),
            }
        }
    }

    /// Waits for every pending job.
    pub async fn drain(&mut self) -> Vec<(Hit, JobEnd)> {
        let mut ended = Vec::new();
        while let Some(end) = self.next_end().await {
            ended.push(end);
        }
        ended
    }

    /// Lets pending jobs run for up to `grace`, then stops the rest (their
    /// futures dropped, their leases released) and waits for them.
    pub async fn shutdown(&mut self, grace: Duration) -> Vec<(Hit, JobEnd)> {
        let mut ended = Vec::new();
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            tokio::select! {
                end = self.next_end() => match end {
                    Some(end) => ended.push(end),
                    None => return ended,
                },
                () = tokio::time::sleep_until(deadline) => break,
            }
        }
        tracing::warn!(
            jobs = self.pending(),
            "shutdown grace period over: stopping the jobs still running"
        );
        self.abort.send_replace(true);
        ended.extend(self.drain().await);
        ended
    }
}

/// Takes a pull request off the queue when its task ends, however it ends.
struct Dequeue {
    queued: Arc<Mutex<HashSet<(RepositoryName, u64)>>>,
    key: (RepositoryName, u64),
}

impl Drop for Dequeue {
    fn drop(&mut self) {
        if let Ok(mut queued) = self.queued.lock() {
            queued.remove(&self.key);
        }
    }
}

/// What one job's task needs.
struct Task {
    store: Store,
    runner: Runner,
    settings: SchedulerSettings,
    slots: Arc<Semaphore>,
    abort: watch::Receiver<bool>,
}

impl Task {
    async fn run(mut self, hit: &Hit) -> JobEnd {
        let slots = Arc::clone(&self.slots);
        metrics::gauge!("review_bot_jobs_queued").increment(1.0);
        let slot = tokio::select! {
            slot = slots.acquire_owned() => Some(slot.expect("the semaphore is never closed")),
            () = aborted(&mut self.abort) => None,
        };
        metrics::gauge!("review_bot_jobs_queued").decrement(1.0);
        let Some(_slot) = slot else {
            return JobEnd::Abandoned;
        };
        let holder = format!("{}:{}", self.settings.holder_prefix, uuid::Uuid::new_v4());
        let repository = hit.repository.to_string();
        let lease = match self
            .store
            .claim(
                &repository,
                hit.number,
                job_kind(hit.job),
                &holder,
                self.settings.lease_ttl,
            )
            .await
        {
            Ok(Some(lease)) => lease,
            Ok(None) => return JobEnd::Busy,
            Err(error) => return JobEnd::StoreFailed(error.to_string()),
        };
        tracing::debug!(%hit, holder, generation = lease.generation, "lease claimed");
        metrics::gauge!("review_bot_leases_held").increment(1.0);
        let kind = job_kind(hit.job).as_str();
        let started = Instant::now();
        let job = (self.runner)(hit.clone());
        let abort = &mut self.abort;
        let end = hold(&self.store, &lease, self.settings.lease_ttl, async move {
            tokio::select! {
                outcome = job => match outcome {
                    JobOutcome::Completed => JobEnd::Completed,
                    JobOutcome::Failed(error) => JobEnd::Failed(error),
                    JobOutcome::Skipped(reason) => JobEnd::Skipped(reason),
                },
                () = aborted(abort) => JobEnd::Abandoned,
            }
        })
        .await
        .unwrap_or(JobEnd::LeaseLost);
        metrics::histogram!("review_bot_job_duration_seconds", "kind" => kind)
            .record(started.elapsed().as_secs_f64());
        metrics::gauge!("review_bot_leases_held").decrement(1.0);
        end
    }
}

/// How [`run_leased`] ended.
#[derive(Debug)]
pub enum Leased<T> {
    /// The work ran to its end under the lease.
    Ran(T),
    /// Another holder has the pull request: its lease, when still listed.
    Busy(Option<Lease>),
    /// The lease could not be renewed: the work was stopped.
    LeaseLost,
}

/// Runs `work` holding the pull request's lease, as a daemon's job does —
/// for a command run by hand (`review-bot step`, `review-bot review`), so it
/// never works on a pull request at the same time as a daemon.
pub async fn run_leased<T>(
    store: &Store,
    repository: &str,
    pull_request: u64,
    kind: review_store::JobKind,
    work: impl Future<Output = T>,
) -> Result<Leased<T>, review_store::StoreError> {
    let ttl = Duration::from_mins(2);
    let holder = format!("{}:{}", holder_prefix(), uuid::Uuid::new_v4());
    let mut claimed = store
        .claim(repository, pull_request, kind, &holder, ttl)
        .await?;
    if claimed.is_none() {
        let held = store.active_leases().await?.into_iter().find(|lease| {
            lease.pull_request == pull_request && lease.repository.eq_ignore_ascii_case(repository)
        });
        match held {
            // Left by a process of this host that is gone (killed mid-job):
            // taken over now rather than when it lapses.
            Some(lease) if held_by_dead_local_process(&lease.holder) => {
                store.release(&lease).await?;
                tracing::info!(
                    holder = lease.holder,
                    "took over the lease of a process that is gone"
                );
                claimed = store
                    .claim(repository, pull_request, kind, &holder, ttl)
                    .await?;
            }
            held => return Ok(Leased::Busy(held)),
        }
    }
    let Some(lease) = claimed else {
        return Ok(Leased::Busy(None));
    };
    Ok(hold(store, &lease, ttl, work)
        .await
        .map_or(Leased::LeaseLost, Leased::Ran))
}

/// Runs `work` while renewing `lease`, then releases the lease however it
/// ended: `None` when the lease could not be kept (the work is dropped).
async fn hold<T>(
    store: &Store,
    lease: &Lease,
    ttl: Duration,
    work: impl Future<Output = T>,
) -> Option<T> {
    let ended = tokio::select! {
        done = work => Some(done),
        () = keep_alive(store, lease.clone(), ttl) => None,
    };
    let (repository, pull_request) = (&lease.repository, lease.pull_request);
    match store.release(lease).await {
        Ok(true) => tracing::debug!(repository, pull_request, "lease released"),
        Ok(false) => {
            tracing::warn!(
                repository,
                pull_request,
                "the lease had lapsed before it was released"
            );
        }
        Err(error) => tracing::warn!(
            repository,
            pull_request,
            %error,
            "could not release the lease; it lapses on its own"
        ),
    }
    ended
}

/// Renews `lease` at a third of its remaining time; returns when it cannot
/// be kept (lapsed or taken over, or the store unreachable past its expiry).
async fn keep_alive(store: &Store, mut lease: Lease, ttl: Duration) {
    let mut expires = Instant::now() + lease.remaining;
    loop {
        let wait = lease.remaining / 3;
        tokio::time::sleep(wait.max(Duration::from_millis(100))).await;
        match store.renew(&lease, ttl).await {
            Ok(Some(renewed)) => {
                expires = Instant::now() + renewed.remaining;
                lease = renewed;
            }
            Ok(None) => {
                tracing::warn!(
                    repository = lease.repository,
                    pull_request = lease.pull_request,
                    "lost the lease: stopping the job"
                );
                return;
            }
            Err(error) => {
                tracing::warn!(%error, "could not renew a lease; trying again");
                let left = expires.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return;
                }
                lease.remaining = left;
            }
        }
    }
}

/// Resolves once the abort flag is set (never if the sender is gone).
async fn aborted(abort: &mut watch::Receiver<bool>) {
    if abort.wait_for(|aborted| *aborted).await.is_err() {
        std::future::pending::<()>().await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use review_core::labels::Job;
    use review_store::JobKind;

    use super::*;

    fn hit(repository: &str, number: u64) -> Hit {
        Hit {
            repository: RepositoryName::parse(repository).unwrap(),
            number,
            job: Job::Review,
        }
    }

    async fn store(dir: &tempfile::TempDir) -> Store {
        Store::open(&format!(
            "sqlite://{}",
            dir.path().join("store.sqlite3").display()
        ))
        .await
        .unwrap()
    }

    /// Jobs that fail on PR 2, hang on PR 9 and otherwise complete, and
    /// record how many ran at once.
    fn runner(running: Arc<AtomicUsize>, most: Arc<AtomicUsize>) -> Runner {
        Arc::new(move |hit: Hit| {
            let running = Arc::clone(&running);
            let most = Arc::clone(&most);
            Box::pin(async move {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::task::yield_now().await;
                tokio::time::sleep(Duration::from_millis(20)).await;
                running.fetch_sub(1, Ordering::SeqCst);
                match hit.number {
                    2 => JobOutcome::Failed("boom".to_owned()),
                    9 => std::future::pending().await,
                    _ => JobOutcome::Completed,
                }
            })
        })
    }

    fn ends(mut ended: Vec<(Hit, JobEnd)>) -> Vec<(u64, JobEnd)> {
        ended.sort_by_key(|(hit, _)| hit.number);
        ended
            .into_iter()
            .map(|(hit, end)| (hit.number, end))
            .collect()
    }

    #[tokio::test]
    async fn one_failure_stops_nothing_concurrency_is_bounded_and_a_pr_runs_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir).await;
        let most = Arc::new(AtomicUsize::new(0));
        let mut scheduler = Scheduler::new(
            store.clone(),
            runner(Arc::default(), Arc::clone(&most)),
            SchedulerSettings::new(2),
        );
        for number in 1..=5 {
            assert!(scheduler.submit(hit("acme/widgets", number)));
        }
        // The same pull request again while its job is queued: not twice.
        assert!(!scheduler.submit(hit("acme/widgets", 1)));
        let ended = ends(scheduler.drain().await);
        assert_eq!(
            ended,
            [
                (1, JobEnd::Completed),
                (2, JobEnd::Failed("boom".to_owned())),
                (3, JobEnd::Completed),
                (4, JobEnd::Completed),
                (5, JobEnd::Completed),
            ]
        );
        assert_eq!(most.load(Ordering::SeqCst), 2);
        assert!(store.active_leases().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn at_start_leases_of_dead_local_processes_are_released_and_no_others() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir).await;
        let prefix = holder_prefix();
        let (host, _) = prefix.rsplit_once(':').unwrap();
        // pid_max is at most 2^22: this pid cannot be running.
        let dead = format!("{host}:4194305:{}", uuid::Uuid::new_v4());
        let alive = format!("{host}:1:{}", uuid::Uuid::new_v4());
        let elsewhere = format!("other-host:4194305:{}", uuid::Uuid::new_v4());
        // The same host name in another PID namespace (a replica in another
        // container on the host's network): its pid means nothing here.
        let (name, rest) = host.split_once('/').unwrap();
        let (boot, _namespace) = rest.split_once('/').unwrap();
        let other_namespace = format!("{name}/{boot}/4026599999:4194305:{}", uuid::Uuid::new_v4());
        let other_boot = format!(
            "{name}/000000000000/{}:4194305:{}",
            rest.split_once('/').unwrap().1,
            uuid::Uuid::new_v4()
        );
        let old_format = format!("{name}:4194305:{}", uuid::Uuid::new_v4());
        for (number, holder) in [
            (1, &dead),
            (2, &alive),
            (3, &elsewhere),
            (4, &other_namespace),
            (5, &other_boot),
            (6, &old_format),
        ] {
            store
                .claim(
                    "acme/widgets",
                    number,
                    JobKind::Review,
                    holder,
                    Duration::from_mins(1),
                )
                .await
                .unwrap()
                .unwrap();
        }
        let released = release_dead_holders(&store, &prefix).await.unwrap();
        assert_eq!(
            released
                .iter()
                .map(|lease| lease.pull_request)
                .collect::<Vec<_>>(),
            [1]
        );
        let mut live: Vec<_> = store
            .active_leases()
            .await
            .unwrap()
            .into_iter()
            .map(|lease| lease.pull_request)
            .collect();
        live.sort_unstable();
        assert_eq!(live, [2, 3, 4, 5, 6]);
        assert!(!held_by_dead_local_process(&other_namespace));
        assert!(held_by_dead_local_process(&format!("{host}:4194305:x")));
        assert_eq!(holder_process("h:o:st:12:uuid"), Some(("h:o:st", "12")));
        assert_eq!(holder_process("nonsense"), None);
    }

    #[tokio::test]
    async fn a_pr_leased_elsewhere_is_busy_and_shutdown_releases_what_it_stops() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir).await;
        let other = store
            .claim(
                "acme/widgets",
                1,
                JobKind::Review,
                "elsewhere:1:x",
                Duration::from_mins(1),
            )
            .await
            .unwrap()
            .unwrap();
        let mut scheduler = Scheduler::new(
            store.clone(),
            runner(Arc::default(), Arc::default()),
            SchedulerSettings::new(2),
        );
        scheduler.submit(hit("acme/widgets", 1));
        scheduler.submit(hit("acme/widgets", 9));
        let ended = ends(scheduler.shutdown(Duration::from_millis(200)).await);
        assert_eq!(ended, [(1, JobEnd::Busy), (9, JobEnd::Abandoned)]);
        let leases = store.active_leases().await.unwrap();
        assert_eq!(leases.len(), 1, "{leases:?}");
        assert_eq!(
            (&leases[0].holder, leases[0].generation),
            (&other.holder, other.generation),
            "only the other holder's lease is live"
        );
    }
}
