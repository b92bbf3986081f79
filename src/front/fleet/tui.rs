//! The fleet view: one row per host and GPU, culprits and findings first, grouped by job; a
//! job view with every rank across hosts. Read from Prometheus every `refresh`; drawn by
//! `render`, a function of `View` alone.

use std::io::stdout;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

use super::prom::Client;
use super::{Fleet, GpuRow};
use crate::text::clip;

/// What is shown.
#[derive(Debug, Clone, Default)]
pub struct View {
    pub fleet: Option<Fleet>,
    /// Why the last read failed, if it did (the last good fleet stays shown).
    pub error: Option<String>,
    /// Seconds since the fleet shown was read.
    pub age_s: u64,
    pub selected: usize,
    pub jobs: bool,
    /// The GPU drilled into (`Enter` on its row), with its curves once read.
    pub gpu: Option<super::Curves>,
}

/// Gives the terminal back however the view ends.
struct Terminal;

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = disable_raw_mode();
        let _ = crossterm::execute!(stdout(), LeaveAlternateScreen, crossterm::cursor::Show);
    }
}

/// Runs the view until `q`.
pub fn run(mut client: Client, refresh: Duration) -> Result<()> {
    enable_raw_mode().context("the terminal refused raw mode (is this a terminal?)")?;
    let _restore = Terminal;
    crossterm::execute!(stdout(), EnterAlternateScreen, crossterm::cursor::Hide)?;
    let mut term = ratatui::Terminal::new(ratatui::backend::CrosstermBackend::new(stdout()))?;
    let mut view = View::default();
    let mut read_at: Option<Instant> = None;
    // Drawn when something shown changed: new data, a key, the age in seconds.
    let mut drawn: Option<(u64, usize, bool, bool)> = None;
    let mut fresh = true;
    loop {
        if read_at.is_none_or(|t| t.elapsed() >= refresh) {
            reread(&mut client, &mut view);
            read_at = Some(Instant::now());
            fresh = true;
        }
        view.age_s = read_at.map_or(0, |t| t.elapsed().as_secs());
        let shown = (view.age_s, view.selected, view.jobs, view.gpu.is_some());
        if fresh || drawn != Some(shown) {
            term.draw(|f| render(f, &view))?;
            drawn = Some(shown);
            fresh = false;
        }
        if !event::poll(Duration::from_secs(1))? {
            continue;
        }
        let ev = event::read()?;
        let Event::Key(k) = ev else {
            fresh |= matches!(ev, Event::Resize(..));
            continue;
        };
        if k.kind != KeyEventKind::Press {
            continue;
        }
        match key(&mut view, k) {
            Answer::Quit => return Ok(()),
            Answer::Reread => read_at = None,
            Answer::Shown => {}
        }
    }
}

/// What a key asks of the loop.
enum Answer {
    Quit,
    /// Read the fleet (and the open GPU's curves) again now.
    Reread,
    /// Only what is shown changed.
    Shown,
}

/// Reads the fleet, and the curves of the GPU open in the view; an error is shown, and the
/// last reading kept.
fn reread(client: &mut Client, view: &mut View) {
    match super::read(client) {
        Ok(f) => {
            view.fleet = Some(f);
            view.error = None;
        }
        Err(e) => view.error = Some(format!("{e:#}")),
    }
    if let Some(g) = &view.gpu {
        match super::curves(client, &g.host.clone(), &g.gpu.clone()) {
            Ok(c) => view.gpu = Some(c),
            Err(e) => view.error = Some(format!("{e:#}")),
        }
    }
}

fn key(view: &mut View, k: event::KeyEvent) -> Answer {
    let rows = view.fleet.as_ref().map_or(0, |f| f.gpus.len());
    match k.code {
        KeyCode::Esc if view.gpu.is_some() => view.gpu = None,
        KeyCode::Esc if view.jobs => view.jobs = false,
        KeyCode::Char('q') | KeyCode::Esc => return Answer::Quit,
        KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => return Answer::Quit,
        KeyCode::Char('j' | 'J') => view.jobs = !view.jobs,
        KeyCode::Enter if !view.jobs && view.gpu.is_none() => {
            let row = view.fleet.as_ref().and_then(|f| f.gpus.get(view.selected));
            if let Some(r) = row {
                view.gpu = Some(super::Curves {
                    host: r.host.clone(),
                    gpu: r.gpu.clone(),
                    ..super::Curves::default()
                });
                return Answer::Reread;
            }
        }
        KeyCode::Down => view.selected = (view.selected + 1).min(rows.saturating_sub(1)),
        KeyCode::Up => view.selected = view.selected.saturating_sub(1),
        KeyCode::Char('r') => return Answer::Reread,
        _ => {}
    }
    Answer::Shown
}

