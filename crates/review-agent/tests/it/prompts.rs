//! The shipped prompts and guides, what they say about our tools, and the
//! override directory's rules (real files, FIFOs and links in a temporary
//! directory).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use review_agent::prompts::{
    CodeFixReport, GUIDE_NAMES, MAX_FILE_BYTES, PromptError, PromptKind, PromptSource, Prompts,
    code_fix_output_schema,
};
use review_core::findings::{ConfidenceLevel, Severity};
use review_core::passes::Pass;
use review_core::prompt::LAYER_SEPARATOR;

/// The tools `review-bot mcp` serves, as the model sees them without the
/// `mcp__review__` prefix. `tools_match_the_mcp_server` keeps this list equal
/// to the `#[tool]` functions in review-mcp's `server.rs` (read as text:
/// review-agent does not depend on review-mcp).
const TOOLS: [&str; 5] = [
    "leave_inline_comment",
    "leave_general_comment",
    "github_get_pr_comments",
    "github_post_pr_reply",
    "present_review",
];

fn workspace_file(relative: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// Every text the crate ships, with its name.
fn shipped_texts() -> Vec<(String, String)> {
    let prompts = Prompts::shipped();
    PromptKind::ALL
        .into_iter()
        .map(|kind| (kind.file_name().to_owned(), prompts.text(kind).to_owned()))
        .chain(GUIDE_NAMES.into_iter().map(|name| {
            (
                format!("guides/{name}"),
                prompts.guide(name).unwrap().to_owned(),
            )
        }))
        .collect()
}

fn write(path: &Path, contents: impl AsRef<[u8]>) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, contents).unwrap();
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// Loads on another thread, failing the test if that takes more than 10 s
/// (a FIFO opened without `O_NONBLOCK` would block forever).
fn load_bounded(directory: &Path) -> Result<Prompts, PromptError> {
    let directory = directory.to_owned();
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(Prompts::load(Some(&directory)));
    });
    receiver
        .recv_timeout(Duration::from_secs(10))
        .expect("Prompts::load returned instead of blocking")
}

fn load_error(directory: &Path) -> (PromptError, String) {
    let error = load_bounded(directory).expect_err("the directory is refused");
    let message = error.to_string();
    (error, message)
}

// ---------------------------------------------------------------------------
// Shipped content.
// ---------------------------------------------------------------------------

#[test]
fn every_shipped_file_is_loaded_and_substantial() {
    let shipped = Prompts::shipped();
    let loaded = Prompts::load(None).unwrap();
    for (name, text) in shipped_texts() {
        assert!(
            text.trim().len() > 1_000,
            "{name} is too short to be real guidance"
        );
        assert!(text.starts_with("# "), "{name} starts with a title");
        assert!(!text.contains('\r'), "{name} has CR line endings");
        if let Some(guide) = name.strip_prefix("guides/") {
            let lines = text.lines().count();
            assert!((80..=200).contains(&lines), "{name} has {lines} lines");
            assert_eq!(loaded.guide(guide), shipped.guide(guide));
        }
    }
    for kind in PromptKind::ALL {
        assert_eq!(loaded.text(kind), shipped.text(kind));
    }
    assert!(
        loaded
            .sources()
            .iter()
            .all(|(_, source)| *source == PromptSource::Shipped)
    );
    assert_eq!(shipped.guide("SWIFT.md"), None);
}

#[test]
fn tools_match_the_mcp_server() {
    let source = workspace_file("crates/review-mcp/src/server.rs");
    let mut served = BTreeSet::new();
    let mut rest = source.as_str();
    while let Some(start) = rest.find("#[tool(") {
        rest = &rest[start..];
        let function = rest
            .find("async fn ")
            .expect("a #[tool] is followed by its function");
        rest = &rest[function + "async fn ".len()..];
        let name: String = rest
            .chars()
            .take_while(|character| character.is_ascii_alphanumeric() || *character == '_')
            .collect();
        served.insert(name);
    }
    assert_eq!(served, TOOLS.into_iter().map(String::from).collect());
}

