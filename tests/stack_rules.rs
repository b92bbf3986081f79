//! What the rules make of Python stacks, on simulated counters with bursts put in their ticks
//! (the real H200 recordings of these cases are in tests/corpus: the `stacks` set): a starved
//! GPU whose loop waits on its `DataLoader` says where; the same counters with a loop idle between
//! requests are an info, not a starved warning; a loader that keeps the GPU a quarter busy at
//! mid power is starved only when its stacks say so; a hang names the rank outside the
//! collective; a sync names the line that waits.

mod common;

use common::{burst, run, sim_ticks, with_burst, START_MS};
use gpuwatch::config::Thresholds;
use gpuwatch::model::stack::StackClass;
use gpuwatch::rules::{RuleId, Severity};
use gpuwatch::source::sim::Scenario;

const SP: &str = "/usr/lib/python3/dist-packages";

/// The finding of `rule` as it ended up (open, else the last cleared): its evidence follows
/// what was seen, stacks included, once they arrived.
fn last(r: &common::Run, rule: &str) -> Option<gpuwatch::rules::Finding> {
    r.engine
        .conclusions()
        .active()
        .iter()
        .find(|f| f.rule == rule)
        .cloned()
        .or_else(|| {
            r.engine
                .conclusions()
                .cleared()
                .iter()
                .rev()
                .find(|f| f.rule == rule)
                .cloned()
        })
}

fn loader_frames() -> Vec<(&'static str, String, u32, &'static str)> {
    vec![
        (
            "Queue.get",
            "/usr/lib/python3.12/multiprocessing/queues.py".into(),
            113,
            "res = self._recv_bytes()",
        ),
        (
            "_MultiProcessingDataLoaderIter._next_data",
            format!("{SP}/torch/utils/data/dataloader.py"),
            1480,
            "",
        ),
        (
            "_BaseDataLoaderIter.__next__",
            format!("{SP}/torch/utils/data/dataloader.py"),
            733,
            "",
        ),
        (
            "train",
            "/home/u/train.py".into(),
            88,
            "for x, y in loader:",
        ),
    ]
}

fn frames<'a>(v: &'a [(&'a str, String, u32, &'a str)]) -> Vec<(&'a str, &'a str, u32, &'a str)> {
    v.iter()
        .map(|(f, p, l, c)| (*f, p.as_str(), *l, *c))
        .collect()
}

#[test]
fn a_starved_gpu_whose_loop_waits_on_its_loader_says_where() {
    let (infos, ticks) = sim_ticks(Scenario::Rule(RuleId::Starved), 1, 60, START_MS);
    let pid = ticks[0].devices[0].processes[0].pid;
    let f = loader_frames();
    let ticks = with_burst(
        ticks,
        burst(
            pid,
            START_MS + 12_000,
            StackClass::DataLoading,
            18,
            20,
            &frames(&f),
        ),
    );
    let r = run(&infos, &ticks, Thresholds::default());
    let f = last(&r, "starved").expect("starved");
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        f.evidence.iter().any(|e| e.contains(&format!(
            "pid {pid}'s main thread: data loading in 18 of 20 stack samples, at train.py:88 `for x, y in loader:`"
        ))),
        "{:#?}",
        f.evidence
    );
    assert!(f.signals.ends_with("Python stacks"), "{}", f.signals);
    assert!(f.causes[0].contains("workers"), "{:?}", f.causes);
}

#[test]
fn the_same_counters_with_a_loop_idle_between_requests_are_an_info_not_starved() {
    let (infos, ticks) = sim_ticks(Scenario::Rule(RuleId::Starved), 1, 60, START_MS);
    let pid = ticks[0].devices[0].processes[0].pid;
    let idle = [
        (
            "EpollSelector.select",
            "/usr/lib/python3.12/selectors.py",
            468,
            "fd_event_list = self._selector.poll(timeout, max_ev)",
        ),
        (
            "serve_forever",
            "/usr/lib/python3.12/socketserver.py",
            233,
            "ready = selector.select(poll_interval)",
        ),
        ("main", "/srv/app/server.py", 40, "server.serve_forever()"),
    ];
    let mut ticks = ticks;
    // Read as the engine asks: early in the symptom, then every 15 s.
    for t in [5_000u64, 20_000, 35_000, 50_000] {
        ticks = with_burst(
            ticks,
            burst(pid, START_MS + t, StackClass::IdleWaiting, 20, 20, &idle),
        );
    }
    let r = run(&infos, &ticks, Thresholds::default());
    assert!(
        r.raised.iter().all(|f| f.severity < Severity::Warning),
        "{:#?}",
        r.raised
    );
    let f = r
        .raised
        .iter()
        .find(|f| f.rule == "starved")
        .expect("an info");
    assert_eq!(f.title, "GPU idle between requests (not starved)");
    assert!(
        f.evidence
            .iter()
            .any(|e| e.contains("server.py:40 `server.serve_forever()`")),
        "{:?}",
        f.evidence
    );
}

