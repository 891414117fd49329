//! What preparing one agent start costs (issue 26): the run's configuration
//! directory as it was (one `create_dir_all`) and as it is (made anew, and
//! with an operator's login copied in), and the whole confined start of the
//! pinned CLI (`ClaudeCode::version`: the run's directories, bubblewrap, the
//! CLI's start-up) with and without a login to copy.
//!
//! `cargo bench -p review-agent --bench agent_start -- --warm-up-time 1 --measurement-time 5`

use criterion::{Criterion, criterion_group, criterion_main};
use review_agent::claude::{ClaudeCode, ClaudeCodeSettings, Confinement, config_directory};

/// A login directory as `claude /login` leaves it (sizes of a real one).
fn operator_login() -> tempfile::TempDir {
    let login = tempfile::tempdir().expect("login directory");
    std::fs::write(
        login.path().join(".credentials.json"),
        format!(
            r#"{{"claudeAiOauth":{{"accessToken":"{}","refreshToken":"{}","expiresAt":4102444800000,"scopes":["user:inference"]}}}}"#,
            "a".repeat(108),
            "r".repeat(108)
        ),
    )
    .expect("credentials");
    let projects: serde_json::Map<String, serde_json::Value> = (0..50)
        .map(|index| {
            (
                format!("/home/bot/project-{index}"),
                serde_json::json!({"allowedTools": [], "history": []}),
            )
        })
        .collect();
    std::fs::write(
        login.path().join(".claude.json"),
        serde_json::json!({
            "oauthAccount": {"emailAddress": "bot@example.com", "accountUuid": "u"},
            "userID": "0123456789abcdef",
            "projects": projects,
        })
        .to_string(),
    )
    .expect("global config");
    login
}

fn configuration_directory(criterion: &mut Criterion) {
    let login = operator_login();
    let run = tempfile::tempdir().expect("run directory");
    let mut group = criterion.benchmark_group("agent_config_directory");
    group.bench_function("before_create_dir_all", |bencher| {
        bencher.iter(|| {
            let directory = run.path().join("claude-config");
            std::fs::create_dir_all(&directory).expect("create");
        });
    });
    group.bench_function("fresh_empty", |bencher| {
        bencher.iter(|| config_directory::prepare(run.path(), None).expect("prepare"));
    });
    group.bench_function("fresh_with_login_copied", |bencher| {
        bencher
            .iter(|| config_directory::prepare(run.path(), Some(login.path())).expect("prepare"));
    });
    group.finish();
}

fn confined_start(criterion: &mut Criterion) {
    let Ok(claude) = review_testkit::tools::claude_binary() else {
        eprintln!("the pinned Claude Code CLI is not installed; run scripts/install-test-deps");
        return;
    };
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let login = operator_login();
    let confinement =
        Confinement::new().with_readable(review_testkit::tools::tools_dir().join("claude-code"));
    let mut group = criterion.benchmark_group("agent_confined_start");
    group.sample_size(10);
    for (name, login) in [("no_login", None), ("login_copied", Some(login.path()))] {
        let mut settings = ClaudeCodeSettings::new(&claude, "claude-opus-4-6")
            .with_confinement(confinement.clone());
        settings.config_directory = login.map(std::path::Path::to_owned);
        let runner = ClaudeCode::new(settings);
        group.bench_function(name, |bencher| {
            bencher.iter(|| {
                let run = tempfile::tempdir().expect("run directory");
                let version = runtime
                    .block_on(runner.version(run.path()))
                    .expect("claude --version confined");
                assert!(version.contains("Claude Code"));
            });
        });
    }
    group.finish();
}

criterion_group!(benches, configuration_directory, confined_start);
criterion_main!(benches);
