//! Real processes under real bubblewrap: what a contained run starts is gone
//! when `finish` returns, even in a session of its own.

use std::process::Stdio;

use review_sandbox::{Confinement, Contained, Containment, SandboxError};
use review_testkit::processes::{live_processes_with_argument, marker};

#[tokio::test]
async fn a_detached_process_is_gone_when_the_run_is_finished() {
    let detached = marker(1);
    let containment = Containment::default();
    let mut command = containment.command("sh");
    // The leader waits until its detached child runs, then exits 7.
    command
        .arg("-c")
        .arg(format!(
            "setsid sleep {detached} & until grep -qs sleep /proc/$!/cmdline; do :; done; exit 7"
        ))
        .stdin(Stdio::null());
    let mut run = Contained::spawn(&containment, "sh", &mut command).unwrap();
    run.leader_exited().await;
    let status = run.finish().await.unwrap();
    assert_eq!(status.code(), Some(7));
    assert_eq!(live_processes_with_argument(&detached), Vec::<u32>::new());
}

#[tokio::test]
async fn a_running_group_is_killed_and_dropping_an_unfinished_run_kills_it_too() {
    let running = marker(2);
    let containment = Containment::ProcessGroupOnly;
    let mut command = containment.command("sleep");
    command.arg(&running).stdin(Stdio::null());
    let mut run = Contained::spawn(&containment, "sleep", &mut command).unwrap();
    let status = run.finish().await.unwrap();
    assert_eq!(status.code(), None, "killed by a signal");
    assert!(live_processes_with_argument(&running).is_empty());

    let dropped = marker(3);
    let mut command = containment.command("sleep");
    command.arg(&dropped).stdin(Stdio::null());
    let run = Contained::spawn(&containment, "sleep", &mut command).unwrap();
    drop(run);
    assert!(live_processes_with_argument(&dropped).is_empty());
}

#[tokio::test]
async fn a_missing_bwrap_or_program_is_an_error_that_says_what_to_do() {
    let containment = Containment::PidNamespace {
        bwrap: "/nonexistent/bwrap".into(),
    };
    let mut command = containment.command("sh");
    let error = Contained::spawn(&containment, "sh", &mut command).unwrap_err();
    assert!(matches!(error, SandboxError::Containment { .. }), "{error}");
    assert!(
        error.to_string().contains("apt-get install bubblewrap"),
        "{error}"
    );
}

/// Runs `command` (made by `confined_command` for `program`) to its end:
/// its exit status, what it printed on stderr, and what bubblewrap's own
/// channel says.
async fn run_to_end(
    program: &str,
    mut command: tokio::process::Command,
) -> (Option<i32>, String, Option<SandboxError>) {
    use tokio::io::AsyncReadExt as _;
    command
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut run = Contained::spawn(&Containment::default(), program, &mut command).unwrap();
    drop(command);
    let mut stderr = String::new();
    let mut pipe = run.child_mut().stderr.take().unwrap();
    pipe.read_to_string(&mut stderr).await.unwrap();
    run.leader_exited().await;
    let status = run.finish().await.unwrap();
    let failure = run.failure(&stderr);
    (status.code(), stderr, failure)
}

#[tokio::test]
async fn a_build_posing_as_bubblewrap_is_a_build_failure_and_real_failures_are_known() {
    let containment = Containment::default();
    let system = Confinement::new();
    // The attack: print what bubblewrap prints when it cannot mount /proc,
    // exit 1, and hope to be taken for a containment error.
    let mut command = containment.confined_command("sh", &system).unwrap();
    command.arg("-c").arg(
        "echo \"bwrap: Can't mount proc on /newroot/proc: Operation not permitted\" >&2; exit 1",
    );
    let (code, stderr, failure) = run_to_end("sh", command).await;
    assert_eq!(code, Some(1));
    assert!(stderr.starts_with("bwrap: Can't mount proc"), "{stderr}");
    assert!(failure.is_none(), "{failure:?}");

    // bubblewrap could not start the program: its own error.
    let command = containment
        .confined_command("/nonexistent/tool", &system)
        .unwrap();
    let (_, _, failure) = run_to_end("/nonexistent/tool", command).await;
    let failure = failure.expect("bubblewrap said it could not start the program");
    assert!(matches!(failure, SandboxError::Spawn { .. }), "{failure}");

    // bubblewrap could not set the sandbox up: a writable path gone by the
    // time it mounts it.
    let directory = tempfile::tempdir().unwrap();
    let vanishing = directory.path().join("vanishing");
    std::fs::create_dir(&vanishing).unwrap();
    let command = containment
        .confined_command("true", &system.clone().with_writable(&vanishing))
        .unwrap();
    std::fs::remove_dir(&vanishing).unwrap();
    let (_, stderr, failure) = run_to_end("true", command).await;
    let failure = failure.expect("bubblewrap said it could not set the sandbox up");
    assert!(
        matches!(&failure, SandboxError::Containment { reason, .. } if reason.contains("vanishing")),
        "{failure} ({stderr})"
    );
}

