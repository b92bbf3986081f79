//! The labelled corpus (tests/corpus/labels.json): real H200 recordings cut into phases by
//! what each workload did, replayed through the rules and scored per phase — the finding, its
//! cause, the time to diagnosis from onset, false alarms, the culprit of multi-GPU hangs —
//! as recorded, without GPM, and thinned to one tick a second. Prints the table, keeps
//! docs/validation.md's copy of it current (`GPUWATCH_BLESS=1 cargo test --test corpus`
//! rewrites it), and fails below the targets.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use gpuwatch::config::Thresholds;
use gpuwatch::history::History;
use gpuwatch::model::{DeviceInfo, GpmMetrics, Tick};
use gpuwatch::rules::{Engine, Finding, Severity};
use gpuwatch::source::replay::ReplaySource;
use gpuwatch::source::Source;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct Labels {
    recordings: Vec<Recording>,
}

#[derive(Debug, Deserialize)]
struct Recording {
    /// Relative to tests/.
    file: String,
    /// `tune` (the rules were fitted on it), `holdout` (checked once the rules were done) or
    /// `earlier` (recordings of earlier sessions, by an older gpuwatch).
    set: String,
    phases: Vec<Phase>,
}

#[derive(Debug, Clone, Deserialize)]
struct Phase {
    job: String,
    gpu: u32,
    /// `healthy`, `startup`, `transition`, `idle`, `culprit` (nothing may fire), or the rule
    /// that must: `hang`, `starved`, `sync`, `transfer`, `mem-growth`.
    label: String,
    start_ms: u64,
    end_ms: u64,
    onset_ms: Option<u64>,
    /// For a multi-GPU hang: the GPU of the rank the others wait for.
    culprit_gpu: Option<u32>,
    /// For a hang of ranks sharing one GPU: the process the others wait for (named from their
    /// Python stacks).
    culprit_pid: Option<u32>,
}

impl Phase {
    fn expected(&self) -> Option<&str> {
        match self.label.as_str() {
            "healthy" | "startup" | "transition" | "idle" | "culprit" => None,
            rule => Some(rule),
        }
    }
}

/// A finding as first raised, and as it ended up (for the culprit kept after the job ended).
#[derive(Debug, Clone)]
struct Raised {
    first: Finding,
    last: Finding,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Variant {
    AsRecorded,
    NoGpm,
    OneSecond,
    /// The Python stacks taken out: what counters alone make of a recording that has them.
    NoStacks,
}

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::AsRecorded => "as recorded",
            Variant::NoGpm => "without GPM",
            Variant::OneSecond => "1 s ticks",
            Variant::NoStacks => "without stacks",
        }
    }
    fn apply(self, ticks: &[Tick]) -> Vec<Tick> {
        match self {
            Variant::AsRecorded => ticks.to_vec(),
            Variant::NoGpm => ticks
                .iter()
                .cloned()
                .map(|mut t| {
                    for d in &mut t.devices {
                        d.sample.gpm = GpmMetrics::default();
                    }
                    t
                })
                .collect(),
            Variant::NoStacks => ticks
                .iter()
                .cloned()
                .map(|mut t| {
                    t.stacks.clear();
                    t
                })
                .collect(),
            Variant::OneSecond => {
                // The stack bursts of the ticks left out ride on the next one kept, as a
                // sampler reading once a second would bring them.
                let mut last = None;
                let mut carried = Vec::new();
                let mut out = Vec::new();
                for t in ticks {
                    carried.extend(t.stacks.iter().cloned());
                    if last.is_none_or(|l: u64| t.t_ms >= l + 950) {
                        last = Some(t.t_ms);
                        let mut kept = t.clone();
                        kept.stacks = std::mem::take(&mut carried);
                        out.push(kept);
                    }
                }
                out
            }
        }
    }
}

const VARIANTS: [Variant; 4] = [
    Variant::AsRecorded,
    Variant::NoGpm,
    Variant::OneSecond,
    Variant::NoStacks,
];

