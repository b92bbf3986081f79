//! The simulated GPUs' Python stacks: what a process of each scenario would show `gpuwatch
//! stacks`, as bursts every 15 s of simulated time, so that the demo shows the evidence stacks
//! give (where a starved loop waits, the rank outside the collective, the notebook idle in its
//! event loop) and tests can drive the rules with them.

use crate::model::stack::{StackBurst, StackClass, StackFrame, StackOutcome, ThreadStack};

use super::sim::Scenario;

/// Seconds of simulated time between two bursts of a process, and before the first.
const EVERY_S: u64 = 15;
const FIRST_S: u64 = 6;
const SAMPLES: u32 = 10;

const TORCH: &str = "/usr/lib/python3/dist-packages/torch";

/// The burst `pid` (a process of `scenario`) gives at `t_ms`, if one is due this tick
/// (`elapsed_ms` into the simulation, ticks `interval_ms` apart; GPU `gpu` reads a little
/// later than GPU `gpu - 1`, as one stack thread would).
#[must_use]
pub fn due(
    scenario: Scenario,
    pid: u32,
    gpu: usize,
    elapsed_ms: u64,
    interval_ms: u64,
    t_ms: u64,
) -> Option<StackBurst> {
    // Within one period: GPU 50 and on, 300 ms apart, would otherwise be due past its end, and
    // never (the 64-GPU demos read no stacks for GPUs 50-63 until 2026-12-05).
    let period = EVERY_S * 1000;
    let offset = (gpu as u64 * 300) % period;
    let since = elapsed_ms.checked_sub(FIRST_S * 1000 + offset)?;
    if since % period >= interval_ms.max(1) {
        return None;
    }
    let (class, in_class, frames) = story(scenario)?;
    Some(StackBurst {
        pid,
        started_ms: t_ms.saturating_sub(2_000),
        t_ms,
        samples: SAMPLES,
        read: SAMPLES,
        outcome: StackOutcome::Read,
        message: None,
        threads: vec![ThreadStack {
            id: 0x7f00_0000_0000 + u64::from(pid),
            name: Some("MainThread".into()),
            main: true,
            samples: SAMPLES,
            gil: if class == StackClass::PythonBusy {
                SAMPLES
            } else {
                1
            },
            class,
            class_samples: in_class,
            second: (in_class < SAMPLES).then_some((StackClass::GpuWork, SAMPLES - in_class)),
            frames,
        }],
        threads_left_out: 0,
        children: Vec::new(),
    })
}

/// A frame: function, file (`torch/…` under the installed torch), line, source line.
use crate::model::demo::Frame;

const STRAGGLER: [Frame; 3] = [
    (
        "per_sample_metrics",
        "/home/alice/metrics.py",
        22,
        "scores = [bleu(h, r) for h, r in zip(hyps, refs)]",
    ),
    (
        "train_step",
        "/home/alice/train_ddp.py",
        133,
        "metrics = per_sample_metrics(outputs.tolist(), refs)",
    ),
    (
        "main",
        "/home/alice/train_ddp.py",
        160,
        "loss = train_step(batch)",
    ),
];
const TRAINING: [Frame; 4] = [
    (
        "_engine_run_backward",
        "torch/autograd/graph.py",
        869,
        "return Variable._execution_engine.run_backward(",
    ),
    (
        "backward",
        "torch/autograd/__init__.py",
        381,
        "_engine_run_backward(",
    ),
    (
        "Tensor.backward",
        "torch/_tensor.py",
        631,
        "torch.autograd.backward(",
    ),
    ("train", "/home/alice/train.py", 92, "loss.backward()"),
];

/// The main thread of a process of each scenario: its class, samples in it, frames. A rule's
/// scenario that declares its process declares its stack with it.
fn story(scenario: Scenario) -> Option<(StackClass, u32, Vec<StackFrame>)> {
    let (class, n, frames) = match scenario.workload() {
        Some(w) => w.stack,
        None => simulated_story(scenario)?,
    };
    let frames = frames
        .iter()
        .map(|(function, file, line, code)| StackFrame {
            function: (*function).into(),
            file: match file.strip_prefix("torch/") {
                Some(rest) => format!("{TORCH}/{rest}"),
                None => (*file).into(),
            },
            line: *line,
            code: Some((*code).into()),
        })
        .collect();
    Some((class, n, frames))
}

/// The stacks of the simulator's own scenarios, and of a rule's that runs the training process.
fn simulated_story(scenario: Scenario) -> Option<(StackClass, u32, &'static [Frame])> {
    Some(match scenario {
        Scenario::Straggler => (StackClass::PythonBusy, 10, &STRAGGLER),
        Scenario::Healthy
        | Scenario::Health
        | Scenario::Fleet { .. }
        | Scenario::Membound
        | Scenario::Rule(_) => (StackClass::GpuWork, 8, &TRAINING),
        Scenario::Idle | Scenario::Mixed | Scenario::Mig => return None,
    })
}
