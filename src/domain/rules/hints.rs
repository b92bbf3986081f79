//! Hints from what a GPU's processes run with (`software::Software`, read from /proc): a
//! setting that explains a finding goes first among its causes, with the evidence it was read
//! from. Only what was read is said; a process whose environment could not be read gets no
//! hint, and the finding says so. Every hint is listed in docs/diagnoses.md, "Hints".

use super::{RuleId, Verdict};
use crate::history::DeviceHistory;
use crate::model::software::Software;

/// The major and minor version of a framework the process loaded, if it did.
fn version_of(s: &Software, framework: &str) -> Option<(u32, u32)> {
    let f = s.frameworks.iter().find(|f| f.name == framework)?;
    let mut parts = f.version.split(['.', '+']).map(|p| p.parse::<u32>().ok());
    Some((parts.next()??, parts.next()??))
}

/// "loaded torch 1.10.2", when the process loaded a torch within `from..=to` (major, minor).
fn torch_between(s: &Software, from: (u32, u32), to: (u32, u32)) -> Option<String> {
    let v = version_of(s, "torch")?;
    (from <= v && v <= to).then(|| {
        let full = s
            .frameworks
            .iter()
            .find(|f| f.name == "torch")
            .map_or("", |f| f.version.as_str());
        format!("loaded torch {full}")
    })
}

/// One setting that explains a finding.
struct Hint {
    /// The rules it joins.
    rules: &'static [RuleId],
    /// What the process does that makes the hint hold, said after "pid N "
    /// (`runs with CUDA_LAUNCH_BLOCKING=1`), or `None`.
    applies: fn(&Software) -> Option<String>,
    /// The /proc files the hint reads.
    reads: &'static str,
    cause: &'static str,
    action: &'static str,
    /// Reported by the source article and not verified here: said after the causes gpuwatch
    /// measured, never first.
    reported: bool,
}

fn setting_is(s: &Software, key: &str, want: &[&str]) -> Option<String> {
    let v = s.setting(key)?;
    want.iter()
        .any(|w| v.trim().eq_ignore_ascii_case(w))
        .then(|| format!("runs with {key}={v}"))
}

fn imports(s: &Software, framework: &str) -> bool {
    s.frameworks.iter().any(|f| f.name == framework)
}

