//! Thresholds: the defaults, replaced by what the config file sets, validated once.
//!
//! The file is TOML at `$GPUWATCH_CONFIG`, else `$XDG_CONFIG_HOME/gpuwatch/config.toml`, else
//! `~/.config/gpuwatch/config.toml`. Every key is optional; `docs/diagnoses.md` explains each.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Durations are written as humantime strings ("30s", "2m") in the file.
mod dur {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(*d).to_string())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let s = String::deserialize(d)?;
        // humantime alone says "expected number at 0": name what was given and what works.
        humantime::parse_duration(&s).map_err(|e| {
            serde::de::Error::custom(format!(
                "\"{s}\" is not a duration ({e}); write one as \"30s\", \"2m\" or \"1m 30s\""
            ))
        })
    }
}

/// Every threshold and window the rules use. Percentages are 0–100.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Thresholds {
    /// Assumed idle-with-context power as a share of TDP until the GPU shows its own floor.
    pub floor_fallback_pct_of_tdp: f32,
    /// What a resident CUDA context adds to the bare idle floor, as a share of TDP (H200: 79 →
    /// 121 W); used until the GPU has been seen idle with a context.
    pub context_floor_extra_pct_of_tdp: f32,
    /// "Near the floor" means within this share of TDP above it…
    pub floor_margin_pct_of_tdp: f32,
    /// …or within this many watts, whichever is larger.
    pub floor_margin_min_w: f32,

    /// A process's first seconds on a GPU (import, model load, autotune, compile) are its
    /// start-up: the "busy but idle" causes and memory growth judge only what comes after.
    #[serde(with = "dur")]
    pub startup_grace: Duration,

    /// A hang is suspected (warning) once its symptoms held this long…
    #[serde(with = "dur")]
    pub hang_suspect_window: Duration,
    /// …and confirmed (critical) once they held this long, or at once when the job lost a rank.
    #[serde(with = "dur")]
    pub hang_window: Duration,
    /// Utilization at or above this for the whole window counts as pinned.
    pub hang_util_min_pct: f32,
    /// GPM SM activity below this is not real work (NVIDIA: < 50 % is ineffective use; a hung
    /// collective spins on a few SMs, so this is set well above one kernel's ~1 %).
    pub hang_sm_max_pct: f32,

    #[serde(with = "dur")]
    pub starved_window: Duration,
    pub starved_util_max_median_pct: f32,
    /// Power above the floor that starvation may still draw (bursts), as a share of TDP.
    pub starved_power_margin_pct_of_tdp: f32,
    /// The owning process (or one of its workers) counts as busy on the host above this CPU %.
    pub starved_host_cpu_min_pct: f32,

    #[serde(with = "dur")]
    pub sync_window: Duration,
    /// GPM SM activity below this share of utilization means kernels too small to fill the GPU.
    pub sync_sm_to_util_max: f32,
    /// Without GPM, launch-bound work keeps power within this share of TDP of the floor, while
    /// starved work draws more in its bursts.
    pub sync_power_margin_pct_of_tdp: f32,

    #[serde(with = "dur")]
    pub transfer_window: Duration,
    /// Host-to-device traffic at or above this (GiB/s) with little SM work is input copying.
    pub transfer_rx_min_gib_s: f32,
    /// GPM SM activity below this while copying means the copies, not kernels, set the pace.
    pub transfer_sm_max_pct: f32,

    #[serde(with = "dur")]
    pub powercap_window: Duration,
    #[serde(with = "dur")]
    pub thermal_window: Duration,
    #[serde(with = "dur")]
    pub pcie_window: Duration,
    /// Work counts as "busy" for the power-cap, thermal and `PCIe` rules above this utilization.
    pub busy_util_min_pct: f32,

    #[serde(with = "dur")]
    pub idle_mem_window: Duration,
    pub idle_mem_min_gib: f32,

    /// FP32 math on CUDA cores is judged over this window (GPM)…
    #[serde(with = "dur")]
    pub fp32_window: Duration,
    /// …when the FP32 pipes are active at least this much (median of each half)…
    pub fp32_pipe_min_pct: f32,
    /// …and the tensor pipes at most this much.
    pub fp32_tensor_max_pct: f32,

    #[serde(with = "dur")]
    pub mem_full_window: Duration,
    pub mem_full_pct: f32,
    #[serde(with = "dur")]
    pub mem_growth_window: Duration,
    /// Growth over the window, as a share of total memory, that counts as a leak.
    pub mem_growth_min_pct: f32,
    /// A fast leak is judged by its rate over this shorter window…
    #[serde(with = "dur")]
    pub mem_growth_fast_window: Duration,
    /// …when memory grew at least this fast (MiB/s)…
    pub mem_growth_min_mib_s: f32,
    /// …and by at least this much (GiB) within it.
    pub mem_growth_fast_min_gib: f32,

    /// An Xid (or an uncorrected ECC event) keeps its finding open this long after it came:
    /// what it broke does not mend by itself.
    #[serde(with = "dur")]
    pub xid_window: Duration,
    /// `PCIe` replays and `NVLink` errors are counted over this window…
    #[serde(with = "dur")]
    pub link_errors_window: Duration,
    /// …and this many of them within it make a link in trouble.
    pub link_errors_min: f32,

    /// A finding clears only after its condition has been false this long (hysteresis).
    #[serde(with = "dur")]
    pub clear_after: Duration,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            floor_fallback_pct_of_tdp: 17.0,
            context_floor_extra_pct_of_tdp: 6.0,
            floor_margin_pct_of_tdp: 8.0,
            floor_margin_min_w: 25.0,
            startup_grace: Duration::from_secs(5),
            hang_suspect_window: Duration::from_secs(8),
            hang_window: Duration::from_secs(25),
            hang_util_min_pct: 95.0,
            hang_sm_max_pct: 25.0,
            starved_window: Duration::from_secs(10),
            starved_util_max_median_pct: 50.0,
            starved_power_margin_pct_of_tdp: 15.0,
            starved_host_cpu_min_pct: 70.0,
            sync_window: Duration::from_secs(10),
            sync_sm_to_util_max: 0.25,
            sync_power_margin_pct_of_tdp: 3.0,
            transfer_window: Duration::from_secs(10),
            transfer_rx_min_gib_s: 1.0,
            transfer_sm_max_pct: 20.0,
            powercap_window: Duration::from_secs(15),
            thermal_window: Duration::from_secs(15),
            pcie_window: Duration::from_secs(15),
            busy_util_min_pct: 50.0,
            idle_mem_window: Duration::from_secs(120),
            idle_mem_min_gib: 2.0,
            fp32_window: Duration::from_secs(20),
            fp32_pipe_min_pct: 25.0,
            fp32_tensor_max_pct: 10.0,
            mem_full_window: Duration::from_secs(15),
            mem_full_pct: 95.0,
            mem_growth_window: Duration::from_secs(120),
            mem_growth_min_pct: 5.0,
            mem_growth_fast_window: Duration::from_secs(10),
            mem_growth_min_mib_s: 200.0,
            mem_growth_fast_min_gib: 2.0,
            xid_window: Duration::from_secs(600),
            link_errors_window: Duration::from_secs(60),
            link_errors_min: 8.0,
            clear_after: Duration::from_secs(10),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub thresholds: Thresholds,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config file {path} is not valid: {reason}")]
    Invalid { path: PathBuf, reason: String },
}