/// How many runs the regression tests below make. The race they guard
/// against: bubblewrap exits as soon as the command does, while the kernel
/// is still killing the rest of the namespace, and a confined run's init
/// (`--new-session`) is not in the process group, so a namespace looked for
/// only then was not found and `finish` returned while detached processes
/// still lived. Under load, each test failed within its rounds before the
/// namespace was learned at the start; confined runs are what it takes.
const ROUNDS: usize = 30;

/// The script of a run that starts `count` processes in sessions of their
/// own (`sleep marker`), waits until each runs, then does `then`.
fn detaching(marker: &str, count: usize, then: &str) -> String {
    format!(
        "for i in $(seq {count}); do \
           setsid sleep {marker} </dev/null >/dev/null 2>&1 & \
           until grep -qs sleep /proc/$!/cmdline; do :; done; \
         done; {then}"
    )
}

#[tokio::test]
async fn detached_processes_of_a_run_that_ends_at_once_are_gone_when_finish_returns() {
    let containment = Containment::default();
    for round in 0..ROUNDS {
        let detached = marker(4);
        let mut command = containment
            .confined_command("sh", &Confinement::new())
            .unwrap();
        command
            .arg("-c")
            .arg(detaching(&detached, 8, "exit 3"))
            .stdin(Stdio::null());
        let mut run = Contained::spawn(&containment, "sh", &mut command).unwrap();
        drop(command);
        run.leader_exited().await;
        let status = run.finish().await.unwrap();
        assert_eq!(status.code(), Some(3), "round {round}");
        assert_eq!(
            live_processes_with_argument(&detached),
            Vec::<u32>::new(),
            "round {round}"
        );
    }
}

#[tokio::test]
async fn detached_processes_are_gone_when_a_killed_run_is_finished() {
    use tokio::io::AsyncBufReadExt as _;
    let containment = Containment::default();
    for round in 0..ROUNDS {
        let detached = marker(5);
        let mut command = containment
            .confined_command("sh", &Confinement::new())
            .unwrap();
        command
            .arg("-c")
            .arg(detaching(&detached, 8, "echo ready; exec sleep 1000"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped());
        let mut run = Contained::spawn(&containment, "sh", &mut command).unwrap();
        drop(command);
        let stdout = run.child_mut().stdout.take().unwrap();
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        assert_eq!(
            lines.next_line().await.unwrap().as_deref(),
            Some("ready"),
            "round {round}"
        );
        // Killed from outside (a timeout): the leader, bubblewrap, dies
        // first, and the namespace is emptied after it.
        run.kill();
        run.leader_exited().await;
        let status = run.finish().await.unwrap();
        assert_eq!(status.code(), None, "round {round}: killed");
        assert_eq!(
            live_processes_with_argument(&detached),
            Vec::<u32>::new(),
            "round {round}"
        );
    }
}

/// A child of `parent`, from `/proc`.
fn child_of(parent: u32) -> Option<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .find_map(|entry| {
            let pid = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // `pid (comm) state ppid …`
            let parent_pid = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?;
            (parent_pid == parent.to_string()).then_some(pid)
        })
}

/// Whether `pid` sleeps reading a pipe (its `wchan`: `pipe_read`, or
/// `anon_pipe_read` on recent kernels).
fn waits_on_a_pipe(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/wchan"))
        .is_ok_and(|wchan| wchan.contains("pipe_read"))
}

#[tokio::test]
async fn a_run_killed_before_its_namespace_is_learned_never_starts_its_command() {
    // On this test's single-threaded runtime, the task that learns the
    // namespace and then lets the command start cannot run before the test
    // awaits: bubblewrap makes the namespace and its first process (the
    // leader's child), which then waits, and the run is killed (or dropped)
    // without having been released.
    let directory = tempfile::tempdir().unwrap();
    let started = directory.path().join("started");
    let containment = Containment::default();
    for finished in [true, false] {
        let detached = marker(6);
        let mut command = containment
            .confined_command("sh", &Confinement::new().with_writable(directory.path()))
            .unwrap();
        command
            .arg("-c")
            .arg(format!(
                "echo started > {}; setsid sleep {detached} & wait",
                started.display()
            ))
            .stdin(Stdio::null());
        let mut run = Contained::spawn(&containment, "sh", &mut command).unwrap();
        drop(command);
        // Without awaiting: the namespace's first process (the leader's
        // child) has made the namespace and waits on the handshake's pipe.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !child_of(run.id()).is_some_and(waits_on_a_pipe) {
            assert!(
                std::time::Instant::now() < deadline,
                "bubblewrap's first process in the namespace never waited to be released"
            );
            std::thread::yield_now();
        }
        if finished {
            run.kill();
            let status = run.finish().await.unwrap();
            assert_eq!(status.code(), None, "killed by a signal");
        } else {
            drop(run);
        }
        assert!(!started.exists(), "finished: {finished}");
        assert_eq!(live_processes_with_argument(&detached), Vec::<u32>::new());
    }
}
