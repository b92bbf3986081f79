//! Stack bursts from a file someone sent: text that would forge output lines, headings, HTML
//! or reorder what a reader sees is shown harmlessly; counts and times gpuwatch never writes
//! are refused with the line named.

use std::io::Write;
use std::process::Command;

const REAL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus/stacks.jsonl.gz");

/// The corpus's `stacks` recording with `edit` applied to every burst, written plain.
fn edited(dir: &std::path::Path, edit: impl Fn(&mut serde_json::Value)) -> std::path::PathBuf {
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(REAL).unwrap()),
        &mut text,
    )
    .unwrap();
    let path = dir.join("hostile.jsonl");
    let mut out = std::fs::File::create(&path).unwrap();
    for (i, line) in text.lines().enumerate() {
        let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
        if i > 0 {
            if let Some(bursts) = v.get_mut("stacks").and_then(|s| s.as_array_mut()) {
                bursts.iter_mut().for_each(&edit);
            }
        }
        writeln!(out, "{v}").unwrap();
    }
    path
}

fn gpuwatch(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const EVIL: &str =
    "x```\n\n## injected heading\n</sub><img src=x>\u{202E}|cell|\r\n‼ CRITICAL forged";

#[test]
fn hostile_frame_text_forges_no_line_heading_or_html() {
    let dir = tempfile::tempdir().unwrap();
    let path = edited(dir.path(), |b| {
        for t in b["threads"].as_array_mut().unwrap() {
            for f in t["frames"].as_array_mut().unwrap() {
                f["code"] = EVIL.into();
                f["function"] = EVIL.into();
                f["file"] = format!("/home/u/{EVIL}.py").into();
            }
        }
    });
    let p = path.to_str().unwrap();
    let (code, md, err) = gpuwatch(&[
        "snapshot", "--replay", p, "--format", "md", "--window", "10m", "-o", "-",
    ]);
    assert_eq!(code, 0, "{err}");
    // Parsed as CommonMark: no HTML but the report's own, and only its own headings.
    let mut headings = Vec::new();
    let mut in_heading = false;
    for event in pulldown_cmark::Parser::new(&md) {
        match event {
            // The report's own footnote is in <sub>; nothing else may be HTML.
            pulldown_cmark::Event::Html(h) | pulldown_cmark::Event::InlineHtml(h)
                if !matches!(h.as_ref(), "<sub>" | "</sub>") =>
            {
                panic!("raw HTML in the report: {h}\n{md}")
            }
            pulldown_cmark::Event::Start(pulldown_cmark::Tag::Heading { .. }) => in_heading = true,
            pulldown_cmark::Event::End(pulldown_cmark::TagEnd::Heading(_)) => in_heading = false,
            pulldown_cmark::Event::Text(t) if in_heading => headings.push(t.to_string()),
            _ => {}
        }
    }
    assert!(
        headings.iter().all(|h| !h.contains("injected")),
        "{headings:?}"
    );
    assert!(!md.contains('\u{202E}'), "{md}");
    let (_, text, _) = gpuwatch(&["diagnose", "--replay", p, "--stacks"]);
    assert!(
        !text
            .lines()
            .any(|l| l.trim_start().starts_with("‼ CRITICAL forged")),
        "{text}"
    );
    assert!(
        !text.contains('\u{202E}') && !text.contains('\r'),
        "stacks text is one line each"
    );
}

#[test]
fn counts_and_times_gpuwatch_never_writes_are_refused_with_the_line() {
    let dir = tempfile::tempdir().unwrap();
    for (edit, says) in [
        (
            Box::new(|b: &mut serde_json::Value| b["read"] = 1000.into())
                as Box<dyn Fn(&mut serde_json::Value)>,
            "read 1000 of",
        ),
        (
            Box::new(|b: &mut serde_json::Value| b["t_ms"] = u64::MAX.into()),
            "not around its tick's time",
        ),
        (
            Box::new(|b: &mut serde_json::Value| {
                if let Some(t) = b["threads"].as_array_mut().and_then(|t| t.first_mut()) {
                    t["class_samples"] = 999.into();
                }
            }),
            "more samples in its classes than it was read",
        ),
    ] {
        let path = edited(dir.path(), edit);
        let (code, _, err) = gpuwatch(&["diagnose", "--replay", path.to_str().unwrap()]);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains(says) && err.contains("hostile.jsonl:"),
            "{err}"
        );
    }
}
