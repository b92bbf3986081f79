//! What a thread's frames mean for the GPU. Read from the whole stack, innermost frame first,
//! with a precedence: what a frame further out says (a `DataLoader` iteration, a collective, a
//! checkpoint) decides over the primitive it waits in (a queue, a condition, a socket), and the
//! program's own line (`loss.item()`) is read for what no Python frame shows (C methods).
//!
//! What it can get wrong, and why it is bounded: a name match on a user function that merely
//! shares a library's file layout; a `.item()` on a line that also does other work; a thread
//! that holds the GIL in C code (counted as Python busy when no frame says otherwise). Each
//! class is evidence beside the counters, never a finding by itself.

use crate::model::stack::{StackClass, StackFrame};

/// The class of one sampled stack (innermost frame first). `on_cpu`: the thread held the GIL or
/// ran on a CPU when read.
#[must_use]
pub fn classify(frames: &[StackFrame], on_cpu: bool) -> StackClass {
    if frames.iter().any(is_compiling) {
        return StackClass::Compilation;
    }
    if frames.iter().any(is_checkpoint) {
        return StackClass::Checkpoint;
    }
    if frames.iter().any(is_collective) || top_code_matches(frames, COLLECTIVE_CODE) {
        return StackClass::Collective;
    }
    if frames.iter().any(is_data_loading) {
        return StackClass::DataLoading;
    }
    if frames.first().is_some_and(is_sync_frame) || top_code_matches(frames, SYNC_CODE) {
        return StackClass::HostSync;
    }
    if frames.iter().any(is_copy_frame) || top_code_matches(frames, COPY_CODE) {
        return StackClass::HostCopy;
    }
    if frames.first().is_some_and(crate::model::stack::is_wait)
        || top_code_matches(frames, WAIT_CODE)
    {
        return StackClass::IdleWaiting;
    }
    if frames.iter().any(is_gpu_work) {
        return StackClass::GpuWork;
    }
    if frames.is_empty() {
        return StackClass::Unknown;
    }
    if on_cpu {
        StackClass::PythonBusy
    } else {
        StackClass::Unknown
    }
}

/// The function's own name: py-spy writes methods as `Class.method` on Python 3.11 and newer.
fn short(f: &StackFrame) -> &str {
    f.function.rsplit('.').next().unwrap_or(&f.function)
}

/// Path fragments, matched with `/` on both sides as they appear in an installed file's path.
fn in_any(file: &str, parts: &[&str]) -> bool {
    parts.iter().any(|p| file.contains(p))
}

fn is_compiling(f: &StackFrame) -> bool {
    // `torch/_dynamo/eval_frame.py` wraps every call of a compiled model, compiled or not: only
    // the files that trace, lower and compile count.
    in_any(
        &f.file,
        &[
            "/torch/_dynamo/convert_frame.py",
            "/torch/_dynamo/symbolic_convert.py",
            "/torch/_dynamo/output_graph.py",
            "/torch/_dynamo/variables/",
            "/torch/_inductor/compile_fx.py",
            "/torch/_inductor/codecache.py",
            "/torch/_inductor/graph.py",
            "/torch/_inductor/scheduler.py",
            "/torch/_inductor/lowering.py",
            "/torch/_inductor/codegen/",
            "/torch/_inductor/async_compile.py",
            "/torch/_functorch/aot_autograd.py",
            "/torch/_functorch/_aot_autograd/",
            "/triton/compiler/",
            "/jax/_src/compiler.py",
            "/jax/_src/interpreters/pxla.py",
        ],
    )
}

fn is_checkpoint(f: &StackFrame) -> bool {
    (f.file.ends_with("/torch/serialization.py")
        && matches!(
            short(f),
            "save" | "_save" | "_legacy_save" | "load" | "_load" | "_legacy_load"
        ))
        || in_any(
            &f.file,
            &[
                "/safetensors/",
                "/torch/distributed/checkpoint/",
                "/orbax/checkpoint/",
            ],
        )
}

