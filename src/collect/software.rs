//! What a GPU process runs with, read once per process without touching it: the CUDA
//! libraries it mapped and their versions, the framework it imported (torch, TensorFlow, JAX),
//! and the few environment settings that make a GPU look busy while it waits. Nothing else of
//! the environment is read or kept (`SETTINGS`, `SETTING_PREFIXES`).
//!
//! Versions come from what the files say, never from a guess: a library file's full name
//! (`libcudnn.so.9.1.0`), else the pip wheel it came from (the `…dist-info` directory next to it),
//! else only its major version from the soname (`libcudart.so.13` → "13"), marked as such.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Environment variables read from a GPU process, and nothing else.
pub const SETTINGS: [&str; 23] = [
    "CUDA_LAUNCH_BLOCKING",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_MAX_CONNECTIONS",
    "CUDA_MODULE_LOADING",
    "NCCL_P2P_DISABLE",
    "NCCL_IB_DISABLE",
    "NCCL_SHM_DISABLE",
    "NCCL_NET",
    "NCCL_DEBUG",
    "NCCL_SOCKET_IFNAME",
    "NCCL_SOCKET_NTHREADS",
    "NCCL_NSOCKS_PERTHREAD",
    "NCCL_ALGO",
    "NCCL_PROTO",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_ALLOC_CONF",
    "TF_FORCE_GPU_ALLOW_GROWTH",
    "TF_GPU_ALLOCATOR",
    "XLA_PYTHON_CLIENT_PREALLOCATE",
    "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "OMP_NUM_THREADS",
    "TORCH_DISTRIBUTED_DEBUG",
    "NVIDIA_TF32_OVERRIDE",
];
/// Prefixes of variables read as well: `PyTorch`'s NCCL process-group settings.
pub const SETTING_PREFIXES: [&str; 1] = ["TORCH_NCCL_"];

/// A setting's value is clipped to this many characters (an allocator config is ~100).
const MAX_VALUE_CHARS: usize = 200;

pub use crate::model::software::{Framework, Library, Settings, Software, Summary};

/// Where /proc and the processes' files are: the machine's own (`live`), or a fixture tree.
#[derive(Debug, Clone)]
pub struct ProcRoot {
    root: PathBuf,
    /// Read a process's files through /proc/PID/root (its own mount namespace: a container's
    /// libraries are not at the same path on the host).
    through_process_root: bool,
}

impl ProcRoot {
    #[must_use]
    pub fn live() -> Self {
        ProcRoot {
            root: PathBuf::from("/"),
            through_process_root: true,
        }
    }
    /// A captured tree: `root/proc/PID/{maps,environ}` and the files under `root/…`.
    #[must_use]
    pub fn fixture(root: &Path) -> Self {
        ProcRoot {
            root: root.to_path_buf(),
            through_process_root: false,
        }
    }
    pub(crate) fn proc_file(&self, pid: u32, name: &str) -> PathBuf {
        self.root.join(format!("proc/{pid}/{name}"))
    }
    /// A file of /proc itself (`stat`, `sys/kernel/hostname`).
    pub(crate) fn proc_root_file(&self, name: &str) -> PathBuf {
        self.root.join("proc").join(name)
    }
    /// `path` (absolute, as the process sees it) on this machine.
    fn file(&self, pid: u32, path: &str) -> PathBuf {
        let rel = path.trim_start_matches('/');
        if self.through_process_root {
            self.root.join(format!("proc/{pid}/root")).join(rel)
        } else {
            self.root.join(rel)
        }
    }
}

/// Reads what `pid` runs with. Read once per process: the maps of a torch process are ~100 KB.
#[must_use]
pub fn read(at: &ProcRoot, pid: u32) -> Software {
    read_with(at, pid, std::fs::read(at.proc_file(pid, "environ")))
}

/// `read`, with the environment already read (the host reader reads it once for the job too).
#[must_use]
pub fn read_with(at: &ProcRoot, pid: u32, environ: std::io::Result<Vec<u8>>) -> Software {
    let mut out = Software::default();
    match environ {
        Ok(env) => out.settings = settings(&env),
        Err(e) => out.unreadable = Some(why(&e, "its environment")),
    }
    match std::fs::read_to_string(at.proc_file(pid, "maps")) {
        Ok(maps) => {
            let paths = mapped_paths(&maps);
            out.libraries = libraries(at, pid, &paths);
            out.frameworks = frameworks(at, pid, &paths);
        }
        Err(e) if out.unreadable.is_none() => out.unreadable = Some(why(&e, "its mapped files")),
        Err(_) => {}
    }
    out
}