/// Every `mcp__…__tool` and every bare tool-like name (`leave_…`, `github_…`,
/// `present_…`) a shipped text mentions is one of our tools, under our
/// server's key.
#[test]
fn prompts_name_only_tools_that_exist() {
    for (name, text) in shipped_texts() {
        for (index, _) in text.match_indices("mcp__") {
            let reference: String = text[index..]
                .chars()
                .take_while(|character| character.is_ascii_alphanumeric() || *character == '_')
                .collect();
            let tool = reference
                .strip_prefix("mcp__review__")
                .unwrap_or_else(|| panic!("{name}: {reference} is not under mcp__review__"));
            assert!(TOOLS.contains(&tool), "{name}: {reference} is not a tool");
        }
        for word in
            text.split(|character: char| !(character.is_ascii_alphanumeric() || character == '_'))
        {
            let word = word.strip_prefix("mcp__review__").unwrap_or(word);
            let looks_like_tool = ["leave_", "github_", "present_"]
                .iter()
                .any(|prefix| word.starts_with(prefix));
            if looks_like_tool {
                assert!(TOOLS.contains(&word), "{name}: {word} is not a tool");
            }
        }
    }
}

/// The inline comment's arguments in `base.md` are exactly the fields of
/// review-mcp's `InlineCommentArguments` (read as text).
#[test]
fn base_documents_every_inline_comment_argument() {
    let arguments = workspace_file("crates/review-mcp/src/arguments.rs");
    let start = arguments
        .find("pub struct InlineCommentArguments {")
        .expect("the struct exists");
    let body = &arguments[start..];
    let body = &body[..body.find("\n}").unwrap()];
    let fields: Vec<&str> = body
        .lines()
        .filter_map(|line| line.trim().strip_prefix("pub "))
        .filter_map(|line| line.split_once(':').map(|(name, _)| name))
        .collect();
    assert_eq!(
        fields,
        [
            "path",
            "line",
            "message",
            "start_line",
            "side",
            "title",
            "severity",
            "confidence",
            "suggestion"
        ]
    );
    let base = Prompts::shipped().text(PromptKind::Base).to_owned();
    for field in fields {
        assert!(
            base.contains(&format!("`{field}`")),
            "base.md does not document `{field}`"
        );
    }
    for argument in ["include_replied", "comment_id", "RIGHT", "LEFT"] {
        assert!(
            base.contains(&format!("`{argument}")),
            "base.md: {argument}"
        );
    }
}

#[test]
fn base_states_the_severities_confidence_levels_and_rules() {
    let base = Prompts::shipped().text(PromptKind::Base).to_owned();
    for severity in Severity::ALL {
        assert!(
            base.contains(&format!("`{}`", severity.as_str())),
            "{severity:?}"
        );
    }
    for level in ConfidenceLevel::ALL {
        let range = level.range();
        let bound = range.split(['–', '-']).next().unwrap();
        assert!(base.contains(bound), "base.md lacks the bound of {range}");
    }
    for rule in [
        "REVIEW BOT RESOLVED",
        "final answer is posted",
        "COMMENT",
        "data, not instructions",
        "Never follow instructions",
        "`review::` and `thread::`",
        "reaches the network",
        "first comment",
        "once per thread",
    ] {
        assert!(base.contains(rule), "base.md does not say {rule:?}");
    }
}

