//! What has been observed: the history, the rule engine and its findings, what watching costs,
//! and how sampling ended. One writer (the pacer's thread) takes ticks in; readers (a frame,
//! a scrape, a snapshot) read it in place, under the monitor's lock, so the history is held
//! once. A screen paused on live GPUs keeps a clone for as long as it is paused.

use std::time::Duration;

use crate::history::History;
use std::sync::Arc;

use crate::model::stack::Wants;
use crate::model::{Describe, SelfCost, SystemInfo, Tick};
use crate::rules::Thresholds;
use crate::rules::{Conclusions, Engine};

/// How sampling has gone so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Outcome {
    #[default]
    Running,
    /// A recording played to its end.
    Ended,
    /// Sampling stopped on an error, with the reason.
    Failed(String),
}

/// Where a replay is: its first and last sample times (the last where known before playing to
/// it: a snapshot, a plain recording file), and whether it can seek back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Position {
    pub first_ms: u64,
    pub end_ms: Option<u64>,
    pub can_rewind: bool,
}

/// What does not change during a run: which machine, which source, at what interval.
#[derive(Debug, Clone, Default)]
struct Facts {
    system: SystemInfo,
    source_label: String,
    interval: Duration,
    /// True when process PIDs belong to this machine (signals can be sent to them).
    pids_are_local: bool,
    /// A recording or a snapshot played back, not GPUs sampled now.
    replay: bool,
}

/// The rules judge windows of 8 s and more. While a symptom is being timed or a warning is open
/// they are judged every 200 ms of sample time, so that a finding opens and ends within a tick
/// or so of its window; otherwise every 500 ms: a symptom is timed after 3 s anyway, and
/// judging healthy GPUs five times a second was most of what the sampling thread cost (at
/// `--interval 100ms`, 8 GPUs).
const EVALUATE_EVERY_MS: u64 = 200;
const EVALUATE_QUIET_EVERY_MS: u64 = 500;

#[derive(Clone)]
pub struct Store {
    facts: Facts,
    history: History,
    engine: Engine,
    cost: SelfCost,
    outcome: Outcome,
    /// Sample time of the tick the rules last saw.
    evaluated_ms: Option<u64>,
    /// For a replay: where it is.
    position: Option<Position>,
    /// A recording that ended cut off: where and why (`Source::cut_short`).
    cut: Option<String>,
    /// Where the rules say which processes' stacks they want (live sources), and a buffer.
    stacks: Option<Arc<dyn Wants>>,
    wants: Vec<(u32, bool)>,
}

impl Store {
    /// A store for `source`, keeping `span` of history at the source's own interval.
    /// Refused, with what to change, when that history would not fit in memory.
    pub fn new<S: Describe + ?Sized>(
        source: &S,
        span: Duration,
        thresholds: Thresholds,
    ) -> Result<Self, String> {
        let origin = source.origin();
        let capacity = History::checked_capacity(
            span.as_millis() as u64,
            origin.interval.as_millis() as u64,
            origin.devices.len(),
        )?;
        Ok(Store {
            facts: Facts {
                system: origin.system.clone(),
                source_label: origin.label,
                interval: origin.interval,
                pids_are_local: origin.pids_are_local,
                replay: origin.replay,
            },
            history: History::new(origin.devices, capacity),
            engine: Engine::new(thresholds),
            cost: SelfCost::default(),
            outcome: Outcome::Running,
            evaluated_ms: None,
            position: None,
            cut: None,
            stacks: None,
            wants: Vec::new(),
        })
    }

