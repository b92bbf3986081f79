//! The full-screen monitor: terminal set-up and restore, and the event loop.
//!
//! The pacer runs the sampler on its own thread, feeds the store and pokes a `Notify` after each
//! tick; a second thread turns terminal input into messages. The loop wakes only for those (or
//! a signal), reads the store in place (a copy of it while a live screen is paused), updates
//! the state, carries out what the update asked for (`effect.rs`), and redraws only when
//! something changed. The terminal is restored on every exit path: a guard on drop, a panic
//! hook, and SIGTERM/SIGHUP/SIGINT ending the loop.

mod ansi;
mod effect;
mod frames;
mod screen;

pub use ansi::Ansi;
pub use screen::{Changes, Screen};

use effect::{apply, reading};
use frames::Frames;
use std::io::Stdout;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use ratatui::backend::Backend;
use ratatui::crossterm::event::{
    self, DisableMouseCapture, EnableMouseCapture, Event, KeyCode, KeyEvent, KeyEventKind,
    KeyModifiers, MouseButton, MouseEventKind,
};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::layout::Rect;
use ratatui::{Terminal, TerminalOptions, Viewport};
use tokio::sync::mpsc;

use crate::app::{Action, AppState, Key};
use crate::monitor::Config;
use crate::monitor::Source;
use crate::monitor::Store;
use crate::monitor::{Monitor, Setup};

/// Restores the terminal when dropped, whatever the exit path.
struct TerminalGuard {
    screen: Screen<Ansi<Tty>>,
}

/// What the screen is written to: a frame is gathered and sent in one write at its flush
/// (stdout's own buffer sends every 1 KiB, and a frame of 8 GPUs is 2 KB).
type Tty = std::io::BufWriter<Stdout>;

fn restore_terminal() {
    let _ = disable_raw_mode();
    let _ = execute!(
        std::io::stdout(),
        DisableMouseCapture,
        LeaveAlternateScreen,
        ratatui::crossterm::cursor::Show
    );
}

impl TerminalGuard {
    fn enter() -> Result<Self> {
        enable_raw_mode().context("the terminal refused raw mode (is stdout a terminal?)")?;
        let guard_on_error = scopeguard(restore_terminal);
        take_terminal().context("setting up the terminal")?;
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore_terminal();
            previous(info);
        }));
        // A fixed viewport, moved by the terminal's resize events: a full-screen one asks the
        // terminal its size before every frame, and crossterm opens /dev/tty to ask (three
        // system calls a frame, 5 % of the monitor's CPU at 100 ms).
        let (w, h) = ratatui::crossterm::terminal::size().context("reading the terminal's size")?;
        let terminal = Terminal::with_options(
            Ansi::new(std::io::BufWriter::with_capacity(
                1 << 16,
                std::io::stdout(),
            )),
            TerminalOptions {
                viewport: Viewport::Fixed(Rect::new(0, 0, w, h)),
            },
        )
        .context("opening the terminal")?;
        std::mem::forget(guard_on_error);
        Ok(TerminalGuard {
            screen: Screen::new(terminal),
        })
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        // Before the terminal is restored: nothing of the screen may come after it.
        let _ = self.screen.flush();
        restore_terminal();
    }
}

/// Runs `f` on drop unless forgotten: restores the terminal if set-up fails halfway.
struct ScopeGuard<F: FnMut()>(F);
fn scopeguard<F: FnMut()>(f: F) -> ScopeGuard<F> {
    ScopeGuard(f)
}
impl<F: FnMut()> Drop for ScopeGuard<F> {
    fn drop(&mut self) {
        (self.0)();
    }
}

/// What wakes the loop besides a new tick.
#[derive(Debug)]
pub enum Msg {
    Input(Event),
}

/// Writes a snapshot of what is shown; returns the message for the status line.
pub type ExportFn = dyn Fn(&Store, &AppState) -> Result<String>;

/// What the loop needs besides the terminal: the monitor it reads, and how to export.
pub struct Session {
    pub monitor: Monitor,
    /// The shortest time between two redraws caused by new data (1 / --fps).
    pub frame: Duration,
    pub export: Box<ExportFn>,
    /// Suspends the process with the terminal given back to the shell, and takes it again on
    /// `fg` (Ctrl-Z, or SIGTSTP sent from outside); `None` where there is no real terminal.
    pub suspend: Option<fn(StopFrom) -> Result<()>>,
}

