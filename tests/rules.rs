//! Every rule fires on its scenario, within its window plus one tick, and stays silent on
//! healthy saturated compute, healthy memory-bound work and idle.

mod common;

use common::{rules_raised, run, shifted, sim_ticks, INTERVAL_MS, START_MS};
use gpuwatch::config::Thresholds;
use gpuwatch::model::{GpmMetrics, Tick};
use gpuwatch::rules::{all_rules, demos, RuleId, Severity, Watching};
use gpuwatch::source::sim::{Scenario, SimSource};
use gpuwatch::source::Source;
use gpuwatch::store::Store;
use std::time::Duration;

#[test]
fn healthy_saturated_memory_bound_and_idle_gpus_raise_nothing() {
    for sc in [Scenario::Healthy, Scenario::Membound, Scenario::Idle] {
        assert_eq!(rules_raised(sc, 600), Vec::<String>::new(), "{sc:?}");
    }
}

/// The rules a rule's scenario raises beside its own, as the real trouble would: an
/// uncorrectable memory error comes with its Xid (94) and a row remap pending.
fn raised_beside(id: RuleId) -> &'static [RuleId] {
    match id {
        RuleId::Ecc => &[RuleId::Xid, RuleId::RowRemap],
        // A GPU falls off the bus after its driver reported Xid 79.
        RuleId::Lost => &[RuleId::Xid],
        _ => &[],
    }
}

#[test]
fn each_scenario_raises_its_own_rule_and_no_other() {
    // Each rule's own scenario (`Rule::demo`, which every rule declares), with what it
    // raises beside its own rule.
    let declared: Vec<(Scenario, Vec<&str>)> = demos()
        .map(|(id, _)| {
            let mut want = [&[id][..], raised_beside(id)].concat();
            want.sort_by_key(|id| id.as_str());
            (
                Scenario::Rule(id),
                want.iter().map(|id| id.as_str()).collect(),
            )
        })
        .collect();
    for (sc, want) in declared {
        assert_eq!(rules_raised(sc, 300), want, "{sc:?}");
    }
}

#[test]
fn every_scenario_gives_each_process_and_worker_a_pid_of_its_own() {
    // Pids are numbered per GPU and rank (`simproc::process_for`): a workload with more ranks
    // or workers than the numbering leaves room for would give two processes one pid.
    let declared = demos().map(|(id, _)| Scenario::Rule(id));
    for sc in [Scenario::Mixed, Scenario::Fleet { host: 0, hosts: 1 }]
        .into_iter()
        .chain(declared)
    {
        let (_, ticks) = sim_ticks(sc, 8, 1, START_MS);
        let mut pids: Vec<u32> = ticks[0]
            .devices
            .iter()
            .flat_map(|d| &d.processes)
            .flat_map(|p| {
                let children = p.host.iter().flat_map(|h| h.children.iter().map(|c| c.pid));
                std::iter::once(p.pid).chain(children)
            })
            .collect();
        let all = pids.len();
        pids.sort_unstable();
        pids.dedup();
        assert_eq!(pids.len(), all, "{sc:?}");
    }
}

#[test]
fn leak_raises_growth_first_and_full_once_memory_runs_out() {
    let (infos, ticks) = sim_ticks(Scenario::Rule(RuleId::MemGrowth), 1, 1300, START_MS);
    let raised = run(&infos, &ticks, Thresholds::default()).raised;
    let growth = raised
        .iter()
        .find(|f| f.rule == "mem-growth")
        .expect("growth raised");
    let full = raised
        .iter()
        .find(|f| f.rule == "mem-full")
        .expect("full raised");
    assert!(growth.opened_ms < full.opened_ms);
    assert!(
        growth.evidence[1].contains("full in about"),
        "{:?}",
        growth.evidence
    );
}

