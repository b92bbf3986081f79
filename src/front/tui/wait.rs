//! A replay read from a pipe opens its screen when the recording's first line arrives. Until
//! then the keys are the user's: `q`, Esc and Ctrl-C end the wait. Before, the terminal stayed
//! in its own mode while waiting, so `q` only echoed, and the `q` typed then quit the screen
//! the moment it opened, however much later that was.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::crossterm::terminal::{disable_raw_mode, enable_raw_mode};

/// How a wait for a source ended.
pub enum Waited<T> {
    Opened(T),
    /// A key stopped it: the exit code to end with (0 for `q` and Esc, 130 for Ctrl-C, as a
    /// shell reports an interrupt).
    Stopped(u8),
}

/// Runs `open` on a thread of its own. If it has not returned after `quiet`, says `waiting`
/// and, when standard output is a terminal, reads keys until it returns.
pub fn while_opening<T: Send + 'static>(
    open: impl FnOnce() -> T + Send + 'static,
    quiet: Duration,
    waiting: &str,
) -> Waited<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || drop(tx.send(open())));
    if let Ok(opened) = rx.recv_timeout(quiet) {
        return Waited::Opened(opened);
    }
    eprintln!("{waiting}");
    let keys = std::io::IsTerminal::is_terminal(&std::io::stdout()) && enable_raw_mode().is_ok();
    if !keys {
        return rx.recv().map_or(Waited::Stopped(1), Waited::Opened);
    }
    let waited = loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(opened) => break Waited::Opened(opened),
            Err(RecvTimeoutError::Disconnected) => break Waited::Stopped(1),
            Err(RecvTimeoutError::Timeout) => {}
        }
        if let Some(code) = stop_key() {
            break Waited::Stopped(code);
        }
    };
    let _ = disable_raw_mode();
    waited
}

/// The exit code of a stopping key pressed since the last look, if one was.
fn stop_key() -> Option<u8> {
    while event::poll(Duration::ZERO).unwrap_or(false) {
        let Ok(Event::Key(k)) = event::read() else {
            continue;
        };
        if k.kind == KeyEventKind::Release {
            continue;
        }
        match k.code {
            KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => return Some(130),
            KeyCode::Char('q') | KeyCode::Esc => return Some(0),
            _ => {}
        }
    }
    None
}
