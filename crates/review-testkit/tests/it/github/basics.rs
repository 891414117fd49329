//! Starting, pull request reads, and the diff.

use super::{fixture, get};

#[tokio::test]
async fn pull_request_get_reports_git_state() {
    let fixture = fixture();
    let (status, headers, pull) = get(
        &fixture.sim,
        &fixture.bot.token,
        "/repos/acme/widgets/pulls/1",
    )
    .await;
    assert_eq!(status, 200, "{pull}");
    assert_eq!(pull["head"]["sha"], fixture.pull.head_sha().unwrap());
    assert_eq!(pull["head"]["ref"], "feature");
    assert_eq!(pull["base"]["ref"], "main");
    assert_eq!(pull["changed_files"], 2);
    assert_eq!(pull["commits"], 1);
    assert!(headers.contains_key("etag"));
    assert_eq!(headers["x-ratelimit-limit"], "5000");
    assert_eq!(headers["x-ratelimit-remaining"], "4999");
}