/// The sets recorded with Python stacks: only there is "without stacks" another variant.
fn has_stacks(set: &str) -> bool {
    set.starts_with("stacks")
}

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

fn load(file: &str) -> (Vec<DeviceInfo>, Vec<Tick>) {
    let path = tests_dir().join(file);
    let mut src = ReplaySource::open(&path, f64::INFINITY)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let ticks = src.read_all().unwrap();
    (src.devices().to_vec(), ticks)
}

/// Replays the ticks as the sampler does (rules judged every 200 ms of sample time).
fn replay(infos: &[DeviceInfo], ticks: &[Tick]) -> Vec<Raised> {
    let mut history = History::new(infos, 3600 * 4);
    let mut engine = Engine::new(Thresholds::default());
    let mut raised: Vec<Finding> = Vec::new();
    let mut judged: Option<u64> = None;
    for tick in ticks {
        history.push(tick);
        if judged.is_some_and(|j| tick.t_ms >= j && tick.t_ms - j < 200) {
            continue;
        }
        judged = Some(tick.t_ms);
        engine.evaluate(&history);
        for f in engine.conclusions().active() {
            let known = raised
                .iter()
                .any(|r| r.rule == f.rule && r.device == f.device && r.opened_ms == f.opened_ms);
            if !known {
                raised.push(f.clone());
            }
        }
    }
    let finals: Vec<Finding> = engine
        .conclusions()
        .cleared()
        .iter()
        .chain(engine.conclusions().active())
        .cloned()
        .collect();
    raised
        .into_iter()
        .map(|first| {
            let last = finals
                .iter()
                .find(|f| {
                    f.rule == first.rule
                        && f.device == first.device
                        && f.opened_ms == first.opened_ms
                })
                .cloned()
                .unwrap_or_else(|| first.clone());
            Raised { first, last }
        })
        .collect()
}

/// One phase's score.
#[derive(Debug, Clone)]
struct Score {
    set: String,
    phase: Phase,
    /// The expected finding, when raised: seconds from onset.
    found_after_s: Option<f64>,
    /// Warnings and criticals opened during the phase that are not its expected finding.
    false_alarms: Vec<String>,
    /// For multi-GPU hangs: the culprit GPU the finding named (at its end). Outer `None`: not
    /// a multi-GPU hang; inner `None`: the finding named no culprit.
    #[allow(clippy::option_option)]
    culprit: Option<Option<u32>>,
    /// For hangs of ranks on one GPU: the culprit process named, likewise.
    #[allow(clippy::option_option)]
    culprit_pid: Option<Option<u32>>,
}

/// Grace after a phase's end for its finding (the rules judge every 200 ms).
const LATE_MS: u64 = 2_000;

fn score(set: &str, phases: &[Phase], raised: &[Raised]) -> Vec<Score> {
    // Findings that answer a problem phase are not false alarms of a neighbouring phase.
    let mut answered: Vec<(String, u32, u64)> = Vec::new();
    let mut scores: Vec<Score> = phases
        .iter()
        .map(|p| {
            let mut s = Score {
                set: set.into(),
                phase: p.clone(),
                found_after_s: None,
                false_alarms: Vec::new(),
                culprit: None,
                culprit_pid: None,
            };
            if let (Some(rule), Some(onset)) = (p.expected(), p.onset_ms) {
                let hit = raised.iter().find(|r| {
                    r.first.rule == rule
                        && r.first.device == p.gpu
                        && r.first.opened_ms + 1_000 >= onset
                        && r.first.opened_ms <= p.end_ms + LATE_MS
                });
                if let Some(r) = hit {
                    s.found_after_s = Some(r.first.opened_ms.saturating_sub(onset) as f64 / 1000.0);
                    answered.push((r.first.rule.clone(), r.first.device, r.first.opened_ms));
                    if p.culprit_gpu.is_some() {
                        s.culprit = Some(r.last.culprit.as_ref().map(|c| c.device));
                    }
                    if p.culprit_pid.is_some() {
                        s.culprit_pid = Some(r.last.culprit.as_ref().map(|c| c.pid));
                    }
                } else {
                    s.culprit = p.culprit_gpu.map(|_| None);
                    s.culprit_pid = p.culprit_pid.map(|_| None);
                }
            }
            s
        })
        .collect();
    for s in &mut scores {
        let p = &s.phase;
        s.false_alarms = raised
            .iter()
            .map(|r| &r.first)
            .filter(|f| {
                f.device == p.gpu
                    && f.severity >= Severity::Warning
                    && f.opened_ms >= p.start_ms
                    && f.opened_ms < p.end_ms
                    && !answered.contains(&(f.rule.clone(), f.device, f.opened_ms))
            })
            .map(|f| {
                format!(
                    "{} at +{:.0} s",
                    f.rule,
                    (f.opened_ms - p.start_ms) as f64 / 1000.0
                )
            })
            .collect();
    }
    scores
}

