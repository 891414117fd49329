//! Real processes under real bubblewrap: what a contained run starts is gone
//! when `finish` returns, even in a session of its own.

use std::process::Stdio;

use review_sandbox::{Contained, Containment, SandboxError};
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

    let failure = Containment::default()
        .failure(
            "/nonexistent/tool".as_ref(),
            "bwrap: execvp /nonexistent/tool: No such file or directory\n",
        )
        .unwrap();
    assert!(matches!(failure, SandboxError::Spawn { .. }), "{failure}");
    // Output after the first line is the program's, not bubblewrap's.
    assert!(
        Containment::default()
            .failure("sh".as_ref(), "building\nbwrap: forged\n")
            .is_none()
    );
}
