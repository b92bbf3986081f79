//! A replay's seeks and pause, through the real pacer and store: going back opens the file
//! again and plays to the asked moment without waiting; the end waits for a seek instead of
//! ending the sampling thread; a stream cannot go back and says so. The sampling thread runs
//! on a virtual clock and tells the test of each tick it takes in, so nothing here sleeps to
//! wait for it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use gpuwatch::app::{Action, AppState, Effect, Key};
use gpuwatch::config::Thresholds;
use gpuwatch::pacer::{spawn_with_clock, Clock, Playback, SystemClock, VirtualClock, TO_END};
use gpuwatch::sampler::Sampler;
use gpuwatch::source::replay::ReplaySource;
use gpuwatch::source::Source;
use gpuwatch::store::Store;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/h200/phases.jsonl.gz"
);

/// The real H200 recording, decompressed into a temporary file (a plain file knows its end).
fn plain_recording(dir: &Path) -> PathBuf {
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(FIXTURE).unwrap()),
        &mut text,
    )
    .unwrap();
    let path = dir.join("phases.jsonl");
    std::fs::write(&path, text).unwrap();
    path
}

fn tick_times(path: &Path) -> Vec<u64> {
    let mut src = ReplaySource::open(path, f64::INFINITY).unwrap();
    src.read_all().unwrap().iter().map(|t| t.t_ms).collect()
}

/// Counts the sampling thread's wake-ups (one per tick taken in, one at the end), so a test can
/// wait for the next one instead of polling.
#[derive(Default)]
struct Wakes {
    count: Mutex<u64>,
    changed: Condvar,
}

impl Wakes {
    fn wake(&self) {
        *self.count.lock().unwrap() += 1;
        self.changed.notify_all();
    }
    /// Waits until `done` holds for the store's view, looking again at each wake-up (at most
    /// 20 s of real time).
    fn wait_view(&self, store: &Mutex<Store>, what: &str, done: impl Fn(&Store) -> bool) -> Store {
        let start = Instant::now();
        loop {
            let seen = *self.count.lock().unwrap();
            let view = store.lock().unwrap().clone();
            if done(&view) {
                return view;
            }
            let left = Duration::from_secs(20).saturating_sub(start.elapsed());
            assert!(!left.is_zero(), "never {what}");
            let guard = self.count.lock().unwrap();
            drop(self.changed.wait_timeout_while(guard, left, |c| *c == seen));
        }
    }
}

/// A replay's sampling thread, started on a clock (a virtual one unless a test waits as a user
/// does), and what a test watches it by.
struct Playing<C = VirtualClock> {
    store: Arc<Mutex<Store>>,
    stop: Arc<AtomicBool>,
    playback: Arc<Playback>,
    clock: Arc<C>,
    wakes: Arc<Wakes>,
    thread: std::thread::JoinHandle<()>,
}

impl<C> Playing<C> {
    /// Stops the sampling thread and waits for it.
    fn finish(self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap();
    }
}

fn play(src: ReplaySource) -> Playing {
    play_on(src, Arc::new(VirtualClock::default()))
}

fn play_on<C: Clock + 'static>(src: ReplaySource, clock: Arc<C>) -> Playing<C> {
    let store = Arc::new(Mutex::new(
        Store::new(&src, Duration::from_secs(3600), Thresholds::default()).unwrap(),
    ));
    let stop = Arc::new(AtomicBool::new(false));
    let playback = Arc::new(Playback::new());
    let wakes = Arc::new(Wakes::default());
    let w = wakes.clone();
    let thread = spawn_with_clock(
        Sampler::new(Box::new(src)),
        store.clone(),
        stop.clone(),
        Some(playback.clone()),
        clock.clone(),
        move || w.wake(),
    )
    .unwrap();
    Playing {
        store,
        stop,
        playback,
        clock,
        wakes,
        thread,
    }
}