/// The whole screen.
pub fn render(frame: &mut Frame, view: &View) {
    let area = frame.area();
    let [head, body, keys] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(area);
    frame.render_widget(Paragraph::new(header(view, area.width)), head);
    let help = if view.jobs || view.gpu.is_some() {
        "Esc back · r refresh · q quit"
    } else {
        "↑↓ select · Enter GPU · j jobs · r refresh · q quit"
    };
    frame.render_widget(
        Paragraph::new(Line::styled(help, Style::new().add_modifier(Modifier::DIM))),
        keys,
    );
    let Some(fleet) = &view.fleet else {
        let msg = view
            .error
            .clone()
            .unwrap_or_else(|| "asking Prometheus…".into());
        frame.render_widget(
            Paragraph::new(msg)
                .wrap(ratatui::widgets::Wrap { trim: false })
                .block(Block::default().borders(Borders::ALL).title(" fleet ")),
            body,
        );
        return;
    };
    if let Some(c) = &view.gpu {
        gpu_view(frame, body, fleet, c);
    } else if view.jobs {
        jobs(frame, body, fleet);
    } else {
        table(frame, body, fleet, view.selected);
    }
}

fn header(view: &View, width: u16) -> Line<'static> {
    let Some(f) = &view.fleet else {
        return Line::raw("gpuwatch fleet");
    };
    let hosts: std::collections::BTreeSet<&str> = f.gpus.iter().map(|g| g.host.as_str()).collect();
    // Where Prometheus is goes first when the line is short: the counts and ages matter more.
    let source = if width >= 120 {
        format!(" · {}", f.prometheus)
    } else {
        String::new()
    };
    let counted = |n: usize, one: &str| format!("{n} {one}{}", if n == 1 { "" } else { "s" });
    let mut text = format!(
        "gpuwatch fleet{source} · {}, {} · read {} s ago in {:.0} ms",
        counted(hosts.len(), "host"),
        counted(f.gpus.len(), "GPU"),
        view.age_s,
        f.query_ms
    );
    if let Some(e) = &view.error {
        text.push_str(" · last read failed: ");
        text.push_str(&crate::text::one_line(e, 80));
    }
    Line::raw(text)
}

/// "r7 torchelastic:run" and, for a rank the job waits for, why ("idle", "stale"…).
fn rank_cell(row: &GpuRow, fleet: &Fleet) -> (String, Option<String>) {
    let Some((key, rank)) = row.ranks.first() else {
        return (String::new(), None);
    };
    let culprit = fleet
        .jobs
        .iter()
        .filter(|j| &j.key == key)
        .flat_map(|j| &j.culprits)
        .find(|c| c.host == row.host && c.gpu == row.gpu)
        .map(|c| c.reason.clone());
    (format!("r{rank} {key}"), culprit)
}

fn table(frame: &mut Frame, area: Rect, fleet: &Fleet, selected: usize) {
    let wide = area.width >= 120;
    let host_w = if wide { 18 } else { 10 };
    let job_w = if wide { 34 } else { 16 };
    let mut lines = vec![Line::styled(
        format!(
            " {:<host_w$} {:>3} {:<8} {:>5} {:>6}  {:<job_w$} FINDINGS",
            "HOST", "GPU", "STATE", "UTIL", "POWER", "RANK JOB"
        ),
        Style::new().add_modifier(Modifier::BOLD),
    )];
    let visible = usize::from(area.height.saturating_sub(3));
    let start = selected.saturating_sub(visible.saturating_sub(1));
    for (i, row) in fleet.gpus.iter().enumerate().skip(start).take(visible) {
        let (job, culprit) = rank_cell(row, fleet);
        let state = if row.answering {
            row.state.clone()
        } else {
            "silent".into()
        };
        let findings: Vec<String> = row
            .findings
            .iter()
            .map(|f| {
                let mark = match f.severity.as_str() {
                    "critical" => "‼",
                    "warning" => "!",
                    _ => "i",
                };
                format!("{mark}{}", f.finding.to_uppercase())
            })
            .collect();
        let mut spans = vec![Span::raw(format!(
            "{}{:<host_w$} {:>3} {:<8} {:>5} {:>6}  {:<job_w$} ",
            if i == selected { "▶" } else { " " },
            clip(&row.host, host_w),
            clip(&row.gpu, 3),
            clip(&state, 8),
            row.util_pct.map_or("–".into(), |u| format!("{u:.0}%")),
            row.power_w.map_or("–".into(), |w| format!("{w:.0}W")),
            clip(&job, job_w),
        ))];
        if let Some(why) = culprit {
            spans.push(Span::styled(
                format!("◀ CULPRIT ({why})"),
                Style::new().add_modifier(Modifier::BOLD | Modifier::REVERSED),
            ));
            spans.push(Span::raw(" "));
        }
        spans.push(Span::raw(findings.join(" ")));
        let mut line = Line::from(spans);
        if !row.answering {
            line = line.patch_style(Style::new().add_modifier(Modifier::DIM));
        }
        lines.push(line);
    }
    let title = format!(" GPUs ({}) ", fleet.gpus.len());
    frame.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)),
        area,
    );
}

