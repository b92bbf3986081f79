//! What a hostile snapshot can cost: memory and refusals, measured on the real binary. A
//! snapshot is one list of processes for its window, so its ticks must share that list: a
//! 35 KB gzipped snapshot once took 4.3 GB by copying it into every tick.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use gpuwatch::format::snapshot::{parse, to_json, Snapshot};
use gpuwatch::model::{HostProcess, ProcessSample};

/// What `gpuwatch diagnose --replay` may take, at most, on any snapshot it accepts: the
/// snapshot parsed, one tick, and the history of its window. Stated in docs/reliability.md.
const RSS_BOUND_MIB: u64 = 256;

fn example() -> Snapshot {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/examples/h200-hang.json");
    parse(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `gpus` copies of the example's GPU, `samples` each every 250 ms (at times of their own when
/// `apart`), sharing `processes` processes with 1 KiB command lines.
fn hostile(gpus: usize, samples: usize, processes: usize, apart: bool) -> Snapshot {
    let mut s = example();
    let template = s.devices[0].clone();
    let start = template.samples[0].t_ms;
    s.devices = (0..gpus)
        .map(|g| {
            let mut d = template.clone();
            d.info.index = g as u32;
            d.samples = (0..samples)
                .map(|i| {
                    let mut x = template.samples[i % template.samples.len()];
                    x.t_ms = start
                        + i as u64 * if apart { 10_000 } else { 250 }
                        + if apart { g as u64 } else { 0 };
                    x
                })
                .collect();
            d.processes = Vec::new();
            d
        })
        .collect();
    for pid in 0..processes {
        let cmdline = format!("python3 train.py --rank {pid} {}", "x".repeat(1000));
        s.devices[pid % gpus].processes.push(ProcessSample {
            pid: 10_000 + pid as u32,
            gpu_mem_bytes: Some(1 << 30),
            host: Some(HostProcess {
                name: "python3".into(),
                cmdline,
                ..HostProcess::default()
            }),
            ..ProcessSample::default()
        });
    }
    s
}

/// Writes `s` gzipped, runs `gpuwatch diagnose --replay` on it: (exit code, stderr, peak RSS
/// MiB, gzipped KiB).
#[allow(clippy::zombie_processes)] // reaped by `wait_peak_rss` (wait4), which `wait()` cannot follow
fn diagnose(s: &Snapshot) -> (i32, String, u64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hostile.json.gz");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(to_json(s).as_bytes()).unwrap();
    let bytes = gz.finish().unwrap();
    std::fs::write(&path, &bytes).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .args(["diagnose", "--replay"])
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        let _ = std::io::Read::read_to_string(&mut pipe, &mut out);
        out
    });
    let (status, rss) = gpuwatch::wait_peak_rss(&child).unwrap();
    let stderr = reader.join().unwrap();
    (
        status.code().unwrap_or(-1),
        stderr,
        rss >> 20,
        bytes.len() as u64 >> 10,
    )
}

#[test]
fn a_snapshot_of_1024_processes_over_3600_moments_stays_within_its_bound() {
    // Before its ticks shared the list: 5.0 GB and 45 s (release build); after: 131 MB, 4.7 s.
    let (code, err, rss, kib) = diagnose(&hostile(8, 3600, 1024, false));
    assert!([0, 1, 3].contains(&code), "exit {code}: {err}");
    assert!(
        rss < RSS_BOUND_MIB,
        "peak RSS {rss} MiB for a {kib} KiB snapshot (bound {RSS_BOUND_MIB} MiB)"
    );
    eprintln!("1024 processes × 3600 moments, {kib} KiB gzipped: peak RSS {rss} MiB");
}

#[test]
fn more_processes_than_gpuwatch_reads_are_refused_by_name() {
    let (code, err, rss, _) = diagnose(&hostile(8, 40, 4097, false));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("4097 GPU processes, more than the 4096"),
        "{err}"
    );
    assert!(rss < RSS_BOUND_MIB, "{rss} MiB");
}

