//! `mansign trust update`: refresh a cached `trusted_root.json` over TUF.
//!
//! The TUF client (sigstore-tuf through sigstore-trust-root) walks root → timestamp →
//! snapshot → targets from a bootstrap root the caller trusts (the embedded public-good
//! TUF root by default, or a `root.json` file for a private instance) and returns the
//! `trusted_root.json` target only if every signature, version, expiry, length and hash
//! checks out. The result is parsed as a [`TrustRoot`] before it replaces the cached file
//! (atomically), so a refresh can never leave a broken root behind. This runs only when
//! asked: verification reads the cached file and never touches the network.

use super::{TrustRoot, TrustRootError};
use sigstore_trust_root::{TrustedRoot, TufBootstrap, TufConfig};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Why a refresh failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrustUpdateError {
    #[error("{path}: cannot read TUF root")]
    ReadRoot {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("TUF update from {url} failed: {reason}")]
    Tuf { url: String, reason: String },
    #[error(transparent)]
    Invalid(#[from] TrustRootError),
    #[error("{path}: cannot write")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Where to refresh from.
#[derive(Debug, Clone, Default)]
pub struct TufSource {
    /// Repository URL; `None` = Sigstore public-good.
    pub url: Option<String>,
    /// Bootstrap `root.json`; `None` = the embedded public-good TUF root.
    pub root: Option<PathBuf>,
    /// TUF metadata cache; `None` = no metadata cache (fetch everything).
    pub cache_dir: Option<PathBuf>,
}

/// The default location of the cached trust root: `$MANSIGN_TRUST_DIR`, else
/// `$XDG_CACHE_HOME/mansign`, else `$HOME/.cache/mansign`; file `trusted_root.json`.
pub fn default_cached_root() -> Option<PathBuf> {
    let dir = std::env::var_os("MANSIGN_TRUST_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("mansign")))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/mansign")))?;
    Some(dir.join("trusted_root.json"))
}

/// Fetches `trusted_root.json` over TUF, checks it, and writes it to `output` atomically.
/// Returns the loaded root.
pub fn update(source: &TufSource, output: &Path) -> Result<TrustRoot, TrustUpdateError> {
    let url = source.url.clone().unwrap_or_else(|| {
        sigstore_trust_root::SigstoreInstance::PublicGood
            .tuf_url()
            .to_string()
    });
    let tuf_err = |reason: String| TrustUpdateError::Tuf {
        url: url.clone(),
        reason,
    };
    let mut config = match &source.root {
        Some(path) => {
            let bytes = std::fs::read(path).map_err(|source| TrustUpdateError::ReadRoot {
                path: path.clone(),
                source,
            })?;
            TufConfig::custom(url.clone(), TufBootstrap::trusted(bytes))
        }
        None if source.url.is_none() => TufConfig::production(),
        None => {
            return Err(tuf_err(
                "a custom TUF repository needs its bootstrap root.json (--tuf-root)".into(),
            ));
        }
    };
    config = match &source.cache_dir {
        Some(dir) => config.with_cache_dir(dir.clone()),
        None => config.without_cache(),
    };
    // Timeouts: a slow mirror must not hang the refresh forever (slow-retrieval attack).
    let client = sigstore_trust_root::reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| tuf_err(e.to_string()))?;
    config = config.with_http_client(client);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| tuf_err(e.to_string()))?;
    let fetched = runtime
        .block_on(TrustedRoot::from_tuf(config))
        .map_err(|e| tuf_err(e.to_string()))?;
    let json = serde_json::to_string_pretty(&fetched).map_err(|e| tuf_err(e.to_string()))?;
    // Same checks as any root loaded for verification, before anything is written.
    let root = TrustRoot::parse(output.display().to_string(), &json)?;
    write_atomically(output, json.as_bytes())?;
    Ok(root)
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), TrustUpdateError> {
    let err = |source| TrustUpdateError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(err)?;
    let mut tmp = tempfile::NamedTempFile::new_in(&dir).map_err(err)?;
    tmp.write_all(bytes).map_err(err)?;
    tmp.as_file().sync_all().map_err(err)?;
    // tempfile creates 0600; a trust root is public and may be read by another user
    // (an admission webhook sharing MANSIGN_TRUST_DIR).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))
            .map_err(err)?;
    }
    tmp.persist(path).map_err(|e| err(e.error))?;
    Ok(())
}