/// Gives the terminal back (cooked mode, main screen, cursor, no mouse reporting), lets the
/// pending stop happen, and once continued takes the terminal again. The caller redraws the
/// whole screen. A stop taken back by a SIGCONT meanwhile is not carried out (the kernel drops
/// a pending SIGTSTP when a SIGCONT comes), so this never stays stopped after the last CONT.
fn suspend_to_shell(from: StopFrom) -> Result<()> {
    // Only a typed Ctrl-Z asks for a stop: raw mode delivers it as a key. For a SIGTSTP, one
    // that is no longer pending was taken back by a SIGCONT; asking for a new one then (as
    // this once did whenever none was pending) stopped the monitor after the last CONT, in
    // trial 9 of a TSTP/CONT storm on a loaded CI run.
    if from == StopFrom::Key {
        crate::sys::request_stop();
    }
    restore_terminal();
    crate::sys::let_pending_stop_happen();
    enable_raw_mode().context("the terminal refused raw mode after resuming")?;
    take_terminal().context("taking the terminal again after resuming")?;
    Ok(())
}

/// What asked the monitor to stop: Ctrl-Z typed (a key in raw mode), or a SIGTSTP held pending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopFrom {
    Key,
    Signal,
}

/// Only with a real terminal: SIGTSTP is held pending from the start of `main`
/// (`hold_stops`); this descriptor says when one is waiting.
fn stop_signals(session: &Session) -> Result<Option<tokio::io::unix::AsyncFd<OwnedFd>>> {
    if session.suspend.is_none() {
        return Ok(None);
    }
    Ok(Some(
        crate::sys::stop_signal_watch().context("watching for SIGTSTP")?,
    ))
}

/// For the monitor and `replay`, first thing in `main` before any thread starts: a stop
/// (Ctrl-Z, `kill -TSTP`) waits until the terminal has been given back, and one taken back by
/// a later SIGCONT never happens.
pub fn hold_stops() -> Result<()> {
    crate::sys::hold_stop_signal().context("holding SIGTSTP until the terminal is given back")
}

/// How the monitor draws: from `--history`, `--fps`, `--color` and `--no-mouse`.
#[derive(Debug, Clone, Copy)]
pub struct Look {
    pub history: Duration,
    pub fps: u32,
    pub color: bool,
    pub mouse: bool,
}

/// Whether the terminal reports the mouse to gpuwatch; set once, before the terminal is taken,
/// and read again when it is taken back after Ctrl-Z.
static MOUSE: AtomicBool = AtomicBool::new(true);

fn take_terminal() -> std::io::Result<()> {
    if MOUSE.load(Ordering::Relaxed) {
        execute!(std::io::stdout(), EnterAlternateScreen, EnableMouseCapture)
    } else {
        execute!(std::io::stdout(), EnterAlternateScreen)
    }
}

/// Drops the keys typed at the terminal before the screen opened (while a replay waited for a
/// pipe's first line), so that they are not taken as the screen's.
pub fn drop_typed_ahead() {
    crate::sys::discard_typed_ahead();
}

