//! The structure the code describes, checked: every `crate::` import in `src/` points to a
//! lower layer (no cycle, nothing reaching up), and every module has a declared place. The
//! layers, bottom up, are drawn in docs/architecture.md.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Each module ("room") and its layer; a room may import only from lower layers.
const LAYERS: &[(&str, u32)] = &[
    ("sys", 0),
    ("text", 0),
    ("testing", 0),
    ("container", 3),
    ("software", 3),
    ("model", 2),
    ("xid", 2),
    ("energy", 3),
    ("config", 6),
    ("redact", 3),
    ("history", 4),
    ("host", 4),
    ("rules", 5),
    ("stack", 5),
    ("format", 6),
    ("report", 6),
    ("source", 7),
    ("sampler", 8),
    ("store", 9),
    ("pacer", 10),
    ("monitor", 11),
    ("app", 11),
    ("snapshot", 11),
    ("ui", 12),
    ("cli", 13),
    ("command", 13),
    ("serve", 12),
    ("fleet", 12),
    ("tui", 13),
    ("query", 12),
];

fn layer(room: &str) -> Option<u32> {
    LAYERS.iter().find(|(r, _)| *r == room).map(|(_, l)| *l)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") && !p.ends_with("src/build.rs") {
            // The build script (`src/build.rs`) is no module of the crate.
            out.push(p);
        }
    }
}

/// The stages the tree is grouped by: a module's room is its name inside one of them.
const STAGES: [&str; 3] = ["domain", "collect", "front"];

/// The module a file belongs to: `src/domain/rules/hang.rs` → `rules`, `src/front/tui/mod.rs` →
/// `tui`, `src/monitor.rs` → `monitor`; a stage's own `mod.rs` (its module list) → the stage.
fn room_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned());
    let first = parts.next().unwrap();
    let room = if STAGES.contains(&first.as_str()) {
        parts.next().unwrap_or(first)
    } else {
        first
    };
    let room = room.trim_end_matches(".rs").to_string();
    if room == "mod" {
        rel.components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .into_owned()
    } else {
        room
    }
}

/// Every module's stage, as its file's place says, and the stage the layers put it in: the
/// tree tells the story the layers do (nothing of `front` below a `collect` module, …).
#[test]
fn every_module_lives_in_the_stage_its_layer_says() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for (room, layer) in LAYERS {
        let Some(stage) = stage_of(&src, room) else {
            assert_eq!(*room, "monitor", "{room} is in no stage");
            continue;
        };
        let ok = match stage {
            "domain" | "collect" => *layer <= 10,
            _ => *layer >= 11,
        };
        assert!(ok, "{room} (layer {layer}) lives in {stage}/");
    }
}

/// A file's lines before its tests module: the last `#[cfg(test)]` at the top level with a
/// `mod` under it. A test-only item above it (a helper, a `mod` declared for tests) does not
/// end the program's code: the first `#[cfg(test)]` anywhere did, and left ~450 lines of
/// `ui/chart.rs` and five other files unchecked (helper-36).
fn before_tests(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .windows(2)
        .rposition(|w| w[0] == "#[cfg(test)]" && w[1].starts_with("mod "))
        .unwrap_or(lines.len());
    lines[..end].to_vec()
}

/// The `crate::X` rooms a file's code (not its comments, not its tests) uses.
fn imports(text: &str) -> Vec<String> {
    let code = before_tests(text);
    let mut out = Vec::new();
    for line in code {
        let line = line.trim_start();
        if line.starts_with("//") {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.push(name);
            }
        }
        // `use crate::{a, b}` would hide its rooms from the scan above: not allowed.
        assert!(
            !line.contains("crate::{"),
            "import rooms one by one: {line}"
        );
    }
    out
}

#[test]
fn every_import_points_down_and_every_module_has_a_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut edges: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut wrong = Vec::new();
    for f in &files {
        let room = room_of(&src, f);
        if room == "lib" || room == "main" || STAGES.contains(&room.as_str()) {
            continue; // the crate root, the binary and the stages' module lists
        }
        let Some(mine) = layer(&room) else {
            wrong.push(format!(
                "{room}: no layer declared for it in tests/architecture.rs"
            ));
            continue;
        };
        for target in imports(&std::fs::read_to_string(f).unwrap()) {
            if target == room {
                continue;
            }
            let theirs = layer(&target).unwrap_or(u32::MAX);
            if theirs >= mine {
                wrong.push(format!(
                    "{} ({room}, layer {mine}) imports {target} (layer {theirs})",
                    f.strip_prefix(&src).unwrap().display()
                ));
            }
            edges.entry(room.clone()).or_default().push(target);
        }
    }
    assert!(
        wrong.is_empty(),
        "imports that do not point down:\n{}",
        wrong.join("\n")
    );
    // The check is not vacuous: the layers above the bottom really import from below.
    assert!(edges["store"].iter().any(|t| t == "history"));
    assert!(edges["pacer"].iter().any(|t| t == "store"));
    assert!(!edges["source"].iter().any(|t| t == "snapshot"));
}