/// Rule id, scenario, when in it the symptom shows (ms), the window that must pass before it
/// fires, and whether its GPUs are so from the start (a setting NVML reads once, at start).
fn windows() -> Vec<(RuleId, Scenario, u64, u64, bool)> {
    let t = Thresholds::default();
    let ms = |d: std::time::Duration| d.as_millis() as u64;
    // Each rule's own scenario, at that rule's window; a GPU in trouble from when its
    // counters or events show it.
    demos()
        .map(|(id, demo)| {
            let shows_ms = demo.trouble.map_or(0, |t| (t.shows_at_s * 1000.0) as u64);
            let rule = all_rules().into_iter().find(|r| r.id == id).unwrap();
            // A rule that decides over a longer window than it is judged at (a slow leak)
            // says so in how it is watched.
            let window = match rule.watch {
                Watching::With { needs, .. } => needs(&t).max((rule.window)(&t)),
                _ => (rule.window)(&t),
            };
            let from_start = !demo.facts.persistence_mode;
            (id, Scenario::Rule(id), shows_ms, ms(window), from_start)
        })
        .collect()
}

#[test]
fn onset_is_within_the_window_plus_one_tick_after_the_symptom_starts() {
    for (rule, sc, shows_ms, window, from_start) in windows() {
        // A healthy minute first, then the scenario: onset counts from when its symptom
        // shows (the switch, or later for trouble that comes later). A GPU whose settings
        // are the symptom (persistence mode off) is that GPU from the start: no healthy
        // minute can come before it.
        let secs = (shows_ms + window) / 1000 + 60;
        let (infos, ticks, switch) = if from_start {
            let (infos, sick) = sim_ticks(sc, 1, secs, START_MS);
            (infos, sick, START_MS)
        } else {
            let (infos, healthy) = sim_ticks(Scenario::Healthy, 1, 60, START_MS);
            let switch = START_MS + 60_000;
            let (_, sick) = sim_ticks(sc, 1, secs, switch);
            (infos, healthy.into_iter().chain(sick).collect(), switch)
        };
        let raised = run(&infos, &ticks, Thresholds::default()).raised;
        let f = raised
            .iter()
            .find(|f| f.rule == rule)
            .unwrap_or_else(|| panic!("{rule} never raised: {raised:?}"));
        let onset = f.opened_ms - (switch + shows_ms);
        // Rules judge medians and percentiles (robust to odd samples), so they hold once most
        // of the window shows the symptom: onset is at least half the window, at most window + one tick.
        assert!(
            onset >= window / 2 && onset <= window + INTERVAL_MS,
            "{rule}: onset {onset} ms, window {window} ms"
        );
        assert!(
            raised.iter().all(|g| g.rule == rule
                || g.severity == Severity::Info
                || raised_beside(rule).iter().any(|id| g.rule == *id)),
            "{rule}: also raised {raised:?}"
        );
    }
}

#[test]
fn a_longer_configured_window_delays_onset() {
    let (infos, ticks) = sim_ticks(Scenario::HANG, 1, 120, START_MS);
    let mut t = Thresholds::default();
    t.hang.suspect_window = std::time::Duration::from_secs(60);
    t.hang.window = std::time::Duration::from_secs(90);
    let r = run(&infos, &ticks, t);
    let f = r.raised.iter().find(|f| f.rule == "hang").unwrap();
    assert_eq!(f.opened_ms - START_MS, 60_000, "suspected after its window");
    assert_eq!(f.severity, Severity::Warning);
    let now = r
        .engine
        .conclusions()
        .active_on(0)
        .find(|f| f.rule == "hang")
        .unwrap();
    assert_eq!(now.severity, Severity::Critical, "confirmed later");
    assert_eq!(now.title, "Busy but idle: GPU hung");
}

