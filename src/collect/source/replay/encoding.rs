//! Text in a form a recording is not written in: UTF-8 byte-order marks beyond the one read
//! past, and UTF-16 (PowerShell's `>` writes it). Each is named, with a command that mends a
//! copy, as the input was given: a file, a gzip file, standard input.

use std::path::Path;

/// How to run `filter` over the input at `path` into a mended copy: a file is filtered into a
/// new one (nothing is changed in place), a gzip file is uncompressed on the way, standard
/// input is piped through it.
pub(super) fn mend_with(path: &Path, gzip: bool, filter: &str) -> String {
    let unzip = if gzip { "zcat | " } else { "" };
    if path == Path::new("-") {
        format!("pipe it through {unzip}{filter} before gpuwatch")
    } else if gzip {
        format!("e.g. zcat FILE | {filter} | gzip > MENDED.jsonl.gz")
    } else {
        format!("e.g. {filter} < FILE > MENDED.jsonl")
    }
}

/// The UTF-16 form `head` (an input's first bytes) is in, as iconv names it: with a byte-order
/// mark, or without one, as a NUL beside the opening `{` or blank shows; UTF-32 by its mark,
/// whose first two bytes are UTF-16's (helper-40). None for anything else, UTF-8 included.
pub(super) fn utf16(head: &[u8]) -> Option<&'static str> {
    let text = |b: &u8| *b == b'{' || b.is_ascii_whitespace();
    match head {
        [0xFF, 0xFE, 0, 0, ..] | [0, 0, 0xFE, 0xFF, ..] => Some("UTF-32"),
        [0xFF, 0xFE, ..] | [0xFE, 0xFF, ..] => Some("UTF-16"),
        [b, 0, ..] if text(b) => Some("UTF-16LE"),
        [0, b, ..] if text(b) => Some("UTF-16BE"),
        _ => None,
    }
}

/// Why an input in `form` (UTF-16, UTF-16LE, UTF-32…) is not read, and how to convert it.
pub(super) fn not_utf8(form: &str, path: &Path, gzip: bool) -> String {
    let iconv = format!("iconv -f {form} -t UTF-8");
    let family = form.trim_end_matches("LE").trim_end_matches("BE");
    format!(
        "it is {family} text, where a recording is UTF-8: convert it, {}",
        mend_with(path, gzip, &iconv)
    )
}

/// Why a first line that begins with byte-order marks (the one read past already taken off)
/// does not read: serde said "expected value at line 1 column 1". An editor's "save without
/// BOM" takes one off; the command given takes them all.
pub(super) fn extra_marks(first: &str, path: &Path, gzip: bool) -> Option<String> {
    let marks = first.chars().take_while(|c| *c == '\u{feff}').count();
    (marks > 0).then(|| {
        format!(
            "it starts with {} byte-order marks (U+FEFF), where one is read past: remove them \
             all, {}",
            marks + 1,
            mend_with(path, gzip, r"sed '1s/^\(\xEF\xBB\xBF\)*//'")
        )
    })
}

/// Why a tick's line that begins with a byte-order mark does not read: a file saved with one
/// and appended with `cat` puts it there (it was "a tick cut short at column 1").
pub(super) fn marked_line(line: &str) -> Option<String> {
    let rest = line.strip_prefix('\u{feff}')?;
    let whole = serde_json::from_str::<serde::de::IgnoredAny>(rest).is_ok();
    Some(format!(
        "it starts with a byte-order mark (U+FEFF), as a file saved with one and appended with \
         cat does{}",
        if whole {
            ": deleting the mark's 3 bytes keeps the tick"
        } else {
            ""
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_is_told_by_its_mark_or_the_nul_beside_its_brace() {
        assert_eq!(utf16(b"\xFF\xFE{\0"), Some("UTF-16"));
        assert_eq!(utf16(b"\xFE\xFF\0{"), Some("UTF-16"));
        assert_eq!(utf16(b"{\0\"\0"), Some("UTF-16LE"));
        assert_eq!(utf16(b"\0{\0\""), Some("UTF-16BE"));
        assert_eq!(utf16(b"\n\0{\0"), Some("UTF-16LE"));
        assert_eq!(utf16(b"\xFF\xFE\0\0{\0\0\0"), Some("UTF-32"));
        assert_eq!(utf16(b"\0\0\xFE\xFF\0\0\0{"), Some("UTF-32"));
        for other in [
            &b"{\"format\""[..],
            b"\xEF\xBB\xBF{",
            b"\x1f\x8b",
            b"\0\0",
            b"{",
            b"",
        ] {
            assert_eq!(utf16(other), None, "{other:?}");
        }
    }

    #[test]
    fn the_mending_command_fits_the_input() {
        let filter = "sed x";
        assert_eq!(
            mend_with(Path::new("r.jsonl"), false, filter),
            "e.g. sed x < FILE > MENDED.jsonl"
        );
        assert_eq!(
            mend_with(Path::new("r.jsonl.gz"), true, filter),
            "e.g. zcat FILE | sed x | gzip > MENDED.jsonl.gz"
        );
        assert_eq!(
            mend_with(Path::new("-"), false, filter),
            "pipe it through sed x before gpuwatch"
        );
        assert_eq!(
            mend_with(Path::new("-"), true, filter),
            "pipe it through zcat | sed x before gpuwatch"
        );
    }

    #[test]
    fn a_mark_before_a_tick_is_named_and_whether_the_tick_is_whole() {
        let whole = marked_line("\u{feff}{\"t_ms\":1,\"devices\":[]}\n").unwrap();
        assert!(whole.ends_with("keeps the tick"), "{whole}");
        let torn = marked_line("\u{feff}{\"t_ms\":1,\"dev").unwrap();
        assert!(!torn.contains("keeps"), "{torn}");
        assert_eq!(marked_line("{\"t_ms\":1}"), None);
        assert_eq!(extra_marks("{}", Path::new("f"), false), None);
        let two = extra_marks("\u{feff}{}", Path::new("f"), false).unwrap();
        assert!(
            two.starts_with("it starts with 2 byte-order marks"),
            "{two}"
        );
    }
}
