//! A pipeline gives back the pages of the program's code that start-up ran as it starts, before
//! its first tick and frame (#28: the peak resident size forms in the first second, and clap,
//! the config parser and NVML's symbol table used to stay resident through it). A test binary
//! of its own: the release is made once a process, and other tests would race it.

use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};

use gpuwatch::model::{DeviceInfo, SystemInfo, Tick};
use gpuwatch::monitor::{Monitor, Setup};
use gpuwatch::rules::Thresholds;
use gpuwatch::source::sim::{Scenario, SimSource};
use gpuwatch::source::{Sampled, Source, SourceError};

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

/// The simulator, held at the sampler thread's first call until the test has read what is
/// resident: the thread would otherwise fault its code back in meanwhile, by an amount that
/// depends on how the machine schedules it (CI's 2 cores once measured 48 % back). It says when
/// it has arrived, so that what ran before the reading is the same on every machine.
struct Gated {
    inner: SimSource,
    gate: Mutex<Option<(Sender<()>, Receiver<()>)>>,
}

impl Gated {
    /// Holds the caller until the test has read; never for ever, and with the lock let go
    /// first: were the main thread the caller, it would wait on itself (helper-40).
    fn wait_at_gate(&self) {
        let gate = self.gate.lock().unwrap().take();
        if let Some((arrived, open)) = gate {
            let _ = arrived.send(());
            let _ = open.recv_timeout(std::time::Duration::from_secs(30));
        }
    }
}

impl Source for Gated {
    fn system(&self) -> &SystemInfo {
        self.inner.system()
    }
    fn devices(&self) -> &[DeviceInfo] {
        self.inner.devices()
    }
    fn can_rewind(&self) -> bool {
        // The sampler thread asks this first; `sample` is the gate should that change.
        self.wait_at_gate();
        self.inner.can_rewind()
    }
    fn sample(&mut self, tick: &mut Tick) -> Result<Sampled, SourceError> {
        self.wait_at_gate();
        self.inner.sample(tick)
    }
    fn interval(&self) -> std::time::Duration {
        self.inner.interval()
    }
    fn virtual_time(&self) -> bool {
        self.inner.virtual_time()
    }
    fn label(&self) -> String {
        self.inner.label()
    }
}

#[test]
fn a_pipeline_gives_back_start_ups_code_as_it_starts_and_runs_on() {
    // Start-up's share, as the program has: this test's harness, the source's construction.
    let inner = SimSource::new(Scenario::Mixed, 8, 7, 1_800_000_000_000, 250).without_stacks();
    let (arrive, arrived) = channel();
    let (open, opened) = channel();
    let src = Gated {
        inner,
        gate: Mutex::new(Some((arrive, opened))),
    };
    let setup = Setup::judging_with(Thresholds::default()).stop(Arc::new(AtomicBool::new(false)));
    let before = own_code_resident_kib();
    let monitor = Monitor::start(Box::new(src), &setup).unwrap();
    arrived
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("the sampler thread reached its first call");
    let after = own_code_resident_kib();
    open.send(()).unwrap();
    // Without the release it rises (3876 KiB to 4068). With it, the sampler thread's start, the
    // gate and this reading fault back in, 64 KiB around each page they touch in a debug build,
    // and more or less as the page cache's folios lie: 2464-2808 KiB of 3924-4308 (0.61-0.69
    // of it) over 18 runs here, loaded and not. A fall by a tenth tells the two apart with room.
    assert!(
        after * 10 < before * 9,
        "the code resident went from {before} KiB to {after} KiB as the pipeline started: too little was given back"
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
    let back = own_code_resident_kib();
    println!("code resident: {before} KiB, {after} KiB once started, {back} KiB after 2 ticks");
    assert!(
        back > after,
        "ticking faulted no code back in ({after} KiB, then {back} KiB)"
    );
}