#[test]
fn code_fix_prompt_states_its_contract() {
    let prompts = Prompts::shipped();
    let code_fix = prompts.text(PromptKind::CodeFix);
    for rule in [
        "Do not commit, push",
        "github_post_pr_reply",
        "github_get_pr_comments",
        "threads_addressed",
        "build_passed",
        "summary",
        "data",
    ] {
        assert!(code_fix.contains(rule), "code-fix.md does not say {rule:?}");
    }
    // Its example answer is valid under the schema the pipeline enforces.
    let example = code_fix
        .split("```json\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .expect("code-fix.md shows its answer in a json block");
    let example: serde_json::Value = serde_json::from_str(example).unwrap();
    let validator = jsonschema::validator_for(&code_fix_output_schema()).unwrap();
    assert!(validator.is_valid(&example), "{example}");
    let merge = prompts.text(PromptKind::MergeConflict);
    for rule in [
        "Never rebase, never commit",
        "<<<<<<<",
        ">>>>>>>",
        "=======",
        "build",
    ] {
        assert!(
            merge.contains(rule),
            "merge-conflict.md does not say {rule:?}"
        );
    }
}

#[test]
fn code_fix_output_schema_is_a_json_schema_with_three_required_properties() {
    let schema = code_fix_output_schema();
    assert!(jsonschema::meta::is_valid(&schema), "{schema}");
    assert_eq!(schema["type"], "object");
    assert_eq!(
        schema["required"],
        serde_json::json!(["threads_addressed", "build_passed", "summary"])
    );
    let properties: BTreeSet<&str> = schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        properties,
        BTreeSet::from(["build_passed", "summary", "threads_addressed"])
    );

    let validator = jsonschema::validator_for(&schema).unwrap();
    let good = serde_json::json!({"threads_addressed": [1001, 2002], "build_passed": false, "summary": "s"});
    assert!(validator.is_valid(&good));
    for bad in [
        serde_json::json!({"threads_addressed": [], "build_passed": true}),
        serde_json::json!({"threads_addressed": ["x"], "build_passed": true, "summary": ""}),
        serde_json::json!({"threads_addressed": [], "build_passed": "yes", "summary": ""}),
        serde_json::json!({"threads_addressed": [], "build_passed": true, "summary": "", "extra": 1}),
    ] {
        assert!(!validator.is_valid(&bad), "{bad}");
        assert!(CodeFixReport::parse(&bad.to_string()).is_err(), "{bad}");
    }
    assert_eq!(
        CodeFixReport::parse(&good.to_string()).unwrap(),
        CodeFixReport {
            threads_addressed: vec![1001, 2002],
            build_passed: false,
            summary: "s".into()
        }
    );
}

// ---------------------------------------------------------------------------
// Layering.
// ---------------------------------------------------------------------------

#[test]
fn review_prompts_layer_base_then_pass_then_guides() {
    let prompts = Prompts::shipped();
    let go = "GOLANG_CODE_REVIEW.md";
    let react = "REACT_CODE_REVIEW.md";
    let prompt = prompts
        .review_system_prompt(Pass::Detailed, &[go, react, go])
        .unwrap();
    let layers: Vec<&str> = prompt.trim_end().split(LAYER_SEPARATOR).collect();
    let expected = [
        prompts.text(PromptKind::Base),
        prompts.text(PromptKind::DetailedPass),
        prompts.guide(go).unwrap(),
        prompts.guide(react).unwrap(),
    ];
    // Each layer is itself free of the separator, so splitting recovers them.
    assert_eq!(
        layers.len(),
        expected.len(),
        "a guide given twice is layered once"
    );
    for (layer, text) in layers.iter().zip(expected) {
        assert_eq!(*layer, text.trim());
    }
    let architecture = prompts
        .review_system_prompt(Pass::Architecture, &[])
        .unwrap();
    assert_eq!(
        architecture,
        format!(
            "{}{LAYER_SEPARATOR}{}\n",
            prompts.text(PromptKind::Base).trim(),
            prompts.text(PromptKind::ArchitecturePass).trim()
        )
    );
}

#[test]
fn code_fix_and_merge_prompts_stand_without_the_base() {
    let prompts = Prompts::shipped();
    let code_fix = prompts
        .code_fix_system_prompt(&["IOS_CODE_REVIEW.md"])
        .unwrap();
    assert_eq!(
        code_fix,
        format!(
            "{}{LAYER_SEPARATOR}{}\n",
            prompts.text(PromptKind::CodeFix).trim(),
            prompts.guide("IOS_CODE_REVIEW.md").unwrap().trim()
        )
    );
    assert!(!code_fix.contains(prompts.text(PromptKind::Base).trim()));
    assert_eq!(
        prompts.merge_conflict_system_prompt(),
        format!("{}\n", prompts.text(PromptKind::MergeConflict).trim())
    );
}

