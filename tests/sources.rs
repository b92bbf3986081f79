//! Each source: simulated (deterministic, scenarios, device loss), replay (round trip, truncated
//! and corrupt recordings), and NVML's missing-driver error.

mod common;

use std::io::Write;
use std::path::Path;

use common::{sim_ticks, START_MS};
use gpuwatch::format::record::{Header, Recorder};
use gpuwatch::history::History;
use gpuwatch::model::{DeviceStatus, SystemInfo, Tick};
use gpuwatch::source::replay::{ReplayError, ReplaySource};
use gpuwatch::source::sim::{scenarios, Scenario, SimSource};
use gpuwatch::source::{Sampled, Source};

#[test]
fn simulated_source_is_deterministic_for_a_seed() {
    let a = sim_ticks(Scenario::Mixed, 8, 10, START_MS).1;
    let b = sim_ticks(Scenario::Mixed, 8, 10, START_MS).1;
    assert_eq!(a, b);
    let mut other = SimSource::new(Scenario::Mixed, 8, 99, START_MS, 250);
    let mut t = Tick::default();
    other.sample(&mut t).unwrap();
    assert_ne!(
        t.devices[0].sample, a[0].devices[0].sample,
        "another seed gives other noise"
    );
}

#[test]
fn simulated_time_advances_by_the_interval() {
    let ticks = sim_ticks(Scenario::Healthy, 1, 2, START_MS).1;
    let times: Vec<u64> = ticks.iter().map(|t| t.t_ms).collect();
    assert_eq!(
        times,
        (0..8).map(|i| START_MS + i * 250).collect::<Vec<_>>()
    );
}

#[test]
fn every_scenario_runs_on_1_to_64_gpus_with_plausible_values() {
    for (name, sc) in scenarios() {
        for gpus in [1, 64] {
            let (infos, ticks) = sim_ticks(sc, gpus, 1, START_MS);
            let whole = infos.iter().filter(|d| d.mig.is_none()).count();
            assert_eq!(whole, gpus, "{name}: GPUs (MIG instances come on top)");
            for (info, d) in infos.iter().zip(&ticks.last().unwrap().devices) {
                let s = &d.sample;
                if info.mig.is_some() || info.is_mig_parent() {
                    // NVML reports no utilization on MIG (tests/mig.rs checks the rest).
                    assert_eq!(s.util_gpu_pct, None, "{name}");
                    continue;
                }
                assert!(
                    s.util_gpu_pct.is_some_and(|u| (0.0..=100.0).contains(&u)),
                    "{name}: util {:?}",
                    s.util_gpu_pct
                );
                assert!(
                    s.power_w.is_some_and(|p| p > 50.0 && p <= 700.0),
                    "{name}: power {:?}",
                    s.power_w
                );
                assert_eq!(
                    s.fan_pct, None,
                    "{name}: the H200 has no fan, so the simulation reports a gap, not 0"
                );
            }
        }
    }
}

#[test]
fn gpu_count_is_clamped_to_1_through_64() {
    assert_eq!(
        SimSource::new(Scenario::Healthy, 0, 1, 0, 250)
            .devices()
            .len(),
        1
    );
    assert_eq!(
        SimSource::new(Scenario::Healthy, 500, 1, 0, 250)
            .devices()
            .len(),
        64
    );
}

#[test]
fn scenarios_show_their_measured_signature() {
    let last = |sc| {
        sim_ticks(sc, 1, 5, START_MS)
            .1
            .pop()
            .unwrap()
            .devices
            .remove(0)
            .sample
    };
    let hang = last(Scenario::HANG);
    assert!(
        hang.util_gpu_pct.unwrap() >= 99.0
            && hang.power_w.unwrap() < 130.0
            && hang.gpm.sm_active_pct.unwrap() < 2.0
    );
    let healthy = last(Scenario::Healthy);
    assert!(healthy.power_w.unwrap() > 650.0 && healthy.gpm.sm_active_pct.unwrap() > 90.0);
    let membound = last(Scenario::Membound);
    assert!(membound.power_w.unwrap() < 520.0 && membound.gpm.dram_bw_pct.unwrap() > 80.0);
    let sync = last(Scenario::Rule(gpuwatch::rules::RuleId::Sync));
    assert!(
        sync.gpm.sm_active_pct.unwrap() < 2.0 && (10.0..60.0).contains(&sync.util_gpu_pct.unwrap())
    );
}

#[test]
fn a_lost_device_is_marked_lost_and_the_others_carry_on() {
    let (infos, ticks) = sim_ticks(
        Scenario::Rule(gpuwatch::rules::RuleId::Lost),
        2,
        30,
        START_MS,
    );
    let mut h = History::new(&infos, 1000);
    for t in &ticks {
        h.push(t);
    }
    let lost = &h.devices[0];
    assert!(matches!(lost.status, DeviceStatus::Lost { .. }));
    assert_eq!(lost.lost_since_ms, Some(START_MS + 20_000));
    assert_eq!(
        lost.samples.latest().unwrap().util_gpu_pct,
        None,
        "a lost GPU's samples are gaps"
    );
    let alive = &h.devices[1];
    assert_eq!(alive.status, DeviceStatus::Ok);
    assert!(alive.samples.latest().unwrap().util_gpu_pct.unwrap() > 90.0);
}

