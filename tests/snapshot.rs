//! Snapshots: schema-valid JSON, snapshot → replay → the same findings, redaction, no
//! overwrite, an unwritable directory, Markdown, and the binary end to end.

mod common;

use std::path::Path;
use std::process::Command;

use gpuwatch::config::Thresholds;
use gpuwatch::rules::RuleId;
use gpuwatch::snapshot::{self, CmdlinePolicy, Options};
use gpuwatch::source::replay::ReplaySource;
use gpuwatch::source::sim::Scenario;
use gpuwatch::source::Source;
use gpuwatch::store::Store;

fn observed(sc: Scenario, gpus: usize, seconds: u64) -> Store {
    common::store_with(sc, gpus, seconds, |_| {})
}

fn schema() -> jsonschema::Validator {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/snapshot.schema.json"
    ))
    .unwrap();
    jsonschema::validator_for(&serde_json::from_str(&text).unwrap())
        .expect("the schema itself is valid")
}

fn assert_valid(json: &str) {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    let errors: Vec<String> = schema()
        .iter_errors(&v)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "schema errors: {errors:#?}");
}

#[test]
fn produced_snapshots_validate_against_the_schema() {
    for (sc, gpus) in [
        (Scenario::Mixed, 8),
        (Scenario::Rule(RuleId::Lost), 2),
        (Scenario::Idle, 1),
        (Scenario::Mig, 2),
    ] {
        let obs = observed(sc, gpus, 60);
        assert_valid(&snapshot::to_json(&snapshot::take(
            &obs,
            &Options::default(),
        )));
    }
    let obs = observed(Scenario::Mixed, 8, 60);
    let private = Options {
        include_host: false,
        cmdlines: CmdlinePolicy::Omitted,
        ..Options::default()
    };
    assert_valid(&snapshot::to_json(&snapshot::take(&obs, &private)));
}

#[test]
fn the_h200_recording_snapshots_validly() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/h200/phases.jsonl.gz");
    let mut src = ReplaySource::open(&path, f64::INFINITY).unwrap();
    let ticks = src.read_all().unwrap();
    let mut store = Store::new(
        &src,
        std::time::Duration::from_secs(900),
        Thresholds::default(),
    )
    .unwrap();
    for t in &ticks[..660] {
        store.absorb(t, gpuwatch::model::SelfCost::default());
    }
    let obs = &store;
    let json = snapshot::to_json(&snapshot::take(obs, &Options::default()));
    assert_valid(&json);
    assert!(
        json.contains("\"fan_pct\": null"),
        "unsupported metrics are null"
    );
}

fn replay_findings(snap: &snapshot::Snapshot) -> Vec<(String, u32)> {
    let src = ReplaySource::from_snapshot(snap, Path::new("snap.json"));
    let mut store = Store::new(
        &src,
        std::time::Duration::from_secs(900),
        snap.thresholds.clone(),
    )
    .unwrap();
    let mut src = src;
    for t in src.read_all().unwrap() {
        store.absorb(&t, gpuwatch::model::SelfCost::default());
    }
    let obs = &store;
    let mut v: Vec<(String, u32)> = obs
        .findings()
        .active()
        .iter()
        .map(|f| (f.rule.clone(), f.device))
        .collect();
    v.sort();
    v
}

#[test]
fn snapshot_then_replay_gives_the_same_findings() {
    let obs = observed(Scenario::Mixed, 8, 150);
    let snap = snapshot::take(&obs, &Options::default());
    let mut original: Vec<(String, u32)> = snap
        .findings
        .active
        .iter()
        .map(|f| (f.rule.clone(), f.device))
        .collect();
    original.sort();
    assert!(original.iter().any(|(r, _)| r == "hang"), "{original:?}");
    // Round trip through the file format too.
    let back: snapshot::Snapshot = serde_json::from_str(&snapshot::to_json(&snap)).unwrap();
    assert_eq!(back, snap);
    // idle-mem needs 2 min of idleness; the 2-min window holds exactly that, so allow its loss.
    let replayed = replay_findings(&back);
    let original: Vec<_> = original
        .into_iter()
        .filter(|(r, _)| r != "idle-mem")
        .collect();
    let replayed: Vec<_> = replayed
        .into_iter()
        .filter(|(r, _)| r != "idle-mem")
        .collect();
    assert_eq!(replayed, original);
}