#[test]
fn a_plain_recording_knows_its_end_and_a_gzip_one_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let plain = plain_recording(dir.path());
    let last = *tick_times(&plain).last().unwrap();
    let src = ReplaySource::open(&plain, 1.0).unwrap();
    assert_eq!(src.end_ms(), Some(last));
    assert!(src.can_rewind());
    let gz = ReplaySource::open(Path::new(FIXTURE), 1.0).unwrap();
    assert_eq!(
        gz.end_ms(),
        None,
        "a gzip file is not read to its end first"
    );
    assert!(gz.can_rewind(), "a gzip file can still be opened again");

    // A recorder killed mid-write leaves a torn line: the end is the last complete tick.
    let text = std::fs::read_to_string(&plain).unwrap();
    let torn = dir.path().join("torn.jsonl");
    let mut f = std::fs::File::create(&torn).unwrap();
    f.write_all(text.as_bytes()).unwrap();
    f.write_all(b"{\"t_ms\":99999999999999,\"devices\":[{\"sam")
        .unwrap();
    drop(f);
    assert_eq!(ReplaySource::open(&torn, 1.0).unwrap().end_ms(), Some(last));
}

/// When each tick was taken in: the clock's time and the latest tick's, noted at each wake-up.
type Noted = Arc<Mutex<Vec<(Duration, Option<u64>)>>>;

/// A replay of `src` on `clock` that notes each tick as it is taken in, and pauses itself once
/// `pause_after` have been.
fn play_noting(
    src: ReplaySource,
    clock: &Arc<VirtualClock>,
    pause_after: usize,
) -> (
    Noted,
    Arc<Playback>,
    Arc<AtomicBool>,
    std::thread::JoinHandle<()>,
) {
    let store = Arc::new(Mutex::new(
        Store::new(&src, Duration::from_secs(3600), Thresholds::default()).unwrap(),
    ));
    let stop = Arc::new(AtomicBool::new(false));
    let playback = Arc::new(Playback::new());
    let seen = Noted::default();
    let (log, at, view, pb) = (seen.clone(), clock.clone(), store.clone(), playback.clone());
    let thread = spawn_with_clock(
        Sampler::new(Box::new(src)),
        store,
        stop.clone(),
        Some(playback.clone()),
        clock.clone(),
        move || {
            let latest = view.lock().unwrap().history().latest_ms();
            let mut log = log.lock().unwrap();
            log.push((at.elapsed(), latest));
            if log.len() == pause_after {
                pb.set_paused(true);
            }
        },
    )
    .unwrap();
    (seen, playback, stop, thread)
}

/// A recording played at its pace takes each tick in at its own moment, the gap before it
/// waited first. The gap was waited after, so each tick showed one gap early and the second
/// with the first (helper-34). A pause holds the wait: the tick then shows the rest of its gap
/// after the pause, not at once.
#[test]
fn a_replay_takes_each_tick_in_at_its_recorded_moment() {
    let dir = tempfile::tempdir().unwrap();
    let path = plain_recording(dir.path());
    let times = tick_times(&path);
    let clock = Arc::new(VirtualClock::default());
    // Paused for 10 s of the clock just after the fourth tick showed.
    let (seen, playback, stop, thread) =
        play_noting(ReplaySource::open(&path, 2.0).unwrap(), &clock, 4);
    assert!(clock.wait_passed(Duration::from_secs(1), Duration::from_secs(20)));
    assert_eq!(
        seen.lock().unwrap().len(),
        4,
        "the fourth tick waits, paused"
    );
    assert!(clock.wait_passed(Duration::from_secs(10), Duration::from_secs(20)));
    playback.set_paused(false);
    let start = Instant::now();
    while seen.lock().unwrap().len() < 12 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "twelve ticks never came"
        );
        std::thread::yield_now();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    thread.join().unwrap();
    let seen = seen.lock().unwrap();
    let near = |a: Duration, b: Duration| a.abs_diff(b) < Duration::from_millis(1);
    // At --speed 2, half the recorded gap.
    let gap = |k: usize| Duration::from_secs_f64((times[k] - times[k - 1]) as f64 / 2000.0);
    for (k, &(shown, latest)) in seen.iter().take(12).enumerate() {
        assert_eq!(latest, Some(times[k]), "tick {k} is the one taken in");
        let since = shown.saturating_sub(if k == 0 { shown } else { seen[k - 1].0 });
        match k {
            0 => assert_eq!(shown, Duration::ZERO, "the first tick shows at once"),
            // The pause (10 s of the clock or more: it ran on while the test let go).
            4 => assert!(
                since >= Duration::from_secs(10),
                "tick 4 came {since:?} after tick 3"
            ),
            _ => assert!(
                near(since, gap(k)),
                "tick {k} came {since:?} after the one before, its gap {:?}",
                gap(k)
            ),
        }
    }
}

