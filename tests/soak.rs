//! Soak: the equivalent of 24 hours of sampling at 4 Hz on 8 simulated GPUs, played as fast as
//! possible through the history and the rules. Memory must stay flat once the ring buffers have
//! filled: nothing may grow with time.

use gpuwatch::config::Thresholds;
use gpuwatch::history::History;
use gpuwatch::model::Tick;
use gpuwatch::rules::Engine;
use gpuwatch::source::sim::{Scenario, SimSource};
use gpuwatch::source::Source;

/// Resident memory, from `/proc/self/status`'s `VmRSS` (kB whatever the page size: statm counts
/// pages, which are 64 KiB on some aarch64 kernels, a release target).
fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse().ok())
        .expect("/proc/self/status has VmRSS in kB");
    kb * 1024
}

#[test]
fn a_day_of_sampling_8_gpus_at_4_hz_keeps_memory_flat() {
    const TICKS_PER_DAY: u64 = 24 * 3600 * 4;
    // Mixed includes GPUs whose findings open and close, and a leaking GPU would show growth.
    let mut src = SimSource::new(Scenario::Mixed, 8, 11, 1_800_000_000_000, 250);
    let mut history = History::new(src.devices(), History::capacity_for(15 * 60 * 1000, 250));
    let mut engine = Engine::new(Thresholds::default());
    let mut tick = Tick::default();
    let mut after_fill = 0;
    for i in 0..TICKS_PER_DAY {
        src.sample(&mut tick).unwrap();
        history.push(&tick);
        // Every 10 s of simulated time: enough to open and close findings all day long.
        if i % 40 == 0 {
            engine.evaluate(&history);
        }
        if i == 2 * 3600 {
            after_fill = rss_bytes(); // buffers (15 min = 3600 ticks) full twice over
        }
    }
    let end = rss_bytes();
    let grown = end.saturating_sub(after_fill);
    eprintln!(
        "RSS after fill {} KiB, after 24 h {} KiB, grew {} KiB",
        after_fill / 1024,
        end / 1024,
        grown / 1024
    );
    assert!(
        grown < 1024 * 1024,
        "RSS grew {grown} bytes over a simulated day"
    );
    assert_eq!(history.devices[0].samples.len(), 3600);
    assert!(engine.conclusions().cleared().len() <= 256);
}
