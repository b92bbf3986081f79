//! Writing snapshots: never over an existing file, through a temporary one.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::{take, to_json, to_markdown, Options, SnapshotError};
use crate::store::Store;

/// Writes `text` to `path`, or to `path` with a `-1`, `-2`… suffix if it exists, through a
/// temporary file renamed into place. Returns where it went.
pub fn write_new(path: &Path, text: impl AsRef<[u8]>) -> Result<PathBuf, SnapshotError> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let err = |io| SnapshotError::Write {
        dir: dir.clone(),
        io,
    };
    let (tmp, mut f) = create_temp(&dir).map_err(err)?;
    let written = f.write_all(text.as_ref()).and_then(|()| f.sync_all());
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(err(e));
    }
    for n in 0..1000 {
        let target = if n == 0 {
            path.to_path_buf()
        } else {
            suffixed(path, n)
        };
        // A hard link fails if the target exists, so nothing is ever overwritten, even racing.
        match fs::hard_link(&tmp, &target) {
            Ok(()) => {
                let _ = fs::remove_file(&tmp);
                return Ok(target);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                return Err(err(e));
            }
        }
    }
    let _ = fs::remove_file(&tmp);
    Err(err(std::io::Error::other(
        "a thousand files of that name already exist",
    )))
}

/// Creates a new temporary file in `dir` under an unpredictable short name, exclusively and
/// without following a symlink planted there (`O_EXCL | O_NOFOLLOW`). The name is short so
/// that a target name near the 255-byte limit still works.
/// Checks, before anything is sampled, that a snapshot can be written where `-o` says: a live
/// `--for 10m` into a folder that is not there sampled ten minutes, then failed and lost them.
pub fn check_writable(output: Option<&Path>) -> Result<(), SnapshotError> {
    use std::os::unix::ffi::OsStrExt as _;
    let dir = match output {
        None => PathBuf::from("."),
        Some(p) if p == Path::new("-") => return Ok(()),
        Some(p) if p.is_dir() || p.as_os_str().as_bytes().ends_with(b"/") => p.to_path_buf(),
        // A device or a pipe named on purpose is written into as it is.
        Some(p) if fs::metadata(p).is_ok_and(|m| !m.is_file()) => return Ok(()),
        Some(p) => {
            let dir = p
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .to_path_buf();
            // A `-N` suffix may be added: the name must leave room for it.
            if p.file_name().is_some_and(|n| n.len() > 240) {
                let io = std::io::Error::other("its file name is longer than 240 bytes");
                return Err(SnapshotError::Write { dir, io });
            }
            dir
        }
    };
    let (tmp, _file) = create_temp(&dir).map_err(|io| SnapshotError::Write {
        dir: dir.clone(),
        io,
    })?;
    let _ = fs::remove_file(tmp);
    Ok(())
}

fn create_temp(dir: &Path) -> std::io::Result<(PathBuf, fs::File)> {
    use std::os::unix::fs::OpenOptionsExt as _;
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut last = None;
    for _ in 0..64 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        // splitmix64 of time, PID and a counter: not guessable ahead, never repeated here.
        let mut x =
            nanos ^ (u64::from(std::process::id()) << 32) ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^= x >> 31;
        let tmp = dir.join(format!(".gpuwatch-{x:016x}.tmp"));
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)
        {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no temporary name was free")))
}

fn suffixed(path: &Path, n: u32) -> PathBuf {
    let name = path
        .file_name()
        .and_then(|s| s.to_str())
        .unwrap_or("snapshot");
    let (stem, ext) = match name.split_once('.') {
        Some((s, e)) => (s, format!(".{e}")),
        None => (name, String::new()),
    };
    path.with_file_name(format!("{stem}-{n}{ext}"))
}

/// GitHub refuses attachments over 25 MB; a snapshot JSON over this size is written gzipped
/// (`.json.gz`, about 20 times smaller; `gpuwatch replay` reads it as it is).
pub const COMPRESS_OVER_BYTES: usize = 20_000_000;

/// A snapshot's text as it goes into a file named `path`: gzipped when the name ends in `.gz`
/// (JSON or Markdown: `r.md.gz` once held gzipped JSON), as it is otherwise.
#[must_use]
pub fn bytes_for(path: &Path, text: &str) -> Vec<u8> {
    if name_ends_with(path, ".gz") {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        // Writing into a Vec cannot fail.
        let _ = gz.write_all(text.as_bytes());
        gz.finish().unwrap_or_default()
    } else {
        text.as_bytes().to_vec()
    }
}

