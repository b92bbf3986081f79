//! NVML's side of the event thread: the GPUs' Xid and ECC events, registered and waited for.

use std::sync::Arc;

use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::enums::event::XidError;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, Nvml};

use super::NvmlInitError;
use crate::model::DeviceInfo;

/// The event thread, listening to the GPUs' Xid and ECC events. Without the event API (a VM
/// that hides it, an old driver) health still comes from the counters; `devices` says which
/// GPUs send events.
pub(super) fn start_events(
    nvml: &'static Nvml,
    devices: &[Device<'static>],
    infos: &[DeviceInfo],
) -> Result<
    (
        crate::source::events::Inbox,
        Arc<std::sync::atomic::AtomicBool>,
    ),
    NvmlInitError,
> {
    let events = crate::source::events::Inbox::default();
    let events_stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // The GPUs' events only: a MIG device's come with its GPU's.
    let gpus: Vec<&Device<'static>> = devices
        .iter()
        .zip(infos)
        .filter(|(_, i)| i.mig.is_none())
        .map(|(d, _)| d)
        .collect();
    if let Some(wait) = NvmlEvents::register(nvml, &gpus) {
        crate::source::events::spawn(Box::new(wait), events.clone(), events_stop.clone()).map_err(
            |e| NvmlInitError::Other(format!("could not start the NVML event thread: {e}")),
        )?;
    }
    Ok((events, events_stop))
}

/// NVML's event set over the GPUs watched, as `events::EventWait`.
pub(super) struct NvmlEvents {
    set: nvml_wrapper::EventSet<'static>,
}

impl NvmlEvents {
    /// Registers each GPU for Xid and ECC events; `None` when no GPU takes them.
    fn register(nvml: &'static Nvml, devices: &[&Device<'static>]) -> Option<Self> {
        let wanted = EventTypes::from_bits_truncate(crate::source::events::LISTENED);
        // Only the types each GPU supports (asking for one it lacks fails the call), tried on
        // a set of its own first: a refusal frees the set it was given, with every GPU in it.
        let takes: Vec<(&Device<'static>, EventTypes)> = devices
            .iter()
            .copied()
            .filter_map(|d| {
                let types = d.supported_event_types().ok()? & wanted;
                let trial = nvml.create_event_set().ok()?;
                (!types.is_empty() && d.register_events(types, trial).is_ok()).then_some((d, types))
            })
            .collect();
        let mut set = nvml.create_event_set().ok()?;
        for (d, types) in &takes {
            set = d.register_events(*types, set).ok()?;
        }
        (!takes.is_empty()).then_some(NvmlEvents { set })
    }
}

impl crate::source::events::EventWait for NvmlEvents {
    fn wait(&mut self, timeout_ms: u32) -> crate::source::events::Waited {
        use crate::source::events::Waited;
        match self.set.wait(timeout_ms) {
            Ok(e) => Waited::Event {
                device: e.device.index().ok(),
                bits: e.event_type.bits(),
                xid: match e.event_data {
                    Some(XidError::Value(v)) => Some(v),
                    _ => None,
                },
            },
            Err(NvmlError::Timeout) => Waited::Timeout,
            Err(e) => Waited::Failed(e.to_string()),
        }
    }
}
