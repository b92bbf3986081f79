//! The thresholds the rules judge by, one section per rule file. Each rule declares its own
//! section beside its check (`HangThresholds` in `hang.rs`), with its defaults and whatever
//! it must validate beyond the generic checks; the registry (`rules/mod.rs`) assembles them.
//!
//! In the config file (and in snapshots) the sections stay one flat `[thresholds]` table with
//! the keys users already write (`hang_window`, `fp32_pipe_min_pct`): each section's fields
//! carry their flat key as a serde name and are flattened into it.

use std::time::Duration;

/// What a rule's thresholds must satisfy beyond being finite, non-negative, percentages within
/// 0–100 and windows within 1 h (those are checked for every key by its name, in `config`).
pub trait Section {
    /// Why these values cannot work together (`hang_window` shorter than its suspicion).
    fn check(&self) -> Result<(), Refusal> {
        Ok(())
    }
}

/// Why a threshold's value is refused: the key, what is said of it, and a second key the
/// sentence names (the other window of a pair), each kept apart from the words so that the
/// config file can say the line that sets it without reading the sentence back.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub key: String,
    pub says: String,
    /// A second key and the words after it.
    pub then: Option<(String, String)>,
}

impl Refusal {
    /// `thresholds.KEY` followed by `says` (" = 5 must be at most 1h").
    pub fn new(key: impl Into<String>, says: impl Into<String>) -> Self {
        Refusal {
            key: key.into(),
            says: says.into(),
            then: None,
        }
    }

    /// The sentence, each key followed by `place(key)` (" (line 4)" where the file sets it).
    /// A key is said as TOML writes it: one from the file (an unknown key) may hold anything.
    pub fn words(&self, place: impl Fn(&str) -> String) -> String {
        let key = crate::text::toml_key(&self.key);
        let mut out = format!("thresholds.{key}{}{}", place(&self.key), self.says);
        if let Some((key, says)) = &self.then {
            out.push_str(&crate::text::toml_key(key));
            out.push_str(&place(key));
            out.push_str(says);
        }
        out
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.words(|_| String::new()))
    }
}

/// Two windows of one rule that must keep their order: `short` (its key and how it is said,
/// `"mem_growth_fast_window"`) no longer than `long`. Both values and both defaults are said:
/// one of them may be a default the file never wrote.
pub struct WindowOrder<'a> {
    pub short: (&'a str, Duration, Duration),
    pub long: (&'a str, Duration, Duration),
}

impl WindowOrder<'_> {
    /// `Err` naming the keys when `short` is longer than `long`, said from the key the file
    /// set ("must not be longer than", or from the long one's side "must not be shorter
    /// than"); from the long one's side when `from_long` and both or neither were set.
    pub fn check(&self, from_long: bool) -> Result<(), Refusal> {
        let ((sk, s, sd), (lk, l, ld)) = (self.short, self.long);
        if s <= l {
            return Ok(());
        }
        // A value the file left at its default says so: the user set the other one.
        let d = |v: Duration, default: Duration| {
            let v_said = humantime::format_duration(v).to_string();
            if v == default {
                format!("{v_said}, its default")
            } else {
                v_said
            }
        };
        // The sentence is about the key the file set, when it left the other at its default.
        let from_long = match (s == sd, l == ld) {
            (true, false) => true,
            (false, true) => false,
            _ => from_long,
        };
        let (first, second, phrase) = if from_long {
            ((lk, l, ld), (sk, s, sd), "must not be shorter than")
        } else {
            ((sk, s, sd), (lk, l, ld), "must not be longer than")
        };
        Err(Refusal {
            key: first.0.to_string(),
            says: format!(" ({}) {phrase} ", d(first.1, first.2)),
            then: Some((
                second.0.to_string(),
                format!(
                    " ({}); the defaults are {} and {}",
                    d(second.1, second.2),
                    humantime::format_duration(first.2),
                    humantime::format_duration(second.2),
                ),
            )),
        })
    }
}

/// The longest window a rule may judge: the history holds 15 minutes by default.
pub const MAX_WINDOW: Duration = Duration::from_secs(3600);

/// Assembles `Thresholds` from the sections the registry names. Keys no section knows are
/// kept by name in `unknown`: a config file with one is refused (a typo would otherwise be
/// silently ignored), a snapshot from a newer gpuwatch still opens.
macro_rules! thresholds {
    ($($(#[$doc:meta])* $field:ident: $ty:ty,)*) => {
        /// Every threshold and window the rules use, by section. Percentages are 0–100.
        #[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(default)]
        pub struct Thresholds {
            $($(#[$doc])* #[serde(flatten)] pub $field: $ty,)*
            /// Keys no section knows.
            #[serde(flatten, skip_serializing)]
            pub unknown: std::collections::BTreeMap<String, serde::de::IgnoredAny>,
        }

        impl Thresholds {
            /// Every section's own check, in the registry's order.
            pub fn check_sections(&self) -> Result<(), $crate::rules::thresholds::Refusal> {
                $($crate::rules::thresholds::Section::check(&self.$field)?;)*
                Ok(())
            }
        }
    };
}
pub(crate) use thresholds;

/// Durations are written as humantime strings ("30s", "2m") in the file.
pub mod dur {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(*d).to_string())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let s = String::deserialize(d)?;
        if s.trim_start().starts_with('-') {
            // The key is not known here: the config's `in_words` says what range it takes.
            return Err(serde::de::Error::custom(format!("{s:?} is negative")));
        }
        // humantime alone says "expected number at 0": name what was given and what works.
        humantime::parse_duration(&s).map_err(|e| {
            serde::de::Error::custom(format!(
                "{s:?} is not a duration ({e}); write one as \"30s\", \"2m\" or \"1m 30s\""
            ))
        })
    }
}