#[test]
fn command_lines_are_redacted_by_default_and_can_be_left_out() {
    let obs = observed(Scenario::Mixed, 8, 10);
    let json = snapshot::to_json(&snapshot::take(&obs, &Options::default()));
    assert!(
        !json.contains("sk-demo-123") && !json.contains("s3cr3t"),
        "secrets leaked"
    );
    assert!(json.contains("--api-key=***") && json.contains("--token=***"));
    assert!(
        json.contains("train.py --model llama-8b"),
        "the rest of the command line stays"
    );
    let none = snapshot::take(
        &obs,
        &Options {
            cmdlines: CmdlinePolicy::Omitted,
            include_host: false,
            ..Options::default()
        },
    );
    let json = snapshot::to_json(&none);
    assert!(!json.contains("train.py") && !json.contains("\"host\": \"demo\""));
    assert!(json.contains("\"name\": \"python3\""), "process names stay");
    assert!(
        !json.contains("alice"),
        "--no-host leaves user names out too"
    );
}

#[test]
fn no_host_leaves_the_replayed_files_directories_out() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/h200/variants/spin.jsonl.gz");
    let mut src = ReplaySource::open(&path, f64::INFINITY).unwrap();
    let ticks = src.read_all().unwrap();
    let mut store = Store::new(
        &src,
        std::time::Duration::from_secs(900),
        Thresholds::default(),
    )
    .unwrap();
    for t in &ticks {
        store.absorb(t, gpuwatch::model::SelfCost::default());
    }
    let obs = &store;
    let opts = Options {
        include_host: false,
        ..Options::default()
    };
    let json = snapshot::to_json(&snapshot::take(obs, &opts));
    assert!(
        json.contains("\"source\": \"replay: spin.jsonl.gz\""),
        "{}",
        &json[..400]
    );
    assert!(!json.contains("tests/fixtures"), "no directories");
}

#[test]
fn never_overwrites_and_adds_a_suffix() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("snap.json");
    std::fs::write(&p, "mine").unwrap();
    let got = snapshot::write_new(&p, "new").unwrap();
    assert_eq!(got, dir.path().join("snap-1.json"));
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "mine");
    assert_eq!(
        snapshot::write_new(&p, "newer").unwrap(),
        dir.path().join("snap-2.json")
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(std::result::Result::ok)
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files removed");
}

#[test]
fn unwritable_directory_is_a_clear_error() {
    let err = anyhow::Error::from(
        snapshot::write_new(Path::new("/proc/gpuwatch-no/snap.json"), "x").unwrap_err(),
    );
    // As main and the monitor print errors, with the chain: the cause said once.
    let err = format!("{err:#}");
    assert!(
        err.contains("cannot write a snapshot in /proc/gpuwatch-no")
            && err.contains("writable place"),
        "{err}"
    );
    assert_eq!(err.matches("No such file").count(), 1, "{err}");
}

#[test]
fn markdown_has_the_summary_findings_sparklines_and_processes() {
    let obs = observed(Scenario::Mixed, 8, 60);
    let md = snapshot::to_markdown(&snapshot::take(&obs, &Options::default()));
    assert!(md.contains("| GPU | name | util % (median)"), "{md}");
    assert!(md.contains("‼ CRITICAL — GPU 4: Busy but idle"), "{md}");
    assert!(
        md.contains("GPU 4 util  █") && md.contains("GPU 4 power ▂"),
        "{md}"
    );
    assert!(
        md.contains("### Top processes") && md.contains("--api-key=***"),
        "{md}"
    );
}

/// The summary table says what the findings below it say: a hung GPU's state is its finding,
/// never `ok`, and its process column is the monitor's kernel time, not SM activity.
#[test]
fn markdown_states_agree_with_the_findings() {
    let obs = observed(Scenario::Mixed, 8, 60);
    let md = snapshot::to_markdown(&snapshot::take(&obs, &Options::default()));
    let row = |gpu: u32| {
        md.lines()
            .find(|l| l.starts_with(&format!("| {gpu} | ")))
            .unwrap_or_else(|| panic!("no row for GPU {gpu}:\n{md}"))
            .to_string()
    };
    assert!(row(4).ends_with("| ‼ hang |"), "{}", row(4));
    assert!(row(0).ends_with("| ok |"), "{}", row(0));
    assert!(row(6).contains("◀ culprit of GPU"), "{}", row(6));
    assert!(
        md.contains("| kernel time % |") && !md.contains("| SM % |"),
        "{md}"
    );
}

