//! The build script: has lld lay the functions that run while gpuwatch is used side by side
//! in the binary (`src/link-order.txt`, written by `docs/workloads/link_order.sh`). The
//! kernel maps a program's text 64 KiB around each page it runs; spread over the whole
//! binary, the ~1 MiB of code a monitor runs kept 4 MiB of it resident (docs/performance.md,
//! "The code that runs, side by side"). A symbol the file names and the binary lacks is
//! passed over: a stale file costs memory, never a build.
//!
//! Where the glibc that builds is 2.36 or newer, it also packs the relative relocations
//! (`-z pack-relative-relocs`, `DT_RELR`): the loader reads them all at start, and as 17,900
//! 24-byte entries they kept 430 KiB of the file resident, against 9 KiB packed (0.5 MiB less
//! RSS on the GPU machine, run 70). A binary packed so needs glibc 2.36 to start; one built on
//! a machine runs there, and a binary built on 2.36 needs 2.34 already (`__libc_start_main`).

use std::env;
use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=src/link-order.txt");
    let asked = layout();
    // What was asked of the linker, for tests/binary_layout.rs to check the binary against.
    println!("cargo:rustc-env=LINK_LAYOUT={}", asked.join(" "));
}

/// Asks lld for the layout, and says what it asked: "ordered", "relr".
fn layout() -> Vec<&'static str> {
    if !links_with_lld() {
        return Vec::new();
    }
    let dir = env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let order = Path::new(&dir).join("src").join("link-order.txt");
    println!(
        "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
        order.display()
    );
    println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    if glibc_minor().is_none_or(|minor| minor < 36) {
        return vec!["ordered"];
    }
    println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    vec!["ordered", "relr"]
}

/// The minor version of the glibc this machine builds against: 36 for "glibc 2.36" from
/// `getconf GNU_LIBC_VERSION`; `None` where that cannot be told (another libc, no getconf).
fn glibc_minor() -> Option<u32> {
    let out = Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let version = text.trim().strip_prefix("glibc 2.")?;
    version.split('.').next()?.parse().ok()
}

/// Whether rustc links with lld, which knows `--symbol-ordering-file`: its default on x86-64
/// Linux from 1.90. An older rustc, another target, or a linker chosen by hand may use the
/// system's `ld`, which does not know it, so nothing is asked of them.
fn links_with_lld() -> bool {
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    env::var("TARGET").as_deref() == Ok("x86_64-unknown-linux-gnu")
        && env::var_os("RUSTC_LINKER").is_none()
        && !flags.contains("link")
        && rustc_minor().is_some_and(|minor| minor >= 90)
}

/// The minor version of the rustc that builds: 95 for "rustc 1.95.0 (…)".
fn rustc_minor() -> Option<u32> {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc).arg("--version").output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let version = text.split_whitespace().nth(1)?;
    let mut parts = version.split('.');
    (parts.next()? == "1").then_some(())?;
    parts.next()?.parse().ok()
}