/// Reads a config file of at most `MAX_CONFIG_BYTES`, refusing a larger (or endless) one.
fn read_bounded(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    let mut text = String::new();
    let read = std::fs::File::open(path)?
        .take(MAX_CONFIG_BYTES + 1)
        .read_to_string(&mut text)?;
    if read as u64 > MAX_CONFIG_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "larger than {} KiB: not a gpuwatch config file",
                MAX_CONFIG_BYTES >> 10
            ),
        ));
    }
    Ok(text)
}

impl Config {
    /// The config file to read: `explicit`, else `$GPUWATCH_CONFIG`, else the XDG location.
    pub fn path(explicit: Option<&Path>) -> Option<PathBuf> {
        if let Some(p) = explicit {
            return Some(p.to_path_buf());
        }
        // Set but empty means unset, as shells leave it after `export GPUWATCH_CONFIG=`.
        if let Some(p) = std::env::var_os("GPUWATCH_CONFIG").filter(|p| !p.is_empty()) {
            return Some(PathBuf::from(p));
        }
        let base = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
        Some(base.join("gpuwatch").join("config.toml"))
    }

    /// Loads `path`; a missing file means defaults unless it was named explicitly.
    pub fn load(path: Option<&Path>, explicit: bool) -> Result<Config, ConfigError> {
        let Some(path) = path else {
            return Ok(Config::default());
        };
        let text = match read_bounded(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {
                return Ok(Config::default())
            }
            Err(source) => {
                return Err(ConfigError::Read {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        Self::parse(&text, path)
    }

    /// Parses and validates a config file's text; `path` is only used in messages.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let cfg: Config = toml::from_str(text).map_err(|e| ConfigError::Invalid {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        cfg.validate().map_err(|reason| ConfigError::Invalid {
            path: path.to_path_buf(),
            reason,
        })?;
        Ok(cfg)
    }

    fn validate(&self) -> Result<(), String> {
        let t = &self.thresholds;
        // Every number, generically: serde writes a NaN or an infinity as null.
        let value = serde_json::to_value(t).map_err(|e| e.to_string())?;
        for (name, v) in value.as_object().into_iter().flatten() {
            if v.is_string() {
                continue; // a duration, checked below
            }
            let Some(x) = v.as_f64() else {
                return Err(format!("thresholds.{name} must be a finite number"));
            };
            if x < 0.0 {
                return Err(format!("thresholds.{name} = {x} must not be negative"));
            }
            if name.contains("_pct") && !name.ends_with("_pct_of_tdp") && x > 100.0 {
                return Err(format!("thresholds.{name} = {x} must be between 0 and 100"));
            }
            if name.ends_with("_pct_of_tdp") && x > 100.0 {
                return Err(format!(
                    "thresholds.{name} = {x} must be between 0 and 100 (% of TDP)"
                ));
            }
        }
        // Every window, by its name: one added to `Thresholds` is checked without a list to
        // keep (durations are humantime strings in the serialized form).
        for (name, v) in value.as_object().into_iter().flatten() {
            let Some(w) = v.as_str().filter(|_| name.ends_with("_window")) else {
                continue;
            };
            let w = humantime::parse_duration(w).map_err(|e| format!("thresholds.{name}: {e}"))?;
            if w.is_zero() || w > MAX_WINDOW {
                return Err(format!(
                    "thresholds.{name} = {} must be longer than 0s and at most 1h",
                    humantime::format_duration(w)
                ));
            }
        }
        if t.hang_window < t.hang_suspect_window {
            return Err(
                "thresholds.hang_window (confirmed) must not be shorter than hang_suspect_window"
                    .into(),
            );
        }
        if t.startup_grace > MAX_WINDOW || t.clear_after > MAX_WINDOW {
            return Err("thresholds.startup_grace and clear_after must be at most 1h".into());
        }
        Ok(())
    }
}

/// The longest window a rule may judge: the history holds 15 minutes by default.
const MAX_WINDOW: Duration = Duration::from_secs(3600);

/// A config file larger than this is not one (`--config /dev/zero` must not read forever).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_overrides_only_the_keys_it_names() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        std::fs::write(
            &p,
            "[thresholds]\nhang_window = \"2m\"\nhang_sm_max_pct = 10\n",
        )
        .unwrap();
        let cfg = Config::load(Some(&p), true).unwrap();
        assert_eq!(cfg.thresholds.hang_window, Duration::from_secs(120));
        assert!((cfg.thresholds.hang_sm_max_pct - 10.0).abs() < f32::EPSILON);
        assert_eq!(
            cfg.thresholds.starved_window,
            Thresholds::default().starved_window
        );
    }

    #[test]
    fn unknown_key_and_bad_value_are_errors_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        std::fs::write(&p, "[thresholds]\nhang_windw = \"2m\"\n").unwrap();
        let e = Config::load(Some(&p), true).unwrap_err().to_string();
        assert!(e.contains("c.toml") && e.contains("hang_windw"), "{e}");
        std::fs::write(&p, "[thresholds]\nmem_full_pct = 140\n").unwrap();
        let e = Config::load(Some(&p), true).unwrap_err().to_string();
        assert!(e.contains("mem_full_pct"), "{e}");
        // A duration that is none says what was given and how to write one.
        std::fs::write(&p, "[thresholds]\nhang_window = \"banana\"\n").unwrap();
        let e = Config::load(Some(&p), true).unwrap_err().to_string();
        assert!(
            e.contains("hang_window")
                && e.contains("\"banana\" is not a duration")
                && e.contains("\"30s\""),
            "{e}"
        );
    }

    #[test]
    fn non_finite_negative_and_out_of_range_values_and_empty_windows_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        for (line, name) in [
            ("hang_util_min_pct = nan", "hang_util_min_pct"),
            ("floor_margin_min_w = inf", "floor_margin_min_w"),
            ("floor_margin_min_w = -5", "floor_margin_min_w"),
            (
                "starved_util_max_median_pct = 5000",
                "starved_util_max_median_pct",
            ),
            ("transfer_rx_min_gib_s = -1", "transfer_rx_min_gib_s"),
            ("sync_window = \"0s\"", "sync_window"),
            ("mem_growth_fast_window = \"0s\"", "mem_growth_fast_window"),
            ("idle_mem_window = \"30d\"", "idle_mem_window"),
        ] {
            std::fs::write(&p, format!("[thresholds]\n{line}\n")).unwrap();
            let e = Config::load(Some(&p), true).unwrap_err().to_string();
            assert!(e.contains(name), "{line}: {e}");
        }
    }

    #[test]
    fn an_endless_config_file_is_refused_with_the_limit() {
        let e = Config::load(Some(Path::new("/dev/zero")), true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("/dev/zero") && e.contains("1024 KiB"), "{e}");
    }

    #[test]
    fn missing_default_file_means_defaults_but_missing_named_file_is_an_error() {
        let p = Path::new("/nonexistent/gpuwatch.toml");
        assert_eq!(Config::load(Some(p), false).unwrap(), Config::default());
        assert!(Config::load(Some(p), true).is_err());
    }
}