/// With no GPU process, no empty table: a sentence.
#[test]
fn markdown_without_processes_says_so() {
    let obs = observed(Scenario::Idle, 1, 30);
    let md = snapshot::to_markdown(&snapshot::take(&obs, &Options::default()));
    assert!(md.contains("No process was using a GPU"), "{md}");
    assert!(!md.contains("| GPU | pid |"), "{md}");
}

/// A leak that ended (the process exited, memory back to 0) keeps its peak beside the last
/// value, so the finding's "N GiB used" has a figure in the table to match.
#[test]
fn markdown_memory_shows_the_peak_beside_the_last_value() {
    let obs = observed(Scenario::Rule(RuleId::MemGrowth), 1, 90);
    let mut snap = snapshot::take(&obs, &Options::default());
    let samples = &mut snap.devices[0].samples;
    let peak = samples
        .iter()
        .filter_map(|s| s.mem_used_bytes)
        .max()
        .unwrap();
    samples.last_mut().unwrap().mem_used_bytes = Some(0);
    let md = snapshot::to_markdown(&snap);
    let row = md.lines().find(|l| l.starts_with("| 0 | ")).unwrap();
    let want = format!("0.0/140 GiB, peak {:.1}", peak as f64 / (1u64 << 30) as f64);
    assert!(row.contains(&want), "{row} lacks {want}");
}

/// A GPU name from a hostile recording cannot break the Markdown table (its pipes and line
/// breaks split the row).
#[test]
fn markdown_rows_hold_a_hostile_gpu_name() {
    let obs = observed(Scenario::Healthy, 1, 20);
    let mut snap = snapshot::take(&obs, &Options::default());
    snap.devices[0].info.name = "H200 | x | y\n| 9 | forged |".into();
    let md = snapshot::to_markdown(&snap);
    let row = md.lines().find(|l| l.starts_with("| 0 | ")).unwrap();
    let cells = row.replace("\\|", "").matches('|').count();
    let header = md.lines().find(|l| l.starts_with("| GPU | name")).unwrap();
    assert_eq!(cells, header.matches('|').count(), "{row}");
    assert!(!md.lines().any(|l| l.starts_with("| 9 |")), "{md}");
}

