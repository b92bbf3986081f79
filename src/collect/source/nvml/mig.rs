//! MIG instances: each one a device of its own, its facts and where its GPU is.

use nvml_wrapper::{Device, Nvml};

use crate::model::DeviceInfo;

/// For each device, the position of the GPU a MIG instance is part of, when it is watched.
pub(super) fn parent_positions(infos: &[DeviceInfo]) -> Vec<Option<usize>> {
    infos
        .iter()
        .map(|i| {
            let parent = i.mig.as_ref()?.parent;
            infos
                .iter()
                .position(|p| p.mig.is_none() && p.index == parent)
        })
        .collect()
}

/// Every GPU followed by its MIG instances (the devices NVML hands out for a GPU in MIG mode,
/// one per compute instance), each instance a device of its own for the rest of gpuwatch.
pub(super) fn with_mig_instances(
    nvml: &'static Nvml,
    gpus: Vec<Device<'static>>,
    infos: Vec<DeviceInfo>,
) -> (Vec<Device<'static>>, Vec<DeviceInfo>) {
    let mut devices = Vec::with_capacity(gpus.len());
    let mut out = Vec::with_capacity(infos.len());
    for (d, info) in gpus.into_iter().zip(infos) {
        let mut instances = Vec::new();
        if info.mig_mode == Some(true) {
            // Empty slots answer NotFound: only the instances created are listed.
            for slot in 0..d.mig_device_count().unwrap_or(0) {
                if let Ok(m) = d.mig_device_by_index(slot) {
                    instances.push((mig_device_info(nvml, &info, &m, slot), m));
                }
            }
        }
        devices.push(d);
        out.push(info);
        for (info, m) in instances {
            out.push(info);
            devices.push(m);
        }
    }
    (devices, out)
}

/// What a MIG device is: its GPU and compute instance, profile, memory and SMs. Power, clocks,
/// links and limits are its parent's, and stay gaps here.
pub(super) fn mig_device_info(
    nvml: &Nvml,
    parent: &DeviceInfo,
    m: &Device,
    slot: u32,
) -> DeviceInfo {
    // Without the ids (an old driver), the slot keeps instances apart, if not named as
    // nvidia-smi names them.
    let gi = instance_id(nvml, m, InstanceKind::Gpu).unwrap_or(slot);
    let ci = instance_id(nvml, m, InstanceKind::Compute).unwrap_or(0);
    let name = m.name().unwrap_or_else(|_| format!("{} MIG", parent.name));
    // "NVIDIA H200 MIG 1g.18gb": the profile is the word after "MIG".
    let profile = name
        .split_once(" MIG ")
        .map_or_else(|| name.clone(), |(_, p)| p.trim().to_string());
    DeviceInfo {
        index: crate::model::mig_index(parent.index, gi, ci),
        uuid: m.uuid().unwrap_or_default(),
        name,
        pci_bus_id: parent.pci_bus_id.clone(),
        memory_total_bytes: m.memory_info().ok().map(|i| i.total),
        mig_mode: None,
        gpm_supported: parent.gpm_supported,
        mig: Some(crate::model::MigInfo {
            parent: parent.index,
            parent_uuid: parent.uuid.clone(),
            gpu_instance: gi,
            compute_instance: ci,
            profile,
            sm_count: m.attributes().ok().map(|a| a.multiprocessor_count),
        }),
        ..DeviceInfo::default()
    }
}

#[derive(Clone, Copy)]
pub(super) enum InstanceKind {
    Gpu,
    Compute,
}

/// `nvmlDeviceGetGpuInstanceId` / `nvmlDeviceGetComputeInstanceId` of a MIG device, which
/// nvml-wrapper 0.13 does not wrap: called through the library it loaded.
#[allow(unsafe_code)]
pub(super) fn instance_id(nvml: &Nvml, m: &Device, kind: InstanceKind) -> Option<u32> {
    let lib = nvml.lib();
    let call = match kind {
        InstanceKind::Gpu => lib.nvmlDeviceGetGpuInstanceId.as_ref().ok()?,
        InstanceKind::Compute => lib.nvmlDeviceGetComputeInstanceId.as_ref().ok()?,
    };
    let mut id: std::os::raw::c_uint = 0;
    // SAFETY: `m` is a live handle of this library (borrowed from `nvml`), and the call only
    // writes one unsigned int into `id`, which outlives it.
    let rc = unsafe { call(m.handle(), &raw mut id) };
    (rc == 0).then_some(id)
}
