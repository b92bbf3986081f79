//! Which GPUs to watch: `-i/--id 0,2` as `nvidia-smi -i` takes it (indices, UUIDs or PCI bus
//! ids), or the GPUs `CUDA_VISIBLE_DEVICES` names (`--cuda-visible`). A MIG instance is named
//! by its `MIG-…` UUID, CUDA's older `MIG-GPU-…/GI/CI`, or `GPU:GI` (`GPU:GI:CI`); it is
//! watched with its GPU, which has its power and temperature. A GPU is watched with its
//! instances.

use crate::model::DeviceInfo;

/// A choice of GPUs; empty means all of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    items: Vec<String>,
    /// Where the list came from, for messages (`-i`, `CUDA_VISIBLE_DEVICES`).
    from: &'static str,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SelectError {
    #[error("{from} names {item}, which is more than one GPU here ({count}): give more of it")]
    Ambiguous {
        from: &'static str,
        item: String,
        count: usize,
    },
    /// One GPU a line: a UUID and a bus id each, eight of them, do not fit one.
    #[error("{from} names {item}, which is no GPU here. The GPUs here:\n  {here}")]
    NoMatch {
        from: &'static str,
        item: String,
        here: String,
    },
    #[error("{from} is set but names no GPU (\"{value}\"): a job started here would see none")]
    Empty { from: &'static str, value: String },
    #[error("-i is given but names no GPU (\"{0}\"): give indices, UUIDs or bus ids, or leave it out for all")]
    EmptyIds(String),
}

impl Selection {
    /// All GPUs.
    #[must_use]
    pub fn all() -> Self {
        Selection::default()
    }

    /// `-i/--id`: indices, UUIDs (`GPU-…`, a unique prefix is enough) or PCI bus ids. Given,
    /// but naming nothing (`-i ''`, `-i ,`), is an error, not "all of them".
    pub fn ids(items: &[String]) -> Result<Self, SelectError> {
        let from = "-i";
        let kept: Vec<String> = items
            .iter()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        if kept.is_empty() && !items.is_empty() {
            return Err(SelectError::EmptyIds(items.join(",")));
        }
        if kept.is_empty() {
            return Ok(Selection::all());
        }
        Ok(Selection { items: kept, from })
    }

    /// The GPUs `CUDA_VISIBLE_DEVICES` names, as CUDA reads it: entries up to the first that is
    /// not a GPU (CUDA ignores the rest). Unset means all.
    pub fn cuda_visible(value: Option<&str>) -> Result<Self, SelectError> {
        let from = "CUDA_VISIBLE_DEVICES";
        let Some(value) = value else {
            return Ok(Selection::all());
        };
        let mut items = Vec::new();
        for item in value.split(',').map(str::trim) {
            if item.is_empty() || (item.starts_with('-') && item.parse::<i64>().is_ok()) {
                break; // "-1", or an empty entry: CUDA stops here
            }
            items.push(item.to_string());
        }
        if items.is_empty() {
            return Err(SelectError::Empty {
                from,
                value: value.to_string(),
            });
        }
        Ok(Selection { items, from })
    }

    #[must_use]
    pub fn is_all(&self) -> bool {
        self.items.is_empty()
    }

    /// The positions in `devices` of the chosen GPUs, in `devices` order; an entry that names
    /// no GPU is an error that lists the GPUs there are.
    pub fn pick(&self, devices: &[DeviceInfo]) -> Result<Vec<usize>, SelectError> {
        if self.is_all() {
            return Ok((0..devices.len()).collect());
        }
        let mut keep = vec![false; devices.len()];
        for item in &self.items {
            let hits: Vec<usize> = devices
                .iter()
                .enumerate()
                .filter(|(_, d)| names(item, d, self.from == "-i"))
                .map(|(i, _)| i)
                .collect();
            if hits.len() > 1 {
                return Err(SelectError::Ambiguous {
                    from: self.from,
                    item: crate::text::word_shown(item),
                    count: hits.len(),
                });
            }
            if hits.is_empty() {
                let mut here: Vec<String> = devices
                    .iter()
                    .take(8)
                    .map(|d| match &d.mig {
                        Some(m) => format!("{} {} ({})", d.label(), d.uuid, m.profile),
                        None => format!("{} {} {}", d.index, d.uuid, d.pci_bus_id),
                    })
                    .collect();
                if devices.len() > 8 {
                    here.push(format!(
                        "… {} more (gpuwatch devices lists them)",
                        devices.len() - 8
                    ));
                }
                return Err(SelectError::NoMatch {
                    from: self.from,
                    item: crate::text::word_shown(item),
                    here: here.join("\n  "),
                });
            }
            keep_with_kin(devices, hits[0], &mut keep);
        }
        Ok((0..devices.len()).filter(|i| keep[*i]).collect())
    }
}

