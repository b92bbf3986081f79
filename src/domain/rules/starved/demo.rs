//! The starved rule's scenario, `--demo starved`: a training loop whose single-process loader
//! decodes every batch on the CPU while the GPU waits.

use crate::model::demo::{Demo, Frame, Level, Workload, FLOOR, STOCK};
use crate::model::stack::StackClass;

pub(super) const DEMO: Demo = Demo {
    name: "starved",
    about: "input-starved training: bursty low util, power near the floor, the host CPU pegged",
    level: demo_level,
    facts: STOCK,
    workload: Some(Workload {
        cmdline: "python3 train.py --num-workers 0 --batch 64",
        cpu_pct: 99.0,
        gpu_mem_gib: 20,
        workers: 0,
        ranks: 1,
        one_job: false,
        sleeping: false,
        stack: (StackClass::DataLoading, 9, &DEMO_STACK),
    }),
    trouble: None,
};

/// A step's kernels run in bursts (about three ticks in ten) between long waits for the next
/// batch.
fn demo_level(_t_s: f32, burst: f32) -> Level {
    let on = burst < 0.3;
    Level {
        util: if on { 20.0 } else { 2.0 },
        mem_util: 4.0,
        power: if on { 200.0 } else { 160.0 },
        sm: if on { 18.0 } else { 1.0 },
        occ: 3.7,
        tensor: 0.7,
        dram: 3.4,
        mem_gib: 20.0,
        temp: 38.0,
        ..FLOOR
    }
}

/// Its main thread in the single-process loader's decode, in 9 samples of 10.
const DEMO_STACK: [Frame; 6] = [
    (
        "decode_and_augment",
        "/home/alice/data.py",
        41,
        "img = np.asarray(Image.open(path).convert(\"RGB\"))",
    ),
    (
        "ImageFolder.__getitem__",
        "/home/alice/data.py",
        57,
        "x = decode_and_augment(self.paths[i])",
    ),
    (
        "_MapDatasetFetcher.fetch",
        "torch/utils/data/_utils/fetch.py",
        52,
        "data = [self.dataset[idx] for idx in possibly_batched_index]",
    ),
    (
        "_SingleProcessDataLoaderIter._next_data",
        "torch/utils/data/dataloader.py",
        789,
        "data = self._dataset_fetcher.fetch(index)",
    ),
    (
        "_BaseDataLoaderIter.__next__",
        "torch/utils/data/dataloader.py",
        733,
        "data = self._next_data()",
    ),
    ("train", "/home/alice/train.py", 88, "for x, y in loader:"),
];
