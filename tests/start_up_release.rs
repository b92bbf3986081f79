//! A pipeline gives back the pages of the program's code that start-up ran as it starts, before
//! its first tick and frame (#28: the peak resident size forms in the first second, and clap,
//! the config parser and NVML's symbol table used to stay resident through it). A test binary
//! of its own: the release is made once a process, and other tests would race it.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use gpuwatch::monitor::{Monitor, Setup};
use gpuwatch::rules::Thresholds;
use gpuwatch::source::sim::{Scenario, SimSource};

/// KiB of this test binary's own read-only, executable mappings resident now (smaps' `Rss:`).
fn own_code_resident_kib() -> u64 {
    let exe = std::fs::read_link("/proc/self/exe").unwrap();
    let exe = exe.to_str().unwrap().to_owned();
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let mut in_code = false;
    let mut total = 0;
    for line in smaps.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields
            .first()
            .is_some_and(|f| f.contains('-') && !f.ends_with(':'))
        {
            in_code = fields.get(1) == Some(&"r-xp") && fields.last() == Some(&exe.as_str());
        } else if in_code && fields.first() == Some(&"Rss:") {
            total += fields[1].parse::<u64>().unwrap();
        }
    }
    total
}

#[test]
fn a_pipeline_gives_back_start_ups_code_as_it_starts_and_runs_on() {
    // Start-up's share, as the program has: this test's harness, the source's construction.
    let src = SimSource::new(Scenario::Mixed, 8, 7, 1_800_000_000_000, 250).without_stacks();
    let setup = Setup::judging_with(Thresholds::default()).stop(Arc::new(AtomicBool::new(false)));
    let before = own_code_resident_kib();
    let monitor = Monitor::start(Box::new(src), &setup).unwrap();
    let after = own_code_resident_kib();
    assert!(
        after * 2 < before,
        "the code resident fell from {before} KiB to {after} KiB as the pipeline started"
    );
    // What runs from then on faults back in: the pipeline samples on.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while monitor.read(|s| s.history().ticks()).unwrap() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "no tick after the release"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