/// Keeps device `at`, a GPU's MIG instances with it, and an instance's GPU with it.
fn keep_with_kin(devices: &[DeviceInfo], at: usize, keep: &mut [bool]) {
    keep[at] = true;
    let d = &devices[at];
    for (k, other) in devices.iter().enumerate() {
        let kin = match (&d.mig, &other.mig) {
            (None, Some(m)) => m.parent == d.index,
            (Some(m), None) => other.index == m.parent,
            _ => false,
        };
        keep[k] |= kin;
    }
}

/// Whether `item` names MIG instance `d` (`MIG-…` UUID or a prefix of it, `MIG-GPU-…/GI/CI`,
/// `GPU:GI`, `GPU:GI:CI`); `None` when `item` is no MIG name at all.
fn names_instance(item: &str, d: &DeviceInfo, gpu_gi_form: bool) -> Option<bool> {
    let m = d.mig.as_ref();
    let lower = item.to_ascii_lowercase();
    if let Some(rest) = lower.strip_prefix("mig-") {
        // CUDA's form before R470: the GPU's UUID, then the instance ids.
        if rest.starts_with("gpu-") {
            let mut parts = rest.split('/');
            let gpu = parts.next().unwrap_or_default();
            let ids: Vec<Option<u32>> = parts.map(|p| p.parse().ok()).collect();
            return Some(m.is_some_and(|m| {
                m.parent_uuid.to_ascii_lowercase() == gpu
                    && ids.first() == Some(&Some(m.gpu_instance))
                    && ids.get(1).is_none_or(|c| *c == Some(m.compute_instance))
            }));
        }
        return Some(
            m.is_some() && lower.len() >= 8 && d.uuid.to_ascii_lowercase().starts_with(&lower),
        );
    }
    // Digits only ("0:+9" is no name), and only where `nvidia-smi -i` takes it: CUDA does not
    // read GPU:GI in CUDA_VISIBLE_DEVICES.
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    let ids: Vec<Option<u32>> = item
        .split(':')
        .map(|p| p.parse().ok().filter(|_| digits(p)))
        .collect();
    if !gpu_gi_form || !(2..=3).contains(&ids.len()) || ids.iter().any(Option::is_none) {
        return None;
    }
    let ids: Vec<u32> = ids.into_iter().flatten().collect();
    Some(m.is_some_and(|m| {
        m.parent == ids[0]
            && m.gpu_instance == ids[1]
            && ids.get(2).is_none_or(|c| *c == m.compute_instance)
    }))
}

