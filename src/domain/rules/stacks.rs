//! What the Python stacks of a GPU's processes say, for the rules: the newest burst of each
//! process (read while its GPU's cause was timed or open, or now and then while it drew little),
//! summarised as the class its main thread was in and where, with words for the evidence and
//! the remedies. Counters decide that a GPU waits; stacks say for what, and where in the program.

use super::{Ctx, Severity, Verdict};
use crate::model::stack::{StackBurst, StackClass, StackFrame, StackOutcome, ThreadStack};

/// A burst is evidence for this long after it was read: longer than the 15–30 s between two
/// bursts of a process the rules want, shorter than what a job changes in.
const FRESH_MS: u64 = 40_000;

/// A share of the main thread's samples that makes a class what the process is doing.
pub const MOSTLY: f32 = 0.6;

/// One process's newest burst, read, and its main thread.
pub struct Seen<'a> {
    pub pid: u32,
    pub burst: &'a StackBurst,
    pub main: &'a ThreadStack,
}

impl Seen<'_> {
    /// Share (0–1) of the main thread's samples in `class`.
    #[must_use]
    pub fn share(&self, class: StackClass) -> f32 {
        self.burst.main_share(class)
    }
    /// The main thread's class, when it held for most of the burst.
    #[must_use]
    pub fn mostly(&self) -> Option<StackClass> {
        self.burst
            .main_class()
            .filter(|(_, share)| *share >= MOSTLY)
            .map(|(c, _)| c)
    }
    /// Where the program is: its own innermost frame on the main thread.
    #[must_use]
    pub fn place(&self) -> Option<&StackFrame> {
        self.main.user_frame()
    }
    /// The dataset code runs in the training process itself (`num_workers=0`): its fetcher is
    /// on the main thread's stack.
    #[must_use]
    pub fn loads_in_process(&self) -> bool {
        self.main.frames.iter().any(|f| {
            f.file.ends_with("/torch/utils/data/_utils/fetch.py")
                || f.function.ends_with("__getitem__")
                || f.function.ends_with("__getitems__")
        })
    }
    /// The children (`DataLoader` workers) read in the burst, with their main threads.
    pub fn workers(&self) -> impl Iterator<Item = (&StackBurst, &ThreadStack)> {
        self.burst
            .children
            .iter()
            .filter_map(|c| Some((c, c.main_thread()?)))
    }
    /// Workers running the dataset's code (not waiting for an index).
    #[must_use]
    pub fn busy_workers(&self) -> Vec<&ThreadStack> {
        self.workers()
            .map(|(_, t)| t)
            .filter(|t| t.top().is_some_and(|f| !crate::model::stack::is_wait(f)))
            .collect()
    }

    /// "pid 513's main thread: data loading in 18 of 20 stack samples, at jobs.py:476 `xb, yb =
    /// next(it)`".
    #[must_use]
    pub fn line(&self) -> String {
        let where_ = self
            .place()
            .map_or(String::new(), |f| format!(", at {}", quoted(f)));
        format!(
            "pid {}'s main thread: {} in {} of {} stack samples{where_}",
            self.pid,
            self.main.class.words(),
            self.main.class_samples,
            self.main.samples
        )
    }
    /// "2 workers in `AugmentDatasetE.__getitem__` (jobs.py:1441)", for busy workers.
    #[must_use]
    pub fn workers_line(&self) -> Option<String> {
        let busy = self.busy_workers();
        let first = busy.first()?;
        let f = first.user_frame()?;
        Some(format!(
            "{} of {} worker processes busy in {} ({})",
            busy.len(),
            self.burst.children.len(),
            crate::text::code_span(&f.function),
            f.place()
        ))
    }
}

