//! Hostile code under a real bubblewrap confinement: a script tries each
//! escape a pull request's `test.sh` would (the bot's config file, another
//! job's checkout, the shared mirror, the bot's home, the bot's processes'
//! environment, a `setsid` survivor, the network) and reaches none; an
//! ordinary build still works.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use review_sandbox::{Confinement, Contained, Containment, SandboxError};
use review_testkit::processes::{live_processes_with_argument, marker};
use tempfile::TempDir;
use tokio::io::AsyncReadExt as _;

/// The canary in the stand-in for the bot's config file and environment.
const CANARY: &str = "canary-7f3a9c-not-for-pull-requests";

/// A work directory laid out as the bot's: a bare mirror per repository, a
/// worktree per job, a run directory per job, and, outside it, a config
/// file and a home holding credentials.
struct World {
    root: TempDir,
}

impl World {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let world = Self { root };
        let mirror = world.mirror();
        std::fs::create_dir_all(mirror.parent().unwrap()).unwrap();
        git(
            world.path(),
            &["init", "--quiet", "--bare", mirror.to_str().unwrap()],
        );
        let seed = world.path().join("seed");
        git(
            world.path(),
            &["init", "--quiet", "--initial-branch=main", "seed"],
        );
        std::fs::write(seed.join("README.md"), "# Fixture\n").unwrap();
        git(&seed, &["add", "."]);
        git(
            &seed,
            &[
                "-c",
                "user.name=Fixture",
                "-c",
                "user.email=fixture@example.com",
                "commit",
                "--quiet",
                "-m",
                "the first commit",
            ],
        );
        git(
            &seed,
            &[
                "push",
                "--quiet",
                mirror.to_str().unwrap(),
                "HEAD:refs/heads/main",
            ],
        );
        for job in ["pr-1", "pr-2"] {
            let worktree = world.worktree(job);
            std::fs::create_dir_all(worktree.parent().unwrap()).unwrap();
            git(
                &mirror,
                &[
                    "worktree",
                    "add",
                    "--quiet",
                    "--detach",
                    worktree.to_str().unwrap(),
                    "main",
                ],
            );
            std::fs::create_dir_all(world.run(job).join("home")).unwrap();
        }
        std::fs::write(world.worktree("pr-2").join("secret.txt"), CANARY).unwrap();
        std::fs::create_dir_all(world.path().join("work/mirrors/owner/other.git")).unwrap();
        std::fs::create_dir_all(world.config().parent().unwrap()).unwrap();
        std::fs::write(world.config(), format!("[github]\ntoken = \"{CANARY}\"\n")).unwrap();
        let home = world.bot_home();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".ssh/id_ed25519"), CANARY).unwrap();
        std::fs::create_dir_all(home.join(".cargo/bin")).unwrap();
        std::fs::write(home.join(".cargo/credentials.toml"), CANARY).unwrap();
        std::fs::write(home.join(".cargo/bin/tool"), "#!/bin/sh\necho tool ran\n").unwrap();
        std::fs::write(home.join(".npmrc"), CANARY).unwrap();
        world
    }

    fn path(&self) -> &Path {
        self.root.path()
    }

    fn mirror(&self) -> PathBuf {
        self.path().join("work/mirrors/owner/repo.git")
    }

    fn worktree(&self, job: &str) -> PathBuf {
        self.path().join("work/worktrees/owner/repo").join(job)
    }

    fn run(&self, job: &str) -> PathBuf {
        self.path().join("work/runs").join(job)
    }

    fn config(&self) -> PathBuf {
        self.path().join("etc/review-bot.toml")
    }

    fn bot_home(&self) -> PathBuf {
        self.path().join("home")
    }

    /// Job `pr-1`'s confinement: its worktree, its run directory, and the
    /// bot's home as a "toolchain" (its credential files must be masked).
    fn confinement(&self) -> Confinement {
        Confinement::new()
            .with_git_worktree(self.worktree("pr-1"))
            .unwrap()
            .with_writable(self.run("pr-1"))
            .with_readable(self.bot_home())
    }

    /// Run `script` with `sh -c` confined to `confinement`, in pr-1's
    /// worktree; its exit status and what it printed.
    async fn sh(&self, confinement: &Confinement, script: &str) -> (Option<i32>, String) {
        let containment = Containment::default();
        let mut command = containment.confined_command("sh", confinement).unwrap();
        command
            .arg("-c")
            .arg(script)
            .current_dir(self.worktree("pr-1"))
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", self.run("pr-1").join("home"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut run = Contained::spawn(&containment, "sh", &mut command).unwrap();
        let mut stdout = run.child_mut().stdout.take().unwrap();
        let mut stderr = run.child_mut().stderr.take().unwrap();
        let mut output = String::new();
        let mut errors = String::new();
        let (read, read_errors) = tokio::join!(
            stdout.read_to_string(&mut output),
            stderr.read_to_string(&mut errors)
        );
        read.unwrap();
        read_errors.unwrap();
        run.leader_exited().await;
        let status = run.finish().await.unwrap();
        (status.code(), format!("{output}\n--- stderr ---\n{errors}"))
    }
}