#[test]
fn a_finding_survives_a_one_tick_blip_and_clears_after_the_clear_window() {
    let (infos, mut hang) = sim_ticks(Scenario::HANG, 1, 120, START_MS);
    hang[300].devices[0].sample.power_w = Some(450.0); // one odd sample mid-hang
    let (_, healthy) = sim_ticks(Scenario::Healthy, 1, 60, START_MS + 120_000);
    let ticks: Vec<_> = hang.into_iter().chain(healthy).collect();
    let r = run(&infos, &ticks, Thresholds::default());
    let hangs: Vec<_> = r.raised.iter().filter(|f| f.rule == "hang").collect();
    assert_eq!(
        hangs.len(),
        1,
        "the blip must not close and reopen the finding"
    );
    let cleared = r
        .engine
        .conclusions()
        .cleared()
        .iter()
        .find(|f| f.rule == "hang")
        .expect("cleared after recovery");
    let clear_after = Thresholds::default().engine.clear_after.as_millis() as u64;
    let closed_at = cleared.cleared_ms.unwrap() - (START_MS + 120_000);
    // The rule stops holding once 10 % of its window is healthy, then `clear_after` passes.
    let hang_window = Thresholds::default().hang.window.as_millis() as u64;
    assert!(
        closed_at >= clear_after && closed_at <= clear_after + hang_window / 10 + INTERVAL_MS,
        "closed {closed_at} ms after recovery"
    );
    assert!(r.engine.conclusions().active().is_empty());
}

#[test]
fn hang_evidence_gives_numbers_and_names_the_straggler_of_the_same_job() {
    let (infos, ticks) = sim_ticks(Scenario::Mixed, 8, 60, START_MS);
    let r = run(&infos, &ticks, Thresholds::default());
    let hang = r
        .engine
        .conclusions()
        .active()
        .iter()
        .find(|f| f.rule == "hang" && f.device == 4)
        .expect("GPU 4 hangs")
        .clone();
    let text = hang.evidence.join(" | ");
    assert!(
        text.contains("util 100 % throughout the last 25 s")
            && text.contains("% of the 700 W TDP")
            && text.contains("SM activity 0."),
        "{text}"
    );
    assert!(
        text.contains("GPU 6 (rank 6, pid 10060) of the same job is idle"),
        "{text}"
    );
    assert!(hang.causes[0].contains("straggler"));
    assert!(hang.actions.iter().any(|a| a.contains("py-spy dump")));
    assert_eq!(hang.severity, Severity::Critical);
    let devices: Vec<u32> = r
        .engine
        .conclusions()
        .active()
        .iter()
        .filter(|f| f.rule == "hang")
        .map(|f| f.device)
        .collect();
    assert_eq!(
        devices,
        vec![4, 5],
        "the straggler itself is not called hung"
    );
}

fn without_gpm(mut ticks: Vec<gpuwatch::model::Tick>) -> Vec<gpuwatch::model::Tick> {
    for t in &mut ticks {
        for d in &mut t.devices {
            d.sample.gpm = GpmMetrics::default();
        }
    }
    ticks
}

#[test]
fn without_gpm_rules_fall_back_and_say_which_signals_decided() {
    let (infos, hang) = sim_ticks(Scenario::HANG, 1, 60, START_MS);
    let r = run(&infos, &without_gpm(hang), Thresholds::default());
    let f = r
        .raised
        .iter()
        .find(|f| f.rule == "hang")
        .expect("hang without GPM");
    assert!(f.signals.contains("no GPM"), "{}", f.signals);
    for sc in [Scenario::Healthy, Scenario::Membound, Scenario::Idle] {
        let (infos, ticks) = sim_ticks(sc, 1, 120, START_MS);
        assert!(
            run(&infos, &without_gpm(ticks), Thresholds::default())
                .raised
                .is_empty(),
            "{sc:?} without GPM"
        );
    }
    let (infos, sync) = sim_ticks(
        Scenario::Rule(gpuwatch::rules::RuleId::Sync),
        1,
        60,
        START_MS,
    );
    let r = run(&infos, &without_gpm(sync), Thresholds::default());
    assert!(
        r.raised
            .iter()
            .any(|f| f.rule == "sync" && f.signals.contains("no GPM")),
        "{:?}",
        r.raised
    );
}

