//! Python stacks read from real processes the tests start (python3 is on every machine these
//! tests run on): a script in known places, a loop starved by a stand-in `DataLoader`, a server
//! sleeping between requests; the frames and lines read must be the known ones. A process that
//! is not Python, one that has exited, and one gpuwatch may not read give the documented
//! messages.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use gpuwatch::model::stack::{StackBurst, StackClass, StackOutcome};
use gpuwatch::stack::reader::Reader;
use gpuwatch::stack::Plan;

struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/python")
        .join(name)
        .display()
        .to_string()
}

/// Starts `python3 SCRIPT ARGS` and waits for it to print "ready".
fn python(script: &str, args: &[&str]) -> Killed {
    let mut child = Command::new("python3")
        .arg(fixture(script))
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    // Ready is printed just before the last call: let the interpreter get into it.
    std::thread::sleep(Duration::from_millis(200));
    Killed(child)
}

fn burst(pid: u32, samples: u32) -> StackBurst {
    let plan = Plan {
        samples,
        every: Duration::from_millis(20),
        children: true,
    };
    gpuwatch::stack::sample(&mut Reader::default(), pid, &plan, gpuwatch::model::now_ms)
}

#[test]
fn every_thread_is_read_where_it_is_with_its_file_line_and_code() {
    let p = python("threads.py", &[]);
    let b = burst(p.0.id(), 10);
    assert_eq!(b.outcome, StackOutcome::Read, "{b:?}");
    assert_eq!((b.samples, b.read), (10, 10));
    let main = b.main_thread().expect("the main thread is read");
    assert_eq!(main.name.as_deref(), Some("MainThread"));
    let top = main.top().unwrap();
    assert_eq!(
        (top.function.as_str(), top.line, top.code.as_deref()),
        ("wait_here", 8, Some("time.sleep(1000)"))
    );
    assert_eq!(top.file, fixture("threads.py"));
    assert_eq!(main.frames[1].function, "<module>");
    assert_eq!(main.frames[1].line, 20);
    assert_eq!(
        (main.class, main.class_samples),
        (StackClass::IdleWaiting, 10)
    );

    let thread = |name: &str| {
        b.threads
            .iter()
            .find(|t| t.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("no thread {name}: {b:?}"))
    };
    let spinner = thread("spinner");
    assert_eq!(spinner.top().unwrap().function, "spin");
    assert!(
        matches!(spinner.top().unwrap().line, 12 | 13),
        "{spinner:?}"
    );
    assert_eq!(spinner.class, StackClass::PythonBusy, "{spinner:?}");
    assert!(
        spinner.gil > 0,
        "the spinning thread holds the GIL: {spinner:?}"
    );
    let consumer = thread("consumer");
    assert_eq!(consumer.class, StackClass::IdleWaiting, "{consumer:?}");
    let user = consumer.user_frame().unwrap();
    assert_eq!(
        (user.function.as_str(), user.line, user.code.as_deref()),
        ("blocked", 16, Some("q.get()"))
    );
    assert!(
        consumer
            .frames
            .iter()
            .any(|f| f.function.ends_with("get") && f.file.ends_with("queue.py")),
        "{consumer:?}"
    );
    assert_eq!(b.threads.len(), 3, "{b:?}");
    assert!(b.threads[0].main, "the main thread comes first");
}

#[test]
fn a_starved_loop_reads_as_data_loading_and_a_sleeping_server_as_idle() {
    let p = python("loader.py", &[]);
    let b = burst(p.0.id(), 8);
    let main = b.main_thread().unwrap();
    assert_eq!(
        (main.class, main.class_samples),
        (StackClass::DataLoading, 8),
        "{b:?}"
    );
    assert_eq!(b.main_class(), Some((StackClass::DataLoading, 1.0)));
    let user = main.user_frame().unwrap();
    assert_eq!(
        (user.function.as_str(), user.line, user.code.as_deref()),
        ("train", 14, Some("for batch in loader:"))
    );
    assert!(main.frames.iter().any(|f| f.function.ends_with("__next__")));

    let p = python("loader.py", &["sleep"]);
    let b = burst(p.0.id(), 8);
    let main = b.main_thread().unwrap();
    assert_eq!(main.class, StackClass::IdleWaiting, "{b:?}");
    // The comment on the line is not kept: it could hold anything.
    assert_eq!(
        main.top().unwrap().code.as_deref(),
        Some("time.sleep(1000)")
    );
}

