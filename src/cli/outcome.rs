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

/// The error and its causes on one line, `step: cause: cause`. Each error says only its own
/// step and leaves the cause to `source()` (crate::error), so each cause is printed once;
/// nothing is dropped because its text happens to appear in an earlier message.
pub(crate) fn render_error(e: &anyhow::Error) -> String {
    crate::error::chain(e.as_ref())
}