#[test]
fn starvation_needs_a_busy_host_and_names_missing_workers() {
    let (infos, ticks) = sim_ticks(Scenario::Rule(RuleId::Starved), 1, 60, START_MS);
    let r = run(&infos, &ticks, Thresholds::default());
    let f = r
        .raised
        .iter()
        .find(|f| f.rule == "starved")
        .expect("starved");
    assert!(
        f.evidence
            .iter()
            .any(|e| e.contains("no worker processes (DataLoader num_workers=0?)")),
        "{:?}",
        f.evidence
    );
    assert!(f.actions.iter().any(|a| a.contains("num_workers=8")));
    // The same GPU while its process sleeps (waiting on storage): still starved, for
    // another reason, with other advice.
    let mut waiting = ticks.clone();
    for t in &mut waiting {
        let h = t.devices[0].processes[0].host.as_mut().unwrap();
        (h.cpu_pct, h.state) = (Some(3.0), Some('S'));
    }
    let r = run(&infos, &waiting, Thresholds::default());
    let f = r
        .raised
        .iter()
        .find(|f| f.rule == "starved")
        .expect("starved while waiting");
    assert_eq!(f.title, "GPU starved: the input waits on I/O");
    assert!(
        f.evidence.iter().any(|e| e.contains("sleeping (state S)")),
        "{:?}",
        f.evidence
    );
    assert!(
        f.actions.iter().any(|a| a.contains("iotop")),
        "{:?}",
        f.actions
    );
}

/// With one busy worker the evidence says "1 worker process, busy" and no cause blames
/// `num_workers=0`; a host busy preparing input and one waiting on it get different causes.
#[test]
fn starved_causes_follow_what_the_host_does() {
    use gpuwatch::model::ChildProcess;
    let (infos, ticks) = sim_ticks(Scenario::Rule(RuleId::Starved), 1, 60, START_MS);
    let mut one_worker = ticks.clone();
    for t in &mut one_worker {
        let h = t.devices[0].processes[0].host.as_mut().unwrap();
        h.children = vec![ChildProcess {
            pid: 4242,
            name: "pt_data_worker".into(),
            cpu_pct: Some(99.0),
            state: Some('R'),
        }];
    }
    let starved = |ticks: &[Tick]| {
        run(&infos, ticks, Thresholds::default())
            .raised
            .into_iter()
            .find(|f| f.rule == "starved")
            .expect("starved")
    };
    let f = starved(&one_worker);
    assert!(
        f.evidence
            .iter()
            .any(|e| e.contains("1 worker process, busy")),
        "{:?}",
        f.evidence
    );
    assert!(
        !f.causes.iter().any(|c| c.contains("num_workers=0")),
        "{:?}",
        f.causes
    );
    let mut waiting = ticks.clone();
    for t in &mut waiting {
        let h = t.devices[0].processes[0].host.as_mut().unwrap();
        (h.cpu_pct, h.state) = (Some(3.0), Some('S'));
    }
    let busy = starved(&ticks);
    let idle = starved(&waiting);
    assert_ne!(busy.title, idle.title);
    assert_ne!(busy.causes[0], idle.causes[0]);
}

#[test]
fn persistence_mode_off_is_informational() {
    let (mut infos, ticks) = sim_ticks(Scenario::Healthy, 1, 5, START_MS);
    infos[0].persistence_mode = Some(false);
    let r = run(&infos, &ticks, Thresholds::default());
    let f = r
        .raised
        .iter()
        .find(|f| f.rule == "persistence")
        .expect("raised");
    assert_eq!(f.severity, Severity::Info);
}

#[test]
fn idle_floor_is_learned_from_an_idle_stretch() {
    let (infos, idle) = sim_ticks(
        Scenario::Rule(gpuwatch::rules::RuleId::IdleMem),
        1,
        20,
        START_MS,
    );
    let r = run(&infos, &idle, Thresholds::default());
    let floor = r.engine.floors(0).best().expect("learned");
    assert!((119.0..124.0).contains(&floor), "floor {floor}");
    let (_, hang) = sim_ticks(Scenario::HANG, 1, 40, START_MS + 20_000);
    let ticks: Vec<_> = idle.into_iter().chain(hang).collect();
    let f = run(&infos, &ticks, Thresholds::default())
        .raised
        .into_iter()
        .find(|f| f.rule == "hang")
        .unwrap();
    assert!(
        f.evidence[1].contains("this GPU's idle floor"),
        "{:?}",
        f.evidence
    );
}

