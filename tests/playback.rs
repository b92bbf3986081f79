//! A replay's seeks and pause, through the real driver and store: going back opens the file
//! again and plays to the asked moment without waiting; the end waits for a seek instead of
//! ending the sampling thread; a stream cannot go back and says so.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gpuwatch::app::{Action, AppState, Effect, Key};
use gpuwatch::config::Thresholds;
use gpuwatch::driver::{spawn, Playback, TO_END};
use gpuwatch::sampler::Sampler;
use gpuwatch::source::replay::ReplaySource;
use gpuwatch::source::Source;
use gpuwatch::store::{Store, StoreView};

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

/// Waits until `done` holds for the store's view (at most 20 s).
fn wait_view(store: &Mutex<Store>, what: &str, done: impl Fn(&StoreView) -> bool) -> StoreView {
    let start = Instant::now();
    loop {
        let view = store.lock().unwrap().view();
        if done(&view) {
            return view;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "never {what}");
        std::thread::sleep(Duration::from_millis(20));
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

#[test]
fn seeking_back_at_the_end_plays_again_to_that_moment_and_waits_there_when_paused() {
    let dir = tempfile::tempdir().unwrap();
    let path = plain_recording(dir.path());
    let times = tick_times(&path);
    let (first, last) = (times[0], *times.last().unwrap());
    // As fast as the driver goes: the recording plays to its end at once.
    let src = ReplaySource::open(&path, 1e6).unwrap();
    let store = Arc::new(Mutex::new(
        Store::new(&src, Duration::from_secs(3600), Thresholds::default()).unwrap(),
    ));
    let stop = Arc::new(AtomicBool::new(false));
    let playback = Arc::new(Playback::new());
    let thread = spawn(
        Sampler::new(Box::new(src)),
        store.clone(),
        stop.clone(),
        Some(playback.clone()),
        || {},
    )
    .unwrap();
    let end = wait_view(&store, "ended", StoreView::ended);
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
    let at = wait_view(&store, "back at 60 s", |v| {
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
    std::thread::sleep(Duration::from_millis(300));
    let still = store.lock().unwrap().view();
    assert_eq!(
        still.history().latest_ms(),
        Some(landed),
        "paused: it waits"
    );

    // Playing again runs to the end; a seek to the end from the middle gets there too.
    playback.set_paused(false);
    wait_view(&store, "ended again", StoreView::ended);
    playback.seek(first);
    playback.set_paused(true);
    wait_view(&store, "at the start", |v| {
        v.history().latest_ms() == Some(first) && !v.ended()
    });
    playback.seek(TO_END);
    let again = wait_view(&store, "at the end by seek", StoreView::ended);
    assert_eq!(again.history().latest_ms(), Some(last));
    assert_eq!(
        again.findings().active().len() + again.findings().cleared().len(),
        findings_at_end,
        "played again from the start, it concludes what it did the first time"
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    thread.join().unwrap();
}

/// A store view of `src` after its ticks, with the position a replay's driver sets.
fn replay_view(can_rewind: bool) -> StoreView {
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
    store.view()
}

fn press(state: &mut AppState, c: char, view: &StoreView) -> Effect {
    state.update(Action::Key(Key::Char(c)), view)
}

#[test]
fn seek_keys_ask_for_moments_within_the_recording_and_refuse_what_cannot_be_done() {
    let view = replay_view(true);
    let now = view.history().latest_ms().unwrap();
    let first = view.position().unwrap().first_ms;
    let mut state = AppState::new(false);
    assert_eq!(press(&mut state, ']', &view), Effect::Seek(now + 10_000));
    assert_eq!(press(&mut state, '[', &view), Effect::Seek(now - 10_000));
    assert_eq!(press(&mut state, '}', &view), Effect::Seek(now + 60_000));
    assert_eq!(press(&mut state, '<', &view), Effect::Seek(first));
    assert_eq!(press(&mut state, '>', &view), Effect::Seek(TO_END));
    // Far back is the start; far ahead past the end is the end.
    for _ in 0..3 {
        assert!(matches!(press(&mut state, '{', &view), Effect::Seek(t) if t >= first));
    }

    let stream = replay_view(false);
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
    assert_eq!(press(&mut state, ']', &live.view()), Effect::None);
    assert!(state
        .status
        .as_deref()
        .unwrap()
        .contains("works in a replay"));
}
