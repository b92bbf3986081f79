//! The screen's state and `update`, the one place it changes. Nothing here draws or touches the
//! terminal: keys arrive as `Action`s, and what must happen outside (a signal, an export) leaves
//! as an `Effect` for the loop in `tui/mod.rs` to carry out.

mod keys;
mod processes;
mod seek;
mod signal;

pub use processes::{
    find_process, process_cursor, process_rows, process_rows_into, short_command,
    write_short_command, ProcessRow,
};
pub use seek::PendingSeek;
pub use signal::KillPrompt;

use crate::store::Store;

/// The panes of the main screen that take the focus, in Tab order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Overview,
    Findings,
    Processes,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Main,
    /// The process view of one process on one GPU.
    Process {
        device: u32,
        pid: u32,
    },
    Help,
}

/// Process table columns, in the order `s` cycles through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    GpuMem,
    Sm,
    MemPct,
    Cpu,
    Rss,
    Threads,
    Workers,
    State,
    Pid,
    User,
    Command,
    Gpu,
}

impl SortKey {
    pub const ALL: [SortKey; 12] = [
        SortKey::GpuMem,
        SortKey::Sm,
        SortKey::MemPct,
        SortKey::Cpu,
        SortKey::Rss,
        SortKey::Threads,
        SortKey::Workers,
        SortKey::State,
        SortKey::Pid,
        SortKey::User,
        SortKey::Command,
        SortKey::Gpu,
    ];
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            SortKey::GpuMem => "GPU MEM",
            SortKey::Sm => "KERN%",
            SortKey::MemPct => "MEM%",
            SortKey::Threads => "THR",
            SortKey::Workers => "WRK",
            SortKey::State => "S",
            SortKey::Cpu => "CPU%",
            SortKey::Rss => "RSS",
            SortKey::Pid => "PID",
            SortKey::User => "USER",
            SortKey::Command => "COMMAND",
            SortKey::Gpu => "GPU",
        }
    }
    fn next(self) -> SortKey {
        let i = Self::ALL.iter().position(|k| *k == self).unwrap_or(0);
        Self::ALL[(i + 1) % Self::ALL.len()]
    }
}

/// The signals `k` offers, in the order the prompt cycles through them.
pub const SIGNALS: [(&str, i32); 3] = [
    ("TERM", libc::SIGTERM),
    ("INT", libc::SIGINT),
    ("KILL", libc::SIGKILL),
];

/// Zoom levels of the chart's time window; the last is the whole history.
/// Zoom levels of the chart's time window in seconds; after the last comes the whole history.
pub const ZOOMS_S: [u64; 5] = [30, 60, 120, 300, 600];

/// A key or other input, already decoded from the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Char(char),
    Ctrl(char),
    Up,
    Down,
    Left,
    Right,
    PageUp,
    PageDown,
    Home,
    End,
    Tab,
    BackTab,
    Enter,
    Esc,
    Backspace,
    F(u8),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Key(Key),
    /// A left click at a terminal cell.
    Click {
        column: u16,
        row: u16,
    },
    ScrollUp,
    ScrollDown,
    /// The frame just drawn, with where its rows landed: clicks and scrolls go by these.
    Drawn(HitAreas),
    /// What came of an effect the loop carried out (an export written, a signal sent or
    /// refused), for the status line.
    Done(String),
}

/// What the loop must do after an update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    None,
    Quit,
    /// Send `signal` to `pid`.
    Signal {
        pid: u32,
        signal: i32,
        name: &'static str,
        /// When the chosen process started (ms since the epoch): the loop checks, just before
        /// sending, that `pid` is still that process and not a later one reusing its number.
        started_ms: Option<u64>,
    },
    /// Write a snapshot of what is on screen.
    Export,
    /// Paused (true: freeze the display; a replay stops playing) or resumed (false).
    Paused(bool),
    /// Replay: go to this sample time (`pacer::TO_END` for the last tick).
    Seek(u64),
    /// Read this process's Python stacks now.
    ReadStacks(u32),
}

