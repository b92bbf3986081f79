//! MIG (#31): a GPU in MIG mode is listed with its instances, each judged from what NVML gives
//! an instance (no utilization, no power: `NotSupported`; its own memory, processes and GPM
//! activity), on the simulated MIG source shaped from NVML's documented behaviour. The lent
//! H200 cannot be switched to MIG (its settings are not ours to change), so no real MIG
//! recording exists yet.

mod common;

use common::{raised_on, run, sim_ticks, sim_ticks_with_stacks, store_with, START_MS};
use gpuwatch::config::Thresholds;
use gpuwatch::model::{gpu_label, mig_index, DeviceInfo};
use gpuwatch::rules::Severity;
use gpuwatch::source::sim::Scenario;

const WORKING: u32 = 100_020;
const HUNG: u32 = 100_030;
const STARVED: u32 = 100_090;
const NOTEBOOK: u32 = 100_100;

#[test]
fn instances_are_numbered_and_named_as_nvidia_smi_names_them() {
    assert_eq!(mig_index(0, 3, 0), HUNG);
    assert_eq!(gpu_label(HUNG).to_string(), "0:3");
    assert_eq!(gpu_label(mig_index(7, 14, 2)).to_string(), "7:14:2");
    assert_eq!(gpu_label(5).to_string(), "5");
    for n in [
        0,
        5,
        10,
        999,
        HUNG,
        NOTEBOOK,
        mig_index(7, 14, 2),
        mig_index(12, 3, 0),
    ] {
        assert_eq!(gpu_label(n).width(), gpu_label(n).to_string().len(), "{n}");
    }
    assert_eq!(
        format!("{:>4}", gpu_label(HUNG)),
        " 0:3",
        "pads as a number does"
    );
    let (infos, _) = sim_ticks(Scenario::Mig, 2, 1, START_MS);
    let labels: Vec<String> = infos.iter().map(|d| d.label().to_string()).collect();
    assert_eq!(
        labels,
        ["0", "0:2", "0:3", "0:9", "0:10", "1"],
        "each GPU then its instances"
    );
    assert!(infos[0].is_mig_parent() && !infos[5].is_mig_parent());
    let m = infos[2].mig.as_ref().unwrap();
    assert_eq!(
        (m.parent, m.gpu_instance, m.profile.as_str()),
        (0, 3, "2g.35gb")
    );
    assert_eq!(m.parent_uuid, infos[0].uuid);
    assert!(infos[2].uuid.starts_with("MIG-"));
}

/// NVML answers utilization for no MIG device, and power, temperature and clocks for the GPU
/// only: those are gaps on an instance, never zeros; GPM and memory are the instance's own.
#[test]
fn an_instance_has_gaps_where_nvml_has_no_answer_and_its_own_activity() {
    let (infos, ticks) = sim_ticks(Scenario::Mig, 2, 5, START_MS);
    let last = ticks.last().unwrap();
    let parent = &last.devices[0].sample;
    assert_eq!(
        parent.util_gpu_pct, None,
        "MIG mode: no utilization on the GPU either"
    );
    assert!(parent.power_w.is_some() && parent.temp_c.is_some());
    for (info, d) in infos
        .iter()
        .zip(&last.devices)
        .filter(|(i, _)| i.mig.is_some())
    {
        let s = &d.sample;
        assert_eq!(
            (s.util_gpu_pct, s.power_w, s.temp_c, s.sm_clock_mhz),
            (None, None, None, None),
            "{}",
            info.label()
        );
        assert!(
            s.gpm.sm_active_pct.is_some(),
            "{}: GPM per instance",
            info.label()
        );
        assert!(s.mem_used_bytes.unwrap() <= info.memory_total_bytes.unwrap());
        assert_eq!(info.tdp_w(), None, "no power limit of its own");
        for p in &d.processes {
            assert_eq!(p.sm_pct, None, "no per-process utilization on MIG");
        }
    }
    let whole = &last.devices[5].sample;
    assert!(
        whole.util_gpu_pct.is_some(),
        "a whole GPU beside it is read as always"
    );
}

