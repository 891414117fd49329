//! Seed 002's performance targets, measured.
//!
//! - `replied_comment_ids` for a pull request with 1,000 replied comments among
//!   100,000 replies across 50 repositories (seed: < 100 ms; ours: < 1 ms median
//!   on SQLite), on SQLite, on PostgreSQL when `REVIEW_BOT_TEST_POSTGRES_URL` is
//!   set, and with the seed's phase-1 approach (read and parse the whole JSON
//!   file per query, implemented here only) on the same data, as the ratio to beat;
//! - `mark_comment_replied` per call (seed: < 50 ms), likewise;
//! - storage per 10,000 replies (seed: < 1 MB), printed after the timings.
//!
//! Run: `cargo bench -p review-store -- --warm-up-time 1 --measurement-time 3`
//! (under `scripts/with-postgres` to include PostgreSQL).

use std::collections::HashSet;
use std::hint::black_box;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, TimeDelta, Utc};
use criterion::{BenchmarkId, Criterion};
use review_store::{CommentId, CommentReply, Store, reply_file, testing};
use serde::Deserialize;
use sqlx::Connection as _;
use tokio::runtime::Runtime;

/// Replies in the large data set.
const TOTAL_REPLIES: u64 = 100_000;
/// Repositories they are spread over.
const REPOSITORIES: u64 = 50;
/// Replies on the pull request we query.
const TARGET_REPLIES: u64 = 1_000;
/// The pull request we query, in the first repository.
const TARGET_PULL_REQUEST: u64 = 1;
/// Replies in the storage measurement.
const STORAGE_REPLIES: u64 = 10_000;

fn repository_name(index: u64) -> String {
    format!("bench-org/repository-{index:02}")
}

/// A deterministic, shuffled data set: the target pull request's replies are
/// interleaved with everyone else's, as they would arrive over time.
fn data_set(total: u64, target: u64) -> Vec<CommentReply> {
    let start: DateTime<Utc> = "2024-01-01T00:00:00Z".parse().expect("a valid date");
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        // xorshift64: enough to spread rows without a dependency.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut replies: Vec<CommentReply> = (0..total)
        .map(|index| {
            let (repository, pull_request) = if index < target {
                (0, TARGET_PULL_REQUEST)
            } else {
                // Other pull requests (2..=201) in any repository.
                (next() % REPOSITORIES, 2 + next() % 200)
            };
            CommentReply {
                comment_id: CommentId(1_500_000_000 + index),
                pull_request,
                repository: repository_name(repository),
                replied_at: start,
            }
        })
        .collect();
    // Fisher–Yates, then timestamps in arrival order.
    for index in (1..replies.len()).rev() {
        let other = usize::try_from(next() % (index as u64 + 1)).expect("fits in usize");
        replies.swap(index, other);
    }
    for (offset, reply) in (0_i64..).zip(replies.iter_mut()) {
        reply.replied_at = start + TimeDelta::seconds(offset * 7);
    }
    replies
}

/// The seed's phase-1 file, as its `FileCommentTracker` reads it.
#[derive(Deserialize)]
struct SeedFile {
    replies: Vec<SeedRecord>,
}

#[derive(Deserialize)]
struct SeedRecord {
    comment_id: String,
    pr_number: u64,
    #[allow(dead_code)] // read (and parsed) like the seed does, never used by the query
    replied_at: String,
    repository_name: String,
}

/// The seed's `get_replied_comment_ids`: read and parse the whole file per query.
fn seed_replied_comment_ids(path: &Path, pull_request: u64, repository: &str) -> HashSet<String> {
    let text = std::fs::read_to_string(path).expect("the bench file is readable");
    let file: SeedFile = serde_json::from_str(&text).expect("the bench file is valid");
    file.replies
        .into_iter()
        .filter(|reply| reply.pr_number == pull_request && reply.repository_name == repository)
        .map(|reply| reply.comment_id)
        .collect()
}