fn is_collective(f: &StackFrame) -> bool {
    in_any(
        &f.file,
        &[
            "/torch/distributed/distributed_c10d.py",
            "/torch/distributed/c10d_logger.py",
            "/torch/distributed/algorithms/",
            "/torch/distributed/fsdp/",
            "/torch/distributed/_functional_collectives.py",
            "/deepspeed/comm/",
            "/horovod/",
        ],
    ) && !in_any(&f.file, &["/torch/distributed/checkpoint/"])
}

fn is_data_loading(f: &StackFrame) -> bool {
    in_any(
        &f.file,
        &[
            "/torch/utils/data/",
            "/webdataset/",
            "/ffcv/",
            "/nvidia/dali/",
            "/datasets/arrow_dataset.py",
            "/tensorflow/python/data/",
        ],
    )
}

/// Waiting on the GPU in a Python-level call.
fn is_sync_frame(f: &StackFrame) -> bool {
    short(f) == "synchronize"
        && in_any(
            &f.file,
            &[
                "/torch/cuda/__init__.py",
                "/torch/cuda/streams.py",
                "/torch/cuda/",
            ],
        )
}

fn is_copy_frame(f: &StackFrame) -> bool {
    in_any(
        &f.file,
        &[
            "/accelerate/hooks.py",
            "/deepspeed/runtime/zero/offload",
            "/deepspeed/runtime/swap_tensor/",
        ],
    )
}

fn is_gpu_work(f: &StackFrame) -> bool {
    in_any(
        &f.file,
        &[
            "/torch/nn/modules/",
            "/torch/nn/functional.py",
            "/torch/autograd/",
            "/torch/_tensor.py",
            "/torch/optim/",
            "/torch/amp/",
            "/torch/functional.py",
            "/transformers/models/",
            "/flax/",
            "/jax/_src/",
        ],
    )
}

/// Source-line patterns of C calls no Python frame shows, read on the innermost frame.
const SYNC_CODE: &[&str] = &[
    ".item()",
    ".tolist()",
    ".cpu()",
    ".numpy()",
    "torch.cuda.synchronize(",
    "cuda.synchronize(",
    ".synchronize()",
    ".nonzero(",
    "torch.nonzero(",
];
const COPY_CODE: &[&str] = &[
    ".to(device",
    ".to(\"cuda",
    ".to('cuda",
    ".cuda(",
    ".copy_(",
    ".pin_memory(",
    "non_blocking=",
];
const WAIT_CODE: &[&str] = &[
    "time.sleep(",
    "sleep(",
    ".accept(",
    ".recv(",
    "select.select(",
    ".get(timeout",
    "input(",
    ".wait(timeout",
];
const COLLECTIVE_CODE: &[&str] = &[
    "dist.all_reduce(",
    "dist.barrier(",
    "dist.all_gather",
    "dist.broadcast(",
    "dist.reduce_scatter",
    "all_reduce(",
    ".wait()",
];

