//! What a GPU process runs with, read from /proc trees of real torch processes captured on the
//! H200 (tests/fixtures/proc/README.md), and the hints that join the findings.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::{run, sim_ticks, START_MS};
use gpuwatch::config::Thresholds;
use gpuwatch::software::{read, ProcRoot, Software};
use gpuwatch::source::sim::Scenario;

fn fixture(pid: u32) -> Software {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/proc");
    read(&ProcRoot::fixture(&root), pid)
}

fn version<'a>(s: &'a Software, name: &str) -> (Option<&'a str>, &'a str) {
    let l = s
        .libraries
        .iter()
        .find(|l| l.name == name)
        .unwrap_or_else(|| panic!("{name} not found in {:?}", s.libraries));
    (l.version.as_deref(), l.from.as_str())
}

#[test]
fn a_torch_process_shows_the_versions_torch_itself_reported() {
    // torch said, in the same run: 2.11.0+cu130, CUDA 13.0, cuDNN 91900, NCCL (2, 28, 9).
    let s = fixture(628);
    assert_eq!(s.unreadable, None);
    let torch = &s.frameworks[0];
    assert_eq!(
        (
            torch.name.as_str(),
            torch.version.as_str(),
            torch.cuda.as_deref()
        ),
        ("torch", "2.11.0+cu130", Some("13.0"))
    );
    assert_eq!(
        version(&s, "NCCL"),
        (Some("2.28.9"), "wheel nvidia_nccl_cu13")
    );
    assert_eq!(
        version(&s, "cuDNN"),
        (Some("9.19.0.56"), "wheel nvidia_cudnn_cu13")
    );
    assert_eq!(
        version(&s, "CUDA runtime"),
        (Some("13.0.96"), "wheel nvidia_cuda_runtime")
    );
    assert_eq!(
        version(&s, "cuBLAS"),
        (Some("13.1.0.3"), "wheel nvidia_cublas")
    );
    assert_eq!(
        version(&s, "CUDA driver"),
        (Some("580.159.04"), "file name")
    );
    assert_eq!(
        s.summary(),
        "torch 2.11.0+cu130 · CUDA runtime 13.0.96 · cuDNN 9.19.0.56 · NCCL 2.28.9 · cuBLAS 13.1.0.3"
    );
}

#[test]
fn only_the_allow_listed_settings_are_read() {
    let blocking = fixture(628);
    assert_eq!(
        blocking.settings,
        [
            ("CUDA_LAUNCH_BLOCKING".to_string(), "1".to_string()),
            (
                "PYTORCH_CUDA_ALLOC_CONF".into(),
                "expandable_segments:True".into()
            ),
            ("OMP_NUM_THREADS".into(), "4".into()),
        ]
    );
    // The process view writes them without a `String` of their own: the same line.
    assert_eq!(
        gpuwatch::software::Settings(&blocking, " · ").to_string(),
        blocking.settings_text(|s| s, " · ").unwrap()
    );
    let ddp = fixture(629);
    let keys: Vec<&str> = ddp.settings.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "NCCL_P2P_DISABLE",
            "NCCL_DEBUG",
            "NCCL_SOCKET_NTHREADS",
            "NCCL_NSOCKS_PERTHREAD",
            "TORCH_NCCL_BLOCKING_WAIT"
        ]
    );
    // The environment has ~90 other variables (HOME, PATH, the image's NCCL_VERSION=2.28.3-1,
    // which is not the NCCL torch loaded): none is kept.
    assert_eq!(ddp.setting("NCCL_VERSION"), None);
    assert_eq!(ddp.setting("HOME"), None);
    assert_eq!(version(&ddp, "NCCL").0, Some("2.28.9"));
}

#[test]
fn a_process_whose_files_cannot_be_read_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let s = read(&ProcRoot::fixture(dir.path()), 4242);
    assert!(s.libraries.is_empty() && s.settings.is_empty());
    assert!(
        s.unreadable.as_deref().unwrap().contains("its environment"),
        "{:?}",
        s.unreadable
    );
}

#[test]
fn the_cgroup_of_the_lent_h200_names_no_container() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/proc/proc");
    for pid in [628, 629] {
        let text = std::fs::read_to_string(root.join(format!("{pid}/cgroup"))).unwrap();
        assert_eq!(gpuwatch::container::parse_cgroup(&text), None, "{text}");
    }
}

/// The launch-bound scenario, its processes running with `software`.
fn sync_finding(software: Software) -> gpuwatch::rules::Finding {
    let (infos, mut ticks) = sim_ticks(
        Scenario::Rule(gpuwatch::rules::RuleId::Sync),
        1,
        90,
        START_MS,
    );
    let sw = Arc::new(software);
    for t in &mut ticks {
        for p in &mut t.devices[0].processes {
            p.host.as_mut().unwrap().software = Some(sw.clone());
        }
    }
    run(&infos, &ticks, Thresholds::default())
        .raised
        .into_iter()
        .find(|f| f.rule == "sync")
        .expect("the sync scenario raises sync")
}