/// The counters of a loader that keeps an H200 a quarter busy: util 27 %, power 290 W, SM
/// tracking util: starved only with the stacks' word for it.
#[test]
fn a_quarter_busy_gpu_at_mid_power_is_starved_only_when_its_stacks_say_so() {
    let (infos, mut ticks) = sim_ticks(Scenario::Rule(RuleId::Starved), 1, 60, START_MS);
    for (i, t) in ticks.iter_mut().enumerate() {
        let s = &mut t.devices[0].sample;
        s.util_gpu_pct = Some(if i % 2 == 0 { 22.0 } else { 32.0 });
        s.power_w = Some(if i % 3 == 0 { 250.0 } else { 300.0 });
        s.gpm.sm_active_pct = Some(22.0);
    }
    let quiet = run(&infos, &ticks, Thresholds::default());
    assert!(
        quiet.raised.iter().all(|f| f.rule != "starved"),
        "{:#?}",
        quiet.raised
    );
    let pid = ticks[0].devices[0].processes[0].pid;
    let f = loader_frames();
    let ticks = with_burst(
        ticks,
        burst(
            pid,
            START_MS + 12_000,
            StackClass::DataLoading,
            18,
            20,
            &frames(&f),
        ),
    );
    let r = run(&infos, &ticks, Thresholds::default());
    let f = r
        .raised
        .iter()
        .find(|f| f.rule == "starved")
        .expect("starved with stacks");
    assert_eq!(f.severity, Severity::Warning);
}

#[test]
fn a_sync_finding_names_the_line_that_waits_on_the_gpu() {
    let (infos, ticks) = sim_ticks(
        Scenario::Rule(gpuwatch::rules::RuleId::Sync),
        1,
        60,
        START_MS,
    );
    let pid = ticks[0].devices[0].processes[0].pid;
    let item = [
        ("step", "/home/u/train.py", 91, "total += loss.item()"),
        ("main", "/home/u/train.py", 120, "step()"),
    ];
    let mut ticks = ticks;
    for t in [5_000u64, 20_000, 35_000, 50_000] {
        ticks = with_burst(
            ticks,
            burst(pid, START_MS + t, StackClass::HostSync, 14, 20, &item),
        );
    }
    let r = run(&infos, &ticks, Thresholds::default());
    let f = last(&r, "sync").expect("sync");
    assert!(
        f.causes[0].contains("train.py:91 `total += loss.item()`"),
        "{:?}",
        f.causes
    );
    assert!(f.actions[0].contains("train.py:91"), "{:?}", f.actions);
}

/// Three ranks of one job sharing the GPU, pids 4400-4402.
fn three_ranks(ticks: &mut [gpuwatch::model::Tick]) {
    for t in ticks {
        let template = t.devices[0].processes[0].clone();
        t.devices[0].processes = (0..3u32)
            .map(|r| {
                let mut p = template.clone();
                p.pid = 4400 + r;
                let h = p.host.as_mut().unwrap();
                h.job = Some(gpuwatch::model::JobInfo {
                    key: "torchelastic:demo".into(),
                    rank: Some(r),
                    local_rank: Some(r),
                    world_size: Some(3),
                });
                p
            })
            .collect();
    }
}