fn write_recording(path: &Path, ticks: &[Tick], infos: &[gpuwatch::model::DeviceInfo]) {
    let header = Header::new(
        &SystemInfo {
            host: "test".into(),
            ..Default::default()
        },
        infos,
        250,
    );
    let mut rec = Recorder::create(path, &header, false).unwrap();
    for t in ticks {
        rec.write(t).unwrap();
    }
}

#[test]
fn recording_round_trips_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rec.jsonl");
    let (infos, ticks) = sim_ticks(Scenario::Mixed, 8, 5, START_MS);
    write_recording(&path, &ticks, &infos);
    let mut replay = ReplaySource::open(&path, f64::INFINITY).unwrap();
    assert_eq!(replay.devices(), &infos[..]);
    assert_eq!(replay.header().interval_ms, 250);
    assert_eq!(replay.read_all().unwrap(), ticks);
}

#[test]
fn recorder_refuses_to_overwrite_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rec.jsonl");
    std::fs::write(&path, "precious").unwrap();
    let header = Header::new(&SystemInfo::default(), &[], 250);
    let err = Recorder::create(&path, &header, false)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("already exists") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "precious");
    assert!(Recorder::create(&path, &header, true).is_ok());
}

#[test]
fn unwritable_directory_is_a_clear_error() {
    let header = Header::new(&SystemInfo::default(), &[], 250);
    let err = Recorder::create(Path::new("/proc/gpuwatch/rec.jsonl"), &header, false)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.starts_with("cannot create /proc/gpuwatch/rec.jsonl")
            && err.ends_with("; choose a writable place with -o"),
        "{err}"
    );
}

fn recorded_text(seconds: u64) -> (String, Vec<Tick>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rec.jsonl");
    let (infos, ticks) = sim_ticks(Scenario::Healthy, 1, seconds, START_MS);
    write_recording(&path, &ticks, &infos);
    (std::fs::read_to_string(&path).unwrap(), ticks)
}

fn replay_text(text: &str) -> Result<Vec<Tick>, ReplayError> {
    ReplaySource::from_reader(
        std::io::Cursor::new(text.to_string()),
        Path::new("rec.jsonl"),
        f64::INFINITY,
    )?
    .read_all()
}

#[test]
fn truncated_last_line_is_accepted() {
    let (text, ticks) = recorded_text(2);
    let cut = &text[..text.len() - 40];
    let got = replay_text(cut).unwrap();
    assert_eq!(
        got.len(),
        ticks.len() - 1,
        "the half-written last tick is dropped, the rest kept"
    );
    assert_eq!(got[..], ticks[..ticks.len() - 1]);
    // And says so: where it was cut (until 2026-12-05 the replay ended quietly).
    let lines = text.lines().count();
    let mut src = ReplaySource::from_reader(
        std::io::Cursor::new(cut.to_string()),
        Path::new("rec.jsonl"),
        f64::INFINITY,
    )
    .unwrap();
    assert_eq!(src.cut_short(), None, "nothing is known cut before the end");
    src.read_all().unwrap();
    let said = src.cut_short().expect("a torn tail is said");
    assert!(
        said.starts_with(&format!("line {lines} torn mid-write")),
        "{said}"
    );
    // A whole recording is not cut.
    let mut whole = ReplaySource::from_reader(
        std::io::Cursor::new(text.clone()),
        Path::new("rec.jsonl"),
        f64::INFINITY,
    )
    .unwrap();
    whole.read_all().unwrap();
    assert_eq!(whole.cut_short(), None);
}

/// A header torn mid-write (with or without a newline after it) is said torn: it used to be
/// taken for a snapshot ("not a gpuwatch recording (it ends at line 1 before the snapshot
/// does…)") or a bad header ("control character … at line 2 column 0").
#[test]
fn a_torn_header_is_said_torn_not_a_snapshot() {
    let (text, _) = recorded_text(1);
    let header = text.lines().next().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rec.jsonl");
    for torn in [header[..200].to_string(), format!("{}\n", &header[..200])] {
        // Read as a stream, and opened as a file (which tells snapshots from recordings).
        std::fs::write(&file, &torn).unwrap();
        for err in [
            replay_text(&torn).err(),
            ReplaySource::open(&file, 1.0).err(),
        ] {
            let err = err.expect("a torn header is refused").to_string();
            assert!(
                err.ends_with(
                    "rec.jsonl: its header (line 1) is cut short, so no tick can be read (a \
                     recorder stopped while writing its first line, or a partial copy); copy it \
                     again if it is a copy, else record again"
                ),
                "{err}"
            );
        }
    }
}

/// A header that is whole and then runs on along its line (an editor's stray keys, two files
/// joined without a line break) is damaged, and says where it ends: it was said "cut short",
/// which it is not, and when opened as a file taken for a snapshot.
#[test]
fn a_whole_header_that_runs_on_is_damaged_not_cut_short() {
    let (text, _) = recorded_text(1);
    let ours = text.lines().next().unwrap();
    // As written, indented, and rewritten by another tool (its keys sorted: "format" not first).
    let sorted: serde_json::Value = serde_json::from_str(ours).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rec.jsonl");
    let headers = [ours.to_string(), format!("  {ours}"), sorted.to_string()];
    let tails = [" garbage", "{\"t_ms\":1}", "]"];
    for (header, tail) in headers.iter().flat_map(|h| tails.map(|t| (h, t))) {
        let end = header.chars().count();
        let joined = format!("{header}{tail}\n");
        std::fs::write(&file, &joined).unwrap();
        for err in [
            replay_text(&joined).err(),
            ReplaySource::open(&file, 1.0).err(),
        ] {
            let err = err.expect("a header that runs on is refused").to_string();
            assert!(
                err.ends_with(&format!(
                    "rec.jsonl:1: damaged header (whole up to column {end}, where more \
                     follows on the same line); copy it again if it is a copy, else record again"
                )),
                "{tail}: {err}"
            );
        }
    }
}

