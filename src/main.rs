//! The `mansign` binary: parse arguments, run, map the outcome to an exit code.
#![forbid(unsafe_code)]
fn main() -> std::process::ExitCode {
    mansign::cli::main()
}
