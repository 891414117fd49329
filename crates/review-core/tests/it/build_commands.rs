//! Build and test command discovery on realistic READMEs and CLAUDE.md files.

use review_core::build_commands::{Discovery, Document, commands_in_markdown, discover};

use crate::fixture;

/// A document's commands: setup and build in one list (the order they run
/// in), and test.
fn commands(name: &str) -> Option<(Vec<String>, Vec<String>)> {
    commands_in_markdown(&fixture(&format!("docs/{name}"))).map(|commands| {
        (
            commands.setup.into_iter().chain(commands.build).collect(),
            commands.test,
        )
    })
}

fn expect(name: &str, build: &[&str], test: &[&str]) {
    let (found_build, found_test) =
        commands(name).unwrap_or_else(|| panic!("{name}: nothing found"));
    assert_eq!(found_build, build, "{name}: build");
    assert_eq!(found_test, test, "{name}: test");
}

#[test]
fn go_service() {
    expect(
        "go-service.md",
        &[
            "go mod download",
            "CGO_ENABLED=0 go build -o bin/payments ./cmd/server",
        ],
        &[
            "go test ./...",
            "go test -tags=integration -race ./internal/...",
            "golangci-lint run ./...",
        ],
    );
}

#[test]
fn create_react_app() {
    expect(
        "react-app.md",
        &["npm install", "npm run build"],
        &["CI=true npm test -- --coverage"],
    );
}

#[test]
fn gradle_android() {
    expect(
        "android-app.md",
        &["./gradlew assembleDebug", "./gradlew :app:bundleRelease"],
        &[
            "./gradlew testDebugUnitTest",
            "./gradlew ktlintCheck detekt",
        ],
    );
}

#[test]
fn xcode_swift() {
    expect(
        "ios-app.md",
        &[
            "bundle install",
            "bundle exec pod install",
            "xcodebuild -workspace Acme.xcworkspace -scheme Acme -configuration Debug -destination 'generic/platform=iOS Simulator' build | xcpretty",
        ],
        &[
            "xcodebuild -workspace Acme.xcworkspace -scheme Acme -destination 'platform=iOS Simulator,name=iPhone 15,OS=17.2' test",
            "(cd Packages/AcmeKit && swift test)",
        ],
    );
}

#[test]
fn rust_console_sessions() {
    expect(
        "rust-cli.md",
        &["cargo build --release"],
        &["cargo test --all"],
    );
}

#[test]
fn makefile_project() {
    expect(
        "makefile-c.md",
        &["./configure --prefix=/usr/local", "make"],
        &["make check"],
    );
}

#[test]
fn claude_md_command_list() {
    expect(
        "claude-node.md",
        &["pnpm install", "pnpm build"],
        &["pnpm test"],
    );
}

#[test]
fn messy_monorepo() {
    expect(
        "messy-monorepo.md",
        &[
            "(cd web && yarn install --frozen-lockfile)",
            "(cd web && yarn build)",
            "make -C api build",
        ],
        &[
            "make -C api test && (cd web && yarn test --ci)",
            "./scripts/e2e.sh --headless",
        ],
    );
}

#[test]
fn crlf_line_endings() {
    expect("crlf.md", &[], &["pytest -q"]);
}

#[test]
fn library_readme_with_only_a_user_install_finds_nothing() {
    assert_eq!(commands("install-only.md"), None);
    let readme = fixture("docs/install-only.md");
    assert_eq!(
        discover(
            None,
            &[Document {
                name: "README.md",
                text: &readme
            }]
        ),
        Discovery::NothingFound {
            searched: vec!["README.md".to_owned()]
        }
    );
}

#[test]
fn claude_md_before_readme() {
    let claude = fixture("docs/claude-node.md");
    let readme = fixture("docs/react-app.md");
    let Discovery::Found(found) = discover(
        None,
        &[
            Document {
                name: "CLAUDE.md",
                text: &claude,
            },
            Document {
                name: "README.md",
                text: &readme,
            },
        ],
    ) else {
        panic!("found nothing");
    };
    assert_eq!(found.source.name(), "CLAUDE.md");
    assert_eq!(found.test, ["pnpm test"]);
}

/// Issue 15 item 2: a README that builds with shell scripts gets a build gate;
/// downloads piped into a shell in the same README are still refused.
#[test]
fn shell_scripts_and_literal_commands_count() {
    expect(
        "shell-scripts.md",
        &["sh build.sh", "bash -e ./scripts/build-docs.sh --html"],
        &["bash ./scripts/test.sh", "sh -c 'make test'"],
    );
}

/// Issue 19 item 18: code that is not written in the line — command and
/// process substitution, `eval`, downloads — is refused anywhere in a line,
/// not only as the first word of a part; what is left is the honest commands.
#[test]
fn hidden_code_anywhere_in_a_line_is_refused() {
    expect("hostile-commands.md", &["make build"], &["go test ./..."]);
}
