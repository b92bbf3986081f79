//! End to end: the real binary in tmux on a replay of the H200 recording. Opens a process,
//! quits, and checks the screen and that the terminal was restored. Needs tmux (.ci/run
//! installs it and runs these `#[ignore]`d tests).

mod common;

use std::process::Command;
use std::thread::sleep;
use std::time::{Duration, Instant};

struct Tmux {
    session: String,
}

impl Tmux {
    fn start(name: &str, cmd: &str, w: u16, h: u16) -> Tmux {
        let session = format!("gpuwatch-e2e-{name}-{}", std::process::id());
        let ok = Command::new("tmux")
            .args([
                "new-session",
                "-d",
                "-s",
                &session,
                "-x",
                &w.to_string(),
                "-y",
                &h.to_string(),
                cmd,
            ])
            .status()
            .expect("tmux must be installed (apt-get install tmux)");
        assert!(ok.success());
        Tmux { session }
    }
    fn keys(&self, keys: &[&str]) {
        for k in keys {
            Command::new("tmux")
                .args(["send-keys", "-t", &self.session, k])
                .status()
                .unwrap();
            sleep(Duration::from_millis(150));
        }
    }
    fn screen(&self) -> String {
        String::from_utf8_lossy(
            &Command::new("tmux")
                .args(["capture-pane", "-p", "-t", &self.session])
                .output()
                .unwrap()
                .stdout,
        )
        .into()
    }
    fn alternate_screen(&self) -> bool {
        let out = Command::new("tmux")
            .args(["display", "-p", "-t", &self.session, "#{alternate_on}"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim() == "1"
    }
    /// The screen with its colours and attributes as escape sequences.
    fn screen_with_colours(&self) -> String {
        String::from_utf8_lossy(
            &Command::new("tmux")
                .args(["capture-pane", "-p", "-e", "-t", &self.session])
                .output()
                .unwrap()
                .stdout,
        )
        .into()
    }
    /// Waits until the screen contains `needle` (the program draws asynchronously).
    fn wait_for(&self, needle: &str) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if s.contains(needle) || start.elapsed() > Duration::from_secs(20) {
                return s;
            }
            sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.session])
            .status();
    }
}

#[test]
#[ignore = "needs tmux: .ci/run installs it"]
fn replay_open_a_process_and_quit_restores_the_terminal() {
    common::require("tmux");
    let bin = env!("CARGO_BIN_EXE_gpuwatch");
    let rec = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/h200/phases.jsonl.gz"
    );
    // Speed 40: the spin_hang phase (126–167 s) plays about 3–4 s after start.
    let t = Tmux::start(
        "replay",
        &format!("{bin} replay {rec} --speed 40; echo gpuwatch-exit=$?; sleep 30"),
        100,
        30,
    );
    let screen = t.wait_for("‼ HANG");
    assert!(
        screen.contains("GPUs (1)") && screen.contains("H200"),
        "{screen}"
    );
    assert!(
        screen.contains("‼ HANG"),
        "the hang phase shows its badge:\n{screen}"
    );
    assert!(t.alternate_screen());
    t.keys(&["Tab", "Tab", "Enter"]);
    let screen = t.wait_for("$ python3");
    assert!(
        screen.contains("pid 454 on GPU 0") && screen.contains("gpu_workloads.py"),
        "process view:\n{screen}"
    );
    assert!(screen.contains("threads · children"), "{screen}");
    t.keys(&["Escape"]);
    let screen = t.wait_for("Processes (1)");
    assert!(
        screen.contains("Processes (1)"),
        "back on the main screen:\n{screen}"
    );
    t.keys(&["q"]);
    let screen = t.wait_for("gpuwatch-exit=");
    assert!(screen.contains("gpuwatch-exit=0"), "clean exit:\n{screen}");
    assert!(!t.alternate_screen(), "terminal left the alternate screen");
    assert!(
        !screen.contains("GPUs (1)"),
        "the monitor's screen is gone:\n{screen}"
    );
}

