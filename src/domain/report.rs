//! Findings as text and JSON for headless commands.

use serde::Serialize;

use crate::history::History;
use crate::model::{DeviceInfo, SystemInfo, GIB};
use crate::rules::{Finding, Judging, Severity};
use crate::text::{clock, printable};

/// What `gpuwatch diagnose --json` prints.
#[derive(Debug, Serialize)]
pub struct Diagnosis<'a> {
    pub source: String,
    pub system: &'a SystemInfo,
    pub devices: Vec<&'a DeviceInfo>,
    pub samples: u64,
    pub seconds: f64,
    /// Every finding seen during the run: those still open, then those that cleared.
    pub findings: Vec<Finding>,
    pub worst: Option<Severity>,
    /// GPUs whose rules had not covered their windows when the run ended (too short a
    /// `--for`, or a process that had just started): "no findings" there is not "all clear".
    pub judging: Vec<Judging>,
    /// Read from a recording: a GPU not judged in full needs a longer recording, not `--for`
    /// (which a replay does not take).
    #[serde(skip)]
    pub replay: bool,
    /// A recording that ended because it is cut off (its last line torn mid-write): where.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cut: Option<String>,
    /// A recording that could not be read to its end (a corrupt line): why, for a script that
    /// reads the JSON; the findings judge what came before it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// The newest Python stack burst of each process read (by the rules during the run, from
    /// the recording, or at the end with `--stacks`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stacks: Vec<crate::model::stack::StackBurst>,
    /// `--stacks`: the text says where each process is.
    #[serde(skip)]
    pub show_stacks: bool,
}

impl Diagnosis<'_> {
    /// Exit status for scripts: 1 when a warning or worse was found; else 3 when some GPU
    /// could not be judged in full (the run was shorter than the rules' windows); else 0.
    #[must_use]
    pub fn exit_code(&self) -> i32 {
        match self.worst {
            Some(s) if s >= Severity::Warning => 1,
            _ if !self.judging.is_empty() => NOT_JUDGED,
            _ => 0,
        }
    }
}

/// `diagnose`'s exit status when nothing was found but not everything could be judged.
pub const NOT_JUDGED: i32 = 3;