/// The plain recording played at `speed` on the real clock, as a user waits, from its first
/// tick; and that tick's time.
fn playing_on_the_real_clock(dir: &Path, speed: f64) -> (Playing<SystemClock>, u64) {
    let path = plain_recording(dir);
    let first = tick_times(&path)[0];
    let src = ReplaySource::open(&path, speed).unwrap();
    let playing = play_on(src, Arc::new(SystemClock));
    let first_tick = |v: &Store| v.history().ticks() >= 1;
    playing
        .wakes
        .wait_view(&playing.store, "a first tick", first_tick);
    (playing, first)
}

/// A seek asked while the replay waits out a long gap between two ticks is acted on at once:
/// at `--speed 0.005` the H200's 250 ms ticks are 50 s apart, and a seek waited for the gap's
/// end (helper-34 saw 20 s at `--speed 0.01`). On the real clock, as a user waits.
#[test]
fn a_seek_asked_in_a_long_gap_between_ticks_is_taken_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (p, first) = playing_on_the_real_clock(dir.path(), 0.005);
    // Well inside the 50 s gap to the second tick.
    std::thread::sleep(Duration::from_millis(300));
    let asked = Instant::now();
    p.playback.seek(first + 60_000);
    p.wakes.wait_view(&p.store, "at 60 s", |v| {
        v.history().latest_ms().is_some_and(|t| t >= first + 60_000)
    });
    assert!(
        asked.elapsed() < Duration::from_secs(3),
        "the seek took {:?}",
        asked.elapsed()
    );
    p.finish();
}

/// A seek asked in a gap as short as a recorded interval is acted on at once too: such gaps
/// were slept whole, and a seek at the recorded pace showed up to 250 ms after its key
/// (helper-35 measured 200-215 ms). The screen's ask wakes the sampling thread. Ten seeks,
/// each asked at a random moment of a 250 ms gap, on the real clock.
#[test]
fn a_seek_asked_in_a_short_gap_is_taken_without_waiting_for_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let (p, first) = playing_on_the_real_clock(dir.path(), 1.0);
    let mut slowest = Duration::ZERO;
    for i in 1..=10u64 {
        std::thread::sleep(Duration::from_millis(37 * i % 250));
        let target = first + i * 30_000;
        let asked = Instant::now();
        p.playback.seek(target);
        p.wakes.wait_view(&p.store, "the seek's target", |v| {
            v.history().latest_ms().is_some_and(|t| t + 250 >= target)
        });
        slowest = slowest.max(asked.elapsed());
    }
    assert!(
        slowest < Duration::from_millis(120),
        "the slowest of ten seeks took {slowest:?}"
    );
    p.finish();
}

