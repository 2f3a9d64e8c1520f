//! Where an identity token came from ([`TokenSource`], printed with `--verbose`). Shared by
//! the token sources (`token.rs`, `sign_in/`); imports nothing from them.

use std::fmt;
use std::path::PathBuf;

/// Environment variable holding a ready token.
pub const SIGSTORE_ID_TOKEN: &str = "SIGSTORE_ID_TOKEN";

/// A CI system found by ambient detection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CiProvider {
    GitLab,
    Buildkite,
    CircleCi,
    /// Detected by `ambient-id` but not recognised from the environment here.
    Other,
}

impl fmt::Display for CiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CiProvider::GitLab => "GitLab CI",
            CiProvider::Buildkite => "Buildkite",
            CiProvider::CircleCi => "CircleCI",
            CiProvider::Other => "ambient CI credentials",
        })
    }
}

/// Where the identity token came from (printed with `--verbose`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    /// `--identity-token TOKEN`
    Argument,
    /// `--identity-token @FILE`
    File(PathBuf),
    /// The `SIGSTORE_ID_TOKEN` environment variable.
    Environment,
    /// The GitHub Actions token endpoint.
    GitHubActions,
    /// Another CI system's ambient credentials.
    Ci(CiProvider),
    /// Browser sign-in (authorization code + PKCE) at this issuer.
    Browser { issuer: String },
    /// Device sign-in (RFC 8628) at this issuer.
    Device { issuer: String },
}

impl fmt::Display for TokenSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenSource::Argument => f.write_str("--identity-token"),
            TokenSource::File(p) => write!(f, "--identity-token @{}", p.display()),
            TokenSource::Environment => f.write_str(SIGSTORE_ID_TOKEN),
            TokenSource::GitHubActions => f.write_str("GitHub Actions"),
            TokenSource::Ci(p) => write!(f, "{p}"),
            TokenSource::Browser { issuer } => write!(f, "browser sign-in at {issuer}"),
            TokenSource::Device { issuer } => write!(f, "device sign-in at {issuer}"),
        }
    }
}
