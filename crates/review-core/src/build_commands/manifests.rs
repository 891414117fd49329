//! Build and test commands inferred from a checkout's manifests, when no
//! document gives any (issue 24 item 1(d)).
//!
//! Pure: the caller reads the manifests at the top of the checkout
//! ([`MANIFEST_NAMES`]) and lists the names there; this module parses them
//! (`toml`, `serde_json`) and says what a person new to the project would run.
//! The manifests are tried in a fixed order and the **first that yields a
//! command wins**; any other that would have yielded one is named in a note
//! (a repository with both a `Cargo.toml` and a `package.json` at the top is
//! built as a Rust project, and the operator is told so):
//!
//! 1. **`Cargo.toml`** → `cargo build` / `cargo test`, each with `--locked`
//!    when a `Cargo.lock` is at the top (a workspace's root manifest builds
//!    every default member).
//! 2. **`go.mod`** → `go build ./...` / `go test ./...`.
//! 3. **`package.json`** with a `build` or a real `test` script → setup `npm
//!    ci` with a `package-lock.json` (`yarn install --frozen-lockfile` with a
//!    `yarn.lock`, `--immutable` for Yarn 2+ with a `.yarnrc.yml`; `pnpm
//!    install --frozen-lockfile` with a `pnpm-lock.yaml`), else `npm install`;
//!    `npm run build` when there is a build script; `npm test` when the test
//!    script is not npm's placeholder (`echo "Error: no test specified" &&
//!    exit 1`) and does not wait for a person (`cypress open`, `--watch`, a
//!    script whose name says `open`/`watch`/`dev`/`serve`/`start`).
//! 4. **A Python project with pytest configured** — `[tool.pytest.ini_options]`
//!    or `[tool.pytest]` in `pyproject.toml`, a `pytest.ini`, `[tool:pytest]`
//!    in `setup.cfg`, `[pytest]` in `tox.ini`, a `conftest.py` at the top, or
//!    pytest in a test extra or dependency group → setup `python3 -m venv
//!    .venv`, `. .venv/bin/activate`, then the install: `pip install -e
//!    '.[EXTRA]'` for the first extra named `test`, `tests`, `testing` or
//!    `dev` (pyproject's `[project.optional-dependencies]` or setup.cfg's
//!    `[options.extras_require]`); else `pip install -e .` (when the project
//!    is installable: a `pyproject.toml` with `[project]` or
//!    `[build-system]`, or a `setup.py`) followed by the first dependency
//!    group of those names (PEP 735; its requirements quoted one by one, as
//!    older pips have no `--group`), or else a requirements file
//!    (`requirements-test.txt`, `requirements-tests.txt`, `requirements-dev.txt`,
//!    `test-requirements.txt`, `dev-requirements.txt`, `requirements.txt`);
//!    `pip install pytest` when none of these names pytest; test `pytest`.
//!
//! A malformed manifest infers nothing and says why in a note; nothing here
//! panics on hostile input (every manifest is text the pull request wrote).

use std::collections::BTreeMap;

use super::{CommandSet, Document};

/// The files read at the top of a checkout for inference (exact names), in
/// the order they are tried.
pub const MANIFEST_NAMES: [&str; 13] = [
    "Cargo.toml",
    "go.mod",
    "package.json",
    "pyproject.toml",
    "setup.cfg",
    "tox.ini",
    "pytest.ini",
    "requirements-test.txt",
    "requirements-tests.txt",
    "requirements-dev.txt",
    "test-requirements.txt",
    "dev-requirements.txt",
    "requirements.txt",
];

/// What inference found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inference {
    /// The manifest the commands come from (`Cargo.toml` …) and the commands.
    pub commands: Option<(String, CommandSet)>,
    /// What the operator should know: a malformed manifest, another manifest
    /// that was not used.
    pub notes: Vec<String>,
}

