//! Discovery on real public repositories (issue 24 item 2): each fixture
//! under `tests/fixtures/real/OWNER-NAME/` holds the repository's README, the
//! manifests discovery reads, `top-level.txt` (the names at the top of the
//! checkout) and `SOURCE.txt` (repository and commit). The expected commands
//! are written by hand: what a person new to the project would run to build
//! and test it on Linux, in one shell.

use std::path::{Path, PathBuf};

use review_core::build_commands::manifests::MANIFEST_NAMES;
use review_core::build_commands::{
    DOCUMENT_NAMES, Discovery, Document, TopLevel, discover_in_checkout,
};

/// What a person would run, by hand.
struct Expected {
    fixture: &'static str,
    /// `None`: nothing to build or test.
    source: Option<&'static str>,
    setup: &'static [&'static str],
    build: &'static [&'static str],
    test: &'static [&'static str],
    /// Why discovery does not get it right (still checked: it must stay wrong
    /// in the way described, so a fix shows up here).
    known_miss: Option<&'static str>,
}

const VENV: [&str; 2] = ["python3 -m venv .venv", ". .venv/bin/activate"];

fn venv_then(install: &'static [&'static str]) -> &'static [&'static str] {
    let all: Vec<&'static str> = VENV
        .iter()
        .copied()
        .chain(install.iter().copied())
        .collect();
    Box::leak(all.into_boxed_slice())
}

#[allow(clippy::too_many_lines)]
fn expectations() -> Vec<Expected> {
    let none: &[&str] = &[];
    vec![
        Expected {
            fixture: "burntsushi-ripgrep",
            source: Some("README.md"),
            setup: none,
            build: &["cargo build --release"],
            test: &["cargo test --all"],
            known_miss: None,
        },
        Expected {
            fixture: "burntsushi-walkdir",
            source: Some("Cargo.toml (inferred)"),
            setup: none,
            build: &["cargo build"],
            test: &["cargo test"],
            known_miss: None,
        },
        Expected {
            fixture: "sharkdp-fd",
            source: Some("README.md"),
            setup: none,
            build: &["cargo build"],
            test: &["cargo test"],
            known_miss: None,
        },
        Expected {
            fixture: "tokio-rs-mini-redis",
            source: Some("Cargo.toml (inferred)"),
            setup: none,
            build: &["cargo build --locked"],
            test: &["cargo test --locked"],
            known_miss: None,
        },
        Expected {
            fixture: "simonw-datasette-graphql",
            source: Some("README.md"),
            setup: &[
                "python3 -mvenv venv",
                ". venv/bin/activate",
                "pip install -e '.[test]'",
            ],
            build: none,
            test: &["pytest"],
            known_miss: None,
        },
        Expected {
            fixture: "httpie-cli",
            // pytest reads pytest.ini before setup.cfg, and so does discovery.
            source: Some("pytest.ini (inferred)"),
            setup: venv_then(&["pip install -e '.[test]'"]),
            build: none,
            test: &["pytest"],
            known_miss: None,
        },
        Expected {
            fixture: "pallets-click",
            source: Some("pyproject.toml (inferred)"),
            setup: venv_then(&["pip install -e .", "pip install 'pytest'"]),
            build: none,
            test: &["pytest"],
            known_miss: None,
        },
        Expected {
            fixture: "psf-black",
            source: Some("pyproject.toml (inferred)"),
            setup: venv_then(&[
                "pip install -e .",
                "pip install 'pytest>=7' 'pytest-xdist>=3.0.2'",
            ]),
            build: none,
            test: &["pytest"],
            known_miss: None,
        },
        Expected {
            fixture: "encode-httpx",
            source: Some("pyproject.toml (inferred)"),
            setup: venv_then(&["pip install -r requirements.txt"]),
            build: none,
            test: &["pytest"],
            known_miss: None,
        },
        Expected {
            fixture: "tiangolo-typer",
            source: Some("pyproject.toml (inferred)"),
            setup: venv_then(&["pip install -r requirements-tests.txt"]),
            build: none,
            test: &["pytest"],
            known_miss: None,
        },
        Expected {
            fixture: "simonw-sqlite-utils",
            source: Some("pyproject.toml (inferred)"),
            setup: venv_then(&[
                "pip install -e .",
                "pip install 'black>=26.3.1' 'click>=8.4.2' 'cogapp' 'hypothesis' 'pytest' 'data-science-types' 'mypy' 'types-click' 'types-pluggy' 'types-python-dateutil' 'types-tabulate' 'flake8' 'flake8-pyproject' 'pyright>=1.1.411' 'ty>=0.0.37' 'tabulate>=0.10.0'",
            ]),
            build: none,
            test: &["pytest"],
            known_miss: None,
        },
        Expected {
            fixture: "simonw-shot-scraper",
            source: Some("pyproject.toml (inferred)"),
            setup: venv_then(&[
                "pip install -e .",
                "pip install 'pytest' 'cogapp' 'pytest-mock'",
            ]),
            build: none,
            test: &["pytest"],
            known_miss: None,
        },
        Expected {
            fixture: "simonw-llm",
            source: Some("pytest.ini (inferred)"),
            setup: venv_then(&[
                "pip install -e .",
                "pip install 'build' 'click>=8.2.0' 'pytest' 'numpy' 'pytest-httpx>=0.33.0' 'pytest-asyncio' 'cogapp' 'mypy>=1.10.0' 'black>=26.3.1' 'pytest-recording' 'ruff>=0.16.0' 'syrupy' 'types-click' 'types-PyYAML' 'types-setuptools' 'llm-echo==0.3a3' 'sphinx==7.2.6' 'furo==2023.9.10' 'sphinx-autobuild' 'sphinx-copybutton' 'sphinx-markdown-builder==0.6.8' 'myst-parser'",
            ]),
            build: none,
            test: &["pytest"],
            known_miss: None,
        },
        Expected {
            fixture: "hukkin-tomli",
            source: Some("pyproject.toml (inferred)"),
            setup: VENV.as_slice(),
            build: none,
            test: &["python -m unittest"],
            known_miss: Some(
                "tests run with unittest through tox ([tool.tox] in pyproject.toml); discovery infers pytest projects only and finds nothing",
            ),
        },
        Expected {
            fixture: "pypa-sampleproject",
            source: Some("noxfile.py (inferred)"),
            setup: venv_then(&["pip install nox"]),
            build: none,
            test: &["nox"],
            known_miss: Some(
                "tests run through nox (noxfile.py), pytest is not configured anywhere discovery looks; it finds nothing",
            ),
        },
        Expected {
            fixture: "asabeneh-30-days-of-python",
            source: None,
            setup: none,
            build: none,
            test: none,
            known_miss: None,
        },
        Expected {
            fixture: "expressjs-express",
            source: Some("Readme.md"),
            setup: &["npm install"],
            build: none,
            test: &["npm test"],
            known_miss: None,
        },
        Expected {
            fixture: "gothinkster-vue-realworld-example-app",
            source: Some("README.md"),
            setup: &["yarn install"],
            build: &["yarn run build"],
            test: &["yarn test"],
            known_miss: None,
        },
        Expected {
            fixture: "cypress-io-cypress-realworld-app",
            source: Some("package.json (inferred)"),
            setup: &["yarn install --immutable"],
            build: &["yarn build"],
            test: &["yarn test:unit:ci"],
            known_miss: Some(
                "its test script is `yarn cypress:open` (interactive, rightly refused) and the README documents no headless test; the unit tests' script (test:unit:ci) is not guessed",
            ),
        },
        Expected {
            fixture: "gin-gonic-gin",
            source: Some("go.mod (inferred)"),
            setup: none,
            build: &["go build ./..."],
            test: &["go test ./..."],
            known_miss: None,
        },
        Expected {
            fixture: "spf13-cobra",
            source: Some("go.mod (inferred)"),
            setup: none,
            build: &["go build ./..."],
            test: &["go test ./..."],
            known_miss: None,
        },
        Expected {
            fixture: "gothinkster-golang-gin-realworld-example-app",
            source: Some("readme.md"),
            setup: &["go mod tidy"],
            build: &["go build ./..."],
            test: &["go test ./..."],
            known_miss: None,
        },
    ]
}