/// What the last frame drew, returned by render and kept in the state: where rows landed (so a
/// click maps to the row under it) and how far each text pane can scroll.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HitAreas {
    /// (first row, row count) of the overview's GPU rows.
    pub overview: (u16, u16),
    /// The position of the GPU in the overview's first row.
    pub overview_first: usize,
    pub processes: (u16, u16),
    /// The position of the process in the table's first row.
    pub processes_first: usize,
    /// The largest useful scroll offset, in lines, of the findings pane, the process view's
    /// findings and the help overlay.
    pub findings_max: usize,
    pub process_findings_max: usize,
    pub help_max: usize,
    /// The terminal was too small to draw anything but the "enlarge it" message: keys other
    /// than quitting would act on a screen nobody sees.
    pub too_small: bool,
    /// Points the main chart shows across its window (0: no chart drawn): new data moves it
    /// by one point every `window / chart_points`, so drawing more often shows nothing new.
    pub chart_points: u16,
}

#[allow(clippy::struct_excessive_bools)] // independent switches of the screen
#[derive(Debug, Clone)]
pub struct AppState {
    pub view: View,
    pub focus: Pane,
    pub selected_gpu: usize,
    /// The process table's cursor: the row it was last put on, and that row's process
    /// (GPU, pid), which it follows when a sort or new readings move the rows
    /// (`process_cursor`). No process yet: the selected GPU's first.
    pub selected_process: usize,
    pub selected_pid: Option<(u32, u32)>,
    /// Scroll offsets in lines: the findings pane, the process view's findings, the help.
    pub findings_scroll: usize,
    pub process_scroll: usize,
    pub help_scroll: usize,
    pub sort: SortKey,
    pub sort_descending: bool,
    pub filter: String,
    pub editing_filter: bool,
    /// Index into `ZOOMS_S`; `ZOOMS_S.len()` means the whole history.
    pub zoom: usize,
    /// How much history the buffers keep (`--history`), the widest zoom.
    pub history_ms: u64,
    pub paused: bool,
    pub kill: Option<KillPrompt>,
    /// A message for the status line (export results, refused signals…).
    pub status: Option<String>,
    /// Sample time of the first frame that showed `status`: it gives the line back to the
    /// keys `STATUS_MS` of sample time later.
    pub status_since_ms: Option<u64>,
    pub color: bool,
    pub hits: HitAreas,
    /// A seek asked for and not yet on screen: the next seek key moves on from its target, so
    /// keys pressed faster than the replay redraws add up (six `]` are a minute, not 10 s).
    pub pending_seek: Option<PendingSeek>,
    /// The GPU number typed so far, on a machine with more than ten GPUs: `1` then `2`
    /// selects GPU 12; any other key starts again.
    pub typed_gpu: Option<u32>,
}

/// How long a message stays on the status line, in sample time.
pub const STATUS_MS: u64 = 10_000;

impl AppState {
    #[must_use]
    pub fn new(color: bool) -> Self {
        AppState {
            view: View::Main,
            focus: Pane::Overview,
            selected_gpu: 0,
            selected_process: 0,
            selected_pid: None,
            findings_scroll: 0,
            process_scroll: 0,
            help_scroll: 0,
            sort: SortKey::GpuMem,
            sort_descending: true,
            filter: String::new(),
            editing_filter: false,
            zoom: 1,
            history_ms: 15 * 60 * 1000,
            paused: false,
            kill: None,
            status: None,
            status_since_ms: None,
            color,
            hits: HitAreas::default(),
            pending_seek: None,
            typed_gpu: None,
        }
    }

    /// The chart's time window in milliseconds.
    #[must_use]
    pub fn window_ms(&self) -> u64 {
        ZOOMS_S.get(self.zoom).map_or(self.history_ms, |s| s * 1000)
    }

    /// A message leaves the status line once it has been on screen for `STATUS_MS` of sample
    /// time (a paused replay keeps it), so the keys' line comes back without a key pressed.
    fn expire_status(&mut self, store: &Store) {
        let now = store.history().latest_ms();
        match (&self.status, self.status_since_ms, now) {
            (None, _, _) => self.status_since_ms = None,
            (Some(_), None, _) => self.status_since_ms = now,
            (Some(_), Some(since), Some(now)) if now.saturating_sub(since) >= STATUS_MS => {
                self.status = None;
                self.status_since_ms = None;
            }
            _ => {}
        }
    }

    /// Applies one input; returns what the loop must do.
    pub fn update(&mut self, action: Action, store: &Store) -> Effect {
        match action {
            Action::Key(key) => self.key(key, store),
            Action::Click { column, row } => {
                self.click(column, row, store);
                Effect::None
            }
            Action::ScrollUp => self.move_selection(-1, store),
            Action::ScrollDown => self.move_selection(1, store),
            Action::Drawn(hits) => {
                self.hits = hits;
                self.expire_status(store);
                Effect::None
            }
            Action::Done(told) => {
                self.status = Some(told);
                self.status_since_ms = None;
                Effect::None
            }
        }
    }

