//! Mutation fuzzing that stays in `cargo test`: seeded, a few thousand mutated recordings,
//! snapshots and config files, each read and (when it reads) run through the history and the
//! rules. No case may panic, and memory stays bounded. `GPUWATCH_FUZZ_CASES=N` runs N cases of
//! each kind (default 3000 recordings, 300 snapshots, 2000 configs); `GPUWATCH_FUZZ_SEED` picks
//! another seed. The figures go into docs/reliability.md.

use std::io::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use gpuwatch::config::{Config, Thresholds};
use gpuwatch::history::History;
use gpuwatch::rules::Engine;
use gpuwatch::source::replay::ReplaySource;
use gpuwatch::source::Source;

/// splitmix64: the same cases on every machine for a seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Tokens that break parsers in interesting ways.
const TOKENS: [&str; 16] = [
    "null",
    "-1",
    "1e39",
    "-1e39",
    "18446744073709551616",
    "4294967296",
    "NaN",
    "[]",
    "{}",
    "\"",
    "\\u0000",
    "\u{1b}]52;c;aGk=\u{7}",
    "\n",
    "0",
    "true",
    "\"gpuwatch-snapshot\"",
];

fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for _ in 0..=rng.below(4) {
        let at = rng.below(b.len() + 1);
        match rng.below(6) {
            0 if !b.is_empty() => {
                let i = at.min(b.len() - 1);
                b[i] ^= 1 << rng.below(8);
            }
            1 => {
                let end = (at + rng.below(64)).min(b.len());
                b.drain(at..end);
            }
            2 => {
                let end = (at + rng.below(256)).min(b.len());
                let chunk = b[at..end].to_vec();
                b.splice(at..at, chunk);
            }
            3 => {
                let t = TOKENS[rng.below(TOKENS.len())].as_bytes();
                b.splice(at..at, t.iter().copied());
            }
            4 => b.truncate(at),
            _ => {
                // Replace a number with a token: the fields' types and ranges are the target.
                if let Some(i) = b[at..].iter().position(u8::is_ascii_digit) {
                    let i = at + i;
                    let end = i + b[i..]
                        .iter()
                        .take_while(|c| c.is_ascii_digit() || **c == b'.')
                        .count();
                    let t = TOKENS[rng.below(TOKENS.len())].as_bytes();
                    b.splice(i..end, t.iter().copied());
                }
            }
        }
    }
    b
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// Reads `path` as a replay and, if it reads, runs its ticks through the history and rules.
fn replay_and_judge(path: &Path) -> bool {
    let Ok(mut src) = ReplaySource::open(path, f64::INFINITY) else {
        return false;
    };
    let infos = src.devices().to_vec();
    let Ok(ticks) = src.read_all() else {
        return false;
    };
    let mut history = History::new(&infos, 600);
    let mut engine = Engine::new(Thresholds::default());
    for t in ticks.iter().take(400) {
        history.push(t);
        engine.evaluate(&history);
    }
    let _ = gpuwatch::text::printable(&format!("{:?}", engine.conclusions().active()));
    true
}

