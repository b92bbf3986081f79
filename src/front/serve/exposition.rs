//! The Prometheus text format and `OpenMetrics`, written directly: a family's `# HELP` and
//! `# TYPE` (and `# UNIT`, in `OpenMetrics`), then its samples in the order they are given (GPU
//! order), each label set written once per GPU and reused. A metrics library kept every series
//! in a hash map of label vectors: at 64 GPUs one answer took 24 ms, most of it hashing labels,
//! and its output had to be sorted and rewritten afterwards (series order, counter names).

use std::fmt::Write as _;

/// A family's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Gauge,
    Counter,
}

pub struct Exposition {
    out: String,
    openmetrics: bool,
    /// The name samples of the current family are written with.
    sample_name: String,
}

impl Exposition {
    #[must_use]
    pub fn new(openmetrics: bool) -> Self {
        Exposition {
            out: String::with_capacity(64 << 10),
            openmetrics,
            sample_name: String::new(),
        }
    }

    /// Starts a family: `name` (with `_UNIT` appended when there is a unit, as Prometheus names
    /// go), its help (a sentence; the final period is added) and type. A counter's samples are
    /// `NAME_total`; the text format names its HELP and TYPE so too, `OpenMetrics` by the family.
    pub fn family(&mut self, name: &str, help: &str, kind: Kind, unit: Option<&str>) {
        let mut full = name.to_string();
        if let Some(u) = unit {
            full.push('_');
            full.push_str(u);
        }
        self.sample_name.clone_from(&full);
        if kind == Kind::Counter {
            self.sample_name.push_str("_total");
        }
        let described = if self.openmetrics {
            &full
        } else {
            &self.sample_name
        };
        let kind = match kind {
            Kind::Gauge => "gauge",
            Kind::Counter => "counter",
        };
        let _ = writeln!(self.out, "# HELP {described} {help}.");
        let _ = writeln!(self.out, "# TYPE {described} {kind}");
        if let (true, Some(u)) = (self.openmetrics, unit) {
            let _ = writeln!(self.out, "# UNIT {full} {u}");
        }
    }

    /// A sample of the current family: `labels` are written joined by commas, each already
    /// `key="escaped value"` (or several of them: a GPU's label set).
    pub fn gauge(&mut self, labels: &[&str], value: f64) {
        self.name_and_labels(labels);
        write_f64(&mut self.out, value);
        self.out.push('\n');
    }

    /// A counter's sample.
    pub fn counter(&mut self, labels: &[&str], value: u64) {
        self.name_and_labels(labels);
        let _ = write!(self.out, "{value}");
        self.out.push('\n');
    }

    /// A counter's sample that is not a whole number (joules).
    pub fn counter_f64(&mut self, labels: &[&str], value: f64) {
        self.name_and_labels(labels);
        write_f64(&mut self.out, value);
        self.out.push('\n');
    }

    fn name_and_labels(&mut self, labels: &[&str]) {
        self.out.push_str(&self.sample_name);
        if labels.iter().any(|l| !l.is_empty()) {
            self.out.push('{');
            let mut first = true;
            for l in labels.iter().filter(|l| !l.is_empty()) {
                if !first {
                    self.out.push(',');
                }
                self.out.push_str(l);
                first = false;
            }
            self.out.push('}');
        }
        self.out.push(' ');
    }

    /// The whole exposition (`OpenMetrics` ends with `# EOF`).
    #[must_use]
    pub fn finish(mut self) -> String {
        if self.openmetrics {
            self.out.push_str("# EOF\n");
        }
        self.out
    }
}

/// A value as both formats read it: a whole number with `.0`, others in the shortest form
/// that reads back the same (in exponent form when very large or small), `+Inf`, `-Inf`,
/// `NaN`.
fn write_f64(out: &mut String, v: f64) {
    if v.is_nan() {
        out.push_str("NaN");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "+Inf" } else { "-Inf" });
    } else if v.abs() >= 1e15 || (v != 0.0 && v.abs() < 1e-4) {
        let _ = write!(out, "{v:e}");
    } else if v.fract() == 0.0 {
        let _ = write!(out, "{v:.1}");
    } else {
        let _ = write!(out, "{v}");
    }
}

/// A label `key="value"`, the value escaped as the exposition formats require (backslash,
/// double quote, line feed), and other control characters, which no scraper expects, as
/// U+FFFD. A process that names itself `a"} 1\nup 0` then gets a label value with those
/// characters, not a series of its own.
#[must_use]
pub fn label(key: &str, value: &str) -> String {
    let mut out = String::with_capacity(key.len() + value.len() + 3);
    out.push_str(key);
    out.push_str("=\"");
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_and_samples_read_as_each_format_wants() {
        for om in [false, true] {
            let mut e = Exposition::new(om);
            e.family("gpuwatch_power", "power draw", Kind::Gauge, Some("watts"));
            e.gauge(&["gpu=\"0\",UUID=\"u\"", ""], 121.5);
            e.gauge(&[], 2.0);
            e.family(
                "gpuwatch_findings_opened",
                "findings opened",
                Kind::Counter,
                None,
            );
            e.counter(&["gpu=\"0\"", "finding=\"hang\""], 3);
            let text = e.finish();
            let want_text = "# HELP gpuwatch_power_watts power draw.\n\
                # TYPE gpuwatch_power_watts gauge\n\
                gpuwatch_power_watts{gpu=\"0\",UUID=\"u\"} 121.5\n\
                gpuwatch_power_watts 2.0\n\
                # HELP gpuwatch_findings_opened_total findings opened.\n\
                # TYPE gpuwatch_findings_opened_total counter\n\
                gpuwatch_findings_opened_total{gpu=\"0\",finding=\"hang\"} 3\n";
            let want_om = "# HELP gpuwatch_power_watts power draw.\n\
                # TYPE gpuwatch_power_watts gauge\n\
                # UNIT gpuwatch_power_watts watts\n\
                gpuwatch_power_watts{gpu=\"0\",UUID=\"u\"} 121.5\n\
                gpuwatch_power_watts 2.0\n\
                # HELP gpuwatch_findings_opened findings opened.\n\
                # TYPE gpuwatch_findings_opened counter\n\
                gpuwatch_findings_opened_total{gpu=\"0\",finding=\"hang\"} 3\n\
                # EOF\n";
            assert_eq!(text, if om { want_om } else { want_text });
        }
    }

    #[test]
    fn values_and_labels_are_written_safely() {
        let mut s = String::new();
        for v in [
            0.0,
            1.0,
            0.98,
            75_161_927_680.0,
            1e300,
            f64::INFINITY,
            f64::NAN,
        ] {
            write_f64(&mut s, v);
            s.push(' ');
        }
        assert_eq!(s, "0.0 1.0 0.98 75161927680.0 1e300 +Inf NaN ");
        assert_eq!(
            label("n", "a\"} 1\nup 0\u{1b}\\"),
            "n=\"a\\\"} 1\\nup 0\u{fffd}\\\\\""
        );
    }
}