/// The demo's instances each raise their own finding, from SM activity, memory and the host
/// side: the hung one (confirmed after 25 s), the starved one, the notebook holding memory;
/// the working instance, the GPU they share and the whole GPU beside them raise nothing.
#[test]
fn each_instance_is_judged_on_its_own_from_what_it_has() {
    let (infos, ticks) = sim_ticks_with_stacks(Scenario::Mig, 2, 150, START_MS);
    let r = run(&infos, &ticks, Thresholds::default());
    assert_eq!(raised_on(&r, HUNG), ["hang"]);
    assert_eq!(raised_on(&r, STARVED), ["starved"]);
    assert_eq!(raised_on(&r, NOTEBOOK), ["idle-mem"]);
    for quiet in [WORKING, 0, 1] {
        assert!(
            raised_on(&r, quiet).is_empty(),
            "{}: {:?}",
            gpu_label(quiet),
            raised_on(&r, quiet)
        );
    }
    let active = r.engine.conclusions().active();
    let hang = active
        .iter()
        .find(|f| f.device == HUNG)
        .expect("hang still open");
    assert_eq!(hang.severity, Severity::Critical, "{}", hang.title);
    let text = hang.evidence.join("\n");
    assert!(
        text.contains("NVML reports no utilization or power"),
        "{text}"
    );
    assert!(text.contains("SM activity held at 3.3 %"), "{text}");
    assert!(
        text.contains("GPU 0:3"),
        "the rank's GPU by its label: {text}"
    );
    let starved = r.raised.iter().find(|f| f.device == STARVED).unwrap();
    assert!(
        starved.evidence[0].contains("MIG instance"),
        "{:?}",
        starved.evidence
    );
}

/// Counters alone, without the stacks, still tell the hang (a flat resident kernel) from the
/// starved loader (bursts) on instances.
#[test]
fn counters_alone_tell_a_hung_instance_from_a_starved_one() {
    let (infos, ticks) = sim_ticks(Scenario::Mig, 1, 60, START_MS);
    let r = run(&infos, &ticks, Thresholds::default());
    assert_eq!(raised_on(&r, HUNG), ["hang"]);
    assert_eq!(raised_on(&r, STARVED), ["starved"]);
}

/// An instance idle between requests (SM activity 0, memory held for a short while) is not
/// hung, and one that moves memory at a steady low SM activity is not hung either.
#[test]
fn an_idle_or_working_instance_is_not_hung() {
    for (sm, dram) in [(0.0, 0.0), (3.3, 20.0)] {
        let (infos, mut ticks) = sim_ticks(Scenario::Mig, 1, 60, START_MS);
        let at = infos.iter().position(|d| d.index == HUNG).unwrap();
        for t in &mut ticks {
            t.devices[at].sample.gpm.sm_active_pct = Some(sm);
            t.devices[at].sample.gpm.dram_bw_pct = Some(dram);
        }
        let r = run(&infos, &ticks, Thresholds::default());
        assert!(
            !raised_on(&r, HUNG).contains(&"hang".to_string()),
            "SM {sm} %, DRAM {dram} %"
        );
    }
}

/// A whole GPU is judged as before: the same readings on a device that is not an instance
/// raise what they always did, and rules of the GPU (power, links) never judge an instance.
#[test]
fn rules_judge_where_their_evidence_exists() {
    use gpuwatch::rules::OnMig;
    let instance = DeviceInfo {
        mig: Some(gpuwatch::model::MigInfo::default()),
        ..DeviceInfo::default()
    };
    let parent = DeviceInfo {
        mig_mode: Some(true),
        ..DeviceInfo::default()
    };
    let whole = DeviceInfo {
        mig_mode: Some(false),
        ..DeviceInfo::default()
    };
    for (kind, on_instance, on_parent) in [
        (OnMig::Instance, true, false),
        (OnMig::Parent, false, true),
        (OnMig::Neither, false, false),
    ] {
        assert_eq!(kind.judges(&instance), on_instance, "{kind:?}");
        assert_eq!(kind.judges(&parent), on_parent, "{kind:?}");
        assert!(
            kind.judges(&whole),
            "{kind:?}: a whole GPU is judged by every rule"
        );
    }
    let (infos, ticks) = sim_ticks(Scenario::HANG, 1, 40, START_MS);
    let r = run(&infos, &ticks, Thresholds::default());
    assert_eq!(
        raised_on(&r, 0),
        ["hang"],
        "a whole GPU's hang, from util and power"
    );
}

