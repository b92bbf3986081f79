//! Which container, and under Kubernetes which pod, a GPU process runs in: read once per
//! process from /proc/PID/cgroup, the path the container runtime gave the process's cgroup.
//!
//! What can be told, and what cannot (docs/fleet.md, "Containers and pods"):
//! - Docker, containerd, CRI-O and Podman name a container's cgroup after its 64-hex id, under
//!   cgroup v1 and v2, with the systemd or the cgroupfs driver; Kubernetes adds the pod's UID
//!   in a parent directory (`pod<uid>`, or `kubepods-…-pod<uid_with_underscores>.slice`).
//! - Inside a container with its own cgroup namespace (the default under cgroup v2) every
//!   process reads `0::/`: nothing to tell, so nothing is claimed. gpuwatch then needs the
//!   host's view (`--pid=host` with the host's /proc, or a `DaemonSet` with `hostPID: true`).

pub use crate::model::container::Container;

/// The container named by the cgroup paths in `text` (the contents of /proc/PID/cgroup),
/// or `None` when no path names one.
#[must_use]
pub fn parse_cgroup(text: &str) -> Option<Container> {
    // v2 has one line ("0::/path"); v1 one per hierarchy, which name the same container.
    text.lines()
        .filter_map(|line| line.splitn(3, ':').nth(2))
        .find_map(parse_path)
}

fn parse_path(path: &str) -> Option<Container> {
    let mut found: Option<(String, String)> = None;
    let mut pod_uid = None;
    let mut kube = false;
    for part in path.split('/') {
        kube |= part.starts_with("kubepods");
        if let Some(uid) = pod_segment(part) {
            pod_uid = Some(uid);
        }
        if let Some(c) = container_segment(part) {
            found = Some(c);
        }
    }
    let (runtime, id) = found?;
    let runtime = match (runtime.as_str(), kube) {
        ("", true) => "kubernetes".to_string(),
        ("", false) if path.contains("/docker/") => "docker".to_string(),
        ("", false) => return None, // 64 hex digits under no known layout: claim nothing
        _ => runtime,
    };
    Some(Container {
        runtime,
        id,
        pod_uid,
    })
}

/// A container's own directory: `<64 hex>` (cgroupfs) or `<runtime>-<64 hex>.scope` (systemd).
fn container_segment(part: &str) -> Option<(String, String)> {
    let part = part.strip_suffix(".scope").unwrap_or(part);
    let (runtime, id) = match part.rsplit_once('-') {
        Some((prefix, id)) => {
            let runtime = match prefix {
                "docker" => "docker",
                "cri-containerd" | "containerd" => "containerd",
                "crio" => "cri-o",
                "libpod" => "podman",
                _ => return None,
            };
            (runtime, id)
        }
        None => ("", part),
    };
    is_hex_id(id).then(|| (runtime.to_string(), id.to_string()))
}

/// A pod's directory: `pod<uid>` (cgroupfs) or `kubepods-<qos>-pod<uid_with_underscores>.slice`.
fn pod_segment(part: &str) -> Option<String> {
    let uid = if let Some(rest) = part.strip_prefix("pod") {
        rest
    } else {
        let slice = part.strip_suffix(".slice")?;
        slice.rsplit_once("-pod")?.1
    };
    let uid = uid.replace('_', "-");
    is_uuid(&uid).then_some(uid)
}

fn is_hex_id(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "3f2a9c1b7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a";
    const UID: &str = "8c2e4a5d-1b3f-4e6a-9c7d-0e1f2a3b4c5d";

    /// The cgroup paths the runtimes write, as their documentation and source give them.
    #[test]
    fn every_runtime_layout_names_its_container_and_pod() {
        let uid_ = UID.replace('-', "_");
        let cases = [
            (format!("0::/system.slice/docker-{ID}.scope"), "docker", None),
            (format!("12:memory:/docker/{ID}\n11:cpu,cpuacct:/docker/{ID}"), "docker", None),
            (format!("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid_}.slice/cri-containerd-{ID}.scope"), "containerd", Some(UID)),
            (format!("0::/kubepods.slice/kubepods-pod{uid_}.slice/crio-{ID}.scope"), "cri-o", Some(UID)),
            (format!("0::/kubepods/besteffort/pod{UID}/{ID}"), "kubernetes", Some(UID)),
            (format!("4:devices:/kubepods/pod{UID}/{ID}"), "kubernetes", Some(UID)),
            (format!("0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-{ID}.scope/container"), "podman", None),
            (format!("0::/machine.slice/libpod-{ID}.scope"), "podman", None),
        ];
        for (text, runtime, pod) in cases {
            let c = parse_cgroup(&text).unwrap_or_else(|| panic!("nothing found in {text}"));
            assert_eq!(c.runtime, runtime, "{text}");
            assert_eq!(c.id, ID, "{text}");
            assert_eq!(c.pod_uid.as_deref(), pod, "{text}");
            assert_eq!(c.short_id(), &ID[..12]);
            let said = match pod {
                Some(uid) => format!("{runtime} {}, pod {uid}", &ID[..12]),
                None => format!("{runtime} {}", &ID[..12]),
            };
            assert_eq!(c.describe(), said, "{text}");
        }
    }

    #[test]
    fn a_host_process_or_a_namespaced_view_claims_no_container() {
        for text in [
            "0::/",
            "0::/user.slice/user-1000.slice/session-4.scope",
            "0::/system.slice/sshd.service",
            // The lent H200's own cgroup (captured by docs/workloads/run11.sh): 32 hex digits
            // under a layout no runtime here uses.
            "0::/process_api/120f944bb27da0d56951a831a4237fa6",
            &format!("0::/somewhere/{ID}"),
            "",
            "garbage without colons",
            &format!("0::/system.slice/docker-{}.scope", &ID[..63]),
            &format!("0::/kubepods/podnot-a-uid/{}", "g".repeat(64)),
        ] {
            assert_eq!(parse_cgroup(text), None, "{text:?}");
        }
    }
}
