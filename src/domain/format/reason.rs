//! serde's reasons said for someone who holds the file and not the code: which field (serde
//! names a column, which in a line of 3000 characters says nothing), and the kind of value
//! it wanted rather than a Rust type (`expected u32`).

/// serde's reason for a value of the wrong type or range in `text` (a recording's line or a
/// whole snapshot), with the field it is in and where: `devices[0].sample.temp_c: invalid
/// type: string "x", expected a whole number from 0 to 4294967295, at column 1234` (at line L
/// column C for text of several lines).
#[must_use]
pub fn serde_reason(e: &serde_json::Error, text: &str) -> String {
    let message = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let what = plain_expected(message.strip_suffix(&suffix).unwrap_or(&message));
    // serde counts the column in bytes; an editor, and the reader, in characters.
    let start = line_start(text, e.line());
    let end = start + e.column();
    // A value's column is its last character, but for an object or an array serde stops before
    // its bracket (one short, or on the space before it): pointed at the bracket instead.
    let bracket = (what.contains("invalid type: map") || what.contains("invalid type: sequence"))
        .then(|| {
            let after = text.get(end..)?;
            let skip = after.len() - after.trim_start().len();
            after
                .trim_start()
                .starts_with(['{', '['])
                .then_some(end + skip + 1)
        })
        .flatten();
    let column = text
        .get(start..)
        .unwrap_or_default()
        .char_indices()
        .take_while(|(i, _)| start + i < bracket.unwrap_or(end))
        .count();
    let at = if text.trim_end().contains('\n') {
        format!("at line {} column {column}", e.line())
    } else {
        format!("at column {column}")
    };
    match field_of(text, end) {
        Some(field) => format!("{field}: {what}, {at}"),
        None => format!("{what}, {at}"),
    }
}

/// The byte offset where serde's line `line` (counted from 1) starts.
fn line_start(text: &str, line: usize) -> usize {
    text.split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum()
}

/// The field of `text` at byte `offset` (`devices[0].sample.temp_c`), read off the text up to
/// it, so it costs nothing until a value is refused. Written here rather than taken from
/// `serde_path_to_error`, whose dependency changed every symbol's hash and with them the link
/// order (run 84: +1 MiB resident).
#[must_use]
pub fn field_of(text: &str, offset: usize) -> Option<String> {
    enum Step<'a> {
        Key(Option<&'a str>),
        Index(usize),
    }
    let bytes = text.as_bytes();
    let end = offset.min(bytes.len());
    let mut path: Vec<Step> = Vec::new();
    let mut i = 0;
    while i < end {
        match bytes[i] {
            b'{' => path.push(Step::Key(None)),
            b'[' => path.push(Step::Index(0)),
            b'}' | b']' => drop(path.pop()),
            b',' => match path.last_mut() {
                Some(Step::Index(n)) => *n += 1,
                Some(Step::Key(k)) => *k = None,
                None => {}
            },
            b'"' => {
                let start = i + 1;
                i = start;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                // A string where a key goes names the field that follows.
                if let Some(Step::Key(k @ None)) = path.last_mut() {
                    *k = text.get(start..i.min(bytes.len()));
                }
            }
            _ => {}
        }
        i += 1;
    }
    let mut out = String::new();
    for step in &path {
        match step {
            Step::Key(Some(k)) if out.is_empty() => out.push_str(k),
            Step::Key(Some(k)) => {
                out.push('.');
                out.push_str(k);
            }
            Step::Index(n) => {
                let _ = std::fmt::Write::write_fmt(&mut out, format_args!("[{n}]"));
            }
            Step::Key(None) => {}
        }
    }
    (!out.is_empty()).then_some(out)
}

/// serde's "expected u32" as the kind of value meant ("expected a whole number from 0 to
/// 4294967295"); "expected struct `DeviceInfo`" as "expected an object".
#[must_use]
pub fn plain_expected(message: &str) -> String {
    const MARK: &str = "expected ";
    let Some(at) = message.find(MARK) else {
        return message.to_string();
    };
    let (head, rest) = message.split_at(at + MARK.len());
    let word_end = |s: &str| s.find([' ', ',', ')']).unwrap_or(s.len());
    let word = &rest[..word_end(rest)];
    let (kind, used) = match word {
        "u8" => ("a whole number from 0 to 255", word.len()),
        "u16" => ("a whole number from 0 to 65535", word.len()),
        "u32" => ("a whole number from 0 to 4294967295", word.len()),
        "u64" | "usize" => ("a whole number, 0 or more", word.len()),
        "i8" | "i16" | "i32" | "i64" | "isize" => ("a whole number", word.len()),
        "f32" | "f64" => ("a number", word.len()),
        "char" => ("one character", word.len()),
        // "struct DeviceInfo", "enum Verdict": the Rust name after it says nothing to a reader.
        "struct" | "map" | "enum" | "internally" | "variant" => {
            // The words to replace: "map"; "struct Name", "enum Name", "variant identifier";
            // "internally tagged enum Name".
            let words = match word {
                "map" => 1,
                "internally" => 4,
                _ => 2,
            };
            let mut used = 0;
            for (i, w) in rest.split(' ').take(words).enumerate() {
                used += usize::from(i > 0) + word_end(w);
            }
            let kind = if matches!(word, "enum" | "variant") {
                "one of its names"
            } else {
                "an object"
            };
            (kind, used.min(rest.len()))
        }
        _ => return message.to_string(),
    };
    let head = whole_from_float(head, kind);
    format!("{head}{kind}{}", &rest[used..])
}