/// A tick with a GPU more or fewer than the header says what to do, as a corrupt one does.
#[test]
fn a_tick_with_another_gpu_count_says_what_to_do() {
    let (text, _) = recorded_text(2);
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut tick: serde_json::Value = serde_json::from_str(&lines[3]).unwrap();
    tick["devices"].as_array_mut().unwrap().pop();
    lines[3] = tick.to_string();
    let err = replay_text(&(lines.join("\n") + "\n"))
        .unwrap_err()
        .to_string();
    assert!(
        err.ends_with(
            "tick has 0 devices, the header lists 1: a line edited or joined from \
             another recording; delete line 4 to read past it"
        ),
        "{err}"
    );
}

/// A reading of the wrong type names its field, not only a column of a long line.
#[test]
fn a_reading_of_the_wrong_type_names_its_field() {
    let (text, _) = recorded_text(2);
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines[3] = lines[3].replacen("\"temp_c\":", "\"temp_c\":\"hot\",\"x\":", 1);
    let err = replay_text(&(lines.join("\n") + "\n"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("corrupt tick (devices[0].sample.temp_c: invalid type: string \"hot\""),
        "{err}"
    );
}

#[test]
fn corrupt_line_names_file_and_line() {
    let (text, _) = recorded_text(2);
    let mut lines: Vec<&str> = text.lines().collect();
    lines[3] = "{\"t_ms\": 12, \"devices\": [garbage";
    let err = replay_text(&(lines.join("\n") + "\n"))
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("rec.jsonl:4: corrupt tick"), "{err}");
    // What to do about it.
    assert!(
        err.ends_with(
            "corrupt tick (devices[0]: expected value, at column 26); delete line 4 to read past it"
        ),
        "{err}"
    );
    // A line cut in half (a copy torn mid-file) inside a string or between values: said cut
    // short at its own length, not serde's "control character … at column 0" of a next line.
    let (text, _) = recorded_text(2);
    let mut lines: Vec<&str> = text.lines().collect();
    for cut in [lines[3].len() / 2, lines[3].rfind(',').unwrap() + 1] {
        let half = &text.lines().nth(3).unwrap()[..cut];
        lines[3] = half;
        let err = replay_text(&(lines.join("\n") + "\n"))
            .unwrap_err()
            .to_string();
        assert!(
            err.ends_with(&format!(
                "corrupt tick (it ends at column {cut} before its tick does: the line was cut short); delete line 4 to read past it"
            )),
            "{err}"
        );
    }
    // A torn tick with a whole one run into it (a recorder killed mid-write, another
    // recording appended): said as such, with what keeps the whole one; it read "the line was
    // cut short", which sends the user to delete a whole tick too.
    let (text, _) = recorded_text(2);
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for cut in [
        lines[3].len() / 2,
        lines[3].find("\"sample\":").unwrap() + 9,
    ] {
        lines[3] = format!("{}{}", &text.lines().nth(3).unwrap()[..cut], &lines[4]);
        let err = replay_text(&(lines.join("\n") + "\n"))
            .unwrap_err()
            .to_string();
        assert!(
            err.ends_with(&format!(
                "corrupt tick (a tick cut short at column {cut} runs into a whole one: a recorder \
                 stopped mid-write and another appended to the file; deleting the line's first \
                 {cut} characters keeps the whole tick); delete line 4 to read past it"
            )),
            "{err}"
        );
        // Done as it says, the file reads to its end.
        let mut mended = lines.clone();
        mended[3] = lines[3][cut..].to_string();
        assert!(replay_text(&(mended.join("\n") + "\n")).is_ok());
        // The same splice as the file's last line, without its newline: said, not dropped as
        // a torn tail (the whole tick in it would be lost without a word).
        let last = [&lines[..3], &lines[3..4]].concat().join("\n");
        let err = replay_text(&last).unwrap_err().to_string();
        assert!(err.contains("runs into a whole one"), "{err}");
    }
}