/// Infers the commands from the manifests at the top of a checkout. `names`
/// lists every entry at the top (for lock files and `conftest.py`);
/// `manifests` holds the texts that were read.
pub fn infer<'a>(names: &[String], manifests: &[Document<'a>]) -> Inference {
    let has = |name: &str| names.iter().any(|entry| entry == name);
    let text = |name: &str| -> Option<&'a str> {
        manifests
            .iter()
            .find(|manifest| manifest.name == name)
            .map(|manifest| manifest.text)
    };
    let mut notes = Vec::new();
    let mut candidates: Vec<(String, CommandSet)> = Vec::new();
    if let Some(cargo) = text("Cargo.toml") {
        match cargo_commands(cargo, has("Cargo.lock")) {
            Ok(commands) => candidates.push(("Cargo.toml".to_owned(), commands)),
            Err(why) => notes.push(format!("Cargo.toml: {why}")),
        }
    }
    if text("go.mod").is_some() {
        candidates.push((
            "go.mod".to_owned(),
            CommandSet {
                build: vec!["go build ./...".to_owned()],
                test: vec!["go test ./...".to_owned()],
                ..CommandSet::default()
            },
        ));
    }
    if let Some(package) = text("package.json") {
        match node_commands(package, &has) {
            Ok(Some(commands)) => candidates.push(("package.json".to_owned(), commands)),
            Ok(None) => {}
            Err(why) => notes.push(format!("package.json: {why}")),
        }
    }
    match python_commands(&text, &has) {
        Ok(Some((name, commands))) => candidates.push((name, commands)),
        Ok(None) => {}
        Err(why) => notes.push(why),
    }
    let mut candidates = candidates.into_iter();
    let chosen = candidates.next();
    if let Some((chosen_name, _)) = &chosen {
        let others: Vec<String> = candidates.map(|(name, _)| name).collect();
        if !others.is_empty() {
            notes.push(format!(
                "commands inferred from {chosen_name}; {} at the top of the checkout too was not used (set the commands in .review-bot.toml or the repository's configuration to choose)",
                others.join(", ")
            ));
        }
    }
    Inference {
        commands: chosen,
        notes,
    }
}

fn cargo_commands(text: &str, locked: bool) -> Result<CommandSet, String> {
    let manifest: toml::Table = toml::from_str(text)
        .map_err(|error| format!("not valid TOML ({})", one_line(&error.to_string())))?;
    if !manifest.contains_key("package") && !manifest.contains_key("workspace") {
        return Err("neither a [package] nor a [workspace] table".to_owned());
    }
    let flag = if locked { " --locked" } else { "" };
    Ok(CommandSet {
        build: vec![format!("cargo build{flag}")],
        test: vec![format!("cargo test{flag}")],
        ..CommandSet::default()
    })
}

/// npm's placeholder test script.
const NPM_PLACEHOLDER: &str = "echo \"Error: no test specified\" && exit 1";