/// A speed at which the whole recording plays within a second is "at once", as `--speed 0`:
/// after a seek back it plays at the recorded pace (at 1000 the H200's 7 minutes played to
/// the end again in 0.4 s and the moment sought was never on screen). A speed that leaves the
/// replay seconds to watch is kept.
#[test]
fn a_seek_back_plays_at_the_recorded_pace_only_what_played_at_once() {
    use gpuwatch::source::Pacing;
    let dir = tempfile::tempdir().unwrap();
    let path = plain_recording(dir.path());
    let times = tick_times(&path);
    let whole_s = (times.last().unwrap() - times[0]) as f64 / 1000.0;
    assert!((400.0..500.0).contains(&whole_s), "{whole_s} s");
    for (speed, after) in [
        (f64::INFINITY, 1.0),
        (1000.0, 1.0),
        (whole_s * 1.1, 1.0),
        (whole_s * 0.9, whole_s * 0.9),
        (60.0, 60.0),
        (1.0, 1.0),
    ] {
        let mut src = ReplaySource::open(&path, speed).unwrap();
        src.read_all().unwrap();
        src.rewind().unwrap();
        // Gzipped, its length is unknown until played to the end: a seek back before that
        // keeps the speed asked for (it dropped to 1x for good, helper-34).
        let mut gz = ReplaySource::open(Path::new(FIXTURE), speed).unwrap();
        let mut tick = gpuwatch::model::Tick::default();
        for _ in 0..4 {
            gz.sample(&mut tick).unwrap();
        }
        gz.rewind().unwrap();
        assert!(
            matches!(gz.pacing(), Pacing::Recorded { speed: s } if !speed.is_finite() || (s - speed).abs() < 1e-9),
            "gzip, --speed {speed}: {:?} after an early seek back",
            gz.pacing()
        );
        assert!(
            matches!(src.pacing(), Pacing::Recorded { speed } if (speed - after).abs() < 1e-9),
            "--speed {speed}: {:?} after a seek back, not {after}",
            src.pacing()
        );
    }
}