fn git(directory: &Path, arguments: &[&str]) {
    let status = std::process::Command::new("git")
        .args(arguments)
        .current_dir(directory)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "git {arguments:?}");
}

/// A process of "the bot" with the canary in its environment, until dropped.
struct BotProcess(std::process::Child);

impl BotProcess {
    fn start() -> Self {
        let child = std::process::Command::new("sleep")
            .arg(marker(9))
            .env("REVIEW_BOT_GITHUB_TOKEN", CANARY)
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        Self(child)
    }
}

impl Drop for BotProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn hostile_code_reaches_nothing_of_the_bots_and_leaves_nothing_behind() {
    let world = World::new();
    let bot = BotProcess::start();
    let survivor = marker(1);
    let mirror = world.mirror();
    let probes = [
        format!("cat {}", world.config().display()),
        format!(
            "cat {}",
            world.worktree("pr-2").join("secret.txt").display()
        ),
        format!(
            "ls {}",
            world
                .path()
                .join("work/worktrees/owner/repo/pr-2")
                .display()
        ),
        format!(
            "ls {}",
            world.path().join("work/mirrors/owner/other.git").display()
        ),
        format!("cat {}", world.bot_home().join(".ssh/id_ed25519").display()),
        format!(
            "cat {}",
            world.bot_home().join(".cargo/credentials.toml").display()
        ),
        format!("cat {}", world.bot_home().join(".npmrc").display()),
        format!("tr '\\0' '\\n' < /proc/{}/environ", std::process::id()),
        format!("tr '\\0' '\\n' < /proc/{}/environ", bot.0.id()),
        "cat /etc/shadow".to_owned(),
        "mount -t tmpfs none /usr".to_owned(),
        // Other jobs' checkouts are named in the mirror's `worktrees/`.
        format!("cat {}/worktrees/pr-2/gitdir", mirror.display()),
        format!("ls {}/worktrees | grep -q pr-2", mirror.display()),
        // The private /tmp is bounded (512 MiB by default): 600 MiB do not fit.
        "dd if=/dev/zero of=/tmp/fill bs=1M count=600 2>/dev/null".to_owned(),
    ];
    // Writes that fail, or land in the run's private tmpfs (the parents of
    // its mounts): the host is checked after.
    let writes = [
        format!(
            "echo '[core] fsmonitor = evil' >> {}/config",
            mirror.display()
        ),
        format!("echo evil > {}/hooks/post-checkout", mirror.display()),
        format!("echo evil > {}/worktrees/pr-1/HEAD", mirror.display()),
        "echo 'gitdir: /elsewhere' > .git".to_owned(),
        "echo planted > ../planted".to_owned(),
        format!("echo planted > {}/planted", world.bot_home().display()),
        format!("echo planted > {}/planted", world.path().display()),
        "echo planted > /usr/planted".to_owned(),
    ];
    // Each probe prints REACHED when it works; the script waits until its
    // detached child runs before exiting.
    let mut script = String::new();
    for probe in &probes {
        writeln!(
            script,
            "if {probe} >/tmp/out 2>/dev/null; then echo \"REACHED: {}\"; cat /tmp/out; fi",
            probe.replace('"', "'")
        )
        .unwrap();
    }
    for write in &writes {
        writeln!(script, "{write} 2>/dev/null").unwrap();
    }
    write!(
        script,
        "setsid sleep {survivor} >/dev/null 2>&1 </dev/null &\n\
         until grep -qs sleep /proc/$!/cmdline; do :; done\n\
         echo probed\n"
    )
    .unwrap();

    let (status, output) = world.sh(&world.confinement(), &script).await;