/// The innermost frame's source line contains one of `patterns` (code read from the file).
fn top_code_matches(frames: &[StackFrame], patterns: &[&str]) -> bool {
    frames
        .first()
        .and_then(|f| f.code.as_deref())
        .is_some_and(|code| patterns.iter().any(|p| code.contains(p)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(function: &str, file: &str, code: Option<&str>) -> StackFrame {
        StackFrame {
            function: function.into(),
            file: file.into(),
            line: 1,
            code: code.map(Into::into),
        }
    }
    const SP: &str = "/usr/lib/python3/dist-packages";

    #[test]
    fn a_dataloader_wait_is_data_loading_though_it_waits_in_a_queue() {
        let frames = [
            f("wait", "/usr/lib/python3.12/threading.py", None),
            f("get", "/usr/lib/python3.12/multiprocessing/queues.py", None),
            f(
                "_next_data",
                &format!("{SP}/torch/utils/data/dataloader.py"),
                None,
            ),
            f(
                "__next__",
                &format!("{SP}/torch/utils/data/dataloader.py"),
                None,
            ),
            f("main", "/home/u/train.py", Some("for x, y in loader:")),
        ];
        assert_eq!(classify(&frames, false), StackClass::DataLoading);
    }

    #[test]
    fn a_serving_loop_in_a_selector_or_sleep_is_idle_waiting() {
        let select = [
            f(
                "EpollSelector.select",
                "/usr/lib/python3.12/selectors.py",
                None,
            ),
            f("serve_forever", "/usr/lib/python3.12/socketserver.py", None),
        ];
        assert_eq!(classify(&select, false), StackClass::IdleWaiting);
        let sleep = [f(
            "serve",
            "/srv/app/server.py",
            Some("time.sleep(0.5)  # wait for the next request"),
        )];
        assert_eq!(classify(&sleep, true), StackClass::IdleWaiting);
    }

    #[test]
    fn item_and_synchronize_are_host_syncs() {
        let item = [
            f("step", "/home/u/train.py", Some("total += loss.item()")),
            f("main", "/home/u/train.py", None),
        ];
        assert_eq!(classify(&item, true), StackClass::HostSync);
        let sync = [
            f(
                "Stream.synchronize",
                &format!("{SP}/torch/cuda/streams.py"),
                None,
            ),
            f("main", "/home/u/train.py", Some("torch.cuda.synchronize()")),
        ];
        assert_eq!(classify(&sync, true), StackClass::HostSync);
    }

    #[test]
    fn precedence_collective_checkpoint_and_compilation_over_what_they_call() {
        let coll = [
            f("wait", "/usr/lib/python3.12/threading.py", None),
            f(
                "all_reduce",
                &format!("{SP}/torch/distributed/distributed_c10d.py"),
                None,
            ),
            f("step", "/home/u/train.py", Some("dist.all_reduce(t)")),
        ];
        assert_eq!(classify(&coll, false), StackClass::Collective);
        let save = [
            f("write", &format!("{SP}/torch/serialization.py"), None),
            f("_save", &format!("{SP}/torch/serialization.py"), None),
            f("save", &format!("{SP}/torch/serialization.py"), None),
        ];
        assert_eq!(classify(&save, true), StackClass::Checkpoint);
        let compile = [
            f(
                "compile_fx",
                &format!("{SP}/torch/_inductor/compile_fx.py"),
                None,
            ),
            f("_fn", &format!("{SP}/torch/_dynamo/eval_frame.py"), None),
            f("forward", &format!("{SP}/torch/nn/modules/module.py"), None),
        ];
        assert_eq!(classify(&compile, true), StackClass::Compilation);
        // The compiled model running, not compiling: its forward.
        let run = [
            f("_fn", &format!("{SP}/torch/_dynamo/eval_frame.py"), None),
            f(
                "_call_impl",
                &format!("{SP}/torch/nn/modules/module.py"),
                None,
            ),
        ];
        assert_eq!(classify(&run, true), StackClass::GpuWork);
    }

    #[test]
    fn plain_python_on_the_cpu_is_python_busy_and_nothing_is_unknown() {
        let busy = [f(
            "augment",
            "/home/u/aug.py",
            Some("x = [v * 2 for v in x]"),
        )];
        assert_eq!(classify(&busy, true), StackClass::PythonBusy);
        assert_eq!(classify(&busy, false), StackClass::Unknown);
        assert_eq!(classify(&[], true), StackClass::Unknown);
    }

    #[test]
    fn copies_to_the_gpu_are_host_copies() {
        let copy = [f(
            "step",
            "/home/u/train.py",
            Some("x = x.to(device, non_blocking=False)"),
        )];
        assert_eq!(classify(&copy, true), StackClass::HostCopy);
    }
}