/// Two recordings joined into one file (`cat a.jsonl b.jsonl`): the second's header is said
/// for what it is, with where to split; with that header deleted, the ticks that go back in
/// time are (summed as one, they made a GPU "use" 1.4 kW). A clock set back by a second or
/// two is not taken for a join.
#[test]
fn recordings_joined_into_one_file_are_said_joined() {
    let (text, ticks) = recorded_text(10);
    let n = text.lines().count();
    let err = replay_text(&format!("{text}{text}"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        format!(
            "rec.jsonl:{}: a second recording starts here (its header): recordings were joined \
             into one file; split it there (`head -n {n}` and `tail -n +{}`) and open each",
            n + 1,
            n + 1
        )
    );
    // A second header written again by another tool (other spacing) is still a header, not
    // a "corrupt tick" to delete (helper-29).
    let header: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let spaced = serde_json::to_string_pretty(&header)
        .unwrap()
        .replace('\n', " ");
    let err = replay_text(&format!("{text}{spaced}\n"))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!(
            "rec.jsonl:{}: a second recording starts here",
            n + 1
        )),
        "{err}"
    );
    let body: String = text.split_inclusive('\n').skip(1).collect();
    let err = replay_text(&format!("{text}{body}"))
        .unwrap_err()
        .to_string();
    let back = (ticks.last().unwrap().t_ms - ticks[0].t_ms).div_ceil(1000);
    assert!(
        err.starts_with(&format!(
            "rec.jsonl:{}: this tick is {back} s earlier than the one before it",
            n + 1
        )),
        "{err}"
    );
    // A tick 2 s back (a clock set back) still reads.
    let mut t: Vec<Tick> = ticks.clone();
    t[5].t_ms = t[4].t_ms - 2_000;
    let back = t[5].t_ms;
    for d in &mut t[5].devices {
        d.sample.t_ms = back;
    }
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut shifted = lines.clone();
    shifted[6] = serde_json::to_string(&t[5]).unwrap();
    assert_eq!(
        replay_text(&(shifted.join("\n") + "\n")).unwrap().len(),
        ticks.len()
    );
}

/// Bytes that are not UTF-8: in a line, an error naming the line and the column (it was
/// "cannot read …: stream did not contain valid UTF-8", twice, with no line); at the end of a
/// copy cut inside a character, a torn last line like any other.
#[test]
fn bytes_that_are_not_utf8_name_their_line_or_are_a_torn_end() {
    let (text, ticks) = recorded_text(3);
    let mut bytes = text.clone().into_bytes();
    let at = text.match_indices('\n').nth(4).unwrap().0 + 20;
    bytes[at] = 0xff;
    let err = ReplaySource::from_reader(
        std::io::Cursor::new(bytes),
        Path::new("rec.jsonl"),
        f64::INFINITY,
    )
    .and_then(|mut s| s.read_all())
    .unwrap_err();
    assert_eq!(
        format!("{err:#}"),
        "rec.jsonl:6: corrupt tick (a byte at column 20 is not UTF-8 text); delete line 6 to read past it"
    );
    // Where the header should be, it is no recording: not a tick to delete.
    let mut bytes = text.clone().into_bytes();
    bytes[1] = 0xff;
    let err = ReplaySource::from_reader(
        std::io::Cursor::new(bytes),
        Path::new("rec.jsonl"),
        f64::INFINITY,
    )
    .err()
    .expect("refused");
    assert_eq!(
        format!("{err:#}"),
        "rec.jsonl:1: not a gpuwatch recording (where its header should be, a byte at column 2 is not UTF-8 text)"
    );
    // Cut between the two bytes of an "é" in the last line.
    let with_e = text.replacen("python3", "pythé3", 1);
    let e_at = with_e.rfind('é').unwrap();
    let cut = with_e.as_bytes()[..=e_at].to_vec();
    let mut src = ReplaySource::from_reader(
        std::io::Cursor::new(cut),
        Path::new("rec.jsonl"),
        f64::INFINITY,
    )
    .unwrap();
    let read = src.read_all().expect("a torn end is no error");
    assert!(read.len() < ticks.len());
    assert!(
        src.cut_short()
            .unwrap()
            .starts_with(&format!("line {} torn mid-write", read.len() + 2)),
        "{:?}",
        src.cut_short()
    );
}

#[test]
fn unknown_fields_are_ignored() {
    let (text, ticks) = recorded_text(1);
    let extended = text
        .replace("\"util_gpu_pct\"", "\"future_metric\":1,\"util_gpu_pct\"")
        .replace(
            "\"interval_ms\"",
            "\"new_header_field\":[1,2],\"interval_ms\"",
        );
    assert_eq!(replay_text(&extended).unwrap(), ticks);
}

/// A header tagged as ours with a value of the wrong type is a damaged header, said with its
/// field and column and the kind of value meant (it was "not a gpuwatch recording (invalid
/// type: string \"lots\", expected u64)").
#[test]
fn a_damaged_header_names_its_field_and_the_kind_of_value_meant() {
    let (text, _) = recorded_text(1);
    let bad = text.replacen(
        "\"memory_total_bytes\":",
        "\"memory_total_bytes\":\"lots\",\"x\":",
        1,
    );
    let e = replay_text(&bad).unwrap_err().to_string();
    let column = bad.find("\"lots\"").unwrap() + "\"lots\"".len();
    assert_eq!(
        e,
        format!(
            "rec.jsonl:1: damaged header (devices[0].memory_total_bytes: invalid type: string \
             \"lots\", expected a whole number, 0 or more, at column {column}); copy it again if \
             it is a copy, else record again"
        )
    );
}

