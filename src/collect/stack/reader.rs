//! The only file that touches py-spy: reads a process's Python threads from outside, without
//! stopping it (`LockingStrategy::NonBlocking`: no ptrace stop, so a target is never left
//! stopped and its steps are not slowed by the read; a stack read while it changes can be torn,
//! and is then dropped as an error). Needs what ptrace needs (`process_vm_readv`): the same
//! user and a Yama `ptrace_scope` of 0, or `CAP_SYS_PTRACE` (root has it).

use std::collections::HashMap;

use crate::model::stack::{StackFrame, StackOutcome, MAX_FRAMES, MAX_THREADS};

/// One read of a process: its threads (at most `MAX_THREADS`, the main one always among them)
/// and how many more it had.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Read {
    pub threads: Vec<RawThread>,
    pub left_out: u32,
}

/// One thread as read once.
#[derive(Debug, Clone, PartialEq)]
pub struct RawThread {
    pub id: u64,
    pub name: Option<String>,
    pub gil: bool,
    /// Innermost first, without source lines.
    pub frames: Vec<StackFrame>,
}

/// Why a process could not be read, with the message a user can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError {
    pub outcome: StackOutcome,
    pub message: String,
}

/// Keeps one py-spy handle per process between reads: opening one parses the interpreter's
/// symbols (milliseconds), a read after that copies a few pages. Not `Send` (py-spy's handle is
/// not): it lives on the thread that reads.
#[derive(Default)]
pub struct Reader {
    spies: HashMap<u32, py_spy::PythonSpy>,
}

impl Reader {
    /// Reads every Python thread of `pid` once.
    pub fn read(&mut self, pid: u32) -> Result<Read, ReadError> {
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            self.forget(pid);
            return Err(gone(pid));
        }
        if process_state(pid) == Some('Z') {
            self.forget(pid);
            return Err(ReadError {
                outcome: StackOutcome::Gone,
                message: format!("pid {pid} has exited (a zombie its parent has not reaped)"),
            });
        }
        let spy = match self.spies.entry(pid) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                if let Some(err) = not_python(pid) {
                    return Err(err);
                }
                e.insert(open(pid)?)
            }
        };
        // py-spy reads another process's memory, which can change under it: whatever it does
        // with what it read must not take gpuwatch down.
        let traces =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| spy.get_stack_traces()));
        match traces {
            Ok(Ok(traces)) => {
                let all = traces.len();
                let kept = keep_main(traces);
                Ok(Read {
                    left_out: u32::try_from(all - kept.len()).unwrap_or(u32::MAX),
                    threads: kept.into_iter().map(raw).collect(),
                })
            }
            Ok(Err(e)) => {
                let e = classify_error(pid, &format!("{e:#}"));
                if e.outcome != StackOutcome::Failed {
                    self.forget(pid);
                }
                Err(e)
            }
            Err(_) => {
                self.forget(pid);
                Err(ReadError {
                    outcome: StackOutcome::Failed,
                    message: format!("reading pid {pid}'s Python stacks failed inside py-spy"),
                })
            }
        }
    }

    /// Drops the handle of `pid` (it exited, or its burst is over).
    pub fn forget(&mut self, pid: u32) {
        self.spies.remove(&pid);
    }

    /// Drops every handle but those of `keep`.
    pub fn keep_only(&mut self, keep: &[u32]) {
        self.spies.retain(|pid, _| keep.contains(pid));
    }
}

/// At most `MAX_THREADS` threads, the main one always among them (py-spy lists it last, or
/// it is named `MainThread`): the rules judge the main thread, whatever else runs.
fn keep_main(mut traces: Vec<py_spy::StackTrace>) -> Vec<py_spy::StackTrace> {
    if traces.len() <= MAX_THREADS {
        return traces;
    }
    let main = traces
        .iter()
        .position(|t| t.thread_name.as_deref() == Some("MainThread"))
        .unwrap_or(traces.len() - 1);
    let main = traces.swap_remove(main);
    traces.truncate(MAX_THREADS - 1);
    traces.push(main);
    traces
}

fn open(pid: u32) -> Result<py_spy::PythonSpy, ReadError> {
    let config = py_spy::Config {
        blocking: py_spy::config::LockingStrategy::NonBlocking,
        native: false,
        collect_thread_names: true,
        ..py_spy::Config::default()
    };
    let Ok(pid_t) = i32::try_from(pid) else {
        return Err(gone(pid));
    };
    match std::panic::catch_unwind(|| py_spy::PythonSpy::new(pid_t, &config)) {
        Ok(Ok(spy)) => Ok(spy),
        Ok(Err(e)) => Err(classify_error(pid, &format!("{e:#}"))),
        Err(_) => Err(ReadError {
            outcome: StackOutcome::Failed,
            message: format!("opening pid {pid}'s Python interpreter failed inside py-spy"),
        }),
    }
}

