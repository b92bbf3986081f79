//! Sending a signal from the screen: the question asked first, its refusal where the
//! processes are not this machine's, and what came of it.

use super::{find_process, short_command, Action, AppState, View};
use crate::store::Store;

/// A pending "send a signal?" question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KillPrompt {
    pub pid: u32,
    pub command: String,
    pub signal: usize,
    pub started_ms: Option<u64>,
}

impl AppState {
    pub(super) fn ask_kill(&mut self, store: &Store) {
        let target = match self.view {
            View::Process { device, pid } => Some((device, pid)),
            View::Main => self.selected_row(store).map(|r| (r.gpu, r.process.pid)),
            View::Help => None,
        };
        let Some((device, pid)) = target else {
            self.status = Some("no process selected".into());
            return;
        };
        if !store.pids_are_local() {
            // What was refused first, and short: a status line too narrow cuts its middle. A
            // replay's file is on the top line already (a long name cut "machine" in two).
            self.status = Some(if store.is_replay() {
                format!("no signal sent: pid {pid} is a recorded process, not this machine's")
            } else {
                format!(
                    "no signal sent: pid {pid} is not this machine's ({})",
                    store.source_label()
                )
            });
            return;
        }
        let host = find_process(store, device, pid).and_then(|p| p.host.as_ref());
        let command = host.map(short_command).unwrap_or_default();
        self.kill = Some(KillPrompt {
            pid,
            command,
            signal: 0,
            started_ms: host.and_then(|h| h.started_ms),
        });
    }

    /// What came of a signal the loop sent, as the action that tells it (`Action::Done`).
    #[must_use]
    pub fn signal_result(pid: u32, name: &str, result: std::io::Result<()>) -> Action {
        Action::Done(match result {
            Ok(()) => format!("sent SIG{name} to pid {pid}"),
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => format!("not permitted to signal pid {pid}: it belongs to another user (run gpuwatch as that user or root)"),
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => format!("pid {pid} has already exited"),
            Err(e) => format!("could not signal pid {pid}: {e}"),
        })
    }
}