/// The seed's `mark_comment_replied`: read, parse, append, write the whole file.
fn seed_mark_comment_replied(path: &Path, comment_id: u64, pull_request: u64, repository: &str) {
    let text = std::fs::read_to_string(path).expect("the bench file is readable");
    let mut file: serde_json::Value = serde_json::from_str(&text).expect("the bench file is valid");
    file["replies"]
        .as_array_mut()
        .expect("a replies array")
        .push(serde_json::json!({
            "comment_id": comment_id.to_string(),
            "pr_number": pull_request,
            "replied_at": Utc::now().naive_local().to_string(),
            "repository_name": repository,
        }));
    std::fs::write(
        path,
        serde_json::to_string_pretty(&file).expect("serialisable"),
    )
    .expect("the bench file is writable");
}

fn write_seed_file(path: &Path, replies: &[CommentReply]) {
    let mut file = std::fs::File::create(path).expect("the bench file can be created");
    reply_file::write(&mut file, replies).expect("the bench file can be written");
}

fn fill(runtime: &Runtime, store: &Store, replies: &[CommentReply]) {
    let summary = runtime
        .block_on(store.import_replies(replies))
        .expect("the data set imports");
    assert_eq!(summary.imported, replies.len() as u64);
}

/// Benchmarks one store holding the large data set.
fn bench_store(criterion: &mut Criterion, runtime: &Runtime, name: &str, store: &Store) {
    let target = repository_name(0);
    let found = runtime
        .block_on(store.replied_comment_ids(TARGET_PULL_REQUEST, &target))
        .expect("the query runs");
    assert_eq!(found.len() as u64, TARGET_REPLIES);

    let mut group = criterion.benchmark_group("replied_comment_ids");
    group.bench_function(BenchmarkId::from_parameter(name), |bencher| {
        bencher.iter(|| {
            runtime
                .block_on(store.replied_comment_ids(black_box(TARGET_PULL_REQUEST), &target))
                .expect("the query runs")
        });
    });
    group.finish();

    let next_comment = AtomicU64::new(9_000_000_000);
    let mut group = criterion.benchmark_group("mark_comment_replied");
    group.bench_function(BenchmarkId::from_parameter(name), |bencher| {
        bencher.iter(|| {
            let comment = CommentId(next_comment.fetch_add(1, Ordering::Relaxed));
            runtime
                .block_on(store.mark_comment_replied(comment, 777, &target))
                .expect("the insert runs")
        });
    });
    group.finish();
}

/// Benchmarks the seed's JSON file holding the large data set.
fn bench_seed_file(criterion: &mut Criterion, path: &Path) {
    let target = repository_name(0);
    assert_eq!(
        seed_replied_comment_ids(path, TARGET_PULL_REQUEST, &target).len() as u64,
        TARGET_REPLIES
    );
    let mut group = criterion.benchmark_group("replied_comment_ids");
    group.sample_size(10);
    group.bench_function(BenchmarkId::from_parameter("seed-json-file"), |bencher| {
        bencher.iter(|| seed_replied_comment_ids(path, black_box(TARGET_PULL_REQUEST), &target));
    });
    group.finish();

    let next_comment = AtomicU64::new(9_000_000_000);
    let mut group = criterion.benchmark_group("mark_comment_replied");
    group.sample_size(10);
    group.bench_function(BenchmarkId::from_parameter("seed-json-file"), |bencher| {
        bencher.iter(|| {
            seed_mark_comment_replied(
                path,
                next_comment.fetch_add(1, Ordering::Relaxed),
                777,
                &target,
            );
        });
    });
    group.finish();
}

/// Bytes of a SQLite store file, its write-ahead log folded in.
fn sqlite_file_size(runtime: &Runtime, path: &Path) -> u64 {
    runtime.block_on(async {
        let mut connection = sqlx::SqliteConnection::connect(&review_store::sqlite_url(path))
            .await
            .expect("the bench database opens");
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&mut connection)
            .await
            .expect("checkpoint");
        connection.close().await.expect("close");
    });
    std::fs::metadata(path).expect("the file exists").len()
}

