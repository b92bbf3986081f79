//! The layout src/build.rs asks lld for is the binary's (#28): the functions of
//! src/link-order.txt side by side in its order, and the relative relocations packed. Either
//! one lost (a linker that ignores the option, an argument that no longer reaches it) costs
//! resident memory and nothing else, so only a test sees it. `LINK_LAYOUT` is what the build
//! script asked ("ordered", "relr", or nothing where the linker is not lld); each test checks
//! the binary against it, either way.

use goblin::elf::Elf;

const ASKED: &str = env!("LINK_LAYOUT");

fn binary() -> Vec<u8> {
    std::fs::read(env!("CARGO_BIN_EXE_gpuwatch")).expect("the binary cargo built for the tests")
}

fn section_size(elf: &Elf, name: &str) -> Option<u64> {
    elf.section_headers
        .iter()
        .find(|h| elf.shdr_strtab.get_at(h.sh_name) == Some(name))
        .map(|h| h.sh_size)
}

#[test]
fn relative_relocations_are_packed_where_the_build_asked() {
    let bytes = binary();
    let elf = Elf::parse(&bytes).expect("an ELF binary");
    let relr = section_size(&elf, ".relr.dyn");
    let rela = section_size(&elf, ".rela.dyn").unwrap_or(0);
    if ASKED.contains("relr") {
        assert!(
            relr.is_some(),
            "asked for DT_RELR, the binary has no .relr.dyn"
        );
        // Unpacked, the relative relocations alone are hundreds of KiB (430 in the release
        // build); what stays in .rela.dyn is the few that need a symbol.
        assert!(
            rela < 64 * 1024,
            ".rela.dyn is still {rela} bytes: relocations were not packed"
        );
    } else {
        assert_eq!(
            relr, None,
            "DT_RELR was not asked for (LINK_LAYOUT={ASKED:?})"
        );
    }
}

#[test]
fn the_ordered_functions_lie_in_the_order_given() {
    let bytes = binary();
    let elf = Elf::parse(&bytes).expect("an ELF binary");
    let address: std::collections::HashMap<&str, u64> = elf
        .syms
        .iter()
        .filter(|s| s.is_function() && s.st_value != 0)
        .filter_map(|s| Some((elf.strtab.get_at(s.st_name)?, s.st_value)))
        .collect();
    let order = include_str!("../src/link-order.txt");
    let laid: Vec<u64> = order
        .lines()
        .filter_map(|name| address.get(name).copied())
        .collect();
    // The test binary is built unoptimised, where most names differ from the release build's;
    // the functions of std and the dependencies that both share are enough to tell.
    assert!(
        laid.len() >= 50,
        "only {} of src/link-order.txt's names are in the binary: no layout can be told",
        laid.len()
    );
    let rising = laid.windows(2).filter(|w| w[1] > w[0]).count();
    let share = rising as f64 / (laid.len() - 1) as f64;
    if ASKED.contains("ordered") {
        assert!(
            share > 0.99,
            "asked for the order of src/link-order.txt, but only {:.0} % of its functions follow \
             the one before",
            share * 100.0
        );
    } else {
        assert!(
            share < 0.9,
            "no order was asked (LINK_LAYOUT={ASKED:?}) yet {:.0} % follow the one before",
            share * 100.0
        );
    }
}

/// The names in src/link-order.txt are the release binary's: a new dependency, or a change
/// of compiler, changes every gpuwatch symbol's hash, lld passes the stale names over in
/// silence, and the monitor's code lies scattered again (run 84: `serde_path_to_error` left
/// 901 of 1752 names, +1 MiB resident on the GPU). Make the file again with
/// `docs/workloads/link_order.sh` when this fails.
#[test]
#[ignore = "reads `cargo build --release`'s binary (the tests' own is built otherwise, under other \
            names): .ci/run runs it after that build"]
fn most_of_the_link_order_names_the_release_binary() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/gpuwatch");
    let bytes = std::fs::read(&path).expect("cargo build --release first");
    let elf = Elf::parse(&bytes).expect("an ELF binary");
    let names: std::collections::HashSet<&str> = elf
        .syms
        .iter()
        .filter_map(|s| elf.strtab.get_at(s.st_name))
        .collect();
    let order = include_str!("../src/link-order.txt");
    let listed = order.lines().filter(|l| !l.is_empty()).count();
    let found = order.lines().filter(|n| names.contains(n)).count();
    assert!(
        // A fresh clone built with an empty cargo cache names 92 % of them (CI, 2026-12-06:
        // some dependencies' instances hash otherwise there), this checkout 96 %; a renaming
        // dependency left 51 %.
        found * 5 >= listed * 4,
        "only {found} of src/link-order.txt's {listed} names are in the release binary: make \
         it again (docs/workloads/link_order.sh)"
    );
}