/// Whether a snapshot is Markdown: as `--format` says, else as `-o`'s name says (`.md`, or
/// `.md.gz`), else JSON. A format the name contradicts (`-o r.json.gz --format md`) is refused
/// before anything is sampled: that file would open as neither.
pub fn markdown_wanted(output: Option<&Path>, format: Option<&str>) -> Result<bool, String> {
    // `-o a.tar.gz` was written as gzipped JSON that `tar` then refused.
    if let Some(path) = output.filter(|p| is_archive_name(p) && !is_folder(p)) {
        return Err(format!(
            "-o {}: a snapshot is one JSON or Markdown file, gzipped or not, not a tar, zip, \
             bzip2, xz or zstd file: write -o {}",
            shown(path),
            shown(&unarchived(path, format)),
        ));
    }
    // A folder's name says nothing of the format of the file made in it (`-o x.json/`).
    let named = output.filter(|p| !is_folder(p)).and_then(named_format);
    match (format, named) {
        (None, named) => Ok(named == Some("md")),
        (Some(asked), Some(named)) if asked != named => {
            let path = output.unwrap_or(Path::new(""));
            Err(format!(
                "-o {} names a {} file, but --format {asked} asks for {}: write -o {}, or \
                 leave --format out",
                shown(path),
                kind(named),
                kind(asked),
                shown(&renamed(path, asked)),
            ))
        }
        (Some(asked), _) => Ok(asked == "md"),
    }
}

/// "md" or "json" for a name ending in .md / .json, with or without a further `.gz`.
fn named_format(path: &Path) -> Option<&'static str> {
    let name = path.file_name()?.to_str()?;
    let inner = if name_ends_with(path, ".gz") {
        &name[..name.len() - 3]
    } else {
        name
    };
    let inner = Path::new(inner);
    if name_ends_with(inner, ".md") {
        Some("md")
    } else if name_ends_with(inner, ".json") {
        Some("json")
    } else {
        None
    }
}

/// A folder that is there, or a name written as one (`-o out.json/`).
fn is_folder(path: &Path) -> bool {
    path.is_dir() || path.as_os_str().as_encoded_bytes().ends_with(b"/")
}

/// The endings of archives and compressions gpuwatch does not write (a `.tar.gz` was gzipped
/// JSON, a `.bz2` plain JSON), and of those it does, which a suggested name drops.
const ARCHIVES: [&str; 8] = [".tar", ".tgz", ".zip", ".bz2", ".xz", ".zst", ".7z", ".lz4"];
const OURS: [&str; 3] = [".gz", ".json", ".md"];

fn is_archive_name(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy().to_lowercase());
    // `a.tar.gz`, `a.md.tar`: an archive's ending anywhere after the first dot.
    name.is_some_and(|n| {
        n.split('.')
            .skip(1)
            .any(|part| ARCHIVES.contains(&format!(".{part}").as_str()))
    })
}

/// `path` with every archive or snapshot ending dropped and `format`'s put on (else the
/// Markdown's the name had, else JSON's), gzipped when it was compressed: `a.tar.bz2` →
/// `a.json.gz`, `a.md.tar` → `a.md`.
fn unarchived(path: &Path, format: Option<&str>) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let mut stem = name.as_str();
    let (mut compressed, mut markdown) = (false, false);
    while let Some(ending) = ARCHIVES
        .iter()
        .chain(&OURS)
        .find(|e| stem.len() > e.len() && stem.to_lowercase().ends_with(*e))
    {
        compressed |= !matches!(*ending, ".tar" | ".zip" | ".json" | ".md");
        markdown |= *ending == ".md";
        stem = &stem[..stem.len() - ending.len()];
    }
    let gz = if compressed { ".gz" } else { "" };
    let format = format.unwrap_or(if markdown { "md" } else { "json" });
    path.with_file_name(format!("{stem}.{format}{gz}"))
}

/// Whether the file name ends in `suffix`, in any case: `Path::extension` sees none in a name
/// that is only one (`-o .gz` was written plain, `-o .md` as JSON).
fn name_ends_with(path: &Path, suffix: &str) -> bool {
    let name = path.file_name().map_or(&b""[..], |n| n.as_encoded_bytes());
    name.len() >= suffix.len()
        && name[name.len() - suffix.len()..].eq_ignore_ascii_case(suffix.as_bytes())
}

fn kind(format: &str) -> &'static str {
    if format == "md" {
        "Markdown"
    } else {
        "JSON"
    }
}

/// `path` with its format's extension swapped for `format`'s, a `.gz` kept: r.json.gz → r.md.gz.
fn renamed(path: &Path, format: &str) -> PathBuf {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("snapshot");
    let (base, gz) = match name.len().checked_sub(3) {
        Some(at) if name.is_char_boundary(at) && name[at..].eq_ignore_ascii_case(".gz") => {
            (&name[..at], ".gz")
        }
        _ => (name, ""),
    };
    let stem = base.rsplit_once('.').map_or(base, |(stem, _)| stem);
    let ext = if format == "md" { "md" } else { "json" };
    path.with_file_name(format!("{stem}.{ext}{gz}"))
}