/// Totals of one set and variant.
#[derive(Debug, Default)]
struct Totals {
    problems: usize,
    found: usize,
    false_alarms: usize,
    quiet_ms: u64,
    hang_ttd: Vec<f64>,
    other_ttd: Vec<f64>,
    culprits: usize,
    culprits_named: usize,
    startups: usize,
    transitions: usize,
    two_gpu_jobs: usize,
}

fn totals(scores: &[Score]) -> Totals {
    let mut t = Totals::default();
    let mut jobs_on_two = std::collections::BTreeSet::new();
    for s in scores {
        let p = &s.phase;
        t.false_alarms += s.false_alarms.len();
        match p.expected() {
            Some(rule) => {
                t.problems += 1;
                if let Some(after) = s.found_after_s {
                    t.found += 1;
                    if rule == "hang" {
                        t.hang_ttd.push(after);
                    } else {
                        t.other_ttd.push(after);
                    }
                }
            }
            None => t.quiet_ms += p.end_ms.saturating_sub(p.start_ms),
        }
        if let Some(want) = p.culprit_gpu {
            t.culprits += 1;
            t.culprits_named += usize::from(s.culprit == Some(Some(want)));
        }
        if let Some(want) = p.culprit_pid {
            t.culprits += 1;
            t.culprits_named += usize::from(s.culprit_pid == Some(Some(want)));
        }
        t.startups += usize::from(p.label == "startup");
        t.transitions += usize::from(p.label == "transition");
        if p.gpu == 1 {
            jobs_on_two.insert(p.job.clone());
        }
    }
    t.two_gpu_jobs = scores
        .iter()
        .filter(|s| s.phase.gpu == 0 && jobs_on_two.contains(&s.phase.job))
        .map(|s| s.phase.job.clone())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    t
}

fn worst(v: &[f64]) -> String {
    v.iter()
        .copied()
        .reduce(f64::max)
        .map_or("–".into(), |w| format!("{w:.1} s"))
}

fn median(v: &[f64]) -> String {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2)
        .map_or("–".into(), |m| format!("{m:.1} s"))
}