/// 1024 GPUs each sampled at its own times: every distinct time would be a tick of 1024 GPUs.
#[test]
fn gpus_sampled_apart_cannot_ask_for_billions_of_readings() {
    let (code, err, rss, _) = diagnose(&hostile(1024, 5, 0, true));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("readings), more than the"), "{err}");
    assert!(rss < RSS_BOUND_MIB, "{rss} MiB");
}

fn run(args: &[&std::ffi::OsStr]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A 5 s recording of the hang demo in `dir`, as text.
fn hang_recording(dir: &Path) -> String {
    let rec = dir.join("r.jsonl");
    let (code, err) = run(&[
        "record".as_ref(),
        "--demo=hang".as_ref(),
        "--fast".as_ref(),
        "--duration".as_ref(),
        "5s".as_ref(),
        "-o".as_ref(),
        rec.as_os_str(),
    ]);
    assert_eq!(code, 0, "{err}");
    std::fs::read_to_string(&rec).unwrap()
}

/// `text` with its line `line` (1-based) changed by `f`, written into `dir`.
fn with_line_edited(
    dir: &Path,
    text: &str,
    line: usize,
    f: &dyn Fn(&mut serde_json::Value),
) -> PathBuf {
    let lines: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i + 1 == line {
                let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                f(&mut v);
                v.to_string()
            } else {
                l.to_string()
            }
        })
        .collect();
    let path = dir.join(format!("bad{line}.jsonl"));
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