pub fn run(source: Box<dyn Source>, config: &Config, look: Look) -> Result<()> {
    let Look {
        history,
        fps,
        color,
        mouse,
    } = look;
    // The default grows to what the rules read where the config lengthens a window past it;
    // a history asked for that is too short is refused before the screen opens.
    let least = crate::rules::least_history(source.interval(), &config.thresholds);
    let history = if history == crate::monitor::HISTORY {
        history.max(least)
    } else {
        history
    };
    crate::rules::history_holds(history, source.interval(), &config.thresholds)
        .map_err(anyhow::Error::msg)?;
    MOUSE.store(mouse, Ordering::Relaxed);
    // crossterm drops every colour while NO_COLOR is set; `--color always` says otherwise.
    ratatui::crossterm::style::force_color_output(color);
    // The screen ends sampling itself (dropping the monitor); signals end the screen.
    let setup = Setup::new(config)
        .history(history)
        .stop(Arc::new(AtomicBool::new(false)));
    let monitor = Monitor::start(source, &setup)?;
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::Builder::new()
        .name("gpuwatch-input".into())
        .spawn(move || {
            while let Ok(ev) = event::read() {
                if tx.send(Msg::Input(ev)).is_err() {
                    break;
                }
            }
        })
        .context("starting the input thread")?;
    // `e` exports the chart's window, and never less than two minutes.
    let export = |store: &Store, st: &AppState| {
        crate::snapshot::export_from_tui(store, st.window_ms().max(120_000))
    };
    let frame = Duration::from_secs_f64(1.0 / f64::from(fps.max(1)));
    let session = Session {
        monitor,
        frame,
        export: Box::new(export),
        suspend: Some(suspend_to_shell),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the event loop")?;
    let mut guard = TerminalGuard::enter()?;
    let result = runtime.block_on(event_loop(
        &mut guard.screen,
        rx,
        &session,
        AppState {
            history_ms: history.as_millis() as u64,
            ..AppState::new(color)
        },
    ));
    let stopped = why_stopped(&session.monitor);
    drop(session); // ends sampling
    drop(guard);
    result?;
    stopped.map_or(Ok(()), |why| Err(anyhow::anyhow!(why)))
}

/// The replay's clock as the screen shows it (`None` live).
fn clock(monitor: &Monitor) -> Option<u64> {
    monitor.read(crate::ui::clock_shown).ok().flatten()
}

/// What the frames read of a new tick: the replay's clock, and whether a seek is on its way.
fn glance(monitor: &Monitor, state: &AppState) -> (Option<u64>, bool) {
    let read = |s: &Store| (crate::ui::clock_shown(s), state.seek_under_way(s));
    monitor.read(read).unwrap_or((None, false))
}

/// Why sampling or a replay stopped, if it did: it was on the screen that is now gone, so it is
/// said again on the terminal, exit 2, as `diagnose` does for the same file (a corrupt
/// recording's replay exited 0 without a word).
fn why_stopped(monitor: &Monitor) -> Option<String> {
    let (replay, why) = monitor
        .read(|s| Some((s.is_replay(), s.error()?.to_string())))
        .ok()??;
    let what = if replay { "replay" } else { "sampling" };
    Some(format!("{what} stopped: {why}"))
}

/// The loop: wait for a tick, an input or a signal; update; redraw if anything changed.
pub async fn event_loop<B: Backend>(
    terminal: &mut Screen<B>,
    mut input: mpsc::UnboundedReceiver<Msg>,
    session: &Session,
    mut state: AppState,
) -> Result<()>
where
    B::Error: Send + Sync + 'static,
{
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    let mut int = signal(SignalKind::interrupt())?;
    let tstp = stop_signals(session)?;
    // A screen paused on live GPUs draws from a copy taken when it paused (sampling goes on);
    // a replay stops playing instead, and its screen follows the seeks made while paused.
    let mut frozen: Option<Store> = None;
    let mut dirty = true;
    let mut frames = Frames::new(session.frame);
    loop {
        if dirty {
            redraw(terminal, &session.monitor, frozen.as_ref(), &mut state)?;
            frames.drawn(&state, clock(&session.monitor));
        }
        let action = tokio::select! {
            () = session.monitor.changed(), if frames.listening() => {
                dirty = frames.data_came(frozen.is_some(), glance(&session.monitor, &state));
                continue;
            }
            () = tokio::time::sleep_until(frames.next_frame), if frames.pending => { dirty = true; continue; }
            msg = input.recv() => match msg {
                Some(Msg::Input(Event::Resize(w, h))) => {
                    terminal.resize(Rect::new(0, 0, w, h))?;
                    None
                }
                Some(Msg::Input(ev)) => to_action(ev),
                None => return Ok(()),
            },
            _ = term.recv() => return Ok(()),
            _ = hup.recv() => return Ok(()),
            _ = int.recv() => return Ok(()),
            Some(()) = async { tstp.as_ref()?.readable().await.ok()?.clear_ready(); Some(()) } => {
                // A SIGCONT since the SIGTSTP may have taken the stop back (the kernel drops
                // it); then the suspension below gives the terminal back and takes it again.
                if let (true, Some(suspend)) = (crate::sys::stop_is_pending(), session.suspend) {
                    suspend_and_resume(terminal, suspend, StopFrom::Signal)?;
                }
                dirty = true;
                continue;
            }
        };
        let Some(action) = action else {
            dirty = true; // resize or focus change: redraw
            continue;
        };
        if let (Action::Key(Key::Ctrl('z')), Some(suspend)) = (&action, session.suspend) {
            suspend_and_resume(terminal, suspend, StopFrom::Key)?;
            dirty = true;
            continue;
        }
        let effect = reading(&session.monitor, frozen.as_ref(), |store| {
            state.update(action, store)
        })?;
        dirty = !frames.seek_asked(&effect);
        if !apply(&effect, session, &mut state, &mut frozen)? {
            return Ok(());
        }
    }
}

/// Draws the screen from the store (or the frozen copy) and tells the state where things
/// landed (the areas a click hits).
fn redraw<B: Backend>(
    terminal: &mut Screen<B>,
    monitor: &Monitor,
    frozen: Option<&Store>,
    state: &mut AppState,
) -> Result<()>
where
    B::Error: Send + Sync + 'static,
{
    reading(monitor, frozen, |store| -> Result<()> {
        let hits = draw(terminal, state, store)?;
        state.update(Action::Drawn(hits), store);
        Ok(())
    })?
}

/// Ctrl-Z: the shell's until `fg`. The screen was the shell's meanwhile: it is cleared and
/// drawn whole. (`clear()` would ask the terminal where its cursor is, an answer the input
/// thread eats.)
fn suspend_and_resume<B: Backend>(
    terminal: &mut Screen<B>,
    suspend: fn(StopFrom) -> Result<()>,
    from: StopFrom,
) -> Result<()>
where
    B::Error: Send + Sync + 'static,
{
    suspend(from)?;
    let size = terminal.size()?;
    terminal.resize(Rect::new(0, 0, size.width, size.height))?;
    Ok(())
}

/// Draws one frame from `store`; returns where its rows landed.
fn draw<B: Backend>(
    terminal: &mut Screen<B>,
    state: &AppState,
    store: &Store,
) -> Result<crate::app::HitAreas>
where
    B::Error: Send + Sync + 'static,
{
    let mut hits = state.hits;
    terminal.draw(|f| hits = crate::ui::render(f, state, store))?;
    Ok(hits)
}

/// Turns a terminal event into an action; `None` for events that only need a redraw.
#[allow(clippy::needless_pass_by_value)] // an event is consumed where it is read
pub fn to_action(ev: Event) -> Option<Action> {
    match ev {
        Event::Key(k) if k.kind != KeyEventKind::Release => key(k).map(Action::Key),
        Event::Mouse(m) => match m.kind {
            MouseEventKind::Down(MouseButton::Left) => Some(Action::Click {
                column: m.column,
                row: m.row,
            }),
            MouseEventKind::ScrollUp => Some(Action::ScrollUp),
            MouseEventKind::ScrollDown => Some(Action::ScrollDown),
            _ => None,
        },
        _ => None,
    }
}

fn key(k: KeyEvent) -> Option<Key> {
    Some(match k.code {
        KeyCode::Char(c) if k.modifiers.contains(KeyModifiers::CONTROL) => Key::Ctrl(c),
        KeyCode::Char(c) => Key::Char(c),
        KeyCode::Up => Key::Up,
        KeyCode::Down => Key::Down,
        KeyCode::Left => Key::Left,
        KeyCode::Right => Key::Right,
        KeyCode::PageUp => Key::PageUp,
        KeyCode::PageDown => Key::PageDown,
        KeyCode::Home => Key::Home,
        KeyCode::End => Key::End,
        KeyCode::Tab => Key::Tab,
        KeyCode::BackTab => Key::BackTab,
        KeyCode::Enter => Key::Enter,
        KeyCode::Esc => Key::Esc,
        KeyCode::Backspace => Key::Backspace,
        KeyCode::F(n) => Key::F(n),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::effect::send_signal;

    fn child() -> std::process::Child {
        std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep runs")
    }

    #[test]
    fn pids_that_mean_a_group_ourselves_or_init_are_refused() {
        for pid in [0, 1, u32::MAX, 1 << 31] {
            let e = send_signal(pid, 0, Some(0)).unwrap_err();
            assert!(e.to_string().contains("may signal"), "{pid}: {e}");
        }
    }

    #[test]
    fn a_signal_goes_only_to_the_process_that_was_chosen() {
        let mut c = child();
        let started = crate::host::started_ms(c.id()).expect("child readable");
        // Another process with the same number (a start time that does not match): refused.
        let e = send_signal(c.id(), libc::SIGTERM, Some(started + 5_000)).unwrap_err();
        assert!(e.to_string().contains("another process"), "{e}");
        assert!(c.try_wait().unwrap().is_none(), "still running");
        let e = send_signal(c.id(), libc::SIGTERM, None).unwrap_err();
        assert!(e.to_string().contains("cannot be verified"), "{e}");
        // The chosen process itself: sent.
        send_signal(c.id(), libc::SIGTERM, Some(started)).unwrap();
        let status = c.wait().unwrap();
        assert!(!status.success());
        // Gone (and reaped): refused, not sent to whoever takes the number next.
        let e = send_signal(c.id(), libc::SIGTERM, Some(started)).unwrap_err();
        assert!(e.to_string().contains("exited"), "{e}");
    }
}