#[test]
fn not_a_recording_newer_version_and_empty_file_are_errors() {
    assert!(matches!(
        replay_text("").unwrap_err(),
        ReplayError::Empty { .. }
    ));
    // Blank lines are not "empty".
    let e = replay_text("\n\n").unwrap_err().to_string();
    assert_eq!(
        e,
        "rec.jsonl has only blank lines: it is not a gpuwatch recording"
    );
    let e = replay_text("{\"hello\": 1}\n").unwrap_err().to_string();
    assert!(e.contains("rec.jsonl:1: not a gpuwatch recording"), "{e}");
    let e = replay_text("not json at all\n").unwrap_err().to_string();
    assert!(e.contains("rec.jsonl:1"), "{e}");
    let (text, _) = recorded_text(1);
    let e = replay_text(&text.replacen("\"version\":1", "\"version\":99", 1))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("version 99") && e.contains("update gpuwatch"),
        "{e}"
    );
}

/// Blank lines before the header (an editor, `echo >> file`) are passed over, and a line
/// named later counts them: the file was refused as "blank where a header should be".
#[test]
fn blank_lines_before_the_header_are_passed_over() {
    let (text, ticks) = recorded_text(4);
    assert_eq!(replay_text(&format!("\n \n{text}")).unwrap(), ticks);
    let e = replay_text(&format!("\n\n{text}{{\"t_ms\": x}}\n"))
        .unwrap_err()
        .to_string();
    let line = 2 + text.lines().count() + 1;
    assert!(
        e.starts_with(&format!("rec.jsonl:{line}: corrupt tick")),
        "{e}"
    );
    // A header cut short after them is said where it is: line 3, not 1.
    let e = replay_text(&format!("\n\n{}", &text[..40]))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("rec.jsonl: its header (line 3) is cut short"),
        "{e}"
    );
}

/// A file replaced or cut shorter on disk while it plays: a seek back says so instead of
/// playing the other file, and a cut end is not called a recorder's torn line.
#[test]
fn a_file_changed_on_disk_as_it_plays_says_so() {
    let (text, _) = recorded_text(10);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rec.jsonl");
    let play_some = |path: &Path| {
        let mut src = ReplaySource::open(path, f64::INFINITY).unwrap();
        let mut tick = Tick::default();
        for _ in 0..5 {
            assert_eq!(src.sample(&mut tick).unwrap(), Sampled::Filled);
        }
        src
    };
    std::fs::write(&path, &text).unwrap();
    let mut src = play_some(&path);
    let (other, _) = recorded_text(2);
    std::fs::write(dir.path().join("new.jsonl"), other).unwrap();
    std::fs::rename(dir.path().join("new.jsonl"), &path).unwrap();
    let e = src.rewind().unwrap_err().to_string();
    assert!(
        e.contains(
            "rec.jsonl changed on disk since it was opened (another file has taken its place)"
        ),
        "{e}"
    );
    // Cut in place, mid-line: the end says the file changed, and so does a seek back.
    std::fs::write(&path, &text).unwrap();
    let mut src = play_some(&path);
    let keep = text.len() * 2 / 3;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(keep as u64)
        .unwrap();
    src.read_all().unwrap();
    if let Some(cut) = src.cut_short() {
        assert!(
            cut.starts_with("the file changed on disk as it played (it shrank from"),
            "{cut}"
        );
    }
    let e = src.rewind().unwrap_err().to_string();
    assert!(
        e.contains(&format!("(it shrank from {} to {keep} bytes)", text.len())),
        "{e}"
    );
    // A file that grew (a recording still being written) is the same file.
    std::fs::write(&path, &text).unwrap();
    let mut src = play_some(&path);
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(b"\n")
        .unwrap();
    src.rewind().unwrap();
}

/// A header cut in its first bytes is a header cut short, as one cut later is (it read as "not
/// a gpuwatch recording (it ends at line 1 before the snapshot does…)").
#[test]
fn a_header_cut_in_its_first_bytes_is_a_cut_header() {
    let (text, _) = recorded_text(1);
    for keep in [1, 2, 5, 13, 40] {
        let e = replay_text(&text[..keep]).unwrap_err().to_string();
        assert!(
            e.starts_with("rec.jsonl: its header (line 1) is cut short"),
            "{keep}: {e}"
        );
    }
    // Whole but nested past serde's limit: no header of ours, not one "cut short" (helper-29).
    let deep = format!(
        "{{\"format\":\"gpuwatch-recording\",\"x\":{}{}}}\n",
        "[".repeat(200),
        "]".repeat(200)
    );
    let e = replay_text(&deep).unwrap_err().to_string();
    assert!(
        e.starts_with("rec.jsonl:1: not a gpuwatch recording (recursion limit exceeded"),
        "{e}"
    );
}

