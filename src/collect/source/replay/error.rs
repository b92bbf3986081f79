//! What can go wrong reading a recording or a snapshot, each said with what to do.
//!
//! An I/O error is said inside the message and is not its `source`: a chain printed with
//! `{:#}` said it twice ("…valid UTF-8: stream did not contain valid UTF-8").

use std::path::PathBuf;

use crate::format::record::VERSION;

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("cannot open recording {p}: {error}", p = crate::text::path_shown(.path))]
    Open {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{p} is empty: it is not a gpuwatch recording", p = crate::text::path_shown(.path))]
    Empty { path: PathBuf },
    /// A terminal named as the recording (`/dev/stdin` with nothing piped, `-` at a prompt):
    /// reading it waited in silence for lines typed.
    #[error(
        "{p} is a terminal, not a recording: give a file, or pipe one in (`… < rec.jsonl`, \
         `zcat rec.jsonl.gz | …`, with `-` or `/dev/stdin` as the file)",
        p = if .path.as_os_str() == "-" { "standard input".into() } else { crate::text::path_shown(.path) }
    )]
    Terminal { path: PathBuf },
    #[error("{p} has only blank lines: it is not a gpuwatch recording", p = crate::text::path_shown(.path))]
    Blank { path: PathBuf },
    #[error(
        "{p}: its header (line {line}) is cut short, so no tick can be read (a recorder \
         stopped while writing its first line, or a partial copy); {HEADER_ADVICE}", p = crate::text::path_shown(.path))]
    TornHeader { path: PathBuf, line: usize },
    /// The same for a gzip stream that ends (or, damaged, breaks) inside its first line.
    #[error("{p}: its header (line {line}) {what}: {error}; {why}); {HEADER_ADVICE}", p = crate::text::path_shown(.path))]
    GzipHead {
        path: PathBuf,
        line: usize,
        what: &'static str,
        why: &'static str,
        error: std::io::Error,
    },
    #[error("{p}:{line}: not a gpuwatch recording ({reason})", p = crate::text::path_shown(.path))]
    NotARecording {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    #[error("{p}:{line}: damaged header ({reason}); {HEADER_ADVICE}", p = crate::text::path_shown(.path))]
    DamagedHeader {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    #[error("{p}: cannot read this gpuwatch snapshot: {reason}", p = crate::text::path_shown(.path))]
    BadSnapshot { path: PathBuf, reason: String },
    #[error("{p} is format version {version}, newer than this gpuwatch reads ({VERSION}); update gpuwatch", p = crate::text::path_shown(.path))]
    TooNew { path: PathBuf, version: u32 },
    #[error("{p}:{line}: corrupt tick ({reason}); delete line {line} to read past it", p = crate::text::path_shown(.path))]
    Corrupt {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    #[error(
        "{p}:{line}: a second recording starts here (its header): recordings were joined \
         into one file; split it there (`head -n {before}` and `tail -n +{line}`) and open each", p = crate::text::path_shown(.path))]
    SecondRecording {
        path: PathBuf,
        line: usize,
        before: usize,
    },
    // The part after the split needs the header (line 1): `tail` alone was refused as "not a
    // gpuwatch recording".
    #[error(
        "{p}:{line}: this tick is {back_s} s earlier than the one before it: recordings \
         joined into one file, or ticks out of order; split it there (`head -n {before} {w} > \
         a.jsonl` and `{{ head -n 1 {w}; tail -n +{line} {w}; }} > b.jsonl`, the header kept for \
         both) and open each", p = crate::text::path_shown(.path), w = crate::text::shell_word(.path))]
    TimeBack {
        path: PathBuf,
        line: usize,
        before: usize,
        back_s: u64,
    },
    #[error(
        "{p}:{line}: tick has {got} devices, the header lists {want}: a line edited or \
         joined from another recording; delete line {line} to read past it", p = crate::text::path_shown(.path))]
    DeviceCount {
        path: PathBuf,
        line: usize,
        got: usize,
        want: usize,
    },
    #[error("{p} changed on disk since it was opened ({how}): open it again to replay what it holds now", p = crate::text::path_shown(.path))]
    Changed { path: PathBuf, how: String },
    #[error("cannot read {p}: {error}", p = crate::text::path_shown(.path))]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    /// A gzip stream whose data is damaged past its header (a checksum that does not match,
    /// a deflate block that does not decode): the ticks before it were read.
    #[error("{}", gzip_broken(path, *after, error))]
    GzipBroken {
        path: PathBuf,
        after: usize,
        error: std::io::Error,
    },
    /// An error met in a gzip-compressed recording, whose line-editing advice (`head`,
    /// delete line N) must go through `zcat`, and whose corrupt line is most often damaged
    /// data rather than a torn write.
    #[error("{}", gzipped(.0))]
    Gzipped(Box<ReplayError>),
}

