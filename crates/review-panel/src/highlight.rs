//! Syntax highlighting with syntect: CSS classes (not inline styles, which the
//! page's Content-Security-Policy forbids), one light and one dark theme chosen
//! by `prefers-color-scheme`. Syntect's default grammars load once, on first use.
//!
//! The default grammars have no TypeScript; `ts`/`tsx` use JavaScript's, which
//! colours the shared syntax well enough to read.

use std::sync::OnceLock;

use syntect::highlighting::ThemeSet;
use syntect::html::{ClassStyle, ClassedHTMLGenerator, css_for_theme_with_class_style};
use syntect::parsing::{SyntaxReference, SyntaxSet};
use syntect::util::LinesWithEndings;

/// Every highlighting class starts with this, so review content cannot collide with the page's own classes.
const CLASS_STYLE: ClassStyle = ClassStyle::SpacedPrefixed { prefix: "hl-" };

/// Files past this size are shown without colours (highlighting is linear but not fast).
const MAX_HIGHLIGHTED_BYTES: usize = 512 * 1024;

fn syntaxes() -> &'static SyntaxSet {
    static SYNTAXES: OnceLock<SyntaxSet> = OnceLock::new();
    SYNTAXES.get_or_init(SyntaxSet::load_defaults_newlines)
}

/// Loads the grammars now rather than on the first review.
pub fn warm_up() {
    let _ = syntaxes();
}

/// The stylesheet for highlighted code: light by default, dark under
/// `prefers-color-scheme: dark`.
pub fn stylesheet() -> &'static str {
    static CSS: OnceLock<String> = OnceLock::new();
    CSS.get_or_init(|| {
        let themes = ThemeSet::load_defaults();
        let light = css_for_theme_with_class_style(&themes.themes["InspiredGitHub"], CLASS_STYLE)
            .unwrap_or_default();
        let dark = css_for_theme_with_class_style(&themes.themes["base16-ocean.dark"], CLASS_STYLE)
            .unwrap_or_default();
        format!("{light}\n@media (prefers-color-scheme: dark) {{\n{dark}\n}}\n")
    })
}

/// Maps names syntect lacks to a close relative.
fn alias(token: &str) -> &str {
    match token.to_ascii_lowercase().as_str() {
        "ts" | "tsx" | "mts" | "cts" | "typescript" | "jsx" | "mjs" | "cjs" => "js",
        "toml" | "ini" | "cfg" => "ini",
        "shell" | "zsh" => "sh",
        _ => token,
    }
}

fn syntax_for_token(token: &str) -> Option<&'static SyntaxReference> {
    let set = syntaxes();
    let token = alias(token);
    set.find_syntax_by_token(token)
        .or_else(|| set.find_syntax_by_extension(token))
}

fn syntax_for_file(path: &str, text: &str) -> &'static SyntaxReference {
    let set = syntaxes();
    let name = path.rsplit('/').next().unwrap_or(path);
    let extension = name
        .rsplit_once('.')
        .map_or(name, |(_, extension)| extension);
    syntax_for_token(extension)
        .or_else(|| set.find_syntax_by_first_line(text.lines().next().unwrap_or("")))
        .unwrap_or_else(|| set.find_syntax_plain_text())
}

/// Highlighted HTML for `code` in `syntax` (escaped plain text when unknown or too large).
fn highlight(syntax: &'static SyntaxReference, code: &str) -> String {
    if code.len() > MAX_HIGHLIGHTED_BYTES {
        return escape(code);
    }
    let mut generator = ClassedHTMLGenerator::new_with_class_style(syntax, syntaxes(), CLASS_STYLE);
    for line in LinesWithEndings::from(code) {
        if generator
            .parse_html_for_line_which_includes_newline(line)
            .is_err()
        {
            return escape(code);
        }
    }
    generator.finalize()
}

/// Highlighted HTML for a fenced code block whose info string names `language`.
pub fn highlight_code(language: Option<&str>, code: &str) -> String {
    match language.and_then(syntax_for_token) {
        Some(syntax) => highlight(syntax, code),
        None => escape(code),
    }
}

/// Highlighted HTML for a whole file, chosen by its name or first line.
pub fn highlight_file(path: &str, text: &str) -> String {
    highlight(syntax_for_file(path, text), text)
}

/// HTML-escapes text.
pub fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len() + text.len() / 8);
    for character in text.chars() {
        match character {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            other => escaped.push(other),
        }
    }
    escaped
}

/// Comrak's highlighter plugin backed by the functions above.
pub struct Highlighter;

impl comrak::adapters::SyntaxHighlighterAdapter for Highlighter {
    fn write_highlighted(
        &self,
        output: &mut dyn std::fmt::Write,
        lang: Option<&str>,
        code: &str,
    ) -> std::fmt::Result {
        output.write_str(&highlight_code(lang, code))
    }

    fn write_pre_tag(
        &self,
        output: &mut dyn std::fmt::Write,
        _attributes: std::collections::HashMap<&'static str, std::borrow::Cow<'_, str>>,
    ) -> std::fmt::Result {
        output.write_str("<pre class=\"code\">")
    }

    fn write_code_tag(
        &self,
        output: &mut dyn std::fmt::Write,
        attributes: std::collections::HashMap<&'static str, std::borrow::Cow<'_, str>>,
    ) -> std::fmt::Result {
        // Comrak gives `class="language-…"` from the info string: keep it, escaped.
        match attributes.get("class") {
            Some(class) => write!(output, "<code class=\"{}\">", escape(class)),
            None => output.write_str("<code>"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_is_highlighted_with_classes_and_escaped() {
        let html = highlight_code(Some("rust"), "fn main() { let x = \"<b>\"; }\n");
        assert!(html.contains("class=\"hl-"), "{html}");
        assert!(html.contains("&lt;b&gt;"), "{html}");
        assert!(!html.contains("style="), "{html}");
        assert_eq!(highlight_code(Some("no-such-language"), "<x>"), "&lt;x&gt;");
        assert!(highlight_file("src/auth.ts", "const a = 1;\n").contains("hl-"));
    }

    #[test]
    fn the_stylesheet_has_both_schemes() {
        let css = stylesheet();
        assert!(css.contains(".hl-"));
        assert!(css.contains("prefers-color-scheme: dark"));
    }
}
