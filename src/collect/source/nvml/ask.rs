//! What the slow thread asks in a round: the calls read only every few rounds, whether a GPU's
//! process list is due, and which calls not to ask again because the device does not support
//! them.

use nvml_wrapper::error::NvmlError;

use super::{settle, timed};
use crate::source::CallTimes;

/// Rounds between reads of the energy counter: 3.5 ms of CPU per call on an H200 (a busy wait
/// in the driver), for a value that only cross-checks `power_usage` (the joules shown are the
/// counter's steps with the power integral between them, whatever the spacing). Every 15 s it
/// was a fifth of the slow thread's CPU (run 27: 16-18 ms per 20 s); once a minute.
pub(super) const ENERGY_EVERY: u64 = 60;
/// Rounds between reads of the health counters (ECC, remapped rows, `PCIe` replays, `NVLink`):
/// they change rarely, and the replay counter costs 180 µs of CPU a read on an H200 (325 µs
/// median latency, run 31). Read every 5th round they were a seventh of the slow thread (run
/// 40: about 65 of 450 µs a second). The rules judge their rise over `link_errors_window`
/// (60 s), so a read every 15 s delays a finding by at most that; ECC errors and Xids also
/// arrive at once as NVML events (`events.rs`). dcgm-exporter collects every 30 s by default.
pub(super) const HEALTH_EVERY: u64 = 15;
/// Rounds between reads of the `PCIe` link's width: 90 µs a read on an H200 (median, timed by
/// `devices --timings` in run 31; the generation, which drops whenever the GPU idles, takes 3
/// µs and is read every round), a sixth of the slow round, for a width that changes only when
/// a link retrains.
pub(super) const LINK_WIDTH_EVERY: u64 = 5;
/// Rounds between reads of per-process utilization: 1.4 ms of CPU per call on an H200. It is
/// not read at all while a GPU has one process (see `device_util_to_process`).
pub(super) const PROC_UTIL_EVERY: u64 = 2;

/// Rounds between reads of the process list of a GPU with one process or none while its used
/// memory holds still. The two list calls take 190 µs of CPU a round on an H200 (164 and 26
/// µs, run 31), a third of the slow round. A process that starts or ends on a GPU creates or
/// frees a context, and the one process's memory is the GPU's less the driver's, so a list
/// that matters to the screen or the rules changes only with the used memory: in every H200
/// recording of the corpus, the list changed with it or one round after it (the list lags the
/// memory by a round at times), never alone.
const PROC_LIST_EVERY: u64 = 5;

/// Says from the GPU's used memory whether its process list is due.
#[derive(Debug, Default)]
pub(super) struct ListWatch {
    mem: Option<u64>,
    /// Rounds the used memory has held still.
    still: u64,
    /// The last read of the list failed: read it again next round.
    pub(super) failed: bool,
}

impl ListWatch {
    /// Due when the used memory changed this round or the last, when it cannot be read,
    /// with more than one process (their per-process utilization is read with the list),
    /// after a read that failed, and otherwise every `PROC_LIST_EVERY` rounds.
    pub(super) fn due(&mut self, mem: Option<u64>, processes: usize) -> bool {
        if mem.is_some() && mem == self.mem {
            self.still += 1;
        } else {
            self.still = 0;
        }
        self.mem = mem;
        mem.is_none()
            || self.failed
            || processes > 1
            || self.still < 2
            || self.still.is_multiple_of(PROC_LIST_EVERY)
    }
}

