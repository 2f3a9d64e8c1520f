//! `mansign generate-key-pair`

use super::outcome::Outcome;
use super::output::{NewFile, write_new_files};
use crate::keys;
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct GenerateKeyPairArgs {
    /// File name prefix: writes PREFIX.key (encrypted private key) and PREFIX.pub.
    #[arg(long, default_value = "cosign", value_name = "PREFIX")]
    pub output_key_prefix: PathBuf,

    /// Overwrite existing key files.
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: GenerateKeyPairArgs) -> anyhow::Result<Outcome> {
    let mut key_path = args.output_key_prefix.clone().into_os_string();
    key_path.push(".key");
    let mut pub_path = args.output_key_prefix.into_os_string();
    pub_path.push(".pub");
    let (key_path, pub_path) = (PathBuf::from(key_path), PathBuf::from(pub_path));
    for p in [&key_path, &pub_path] {
        if p.exists() && !args.force {
            anyhow::bail!("{}: already exists (use --force to overwrite)", p.display());
        }
    }
    let password = super::password::read_new()?;
    let pair = keys::generate_key_pair(password.as_bytes()).context("generating the key pair")?;
    write_new_files(
        &[
            NewFile {
                path: &key_path,
                text: &pair.private_key_pem,
                secret: true,
            },
            NewFile {
                path: &pub_path,
                text: &pair.public_key_pem,
                secret: false,
            },
        ],
        args.force,
    )?;
    eprintln!(
        "Private key written to {}\nPublic key written to {}",
        key_path.display(),
        pub_path.display()
    );
    Ok(Outcome::Success)
}
