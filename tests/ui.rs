//! The screens, drawn with ratatui's `TestBackend` from simulated and replayed sources: insta
//! snapshots at 80×24 and 160×48, key flows applied to state, and styles where the emphasis is
//! the behaviour.

mod common;

use std::path::Path;

use common::{sim_ticks, START_MS};
use gpuwatch::app::{Action, AppState, Effect, Key, Pane, SortKey, View};
use gpuwatch::config::Thresholds;
use gpuwatch::rules::Engine;
use gpuwatch::source::replay::ReplaySource;
use gpuwatch::source::sim::{Scenario, SimSource};
use gpuwatch::source::Source;
use gpuwatch::store::Store;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};
use ratatui::Terminal;

fn observed_sim(sc: Scenario, gpus: usize, seconds: u64) -> Store {
    let src = SimSource::new(sc, gpus, 7, START_MS, 250);
    let mut store = Store::new(
        &src,
        std::time::Duration::from_secs(900),
        Thresholds::default(),
    )
    .unwrap();
    for t in common::sim_ticks_with_stacks(sc, gpus, seconds, START_MS).1 {
        store.absorb(&t, gpuwatch::model::SelfCost::default());
    }
    store
}

/// The H200 recording up to `until_s` seconds after its first tick.
fn observed_h200(until_s: u64) -> Store {
    let (mut store, ticks) = common::h200_phases();
    let first = ticks[0].t_ms;
    for t in ticks
        .iter()
        .take_while(|t| t.t_ms <= first + until_s * 1000)
    {
        store.absorb(t, gpuwatch::model::SelfCost::default());
    }
    store
}

fn draw(state: &mut AppState, obs: &Store, w: u16, h: u16) -> Buffer {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    let mut hits = state.hits;
    term.draw(|f| hits = gpuwatch::ui::render(f, state, obs))
        .unwrap();
    state.hits = hits;
    term.backend().buffer().clone()
}