/// Ranks whose frames differ where the evidence does not show it (the function, beside a
/// source line) are said once, in rank order: a place is worded once for all its ranks, and
/// places worded alike are one group.
#[test]
fn ranks_at_places_worded_alike_are_said_once_in_rank_order() {
    let (infos, mut ticks) = sim_ticks(Scenario::HANG, 1, 60, START_MS);
    three_ranks(&mut ticks);
    let c10d = format!("{SP}/torch/distributed/distributed_c10d.py");
    // The function differs; the evidence quotes the source line, and not the function.
    let at = |function| {
        [
            ("all_reduce", c10d.as_str(), 2501, ""),
            (function, "/home/u/train.py", 64, "dist.all_reduce(grad)"),
        ]
    };
    let (step, other) = (at("step"), at("train_step"));
    for t in [12_000u64, 27_000, 42_000, 57_000] {
        for (pid, f) in [(4400, &step), (4401, &other), (4402, &step)] {
            let t_ms = START_MS + t + u64::from(pid - 4400) * 500;
            let b = burst(pid, t_ms, StackClass::Collective, 20, 20, f);
            ticks = with_burst(ticks, b);
        }
    }
    let r = run(&infos, &ticks, Thresholds::default());
    let f = last(&r, "hang").expect("hang");
    let line = "where the ranks are (Python stacks): ranks 0, 1, 2 (pids 4400, 4401, 4402, GPU 0): collective (torch.distributed) at train.py:64 `dist.all_reduce(grad)`";
    assert!(
        f.evidence.iter().any(|e| e.contains(line)),
        "{:#?}",
        f.evidence
    );
}

#[test]
#[allow(clippy::too_many_lines)] // the three ranks' stacks are written out frame by frame, as py-spy would read them; the checks follow them
fn a_hang_names_the_rank_outside_the_collective_from_the_ranks_stacks() {
    let (infos, mut ticks) = sim_ticks(Scenario::HANG, 1, 60, START_MS);
    three_ranks(&mut ticks);
    let c10d = format!("{SP}/torch/distributed/distributed_c10d.py");
    let coll = [
        ("all_reduce", c10d.as_str(), 2501, ""),
        ("step", "/home/u/train.py", 64, "dist.all_reduce(grad)"),
    ];
    let idle = [("step", "/home/u/train.py", 71, "time.sleep(5)")];
    for at in [12_000u64, 27_000, 42_000, 57_000] {
        for (pid, class, frames) in [
            (4400, StackClass::Collective, &coll[..]),
            (4401, StackClass::Collective, &coll[..]),
            (4402, StackClass::IdleWaiting, &idle[..]),
        ] {
            ticks = with_burst(
                ticks,
                burst(
                    pid,
                    START_MS + at + u64::from(pid - 4400) * 500,
                    class,
                    20,
                    20,
                    frames,
                ),
            );
        }
    }
    let r = run(&infos, &ticks, Thresholds::default());
    let f = last(&r, "hang").expect("hang");
    let c = f.culprit.as_ref().expect("a culprit");
    assert_eq!(
        (c.pid, c.rank, c.reason.as_str()),
        (4402, Some(2), "stacks"),
        "{c:?}"
    );
    assert!(
        f.evidence.iter().any(|e| e.contains(
            "where the ranks are (Python stacks): ranks 0, 1 (pids 4400, 4401, GPU 0): collective (torch.distributed) at train.py:64 `dist.all_reduce(grad)`; rank 2 (pid 4402, GPU 0): idle, waiting for work at train.py:71 `time.sleep(5)`"
        )),
        "{:#?}",
        f.evidence
    );
    assert!(
        f.causes[0].starts_with("Rank 2 (pid 4402) never reached the collective"),
        "{:?}",
        f.causes
    );
}

/// Stacks that say nothing (a `python3 -c` loop sleeping between small GPU steps: no source
/// line, no library frame) leave the counters' verdict as it was, and say they were read.
#[test]
fn stacks_that_tell_nothing_leave_starved_as_it_was_and_say_so() {
    let (infos, ticks) = sim_ticks(Scenario::Rule(RuleId::Starved), 1, 60, START_MS);
    let pid = ticks[0].devices[0].processes[0].pid;
    let script = [("<module>", "<string>", 4, "")];
    let mut ticks = ticks;
    for t in [5_000u64, 20_000, 35_000, 50_000] {
        ticks = with_burst(
            ticks,
            burst(pid, START_MS + t, StackClass::Unknown, 20, 20, &script),
        );
    }
    let r = run(&infos, &ticks, Thresholds::default());
    let f = last(&r, "starved").expect("starved");
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        f.evidence.iter().any(|e| e.starts_with(&format!(
            "pid {pid}'s main thread: in a native call (no Python frame says what) in 20 of 20 stack samples"
        )) && e.ends_with("nothing there tells waiting for input from waiting for requests")),
        "{:#?}",
        f.evidence
    );
}