fn node_commands(text: &str, has: &dyn Fn(&str) -> bool) -> Result<Option<CommandSet>, String> {
    let manifest: serde_json::Value =
        serde_json::from_str(text).map_err(|error| format!("not valid JSON ({error})"))?;
    let Some(manifest) = manifest.as_object() else {
        return Err("not a JSON object".to_owned());
    };
    let scripts: BTreeMap<&str, &str> = manifest
        .get("scripts")
        .and_then(serde_json::Value::as_object)
        .map(|scripts| {
            scripts
                .iter()
                .filter_map(|(name, script)| Some((name.as_str(), script.as_str()?)))
                .collect()
        })
        .unwrap_or_default();
    let waits = |script: &str| {
        let lower = script.to_ascii_lowercase();
        lower.contains("--watch")
            || lower.contains("cypress open")
            || lower
                .split(|character: char| !character.is_ascii_alphanumeric())
                .any(|word| matches!(word, "open" | "watch" | "serve" | "dev" | "start"))
    };
    let has_build_script = scripts.contains_key("build");
    let has_test_script = scripts
        .get("test")
        .is_some_and(|script| script.trim() != NPM_PLACEHOLDER && !waits(script));
    if !has_build_script && !has_test_script {
        return Ok(None);
    }
    let (install, runner) = if has("package-lock.json") || has("npm-shrinkwrap.json") {
        ("npm ci", "npm")
    } else if has("yarn.lock") {
        if has(".yarnrc.yml") {
            ("yarn install --immutable", "yarn")
        } else {
            ("yarn install --frozen-lockfile", "yarn")
        }
    } else if has("pnpm-lock.yaml") {
        ("pnpm install --frozen-lockfile", "pnpm")
    } else {
        ("npm install", "npm")
    };
    Ok(Some(CommandSet {
        setup: vec![install.to_owned()],
        build: if has_build_script {
            vec![if runner == "npm" {
                "npm run build".to_owned()
            } else {
                format!("{runner} build")
            }]
        } else {
            Vec::new()
        },
        test: if has_test_script {
            vec![format!("{runner} test")]
        } else {
            Vec::new()
        },
        environment: BTreeMap::new(),
    }))
}

/// The names a test extra or dependency group goes by, in preference order.
const TEST_SETS: [&str; 4] = ["test", "tests", "testing", "dev"];

/// The requirements files tried when there is no test extra or group.
const REQUIREMENTS_FILES: [&str; 6] = [
    "requirements-test.txt",
    "requirements-tests.txt",
    "requirements-dev.txt",
    "test-requirements.txt",
    "dev-requirements.txt",
    "requirements.txt",
];

