//! `gpuwatch query`: the current metrics of each GPU for scripts, as CSV or JSON, in the spirit
//! of `nvidia-smi --query-gpu`, with the findings open on each GPU; `--watch` repeats it for
//! logging to a file. Field names follow nvidia-smi's where it has one.

use std::io::Write as _;
use std::time::Duration;

use anyhow::{bail, Result};

use crate::history::DeviceHistory;
use crate::model::DeviceSample;
use crate::monitor::Config;
use crate::monitor::Source;
use crate::monitor::Store;
use crate::monitor::{Headless, Pace, Plan, Setup};

/// A field: its name, and its value for one GPU (`None`: unsupported or not read yet).
struct Field {
    name: &'static str,
    value: fn(&DeviceHistory, &DeviceSample, &Store) -> Value,
}

enum Value {
    Num(Option<f64>),
    Text(String),
    /// Text that may be absent (`[N/A]`, `null`).
    MaybeText(Option<String>),
    List(Vec<String>),
}

fn num<T: Into<f64>>(v: Option<T>) -> Value {
    Value::Num(v.map(Into::into))
}

const MIB: f64 = 1024.0 * 1024.0;

/// Every field, in the default order.
const FIELDS: [Field; 20] = [
    Field {
        name: "timestamp",
        value: |_, s, _| Value::Num(Some(s.t_ms as f64 / 1000.0)),
    },
    Field {
        name: "index",
        // A MIG instance's is its GPU's, as in nvidia-smi; `mig.instance` tells them apart.
        value: |d, _, _| num(Some(d.info.mig.as_ref().map_or(d.info.index, |m| m.parent))),
    },
    Field {
        name: "name",
        value: |d, _, _| Value::Text(d.info.name.clone()),
    },
    Field {
        name: "uuid",
        value: |d, _, _| Value::Text(d.info.uuid.clone()),
    },
    Field {
        name: "pci.bus_id",
        value: |d, _, _| Value::Text(d.info.pci_bus_id.clone()),
    },
    Field {
        name: "utilization.gpu",
        value: |_, s, _| num(s.util_gpu_pct),
    },
    Field {
        name: "utilization.memory",
        value: |_, s, _| num(s.util_mem_pct),
    },
    Field {
        name: "memory.used",
        value: |_, s, _| Value::Num(s.mem_used_bytes.map(|b| b as f64 / MIB)),
    },
    Field {
        name: "memory.total",
        value: |d, _, _| Value::Num(d.info.memory_total_bytes.map(|b| b as f64 / MIB)),
    },
    Field {
        name: "power.draw",
        value: |_, s, _| num(s.power_w),
    },
    Field {
        name: "power.limit",
        value: |d, s, _| num(s.power_limit_w.or(d.info.power_limit_enforced_w)),
    },
    Field {
        name: "power.idle_floor",
        value: |d, _, v| num(v.findings().floor_w(d.info.index)),
    },
    Field {
        name: "temperature.gpu",
        value: |_, s, _| num(s.temp_c),
    },
    Field {
        name: "clocks.sm",
        value: |_, s, _| num(s.sm_clock_mhz),
    },
    Field {
        name: "clocks.mem",
        value: |_, s, _| num(s.mem_clock_mhz),
    },
    Field {
        name: "gpm.sm_active",
        value: |_, s, _| num(s.gpm.sm_active_pct),
    },
    Field {
        name: "gpm.tensor_active",
        value: |_, s, _| num(s.gpm.tensor_active_pct),
    },
    Field {
        name: "findings",
        value: |d, _, v| {
            Value::List(
                v.findings()
                    .active_on(d.info.index)
                    .map(|f| f.rule.clone())
                    .collect(),
            )
        },
    },
    // Last, so scripts that read the columns by position before MIG still read them.
    Field {
        name: "mig.instance",
        value: |d, _, _| Value::MaybeText(d.info.mig.is_some().then(|| d.info.label().to_string())),
    },
    Field {
        name: "mig.profile",
        value: |d, _, _| Value::MaybeText(d.info.mig.as_ref().map(|m| m.profile.clone())),
    },
];

/// The output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Csv,
    Json,
}

/// What `gpuwatch query` prints, and how often.
pub struct QueryArgs {
    pub format: Format,
    /// Field names; empty means all.
    pub fields: Vec<String>,
    /// Print again every this long until stopped; `None`: once.
    pub watch: Option<Duration>,
    pub header: bool,
}

/// The names of every field, for `--help` and errors.
#[must_use]
pub fn field_names() -> Vec<&'static str> {
    FIELDS.iter().map(|f| f.name).collect()
}

fn chosen(names: &[String]) -> Result<Vec<&'static Field>> {
    if names.is_empty() {
        return Ok(FIELDS.iter().collect());
    }
    let mut fields: Vec<&'static Field> = Vec::new();
    let mut unknown = Vec::new();
    for n in names.iter().map(|n| n.trim()) {
        match FIELDS.iter().find(|f| f.name == n) {
            // A field asked twice is printed once (JSON keys must be unique).
            Some(f) if !fields.iter().any(|g| g.name == f.name) => fields.push(f),
            Some(_) => {}
            None => unknown.push(crate::text::word_shown(n)),
        }
    }
    if let [one] = unknown.as_slice() {
        // The one meant, when it is near (`utilisation.gpu`), as the config's keys are.
        let asked = names
            .iter()
            .map(|n| n.trim())
            .find(|n| crate::text::word_shown(n) == *one)
            .unwrap_or(one);
        let near = FIELDS
            .iter()
            .map(|f| (strsim::levenshtein(asked, f.name), f.name))
            .min()
            // Close for its length: "util" is not a misspelt "uuid".
            .filter(|(d, _)| *d <= 2 && *d * 5 <= asked.len());
        if let Some((_, name)) = near {
            bail!("no field {one}: did you mean {name}?");
        }
    }
    if !unknown.is_empty() {
        bail!(
            "no field {}; the fields are: {}",
            unknown.join(", "),
            field_names().join(",")
        );
    }
    Ok(fields)
}