/// The stage a room's file or directory lives in.
fn stage_of(src: &Path, room: &str) -> Option<&'static str> {
    STAGES.iter().copied().find(|s| {
        let dir = src.join(s);
        dir.join(format!("{room}.rs")).exists() || dir.join(room).is_dir()
    })
}

/// What gpuwatch knows (the model, the history, the rules, the store, file formats) knows
/// nothing of how samples are collected: no file under `domain/` imports a `collect/` room,
/// so the rules judge a replay, a snapshot and a simulated GPU as they judge NVML's. The store
/// is told where samples come from through `model::Describe`, and where the rules' wish for
/// stacks goes through `model::stack::Wants`.
#[test]
fn the_domain_imports_nothing_of_collecting() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src.join("domain"), &mut files);
    let mut wrong = Vec::new();
    let mut seen = 0;
    for f in &files {
        for target in imports(&std::fs::read_to_string(f).unwrap()) {
            seen += 1;
            if stage_of(&src, &target) == Some("collect") {
                let file = f.strip_prefix(&src).unwrap().display().to_string();
                wrong.push(format!("{file} imports {target}"));
            }
        }
    }
    assert!(seen > 100, "only {seen} imports read under domain/");
    assert!(
        wrong.is_empty(),
        "domain/ imports from collect/:\n{}",
        wrong.join("\n")
    );
}

/// The front ends (the screen, the exporter, the headless commands, `query`) reach the
/// pipeline through `monitor` alone: none imports the source, the sampler, the pacer, the
/// store or the config by itself; `monitor` hands out what they are given and read (`Source`,
/// `Config`, `Store`). Wiring the pipeline anew in a front end would need those imports.
#[test]
fn front_ends_reach_the_pipeline_only_through_the_monitor() {
    const PIPELINE: [&str; 5] = ["source", "sampler", "pacer", "store", "config"];
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let front = src.join("front");
    let mut files = Vec::new();
    for dir in ["tui", "serve", "command"] {
        rust_files(&front.join(dir), &mut files);
    }
    files.push(front.join("query.rs"));
    let mut wrong = Vec::new();
    let mut through_monitor = 0;
    for f in &files {
        for target in imports(&std::fs::read_to_string(f).unwrap()) {
            through_monitor += usize::from(target == "monitor");
            if PIPELINE.contains(&target.as_str()) {
                let file = f.strip_prefix(&src).unwrap().display().to_string();
                wrong.push(format!("{file} imports {target}"));
            }
        }
    }
    assert!(files.len() >= 10, "{} front-end files read", files.len());
    assert!(
        through_monitor >= 6,
        "only {through_monitor} imports of monitor"
    );
    assert!(
        wrong.is_empty(),
        "front ends wiring the pipeline themselves:\n{}",
        wrong.join("\n")
    );
}

/// NVML is known in one place: no file outside `collect/source/nvml/` names nvml-wrapper, so a
/// call that blocks or a type that needs the driver cannot leak into a layer that runs
/// without one.
#[test]
fn only_the_nvml_module_names_nvml_wrapper() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let home = src.join("collect").join("source").join("nvml");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let naming: Vec<&PathBuf> = files
        .iter()
        .filter(|f| std::fs::read_to_string(f).unwrap().contains("nvml_wrapper"))
        .collect();
    assert!(
        naming.len() >= 4,
        "the NVML module itself was found: {naming:?}"
    );
    for f in naming {
        assert!(f.starts_with(&home), "{} names nvml_wrapper", f.display());
    }
}

/// The house style's size: no source file over 500 lines before its tests (`#[cfg(test)]`),
/// so that a file stays readable in one sitting. A file that grows past it is split by
/// concept (docs/architecture.md, "File size", says how the earlier ones were).
#[test]
fn no_source_file_is_over_500_lines_before_its_tests() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 50, "{} source files found", files.len());
    let over: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let code = before_tests(&std::fs::read_to_string(f).unwrap()).len();
            (code > 500).then(|| format!("{} ({code})", f.display()))
        })
        .collect();
    assert!(over.is_empty(), "over 500 lines before the tests: {over:?}");
}

/// What follows a test-only helper is the program's code, and is checked; the tests module is
/// not.
#[test]
fn code_after_a_test_only_helper_is_still_checked() {
    let text = "use crate::a;\n#[cfg(test)]\nfn helper() {}\nuse crate::b;\n\
                #[cfg(test)]\nmod tests {\n    use crate::c;\n}\n";
    assert_eq!(imports(text), ["a", "b"]);
}