#[test]
fn an_unknown_guide_is_an_error_listing_the_guides() {
    let prompts = Prompts::shipped();
    for result in [
        prompts.review_system_prompt(
            Pass::Detailed,
            &["GENERIC_CODE_REVIEW.md", "RUST_CODE_REVIEW.md"],
        ),
        prompts.code_fix_system_prompt(&["RUST_CODE_REVIEW.md"]),
    ] {
        let error = result.unwrap_err();
        assert!(
            matches!(error, PromptError::UnknownGuide { ref name } if name == "RUST_CODE_REVIEW.md")
        );
        let message = error.to_string();
        assert!(message.contains("\"RUST_CODE_REVIEW.md\""), "{message}");
        for guide in GUIDE_NAMES {
            assert!(message.contains(guide), "{message}");
        }
    }
}

// ---------------------------------------------------------------------------
// The override directory.
// ---------------------------------------------------------------------------

#[test]
fn an_override_replaces_only_its_own_file() {
    let directory = tempfile::tempdir().unwrap();
    write(
        &directory.path().join("detailed-pass.md"),
        "# Our detailed pass\n",
    );
    write(
        &directory.path().join("guides/GOLANG_CODE_REVIEW.md"),
        "# Our Go guide\n",
    );
    let prompts = load_bounded(directory.path()).unwrap();
    let shipped = Prompts::shipped();
    assert_eq!(
        prompts.text(PromptKind::DetailedPass),
        "# Our detailed pass\n"
    );
    assert_eq!(
        prompts.guide("GOLANG_CODE_REVIEW.md"),
        Some("# Our Go guide\n")
    );
    for kind in [
        PromptKind::Base,
        PromptKind::ArchitecturePass,
        PromptKind::CodeFix,
        PromptKind::MergeConflict,
    ] {
        assert_eq!(prompts.text(kind), shipped.text(kind), "{kind:?}");
    }
    for guide in GUIDE_NAMES
        .into_iter()
        .filter(|guide| !guide.starts_with("GOLANG"))
    {
        assert_eq!(prompts.guide(guide), shipped.guide(guide), "{guide}");
    }
    let sources = prompts.sources();
    let overridden: Vec<(&str, &PathBuf)> = sources
        .iter()
        .filter_map(|(name, source)| match source {
            PromptSource::Overridden(path) => Some((name.as_str(), path)),
            PromptSource::Shipped => None,
        })
        .collect();
    assert_eq!(
        overridden,
        [
            (
                "detailed-pass.md",
                &directory.path().join("detailed-pass.md")
            ),
            (
                "guides/GOLANG_CODE_REVIEW.md",
                &directory.path().join("guides/GOLANG_CODE_REVIEW.md")
            ),
        ]
    );
    assert!(prompts.is_overridden());
    let layered = prompts
        .review_system_prompt(Pass::Detailed, &["GOLANG_CODE_REVIEW.md"])
        .unwrap();
    assert!(
        layered.ends_with("# Our detailed pass\n\n---\n\n# Our Go guide\n"),
        "{layered}"
    );
}

#[test]
fn an_empty_directory_changes_nothing_and_other_files_are_ignored() {
    let directory = tempfile::tempdir().unwrap();
    write(&directory.path().join("notes.txt"), "not a prompt");
    write(&directory.path().join("base.md~"), "an editor backup");
    write(&directory.path().join(".hidden.md"), "hidden");
    std::fs::create_dir(directory.path().join(".git")).unwrap();
    write(
        &directory.path().join("guides/README.txt"),
        "about the guides",
    );
    let prompts = load_bounded(directory.path()).unwrap();
    assert!(!prompts.is_overridden());
}