/// flate2's words when the trailer's CRC-32 or length differs from what was decoded: it says
/// "checksum" for both (tests/sources.rs flips each and fails if these words change).
const TRAILER_MISMATCH: &str = "does not have a matching checksum";

/// What `GzipBroken` says. A trailer that does not match comes after every line decoded, so
/// it is not "damaged after line N": the damage may be in any line, or in the trailer alone.
fn gzip_broken(path: &std::path::Path, after: usize, error: &std::io::Error) -> String {
    if let Some(bomb) = error
        .get_ref()
        .and_then(|e| e.downcast_ref::<super::read::Bomb>())
    {
        // Not a damaged copy to fetch again: "copy it again" sent a user after a bomb.
        return format!("{bomb}; stopped after line {after} (the ticks before it were read)");
    }
    let path = crate::text::path_shown(path);
    if error.to_string().contains(TRAILER_MISMATCH) {
        return format!(
            "{path}: its gzip trailer (the checksum and length stored at its end) does not \
             match the {after} lines decoded: the copy is damaged, in them or in the trailer; \
             copy it again (`gzip -t` checks a copy). Every tick was read, and may be wrong"
        );
    }
    format!(
        "{path}: its gzip stream is damaged after line {after} ({error}): a damaged copy; copy \
         it again (the ticks before it were read)"
    )
}

/// What `Gzipped` says: the inner error with its advice for a compressed file.
fn gzipped(inner: &ReplayError) -> String {
    match inner {
        // Damaged data garbles the lines after it too: keeping those before it is what
        // works (deleting the one line left the next ones corrupt).
        ReplayError::Corrupt { path, line, reason } => format!(
            "{}:{line}: corrupt tick ({reason}); in a gzip file most often damaged data: if \
             `gzip -t` fails on it, copy it again; to keep the ticks before it, `zcat {} | head \
             -n {} > fixed.jsonl`",
            crate::text::path_shown(path),
            crate::text::shell_word(path),
            line.saturating_sub(1)
        ),
        ReplayError::SecondRecording { path, line, before } => format!(
            "{}:{line}: a second recording starts here (its header): recordings were joined \
             into one file; split what `zcat` prints there (`head -n {before}` and `tail -n \
             +{line}`) and open each",
            crate::text::path_shown(path)
        ),
        ReplayError::TimeBack {
            path,
            line,
            before,
            back_s,
        } => format!(
            "{shown}:{line}: this tick is {back_s} s earlier than the one before it: \
             recordings joined into one file, or ticks out of order; split what `zcat` prints \
             there (`zcat {w} | head -n {before} > a.jsonl` and `{{ zcat {w} | head -n 1; zcat \
             {w} | tail -n +{line}; }} > b.jsonl`, the header kept for both) and open each",
            shown = crate::text::path_shown(path),
            w = crate::text::shell_word(path)
        ),
        other => other.to_string(),
    }
}

/// What to do with a recording whose header is cut, plain or compressed alike.
const HEADER_ADVICE: &str = "copy it again if it is a copy, else record again";

impl ReplayError {
    /// The same error of a header found on line `line` (blank lines before it), not line 1.
    pub(super) fn on_header_line(self, line: usize) -> Self {
        match self {
            ReplayError::TornHeader { path, .. } => ReplayError::TornHeader { path, line },
            ReplayError::GzipHead {
                path,
                what,
                why,
                error,
                ..
            } => ReplayError::GzipHead {
                path,
                line,
                what,
                why,
                error,
            },
            ReplayError::NotARecording {
                path,
                line: 1,
                reason,
            } => ReplayError::NotARecording { path, line, reason },
            ReplayError::DamagedHeader {
                path,
                line: 1,
                reason,
            } => ReplayError::DamagedHeader { path, line, reason },
            other => other,
        }
    }

    /// This error as met in a gzip-compressed recording: its advice through `zcat`.
    pub(super) fn in_gzip(self) -> Self {
        match self {
            ReplayError::Corrupt { .. }
            | ReplayError::SecondRecording { .. }
            | ReplayError::TimeBack { .. } => ReplayError::Gzipped(Box::new(self)),
            other => other,
        }
    }

    /// A gzip stream that stopped inside its first line: "ends" where it was cut, "breaks"
    /// where its data is damaged.
    pub(super) fn gzip_head(path: &std::path::Path, error: std::io::Error) -> Self {
        let (what, why) = if error.kind() == std::io::ErrorKind::UnexpectedEof {
            (
                "is cut short, so no tick can be read (its gzip stream ends inside it",
                "a recorder stopped while writing its first line, or a partial copy",
            )
        } else {
            (
                "cannot be read (its gzip stream is damaged inside it",
                "a damaged copy, or not a gzip file",
            )
        };
        ReplayError::GzipHead {
            path: path.to_path_buf(),
            line: 1,
            what,
            why,
            error,
        }
    }
}