    /// Tells `link` after each evaluation which processes the open and timed causes want
    /// stacks of (their thread reads them; the sampler brings the bursts back as ticks).
    #[must_use]
    pub fn with_stacks<W: Wants + 'static>(mut self, link: Option<W>) -> Self {
        self.stacks = link.map(|w| Arc::new(w) as Arc<dyn Wants>);
        self
    }

    /// Takes in one tick: history first, then the rules over it (at most every
    /// `EVALUATE_EVERY_MS` of sample time while something is being judged, every
    /// `EVALUATE_QUIET_EVERY_MS` otherwise, and whenever time went backwards).
    pub fn absorb(&mut self, tick: &Tick, cost: SelfCost) {
        self.history.push(tick);
        let every = if self.judging_something() {
            EVALUATE_EVERY_MS
        } else {
            EVALUATE_QUIET_EVERY_MS
        };
        let due = self
            .evaluated_ms
            .is_none_or(|last| tick.t_ms < last || tick.t_ms - last >= every);
        if due {
            self.evaluate(tick.t_ms);
        }
        self.cost = cost;
    }

    /// A symptom is being timed (its finding opens when its window is full) or something
    /// critical is open (a hang's end is shown at once): the rules are judged often. An open
    /// warning alone waits for the quiet cadence, as `Engine::rests` says why.
    fn judging_something(&self) -> bool {
        let found = self.engine.conclusions();
        !found.watching().is_empty()
            || found
                .active()
                .iter()
                .any(|f| f.severity >= crate::rules::Severity::Critical)
    }

    /// Brings the findings up to the last tick taken in, every GPU judged on its newest
    /// sample (one resting at the quiet cadence included) and every open finding worded from
    /// it: at the end of a replay or a run, so that what is reported judged every sample.
    pub fn settle(&mut self) {
        let Some(t) = self.history.latest_ms() else {
            return;
        };
        let engine = &self.engine;
        let behind = self.history.devices.iter().enumerate().any(|(p, d)| {
            d.samples
                .latest()
                .is_some_and(|s| engine.judged_at_ms(p) != Some(s.t_ms))
        });
        if behind || self.evaluated_ms != Some(t) || self.engine.words_behind() {
            self.engine.judge_every_device_next();
            self.evaluate(t);
        }
    }

    /// The source has no more ticks: judge the last of them and say so, and, for a recording
    /// cut off, where it was cut (`cut`).
    pub fn end(&mut self, cut: Option<String>) {
        self.settle();
        self.outcome = Outcome::Ended;
        self.cut = cut;
    }

    /// A recording whose end came early because it is cut off (a torn last line): where.
    pub fn note_cut(&mut self, cut: Option<String>) {
        self.cut = cut;
    }

    /// A replay went back: forget what was seen and judged, and play again from its start.
    pub fn restart(&mut self) {
        self.history.restart();
        self.engine = Engine::new(self.engine.thresholds.clone());
        self.evaluated_ms = None;
        self.outcome = Outcome::Running;
        self.cut = None;
    }

    /// Where a replay is (set by the pacer with each tick of a replay).
    pub fn set_position(&mut self, position: Position) {
        self.position = Some(position);
    }

    pub fn fail(&mut self, reason: String) {
        self.outcome = Outcome::Failed(reason);
    }

    fn evaluate(&mut self, t_ms: u64) {
        self.engine.evaluate(&self.history);
        self.evaluated_ms = Some(t_ms);
        if let Some(link) = &self.stacks {
            self.engine.stack_wants(&self.history, &mut self.wants);
            link.want(&self.wants);
        }
    }

    /// Sample time of the tick the rules last evaluated.
    #[must_use]
    pub fn evaluated_at_ms(&self) -> Option<u64> {
        self.evaluated_ms
    }

    #[must_use]
    pub fn outcome(&self) -> &Outcome {
        &self.outcome
    }

    /// Ticks taken in so far.
    #[must_use]
    pub fn ticks(&self) -> u64 {
        self.history.ticks()
    }

    #[must_use]
    pub fn history(&self) -> &History {
        &self.history
    }

    #[must_use]
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// What the rules concluded: findings, what is being judged and timed, idle floors.
    #[must_use]
    pub fn findings(&self) -> &Conclusions {
        self.engine.conclusions()
    }
    #[must_use]
    pub fn cost(&self) -> &SelfCost {
        &self.cost
    }
    #[must_use]
    pub fn system(&self) -> &SystemInfo {
        &self.facts.system
    }
    /// "NVML", "demo: mixed", "replay: FILE".
    #[must_use]
    pub fn source_label(&self) -> &str {
        &self.facts.source_label
    }
    /// The interval the source was sampled (or recorded) at.
    #[must_use]
    pub fn interval(&self) -> Duration {
        self.facts.interval
    }
    #[must_use]
    pub fn pids_are_local(&self) -> bool {
        self.facts.pids_are_local
    }
    /// A recording or snapshot played back, not GPUs sampled now.
    #[must_use]
    pub fn is_replay(&self) -> bool {
        self.facts.replay
    }
    /// A recording played to its end.
    #[must_use]
    pub fn ended(&self) -> bool {
        self.outcome == Outcome::Ended
    }
    /// A recording cut off before its end: where and why (its last line torn mid-write).
    #[must_use]
    pub fn cut(&self) -> Option<&str> {
        self.cut.as_deref()
    }
    /// Where a replay is; `None` for live and simulated GPUs.
    #[must_use]
    pub fn position(&self) -> Option<Position> {
        self.position
    }
    /// Why sampling stopped, if it failed.
    #[must_use]
    pub fn error(&self) -> Option<&str> {
        match &self.outcome {
            Outcome::Failed(e) => Some(e),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::rules::{reword_every, Severity, REWORD_MS, REWORD_OLD_MS};
    use crate::source::sim::{Scenario, SimSource};
    use crate::source::Source;

    fn store(src: &SimSource, span_s: u64) -> Store {
        Store::new(src, Duration::from_secs(span_s), Thresholds::default()).unwrap()
    }

    /// The sample times at which the rules were judged over `ticks` 50 ms ticks of `sc`.
    fn judged_at(sc: Scenario, ticks: usize) -> (Store, Vec<u64>) {
        let mut src = SimSource::new(sc, 1, 7, 0, 50);
        let mut st = store(&src, 60);
        let mut tick = Tick::default();
        let mut judged = Vec::new();
        for _ in 0..ticks {
            src.sample(&mut tick).unwrap();
            st.absorb(&tick, SelfCost::default());
            let at = st.evaluated_at_ms().unwrap();
            if judged.last() != Some(&at) {
                judged.push(at);
            }
        }
        (st, judged)
    }

    /// In one box, a GPU whose symptom is being timed is judged every 200 ms and the others
    /// beside it every 400 ms (at most 500), not at the troubled one's rate (with 64 GPUs that
    /// was most of the rules' cost), a GPU whose warning is already open among them, and a
    /// hung one: its hang is glanced at in between (the test below says it still ends in the
    /// tick that shows it).
    #[test]
    fn an_open_warning_waits_its_turn_like_a_quiet_gpu() {
        // The mixed demo's GPU 0 trains healthily, GPU 2 is starved (a warning open by 30 s),
        // GPU 4 hangs (critical from 25 s).
        let mut src = SimSource::new(Scenario::Mixed, 8, 7, 0, 50);
        let mut st = store(&src, 60);
        let mut tick = Tick::default();
        let mut judged = [Vec::new(), Vec::new(), Vec::new()];
        for _ in 0..800 {
            src.sample(&mut tick).unwrap();
            st.absorb(&tick, SelfCost::default());
            for (at, list) in [0, 2, 4].into_iter().zip(judged.iter_mut()) {
                let t = st.engine.judged_at_ms(at).unwrap();
                if list.last() != Some(&t) && t >= 30_000 {
                    list.push(t);
                }
            }
            // Between its judgments the warning still holds: never read as ended.
            let found = st.findings();
            for f in found.active_on(2).filter(|_| tick.t_ms >= 30_000) {
                assert_eq!(found.ended_ago_ms(f, tick.t_ms), None, "at {}", tick.t_ms);
            }
        }
        let found = st.findings();
        assert!(found.active_on(2).any(|f| f.severity == Severity::Warning));
        assert!(found.active_on(4).any(|f| f.rule == "hang"));
        let gaps = |l: &[u64]| l.windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>();
        for (list, every) in judged.iter().zip([400, 400, 400]) {
            assert!(list.len() > 20, "{list:?}");
            assert!(
                gaps(list).iter().all(|g| *g == every),
                "{every}: {:?} {list:?}",
                gaps(list)
            );
        }
    }

    /// A symptom timed over a short window keeps its GPU at the busy cadence (a hang is due
    /// 8 s after it starts), one timed over a long one does not (memory held idle: 2 min).
    #[test]
    fn only_a_symptom_due_soon_keeps_its_gpu_busy_while_timed() {
        // The mixed demo's GPU 4 hangs (timed from 3 s, critical at 8 s); GPU 7 holds memory
        // idle (timed from 3 s, open at 120 s).
        let mut src = SimSource::new(Scenario::Mixed, 8, 7, 0, 50);
        let mut st = store(&src, 150);
        let mut tick = Tick::default();
        let mut judged = [Vec::new(), Vec::new()];
        for _ in 0..1_200 {
            src.sample(&mut tick).unwrap();
            st.absorb(&tick, SelfCost::default());
            let found = st.findings();
            for (gpu, list) in [4, 7].into_iter().zip(judged.iter_mut()) {
                let timed = found
                    .watching_on(gpu)
                    .is_some_and(|w| w.rule == if gpu == 4 { "hang" } else { "idle-mem" });
                let t = st.engine.judged_at_ms(gpu as usize).unwrap();
                if timed && list.last() != Some(&t) {
                    list.push(t);
                }
            }
        }
        let gaps = |l: &[u64]| l.windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>();
        let (hang, idle) = (gaps(&judged[0]), gaps(&judged[1]));
        assert!(
            hang.len() > 10 && hang.iter().all(|g| *g == 200),
            "{hang:?}"
        );
        assert!(
            idle.len() > 50 && idle.iter().all(|g| *g == 400),
            "{idle:?}"
        );
    }

    /// A hung GPU is judged in full every 400 ms and glanced at in between, and its hang
    /// still ends in the tick whose samples end it: the second with util unpinned (the
    /// newest two, `hang::spinning`). Tried at four phases of the 400 ms: a glance that
    /// missed it would leave the end to the next full judging, a tick late in two of them.
    #[test]
    fn a_hang_glanced_at_between_judgings_ends_in_the_tick_that_shows_it() {
        for phase in 0..4 {
            let mut src = SimSource::new(Scenario::HANG, 1, 7, 0, 250);
            let mut st = store(&src, 120);
            let mut tick = Tick::default();
            let critical = |st: &Store| {
                st.findings()
                    .active_on(0)
                    .any(|f| f.rule == "hang" && f.severity == Severity::Critical)
            };
            let mut ticks = 0;
            while !critical(&st) || ticks % 4 != phase {
                src.sample(&mut tick).unwrap();
                st.absorb(&tick, SelfCost::default());
                ticks += 1;
                assert!(ticks < 4 * 120, "no critical hang in 2 minutes");
            }
            let mut glanced = 0;
            for k in 0..3 {
                src.sample(&mut tick).unwrap();
                // The spin stops: util drops, the rest as it was.
                tick.devices[0].sample.util_gpu_pct = Some(0.0);
                st.absorb(&tick, SelfCost::default());
                glanced += usize::from(st.engine.judged_at_ms(0) != Some(tick.t_ms));
                let found = st.findings();
                let ended = found
                    .active_on(0)
                    .filter(|f| f.rule == "hang")
                    .all(|f| found.ended_ago_ms(f, tick.t_ms).is_some());
                assert_eq!(ended, k >= 1, "phase {phase}, unpinned tick {k}");
            }
            // Each unpinned sample gets the hung GPU judged in full at once.
            assert_eq!(glanced, 0, "phase {phase}");
        }
    }

    /// A busy, healthy GPU (most GPUs, most of the time) is ruled out by the first windows
    /// each rule asks. A window is brought up to the present each time it is asked, so the
    /// windows asked at each judging are what judging it costs, whatever the machine. Counted
    /// as the windows kept (every window ever asked of it: it is healthy throughout).
    #[test]
    fn a_healthy_gpu_is_judged_from_few_windows() {
        let mut src = SimSource::new(Scenario::Healthy, 1, 7, 0, 250);
        let mut st = store(&src, 900);
        let mut tick = Tick::default();
        // Four minutes: past every rule's window (the longest, 2 minutes).
        for _ in 0..4 * 60 * 4 {
            src.sample(&mut tick).unwrap();
            st.absorb(&tick, SelfCost::default());
        }
        assert!(st.engine.conclusions().active().is_empty());
        let kept = st.engine.windows_kept(0);
        // 32 before each rule asked first the window that rules a busy GPU out (2026-12-04).
        assert!(kept <= 17, "{kept} windows kept for a healthy GPU");
    }

    #[test]
    fn quiet_gpus_are_judged_every_500_ms_and_settle_catches_up() {
        // Ticks at 0, 50, …, 1450 ms of a healthy GPU: judged at 0, 500 and 1000 only.
        let (mut st, judged) = judged_at(Scenario::Healthy, 30);
        assert_eq!(judged, [0, 500, 1000]);
        st.settle();
        assert_eq!(
            st.evaluated_at_ms(),
            Some(1450),
            "the end of a run judges the last tick"
        );
    }

    #[test]
    fn a_symptom_being_timed_is_judged_every_200_ms() {
        // A hang from the start: timed once it held 3 s, then judged every 200 ms.
        let (st, judged) = judged_at(Scenario::HANG, 120);
        assert!(!st.findings().watching().is_empty() || !st.findings().active().is_empty());
        let late: Vec<u64> = judged.iter().copied().filter(|t| *t >= 4_000).collect();
        assert!(late.len() > 5, "{judged:?}");
        assert!(late.windows(2).all(|w| w[1] - w[0] == 200), "{judged:?}");
    }

    /// Once a warning is open and nothing else is timed, the one GPU is judged at the quiet
    /// cadence: a warning that stays open costs what a healthy GPU costs.
    #[test]
    fn an_open_warning_alone_is_judged_every_500_ms() {
        let (st, judged) = judged_at(Scenario::Rule(crate::rules::RuleId::Starved), 40 * 20);
        assert!(st
            .findings()
            .active()
            .iter()
            .any(|f| f.rule == "starved" && f.severity == Severity::Warning));
        assert!(st.findings().watching().is_empty());
        let late = &judged[judged.len() - 10..];
        assert!(late.windows(2).all(|w| w[1] - w[0] == 500), "{judged:?}");
    }

    /// The end of a run judges every GPU on its newest sample, those resting included.
    #[test]
    fn settling_judges_every_gpu_on_its_last_sample() {
        let mut src = SimSource::new(Scenario::Mixed, 8, 7, 0, 50);
        let mut st = store(&src, 60);
        let mut tick = Tick::default();
        for _ in 0..601 {
            src.sample(&mut tick).unwrap();
            st.absorb(&tick, SelfCost::default());
        }
        let behind = |st: &Store| {
            (0..8)
                .filter(|&p| st.engine.judged_at_ms(p) != Some(tick.t_ms))
                .count()
        };
        assert!(behind(&st) > 0, "some GPUs rest at the last tick");
        st.settle();
        assert_eq!(behind(&st), 0);
    }

    /// An open finding as a judging left it: when, its evidence, severity, title, and when its
    /// symptom began.
    type Judged = (u64, Vec<String>, Severity, String, u64);

    /// The hang demo at 50 ms ticks: the open hang finding at each judging.
    fn hang_as_judged(ticks: usize) -> Vec<Judged> {
        let mut src = SimSource::new(Scenario::HANG, 1, 7, 0, 50);
        // Confirmed between two wordings (they fall on whole seconds from its opening).
        let mut t = Thresholds::default();
        t.hang.window = Duration::from_millis(25_400);
        let mut st = Store::new(&src, Duration::from_secs(60), t).unwrap();
        let mut tick = Tick::default();
        let mut seen = Vec::new();
        for _ in 0..ticks {
            src.sample(&mut tick).unwrap();
            st.absorb(&tick, SelfCost::default());
            let judged = st.evaluated_at_ms() == Some(tick.t_ms);
            if let Some(f) = st.findings().active().iter().find(|f| f.rule == "hang") {
                if judged {
                    seen.push((
                        tick.t_ms,
                        f.evidence.clone(),
                        f.severity,
                        f.title.clone(),
                        f.since_ms,
                    ));
                }
            }
        }
        seen
    }

    /// An open hang is looked at every 200 ms, but its evidence is worded again at most as
    /// often as its age asks (`reword_every`: once a second while young, a tenth of its age
    /// later): between, its figures stay as worded. Its confirmation is worded at the judging
    /// that confirms it, and a run's last judging words it from the newest samples.
    #[test]
    fn an_open_findings_evidence_is_worded_as_its_age_asks_and_its_rise_at_once() {
        let seen = hang_as_judged(60 * 20);
        let changes: Vec<(u64, u64)> = seen
            .windows(2)
            .filter(|w| w[0].1 != w[1].1)
            .map(|w| (w[1].0, w[1].4))
            .collect();
        // The simulated power moves, so the figures do change: worded again, not frozen
        // (every second until 10 s of age, every 2.5 s at 25 s, 5 s from 50 s on).
        assert!(changes.len() >= 5, "{changes:?}");
        let rose = seen
            .iter()
            .find(|s| s.2 == Severity::Critical)
            .expect("confirmed within a minute");
        // Confirmed once it lasted `hang_window` (25.4 s; it spins from the start), at the
        // first judging from then on: raised and worded at once.
        assert!((25_400..25_600).contains(&rose.0), "raised at {}", rose.0);
        assert_eq!(rose.3, "Busy but idle: GPU hung", "worded when confirmed");
        assert!(
            rose.1
                .iter()
                .any(|e| e.contains("throughout the last 25 s")),
            "{:?}",
            rose.1
        );
        let after_rise: Vec<(u64, u64)> = changes.into_iter().filter(|c| c.0 > rose.0).collect();
        assert!(
            after_rise
                .windows(2)
                .all(|w| w[1].0 - w[0].0 >= reword_every(REWORD_MS, w[0].0 - w[0].1)),
            "{after_rise:?}"
        );
        // Ended between two wordings, a run reports what a run that words every judging
        // reports: its last judging (`settle`) words every finding from the newest samples.
        let mut src = SimSource::new(Scenario::HANG, 1, 7, 0, 50);
        let (mut throttled, mut every) = (store(&src, 60), store(&src, 60));
        every.engine.word_every_judging();
        let mut tick = Tick::default();
        let shown = |st: &Store| format!("{:?}", st.findings().active());
        let mut between = 0;
        for _ in 0..60 * 20 {
            src.sample(&mut tick).unwrap();
            throttled.absorb(&tick, SelfCost::default());
            every.absorb(&tick, SelfCost::default());
            if shown(&throttled) != shown(&every) {
                between += 1;
                throttled.settle();
                every.settle();
                assert_eq!(shown(&throttled), shown(&every), "at {}", tick.t_ms);
            }
        }
        assert!(between >= 3, "{between} runs ended between two wordings");
    }

    /// When a finding was worded, and when its symptom began.
    type Worded = (u64, u64);

    /// Rule `id`'s own scenario at 100 ms for 4 minutes, each tick changed by `change` before
    /// the store takes it in: the store at the end, and when the finding was worded.
    fn wordings(id: crate::rules::RuleId, change: fn(&mut Tick)) -> (Store, Vec<Worded>) {
        let mut src = SimSource::new(Scenario::Rule(id), 1, 7, 0, 100);
        let mut st = store(&src, 300);
        let mut tick = Tick::default();
        let mut worded: Vec<Worded> = Vec::new();
        for _ in 0..10 * 240 {
            src.sample(&mut tick).unwrap();
            change(&mut tick);
            st.absorb(&tick, SelfCost::default());
            let at = st.engine.worded_ms(0, id);
            if at.is_some_and(|at| Some(at) != worded.last().map(|w| w.0)) {
                let found = st.findings();
                let since = found.active_on(0).find(|f| f.rule == id.as_str());
                worded.extend(at.zip(since.map(|f| f.since_ms)));
            }
        }
        (st, worded)
    }

    /// At least 20 wordings; at most one sooner than its finding's age asks (the judging that
    /// raises a finding's severity words it at once), and none later than that and the quiet
    /// judging's 500 ms (and a tick) while the same symptom holds: worded as fresh as promised,
    /// not frozen.
    fn worded_as_its_age_asks(name: &str, worded: &[Worded]) {
        assert!(worded.len() >= 20, "{name}: worded {worded:?}");
        let due = |w: &Worded| reword_every(REWORD_MS, w.0.saturating_sub(w.1));
        let sooner = worded
            .windows(2)
            .filter(|w| w[1].0 - w[0].0 < due(&w[0]))
            .count();
        assert!(
            sooner <= 1,
            "{name}: {sooner} of {} wordings sooner than due: {worded:?}",
            worded.len()
        );
        let late: Vec<&[Worded]> = worded
            .windows(2)
            .filter(|w| w[0].1 == w[1].1 && w[1].0 - w[0].0 > due(&w[1]) + 600)
            .collect();
        assert!(late.is_empty(), "{name}: worded late: {late:?}");
        let old = worded.iter().filter(|w| due(w) == REWORD_OLD_MS).count();
        assert!(
            old > 0,
            "{name}: never old enough to be worded rarely: {worded:?}"
        );
    }

    /// Every rule's open finding is judged at the busy or quiet cadence (200 or 500 ms) but
    /// worded as its age asks (`reword_every`): between wordings its rule only says that it
    /// still holds (`Verdict::held`), and words nothing. Each rule's own scenario at 100 ms,
    /// 4 minutes. Until 2026-12-05 only six rules did (hang, starved, sync, idle-mem, fp32,
    /// shared); the thirteen others worded their evidence at every judging.
    #[test]
    fn every_rules_open_finding_is_worded_as_its_age_asks() {
        // Every rule declares its scenario (`Rule::demo`): every rule is played.
        for (id, demo) in crate::rules::demos() {
            let (_, worded) = wordings(id, |_| {});
            worded_as_its_age_asks(demo.name, &worded);
        }
    }

    /// A starved finding that its stacks read as benign (a server idle between requests, at
    /// info) is worded as its age asks like any other: its reading was worded at every
    /// judging until 2026-12-07, and a sync finding read so was raised back to its warning,
    /// and worded anew, at every judging.
    #[test]
    fn a_benign_reading_is_worded_as_its_age_asks() {
        use crate::model::stack::StackClass;
        use crate::rules::RuleId;
        for id in [RuleId::Starved, RuleId::Sync] {
            let (st, worded) = wordings(id, |tick| {
                // The main thread waits on its socket, as a server between requests does.
                for t in tick.stacks.iter_mut().flat_map(|b| &mut b.threads) {
                    (t.class, t.class_samples, t.second) =
                        (StackClass::IdleWaiting, t.samples, None);
                }
            });
            let found = st.findings();
            let f = found.active_on(0).find(|f| f.rule == id.as_str());
            assert!(
                f.is_some_and(|f| f.severity == Severity::Info),
                "{id:?}: {f:#?}"
            );
            worded_as_its_age_asks(id.as_str(), &worded);
        }
    }

    #[test]
    fn time_going_backwards_is_judged_at_once() {
        let mut src = SimSource::new(Scenario::Healthy, 1, 7, 10_000, 250);
        let mut st = store(&src, 25);
        let mut tick = Tick::default();
        src.sample(&mut tick).unwrap();
        st.absorb(&tick, SelfCost::default());
        tick.t_ms = 5_000;
        for d in &mut tick.devices {
            d.sample.t_ms = 5_000;
        }
        st.absorb(&tick, SelfCost::default());
        assert_eq!(st.evaluated_at_ms(), Some(5_000));
    }

    #[test]
    fn the_history_is_sized_by_the_sources_interval() {
        let src = SimSource::new(Scenario::Healthy, 2, 7, 0, 100);
        let st = store(&src, 60);
        assert_eq!(st.history().devices[0].samples.capacity(), 600);
        assert_eq!(st.interval(), Duration::from_millis(100));
    }
}
