//! Carrying out what an update asked for: pause (a copy of the store while a live screen is
//! paused), seek, a signal to a process, a stack read, an export; what came of it goes back to
//! the screen's state through `update`.

use anyhow::Result;

use super::Session;
use crate::app::{Action, AppState, Effect};
use crate::monitor::Monitor;
use crate::monitor::Store;

/// Carries out what an update asked for; false to quit.
pub(super) fn apply(
    effect: &Effect,
    session: &Session,
    state: &mut AppState,
    frozen: &mut Option<Store>,
) -> Result<bool> {
    let monitor = &session.monitor;
    match effect {
        Effect::None => {}
        Effect::Quit => return Ok(false),
        Effect::Paused(paused) => {
            monitor.set_paused(*paused);
            *frozen = (*paused && !monitor.is_replay())
                .then(|| monitor.read(Store::clone))
                .transpose()?;
        }
        Effect::Seek(t_ms) => monitor.seek(*t_ms),
        Effect::Signal {
            pid,
            signal,
            name,
            started_ms,
        } => {
            let sent = send_signal(*pid, *signal, *started_ms);
            tell(
                monitor,
                frozen.as_ref(),
                state,
                AppState::signal_result(*pid, name, sent),
            )?;
        }
        Effect::ReadStacks(pid) => {
            if let Some(link) = monitor.stacks() {
                link.ask(*pid);
            } else {
                let not = Action::Done("Python stacks are not read (--no-stacks)".into());
                tell(monitor, frozen.as_ref(), state, not)?;
            }
        }
        Effect::Export => {
            let written = reading(monitor, frozen.as_ref(), |store| {
                (session.export)(store, state)
            })?;
            let told = written.unwrap_or_else(|e| format!("export failed: {e:#}"));
            tell(monitor, frozen.as_ref(), state, Action::Done(told))?;
        }
    }
    Ok(true)
}

/// Tells the screen's state what came of an effect, through `update` like every change to it.
fn tell(
    monitor: &Monitor,
    frozen: Option<&Store>,
    state: &mut AppState,
    done: Action,
) -> Result<()> {
    reading(monitor, frozen, |store| state.update(done, store)).map(drop)
}

/// Reads the paused screen's copy if there is one, else the monitor's store in place.
pub(super) fn reading<R>(
    monitor: &Monitor,
    frozen: Option<&Store>,
    f: impl FnOnce(&Store) -> R,
) -> Result<R> {
    match frozen {
        Some(store) => Ok(f(store)),
        None => monitor.read(f),
    }
}

/// Sends `signal` to `pid` once it is verified to be the process the user chose: a real PID
/// (not 0, 1 or a value that `pid_t` would turn into a process group), and still the process
/// that started at `started_ms` (not one that reused its number since). Says why otherwise.
pub(super) fn send_signal(pid: u32, signal: i32, started_ms: Option<u64>) -> std::io::Result<()> {
    let refuse = |why: String| {
        Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            why,
        ))
    };
    let target = match libc::pid_t::try_from(pid) {
        Ok(p) if p > 1 => p,
        _ => return refuse(format!("{pid} is not a process gpuwatch may signal")),
    };
    let Some(expected) = started_ms else {
        return refuse("its start time could not be read, so it cannot be verified".into());
    };
    match crate::host::started_ms(pid) {
        Some(now) if now == expected => {}
        Some(_) => {
            return refuse("that PID now belongs to another process (the one chosen exited)".into())
        }
        None => return refuse("the process has exited".into()),
    }
    crate::sys::kill(target, signal)
}