/// Whether `item` names `d`: its index, its UUID (or a prefix of it of at least 8 characters
/// after `GPU-`), or its PCI bus id with or without the domain, in any case.
fn names(item: &str, d: &DeviceInfo, gpu_gi_form: bool) -> bool {
    if let Some(hit) = names_instance(item, d, gpu_gi_form) {
        return hit;
    }
    // An instance shares its GPU's bus id, and its number is gpuwatch's own.
    if d.mig.is_some() {
        return false;
    }
    if let Ok(i) = item.parse::<u32>() {
        return i == d.index;
    }
    let item = item.to_ascii_lowercase();
    let uuid = d.uuid.to_ascii_lowercase();
    if item.starts_with("gpu-") {
        return item.len() >= 8 && uuid.starts_with(&item);
    }
    let bus = d.pci_bus_id.to_ascii_lowercase();
    let short = |b: &str| -> String {
        // "00000000:18:00.0", "0000:18:00.0" and "18:00.0" are one bus id.
        let parts: Vec<&str> = b.split(':').collect();
        parts[parts.len().saturating_sub(2)..].join(":")
    };
    item.contains(':') && short(&item) == short(&bus)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpus() -> Vec<DeviceInfo> {
        (0..4)
            .map(|i| DeviceInfo {
                index: i,
                uuid: format!("GPU-{i}a1b2c3d-0000-1111-2222-33334444555{i}"),
                pci_bus_id: format!("00000000:{:02X}:00.0", 0x18 + i * 0x10),
                ..DeviceInfo::default()
            })
            .collect()
    }

    /// GPU 0 whole, GPU 1 in MIG mode with GPU instances 2 and 9 (compute instance 0).
    fn with_mig() -> Vec<DeviceInfo> {
        let mut d = gpus()[..2].to_vec();
        d[1].mig_mode = Some(true);
        for gi in [2, 9] {
            d.push(DeviceInfo {
                index: crate::model::mig_index(1, gi, 0),
                uuid: format!("MIG-77aa00{gi:02}-0000-1111-2222-333344445555"),
                pci_bus_id: d[1].pci_bus_id.clone(),
                mig: Some(crate::model::MigInfo {
                    parent: 1,
                    parent_uuid: d[1].uuid.clone(),
                    gpu_instance: gi,
                    compute_instance: 0,
                    profile: "1g.18gb".into(),
                    sm_count: Some(16),
                }),
                ..DeviceInfo::default()
            });
        }
        d
    }

    #[test]
    fn mig_instances_are_named_as_nvidia_smi_and_cuda_name_them_and_come_with_their_gpu() {
        let g = with_mig();
        let pick = |items: &[&str]| {
            let items: Vec<String> = items.iter().map(|s| (*s).to_string()).collect();
            Selection::ids(&items).and_then(|s| s.pick(&g))
        };
        assert_eq!(pick(&["1:9"]), Ok(vec![1, 3]), "GPU:GI, with its GPU");
        assert_eq!(pick(&["1:2:0"]), Ok(vec![1, 2]), "GPU:GI:CI");
        assert_eq!(
            pick(&["MIG-77aa0009-0000-1111-2222-333344445555"]),
            Ok(vec![1, 3])
        );
        assert_eq!(
            pick(&["mig-77aa0002"]),
            Ok(vec![1, 2]),
            "a prefix, any case"
        );
        assert_eq!(
            pick(&["MIG-GPU-1a1b2c3d-0000-1111-2222-333344445551/9/0"]),
            Ok(vec![1, 3]),
            "CUDA's MIG-GPU-uuid/GI/CI"
        );
        assert_eq!(
            pick(&["1"]),
            Ok(vec![1, 2, 3]),
            "a GPU brings its instances"
        );
        assert_eq!(
            pick(&["00000000:28:00.0"]),
            Ok(vec![1, 2, 3]),
            "by bus id too"
        );
        assert_eq!(pick(&["0"]), Ok(vec![0]));
        let err = pick(&["1:5"]).unwrap_err().to_string();
        assert!(err.contains("1:9 MIG-77aa0009"), "{err}");
        assert!(err.contains("(1g.18gb)"), "{err}");
        assert!(matches!(
            pick(&["mig-77aa"]),
            Err(SelectError::Ambiguous { count: 2, .. })
        ));
        let cuda = Selection::cuda_visible(Some("MIG-77aa0009-0000-1111-2222-333344445555"))
            .and_then(|s| s.pick(&g));
        assert_eq!(cuda, Ok(vec![1, 3]));
        assert!(pick(&["1:+9"]).is_err(), "digits only");
        let cuda = Selection::cuda_visible(Some("1:9")).and_then(|s| s.pick(&g));
        assert!(cuda.is_err(), "CUDA does not read GPU:GI");
    }

    #[test]
    fn indices_uuids_and_bus_ids_pick_gpus_as_nvidia_smi_does() {
        let g = gpus();
        let pick = |items: &[&str]| {
            let items: Vec<String> = items.iter().map(|s| (*s).to_string()).collect();
            Selection::ids(&items).and_then(|s| s.pick(&g))
        };
        assert_eq!(pick(&["2", "0"]), Ok(vec![0, 2]));
        assert_eq!(
            pick(&["GPU-1a1b2c3d-0000-1111-2222-333344445551"]),
            Ok(vec![1])
        );
        assert_eq!(pick(&["gpu-3a1b2c3d"]), Ok(vec![3]), "a prefix, any case");
        assert_eq!(pick(&["00000000:28:00.0"]), Ok(vec![1]));
        assert_eq!(pick(&["0000:38:00.0", "48:00.0"]), Ok(vec![2, 3]));
        assert_eq!(Selection::all().pick(&g), Ok(vec![0, 1, 2, 3]));
        let err = pick(&["7"]).unwrap_err().to_string();
        assert!(
            err.starts_with("-i names 7, which is no GPU here. The GPUs here:\n  0 GPU-0a1b2c3d"),
            "{err}"
        );
        assert!(pick(&["GPU-"]).is_err(), "too short a prefix names nothing");
        assert_eq!(
            pick(&["GPU-2a1b"]),
            Ok(vec![2]),
            "four digits are enough when unique"
        );
        let many: Vec<DeviceInfo> = gpus()
            .into_iter()
            .map(|d| DeviceInfo {
                uuid: format!("GPU-5a1d0000-{}", d.index),
                ..d
            })
            .collect();
        let err = Selection::ids(&["GPU-5a1d0000".to_string()])
            .and_then(|s| s.pick(&many))
            .unwrap_err();
        assert!(
            matches!(err, SelectError::Ambiguous { count: 4, .. }),
            "{err}"
        );
        assert!(matches!(
            Selection::ids(&[String::new()]),
            Err(SelectError::EmptyIds(_))
        ));
        assert_eq!(Selection::ids(&[]), Ok(Selection::all()));
    }

    #[test]
    fn cuda_visible_devices_is_read_as_cuda_reads_it() {
        let g = gpus();
        let sel = |v| Selection::cuda_visible(v).and_then(|s| s.pick(&g));
        assert_eq!(sel(None), Ok(vec![0, 1, 2, 3]), "unset: every GPU");
        assert_eq!(sel(Some("1,3")), Ok(vec![1, 3]));
        assert_eq!(
            sel(Some("3,-1,0")),
            Ok(vec![3]),
            "CUDA stops at the first invalid entry"
        );
        assert_eq!(sel(Some(" 2 ")), Ok(vec![2]));
        assert!(matches!(sel(Some("")), Err(SelectError::Empty { .. })));
        assert!(matches!(sel(Some("-1")), Err(SelectError::Empty { .. })));
        assert_eq!(sel(Some("GPU-2a1b2c3d")), Ok(vec![2]));
    }
}