    assert_eq!(status, Some(0), "{output}");
    assert!(output.contains("probed"), "{output}");
    assert!(!output.contains("REACHED"), "{output}");
    assert!(!output.contains(CANARY), "{output}");
    assert_eq!(live_processes_with_argument(&survivor), Vec::<u32>::new());
    // Nothing was written outside: not into the mirror, the worktree's
    // `.git`, its parent, the bot's home or the work directory.
    assert!(
        std::fs::read_to_string(mirror.join("worktrees/pr-1/HEAD"))
            .unwrap()
            .len()
            > 20
    );
    let config = std::fs::read_to_string(mirror.join("config")).unwrap();
    assert!(!config.contains("evil"), "{config}");
    assert!(!mirror.join("hooks/post-checkout").exists());
    assert!(
        std::fs::read_to_string(world.worktree("pr-1").join(".git"))
            .unwrap()
            .starts_with(&format!("gitdir: {}", mirror.display()))
    );
    for planted in [
        world.path().join("work/worktrees/owner/repo/planted"),
        world.bot_home().join("planted"),
        world.path().join("planted"),
    ] {
        assert!(!planted.exists(), "{}", planted.display());
    }
    // The masked files are untouched on the host.
    assert_eq!(
        std::fs::read_to_string(world.bot_home().join(".npmrc")).unwrap(),
        CANARY
    );
}

