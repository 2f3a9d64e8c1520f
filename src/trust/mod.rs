//! Trust roots: which Fulcio CAs, Rekor logs and CT logs a verification trusts.
//!
//! A [`TrustRoot`] is a Sigstore `trusted_root.json` (protobuf-specs `TrustedRoot`),
//! parsed and checked once when it is loaded: every log key must parse, log IDs must be
//! unique, validity windows must be well formed and every CA certificate must be usable as a
//! trust anchor. A root that loads can be shared (`Arc`) by any number of verifications,
//! which never touch the network.
//!
//! Sources:
//! * [`TrustRoot::public_good`]: the snapshot of Sigstore's public-good production root
//!   embedded in `sigstore-trust-root` (offline; it holds the 2021 and 2022 Fulcio roots
//!   and the `rekor.sigstore.dev` key, so old keyless signatures still verify). Snapshots go
//!   stale when Sigstore rotates keys: bump the crate or pass a fresh file.
//! * [`TrustRoot::from_file`] / [`TrustRoot::from_json`]: any `trusted_root.json`, such as a
//!   private Sigstore deployment's or the local test stack's.
//!
//! This module is one of the adapters over the sigstore crates (with `verify/sigstore/adapter.rs`,
//! `signing/sigstore.rs` and `conformance/`, see `docs/design.md`); the crates' types do
//! not appear in its public API.

pub mod update;
mod vouched;

pub use vouched::{DEFAULT_VOUCHED_CERTIFICATES, VouchedStats};
pub(crate) use vouched::{FulcioAuthorities, VouchedCertificate, VouchedCertificates};

use sigstore_crypto::Keyring;
use sigstore_trust_root::{
    SIGSTORE_PRODUCTION_TRUSTED_ROOT, SIGSTORE_STAGING_TRUSTED_ROOT, TrustedRoot,
};
use sigstore_types::{Sha256Hash, SignatureBytes};
use std::fmt;
use std::path::Path;

/// Why a trust root could not be loaded. Every variant names where the root came from.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrustRootError {
    #[error("{origin}: cannot read trusted root")]
    Read {
        origin: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{origin}: not a Sigstore trusted_root.json: {reason}")]
    Parse { origin: String, reason: String },
    #[error("{origin}: unusable trusted root: {reason}")]
    Unusable { origin: String, reason: String },
}

/// Why a root could not be narrowed to a list of CA certificates.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RestrictError {
    #[error("no certificate given")]
    Empty,
    /// The certificate at this position (0-based) is no CA certificate of the root.
    #[error("certificate {} is not a certificate authority of the trust root", .index + 1)]
    NotInRoot { index: usize },
    #[error("cannot rebuild the narrowed trust root: {reason}")]
    Rebuild { reason: String },
}

/// Why a signed entry timestamp did not verify against the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RekorSetError {
    /// The log is unknown, or its key was not valid at the integrated time.
    KeyNotValidAt,
    /// The signature is not the log key's over the payload.
    BadSignature,
}

/// What a member of a trust root is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustMemberKind {
    /// A Fulcio certificate authority.
    CertificateAuthority,
    /// A Rekor transparency log.
    TransparencyLog,
    /// A certificate transparency log (SCTs in Fulcio certificates).
    CtLog,
}

/// One certificate authority or log of a trust root, as `mansign trust show` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustMember {
    pub kind: TrustMemberKind,
    /// A CA's subject (`O=..., CN=...`); empty for logs.
    pub name: String,
    /// The CA's URI or the log's base URL.
    pub url: String,
    /// A log's ID (SHA-256 of its key), raw bytes.
    pub log_id: Option<Vec<u8>>,
    /// Start and end of the validity window (RFC 3339), when the root states them.
    pub valid_from: Option<String>,
    pub valid_until: Option<String>,
}

impl fmt::Display for TrustMember {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use base64::Engine as _;
        match self.kind {
            TrustMemberKind::CertificateAuthority => {
                write!(f, "certificate authority {} ({})", self.name, self.url)?
            }
            TrustMemberKind::TransparencyLog => write!(f, "transparency log {}", self.url)?,
            TrustMemberKind::CtLog => write!(f, "CT log {}", self.url)?,
        }
        if let Some(id) = &self.log_id {
            write!(
                f,
                ", log ID {} (base64 {})",
                hex::encode(id),
                base64::engine::general_purpose::STANDARD.encode(id)
            )?;
        }
        write!(
            f,
            ", valid from {} until {}",
            self.valid_from.as_deref().unwrap_or("(unstated)"),
            self.valid_until.as_deref().unwrap_or("(no end)")
        )
    }
}

