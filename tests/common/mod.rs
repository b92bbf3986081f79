//! Helpers shared by the integration tests: ticks from the simulated source, and the rule
//! engine run over them.
#![allow(dead_code)]

use gpuwatch::config::Thresholds;
use gpuwatch::history::History;
use gpuwatch::model::{DeviceInfo, Tick};
use gpuwatch::rules::{Engine, Finding};
use gpuwatch::source::sim::{Scenario, SimSource};
use gpuwatch::source::{Sampled, Source};

pub const START_MS: u64 = 1_800_000_000_000;
pub const INTERVAL_MS: u64 = 250;

/// `seconds` of ticks of `gpus` simulated GPUs playing `scenario`, from `start_ms`, without the
/// simulation's Python stack bursts: what the counters alone show (`tests/stack_rules.rs` puts
/// bursts in where it tests them).
pub fn sim_ticks(
    scenario: Scenario,
    gpus: usize,
    seconds: u64,
    start_ms: u64,
) -> (Vec<DeviceInfo>, Vec<Tick>) {
    ticks_of(
        SimSource::new(scenario, gpus, 7, start_ms, INTERVAL_MS).without_stacks(),
        seconds,
    )
}

/// `sim_ticks` with the simulation's Python stack bursts, as the demo shows them.
pub fn sim_ticks_with_stacks(
    scenario: Scenario,
    gpus: usize,
    seconds: u64,
    start_ms: u64,
) -> (Vec<DeviceInfo>, Vec<Tick>) {
    ticks_of(
        SimSource::new(scenario, gpus, 7, start_ms, INTERVAL_MS),
        seconds,
    )
}

fn ticks_of(mut src: SimSource, seconds: u64) -> (Vec<DeviceInfo>, Vec<Tick>) {
    let mut tick = Tick::default();
    let ticks = (0..seconds * 1000 / INTERVAL_MS)
        .map(|_| {
            assert_eq!(src.sample(&mut tick).unwrap(), Sampled::Filled);
            tick.clone()
        })
        .collect();
    (src.devices().to_vec(), ticks)
}

/// Feeds `ticks` through a history and the engine; returns every finding raised, in order.
pub struct Run {
    pub engine: Engine,
    pub history: History,
    pub raised: Vec<Finding>,
}

pub fn run(infos: &[DeviceInfo], ticks: &[Tick], t: Thresholds) -> Run {
    let mut history = History::new(infos, 3600 * 4);
    let mut engine = Engine::new(t);
    let mut raised: Vec<Finding> = Vec::new();
    for tick in ticks {
        history.push(tick);
        engine.evaluate(&history);
        for f in engine.conclusions().active() {
            if !raised
                .iter()
                .any(|r| r.rule == f.rule && r.device == f.device && r.opened_ms == f.opened_ms)
            {
                raised.push(f.clone());
            }
        }
    }
    Run {
        engine,
        history,
        raised,
    }
}

