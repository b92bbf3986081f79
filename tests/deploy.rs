//! What operators deploy (docs/deploy/) stays true to the program: the command lines of the
//! systemd unit, the `DaemonSet` and the container image parse with gpuwatch's own CLI, the port
//! is the default one,
//! and every metric the Grafana dashboard queries is one `serve` writes, in `PromQL` that
//! `promtool` accepts.

mod common;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use clap::Parser;
use gpuwatch::cli::Cli;

fn deploy(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("docs/deploy")
            .join(name),
    )
    .unwrap()
}

fn parses(args: &[String], what: &str) {
    let mut argv = vec!["gpuwatch".to_string()];
    argv.extend(args.iter().cloned());
    if let Err(e) = Cli::try_parse_from(&argv) {
        panic!("{what}: {argv:?} does not parse: {e}");
    }
}

#[test]
fn the_unit_and_the_daemonset_run_command_lines_gpuwatch_accepts() {
    let unit = deploy("gpuwatch.service");
    let exec = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("ExecStart");
    let words: Vec<String> = exec.split_whitespace().skip(1).map(String::from).collect();
    parses(&words, "gpuwatch.service");
    let ds = deploy("daemonset.yaml");
    let args = ds
        .lines()
        .find_map(|l| l.trim().strip_prefix("args: "))
        .expect("args");
    let args: Vec<String> = serde_json::from_str(args).unwrap();
    parses(&args, "daemonset.yaml");
    let port = gpuwatch::serve::DEFAULT_LISTEN.rsplit(':').next().unwrap();
    assert!(words.join(" ").contains(&format!(":{port}")));
    assert!(ds.contains(&format!("containerPort: {port}")));
    assert!(
        ds.contains("hostPID: true"),
        "without the host's PIDs no process resolves"
    );
}

#[test]
fn the_image_starts_a_command_gpuwatch_accepts_on_the_port_the_daemonset_scrapes() {
    let file = deploy("Dockerfile");
    let json_of = |key: &str| -> Vec<String> {
        let line = file
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or_else(|| panic!("no {key}in the Dockerfile"));
        serde_json::from_str(line.trim()).unwrap()
    };
    assert_eq!(json_of("ENTRYPOINT "), ["/usr/bin/gpuwatch"]);
    let cmd = json_of("CMD ");
    parses(&cmd, "Dockerfile");
    let port = gpuwatch::serve::DEFAULT_LISTEN.rsplit(':').next().unwrap();
    assert_eq!(cmd.last().unwrap(), &format!("0.0.0.0:{port}"));
    assert!(file.contains(&format!("EXPOSE {port}")));
    // The DaemonSet runs the image the release workflow pushes.
    let ds = deploy("daemonset.yaml");
    let wf = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(".github/workflows/release.yml"),
    )
    .unwrap();
    assert!(ds.contains("image: ghcr.io/gpuwatch/gpuwatch:"));
    assert!(wf.contains("file: docs/deploy/Dockerfile"));
    assert!(wf.contains("/gpuwatch:latest"));
}

/// Every `PromQL` expression of the dashboard, with its variables given values.
fn dashboard_queries() -> Vec<String> {
    let d: serde_json::Value = serde_json::from_str(&deploy("grafana-dashboard.json")).unwrap();
    let mut out = Vec::new();
    for p in d["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().unwrap() {
            out.push(t["expr"].as_str().unwrap().to_string());
        }
    }
    for a in d["annotations"]["list"].as_array().unwrap() {
        out.push(a["expr"].as_str().unwrap().to_string());
    }
    out.into_iter()
        .map(|e| e.replace("$host", ".*").replace("$gpu", ".*"))
        .collect()
}

#[test]
fn every_metric_the_dashboard_reads_is_one_serve_writes() {
    let text = common::mixed_metrics(gpuwatch::serve::Extras {
        processes: 4,
        dcgm: true,
    });
    let written: BTreeSet<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split(['{', ' ']).next())
        .collect();
    let queries = dashboard_queries();
    let mut read = BTreeSet::new();
    for q in &queries {
        let mut rest = q.as_str();
        while let Some(i) = rest.find("gpuwatch_") {
            let name: String = rest[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            rest = &rest[i + name.len()..];
            read.insert(name);
        }
    }
    assert!(read.len() >= 10, "{read:?}");
    let missing: Vec<&String> = read
        .iter()
        .filter(|n| !written.contains(n.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "the dashboard reads metrics serve does not write: {missing:?}"
    );
}

#[test]
#[ignore = "needs Debian's prometheus package (promtool): .ci/run installs it"]
fn the_dashboards_promql_parses() {
    let promtool = common::require("promtool");
    // promtool parses the expressions of a rules file: one recording rule per query.
    let mut rules = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (i, q) in dashboard_queries().iter().enumerate() {
        let expr = serde_json::to_string(q).unwrap();
        writeln!(
            rules,
            "      - record: dashboard:q{i}\n        expr: {expr}"
        )
        .unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dashboard-rules.yml");
    std::fs::write(&path, rules).unwrap();
    let out = Command::new(promtool)
        .args(["check", "rules"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