/// A parsed and checked Sigstore trust root.
pub struct TrustRoot {
    origin: String,
    root: TrustedRoot,
    verifier: sigstore_verify::Verifier,
    rekor_keys: Keyring,
    /// Certificates whose chain and SCT this root has verified (bounded; see
    /// [`vouched`]).
    vouched: VouchedCertificates,
    /// For a root narrowed by a policy's `keyless.roots`: the certificates it named, as
    /// `subject (valid FROM to UNTIL)` (for the message when a chain does not reach them).
    policy_roots: Option<String>,
}

impl fmt::Debug for TrustRoot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TrustRoot")
            .field("origin", &self.origin)
            .field("tlogs", &self.root.tlogs.len())
            .field(
                "certificate_authorities",
                &self.root.certificate_authorities.len(),
            )
            .field("ctlogs", &self.root.ctlogs.len())
            .finish()
    }
}

/// Where the default trust root of a command-line run comes from
/// ([`TrustRoot::default_location`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RootLocation {
    /// The file an environment variable names.
    Environment {
        var: &'static str,
        path: std::path::PathBuf,
    },
    /// The file `mansign trust update` wrote.
    Cache(std::path::PathBuf),
    /// The public-good root embedded in mansign.
    Embedded,
}

impl RootLocation {
    /// The file behind this location, if any (a server watches it for changes).
    pub fn file(&self) -> Option<&Path> {
        match self {
            RootLocation::Environment { path, .. } | RootLocation::Cache(path) => Some(path),
            RootLocation::Embedded => None,
        }
    }
}

impl std::fmt::Display for RootLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RootLocation::Environment { var, path } => {
                write!(f, "{} (from ${var})", path.display())
            }
            RootLocation::Cache(path) => {
                write!(f, "{} (cached by `mansign trust update`)", path.display())
            }
            RootLocation::Embedded => f.write_str(TrustRoot::PUBLIC_GOOD),
        }
    }
}

impl TrustRoot {
    /// Where this root was loaded from, for messages.
    pub const PUBLIC_GOOD: &'static str = "embedded Sigstore public-good root";

    /// The public-good production root embedded in the binary (no network).
    pub fn public_good() -> Result<Self, TrustRootError> {
        Self::parse(
            Self::PUBLIC_GOOD.to_string(),
            SIGSTORE_PRODUCTION_TRUSTED_ROOT,
        )
    }

    /// Where the embedded staging root came from, for messages.
    pub const STAGING: &'static str = "embedded Sigstore staging root";

    /// The snapshot of Sigstore's public-good *staging* root (`sigstage.dev`) embedded in
    /// `sigstore-trust-root` (offline). Only for signatures made against staging, such as
    /// the sigstore-conformance `--staging` runs; never a default.
    pub fn staging() -> Result<Self, TrustRootError> {
        Self::parse(Self::STAGING.to_string(), SIGSTORE_STAGING_TRUSTED_ROOT)
    }

