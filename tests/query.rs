//! `gpuwatch query`, run as a script would: CSV with a header in nvidia-smi's style, JSON lines
//! that follow docs/query.schema.json with every field the schema names, chosen fields in the
//! order asked, and `--watch` lines that name a finding once it is judged.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn query(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .arg("query")
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

fn schema() -> jsonschema::Validator {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/query.schema.json"
    ))
    .unwrap();
    jsonschema::validator_for(&serde_json::from_str(&text).unwrap()).unwrap()
}

#[test]
fn csv_has_a_header_and_a_row_per_gpu() {
    let (code, out, err) = query(&["--demo"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 9, "{out}");
    assert!(lines[0].starts_with("timestamp, index, name, uuid, pci.bus_id, utilization.gpu"));
    let cols = lines[0].split(", ").count();
    for l in &lines[1..] {
        assert_eq!(l.split(", ").count(), cols, "{l}");
    }
    assert!(
        lines[5].contains(", 4, NVIDIA H200 (simulated), GPU-"),
        "{}",
        lines[5]
    );
    let (_, bare, _) = query(&["--demo", "--no-header", "--fields", "index,power.draw"]);
    assert!(bare.lines().all(|l| l.split(", ").count() == 2), "{bare}");
}

#[test]
fn json_lines_follow_the_schema_with_every_field() {
    let (code, out, err) = query(&["--demo", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let schema = schema();
    let names: Vec<String> = schema_names();
    for line in out.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let errors: Vec<String> = schema.iter_errors(&v).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?} in {line}");
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), names.len(), "every field: {line}");
    }
    let (_, picked, _) = query(&[
        "--demo=hang",
        "--format",
        "json",
        "--fields",
        "power.draw,index",
    ]);
    assert!(
        picked.starts_with("{\"power.draw\":"),
        "in the order asked: {picked}"
    );
}

fn schema_names() -> Vec<String> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/query.schema.json"
    ))
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

#[test]
fn an_unknown_field_or_a_watch_faster_than_sampling_is_refused() {
    let (code, _, err) = query(&["--demo", "--fields", "index,util"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("no field util; the fields are: timestamp,index"),
        "{err}"
    );
    // A near miss is named: the British spelling of nvidia-smi's field.
    let (code, _, err) = query(&["--demo", "--fields", "index,utilisation.gpu"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("no field utilisation.gpu: did you mean utilization.gpu?"),
        "{err}"
    );
    let (code, _, err) = query(&["--demo", "--interval", "1s", "--watch", "250ms"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--watch is shorter than the sampling --interval"),
        "{err}"
    );
}

#[test]
fn watch_prints_until_stopped_and_names_the_finding_once_judged() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .args([
            "query",
            "--demo=hang",
            "--watch",
            "1s",
            "--fields",
            "timestamp,index,findings",
        ])
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    while start.elapsed() < Duration::from_secs(40) {
        let Some(Ok(line)) = lines.next() else { break };
        let hang = line.ends_with(", hang");
        seen.push(line);
        if hang {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(seen.last().unwrap().ends_with(", 0, hang"), "{seen:#?}");
    assert!(seen.len() >= 4, "a line a second until then: {seen:#?}");
    let t: Vec<f64> = seen[1..]
        .iter()
        .map(|l| l.split(", ").next().unwrap().parse().unwrap())
        .collect();
    assert!(
        t.windows(2).all(|w| (w[1] - w[0] - 1.0).abs() < 0.3),
        "{t:?}"
    );
}

/// Where the rows cannot go, `query` says so as the other commands do: a full device is named
/// as standard output, and the null device (or a closed descriptor) gets a note, where it
/// said only "No space left on device (os error 28)" or nothing at all (helper-39).
#[test]
fn rows_that_cannot_be_kept_are_said_so() {
    let run = |stdout: Stdio| {
        let out = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
            .args(["query", "--demo"])
            .env("XDG_CONFIG_HOME", "/nonexistent")
            .stdout(stdout)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.code().unwrap_or(-1), err)
    };
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let (code, err) = run(Stdio::from(full));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("gpuwatch: cannot write to standard output: No space left on device"),
        "{err}"
    );
    let (code, err) = run(Stdio::null());
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("note: standard output is /dev/null"), "{err}");
}