/// In a gzip file, a corrupt line is most often damaged data, and advice that edits lines
/// goes through `zcat` (`head -n 82` of the compressed bytes is garbage); a trailer (checksum
/// or length) or a deflate block that does not match says the copy is damaged, with what to do.
#[test]
fn a_gzip_recordings_advice_goes_through_zcat() {
    let (text, _) = recorded_text(6);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.jsonl.gz");
    let open = |bytes: &[u8]| {
        std::fs::write(&path, bytes).unwrap();
        ReplaySource::open(&path, f64::INFINITY)
            .and_then(|mut s| s.read_all())
            .unwrap_err()
            .to_string()
    };
    let mut lines: Vec<&str> = text.lines().collect();
    lines[3] = "{\"t_ms\": garbage}";
    let e = open(&gzip(format!("{}\n", lines.join("\n")).as_bytes()));
    assert!(
        e.contains("g.jsonl.gz:4: corrupt tick (")
            && e.contains(
                "in a gzip file most often damaged data: if `gzip -t` fails on it, copy it again;"
            )
            && e.ends_with("| head -n 3 > fixed.jsonl`"),
        "{e}"
    );
    let twice = [gzip(text.as_bytes()), gzip(text.as_bytes())].concat();
    let e = open(&twice);
    let at = text.lines().count();
    assert!(
        e.ends_with(&format!(
            "split what `zcat` prints there (`head -n {at}` and `tail -n +{}`) and open each",
            at + 1
        )),
        "{e}"
    );
    // The trailer: its CRC-32 (8 to 5 bytes from the end), then its length (the last 4).
    let lines = text.lines().count();
    for from_end in [6, 1] {
        let mut bad = gzip(text.as_bytes());
        let n = bad.len();
        bad[n - from_end] ^= 0xff;
        let e = open(&bad);
        assert!(
            e.contains(&format!(
                "g.jsonl.gz: its gzip trailer (the checksum and length stored at its end) does \
                 not match the {lines} lines decoded: the copy is damaged, in them or in the \
                 trailer; copy it again (`gzip -t` checks a copy)"
            )),
            "{from_end} bytes from the end: {e}"
        );
    }
    // Data that does not decode, after a whole member: a second member whose first deflate
    // block has the reserved type (BFINAL 1, BTYPE 11).
    let mut bad_block = gzip(text.as_bytes());
    bad_block.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 0x07, 0, 0, 0, 0]);
    let e = open(&bad_block);
    assert!(
        e.contains(&format!(
            "g.jsonl.gz: its gzip stream is damaged after line {lines} ("
        )) && e.ends_with("a damaged copy; copy it again (the ticks before it were read)"),
        "{e}"
    );
}

#[test]
fn gzip_recordings_replay_transparently() {
    let dir = tempfile::tempdir().unwrap();
    let (text, ticks) = recorded_text(2);
    let path = dir.path().join("rec.jsonl.gz");
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&path).unwrap(),
        flate2::Compression::fast(),
    );
    gz.write_all(text.as_bytes()).unwrap();
    gz.finish().unwrap();
    assert_eq!(
        ReplaySource::open(&path, 1.0).unwrap().read_all().unwrap(),
        ticks
    );
    // Its length is not known ahead, as a plain file's is, but once played to its end, and
    // kept after a seek back (the seek bar then has its length).
    let mut src = ReplaySource::open(&path, 1.0).unwrap();
    assert_eq!(src.end_ms(), None);
    let mut t = Tick::default();
    while src.sample(&mut t).unwrap() == Sampled::Filled {}
    let last = ticks.last().unwrap().t_ms;
    assert_eq!(src.end_ms(), Some(last));
    src.rewind().unwrap();
    assert_eq!(src.end_ms(), Some(last));
}

#[test]
fn replay_ends_with_end_not_an_error() {
    let (text, ticks) = recorded_text(1);
    let mut src =
        ReplaySource::from_reader(std::io::Cursor::new(text), Path::new("r"), 1.0).unwrap();
    let mut t = Tick::default();
    for _ in &ticks {
        assert_eq!(src.sample(&mut t).unwrap(), Sampled::Filled);
    }
    assert_eq!(src.sample(&mut t).unwrap(), Sampled::End);
}

#[test]
fn missing_nvml_library_says_what_it_means_and_what_to_try() {
    let lib = Path::new("/nonexistent/libnvidia-ml.so.1");
    let all = gpuwatch::source::select::Selection::all();
    let err = gpuwatch::source::nvml::NvmlSource::open(
        Some(lib),
        std::time::Duration::from_secs(1),
        &all,
    )
    .err()
    .expect("no library there");
    let msg = err.to_string();
    // The path the user gave is named, and the advice is not to pass one.
    assert!(
        msg.contains("could not load /nonexistent/libnvidia-ml.so.1, given with --nvml-lib"),
        "{msg}"
    );
    assert!(!msg.contains("pass --nvml-lib"), "{msg}");
    assert!(
        msg.contains("driver's libnvidia-ml.so.1")
            && msg.contains("gpuwatch --demo")
            && msg.contains("gpuwatch replay FILE"),
        "{msg}"
    );
}

/// A source shaped like the NVML one: samples every 250 ms, but the process list comes from a
/// slower thread, a fresh list (without a host side) once a second; the ticks in between keep
/// the list as it was. The PID is this test's own, so the host side is really read from /proc.
struct NvmlShaped {
    system: SystemInfo,
    devices: Vec<gpuwatch::model::DeviceInfo>,
    t_ms: u64,
    round: u64,
}