fn why(e: &std::io::Error, what: &str) -> String {
    match e.kind() {
        std::io::ErrorKind::PermissionDenied => {
            format!("{what}: permission denied (another user's process; root sees it)")
        }
        _ => format!("{what}: {e}"),
    }
}

/// The allow-listed settings of an environment block (`KEY=value\0…`).
#[must_use]
pub fn settings(environ: &[u8]) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = environ
        .split(|b| *b == 0)
        .filter_map(|kv| {
            let kv = std::str::from_utf8(kv).ok()?;
            let (k, v) = kv.split_once('=')?;
            let allowed =
                SETTINGS.contains(&k) || SETTING_PREFIXES.iter().any(|p| k.starts_with(p));
            allowed.then(|| {
                let v = crate::text::printable(v);
                (k.to_string(), crate::text::clip(&v, MAX_VALUE_CHARS))
            })
        })
        .collect();
    let rank = |k: &str| {
        SETTINGS
            .iter()
            .position(|s| *s == k)
            .unwrap_or(SETTINGS.len())
    };
    found.sort_by(|a, b| rank(&a.0).cmp(&rank(&b.0)).then(a.0.cmp(&b.0)));
    found.dedup_by(|a, b| a.0 == b.0);
    found
}

/// The distinct files mapped, in order of first appearance.
fn mapped_paths(maps: &str) -> Vec<&str> {
    let mut seen = std::collections::HashSet::new();
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|p| p.starts_with('/'))
        .filter(|p| seen.insert(*p))
        .collect()
}

/// The CUDA libraries gpuwatch names, by the start of their file name; with the pip wheel
/// that ships each (its name starts so).
const LIBRARIES: [(&str, &str, &str); 5] = [
    ("libcudart.so", "CUDA runtime", "nvidia_cuda_runtime"),
    ("libcudnn.so", "cuDNN", "nvidia_cudnn"),
    ("libnccl.so", "NCCL", "nvidia_nccl"),
    ("libcublas.so", "cuBLAS", "nvidia_cublas"),
    ("libcuda.so", "CUDA driver", ""),
];