fn fixture_directory(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/real")
        .join(name)
}

/// What discovery finds in a fixture: `(source, setup, build, test)`, or `None`.
type Found = Option<(String, Vec<String>, Vec<String>, Vec<String>)>;

fn discover_fixture(name: &str) -> Found {
    let directory = fixture_directory(name);
    let read = |file: &str| std::fs::read_to_string(directory.join(file)).ok();
    let names: Vec<String> = read("top-level.txt")
        .expect("top-level.txt")
        .lines()
        .map(str::to_owned)
        .collect();
    let mut documents = Vec::new();
    for wanted in DOCUMENT_NAMES {
        if let Some(actual) = names.iter().find(|name| name.eq_ignore_ascii_case(wanted)) {
            documents.push((actual.clone(), read(actual).expect("document copied")));
        }
    }
    let manifests: Vec<(String, String)> = MANIFEST_NAMES
        .iter()
        .filter_map(|manifest| Some(((*manifest).to_owned(), read(manifest)?)))
        .collect();
    let documents: Vec<Document<'_>> = documents
        .iter()
        .map(|(name, text)| Document { name, text })
        .collect();
    let manifests: Vec<Document<'_>> = manifests
        .iter()
        .map(|(name, text)| Document { name, text })
        .collect();
    let report = discover_in_checkout(
        None,
        &documents,
        Some(TopLevel {
            names: &names,
            manifests: &manifests,
        }),
    );
    match report.discovery {
        Discovery::Found(found) => {
            Some((found.source.name(), found.setup, found.build, found.test))
        }
        Discovery::NothingFound { .. } => None,
    }
}

fn expected_found(expected: &Expected) -> Found {
    let owned = |list: &[&str]| {
        list.iter()
            .map(|item| (*item).to_owned())
            .collect::<Vec<_>>()
    };
    expected.source.map(|source| {
        (
            source.to_owned(),
            owned(expected.setup),
            owned(expected.build),
            owned(expected.test),
        )
    })
}

/// Every fixture gives exactly the commands a person would run, except the
/// known misses, which are listed with why. Prints the score.
#[test]
fn real_readmes_give_the_commands_a_person_would_run() {
    let expectations = expectations();
    let mut right = 0;
    let mut failures = Vec::new();
    for expected in &expectations {
        assert!(
            fixture_directory(expected.fixture)
                .join("SOURCE.txt")
                .is_file(),
            "{}: every real fixture says where it came from",
            expected.fixture
        );
        let found = discover_fixture(expected.fixture);
        let wanted = expected_found(expected);
        match (found == wanted, expected.known_miss) {
            (true, None) => right += 1,
            (true, Some(_)) => failures.push(format!(
                "{}: now right — remove its known_miss",
                expected.fixture
            )),
            (false, None) => failures.push(format!(
                "{}:\n  found    {found:?}\n  expected {wanted:?}",
                expected.fixture
            )),
            (false, Some(why)) => eprintln!("known miss {}: {why}", expected.fixture),
        }
    }
    eprintln!(
        "discovery gives exactly the commands a person would run for {right} of {} real repositories",
        expectations.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(expectations.len() >= 12);
}
