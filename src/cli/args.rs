//! Flags shared by several commands, each declared once with its help text and resolved
//! once (as ripgrep keeps its flags in one place): the trust root, the report format, and
//! the output path of commands whose `-o` is a file.
//!
//! The trust root is chosen the same way by every command (`sign`, `verify`,
//! `verify-resource`, `policy`, `trust show`, `admission review`, `admission serve`,
//! `verify-bundle`, `sign-bundle`): `--trusted-root`, else `$MANSIGN_TRUSTED_ROOT`, else
//! `$SIGSTORE_TRUSTED_ROOT`, else the root cached by `mansign trust update`, else the
//! public-good root embedded in mansign. Two commands of one shell that disagree about the
//! root would give two verdicts on the same files (issue 27).

use crate::trust::{RootLocation, TrustRoot};
use anyhow::Context;
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `--trusted-root FILE`, the same flag and the same default everywhere.
#[derive(Debug, Clone, Default, Args)]
pub struct TrustRootArg {
    /// Sigstore `trusted_root.json` (Fulcio CAs, Rekor and CT log keys) signatures are
    /// checked against. Default: the file $MANSIGN_TRUSTED_ROOT names, else
    /// $SIGSTORE_TRUSTED_ROOT, else the root cached by `mansign trust update`, else the
    /// public-good root embedded in mansign (`mansign trust show` prints the one in use).
    /// Never the network.
    #[arg(long = "trusted-root", value_name = "FILE")]
    pub trusted_root: Option<PathBuf>,
}

/// Where the trust root of a run comes from, decided before it is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustRootChoice {
    /// `--trusted-root FILE`.
    Flag(PathBuf),
    /// The environment, the cache or the embedded root.
    Default(RootLocation),
}

impl TrustRootChoice {
    /// The file behind the choice (none for the embedded root).
    pub fn file(&self) -> Option<&Path> {
        match self {
            TrustRootChoice::Flag(path) => Some(path),
            TrustRootChoice::Default(location) => location.file(),
        }
    }

    /// Loads the chosen root; errors name the flag or the variable.
    pub fn load(&self) -> anyhow::Result<Arc<TrustRoot>> {
        Ok(Arc::new(match self {
            TrustRootChoice::Flag(path) => TrustRoot::from_file(path)
                .with_context(|| format!("--trusted-root {}", path.display()))?,
            TrustRootChoice::Default(location) => TrustRoot::from_location(location)?,
        }))
    }
}

impl TrustRootArg {
    /// The one place the root is chosen: the flag, else [`TrustRoot::default_location`].
    pub fn choice(&self) -> TrustRootChoice {
        match &self.trusted_root {
            Some(path) => TrustRootChoice::Flag(path.clone()),
            None => TrustRootChoice::Default(TrustRoot::default_location()),
        }
    }

    /// The chosen root, loaded.
    pub fn load(&self) -> anyhow::Result<Arc<TrustRoot>> {
        self.choice().load()
    }
}

/// What a report-printing command prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ReportFormat {
    /// Human-readable text.
    #[default]
    Text,
    /// One JSON object (schema in docs/cli.md).
    Json,
}

/// `-o, --output FORMAT` (also `--format FORMAT`) of the commands whose output is a report:
/// `verify`, `verify-resource`, `policy explain`, `policy test`, `version`. `sign` has `--format` only:
/// its `-o` is where the signed manifests go.
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct ReportFormatArg {
    /// Report format: `-o json` as with kubectl (sign's `-o` is where the signed manifests
    /// go; its format is `--format`). `--format json` works here too.
    #[arg(short = 'o', long = "output", visible_alias = "format", value_enum,
          default_value_t = ReportFormat::Text, value_name = "FORMAT")]
    pub output: ReportFormat,
}

/// Report formats a user may type as `-o` where `-o` is a file: refused, so that `sign -o
/// json` does not quietly write a file named `json`.
const FORMAT_NAMES: [&str; 3] = ["json", "text", "yaml"];

/// The value parser of an `-o PATH` flag: any path but a bare format name (`./json` is a
/// file of that name). `format_flag` says where the format is chosen instead.
pub fn output_path(
    format_flag: &'static str,
) -> impl Fn(&str) -> Result<String, String> + Clone + Send + Sync + 'static {
    move |value: &str| {
        if FORMAT_NAMES.contains(&value) {
            return Err(format!(
                "`{value}` looks like a report format, but -o here is the file the output is \
                 written to; {format_flag} (write `./{value}` for a file of that name)"
            ));
        }
        Ok(value.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_path_that_is_a_format_name_is_refused() {
        let parse = output_path("for a JSON report use --format json");
        for name in ["json", "text", "yaml"] {
            let e = parse(name).unwrap_err();
            assert!(e.contains("--format json"), "{e}");
            assert!(e.contains(&format!("./{name}")), "{e}");
        }
        assert_eq!(parse("./json").unwrap(), "./json");
        assert_eq!(parse("signed/").unwrap(), "signed/");
        assert_eq!(parse("-").unwrap(), "-");
    }
}
