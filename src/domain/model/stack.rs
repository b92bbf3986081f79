//! Where a GPU process's Python threads were, read from outside (`stack::` reads and classifies
//! them): bursts of samples, each thread summarised by the stack it was seen in most and what
//! that stack means for the GPU (`StackClass`).

use serde::{Deserialize, Serialize};

/// What a thread's frames say it is doing, as the GPU sees it. How each is recognised, and what
/// it can get wrong: `stack::classify` and docs/stacks.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StackClass {
    /// Iterating a `DataLoader`: waiting on its workers' queue, or running the dataset's code
    /// on the training process itself (`num_workers=0`).
    DataLoading,
    /// Waiting on the GPU from the host: `.item()`, `.cpu()`, `.tolist()`, `nonzero`,
    /// `torch.cuda.synchronize()`.
    HostSync,
    /// In `torch.distributed` (`all_reduce`, `barrier`, a work handle's `wait`) or another
    /// collective library.
    Collective,
    /// Writing or reading a checkpoint (`torch.save`, `torch.load`, safetensors, DCP).
    Checkpoint,
    /// `torch.compile` at work: dynamo tracing, inductor, triton compiling kernels.
    Compilation,
    /// Sleeping, or waiting on a socket, a selector or a queue outside data loading: a server
    /// idle between requests, a loop waiting for work.
    IdleWaiting,
    /// Moving data between host and GPU on the host side (`.to(device)`, `.cuda()`, `copy_`,
    /// offload).
    HostCopy,
    /// In the model's forward or backward pass or the optimizer: launching GPU work.
    GpuWork,
    /// Pure-Python work on the CPU, none of the above.
    PythonBusy,
    /// No frame says, and the thread is not running Python: in a native call (a CUDA launch
    /// waiting for room in a full queue, a lock, a read), or no frame at all.
    Unknown,
}

impl StackClass {
    /// Every class, in the order of `classify`'s precedence.
    pub const ALL: [StackClass; 10] = [
        StackClass::Compilation,
        StackClass::Checkpoint,
        StackClass::Collective,
        StackClass::DataLoading,
        StackClass::HostSync,
        StackClass::HostCopy,
        StackClass::IdleWaiting,
        StackClass::GpuWork,
        StackClass::PythonBusy,
        StackClass::Unknown,
    ];

    /// A few words for the screen and the evidence.
    #[must_use]
    pub fn words(self) -> &'static str {
        match self {
            StackClass::DataLoading => "data loading",
            StackClass::HostSync => "host sync (waits on the GPU)",
            StackClass::Collective => "collective (torch.distributed)",
            StackClass::Checkpoint => "checkpoint I/O",
            StackClass::Compilation => "compilation (torch.compile)",
            StackClass::IdleWaiting => "idle, waiting for work",
            StackClass::HostCopy => "host-side copy",
            StackClass::GpuWork => "launching GPU work",
            StackClass::PythonBusy => "Python busy on the CPU",
            StackClass::Unknown => "in a native call (no Python frame says what)",
        }
    }

    /// The kebab-case name files and scripts use (`data-loading`).
    #[must_use]
    pub fn id(self) -> &'static str {
        match self {
            StackClass::DataLoading => "data-loading",
            StackClass::HostSync => "host-sync",
            StackClass::Collective => "collective",
            StackClass::Checkpoint => "checkpoint",
            StackClass::Compilation => "compilation",
            StackClass::IdleWaiting => "idle-waiting",
            StackClass::HostCopy => "host-copy",
            StackClass::GpuWork => "gpu-work",
            StackClass::PythonBusy => "python-busy",
            StackClass::Unknown => "unknown",
        }
    }
}

/// One Python frame.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct StackFrame {
    pub function: String,
    /// The file as the process names it.
    pub file: String,
    pub line: u32,
    /// The source line, stripped and redacted, where the file could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// One thread over a burst.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadStack {
    /// Python's thread id.
    pub id: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The interpreter's main thread (where a training loop runs).
    pub main: bool,
    /// Samples this thread was seen in, and in how many it held the GIL.
    pub samples: u32,
    pub gil: u32,
    /// Its most frequent class and the samples that had it; the runner-up, if any.
    pub class: StackClass,
    pub class_samples: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub second: Option<(StackClass, u32)>,
    /// The stack seen most often with that class, innermost frame first (at most
    /// `MAX_FRAMES`).
    pub frames: Vec<StackFrame>,
}

