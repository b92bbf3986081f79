//! The real binary, run as a user would: exit codes, messages, headless commands.

mod common;

use std::process::Command;

fn gpuwatch(args: &[&str]) -> (i32, String, String) {
    gpuwatch_with(&[], args)
}

#[test]
fn missing_driver_exits_2_with_advice_and_no_panic() {
    let (code, _, err) = gpuwatch(&["devices", "--nvml-lib", "/nonexistent/libnvidia-ml.so.1"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("could not load /nonexistent/libnvidia-ml.so.1")
            && err.contains("gpuwatch devices --demo"),
        "{err}"
    );
    // Each command suggests its own --demo, the monitor the plain one.
    for cmd in ["snapshot", "query", "serve", "diagnose"] {
        let (code, _, err) = gpuwatch(&[cmd, "--nvml-lib", "/nonexistent/libnvidia-ml.so.1"]);
        assert_eq!(code, 2, "{cmd}: {err}");
        assert!(
            err.contains(&format!("`gpuwatch {cmd} --demo`")),
            "{cmd}: {err}"
        );
    }
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{err}"
    );
    assert_eq!(err.matches("could not load").count(), 1, "said once: {err}");
}

#[test]
fn diagnose_exit_codes_follow_the_worst_finding() {
    let (code, out, _) = gpuwatch(&["diagnose", "--demo=hang", "--for", "60s"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("CRITICAL [hang]") && out.contains("evidence: util 100 % throughout"),
        "{out}"
    );
    let (code, out, _) = gpuwatch(&["diagnose", "--demo=healthy", "--for", "60s"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("nothing found"), "{out}");
    let (code, out, _) = gpuwatch(&["diagnose", "--demo=idle-mem", "--for", "150s"]);
    assert_eq!(code, 0, "info findings alone exit 0: {out}");
    assert!(out.contains("INFO [idle-mem]"), "{out}");
}

#[test]
fn diagnose_shorter_than_the_rules_need_says_so_and_exits_3() {
    // A hung demo GPU, watched for 5 s: the hang cannot be judged yet, and "nothing found"
    // would be a lie.
    let (code, out, _) = gpuwatch(&["diagnose", "--demo=hang", "--for", "5s"]);
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("not judged in full: judging: 5 s of the 10 s the rules need"),
        "{out}"
    );
    assert!(
        out.contains("not every GPU could be judged in full"),
        "{out}"
    );
    let (code, out, _) = gpuwatch(&["diagnose", "--demo=hang", "--for", "5s", "--json"]);
    assert_eq!(code, 3);
    let v: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    assert_eq!(v["judging"][0]["needed_ms"], 10_000, "{v}");
}

#[test]
fn diagnose_json_is_machine_readable() {
    let (code, out, _) = gpuwatch(&["diagnose", "--demo=mixed", "--for", "40s", "--json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    assert_eq!(v["worst"], "critical");
    assert_eq!(v["devices"].as_array().unwrap().len(), 8);
    let rules: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert!(
        rules.contains(&"hang") && rules.contains(&"sync") && rules.contains(&"starved"),
        "{rules:?}"
    );
    // The straggler of the hung demo job is named as the culprit, as a field.
    let hang = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "hang" && f["device"] == 4)
        .expect("GPU 4 hangs");
    assert_eq!(hang["culprit"]["device"], 6, "{hang}");
    // Named from the ranks' Python stacks (the demo's processes have them): the one rank not
    // in the collective, and where it is.
    assert_eq!(hang["culprit"]["reason"], "stacks");
    assert!(
        hang["culprit"]["text"]
            .as_str()
            .unwrap()
            .contains("metrics.py:22"),
        "{hang}"
    );
    assert_eq!(
        v["stacks"].as_array().unwrap().len(),
        8,
        "one burst a GPU process"
    );
    // 40 s is not the 120 s the idle notebook of GPU 7 needs: it is being timed, not judged.
    let judging = v["judging"].as_array().unwrap();
    assert_eq!(judging.len(), 1, "{judging:?}");
    assert_eq!(
        (
            judging[0]["device"].as_u64(),
            judging[0]["needed_ms"].as_u64()
        ),
        (Some(7), Some(120_000))
    );
}

#[test]
fn record_then_replay_through_diagnose() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hang.jsonl");
    let f = file.to_str().unwrap();
    let (code, _, err) = gpuwatch(&[
        "record",
        "--demo=hang",
        "-o",
        f,
        "--duration",
        "45s",
        "--fast",
    ]);
    assert_eq!(code, 0, "{err}");
    // The recording spans the 45 s asked for: samples at 0, 0.25, …, 45 s.
    assert!(err.contains("wrote 181 ticks"), "{err}");
    let (code, _, err) = gpuwatch(&["record", "--demo=hang", "-o", f, "--duration", "1s"]);
    assert_eq!(code, 2);
    assert!(err.contains("already exists"), "{err}");
    let (code, out, _) = gpuwatch(&["diagnose", "--replay", f]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("[hang]") && out.contains("replay: "), "{out}");
}

/// `snapshot -o` a device or a pipe writes into it (`-o /dev/stdout` pipes the JSON on); a
/// full device is an error. It once wrote `/dev/full-1` beside it, as if /dev/full were a
/// snapshot not to overwrite.
#[test]
fn a_snapshot_to_a_device_is_written_into_it() {
    let (code, out, err) = gpuwatch(&["snapshot", "--demo", "--for", "3s", "-o", "/dev/stdout"]);
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).expect("the snapshot on stdout");
    assert!(json["devices"].is_array(), "{out}");
    let (code, _, err) = gpuwatch(&["snapshot", "--demo", "--for", "3s", "-o", "/dev/full"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("cannot write /dev/full: No space left"),
        "{err}"
    );
    assert!(!std::path::Path::new("/dev/full-1").exists());
}

/// `gpuwatch --replay FILE` is an easy guess (`diagnose` and `snapshot` take `--replay`): the
/// error says how the monitor plays a recording. `--help` still prints and exits 0.
#[test]
fn the_monitor_given_replay_as_a_flag_is_told_the_command() {
    let (code, _, err) = gpuwatch(&["--replay", "rec.jsonl"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unexpected argument '--replay'"), "{err}");
    assert!(
        err.contains("tip: the monitor plays a recording with `gpuwatch replay FILE`"),
        "{err}"
    );
    let (code, out, _) = gpuwatch(&["--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("Usage: gpuwatch"), "{out}");
    let (code, _, err) = gpuwatch(&["--nonesuch"]);
    assert_eq!(code, 2);
    assert!(!err.contains("tip: the monitor plays"), "{err}");
}

/// An argument clap refuses is said back with its controls written as escapes: clap quoted
/// it as typed, so on a terminal `--interval $'1\e[2J'` cleared the screen, and off one the
/// sequence was dropped from what it said (`'1'`). Exit 2 as before.
#[test]
fn a_refused_argument_is_said_back_with_its_controls_escaped() {
    let (code, _, err) = gpuwatch(&["--interval", "1\u{1b}[2Jx\u{7}"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("invalid value '1\\e[2Jx\\x07' for '--interval"),
        "{err}"
    );
    let (code, _, err) = gpuwatch(&["--bogus\u{1b}]0;x\u{7}"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("unexpected argument '--bogus\\e]0;x\\x07'"),
        "{err}"
    );
    assert!(!err.contains(['\u{1b}', '\u{7}']), "{err:?}");
    // A line break is said as one, so a value cannot add a line of its own to the message; a
    // typed backslash is told from an ESC; `--opt=value` and a `GPUWATCH_*` variable, which
    // clap reads too, are escaped as well (helper-33).
    let (_, _, err) = gpuwatch(&["--interval=1\ngpuwatch: all good"]);
    assert!(
        err.contains("invalid value '1\\ngpuwatch: all good' for"),
        "{err}"
    );
    assert!(!err.contains("\ngpuwatch: all good"), "{err}");
    let (_, _, err) = gpuwatch(&["--interval", "\\e\u{1b}"]);
    assert!(err.contains("invalid value '\\\\e\\e' for"), "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .args(["--demo"])
        .env("GPUWATCH_INTERVAL", "\u{1b}]2;PWNED\u{7}")
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("invalid value '\\e]2;PWNED\\x07' for '--interval <INTERVAL>'")
            && err.contains("(from GPUWATCH_INTERVAL)"),
        "{err}"
    );
    // An argument with none is refused in clap's own words, unchanged.
    let (_, _, err) = gpuwatch(&["--interval", "1x"]);
    assert!(
        err.contains("invalid value '1x' for '--interval <INTERVAL>'"),
        "{err}"
    );
}

/// The default config follows the XDG spec: an empty `XDG_CONFIG_HOME` means unset and a
/// relative one is ignored (both were used as given: the first read `./gpuwatch/config.toml`
/// and left `~/.config`'s thresholds unread). A default location that cannot be read says
/// where it came from and how to choose another.
#[test]
fn the_default_config_is_found_as_the_xdg_spec_says() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let put = |root: &std::path::Path, text: &str| {
        std::fs::create_dir_all(root.join("gpuwatch")).unwrap();
        std::fs::write(root.join("gpuwatch/config.toml"), text).unwrap();
    };
    put(&home.path().join(".config"), "[thresholds]\nnonesuch = 1\n");
    put(&cwd.path().join("rel"), "");
    put(cwd.path(), "");
    let run = |xdg: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
            .args(["diagnose", "--demo=healthy", "--for", "2s"])
            .current_dir(cwd.path())
            .env_remove("GPUWATCH_CONFIG")
            .env("HOME", home.path())
            .env("XDG_CONFIG_HOME", xdg)
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let home_config = home.path().join(".config/gpuwatch/config.toml");
    for xdg in ["", "rel"] {
        let (code, err) = run(xdg);
        assert_eq!(code, Some(2), "XDG_CONFIG_HOME={xdg:?}: {err}");
        assert!(
            err.contains(&format!(
                "config file {} is not valid",
                home_config.display()
            )),
            "XDG_CONFIG_HOME={xdg:?}: {err}"
        );
    }
    // A FIFO there is not read (opening it waited for a writer forever).
    std::fs::remove_file(&home_config).unwrap();
    assert!(Command::new("mkfifo")
        .arg(&home_config)
        .status()
        .unwrap()
        .success());
    let (code, err) = run("");
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("not a regular file. Name one with --config"),
        "{err}"
    );
    std::fs::remove_file(&home_config).unwrap();
    std::fs::create_dir(&home_config).unwrap();
    let (code, err) = run("");
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "cannot read config file {}, where gpuwatch looks by default",
            home_config.display()
        )) && err.contains("Name one with --config FILE or GPUWATCH_CONFIG=FILE"),
        "{err}"
    );
}

/// `from` with each line (0: the header) edited as JSON, written to `to`.
fn edited(
    from: &std::path::Path,
    to: &std::path::Path,
    edit: &dyn Fn(usize, &mut serde_json::Value),
) {
    let text = std::fs::read_to_string(from).unwrap();
    let lines: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            edit(i, &mut v);
            v.to_string()
        })
        .collect();
    std::fs::write(to, lines.join("\n") + "\n").unwrap();
}