const HINTS: [Hint; 10] = [
    Hint {
        rules: &[RuleId::Sync],
        applies: |s| setting_is(s, "CUDA_LAUNCH_BLOCKING", &["1"]),
        reads: "environ",
        cause: "CUDA_LAUNCH_BLOCKING=1 is set: every kernel launch waits for the kernel to finish, so the host and the GPU take turns (a debugging setting left on?)",
        action: "Unset CUDA_LAUNCH_BLOCKING (it is for debugging only) and restart the job",
        reported: false,
    },
    Hint {
        rules: &[RuleId::Hang, RuleId::Sync, RuleId::Starved],
        applies: |s| setting_is(s, "NCCL_P2P_DISABLE", &["1"]),
        reads: "environ",
        cause: "NCCL_P2P_DISABLE=1 is set: collectives between GPUs of this machine go through host memory instead of NVLink or PCIe peer-to-peer",
        action: "Unset NCCL_P2P_DISABLE unless a known P2P fault needs it (`nvidia-smi topo -m` shows the links NCCL could use)",
        reported: false,
    },
    Hint {
        rules: &[RuleId::Hang, RuleId::Sync, RuleId::Starved],
        applies: |s| {
            setting_is(s, "NCCL_NET", &["Socket"])
                .or_else(|| setting_is(s, "NCCL_IB_DISABLE", &["1"]))
        },
        reads: "environ",
        cause: "NCCL is told to use TCP sockets between nodes (NCCL_NET=Socket or NCCL_IB_DISABLE=1): collectives across nodes are far slower than over InfiniBand/RoCE",
        action: "Let NCCL use the RDMA fabric if there is one (unset NCCL_IB_DISABLE / NCCL_NET); check with NCCL_DEBUG=INFO which transport it picked; over sockets, `NCCL_NSOCKS_PERTHREAD=4 NCCL_SOCKET_NTHREADS=2` (reported by the source article, not verified here)",
        reported: false,
    },
    Hint {
        rules: &[RuleId::Fp32],
        applies: |s| setting_is(s, "NVIDIA_TF32_OVERRIDE", &["0"]),
        reads: "environ",
        cause: "NVIDIA_TF32_OVERRIDE=0 is set: cuBLAS and cuDNN run FP32 products on CUDA cores whatever the program asks for (TF32 forbidden)",
        action: "Unset NVIDIA_TF32_OVERRIDE (it overrides `torch.set_float32_matmul_precision` and `allow_tf32`) and restart the job",
        reported: false,
    },
    Hint {
        rules: &[RuleId::Hang],
        applies: |s| setting_is(s, "NCCL_DEBUG", &["INFO", "TRACE"]),
        reads: "environ",
        cause: "NCCL_DEBUG is set, so the job's stderr already names the collective and the transport each rank was in",
        action: "Read the ranks' stderr for the last NCCL lines before the stall; in a long healthy job, NCCL_DEBUG=INFO only adds log volume: set it back to WARN",
        reported: false,
    },
    Hint {
        rules: &[RuleId::IdleMem, RuleId::MemFull],
        applies: |s| {
            (imports(s, "tensorflow")
                && setting_is(s, "TF_FORCE_GPU_ALLOW_GROWTH", &["true"]).is_none())
            .then(|| "loaded TensorFlow, and TF_FORCE_GPU_ALLOW_GROWTH is not true".to_string())
        },
        reads: "maps and environ",
        cause: "TensorFlow reserves nearly all GPU memory when it starts, whether it needs it or not (TF_FORCE_GPU_ALLOW_GROWTH is not true)",
        action: "Set TF_FORCE_GPU_ALLOW_GROWTH=true, or `tf.config.experimental.set_memory_growth(gpu, True)` before any op",
        reported: false,
    },
    Hint {
        rules: &[RuleId::IdleMem, RuleId::MemFull],
        applies: |s| {
            (imports(s, "jax")
                && setting_is(s, "XLA_PYTHON_CLIENT_PREALLOCATE", &["false"]).is_none())
            .then(|| "loaded JAX, and XLA_PYTHON_CLIENT_PREALLOCATE is not false".to_string())
        },
        reads: "maps and environ",
        cause: "JAX preallocates 75 % of GPU memory when it starts (XLA_PYTHON_CLIENT_PREALLOCATE is not false)",
        action: "Set XLA_PYTHON_CLIENT_PREALLOCATE=false, or a smaller XLA_PYTHON_CLIENT_MEM_FRACTION",
        reported: false,
    },
    Hint {
        rules: &[RuleId::Hang, RuleId::Sync],
        applies: |s| torch_between(s, (1, 8), (1, 11)),
        reads: "maps",
        cause: "Reported, not verified here: PyTorch 1.8–1.11 synchronised NCCL collectives inefficiently (the source article's version table)",
        action: "Reported, not verified: upgrade to PyTorch 2.x and compare the step time",
        reported: true,
    },
    Hint {
        rules: &[RuleId::Hang, RuleId::Sync, RuleId::Starved],
        applies: |s| torch_between(s, (2, 0), (2, 1)),
        reads: "maps",
        cause: "Reported, not verified here: PyTorch 2.0–2.1 had CUDA-graph problems with torch.compile (the source article's version table); torch.compile itself can stall on recompilation",
        action: "Reported, not verified: try the job without torch.compile, or upgrade; `TORCH_LOGS=recompiles` shows recompilations",
        reported: true,
    },
    Hint {
        rules: &[RuleId::Sync],
        applies: |s| imports(s, "tensorflow").then(|| "loaded TensorFlow".to_string()),
        reads: "maps",
        cause: "Reported, not verified here: TensorFlow running functions eagerly (`tf.config.run_functions_eagerly(True)`) launches op by op",
        action: "Reported, not verified: keep `tf.config.run_functions_eagerly(False)` and wrap the step in `tf.function`",
        reported: true,
    },
];

/// Puts the hints that hold for `dev`'s processes first among `v`'s causes and actions, each
/// with the evidence it was read from.
pub fn apply(rule: RuleId, dev: &DeviceHistory, v: &mut Verdict) {
    let mut unreadable = None;
    let mut at = 0;
    for hint in HINTS.iter().filter(|h| h.rules.contains(&rule)) {
        let found = dev.processes.iter().find_map(|p| {
            let sw = p.host.as_ref()?.software.as_deref()?;
            if let Some(why) = &sw.unreadable {
                unreadable.get_or_insert((p.pid, why.clone()));
            }
            (hint.applies)(sw).map(|what| (p.pid, what))
        });
        if let Some((pid, what)) = found {
            v.evidence.push(format!(
                "pid {pid} {what} (read from /proc/{pid}/{})",
                hint.reads
            ));
            if hint.reported {
                v.causes.push(hint.cause.into());
                v.actions.push(hint.action.into());
            } else {
                v.causes.insert(at, hint.cause.into());
                v.actions.insert(at, hint.action.into());
                at += 1;
            }
        }
    }
    if let Some((pid, why)) = unreadable {
        v.evidence.push(format!(
            "pid {pid}'s settings could not be read ({why}): hints from them are missing"
        ));
    }
}

/// Keeps in `v`, worded after the GPU's processes left, the hints the shown finding `old` had
/// read while they ran: their causes and actions where `apply` puts them, their evidence.
pub fn carry(old: &crate::rules::Finding, v: &mut Verdict) {
    let mut at = 0;
    for hint in &HINTS {
        let (cause, action) = (hint.cause, hint.action);
        if !old.causes.iter().any(|c| c == cause) || v.causes.iter().any(|c| c == cause) {
            continue;
        }
        if hint.reported {
            v.causes.push(cause.into());
            v.actions.push(action.into());
        } else {
            v.causes.insert(at.min(v.causes.len()), cause.into());
            v.actions.insert(at.min(v.actions.len()), action.into());
            at += 1;
        }
    }
    for line in old
        .evidence
        .iter()
        .filter(|e| e.contains(" (read from /proc/"))
    {
        if !v.evidence.contains(line) {
            v.evidence.push(line.clone());
        }
    }
}