/// Everything scored: (set, variant) → phase scores.
fn score_corpus() -> BTreeMap<(String, &'static str), Vec<Score>> {
    let labels: Labels = serde_json::from_str(
        &std::fs::read_to_string(tests_dir().join("corpus/labels.json")).unwrap(),
    )
    .unwrap();
    let mut out: BTreeMap<(String, &'static str), Vec<Score>> = BTreeMap::new();
    for rec in &labels.recordings {
        let (infos, ticks) = load(&rec.file);
        for v in VARIANTS {
            if v == Variant::NoStacks && !has_stacks(&rec.set) {
                continue;
            }
            let raised = replay(&infos, &v.apply(&ticks));
            out.entry((rec.set.clone(), v.name()))
                .or_default()
                .extend(score(&rec.set, &rec.phases, &raised));
        }
    }
    out
}

const SET_ORDER: [&str; 8] = [
    "tune", "holdout", "holdout2", "holdout3", "holdout4", "stacks", "stacks2", "earlier",
];

#[allow(clippy::too_many_lines)] // docs/validation.md's table written top to bottom, a column at a time
fn report(all: &BTreeMap<(String, &'static str), Vec<Score>>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "| set | variant | problems found | false alarms (per hour quiet) | hang: median / worst time to finding | others: median / worst | culprit named | start-ups | transitions |");
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|");
    for set in SET_ORDER {
        for v in VARIANTS {
            let Some(scores) = all.get(&(set.to_string(), v.name())) else {
                continue;
            };
            let t = totals(scores);
            let per_hour = t.false_alarms as f64 / (t.quiet_ms as f64 / 3_600_000.0).max(1e-9);
            let _ = writeln!(
                out,
                "| {set} | {} | {}/{} | {} ({per_hour:.1}/h of {:.0} min) | {} / {} | {} / {} | {}/{} | {} | {} |",
                v.name(),
                t.found,
                t.problems,
                t.false_alarms,
                t.quiet_ms as f64 / 60_000.0,
                median(&t.hang_ttd),
                worst(&t.hang_ttd),
                median(&t.other_ttd),
                worst(&t.other_ttd),
                t.culprits_named,
                t.culprits,
                t.startups,
                t.transitions,
            );
        }
    }
    let _ = writeln!(out, "\nEvery phase: the expected finding and how long after onset it came; in bold, what went wrong (a miss, a false alarm: a warning or critical that opened in the phase and is not its finding):\n");
    let _ = writeln!(
        out,
        "| set | GPU | job | label | as recorded | without GPM | 1 s ticks | without stacks | culprit |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|");
    for set in SET_ORDER {
        let Some(base) = all.get(&(set.to_string(), Variant::AsRecorded.name())) else {
            continue;
        };
        for (i, s) in base.iter().enumerate() {
            let p = &s.phase;
            let cells: Vec<String> = VARIANTS
                .iter()
                .map(|v| {
                    all.get(&(set.to_string(), v.name()))
                        .map_or("(no stacks)".into(), |scores| cell(&scores[i]))
                })
                .collect();
            let culprit = match (p.culprit_gpu, s.culprit, p.culprit_pid, s.culprit_pid) {
                (Some(want), Some(Some(got)), _, _) if got == want => format!("GPU {got} ✓"),
                (Some(want), Some(Some(got)), _, _) => format!("**GPU {got}, not {want}**"),
                (Some(_), _, _, _) => "**not named**".into(),
                (_, _, Some(want), Some(Some(got))) if got == want => format!("pid {got} ✓"),
                (_, _, Some(want), Some(Some(got))) => format!("**pid {got}, not {want}**"),
                (_, _, Some(_), _) => "**not named**".into(),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "| {set} | {} | {} | {} | {} | {culprit} |",
                p.gpu,
                p.job,
                p.label,
                cells.join(" | ")
            );
        }
    }
    out
}

/// One phase under one variant: its finding and time, and any false alarm.
fn cell(s: &Score) -> String {
    let mut c = match (s.phase.expected(), s.found_after_s) {
        (None, _) => "–".to_string(),
        (Some(_), Some(a)) => format!("{a:.1} s"),
        (Some(r), None) => format!("**{r} missed**"),
    };
    if !s.false_alarms.is_empty() {
        c = format!("{c} **+{}**", s.false_alarms.join(", "));
    }
    c
}

const BEGIN: &str = "<!-- corpus table: generated by tests/corpus.rs, do not edit -->";
const END: &str = "<!-- end of corpus table -->";

/// Keeps docs/validation.md's copy of the table equal to what the test computed.
fn check_doc(table: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/validation.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (Some(b), Some(e)) = (doc.find(BEGIN), doc.find(END)) else {
        panic!("docs/validation.md lacks the corpus table markers");
    };
    let current = &doc[b + BEGIN.len()..e];
    let wanted = format!("\n{table}");
    if current == wanted {
        return;
    }
    if std::env::var_os("GPUWATCH_BLESS").is_some() {
        let new = format!("{}{BEGIN}{wanted}{}", &doc[..b], &doc[e..]);
        std::fs::write(&path, new).unwrap();
        return;
    }
    panic!("docs/validation.md's corpus table is out of date: run `GPUWATCH_BLESS=1 cargo test --test corpus` and commit it");
}

#[test]
fn the_labelled_corpus_meets_its_targets() {
    let all = score_corpus();
    let table = report(&all);
    println!("{table}");
    check_doc(&table);
    let mut failures = Vec::new();
    for ((set, variant), scores) in &all {
        let t = totals(scores);
        let tag = format!("{set}, {variant}");
        // Without GPM a loader that waits on storage at 0-1 % util cannot be told from an idle
        // process, and a starved loader shows later (docs/validation.md): misses and times are
        // reported there; false alarms and culprits are held to the targets everywhere.
        let degraded = *variant == Variant::NoGpm.name();
        // Without stacks, what only stacks can tell (a server idle by demand from a starved
        // loop, the rank outside the collective on a shared GPU) is reported, not held.
        let no_stacks = *variant == Variant::NoStacks.name();
        if no_stacks {
            continue;
        }
        if t.found < t.problems && !degraded {
            failures.push(format!(
                "{tag}: {} of {} problems found",
                t.found, t.problems
            ));
        }
        if t.false_alarms > 0 {
            failures.push(format!("{tag}: {} false alarms", t.false_alarms));
        }
        // The earlier sessions' spans start with the job (their scripts wrote no mark at the
        // end of start-up), so their times include model build and first batches: reported
        // in the table, not held to the targets, which count from a measured onset.
        let timed = set != "earlier" && !degraded;
        if timed && t.hang_ttd.iter().any(|s| *s > 10.0) {
            failures.push(format!(
                "{tag}: a hang took {} (target 10 s)",
                worst(&t.hang_ttd)
            ));
        }
        if timed && t.other_ttd.iter().any(|s| *s > 15.0) {
            failures.push(format!(
                "{tag}: a finding took {} (target 15 s)",
                worst(&t.other_ttd)
            ));
        }
        if t.culprits_named < t.culprits {
            failures.push(format!(
                "{tag}: culprit named in {} of {} multi-GPU hangs",
                t.culprits_named, t.culprits
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "below target:\n{}",
        failures.join("\n")
    );
}

#[test]
fn the_corpus_has_what_the_issue_asks_for() {
    let all = score_corpus();
    let mine: Vec<&Score> = all
        .iter()
        .filter(|((set, v), _)| set != "earlier" && *v == Variant::AsRecorded.name())
        .flat_map(|(_, s)| s)
        .collect();
    let labelled = mine.len();
    let startups = mine.iter().filter(|s| s.phase.label == "startup").count();
    let transitions = mine
        .iter()
        .filter(|s| s.phase.label == "transition")
        .count();
    // A two-GPU job: the same job on GPU 0 and GPU 1 at the same time.
    let two_gpu: std::collections::BTreeSet<(String, String)> = mine
        .iter()
        .filter(|s| s.phase.gpu == 1)
        .filter(|s| {
            mine.iter().any(|o| {
                o.phase.gpu == 0
                    && o.set == s.set
                    && o.phase.job == s.phase.job
                    && o.phase.start_ms < s.phase.end_ms
                    && s.phase.start_ms < o.phase.end_ms
            })
        })
        .map(|s| (s.set.clone(), s.phase.job.clone()))
        .collect();
    assert!(labelled >= 25, "{labelled} labelled phases");
    assert!(startups >= 6, "{startups} start-ups");
    assert!(transitions >= 1, "{transitions} transitions");
    assert!(two_gpu.len() >= 3, "{} two-GPU jobs", two_gpu.len());
    for kind in [
        "hang",
        "starved",
        "sync",
        "mem-growth",
        "transfer",
        "healthy",
    ] {
        for set in ["tune", "holdout"] {
            assert!(
                mine.iter().any(|s| s.set == set && s.phase.label == kind),
                "no {kind} phase in the {set} set"
            );
        }
    }
}

#[test]
fn a_snapshot_taken_after_the_job_ended_still_names_the_culprit() {
    // Taken live on two H200s (holdout2): `gpuwatch snapshot --for 160s` beside the corpus
    // run, written 33 s after the env-launched two-rank job whose rank 1 stopped stepping
    // had ended and its processes were gone.
    let path = tests_dir().join("fixtures/h200x2/after-job-snapshot.json");
    let snap: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let hang = snap["findings"]["recent"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "hang")
        .expect("the hang, closed");
    assert_eq!(hang["device"], 0);
    assert_eq!(hang["culprit"]["device"], 1, "{hang}");
    assert_eq!(
        hang["culprit"]["rank"], 1,
        "rank read from the launcher's variables"
    );
    assert!(snap["devices"]
        .as_array()
        .unwrap()
        .iter()
        .all(|d| d["processes"].as_array().unwrap().is_empty()));
    // Replayed through the current rules, the hang comes out of the samples again; which rank
    // it waited for lives in the stored finding (a snapshot keeps only the last process list).
    let (infos, ticks) = load("fixtures/h200x2/after-job-snapshot.json");
    let raised = replay(&infos, &ticks);
    let again = raised
        .iter()
        .find(|r| r.first.rule == "hang")
        .expect("hang on replay");
    assert_eq!(again.first.device, 0);
}

/// After a problem's onset, how long the screen may take to show that something is being
/// timed: the span a symptom must hold to be watched (one odd sample is not a symptom), and a
/// second for the labelled onset and the first ticks of the symptom.
const SHOW_WITHIN_MS: u64 = gpuwatch::rules::WATCH_MS + 1_000;

/// A leak is a trend: memory has to have grown, and still be growing, before anything can tell
/// it from a job laying out its memory. Measured on the corpus's leaks: watched 4.0–11 s after
/// onset (the slowest at 1 s ticks), while healthy jobs' warm-up is watched in 1 % of moments.
const LEAK_SHOWN_WITHIN_MS: u64 = 12_000;

/// When a phase's symptom can first be seen in the counters: the labelled onset, or for the
/// kernel-based symptoms (all but a leak) the first tick after it with a kernel running. (The
/// earliest recording's loader ran 7 s on the host before its first kernel, labelled from the
/// workload's own start.)
fn observable_from(p: &Phase, ticks: &[Tick], column: usize) -> u64 {
    let onset = p.onset_ms.unwrap_or(p.start_ms);
    if p.label == "mem-growth" {
        return onset + LEAK_SHOWN_WITHIN_MS;
    }
    let first_kernel = ticks
        .iter()
        .filter(|t| t.t_ms >= onset && t.t_ms < p.end_ms)
        .find(|t| {
            t.devices
                .get(column)
                .and_then(|d| d.sample.util_gpu_pct)
                .is_some_and(|u| u > 0.0)
        })
        .map_or(onset, |t| t.t_ms);
    first_kernel + SHOW_WITHIN_MS
}

/// Every moment of every real recording, as the monitor's screen reads it: a GPU's row never
/// reads `✓ ok` while the symptom its phase is labelled with is present (from onset, within
/// `SHOW_WITHIN_MS`, to the phase's end), and an open hang finding never sits beside a row at
/// low util for more than a tick after the symptom ended (it says "ended" instead).
#[test]
#[allow(clippy::too_many_lines)] // one pass over every moment of every recording, checking what the screen reads there
fn the_screen_never_reads_ok_while_a_symptom_is_present() {
    use gpuwatch::store::Store;
    let labels: Labels = serde_json::from_str(
        &std::fs::read_to_string(tests_dir().join("corpus/labels.json")).unwrap(),
    )
    .unwrap();
    let mut checked = 0usize;
    let (mut healthy, mut healthy_watched) = (0usize, 0usize);
    let mut wrong: Vec<String> = Vec::new();
    for rec in &labels.recordings {
        let path = tests_dir().join(&rec.file);
        let mut src = ReplaySource::open(&path, f64::INFINITY).unwrap();
        let ticks = src.read_all().unwrap();
        let mut store = Store::new(
            &src,
            std::time::Duration::from_secs(3600),
            Thresholds::default(),
        )
        .unwrap();
        let mut stale_hang: BTreeMap<u32, usize> = BTreeMap::new();
        let column = |gpu: u32| src.devices().iter().position(|d| d.index == gpu).unwrap();
        let shown_from: Vec<u64> = rec
            .phases
            .iter()
            .map(|p| observable_from(p, &ticks, column(p.gpu)))
            .collect();
        for tick in &ticks {
            store.absorb(tick, gpuwatch::model::SelfCost::default());
            let view = &store;
            for p in rec.phases.iter().filter(|p| p.label == "healthy") {
                if (p.start_ms..p.end_ms).contains(&tick.t_ms) {
                    healthy += 1;
                    let text = gpuwatch::ui::diagnosis_text(view, p.gpu).unwrap_or_default();
                    if text.starts_with('?') {
                        healthy_watched += 1;
                        if std::env::var_os("GPUWATCH_CORPUS_WATCHES").is_some() {
                            eprintln!("watched in healthy {} {}: {text}", rec.file, p.job);
                        }
                    }
                }
            }
            for (p, &from) in rec.phases.iter().zip(&shown_from) {
                if p.expected().is_none() || tick.t_ms < from || tick.t_ms >= p.end_ms {
                    continue;
                }
                checked += 1;
                let text = gpuwatch::ui::diagnosis_text(view, p.gpu).unwrap_or_default();
                if text == "✓ ok" {
                    wrong.push(format!(
                        "{} GPU {} {} at +{:.1} s of the phase: ✓ ok",
                        rec.file,
                        p.gpu,
                        p.label,
                        (tick.t_ms - p.start_ms) as f64 / 1000.0
                    ));
                }
            }
            for (info, d) in src.devices().iter().zip(&tick.devices) {
                let index = info.index;
                let found = view.findings();
                let hang_open = found
                    .active_on(index)
                    .any(|f| f.rule == "hang" && found.ended_ago_ms(f, tick.t_ms).is_none());
                let idle_row = d.sample.util_gpu_pct.is_some_and(|u| u < 50.0);
                let n = stale_hang.entry(index).or_default();
                *n = if hang_open && idle_row { *n + 1 } else { 0 };
                if *n > 1 {
                    wrong.push(format!(
                        "{} GPU {} at {}: ‼ HANG beside util {:?} for {n} ticks",
                        rec.file, index, tick.t_ms, d.sample.util_gpu_pct
                    ));
                }
            }
        }
    }
    assert!(checked > 1000, "only {checked} moments checked");
    eprintln!("{checked} moments with a symptom checked; healthy moments watched: {healthy_watched} of {healthy}");
    // A watch is a hint, not an alarm, but one shown on healthy work teaches users to ignore
    // it: measured 46 of 4149 (1.1 %), mostly an idle server's gaps read as starving.
    assert!(
        healthy_watched * 50 <= healthy,
        "{healthy_watched} of {healthy} healthy moments watched (over 2 %)"
    );
    assert!(
        wrong.is_empty(),
        "{} of {checked} moments read wrong; the first 400:\n{}",
        wrong.len(),
        wrong
            .iter()
            .take(400)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