fn gpuwatch(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .args(args)
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn the_binary_snapshots_and_diagnoses_the_snapshot_again() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hang.json");
    let f = file.to_str().unwrap();
    let (code, _, err) = gpuwatch(&["snapshot", "--demo=hang", "-o", f]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("written to") && err.contains("hang.json"),
        "{err}"
    );
    let (code, _, err) = gpuwatch(&["snapshot", "--demo=hang", "-o", f]);
    assert_eq!(code, 0);
    assert!(
        err.contains("hang-1.json") && err.contains("hang.json exists; snapshots never overwrite"),
        "no overwrite, and the renaming said: {err}"
    );
    let (code, out, _) = gpuwatch(&["diagnose", "--replay", f]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("CRITICAL [hang]"), "{out}");
    let (code, md, _) = gpuwatch(&["snapshot", "--demo=hang", "--format", "md", "-o", "-"]);
    assert_eq!(code, 0);
    assert!(md.starts_with("## gpuwatch snapshot"), "{md}");
    // -o FILE.md means Markdown, without --format.
    let md_file = dir.path().join("report.md");
    let (code, _, err) = gpuwatch(&["snapshot", "--demo=hang", "-o", md_file.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let written = std::fs::read_to_string(&md_file).unwrap();
    assert!(written.starts_with("## gpuwatch snapshot"), "{written}");
    // Given back to open, it is named for what it is, not "expected value at line 1 column 1".
    let (code, _, err) = gpuwatch(&["diagnose", "--replay", md_file.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("a Markdown snapshot, a report to read"),
        "{err}"
    );
    let (code, _, err) = gpuwatch(&["snapshot", "--demo=hang", "-o", "/proc/nope/x.json"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("cannot write a snapshot in /proc/nope"),
        "{err}"
    );
}

#[test]
fn a_snapshot_cut_short_is_called_a_damaged_snapshot() {
    // A snapshot truncated by a failed upload was called "not a gpuwatch recording".
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.json");
    let f = file.to_str().unwrap();
    let (code, _, err) = gpuwatch(&["snapshot", "--demo=hang", "-o", f]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read(&file).unwrap();
    std::fs::write(&file, &text[..text.len() / 2]).unwrap();
    let (code, _, err) = gpuwatch(&["diagnose", "--replay", f]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot read this gpuwatch snapshot"), "{err}");
    assert!(err.contains("cut short"), "{err}");
    assert!(!err.contains("not a gpuwatch recording"), "{err}");
}

/// What `diagnose --replay` says of a demo snapshot whose first `"KEY": value` is set to
/// `value`, and the line that key is on.
fn with_first_value_set(key: &str, value: &str) -> (String, usize) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.json");
    let f = file.to_str().unwrap();
    let (code, _, err) = gpuwatch(&["snapshot", "--demo=hang", "-o", f]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&file).unwrap();
    let at = text.find(&format!("\"{key}\": ")).unwrap();
    let line = text[..at].lines().count();
    let end = at + text[at..].find(',').unwrap();
    let edited = format!("{}\"{key}\": {value}{}", &text[..at], &text[end..]);
    std::fs::write(&file, edited).unwrap();
    let (code, _, err) = gpuwatch(&["diagnose", "--replay", f]);
    assert_eq!(code, 2, "{err}");
    (err, line)
}

/// A value of the wrong type deep in a snapshot (pretty JSON of thousands of lines) is named
/// by its field and its line, and the kind of value meant is said in words, not as a Rust type.
#[test]
fn a_wrong_value_in_a_snapshot_names_its_field_and_line() {
    let (err, line) = with_first_value_set("memory_total_bytes", "-5");
    assert!(
        err.contains(&format!(
            "cannot read this gpuwatch snapshot: devices[0].info.memory_total_bytes: invalid \
             value: integer `-5`, expected a whole number, 0 or more, at line {line} column"
        )),
        "{err}"
    );
}

/// The thresholds are one flattened table, which serde reads whole: a wrong value in it was
/// said as `thresholds: …` at the table's closing line; the key and its own line are named.
#[test]
fn a_wrong_threshold_in_a_snapshot_names_its_key_and_line() {
    let (err, line) = with_first_value_set("hang_window", "5");
    assert!(
        err.contains(&format!(
            "thresholds.hang_window: invalid type: integer `5`, expected a string, at line {line}"
        )),
        "{err}"
    );
}

#[test]
fn a_demo_snapshot_is_stamped_now_not_at_the_end_of_its_simulated_window() {
    // The demo simulates its 15-minute window in a moment; it was stamped 15 minutes ahead.
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
    };
    let before = now();
    let (code, json, err) = gpuwatch(&["snapshot", "--demo=hang", "-o", "-"]);
    assert_eq!(code, 0, "{err}");
    let after = now();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let taken = v["taken_at_ms"].as_u64().unwrap();
    assert!(
        taken >= before.saturating_sub(60_000) && taken <= after,
        "taken {taken}, ran from {before} to {after}"
    );
}

#[test]
fn snapshot_replay_source_reports_its_devices() {
    let obs = observed(Scenario::Healthy, 2, 10);
    let snap = snapshot::take(&obs, &Options::default());
    let src = ReplaySource::from_snapshot(&snap, Path::new("s.json"));
    assert_eq!(src.devices().len(), 2);
}

#[test]
fn the_schema_rejects_what_it_should() {
    let obs = observed(Scenario::Healthy, 1, 5);
    let mut v: serde_json::Value = serde_json::from_str(&snapshot::to_json(&snapshot::take(
        &obs,
        &Options::default(),
    )))
    .unwrap();
    v["devices"][0]["samples"][0]["util_gpu_pct"] = serde_json::json!("high");
    v["devices"][0]["samples"][1]["surprise"] = serde_json::json!(1);
    v["format"] = serde_json::json!("something-else");
    assert_eq!(schema().iter_errors(&v).count(), 3);
}

#[test]
fn the_schema_names_every_threshold_and_no_other() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/snapshot.schema.json"
    ))
    .unwrap();
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut in_schema: Vec<String> = schema["$defs"]["thresholds"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let mut in_code: Vec<String> = serde_json::to_value(gpuwatch::config::Thresholds::default())
        .unwrap()
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    in_schema.sort();
    in_code.sort();
    assert_eq!(in_schema, in_code, "docs/snapshot.schema.json's thresholds");
}

#[test]
fn a_symlink_planted_at_the_old_temporary_name_is_not_followed() {
    // The temporary name used to be predictable (`.NAME.tmp-PID`): a symlink planted there
    // made gpuwatch overwrite whatever it pointed to.
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, "keep me").unwrap();
    let target = dir.path().join("snap.json");
    let planted = dir
        .path()
        .join(format!(".snap.json.tmp-{}", std::process::id()));
    std::os::unix::fs::symlink(&victim, &planted).unwrap();
    let written = gpuwatch::snapshot::write_new(&target, "{}").unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
    assert_eq!(std::fs::read_to_string(&written).unwrap(), "{}");
    let meta = std::fs::symlink_metadata(&written).unwrap();
    assert!(
        meta.file_type().is_file(),
        "a plain file, not a link to the symlink"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".gpuwatch-"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

#[test]
fn a_name_near_the_255_byte_limit_can_be_written() {
    let dir = tempfile::tempdir().unwrap();
    let name = format!("{}.json", "s".repeat(250));
    let written = gpuwatch::snapshot::write_new(&dir.path().join(&name), "{}").unwrap();
    assert_eq!(written.file_name().unwrap().len(), 255);
}

/// The sync scenario with its processes running what the H200's torch job ran
/// (tests/fixtures/proc/628), in a Kubernetes pod.
fn observed_with_software() -> Store {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/proc");
    let sw = std::sync::Arc::new(gpuwatch::software::read(
        &gpuwatch::software::ProcRoot::fixture(&root),
        628,
    ));
    let pod = "8c2e4a5d-1b3f-4e6a-9c7d-0e1f2a3b4c5d";
    let cgroup = format!(
        "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice/cri-containerd-{}.scope",
        pod.replace('-', "_"),
        "ab".repeat(32)
    );
    let ctr = std::sync::Arc::new(gpuwatch::container::parse_cgroup(&cgroup).unwrap());
    common::store_with(Scenario::Rule(gpuwatch::rules::RuleId::Sync), 1, 60, |t| {
        for p in &mut t.devices[0].processes {
            let h = p.host.as_mut().unwrap();
            h.software = Some(sw.clone());
            h.container = Some(ctr.clone());
        }
    })
}

#[test]
fn a_snapshot_carries_versions_settings_and_the_pod_and_replays_them() {
    let snap = snapshot::take(&observed_with_software(), &Options::default());
    let json = snapshot::to_json(&snap);
    assert_valid(&json);
    assert!(json.contains("\"2.11.0+cu130\"") && json.contains("CUDA_LAUNCH_BLOCKING"));
    let md = snapshot::to_markdown(&snap);
    assert!(
        md.contains("### What the processes run with")
            && md.contains(
                "torch 2.11.0+cu130 · CUDA runtime 13.0.96 · cuDNN 9.19.0.56 · NCCL 2.28.9"
            )
            && md.contains("`CUDA_LAUNCH_BLOCKING=1`")
            && md.contains(
                "container containerd abababababab, pod 8c2e4a5d-1b3f-4e6a-9c7d-0e1f2a3b4c5d"
            ),
        "{md}"
    );
    // Whoever opens it sees the same: the replayed processes keep what they ran with.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.json");
    std::fs::write(&path, &json).unwrap();
    let mut src = ReplaySource::open(&path, f64::INFINITY).unwrap();
    let ticks = src.read_all().unwrap();
    // One list of processes for the window: on the first tick, the others keep it.
    assert!(ticks[1..].iter().all(|t| t.devices[0].same_processes));
    let h = ticks[0].devices[0].processes[0].host.as_ref().unwrap();
    assert_eq!(
        h.software.as_ref().unwrap().frameworks[0].version,
        "2.11.0+cu130"
    );
    assert_eq!(
        h.container.as_ref().unwrap().pod_uid.as_deref(),
        Some("8c2e4a5d-1b3f-4e6a-9c7d-0e1f2a3b4c5d")
    );

    // --no-host: the libraries' directories (a user's venv) are left out, their names kept.
    let private = Options {
        include_host: false,
        ..Options::default()
    };
    let json = snapshot::to_json(&snapshot::take(&observed_with_software(), &private));
    assert_valid(&json);
    assert!(
        !json.contains("/opt/torch/.venv"),
        "a library's directory leaked"
    );
    assert!(json.contains("\"libnccl.so.2\""));
}

/// GitHub takes attachments up to 25 MB. At 64 GPUs the JSON is ~28 MB: a name gpuwatch
/// chooses becomes `.json.gz`, and `-o FILE.json.gz` compresses too; either replays as it is.
#[test]
fn a_64_gpu_snapshot_fits_an_issue_attachment_and_replays() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .args(["snapshot", "--demo", "--gpus", "64"])
        .current_dir(dir.path())
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(written.len(), 1, "{written:?}");
    let file = &written[0];
    assert!(file.to_string_lossy().ends_with(".json.gz"), "{file:?}");
    let bytes = std::fs::read(file).unwrap();
    assert_eq!(&bytes[..2], &[0x1f, 0x8b], "gzip");
    assert!(bytes.len() < 25_000_000, "{} bytes", bytes.len());
    let (code, json, err) = gpuwatch(&["diagnose", "--replay", file.to_str().unwrap(), "--json"]);
    assert!(code == 1 || code == 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["rule"] == "hang"));

    let named = dir.path().join("mine.json.gz");
    let (code, _, err) = gpuwatch(&["snapshot", "--demo=hang", "-o", named.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(&std::fs::read(&named).unwrap()[..2], &[0x1f, 0x8b]);
}

/// Every property name in `v`, at any depth.
fn keys_of(v: &serde_json::Value, out: &mut std::collections::BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                out.insert(k.clone());
                keys_of(x, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| keys_of(x, out)),
        _ => {}
    }
}

/// Every property name the schema declares, at any depth.
fn declared_properties() -> std::collections::BTreeSet<String> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/snapshot.schema.json"
    ))
    .unwrap();
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut declared = std::collections::BTreeSet::new();
    let mut walk = vec![&schema];
    while let Some(node) = walk.pop() {
        match node {
            serde_json::Value::Object(m) => {
                if let Some(serde_json::Value::Object(props)) = m.get("properties") {
                    declared.extend(props.keys().cloned());
                }
                walk.extend(m.values());
            }
            serde_json::Value::Array(a) => walk.extend(a.iter()),
            _ => {}
        }
    }
    declared
}