#[tokio::test]
async fn an_ordinary_build_still_works_confined() {
    let world = World::new();
    let script = "set -e\n\
                  echo built > built.txt\n\
                  mkdir -p target && echo object > target/out.o\n\
                  scratch=$(mktemp)\n\
                  echo scratch > \"$scratch\"\n\
                  echo cached > \"$HOME/cache\"\n\
                  grep -q '^ID=' /etc/os-release\n\
                  git log --oneline | grep -q 'the first commit'\n\
                  git status --short | grep -q built.txt\n\
                  git diff --stat HEAD\n\
                  ls ~/ >/dev/null\n\
                  test \"$(cat $HOME/cache)\" = cached\n\
                  test \"$(git rev-parse --abbrev-ref HEAD)\" = HEAD\n\
                  git rev-parse --git-dir | grep -q worktrees/pr-1\n\
                  echo ok\n";
    let confinement = world.confinement();
    let bot_home = world.bot_home();
    let tool = bot_home.join(".cargo/bin/tool");
    std::fs::set_permissions(&tool, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let script = format!("{script}{}\n", tool.display());

    let (status, output) = world.sh(&confinement, &script).await;

    assert_eq!(status, Some(0), "{output}");
    assert!(output.contains("ok\ntool ran"), "{output}");
    assert_eq!(
        std::fs::read_to_string(world.worktree("pr-1").join("built.txt")).unwrap(),
        "built\n"
    );
    assert!(world.run("pr-1").join("home/cache").exists());
}

#[tokio::test]
async fn without_the_network_only_a_loopback_device_is_left() {
    let world = World::new();
    let devices = |output: &str| -> Vec<String> {
        output
            .lines()
            .filter_map(|line| line.split_once(':'))
            .map(|(name, _)| name.trim().to_owned())
            .filter(|name| !name.contains(' ') && !name.is_empty())
            .collect()
    };
    let (status, offline) = world
        .sh(
            &world.confinement().with_network(false),
            "tail -n +3 /proc/net/dev",
        )
        .await;
    assert_eq!(status, Some(0), "{offline}");
    assert_eq!(devices(offline.split("---").next().unwrap()), ["lo"]);

    let host = std::fs::read_to_string("/proc/net/dev").unwrap();
    let (status, online) = world
        .sh(&world.confinement(), "tail -n +3 /proc/net/dev")
        .await;
    assert_eq!(status, Some(0), "{online}");
    let mut seen = devices(online.split("---").next().unwrap());
    let mut expected = devices(&host.lines().skip(2).collect::<Vec<_>>().join("\n"));
    seen.sort();
    expected.sort();
    assert_eq!(seen, expected, "the host's network is kept");
}

#[tokio::test]
async fn confinement_without_bubblewrap_is_refused_and_says_why() {
    let error = Containment::ProcessGroupOnly
        .confined_command("sh", &Confinement::new())
        .unwrap_err();
    assert!(
        matches!(error, SandboxError::ConfinementNeedsBubblewrap),
        "{error}"
    );
    assert!(
        error.to_string().contains("apt-get install bubblewrap"),
        "{error}"
    );

    let containment = Containment::PidNamespace {
        bwrap: "/nonexistent/bwrap".into(),
    };
    // Refused when the command is made (bubblewrap is looked for first,
    // to start it under the resource limits) or when it is started.
    let error = match containment.confined_command("sh", &Confinement::new()) {
        Err(error) => error,
        Ok(mut command) => Contained::spawn(&containment, "sh", &mut command).unwrap_err(),
    };
    let message = error.to_string();
    for fix in [
        "apt-get install bubblewrap",
        "kernel.unprivileged_userns_clone=1",
        "apparmor_restrict_unprivileged_userns",
        "container",
    ] {
        assert!(message.contains(fix), "{fix} missing: {message}");
    }
}

#[tokio::test]
async fn a_run_is_bounded_by_its_limits() {
    let world = World::new();
    let limits = review_sandbox::Limits {
        tmp_size: Some(8 << 20),
        memory: Some(256 << 20),
        processes: Some(50_000),
        file_size: Some(4 << 20),
    };
    let confinement = world.confinement().with_limits(limits);
    // What the run's own limits say, then each bound hit: /tmp fills at
    // 8 MiB, a 5 MiB file is cut at 4 MiB (SIGXFSZ ignored: the write
    // fails), a 512 MiB allocation fails.
    let script = "echo data=$(prlimit --pid $$ --data --raw --noheadings --output SOFT)\n\
                  echo nproc=$(prlimit --pid $$ --nproc --raw --noheadings --output SOFT)\n\
                  echo fsize=$(prlimit --pid $$ --fsize --raw --noheadings --output SOFT)\n\
                  if dd if=/dev/zero of=/tmp/fill bs=1M count=16 2>/dev/null; then echo tmp-unbounded; fi\n\
                  trap '' XFSZ\n\
                  dd if=/dev/zero of=$HOME/big bs=1M count=5 2>/dev/null\n\
                  echo big=$(stat -c %s $HOME/big)\n\
                  if python3 -c 'bytearray(16 << 20)'; then echo small-allocation; fi\n\
                  if python3 -c 'bytearray(512 << 20)' 2>/dev/null; then echo memory-unbounded; fi\n\
                  echo end\n";
    let (status, output) = world.sh(&confinement, script).await;
    assert_eq!(status, Some(0), "{output}");
    assert!(output.contains("end"), "{output}");
    assert!(output.contains(&format!("data={}", 256 << 20)), "{output}");
    assert!(output.contains("nproc=50000"), "{output}");
    assert!(output.contains(&format!("fsize={}", 4 << 20)), "{output}");
    assert!(output.contains(&format!("big={}", 4 << 20)), "{output}");
    assert!(!output.contains("tmp-unbounded"), "{output}");
    assert!(output.contains("small-allocation"), "{output}");
    assert!(!output.contains("memory-unbounded"), "{output}");
}

#[tokio::test]
async fn a_writable_path_that_is_a_planted_link_is_refused() {
    let world = World::new();
    let home = world.run("pr-1").join("home");
    std::fs::remove_dir_all(&home).unwrap();
    std::os::unix::fs::symlink(world.bot_home(), &home).unwrap();
    let error = world
        .confinement()
        .with_writable(&home)
        .bwrap_arguments()
        .unwrap_err();
    assert!(error.to_string().contains("symbolic link"), "{error}");
}

/// Issue 26: a secret the bot names that does not exist when a build starts
/// — the SQLite store before the first review, its `-wal` — is still out
/// of reach once the bot makes it. The store's directory lies under a path
/// the build is shown (the bot's home, as a toolchain), and a second one
/// under its writable run directory: both directories are hidden, so the
/// build, which waits until the bot has made the store while it runs, can
/// neither read it nor create it, and what it can see of the home is
/// unchanged.
#[tokio::test]
async fn a_secret_made_after_the_build_started_is_neither_readable_nor_creatable() {
    use review_sandbox::SecretVisibility;

    let world = World::new();
    let data = world.bot_home().join(".local/share/review-bot");
    std::fs::create_dir_all(&data).unwrap();
    let store = data.join("store.db");
    let wal = data.join("store.db-wal");
    let state = world.run("pr-1").join("state");
    std::fs::create_dir_all(&state).unwrap();
    let planted = state.join("store.db");
    let confinement = world
        .confinement()
        .with_hidden(&store)
        .with_hidden(&wal)
        .with_hidden(&planted);
    let canonical_data = std::fs::canonicalize(&data).unwrap();
    assert_eq!(
        confinement.secret_visibility(&store),
        SecretVisibility::DirectoryMasked(canonical_data.clone())
    );
    assert_eq!(
        confinement.secret_visibility(&world.path().join("elsewhere/store.db")),
        SecretVisibility::Outside
    );
    // Directly in a shown root, a missing secret cannot be hidden: said.
    assert_eq!(
        confinement.secret_visibility(&world.bot_home().join("store.db")),
        SecretVisibility::Exposed(std::fs::canonicalize(world.bot_home()).unwrap())
    );

    let ready = world.run("pr-1").join("ready");
    let go = world.run("pr-1").join("go");
    let script = format!(
        "touch {ready}\n\
         until [ -e {go} ]; do sleep 0.01; done\n\
         if cat {store} {wal} 2>/dev/null; then echo READ-STORE; fi\n\
         if ls -A {data} | grep -q .; then echo LISTED; fi\n\
         if (: > {data}/new) 2>/dev/null; then echo CREATED-IN-DATA; fi\n\
         if (: > {planted}) 2>/dev/null; then echo CREATED-PLANTED; fi\n\
         if ln -s /dev/null {planted} 2>/dev/null; then echo LINKED-PLANTED; fi\n\
         if {tool} >/dev/null; then echo tool-still-runs; fi\n\
         echo end\n",
        ready = ready.display(),
        go = go.display(),
        store = store.display(),
        wal = wal.display(),
        data = data.display(),
        planted = planted.display(),
        tool = world.bot_home().join(".cargo/bin/tool").display(),
    );
    std::fs::set_permissions(
        world.bot_home().join(".cargo/bin/tool"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let bot = async {
        // The bot makes its store while the build runs.
        while !ready.exists() {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        std::fs::write(&store, CANARY).unwrap();
        std::fs::write(&wal, CANARY).unwrap();
        std::fs::write(&go, "").unwrap();
    };
    let ((status, output), ()) = tokio::join!(world.sh(&confinement, &script), bot);
    assert_eq!(status, Some(0), "{output}");
    assert!(output.contains("end"), "{output}");
    assert!(output.contains("tool-still-runs"), "{output}");
    for reached in [
        "READ-STORE",
        "LISTED",
        "CREATED-IN-DATA",
        "CREATED-PLANTED",
        "LINKED-PLANTED",
        CANARY,
    ] {
        assert!(!output.contains(reached), "{reached}: {output}");
    }
    assert!(!planted.exists() && !data.join("new").exists());
}

/// A secret that exists when the build starts and is replaced while it
/// runs — SQLite deletes its `-wal` and makes it again, an editor saves the
/// config by renaming a new file over it — is hidden after as before: its
/// directory is masked, not the old file. In a directory that cannot be
/// masked whole (a shown root), the old file is masked and the visibility
/// says so.
#[tokio::test]
async fn a_secret_replaced_while_the_build_runs_stays_hidden() {
    use review_sandbox::SecretVisibility;

    let world = World::new();
    let data = world.bot_home().join(".local/share/review-bot");
    std::fs::create_dir_all(&data).unwrap();
    let store = data.join("store.db");
    let wal = data.join("store.db-wal");
    let config = data.join("review-bot.toml");
    for file in [&store, &wal, &config] {
        std::fs::write(file, "old\n").unwrap();
    }
    let confinement = world
        .confinement()
        .with_hidden(&store)
        .with_hidden(&wal)
        .with_hidden(&config);
    let canonical_data = std::fs::canonicalize(&data).unwrap();
    assert_eq!(
        confinement.secret_visibility(&wal),
        SecretVisibility::DirectoryMasked(canonical_data)
    );
    let in_root = world.bot_home().join("key.pem");
    std::fs::write(&in_root, "key\n").unwrap();
    assert_eq!(
        confinement.secret_visibility(&in_root),
        SecretVisibility::Masked
    );

    let ready = world.run("pr-1").join("ready");
    let go = world.run("pr-1").join("go");
    let script = format!(
        "touch {ready}\n\
         until [ -e {go} ]; do sleep 0.01; done\n\
         for file in {store} {wal} {config}; do cat $file 2>/dev/null; done\n\
         echo end\n",
        ready = ready.display(),
        go = go.display(),
        store = store.display(),
        wal = wal.display(),
        config = config.display(),
    );
    let bot = async {
        while !ready.exists() {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        // Deleted and made again; replaced by a rename.
        std::fs::remove_file(&wal).unwrap();
        std::fs::write(&wal, CANARY).unwrap();
        let new_config = data.join("review-bot.toml.new");
        std::fs::write(&new_config, CANARY).unwrap();
        std::fs::rename(&new_config, &config).unwrap();
        std::fs::remove_file(&store).unwrap();
        std::fs::write(&store, CANARY).unwrap();
        std::fs::write(&go, "").unwrap();
    };
    let ((status, output), ()) = tokio::join!(world.sh(&confinement, &script), bot);
    assert_eq!(status, Some(0), "{output}");
    assert!(output.contains("end"), "{output}");
    assert!(
        !output.contains(CANARY),
        "a replaced secret was read: {output}"
    );
    assert!(!output.contains("old"), "{output}");
}
