//! A container, and under Kubernetes a pod, a GPU process runs in: what `collect::container`
//! reads from /proc/PID/cgroup (docs/fleet.md, "Containers and pods").

use serde::{Deserialize, Serialize};

/// A container a process runs in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Container {
    /// "docker", "containerd", "cri-o", "podman", or "kubernetes" where only the pod layout
    /// says so (the cgroupfs driver does not name the runtime).
    pub runtime: String,
    /// The container's id: 64 hex digits.
    pub id: String,
    /// The Kubernetes pod's UID, as `kubectl get pod -o jsonpath='{.metadata.uid}'` prints it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_uid: Option<String>,
}

impl Container {
    /// The id as `docker ps` shows it: its first 12 digits.
    #[must_use]
    pub fn short_id(&self) -> &str {
        &self.id[..12.min(self.id.len())]
    }

    /// "containerd 0123456789ab, pod 5f1c…": the screen and the Markdown say it alike.
    #[must_use]
    pub fn describe(&self) -> String {
        self.to_string()
    }
}

/// `describe`, written without a `String` of its own (the process view, every frame).
impl std::fmt::Display for Container {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.runtime, self.short_id())?;
        match &self.pod_uid {
            Some(u) => write!(f, ", pod {u}"),
            None => Ok(()),
        }
    }
}