/// Bytes PostgreSQL uses for the reply tables (heap, indexes, TOAST).
fn postgres_reply_bytes(runtime: &Runtime, url: &str) -> u64 {
    runtime.block_on(async {
        let mut connection = sqlx::PgConnection::connect(url).await.expect("connects");
        sqlx::query("VACUUM ANALYZE comment_replies")
            .execute(&mut connection)
            .await
            .expect("vacuum");
        let bytes: i64 = sqlx::query_scalar(
            "SELECT pg_total_relation_size('comment_replies') \
             + pg_total_relation_size('repositories')",
        )
        .fetch_one(&mut connection)
        .await
        .expect("sizes");
        u64::try_from(bytes).expect("sizes are positive")
    })
}

fn report_storage(runtime: &Runtime, directory: &Path, postgres_server: Option<&str>) {
    let replies = data_set(STORAGE_REPLIES, 0);
    let path = directory.join("storage.sqlite3");
    let store = runtime
        .block_on(Store::open(&review_store::sqlite_url(&path)))
        .expect("opens");
    let empty = sqlite_file_size(runtime, &path);
    fill(runtime, &store, &replies);
    runtime.block_on(store.close());
    let full = sqlite_file_size(runtime, &path);
    println!(
        "storage/sqlite: {} bytes per {STORAGE_REPLIES} replies ({full} bytes file, {empty} \
         bytes empty schema)",
        full - empty
    );

    let json = directory.join("storage.json");
    write_seed_file(&json, &replies);
    println!(
        "storage/seed-json-file: {} bytes per {STORAGE_REPLIES} replies",
        std::fs::metadata(&json).expect("exists").len()
    );

    if let Some(server) = postgres_server {
        let database = runtime.block_on(testing::TestDatabase::create(server));
        let store = runtime.block_on(Store::open(&database.url)).expect("opens");
        let empty = postgres_reply_bytes(runtime, &database.url);
        fill(runtime, &store, &replies);
        runtime.block_on(store.close());
        let full = postgres_reply_bytes(runtime, &database.url);
        println!(
            "storage/postgres: {} bytes per {STORAGE_REPLIES} replies (comment_replies and \
             repositories with indexes; {empty} bytes empty)",
            full - empty
        );
        runtime.block_on(database.drop_database());
    }
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let directory = tempfile::tempdir().expect("a temporary directory");
    let replies = data_set(TOTAL_REPLIES, TARGET_REPLIES);
    let postgres_server = testing::postgres_server_url();

    let sqlite_path = directory.path().join("bench.sqlite3");
    let sqlite = runtime
        .block_on(Store::open(&review_store::sqlite_url(&sqlite_path)))
        .expect("the bench database opens");
    fill(&runtime, &sqlite, &replies);
    bench_store(&mut criterion, &runtime, "sqlite", &sqlite);
    runtime.block_on(sqlite.close());

    if let Some(server) = postgres_server.as_deref() {
        let database = runtime.block_on(testing::TestDatabase::create(server));
        let postgres = runtime
            .block_on(Store::open(&database.url))
            .expect("the bench database opens");
        fill(&runtime, &postgres, &replies);
        runtime.block_on(async {
            let mut connection = sqlx::PgConnection::connect(&database.url)
                .await
                .expect("connects");
            sqlx::query("VACUUM ANALYZE comment_replies")
                .execute(&mut connection)
                .await
                .expect("vacuum");
        });
        bench_store(&mut criterion, &runtime, "postgres", &postgres);
        runtime.block_on(postgres.close());
        runtime.block_on(database.drop_database());
    }

    let json_path = directory.path().join("bench.json");
    write_seed_file(&json_path, &replies);
    bench_seed_file(&mut criterion, &json_path);

    report_storage(&runtime, directory.path(), postgres_server.as_deref());
    criterion.final_summary();
}
