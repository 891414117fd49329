//! Finding a test's processes in `/proc`, in any PID namespace: the tests of
//! everything that must leave no process behind (the agent runner, the build
//! gate, review-sandbox) start a `sleep <marker>` and look for it afterwards.

/// A number no other test process uses, for a marker argument
/// (`sleep <marker>`, a valid if long duration): nextest runs each test in a
/// process of its own, so our pid makes it unique among live processes;
/// `slot` tells apart markers of one test.
pub fn marker(slot: u32) -> String {
    (9_000_000_000_u64 + u64::from(std::process::id()) * 10 + u64::from(slot)).to_string()
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
