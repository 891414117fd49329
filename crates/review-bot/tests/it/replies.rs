//! `replies import` / `replies export` against real SQLite files and a real
//! PostgreSQL database.

use std::path::Path;

use serde_json::{Value, json};

use crate::{review_bot, text};

/// A file as the seed's `FileCommentTracker` writes it, with one duplicate (it
/// appended on every reply) and two bad records.
const SEED_FILE: &str = r#"{
  "replies": [
    {"comment_id": "1001", "pr_number": 7, "replied_at": "2024-05-01T09:30:00.123456", "repository_name": "octo/widgets"},
    {"comment_id": "1002", "pr_number": 7, "replied_at": "2024-05-01T09:31:00", "repository_name": "octo/widgets"},
    {"comment_id": "replied-123", "pr_number": 7, "replied_at": "2024-05-01T09:32:00", "repository_name": "octo/widgets"},
    {"comment_id": "1001", "pr_number": 7, "replied_at": "2024-05-02T10:00:00", "repository_name": "octo/widgets"},
    {"comment_id": "55", "pr_number": 2, "replied_at": "2024-04-30T23:59:59", "repository_name": "octo/gadgets"},
    {"comment_id": "56", "replied_at": "2024-04-30T23:59:59", "repository_name": "octo/gadgets"}
  ]
}"#;

fn sqlite_url(dir: &Path) -> String {
    format!("sqlite://{}", dir.join("store.sqlite3").display())
}

/// `replies import FILE` of `contents` into `database`.
fn import(dir: &Path, database: &str, contents: &str) -> assert_cmd::assert::Assert {
    let file = dir.join("replies.json");
    std::fs::write(&file, contents).unwrap();
    review_bot(dir)
        .args([
            "replies",
            "import",
            "--naive-timezone",
            "utc",
            "--database",
            database,
        ])
        .arg(&file)
        .assert()
}

/// `replies export` of `database`, parsed.
fn export(dir: &Path, database: &str) -> Value {
    let output = review_bot(dir)
        .args(["replies", "export", "--database", database])
        .assert()
        .success();
    serde_json::from_slice(&output.get_output().stdout).unwrap()
}

#[test]
fn import_reports_counts_and_bad_records_and_keeps_the_good_ones() {
    let dir = tempfile::tempdir().unwrap();
    let database = sqlite_url(dir.path());
    let assert = import(dir.path(), &database, SEED_FILE).code(1);
    let output = assert.get_output();
    let location = dir.path().join("store.sqlite3").display().to_string();
    let report = format!(
        "stdout:\n{}\nstderr:\n{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    insta::assert_snapshot!(report.replace(&dir.path().display().to_string(), "[DIR]"));
    assert!(text(&output.stdout).contains(&location));

    assert_eq!(
        export(dir.path(), &database),
        json!({"replies": [
            {"comment_id": "55", "pr_number": 2, "replied_at": "2024-04-30T23:59:59.000000+00:00", "repository_name": "octo/gadgets"},
            {"comment_id": "1001", "pr_number": 7, "replied_at": "2024-05-01T09:30:00.123456+00:00", "repository_name": "octo/widgets"},
            {"comment_id": "1002", "pr_number": 7, "replied_at": "2024-05-01T09:31:00.000000+00:00", "repository_name": "octo/widgets"},
        ]})
    );
}

#[test]
fn a_second_import_imports_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let database = sqlite_url(dir.path());
    import(dir.path(), &database, SEED_FILE).code(1);
    let second = import(dir.path(), &database, SEED_FILE).code(1);
    let stdout = text(&second.get_output().stdout);
    assert!(stdout.contains("  0 imported\n"), "{stdout}");
    assert!(stdout.contains("  3 already present\n"), "{stdout}");
}

#[test]
fn a_clean_file_imports_with_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let database = sqlite_url(dir.path());
    let clean = r#"{"replies": [{"comment_id": 9, "pr_number": 1,
        "replied_at": "2024-01-01T00:00:00+00:00", "repository_name": "o/r"}]}"#;
    let output = import(dir.path(), &database, clean).success();
    assert!(text(&output.get_output().stdout).contains("  1 imported\n"));
    assert!(output.get_output().stderr.is_empty());
}