/// A tick earlier than the one before it says how to split the file, and what it says works
/// as it is written: the part after the split keeps the header (`tail` alone was refused as
/// "not a gpuwatch recording").
#[test]
fn the_advice_for_ticks_out_of_order_splits_into_two_files_that_open() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("r.jsonl");
    let (code, _, err) = gpuwatch(&[
        "record",
        "--demo",
        "--fast",
        "--duration",
        "3s",
        "-o",
        rec.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    // A name with a space and a `;`: unquoted, the commands split it and ran `x.jsonl`.
    let back = dir.path().join("my back;x.jsonl");
    edited(&rec, &back, &|i, v| {
        if i >= 8 {
            let t = v["t_ms"].as_u64().unwrap() - 100_000;
            v["t_ms"] = t.into();
            for d in v["devices"].as_array_mut().unwrap() {
                d["sample"]["t_ms"] = t.into();
            }
        }
    });
    let (code, _, err) = gpuwatch(&["diagnose", "--replay", back.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("this tick is 100 s earlier"), "{err}");
    // The two commands, between backticks, run in the folder as a user would.
    let commands: Vec<&str> = err.split('`').skip(1).step_by(2).collect();
    assert_eq!(commands.len(), 2, "{err}");
    for c in &commands {
        let ran = Command::new("sh")
            .arg("-c")
            .arg(c)
            .current_dir(&dir)
            .status()
            .unwrap();
        assert!(ran.success(), "{c}");
    }
    assert!(err.contains('\''), "the name is quoted: {err}");
    for part in ["a.jsonl", "b.jsonl"] {
        let path = dir.path().join(part);
        let (code, _, err) = gpuwatch(&["diagnose", "--replay", path.to_str().unwrap()]);
        assert_ne!(code, 2, "{part}: {err}");
    }
}

/// A GPU whose power cannot tell busy from idle (no power reading; no TDP, or a damaged one,
/// and no idle power learned) is "not judged in full", exit 3, with why: a hung GPU read
/// "nothing found", exit 0, once its recording's TDP was null, 0 or -700 W.
#[test]
fn a_gpu_whose_power_cannot_be_judged_is_not_called_fine() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("hang.jsonl");
    let r = rec.to_str().unwrap();
    let (code, _, err) = gpuwatch(&[
        "record",
        "--demo=hang",
        "--gpus",
        "1",
        "--fast",
        "--duration",
        "40s",
        "-o",
        r,
    ]);
    assert_eq!(code, 0, "{err}");
    let write = |name: &str, edit: &dyn Fn(usize, &mut serde_json::Value)| {
        let path = dir.path().join(name);
        edited(&rec, &path, edit);
        path.to_str().unwrap().to_string()
    };
    let (code, out, _) = gpuwatch(&["diagnose", "--replay", r]);
    assert_eq!(code, 1, "the hang itself: {out}");
    for tdp in [serde_json::Value::Null, 0.into(), (-700).into()] {
        let f = write("tdp.jsonl", &|i, v| {
            if i == 0 {
                for key in ["power_limit_default_w", "power_limit_enforced_w"] {
                    v["devices"][0][key] = tdp.clone();
                }
            }
        });
        let (code, out, _) = gpuwatch(&["diagnose", "--replay", &f]);
        assert_eq!(code, 3, "TDP {tdp}: {out}");
        assert!(
            out.contains(
                "the busy-but-idle rules cannot judge it: no TDP reading, and no idle stretch yet"
            ),
            "TDP {tdp}: {out}"
        );
    }
    let f = write("nopower.jsonl", &|i, v| {
        if i > 0 {
            v["devices"][0]["sample"]["power_w"] = serde_json::Value::Null;
        }
    });
    let (code, out, _) = gpuwatch(&["diagnose", "--replay", &f]);
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("cannot judge it: no power reading") && !out.contains("run longer"),
        "{out}"
    );
}