/// "jobs.py:476 \`xb, yb = next(it)\`", or "jobs.py:476 in \`train\`" without its source line.
#[must_use]
pub fn quoted(f: &StackFrame) -> String {
    // Recordings from before comments were dropped end their lines in "# …".
    let code = f
        .code
        .as_deref()
        .map(|c| c.strip_suffix("# …").unwrap_or(c).trim_end());
    // Written into one string: a hang's evidence quotes its ranks' places once a second, and
    // four strings a quote were 4 % of judging 64 GPUs.
    let mut out = String::with_capacity(24 + code.map_or(f.function.len(), str::len));
    f.push_place(&mut out);
    if let Some(code) = code {
        out.push(' ');
        crate::text::push_code_span(&mut out, &crate::text::clipped(code, 60));
    } else {
        out.push_str(" in ");
        crate::text::push_code_span(&mut out, &f.function);
    }
    out
}

/// The newest burst of `pid`, if it was read and is fresh at `now_ms`.
#[must_use]
pub fn of<'a>(ctx: &'a Ctx, pid: u32) -> Option<Seen<'a>> {
    let burst = ctx.all.stacks_of(pid)?;
    if burst.outcome != StackOutcome::Read || burst.t_ms + FRESH_MS < ctx.now_ms {
        return None;
    }
    Some(Seen {
        pid,
        burst,
        main: burst.main_thread()?,
    })
}

/// The GPU's main process (the one holding the most GPU memory) with a fresh burst.
#[must_use]
pub fn of_gpu<'a>(ctx: &'a Ctx) -> Option<Seen<'a>> {
    // Of two holding as much, the one listed first. No list is sorted: judging a GPU whose
    // finding holds as worded asks this, and allocates nothing.
    let with_burst = ctx
        .dev
        .processes
        .iter()
        .filter_map(|p| Some((p.gpu_mem_bytes.unwrap_or(0), of(ctx, p.pid)?)));
    let mut best: Option<(u64, Seen<'a>)> = None;
    for (mem, seen) in with_burst {
        if best.as_ref().is_none_or(|(most, _)| mem > *most) {
            best = Some((mem, seen));
        }
    }
    best.map(|(_, seen)| seen)
}

/// Why no stacks can be read on this GPU, said once (not permitted, not Python), if a burst
/// of one of its processes failed that way.
#[must_use]
pub fn unreadable(ctx: &Ctx) -> Option<String> {
    ctx.dev.processes.iter().find_map(|p| {
        let b = ctx.all.stacks_of(p.pid)?;
        matches!(
            b.outcome,
            StackOutcome::NoPermission | StackOutcome::NotPython
        )
        .then(|| b.message.clone())
        .flatten()
    })
}

/// What the GPU waits for when the stacks say it is not the program's fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Benign {
    /// A server idle between requests, a loop waiting on a queue or a socket.
    Requests,
    /// A checkpoint being written or read.
    Checkpoint,
    /// `torch.compile` compiling.
    Compilation,
}

/// What the GPU waits for when the stacks say it is not the program's fault; `None` when they
/// say otherwise. Asked before anything is worded (`benign`): a rule whose finding holds as
/// worded says only that it holds, at info.
#[must_use]
pub fn benign_class(s: &Seen) -> Option<Benign> {
    // Idle between requests needs only half the burst: a server works part of the time (its
    // requests), and is never in data loading.
    if s.share(StackClass::IdleWaiting) >= 0.5 && s.share(StackClass::DataLoading) < 0.2 {
        return Some(Benign::Requests);
    }
    match s.mostly()? {
        StackClass::Checkpoint => Some(Benign::Checkpoint),
        StackClass::Compilation => Some(Benign::Compilation),
        _ => None,
    }
}

