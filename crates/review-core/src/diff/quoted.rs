//! Paths as git writes them in diff headers: bare, or C-quoted
//! (`"a/\303\244.txt"`) when they hold bytes git will not print raw (with
//! `core.quotepath` on: every non-ASCII byte; always: control characters, `"`,
//! `\`), and the `a/` / `b/` prefixes git puts in front of them.

/// Why a quoted path could not be read.
pub(super) type QuoteProblem = &'static str;

/// Reads a C-quoted token at the start of `text` (which starts with `"`):
/// returns the decoded path and what follows the closing quote.
///
/// Escapes are git's (`quote_c_style`): `\a \b \t \n \v \f \r \" \\` and
/// three octal digits for any byte. Bytes that are not UTF-8 once decoded
/// (a path in Latin-1, say) are replaced with U+FFFD: the file stays in the
/// diff under a lossy name rather than failing the whole diff.
pub(super) fn read_quoted(text: &str) -> Result<(String, &str), QuoteProblem> {
    let bytes = text.as_bytes();
    debug_assert_eq!(bytes.first(), Some(&b'"'));
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 1;
    loop {
        let Some(&byte) = bytes.get(index) else {
            return Err("the closing `\"` is missing");
        };
        match byte {
            b'"' => break,
            b'\\' => {
                let Some(&escape) = bytes.get(index + 1) else {
                    return Err("the path ends in the middle of a `\\` escape");
                };
                let (value, width) = match escape {
                    b'a' => (0x07, 1),
                    b'b' => (0x08, 1),
                    b't' => (b'\t', 1),
                    b'n' => (b'\n', 1),
                    b'v' => (0x0b, 1),
                    b'f' => (0x0c, 1),
                    b'r' => (b'\r', 1),
                    b'"' => (b'"', 1),
                    b'\\' => (b'\\', 1),
                    b'0'..=b'3' => (octal_byte(bytes.get(index + 1..index + 4))?, 3),
                    _ => {
                        return Err(
                            "unknown `\\` escape (git writes \\t, \\n, \\\", \\\\ or three octal digits)",
                        );
                    }
                };
                decoded.push(value);
                index += 1 + width;
            }
            _ => {
                decoded.push(byte);
                index += 1;
            }
        }
    }
    let path = match String::from_utf8(decoded) {
        Ok(path) => path,
        Err(error) => String::from_utf8_lossy(error.as_bytes()).into_owned(),
    };
    // `index` is at the closing quote, an ASCII byte: a char boundary.
    Ok((path, &text[index + 1..]))
}

/// Decodes three octal digits (`\303`) into the byte they spell.
fn octal_byte(digits: Option<&[u8]>) -> Result<u8, QuoteProblem> {
    const PROBLEM: QuoteProblem = "an octal escape needs three digits 0-7, the first 0-3";
    let Some(&[high, middle, low]) = digits else {
        return Err(PROBLEM);
    };
    let mut value: u8 = 0;
    for digit in [high, middle, low] {
        if !(b'0'..=b'7').contains(&digit) {
            return Err(PROBLEM);
        }
        // The first digit is 0-3, so three digits fit in a byte.
        value = value.wrapping_mul(8).wrapping_add(digit - b'0');
    }
    Ok(value)
}

/// Reads the path of a `---`/`+++` line (the text after `--- `): `None` for
/// `/dev/null`. A bare path ends at a tab (git adds one after a path with
/// spaces; GNU diff puts a timestamp there); a trailing `\r` of a diff saved
/// with CRLF line endings is not part of it.
pub(super) fn header_path(text: &str) -> Result<Option<String>, QuoteProblem> {
    let path = if text.starts_with('"') {
        read_quoted(text)?.0
    } else {
        let bare = text.split('\t').next().unwrap_or(text);
        bare.strip_suffix('\r').unwrap_or(bare).to_owned()
    };
    if path.is_empty() {
        return Err("the path is empty");
    }
    Ok((path != "/dev/null").then_some(path))
}

/// Reads the path of a `rename from`, `rename to`, `copy from` or `copy to`
/// header (no prefix; quoted when needed).
pub(super) fn header_value_path(text: &str) -> Result<String, QuoteProblem> {
    let text = text.strip_suffix('\r').unwrap_or(text);
    let path = if text.starts_with('"') {
        let (path, rest) = read_quoted(text)?;
        if !rest.is_empty() {
            return Err("unexpected text after the closing `\"`");
        }
        path
    } else {
        text.to_owned()
    };
    if path.is_empty() {
        return Err("the path is empty");
    }
    Ok(path)
}

/// Splits the text after `diff --git ` into its two paths, prefixes still on.
///
/// Unquoted paths may contain spaces, so the split is ambiguous in general;
/// git's own rule applies: without a rename or copy the two names are equal
/// apart from their prefixes, so the line splits in the middle. A rename or
/// copy names its paths in `rename from`/`copy from` headers, which the caller
/// prefers; for those, a line with a single space still splits.
pub(super) fn split_diff_git_paths(text: &str) -> Option<(String, String)> {
    let text = text.strip_suffix('\r').unwrap_or(text);
    if text.starts_with('"') {
        let (old, rest) = read_quoted(text).ok()?;
        let rest = rest.strip_prefix(' ')?;
        let new = if rest.starts_with('"') {
            let (new, tail) = read_quoted(rest).ok()?;
            tail.is_empty().then_some(new)?
        } else {
            rest.to_owned()
        };
        return Some((old, new));
    }
    if text.ends_with('"') {
        let split = text.find(" \"")?;
        let (new, tail) = read_quoted(&text[split + 1..]).ok()?;
        return tail.is_empty().then(|| (text[..split].to_owned(), new));
    }
    // Both bare: the middle split first (equal names), then a lone space.
    if text.len() % 2 == 1 {
        let middle = text.len() / 2;
        if text.as_bytes()[middle] == b' ' && text.is_char_boundary(middle) {
            let (old, new) = (&text[..middle], &text[middle + 1..]);
            let (prefix_old, prefix_new) = prefixes(old, new);
            if old[prefix_old.len()..] == new[prefix_new.len()..] {
                return Some((old.to_owned(), new.to_owned()));
            }
        }
    }
    let mut spaces = text.match_indices(' ');
    let (split, _) = spaces.next()?;
    spaces
        .next()
        .is_none()
        .then(|| (text[..split].to_owned(), text[split + 1..].to_owned()))
}