#[allow(clippy::too_many_lines)]
fn python_commands<'a>(
    text: &dyn Fn(&str) -> Option<&'a str>,
    has: &dyn Fn(&str) -> bool,
) -> Result<Option<(String, CommandSet)>, String> {
    let pyproject = match text("pyproject.toml") {
        Some(source) => Some(toml::from_str::<toml::Table>(source).map_err(|error| {
            format!(
                "pyproject.toml: not valid TOML ({})",
                one_line(&error.to_string())
            )
        })?),
        None => None,
    };
    let setup_cfg = text("setup.cfg").map(ini_sections);
    let table = |path: &[&str]| -> Option<&toml::Table> {
        let mut table = pyproject.as_ref()?;
        for key in path {
            table = table.get(*key)?.as_table()?;
        }
        Some(table)
    };
    let mentions_pytest = |requirements: &[String]| {
        requirements
            .iter()
            .any(|requirement| requirement_name(requirement) == "pytest")
    };
    // Test extras: pyproject first, then setup.cfg.
    let mut extras: BTreeMap<String, Vec<String>> = BTreeMap::new();
    if let Some(optional) = table(&["project", "optional-dependencies"]) {
        for (name, requirements) in optional {
            extras.insert(name.clone(), strings(requirements));
        }
    }
    if let Some(entries) = setup_cfg
        .as_ref()
        .and_then(|sections| sections.get("options.extras_require"))
    {
        for (name, value) in entries {
            extras.entry(name.clone()).or_insert_with(|| {
                value
                    .lines()
                    .map(str::trim)
                    .filter(|line| !line.is_empty())
                    .map(str::to_owned)
                    .collect()
            });
        }
    }
    let groups = table(&["dependency-groups"]);
    let group = |name: &str| -> Option<Vec<String>> {
        let groups = groups?;
        groups.get(name)?;
        Some(group_requirements(groups, name, 0))
    };
    let extra = TEST_SETS.iter().find_map(|name| {
        extras
            .get(*name)
            .map(|requirements| (*name, requirements.clone()))
    });
    let test_group = TEST_SETS
        .iter()
        .find_map(|name| group(name).map(|requirements| (*name, requirements)));
    let configured_by = if table(&["tool", "pytest", "ini_options"]).is_some()
        || table(&["tool", "pytest"]).is_some()
    {
        Some("pyproject.toml")
    } else if has("pytest.ini") {
        Some("pytest.ini")
    } else if setup_cfg
        .as_ref()
        .is_some_and(|sections| sections.contains_key("tool:pytest"))
    {
        Some("setup.cfg")
    } else if text("tox.ini").is_some_and(|tox| ini_sections(tox).contains_key("pytest")) {
        Some("tox.ini")
    } else if has("conftest.py") {
        Some("conftest.py")
    } else if extra
        .as_ref()
        .is_some_and(|(_, requirements)| mentions_pytest(requirements))
        || test_group
            .as_ref()
            .is_some_and(|(_, requirements)| mentions_pytest(requirements))
    {
        Some(if pyproject.is_some() {
            "pyproject.toml"
        } else {
            "setup.cfg"
        })
    } else {
        None
    };
    let Some(configured_by) = configured_by else {
        return Ok(None);
    };
    let installable =
        table(&["project"]).is_some() || table(&["build-system"]).is_some() || has("setup.py");
    let mut setup = vec![
        super::DEFAULT_VENV.to_owned(),
        super::DEFAULT_ACTIVATION.to_owned(),
    ];
    let mut has_pytest = false;
    if let (Some((name, requirements)), true) = (&extra, installable) {
        setup.push(format!("pip install -e '.[{name}]'"));
        has_pytest = mentions_pytest(requirements);
    } else {
        let mut editable_in_requirements = false;
        let requirements_file = REQUIREMENTS_FILES.iter().find(|name| has(name)).copied();
        if test_group.is_none()
            && let Some(file) = requirements_file
        {
            let contents = text(file).unwrap_or("");
            editable_in_requirements = contents.lines().any(|line| {
                let line = line.trim();
                line.starts_with("-e .")
                    || line == "."
                    || line.starts_with(".[")
                    || line.starts_with("-e.")
            });
            has_pytest = contents
                .lines()
                .any(|line| requirement_name(line) == "pytest");
        }
        if installable && !editable_in_requirements {
            setup.push("pip install -e .".to_owned());
        }
        if let Some((_, requirements)) = &test_group {
            let quoted: Vec<String> = requirements
                .iter()
                .filter_map(|requirement| quote_requirement(requirement))
                .collect();
            if !quoted.is_empty() {
                setup.push(format!("pip install {}", quoted.join(" ")));
            }
            has_pytest = mentions_pytest(requirements);
        } else if let Some(file) = requirements_file {
            setup.push(format!("pip install -r {file}"));
        }
    }
    if !has_pytest {
        setup.push("pip install pytest".to_owned());
    }
    Ok(Some((
        configured_by.to_owned(),
        CommandSet {
            setup,
            build: Vec::new(),
            test: vec!["pytest".to_owned()],
            environment: BTreeMap::new(),
        },
    )))
}