/// A recording whose every tick goes to the null device says so: `record -o - >&-` (Rust
/// opens /dev/null in place of a closed descriptor) once said "wrote 9 ticks to standard
/// output" and exited 0 with nothing kept.
#[test]
fn record_into_the_null_device_or_a_closed_stdout_says_nothing_is_kept() {
    for (out, stdout) in [
        ("-", std::process::Stdio::null()),
        ("/dev/null", std::process::Stdio::piped()),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
            .args(["record", "--demo", "--fast", "--duration", "1s", "-o", out])
            .env("XDG_CONFIG_HOME", "/nonexistent")
            .stdout(stdout)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("nothing recorded is kept"), "{out}: {err}");
        assert!(err.contains("which discards them"), "{out}: {err}");
    }
    let (code, _, err) = gpuwatch(&["record", "--demo", "--fast", "--duration", "1s", "-o", "-"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        !err.contains("kept"),
        "a pipe keeps what it is given: {err}"
    );
    // A snapshot printed into the null device says so too (helper-30).
    let o = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .args(["snapshot", "--demo", "--window", "5s", "-o", "-"])
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .stdout(std::process::Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("the snapshot is not kept"), "{err}");
    let (code, _, err) = gpuwatch(&["snapshot", "--demo", "--window", "5s", "-o", "-"]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("not kept"), "{err}");
}