/// Snapshots taken along a real H200 run with Python stacks and what its process ran with:
/// the last that has stacks, and the last with a process's host side.
fn along_the_h200_run(
    written: &mut std::collections::BTreeSet<String>,
) -> (snapshot::Snapshot, snapshot::Snapshot) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/h200-health/run23-matmul-spin.jsonl.gz");
    let mut src = ReplaySource::open(&path, f64::INFINITY).unwrap();
    let ticks = src.read_all().unwrap();
    let mut store = Store::new(
        &src,
        std::time::Duration::from_secs(900),
        Thresholds::default(),
    )
    .unwrap();
    let (mut stacked, mut hosted) = (None, None);
    for (i, t) in ticks.iter().enumerate() {
        store.absorb(t, gpuwatch::model::SelfCost::default());
        // Processes come and go: a snapshot every 200 ticks.
        if i % 200 == 199 {
            let snap = snapshot::take(&store, &Options::default());
            keys_of(&serde_json::to_value(&snap).unwrap(), written);
            let procs = || snap.devices.iter().flat_map(|d| &d.processes);
            if procs().any(|p| p.host.is_some()) {
                hosted = Some(snap.clone());
            }
            if !snap.stacks.is_empty() {
                stacked = Some(snap);
            }
        }
    }
    (
        stacked.expect("the recording has stacks"),
        hosted.expect("the recording has processes with their host side"),
    )
}

