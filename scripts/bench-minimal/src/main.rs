//! An empty program: the start cost of any Rust binary built with mansign's release profile
//! (`scripts/bench.sh` compares `mansign --version` with it).
fn main() {}