/// A time of `u64::MAX` once gave a critical "hang for 25 s" out of no data, and a temperature
/// of 3.4e38 printed as a 39-digit number of degrees: such lines are refused, named.
#[test]
fn impossible_times_and_values_are_refused_with_the_line_named() {
    let dir = tempfile::tempdir().unwrap();
    let text = hang_recording(dir.path());
    let edit = |line: usize, f: &dyn Fn(&mut serde_json::Value)| {
        with_line_edited(dir.path(), &text, line, f)
    };
    let umax = edit(5, &|v| v["t_ms"] = serde_json::json!(u64::MAX));
    let (code, err) = run(&["diagnose".as_ref(), "--replay".as_ref(), umax.as_os_str()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(":5:") && err.contains("18446744073709551615 ms is after the year 2100"),
        "{err}"
    );
    let hot = edit(7, &|v| {
        v["devices"][0]["sample"]["temp_c"] = serde_json::json!(3.4e38);
    });
    let (code, err) = run(&["diagnose".as_ref(), "--replay".as_ref(), hot.as_os_str()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(":7:") && err.contains("(GPU 0: temp_c") && err.contains("impossible"),
        "{err}"
    );
    // A process's share of the GPU over 100 %, and a worker's negative CPU.
    for (edit_at, says) in [
        ("sm_pct", "sm_pct 500% is impossible"),
        ("cpu_pct", "cpu_pct -50% is impossible"),
    ] {
        let bad = edit(6, &|v| {
            let p = &mut v["devices"][0]["processes"][0];
            if edit_at == "sm_pct" {
                p["sm_pct"] = serde_json::json!(500.0);
            } else {
                p["host"]["cpu_pct"] = serde_json::json!(-50.0);
            }
        });
        let (code, err) = run(&["diagnose".as_ref(), "--replay".as_ref(), bad.as_os_str()]);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains(":6: corrupt tick (GPU 0: pid ") && err.contains(says),
            "{err}"
        );
    }
    // A snapshot: the GPU and the sample are named.
    let mut s = example();
    s.devices[0].samples[3].util_gpu_pct = Some(250.0);
    let snap = dir.path().join("s.json");
    std::fs::write(&snap, to_json(&s)).unwrap();
    let (code, err) = run(&["diagnose".as_ref(), "--replay".as_ref(), snap.as_os_str()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("GPU 0's sample 4 of") && err.contains("util_gpu_pct 250%"),
        "{err}"
    );
}

/// Used memory of 2^64, a negative link rate and a clock of 4 THz were drawn as they came
/// (helper-29): refused, named, as the others are.
#[test]
fn impossible_memory_link_rates_and_clocks_are_refused_too() {
    let dir = tempfile::tempdir().unwrap();
    let text = hang_recording(dir.path());
    let edit = |line: usize, f: &dyn Fn(&mut serde_json::Value)| {
        with_line_edited(dir.path(), &text, line, f)
    };
    for (key, value, says) in [
        (
            "mem_used_bytes",
            serde_json::json!(u64::MAX),
            "mem_used_bytes 18446744073709551615",
        ),
        (
            "pcie_tx_kib_s",
            serde_json::json!(-5e30),
            "pcie_tx_kib_s -5",
        ),
        (
            "sm_clock_mhz",
            serde_json::json!(u32::MAX),
            "sm_clock_mhz 4294967295 MHz",
        ),
    ] {
        let bad = edit(6, &|v| v["devices"][0]["sample"][key] = value.clone());
        let (code, err) = run(&["diagnose".as_ref(), "--replay".as_ref(), bad.as_os_str()]);
        assert_eq!(code, 2, "{key}: {err}");
        assert!(
            err.contains(":6:") && err.contains(says) && err.contains("impossible"),
            "{key}: {err}"
        );
    }
}

/// Runs the command an error message gives to mend `input` ("e.g. CMD", with FILE and
/// MENDED.jsonl or MENDED.jsonl.gz in it) and returns the mended copy.
fn mend_as_told(err: &str, input: &Path) -> PathBuf {
    let told = err.split("e.g. ").nth(1).expect("a command is given");
    let told = told.trim_end().trim_end_matches(')');
    let gz = told.contains("MENDED.jsonl.gz");
    let out = input.with_file_name(if gz {
        "mended.jsonl.gz"
    } else {
        "mended.jsonl"
    });
    let script = told
        .replace("MENDED.jsonl.gz", "\"$2\"")
        .replace("MENDED.jsonl", "\"$2\"")
        .replace("FILE", "\"$1\"");
    let status = Command::new("sh")
        .args(["-c", &script, "sh"])
        .arg(input)
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success(), "{script}");
    out
}

/// `diagnose --replay -` with `input` on standard input, its stdin piped through `filter`
/// first where one is given: the exit code and what it printed on stderr.
fn diagnose_piped(input: &Path, filter: &str) -> (i32, String) {
    let gw = env!("CARGO_BIN_EXE_gpuwatch");
    let script = if filter.is_empty() {
        format!("\"{gw}\" diagnose --replay - < \"$1\"")
    } else {
        format!("{filter} < \"$1\" | \"{gw}\" diagnose --replay -")
    };
    let out = Command::new("sh")
        .args(["-c", &script, "sh"])
        .arg(input)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Whether the recording or snapshot at `path` opens (`diagnose`'s exit code says so).
fn opens(path: &Path) {
    let (code, err) = run(&["diagnose".as_ref(), "--replay".as_ref(), path.as_os_str()]);
    assert!([0, 1, 3].contains(&code), "{}: {err}", path.display());
}

/// UTF-16 (PowerShell's `>`) is named, with an `iconv` command that converts a copy, and the
/// copy opens (helper-38 met it as "not UTF-8 text" or "expected value at line 1 column 1").
#[test]
fn utf16_is_named_with_a_command_that_converts_a_copy() {
    let dir = tempfile::tempdir().unwrap();
    let text = hang_recording(dir.path());
    let utf16 = |big: bool| {
        let units = std::iter::once(0xFEFF_u16).chain(text.encode_utf16());
        let swap = |u: u16| {
            if big {
                u.to_be_bytes()
            } else {
                u.to_le_bytes()
            }
        };
        units.flat_map(swap).collect::<Vec<u8>>()
    };
    // With its mark (little-endian), and without one (big-endian: a NUL before the brace).
    for (name, bytes, form) in [
        ("le.jsonl", utf16(false), "iconv -f UTF-16 -t UTF-8"),
        (
            "be.jsonl",
            utf16(true)[2..].to_vec(),
            "iconv -f UTF-16BE -t UTF-8",
        ),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let (code, err) = run(&["diagnose".as_ref(), "--replay".as_ref(), path.as_os_str()]);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains("it is UTF-16 text") && err.contains(form),
            "{err}"
        );
        opens(&mend_as_told(&err, &path));
    }
}

/// Byte-order marks in a gzip file or on standard input are named with a command that mends a
/// copy as the input was given (`sed -i` edits neither), and a mark before a later tick (a
/// file with one appended by `cat`) is named as one (it was "a tick cut short at column 1").
#[test]
fn stray_marks_are_named_with_a_command_that_fits_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let text = hang_recording(dir.path());
    let marked = [&b"\xEF\xBB\xBF\xEF\xBB\xBF"[..], text.as_bytes()].concat();
    let gz = dir.path().join("marked.jsonl.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(&marked).unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    let (code, err) = run(&["diagnose".as_ref(), "--replay".as_ref(), gz.as_os_str()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("zcat FILE | sed"), "{err}");
    opens(&mend_as_told(&err, &gz));
    // On standard input: the filter goes before gpuwatch in the pipe.
    let plain = dir.path().join("marked.jsonl");
    std::fs::write(&plain, &marked).unwrap();
    let (code, err) = diagnose_piped(&plain, "cat");
    assert_eq!(code, 2, "{err}");
    let filter = err
        .split("pipe it through ")
        .nth(1)
        .and_then(|rest| rest.split(" before gpuwatch").next())
        .unwrap_or_else(|| panic!("no filter in: {err}"));
    let (code, err) = diagnose_piped(&plain, filter);
    assert!([0, 1, 3].contains(&code), "piped through {filter}: {err}");
    // A mark before the sixth line's tick, which is whole after it.
    let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
    let sixth = format!("\u{feff}{}", lines[5]);
    lines[5] = &sixth;
    let later = dir.path().join("later.jsonl");
    std::fs::write(&later, lines.concat()).unwrap();
    let (_, err) = run(&["diagnose".as_ref(), "--replay".as_ref(), later.as_os_str()]);
    assert!(
        err.contains("later.jsonl:6: corrupt tick (it starts with a byte-order mark (U+FEFF)")
            && err.contains("deleting the mark's 3 bytes keeps the tick"),
        "{err}"
    );
}

/// The smaller items: a UTF-8 byte-order mark is read past (alone on its line too; more are
/// named, with a command that takes them off), `record --force` onto a link
/// replaces the link and leaves its target alone, `snapshot -o DIR` writes into DIR, and a
/// name holding ESC is echoed as `�`.
#[test]
#[allow(clippy::too_many_lines)] // four small cases that share one directory and binary run, told in turn
fn a_bom_a_link_a_directory_and_an_escape_in_a_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rec = d.join("r.jsonl");
    let gw = |args: &[&std::ffi::OsStr]| run(args);
    let (code, err) = gw(&[
        "record".as_ref(),
        "--demo=hang".as_ref(),
        "--fast".as_ref(),
        "--duration".as_ref(),
        "5s".as_ref(),
        "-o".as_ref(),
        rec.as_os_str(),
    ]);
    assert_eq!(code, 0, "{err}");
    let bom = d.join("bom.jsonl");
    let mut text = b"\xEF\xBB\xBF".to_vec();
    text.extend(std::fs::read(&rec).unwrap());
    std::fs::write(&bom, text).unwrap();
    let (code, err) = gw(&["diagnose".as_ref(), "--replay".as_ref(), bom.as_os_str()]);
    assert!([0, 1, 3].contains(&code), "read past the mark: {err}");
    // Two marks (saved twice by an editor that adds one): the second is named.
    let mut text = b"\xEF\xBB\xBF\xEF\xBB\xBF".to_vec();
    text.extend(std::fs::read(&rec).unwrap());
    std::fs::write(&bom, text).unwrap();
    let (code, err) = gw(&["diagnose".as_ref(), "--replay".as_ref(), bom.as_os_str()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("starts with 2 byte-order marks"), "{err}");
    // The command the message gives takes them all off, and its copy opens.
    let mended = mend_as_told(&err, &bom);
    let (code, err) = gw(&["diagnose".as_ref(), "--replay".as_ref(), mended.as_os_str()]);
    assert!(
        [0, 1, 3].contains(&code),
        "opens once the marks are off: {err}"
    );
    // A mark alone on the first line, then the header: a blank line, as it looks.
    let mut text = b"\xEF\xBB\xBF\r\n".to_vec();
    text.extend(std::fs::read(&rec).unwrap());
    std::fs::write(&bom, text).unwrap();
    let (code, err) = gw(&["diagnose".as_ref(), "--replay".as_ref(), bom.as_os_str()]);
    assert!(
        [0, 1, 3].contains(&code),
        "a mark on a line of its own: {err}"
    );

    let precious = d.join("precious.txt");
    std::fs::write(&precious, "keep me").unwrap();
    let link = d.join("link.jsonl");
    std::os::unix::fs::symlink(&precious, &link).unwrap();
    let (code, err) = gw(&[
        "record".as_ref(),
        "--demo".as_ref(),
        "--fast".as_ref(),
        "--duration".as_ref(),
        "2s".as_ref(),
        "--force".as_ref(),
        "-o".as_ref(),
        link.as_os_str(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep me");
    assert!(!std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());

    let out = d.join("snaps");
    std::fs::create_dir(&out).unwrap();
    let (code, err) = gw(&[
        "snapshot".as_ref(),
        "--demo".as_ref(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(code, 0, "{err}");
    let inside: Vec<_> = std::fs::read_dir(&out).unwrap().collect();
    assert_eq!(inside.len(), 1, "{err}");
    assert!(!d.join("snaps-1").exists());

    let named = d.join("a\x1b[2Jb.json");
    let (code, err) = gw(&[
        "snapshot".as_ref(),
        "--demo".as_ref(),
        "-o".as_ref(),
        named.as_os_str(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        !err.contains('\x1b') && err.contains("a\\e[2Jb.json'"),
        "{err:?}"
    );
}

/// A header whose GPU says its default power limit is 1e30 W made a false "capped below its
/// default" warning on a healthy GPU; memory of 2^64 bytes was shown as 17179869184 GiB
/// (helper-30).
#[test]
fn impossible_device_facts_in_a_header_are_no_tdp_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("h.jsonl");
    let (code, err) = run(&[
        "record".as_ref(),
        "--demo=healthy".as_ref(),
        "--fast".as_ref(),
        "--duration".as_ref(),
        "30s".as_ref(),
        "-o".as_ref(),
        rec.as_os_str(),
    ]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&rec).unwrap();
    let huge_tdp = with_line_edited(dir.path(), &text, 1, &|v| {
        v["devices"][0]["power_limit_default_w"] = serde_json::json!(1e30);
    });
    let out = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .args([
            "diagnose".as_ref(),
            "--replay".as_ref(),
            huge_tdp.as_os_str(),
        ])
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(!said.contains("[powercap]"), "{said}");
    let huge_memory = with_line_edited(dir.path(), &text, 1, &|v| {
        v["devices"][0]["memory_total_bytes"] = serde_json::json!(u64::MAX);
    });
    let (code, err) = run(&[
        "diagnose".as_ref(),
        "--replay".as_ref(),
        huge_memory.as_os_str(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("more than 1 PiB"), "{err}");
}