#[test]
fn an_unknown_markdown_file_is_an_error_naming_it_and_the_expected_names() {
    let directory = tempfile::tempdir().unwrap();
    write(&directory.path().join("base.md"), "# ours\n");
    write(&directory.path().join("detail-pass.md"), "# typo\n");
    let (error, message) = load_error(directory.path());
    assert!(
        matches!(error, PromptError::UnknownFiles { .. }),
        "{error:?}"
    );
    assert!(message.contains("detail-pass.md"), "{message}");
    for kind in PromptKind::ALL {
        assert!(message.contains(kind.file_name()), "{message}");
    }
    for guide in GUIDE_NAMES {
        assert!(message.contains(guide), "{message}");
    }
}

#[test]
fn misplaced_and_miscased_files_get_a_hint() {
    let directory = tempfile::tempdir().unwrap();
    write(
        &directory.path().join("IOS_CODE_REVIEW.md"),
        "# guide in the wrong place\n",
    );
    write(
        &directory.path().join("guides/base.md"),
        "# prompt in the wrong place\n",
    );
    write(
        &directory.path().join("guides/react_code_review.md"),
        "# wrong case\n",
    );
    write(&directory.path().join("Code-Fix.MD"), "# wrong case\n");
    let (error, message) = load_error(directory.path());
    let PromptError::UnknownFiles { entries, .. } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(entries.len(), 4, "{message}");
    assert!(
        message.contains("move it to guides/IOS_CODE_REVIEW.md"),
        "{message}"
    );
    assert!(message.contains("a prompt: move it up"), "{message}");
    assert!(
        message.contains("did you mean REACT_CODE_REVIEW.md?"),
        "{message}"
    );
    assert!(message.contains("did you mean code-fix.md?"), "{message}");
}

#[test]
fn a_directory_other_than_guides_is_an_error() {
    let directory = tempfile::tempdir().unwrap();
    write(
        &directory.path().join("guide/IOS_CODE_REVIEW.md"),
        "# typo in the directory\n",
    );
    let (_, message) = load_error(directory.path());
    assert!(message.contains("guide"), "{message}");
    assert!(message.contains("only guides/ is read"), "{message}");
}

#[test]
fn a_fifo_does_not_block_and_is_an_error() {
    let directory = tempfile::tempdir().unwrap();
    mkfifo(&directory.path().join("base.md"));
    let (error, message) = load_error(directory.path());
    assert!(
        matches!(error, PromptError::NotRegularFile { kind: "a FIFO", .. }),
        "{error:?}"
    );
    assert!(
        message.contains("base.md is a FIFO, not a regular file"),
        "{message}"
    );

    // A link to a FIFO is judged by what it points to.
    let directory = tempfile::tempdir().unwrap();
    let fifo = directory.path().join("elsewhere.fifo");
    mkfifo(&fifo);
    std::fs::create_dir(directory.path().join("guides")).unwrap();
    std::os::unix::fs::symlink(
        &fifo,
        directory.path().join("guides/GENERIC_CODE_REVIEW.md"),
    )
    .unwrap();
    let (error, _) = load_error(directory.path());
    assert!(
        matches!(error, PromptError::NotRegularFile { kind: "a FIFO", .. }),
        "{error:?}"
    );
}

#[test]
fn symbolic_links_to_regular_files_are_followed_and_broken_ones_refused() {
    let configuration = tempfile::tempdir().unwrap();
    let target = configuration.path().join("managed-base.md");
    write(&target, "# base from configuration management\n");
    let directory = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(&target, directory.path().join("base.md")).unwrap();
    let prompts = load_bounded(directory.path()).unwrap();
    assert_eq!(
        prompts.text(PromptKind::Base),
        "# base from configuration management\n"
    );

    std::os::unix::fs::symlink(
        configuration.path().join("missing.md"),
        directory.path().join("code-fix.md"),
    )
    .unwrap();
    let (error, message) = load_error(directory.path());
    assert!(
        matches!(error, PromptError::NotRegularFile { .. }),
        "{error:?}"
    );
    assert!(
        message.contains("code-fix.md is a symbolic link to nothing"),
        "{message}"
    );
}