/// `serve` labels an instance as dcgm-exporter does: its GPU's `gpu` and `UUID`, then
/// `GPU_I_PROFILE` and `GPU_I_ID`; gaps stay absent, and its state comes from SM activity.
#[test]
fn serve_labels_instances_as_dcgm_exporter_does() {
    let store = store_with(Scenario::Mig, 2, 40, |_| {});
    let extras = gpuwatch::serve::Extras {
        processes: 0,
        dcgm: true,
    };
    let text = gpuwatch::serve::metrics_text_with(&store, "h", false, extras).unwrap();
    let ids = r#"gpu="0",UUID="GPU-5a1d0000-0000-4000-8000-000000000000",pci_bus_id="00000000:18:00.0",modelName="NVIDIA H200 MIG 2g.35gb (simulated)",GPU_I_PROFILE="2g.35gb",GPU_I_ID="3",Hostname="h""#;
    assert!(
        text.contains(&format!("gpuwatch_gpu_state{{{ids},state=\"spinning\"}} 1")),
        "{text}"
    );
    assert!(
        text.contains(&format!("gpuwatch_finding_active{{{ids},finding=\"hang\"")),
        "{text}"
    );
    let dcgm = r#"DCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="GPU-5a1d0000-0000-4000-8000-000000000000",pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA H200 MIG 2g.35gb (simulated)",GPU_I_PROFILE="2g.35gb",GPU_I_ID="3",Hostname="h"} 0.033"#;
    assert!(text.contains(dcgm), "{text}");
    for line in text.lines().filter(|l| l.contains("GPU_I_ID")) {
        for gap in [
            "gpuwatch_utilization",
            "gpuwatch_power",
            "DCGM_FI_DEV_GPU_UTIL",
            "DCGM_FI_DEV_POWER_USAGE",
            "gpuwatch_idle_floor",
        ] {
            assert!(
                !line.starts_with(&format!("{gap}{{")),
                "an instance has no {gap}: {line}"
            );
        }
    }
    let working = r#"GPU_I_ID="2",Hostname="h",state="busy"} 1"#;
    assert!(
        text.contains(working),
        "the working instance is busy by its SM activity"
    );
}

/// Recordings and snapshots keep what an instance is; a recording from before MIG support (no
/// `mig` key) reads as whole GPUs.
#[test]
fn recordings_keep_instances_and_older_ones_still_read() {
    let (infos, _) = sim_ticks(Scenario::Mig, 1, 1, START_MS);
    let json = serde_json::to_string(&infos).unwrap();
    let back: Vec<DeviceInfo> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, infos);
    assert!(
        !serde_json::to_string(&infos[0])
            .unwrap()
            .contains("\"mig\""),
        "a whole GPU writes no mig key"
    );
    let old: DeviceInfo = serde_json::from_str(r#"{"index":0,"uuid":"GPU-1","name":"H200","pci_bus_id":"0","memory_total_bytes":null,"power_limit_default_w":null,"power_limit_enforced_w":null,"power_limit_min_w":null,"power_limit_max_w":null,"max_sm_clock_mhz":null,"max_mem_clock_mhz":null,"temp_slowdown_c":null,"pcie_max_gen":null,"pcie_max_width":null,"persistence_mode":null,"mig_mode":null,"gpm_supported":false}"#).unwrap();
    assert_eq!(old.mig, None);
}

