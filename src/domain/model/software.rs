//! What a GPU process runs with: the CUDA libraries it mapped, the framework it imported, and
//! the allow-listed environment settings, as `collect::software` reads them from /proc.

use serde::{Deserialize, Serialize};

/// A CUDA library the process mapped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Library {
    /// "CUDA runtime", "cuDNN", "NCCL", "cuBLAS", "CUDA driver".
    pub name: String,
    pub version: Option<String>,
    /// Where the version was read: "file name", "wheel `nvidia_nccl_cu13`", "soname (major only)".
    pub from: String,
    pub path: String,
}

/// A framework the process imported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Framework {
    /// "torch", "tensorflow", "jax".
    pub name: String,
    pub version: String,
    /// The CUDA version the framework was built for, where it says (torch's `version.cuda`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda: Option<String>,
}

/// What a GPU process runs with.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Software {
    pub libraries: Vec<Library>,
    pub frameworks: Vec<Framework>,
    /// Allow-listed environment settings, in `collect::software::SETTINGS` order.
    pub settings: Vec<(String, String)>,
    /// Why the environment or the mapped files could not be read ("permission denied…").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
}

impl Software {
    /// The value of an allow-listed setting, if the process has it.
    #[must_use]
    pub fn setting(&self, name: &str) -> Option<&str> {
        self.settings
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The settings read, each as `wrap` writes `KEY=value`, joined by `sep`; `None` when
    /// there are none or they could not be read (`unreadable` says why).
    #[must_use]
    pub fn settings_text(&self, wrap: impl Fn(String) -> String, sep: &str) -> Option<String> {
        if self.unreadable.is_some() || self.settings.is_empty() {
            return None;
        }
        let each: Vec<String> = self
            .settings
            .iter()
            .map(|(k, v)| wrap(format!("{k}={v}")))
            .collect();
        Some(each.join(sep))
    }

    /// "torch 2.11.0+cu130 · CUDA runtime 13.0.96 · cuDNN 9.19.0.56 · NCCL 2.28.9": one line.
    #[must_use]
    pub fn summary(&self) -> String {
        Summary(self).to_string()
    }

    /// Whether `summary` says anything (a framework, or a library besides the driver).
    #[must_use]
    pub fn has_summary(&self) -> bool {
        !self.frameworks.is_empty() || self.summarised_libraries().next().is_some()
    }

    fn summarised_libraries(&self) -> impl Iterator<Item = &Library> {
        self.libraries.iter().filter(|l| l.name != "CUDA driver")
    }
}

/// `Software::summary` as a value that formats without a `String` of its own.
pub struct Summary<'a>(pub &'a Software);

impl std::fmt::Display for Summary<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut sep = "";
        for fw in &self.0.frameworks {
            write!(f, "{sep}{} {}", fw.name, fw.version)?;
            sep = " · ";
        }
        for l in self.0.summarised_libraries() {
            write!(f, "{sep}{} {}", l.name, l.version.as_deref().unwrap_or("?"))?;
            sep = " · ";
        }
        Ok(())
    }
}

/// The settings read, `KEY=value` joined by its separator: `settings_text` without wrapping,
/// as a value that formats without a `String` of its own.
pub struct Settings<'a>(pub &'a Software, pub &'a str);

impl std::fmt::Display for Settings<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (k, v)) in self.0.settings.iter().enumerate() {
            let sep = if i == 0 { "" } else { self.1 };
            write!(f, "{sep}{k}={v}")?;
        }
        Ok(())
    }
}
