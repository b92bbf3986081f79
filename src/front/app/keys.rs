//! Keys, as `update` applies them: to the screen, the help, the filter being typed, the kill
//! prompt; digits select a GPU, seek keys move a replay.

use super::{AppState, Effect, Key, Pane, View, SIGNALS, ZOOMS_S};
use crate::store::Store;

impl AppState {
    pub(super) fn key(&mut self, key: Key, store: &Store) -> Effect {
        if matches!(key, Key::Ctrl('c')) {
            return Effect::Quit;
        }
        if self.hits.too_small {
            return if matches!(key, Key::Char('q')) {
                Effect::Quit
            } else {
                Effect::None
            };
        }
        if self.kill.is_some() {
            return self.kill_prompt_key(key);
        }
        if self.editing_filter {
            self.filter_key(key);
            return Effect::None;
        }
        if self.view == View::Help {
            self.help_key(key);
            return Effect::None;
        }
        self.status = None;
        self.status_since_ms = None;
        let typed = self.typed_gpu.take();
        match key {
            Key::Char('q') => Effect::Quit,
            Key::Char(' ') => {
                self.paused = !self.paused;
                Effect::Paused(self.paused)
            }
            Key::Char(c @ ('[' | ']' | '{' | '}' | '<' | '>')) => {
                self.seek_by(seek_delta(c), store)
            }
            Key::Char('e') => Effect::Export,
            Key::Char('p') => self.read_stacks(store),
            Key::Char(c @ '0'..='9') => {
                self.type_gpu_digit(typed, c as u32 - '0' as u32, store);
                Effect::None
            }
            Key::Up | Key::Char('k') => self.move_selection(-1, store),
            Key::Down | Key::Char('j') => self.move_selection(1, store),
            Key::PageUp => self.move_selection(-10, store),
            Key::PageDown => self.move_selection(10, store),
            Key::Home => self.move_selection(-100_000, store),
            Key::End => self.move_selection(100_000, store),
            _ => {
                self.screen_key(key, store);
                Effect::None
            }
        }
    }

    /// Keys that change only what the screen shows: views, focus, zoom, sort, the filter.
    fn screen_key(&mut self, key: Key, store: &Store) {
        match key {
            Key::Esc if matches!(self.view, View::Process { .. }) => self.view = View::Main,
            Key::Esc if !self.filter.is_empty() => self.filter.clear(),
            Key::Char('?') => self.view = View::Help,
            Key::Char('K') | Key::F(9) => self.ask_kill(store),
            // As in a map or a browser: + shows less time in more detail, - more time.
            Key::Char('+' | '=') => self.zoom = self.zoom.saturating_sub(1),
            Key::Char('-' | '_') => self.zoom = (self.zoom + 1).min(ZOOMS_S.len()),
            Key::Char('s') => self.sort = self.sort.next(),
            Key::Char('S') => self.sort_descending = !self.sort_descending,
            Key::Char('/') => {
                self.editing_filter = true;
                self.focus = Pane::Processes;
            }
            Key::Tab => {
                self.focus = match self.focus {
                    Pane::Overview => Pane::Findings,
                    Pane::Findings => Pane::Processes,
                    Pane::Processes => Pane::Overview,
                };
            }
            Key::BackTab => {
                self.focus = match self.focus {
                    Pane::Overview => Pane::Processes,
                    Pane::Findings => Pane::Overview,
                    Pane::Processes => Pane::Findings,
                };
            }
            Key::Enter => self.open_process(store),
            _ => {}
        }
    }