fn libraries(at: &ProcRoot, pid: u32, paths: &[&str]) -> Vec<Library> {
    let mut out: Vec<Library> = Vec::new();
    for (prefix, name, wheel) in LIBRARIES {
        let Some(path) = paths.iter().find(|p| file_name(p).starts_with(prefix)) else {
            continue;
        };
        let suffix = &file_name(path)[prefix.len()..];
        let numbers = suffix.trim_start_matches('.');
        let (version, from) = if numbers.matches('.').count() >= 1 && is_version(numbers) {
            (Some(numbers.to_string()), "file name".to_string())
        } else if let Some((dist, v)) = wheel_version(at, pid, path, wheel) {
            (Some(v), format!("wheel {dist}"))
        } else if is_version(numbers) {
            (Some(numbers.to_string()), "soname (major only)".to_string())
        } else {
            (None, "unknown".to_string())
        };
        out.push(Library {
            name: name.to_string(),
            version,
            from,
            path: (*path).to_string(),
        });
    }
    out
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn is_version(s: &str) -> bool {
    !s.is_empty()
        && s.split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// The site-packages directory a mapped file lives under, if it does.
fn site_packages(path: &str) -> Option<&str> {
    ["/site-packages/", "/dist-packages/"]
        .iter()
        .find_map(|m| path.find(m).map(|i| &path[..i + m.len()]))
}

/// The `<name>-<version>.dist-info` directories of a site-packages directory.
fn dist_infos(at: &ProcRoot, pid: u32, sp: &str) -> BTreeMap<String, String> {
    let Ok(dir) = std::fs::read_dir(at.file(pid, sp)) else {
        return BTreeMap::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let stem = name.strip_suffix(".dist-info")?;
            let (dist, version) = stem.rsplit_once('-')?;
            Some((dist.to_string(), version.to_string()))
        })
        .collect()
}

/// The version of the pip wheel (`nvidia_nccl_cu13-2.28.9.dist-info`) a library came from.
fn wheel_version(at: &ProcRoot, pid: u32, path: &str, wheel: &str) -> Option<(String, String)> {
    if wheel.is_empty() {
        return None;
    }
    let sp = site_packages(path)?;
    dist_infos(at, pid, sp).into_iter().find(|(dist, _)| {
        dist == wheel
            || dist
                .strip_prefix(wheel)
                .is_some_and(|rest| rest.starts_with("_cu"))
    })
}

fn frameworks(at: &ProcRoot, pid: u32, paths: &[&str]) -> Vec<Framework> {
    let mut out = Vec::new();
    let under = |pkg: &str| {
        paths.iter().find_map(|p| {
            let sp = site_packages(p)?;
            p[sp.len()..].starts_with(pkg).then_some(sp)
        })
    };
    if let Some(sp) = under("torch/") {
        let text = std::fs::read_to_string(at.file(pid, &format!("{sp}torch/version.py")));
        let text = text.unwrap_or_default();
        let version = py_string(&text, "__version__")
            .or_else(|| dist_infos(at, pid, sp).remove("torch"))
            .unwrap_or_else(|| "?".into());
        out.push(Framework {
            name: "torch".into(),
            version,
            cuda: py_string(&text, "cuda"),
        });
    }
    for (pkg, dist) in [("tensorflow/", "tensorflow"), ("jaxlib/", "jax")] {
        if let Some(sp) = under(pkg) {
            let infos = dist_infos(at, pid, sp);
            let version = infos
                .get(dist)
                .or_else(|| {
                    infos
                        .iter()
                        .find(|(d, _)| d.starts_with(dist))
                        .map(|(_, v)| v)
                })
                .cloned()
                .unwrap_or_else(|| "?".into());
            out.push(Framework {
                name: dist.into(),
                version,
                cuda: None,
            });
        }
    }
    out
}

/// `name = 'value'` (or with double quotes) from a Python file.
fn py_string(text: &str, name: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(name)?.trim_start();
        let rest = rest.strip_prefix(':').map_or(rest, |r| {
            r.split_once('=').map_or("", |(_, v)| v) // `cuda: Optional[str] = '13.0'`
        });
        let rest = rest.trim_start().strip_prefix('=').unwrap_or(rest).trim();
        let q = rest.chars().next().filter(|c| *c == '\'' || *c == '"')?;
        let inner = &rest[1..];
        Some(inner[..inner.find(q)?].to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_allow_listed_settings_are_kept_in_a_stable_order() {
        let env = b"HOME=/root\0SECRET_TOKEN=abc\0NCCL_DEBUG=INFO\0CUDA_LAUNCH_BLOCKING=1\0TORCH_NCCL_BLOCKING_WAIT=1\0NCCL_DEBUG=WARN\0OMP_NUM_THREADS=\x1b[31m4\0";
        let s = settings(env);
        let keys: Vec<&str> = s.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "CUDA_LAUNCH_BLOCKING",
                "NCCL_DEBUG",
                "OMP_NUM_THREADS",
                "TORCH_NCCL_BLOCKING_WAIT"
            ]
        );
        assert_eq!(
            s[1].1, "INFO",
            "the first of a repeated key, as getenv reads it"
        );
        assert!(
            !s[2].1.contains('\x1b'),
            "no escape reaches a terminal: {:?}",
            s[2].1
        );
    }

    #[test]
    fn python_assignments_are_read_in_the_shapes_version_files_use() {
        let text = "__version__ = '2.11.0+cu130'\ndebug = False\ncuda: Optional[str] = '13.0'\ngit_version = \"abc\"\n";
        assert_eq!(
            py_string(text, "__version__").as_deref(),
            Some("2.11.0+cu130")
        );
        assert_eq!(py_string(text, "cuda").as_deref(), Some("13.0"));
        assert_eq!(py_string(text, "git_version").as_deref(), Some("abc"));
        assert_eq!(py_string(text, "hip"), None);
    }
}