impl Source for NvmlShaped {
    fn system(&self) -> &SystemInfo {
        &self.system
    }
    fn devices(&self) -> &[gpuwatch::model::DeviceInfo] {
        &self.devices
    }
    fn sample(&mut self, tick: &mut Tick) -> Result<Sampled, gpuwatch::source::SourceError> {
        self.t_ms += 250;
        tick.t_ms = self.t_ms;
        tick.devices.resize_with(1, Default::default);
        tick.devices[0].sample.t_ms = self.t_ms;
        tick.devices[0].sample.util_gpu_pct = Some(50.0);
        // Every third round, what NVML returns for a power reading gone wrong (0xFFFFFFFF mW).
        tick.devices[0].sample.power_w = Some(if self.round % 3 == 1 { 4.29e6 } else { 300.0 });
        // The slow thread's rounds do not line up with the sampler's once-a-second /proc reads.
        if self.round == 0 || self.round % 4 == 2 {
            tick.devices[0].processes = vec![gpuwatch::model::ProcessSample {
                pid: std::process::id(),
                gpu_mem_bytes: Some(1 << 30),
                ..Default::default()
            }];
        }
        self.round += 1;
        Ok(Sampled::Filled)
    }
    fn interval(&self) -> std::time::Duration {
        std::time::Duration::from_millis(250)
    }
    fn pids_are_local(&self) -> bool {
        true
    }
    fn label(&self) -> String {
        "nvml-shaped".into()
    }
}

/// A sampler over one GPU as NVML fills it, from its first round.
fn nvml_shaped_sampler() -> gpuwatch::sampler::Sampler {
    gpuwatch::sampler::Sampler::new(Box::new(NvmlShaped {
        system: SystemInfo::default(),
        devices: vec![gpuwatch::model::DeviceInfo::default()],
        t_ms: START_MS,
        round: 0,
    }))
}

#[test]
fn with_an_nvml_shaped_source_every_tick_carries_the_host_side() {
    let mut sampler = nvml_shaped_sampler();
    let mut with_cpu = 0;
    for step in 0..24 {
        sampler.step().unwrap();
        let p = &sampler.tick().devices[0].processes[0];
        let host = p
            .host
            .as_ref()
            .unwrap_or_else(|| panic!("tick {step}: no host side"));
        // CPU % needs two readings a second apart; from then on, every tick has it.
        if step >= 4 {
            assert!(host.cpu_pct.is_some(), "tick {step}: CPU % missing");
            with_cpu += 1;
        }
    }
    assert_eq!(with_cpu, 20);
}

