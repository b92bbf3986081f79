//! Any text as a snapshot: parsed, turned into ticks and written out as Markdown, as
//! `gpuwatch replay SNAPSHOT.json` and a bug report's reader would.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(snap) = gpuwatch::snapshot::parse(text) else {
        return;
    };
    let mut replay = gpuwatch::source::replay::ReplaySource::from_snapshot(
        &snap,
        std::path::Path::new("fuzz-snapshot.json"),
    );
    let _ = replay.read_all();
    let _ = gpuwatch::snapshot::to_markdown(&snap);
});