#[test]
fn a_process_that_is_not_python_or_has_exited_says_so() {
    let sleeper = Killed(Command::new("sleep").arg("30").spawn().unwrap());
    let b = burst(sleeper.0.id(), 3);
    assert_eq!(b.outcome, StackOutcome::NotPython, "{b:?}");
    assert_eq!(b.read, 0);
    let m = b.message.unwrap();
    assert!(
        m.contains("is not a Python process") && m.contains("sleep"),
        "{m}"
    );

    let mut gone = Command::new("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait().unwrap();
    let b = burst(pid, 3);
    assert_eq!(b.outcome, StackOutcome::Gone, "{b:?}");
    assert_eq!(
        b.message.as_deref(),
        Some(&*format!("no process {pid}: it has exited (or never ran)"))
    );
}

#[test]
fn stacks_prints_every_thread_and_json_is_the_burst() {
    let p = python("threads.py", &[]);
    let pid = p.0.id().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .args(["stacks", &pid, "--samples", "4"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains(&format!("pid {pid}")), "{text}");
    assert!(
        text.contains("main thread: idle, waiting for work in 4 of 4 samples"),
        "{text}"
    );
    assert!(
        text.contains("wait_here (") && text.contains("threads.py:8)  time.sleep(1000)"),
        "{text}"
    );
    assert!(
        text.contains("thread spinner: Python busy on the CPU"),
        "{text}"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .args(["stacks", &pid, "--samples", "2", "--json"])
        .output()
        .unwrap();
    let bursts: Vec<StackBurst> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(bursts.len(), 1);
    assert_eq!(bursts[0].pid, p.0.id());
    assert_eq!(bursts[0].read, 2);
}

#[test]
fn stacks_of_a_process_that_is_not_python_exits_1_saying_so() {
    let sleeper = Killed(Command::new("sleep").arg("30").spawn().unwrap());
    let out = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .args(["stacks", &sleeper.0.id().to_string(), "--samples", "1"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("is not a Python process (sleep)"), "{text}");
}

/// Another user's process, read by gpuwatch run as `nobody` (through `setpriv`): not
/// permitted, said once, with the ways to allow it.
#[test]
#[ignore = "needs root, to run gpuwatch as another user (setpriv): .ci/run runs it"]
fn a_process_gpuwatch_may_not_read_gives_the_ways_to_allow_it() {
    let p = python("threads.py", &[]);
    let bin = env!("CARGO_BIN_EXE_gpuwatch");
    let out = Command::new("setpriv")
        .args([
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .args([bin, "stacks", &p.0.id().to_string(), "--samples", "2"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("not permitted to read pid"), "{text}");
    assert!(
        text.contains("sudo setcap cap_sys_ptrace+ep") && text.contains("SYS_PTRACE"),
        "{text}"
    );
    assert_eq!(
        text.matches("not permitted").count(),
        1,
        "said once: {text}"
    );
}

/// A live-like source: one H200-shaped GPU at a fifth of its TDP, holding one real local
/// process (`pid`).
struct LocalGpu {
    system: gpuwatch::model::SystemInfo,
    devices: Vec<gpuwatch::model::DeviceInfo>,
    pid: u32,
}

impl gpuwatch::source::Source for LocalGpu {
    fn system(&self) -> &gpuwatch::model::SystemInfo {
        &self.system
    }
    fn devices(&self) -> &[gpuwatch::model::DeviceInfo] {
        &self.devices
    }
    fn sample(
        &mut self,
        tick: &mut gpuwatch::model::Tick,
    ) -> Result<gpuwatch::source::Sampled, gpuwatch::source::SourceError> {
        let t = gpuwatch::model::now_ms();
        tick.t_ms = t;
        let d = &mut tick.devices[0];
        d.sample = gpuwatch::model::DeviceSample {
            t_ms: t,
            util_gpu_pct: Some(12.0),
            power_w: Some(150.0),
            mem_used_bytes: Some(8 << 30),
            ..Default::default()
        };
        d.processes.resize_with(1, Default::default);
        d.processes[0].pid = self.pid;
        d.processes[0].gpu_mem_bytes = Some(8 << 30);
        Ok(gpuwatch::source::Sampled::Filled)
    }
    fn interval(&self) -> Duration {
        Duration::from_millis(250)
    }
    fn pids_are_local(&self) -> bool {
        true
    }
    fn label(&self) -> String {
        "local test GPU".into()
    }
}

/// The whole path live: a GPU drawing a fifth of its TDP makes the rules want its process's
/// stacks; the stack thread reads them; the sampler brings the burst into a tick, and the
/// history keeps it for the rules and the screen.
#[test]
fn a_gpu_drawing_little_has_its_process_stacks_read_into_the_ticks_and_the_history() {
    use gpuwatch::pacer::{drive, Pace, Plan as Run};
    let p = python("loader.py", &[]);
    let pid = p.0.id();
    let source = LocalGpu {
        system: gpuwatch::model::SystemInfo::default(),
        devices: vec![gpuwatch::model::DeviceInfo {
            name: "NVIDIA H200".into(),
            power_limit_default_w: Some(700.0),
            memory_total_bytes: Some(140 << 30),
            ..Default::default()
        }],
        pid,
    };
    let link = gpuwatch::stack::burst::StackLink::new(
        (Plan::EVIDENCE, Duration::from_secs(20)),
        (Plan::BACKGROUND, Duration::from_secs(60)),
    );
    let mut store = gpuwatch::store::Store::new(
        &source,
        Duration::from_secs(60),
        gpuwatch::config::Thresholds::default(),
    )
    .unwrap()
    .with_stacks(Some(link.clone()));
    let mut sampler =
        gpuwatch::sampler::Sampler::new(Box::new(source)).with_stacks(Some(link.clone()));
    let stop = std::sync::atomic::AtomicBool::new(false);
    let mut carried = Vec::new();
    let run = Run {
        pace: Pace::Real,
        span: Some(Duration::from_secs(12)),
        ticks: None,
    };
    drive(&mut sampler, &run, &stop, |taken| {
        carried.extend(taken.tick.stacks.iter().map(|b| b.pid));
        store.absorb(taken.tick, taken.cost);
        if store.history().stacks_of(pid).is_some() {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(())
    })
    .unwrap();
    link.stop();
    assert_eq!(carried, vec![pid], "one burst, carried by one tick");
    let b = store
        .history()
        .stacks_of(pid)
        .expect("the history keeps it");
    assert_eq!(
        b.main_class(),
        Some((StackClass::DataLoading, 1.0)),
        "{b:?}"
    );
    // Every read of the burst succeeded. Whether it was the look now and then or evidence
    // (starved timed on this idle GPU) depends on which the rules asked first: the plan each
    // gets is the test above.
    assert_eq!(b.read, b.samples, "{b:?}");
    assert!(
        [Plan::BACKGROUND.samples, Plan::EVIDENCE.samples].contains(&b.samples),
        "{b:?}"
    );
}

#[test]
fn past_32_threads_the_main_one_is_kept_and_the_rest_counted() {
    let p = python("many_threads.py", &[]);
    let b = burst(p.0.id(), 3);
    assert_eq!(
        b.threads.len(),
        gpuwatch::model::stack::MAX_THREADS,
        "{b:?}"
    );
    assert_eq!(b.threads_left_out, 41 - 32, "{b:?}");
    let main = b.main_thread().expect("the main thread is kept");
    assert_eq!(main.name.as_deref(), Some("MainThread"));
    assert_eq!(main.top().unwrap().function, "main_sleep");
}

/// A process the rules want now and then (its GPU draws little, no cause on it) is read with
/// the short background burst; one they want as evidence with the full one. The background
/// look was most of `serve`'s stack thread on the H100 (run 81), so it reads half as often.
#[test]
fn a_background_look_reads_the_short_plan_and_evidence_the_full_one() {
    use gpuwatch::stack::burst::StackLink;
    let p = python("loader.py", &["sleep"]);
    let pid = p.0.id();
    let plan = |samples| Plan {
        samples,
        every: Duration::from_millis(5),
        children: false,
    };
    let link = StackLink::new(
        (plan(4), Duration::from_millis(50)),
        (plan(2), Duration::from_secs(3600)),
    );
    let next_burst = || {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let mut got = Vec::new();
        while got.is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            link.take_done(&mut got);
        }
        got.pop().expect("a burst within 20 s")
    };
    link.want(&[(pid, false)]);
    assert_eq!(next_burst().samples, 2, "the background look");
    link.want(&[(pid, true)]);
    assert_eq!(next_burst().samples, 4, "evidence");
    link.stop();
}

/// Evidence that two bursts in a row found in the same place is read again at the background
/// pace, not the urgent one: a warning open for hours re-read a loop waiting in one line every
/// 15 s (run 82: most of the stack thread's CPU beside the overhead runs' load).
#[test]
fn evidence_found_in_the_same_place_twice_is_read_at_the_background_pace() {
    use gpuwatch::stack::burst::StackLink;
    let p = python("loader.py", &["sleep"]);
    let pid = p.0.id();
    let plan = Plan {
        samples: 2,
        every: Duration::from_millis(5),
        children: false,
    };
    let link = StackLink::new(
        (plan, Duration::from_millis(100)),
        (plan, Duration::from_secs(3600)),
    );
    link.want(&[(pid, true)]);
    let mut got = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    while std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        link.take_done(&mut got);
    }
    link.stop();
    // The first burst at once, the second 100 ms later: the same place, so no third.
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].main_class(), got[1].main_class());
}

/// A live pipeline's first look for the rules waits past the release of start-up's pages
/// (`FIRST_LOOK`): a look made before it added 1 MiB to start-up's resident set (run 96). The
/// user's ask is read at once all the same.
#[test]
fn the_rules_first_look_waits_and_the_users_ask_does_not() {
    use gpuwatch::stack::burst::StackLink;
    use std::time::Instant;
    let p = python("loader.py", &["sleep"]);
    let pid = p.0.id();
    let plan = Plan {
        samples: 1,
        every: Duration::from_millis(5),
        children: false,
    };
    let wanted = StackLink::new(
        (plan, Duration::from_secs(3600)),
        (plan, Duration::from_secs(3600)),
    )
    .first_look_after(Duration::from_millis(800));
    // How long after `since` the link's first burst came (within 20 s).
    let first_burst = |link: &StackLink, since: Instant| {
        let mut got = Vec::new();
        while got.is_empty() && since.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(10));
            link.take_done(&mut got);
        }
        link.stop();
        assert_eq!(got.len(), 1, "one burst within 20 s");
        since.elapsed()
    };
    let created = Instant::now();
    wanted.want(&[(pid, true)]);
    let waited = first_burst(&wanted, created);
    assert!(waited >= Duration::from_millis(800), "read {waited:?} in");

    let asked = StackLink::new(
        (plan, Duration::from_secs(3600)),
        (plan, Duration::from_secs(3600)),
    )
    .first_look_after(Duration::from_secs(3600));
    let created = Instant::now();
    asked.ask(pid);
    let waited = first_burst(&asked, created);
    assert!(
        waited < Duration::from_secs(20),
        "the ask read at once, not in an hour"
    );
}