/// No series is written twice in one answer (name and labels): a scrape refuses the
/// duplicates. An open finding at its rule's own severity once was (0, then 1), on every GPU.
#[test]
fn no_series_is_written_twice() {
    let extras = gpuwatch::serve::Extras {
        processes: 8,
        dcgm: true,
    };
    let mig = gpuwatch::serve::metrics_text_with(
        &store_with(Scenario::Mig, 2, 40, |_| {}),
        "h",
        false,
        extras,
    )
    .unwrap();
    for text in [mig, common::mixed_metrics(extras)] {
        let mut seen = std::collections::HashSet::new();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let series = line.rsplit_once(' ').map_or(line, |(s, _)| s);
            assert!(seen.insert(series.to_string()), "written twice: {series}");
        }
        assert!(
            text.contains(r#"finding="starved",severity="warning"} 1"#),
            "an open starved finding at its own severity"
        );
    }
}

/// A recording or snapshot whose device numbers disagree with what its devices say they are
/// would file one device's findings under another: refused, saying which.
#[test]
fn devices_whose_numbers_disagree_with_what_they_are_are_refused() {
    use gpuwatch::model::devices_inconsistent;
    let (infos, _) = sim_ticks(Scenario::Mig, 2, 1, START_MS);
    assert_eq!(devices_inconsistent(&infos), None);
    let edit = |f: &dyn Fn(&mut Vec<DeviceInfo>)| {
        let mut d = infos.clone();
        f(&mut d);
        devices_inconsistent(&d).unwrap_or_default()
    };
    assert!(edit(&|d| d[2].index = 1).contains("device 1 says it is MIG instance 0:3:0"));
    assert!(edit(&|d| d[5].index = 0).contains("two devices are numbered 0"));
    assert!(edit(&|d| d[2].mig = None).contains("no \"mig\" facts"));
    assert!(
        edit(&|d| d[2].mig.as_mut().unwrap().gpu_instance = 9).contains("which is numbered 100090")
    );
    assert!(
        edit(&|d| d[2].mig.as_mut().unwrap().gpu_instance = u32::MAX)
            .contains("beyond what a GPU has")
    );
    assert!(edit(&|d| d.push(d[2].clone())).contains("two devices are numbered 100030"));
}

/// A process runs on one device: the MIG demo gave its first instance's process pid 10010,
/// the pid of GPU 1's (each pid counted from the device's place in the list).
#[test]
fn no_pid_is_listed_on_two_devices_of_the_mig_demo() {
    let (infos, ticks) = sim_ticks(Scenario::Mig, 8, 1, START_MS);
    let mut seen = std::collections::HashMap::new();
    for (info, d) in infos.iter().zip(&ticks[0].devices) {
        for p in &d.processes {
            let pids = std::iter::once(p.pid)
                .chain(p.host.iter().flat_map(|h| h.children.iter().map(|c| c.pid)));
            for pid in pids {
                if let Some(other) = seen.insert(pid, info.label().to_string()) {
                    panic!("pid {pid} on {other} and {}", info.label());
                }
            }
        }
    }
    assert!(seen.len() > 8, "{seen:?}");
}

/// Sorted by GPU, instances come after their GPU and before the next (1 came before 0:2,
/// kept under 100020).
#[test]
fn sorting_by_gpu_puts_instances_under_their_gpu() {
    use gpuwatch::app::{AppState, SortKey};
    let store = store_with(Scenario::Mig, 2, 5, |_| {});
    let mut st = AppState::new(true);
    st.sort = SortKey::Gpu;
    for descending in [false, true] {
        st.sort_descending = descending;
        let mut labels: Vec<String> = gpuwatch::app::process_rows(&st, &store)
            .iter()
            .map(|r| gpu_label(r.gpu).to_string())
            .collect();
        if descending {
            labels.reverse();
        }
        assert_eq!(labels, ["0:2", "0:3", "0:9", "0:10", "1"], "{descending}");
    }
}