/// The strings of a TOML array (anything else: none).
fn strings(value: &toml::Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|item| item.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// A dependency group's requirements, its `{include-group = "…"}` entries
/// followed (a bounded depth: a cycle ends there).
fn group_requirements(groups: &toml::Table, name: &str, depth: usize) -> Vec<String> {
    let mut requirements = Vec::new();
    if depth > 8 {
        return requirements;
    }
    let Some(items) = groups.get(name).and_then(toml::Value::as_array) else {
        return requirements;
    };
    for item in items {
        if let Some(requirement) = item.as_str() {
            requirements.push(requirement.to_owned());
        } else if let Some(included) = item
            .as_table()
            .and_then(|table| table.get("include-group"))
            .and_then(toml::Value::as_str)
        {
            requirements.extend(group_requirements(groups, included, depth + 1));
        }
    }
    requirements
}

/// A requirement's project name, lower-case (`pytest>=7` → `pytest`).
fn requirement_name(requirement: &str) -> String {
    requirement
        .trim()
        .split(|character: char| !(character.is_ascii_alphanumeric() || "-_.".contains(character)))
        .next()
        .unwrap_or("")
        .to_ascii_lowercase()
        .replace('_', "-")
}

/// A requirement single-quoted for the shell, or `None` when it could be
/// read as an option or holds a quote or a control character.
fn quote_requirement(requirement: &str) -> Option<String> {
    let requirement = requirement.trim();
    let acceptable = !requirement.is_empty()
        && !requirement.starts_with('-')
        && !requirement
            .chars()
            .any(|character| character == '\'' || character.is_control());
    acceptable.then(|| format!("'{requirement}'"))
}

/// An INI file's sections (`[name]`) and their `key = value` entries, with
/// indented continuation lines joined by newlines. Lenient: anything else
/// is skipped.
fn ini_sections(text: &str) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut sections: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut section: Option<String> = None;
    let mut key: Option<String> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with(['#', ';']) {
            continue;
        }
        if let Some(name) = trimmed
            .strip_prefix('[')
            .and_then(|rest| rest.strip_suffix(']'))
        {
            let name = name.trim().to_owned();
            sections.entry(name.clone()).or_default();
            section = Some(name);
            key = None;
            continue;
        }
        let Some(current) = &section else { continue };
        let entries = sections.entry(current.clone()).or_default();
        if line.starts_with([' ', '\t']) {
            if let Some(key) = &key {
                let value = entries.entry(key.clone()).or_default();
                value.push('\n');
                value.push_str(trimmed);
            }
        } else if let Some((name, value)) = trimmed.split_once(['=', ':']) {
            let name = name.trim().to_owned();
            entries.insert(name.clone(), value.trim().to_owned());
            key = Some(name);
        }
    }
    sections
}