fn raw(t: py_spy::StackTrace) -> RawThread {
    RawThread {
        id: t.thread_id,
        name: t.thread_name.map(|n| crate::text::one_line(&n, 64)),
        gil: t.owns_gil,
        frames: t
            .frames
            .into_iter()
            .take(MAX_FRAMES)
            .map(|f| {
                let mut frame = StackFrame {
                    function: f.name,
                    file: f.filename,
                    line: u32::try_from(f.line).unwrap_or(0),
                    code: None,
                };
                frame.clean();
                frame
            })
            .collect(),
    }
}

fn gone(pid: u32) -> ReadError {
    ReadError {
        outcome: StackOutcome::Gone,
        message: format!("no process {pid}: it has exited (or never ran)"),
    }
}

/// The one-letter state of `pid` in /proc (R, S, D, Z…).
fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// True when this process has `CAP_SYS_PTRACE` in its effective set (bit 19 of `CapEff`).
fn has_ptrace_capability() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let hex = s
                .lines()
                .find_map(|l| l.strip_prefix("CapEff:"))?
                .trim()
                .to_string();
            u64::from_str_radix(&hex, 16).ok()
        })
        .is_some_and(|caps| caps & (1 << 19) != 0)
}

/// A process with no Python in its executable or mapped libraries is said to be so before
/// py-spy is asked (which would search its memory for an interpreter first).
fn not_python(pid: u32) -> Option<ReadError> {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok();
    let exe_name = exe
        .as_ref()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned());
    if exe_name.as_deref().is_some_and(|n| n.contains("python")) {
        return None;
    }
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    if maps.contains("libpython") || maps.contains("/python") {
        return None;
    }
    Some(ReadError {
        outcome: StackOutcome::NotPython,
        message: format!(
            "pid {pid} is not a Python process ({}): no Python stacks to read",
            exe_name.unwrap_or_else(|| "its executable is not readable".into())
        ),
    })
}

/// py-spy's error text, said as what it means here.
fn classify_error(pid: u32, text: &str) -> ReadError {
    let lower = text.to_ascii_lowercase();
    if lower.contains("os error 1)")
        || lower.contains("os error 13)")
        || lower.contains("permission denied")
        || lower.contains("operation not permitted")
    {
        return ReadError {
            outcome: StackOutcome::NoPermission,
            message: permission_message(pid),
        };
    }
    if lower.contains("no such process") || lower.contains("os error 3)") {
        return gone(pid);
    }
    if lower.contains("python version") || lower.contains("failed to find python") {
        return ReadError {
            outcome: StackOutcome::NotPython,
            message: format!("pid {pid}: no Python interpreter found in it ({text})"),
        };
    }
    ReadError {
        outcome: StackOutcome::Failed,
        message: format!("reading pid {pid}'s Python stacks: {text}"),
    }
}

/// What stops the read, and the ways to allow it.
#[must_use]
pub fn permission_message(pid: u32) -> String {
    let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
        .ok()
        .map(|s| s.trim().to_string());
    if has_ptrace_capability() {
        // Root with CAP_SYS_PTRACE and still refused: it is not a matter of permission flags.
        return format!(
            "not permitted to read pid {pid}'s Python stacks, though gpuwatch has CAP_SYS_PTRACE: \
             the process is in another user namespace, or marked undumpable (PR_SET_DUMPABLE 0, \
             as a set-uid program or a hardened init is); nothing gpuwatch can change"
        );
    }
    let why = match scope.as_deref() {
        Some("1") => "Yama's ptrace_scope is 1 (only a process's parent may read it)".to_string(),
        Some("2") => "Yama's ptrace_scope is 2 (only CAP_SYS_PTRACE may read it)".to_string(),
        Some("3") => "Yama's ptrace_scope is 3 (no process may read another's memory until reboot)"
            .to_string(),
        _ => "it belongs to another user, or this process lacks CAP_SYS_PTRACE".to_string(),
    };
    format!(
        "not permitted to read pid {pid}'s Python stacks: {why}. Run gpuwatch as root (sudo), \
         or grant it once with `sudo setcap cap_sys_ptrace+ep $(command -v gpuwatch)`; in \
         Kubernetes add SYS_PTRACE to the container's securityContext.capabilities.add"
    )
}