/// The prefixes git put in front of an old and a new path: `a/` and `b/` by
/// default; one-letter "mnemonic" prefixes (`i/`, `w/`, `c/`, `o/`) with
/// `diff.mnemonicPrefix`; none with `--no-prefix`.
pub(super) fn prefixes<'p>(old: &'p str, new: &'p str) -> (&'p str, &'p str) {
    if old.starts_with("a/") && new.starts_with("b/") {
        return (&old[..2], &new[..2]);
    }
    let mnemonic = |path: &'p str| {
        let bytes = path.as_bytes();
        (bytes.len() > 2 && matches!(bytes[0], b'c' | b'i' | b'w' | b'o') && bytes[1] == b'/')
            .then(|| &path[..2])
    };
    match (mnemonic(old), mnemonic(new)) {
        (Some(old_prefix), Some(new_prefix)) if old_prefix != new_prefix => {
            (old_prefix, new_prefix)
        }
        _ => ("", ""),
    }
}

/// Strips `prefix` from `path` when it is there.
pub(super) fn strip_prefix(path: String, prefix: &str) -> String {
    if !prefix.is_empty() && path.starts_with(prefix) && path.len() > prefix.len() {
        path[prefix.len()..].to_owned()
    } else {
        path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_paths_decode_git_escapes() {
        let (path, rest) = read_quoted(r#""a/\303\244 \"x\"\t\\.txt" tail"#).unwrap();
        assert_eq!(path, "a/ä \"x\"\t\\.txt");
        assert_eq!(rest, " tail");
    }

    #[test]
    fn every_escape_git_writes_decodes() {
        let (path, rest) = read_quoted(r#""\a\b\t\n\v\f\r\"\\\001\177\303\251""#).unwrap();
        assert_eq!(path, "\u{7}\u{8}\t\n\u{b}\u{c}\r\"\\\u{1}\u{7f}é");
        assert_eq!(rest, "");
        assert_eq!(
            header_value_path(r#""tab\there.txt""#).unwrap(),
            "tab\there.txt"
        );
        assert_eq!(
            split_diff_git_paths(r#""a/tab\there.txt" "b/tab\there.txt""#),
            Some(("a/tab\there.txt".into(), "b/tab\there.txt".into()))
        );
    }

    #[test]
    fn non_utf8_quoted_paths_decode_lossily() {
        let (path, _) = read_quoted(r#""a/\344.txt""#).unwrap();
        assert_eq!(path, "a/\u{fffd}.txt");
    }

    #[test]
    fn malformed_quotes_are_errors() {
        assert!(read_quoted(r#""a/unterminated"#).is_err());
        assert!(read_quoted(r#""a/\9.txt""#).is_err());
        assert!(read_quoted(r#""a/\30""#).is_err());
        assert!(read_quoted(r#""a/\"#).is_err());
        assert!(read_quoted(r#""a/\400""#).is_err());
    }

    #[test]
    fn diff_git_lines_split_into_two_paths() {
        let split = |text: &str| split_diff_git_paths(text);
        assert_eq!(split("a/x b/x"), Some(("a/x".into(), "b/x".into())));
        assert_eq!(
            split("a/with space b/with space"),
            Some(("a/with space".into(), "b/with space".into()))
        );
        assert_eq!(
            split(r#""a/\303\244" "b/\303\244""#),
            Some(("a/ä".into(), "b/ä".into()))
        );
        assert_eq!(
            split(r#"a/x "b/\303\244""#),
            Some(("a/x".into(), "b/ä".into()))
        );
        assert_eq!(split("a/old b/new"), Some(("a/old".into(), "b/new".into())));
        assert_eq!(split("a/o ld b/n ew"), None);
        assert_eq!(split(""), None);
    }

    #[test]
    fn prefixes_are_recognised() {
        assert_eq!(prefixes("a/x", "b/x"), ("a/", "b/"));
        assert_eq!(prefixes("i/x", "w/x"), ("i/", "w/"));
        assert_eq!(prefixes("x", "x"), ("", ""));
        assert_eq!(prefixes("c/x", "c/x"), ("", ""));
    }

    #[test]
    fn header_paths_stop_at_a_tab_and_know_dev_null() {
        assert_eq!(header_path("a/x y\t").unwrap(), Some("a/x y".into()));
        assert_eq!(
            header_path("x\t2024-01-01 10:00").unwrap(),
            Some("x".into())
        );
        assert_eq!(header_path("/dev/null").unwrap(), None);
        assert_eq!(header_path("a/crlf\r").unwrap(), Some("a/crlf".into()));
        assert!(header_path("").is_err());
    }
}