/// serde's "invalid type: floating point `1e+23`" where a whole number was expected: what a
/// number written with a fraction or an exponent (`1e5` too, whole as it is) reads as, and a
/// whole number past 2^64 (`serde_json` takes it as a float), so it is said as any of them.
fn whole_from_float(head: &str, kind: &str) -> String {
    const FLOAT: &str = "invalid type: floating point `";
    let Some(value) = head
        .strip_prefix(FLOAT)
        .and_then(|rest| rest.split_once('`'))
        .map(|(value, _)| value)
        .filter(|_| kind.starts_with("a whole number"))
    else {
        return head.to_string();
    };
    format!(
        "invalid value: {value} (written with a fraction or an exponent, or past \
         18446744073709551615); expected "
    )
}

#[cfg(test)]
mod tests {
    use super::{field_of, plain_expected, serde_reason};

    /// The path is read past strings holding brackets, commas, quotes and keys' own names.
    #[test]
    fn the_field_at_a_column_is_named_past_strings_that_look_like_json() {
        let line = r#"{"t_ms":1,"devices":[{"sample":{"temp_c":1}},{"processes":[{"pid":1,"host":{"name":"a\"],{b","children":[{"pid":1},{"pid":2},{"pid":"x"}]}}]}]}"#;
        let at = line.find(r#""x""#).unwrap() + 3;
        assert_eq!(
            field_of(line, at).as_deref(),
            Some("devices[1].processes[0].host.children[2].pid")
        );
        assert_eq!(field_of(line, 0), None);
        assert_eq!(
            field_of(r#"{"devices": [garbage"#, 14).as_deref(),
            Some("devices[0]")
        );
    }

    #[test]
    fn rust_types_become_the_kind_of_value_meant() {
        let cases = [
            (
                "invalid type: string \"x\", expected u32",
                "invalid type: string \"x\", expected a whole number from 0 to 4294967295",
            ),
            (
                "invalid value: integer `-1`, expected u64",
                "invalid value: integer `-1`, expected a whole number, 0 or more",
            ),
            (
                "invalid type: string \"hot\", expected f32",
                "invalid type: string \"hot\", expected a number",
            ),
            (
                "invalid type: integer `5`, expected struct DeviceInfo",
                "invalid type: integer `5`, expected an object",
            ),
            (
                "invalid type: integer `5`, expected a string",
                "invalid type: integer `5`, expected a string",
            ),
            ("missing field `uuid`", "missing field `uuid`"),
            (
                "invalid type: integer `7`, expected internally tagged enum DeviceStatus",
                "invalid type: integer `7`, expected an object",
            ),
            (
                "invalid type: integer `5`, expected variant identifier",
                "invalid type: integer `5`, expected one of its names",
            ),
            (
                "invalid type: map, expected enum Severity, at column 3",
                "invalid type: map, expected one of its names, at column 3",
            ),
            // A whole number past 2^64 reads as a float: "floating point `1e+23`" alone said
            // the user wrote a float (helper-32).
            (
                "invalid type: floating point `1e+23`, expected u64",
                "invalid value: 1e+23 (written with a fraction or an exponent, or past \
                 18446744073709551615); expected a whole number, 0 or more",
            ),
            (
                "invalid type: floating point `1.5`, expected f32",
                "invalid type: floating point `1.5`, expected a number",
            ),
        ];
        for (serde, plain) in cases {
            assert_eq!(plain_expected(serde), plain);
        }
    }

    /// A snapshot is pretty JSON over many lines: its field is found from serde's line and
    /// column, and the place said as both.
    #[test]
    fn a_reason_in_text_of_many_lines_names_its_field_and_line() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Doc {
            devices: Vec<Dev>,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Dev {
            temp_c: u32,
        }
        let text = "{\n  \"devices\": [\n    {\"temp_c\": 1},\n    {\"temp_c\": \"hot\"}\n  ]\n}";
        let e = serde_json::from_str::<Doc>(text).unwrap_err();
        assert_eq!(
            serde_reason(&e, text),
            "devices[1].temp_c: invalid type: string \"hot\", expected a whole number from 0 to \
             4294967295, at line 4 column 20"
        );
        // Columns in characters: "é😀" is 6 bytes, 2 characters.
        let line = r#"{"x":"é😀","devices":[{"temp_c":"hot"}]}"#;
        let e = serde_json::from_str::<Doc>(line).unwrap_err();
        let want = line.chars().position(|c| c == 'h').unwrap() + 4;
        let said = serde_reason(&e, line);
        assert!(said.ends_with(&format!("at column {want}")), "{said}");
        // An object or an array is pointed at by its bracket: serde stopped one short of it.
        for line in [
            r#"{"devices":[{"temp_c":{}}]}"#,
            r#"{"devices":[{"temp_c":  [1]}]}"#,
        ] {
            let e = serde_json::from_str::<Doc>(line).unwrap_err();
            let want = line.rfind(['{', '[']).unwrap() + 1;
            let said = serde_reason(&e, line);
            assert!(
                said.starts_with("devices[0].temp_c: invalid type: "),
                "{said}"
            );
            assert!(said.ends_with(&format!("at column {want}")), "{said}");
        }
        let line = r#"{"devices":[{"temp_c":-3}]}"#;
        let e = serde_json::from_str::<Doc>(line).unwrap_err();
        assert_eq!(
            serde_reason(&e, line),
            "devices[0].temp_c: invalid value: integer `-3`, expected a whole number from 0 \
             to 4294967295, at column 24"
        );
    }
}
