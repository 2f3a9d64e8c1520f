//! Key passwords: `COSIGN_PASSWORD`, else a prompt on a terminal (like cosign).

use anyhow::{Context, bail};
use std::io::IsTerminal;
use zeroize::Zeroizing;

/// The password for an existing key.
pub fn read(prompt: &str) -> anyhow::Result<Zeroizing<String>> {
    if let Ok(p) = std::env::var("COSIGN_PASSWORD") {
        return Ok(Zeroizing::new(p));
    }
    if !std::io::stdin().is_terminal() {
        bail!("no password: set COSIGN_PASSWORD (it may be empty) or run on a terminal");
    }
    Ok(Zeroizing::new(
        rpassword::prompt_password(prompt).context("reading the password")?,
    ))
}

/// A new password, asked twice on a terminal.
pub fn read_new() -> anyhow::Result<Zeroizing<String>> {
    if let Ok(p) = std::env::var("COSIGN_PASSWORD") {
        return Ok(Zeroizing::new(p));
    }
    if !std::io::stdin().is_terminal() {
        bail!("no password: set COSIGN_PASSWORD (it may be empty) or run on a terminal");
    }
    let a = Zeroizing::new(rpassword::prompt_password(
        "Enter password for private key: ",
    )?);
    let b = Zeroizing::new(rpassword::prompt_password(
        "Enter password for private key again: ",
    )?);
    if a != b {
        bail!("passwords do not match");
    }
    Ok(a)
}