/// A replay that stopped at a corrupt line says why again once its screen is gone, and exits
/// 2 as `diagnose` does for that file: it exited 0 without a word (helper-30).
/// A recording of the demo, `duration` of sample time written at once, at `path`.
fn demo_recording(path: &std::path::Path, duration: &str) -> std::path::PathBuf {
    let made = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .args(["record", "--demo", "--fast", "--duration", duration, "-o"])
        .arg(path)
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    path.to_path_buf()
}

#[test]
#[ignore = "needs tmux: .ci/run installs it"]
fn a_replay_stopped_by_a_corrupt_line_says_so_on_quitting_and_exits_2() {
    common::require("tmux");
    let bin = env!("CARGO_BIN_EXE_gpuwatch");
    let dir = tempfile::tempdir().unwrap();
    let rec = demo_recording(&dir.path().join("bad.jsonl"), "2s");
    let text = std::fs::read_to_string(&rec).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[3] = "{\"t_ms\": garbage";
    std::fs::write(&rec, lines.join("\n") + "\n").unwrap();
    let t = Tmux::start(
        "corrupt",
        &format!(
            "{bin} replay {}; echo gpuwatch-exit=$?; sleep 30",
            rec.display()
        ),
        100,
        30,
    );
    t.wait_for("replay stopped:");
    t.keys(&["q"]);
    let screen = t.wait_for("gpuwatch-exit=");
    assert!(screen.contains("gpuwatch-exit=2"), "{screen}");
    assert!(
        screen.contains("gpuwatch: replay stopped:")
            && screen.contains("bad.jsonl:4: corrupt tick"),
        "{screen}"
    );
}

/// A replay from a pipe that has sent nothing yet leaves the terminal as it is (a program
/// earlier in the pipeline may be reading a password from it), and what is typed while it
/// waits is dropped when the screen opens: a `q` typed then quit the screen the moment the
/// first line came. `replay -` with the terminal as its standard input is refused at once (it
/// waited for a recording typed at the keyboard, and no key stopped it), and so is a terminal
/// named by a path (`replay /dev/stdin`) or read by a headless command (`diagnose --replay -`).
#[test]
#[ignore = "needs tmux: .ci/run installs it"]
fn keys_typed_while_a_pipe_is_awaited_are_not_the_screens() {
    common::require("tmux");
    let bin = env!("CARGO_BIN_EXE_gpuwatch");
    let dir = tempfile::tempdir().unwrap();
    let rec = demo_recording(&dir.path().join("rec.jsonl"), "20s");
    let t = Tmux::start(
        "typed-ahead",
        &format!(
            "(sleep 3; cat {}) | {bin} replay -; echo gpuwatch-exit=$?; sleep 30",
            rec.display()
        ),
        200,
        30,
    );
    let waiting = t.wait_for("(Ctrl-C stops)");
    assert!(
        waiting.contains("waiting for a recording on standard input"),
        "{waiting}"
    );
    t.keys(&["q"]);
    let open = t.wait_for("q quit");
    assert!(t.alternate_screen(), "the screen opened: {open}");
    sleep(Duration::from_millis(800));
    assert!(
        t.alternate_screen() && !t.screen().contains("gpuwatch-exit="),
        "the q typed while waiting quit the screen: {}",
        t.screen()
    );
    t.keys(&["q"]);
    let screen = t.wait_for("gpuwatch-exit=");
    assert!(screen.contains("gpuwatch-exit=0"), "{screen}");

    let t = Tmux::start(
        "stdin-tty",
        &format!("{bin} replay -; echo gpuwatch-exit=$?; sleep 30"),
        200,
        30,
    );
    let screen = t.wait_for("gpuwatch-exit=");
    assert!(
        screen
            .contains("`replay -` reads a recording from standard input, and it is this terminal")
            && screen.contains("gpuwatch-exit=2"),
        "{screen}"
    );
    // Named by a path, or read by a headless command, the terminal waited in silence for
    // lines typed (helper-34, helper-35).
    let t = Tmux::start(
        "devstdin-tty",
        &format!(
            "{bin} replay /dev/stdin; echo gpuwatch-exit=$?; {bin} diagnose --replay -; \
             echo diagnose-exit=$?; sleep 30"
        ),
        200,
        30,
    );
    let screen = t.wait_for("diagnose-exit=");
    assert!(
        screen.contains("/dev/stdin is a terminal, not a recording")
            && screen.contains("gpuwatch-exit=2")
            && screen.contains("standard input is a terminal, not a recording")
            && screen.contains("diagnose-exit=2"),
        "{screen}"
    );
}

