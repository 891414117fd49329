//! Base-branch builds, on both databases: recorded once per repository,
//! base commit and commands; the first record stays; the output is kept
//! whole up to 16 KiB, NUL characters replaced.

use review_store::{BaseBuild, BaseBuildKey};

use crate::support::{TestDatabase, both};

both!(
    a_base_build_is_recorded_once_per_key,
    a_long_output_keeps_its_end_and_nul_is_replaced,
);

fn key<'a>(base_sha: &'a str, commands_hash: &'a str) -> BaseBuildKey<'a> {
    BaseBuildKey {
        repository: "octo/widgets",
        base_sha,
        commands_hash,
    }
}

fn failed(output: &str) -> BaseBuild {
    BaseBuild {
        failed_index: Some(1),
        failed_command: Some("cargo test".to_owned()),
        failed_end: Some("exited with status 101".to_owned()),
        output_tail: Some(output.to_owned()),
        output_bytes: 12_345,
    }
}

async fn a_base_build_is_recorded_once_per_key(database: TestDatabase) {
    let store = database.open().await;
    assert_eq!(store.base_build(&key("abc", "h1")).await.unwrap(), None);
    store
        .record_base_build(&key("abc", "h1"), &failed("test it_works ... FAILED"))
        .await
        .unwrap();
    assert_eq!(
        store.base_build(&key("abc", "h1")).await.unwrap(),
        Some(failed("test it_works ... FAILED"))
    );
    // A second writer (another replica) changes nothing.
    let passed = BaseBuild {
        failed_index: None,
        failed_command: None,
        failed_end: None,
        output_tail: None,
        output_bytes: 0,
    };
    store
        .record_base_build(&key("abc", "h1"), &passed)
        .await
        .unwrap();
    assert_eq!(
        store.base_build(&key("abc", "h1")).await.unwrap(),
        Some(failed("test it_works ... FAILED"))
    );
    // Other commands, another base: records of their own.
    assert_eq!(store.base_build(&key("abc", "h2")).await.unwrap(), None);
    store
        .record_base_build(&key("def", "h1"), &passed)
        .await
        .unwrap();
    assert_eq!(
        store.base_build(&key("def", "h1")).await.unwrap(),
        Some(passed)
    );
    assert!(store.base_build(&key("", "h1")).await.is_err());
}

async fn a_long_output_keeps_its_end_and_nul_is_replaced(database: TestDatabase) {
    let store = database.open().await;
    let output = format!("{}\0é the end", "é".repeat(20_000));
    store
        .record_base_build(&key("abc", "h1"), &failed(&output))
        .await
        .unwrap();
    let kept = store
        .base_build(&key("abc", "h1"))
        .await
        .unwrap()
        .unwrap()
        .output_tail
        .unwrap();
    assert!(kept.len() <= 16 * 1024, "{}", kept.len());
    assert!(kept.ends_with("\u{FFFD}é the end"), "{kept}");
}