/// Samples and prints: once (after 1.5 s of readings, so that rates and GPM activity have values),
/// or every `watch` until SIGINT/SIGTERM, each line flushed.
pub fn query(source: Box<dyn Source>, config: &Config, args: &QueryArgs) -> Result<()> {
    let fields = chosen(&args.fields)?;
    if args.watch.is_some_and(|w| w < source.interval()) {
        bail!(
            "--watch is shorter than the sampling --interval ({:?}): lengthen it",
            source.interval()
        );
    }
    // The rules judge (the findings and idle floors are fields); no stacks are read.
    let setup = Setup::new(config).without_stacks();
    let mut pipeline = Headless::new(source, &setup)?;
    if crate::format::record::stdout_discards() {
        // As record and snapshot say it: `query --watch >&-` sampled for ever, writing nowhere.
        eprintln!(
            "note: standard output is /dev/null (or was closed): the rows are not kept; \
             redirect standard output to a file or a pipe"
        );
    }
    let mut out = Stdout(std::io::stdout().lock());
    if args.header && args.format == Format::Csv {
        let names: Vec<&str> = fields.iter().map(|f| f.name).collect();
        writeln!(out, "{}", names.join(", "))?;
    }
    // Once: after 1.5 s of readings, so that GPM activity (two slow readings a second apart)
    // and the rates have values, as nvidia-smi's own query does not wait for.
    let once = (1500 / pipeline.source().interval().as_millis().max(1) as u64 + 1).max(2);
    let plan = Plan {
        pace: Pace::Real,
        span: None,
        ticks: if args.watch.is_some() {
            None
        } else {
            Some(once)
        },
    };
    let mut next_ms: Option<u64> = None;
    let mut taken = 0u64;
    pipeline.run(&plan, |t, store| {
        taken += 1;
        let due = match args.watch {
            Some(every) => {
                let due = taken >= 2 && next_ms.is_none_or(|n| t.tick.t_ms >= n);
                if due {
                    next_ms = Some(t.tick.t_ms + every.as_millis() as u64);
                }
                due
            }
            None => taken == once,
        };
        if due {
            print_rows(&mut out, store, &fields, args.format)?;
            out.flush()?;
        }
        Ok(())
    })?;
    Ok(())
}

/// Standard output, whose failures say where they happened: `query > /dev/full` said only
/// "No space left on device (os error 28)", where the other commands say what they could not
/// write to (helper-39).
struct Stdout<'a>(std::io::StdoutLock<'a>);

impl std::io::Write for Stdout<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf).map_err(|e| on_stdout(&e))
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush().map_err(|e| on_stdout(&e))
    }
}

fn on_stdout(e: &std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("cannot write to standard output: {e}"))
}

fn print_rows(
    out: &mut impl std::io::Write,
    view: &Store,
    fields: &[&Field],
    format: Format,
) -> Result<()> {
    for d in &view.history().devices {
        let Some(s) = d.samples.latest() else {
            continue;
        };
        let values: Vec<Value> = fields.iter().map(|f| (f.value)(d, s, view)).collect();
        match format {
            Format::Csv => {
                let cells: Vec<String> = values.iter().map(csv_cell).collect();
                writeln!(out, "{}", cells.join(", "))?;
            }
            Format::Json => {
                // In the order asked for (a serde_json map would sort the keys).
                let members: Vec<String> = fields
                    .iter()
                    .zip(values)
                    .map(|(f, v)| format!("\"{}\":{}", f.name, json_value(v)))
                    .collect();
                writeln!(out, "{{{}}}", members.join(","))?;
            }
        }
    }
    Ok(())
}

/// A CSV cell as nvidia-smi writes them (`[N/A]` for what is not there), quoted when it must be.
fn csv_cell(v: &Value) -> String {
    match v {
        Value::Num(None) | Value::MaybeText(None) => "[N/A]".into(),
        Value::MaybeText(Some(t)) => csv_cell(&Value::Text(t.clone())),
        Value::Num(Some(x)) if x.fract() == 0.0 && x.abs() < 1e15 => format!("{x:.0}"),
        Value::Num(Some(x)) => format!("{x:.2}"),
        Value::List(items) => items.join(" "),
        Value::Text(t) => {
            let t = crate::text::printable(t);
            if t.contains([',', '"', '\n']) {
                format!("\"{}\"", t.replace('"', "\"\""))
            } else {
                t.into_owned()
            }
        }
    }
}

fn json_value(v: Value) -> serde_json::Value {
    match v {
        Value::Num(Some(x)) if x.fract() == 0.0 && x.abs() < 9e15 => {
            serde_json::Value::Number((x as i64).into())
        }
        Value::Num(x) => x.map_or(serde_json::Value::Null, |x| {
            serde_json::Number::from_f64((x * 100.0).round() / 100.0)
                .map_or(serde_json::Value::Null, serde_json::Value::Number)
        }),
        Value::Text(t) | Value::MaybeText(Some(t)) => serde_json::Value::String(t),
        Value::MaybeText(None) => serde_json::Value::Null,
        Value::List(items) => items.into_iter().map(serde_json::Value::String).collect(),
    }
}