/// A file given as standard input (`replay - < rec.jsonl`) plays as the same file named does:
/// its length is shown and a seek goes back. It was read as a stream: "2s played", and a seek
/// back said "cannot go back in a stream" (helper-35).
#[test]
#[ignore = "needs tmux: .ci/run installs it"]
fn a_file_given_as_standard_input_shows_its_length_and_seeks_back_at_80x24() {
    common::require("tmux");
    let bin = env!("CARGO_BIN_EXE_gpuwatch");
    let dir = tempfile::tempdir().unwrap();
    let rec = demo_recording(&dir.path().join("rec.jsonl"), "60s");
    let t = Tmux::start(
        "stdin-file",
        &format!(
            "{bin} replay - < {}; echo gpuwatch-exit=$?; sleep 30",
            rec.display()
        ),
        80,
        24,
    );
    let screen = t.wait_for("s / 60s");
    assert!(screen.contains("s / 60s"), "its length, shown:\n{screen}");
    t.keys(&["Space", "{"]);
    let screen = t.wait_for("PAUSED (space plays)  0s / 60s");
    assert!(
        screen.contains("0s / 60s") && !screen.contains("cannot go back"),
        "a seek back to the start:\n{screen}"
    );
    t.keys(&["q"]);
    let screen = t.wait_for("gpuwatch-exit=");
    assert!(screen.contains("gpuwatch-exit=0"), "{screen}");
}

/// The hung demo in tmux, drawn; returns the session and the monitor's PID. The monitor runs
/// as a job-control shell runs a command (tests/fixtures/job.py): in a process group of its
/// own that has the terminal, with a parent in the same session, so that a stop has someone
/// to continue it and the kernel carries it out.
fn demo_with_pid(name: &str) -> (Tmux, i32) {
    demo_in(name, true)
}

/// As `demo_with_pid`; `job_control: false` runs it as `tmux new-session CMD` does, in a
/// process group no shell can continue (an orphaned group, where the kernel drops stops).
fn demo_in(name: &str, job_control: bool) -> (Tmux, i32) {
    let bin = env!("CARGO_BIN_EXE_gpuwatch");
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let job = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/job.py");
    let cmd = if job_control {
        format!(
            "python3 {job} {} {bin} --demo=hang; sleep 30",
            pidfile.display()
        )
    } else {
        format!(
            "sh -c 'echo $$ > {}; exec {bin} --demo=hang'; echo gpuwatch-exit=$?; sleep 30",
            pidfile.display()
        )
    };
    let t = Tmux::start(name, &cmd, 100, 30);
    t.wait_for("GPUs (1)");
    assert!(t.alternate_screen());
    let pid = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    (t, pid)
}

/// The state letter of process `pid` (R, S, T for stopped…).
fn state(pid: i32) -> char {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    stat.rsplit(") ").next().unwrap().chars().next().unwrap()
}

/// Sends `signal` to the monitor this test started.
#[allow(unsafe_code)] // kill(2): the test sends the signals a terminal would
fn signal(pid: i32, signal: i32) {
    // SAFETY: kill(2) on the pid of the program this test started.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
}

#[test]
#[ignore = "needs tmux: .ci/run installs it"]
fn sigterm_restores_the_terminal() {
    common::require("tmux");
    let (t, pid) = demo_with_pid("sigterm");
    signal(pid, libc::SIGTERM);
    let screen = t.wait_for("gpuwatch-exit=");
    assert!(screen.contains("gpuwatch-exit=0"), "{screen}");
    assert!(!t.alternate_screen());
}