/// `snapshot -o r.md.gz` is gzipped Markdown (it was gzipped JSON under a Markdown name), and
/// a `--format` the name contradicts is refused before anything is sampled.
#[test]
fn a_snapshot_takes_its_format_from_the_name_under_gz_and_refuses_a_contradiction() {
    let dir = tempfile::tempdir().unwrap();
    let md_gz = dir.path().join("r.md.gz");
    let (code, _, err) = gpuwatch(&[
        "snapshot",
        "--demo",
        "--window",
        "10s",
        "-o",
        md_gz.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(&md_gz).unwrap()),
        &mut text,
    )
    .unwrap();
    assert!(text.starts_with("## gpuwatch snapshot"), "{text}");

    let json_gz = dir.path().join("r.json.gz");
    let started = std::time::Instant::now();
    let (code, _, err) = gpuwatch(&[
        "snapshot",
        "--for",
        "30s",
        "--format",
        "md",
        "-o",
        json_gz.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("names a JSON file") && err.contains("r.md.gz"),
        "{err}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "it sampled first"
    );
    assert!(!json_gz.exists());
}

/// A name with a newline is said quoted on one line ("written to" was split over two), and
/// `-o a.tar.gz` is refused before sampling (it was gzipped JSON that `tar` then refused).
#[test]
fn a_snapshot_name_is_said_on_one_line_and_a_tar_name_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let odd = dir.path().join("a\nb.json");
    let (code, _, err) = gpuwatch(&["snapshot", "--demo", "-o", odd.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("a\\nb.json'\n"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(odd.exists());

    let tar = dir.path().join("a.tar.gz");
    let (code, _, err) = gpuwatch(&["snapshot", "--for", "30s", "-o", tar.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("zstd file: write -o "), "{err}");
    assert!(err.trim_end().ends_with("a.json.gz"), "{err}");
    assert!(!tar.exists());
}

/// `record -o -` writes to standard output, and a name for a stream (a link to a descriptor,
/// as `/dev/stdout` is; a FIFO) is written through, `--force` or not. `-o -` once wrote a
/// file named `-`, and `-o /dev/stdout --force` removed the link and wrote a file in its
/// place: run as root, that deleted `/dev/stdout` for the whole machine.
#[test]
fn record_to_standard_output_or_a_stream_writes_through_it() {
    let dir = tempfile::tempdir().unwrap();
    let run = |out: &str, force: bool| {
        let mut args = vec!["record", "--demo", "--fast", "--duration", "2s", "-o", out];
        if force {
            args.push("--force");
        }
        let o = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
            .args(&args)
            .current_dir(dir.path())
            .env("XDG_CONFIG_HOME", "/nonexistent")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        (
            o.status.code(),
            text,
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let ticks_in = |text: &str| {
        let mut lines = text.lines();
        assert!(
            lines
                .next()
                .is_some_and(|h| h.contains("\"gpuwatch-recording\"")),
            "{text}"
        );
        lines.count()
    };
    let (code, out, err) = run("-", false);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(ticks_in(&out), 9, "{err}");
    assert!(err.contains("wrote 9 ticks to standard output"), "{err}");
    assert!(!dir.path().join("-").exists(), "a file named - was written");

    let link = dir.path().join("stdout");
    std::os::unix::fs::symlink("/proc/self/fd/1", &link).unwrap();
    for force in [false, true] {
        let (code, out, err) = run("stdout", force);
        assert_eq!(code, Some(0), "{err}");
        assert_eq!(ticks_in(&out), 9, "force {force}: {err}");
        let meta = std::fs::symlink_metadata(&link).unwrap();
        assert!(
            meta.file_type().is_symlink(),
            "force {force}: the link was replaced"
        );
    }

    let fifo = dir.path().join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let (code, _, err) = run("fifo", false);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(ticks_in(&reader.join().unwrap()), 9, "{err}");
}

/// `record -o` at a folder, or where nothing can be created, says what to do: not "already
/// exists" (then "Is a directory" with --force), not a bare "No such file or directory".
#[test]
fn record_into_a_folder_or_an_unwritable_place_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    for force in [&[][..], &["--force"][..]] {
        let args = [
            &["record", "--demo", "-o", d, "--duration", "1s"][..],
            force,
        ]
        .concat();
        let (code, _, err) = gpuwatch(&args);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains(&format!("{d} is a folder; name a file in it with -o")),
            "{err}"
        );
    }
    let (code, _, err) = gpuwatch(&[
        "record",
        "--demo",
        "-o",
        "/nonexistent-dir/x.jsonl",
        "--duration",
        "1s",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("cannot create /nonexistent-dir/x.jsonl")
            && err.contains("; choose a writable place with -o"),
        "{err}"
    );
}

/// A recording whose last line is torn (the recorder killed mid-write) is judged up to it,
/// and the report says it is cut short: "record longer" would send the user the wrong way.
#[test]
fn a_recording_cut_mid_write_is_judged_and_said_cut_short() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cut.jsonl");
    let f = file.to_str().unwrap();
    assert_eq!(
        gpuwatch(&["record", "--demo=healthy", "-o", f, "--duration", "3s"]).0,
        0
    );
    let text = std::fs::read_to_string(&file).unwrap();
    let lines = text.lines().count();
    std::fs::write(&file, &text[..text.len() - 30]).unwrap();
    let (code, out, err) = gpuwatch(&["diagnose", "--replay", f]);
    assert_eq!(code, 3, "not judged in full, no error: {out}{err}");
    assert!(
        out.lines().nth(1).unwrap().starts_with(&format!(
            "note: the recording is cut short: line {lines} torn mid-write"
        )),
        "{out}"
    );
    assert!(
        out.contains("the recording is cut short (see the note above)"),
        "{out}"
    );
    assert!(!out.contains("record longer"), "{out}");
    let (_, json, _) = gpuwatch(&["diagnose", "--replay", f, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(
        v["cut"]
            .as_str()
            .unwrap()
            .starts_with(&format!("line {lines} torn")),
        "{json}"
    );
    // Torn in its first tick, or only a header: nothing to judge is an error, not "nothing
    // found" with exit 0.
    let header = text.lines().next().unwrap().len() + 1;
    for (keep, why) in [(header, ""), (header + 300, ": line 2 torn mid-write")] {
        std::fs::write(&file, &text[..keep]).unwrap();
        let (code, out, err) = gpuwatch(&["diagnose", "--replay", f]);
        assert_eq!(code, 2, "{out}");
        assert!(
            err.contains(&format!("nothing to judge: {f} holds no whole tick{why}")),
            "{err}"
        );
    }
    // A whole recording has no `cut` and says to record longer.
    std::fs::write(&file, &text).unwrap();
    let (_, json, _) = gpuwatch(&["diagnose", "--replay", f, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(v.get("cut").is_none(), "{json}");
    let (_, out, _) = gpuwatch(&["diagnose", "--replay", f]);
    assert!(out.contains("record longer"), "{out}");
}

/// A fleet's hang names its 64 waiting ranks as runs, not one by one (ten wrapped rows in the
/// findings pane until 2026-12-05), on the real binary; every GPU's stacks are read (GPUs
/// 50-63's never were: their reads fell due past the simulator's period).
#[test]
fn a_fleets_waiting_ranks_are_named_as_runs() {
    let (code, out, err) = gpuwatch(&[
        "diagnose",
        "--demo",
        "fleet:1/4",
        "--gpus",
        "64",
        "--for",
        "60s",
    ]);
    assert_eq!(code, 1, "{err}");
    let line = out
        .lines()
        .find(|l| l.contains("where the ranks are"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.contains("ranks 64-127 (64 processes, pids 11000 … 11630, GPUs 0-63)"),
        "{line}"
    );
    assert!(line.chars().count() < 250, "{line}");
}

#[test]
fn corrupt_recording_is_an_error_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.jsonl");
    let f = file.to_str().unwrap();
    assert_eq!(
        gpuwatch(&["record", "--demo=healthy", "-o", f, "--duration", "2s"]).0,
        0
    );
    let text = std::fs::read_to_string(&file).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[2] = "{oops";
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let (code, out, err) = gpuwatch(&["diagnose", "--replay", f]);
    assert_eq!(code, 2);
    assert!(
        err.contains(&format!(
            "the findings above judge the 1 tick before it: {f}:3: corrupt tick"
        )),
        "{err}"
    );
    // What came before the corrupt line is judged and reported, not lost.
    assert!(
        out.starts_with("gpuwatch diagnose: 1 GPU(s), 0 s, 1 tick, from replay: "),
        "{out}"
    );
    // A script reading the JSON is told too, in it.
    let (code, json, _) = gpuwatch(&["diagnose", "--replay", f, "--json"]);
    assert_eq!(code, 2);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let stopped = v["stopped"].as_str().unwrap_or_else(|| panic!("{json}"));
    assert!(
        stopped.contains(&format!("{f}:3: corrupt tick"))
            && stopped.ends_with("delete line 3 to read past it"),
        "{stopped}"
    );
    let (_, whole, _) = gpuwatch(&["diagnose", "--demo=healthy", "--for", "2s", "--json"]);
    assert!(!whole.contains("\"stopped\""), "{whole}");
    let (code, _, err) = gpuwatch(&["diagnose", "--replay", "/nonexistent/rec.jsonl"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("cannot open recording /nonexistent/rec.jsonl"),
        "{err}"
    );
}

#[test]
fn bad_flags_are_refused_with_the_reason() {
    let (code, _, err) = gpuwatch(&["--demo", "--interval", "10ms"]);
    assert_eq!(code, 2);
    assert!(err.contains("outside 50ms to 10s"), "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .args(["diagnose", "--demo", "--for", "1s"])
        .env("GPUWATCH_INTERVAL", "abc")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        err.contains("'abc' is not a duration") && err.contains("(from GPUWATCH_INTERVAL)"),
        "{err}"
    );
    let (code, _, err) = gpuwatch(&["--demo=volcano"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("invalid value 'volcano' for '--demo")
            && err.contains("possible values: healthy"),
        "{err}"
    );
    let (_, _, err) = gpuwatch(&["--demo=hnag"]);
    assert!(err.contains("a similar value exists: 'hang'"), "{err}");
    // The completion scripts offer the scenarios.
    let (_, bash, _) = gpuwatch(&["completions", "bash"]);
    assert!(
        bash.contains("straggler"),
        "bash completion lacks the scenarios"
    );
}

#[test]
fn devices_lists_simulated_gpus_as_json() {
    let (code, out, _) = gpuwatch(&["devices", "--demo=healthy", "--gpus", "2", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["devices"][1]["power_limit_default_w"], 700.0);
    assert_eq!(v["system"]["host"], "demo");
}

#[test]
fn invalid_config_file_is_reported_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("gpuwatch.toml");
    std::fs::write(&cfg, "[thresholds]\nhang_window = \"soon\"\n").unwrap();
    let (code, _, err) = gpuwatch(&["diagnose", "--demo=hang", "--config", cfg.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("gpuwatch.toml") && err.contains("hang_window"),
        "{err}"
    );
}

#[test]
fn history_too_large_for_memory_is_refused_with_the_figure() {
    let (code, _, err) = gpuwatch(&[
        "diagnose",
        "--demo=mixed",
        "--gpus",
        "64",
        "--interval",
        "50ms",
        "--for",
        "30d",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("would take")
            && err.contains("GiB")
            && err.contains("keep less (--history; --for for diagnose, --window for snapshot)"),
        "{err}"
    );
}

#[test]
fn an_empty_gpuwatch_config_means_the_default_and_bad_speeds_are_refused() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .args(["diagnose", "--demo=healthy", "--for", "12s"])
        .env("GPUWATCH_CONFIG", "")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for speed in ["1e-30", "nan", "inf", "-1"] {
        let arg = format!("--speed={speed}");
        let (code, _, err) = gpuwatch(&["replay", "x.jsonl", &arg]);
        assert_eq!(code, 2, "--speed {speed}: {err}");
        assert!(err.contains("--speed"), "{err}");
    }
}

#[test]
fn names_from_a_recording_never_reach_the_terminal_as_escape_sequences() {
    use gpuwatch::format::record::{Header, Recorder};
    use gpuwatch::source::sim::{Scenario, SimSource};
    use gpuwatch::source::Source;
    // A recording someone sent: an OSC 52 clipboard write in the GPU's name, a screen clear
    // in the process's, on a GPU that hangs so both are printed.
    let mut src = SimSource::new(Scenario::HANG, 1, 7, 1_800_000_000_000, 250);
    let mut infos = src.devices().to_vec();
    infos[0].name = "H200\u{1b}]52;c;ZXZpbA==\u{7}".into();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hostile.jsonl");
    let header = Header::new(src.system(), &infos, 250);
    let mut rec = Recorder::create(&path, &header, false).unwrap();
    let mut tick = gpuwatch::model::Tick::default();
    for _ in 0..200 {
        src.sample(&mut tick).unwrap();
        tick.devices[0].processes[0].host.as_mut().unwrap().name = "py\u{1b}[2J\u{9b}31m".into();
        rec.write(&tick).unwrap();
    }
    drop(rec);
    let f = path.to_str().unwrap();
    let (code, out, _) = gpuwatch(&["diagnose", "--replay", f]);
    assert_eq!(code, 1, "{out}");
    let (_, md, _) = gpuwatch(&["snapshot", "--replay", f, "--format", "md", "-o", "-"]);
    // Markdown escapes the bracket too (a name cannot open a link there).
    for (text, name) in [
        (&out, "H200\u{FFFD}]52;c;ZXZpbA==\u{FFFD}"),
        (&md, "H200\u{FFFD}\\]52;c;ZXZpbA==\u{FFFD}"),
    ] {
        assert!(!text.contains('\u{1b}') && !text.contains('\u{9b}') && !text.contains('\u{7}'));
        assert!(text.contains(name), "{text}");
    }
}

#[test]
fn a_recording_can_come_from_standard_input() {
    use std::io::Write as _;
    let rec = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/h200/variants/spin.jsonl.gz"
    );
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .args(["diagnose", "--replay", "-"])
        .env_remove("GPUWATCH_CONFIG")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&std::fs::read(rec).unwrap())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("[hang]"), "{text}");
}

#[test]
fn recording_a_demo_runs_in_real_time_unless_asked_to_go_fast() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("demo.jsonl");
    let f = f.to_str().unwrap();
    let started = std::time::Instant::now();
    let (code, _, err) = gpuwatch(&["record", "--demo=healthy", "-o", f, "--duration", "2s"]);
    assert_eq!(code, 0, "{err}");
    assert!(started.elapsed() >= std::time::Duration::from_millis(1_700));
    let lines = std::fs::read_to_string(f).unwrap().lines().count();
    assert!(
        (8..=10).contains(&lines),
        "header + about 8 ticks of 250 ms, got {lines} lines"
    );
    let (code, _, err) = gpuwatch(&["record", "--demo=healthy", "-o", f, "--force", "--fast"]);
    assert_eq!(
        code, 2,
        "--fast without --duration would fill the disk: {err}"
    );
}

#[test]
fn the_monitor_refuses_to_draw_into_a_file() {
    // `gpuwatch --demo > out.txt` drew nothing and filled the file with escape codes.
    let (code, out, err) = gpuwatch(&["--demo"]);
    assert_eq!(code, 2);
    assert!(out.is_empty(), "nothing written to the redirected output");
    assert!(
        err.contains("standard output is not") && err.contains("gpuwatch record"),
        "{err}"
    );
}

#[test]
fn a_missing_recording_is_said_before_the_missing_terminal() {
    // `gpuwatch replay typo.jsonl | less` spoke of the terminal; the file was the problem.
    let (code, _, err) = gpuwatch(&["replay", "/nonexistent/rec.jsonl"]);
    assert_eq!(code, 2);
    assert!(err.contains("/nonexistent/rec.jsonl"), "{err}");
    assert!(!err.contains("standard output is not"), "{err}");
}

#[test]
fn no_header_with_json_lines_is_a_usage_error() {
    let (code, out, err) = gpuwatch(&["query", "--demo", "--format", "json", "--no-header"]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty());
    assert!(err.contains("--no-header is for --format csv"), "{err}");
    // The usage line is query's own, not the monitor's (helper-39).
    assert!(err.contains("Usage: gpuwatch query [OPTIONS]"), "{err}");
}

/// Loads `gpuwatch completions SH` into that shell and returns what it offers after
/// `gpuwatch WORDS<TAB>` (zsh: that the script defines its completion function).
fn completion_offer(sh: &str, words: &str) -> String {
    let shell = common::require(sh);
    let dir = tempfile::tempdir().unwrap();
    let (code, script, err) = gpuwatch(&["completions", sh]);
    assert_eq!(code, 0, "{err}");
    let file = dir.path().join(format!("gpuwatch.{sh}"));
    std::fs::write(&file, &script).unwrap();
    let f = file.display();
    let script = match sh {
        "bash" => {
            let line = format!("gpuwatch {words}");
            let (n, point) = (words.split(' ').count(), line.len());
            let (last, before) = (
                words.rsplit(' ').next().unwrap_or_default(),
                line.rsplit(' ').nth(1).unwrap_or_default(),
            );
            format!("source {f}; COMP_WORDS=({line}); COMP_CWORD={n}; COMP_LINE='{line}'; COMP_POINT={point}; _gpuwatch gpuwatch {last} {before}; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
        }
        "zsh" => format!("autoload -U compinit; compinit -u -D; source {f}; whence -w _gpuwatch"),
        "fish" => format!("source {f}; complete -C 'gpuwatch {words}'"),
        _ => unreachable!(),
    };
    let out = Command::new(shell).args(["-c", &script]).output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{sh}: {text}");
    text
}

#[test]
fn bash_loads_its_completion_script_and_completes_the_commands() {
    let out = completion_offer("bash", "se");
    assert!(out.contains("serve"), "bash offers no `serve`: {out}");
    // `query --fields` offers the field names.
    let out = completion_offer("bash", "query --fields util");
    assert!(out.contains("utilization.gpu"), "{out}");
    assert!(!out.contains("timestamp"), "{out}");
}

/// A list's later items are completed too, the items before them kept; a value that is no
/// path is not completed with file names (the tests run in the crate's root: `Cargo.toml`).
#[test]
fn bash_completes_a_lists_last_item_and_no_file_names_for_a_number() {
    let out = completion_offer("bash", "query --fields utilization.gpu,mem");
    assert!(out.contains("utilization.gpu,memory.used"), "{out}");
    assert!(!out.contains("\nmemory.used"), "{out}");
    for words in [
        "--interval C",
        "--demo --gpus C",
        "diagnose --for C",
        "--seed C",
    ] {
        let out = completion_offer("bash", words);
        assert!(!out.contains("Cargo.toml"), "{words}: {out}");
    }
    let out = completion_offer("bash", "--config Car");
    assert!(
        out.contains("Cargo.toml"),
        "a path is still completed: {out}"
    );
    // `--opt=value`: bash splits the word at `=`. A value is left as it is (one candidate,
    // itself) rather than no candidate, on which the script's `-o default` offered file names
    // (helper-32); this harness calls the function alone, so it checks the candidate.
    for words in [
        "--interval = C",
        "query --fields = C",
        "--color C",
        "--color = C",
    ] {
        let out = completion_offer("bash", words);
        assert_eq!(out.lines().next(), Some("C"), "{words}: {out}");
    }
    let out = completion_offer("bash", "query --fields = utilization.gpu,mem");
    assert!(out.contains("utilization.gpu,memory.used"), "{out}");
    let out = completion_offer("bash", "--color = al");
    assert_eq!(out.trim(), "always", "{out}");
}

#[test]
#[ignore = "needs zsh: .ci/run installs it"]
fn zsh_loads_its_completion_script() {
    let out = completion_offer("zsh", "se");
    assert!(out.contains("_gpuwatch: function"), "{out}");
}

#[test]
#[ignore = "needs fish: .ci/run installs it"]
fn fish_loads_its_completion_script_and_completes_the_commands() {
    let out = completion_offer("fish", "se");
    assert!(out.contains("serve"), "fish offers no `serve`: {out}");
    let out = completion_offer("fish", "query --fields util");
    assert!(out.contains("utilization.gpu"), "{out}");
    let out = completion_offer("fish", "query --fields utilization.gpu,mem");
    assert!(out.contains("utilization.gpu,memory.used"), "{out}");
    // A top-level option's value: fish's generated check failed there and offered files.
    for words in ["--interval C", "--gpus C", "diagnose --for C"] {
        let out = completion_offer("fish", words);
        assert!(!out.contains("Cargo.toml"), "{words}: {out}");
    }
    let out = completion_offer("fish", "--config Car");
    assert!(
        out.contains("Cargo.toml"),
        "a path is still completed: {out}"
    );
}

/// The page itself, without `man`: a section per command, the environment, the exit statuses
/// and the keys (rendered, and checked again, by the ignored tests below).
#[test]
fn the_manual_has_a_section_for_every_command_the_environment_and_exit_statuses() {
    let (code, page, err) = gpuwatch(&["man"]);
    assert_eq!(code, 0, "{err}");
    for heading in [
        ".SH NAME",
        ".SH SYNOPSIS",
        ".SH KEYS",
        ".SH \"GPUWATCH SERVE\"",
        ".SH \"GPUWATCH DIAGNOSE\"",
        ".SH \"GPUWATCH REPLAY\"",
        ".SH ENVIRONMENT",
        ".SH \"EXIT STATUS\"",
    ] {
        assert!(page.lines().any(|l| l == heading), "no {heading}:\n{page}");
    }
    assert!(page.contains("GPUWATCH_SNAPSHOT_DIR"));
}

#[test]
#[ignore = "needs man (man-db, groff-base): .ci/run installs it"]
fn the_manual_renders_with_every_command_the_environment_and_exit_statuses() {
    let man = common::require("man");
    let (code, page, err) = gpuwatch(&["man"]);
    assert_eq!(code, 0, "{err}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gpuwatch.1");
    std::fs::write(&file, page).unwrap();
    let out = Command::new(man)
        .arg("-l")
        .arg(&file)
        .env("MANWIDTH", "80")
        .env("MANPAGER", "cat")
        .env("MAN_KEEP_FORMATTING", "")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let warnings = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && warnings.trim().is_empty(),
        "{warnings}"
    );
    for heading in [
        "NAME",
        "SYNOPSIS",
        "GPUWATCH SERVE",
        "GPUWATCH DIAGNOSE",
        "GPUWATCH REPLAY",
        "ENVIRONMENT",
        "EXIT STATUS",
    ] {
        assert!(text.contains(heading), "no {heading}:\n{text}");
    }
    assert!(text.contains("--dcgm-compat") && text.contains("GPUWATCH_SNAPSHOT_DIR"));
    // The monitor's keys, from the table the ? overlay draws (ASCII ones: arrows render as
    // ^ v in a C locale).
    assert!(text.contains("KEYS"), "no KEYS section:\n{text}");
    for keys in gpuwatch::ui::help_keys().filter(|k| k.is_ascii()) {
        assert!(text.contains(keys), "the manual has no {keys:?}:\n{text}");
    }
}

#[test]
#[ignore = "needs man (man-db, groff-base): .ci/run installs it"]
fn the_manual_renders_without_warnings_in_a_c_locale() {
    let man = common::require("man");
    let (_, page, _) = gpuwatch(&["man"]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gpuwatch.1");
    std::fs::write(&file, page).unwrap();
    let out = Command::new(man)
        .arg("-l")
        .arg(&file)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("LC_ALL", "C")
        .env("MANPAGER", "cat")
        .output()
        .unwrap();
    let warnings = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && warnings.trim().is_empty(),
        "{warnings}"
    );
}

#[test]
fn gpus_are_chosen_by_index_uuid_bus_id_or_cuda_visible_devices_and_keep_their_numbers() {
    let listed = |args: &[&str], cuda: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_gpuwatch"));
        c.args(["devices", "--demo"]).args(args);
        match cuda {
            Some(v) => c.env("CUDA_VISIBLE_DEVICES", v),
            None => c.env_remove("CUDA_VISIBLE_DEVICES"),
        };
        let out = c.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let gpus: Vec<String> = text
            .lines()
            .filter_map(|l| l.strip_prefix("GPU "))
            .map(|l| l.split(' ').next().unwrap().to_string())
            .collect();
        (
            out.status.code(),
            gpus,
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    assert_eq!(listed(&["-i", "5,2"], None).1, ["2", "5"]);
    assert_eq!(
        listed(&["--id", "GPU-5a1d0007-0000-4000-8000-000000000007"], None).1,
        ["7"]
    );
    // The short form README shows: the first eight digits.
    assert_eq!(listed(&["-i", "GPU-5a1d0003"], None).1, ["3"]);
    assert_eq!(listed(&["-i", "0000:28:00.0"], None).1, ["1"]);
    assert_eq!(listed(&["--cuda-visible"], Some("6,1")).1, ["1", "6"]);
    assert_eq!(listed(&["--cuda-visible"], None).1.len(), 8, "unset: all");
    let (code, _, err) = listed(&["-i", "9"], None);
    assert_eq!(code, Some(2));
    assert!(err.contains("-i names 9, which is no GPU here"), "{err}");
    let (code, _, err) = listed(&["--cuda-visible"], Some("-1"));
    assert_eq!(code, Some(2));
    assert!(err.contains("names no GPU"), "{err}");
    // The monitor's findings on a chosen GPU keep its number.
    let (code, out, _) = gpuwatch(&["diagnose", "--demo", "-i", "4", "--for", "40s", "--json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["rule"] == "hang" && f["device"] == 4),
        "{out}"
    );
}

#[test]
fn an_error_says_its_cause_once() {
    for args in [
        &["diagnose", "--replay", "/nonexistent.jsonl"][..],
        &[
            "record",
            "-o",
            "/nonexistent/dir/x.jsonl",
            "--demo",
            "--duration",
            "1s",
            "--fast",
        ],
        &[
            "diagnose",
            "--demo",
            "--for",
            "1s",
            "--config",
            "/nonexistent.toml",
        ],
    ] {
        let (code, _, err) = gpuwatch(args);
        assert_eq!(code, 2, "{args:?}");
        assert_eq!(err.matches("(os error 2)").count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn diagnose_json_gives_each_findings_figures_as_numbers() {
    let (code, out, err) = gpuwatch(&["diagnose", "--demo=hang", "--for", "40s", "--json"]);
    assert_eq!(code, 1, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let hang = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "hang")
        .expect("the hang demo is hung");
    let measure = |name: &str| {
        hang["measures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .map(|m| {
                (
                    m["value"].as_f64().unwrap(),
                    m["unit"].as_str().unwrap().to_string(),
                )
            })
    };
    let (util, unit) = measure("utilization.gpu").unwrap();
    assert!(util >= 95.0 && unit == "%", "{util} {unit}");
    let (power, _) = measure("power.draw").unwrap();
    let (floor, _) = measure("power.idle_floor").unwrap();
    assert!(
        power < floor + 30.0,
        "a hung GPU draws near its floor: {power} W vs {floor} W"
    );
    let (sm, _) = measure("gpm.sm_active").unwrap();
    assert!(sm < 5.0, "{sm}");
    assert!(measure("window").unwrap().0 > 0.0);
}

/// `serve --listen :PORT` listens on every address, as `node_exporter`'s `:9100` does (it was
/// refused: "failed to lookup address information"). A method it does not take is answered
/// 405 with the `Allow` header RFC 9110 asks for.
#[test]
fn serve_listens_on_every_address_for_a_bare_port() {
    use std::io::{BufRead, Read, Write};
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .args(["serve", "--demo", "--listen", ":0"])
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    // IPv6 and IPv4 where the host has IPv6 (reached below over IPv4), else IPv4.
    let port = [
        "gpuwatch serve: http://[::]:",
        "gpuwatch serve: http://0.0.0.0:",
    ]
    .iter()
    .find_map(|every| line.strip_prefix(every))
    .and_then(|r| r.split('/').next())
    .map(str::to_string);
    let answer = port.as_ref().map(|port| {
        let mut c = std::net::TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
        c.write_all(
            b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        )
        .unwrap();
        let mut text = String::new();
        c.read_to_string(&mut text).unwrap();
        text.to_ascii_lowercase()
    });
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(port.is_some() && line.contains(" connections"), "{line}");
    let answer = answer.unwrap();
    assert!(
        answer.starts_with("http/1.1 405") && answer.contains("\r\nallow: get, head\r\n"),
        "{answer}"
    );
}

#[test]
fn every_commands_help_says_its_exit_statuses() {
    for sub in [
        "replay",
        "record",
        "devices",
        "snapshot",
        "serve",
        "diagnose",
        "query",
        "stacks",
        "completions",
    ] {
        let (code, out, err) = gpuwatch(&[sub, "--help"]);
        assert_eq!(code, 0, "{sub}: {err}");
        assert!(out.contains("Exit status: 0 "), "{sub}:\n{out}");
    }
    let (_, out, _) = gpuwatch(&["diagnose", "--help"]);
    assert!(
        out.contains("3 nothing found, but some GPU could not be judged"),
        "{out}"
    );
}

#[test]
fn a_reader_that_stops_early_ends_gpuwatch_quietly_and_env_flags_take_1() {
    use std::io::BufRead as _;
    use std::os::unix::process::ExitStatusExt as _;
    for args in [
        &["query", "--demo", "--watch", "1s"][..],
        &["completions", "bash"],
        &["devices", "--demo"],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        // The reader is gone (as `| head -1` would be): the next write meets a closed pipe.
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() || out.status.signal() == Some(13),
            "{args:?}: {:?} {err}",
            out.status
        );
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "{args:?}: {err}"
        );
    }
    let out = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .args(["--demo", "--help"])
        .env("GPUWATCH_NO_MOUSE", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The demo's processes carry secrets on their command lines; like /proc's, they are redacted
/// as they are read, so the demo's screen and recordings hold none, and `--no-redact` keeps them.
#[test]
fn demo_command_lines_are_redacted_as_they_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let read = |extra: &[&str], name: &str| {
        let file = dir.path().join(name);
        let f = file.to_str().unwrap();
        let mut args = vec![
            "record",
            "--demo=mixed",
            "-o",
            f,
            "--duration",
            "2s",
            "--fast",
        ];
        args.extend_from_slice(extra);
        let (code, _, err) = gpuwatch(&args);
        assert_eq!(code, 0, "{err}");
        std::fs::read_to_string(&file).unwrap()
    };
    let redacted = read(&[], "redacted.jsonl");
    assert!(
        !redacted.contains("sk-demo-123") && !redacted.contains("s3cr3t"),
        "a secret reached the recording"
    );
    assert!(redacted.contains("--api-key=***") && redacted.contains("--token=***"));
    let kept = read(&["--no-redact"], "kept.jsonl");
    assert!(kept.contains("--api-key=sk-demo-123") && kept.contains("--token=s3cr3t"));
}

/// A recording shorter than the rules' windows is "not judged in full" (exit 3), and the advice
/// is a longer recording: `--for` is refused with `--replay`.
#[test]
fn a_short_recording_asks_for_a_longer_recording_not_for() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("short.jsonl");
    let f = file.to_str().unwrap();
    let (code, _, err) = gpuwatch(&[
        "record",
        "--demo=healthy",
        "-o",
        f,
        "--duration",
        "4s",
        "--fast",
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, out, _) = gpuwatch(&["diagnose", "--replay", f]);
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("not judged in full") && out.contains("record longer"),
        "{out}"
    );
    assert!(!out.contains("--for"), "{out}");
    let (code, out, _) = gpuwatch(&["diagnose", "--demo=healthy", "--for", "4s"]);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("run longer (`--for`)"), "{out}");
}

/// A finding still open at the end of a run but whose symptom ended says so: the held-out
/// recording ends after its hang stopped, and the monitor shows "HANG ended" there.
/// `diagnose` said "since 06:12:10 UTC", as if it still held.
#[test]
fn diagnose_says_when_an_open_findings_symptom_ended() {
    let (code, out, _) = gpuwatch(&["diagnose", "--replay", "tests/corpus/holdout3.jsonl.gz"]);
    assert_eq!(code, 1, "{out}");
    let hang = out.lines().find(|l| l.contains("[hang]")).expect("a hang");
    assert!(
        hang.contains("(since 06:12:10 UTC; ended: not seen since 06:12:40 UTC)"),
        "{hang}"
    );
    let starved = out
        .lines()
        .find(|l| l.contains("[starved]"))
        .expect("starved");
    assert!(
        starved.contains("(from 06:10:00 to 06:10:40 UTC)"),
        "{starved}"
    );
    // Scripts read the same: the open hang's symptom ended, the cleared finding carries no flag.
    let (_, json, _) = gpuwatch(&[
        "diagnose",
        "--replay",
        "tests/corpus/holdout3.jsonl.gz",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    let flag = |rule: &str| {
        let f = v["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .find(|f| f["rule"] == rule)
            .unwrap_or_else(|| panic!("{rule} in {json}"));
        f.get("symptom_ended").cloned()
    };
    assert_eq!(flag("hang"), Some(serde_json::Value::Bool(true)));
    assert_eq!(flag("starved"), None);
}

/// `record -o FILE.jsonl.gz` writes gzip (it wrote plain text under a .gz name until
/// 2026-12-05), which `replay` and `diagnose` read whole; each tick ends in a sync flush, so a
/// copy cut short reads up to its last whole tick and says it was cut.
#[test]
fn a_recording_named_gz_is_gzip_and_reads_back_whole_or_cut() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rec.jsonl.gz");
    let f = file.to_str().unwrap();
    let (code, _, err) = gpuwatch(&[
        "record",
        "--demo=healthy",
        "-o",
        f,
        "--duration",
        "20s",
        "--fast",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("wrote 81 ticks"), "{err}");
    let bytes = std::fs::read(&file).unwrap();
    assert_eq!(&bytes[..2], &[0x1f, 0x8b], "gzip's magic");
    let (_, json, _) = gpuwatch(&["diagnose", "--replay", f, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["samples"], 81, "{json}");
    assert!(v.get("cut").is_none(), "{json}");
    // Cut at two thirds: the ticks before the cut, and a note that it is cut.
    std::fs::write(&file, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let (_, json, _) = gpuwatch(&["diagnose", "--replay", f, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let read = v["samples"].as_u64().unwrap();
    assert!((40..81).contains(&read), "{json}");
    // Cut inside a tick, or (as often with a tick's flush a few dozen bytes) in a flush's last
    // bytes, after a whole one.
    let cut = v["cut"].as_str().unwrap();
    assert!(
        cut.starts_with(&format!("line {} torn mid-write", read + 2))
            || cut.starts_with(&format!(
                "gzip stream ends after line {} without its trailer",
                read + 1
            )),
        "{json}"
    );
}

/// A GPU lost at 20 s used its energy over the 20 s it was read (19.75, rounded as the header's
/// "30 s" is), not over the whole run (the report said "over 30 s", the span of every sample
/// kept, a helper's find); the GPU beside it carries on to the end.
#[test]
fn a_lost_gpus_energy_is_over_the_time_it_was_read() {
    let (code, out, err) = gpuwatch(&["diagnose", "--demo=lost", "--gpus", "2", "--for", "30s"]);
    assert_eq!(code, 1, "a lost GPU is found: {err}");
    let used: Vec<&str> = out.lines().filter(|l| l.contains("  used ")).collect();
    assert_eq!(used.len(), 2, "{out}");
    assert!(
        used[0].ends_with(" over 20 s (its energy counter)"),
        "{out}"
    );
    assert!(
        used[1].ends_with(" over 30 s (its energy counter)"),
        "{out}"
    );
}

/// A replay of a pipe with standard output no terminal is refused at once, not after waiting
/// for the pipe's first line (which may be long) to then say the screen cannot open. Its wait
/// on a terminal is `keys_typed_while_a_pipe_is_awaited_are_not_the_screens` (tmux).
#[test]
fn a_replay_of_a_silent_pipe_with_no_screen_is_refused_at_once() {
    use std::io::Read;
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .args(["replay", "-"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > std::time::Duration::from_secs(5) {
            child.kill().unwrap();
            child.wait().unwrap();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.and_then(|s| s.code()), Some(2), "{err}");
    assert!(
        err.contains("the monitor draws on a terminal") && !err.contains("waiting for"),
        "{err}"
    );
}

/// Standard output that cannot be written (`> /dev/full`) is an error said in a line, exit 2:
/// `snapshot -o -`, `diagnose`, `devices` and `completions` panicked with a trace, exit 101.
#[test]
fn a_standard_output_that_cannot_be_written_is_an_error_not_a_panic() {
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    for args in [
        &["snapshot", "--demo", "--window", "5s", "-o", "-"][..],
        &["diagnose", "--demo", "--for", "2s"],
        &["devices", "--demo"],
        &["completions", "bash"],
        &["man"],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
            .args(args)
            .env("XDG_CONFIG_HOME", "/nonexistent")
            .stdout(full())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("cannot write to standard output") && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
}

/// Where a snapshot cannot be written is said before anything is sampled: a live
/// `--for 10m` into a folder that is not there sampled ten minutes, then failed and lost them;
/// `-o nodir/` named "." as the folder (helper-30).
#[test]
fn a_snapshot_that_cannot_be_written_is_refused_before_sampling() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("not-there");
    let started = std::time::Instant::now();
    let to = missing.join("x.json");
    let (code, _, err) = gpuwatch(&["snapshot", "--for", "10m", "-o", to.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!("cannot write a snapshot in {}", missing.display())),
        "{err}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "it sampled first"
    );
    let folder = format!("{}/", missing.display());
    let (code, _, err) = gpuwatch(&["snapshot", "--demo", "-o", &folder]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("in {folder}:")), "{err}");
}

/// `record -o -` into a standard output that fails names it, not "-" (helper-30).
#[test]
fn a_recording_to_a_failing_standard_output_names_it() {
    let o = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .args(["record", "--demo", "--fast", "--duration", "1s", "-o", "-"])
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .stdout(
            std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap(),
        )
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot write standard output: No space left"),
        "{err}"
    );
}

/// `gpuwatch ARGS` with `GPUWATCH_*` variables set: its exit code, stdout and stderr.
fn gpuwatch_with(vars: &[(&str, &str)], args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .args(args)
        .envs(vars.iter().copied())
        .env_remove("GPUWATCH_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// A variable is read by the commands that use it and no other, a flag given beats it, and a
/// bad one is named: a bad `GPUWATCH_FPS` broke `man` and `completions`, a bad
/// `GPUWATCH_INTERVAL` broke `query --interval 1s`, and `--fps <FPS>` was blamed for a value the
/// user never typed (helper-39).
#[test]
fn variables_are_read_only_where_they_are_used_and_named_when_bad() {
    let bad = [
        ("GPUWATCH_FPS", "0"),
        ("GPUWATCH_HISTORY", "xyz"),
        ("GPUWATCH_NO_MOUSE", "maybe"),
    ];
    let (code, out, err) = gpuwatch_with(&bad, &["completions", "bash"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("_gpuwatch()"), "{out}");
    let (code, out, err) = gpuwatch_with(&bad, &["man"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with(".ie") || out.contains(".TH"), "{out}");
    let (code, _, err) = gpuwatch_with(&bad, &["diagnose", "--demo", "--for", "1s"]);
    assert!([0, 1, 3].contains(&code), "{err}");
    let interval = [("GPUWATCH_INTERVAL", "garbage")];
    let (code, out, err) = gpuwatch_with(&interval, &["query", "--demo", "--interval", "1s"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("H200"), "{out}");
    // Where it is read, a bad one is refused, and named.
    let (code, _, err) = gpuwatch_with(&interval, &["query", "--demo"]);
    assert_eq!(code, 2);
    assert!(err.contains("(from GPUWATCH_INTERVAL)"), "{err}");
    let (code, _, err) = gpuwatch_with(&[("GPUWATCH_FPS", "0")], &["--demo"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("invalid value '0' for '--fps <FPS>'")
            && err
                .contains("note: that value is GPUWATCH_FPS's: correct it, or unset GPUWATCH_FPS"),
        "{err}"
    );
    // Typed, the flag is the user's own: no note.
    let (_, _, err) = gpuwatch_with(&[("GPUWATCH_FPS", "0")], &["--demo", "--fps", "0"]);
    assert!(
        err.contains("'--fps <FPS>'") && !err.contains("note:"),
        "{err}"
    );
}