/// The info-level verdict for what `benign_class` found, with the counters' `evidence` and
/// the stacks' line.
#[must_use]
pub fn benign(s: &Seen, benign: Benign, mut evidence: Vec<String>, signals: &str) -> Verdict {
    let (class, title, cause, action) = match benign {
        Benign::Requests => (
            StackClass::IdleWaiting,
            "GPU idle between requests (not starved)",
            "The process waits for work outside data loading (a server between requests, a loop waiting on a queue or a socket): the GPU is idle by demand",
            "Nothing to fix if the load is what it is; to use the GPU better, batch requests together (dynamic batching) or serve several models on it",
        ),
        Benign::Checkpoint => (
            StackClass::Checkpoint,
            "GPU waits while a checkpoint is written",
            "The training process is writing or reading a checkpoint (torch.save / torch.load) and the GPU waits for it",
            "Checkpoint less often, or asynchronously: `torch.distributed.checkpoint.async_save`, or copy the state to host memory and write it from a thread",
        ),
        Benign::Compilation => (
            StackClass::Compilation,
            "GPU waits while torch.compile compiles",
            "`torch.compile` is tracing and compiling (dynamo, inductor, triton): a start-up cost, repeated on every recompilation",
            "If it repeats during training, find recompilations: `TORCH_LOGS=recompiles`; mark dynamic shapes (`torch._dynamo.mark_dynamic`) or pad inputs to fixed sizes",
        ),
    };
    evidence.push(s.line());
    Verdict {
        evidence,
        causes: vec![cause.into()],
        actions: vec![action.into()],
        pids: vec![s.pid],
        signals: format!("{signals}, Python stacks"),
        severity: Some(Severity::Info),
        title: Some(title.into()),
        fit: 0.9,
        summary: format!("stacks: {}", class.words()),
        ..Verdict::default()
    }
}

#[cfg(test)]
mod tests {
    use super::quoted;
    use crate::model::stack::StackFrame;
    use crate::text::{clip, code_span};

    /// `quoted` writes into one string what it wrote by composing four: the place, the line
    /// clipped to 60 characters, the code span fenced past its backticks, for lines short and
    /// long, with backticks at either end or in runs, wide characters, an old comment marker.
    #[test]
    fn a_quote_says_what_the_strings_composed_said() {
        let long = "x".repeat(59) + "`";
        let wide = "損失 = モデル(入力)`".repeat(6);
        let codes: [Option<&str>; 9] = [
            Some("loss.backward()"),
            Some("`tick` and ``two``"),
            Some("print(`a`)   # …"),
            Some(&long),
            Some(&wide),
            Some(""),
            Some("```"),
            Some("x = y  "),
            None,
        ];
        for code in codes {
            for function in ["step", "`odd`", "<module>"] {
                let f = StackFrame {
                    function: function.into(),
                    file: "/opt/app/jobs/train.py".into(),
                    line: 476,
                    code: code.map(Into::into),
                };
                let stripped = code.map(|c| c.strip_suffix("# …").unwrap_or(c).trim_end());
                let before = match stripped {
                    Some(c) => format!("{} {}", f.place(), code_span(&clip(c, 60))),
                    None => format!("{} in {}", f.place(), code_span(&f.function)),
                };
                assert_eq!(quoted(&f), before, "{code:?} {function:?}");
            }
        }
        let f = StackFrame {
            function: "f".into(),
            file: "a.py".into(),
            line: 3,
            code: Some("`".into()),
        };
        assert_eq!(quoted(&f), "a.py:3 `` ` ``");
        // What it says, spelled out: the comparison above would pass a fault shared by both.
        let at = |code: Option<&str>| StackFrame {
            function: "step".into(),
            file: "/opt/app/train.py".into(),
            line: 476,
            code: code.map(Into::into),
        };
        assert_eq!(
            quoted(&at(Some("loss.backward()"))),
            "train.py:476 `loss.backward()`"
        );
        assert_eq!(
            quoted(&at(Some("`tick` and ``two``"))),
            "train.py:476 ``` `tick` and ``two`` ```"
        );
        assert_eq!(quoted(&at(None)), "train.py:476 in `step`");
        let clipped = quoted(&at(Some(&"y".repeat(70))));
        assert_eq!(clipped, format!("train.py:476 `{}…`", "y".repeat(59)));
    }
}