#[test]
fn every_rule_has_an_id_title_and_is_listed_once() {
    let rules = all_rules();
    let mut ids: Vec<&str> = rules.iter().map(|r| r.id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), rules.len());
    assert!(rules.iter().all(|r| !r.title.is_empty()));
    let _ = shifted(Vec::new(), 0);
}

#[test]
fn at_50_ms_ticks_rules_judged_every_200_ms_still_open_within_the_window() {
    // The sampler judges the rules at most every 200 ms of sample time, not on every tick.
    let mut src = SimSource::new(Scenario::HANG, 1, 7, START_MS, 50);
    let mut store = Store::new(&src, Duration::from_secs(1000), Thresholds::default()).unwrap();
    let window = Thresholds::default().hang.suspect_window.as_millis() as u64;
    let mut tick = Tick::default();
    let mut opened = None;
    while opened.is_none() && tick.t_ms < START_MS + window + 5_000 {
        src.sample(&mut tick).unwrap();
        store.absorb(&tick, gpuwatch::model::SelfCost::default());
        opened = store
            .engine()
            .conclusions()
            .active_on(0)
            .find(|f| f.rule == "hang")
            .map(|f| f.opened_ms);
    }
    let onset = opened.expect("hang raised at 50 ms ticks") - START_MS;
    assert!(
        onset >= window / 2 && onset <= window + 200,
        "onset {onset} ms, window {window} ms"
    );
}

/// The last `from` ticks of GPU `gpu` made idle: its process gone, nothing running.
fn process_leaves(ticks: &mut [gpuwatch::model::Tick], gpu: usize, from: usize) {
    for t in ticks.iter_mut().skip(from) {
        let d = &mut t.devices[gpu];
        d.processes.clear();
        d.sample.util_gpu_pct = Some(0.0);
        d.sample.gpm.sm_active_pct = Some(0.0);
    }
}

#[test]
fn a_rank_that_exits_makes_the_hang_critical_at_once_and_is_named() {
    // Two ranks of one torchrun job spin in a collective; rank 1's process dies 20 s in.
    let (infos, mut ticks) = sim_ticks(Scenario::HANG, 2, 40, START_MS);
    process_leaves(&mut ticks, 1, 80);
    let r = run(&infos, &ticks, Thresholds::default());
    let hang = r
        .engine
        .conclusions()
        .active_on(0)
        .find(|f| f.rule == "hang")
        .expect("GPU 0 still hangs");
    assert_eq!(hang.severity, Severity::Critical);
    let culprit = hang.culprit.as_ref().expect("culprit named");
    assert_eq!((culprit.device, culprit.reason.as_str()), (1, "exited"));
    assert_eq!(culprit.rank, Some(1));
    assert!(
        hang.evidence.iter().any(|e| e
            .contains("GPU 1's process of the same job (rank 1, pid 10010")
            && e.contains("exited")),
        "{:?}",
        hang.evidence
    );
}

#[test]
fn a_hang_is_suspected_within_10_s_and_critical_only_once_confirmed() {
    let (infos, ticks) = sim_ticks(Scenario::HANG, 1, 40, START_MS);
    let r = run(&infos, &ticks, Thresholds::default());
    let first = r.raised.iter().find(|f| f.rule == "hang").unwrap();
    assert!(first.opened_ms - START_MS <= 10_000);
    assert_eq!(first.severity, Severity::Warning);
    assert_eq!(first.title, "Busy but idle: hang suspected");
    let now = r
        .engine
        .conclusions()
        .active_on(0)
        .find(|f| f.rule == "hang")
        .unwrap();
    assert_eq!(now.severity, Severity::Critical);
}