fn text(buf: &Buffer) -> String {
    let w = buf.area.width as usize;
    buf.content
        .chunks(w)
        .map(|row| {
            row.iter()
                .map(ratatui::buffer::Cell::symbol)
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn keys(state: &mut AppState, obs: &Store, keys: &[Key]) -> Vec<Effect> {
    keys.iter()
        .map(|k| state.update(Action::Key(*k), obs))
        .collect()
}

/// The mixed demo at 80×24 with GPU 5 selected: its process is the row the short table shows.
#[test]
fn main_screen_demo_mixed_80x24() {
    let obs = observed_sim(Scenario::Mixed, 8, 45);
    let mut st = AppState::new(true);
    keys(&mut st, &obs, &[Key::Char('5')]);
    let screen = text(&draw(&mut st, &obs, 80, 24));
    // The one process row that fits is the selected GPU's, not the top of the whole table.
    assert!(screen.contains("│  5   10050 alice"), "{screen}");
    assert!(screen.contains("▲ 1 above · ▼ 6 more"), "{screen}");
    insta::assert_snapshot!(screen);
}

/// The health demo at 80×24: GPU 0's row is marked (its remap, with two more findings), and the
/// findings pane starts with the uncorrected ECC errors and what they cost.
#[test]
fn main_screen_demo_health_80x24() {
    let obs = observed_sim(Scenario::Health, 4, 40);
    let mut st = AppState::new(true);
    let screen = text(&draw(&mut st, &obs, 80, 24));
    assert!(screen.contains("REMAP +2"), "{screen}");
    // The GPU's own view says what its counters say, on the chart's border.
    assert!(
        screen.contains("‼ reset needed (row remap pending)  ECC 1 uncorrected"),
        "{screen}"
    );
    insta::assert_snapshot!(screen);
}

/// …and at 160×48, where every GPU's mark and the findings' evidence and energy show.
#[test]
fn main_screen_demo_health_160x48() {
    let obs = observed_sim(Scenario::Health, 4, 40);
    let mut st = AppState::new(true);
    let screen = text(&draw(&mut st, &obs, 160, 48));
    for mark in ["ROW-REMAP +2", "PCIE-REPLAY", "NVLINK", "energy:"] {
        assert!(screen.contains(mark), "{mark} missing:\n{screen}");
    }
    insta::assert_snapshot!(screen);
}

/// The MIG demo: GPU 0's instances indented under it, their SM activity where util would be
/// and whose power it is where power would be, each with its own finding; the hung instance,
/// selected, has its own chart ("GPU 0:3"), and the whole GPU beside them reads as always.
#[test]
fn main_screen_demo_mig_80x24_and_160x48() {
    let obs = observed_sim(Scenario::Mig, 2, 40);
    let mut st = AppState::new(true);
    keys(&mut st, &obs, &[Key::Down, Key::Down]);
    let small = text(&draw(&mut st, &obs, 80, 24));
    for mark in [
        "▶└3 2g.35 ‼ HANG",
        "└9 1g.18 ! STARVED",
        "SM act · W: GPU",
        "GPU 0:3 · last",
    ] {
        assert!(small.contains(mark), "{mark} missing:\n{small}");
    }
    insta::assert_snapshot!("mig_80x24", small);
    let big = text(&draw(&mut st, &obs, 160, 48));
    for mark in [
        "└3 2g.35gb",
        "└10 1g.18gb",
        "SM active · W: GPU 0",
        "GPU 0:3 HANG",
        // Whole in the process table: a 3-cell column once cut it to "0:1", another instance.
        "0:10   11030",
    ] {
        assert!(big.contains(mark), "{mark} missing:\n{big}");
    }
    insta::assert_snapshot!("mig_160x48", big);
}

#[test]
fn main_screen_demo_mixed_160x48() {
    let obs = observed_sim(Scenario::Mixed, 8, 45);
    let mut st = AppState::new(true);
    keys(&mut st, &obs, &[Key::Char('5')]);
    insta::assert_snapshot!(text(&draw(&mut st, &obs, 160, 48)));
}

#[test]
fn main_screen_h200_replay_during_spin_hang_160x48() {
    // spin_hang runs from 126 s to 167 s of the recording; at 165 s the hang is open.
    let obs = observed_h200(165);
    let mut st = AppState::new(true);
    let screen = text(&draw(&mut st, &obs, 160, 48));
    assert!(screen.contains("‼ HANG"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn main_screen_h200_replay_during_starved_loader_80x24() {
    let obs = observed_h200(115);
    let mut st = AppState::new(true);
    let screen = text(&draw(&mut st, &obs, 80, 24)); // The narrow diagnosis column's ten cells hold the rule's whole name.
    assert!(screen.contains("! STARVED "), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn process_view_80x24_and_160x48() {
    let obs = observed_sim(Scenario::Mixed, 8, 45);
    let mut st = AppState::new(true);
    keys(&mut st, &obs, &[Key::Tab, Key::Tab, Key::Home, Key::Enter]);
    assert!(matches!(st.view, View::Process { .. }));
    // The header whole at 80×24: its energy line wraps onto a row of its own rather than
    // being cut for the lower panes (it lost its job's "kJ, 3 ranks" until 2026-12-05), and
    // the number goes with its unit (it read "… demo-job-0: 16.2" over "kJ, 3 ranks").
    let small = text(&draw(&mut st, &obs, 80, 24));
    assert!(small.contains("│  16.2 kJ, 3 ranks "), "{small}");
    insta::assert_snapshot!("process_view_80x24", small);
    insta::assert_snapshot!("process_view_160x48", text(&draw(&mut st, &obs, 160, 48)));
}

/// At 80×24 the process view cannot list a loader's eight workers under its stacks: it lists
/// what fits and counts the rest, rather than a header over no rows; the findings pane takes
/// only the rows its one line needs. At 160×48 the panes take the rows they need before the
/// chart grows: every worker is listed. Where the stacks alone fill the pane (a rank of the
/// mixed demo's hung job, at 80×24), the children's count takes their last row.
#[test]
fn a_process_view_counts_the_children_it_has_no_room_for() {
    let obs = observed_sim(Scenario::Healthy, 1, 20);
    let mut st = AppState::new(true);
    keys(&mut st, &obs, &[Key::Enter]);
    assert!(matches!(st.view, View::Process { .. }));
    let small = text(&draw(&mut st, &obs, 80, 24));
    assert!(small.contains("Python stacks"), "{small}");
    assert!(small.contains("pt_data_worker_0"), "{small}");
    assert!(
        small.contains("… 7 more children (a taller terminal shows them)"),
        "{small}"
    );
    let big = text(&draw(&mut st, &obs, 160, 48));
    assert!(big.contains("pt_data_worker_7"), "{big}");
    assert!(!big.contains("more children"), "{big}");

    let obs = observed_sim(Scenario::Mixed, 8, 45);
    let mut st = AppState::new(true);
    keys(&mut st, &obs, &[Key::Char('4'), Key::Enter]);
    assert!(matches!(st.view, View::Process { device: 4, .. }));
    let small = text(&draw(&mut st, &obs, 80, 24));
    assert!(small.contains("Python stacks"), "{small}");
    assert!(
        small.contains("… 4 children (a taller terminal shows them)"),
        "{small}"
    );
}

/// A torch process's libraries and settings, as read from its /proc.
fn torch_software() -> std::sync::Arc<gpuwatch::software::Software> {
    use gpuwatch::software::{Framework, Library, Software};
    std::sync::Arc::new(Software {
        libraries: vec![
            Library {
                name: "CUDA runtime".into(),
                version: Some("13.0.96".into()),
                from: "file name".into(),
                path: "/x/libcudart.so.13".into(),
            },
            Library {
                name: "CUDA driver".into(),
                version: Some("580.159.04".into()),
                from: "file name".into(),
                path: "/x/libcuda.so.1".into(),
            },
            Library {
                name: "NCCL".into(),
                version: None,
                from: "soname (major only)".into(),
                path: "/x/libnccl.so.2".into(),
            },
        ],
        frameworks: vec![Framework {
            name: "torch".into(),
            version: "2.11.0+cu130".into(),
            cuda: Some("13.0".into()),
        }],
        settings: vec![
            ("CUDA_LAUNCH_BLOCKING".into(), "1".into()),
            ("OMP_NUM_THREADS".into(), "4".into()),
        ],
        unreadable: None,
    })
}

/// What the process runs with, under its command line: the settings read from its
/// environment, its framework and libraries, its container and pod.
#[test]
fn process_view_says_what_the_process_runs_with() {
    let software = torch_software();
    let container = std::sync::Arc::new(gpuwatch::container::Container {
        runtime: "containerd".into(),
        id: "0123456789abcdef".repeat(4),
        pod_uid: Some("5f1c2d3e-0000-4000-8000-000000000001".into()),
    });
    let (infos, mut ticks) = sim_ticks(
        Scenario::Rule(gpuwatch::rules::RuleId::Sync),
        1,
        30,
        START_MS,
    );
    for t in &mut ticks {
        for p in &mut t.devices[0].processes {
            let h = p.host.as_mut().unwrap();
            h.software = Some(software.clone());
            h.container = Some(container.clone());
        }
    }
    let src = SimSource::new(
        Scenario::Rule(gpuwatch::rules::RuleId::Sync),
        1,
        7,
        START_MS,
        250,
    );
    let mut obs = Store::new(
        &src,
        std::time::Duration::from_secs(900),
        Thresholds::default(),
    )
    .unwrap();
    assert_eq!(obs.history().devices.len(), infos.len());
    for t in &ticks {
        obs.absorb(t, gpuwatch::model::SelfCost::default());
    }
    let mut st = AppState::new(true);
    keys(&mut st, &obs, &[Key::Tab, Key::Tab, Key::Home, Key::Enter]);
    let screen = text(&draw(&mut st, &obs, 160, 48));
    for line in [
        "│settings  CUDA_LAUNCH_BLOCKING=1 · OMP_NUM_THREADS=4",
        "│runs      torch 2.11.0+cu130 · CUDA runtime 13.0.96 · NCCL ?",
        "│container containerd 0123456789ab, pod 5f1c2d3e-0000-4000-8000-000000000001",
    ] {
        assert!(screen.contains(line), "no {line:?} in\n{screen}");
    }
}

#[test]
fn help_lists_every_key() {
    let obs = observed_sim(Scenario::Healthy, 1, 5);
    let mut st = AppState::new(true);
    keys(&mut st, &obs, &[Key::Char('?')]);
    // Its wrapped rows go on under the second column: 30 rows no longer hold them all.
    let screen = text(&draw(&mut st, &obs, 100, 40));
    for k in gpuwatch::ui::help_keys() {
        assert!(screen.contains(k), "help lacks {k}:\n{screen}");
    }
    keys(&mut st, &obs, &[Key::Esc]);
    assert_eq!(st.view, View::Main);
}

/// Wrapped at 80 columns, a key's description goes on under its own column, and a badge stays
/// with its label ("? │ HANG? 4/8s" split them).
#[test]
fn the_help_wraps_under_its_second_column() {
    let obs = observed_sim(Scenario::Healthy, 1, 5);
    let mut st = AppState::new(true);
    keys(&mut st, &obs, &[Key::Char('?')]);
    let screen = text(&draw(&mut st, &obs, 80, 80));
    let rows: Vec<&str> = screen
        .lines()
        .filter_map(|l| l.strip_prefix('│')?.strip_suffix('│'))
        .collect();
    let continued: Vec<&&str> = rows
        .iter()
        .filter(|r| r.starts_with("  ") && !r.trim().is_empty())
        .collect();
    assert!(continued.len() > 5, "{screen}");
    for r in continued {
        let indent = r.chars().take_while(|c| *c == ' ').count();
        assert_eq!(indent, 22, "{r:?} in\n{screen}");
    }
    for badge in ["‼ critical", "? HANG?", "◀ culprit", "━ util"] {
        assert!(screen.contains(badge), "{badge} split in\n{screen}");
    }
    // The example badge "HANG? 4/8s" is one (it split at 82 to 86 columns).
    for width in 80..=120 {
        let screen = text(&draw(&mut st, &obs, width, 80));
        let row = screen.lines().find(|l| l.contains("HANG?")).unwrap();
        assert!(row.contains("4/8s"), "{width}: {row}");
    }
}

/// At 80×24 the help does not fit: End shows its last lines and Home its first, as the overlay
/// says, and neither closes it.
#[test]
fn home_and_end_move_the_help_without_closing_it() {
    let obs = observed_sim(Scenario::Healthy, 1, 5);
    let mut st = AppState::new(true);
    keys(&mut st, &obs, &[Key::Char('?')]);
    let top = text(&draw(&mut st, &obs, 80, 24));
    keys(&mut st, &obs, &[Key::End]);
    assert_eq!(st.view, View::Help, "End closed the help");
    let bottom = text(&draw(&mut st, &obs, 80, 24));
    assert_ne!(top, bottom, "End did not move the help");
    assert!(st.help_scroll > 0);
    keys(&mut st, &obs, &[Key::Home]);
    assert_eq!((st.view, st.help_scroll), (View::Help, 0));
    assert_eq!(text(&draw(&mut st, &obs, 80, 24)), top);
}

#[test]
fn too_small_a_terminal_gets_a_message() {
    let obs = observed_sim(Scenario::Healthy, 1, 5);
    let mut st = AppState::new(true);
    let screen = text(&draw(&mut st, &obs, 60, 20));
    assert!(
        screen.contains("needs at least 80×24") && screen.contains("60×20"),
        "{screen}"
    );
    // Keys typed at the message do not act on the screen nobody sees; q still quits.
    let effects = keys(&mut st, &obs, &[Key::Char('?'), Key::Tab, Key::Char('q')]);
    assert_eq!(st.view, View::Main, "? opened the help behind the message");
    assert!(
        matches!(
            effects.as_slice(),
            [Effect::None, Effect::None, Effect::Quit]
        ),
        "{effects:?}"
    );
    draw(&mut st, &obs, 80, 24);
    keys(&mut st, &obs, &[Key::Char('?')]);
    assert_eq!(
        st.view,
        View::Help,
        "keys act again once it is large enough"
    );
}

#[test]
fn hang_badge_is_red_bold_and_survives_without_colour() {
    let obs = observed_sim(Scenario::HANG, 1, 45);
    let find = |buf: &Buffer| {
        let w = buf.area.width as usize;
        let i = buf
            .content
            .iter()
            .position(|c| c.symbol() == "‼")
            .expect("badge drawn");
        (buf.content[i].clone(), i % w)
    };
    let (cell, _) = find(&draw(&mut AppState::new(true), &obs, 80, 24));
    assert_eq!(cell.fg, Color::Red);
    assert!(cell.modifier.contains(Modifier::BOLD));
    let (cell, _) = find(&draw(&mut AppState::new(false), &obs, 80, 24));
    assert_eq!(cell.fg, Color::Reset, "NO_COLOR: no colour");
    assert!(
        cell.modifier.contains(Modifier::REVERSED) && cell.modifier.contains(Modifier::BOLD),
        "still emphasised"
    );
}

#[test]
fn chart_marks_the_hang_span_under_its_axis() {
    let obs = observed_sim(Scenario::HANG, 1, 45);
    let buf = draw(&mut AppState::new(true), &obs, 80, 24);
    let marks: Vec<_> = buf.content.iter().filter(|c| c.symbol() == "▀").collect();
    assert!(marks.len() > 10, "the span is marked");
    assert!(marks.iter().all(|c| c.fg == Color::Red));
    let healthy = observed_sim(Scenario::Healthy, 1, 45);
    let buf = draw(&mut AppState::new(true), &healthy, 80, 24);
    assert!(
        !buf.content.iter().any(|c| c.symbol() == "▀"),
        "no mark without a finding"
    );
}

/// With more than ten GPUs, two digits typed one after the other select GPU 10 and up; on
/// eight GPUs a digit is a digit, as before.
#[test]
fn two_digits_select_gpus_from_ten_up() {
    let obs = observed_sim(Scenario::Mixed, 16, 3);
    let mut st = AppState::new(true);
    keys(&mut st, &obs, &[Key::Char('1')]);
    assert_eq!(st.selected_gpu, 1);
    assert_eq!(
        st.status.as_deref(),
        Some("GPU 1 · another digit now selects GPU 10–15")
    );
    keys(&mut st, &obs, &[Key::Char('2')]);
    assert_eq!(st.selected_gpu, 12);
    assert_eq!(st.status, None, "no GPU 120: nothing more to type");
    // No GPU 17: the 7 starts again.
    keys(&mut st, &obs, &[Key::Char('1'), Key::Char('7')]);
    assert_eq!(st.selected_gpu, 7);
    // Any other key in between starts again: 1, ↓ (GPU 2), 5 is GPU 5.
    keys(&mut st, &obs, &[Key::Char('1'), Key::Down, Key::Char('5')]);
    assert_eq!(st.selected_gpu, 5);
    let eight = observed_sim(Scenario::Mixed, 8, 3);
    let mut st = AppState::new(true);
    keys(&mut st, &eight, &[Key::Char('1'), Key::Char('2')]);
    assert_eq!(st.selected_gpu, 2);
    assert_eq!(st.status, None);
}

#[test]
fn keys_move_select_sort_filter_zoom_and_quit() {
    let obs = observed_sim(Scenario::Mixed, 8, 10);
    let mut st = AppState::new(true);
    keys(
        &mut st,
        &obs,
        &[Key::Down, Key::Char('j'), Key::Char('j'), Key::Char('k')],
    );
    assert_eq!(st.selected_gpu, 2);
    // GPUs are numbered from 0, as on screen: 7 is the eighth, there is no 8.
    keys(&mut st, &obs, &[Key::Char('7')]);
    assert_eq!(st.selected_gpu, 7);
    keys(&mut st, &obs, &[Key::Char('8')]);
    assert_eq!(st.selected_gpu, 7, "no GPU 8: selection unchanged");
    assert_eq!(st.status.as_deref(), Some("there is no GPU 8"));
    keys(&mut st, &obs, &[Key::Char('0')]);
    assert_eq!(st.selected_gpu, 0);
    keys(&mut st, &obs, &[Key::Char('7')]);
    keys(&mut st, &obs, &[Key::Tab]);
    assert_eq!(st.focus, Pane::Findings);
    keys(&mut st, &obs, &[Key::BackTab, Key::BackTab]);
    assert_eq!(st.focus, Pane::Processes);
    keys(&mut st, &obs, &[Key::Char('s')]);
    assert_eq!(st.sort, SortKey::Sm);
    keys(&mut st, &obs, &[Key::Char('s'); 11]);
    assert_eq!(st.sort, SortKey::GpuMem, "s cycles through all 12 columns");
    let before = st.window_ms();
    keys(&mut st, &obs, &[Key::Char('-')]);
    assert!(st.window_ms() > before, "- zooms out: more time");
    keys(
        &mut st,
        &obs,
        &[Key::Char('+'), Key::Char('+'), Key::Char('+')],
    );
    assert_eq!(st.window_ms(), 30_000, "+ zooms in, and stops at 30 s");
    keys(
        &mut st,
        &obs,
        &[
            Key::Char('/'),
            Key::Char('e'),
            Key::Char('m'),
            Key::Char('b'),
            Key::Enter,
        ],
    );
    assert_eq!(st.filter, "emb");
    assert_eq!(gpuwatch::app::process_rows(&st, &obs).len(), 1);
    keys(&mut st, &obs, &[Key::Esc]);
    assert!(st.filter.is_empty());
    assert_eq!(
        keys(&mut st, &obs, &[Key::Char(' ')]),
        vec![Effect::Paused(true)]
    );
    assert_eq!(keys(&mut st, &obs, &[Key::Char('e')]), vec![Effect::Export]);
    assert_eq!(keys(&mut st, &obs, &[Key::Char('q')]), vec![Effect::Quit]);
    assert_eq!(keys(&mut st, &obs, &[Key::Ctrl('c')]), vec![Effect::Quit]);
}

#[test]
fn sorting_by_cpu_orders_the_table() {
    let obs = observed_sim(Scenario::Mixed, 8, 10);
    let mut st = AppState::new(true);
    st.sort = SortKey::Cpu;
    let cpus: Vec<f32> = gpuwatch::app::process_rows(&st, &obs)
        .iter()
        .map(|r| r.host().unwrap().cpu_pct.unwrap())
        .collect();
    assert!(cpus.windows(2).all(|w| w[0] >= w[1]), "{cpus:?}");
    keys(&mut st, &obs, &[Key::Char('S')]);
    let cpus: Vec<f32> = gpuwatch::app::process_rows(&st, &obs)
        .iter()
        .map(|r| r.host().unwrap().cpu_pct.unwrap())
        .collect();
    assert!(cpus.windows(2).all(|w| w[0] <= w[1]), "{cpus:?}");
}

/// The column that sorts shows its arrow however narrow it is: a heading as wide as its column
/// gives its last letters to the arrow (appended, "WRK▼" was cut to "WRK" and no column said);
/// the one-letter state column is two wide, so that its letter stays (helper-32).
#[test]
fn a_narrow_sorted_column_still_shows_its_arrow() {
    let obs = observed_sim(Scenario::Mixed, 8, 10);
    let mut st = AppState::new(true);
    for (sort, heading) in [
        (SortKey::Workers, "WR▼"),
        (SortKey::Sm, "KERN▼"),
        (SortKey::MemPct, "MEM▼"),
        (SortKey::Gpu, "GP▼"),
        (SortKey::Pid, "PID▼"),
    ] {
        st.sort = sort;
        let screen = text(&draw(&mut st, &obs, 160, 48));
        assert!(screen.contains(heading), "{heading} missing:\n{screen}");
    }
    st.sort = SortKey::State;
    st.sort_descending = false;
    let screen = text(&draw(&mut st, &obs, 160, 48));
    let heading = screen.lines().find(|l| l.contains(" PID ")).unwrap();
    assert!(heading.contains(" S▲ COMMAND"), "{heading}");
}

#[test]
#[allow(clippy::too_many_lines)] // one session of keys (open, choose, cancel, confirm) with the screen checked after each. A source whose PIDs are this machine's (the sampler would read their /proc)
fn signal_prompt_asks_first_and_offers_term_int_kill() {
    struct Local(SimSource);
    impl Source for Local {
        fn system(&self) -> &gpuwatch::model::SystemInfo {
            self.0.system()
        }
        fn devices(&self) -> &[gpuwatch::model::DeviceInfo] {
            self.0.devices()
        }
        fn sample(
            &mut self,
            tick: &mut gpuwatch::model::Tick,
        ) -> Result<gpuwatch::source::Sampled, gpuwatch::source::SourceError> {
            self.0.sample(tick)
        }
        fn interval(&self) -> std::time::Duration {
            self.0.interval()
        }
        fn pids_are_local(&self) -> bool {
            true
        }
        fn label(&self) -> String {
            self.0.label()
        }
    }
    let src = Local(SimSource::new(Scenario::Healthy, 1, 7, START_MS, 250));
    let mut store = Store::new(
        &src,
        std::time::Duration::from_secs(900),
        Thresholds::default(),
    )
    .unwrap();
    for t in sim_ticks(Scenario::Healthy, 1, 5, START_MS).1 {
        store.absorb(&t, gpuwatch::model::SelfCost::default());
    }
    let obs = &store;
    let mut st = AppState::new(true);
    keys(
        &mut st,
        obs,
        &[Key::Tab, Key::Tab, Key::Home, Key::Char('K')],
    );
    assert_eq!(st.kill.as_ref().unwrap().pid, 10_000);
    let screen = text(&draw(&mut st, obs, 80, 24));
    assert!(
        screen.contains("Send a signal to pid 10000") && screen.contains("[TERM]"),
        "{screen}"
    );
    keys(&mut st, obs, &[Key::Right, Key::Right]);
    assert_eq!(
        keys(&mut st, obs, &[Key::Char('y')]),
        vec![Effect::Signal {
            pid: 10_000,
            signal: libc::SIGKILL,
            name: "KILL",
            // The demo's processes started an hour before it: the start time travels along.
            started_ms: Some(START_MS - 3_600_000),
        }]
    );
    keys(&mut st, obs, &[Key::Char('K'), Key::Esc]);
    assert!(st.kill.is_none() && st.status.as_deref() == Some("no signal sent"));
    let refused = AppState::signal_result(
        10_000,
        "TERM",
        Err(std::io::Error::from_raw_os_error(libc::EPERM)),
    );
    assert_eq!(st.update(refused, obs), Effect::None);
    assert!(st.status.as_deref().unwrap().contains("not permitted"));
    let mut demo = AppState::new(true);
    let obs = observed_sim(Scenario::Healthy, 1, 5);
    keys(
        &mut demo,
        &obs,
        &[Key::Tab, Key::Tab, Key::Home, Key::Char('K')],
    );
    assert!(demo.kill.is_none());
    assert_eq!(
        demo.status.as_deref(),
        Some("no signal sent: pid 10000 is not this machine's (demo: healthy)")
    );
    // A replay's refusal names no file (its top line does), so that it fits 80 columns whole
    // (a long path was cut in the middle of "machine").
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/h200/phases.jsonl.gz");
    let mut src = ReplaySource::open(&path, f64::INFINITY).unwrap();
    let ticks = src.read_all().unwrap();
    let mut replay = Store::new(
        &src,
        std::time::Duration::from_secs(900),
        Thresholds::default(),
    )
    .unwrap();
    for t in &ticks[..120] {
        replay.absorb(t, gpuwatch::model::SelfCost::default());
    }
    assert!(replay.source_label().contains('/'));
    let mut st = AppState::new(true);
    keys(
        &mut st,
        &replay,
        &[Key::Tab, Key::Tab, Key::Home, Key::Char('K')],
    );
    let said = st.status.clone().unwrap();
    assert!(said.starts_with("no signal sent: pid "), "{said}");
    assert!(
        said.ends_with(" is a recorded process, not this machine's"),
        "{said}"
    );
    let screen = text(&draw(&mut st, &replay, 80, 24));
    assert_eq!(screen.lines().last().unwrap().trim_end(), said);
}

#[test]
fn sixty_four_gpus_scroll_and_stay_usable() {
    let obs = observed_sim(Scenario::Mixed, 64, 5);
    let mut st = AppState::new(true);
    keys(&mut st, &obs, &[Key::End]);
    assert_eq!(st.selected_gpu, 63);
    let screen = text(&draw(&mut st, &obs, 80, 24));
    assert!(
        screen.contains("▶63"),
        "selected GPU visible after scrolling:\n{screen}"
    );
    let big = text(&draw(&mut st, &obs, 160, 48));
    assert!(big.contains("GPUs (64)") && big.contains("▶63"));
}

#[test]
fn eight_gpus_fit_at_160x48() {
    let obs = observed_sim(Scenario::Mixed, 8, 5);
    let screen = text(&draw(&mut AppState::new(true), &obs, 160, 48));
    for i in 0..8 {
        assert!(
            screen.lines().any(
                |l| l.trim_start_matches('│').starts_with(&format!(" {i:>2} "))
                    || l.contains(&format!("▶{i:>2} "))
            ),
            "GPU {i} missing:\n{screen}"
        );
    }
}

#[test]
fn clicking_a_gpu_row_selects_it() {
    let obs = observed_sim(Scenario::Mixed, 8, 5);
    let mut st = AppState::new(true);
    draw(&mut st, &obs, 160, 48);
    let (top, n) = st.hits.overview;
    assert_eq!(n, 8);
    st.update(
        Action::Click {
            column: 10,
            row: top + 3,
        },
        &obs,
    );
    assert_eq!(st.selected_gpu, 3);
}

#[test]
fn processes_whose_pids_do_not_resolve_are_explained() {
    let store = common::store_with(Scenario::Healthy, 1, 5, |t| {
        for p in &mut t.devices[0].processes {
            p.host = None;
        }
    });
    let obs = &store;
    let screen = text(&draw(&mut AppState::new(true), obs, 160, 48));
    assert!(
        screen.contains("PIDs do not resolve on this machine"),
        "{screen}"
    );
}

#[test]
fn lost_gpu_shows_lost_badge_and_gaps() {
    let obs = observed_sim(Scenario::Rule(gpuwatch::rules::RuleId::Lost), 2, 40);
    let screen = text(&draw(&mut AppState::new(true), &obs, 160, 48));
    assert!(screen.contains("‼ LOST"), "{screen}");
    assert!(screen.contains("GPU 0 LOST"), "{screen}");
    // One GPU, lost: its processes are not known, which is not "no process holds a GPU".
    let one = observed_sim(Scenario::Rule(gpuwatch::rules::RuleId::Lost), 1, 40);
    let screen = text(&draw(&mut AppState::new(true), &one, 160, 48));
    assert!(
        screen.contains("no process listed: NVML no longer lists GPU 0's processes (lost)"),
        "{screen}"
    );
    assert!(
        !screen.contains("no process holds a GPU context"),
        "{screen}"
    );
}

/// A lost GPU's processes are unknown, not gone: Enter on it, and a process view left open on
/// it, say so, whole at 80 columns.
#[test]
fn a_lost_gpus_processes_are_unknown_not_gone() {
    let obs = observed_sim(Scenario::Rule(gpuwatch::rules::RuleId::Lost), 2, 40);
    let mut st = AppState::new(true);
    keys(&mut st, &obs, &[Key::Enter]);
    assert_eq!(st.view, View::Main);
    assert_eq!(
        st.status.as_deref(),
        Some("GPU 0 is lost: NVML no longer lists its processes")
    );
    st.view = View::Process {
        device: 0,
        pid: 10000,
    };
    let screen = text(&draw(&mut st, &obs, 80, 24));
    assert!(
        screen.contains("GPU 0 is lost: NVML no longer lists its processes. Esc goes back."),
        "{screen}"
    );
    // A GPU that answers: its process left.
    st.view = View::Process {
        device: 1,
        pid: 4242,
    };
    let screen = text(&draw(&mut st, &obs, 80, 24));
    assert!(
        screen.contains("pid 4242 left GPU 1 (it exited or released its context). Esc goes back."),
        "{screen}"
    );
}

/// Why a replay stopped takes up to four rows; past them the why in brackets gives way and a
/// long path is cut in its middle, what to do stays whole.
#[test]
fn a_long_stop_message_keeps_what_to_do() {
    let mut replay = observed_h200(30);
    let long = "/tmp/review/a/very/long/path/to/where/the/recordings/of/this/cluster/are/kept/\
                node17-rank3.jsonl:83: a second recording starts here (its header: the files \
                of two runs were joined by `cat` or an append): recordings were joined into \
                one file; split it there (`head -n 82` and `tail -n +83`) and open each";
    replay.fail(long.into());
    let screen = text(&draw(&mut AppState::new(true), &replay, 80, 24));
    let shown = stop_rows(&screen);
    assert!(!shown.contains("(its header"), "{screen}");
    // The path's directories give way first: the file and its line stay whole.
    assert!(
        shown.starts_with("replay stopped: …/")
            && shown.contains("/node17-rank3.jsonl:83: a second recording starts here"),
        "{screen}"
    );
    assert!(
        shown.ends_with("(`head -n 82` and `tail -n +83`) and open each"),
        "{screen}"
    );
    // A command is not broken across rows.
    assert!(
        !screen.lines().any(|l| l.trim_end().ends_with("`tail")),
        "{screen}"
    );
    let wide = text(&draw(&mut AppState::new(true), &replay, 200, 50));
    assert!(wide.contains("(its header: the files"), "{wide}");
}

/// The seek bar stays where it is as the time played grows ("▶ 9s / 2m00s" to "▶ 10s / …"
/// moved the bar and the keys after it a column), and writes it in the length's units
/// ("110s / 2m00s" read as two kinds of clock).
#[test]
fn the_seek_bar_does_not_move_as_the_time_played_grows() {
    let bar_at = |until_s| {
        let mut store = observed_h200(until_s);
        let first_ms = store.history().devices[0].samples.get(0).unwrap().t_ms;
        store.set_position(gpuwatch::store::Position {
            first_ms,
            end_ms: Some(first_ms + 150_000),
            can_rewind: true,
        });
        let screen = text(&draw(&mut AppState::new(true), &store, 100, 30));
        let status = screen.lines().last().unwrap().to_string();
        let col = status.chars().position(|c| "━╸─".contains(c)).unwrap();
        (col, status)
    };
    let (a, before) = bar_at(8);
    let (b, after) = bar_at(12);
    assert!(before.contains("▶ 0m08s / 2m30s"), "{before}");
    assert!(after.contains("▶ 0m12s / 2m30s"), "{after}");
    assert_eq!(a, b, "{before}\n{after}");
}

/// A recording of a few ticks is timed in tenths: in whole seconds its bar read "0s / 0s"
/// (helper-34).
#[test]
fn a_replay_shorter_than_ten_seconds_is_timed_in_tenths() {
    let bar = |played_ms: u64, length_ms: u64| {
        let mut store = observed_h200(0);
        let latest = store.history().latest_ms().unwrap();
        store.set_position(gpuwatch::store::Position {
            first_ms: latest - played_ms,
            end_ms: Some(latest - played_ms + length_ms),
            can_rewind: true,
        });
        let screen = text(&draw(&mut AppState::new(true), &store, 100, 30));
        screen.lines().last().unwrap().to_string()
    };
    let short = bar(250, 750);
    assert!(short.contains("▶ 0.2s / 0.7s ━━━━╸"), "{short}");
    let end = bar(9_990, 9_990);
    assert!(end.contains("▶ 9.9s / 9.9s ━━━━━━━━━━━━ "), "{end}");
    let long = bar(2_000, 10_000);
    assert!(long.contains("▶  2s / 10s "), "{long}");
}

/// Paused at a replay's end, the bar says so (space there paused with nothing shown, and a
/// seek back then stayed paused).
#[test]
fn a_replay_paused_at_its_end_says_so() {
    let mut store = observed_h200(20);
    let first_ms = store.history().devices[0].samples.get(0).unwrap().t_ms;
    store.set_position(gpuwatch::store::Position {
        first_ms,
        end_ms: store.history().latest_ms(),
        can_rewind: true,
    });
    store.end(None);
    let mut st = AppState::new(true);
    let status = |st: &mut AppState, store: &Store| {
        text(&draw(st, store, 100, 30))
            .lines()
            .last()
            .unwrap()
            .to_string()
    };
    let bar = status(&mut st, &store);
    assert!(bar.starts_with("■ end "), "{bar}");
    st.paused = true;
    let bar = status(&mut st, &store);
    assert!(bar.starts_with("■ end ‖ PAUSED "), "{bar}");
    // A gzip file's length is known once it played to its end: the bar has it then.
    store.set_position(gpuwatch::store::Position {
        first_ms,
        end_ms: None,
        can_rewind: true,
    });
    st.paused = false;
    let bar = status(&mut st, &store);
    assert!(bar.starts_with("■ end 19s / 19s ━━━━━━━━━━━━ [ ]"), "{bar}");
}

/// A gzip file's advice repeats its path: every copy loses its directories, so that what to
/// do stays whole; a file name too long to stand beside "replay stopped:" still keeps its
/// name and line (its folders were kept and its name cut). Paused there, it says so.
#[test]
fn every_copy_of_a_long_path_gives_way() {
    let mut replay = observed_h200(30);
    let dir = "/tmp/helper/a_very_long_directory_name_for_testing/another_quite_long_subdirectory";
    let file = "damaged_gzip_recording_from_node_17.jsonl.gz";
    replay.fail(format!(
        "{dir}/{file}:61: corrupt tick (expected value); in a gzip file most often damaged data: \
         if `gzip -t` fails on it, copy it again; to keep the ticks before it, `zcat {dir}/{file} \
         | head -n 60 > fixed.jsonl`"
    ));
    let screen = text(&draw(&mut AppState::new(true), &replay, 80, 24));
    let shown = stop_rows(&screen);
    assert!(
        shown.starts_with(&format!("replay stopped: …/{file}:61: corrupt tick")),
        "{screen}"
    );
    assert!(
        shown.ends_with(&format!("`zcat …/{file} | head -n 60 > fixed.jsonl`")),
        "{screen}"
    );
    let name = "corrupt_middle_line_recording_from_node_gpu_cluster_alpha.jsonl";
    replay.fail(format!(
        "{dir}/{name}:53: corrupt tick; delete line 53 to read past it"
    ));
    let mut st = AppState::new(true);
    st.paused = true;
    let screen = text(&draw(&mut st, &replay, 80, 24));
    let shown = stop_rows(&screen);
    assert!(
        shown.starts_with("‖ PAUSED · replay stopped:")
            && shown.contains(&format!("…/{name}:53: corrupt tick; delete line 53")),
        "{screen}"
    );
}

/// The rows from "… stopped:" to the screen's end, joined as one line.
fn stop_rows(screen: &str) -> String {
    let lines: Vec<&str> = screen.lines().collect();
    let first = lines
        .iter()
        .rposition(|l| l.contains("stopped:"))
        .unwrap_or_else(|| panic!("no stop message in\n{screen}"));
    let rows: Vec<&str> = lines[first..].iter().map(|l| l.trim()).collect();
    rows.join(" ")
}

/// The status line says what stopped: a replay that met a corrupt tick is not "sampling".
#[test]
fn the_status_line_says_whether_sampling_or_a_replay_stopped() {
    let mut replay = observed_h200(30);
    assert!(replay.is_replay());
    // Too long for one row of 80 columns: it wraps over the rows it needs, whole.
    let why = "/tmp/review/half50.jsonl:50: corrupt tick (it ends at column 4000 before its \
               tick does: the line was cut short); delete line 50 to read past it";
    replay.fail(why.into());
    let screen = text(&draw(&mut AppState::new(true), &replay, 80, 24));
    assert_eq!(
        stop_rows(&screen),
        format!("replay stopped: {why}"),
        "{screen}"
    );
    // Its rows are taken from the panes above: the screen keeps its 24 rows, the GPU table
    // its header.
    assert_eq!(screen.lines().count(), 24, "{screen}");
    assert!(screen.contains("# NAME"), "{screen}");
    // A recording that ends because its last line is torn says so where the keys were.
    let mut cut = observed_h200(30);
    let first_ms = cut.history().devices[0].samples.get(0).unwrap().t_ms;
    cut.set_position(gpuwatch::store::Position {
        first_ms,
        end_ms: cut.history().latest_ms(),
        can_rewind: true,
    });
    cut.end(Some(
        "line 290 torn mid-write (a recorder stopped while writing, or a partial copy)".into(),
    ));
    let screen = text(&draw(&mut AppState::new(true), &cut, 80, 24));
    let status = screen.lines().last().unwrap();
    assert!(status.starts_with("■ end"), "{screen}");
    // The why gives way at 80 columns rather than being cut mid-word ("(a rec…").
    assert!(
        status
            .trim_end()
            .ends_with("· cut: line 290 torn mid-write"),
        "{status}"
    );
    let wide = text(&draw(&mut AppState::new(true), &cut, 200, 50));
    assert!(
        wide.lines()
            .last()
            .unwrap()
            .trim_end()
            .ends_with("(a recorder stopped while writing, or a partial copy)"),
        "{wide}"
    );
    let mut live = observed_sim(Scenario::Healthy, 1, 5);
    live.fail("NVML stopped answering".into());
    let screen = text(&draw(&mut AppState::new(true), &live, 80, 24));
    assert!(screen.contains("sampling stopped: NVML"), "{screen}");
}

#[test]
fn source_gpu_count_matches_obs() {
    let src = SimSource::new(Scenario::Mixed, 3, 7, START_MS, 250);
    assert_eq!(src.devices().len(), 3);
}

#[test]
fn the_h200_hang_snapshot_replays_with_the_hang_on_screen() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/examples/h200-hang.json");
    let mut src = ReplaySource::open(&path, f64::INFINITY).unwrap();
    let ticks = src.read_all().unwrap();
    let mut store = Store::new(
        &src,
        std::time::Duration::from_secs(900),
        Thresholds::default(),
    )
    .unwrap();
    for t in &ticks {
        store.absorb(t, gpuwatch::model::SelfCost::default());
    }
    let obs = &store;
    let screen = text(&draw(&mut AppState::new(true), obs, 160, 48));
    assert!(
        screen.contains("‼ HANG") && screen.contains("Busy but idle: GPU hung"),
        "{screen}"
    );
    assert!(screen.contains("SM activity 0.8 %"), "{screen}");
}

#[test]
fn a_gpu_is_judging_not_ok_until_the_rules_windows_are_covered() {
    // A hung job that just started: for its first seconds nothing can be said, and the screen
    // must not say "ok".
    let src = SimSource::new(Scenario::HANG, 1, 7, START_MS, 250);
    let mut store = Store::new(
        &src,
        std::time::Duration::from_secs(900),
        Thresholds::default(),
    )
    .unwrap();
    let (_, ticks) = sim_ticks(Scenario::HANG, 1, 30, START_MS);
    let mut state = AppState::new(true);
    for (n, mut t) in ticks.into_iter().enumerate() {
        for p in &mut t.devices[0].processes {
            p.host.as_mut().unwrap().started_ms = None; // arrived with the first tick
        }
        store.absorb(&t, gpuwatch::model::SelfCost::default());
        if n == 16 {
            // Four seconds in, its symptom has held three: the hang is being timed.
            let screen = text(&draw(&mut state, &store, 120, 40));
            assert!(screen.contains("? HANG? 4/8s"), "{screen}");
            assert!(screen.contains("? GPU 0 HANG? Busy but idle: GPU looks hung — its symptom for 4s of the 8s it needs: being timed"), "{screen}"); // Said once: no second count ("judging: 4 s of the 10 s") for the same GPU.
            assert!(!screen.contains("GPU 0 judging"), "{screen}");
            assert!(
                screen.contains("Findings (0 open, 1 being timed)"),
                "{screen}"
            );
            assert!(
                !screen.contains("✓ ok") && !screen.contains("nothing wrong seen"),
                "{screen}"
            );
        }
    }
    let obs = &store;
    let screen = text(&draw(&mut state, obs, 120, 40));
    assert!(screen.contains("‼ HANG"), "{screen}");
    assert!(!screen.contains("judging"), "{screen}");
}

/// The process table's cursor stays on its process when a sort moves the rows (it stayed on
/// the row, and Enter or K then acted on another process), and a click on a table scrolled to
/// the selected GPU picks the row under it.
#[test]
fn the_process_cursor_follows_its_process_through_a_sort_and_a_click_takes_the_row_shown() {
    let obs = observed_sim(Scenario::Mixed, 8, 45);
    let mut st = AppState::new(true);
    keys(
        &mut st,
        &obs,
        &[Key::Tab, Key::Tab, Key::Home, Key::Down, Key::Down],
    );
    let picked = st.selected_row(&obs).unwrap().process.pid;
    let row = st.selected_process;
    keys(&mut st, &obs, &[Key::Char('s')]);
    assert_eq!(st.selected_row(&obs).unwrap().process.pid, picked);
    let screen = text(&draw(&mut st, &obs, 160, 48));
    let moved = gpuwatch::app::process_rows(&st, &obs)
        .iter()
        .position(|r| r.process.pid == picked)
        .unwrap();
    assert_ne!(
        moved, row,
        "the sort did not move the row: the test shows nothing"
    );
    keys(&mut st, &obs, &[Key::Enter]);
    assert!(
        matches!(st.view, View::Process { pid, .. } if pid == picked),
        "{screen}"
    );

    // 80×24 with GPU 5 selected shows one row, GPU 5's: a click on it takes that process.
    let mut st = AppState::new(true);
    keys(&mut st, &obs, &[Key::Char('5')]);
    let screen = text(&draw(&mut st, &obs, 80, 24));
    let (top, n) = st.hits.processes;
    assert_eq!(n, 1, "{screen}");
    st.update(
        Action::Click {
            column: 10,
            row: top,
        },
        &obs,
    );
    let row = st.selected_row(&obs).unwrap();
    assert_eq!((row.gpu, row.process.pid), (5, 10050), "{screen}");
}

/// Enter on a GPU whose processes the filter hides, or whose processes run in its MIG
/// instances, says so (both said "no process on GPU N").
#[test]
fn enter_on_a_gpu_says_why_it_opens_no_process() {
    let obs = observed_sim(Scenario::Mixed, 8, 45);
    let mut st = AppState::new(true);
    let typed: Vec<Key> = "/zzz".chars().map(Key::Char).chain([Key::Enter]).collect();
    keys(&mut st, &obs, &typed);
    keys(&mut st, &obs, &[Key::Char('3'), Key::Enter]);
    assert_eq!(
        st.status.as_deref(),
        Some("no process on GPU 3 matches the filter \"zzz\" (/ then Esc clears it)")
    );
    let obs = observed_sim(Scenario::Mig, 2, 40);
    let mut st = AppState::new(true);
    keys(&mut st, &obs, &[Key::Char('0'), Key::Enter]);
    assert_eq!(
        st.status.as_deref(),
        Some("GPU 0 is split into MIG instances: select one (0:…) to open its processes")
    );
}

/// GPUs numbered past two digits (a recording's GPU 1234): each number takes its room from the
/// name, and every other column stays under its heading, at 80 columns and at 160.
#[test]
fn wide_gpu_numbers_keep_the_columns_under_their_headings() {
    struct Wide(
        Vec<gpuwatch::model::DeviceInfo>,
        gpuwatch::model::SystemInfo,
    );
    impl gpuwatch::model::Describe for Wide {
        fn origin(&self) -> gpuwatch::model::Origin<'_> {
            gpuwatch::model::Origin {
                system: &self.1,
                devices: &self.0,
                interval: std::time::Duration::from_millis(250),
                label: "replay: wide.jsonl".into(),
                pids_are_local: false,
                replay: true,
            }
        }
    }
    let (mut infos, ticks) = sim_ticks(Scenario::Mixed, 4, 5, START_MS);
    for (info, index) in infos.iter_mut().zip([1234, 7, 99999, 3]) {
        info.index = index;
    }
    let wide = Wide(infos, gpuwatch::model::SystemInfo::default());
    let mut store = Store::new(
        &wide,
        std::time::Duration::from_secs(900),
        Thresholds::default(),
    )
    .unwrap();
    for t in &ticks {
        store.absorb(t, gpuwatch::model::SelfCost::default());
    }
    for (w, h) in [(80, 24), (160, 48)] {
        let screen = text(&draw(&mut AppState::new(true), &store, w, h));
        let lines: Vec<&str> = screen.lines().collect();
        let head = lines.iter().position(|l| l.contains("# NAME")).unwrap();
        let column = |l: &str| l.chars().position(|c| c == '%');
        let rows = &lines[head + 1..head + 5];
        let first = column(rows[1]);
        assert!(first.is_some(), "{screen}");
        for row in rows {
            assert_eq!(column(row), first, "{w}x{h}: {row}\n{screen}");
        }
        assert!(
            rows[0].contains("1234 H2") && rows[2].contains("99999 H"),
            "{screen}"
        );
    }
}

#[test]
fn findings_show_on_their_own_gpu_when_indices_are_not_positions() {
    // A recording of a subset of a node's GPUs, listed in another order: NVML indices 107
    // down to 100. The two hung GPUs sit at positions 4 and 5, indices 103 and 102.
    let (mut infos, ticks) = sim_ticks(Scenario::Mixed, 8, 45, START_MS);
    for (pos, info) in infos.iter_mut().enumerate() {
        info.index = 107 - pos as u32;
    }
    let mut history = gpuwatch::history::History::new(&infos, 3600);
    let mut engine = Engine::new(Thresholds::default());
    for t in &ticks {
        history.push(t);
        engine.evaluate(&history);
    }
    let hung: Vec<u32> = engine
        .conclusions()
        .active()
        .iter()
        .filter(|f| f.rule == "hang")
        .map(|f| f.device)
        .collect();
    assert_eq!(hung, [102, 103]);
    assert!(engine
        .conclusions()
        .worst_on(103)
        .is_some_and(|f| f.rule == "hang"));
    assert!(engine
        .conclusions()
        .worst_on(104)
        .is_none_or(|f| f.rule != "hang"));
    assert!(
        engine.conclusions().worst_on(4).is_none(),
        "positions are not indices"
    );
}

/// README's key table is the one key table (`ui::help`), word for word;
/// `GPUWATCH_BLESS=1` rewrites it.
#[test]
fn readme_key_table_is_the_key_table() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let start = readme
        .find("| key | what it does |")
        .expect("README has a key table");
    let end = start + readme[start..].find("\n\n").unwrap() + 1;
    let want = gpuwatch::ui::help_markdown();
    if std::env::var_os("GPUWATCH_BLESS").is_some() {
        std::fs::write(
            &path,
            format!("{}{want}{}", &readme[..start], &readme[end..]),
        )
        .unwrap();
        return;
    }
    assert_eq!(
        &readme[start..end],
        want,
        "README's key table (GPUWATCH_BLESS=1 rewrites it)"
    );
}

const SIZES: [(u16, u16); 4] = [(80, 24), (100, 30), (120, 40), (160, 48)];

/// Is GPU `d` on screen: its own row, or named in the band over a table that does not fit?
fn gpu_on_screen(screen: &str, d: u32) -> bool {
    let row = format!("{d:>2} H200*");
    screen.lines().any(|l| {
        let l = l.trim_start_matches(['│', '▶', ' ']);
        let in_row = l.starts_with(row.trim_start());
        let in_band = l
            .split("findings on GPU ")
            .nth(1)
            .and_then(|rest| rest.split(" · ").next())
            .is_some_and(|list| {
                list.split(' ').any(|r| match r.split_once('-') {
                    Some((a, b)) => {
                        (a.parse().unwrap_or(u32::MAX)..=b.parse().unwrap_or(0)).contains(&d)
                    }
                    None => r == d.to_string(),
                })
            });
        in_row || in_band
    })
}

/// The band over a table that does not fit, when it left GPUs out ("findings on GPU 2-5 …"):
/// they are there by scrolling.
fn band_left_some_out(screen: &str) -> bool {
    screen
        .lines()
        .find(|l| l.contains("findings on GPU "))
        .is_some_and(|l| {
            l.trim_end()
                .trim_end_matches(['─', '┐', '│'])
                .ends_with('…')
        })
}

/// The screens people have, for the demos: every GPU with a finding is on screen at every
/// size (at 80 and 100 columns, 64 GPUs' band may end in "…" after the GPUs a hang waits
/// for, which come first), and at 80×24 each of the mixed demo's 8 GPUs has its row.
#[test]
fn every_flagged_gpu_is_on_screen_at_every_size() {
    for (sc, gpus, name) in [
        (Scenario::Mixed, 8, "mixed"),
        (Scenario::HANG, 1, "hang"),
        (Scenario::Mixed, 64, "mixed64"),
    ] {
        let obs = observed_sim(sc, gpus, 45);
        let flagged: Vec<u32> = obs.findings().active().iter().map(|f| f.device).collect();
        assert!(!flagged.is_empty(), "{name} has findings");
        for (w, h) in SIZES {
            let mut st = AppState::new(true);
            let screen = text(&draw(&mut st, &obs, w, h));
            let narrow = w < 120 && band_left_some_out(&screen);
            for d in &flagged {
                assert!(
                    gpu_on_screen(&screen, *d) || narrow,
                    "{name} {w}×{h}: GPU {d} hidden\n{screen}"
                );
            }
            // The GPU a hang waits for is named first, where the table cannot show every row.
            let culprits = obs
                .findings()
                .active()
                .iter()
                .filter_map(|f| f.culprit.as_ref());
            if let (Some(c), true) = (culprits.map(|c| c.device).min(), gpus > 16) {
                assert!(
                    screen.contains(&format!("· ◀ culprit GPU {c} ")),
                    "{name} {w}×{h}: culprit GPU {c} not named\n{screen}"
                );
            }
            if gpus <= 8 {
                for d in 0..gpus as u32 {
                    assert!(
                        gpu_on_screen(&screen, d),
                        "{name} {w}×{h}: GPU {d} has no row\n{screen}"
                    );
                }
            }
            insta::assert_snapshot!(format!("layout_{name}_{w}x{h}"), screen);
        }
    }
}

/// The sizes people have, the big one included: issue 25's screens are taken at each.
const SCREENS: [(u16, u16); 4] = [(80, 24), (100, 30), (120, 40), (200, 50)];

/// A store fed `ticks` (from one or more scenarios) with the demo's history length.
fn observed_ticks(src: &SimSource, ticks: &[gpuwatch::model::Tick]) -> Store {
    let mut store = Store::new(
        src,
        std::time::Duration::from_secs(900),
        Thresholds::default(),
    )
    .unwrap();
    for t in ticks {
        store.absorb(t, gpuwatch::model::SelfCost::default());
    }
    store
}

/// GPU `d`'s row on screen, if it has one.
fn gpu_row(screen: &str, d: u32) -> Option<&str> {
    let row = format!("{d:>2} H200*");
    screen.lines().find(|l| {
        l.trim_start_matches(['│', '▶', ' '])
            .starts_with(row.trim_start())
    })
}

/// The moments of issue 25 at every size: what the row says agrees with what is going on.
#[test]
fn every_moment_reads_true_at_every_size() {
    // 8 s into a hang: being timed, never ok.
    let (_, early) = common::sim_ticks(Scenario::HANG, 1, 8, START_MS);
    // A hang, then its job gone: the finding says it ended.
    let (_, hang) = common::sim_ticks(Scenario::HANG, 1, 45, START_MS);
    let (_, after) = common::sim_ticks(Scenario::Idle, 1, 3, START_MS);
    let ended: Vec<_> = hang
        .into_iter()
        .chain(common::shifted(after, 45_000))
        .collect();
    let hang_src = SimSource::new(Scenario::HANG, 1, 7, START_MS, 250);
    let cases: Vec<(&str, Store, bool)> = vec![
        ("hang_first_8s", observed_ticks(&hang_src, &early), true),
        ("hang_ended", observed_ticks(&hang_src, &ended), true),
        ("straggler", observed_sim(Scenario::Straggler, 8, 45), true),
        ("gpus9", observed_sim(Scenario::Mixed, 9, 45), true),
        ("gpus12", observed_sim(Scenario::Mixed, 12, 45), true),
        ("gpus16", observed_sim(Scenario::Mixed, 16, 45), true),
        ("no_colour", observed_sim(Scenario::Mixed, 8, 45), false),
    ];
    for (name, obs, colour) in &cases {
        for (w, h) in SCREENS {
            let screen = text(&draw(&mut AppState::new(*colour), obs, w, h));
            assert!(
                screen.contains("# NAME"),
                "{name} {w}×{h}: no header\n{screen}"
            );
            for f in obs.findings().active() {
                if let Some(row) = gpu_row(&screen, f.device) {
                    assert!(
                        !row.contains("✓ ok"),
                        "{name} {w}×{h}: ok beside {}\n{screen}",
                        f.rule
                    );
                }
            }
            insta::assert_snapshot!(format!("moment_{name}_{w}x{h}"), screen);
        }
    }
    let early = text(&draw(&mut AppState::new(true), &cases[0].1, 120, 40));
    let row = gpu_row(&early, 0).unwrap();
    assert!(row.contains("? HANG?") && !row.contains("✓ ok"), "{early}");
    assert!(!early.contains("nothing wrong"), "{early}");
    let ended = text(&draw(&mut AppState::new(true), &cases[1].1, 120, 40));
    assert!(!gpu_row(&ended, 0).unwrap().contains("‼ HANG"), "{ended}");
    assert!(ended.contains("Findings (0 open, 1 ended)"), "{ended}");
    let straggler = text(&draw(&mut AppState::new(true), &cases[2].1, 120, 40));
    assert!(straggler.contains("◀ CULPRIT"), "{straggler}");
    // 9 to 16 GPUs at 120×40 and 200×50: each its own row.
    for (name, obs, _) in &cases[3..6] {
        for (w, h) in [(120, 40), (200, 50)] {
            let screen = text(&draw(&mut AppState::new(true), obs, w, h));
            for d in 0..obs.history().devices.len() as u32 {
                assert!(
                    gpu_row(&screen, d).is_some(),
                    "{name} {w}×{h}: GPU {d}\n{screen}"
                );
            }
        }
    }
}

/// At 80×24 eight GPUs leave the chart five rows: one line of braille plot, where four series
/// collapsed into one. Each series gets a row of bars instead, power first, so a hang reads as
/// full util bars over low power bars.
#[test]
fn a_short_chart_draws_a_row_of_bars_per_series() {
    let obs = observed_sim(Scenario::Mixed, 8, 45);
    let mut st = AppState::new(true);
    keys(&mut st, &obs, &[Key::Char('4')]);
    let screen = text(&draw(&mut st, &obs, 80, 24));
    let row = |name: &str| {
        screen
            .lines()
            .find(|l| l.starts_with(&format!("│{name} ")))
            .unwrap_or_else(|| panic!("no {name} row\n{screen}"))
            .to_string()
    };
    let (power, util, sm) = (row("power"), row("util"), row("SM"));
    assert!(
        screen.find("│power").unwrap() < screen.find("│util").unwrap(),
        "power first\n{screen}"
    );
    assert!(util.contains("████") && util.ends_with("100%│"), "{util}");
    assert!(power.contains("▂▂▂▂") && !power.contains('█'), "{power}");
    assert!(sm.contains("▁▁▁▁") && !sm.contains('▄'), "{sm}");
    assert!(screen.contains("GPU 4 · last 60s ‼ hang"), "{screen}");
    // With room for a real chart (120×40) it is the braille chart, with its time axis.
    let big = text(&draw(&mut st, &obs, 120, 40));
    assert!(!big.contains("│power ") && big.contains("now"), "{big}");
}

/// The findings pane scrolls by lines, to the last line of the last finding, and says there
/// is more until then.
#[test]
fn the_findings_pane_scrolls_to_its_last_line() {
    let obs = observed_sim(Scenario::Mixed, 8, 45);
    let mut st = AppState::new(true);
    keys(&mut st, &obs, &[Key::Tab]);
    let first = text(&draw(&mut st, &obs, 80, 24));
    assert!(first.contains("more lines (↓)"), "{first}");
    let max = st.hits.findings_max;
    assert!(max > 10, "findings are longer than the pane: {max}");
    for _ in 0..max + 5 {
        keys(&mut st, &obs, &[Key::Down]);
        draw(&mut st, &obs, 80, 24);
    }
    assert_eq!(st.findings_scroll, max, "stops at the last line");
    let last = text(&draw(&mut st, &obs, 80, 24));
    assert!(last.contains("▲ end"), "{last}"); // After the findings comes what is being timed: the notebook of GPU 7, its memory held
                                               // idle for 44 s of the 120 s its rule needs (said once, without a "judging" count).
    assert!(last.contains("? GPU 7 IDLE-MEM?"), "{last}");
    assert!(!last.contains("GPU 7 judging"), "{last}");
}

/// A click lands on the GPU drawn under it, also after the table scrolled.
#[test]
fn a_click_after_scrolling_selects_the_clicked_gpu() {
    let obs = observed_sim(Scenario::Mixed, 64, 20);
    let mut st = AppState::new(true);
    keys(&mut st, &obs, &[Key::End]);
    assert_eq!(st.selected_gpu, 63);
    draw(&mut st, &obs, 80, 24);
    let (top, rows) = st.hits.overview;
    assert!(st.hits.overview_first > 0, "the table scrolled");
    let want = st.hits.overview_first + rows as usize - 3;
    st.update(
        Action::Click {
            column: 10,
            row: top + rows - 3,
        },
        &obs,
    );
    let screen = text(&draw(&mut st, &obs, 80, 24));
    assert_eq!(st.selected_gpu, want);
    assert!(screen.contains(&format!("▶{want:>2} H200*")), "{screen}");
}

/// Enter on the GPU table opens that GPU's process, not the first of the global table.
#[test]
fn enter_on_a_gpu_opens_its_process() {
    let obs = observed_sim(Scenario::Mixed, 8, 20);
    let mut st = AppState::new(true);
    keys(&mut st, &obs, &[Key::Char('3'), Key::Enter]);
    assert!(
        matches!(st.view, View::Process { device: 3, .. }),
        "{:?}",
        st.view
    );
}

/// Under `NO_COLOR` the chart's four series are drawn with four different marks, and its title
/// says which is which.
#[test]
fn without_colour_the_chart_series_differ_by_mark() {
    let obs = observed_sim(Scenario::Mixed, 8, 45);
    let mut st = AppState::new(false);
    let buf = draw(&mut st, &obs, 120, 40);
    let screen = text(&buf);
    assert!(
        screen.contains("⠒ util")
            && screen.contains("• power %TDP")
            && screen.contains("▄ SM active")
            && screen.contains("█ memory"),
        "{screen}"
    );
    let chart_rows: String = screen.lines().skip(13).take(15).collect();
    assert!(
        chart_rows.contains('•') && chart_rows.contains('▄'),
        "{screen}"
    );
}

#[test]
fn a_replays_processes_without_host_side_are_explained_as_recorded_so() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/h200-blocking/blocking.jsonl.gz");
    let mut src = gpuwatch::source::replay::ReplaySource::open(&path, f64::INFINITY).unwrap();
    let mut store = Store::new(
        &src,
        std::time::Duration::from_secs(900),
        Thresholds::default(),
    )
    .unwrap();
    for mut t in src.read_all().unwrap().into_iter().take(120) {
        for p in &mut t.devices[0].processes {
            p.host = None;
        }
        store.absorb(&t, gpuwatch::model::SelfCost::default());
    }
    let screen = text(&draw(&mut AppState::new(true), &store, 160, 48));
    assert!(
        screen.contains("recorded without their host side"),
        "{screen}"
    );
    assert!(!screen.contains("--pid=host"), "{screen}");
}

/// A message leaves the status line 10 s of sample time after it was first drawn, giving the
/// line back to the keys; a message a key replaced is timed afresh. (Until 2026-12-05 the
/// refusal of `K` stayed over the keys until the next key, for minutes.)
#[test]
fn a_status_message_gives_the_line_back_after_ten_seconds_of_samples() {
    let early = observed_sim(Scenario::Healthy, 1, 5);
    let late = observed_sim(Scenario::Healthy, 1, 16);
    let mut st = AppState::new(true);
    let frame = |st: &mut AppState, store: &Store| {
        let screen = text(&draw(st, store, 80, 24));
        st.update(Action::Drawn(st.hits), store);
        screen.lines().last().unwrap().trim_end().to_string()
    };
    keys(&mut st, &early, &[Key::Char('K')]);
    let said = st.status.clone().unwrap();
    assert_eq!(frame(&mut st, &early), said);
    assert_eq!(
        frame(&mut st, &early),
        said,
        "kept while sample time stands"
    );
    // 11 s of samples later: drawn once more, then the keys' line is back.
    assert_eq!(frame(&mut st, &late), said);
    assert!(st.status.is_none());
    assert!(
        frame(&mut st, &late).starts_with("? keys"),
        "the keys' line is back"
    );
    // A new message is timed from its own first frame.
    keys(&mut st, &late, &[Key::Char('K')]);
    assert_eq!(frame(&mut st, &late), said);
    assert_eq!(st.status.as_deref(), Some(said.as_str()));
}

/// A recording torn in its first tick (or only its header) plays no tick: nothing on screen
/// says "ok" or "no process" of GPUs never read, and the status line says where it was cut.
#[test]
fn a_replay_with_no_whole_tick_says_so_and_nothing_is_ok() {
    let header = {
        use std::io::Read;
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/h200/phases.jsonl.gz");
        let mut text = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
            .read_to_string(&mut text)
            .unwrap();
        text.lines().next().unwrap().to_string()
    };
    let torn = format!("{header}\n{{\"t_ms\": 17");
    let mut src =
        ReplaySource::from_reader(std::io::Cursor::new(torn), Path::new("rec.jsonl"), 1.0).unwrap();
    assert!(src.read_all().unwrap().is_empty());
    let mut store = Store::new(
        &src,
        std::time::Duration::from_secs(900),
        Thresholds::default(),
    )
    .unwrap();
    store.end(src.cut_short());
    let small = text(&draw(&mut AppState::new(true), &store, 80, 24));
    assert!(small.contains("– no data"), "{small}");
    assert!(!small.contains("✓ ok"), "{small}");
    assert_eq!(
        small.lines().last().unwrap().trim_end(),
        "■ end: no whole tick read · cut: line 2 torn mid-write",
        "{small}"
    );
    let big = text(&draw(&mut AppState::new(true), &store, 200, 50));
    assert!(
        big.contains("nothing to judge: the recording holds no whole tick"),
        "{big}"
    );
    assert!(
        big.contains("no reading yet: which processes hold the GPUs is not known"),
        "{big}"
    );
    assert!(!big.contains("nothing wrong seen"), "{big}");
    let mut st = AppState::new(true);
    keys(&mut st, &store, &[Key::Char('[')]);
    assert_eq!(
        st.status.as_deref(),
        Some("nothing to seek: no tick of the recording has been read")
    );
}

/// A lost GPU's chart, drawn as rows of bars (8 GPUs at 80×24), gives no latest value once
/// its series stopped: it read its last power and util ("98%") beside "‼ LOST".
#[test]
fn a_lost_gpus_bars_give_no_latest_value() {
    let obs = observed_sim(Scenario::Rule(gpuwatch::rules::RuleId::Lost), 8, 30);
    let screen = text(&draw(&mut AppState::new(true), &obs, 80, 24));
    let chart: Vec<&str> = screen
        .lines()
        .skip_while(|l| !l.contains("┌ GPU 0 · last"))
        .skip(1)
        .take(3)
        .collect();
    assert!(screen.contains("‼ LOST"), "{screen}");
    for row in &chart {
        assert!(row.ends_with("– │") && !row.contains('%'), "{screen}");
    }
    // A GPU that still answers keeps its values.
    let mut state = AppState::new(true);
    state.update(Action::Key(Key::Char('1')), &obs);
    let screen = text(&draw(&mut state, &obs, 80, 24));
    assert!(screen.contains("┌ GPU 1 · last"), "{screen}");
    let row = screen
        .lines()
        .skip_while(|l| !l.contains("┌ GPU 1 · last"))
        .nth(1)
        .unwrap();
    assert!(row.starts_with("│power") && row.ends_with("%│"), "{screen}");
}

/// A GPU whose power reads nothing cannot be judged busy or idle: its badge says why, not
/// "✓ ok" (a hung GPU with no power reading looked fine) and not a count that never ends.
#[test]
fn a_gpu_without_power_is_not_called_ok() {
    let obs = common::store_with(Scenario::Rule(gpuwatch::rules::RuleId::Hang), 1, 40, |t| {
        for d in &mut t.devices {
            d.sample.power_w = None;
        }
    });
    let screen = text(&draw(&mut AppState::new(true), &obs, 100, 30));
    let row = screen.lines().find(|l| l.contains("▶ 0 ")).unwrap();
    assert!(
        row.contains("– no power") && !row.contains("ok"),
        "{screen}"
    );
    assert!(
        screen.contains("the busy-but-idle rules cannot judge it: no power reading"),
        "{screen}"
    );
}

/// The shortest `--history` the monitor takes judges the rule that reads furthest back, and one
/// interval less is refused: `--history 5s` left findings "being timed" for ever (helper-39).
#[test]
fn the_shortest_history_taken_judges_the_rule_that_reads_furthest_back() {
    let t = Thresholds::default();
    let (span, rule) = gpuwatch::rules::longest_span(&t);
    let interval = std::time::Duration::from_millis(common::INTERVAL_MS);
    let least = gpuwatch::rules::least_history(interval, &t);
    assert_eq!(least, span + interval);
    assert_eq!(gpuwatch::rules::history_holds(least, interval, &t), Ok(()));
    let refused = gpuwatch::rules::history_holds(span, interval, &t).unwrap_err();
    assert!(refused.contains(&format!("{:?}", rule.title)), "{refused}");
    let opened = |history| {
        let scenario = Scenario::Rule(rule.id);
        let src = SimSource::new(scenario, 1, 7, START_MS, common::INTERVAL_MS);
        let mut store = Store::new(&src, history, t.clone()).unwrap();
        for tick in sim_ticks(scenario, 1, span.as_secs() + 90, START_MS).1 {
            store.absorb(&tick, gpuwatch::model::SelfCost::default());
        }
        store
            .findings()
            .active()
            .iter()
            .any(|f| f.title == rule.title)
    };
    assert!(opened(least), "{} never opened with {least:?}", rule.title);
    assert!(!opened(span), "the bound is one interval too long");
}

/// The least history is whole intervals: at 700 ms the history the message asks for is taken
/// (it asked for "2m700ms", which it then refused, helper-40), and a history of 2^30 s is
/// not "too short" (its sample count wrapped).
#[test]
fn the_least_history_is_whole_intervals_and_what_it_asks_for_is_taken() {
    let t = Thresholds::default();
    let (span, _) = gpuwatch::rules::longest_span(&t);
    let every = std::time::Duration::from_millis(700);
    let least = gpuwatch::rules::least_history(every, &t);
    assert!(
        least >= span + every && least < span + 2 * every,
        "{least:?}"
    );
    assert_eq!(gpuwatch::rules::history_holds(least, every, &t), Ok(()));
    let under = least
        .checked_sub(std::time::Duration::from_millis(1))
        .unwrap();
    let refused = gpuwatch::rules::history_holds(under, every, &t).unwrap_err();
    let asked = humantime::format_duration(least)
        .to_string()
        .replace(' ', "");
    assert!(
        refused.contains(&format!("(--history {asked})")),
        "{refused}"
    );
    let huge = std::time::Duration::from_secs(1 << 30);
    assert_eq!(gpuwatch::rules::history_holds(huge, every, &t), Ok(()));
}