fn cases(default: usize) -> usize {
    std::env::var("GPUWATCH_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn seed() -> u64 {
    std::env::var("GPUWATCH_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x6770_7577_6174_6368)
}

#[allow(unsafe_code)] // getrusage(2): the test's own peak memory
fn peak_rss_bytes() -> u64 {
    // SAFETY: getrusage writes into the struct we pass and has no other effect.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &raw mut ru) };
    ru.ru_maxrss as u64 * 1024
}

/// Runs `n` mutated cases of `seed_bytes`; returns (cases, read, panics).
fn run(
    n: usize,
    seed_bytes: &[u8],
    name: &str,
    rng: &mut Rng,
    dir: &Path,
) -> (usize, usize, Vec<String>) {
    let mut read = 0;
    let mut panics = Vec::new();
    for i in 0..n {
        let mut bytes = mutate(rng, seed_bytes);
        if rng.below(4) == 0 {
            bytes = gzip(&bytes);
        }
        let path = dir.join(format!("{name}-{i}"));
        std::fs::write(&path, &bytes).unwrap();
        match catch_unwind(AssertUnwindSafe(|| replay_and_judge(&path))) {
            Ok(true) => read += 1,
            Ok(false) => {}
            Err(_) => {
                let keep = dir.join(format!("PANIC-{name}-{i}"));
                let _ = std::fs::copy(&path, &keep);
                panics.push(format!("{name} case {i}"));
            }
        }
        let _ = std::fs::remove_file(&path);
    }
    (n, read, panics)
}

#[test]
fn mutated_recordings_and_snapshots_never_panic_and_stay_bounded() {
    std::panic::set_hook(Box::new(|_| {})); // panics are counted, not printed per case
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(seed());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut recording = Vec::new();
    flate2::read::GzDecoder::new(
        std::fs::File::open(root.join("tests/fixtures/h200x2/nccl_hang.jsonl.gz")).unwrap(),
    )
    .read_to_end_into(&mut recording);
    // A short head of the real two-GPU recording keeps each case fast.
    let head: Vec<u8> = recording
        .split_inclusive(|c| *c == b'\n')
        .take(60)
        .flatten()
        .copied()
        .collect();
    let snapshot = std::fs::read(root.join("docs/examples/h200-hang.json")).unwrap();
    let (n1, r1, p1) = run(cases(3000), &head, "recording", &mut rng, dir.path());
    let (n2, r2, p2) = run(
        cases(3000) / 10,
        &snapshot,
        "snapshot",
        &mut rng,
        dir.path(),
    );
    let _ = std::panic::take_hook();
    let rss = peak_rss_bytes();
    println!(
        "fuzz: {n1} recordings ({r1} still read), {n2} snapshots ({r2} still read), panics {}, peak RSS {:.0} MiB",
        p1.len() + p2.len(),
        rss as f64 / f64::from(1 << 20)
    );
    assert!(p1.is_empty() && p2.is_empty(), "panics: {p1:?} {p2:?}");
    if std::env::var_os("GPUWATCH_FUZZ_CASES").is_none()
        && std::env::var_os("GPUWATCH_FUZZ_SEED").is_none()
    {
        check_doc(
            "recordings",
            &format!("| mutated recordings (head of a real 2 × H200 recording; a quarter gzipped) | {n1} | {r1} | 0 | 0 | under 1 GiB (asserted) |"),
        );
        check_doc(
            "snapshots",
            &format!("| mutated snapshots (a real H200 hang snapshot) | {n2} | {r2} | 0 | 0 | under 1 GiB (asserted) |"),
        );
    }
    assert!(
        r1 > n1 / 20,
        "the mutations still leave readable cases ({r1} of {n1})"
    );
    assert!(rss < 1 << 30, "peak RSS {rss} bytes");
}

#[test]
fn mutated_config_files_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(seed() ^ 1);
    let seed_text = toml::to_string(&Config::default()).unwrap();
    let path = dir.path().join("config.toml");
    let mut accepted = 0;
    let n = cases(2000);
    for i in 0..n {
        std::fs::write(&path, mutate(&mut rng, seed_text.as_bytes())).unwrap();
        match catch_unwind(|| Config::load(Some(&path), true)) {
            Ok(Ok(_)) => accepted += 1,
            Ok(Err(e)) => assert!(e.to_string().contains("config.toml"), "case {i}: {e}"),
            Err(payload) => panic!(
                "config case {i} panicked ({:?}): {:?}",
                payload.downcast_ref::<String>(),
                std::fs::read(&path)
            ),
        }
    }
    println!("fuzz: {n} configs, {accepted} accepted");
    if std::env::var_os("GPUWATCH_FUZZ_CASES").is_none()
        && std::env::var_os("GPUWATCH_FUZZ_SEED").is_none()
    {
        check_doc(
            "configs",
            &format!(
                "| mutated config files (the defaults as TOML) | {n} | {accepted} | 0 | 0 | – |"
            ),
        );
    }
}

/// Keeps the row `<!-- fuzz:KEY -->` of docs/reliability.md equal to what this run counted
/// (`GPUWATCH_BLESS=1` rewrites it). The default seed makes the counts the same everywhere.
fn check_doc(key: &str, row: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/reliability.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let marker = format!(" <!-- fuzz:{key} -->");
    let line = doc
        .lines()
        .find(|l| l.ends_with(&marker))
        .unwrap_or_else(|| panic!("docs/reliability.md lacks the row marked{marker}"));
    let wanted = format!("{row}{marker}");
    if line == wanted {
        return;
    }
    if std::env::var_os("GPUWATCH_BLESS").is_some() {
        std::fs::write(&path, doc.replace(line, &wanted)).unwrap();
        return;
    }
    panic!("docs/reliability.md's {key} row is out of date: run `GPUWATCH_BLESS=1 cargo test --test fuzz`");
}

/// `Read::read_to_end` without the `Result`, for brevity above.
trait ReadAll {
    fn read_to_end_into(self, out: &mut Vec<u8>);
}

impl<R: std::io::Read> ReadAll for R {
    fn read_to_end_into(mut self, out: &mut Vec<u8>) {
        self.read_to_end(out).unwrap();
    }
}