/// The other direction of `produced_snapshots_validate_against_the_schema` (whose
/// `additionalProperties: false` catches a field the code writes and the schema lacks): every
/// property the hand-kept schema declares is written by some snapshot, so a field renamed or
/// dropped in the code cannot linger in the schema.
#[test]
fn every_property_the_schema_declares_is_written_by_some_snapshot() {
    let mut written = std::collections::BTreeSet::new();
    for (sc, gpus) in [
        (Scenario::Mixed, 8),
        (Scenario::Rule(RuleId::Lost), 2),
        (Scenario::Mig, 2),
        (Scenario::Health, 4),
    ] {
        let snap = snapshot::take(&observed(sc, gpus, 60), &Options::default());
        keys_of(&serde_json::to_value(&snap).unwrap(), &mut written);
    }
    let (mut stacked, mut hosted) = along_the_h200_run(&mut written);
    // What only rarer runs write (a runner-up cause, a container, a failed or crowded stack
    // read), set on real snapshots so the names come from the code's own serialisation.
    let mut finding = snapshot::take(&observed(Scenario::Mixed, 8, 60), &Options::default())
        .findings
        .active
        .swap_remove(0);
    finding.alternative = Some(gpuwatch::rules::RuleId::Sync.to_string());
    stacked.findings.active.push(finding);
    stacked.findings.judging.push(gpuwatch::rules::Judging {
        blind: Some("no power reading".into()),
        ..Default::default()
    });
    let burst = &mut stacked.stacks[0];
    (burst.message, burst.threads_left_out) = (Some("a message".into()), 1);
    burst.threads[0].second = Some((gpuwatch::model::stack::StackClass::HostSync, 1));
    let host = hosted
        .devices
        .iter_mut()
        .flat_map(|d| &mut d.processes)
        .find_map(|p| p.host.as_mut())
        .expect("a process with its host side");
    host.container = gpuwatch::container::parse_cgroup(
        "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1d2e3f40_aaaa_bbbb_cccc_123456789abc.slice/cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope",
    )
    .map(std::sync::Arc::new);
    host.software = Some(std::sync::Arc::new(gpuwatch::software::Software {
        unreadable: Some("permission denied".into()),
        ..gpuwatch::software::Software::default()
    }));
    for snap in [&stacked, &hosted] {
        keys_of(&serde_json::to_value(snap).unwrap(), &mut written);
    }
    let missing: Vec<String> = declared_properties()
        .difference(&written)
        .cloned()
        .collect();
    assert!(
        missing.is_empty(),
        "declared in docs/snapshot.schema.json but written by no snapshot: {missing:?}"
    );
}

