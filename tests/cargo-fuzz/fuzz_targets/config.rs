//! Any text as a config file: parsed and validated, never a panic.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = gpuwatch::config::Config::parse(text, Path::new("fuzz-config.toml"));
    }
});