#[test]
#[allow(clippy::too_many_lines)] // one session of seeks and pauses against a running pacer, each step checked before the next
fn seeking_back_at_the_end_plays_again_to_that_moment_and_waits_there_when_paused() {
    let dir = tempfile::tempdir().unwrap();
    let path = plain_recording(dir.path());
    let times = tick_times(&path);
    let (first, last) = (times[0], *times.last().unwrap());
    // At the recorded pace, on a clock that moves only when the sampling thread waits: the
    // recording plays to its end at once, and a pause can be shown to last minutes.
    let src = ReplaySource::open(&path, 1.0).unwrap();
    let Playing {
        store,
        stop,
        playback,
        clock,
        wakes,
        thread,
    } = play(src);
    let wait_view = |what: &str, done: fn(&Store) -> bool| wakes.wait_view(&store, what, done);
    let end = wait_view("ended", Store::ended);
    assert!(
        clock.elapsed() >= Duration::from_millis(last - first),
        "played at the recorded pace: {:?} of waits for {} ms of recording",
        clock.elapsed(),
        last - first
    );
    assert_eq!(end.history().latest_ms(), Some(last));
    let pos = end.position().expect("a replay says where it is");
    assert_eq!(
        (pos.first_ms, pos.end_ms, pos.can_rewind),
        (first, Some(last), true)
    );
    let findings_at_end = end.findings().active().len() + end.findings().cleared().len();
    assert!(findings_at_end > 0, "the H200 phases raise findings");

    // Paused, then back to 60 s after the start: the thread (still alive at the end) opens
    // the file again, plays to that moment without waiting, and waits there.
    playback.set_paused(true);
    let target = first + 60_000;
    playback.seek(target);
    let at = wakes.wait_view(&store, "back at 60 s", |v| {
        !v.ended() && v.history().latest_ms().is_some_and(|t| t >= target)
    });
    let expect = times.iter().filter(|t| **t <= target).count() as u64;
    let landed = *times.iter().find(|t| **t >= target).unwrap();
    assert_eq!(at.history().latest_ms(), Some(landed));
    assert_eq!(
        at.history().ticks(),
        expect + u64::from(landed > target),
        "history started again: only the ticks up to the target are in it"
    );
    // Ten minutes of the sampling thread's time pass, paused: not one more tick.
    assert!(
        clock.wait_passed(Duration::from_secs(600), Duration::from_secs(20)),
        "the paused thread stopped waiting"
    );
    let still = store.lock().unwrap().clone();
    assert_eq!(
        (still.history().latest_ms(), still.history().ticks()),
        (Some(landed), at.history().ticks()),
        "paused: it waits"
    );

    // Playing again runs to the end; a seek to the end from the middle gets there too.
    playback.set_paused(false);
    wait_view("ended again", Store::ended);
    playback.seek(first);
    playback.set_paused(true);
    wakes.wait_view(&store, "at the start", |v| {
        v.history().latest_ms() == Some(first) && !v.ended()
    });
    playback.seek(TO_END);
    let again = wait_view("at the end by seek", Store::ended);
    assert_eq!(again.history().latest_ms(), Some(last));
    assert_eq!(
        again.findings().active().len() + again.findings().cleared().len(),
        findings_at_end,
        "played again from the start, it concludes what it did the first time"
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    thread.join().unwrap();
}

/// A replay that meets a corrupt line stops there with the error, and still waits for a seek:
/// going back plays what came before it again (the seek keys did nothing once it stopped).
#[test]
fn a_replay_stopped_by_damage_can_still_seek_back() {
    let dir = tempfile::tempdir().unwrap();
    let plain = plain_recording(dir.path());
    let text = std::fs::read_to_string(&plain).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let good = 200;
    let damaged = dir.path().join("damaged.jsonl");
    let body = format!(
        "{}\n{{\"t_ms\": garbage}}\n{}\n",
        lines[..=good].join("\n"),
        lines[good + 1..].join("\n")
    );
    std::fs::write(&damaged, body).unwrap();
    let times: Vec<u64> = tick_times(&plain)[..good].to_vec();
    let src = ReplaySource::open(&damaged, f64::INFINITY).unwrap();
    let Playing {
        store,
        stop,
        playback,
        clock,
        wakes,
        thread,
    } = play(src);
    let failed = |v: &Store| {
        v.error()
            .is_some_and(|e| e.contains(&format!(":{}: corrupt tick", good + 2)))
    };
    let stopped = wakes.wait_view(&store, "stopped at the damage", failed);
    assert_eq!(stopped.history().latest_ms(), times.last().copied());
    // A seek forward does not read past the damage (it read on from the next line, and hid
    // the error): a minute of the thread's time later, it still stands where it stopped.
    playback.seek(TO_END);
    assert!(clock.wait_passed(Duration::from_secs(60), Duration::from_secs(20)));
    let still = store.lock().unwrap().clone();
    assert!(failed(&still), "{:?}", still.error());
    assert_eq!(still.history().latest_ms(), times.last().copied());
    // Back 10 s, paused: it plays to that moment again, the error gone until it is met again.
    playback.set_paused(true);
    let target = times[good - 41];
    playback.seek(target);
    let back = wakes.wait_view(&store, "back before the damage", |v| {
        v.error().is_none() && v.history().latest_ms() == Some(target)
    });
    assert_eq!(back.history().ticks(), (good - 40) as u64);
    playback.set_paused(false);
    wakes.wait_view(&store, "stopped at the damage again", failed);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    thread.join().unwrap();
}

/// A store view of `src` after its ticks, with the position a replay's pacer sets.
fn replay_view(can_rewind: bool) -> Store {
    let mut src = ReplaySource::open(Path::new(FIXTURE), 1.0).unwrap();
    let mut store = Store::new(&src, Duration::from_secs(3600), Thresholds::default()).unwrap();
    let ticks = src.read_all().unwrap();
    for t in &ticks[..400] {
        store.absorb(t, gpuwatch::model::SelfCost::default());
    }
    store.set_position(gpuwatch::store::Position {
        first_ms: ticks[0].t_ms,
        end_ms: Some(ticks.last().unwrap().t_ms),
        can_rewind,
    });
    store
}

fn press(state: &mut AppState, c: char, view: &Store) -> Effect {
    state.update(Action::Key(Key::Char(c)), view)
}

#[test]
fn seek_keys_ask_for_moments_within_the_recording_and_refuse_what_cannot_be_done() {
    let view = replay_view(true);
    let now = view.history().latest_ms().unwrap();
    let first = view.position().unwrap().first_ms;
    let mut state = AppState::new(false);
    assert_eq!(press(&mut state, ']', &view), Effect::Seek(now + 10_000));
    // Keys pressed before the screen shows the seek add up from where it goes.
    assert_eq!(press(&mut state, '[', &view), Effect::Seek(now));
    assert_eq!(press(&mut state, '[', &view), Effect::Seek(now - 10_000));
    assert_eq!(press(&mut state, '}', &view), Effect::Seek(now + 50_000));
    assert_eq!(press(&mut state, '<', &view), Effect::Seek(first));
    assert_eq!(press(&mut state, '>', &view), Effect::Seek(TO_END));
    // Before the screen is there, the next key counts from the end (it counted from what was
    // shown: `>` `[` landed 10 s before the old place, helper-34), and past it is the end.
    let end = view.position().unwrap().end_ms.unwrap();
    assert_eq!(press(&mut state, '[', &view), Effect::Seek(end - 10_000));
    assert_eq!(press(&mut state, '>', &view), Effect::Seek(TO_END));
    assert_eq!(press(&mut state, ']', &view), Effect::Seek(TO_END));
    assert_eq!(press(&mut state, '{', &view), Effect::Seek(end - 60_000));
    state.pending_seek = None;
    // Far back is the start; far ahead past the end is the end.
    for _ in 0..3 {
        assert!(matches!(press(&mut state, '{', &view), Effect::Seek(t) if t >= first));
    }

    let stream = replay_view(false);
    state.pending_seek = None; // another replay
    assert_eq!(press(&mut state, '[', &stream), Effect::None);
    assert!(
        state.status.as_deref().unwrap().contains("cannot go back"),
        "{:?}",
        state.status
    );
    assert_eq!(press(&mut state, ']', &stream), Effect::Seek(now + 10_000));

    let src = gpuwatch::source::sim::SimSource::new(
        gpuwatch::source::sim::Scenario::Healthy,
        1,
        7,
        1_800_000_000_000,
        250,
    );
    let mut live = Store::new(&src, Duration::from_secs(60), Thresholds::default()).unwrap();
    live.absorb(
        &gpuwatch::model::Tick::for_devices(1),
        gpuwatch::model::SelfCost::default(),
    );
    assert_eq!(press(&mut state, ']', &live), Effect::None);
    assert!(state
        .status
        .as_deref()
        .unwrap()
        .contains("works in a replay"));
}

/// A replay whose length was not known ahead (gzip) knows its end once it played to it: `]`
/// there does nothing, and the `[` after it moves at once (each `]` went 10 s past the end,
/// and as many `[` came back before one moved).
#[test]
fn at_the_end_of_a_replay_of_unknown_length_seeking_on_stays_and_back_moves() {
    let mut view = replay_view(true);
    let now = view.history().latest_ms().unwrap();
    let first = view.position().unwrap().first_ms;
    view.set_position(gpuwatch::store::Position {
        first_ms: first,
        end_ms: None,
        can_rewind: true,
    });
    view.end(None);
    let mut state = AppState::new(false);
    for _ in 0..3 {
        assert_eq!(press(&mut state, ']', &view), Effect::None);
        assert_eq!(press(&mut state, '}', &view), Effect::None);
    }
    assert_eq!(press(&mut state, '[', &view), Effect::Seek(now - 10_000));
}

/// A headless run (`diagnose`, `record`…) takes its waits from the clock its setup gives: a
/// simulated minute at the real pace passes a minute of a virtual clock, and returns at once.
#[test]
fn a_headless_run_waits_on_the_clock_its_setup_gives() {
    use gpuwatch::monitor::{Headless, Pace, Plan, Setup};
    use gpuwatch::source::sim::{Scenario, SimSource};
    let clock = Arc::new(VirtualClock::default());
    let setup = Setup::judging_with(Thresholds::default())
        .clock(clock.clone())
        .stop(Arc::new(AtomicBool::new(false)));
    let src = SimSource::new(Scenario::Healthy, 1, 7, 1_800_000_000_000, 250).without_stacks();
    let mut run = Headless::new(Box::new(src), &setup).unwrap();
    let plan = Plan {
        pace: Pace::Real,
        span: Some(Duration::from_secs(60)),
        ticks: None,
    };
    let started = Instant::now();
    let mut ticks = 0;
    run.run(&plan, |_, _| {
        ticks += 1;
        Ok(())
    })
    .unwrap();
    assert!(ticks >= 240, "{ticks} ticks");
    assert!(
        clock.elapsed() >= Duration::from_secs(59),
        "waited {:?} of the virtual clock",
        clock.elapsed()
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "a minute at the real pace took {:?} of real time",
        started.elapsed()
    );
}