/// One GPU: a row of bars per series over the last 10 minutes (as the local monitor draws a
/// short chart), its latest values, its findings and ranks.
fn gpu_view(frame: &mut Frame, area: Rect, fleet: &Fleet, c: &super::Curves) {
    let row = fleet
        .gpus
        .iter()
        .find(|g| g.host == c.host && g.gpu == c.gpu);
    let label_w = 7usize;
    let bars_w = usize::from(area.width.saturating_sub(2)).saturating_sub(label_w + 6);
    let mut lines = Vec::new();
    for (name, values) in [("power", &c.power), ("util", &c.util), ("SM", &c.sm)] {
        let last = values.iter().rev().flatten().next();
        lines.push(Line::raw(format!(
            "{name:<label_w$}{} {}",
            bars(values, bars_w),
            last.map_or("   –".into(), |v| format!("{v:3.0}%"))
        )));
    }
    lines.push(Line::styled(
        format!(
            "{:label_w$}-{} min{:>w$}",
            "",
            super::CURVE_POINTS as u64 * super::CURVE_STEP_S / 60,
            "now",
            w = bars_w.saturating_sub(6)
        ),
        Style::new().add_modifier(Modifier::DIM),
    ));
    if let Some(r) = row {
        let state = if r.answering {
            r.state.as_str()
        } else {
            "silent"
        };
        lines.push(Line::raw(format!(
            "state {state} · power {}",
            r.power_w.map_or("–".into(), |w| format!("{w:.0} W"))
        )));
        for (job, rank) in &r.ranks {
            lines.push(Line::raw(format!("rank {rank} of {job}")));
        }
        for f in &r.findings {
            lines.push(Line::raw(format!("{} {}", f.severity, f.finding)));
        }
    }
    let title = format!(" {} GPU {} · last 10 min (Prometheus) ", c.host, c.gpu);
    frame.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)),
        area,
    );
}

/// Values 0–100 as `width` bars ▁ to █, resampled; a gap is a space.
fn bars(values: &[Option<f64>], width: usize) -> String {
    const LEVELS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    if values.is_empty() {
        return " ".repeat(width);
    }
    (0..width)
        .map(|i| {
            let v = values[i * values.len() / width.max(1)];
            v.map_or(' ', |v| {
                LEVELS[((v.clamp(0.0, 100.0) / 100.0 * 7.0).round()) as usize]
            })
        })
        .collect()
}

fn jobs(frame: &mut Frame, area: Rect, fleet: &Fleet) {
    let mut lines: Vec<Line> = Vec::new();
    if fleet.jobs.is_empty() {
        lines.push(Line::raw(
            "no launcher job seen: ranks are named by gpuwatch_process_job_info (torchrun, Slurm)",
        ));
    }
    for j in &fleet.jobs {
        let energy = j.energy_j.map_or(String::new(), |e| {
            format!(" · {}", crate::text::energy_words(e))
        });
        lines.push(Line::styled(
            format!(
                "{} · {} ranks, {} spinning{energy}",
                j.key, j.ranks, j.spinning
            ),
            Style::new().add_modifier(Modifier::BOLD),
        ));
        if j.culprits.is_empty() {
            lines.push(Line::raw("  no culprit: most ranks are not waiting"));
        }
        for c in &j.culprits {
            lines.push(Line::styled(
                format!("  ◀ CULPRIT {}", c.text),
                Style::new().add_modifier(Modifier::REVERSED),
            ));
        }
        for row in fleet
            .gpus
            .iter()
            .filter(|g| g.ranks.iter().any(|(k, _)| k == &j.key))
        {
            let ranks: Vec<&str> = row
                .ranks
                .iter()
                .filter(|(k, _)| k == &j.key)
                .map(|(_, r)| r.as_str())
                .collect();
            lines.push(Line::raw(format!(
                "  rank {:<4} {} GPU {} · {}",
                ranks.join(","),
                row.host,
                row.gpu,
                if row.answering {
                    row.state.as_str()
                } else {
                    "silent"
                }
            )));
        }
    }
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(ratatui::widgets::Wrap { trim: false })
            .block(Block::default().borders(Borders::ALL).title(" jobs ")),
        area,
    );
}