/// The slow calls a device answered `NotSupported`, not asked again: what a device supports
/// does not change while the driver runs (a MIG mode change needs a reset, and a new run), and
/// a GPU without a process list, a link generation or `PCIe` counters would otherwise be asked
/// each of them every round. A short list, empty on a GPU that answers everything.
#[derive(Debug, Default)]
pub(super) struct Unsupported(Vec<&'static str>);

impl Unsupported {
    /// `call`'s answer, as `read` gives it; `None` without a call once it was `NotSupported`.
    pub(super) fn read<T>(
        &mut self,
        t: &mut CallTimes,
        call: &'static str,
        lost: &mut Option<String>,
        f: impl FnOnce() -> Result<T, NvmlError>,
    ) -> Option<T> {
        if self.0.contains(&call) {
            return None;
        }
        let r = timed(t, call, f);
        if matches!(r, Err(NvmlError::NotSupported)) {
            self.0.push(call);
        }
        settle(call, lost, r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::GIB;

    #[test]
    fn the_process_list_waits_while_the_used_memory_holds_still() {
        let mut w = ListWatch::default();
        let due: Vec<bool> = [1, 1, 1, 1, 1, 1, 1, 2, 2, 2]
            .iter()
            .map(|m| w.due(Some(m * GIB), 1))
            .collect();
        let expect = [
            true, true, false, false, false, true, false, true, true, false,
        ];
        assert_eq!(
            due, expect,
            "read when it changed, a round after, then every fifth"
        );
        assert!(w.due(None, 1), "memory unread: the list is read");
        assert!(
            (0..4).all(|_| w.due(Some(GIB), 2)),
            "several processes: every round"
        );
        let mut w = ListWatch::default();
        (0..3).for_each(|_| {
            w.due(Some(GIB), 1);
        });
        assert!(!w.due(Some(GIB), 1), "still: not due");
        w.failed = true;
        assert!(
            w.due(Some(GIB), 1),
            "a failed read is tried again next round"
        );
    }

    /// Every H200 recording of the corpus, walked a slow round (1 s) at a time: the list the
    /// slow thread would keep equals the one read every round, at every round.
    #[test]
    fn skipped_process_lists_miss_no_change_in_the_h200_recordings() {
        use crate::source::replay::ReplaySource;
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
        let mut rounds = 0;
        for file in [
            "corpus/tune.jsonl.gz",
            "corpus/holdout.jsonl.gz",
            "corpus/holdout2.jsonl.gz",
            "corpus/holdout3.jsonl.gz",
            "corpus/holdout4.jsonl.gz",
            "corpus/stacks.jsonl.gz",
            "corpus/stacks2.jsonl.gz",
            "fixtures/h200/phases.jsonl.gz",
            "fixtures/h200x2/nccl_hang.jsonl.gz",
            "fixtures/h200-jax/jax.jsonl.gz",
        ] {
            let mut src = ReplaySource::open(&dir.join(file), f64::INFINITY).unwrap();
            let ticks = src.read_all().unwrap();
            let gpus = ticks.first().map_or(0, |t| t.devices.len());
            // Each GPU, with the rounds at four offsets into the recording's 250 ms ticks.
            for (g, offset) in (0..gpus).flat_map(|g| [0, 250, 500, 750].map(|o| (g, o))) {
                let mut w = ListWatch::default();
                let mut kept: Vec<(u32, Option<u64>)> = Vec::new();
                let mut next_round = ticks.first().map_or(0, |t| t.t_ms + offset);
                for t in ticks.iter().filter(|t| t.devices.len() > g) {
                    if t.t_ms < next_round {
                        continue;
                    }
                    next_round = t.t_ms + 1000;
                    let d = &t.devices[g];
                    let list: Vec<(u32, Option<u64>)> = d
                        .processes
                        .iter()
                        .map(|p| (p.pid, p.gpu_mem_bytes))
                        .collect();
                    if w.due(d.sample.mem_used_bytes, kept.len()) {
                        kept.clone_from(&list);
                    }
                    assert_eq!(kept, list, "{file} GPU {g} at {} (offset {offset})", t.t_ms);
                    rounds += 1;
                }
            }
        }
        assert!(rounds > 8000, "{rounds} rounds walked");
    }

    /// A call told `NotSupported` is asked once; another call, or one that failed otherwise,
    /// is asked every time.
    #[test]
    fn a_call_answered_not_supported_is_not_asked_again_and_the_others_are() {
        let (mut u, mut t, mut lost) = (Unsupported::default(), CallTimes::default(), None);
        let (mut unsupported, mut supported, mut failing) = (0, 0, 0);
        for _ in 0..3 {
            let r = u.read(&mut t, "a", &mut lost, || {
                unsupported += 1;
                Err::<u32, _>(NvmlError::NotSupported)
            });
            assert_eq!(r, None);
            let r = u.read(&mut t, "b", &mut lost, || {
                supported += 1;
                Ok(7)
            });
            assert_eq!(r, Some(7));
            u.read(&mut t, "c", &mut lost, || {
                failing += 1;
                Err::<u32, _>(NvmlError::Timeout)
            });
        }
        assert_eq!((unsupported, supported, failing), (1, 3, 3));
    }
}