    /// Loads a `trusted_root.json` file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, TrustRootError> {
        let path = path.as_ref();
        let origin = path.display().to_string();
        let json = std::fs::read_to_string(path).map_err(|source| TrustRootError::Read {
            origin: origin.clone(),
            source,
        })?;
        Self::parse(origin, &json)
    }

    /// Environment variables naming a `trusted_root.json`, first set wins:
    /// `MANSIGN_TRUSTED_ROOT`, then `SIGSTORE_TRUSTED_ROOT` (beside `SIGSTORE_FULCIO_URL`
    /// and `SIGSTORE_REKOR_URL`, which name the services of the same instance).
    pub const ENV_VARS: [&'static str; 2] = ["MANSIGN_TRUSTED_ROOT", "SIGSTORE_TRUSTED_ROOT"];

    /// Where the root a command-line tool uses when none is named comes from: the file a
    /// variable of [`TrustRoot::ENV_VARS`] names, else the file written by `mansign trust
    /// update` ([`update::default_cached_root`], found through `$MANSIGN_TRUST_DIR`,
    /// `$XDG_CACHE_HOME` / `$HOME`) if there is one, else the embedded public-good root.
    /// Reads process state (environment, home directory) but no root; every command of the
    /// CLI decides through this one function (`src/cli/args.rs`).
    pub fn default_location() -> RootLocation {
        for var in Self::ENV_VARS {
            if let Some(path) = std::env::var_os(var).filter(|v| !v.is_empty()) {
                return RootLocation::Environment {
                    var,
                    path: std::path::PathBuf::from(path),
                };
            }
        }
        match update::default_cached_root() {
            Some(path) if path.is_file() => RootLocation::Cache(path),
            _ => RootLocation::Embedded,
        }
    }

    /// Loads the root at `location`.
    pub fn from_location(location: &RootLocation) -> Result<Self, TrustRootError> {
        match location {
            RootLocation::Environment { var, path } => Self::from_file(path).map_err(|e| match e {
                TrustRootError::Read { source, .. } => TrustRootError::Read {
                    origin: format!("{} (from ${var})", path.display()),
                    source,
                },
                other => other,
            }),
            RootLocation::Cache(path) => Self::from_file(path),
            RootLocation::Embedded => Self::public_good(),
        }
    }

    /// The root a command-line tool uses when none is named ([`TrustRoot::default_location`]).
    /// Reads process state (environment, home directory) — the library never calls it on
    /// its own; an embedding program passes its root explicitly. Never touches the network.
    pub fn from_env() -> Result<Self, TrustRootError> {
        Self::from_location(&Self::default_location())
    }

    /// Parses a `trusted_root.json` document held in memory.
    pub fn from_json(json: &str) -> Result<Self, TrustRootError> {
        Self::parse("trusted root JSON".to_string(), json)
    }

    fn parse(origin: String, json: &str) -> Result<Self, TrustRootError> {
        // Roots published before `mediaType` was added (e.g. root-signing's 2023
        // `targets/trusted_root.json`) are otherwise the same v0.1 document.
        let with_media_type;
        let json = match serde_json::from_str::<serde_json::Value>(json) {
            Ok(serde_json::Value::Object(mut m)) if !m.contains_key("mediaType") => {
                m.insert(
                    "mediaType".into(),
                    "application/vnd.dev.sigstore.trustedroot+json;version=0.1".into(),
                );
                with_media_type = serde_json::Value::Object(m).to_string();
                with_media_type.as_str()
            }
            _ => json,
        };
        let root = TrustedRoot::from_json(json).map_err(|e| TrustRootError::Parse {
            origin: origin.clone(),
            reason: e.to_string(),
        })?;
        let unusable = |reason: String| TrustRootError::Unusable {
            origin: origin.clone(),
            reason,
        };
        // A root that trusts nothing would make every keyless verification fail document by
        // document; say what the file is instead.
        if root.certificate_authorities.is_empty() && root.tlogs.is_empty() {
            let looks_like = match serde_json::from_str::<serde_json::Value>(json) {
                Ok(v) if v.get("signed").is_some() && v.get("signatures").is_some() => {
                    "a TUF root.json (to fetch a trusted root over TUF, use `mansign trust \
                     update --tuf-root FILE`)"
                }
                Ok(serde_json::Value::Object(m)) if m.len() <= 1 => "an empty document",
                _ => "something other than a Sigstore trusted_root.json",
            };
            return Err(unusable(format!(
                "it lists no certificate authority and no transparency log: it looks like \
                 {looks_like}"
            )));
        }
        // Verifier::new checks the whole root up front (keys, duplicate log IDs, windows,
        // anchors), so a bad root fails here and not on the first signature.
        let verifier =
            sigstore_verify::Verifier::new(&root).map_err(|e| unusable(e.to_string()))?;
        let rekor_keys = root.rekor_keys().map_err(|e| unusable(e.to_string()))?;
        Ok(TrustRoot {
            origin,
            root,
            verifier,
            rekor_keys,
            vouched: VouchedCertificates::new(DEFAULT_VOUCHED_CERTIFICATES),
            policy_roots: None,
        })
    }

    /// For a root narrowed to a policy's `keyless.roots`
    /// ([`restricted_to_certificates`](Self::restricted_to_certificates)): the certificates
    /// the policy named, each as `subject (valid FROM to UNTIL)`, joined by `; `.
    pub fn policy_roots(&self) -> Option<&str> {
        self.policy_roots.as_deref()
    }

    /// Where the root came from: a file path or [`TrustRoot::PUBLIC_GOOD`].
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Number of Rekor logs, Fulcio CAs and CT logs (for `--help`-style summaries).
    pub fn summary(&self) -> String {
        format!(
            "{} transparency log(s), {} certificate authorit{}, {} CT log(s)",
            self.root.tlogs.len(),
            self.root.certificate_authorities.len(),
            if self.root.certificate_authorities.len() == 1 {
                "y"
            } else {
                "ies"
            },
            self.root.ctlogs.len()
        )
    }

    /// Every certificate authority, transparency log and CT log of the root, in file
    /// order, so an error naming a log ID can be matched against the root in use.
    pub fn members(&self) -> Vec<TrustMember> {
        let window = |v: Option<&sigstore_types::TimeRange>| {
            (
                v.map(|r| r.start.to_string()),
                v.and_then(|r| r.end.map(|e| e.to_string())),
            )
        };
        let mut out = Vec::new();
        for ca in &self.root.certificate_authorities {
            let mut subject = Vec::new();
            if let Some(o) = &ca.subject.organization {
                subject.push(format!("O={o}"));
            }
            if let Some(cn) = &ca.subject.common_name {
                subject.push(format!("CN={cn}"));
            }
            let (valid_from, valid_until) = window(ca.valid_for.as_ref());
            out.push(TrustMember {
                kind: TrustMemberKind::CertificateAuthority,
                name: subject.join(", "),
                url: ca.uri.clone(),
                log_id: None,
                valid_from,
                valid_until,
            });
        }
        let logs = self
            .root
            .tlogs
            .iter()
            .map(|l| {
                (
                    TrustMemberKind::TransparencyLog,
                    &l.base_url,
                    &l.log_id,
                    &l.public_key,
                )
            })
            .chain(self.root.ctlogs.iter().map(|l| {
                (
                    TrustMemberKind::CtLog,
                    &l.base_url,
                    &l.log_id,
                    &l.public_key,
                )
            }));
        for (kind, url, id, key) in logs {
            let (valid_from, valid_until) = window(key.valid_for.as_ref());
            out.push(TrustMember {
                kind,
                name: String::new(),
                url: url.clone(),
                log_id: Some(id.key_id.as_bytes().to_vec()),
                valid_from,
                valid_until,
            });
        }
        out
    }

    /// The sigstore-verify verifier built from this root.
    pub(crate) fn verifier(&self) -> &sigstore_verify::Verifier {
        &self.verifier
    }

    /// Certificates whose chain and SCT this root has already verified.
    pub(crate) fn vouched_certificates(&self) -> &VouchedCertificates {
        &self.vouched
    }

    /// How often a keyless verification under this root skipped a certificate's chain and
    /// SCT because the certificate was already verified (benchmarks, metrics).
    pub fn certificate_cache_stats(&self) -> VouchedStats {
        self.vouched.stats()
    }

    /// The Fulcio authorities whose validity window contains `time` (the same rule
    /// sigstore-verify uses to pick the anchors of a chain check).
    pub(crate) fn fulcio_authorities_at(&self, time: jiff::Timestamp) -> FulcioAuthorities {
        FulcioAuthorities(
            self.root
                .certificate_authorities
                .iter()
                .enumerate()
                .filter(|(_, ca)| ca.valid_for.is_none_or(|w| w.contains(time)))
                .map(|(i, _)| i)
                .collect(),
        )
    }

    /// Checks a signed entry timestamp: `signature` over `payload` by the key of Rekor log
    /// `log_id` (SHA-256 of the log's key, as the trust root lists it), which must have
    /// been valid at `time`.
    pub(crate) fn verify_rekor_set(
        &self,
        log_id: &[u8; 32],
        time: jiff::Timestamp,
        payload: &[u8],
        signature: &[u8],
    ) -> Result<(), RekorSetError> {
        let key = self
            .rekor_keys
            .key_at(&Sha256Hash::new(*log_id), time)
            .ok_or(RekorSetError::KeyNotValidAt)?;
        key.verify(payload, &SignatureBytes::new(signature.to_vec()))
            .map_err(|_| RekorSetError::BadSignature)
    }

    /// Whether a Rekor log with this ID is in the root at all (for error messages).
    pub(crate) fn knows_rekor_log(&self, log_id: &[u8; 32]) -> bool {
        self.rekor_keys.key(&Sha256Hash::new(*log_id)).is_some()
    }

    /// The same root, trusting only what `certificates` (DER) and the authorities under
    /// them vouch for: every certificate authority whose chain holds one of `certificates`
    /// is kept whole, and of the other authorities, the CA certificates issued (name and
    /// signature, transitively) by a certificate kept so far. So a root keeps the
    /// intermediates of the trust root that chain to it, wherever the root lists them
    /// (Sigstore's public-good root lists `sigstore-intermediate` with its root; a root that
    /// lists them as separate authorities works too), and a root with the same name but
    /// another key keeps nothing of them. Every certificate must be a CA certificate of this
    /// root: `Err(i)` names the first one that is not (a migration can narrow what a root
    /// trusts, never add to it). The logs are kept: a bare CA list has no log keys of its
    /// own.
    pub fn restricted_to_certificates(
        &self,
        certificates: &[Vec<u8>],
    ) -> Result<TrustRoot, RestrictError> {
        let in_chain = |ca: &sigstore_trust_root::CertificateAuthority, der: &[u8]| {
            ca.cert_chain
                .certificates
                .iter()
                .any(|c| c.raw_bytes.as_bytes() == der)
        };
        if certificates.is_empty() {
            return Err(RestrictError::Empty);
        }
        if let Some(i) = certificates.iter().position(|der| {
            !self
                .root
                .certificate_authorities
                .iter()
                .any(|ca| in_chain(ca, der))
        }) {
            return Err(RestrictError::NotInRoot { index: i });
        }
        let authorities = &self.root.certificate_authorities;
        // For each authority, which of its certificates are kept.
        let mut kept: Vec<Vec<bool>> = authorities
            .iter()
            .map(|ca| {
                let whole = certificates.iter().any(|der| in_chain(ca, der));
                vec![whole; ca.cert_chain.certificates.len()]
            })
            .collect();
        // Certificates issued by a kept one, until nothing changes (each pass keeps at
        // least one more certificate, so at most one pass per certificate).
        loop {
            let issuers: Vec<&[u8]> = authorities
                .iter()
                .zip(&kept)
                .flat_map(|(ca, k)| {
                    ca.cert_chain
                        .certificates
                        .iter()
                        .zip(k)
                        .filter(|(_, kept)| **kept)
                        .map(|(c, _)| c.raw_bytes.as_bytes())
                })
                .collect();
            let mut changed = false;
            for (ca, k) in authorities.iter().zip(kept.iter_mut()) {
                for (cert, kept) in ca.cert_chain.certificates.iter().zip(k.iter_mut()) {
                    if !*kept
                        && issuers
                            .iter()
                            .any(|issuer| issued_by(cert.raw_bytes.as_bytes(), issuer))
                    {
                        *kept = true;
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        let mut root = self.root.clone();
        root.certificate_authorities = authorities
            .iter()
            .zip(&kept)
            .filter(|(_, k)| k.iter().any(|kept| *kept))
            .map(|(ca, k)| {
                let mut ca = ca.clone();
                let mut keep = k.iter();
                ca.cert_chain
                    .certificates
                    .retain(|_| keep.next().copied().unwrap_or(false));
                ca
            })
            .collect();
        let json = serde_json::to_string(&root).map_err(|e| RestrictError::Rebuild {
            reason: e.to_string(),
        })?;
        let mut narrowed = Self::parse(
            format!(
                "{} (only the certificate authorities of keyless.roots)",
                self.origin
            ),
            &json,
        )
        .map_err(|e| RestrictError::Rebuild {
            reason: e.to_string(),
        })?;
        narrowed.policy_roots = Some(
            certificates
                .iter()
                .map(|der| certificate_summary(der))
                .collect::<Vec<_>>()
                .join("; "),
        );
        Ok(narrowed)
    }

    /// True when `der` (SubjectPublicKeyInfo) is the key of one of the root's Rekor logs.
    pub fn has_rekor_key(&self, der: &[u8]) -> bool {
        self.root
            .tlogs
            .iter()
            .any(|t| t.public_key.raw_bytes.as_bytes() == der)
    }

    /// True when `der` (SubjectPublicKeyInfo) is the key of one of the root's CT logs.
    pub fn has_ctlog_key(&self, der: &[u8]) -> bool {
        self.root
            .ctlogs
            .iter()
            .any(|t| t.public_key.raw_bytes.as_bytes() == der)
    }

    /// Base URLs of the root's Rekor logs.
    pub fn rekor_urls(&self) -> Vec<&str> {
        self.root
            .tlogs
            .iter()
            .map(|t| t.base_url.as_str())
            .collect()
    }

    /// The certificate chains (DER, leaf-most first, as the root lists them) of the Fulcio
    /// authorities whose validity window contains `time`, each with the authority's
    /// position in the root (the index [`FulcioAuthorities`] and [`Self::retired_at`]
    /// use).
    pub(crate) fn fulcio_chains_at(&self, time: jiff::Timestamp) -> Vec<(usize, Vec<&[u8]>)> {
        self.root
            .certificate_authorities
            .iter()
            .enumerate()
            .filter(|(_, ca)| ca.valid_for.is_none_or(|w| w.contains(time)))
            .map(|(i, ca)| {
                let chain = ca.cert_chain.certificates.iter();
                (i, chain.map(|c| c.raw_bytes.as_bytes()).collect())
            })
            .collect()
    }

    /// When the Fulcio authority at position `authority` stopped issuing, as this root
    /// says it: `None` while its `validFor` window is open (it is a current authority);
    /// otherwise the earlier of its window's end and the start of the first authority whose
    /// window starts after its own (its successor). The legacy `rekord` path accepts a
    /// certificate without an embedded SCT only if it chains to a retired authority and was
    /// logged before this time (`verify::sigstore::legacy_rekord`, docs/compatibility.md).
    pub(crate) fn retired_at(&self, authority: usize) -> Option<jiff::Timestamp> {
        let cas = &self.root.certificate_authorities;
        let window = cas.get(authority)?.valid_for?;
        let end = window.end?;
        let successor = cas
            .iter()
            .filter_map(|ca| ca.valid_for.map(|w| w.start))
            .filter(|start| *start > window.start)
            .min();
        Some(successor.map_or(end, |s| s.min(end)))
    }

    /// DER of every Fulcio CA certificate whose authority was valid at `time`. Each one
    /// is a trust anchor: Sigstore ships intermediates as anchors too (sigstore-verify
    /// does the same).
    pub(crate) fn fulcio_certificates_at(&self, time: jiff::Timestamp) -> Vec<&[u8]> {
        self.root
            .certificate_authorities
            .iter()
            .filter(|ca| ca.valid_for.is_none_or(|w| w.contains(time)))
            .flat_map(|ca| ca.cert_chain.certificates.iter())
            .map(|c| c.raw_bytes.as_bytes())
            .collect()
    }
}

/// `subject (valid FROM to UNTIL)` of a certificate (DER), dates as `YYYY-MM-DD`; an
/// unreadable one is `(an unreadable certificate)`.
pub(crate) fn certificate_summary(der: &[u8]) -> String {
    use x509_cert::der::Decode as _;
    let Ok(cert) = x509_cert::Certificate::from_der(der) else {
        return "(an unreadable certificate)".into();
    };
    let tbs = &cert.tbs_certificate;
    let day = |t: x509_cert::time::Time| {
        i64::try_from(t.to_unix_duration().as_secs())
            .ok()
            .and_then(|s| jiff::Timestamp::from_second(s).ok())
            .map(|t| t.strftime("%Y-%m-%d").to_string())
            .unwrap_or_else(|| "?".into())
    };
    format!(
        "{} (valid {} to {})",
        tbs.subject,
        day(tbs.validity.not_before),
        day(tbs.validity.not_after)
    )
}

/// True when the CA certificate `child` (DER) was issued by `issuer` (DER): `child`'s
/// issuer name is `issuer`'s subject and `child`'s signature (ECDSA with SHA-256 or
/// SHA-384, what Fulcio CAs use) verifies under `issuer`'s key. Anything unreadable or of
/// another algorithm is not issued by it (the certificate is then not kept).
fn issued_by(child: &[u8], issuer: &[u8]) -> bool {
    use sigstore_crypto::{KeyAlgorithm, SigningScheme, VerificationKey};
    use x509_cert::der::{Decode as _, Encode as _};
    let (Ok(child), Ok(issuer)) = (
        x509_cert::Certificate::from_der(child),
        x509_cert::Certificate::from_der(issuer),
    ) else {
        return false;
    };
    if child.tbs_certificate.issuer != issuer.tbs_certificate.subject {
        return false;
    }
    let (Ok(tbs), Ok(spki), Some(signature)) = (
        child.tbs_certificate.to_der(),
        issuer.tbs_certificate.subject_public_key_info.to_der(),
        child.signature.as_bytes(),
    ) else {
        return false;
    };
    let spki = sigstore_types::DerPublicKey::new(spki);
    let Ok(key) = VerificationKey::from_spki(&spki) else {
        return false;
    };
    // ecdsa-with-SHA256, ecdsa-with-SHA384 (RFC 5758)
    let sha384 = match child.signature_algorithm.oid.to_string().as_str() {
        "1.2.840.10045.4.3.2" => false,
        "1.2.840.10045.4.3.3" => true,
        _ => return false,
    };
    let scheme = match (key.scheme().key_algorithm(), sha384) {
        (KeyAlgorithm::EcdsaP256, false) => SigningScheme::EcdsaP256Sha256,
        (KeyAlgorithm::EcdsaP256, true) => SigningScheme::EcdsaP256Sha384,
        (KeyAlgorithm::EcdsaP384, false) => SigningScheme::EcdsaP384Sha256,
        (KeyAlgorithm::EcdsaP384, true) => SigningScheme::EcdsaP384Sha384,
        _ => return false,
    };
    VerificationKey::from_spki_with_scheme(&spki, scheme)
        .and_then(|key| key.verify(&tbs, &SignatureBytes::new(signature.to_vec())))
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An embedded root: it loads without network and names itself.
    fn assert_embedded_root_loads(root: Result<TrustRoot, TrustRootError>, origin: &str) {
        assert_eq!(root.unwrap().origin(), origin);
    }

    #[test]
    fn public_good_root_loads_offline() {
        assert_embedded_root_loads(TrustRoot::public_good(), TrustRoot::PUBLIC_GOOD);
    }

    #[test]
    fn public_good_root_trusts_rekor_sigstore_dev_since_2021() {
        let root = TrustRoot::public_good().unwrap();
        let mut id = [0u8; 32];
        hex::decode_to_slice(
            "c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d",
            &mut id,
        )
        .unwrap();
        let sept_2021 = jiff::Timestamp::from_second(1_631_694_290).unwrap();
        assert!(root.knows_rekor_log(&id));
        assert_eq!(
            root.verify_rekor_set(&id, sept_2021, b"payload", b"not a signature"),
            Err(RekorSetError::BadSignature)
        );
        let before_rekor = jiff::Timestamp::from_second(1_500_000_000).unwrap();
        assert_eq!(
            root.verify_rekor_set(&id, before_rekor, b"payload", b"x"),
            Err(RekorSetError::KeyNotValidAt)
        );
        assert_eq!(root.fulcio_certificates_at(sept_2021).len(), 1);
    }

    #[test]
    fn root_without_media_type_loads_as_v0_1() {
        let mut v: serde_json::Value =
            serde_json::from_str(SIGSTORE_PRODUCTION_TRUSTED_ROOT).unwrap();
        v.as_object_mut().unwrap().remove("mediaType");
        let root = TrustRoot::from_json(&v.to_string()).unwrap();
        assert!(root.summary().contains("transparency log"));
    }

    #[test]
    fn kyverno_fixture_root_without_media_type_loads() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/testdata/kyverno/trust-root/sigstore-public-trusted_root.json"
        );
        TrustRoot::from_file(path).unwrap();
    }

    #[test]
    fn a_root_that_trusts_nothing_is_refused_saying_what_it_looks_like() {
        let err = TrustRoot::from_json("{}").unwrap_err().to_string();
        assert!(
            err.contains("no certificate authority and no transparency log"),
            "{err}"
        );
        assert!(err.contains("an empty document"), "{err}");
        let tuf = r#"{"signed": {"_type": "root", "version": 1}, "signatures": []}"#;
        let err = TrustRoot::from_json(tuf).unwrap_err().to_string();
        assert!(err.contains("a TUF root.json"), "{err}");
    }

    #[test]
    fn staging_root_loads_offline() {
        assert_embedded_root_loads(TrustRoot::staging(), TrustRoot::STAGING);
    }

    #[test]
    fn trust_root_can_be_shared_across_threads() {
        fn shareable<T: Send + Sync>() {}
        shareable::<TrustRoot>();
    }

    /// The error of `result`, once its message is seen to start with `start`.
    fn refusal_starting(result: Result<TrustRoot, TrustRootError>, start: &str) -> TrustRootError {
        let err = result.unwrap_err();
        assert!(err.to_string().starts_with(start), "{err}");
        err
    }

    #[test]
    fn missing_file_error_names_the_file() {
        let path = "/nonexistent/trusted_root.json";
        let start = format!("{path}: cannot read trusted root");
        let err = refusal_starting(TrustRoot::from_file(path), &start);
        assert!(matches!(err, TrustRootError::Read { .. }));
    }

    #[test]
    fn malformed_json_error_names_the_origin() {
        let start = "trusted root JSON: not a Sigstore";
        let err = refusal_starting(TrustRoot::from_json("{"), start);
        assert!(matches!(err, TrustRootError::Parse { .. }));
    }

    #[test]
    fn root_with_bad_log_key_is_unusable() {
        let json = r#"{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1",
            "tlogs":[{"baseUrl":"https://x","hashAlgorithm":"SHA2_256",
              "publicKey":{"rawBytes":"AAAA","keyDetails":"PKIX_ECDSA_P256_SHA_256",
                           "validFor":{"start":"2021-01-01T00:00:00Z"}},
              "logId":{"keyId":"wNI9atQGlz+VWfO6LRygH4QUfY/8W4RFwiT5i5WRgB0="}}]}"#;
        let err = TrustRoot::from_json(json).unwrap_err();
        assert!(matches!(err, TrustRootError::Unusable { .. }), "{err}");
    }

    fn ca_certificates(root: &TrustRoot) -> Vec<Vec<Vec<u8>>> {
        root.root
            .certificate_authorities
            .iter()
            .map(|ca| {
                ca.cert_chain
                    .certificates
                    .iter()
                    .map(|c| c.raw_bytes.as_bytes().to_vec())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn restricting_to_a_ca_certificate_keeps_only_its_authority_and_the_logs() {
        let root = TrustRoot::public_good().unwrap();
        let cas = ca_certificates(&root);
        assert!(cas.len() >= 2);
        let narrowed = root
            .restricted_to_certificates(&[cas[0][0].clone()])
            .unwrap();
        assert_eq!(ca_certificates(&narrowed), vec![cas[0].clone()]);
        assert_eq!(narrowed.root.tlogs.len(), root.root.tlogs.len());
        assert_eq!(narrowed.root.ctlogs.len(), root.root.ctlogs.len());
        assert!(narrowed.origin().contains("keyless.roots"));
    }

    /// The public-good root with every CA certificate as its own authority (same window):
    /// the 2022 intermediate is then not in the chain of its root's authority.
    fn split_public_good() -> TrustRoot {
        let mut json: serde_json::Value =
            serde_json::from_str(SIGSTORE_PRODUCTION_TRUSTED_ROOT).unwrap();
        let mut split = Vec::new();
        for ca in json["certificateAuthorities"].as_array().unwrap() {
            for cert in ca["certChain"]["certificates"].as_array().unwrap() {
                let mut one = ca.clone();
                one["certChain"]["certificates"] = serde_json::json!([cert]);
                split.push(one);
            }
        }
        json["certificateAuthorities"] = serde_json::Value::Array(split);
        TrustRoot::from_json(&json.to_string()).unwrap()
    }

    #[test]
    fn restricting_to_a_root_keeps_the_intermediates_it_issued() {
        // Issue 21, item 9: [2021 root], [2022 intermediate], [2022 root].
        let root = split_public_good();
        let cas = ca_certificates(&root);
        assert_eq!(cas.len(), 3);
        let (root_2021, intermediate, root_2022) =
            (cas[0][0].clone(), cas[1][0].clone(), cas[2][0].clone());
        assert!(issued_by(&intermediate, &root_2022));
        let narrowed = root
            .restricted_to_certificates(std::slice::from_ref(&root_2022))
            .unwrap();
        assert_eq!(
            ca_certificates(&narrowed),
            vec![vec![intermediate.clone()], vec![root_2022.clone()]]
        );
        // The 2021 root has the same name (O=sigstore.dev, CN=sigstore) but another key:
        // the 2022 intermediate is not under it.
        assert!(!issued_by(&intermediate, &root_2021));
        let narrowed = root
            .restricted_to_certificates(std::slice::from_ref(&root_2021))
            .unwrap();
        assert_eq!(ca_certificates(&narrowed), vec![vec![root_2021]]);
        // Listing the intermediate keeps it alone (nothing it issued is a CA here).
        let narrowed = root
            .restricted_to_certificates(std::slice::from_ref(&intermediate))
            .unwrap();
        assert_eq!(ca_certificates(&narrowed), vec![vec![intermediate]]);
    }

    #[test]
    fn restricting_to_a_certificate_outside_the_root_is_refused() {
        let root = TrustRoot::public_good().unwrap();
        let staging = TrustRoot::staging().unwrap();
        let foreign = ca_certificates(&staging).remove(0).remove(0);
        let known = ca_certificates(&root).remove(0).remove(0);
        assert_eq!(
            root.restricted_to_certificates(&[known, foreign])
                .unwrap_err(),
            RestrictError::NotInRoot { index: 1 }
        );
        assert_eq!(
            root.restricted_to_certificates(&[]).unwrap_err(),
            RestrictError::Empty
        );
    }

    #[test]
    fn log_keys_of_the_root_are_recognised() {
        let root = TrustRoot::public_good().unwrap();
        let rekor = root.root.tlogs[0].public_key.raw_bytes.as_bytes().to_vec();
        let ct = root.root.ctlogs[0].public_key.raw_bytes.as_bytes().to_vec();
        assert!(root.has_rekor_key(&rekor) && !root.has_rekor_key(&ct));
        assert!(root.has_ctlog_key(&ct) && !root.has_ctlog_key(&rekor));
        assert!(root.rekor_urls().contains(&"https://rekor.sigstore.dev"));
    }
}
