//! How a command ended, which the binary turns into its exit code (0 or 1; an error is 2,
//! printed on one line by [`render_error`]).
//! Every subcommand returns one; this file names no subcommand, so the dependency points
//! one way: subcommands → `outcome.rs`, and `mod.rs` (the dispatch) → subcommands.

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Success,
    VerificationFailed,
}

/// The error and its causes on one line. Library errors often repeat their cause in
/// their own message; a cause already shown is not printed again.
pub(crate) fn render_error(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}