fn shown(path: &Path) -> String {
    crate::text::path_shown(path)
}

/// The extension a snapshot JSON of this size gets when gpuwatch names the file.
#[must_use]
pub fn json_extension(json: &str) -> &'static str {
    if json.len() > COMPRESS_OVER_BYTES {
        "json.gz"
    } else {
        "json"
    }
}

/// The `e` key: writes JSON and Markdown next to each other; returns the status-line message.
pub fn export_from_tui(store: &Store, window_ms: u64) -> anyhow::Result<String> {
    let chosen = std::env::var_os("GPUWATCH_SNAPSHOT_DIR");
    let set = chosen.is_some();
    let dir = chosen.map_or_else(|| PathBuf::from("."), PathBuf::from);
    // GPUWATCH_SNAPSHOT_NO_HOST=1 leaves the host name, user names and paths out of `e`'s
    // snapshots too, as `gpuwatch snapshot --no-host` does.
    let no_host =
        std::env::var_os("GPUWATCH_SNAPSHOT_NO_HOST").is_some_and(|v| !v.is_empty() && v != "0");
    let snap = take(
        store,
        &Options {
            window_ms,
            include_host: !no_host,
            ..Options::default()
        },
    );
    let name = format!("gpuwatch-snapshot-{}", crate::text::stamp(snap.taken_at_ms));
    let text = to_json(&snap);
    let path = dir.join(format!("{name}.{}", json_extension(&text)));
    let json = write_new(&path, bytes_for(&path, &text)).map_err(|e| in_the_monitor(e, set))?;
    let md_path = dir.join(format!("{}.md", stem(&json).unwrap_or(&name)));
    let md = write_new(&md_path, to_markdown(&snap)).map_err(|e| in_the_monitor(e, set))?;
    Ok(written_message(&json, &md))
}

/// A write error as the monitor's status line says it, after "export failed: ": the folder, the
/// cause without its errno, and the one setting that helps there (the monitor has no -o), short
/// enough for 80 columns: to set, or to check where `set` says it is (it said "set" to a user
/// whose setting was the folder that failed).
fn in_the_monitor(e: SnapshotError, set: bool) -> anyhow::Error {
    match e {
        SnapshotError::Write { dir, io } => {
            let cause = io.to_string();
            let cause = cause
                .split(" (os error")
                .next()
                .unwrap_or_default()
                .to_lowercase();
            // The folder named whole: "." says nothing of where the monitor was started.
            let dir = std::path::absolute(&dir).unwrap_or(dir);
            let verb = if set { "check" } else { "set" };
            anyhow::anyhow!(
                "{}: {cause} ({verb} GPUWATCH_SNAPSHOT_DIR)",
                crate::text::path_shown(&dir)
            )
        }
        other @ SnapshotError::Read { .. } => other.into(),
    }
}

/// "snapshot written: ./gpuwatch-snapshot-20261201-102444.json + .md": the Markdown file shares
/// the JSON's stem, so naming it again only pushed the JSON's name out of an 80-column status
/// line.
fn written_message(json: &Path, md: &Path) -> String {
    let md_name = md.file_name().unwrap_or_default().to_string_lossy();
    // The Markdown is the JSON's twin unless its own name was taken and it got a suffix.
    let twin = stem(json).is_some_and(|s| !s.is_empty() && md_name == format!("{s}.md"));
    let md_shown = if twin { ".md".into() } else { md_name };
    format!(
        "snapshot written: {} + {md_shown}",
        crate::text::path_shown(json)
    )
}

