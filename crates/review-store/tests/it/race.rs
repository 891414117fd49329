//! Two processes, each with its own pool, race to claim the same 100 jobs:
//! every job must be claimed exactly once.
//!
//! The processes are this test binary run again in "claimer" mode: the test
//! [`claimer`] reads its orders from `REVIEW_STORE_CLAIMER_URL` /
//! `REVIEW_STORE_CLAIMER_HOLDER`, opens the store, prints `READY`, waits for a
//! line on standard input (so both start together), claims every job at once
//! and prints `CLAIMED <pull request>` for each it won. Run without those
//! variables, it checks that a lone claimer wins every job.

use std::collections::HashSet;
use std::process::Stdio;
use std::time::Duration;

use review_store::{CommentId, JobKind, Store};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::{Child, ChildStdout, Command};

use crate::support::{TestDatabase, both, sqlite_database};

const JOBS: u64 = 100;
const REPOSITORY: &str = "race/jobs";
const URL_VARIABLE: &str = "REVIEW_STORE_CLAIMER_URL";
const HOLDER_VARIABLE: &str = "REVIEW_STORE_CLAIMER_HOLDER";

both!(two_processes_claim_each_job_exactly_once);

async fn two_processes_claim_each_job_exactly_once(database: TestDatabase) {
    // Migrate and register the repository first, so the race is about leases
    // rather than schema creation (concurrent opens are tested on their own).
    let store = database.open().await;
    store
        .mark_comment_replied(CommentId(1), 1, REPOSITORY)
        .await
        .unwrap();

    let mut claimers = Vec::new();
    for holder in ["process-a", "process-b"] {
        claimers.push(Claimer::spawn(&database.url, holder).await);
    }
    for claimer in &mut claimers {
        claimer.go().await;
    }
    let mut won = Vec::new();
    for claimer in claimers {
        won.push(claimer.finish().await);
    }

    let (a, b) = (&won[0], &won[1]);
    eprintln!(
        "{:?}: process-a won {} jobs, process-b won {}",
        database.kind,
        a.len(),
        b.len()
    );
    assert!(
        a.is_disjoint(b),
        "a job was claimed twice: {:?}",
        a.intersection(b)
    );
    let all: HashSet<u64> = a.union(b).copied().collect();
    assert_eq!(
        all,
        (1..=JOBS).collect(),
        "{:?} jobs unclaimed",
        database.kind
    );

    // The database agrees with what each process reported.
    let held: HashSet<(String, u64)> = store
        .active_leases()
        .await
        .unwrap()
        .into_iter()
        .map(|lease| (lease.holder, lease.pull_request))
        .collect();
    let reported: HashSet<(String, u64)> = a
        .iter()
        .map(|job| ("process-a".to_owned(), *job))
        .chain(b.iter().map(|job| ("process-b".to_owned(), *job)))
        .collect();
    assert_eq!(held, reported);
}

/// The child side (see the module docs); a plain test when run on its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claimer() {
    let (Ok(url), Ok(holder)) = (std::env::var(URL_VARIABLE), std::env::var(HOLDER_VARIABLE))
    else {
        let database = sqlite_database();
        let store = database.open().await;
        let won = claim_all(&store, "alone").await;
        assert_eq!(won, (1..=JOBS).collect::<HashSet<_>>());
        return;
    };
    let store = Store::open(&url).await.unwrap();
    // Warm up before the start line: open the pool's connections and learn the
    // repository's id, so both processes start claiming on an equal footing.
    futures::future::join_all((0..8).map(|_| store.health_check())).await;
    store.replied_comment_ids(1, REPOSITORY).await.unwrap();
    println!("READY");
    let mut line = String::new();
    BufReader::new(tokio::io::stdin())
        .read_line(&mut line)
        .await
        .unwrap();
    for pull_request in claim_all(&store, &holder).await {
        println!("CLAIMED {pull_request}");
    }
}

/// Claims every job concurrently; returns the ones won.
async fn claim_all(store: &Store, holder: &str) -> HashSet<u64> {
    let claims = (1..=JOBS).map(|pull_request| async move {
        store
            .claim(
                REPOSITORY,
                pull_request,
                JobKind::Review,
                holder,
                Duration::from_hours(1),
            )
            .await
            .unwrap()
            .map(|_| pull_request)
    });
    futures::future::join_all(claims)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// A claimer process.
struct Claimer {
    child: Child,
    stdout: BufReader<ChildStdout>,
}

impl Claimer {
    async fn spawn(url: &str, holder: &str) -> Self {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "race::claimer",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env(URL_VARIABLE, url)
            .env(HOLDER_VARIABLE, holder)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        loop {
            let mut line = String::new();
            let read = stdout.read_line(&mut line).await.unwrap();
            assert!(read > 0, "the claimer exited before it was ready");
            // libtest prints "test race::claimer ... " before the test's own output.
            if line.trim_end().ends_with("READY") {
                break;
            }
        }
        Self { child, stdout }
    }

    async fn go(&mut self) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(b"GO\n").await.unwrap();
        stdin.flush().await.unwrap();
    }

    async fn finish(mut self) -> HashSet<u64> {
        let mut rest = String::new();
        self.stdout.read_to_string(&mut rest).await.unwrap();
        let status = self.child.wait().await.unwrap();
        assert!(status.success(), "claimer failed: {status}\n{rest}");
        rest.lines()
            .filter_map(|line| line.strip_prefix("CLAIMED "))
            .map(|number| number.trim().parse().unwrap())
            .collect()
    }
}