/// The enum the schema gives at `pointer` (a JSON pointer into it), as strings.
fn schema_enum(pointer: &str) -> Vec<String> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/snapshot.schema.json"
    ))
    .unwrap();
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
    let values = schema
        .pointer(pointer)
        .unwrap_or_else(|| panic!("{pointer}"));
    let strings = values.as_array().unwrap().iter();
    strings.map(|v| v.as_str().unwrap().to_string()).collect()
}

/// Every value of `every` as serde writes it.
fn written<T: serde::Serialize>(every: &[T]) -> Vec<String> {
    let json = every.iter().map(|v| serde_json::to_value(v).unwrap());
    json.map(|v| v.as_str().unwrap().to_string()).collect()
}

/// The schema's enums are the code's, both ways: a variant added, renamed or dropped in the
/// code fails here, not only when a snapshot the tests take happens to hold it (helper-36).
/// The `match`es are exhaustive: a new variant does not compile until it is listed.
#[test]
fn the_schemas_enums_are_the_codes_variants() {
    use gpuwatch::model::stack::StackClass;
    use gpuwatch::model::stack::StackOutcome::{Failed, Gone, NoPermission, NotPython, Read};
    use gpuwatch::rules::Severity;
    let severities = [Severity::Info, Severity::Warning, Severity::Critical];
    for s in severities {
        match s {
            Severity::Info | Severity::Warning | Severity::Critical => {}
        }
    }
    let outcomes = [Read, NoPermission, NotPython, Gone, Failed];
    for o in outcomes {
        match o {
            Read | NoPermission | NotPython | Gone | Failed => {}
        }
    }
    let policies = [
        CmdlinePolicy::Redacted,
        CmdlinePolicy::Omitted,
        CmdlinePolicy::Raw,
    ];
    for p in policies {
        match p {
            CmdlinePolicy::Redacted | CmdlinePolicy::Omitted | CmdlinePolicy::Raw => {}
        }
    }
    let classes = written(&StackClass::ALL);
    for (pointer, code) in [
        (
            "/$defs/finding/properties/severity/enum",
            written(&severities),
        ),
        (
            "/$defs/stack_burst/properties/outcome/enum",
            written(&outcomes),
        ),
        (
            "/properties/privacy/properties/cmdlines/enum",
            written(&policies),
        ),
        ("/$defs/stack_thread/properties/class/enum", classes.clone()),
        (
            "/$defs/stack_thread/properties/second/prefixItems/0/enum",
            classes,
        ),
    ] {
        let (mut schema, mut code) = (schema_enum(pointer), code);
        schema.sort();
        code.sort();
        assert_eq!(schema, code, "{pointer}: the schema, then the code");
    }
}
