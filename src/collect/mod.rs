//! Where observations come from: the sources (NVML, simulated, replayed), the host side of a
//! GPU process from /proc (what it runs with, its container), its Python stacks, the sampler
//! that reads one tick and the pacer's loop that paces it. The two places with `unsafe` live
//! here: `sys` (the C library's calls) and `source/nvml/mig.rs` (NVML's MIG id call).

pub mod container;
pub mod host;
pub mod pacer;
pub mod sampler;
pub mod software;
pub mod source;
pub mod stack;
pub(crate) mod sys;
