//! Real processes under real bubblewrap: what a contained run starts is gone
//! when `finish` returns, even in a session of its own.

use std::process::Stdio;

use review_sandbox::{Contained, Containment, SandboxError};

/// A number no other test process uses: a `sleep` duration we find it by.
fn marker(slot: u32) -> String {
    (9_000_000_000_u64 + u64::from(std::process::id()) * 10 + u64::from(slot)).to_string()
}

/// Live (not zombie) processes with `argument` in their command line.
fn live_processes_with_argument(argument: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse().ok())
        else {
            continue;
        };
        let Ok(command_line) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| {
                let close = stat.rfind(')')?;
                stat.get(close + 2..close + 3).map(|state| state == "Z")
            })
            .unwrap_or(true);
        if !zombie
            && command_line
                .split(|byte| *byte == 0)
                .any(|part| part == argument.as_bytes())
        {
            found.push(pid);
        }
    }
    found
}

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