    /// A digit selects that GPU, or, right after another on a machine with GPU 10 or more, the
    /// GPU the two make (`1` `2`: GPU 12) when there is one. The status line says when a
    /// further digit would go on.
    fn type_gpu_digit(&mut self, typed: Option<u32>, digit: u32, store: &Store) {
        let exists = |n: u32| store.history().devices.iter().any(|d| d.info.index == n);
        let longer = |n: u32| {
            store
                .history()
                .devices
                .iter()
                .any(|d| d.info.index >= n * 10 && d.info.index < n * 10 + 10 && n > 0)
        };
        let gpu = typed
            .map(|t| t * 10 + digit)
            .filter(|&n| exists(n))
            .unwrap_or(digit);
        self.select_gpu_by_index(gpu, store);
        if exists(gpu) && longer(gpu) {
            self.typed_gpu = Some(gpu);
            let last = store
                .history()
                .devices
                .iter()
                .map(|d| d.info.index)
                .filter(|&i| i / 10 == gpu)
                .max()
                .unwrap_or(gpu * 10);
            self.status = Some(format!(
                "GPU {gpu} · another digit now selects GPU {}–{last}",
                gpu * 10
            ));
        }
    }

    /// GPUs are numbered from 0 on screen, as NVML and nvidia-smi number them.
    fn select_gpu_by_index(&mut self, gpu: u32, store: &Store) {
        match store
            .history()
            .devices
            .iter()
            .position(|d| d.info.index == gpu)
        {
            Some(i) => {
                self.select_gpu(i, store);
                self.focus = Pane::Overview;
            }
            None => self.status = Some(format!("there is no GPU {gpu}")),
        }
    }

    /// In the help overlay the arrows, pages, Home and End scroll it; any other key closes it.
    fn help_key(&mut self, key: Key) {
        let max = self.hits.help_max;
        match key {
            Key::Up | Key::Char('k') => self.help_scroll = self.help_scroll.saturating_sub(1),
            Key::Down | Key::Char('j') => self.help_scroll = (self.help_scroll + 1).min(max),
            Key::PageUp => self.help_scroll = self.help_scroll.saturating_sub(10),
            Key::PageDown => self.help_scroll = (self.help_scroll + 10).min(max),
            // The overlay lists Home and End among the keys that move: they move it too.
            Key::Home => self.help_scroll = 0,
            Key::End => self.help_scroll = max,
            _ => {
                self.view = View::Main;
                self.help_scroll = 0;
            }
        }
    }

    fn filter_key(&mut self, key: Key) {
        match key {
            Key::Enter => self.editing_filter = false,
            Key::Esc => {
                self.editing_filter = false;
                self.filter.clear();
            }
            Key::Backspace => {
                self.filter.pop();
            }
            Key::Char(c) if self.filter.len() < 64 => {
                self.filter.push(c);
                self.selected_process = 0;
                self.selected_pid = None;
            }
            _ => {}
        }
    }

    fn kill_prompt_key(&mut self, key: Key) -> Effect {
        let Some(prompt) = self.kill.as_mut() else {
            return Effect::None;
        };
        match key {
            Key::Left | Key::Right | Key::Tab | Key::Char('h' | 'l') => {
                let step = if matches!(key, Key::Left | Key::Char('h')) {
                    SIGNALS.len() - 1
                } else {
                    1
                };
                prompt.signal = (prompt.signal + step) % SIGNALS.len();
                Effect::None
            }
            Key::Char('y') | Key::Enter => {
                let (name, signal) = SIGNALS[prompt.signal];
                let (pid, started_ms) = (prompt.pid, prompt.started_ms);
                self.kill = None;
                Effect::Signal {
                    pid,
                    signal,
                    name,
                    started_ms,
                }
            }
            Key::Char('n' | 'q') | Key::Esc => {
                self.kill = None;
                self.status = Some("no signal sent".into());
                Effect::None
            }
            _ => Effect::None,
        }
    }
}

/// How far a seek key goes in a replay, in ms (`i64::MIN`: the start, `i64::MAX`: the end).
fn seek_delta(key: char) -> i64 {
    match key {
        '[' => -10_000,
        ']' => 10_000,
        '{' => -60_000,
        '}' => 60_000,
        '<' => i64::MIN,
        _ => i64::MAX,
    }
}