/// The first line of a parser's message (TOML errors quote the source).
fn one_line(message: &str) -> String {
    message.lines().next().unwrap_or("").trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    fn infer_one(top: &[&str], files: &[(&str, &str)]) -> Inference {
        let documents: Vec<Document<'_>> = files
            .iter()
            .map(|(name, text)| Document { name, text })
            .collect();
        infer(&names(top), &documents)
    }

    #[test]
    fn cargo_locked_only_with_a_lock_file() {
        let manifest = "[package]\nname = \"x\"\nversion = \"0.1.0\"\n";
        let locked = infer_one(&["Cargo.toml", "Cargo.lock"], &[("Cargo.toml", manifest)]);
        let (name, commands) = locked.commands.expect("commands");
        assert_eq!(name, "Cargo.toml");
        assert_eq!(commands.build, ["cargo build --locked"]);
        assert_eq!(commands.test, ["cargo test --locked"]);
        let unlocked = infer_one(&["Cargo.toml"], &[("Cargo.toml", manifest)]);
        assert_eq!(unlocked.commands.expect("commands").1.test, ["cargo test"]);
    }

    #[test]
    fn malformed_manifests_say_why_and_infer_nothing() {
        let inference = infer_one(
            &["Cargo.toml", "package.json", "pyproject.toml"],
            &[
                ("Cargo.toml", "[package\nname = "),
                ("package.json", "{\"scripts\": {\"test\": "),
                ("pyproject.toml", "[tool.pytest.ini_options\n"),
            ],
        );
        assert_eq!(inference.commands, None);
        assert_eq!(inference.notes.len(), 3, "{:?}", inference.notes);
        assert!(inference.notes[0].starts_with("Cargo.toml: not valid TOML"));
        assert!(inference.notes[1].starts_with("package.json: not valid JSON"));
        assert!(inference.notes[2].starts_with("pyproject.toml: not valid TOML"));
        let inference = infer_one(&["package.json"], &[("package.json", "[1, 2]")]);
        assert_eq!(inference.notes, ["package.json: not a JSON object"]);
    }

    #[test]
    fn package_json_scripts() {
        let placeholder = r#"{"scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}"#;
        assert_eq!(
            infer_one(&["package.json"], &[("package.json", placeholder)]).commands,
            None
        );
        let app = r#"{"scripts": {"build": "tsc", "test": "jest", "dev": "vite"}}"#;
        let (_, commands) = infer_one(
            &["package.json", "package-lock.json"],
            &[("package.json", app)],
        )
        .commands
        .expect("commands");
        assert_eq!(commands.setup, ["npm ci"]);
        assert_eq!(commands.build, ["npm run build"]);
        assert_eq!(commands.test, ["npm test"]);
        let (_, commands) = infer_one(&["package.json"], &[("package.json", app)])
            .commands
            .expect("commands");
        assert_eq!(commands.setup, ["npm install"]);
        let interactive = r#"{"scripts": {"test": "yarn cypress:open"}}"#;
        assert_eq!(
            infer_one(&["package.json"], &[("package.json", interactive)]).commands,
            None
        );
    }

    #[test]
    fn python_with_pytest_configured() {
        let pyproject = "[project]\nname = \"x\"\n[project.optional-dependencies]\ntests = [\"pytest\", \"pytest-mock\"]\n";
        let (name, commands) = infer_one(&["pyproject.toml"], &[("pyproject.toml", pyproject)])
            .commands
            .expect("commands");
        assert_eq!(name, "pyproject.toml");
        assert_eq!(
            commands.setup,
            [
                "python3 -m venv .venv",
                ". .venv/bin/activate",
                "pip install -e '.[tests]'"
            ]
        );
        assert_eq!(commands.test, ["pytest"]);
        // Configured, no extra: an editable install and pytest.
        let (name, commands) = infer_one(&["setup.py", "conftest.py"], &[])
            .commands
            .expect("commands");
        assert_eq!(name, "conftest.py");
        assert_eq!(
            commands.setup,
            [
                "python3 -m venv .venv",
                ". .venv/bin/activate",
                "pip install -e .",
                "pip install pytest"
            ]
        );
        // A dependency group, quoted one by one; a hostile entry is left out.
        let grouped = "[project]\nname = \"x\"\n[dependency-groups]\ndev = [\"pytest>=7\", \"--index-url=http://evil\", \"it's\", {include-group = \"extra\"}]\nextra = [\"pytest-mock\"]\n";
        let (_, commands) = infer_one(&["pyproject.toml"], &[("pyproject.toml", grouped)])
            .commands
            .expect("commands");
        assert_eq!(
            commands.setup[2..],
            ["pip install -e .", "pip install 'pytest>=7' 'pytest-mock'"]
        );
        // No pytest anywhere: not inferred.
        assert_eq!(
            infer_one(
                &["pyproject.toml"],
                &[("pyproject.toml", "[project]\nname = \"x\"\n")]
            )
            .commands,
            None
        );
    }

    #[test]
    fn the_first_manifest_wins_and_the_others_are_named() {
        let inference = infer_one(
            &["Cargo.toml", "package.json", "go.mod"],
            &[
                ("Cargo.toml", "[workspace]\nmembers = [\"a\"]\n"),
                ("go.mod", "module x\n"),
                ("package.json", r#"{"scripts": {"build": "webpack"}}"#),
            ],
        );
        assert_eq!(inference.commands.expect("commands").0, "Cargo.toml");
        assert_eq!(inference.notes.len(), 1);
        assert!(
            inference.notes[0].contains("go.mod, package.json"),
            "{}",
            inference.notes[0]
        );
    }

    #[test]
    fn hostile_text_never_panics() {
        for text in [
            "",
            "\u{0}",
            "é[",
            "{\"scripts\": {\"build\": 1}}",
            "[[[[",
            "[tool:pytest]\n  x\n\u{feff}",
        ] {
            for name in MANIFEST_NAMES {
                let _ = infer_one(&[name, "setup.py"], &[(name, text)]);
            }
        }
    }
}