/// A reading no GPU can give is a gap as the sampler hands it on: drawn as nothing, and a
/// recording of it opens again (a replay refuses a line with one).
#[test]
fn a_reading_no_gpu_can_give_is_a_gap_in_the_tick_a_replay_would_refuse() {
    let mut sampler = nvml_shaped_sampler();
    let mut power = Vec::new();
    for _ in 0..6 {
        sampler.step().unwrap();
        let s = &sampler.tick().devices[0].sample;
        assert_eq!(s.util_gpu_pct, Some(50.0));
        assert_eq!(s.impossible(), None);
        power.push(s.power_w);
    }
    assert_eq!(
        power,
        [
            Some(300.0),
            None,
            Some(300.0),
            Some(300.0),
            None,
            Some(300.0)
        ]
    );
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

#[test]
fn a_gzip_recording_cut_short_plays_up_to_the_torn_tail() {
    let (text, ticks) = recorded_text(30);
    let gz = gzip(text.as_bytes());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.jsonl.gz");
    std::fs::write(&path, &gz[..gz.len() - 200]).unwrap();
    let got = ReplaySource::open(&path, f64::INFINITY)
        .unwrap()
        .read_all()
        .expect("a torn tail is not an error");
    assert!(
        got.len() > ticks.len() / 2 && got.len() < ticks.len(),
        "{}",
        got.len()
    );
    let mut src = ReplaySource::open(&path, f64::INFINITY).unwrap();
    src.read_all().unwrap();
    let said = src.cut_short().expect("a short gzip stream is said");
    // Said as a plain file's torn line is, naming the line torn (it said "gzip stream short
    // after line N", one line before the one a plain copy names).
    assert_eq!(
        said,
        format!(
            "line {} torn mid-write (a recorder stopped while writing, or a partial copy)",
            got.len() + 2
        )
    );
    // Cut between two ticks, as a recorder killed after its flush leaves it (every tick whole,
    // the gzip trailer missing): every tick reads, and what is said says so (it said "gzip
    // stream short", as if a tick were lost).
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(text.as_bytes()).unwrap();
    enc.flush().unwrap();
    let flushed = enc.get_ref().clone();
    std::fs::write(&path, &flushed).unwrap();
    let mut src = ReplaySource::open(&path, f64::INFINITY).unwrap();
    assert_eq!(src.read_all().unwrap().len(), ticks.len());
    assert_eq!(
        src.cut_short().as_deref(),
        Some(
            format!(
                "gzip stream ends after line {} without its trailer (a recorder stopped before \
                 closing it, or a partial copy); every tick in it was read",
                ticks.len() + 1
            )
            .as_str()
        )
    );
    assert_eq!(got[..], ticks[..got.len()]);
}

/// A gzip stream cut before its first line is whole reads as a cut header.
#[test]
fn a_gzip_recording_cut_in_its_header_says_so() {
    let (text, _) = recorded_text(3);
    let gz = gzip(text.as_bytes());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.jsonl.gz");
    // Cut in its first bytes, before a line is whole: said so, with what to do (it was
    // "cannot read …: unexpected end of file", or "incomplete deflate stream").
    // The advice is a plain recording's with its header cut; one byte (0x1f) is a gzip file
    // cut short, not text that "is not a recording".
    for keep in [1, 2, 20, 200] {
        std::fs::write(&path, &gz[..keep]).unwrap();
        let err = ReplaySource::open(&path, f64::INFINITY)
            .err()
            .expect("refused")
            .to_string();
        assert!(
            err.contains(
                "cut.jsonl.gz: its header (line 1) is cut short, so no tick can be read (its gzip \
                 stream ends inside it: "
            ) && err.ends_with(
                "; a recorder stopped while writing its first line, or a partial copy); copy it \
                 again if it is a copy, else record again"
            ),
            "{keep}: {err}"
        );
    }
    // Damaged rather than cut: said so.
    let mut damaged = gz[..10].to_vec();
    damaged.extend_from_slice(&[0xff; 40]);
    std::fs::write(&path, &damaged).unwrap();
    let err = ReplaySource::open(&path, f64::INFINITY)
        .err()
        .expect("refused")
        .to_string();
    assert!(
        err.contains("its header (line 1) cannot be read (its gzip stream is damaged inside it: ")
            && err.contains("; a damaged copy, or not a gzip file); copy it again"),
        "{err}"
    );
}

#[test]
fn a_decompression_bomb_is_refused_naming_the_limit() {
    // A valid header, then 160 lines of 1 MiB of spaces: about 160 KiB compressed, a
    // thousand times less than it expands to.
    let (text, _) = recorded_text(1);
    let header = text.lines().next().unwrap();
    let mut plain = format!("{header}\n").into_bytes();
    let blank = [vec![b' '; (1 << 20) - 1], vec![b'\n']].concat();
    for _ in 0..160 {
        plain.extend_from_slice(&blank);
    }
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(&plain).unwrap();
    let gz = enc.finish().unwrap();
    assert!(
        gz.len() * 500 < plain.len(),
        "{} bytes compressed",
        gz.len()
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bomb.jsonl.gz");
    std::fs::write(&path, gz).unwrap();
    drop(plain);
    let e = ReplaySource::open(&path, f64::INFINITY)
        .unwrap()
        .read_all()
        .unwrap_err()
        .to_string();
    assert!(e.contains("expands more than 200 times"), "{e}");
    // Hostile, not damaged: "copy it again" sent a user after a bomb (helper-28).
    assert!(
        !e.contains("damaged") && !e.contains("copy it again"),
        "{e}"
    );
}

#[test]
fn an_endless_line_is_refused_naming_the_limit() {
    let e = ReplaySource::open(Path::new("/dev/zero"), f64::INFINITY)
        .err()
        .expect("refused")
        .to_string();
    assert!(
        e.ends_with(
            "/dev/zero:1: not a gpuwatch recording (where its header should be, the line is \
             longer than 16 MiB)"
        ),
        "{e}"
    );
}

#[test]
fn snapshots_are_recognised_by_their_format_field_gzipped_or_not() {
    let (infos, ticks) = sim_ticks(Scenario::HANG, 1, 20, START_MS);
    let dir = tempfile::tempdir().unwrap();
    // A recording whose header mentions the snapshot format's name is still a recording.
    let rec = dir.path().join("rec.jsonl");
    let header = Header::new(
        &SystemInfo {
            host: "gpuwatch-snapshot".into(),
            ..Default::default()
        },
        &infos,
        250,
    );
    let mut r = Recorder::create(&rec, &header, false).unwrap();
    for t in &ticks {
        r.write(t).unwrap();
    }
    drop(r);
    assert_eq!(
        ReplaySource::open(&rec, f64::INFINITY)
            .unwrap()
            .read_all()
            .unwrap()
            .len(),
        ticks.len()
    );
    // A snapshot, gzipped: replays.
    let snap =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/examples/h200-hang.json"))
            .unwrap();
    let gz = dir.path().join("snap.json.gz");
    std::fs::write(&gz, gzip(&snap)).unwrap();
    let mut src = ReplaySource::open(&gz, f64::INFINITY).unwrap();
    assert!(src.label().contains("snap.json.gz"));
    assert!(!src.read_all().unwrap().is_empty());
}

#[test]
#[allow(unsafe_code)] // mkfifo(3): a real FIFO to replay from
fn a_fifo_is_read_once_and_plays() {
    let (text, ticks) = recorded_text(10);
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("rec.fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads a valid NUL-terminated path and has no other precondition.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(fifo, text).unwrap())
    };
    let got = ReplaySource::open(&fifo, f64::INFINITY)
        .unwrap()
        .read_all()
        .unwrap();
    writer.join().unwrap();
    assert_eq!(got, ticks);
}

#[test]
fn more_gpus_or_processes_than_any_node_has_are_refused_naming_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let infos = vec![gpuwatch::model::DeviceInfo::default(); 1025];
    let many = dir.path().join("gpus.jsonl");
    write_recording(&many, &[], &infos);
    let e = ReplaySource::open(&many, f64::INFINITY)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("1025 GPUs, more than the 1024"), "{e}");
    let (infos, mut ticks) = sim_ticks(Scenario::Healthy, 1, 1, START_MS);
    ticks[0].devices[0].processes = vec![gpuwatch::model::ProcessSample::default(); 4097];
    let crowded = dir.path().join("procs.jsonl");
    write_recording(&crowded, &ticks, &infos);
    let e = ReplaySource::open(&crowded, f64::INFINITY)
        .unwrap()
        .read_all()
        .unwrap_err()
        .to_string();
    assert!(e.contains("4097 processes on one GPU"), "{e}");
}