#[test]
fn a_file_that_is_not_json_is_an_error_that_says_what_a_reply_file_is() {
    let dir = tempfile::tempdir().unwrap();
    let database = sqlite_url(dir.path());
    let output = import(dir.path(), &database, "comment_id,pr_number\n1,2\n").code(2);
    let stderr = text(&output.get_output().stderr);
    assert!(
        stderr.contains("replies.json is not a reply file: not valid JSON at line 1, column 1"),
        "{stderr}"
    );
    assert!(
        stderr.contains(r#"a reply file looks like {"replies": ["#),
        "{stderr}"
    );
    // Nothing was created for a file we could not read.
    assert!(!dir.path().join("store.sqlite3").exists());

    let binary = dir.path().join("binary.json");
    std::fs::write(&binary, [0xff, 0xfe, 0x00]).unwrap();
    let output = review_bot(dir.path())
        .args(["replies", "import", "--database", &database])
        .arg(&binary)
        .assert()
        .code(2);
    let stderr = text(&output.get_output().stderr);
    assert!(stderr.contains("is not UTF-8 text"), "{stderr}");
}

#[test]
fn export_then_import_round_trips_between_databases() {
    let dir = tempfile::tempdir().unwrap();
    let source = sqlite_url(dir.path());
    import(dir.path(), &source, SEED_FILE).code(1);
    let exported = export(dir.path(), &source);

    let target_dir = tempfile::tempdir().unwrap();
    let target = sqlite_url(target_dir.path());
    let output = review_bot(dir.path())
        .args(["replies", "import", "--database", &target, "-"])
        .write_stdin(serde_json::to_string(&exported).unwrap())
        .assert()
        .success();
    assert!(text(&output.get_output().stdout).contains("  3 imported\n"));
    assert_eq!(export(dir.path(), &target), exported);
}

#[test]
fn the_default_database_lives_in_the_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let clean = r#"{"replies": [{"comment_id": "9", "pr_number": 1,
        "replied_at": "2024-01-01T00:00:00Z", "repository_name": "o/r"}]}"#;
    std::fs::write(dir.path().join("replies.json"), clean).unwrap();
    review_bot(dir.path())
        .env_remove("REVIEW_BOT_DATABASE_URL")
        .env("XDG_DATA_HOME", &data)
        .args(["replies", "import", "replies.json"])
        .assert()
        .success();
    assert!(data.join("review-bot/review-bot.sqlite3").is_file());
}

#[test]
fn the_database_can_come_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let database = sqlite_url(dir.path());
    import(dir.path(), &database, SEED_FILE).code(1);
    let output = review_bot(dir.path())
        .env("REVIEW_BOT_DATABASE_URL", &database)
        .args(["replies", "export"])
        .assert()
        .success();
    let exported: Value = serde_json::from_slice(&output.get_output().stdout).unwrap();
    assert_eq!(exported["replies"].as_array().unwrap().len(), 3);
}

#[test]
fn store_errors_reach_the_operator() {
    let dir = tempfile::tempdir().unwrap();
    let not_a_database = dir.path().join("notes.txt");
    std::fs::write(&not_a_database, "not a database\n".repeat(300)).unwrap();
    let output = review_bot(dir.path())
        .args(["replies", "export", "--database"])
        .arg(format!("sqlite://{}", not_a_database.display()))
        .assert()
        .code(2);
    let stderr = text(&output.get_output().stderr);
    assert!(
        stderr.contains("is damaged or is not a review-bot database"),
        "{stderr}"
    );

    let output = review_bot(dir.path())
        .args([
            "replies",
            "export",
            "--database",
            "postgres://bot:hunter2@127.0.0.1:1/x",
        ])
        .assert()
        .code(2);
    let stderr = text(&output.get_output().stderr);
    assert!(
        stderr.contains("could not open the database at postgres://bot@127.0.0.1:1/x"),
        "{stderr}"
    );
    assert!(!stderr.contains("hunter2"), "{stderr}");
}

#[test]
fn moving_to_postgres_and_back_keeps_every_reply() {
    let Some(server) = review_store::testing::postgres_server_url() else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let postgres = runtime.block_on(review_store::testing::TestDatabase::create(&server));

    let dir = tempfile::tempdir().unwrap();
    let sqlite = sqlite_url(dir.path());
    import(dir.path(), &sqlite, SEED_FILE).code(1);
    let exported = export(dir.path(), &sqlite);

    let to_postgres = |stdin: String| {
        review_bot(dir.path())
            .args(["replies", "import", "--database", &postgres.url, "-"])
            .write_stdin(stdin)
            .assert()
            .success()
    };
    let first = to_postgres(serde_json::to_string(&exported).unwrap());
    assert!(text(&first.get_output().stdout).contains("  3 imported\n"));
    let second = to_postgres(serde_json::to_string(&exported).unwrap());
    assert!(text(&second.get_output().stdout).contains("  0 imported\n"));
    assert_eq!(export(dir.path(), &postgres.url), exported);

    runtime.block_on(postgres.drop_database());
}