/// "judging: 6 s of the 10 s the rules need (pid 42 is starting)".
#[must_use]
pub fn judging_text(j: &Judging) -> String {
    let starting = match j.starting_pids.as_slice() {
        [] => String::new(),
        [p] => format!("; pid {p} is starting"),
        many => format!(
            "; pids {} are starting",
            many.iter()
                .map(std::string::ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    if let Some(why) = &j.blind {
        return format!("the busy-but-idle rules cannot judge it: {why}{starting}");
    }
    format!(
        "judging: {} s of the {} s the rules need{starting}",
        j.covered_ms / 1000,
        j.needed_ms / 1000
    )
}

/// What the GPU used while the finding's symptom held: "4.8 kJ over 41 s while it held,
/// 117 W mean". `None` where no power was read.
#[must_use]
pub fn energy_line(f: &Finding) -> Option<String> {
    finding_energy(f).map(|e| e.to_string())
}

/// `energy_line` as a value that formats without a `String` of its own (the screen).
#[must_use]
pub fn finding_energy(f: &Finding) -> Option<FindingEnergy> {
    let j = f.energy_j?;
    let span_ms = f
        .cleared_ms
        .unwrap_or(f.last_ms)
        .min(f.last_ms)
        .saturating_sub(f.since_ms);
    Some(FindingEnergy { j, span_ms })
}

/// A finding's energy and the span it was used over.
#[derive(Debug, Clone, Copy)]
pub struct FindingEnergy {
    j: f64,
    span_ms: u64,
}

impl std::fmt::Display for FindingEnergy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::text::{EnergyWords, SpanWords};
        if self.span_ms < 500 {
            return write!(f, "{} in under a second while it held", EnergyWords(self.j));
        }
        write!(
            f,
            "{} over {} while it held",
            EnergyWords(self.j),
            SpanWords(self.span_ms)
        )?;
        if self.span_ms >= 1000 {
            write!(f, ", {:.0} W mean", self.j / (self.span_ms as f64 / 1000.0))?;
        }
        Ok(())
    }
}

/// "used 41.2 kJ over 70 s (energy counter)": what the GPU used over what was watched.
fn energy_of(dev: &crate::history::DeviceHistory) -> Option<String> {
    let j = dev.energy.total_j();
    (j > 0.0).then(|| {
        format!(
            "used {} over {} ({})",
            crate::text::energy_words(j),
            crate::text::span_words(dev.energy.span_ms()),
            if dev.energy.counted() {
                "its energy counter"
            } else if dev.energy.has_counter() {
                // A run under a minute or two: the counter was read once (run 86's 60 s
                // diagnose on an H100 said "no energy counter read").
                "the integral of its power: the energy counter, read once a minute, spans \
                 too little of it yet"
            } else {
                "the integral of its power: no energy counter read"
            }
        )
    })
}

/// One finding, indented, for a terminal or a bug report. An open finding whose symptom ended
/// (the run ends judging every GPU) says so: it is kept open only to see whether it comes back.
pub fn finding_text(f: &Finding, out: &mut String) {
    use std::fmt::Write;
    let state = match f.cleared_ms {
        Some(c) => format!("from {} to {} UTC", clock(f.since_ms), clock(c)),
        None if f.symptom_ended => format!(
            "since {} UTC; ended: not seen since {} UTC",
            clock(f.since_ms),
            clock(f.last_ms)
        ),
        None => format!("since {} UTC", clock(f.since_ms)),
    };
    let _ = writeln!(
        out,
        "  {} {} [{}] {} ({state})",
        f.severity.marker(),
        f.severity.name().to_uppercase(),
        f.rule,
        f.title
    );
    for e in &f.evidence {
        let _ = writeln!(out, "      evidence: {e}");
    }
    for (i, c) in f.causes.iter().enumerate() {
        let _ = writeln!(out, "      cause {}: {c}", i + 1);
    }
    for a in &f.actions {
        let _ = writeln!(out, "      do: {a}");
    }
    if let Some(line) = energy_line(f) {
        let _ = writeln!(out, "      energy: {line}");
    }
    let _ = writeln!(out, "      decided by: {}", f.signals);
}

/// The text report, safe to print to a terminal (`printable`).
#[must_use]
pub fn diagnosis_text(d: &Diagnosis, history: &History) -> String {
    printable(&diagnosis_text_raw(d, history)).into_owned()
}

#[allow(clippy::too_many_lines)] // the report from top to bottom, as it reads; each finding's block is written in order
fn diagnosis_text_raw(d: &Diagnosis, history: &History) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let instances = d.devices.iter().filter(|i| i.mig.is_some()).count();
    let _ = writeln!(
        out,
        "gpuwatch diagnose: {} GPU(s){}, {:.0} s, {} tick{}, from {}",
        d.devices.len() - instances,
        if instances > 0 {
            format!(" and {instances} MIG instance(s)")
        } else {
            String::new()
        },
        d.seconds,
        d.samples,
        if d.samples == 1 { "" } else { "s" },
        d.source
    );
    if let Some(cut) = &d.cut {
        let _ = writeln!(
            out,
            "note: the recording is cut short: {cut}; what came before it is judged"
        );
    }
    for dev in &history.devices {
        let i = dev.info.index;
        let mem = dev.info.memory_total_bytes.map_or(String::new(), |b| {
            format!(", {:.0} GiB", b as f64 / GIB as f64)
        });
        let tdp = dev
            .info
            .tdp_w()
            .map_or(String::new(), |w| format!(", TDP {w:.0} W"));
        let _ = writeln!(
            out,
            "\nGPU {}: {}{mem}{tdp}",
            dev.info.label(),
            dev.info.name
        );
        if let Some(line) = energy_of(dev) {
            let _ = writeln!(out, "  {line}");
        }
        let mine: Vec<&Finding> = d.findings.iter().filter(|f| f.device == i).collect();
        let pending = d.judging.iter().find(|j| j.device == i);
        // A GPU that looks fine on its own may be what another GPU's hang waits for.
        let waiting: Vec<&Finding> = d
            .findings
            .iter()
            .filter(|f| f.device != i && f.cleared_ms.is_none())
            .filter(|f| f.culprit.as_ref().is_some_and(|c| c.device == i))
            .collect();
        if let Some(c) = waiting.first().and_then(|f| f.culprit.as_ref()) {
            let mut on: Vec<u32> = waiting.iter().map(|f| f.device).collect();
            on.sort_unstable();
            on.dedup();
            let on = crate::model::gpus_named(&on);
            let _ = writeln!(out, "  ◀ CULPRIT of the hang on GPU {on}: {}", c.text);
        }
        match (mine.is_empty() && waiting.is_empty(), pending) {
            (true, Some(j)) => {
                // A GPU that cannot be judged says why, and what would help, in its reason.
                let advice = if j.blind.is_some() {
                    ""
                } else if d.cut.is_some() {
                    "the recording is cut short (see the note above)"
                } else if d.replay {
                    "the recording ends too soon: record longer"
                } else {
                    "run longer (`--for`)"
                };
                let sep = if advice.is_empty() { "" } else { "; " };
                let _ = writeln!(
                    out,
                    "  not judged in full: {}{sep}{advice}",
                    judging_text(j)
                );
            }
            (true, None) => {
                let _ = writeln!(out, "  no findings");
            }
            (false, Some(j)) => {
                let _ = writeln!(out, "  {}", judging_text(j));
            }
            (false, None) => {}
        }
        for f in mine {
            finding_text(f, &mut out);
        }
    }
    if d.show_stacks {
        let _ = writeln!(out, "\nWhere the processes are (Python stacks):");
        if d.stacks.is_empty() {
            let _ = writeln!(out, "  none read (no process on the GPUs, or not live)");
        }
        for b in &d.stacks {
            let gpu = history
                .devices
                .iter()
                .find(|dev| dev.processes.iter().any(|p| p.pid == b.pid))
                .map_or(String::new(), |dev| format!(" (GPU {})", dev.info.label()));
            let _ = writeln!(out, "  pid {}{gpu}, at {} UTC:", b.pid, clock(b.t_ms));
            out.push_str(&burst_text(b, "    "));
        }
    }
    let verdict = match d.worst {
        None if !d.judging.is_empty() => {
            "nothing found yet, but not every GPU could be judged in full".to_string()
        }
        None => "nothing found".to_string(),
        Some(s) => format!("worst finding: {}", s.name()),
    };
    let _ = writeln!(out, "\n{verdict}");
    out
}

