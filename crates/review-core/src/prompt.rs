//! Prompt layering: the system-prompt text appended to the agent's own prompt.
//!
//! Seed 004 builds each pass's prompt from layers — the shared base, the pass's
//! instructions, then one review guide per detected platform — joined with a
//! horizontal rule. This is that join, over texts the caller has already loaded
//! (shipped or overridden; see `review-agent`).
//!
//! Each layer's leading blank lines and trailing whitespace are trimmed (leading
//! indentation is kept: it can be markdown) so the separator is exactly
//! [`LAYER_SEPARATOR`] between layers, and empty layers (an empty override
//! file) are skipped rather than producing two rules in a row.

/// What goes between two layers.
pub const LAYER_SEPARATOR: &str = "\n\n---\n\n";

/// The layered prompt: `base`, then `pass`, then each guide, in order.
pub fn layer_prompt<S: AsRef<str>>(base: &str, pass: &str, guides: &[S]) -> String {
    let layers = [base, pass]
        .into_iter()
        .chain(guides.iter().map(AsRef::as_ref))
        .map(|layer| layer.trim_end().trim_start_matches(['\n', '\r']))
        .filter(|layer| !layer.is_empty());
    let mut prompt = String::new();
    for layer in layers {
        if !prompt.is_empty() {
            prompt.push_str(LAYER_SEPARATOR);
        }
        prompt.push_str(layer);
    }
    if !prompt.is_empty() {
        prompt.push('\n');
    }
    prompt
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_layers_in_order_with_rules() {
        let prompt = layer_prompt(
            "# Base\n",
            "# Detailed pass\n\n",
            &["# Go guide\n", "# React guide"],
        );
        assert_eq!(
            prompt,
            "# Base\n\n---\n\n# Detailed pass\n\n---\n\n# Go guide\n\n---\n\n# React guide\n"
        );
    }

    #[test]
    fn skips_empty_layers_and_keeps_inner_text_verbatim() {
        let prompt = layer_prompt("base\n\n  indented\n", "\n\n", &["", "guide"]);
        assert_eq!(prompt, "base\n\n  indented\n\n---\n\nguide\n");
        assert_eq!(layer_prompt::<&str>("", "", &[]), "");
        assert_eq!(
            layer_prompt("\n    code\n", "", &["x"]),
            "    code\n\n---\n\nx\n"
        );
    }
}