/// How a burst went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StackOutcome {
    Read,
    /// Not permitted to read its memory (ptrace rules); `message` says how to grant it.
    NoPermission,
    /// Not a Python process (or its interpreter could not be found).
    NotPython,
    /// The process exited.
    Gone,
    /// Anything else; `message` says what.
    Failed,
}

/// A burst of stack samples of one process: `samples` reads over `started_ms..t_ms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StackBurst {
    pub pid: u32,
    pub started_ms: u64,
    pub t_ms: u64,
    /// Reads tried and reads that succeeded.
    pub samples: u32,
    pub read: u32,
    pub outcome: StackOutcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Threads, main first, then by samples.
    pub threads: Vec<ThreadStack>,
    /// Threads not kept (past `MAX_THREADS`; the main thread is always kept).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub threads_left_out: u32,
    /// The process's child processes (`DataLoader` workers), read in the same burst.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<StackBurst>,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Frames kept per thread.
pub const MAX_FRAMES: usize = 24;
/// Threads kept per process.
pub const MAX_THREADS: usize = 32;
/// Child processes read per burst.
pub const MAX_CHILDREN: usize = 8;

impl StackBurst {
    /// The main thread's summary, where it was read.
    #[must_use]
    pub fn main_thread(&self) -> Option<&ThreadStack> {
        self.threads.iter().find(|t| t.main)
    }
    /// The main thread's class and its share of the burst's reads (0–1).
    #[must_use]
    pub fn main_class(&self) -> Option<(StackClass, f32)> {
        let m = self.main_thread()?;
        (m.samples > 0).then(|| (m.class, m.class_samples as f32 / m.samples as f32))
    }
    /// The share of the main thread's samples (0–1) in `class`, counting the runner-up too.
    #[must_use]
    pub fn main_share(&self, class: StackClass) -> f32 {
        let Some(m) = self.main_thread().filter(|m| m.samples > 0) else {
            return 0.0;
        };
        let n = if m.class == class {
            m.class_samples
        } else {
            m.second.filter(|(c, _)| *c == class).map_or(0, |(_, n)| n)
        };
        n as f32 / m.samples as f32
    }
}

impl ThreadStack {
    /// The innermost frame of the program itself (not the standard library or an installed
    /// package), else the innermost frame.
    #[must_use]
    pub fn user_frame(&self) -> Option<&StackFrame> {
        self.frames
            .iter()
            .find(|f| is_user_file(&f.file))
            .or_else(|| self.frames.first())
    }
    /// The innermost frame.
    #[must_use]
    pub fn top(&self) -> Option<&StackFrame> {
        self.frames.first()
    }
}

/// True for a file of the program rather than of Python or an installed package.
#[must_use]
pub fn is_user_file(file: &str) -> bool {
    !(file.contains("/site-packages/")
        || file.contains("/dist-packages/")
        || file.starts_with('<')
        || is_stdlib(file))
}

/// `/usr/lib/python3.12/queue.py` and the like.
fn is_stdlib(file: &str) -> bool {
    file.split('/')
        .any(|part| part.starts_with("python3.") && part[8..].chars().all(|c| c.is_ascii_digit()))
        && !file.contains("/site-packages/")
}

impl StackFrame {
    /// `train.py:88`, the file's last component.
    #[must_use]
    pub fn place(&self) -> String {
        let mut out = String::new();
        self.push_place(&mut out);
        out
    }
    /// `place` pushed onto `out`.
    pub fn push_place(&self, out: &mut String) {
        use std::fmt::Write as _;
        let short = self.file.rsplit('/').next().unwrap_or(&self.file);
        let _ = write!(out, "{short}:{}", self.line);
    }
    /// `train.py:88 loss.item()`, or `train.py:88 in step` without the source line.
    #[must_use]
    pub fn describe(&self) -> String {
        match &self.code {
            Some(code) => format!("{} {}", self.place(), crate::text::clip(code, 60)),
            None => format!("{} in {}", self.place(), self.function),
        }
    }
}

/// Bursts a tick may carry.
pub const MAX_BURSTS: usize = 64;

/// Longest names, paths and source lines kept, in characters.
pub const MAX_NAME: usize = 200;
pub const MAX_FILE: usize = 400;
pub const MAX_CODE: usize = 200;

