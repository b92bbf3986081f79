//! A GPU process's Python stacks as evidence: read from outside (`reader`, py-spy), in short
//! bursts (`burst`: on their own thread, never on the sampling tick), classified (`classify`)
//! and summarised per thread, so that a finding can say where the program is ("main thread in
//! `DataLoader.__next__` 18 of 20 samples; train.py:88").

pub mod burst;
pub mod classify;
pub mod reader;

use std::collections::HashMap;
use std::time::Duration;

use crate::model::stack::{StackBurst, StackClass, StackFrame, StackOutcome, ThreadStack};
use reader::{RawThread, Reader};

/// How many reads a burst makes and how far apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    pub samples: u32,
    pub every: Duration,
    /// Also read the process's children (`DataLoader` workers): at the first read and half way.
    pub children: bool,
}

impl Plan {
    /// The burst the rules ask for: 10 reads over 2 s. On the H200 a read cost 0.55 ms of CPU
    /// and opening a process 4 ms (device run 18): about 10 ms a process, a few ms more per
    /// worker, which keeps a finding's stacks, read every 15 s, near 0.1 % of a core
    /// (docs/stacks.md).
    pub const EVIDENCE: Plan = Plan {
        samples: 10,
        every: Duration::from_millis(200),
        children: true,
    };

    /// The look now and then at a process whose GPU draws under half its TDP, with no cause
    /// open or timed on it: 5 reads over the same 2 s, half the reads' CPU (a read is about
    /// 0.5 ms, some 770 `process_vm_readv` calls for an 18-thread process). It only decides
    /// whether to look closer: what it finds opens or times a cause, whose evidence is then
    /// read with `EVIDENCE`; the rules' shares still resolve (`MOSTLY` 60 % is 3 of 5).
    pub const BACKGROUND: Plan = Plan {
        samples: 5,
        every: Duration::from_millis(400),
        children: true,
    };
}

/// Reads `pid` `plan.samples` times, `plan.every` apart, and summarises what it saw. Sleeps
/// between reads on the calling thread; `now_ms` gives sample time.
pub fn sample(reader: &mut Reader, pid: u32, plan: &Plan, now_ms: fn() -> u64) -> StackBurst {
    let started_ms = now_ms();
    let mut reads: Vec<(Vec<RawThread>, bool)> = Vec::new();
    let mut last_error = None;
    let children: Vec<u32> = if plan.children {
        crate::host::read_children(pid)
            .into_iter()
            .take(crate::model::stack::MAX_CHILDREN)
            .collect()
    } else {
        Vec::new()
    };
    let mut child_reads: Vec<Vec<(Vec<RawThread>, bool)>> = vec![Vec::new(); children.len()];
    let mut attempted = 0;
    let mut left_out = 0;
    for i in 0..plan.samples.max(1) {
        if i > 0 {
            std::thread::sleep(plan.every);
        }
        attempted += 1;
        let running = main_thread_running(pid);
        match reader.read(pid) {
            Ok(r) => {
                left_out = left_out.max(r.left_out);
                reads.push((r.threads, running));
            }
            Err(e) => {
                let fatal = e.outcome != StackOutcome::Failed;
                last_error = Some(e);
                if fatal {
                    break;
                }
            }
        }
        if i == 0 || i == plan.samples / 2 {
            for (c, reads) in children.iter().zip(child_reads.iter_mut()) {
                if let Ok(r) = reader.read(*c) {
                    reads.push((r.threads, main_thread_running(*c)));
                }
            }
        }
    }
    let t_ms = now_ms();
    let mut burst = summarise(pid, &reads, attempted, last_error);
    burst.started_ms = started_ms;
    burst.t_ms = t_ms;
    burst.threads_left_out = left_out;
    for (c, reads) in children.iter().zip(&child_reads) {
        if reads.is_empty() {
            continue;
        }
        let mut b = summarise(*c, reads, reads.len() as u32, None);
        (b.started_ms, b.t_ms) = (started_ms, t_ms);
        burst.children.push(b);
    }
    for c in &children {
        reader.forget(*c);
    }
    burst
}

/// The main thread's state in /proc is the process's own (its thread id is the pid).
fn main_thread_running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, r)| r.trim_start().starts_with('R'))
        })
        .unwrap_or(false)
}

/// One burst's reads of `pid` (each with whether its main thread was running), summarised.
#[must_use]
pub fn summarise(
    pid: u32,
    reads: &[(Vec<RawThread>, bool)],
    attempted: u32,
    error: Option<reader::ReadError>,
) -> StackBurst {
    let mut source = Source::new(pid);
    let main_id = main_thread_id(reads);
    // Per thread, in first-seen order: name, samples, GIL, and per class the stacks seen.
    let mut threads: Vec<Acc> = Vec::new();
    for (read, running) in reads {
        for t in read {
            let main = Some(t.id) == main_id;
            let mut frames = t.frames.clone();
            if let Some(top) = frames.first_mut() {
                top.code = source.line(&top.file, top.line);
            }
            // The main thread's own state says whether it runs (its thread id is the pid); one
            // blocked in a native call can hold the GIL while it sleeps there.
            let on_cpu = if main { *running } else { t.gil };
            let class = classify::classify(&frames, on_cpu);
            let i = threads
                .iter()
                .position(|a| a.id == t.id)
                .unwrap_or_else(|| {
                    threads.push(Acc::new(t, main));
                    threads.len() - 1
                });
            let acc = &mut threads[i];
            acc.samples += 1;
            acc.gil += u32::from(t.gil);
            acc.add(class, frames);
        }
    }
    let mut out: Vec<ThreadStack> = threads.into_iter().map(|a| a.finish(&mut source)).collect();
    out.sort_by_key(|t| (!t.main, std::cmp::Reverse(t.samples)));
    let read = reads.len() as u32;
    let (outcome, message) = match error {
        Some(e) if read == 0 => (e.outcome, Some(e.message)),
        Some(e) => (
            StackOutcome::Read,
            Some(format!(
                "{} of {attempted} reads failed: {}",
                attempted - read,
                e.message
            )),
        ),
        None => (StackOutcome::Read, None),
    };
    StackBurst {
        pid,
        started_ms: 0,
        t_ms: 0,
        samples: attempted,
        read,
        outcome,
        message,
        threads: out,
        threads_left_out: 0,
        children: Vec::new(),
    }
}