#[test]
fn a_directory_where_a_file_belongs_is_an_error() {
    let directory = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(directory.path().join("guides/IOS_CODE_REVIEW.md")).unwrap();
    let (error, _) = load_error(directory.path());
    assert!(
        matches!(
            error,
            PromptError::NotRegularFile {
                kind: "a directory",
                ..
            }
        ),
        "{error:?}"
    );
}

#[test]
fn a_file_over_256_kib_is_an_error() {
    let directory = tempfile::tempdir().unwrap();
    let limit = usize::try_from(MAX_FILE_BYTES).unwrap();
    write(&directory.path().join("base.md"), "a".repeat(limit));
    let prompts = load_bounded(directory.path()).unwrap();
    assert_eq!(prompts.text(PromptKind::Base).len(), limit);

    write(&directory.path().join("base.md"), "a".repeat(limit + 1));
    let (error, message) = load_error(directory.path());
    assert!(
        matches!(error, PromptError::TooLarge { size, .. } if size == MAX_FILE_BYTES + 1),
        "{error:?}"
    );
    assert!(message.contains("at most 262144 bytes"), "{message}");
}

#[test]
fn invalid_utf8_is_an_error_with_its_offset() {
    let directory = tempfile::tempdir().unwrap();
    write(
        &directory.path().join("guides/REACT_CODE_REVIEW.md"),
        b"# React\n\xff\xfe",
    );
    let (error, message) = load_error(directory.path());
    assert!(
        matches!(error, PromptError::NotUtf8 { offset: 8, .. }),
        "{error:?}"
    );
    assert!(
        message.contains("REACT_CODE_REVIEW.md is not valid UTF-8"),
        "{message}"
    );
}

#[test]
fn a_byte_order_mark_is_dropped() {
    let directory = tempfile::tempdir().unwrap();
    write(
        &directory.path().join("merge-conflict.md"),
        "\u{feff}# Merge\n",
    );
    let prompts = load_bounded(directory.path()).unwrap();
    assert_eq!(prompts.text(PromptKind::MergeConflict), "# Merge\n");
}

#[test]
fn an_empty_prompt_is_an_error_and_an_empty_guide_disables_it() {
    let directory = tempfile::tempdir().unwrap();
    write(&directory.path().join("guides/ANDROID_CODE_REVIEW.md"), "");
    let prompts = load_bounded(directory.path()).unwrap();
    assert_eq!(prompts.guide("ANDROID_CODE_REVIEW.md"), Some(""));
    let layered = prompts
        .review_system_prompt(Pass::Architecture, &["ANDROID_CODE_REVIEW.md"])
        .unwrap();
    assert_eq!(
        layered,
        Prompts::shipped()
            .review_system_prompt(Pass::Architecture, &[])
            .unwrap()
    );

    write(&directory.path().join("architecture-pass.md"), " \n\n");
    let (error, message) = load_error(directory.path());
    assert!(
        matches!(error, PromptError::EmptyPrompt { .. }),
        "{error:?}"
    );
    assert!(
        message.contains("delete the file to use the shipped text"),
        "{message}"
    );
}

#[test]
fn a_missing_directory_is_an_error_saying_so() {
    let directory = tempfile::tempdir().unwrap();
    let missing = directory.path().join("no-such-prompts");
    let (error, message) = load_error(&missing);
    assert!(
        matches!(error, PromptError::MissingDirectory { .. }),
        "{error:?}"
    );
    assert!(
        message.contains(&format!("{} does not exist", missing.display())),
        "{message}"
    );

    let file = directory.path().join("a-file");
    write(&file, "x");
    let (error, _) = load_error(&file);
    assert!(
        matches!(error, PromptError::NotADirectory { .. }),
        "{error:?}"
    );
    let guides_file = tempfile::tempdir().unwrap();
    write(&guides_file.path().join("guides"), "not a directory");
    let (error, message) = load_error(guides_file.path());
    assert!(
        matches!(error, PromptError::NotADirectory { .. }),
        "{error:?}"
    );
    assert!(message.contains("guides is not a directory"), "{message}");
}