/// The rules a run raised on `device`, as sorted ids.
pub fn raised_on(run: &Run, device: u32) -> Vec<String> {
    let mut ids: Vec<String> = run
        .raised
        .iter()
        .filter(|f| f.device == device)
        .map(|f| f.rule.clone())
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

/// The rules raised on a scenario, as sorted ids.
pub fn rules_raised(scenario: Scenario, seconds: u64) -> Vec<String> {
    let (infos, ticks) = sim_ticks(scenario, 1, seconds, START_MS);
    let mut ids: Vec<String> = run(&infos, &ticks, Thresholds::default())
        .raised
        .into_iter()
        .map(|f| f.rule)
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

/// Shifts every timestamp of `ticks` by `by_ms`.
pub fn shifted(mut ticks: Vec<Tick>, by_ms: u64) -> Vec<Tick> {
    for t in &mut ticks {
        t.t_ms += by_ms;
        for d in &mut t.devices {
            d.sample.t_ms += by_ms;
        }
    }
    ticks
}

/// The H200 phases recording (`tests/fixtures/h200`) read under its file name alone (a label on
/// screen must not depend on the checkout): an empty store over it (15 minutes of history) and
/// its ticks.
pub fn h200_phases() -> (gpuwatch::store::Store, Vec<Tick>) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/h200/phases.jsonl.gz");
    let file = std::fs::File::open(&path).unwrap();
    let name = std::path::Path::new("phases.jsonl.gz");
    let mut src =
        gpuwatch::source::replay::ReplaySource::from_input(Box::new(file), name, f64::INFINITY)
            .unwrap();
    let ticks = src.read_all().unwrap();
    let store = gpuwatch::store::Store::new(
        &src,
        std::time::Duration::from_secs(900),
        Thresholds::default(),
    )
    .unwrap();
    (store, ticks)
}

/// A store fed `seconds` of `scenario` on `gpus` simulated GPUs, each tick first given to `edit`
/// (to strip or add a host side, a container, what the process runs with).
pub fn store_with(
    scenario: Scenario,
    gpus: usize,
    seconds: u64,
    edit: impl FnMut(&mut Tick),
) -> gpuwatch::store::Store {
    store_costing(
        scenario,
        gpus,
        seconds,
        gpuwatch::model::SelfCost::default(),
        edit,
    )
}

/// `store_with`, with what watching cost as the sampler would report it.
pub fn store_costing(
    scenario: Scenario,
    gpus: usize,
    seconds: u64,
    cost: gpuwatch::model::SelfCost,
    mut edit: impl FnMut(&mut Tick),
) -> gpuwatch::store::Store {
    let src = SimSource::new(scenario, gpus, 7, START_MS, INTERVAL_MS);
    let mut store = gpuwatch::store::Store::new(
        &src,
        std::time::Duration::from_secs(900),
        Thresholds::default(),
    )
    .unwrap();
    for mut t in sim_ticks(scenario, gpus, seconds, START_MS).1 {
        edit(&mut t);
        store.absorb(&t, cost);
    }
    store
}

/// `/metrics` of 8 simulated GPUs (the mixed demo) after 50 s, with a self cost, and the
/// opt-in series of `extras`.
/// `/metrics` of the health demo's four GPUs after 40 s (health counters, Xid, `NVLink`).
pub fn health_metrics(extras: gpuwatch::serve::Extras) -> String {
    let store = store_with(Scenario::Health, 4, 40, |_| {});
    gpuwatch::serve::metrics_text_with(&store, "h", false, extras).unwrap()
}

pub fn mixed_metrics(extras: gpuwatch::serve::Extras) -> String {
    let cost = gpuwatch::model::SelfCost {
        cpu_pct: Some(1.0),
        tick_ms_median: Some(0.1),
        tick_ms_max: Some(0.2),
        rss_bytes: Some(1),
    };
    let store = store_costing(Scenario::Mixed, 8, 50, cost, |_| {});
    gpuwatch::serve::metrics_text_with(&store, "h", false, extras).unwrap()
}

/// The path of `name` on PATH. Tests that call this are `#[ignore = "needs NAME …"]`: README's
/// `cargo test` lists them as ignored on a machine without the tool, and `.ci/run` installs it
/// and runs them with `--ignored`, where a missing tool fails the test with what to install.
pub fn require(name: &str) -> String {
    let found = std::process::Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .ok()
        .filter(|o| o.status.success());
    let Some(out) = found else {
        panic!("{name} is not installed: this test needs it (`bash .ci/run` installs it)");
    };
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A burst of `samples` reads of `pid` whose main thread was in `class` for `in_class` of them,
/// in `frames` (innermost first: (function, file, line, code)).
pub fn burst(
    pid: u32,
    t_ms: u64,
    class: gpuwatch::model::stack::StackClass,
    in_class: u32,
    samples: u32,
    frames: &[(&str, &str, u32, &str)],
) -> gpuwatch::model::stack::StackBurst {
    use gpuwatch::model::stack::{StackBurst, StackFrame, StackOutcome, ThreadStack};
    StackBurst {
        pid,
        started_ms: t_ms.saturating_sub(2_000),
        t_ms,
        samples,
        read: samples,
        outcome: StackOutcome::Read,
        message: None,
        threads: vec![ThreadStack {
            id: 1,
            name: Some("MainThread".into()),
            main: true,
            samples,
            gil: 0,
            class,
            class_samples: in_class,
            second: None,
            frames: frames
                .iter()
                .map(|(function, file, line, code)| StackFrame {
                    function: (*function).into(),
                    file: (*file).into(),
                    line: *line,
                    code: (!code.is_empty()).then(|| (*code).to_string()),
                })
                .collect(),
        }],
        threads_left_out: 0,
        children: Vec::new(),
    }
}

/// `ticks` with `b` carried by the first tick at or after its time.
pub fn with_burst(mut ticks: Vec<Tick>, b: gpuwatch::model::stack::StackBurst) -> Vec<Tick> {
    if let Some(t) = ticks.iter_mut().find(|t| t.t_ms >= b.t_ms) {
        t.stacks.push(b);
    }
    ticks
}

/// A child process killed and reaped when dropped (also when a test panics).
pub struct Killed(pub std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `gpuwatch serve` with `args` on a free loopback port; returns it and its address
/// (`http` or `https`, as its first line says).
pub fn serve(args: &[&str]) -> (Killed, String) {
    use std::io::BufRead as _;
    let mut child = Killed(
        std::process::Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
            .arg("serve")
            .args(args)
            .args(["--listen", "127.0.0.1:0"])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    std::io::BufReader::new(child.0.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .split("://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    (child, addr)
}

/// `f`'s first `Some` within `secs` seconds, asked every 250 ms; `None` if it never came.
pub fn wait_until<T>(secs: u64, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(secs) {
        if let Some(v) = f() {
            return Some(v);
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    None
}