    /// `p` in the process view: its stacks are read live, and shown from a recording.
    fn read_stacks(&mut self, store: &Store) -> Effect {
        let View::Process { pid, .. } = self.view else {
            self.status = Some("p reads a process's Python stacks: open one first (Enter)".into());
            return Effect::None;
        };
        if !store.pids_are_local() {
            self.status = Some(format!(
                "pid {pid} is not this machine's: the stacks shown came with {}",
                if store.is_replay() {
                    "the recording"
                } else {
                    "the demo"
                }
            ));
            return Effect::None;
        }
        self.status = Some(format!("reading pid {pid}'s Python stacks (2 s)…"));
        Effect::ReadStacks(pid)
    }

    /// Selects GPU `i`; the process table's cursor goes to its first process
    /// (`process_cursor`).
    fn select_gpu(&mut self, i: usize, store: &Store) {
        self.selected_gpu = i.min(store.history().devices.len().saturating_sub(1));
        self.selected_process = 0;
        self.selected_pid = None;
    }

    /// Puts the process table's cursor on row `i` of `rows`, and on its process.
    fn put_cursor(&mut self, i: usize, rows: &[ProcessRow]) {
        self.selected_process = i;
        self.selected_pid = rows.get(i).map(|r| (r.gpu, r.process.pid));
    }

    fn move_selection(&mut self, by: i64, store: &Store) -> Effect {
        let step = |cur: usize, len: usize| -> usize {
            if len == 0 {
                return 0;
            }
            (cur as i64 + by).clamp(0, len as i64 - 1) as usize
        };
        match (self.view, self.focus) {
            (View::Main, Pane::Overview) => {
                let i = step(self.selected_gpu, store.history().devices.len());
                self.select_gpu(i, store);
            }
            (View::Main, Pane::Findings) => {
                // Lines, as the pane last drew them.
                self.findings_scroll = step(self.findings_scroll, self.hits.findings_max + 1);
            }
            (View::Process { .. }, _) => {
                self.process_scroll = step(self.process_scroll, self.hits.process_findings_max + 1);
            }
            (View::Main, Pane::Processes) => {
                let rows = process_rows(self, store);
                let i = step(process_cursor(self, store, &rows), rows.len());
                self.put_cursor(i, &rows);
            }
            _ => {}
        }
        Effect::None
    }

    /// The process under the selection in the table, if any.
    #[must_use]
    pub fn selected_row<'a>(&self, store: &'a Store) -> Option<ProcessRow<'a>> {
        let rows = process_rows(self, store);
        let i = process_cursor(self, store, &rows);
        rows.into_iter().nth(i)
    }

    /// Enter: on the GPU table, the selected GPU's busiest process; on the process table, the
    /// selected process; on the findings, moves to the process table.
    fn open_process(&mut self, store: &Store) {
        if self.view != View::Main {
            return;
        }
        let target = match self.focus {
            Pane::Findings => {
                self.focus = Pane::Processes;
                return;
            }
            Pane::Processes => self.selected_row(store).map(|r| (r.gpu, r.process.pid)),
            Pane::Overview => {
                let Some(dev) = store.history().devices.get(self.selected_gpu) else {
                    return;
                };
                let gpu = dev.info.index;
                let first = process_rows(self, store).into_iter().find(|r| r.gpu == gpu);
                if first.is_none() {
                    self.status = Some(processes::why_none(self, store, dev));
                }
                first.map(|r| (r.gpu, r.process.pid))
            }
        };
        if let Some((device, pid)) = target {
            self.view = View::Process { device, pid };
            self.process_scroll = 0;
        }
    }

    fn click(&mut self, column: u16, row: u16, store: &Store) {
        let _ = column;
        let (top, n) = self.hits.overview;
        if self.view == View::Main && row >= top && row < top + n {
            self.focus = Pane::Overview;
            self.select_gpu(self.hits.overview_first + (row - top) as usize, store);
            return;
        }
        let (top, n) = self.hits.processes;
        if self.view == View::Main && row >= top && row < top + n {
            self.focus = Pane::Processes;
            // The row under the click, counted from the first the table showed (it scrolls).
            let rows = process_rows(self, store);
            let i = self.hits.processes_first + (row - top) as usize;
            self.put_cursor(i.min(rows.len().saturating_sub(1)), &rows);
        }
    }
}
