//! The hang rule's scenario, `--demo hang`: ranks of one torchrun job, one a GPU, each spinning
//! in an all-reduce that waits for a peer: util pinned at 100 %, power flat at the idle floor,
//! SM activity about 1 %. The simulator's `straggler`, `mixed`, `fleet` and `mig` stories play
//! it on the GPUs whose ranks wait.

use crate::model::demo::{Demo, Frame, Level, Workload, FLOOR, STOCK};
use crate::model::stack::StackClass;

pub(super) const DEMO: Demo = Demo {
    name: "hang",
    about: "a hung rank: util pinned at 100 %, power flat at the idle floor, SM activity ~1 %",
    // One spinning kernel holds 0.8 % of an H200's SMs (measured).
    level: |_, _| Level {
        util: 100.0,
        sm: 0.8,
        mem_gib: 90.0,
        temp: 36.0,
        ..FLOOR
    },
    facts: STOCK,
    // A rank of the job, waiting in the collective, with the command line torchrun gives its
    // workers (the rank count lives in the launcher's and in the environment, so it holds for
    // any --gpus); the straggler the others wait for is a rank of the same job (`simproc`).
    workload: Some(Workload {
        cmdline: "python3 -u train_ddp.py --config ddp.yaml",
        cpu_pct: 100.0,
        gpu_mem_gib: 90,
        workers: 4,
        ranks: 1,
        one_job: true,
        sleeping: false,
        stack: (StackClass::Collective, 10, &HUNG_RANK),
    }),
    trouble: None,
};

const HUNG_RANK: [Frame; 4] = [
    (
        "all_reduce",
        "torch/distributed/distributed_c10d.py",
        2501,
        "work.wait()",
    ),
    (
        "wrapper",
        "torch/distributed/c10d_logger.py",
        83,
        "return func(*args, **kwargs)",
    ),
    (
        "train_step",
        "/home/alice/train_ddp.py",
        121,
        "dist.all_reduce(grad_norm)",
    ),
    (
        "main",
        "/home/alice/train_ddp.py",
        160,
        "loss = train_step(batch)",
    ),
];