impl Tmux {
    /// Waits (10 s at most) until the pane is, or is not, on the alternate screen.
    fn wait_alternate(&self, on: bool) {
        let start = Instant::now();
        while self.alternate_screen() != on && start.elapsed() < Duration::from_secs(10) {
            sleep(Duration::from_millis(100));
        }
    }
    fn flag(&self, name: &str) -> String {
        let out = Command::new("tmux")
            .args([
                "display",
                "-p",
                "-t",
                &self.session,
                &format!("#{{{name}}}"),
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

#[test]
#[ignore = "needs tmux: .ci/run installs it"]
fn sigtstp_gives_the_terminal_back_and_sigcont_takes_it_again() {
    common::require("tmux");
    let (t, pid) = demo_with_pid("sigtstp");
    signal(pid, libc::SIGTSTP);
    t.wait_alternate(false);
    assert!(!t.alternate_screen(), "stopped: the shell's screen is back");
    assert_eq!(t.flag("cursor_flag"), "1", "cursor shown");
    assert_eq!(t.flag("mouse_any_flag"), "0", "mouse reporting off");
    sleep(Duration::from_millis(300));
    assert_eq!(state(pid), 'T', "the process is stopped");
    signal(pid, libc::SIGCONT);
    t.wait_alternate(true);
    assert!(
        t.alternate_screen(),
        "resumed: the monitor takes the terminal again"
    );
    let screen = t.wait_for("GPUs (1)");
    assert!(screen.contains("GPUs (1)"), "redrawn in full:\n{screen}");
    // Ctrl-Z typed in the monitor (raw mode delivers it as a key) does the same.
    t.keys(&["C-z"]);
    t.wait_alternate(false);
    assert!(!t.alternate_screen(), "Ctrl-Z gives the terminal back");
    signal(pid, libc::SIGCONT);
    t.wait_for("GPUs (1)");
    t.keys(&["q"]);
    let screen = t.wait_for("gpuwatch-exit=");
    assert!(screen.contains("gpuwatch-exit=0"), "{screen}");
}

/// Thirty TSTP/CONT pairs sent as fast as kill(2) goes, CONT last, ten times: the monitor
/// ends running with the terminal taken again every time, and a later single TSTP still stops
/// it. (Catching TSTP and raising SIGSTOP by hand ended stopped in 1 of 5 trials on a loaded
/// CI run; the stop is now the kernel's own, which drops a pending TSTP when a CONT comes.
/// It failed once more, trial 9 of a CI run, while a stop seen pending and then taken back by
/// a CONT was asked for anew as if Ctrl-Z had been typed: only the key asks for one now.)
#[test]
#[ignore = "needs tmux and python3: .ci/run installs tmux"]
fn a_storm_of_stops_and_continues_ending_with_continue_leaves_it_running() {
    common::require("tmux");
    let (t, pid) = demo_with_pid("tstp-storm");
    for trial in 0..10 {
        for _ in 0..30 {
            signal(pid, libc::SIGTSTP);
            signal(pid, libc::SIGCONT);
        }
        sleep(Duration::from_secs(1));
        assert_ne!(state(pid), 'T', "trial {trial}: left stopped");
        t.wait_alternate(true);
        assert!(
            t.alternate_screen(),
            "trial {trial}: the monitor has the terminal"
        );
    }
    signal(pid, libc::SIGTSTP);
    t.wait_alternate(false);
    sleep(Duration::from_millis(300));
    assert_eq!(state(pid), 'T', "a TSTP alone still stops it");
    signal(pid, libc::SIGCONT);
    t.wait_for("GPUs (1)");
    t.keys(&["q"]);
    let screen = t.wait_for("gpuwatch-exit=");
    assert!(screen.contains("gpuwatch-exit=0"), "{screen}");
}

/// Run as `tmux new-session gpuwatch` runs it, with no shell to `fg` it: Ctrl-Z or a TSTP
/// would stop it for good, so it is dropped (as the kernel drops it for any program there) and
/// the monitor takes the terminal again. Raising SIGSTOP by hand left it stopped.
#[test]
#[ignore = "needs tmux: .ci/run installs it"]
fn with_no_shell_to_continue_it_a_stop_is_dropped_and_the_monitor_goes_on() {
    common::require("tmux");
    let (t, pid) = demo_in("orphaned", false);
    t.keys(&["C-z"]);
    sleep(Duration::from_millis(500));
    signal(pid, libc::SIGTSTP);
    sleep(Duration::from_millis(500));
    assert_ne!(state(pid), 'T', "not stopped");
    t.wait_alternate(true);
    let screen = t.wait_for("GPUs (1)");
    assert!(screen.contains("GPUs (1)"), "drawn again:\n{screen}");
    t.keys(&["q"]);
    let screen = t.wait_for("gpuwatch-exit=");
    assert!(screen.contains("gpuwatch-exit=0"), "{screen}");
}

/// The mixed demo at 80×24, as a new user's terminal: every GPU has its row and both hung GPUs
/// show HANG; the findings pane scrolls by lines down to its last line; a click on a GPU row
/// selects that GPU.
#[test]
#[ignore = "needs tmux: .ci/run installs it"]
fn at_80x24_the_mixed_demo_shows_every_gpu_and_the_findings_scroll_to_the_end() {
    common::require("tmux");
    let bin = env!("CARGO_BIN_EXE_gpuwatch");
    let t = Tmux::start("small", &format!("{bin} --demo; sleep 30"), 80, 24);
    // The demo needs its hang window (8 s of simulated time, in real time) to say HANG.
    let start = Instant::now();
    let mut screen = t.screen();
    while screen.matches("‼ HANG").count() < 2 && start.elapsed() < Duration::from_secs(40) {
        sleep(Duration::from_millis(250));
        screen = t.screen();
    }
    for gpu in 0..8 {
        assert!(
            screen.lines().any(|l| l.contains(&format!("{gpu} H200*"))),
            "GPU {gpu} has no row at 80×24:\n{screen}"
        );
    }
    assert_eq!(screen.matches("‼ HANG").count(), 2, "{screen}");
    // Findings pane: focus it and scroll past the end; the pane says when it is at the end.
    t.keys(&["Tab", " "]); // pause, so the findings stop changing under the scroll
    let screen = t.wait_for("more line");
    assert!(screen.contains("more line"), "{screen}");
    t.keys(&["End"]);
    let screen = t.wait_for("▲ end");
    assert!(
        screen.contains("▲ end (↑)"),
        "scrolled to the last line:\n{screen}"
    );
    t.keys(&[" ", "q"]);
}

#[test]
#[ignore = "needs tmux: .ci/run installs it"]
fn a_snapshot_opens_at_its_end_and_seeks_back_and_forth_at_80x24() {
    common::require("tmux");
    let bin = env!("CARGO_BIN_EXE_gpuwatch");
    let snap = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/examples/h200-hang.json");
    let t = Tmux::start(
        "seek",
        &format!("{bin} replay {snap}; echo gpuwatch-exit=$?; sleep 30"),
        80,
        24,
    );
    let screen = t.wait_for("■ end 62s / 62s");
    assert!(
        screen.contains("‼ HANG"),
        "the moment it was taken:\n{screen}"
    );
    assert!(screen.contains("[ ] { } < > seek"), "{screen}");
    // Pause, then back a minute: the start of the window, waiting there.
    t.keys(&["Space", "{"]);
    let screen = t.wait_for("‖ PAUSED (space plays) 2s / 62s");
    assert!(screen.contains("╸"), "the position bar:\n{screen}");
    t.keys(&["]"]);
    t.wait_for("PAUSED (space plays) 12s / 62s");
    t.keys(&[">"]);
    let screen = t.wait_for("■ end 62s / 62s");
    assert!(screen.contains("‼ HANG"), "{screen}");
    t.keys(&["q"]);
    let screen = t.wait_for("gpuwatch-exit=");
    assert!(screen.contains("gpuwatch-exit=0"), "clean exit:\n{screen}");
}

/// Seek keys typed faster than the replay redraws add up: five `]` in one burst are 50 s,
/// not 10 (they were lost while the first seek was on its way).
#[test]
#[ignore = "needs tmux: .ci/run installs it"]
fn seek_keys_typed_at_once_are_all_applied() {
    common::require("tmux");
    let bin = env!("CARGO_BIN_EXE_gpuwatch");
    let snap = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/examples/h200-hang.json");
    let t = Tmux::start(
        "seekburst",
        &format!("{bin} replay {snap}; echo gpuwatch-exit=$?; sleep 30"),
        120,
        40,
    );
    t.wait_for("■ end 62s / 62s");
    t.keys(&["Space", "<"]);
    let screen = t.wait_for("‖ PAUSED (space plays) 0s / 62s");
    assert!(screen.contains("0s / 62s"), "at the start:\n{screen}");
    // One send-keys: the five keys arrive together, as from a key held down.
    t.keys(&["]]]]]"]);
    let screen = t.wait_for("‖ PAUSED (space plays) 50s / 62s");
    assert!(
        screen.contains("50s / 62s"),
        "five seeks of 10 s:\n{screen}"
    );
    t.keys(&["[[["]);
    let screen = t.wait_for("‖ PAUSED (space plays) 20s / 62s");
    assert!(screen.contains("20s / 62s"), "three back:\n{screen}");
    t.keys(&["q"]);
    assert!(t.wait_for("gpuwatch-exit=").contains("gpuwatch-exit=0"));
}

#[test]
#[ignore = "needs tmux: .ci/run installs it"]
fn no_mouse_leaves_the_mouse_to_the_terminal_and_color_flags_win_over_no_color() {
    common::require("tmux");
    let bin = env!("CARGO_BIN_EXE_gpuwatch");
    // SGR colour codes 30-37/90-97 (foreground) or 38;5 / 38;2 (256 / true colour).
    let coloured = |s: &str| {
        s.split("\x1b[").skip(1).any(|seq| {
            let params = seq.split('m').next().unwrap_or("");
            params.split(';').any(|p| {
                matches!(p.parse::<u8>(), Ok(30..=37 | 40..=47 | 90..=97 | 100..=107)) || p == "38"
            })
        })
    };
    let cases = [
        ("mouse", "", true, false),
        ("nomouse", "--no-mouse --color never", false, false),
        ("always", "--color always", true, true),
    ];
    for (name, flags, mouse, colour) in cases {
        let t = Tmux::start(
            name,
            &format!("NO_COLOR=1 {bin} --demo {flags}; sleep 30"),
            100,
            30,
        );
        t.wait_for("GPUs (8)");
        sleep(Duration::from_millis(300));
        assert_eq!(
            t.flag("mouse_any_flag") == "1",
            mouse,
            "{name}: mouse reporting"
        );
        let screen = t.screen_with_colours();
        assert_eq!(
            coloured(&screen),
            colour,
            "{name}: colours (NO_COLOR=1 is set)"
        );
        t.keys(&["q"]);
    }
}

#[test]
#[ignore = "needs tmux: .ci/run installs it"]
fn the_screen_follows_the_terminal_when_it_is_resized() {
    common::require("tmux");
    let bin = env!("CARGO_BIN_EXE_gpuwatch");
    let t = Tmux::start("resize", &format!("{bin} --demo; sleep 30"), 80, 24);
    t.wait_for("GPU 0");
    // The widest line drawn, in cells: the panes' borders run from edge to edge.
    let widest = |s: &str| s.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    let resized = |w: u16, h: u16| {
        let ok = Command::new("tmux")
            .args(["resize-window", "-t", &t.session, "-x", &w.to_string()])
            .args(["-y", &h.to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
        // Until the frame is whole: tmux takes a frame in as it arrives, and a capture can land
        // between its first rows and its last (seen on a loaded machine: the top half at 160
        // columns, the rest blank).
        let start = Instant::now();
        loop {
            let s = t.screen();
            let last_row = s.lines().nth(usize::from(h) - 1);
            if (widest(&s) == usize::from(w) && last_row.is_some_and(|l| !l.trim().is_empty()))
                || start.elapsed() > Duration::from_secs(10)
            {
                return s;
            }
            sleep(Duration::from_millis(100));
        }
    };
    let big = resized(160, 48);
    assert_eq!(widest(&big), 160, "drawn at 160×48:\n{big}");
    assert!(
        big.lines().nth(47).is_some_and(|l| !l.trim().is_empty()),
        "{big}"
    );
    let small = resized(80, 24);
    assert_eq!(widest(&small), 80, "drawn again at 80×24:\n{small}");
    assert!(small.contains("GPU 0"), "{small}");
    t.keys(&["q"]);
}