/// A stack burst as text: each thread's class and share, its stack innermost first (frames of
/// the program marked), then the children (`DataLoader` workers).
#[must_use]
pub fn burst_text(b: &crate::model::stack::StackBurst, indent: &str) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    if let Some(m) = b.message.as_deref().filter(|_| b.read == 0) {
        let _ = writeln!(out, "{indent}{}", printable(m));
        return out;
    }
    let _ = writeln!(
        out,
        "{indent}{} of {} reads over {:.1} s",
        b.read,
        b.samples,
        b.t_ms.saturating_sub(b.started_ms) as f64 / 1000.0
    );
    for t in &b.threads {
        thread_text(&mut out, t, indent);
    }
    if b.threads_left_out > 0 {
        let _ = writeln!(
            out,
            "{indent}({} more threads not kept: at most {} are, the main thread always)",
            b.threads_left_out,
            crate::model::stack::MAX_THREADS
        );
    }
    for c in &b.children {
        let _ = writeln!(out, "{indent}child pid {}:", c.pid);
        out.push_str(&burst_text(c, &format!("{indent}  ")));
    }
    if let Some(m) = b.message.as_deref().filter(|_| b.read > 0) {
        let _ = writeln!(out, "{indent}({})", printable(m));
    }
    out
}

/// One thread of a burst: its class and share, then its frames, innermost first (the
/// program's own marked; the main thread's 12, another's 3).
fn thread_text(out: &mut String, t: &crate::model::stack::ThreadStack, indent: &str) {
    use std::fmt::Write;
    let name = match (t.main, t.name.as_deref()) {
        (true, _) => "main thread".to_string(),
        (false, Some(n)) => format!("thread {}", printable(n)),
        (false, None) => format!("thread {:#x}", t.id),
    };
    let second = t
        .second
        .map_or(String::new(), |(c, n)| format!("; {} {n}", c.words()));
    let what = if t.frames.is_empty() {
        "no Python frames read".to_string()
    } else {
        t.class.words().to_string()
    };
    let _ = writeln!(
        out,
        "{indent}{name}: {what} in {} of {} samples{second}",
        t.class_samples, t.samples
    );
    for f in t.frames.iter().take(if t.main { 12 } else { 3 }) {
        let mark = if crate::model::stack::is_user_file(&f.file) {
            "▸"
        } else {
            " "
        };
        let code = f
            .code
            .as_deref()
            .map_or(String::new(), |c| format!("  {}", printable(c)));
        let _ = writeln!(
            out,
            "{indent}  {mark} {} ({}:{}){code}",
            printable(&f.function),
            printable(&f.file),
            f.line
        );
    }
}