#[test]
fn the_culprit_stays_named_after_the_job_is_killed() {
    // GPU 4 hangs waiting for GPU 6's rank; then the whole job is killed and the GPUs idle.
    let (infos, mut ticks) = sim_ticks(Scenario::Mixed, 8, 90, START_MS);
    for gpu in [4, 5, 6] {
        process_leaves(&mut ticks, gpu, 200);
    }
    let r = run(&infos, &ticks, Thresholds::default());
    assert!(
        r.engine
            .conclusions()
            .active_on(4)
            .all(|f| f.rule != "hang"),
        "closed"
    );
    let hang = r
        .engine
        .conclusions()
        .cleared()
        .iter()
        .find(|f| f.rule == "hang" && f.device == 4)
        .expect("GPU 4's hang, closed");
    let culprit = hang.culprit.as_ref().expect("still named");
    assert_eq!(culprit.device, 6);
    assert!(
        hang.evidence.iter().any(|e| e.contains("GPU 6 (rank 6")),
        "{:?}",
        hang.evidence
    );
}

#[test]
fn two_causes_that_match_show_one_finding_with_the_runner_up() {
    // A starved loader whose batches also arrive at GiB/s over PCIe: both starved (kernels
    // fill the SMs in bursts, the host is busy) and transfer (GiB/s in, little SM work) hold.
    let (infos, mut ticks) = sim_ticks(Scenario::Rule(RuleId::Starved), 1, 60, START_MS);
    for t in &mut ticks {
        t.devices[0].sample.pcie_rx_kib_s = Some(9.0 * 1024.0 * 1024.0);
    }
    let r = run(&infos, &ticks, Thresholds::default());
    let causes: Vec<&str> = r
        .raised
        .iter()
        .map(|f| f.rule.as_str())
        .filter(|r| ["hang", "starved", "sync", "transfer"].contains(r))
        .collect();
    assert_eq!(causes.len(), 1, "one cause, never two at once: {causes:?}");
    let f = r.raised.iter().find(|f| f.rule == causes[0]).unwrap();
    let other = if causes[0] == "transfer" {
        "starved"
    } else {
        "transfer"
    };
    assert_eq!(f.alternative.as_deref(), Some(other));
    assert!(
        f.evidence
            .iter()
            .any(|e| e.starts_with("also consistent with")),
        "{:?}",
        f.evidence
    );
}

#[test]
fn a_process_in_its_start_up_is_judged_only_from_its_arrival() {
    // An idle GPU, then a job arrives that is launch-bound from its first step: the window
    // never reaches back into the idle stretch, and the GPU is "judging" meanwhile.
    let (infos, mut idle) = sim_ticks(
        Scenario::Rule(gpuwatch::rules::RuleId::Sync),
        1,
        30,
        START_MS,
    );
    process_leaves(&mut idle, 0, 0);
    let (_, mut job) = sim_ticks(
        Scenario::Rule(gpuwatch::rules::RuleId::Sync),
        1,
        40,
        START_MS + 30_000,
    );
    for t in &mut job {
        t.devices[0].processes[0].host.as_mut().unwrap().started_ms = None;
    }
    let ticks: Vec<_> = idle.into_iter().chain(job).collect();
    let r = run(&infos, &ticks, Thresholds::default());
    let f = r.raised.iter().find(|f| f.rule == "sync").expect("sync");
    let arrival = START_MS + 30_000;
    let window = Thresholds::default().sync.window.as_millis() as u64;
    assert!(
        f.opened_ms >= arrival + window,
        "opened {} ms after arrival",
        f.opened_ms - arrival
    );
    assert!(r.raised.iter().all(|f| f.rule == "sync"), "{:?}", r.raised);
}

/// A leak being timed says what it takes at most (the slow window), not the fast one it was
/// seen to exceed ("41 s of the 10 s it needs").
#[test]
fn a_watched_leak_names_the_window_it_may_need() {
    let (infos, ticks) = sim_ticks(Scenario::Rule(RuleId::MemGrowth), 1, 40, START_MS);
    let r = run(&infos, &ticks, Thresholds::default());
    let w = r
        .engine
        .conclusions()
        .watching()
        .iter()
        .find(|w| w.rule == "mem-growth")
        .expect("the leak is being timed at 40 s");
    let slow = Thresholds::default().mem_growth.window.as_millis() as u64;
    assert_eq!(w.window_ms, slow, "{w:?}");
    assert!(r.history.latest_ms().unwrap() - w.since_ms < w.window_ms);
}
