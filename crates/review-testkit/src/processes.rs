//! Finding a test's processes in `/proc`, in any PID namespace: the tests of
//! everything that must leave no process behind (the agent runner, the build
//! gate, review-sandbox) start a `sleep <marker>` and look for it afterwards.

/// A number no other test uses, for a marker argument (`sleep <marker>`, a
/// valid if long duration): our pid tells apart test processes (nextest runs
/// each test in a process of its own) and a per-process counter the tests of
/// one process (`cargo test` runs them on threads of one process, where the
/// pid alone made two tests find each other's `sleep`); `slot` is kept in
/// the last digit for readability.
pub fn marker(slot: u32) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let call = NEXT.fetch_add(1, Ordering::Relaxed) % 10_000;
    (9_000_000_000_000_u64
        + u64::from(std::process::id()) * 100_000
        + call * 10
        + u64::from(slot % 10))
    .to_string()
}

/// Live processes (not zombies) whose command line holds `argument` as one
/// of its arguments, by pid as the test sees them. This reads the whole
/// system's `/proc`, so it finds processes in any PID namespace.
pub fn live_processes_with_argument(argument: &str) -> Vec<u32> {
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
        if command_line
            .split(|byte| *byte == 0)
            .any(|part| part == argument.as_bytes())
            && !process_is_gone(pid)
        {
            found.push(pid);
        }
    }
    found
}

/// Whether a process is gone (exited, or a zombie waiting for its parent).
pub fn process_is_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state is the field after the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
    }
}