impl StackFrame {
    /// The frame made safe to show on one line and bounded in size (what a live read keeps,
    /// and what is kept of a file someone sent).
    pub fn clean(&mut self) {
        self.function = crate::text::one_line(&self.function, MAX_NAME);
        self.file = crate::text::one_line(&self.file, MAX_FILE);
        if let Some(c) = &mut self.code {
            *c = crate::text::one_line(c, MAX_CODE);
        }
    }
}

impl StackBurst {
    /// Checks a burst read from a file against what gpuwatch writes (counts no larger than the
    /// reads, times in order and within a day of `tick_ms`), and cleans its text as a live read
    /// is cleaned. `Err` says what is wrong.
    pub fn check_and_clean(&mut self, tick_ms: u64) -> Result<(), String> {
        const DAY_MS: u64 = 86_400_000;
        let pid = self.pid;
        if self.read > self.samples {
            return Err(format!(
                "pid {pid}'s stack burst read {} of {} samples",
                self.read, self.samples
            ));
        }
        if self.started_ms > self.t_ms || self.t_ms.abs_diff(tick_ms) > DAY_MS {
            return Err(format!(
                "pid {pid}'s stack burst runs from {} to {} ms, not around its tick's time ({tick_ms})",
                self.started_ms, self.t_ms
            ));
        }
        for t in &mut self.threads {
            let second = t.second.map_or(0, |(_, n)| n);
            if t.class_samples > t.samples
                || t.gil > t.samples
                || second > t.samples
                || t.samples > self.samples
            {
                return Err(format!(
                    "pid {pid}'s thread {} has more samples in its classes than it was read",
                    t.id
                ));
            }
            t.name = t.name.as_deref().map(|n| crate::text::one_line(n, 64));
            for f in &mut t.frames {
                f.clean();
            }
        }
        if let Some(m) = &mut self.message {
            *m = crate::text::one_line(m, 1000);
        }
        for c in &mut self.children {
            c.check_and_clean(tick_ms)?;
        }
        Ok(())
    }
}

/// Why `bursts` (read from a file) are larger than gpuwatch ever writes, if they are.
#[must_use]
pub fn too_big(bursts: &[StackBurst]) -> Option<String> {
    if bursts.len() > MAX_BURSTS {
        return Some(format!(
            "{} stack bursts in one tick, more than the {MAX_BURSTS} gpuwatch writes",
            bursts.len()
        ));
    }
    bursts.iter().find_map(|b| {
        if b.threads.len() > MAX_THREADS || b.children.len() > MAX_CHILDREN {
            return Some(format!(
                "pid {}'s stack burst has {} threads and {} children, more than gpuwatch keeps ({MAX_THREADS}, {MAX_CHILDREN})",
                b.pid,
                b.threads.len(),
                b.children.len()
            ));
        }
        if let Some(t) = b.threads.iter().find(|t| t.frames.len() > MAX_FRAMES) {
            return Some(format!(
                "pid {}'s thread {} has {} frames, more than the {MAX_FRAMES} gpuwatch keeps",
                b.pid,
                t.id,
                t.frames.len()
            ));
        }
        too_big(&b.children)
    })
}

/// A standard-library wait: a selector, a socket, a queue, a condition (py-spy names methods
/// `Class.method` on Python 3.11 and newer).
#[must_use]
pub fn is_wait(f: &StackFrame) -> bool {
    let file = f.file.rsplit('/').next().unwrap_or("");
    let waits = match file {
        "selectors.py" => &["select"][..],
        "socket.py" => &["accept", "recv", "recv_into", "readinto"],
        "threading.py" => &["wait", "_wait_for_tstate_lock", "join"],
        "queue.py" | "queues.py" => &["get"],
        "connection.py" => &["recv", "_recv", "_recv_bytes", "wait", "poll", "accept"],
        "base_events.py" => &["_run_once", "run_forever", "select"],
        "socketserver.py" => &["serve_forever"],
        "synchronize.py" => &["wait", "__enter__"],
        _ => &[],
    };
    waits.contains(&f.function.rsplit('.').next().unwrap_or(&f.function))
}

/// Where the rules' wish for stacks goes: the processes they want read now, each urgent
/// (evidence for a cause open or being timed) or not (replaces the previous set). The stack
/// thread (`collect::stack`) takes it; called after every evaluation, so cheap when unchanged.
pub trait Wants: Send + Sync {
    fn want(&self, pids: &[(u32, bool)]);
}