/// The interpreter's main thread: named `MainThread` by `threading`, else the oldest thread
/// (py-spy lists threads newest first, as the interpreter links them).
fn main_thread_id(reads: &[(Vec<RawThread>, bool)]) -> Option<u64> {
    let all = || reads.iter().flat_map(|(r, _)| r.iter());
    all()
        .find(|t| t.name.as_deref() == Some("MainThread"))
        .or_else(|| reads.iter().find_map(|(r, _)| r.last()))
        .map(|t| t.id)
}

/// A class, the samples that had it, and each distinct stack seen with it and how often.
type ClassSeen = (StackClass, u32, Vec<(Vec<StackFrame>, u32)>);

/// One thread's samples while a burst is summarised.
struct Acc {
    id: u64,
    name: Option<String>,
    main: bool,
    samples: u32,
    gil: u32,
    /// Per class: how many samples, and each distinct stack with its count.
    classes: Vec<ClassSeen>,
}

impl Acc {
    fn new(t: &RawThread, main: bool) -> Self {
        Acc {
            id: t.id,
            name: t.name.clone(),
            main,
            samples: 0,
            gil: 0,
            classes: Vec::new(),
        }
    }
    fn add(&mut self, class: StackClass, frames: Vec<StackFrame>) {
        let i = self
            .classes
            .iter()
            .position(|(c, _, _)| *c == class)
            .unwrap_or_else(|| {
                self.classes.push((class, 0, Vec::new()));
                self.classes.len() - 1
            });
        let entry = &mut self.classes[i];
        entry.1 += 1;
        let same = |a: &[StackFrame], b: &[StackFrame]| {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(x, y)| x.function == y.function && x.file == y.file && x.line == y.line)
        };
        match entry.2.iter_mut().find(|(s, _)| same(s, &frames)) {
            Some((_, n)) => *n += 1,
            None => entry.2.push((frames, 1)),
        }
    }
    fn finish(mut self, source: &mut Source) -> ThreadStack {
        // Most samples first; on a tie, the class `classify` ranks first.
        self.classes.sort_by_key(|(c, n, _)| {
            (
                std::cmp::Reverse(*n),
                StackClass::ALL.iter().position(|x| x == c),
            )
        });
        let mut classes = self.classes.into_iter();
        let (class, class_samples, stacks) =
            classes
                .next()
                .unwrap_or((StackClass::Unknown, 0, Vec::new()));
        let second = classes.next().map(|(c, n, _)| (c, n));
        let mut frames = stacks
            .into_iter()
            .max_by_key(|(_, n)| *n)
            .map(|(f, _)| f)
            .unwrap_or_default();
        for f in &mut frames {
            if f.code.is_none() {
                f.code = source.line(&f.file, f.line);
            }
        }
        ThreadStack {
            id: self.id,
            name: self.name.map(|n| crate::text::printable(&n).into_owned()),
            main: self.main,
            samples: self.samples,
            gil: self.gil,
            class,
            class_samples,
            second,
            frames,
        }
    }
}

/// The program's source files, read through the process's own root (a container's files are
/// where its mount namespace has them), each once per burst.
struct Source {
    root: String,
    files: HashMap<String, Option<Vec<String>>>,
}

/// Source files larger than this are not read for their lines.
const MAX_SOURCE_BYTES: u64 = 4 << 20;

impl Source {
    fn new(pid: u32) -> Self {
        Source {
            root: format!("/proc/{pid}/root"),
            files: HashMap::new(),
        }
    }
    /// Line `line` (1-based) of `file`, stripped and redacted.
    fn line(&mut self, file: &str, line: u32) -> Option<String> {
        if !file.starts_with('/') || line == 0 {
            return None;
        }
        let root = &self.root;
        let lines = self.files.entry(file.to_string()).or_insert_with(|| {
            let path = format!("{root}{file}");
            let meta = std::fs::metadata(&path).ok()?;
            if !meta.is_file() || meta.len() > MAX_SOURCE_BYTES {
                return None;
            }
            let text = std::fs::read(&path).ok()?;
            Some(
                String::from_utf8_lossy(&text)
                    .lines()
                    .map(str::to_string)
                    .collect(),
            )
        });
        let text = lines.as_ref()?.get(line as usize - 1)?.trim();
        (!text.is_empty()).then(|| {
            crate::redact::redact_code(&crate::text::printable(&crate::text::clip(text, 120)))
        })
    }
}