#[test]
fn cuda_launch_blocking_is_the_first_cause_of_a_launch_bound_gpu_with_its_evidence() {
    let f = sync_finding(fixture(628));
    assert!(
        f.causes[0].starts_with("CUDA_LAUNCH_BLOCKING=1 is set"),
        "{:?}",
        f.causes
    );
    assert!(
        f.actions[0].contains("Unset CUDA_LAUNCH_BLOCKING"),
        "{:?}",
        f.actions
    );
    assert!(
        f.evidence.iter().any(|e| e
            .ends_with("runs with CUDA_LAUNCH_BLOCKING=1 (read from /proc/10040/environ)")
            || e.contains("runs with CUDA_LAUNCH_BLOCKING=1 (read from /proc/")),
        "{:?}",
        f.evidence
    );
    // Without it, the usual causes lead.
    let plain = sync_finding(fixture(629));
    assert!(
        plain.causes[0].starts_with("NCCL_P2P_DISABLE=1"),
        "{:?}",
        plain.causes
    );
    let none = sync_finding(Software::default());
    assert!(
        none.causes[0].starts_with("A host sync every step"),
        "{:?}",
        none.causes
    );
    assert!(!none.evidence.iter().any(|e| e.contains("environ")));
}

#[test]
fn the_live_h200_job_with_cuda_launch_blocking_is_diagnosed_with_it() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/h200-blocking");
    let mut src =
        gpuwatch::source::replay::ReplaySource::open(&dir.join("blocking.jsonl.gz"), f64::INFINITY)
            .unwrap();
    let infos = gpuwatch::source::Source::devices(&src).to_vec();
    let ticks = src.read_all().unwrap();
    // What the recorder read from the live process's /proc.
    let h = ticks[ticks.len() / 2].devices[0].processes[0]
        .host
        .as_ref()
        .unwrap();
    let sw = h.software.as_deref().expect("read live");
    assert_eq!(sw.setting("CUDA_LAUNCH_BLOCKING"), Some("1"));
    assert_eq!(sw.frameworks[0].version, "2.11.0+cu130");
    let found = run(&infos, &ticks, Thresholds::default()).raised;
    let sync: Vec<_> = found.iter().filter(|f| f.rule == "sync").collect();
    assert_eq!(sync.len(), 1, "{found:#?}");
    assert!(sync[0].causes[0].starts_with("CUDA_LAUNCH_BLOCKING=1 is set"));
    let spans: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("blocking-spans.json")).unwrap())
            .unwrap();
    let start_ms = (spans[0]["start"].as_f64().unwrap() * 1000.0) as u64;
    assert!(
        sync[0].opened_ms < start_ms + 15_000,
        "raised {} ms into the phase",
        sync[0].opened_ms - start_ms
    );
    assert!(
        found.iter().all(|f| f.rule == "sync"),
        "nothing else: {found:#?}"
    );
}

#[test]
fn a_jax_process_shows_jax_and_the_libraries_of_its_cuda_plugin() {
    // Captured by docs/workloads/run13.sh: jax 0.11.2 with the CUDA 13 plugin, which loads
    // the same nvidia wheels as torch does.
    let s = fixture(483);
    assert_eq!(s.unreadable, None);
    let names: Vec<(&str, &str)> = s
        .frameworks
        .iter()
        .map(|f| (f.name.as_str(), f.version.as_str()))
        .collect();
    assert_eq!(names, [("jax", "0.11.2")]);
    assert_eq!(version(&s, "CUDA driver").0, Some("580.159.04"));
    assert!(s.settings.is_empty(), "{:?}", s.settings);
}

#[test]
fn the_live_h200_jax_job_holding_memory_is_blamed_on_preallocation() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/h200-jax");
    let mut src =
        gpuwatch::source::replay::ReplaySource::open(&dir.join("jax.jsonl.gz"), f64::INFINITY)
            .unwrap();
    let infos = gpuwatch::source::Source::devices(&src).to_vec();
    let ticks = src.read_all().unwrap();
    let found = run(&infos, &ticks, Thresholds::default()).raised;
    let idle: Vec<_> = found.iter().filter(|f| f.rule == "idle-mem").collect();
    assert_eq!(idle.len(), 1, "{found:#?}");
    assert!(
        idle[0].causes[0].starts_with("JAX preallocates 75 % of GPU memory"),
        "{:?}",
        idle[0].causes
    );
    assert!(
        idle[0].evidence.iter().any(|e| e.ends_with(
            "loaded JAX, and XLA_PYTHON_CLIENT_PREALLOCATE is not false (read from /proc/483/maps and environ)"
        )),
        "{:?}",
        idle[0].evidence
    );
}

/// The source article's version notes are hints that say they are reported, never verified,
/// and come after the causes gpuwatch measured.
#[test]
fn an_old_torch_gets_the_articles_version_note_last_and_said_to_be_unverified() {
    let mut old = fixture(628);
    old.frameworks[0].version = "1.10.2+cu113".into();
    let f = sync_finding(old);
    let last = f.causes.last().unwrap();
    assert!(
        last.starts_with("Reported, not verified here: PyTorch 1.8–1.11"),
        "{:?}",
        f.causes
    );
    assert!(
        f.evidence
            .iter()
            .any(|e| e.contains("loaded torch 1.10.2+cu113")),
        "{:?}",
        f.evidence
    );
    // The measured cause still comes first (CUDA_LAUNCH_BLOCKING=1 in this process's settings).
    assert!(
        f.causes[0].contains("CUDA_LAUNCH_BLOCKING"),
        "{:?}",
        f.causes
    );
    // torch 2.11 gets neither version note.
    let f = sync_finding(fixture(628));
    assert!(
        f.causes.iter().all(|c| !c.starts_with("Reported")),
        "{:?}",
        f.causes
    );
}