/// A snapshot file's name before its first dot: "gpuwatch-snapshot-20261201-102444-2" for
/// ….json or ….json.gz.
fn stem(path: &Path) -> Option<&str> {
    path.file_name()?.to_str()?.split('.').next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_follows_the_name_under_a_gz_and_a_contradiction_is_refused() {
        let md = |o: &str, f: Option<&str>| markdown_wanted(Some(Path::new(o)), f);
        assert_eq!(md("r.md.gz", None), Ok(true));
        assert_eq!(md("r.MD", None), Ok(true));
        assert_eq!(md("r.json.gz", None), Ok(false));
        assert_eq!(md(".md", None), Ok(true));
        assert_eq!(md("dir/.md.gz", None), Ok(true));
        assert_eq!(md("r.txt", Some("md")), Ok(true));
        assert_eq!(markdown_wanted(None, None), Ok(false));
        let err = md("out/r2.json.gz", Some("md")).unwrap_err();
        assert!(err.contains("names a JSON file"), "{err}");
        assert!(err.contains("write -o out/r2.md.gz"), "{err}");
        let err = md("r3.MD", Some("json")).unwrap_err();
        assert!(err.contains("write -o r3.json,"), "{err}");
        // A folder's name is no format: the file made in it takes --format's.
        assert_eq!(md("x.json/", Some("md")), Ok(true));
        assert_eq!(md("x.md/", None), Ok(false));
        for (name, format, instead) in [
            ("out/a.tar.gz", None, "out/a.json.gz"),
            ("a.TGZ", Some("md"), "a.md.gz"),
            ("a.tgz", None, "a.json.gz"),
            ("a.md.tar", None, "a.md"),
            ("a.md.tar", Some("json"), "a.json"),
            ("a.md.tar", Some("md"), "a.md"),
            ("a.tar.bz2", None, "a.json.gz"),
            ("r.json.xz", None, "r.json.gz"),
            ("a.zip", None, "a.json"),
            ("a.tar.zst", None, "a.json.gz"),
        ] {
            let err = md(name, format).unwrap_err();
            assert!(
                err.ends_with(&format!("zstd file: write -o {instead}")),
                "{name}: {err}"
            );
        }
        // A dot in a stem is no archive: `run.tarot.json` is JSON.
        assert_eq!(md("run.tarot.json", None), Ok(false));
    }

    #[test]
    fn a_gz_name_is_gzipped_whatever_the_format() {
        let text = "## gpuwatch snapshot\n";
        let gz = bytes_for(Path::new("r.md.GZ"), text);
        assert_eq!(&gz[..2], &[0x1f, 0x8b]);
        let mut back = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&gz[..]), &mut back)
            .unwrap();
        assert_eq!(back, text);
        assert_eq!(bytes_for(Path::new("r.md"), text), text.as_bytes());
        assert_eq!(&bytes_for(Path::new(".gz"), text)[..2], &[0x1f, 0x8b]);
    }

    #[test]
    fn the_written_message_names_the_json_whole_within_80_columns() {
        let json = Path::new("./gpuwatch-snapshot-20261201-102444.json");
        let md = Path::new("./gpuwatch-snapshot-20261201-102444.md");
        let msg = written_message(json, md);
        assert_eq!(
            msg,
            "snapshot written: ./gpuwatch-snapshot-20261201-102444.json + .md"
        );
        assert!(msg.chars().count() <= 80);
        let gz = Path::new("./gpuwatch-snapshot-20261201-102444-2.json.gz");
        let md = Path::new("./gpuwatch-snapshot-20261201-102444-2.md");
        assert!(written_message(gz, md).ends_with("-2.json.gz + .md"));
        // A Markdown name that does not follow the JSON's is shown whole.
        let other = written_message(json, Path::new("/t/other.md"));
        assert!(other.ends_with(".json + other.md"), "{other}");
    }

    #[test]
    fn a_write_error_in_the_monitor_names_the_folder_and_the_setting_once() {
        let e = write_new(Path::new("/proc/gpuwatch-no/snap.json"), "x").unwrap_err();
        let msg = format!("export failed: {:#}", in_the_monitor(e, false));
        assert_eq!(
            msg,
            "export failed: /proc/gpuwatch-no: no such file or directory (set GPUWATCH_SNAPSHOT_DIR)"
        );
        // Where the setting is the folder that failed, it is to be checked.
        let e = write_new(Path::new("/proc/gpuwatch-no/snap.json"), "x").unwrap_err();
        let msg = format!("{:#}", in_the_monitor(e, true));
        assert!(msg.ends_with("(check GPUWATCH_SNAPSHOT_DIR)"), "{msg}");
        // A read-only folder, as a user meets it: the whole message fits an 80-column line.
        let denied = SnapshotError::Write {
            dir: PathBuf::from("/srv/ro"),
            io: std::io::Error::from_raw_os_error(libc::EACCES),
        };
        let msg = format!("export failed: {:#}", in_the_monitor(denied, false));
        assert_eq!(
            msg,
            "export failed: /srv/ro: permission denied (set GPUWATCH_SNAPSHOT_DIR)"
        );
        assert!(msg.chars().count() <= 80, "{msg}");
        // The monitor's own folder (no GPUWATCH_SNAPSHOT_DIR) is named whole, not ".".
        let here = SnapshotError::Write {
            dir: PathBuf::from("."),
            io: std::io::Error::from_raw_os_error(libc::EACCES),
        };
        let msg = format!("{:#}", in_the_monitor(here, false));
        let cwd = std::env::current_dir().unwrap();
        assert!(
            msg.starts_with(&format!("{}: permission denied", cwd.display())),
            "{msg}"
        );
    }

    #[test]
    fn suffixes_go_before_the_extension() {
        assert_eq!(
            suffixed(Path::new("/t/snap.json"), 2),
            PathBuf::from("/t/snap-2.json")
        );
        assert_eq!(suffixed(Path::new("snap"), 1), PathBuf::from("snap-1"));
    }
}
