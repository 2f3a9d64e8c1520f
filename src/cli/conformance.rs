//! `mansign conformance`: the client protocol of the sigstore-conformance suite
//! (github.com/sigstore/sigstore-conformance, `docs/cli_protocol.md`), so the suite can
//! drive mansign as its `ENTRYPOINT`:
//!
//! ```text
//! mansign conformance sign-bundle [--staging] [--in-toto] --identity-token TOKEN --bundle FILE
//!                                 [--trusted-root FILE] [--signing-config FILE] FILE
//! mansign conformance verify-bundle [--staging] --bundle FILE
//!                                   (--certificate-identity ID --certificate-oidc-issuer URL | --key FILE)
//!                                   [--trusted-root FILE] (FILE | sha256:<hex>)
//! ```
//!
//! The suite calls `ENTRYPOINT sign-bundle ...` / `ENTRYPOINT verify-bundle ...`, so both
//! commands are also reachable (hidden) at the top level: the `mansign` binary itself is a
//! valid entrypoint. The suite judges only the exit status: 0 success, 1 the bundle did not
//! verify (the reason on stderr), 2 unusable input. These commands sign and verify *blobs*
//! as standard Sigstore bundles, not manifests; the work is in [`crate::conformance`].

use super::args::TrustRootArg;
use super::outcome::Outcome;
use crate::conformance::{
    BundleArtifact, BundleKey, BundlePayload, BundleServices, BundleVerifier, ExpectedSigner,
    Sha256Digest, SigstoreBundle, sign_bundle,
};
use crate::limits::Limits;
use crate::trust::TrustRoot;
use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const PROTOCOL: &str = "\
Implements the client protocol of the sigstore-conformance suite
(https://github.com/sigstore/sigstore-conformance/blob/main/docs/cli_protocol.md); the
suite can call `mansign sign-bundle ...` / `mansign verify-bundle ...` directly.
Exit codes: 0 success, 1 the bundle did not verify, 2 usage or input error.";

/// `mansign conformance ...`
#[derive(Debug, Args)]
pub struct ConformanceArgs {
    #[command(subcommand)]
    command: ConformanceCommand,
}

#[derive(Debug, Subcommand)]
pub enum ConformanceCommand {
    /// Sign a file keylessly into a Sigstore bundle (needs network: Fulcio, Rekor, TSA).
    #[command(after_help = PROTOCOL)]
    SignBundle(SignBundleArgs),
    /// Verify a Sigstore bundle (v0.1-v0.3) for a file or digest, offline.
    #[command(after_help = PROTOCOL)]
    VerifyBundle(VerifyBundleArgs),
}

/// The same commands at the top level, listed in `--help` (the README verifies release
/// binaries with `mansign verify-bundle`): the conformance suite passes
/// the command name as the entrypoint's first argument.
#[derive(Debug, Subcommand)]
pub enum ProtocolCommand {
    /// Sign a file keylessly into a Sigstore bundle (needs network: Fulcio, Rekor, TSA).
    #[command(after_help = PROTOCOL)]
    SignBundle(SignBundleArgs),
    /// Verify a Sigstore bundle (v0.1-v0.3) for a file or digest, offline.
    #[command(after_help = PROTOCOL)]
    VerifyBundle(VerifyBundleArgs),
}

#[derive(Debug, Args)]
pub struct SignBundleArgs {
    /// Use Sigstore's public-good staging instance (sigstage.dev) instead of production.
    #[arg(long)]
    pub staging: bool,

    /// FILE is an in-toto Statement: sign it as a DSSE envelope (payload type
    /// application/vnd.in-toto+json) instead of a message signature over FILE.
    #[arg(long)]
    pub in_toto: bool,

    /// Raw OIDC identity token (JWT), used as is.
    #[arg(long, value_name = "TOKEN")]
    pub identity_token: String,

    /// Where to write the bundle (JSON); must not exist yet.
    #[arg(long, value_name = "FILE")]
    pub bundle: PathBuf,

    // The new bundle is checked against the trust root (with --staging and no
    // --trusted-root: the embedded staging root).
    #[command(flatten)]
    pub trust: TrustRootArg,

    /// Signing config (v0.2 JSON) naming the Fulcio, Rekor and TSA to use. Default: the
    /// embedded production config (staging config with --staging).
    #[arg(long, value_name = "FILE")]
    pub signing_config: Option<PathBuf>,

    /// The file to sign.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

#[derive(Debug, Args)]
pub struct VerifyBundleArgs {
    /// Use the embedded staging trusted root (ignored when --trusted-root is given).
    #[arg(long)]
    pub staging: bool,

    /// The Sigstore bundle (JSON).
    #[arg(long, value_name = "FILE")]
    pub bundle: PathBuf,

    /// The certificate's SAN (email or URI) must equal this value exactly.
    #[arg(
        long,
        value_name = "IDENTITY",
        requires = "certificate_oidc_issuer",
        required_unless_present = "key",
        conflicts_with = "key"
    )]
    pub certificate_identity: Option<String>,

    /// The certificate's OIDC issuer extension must equal this URL exactly.
    #[arg(
        long,
        value_name = "URL",
        requires = "certificate_identity",
        conflicts_with = "key"
    )]
    pub certificate_oidc_issuer: Option<String>,

    /// PEM public key of a managed-key bundle (the bundle names a key, not a certificate).
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,

    #[command(flatten)]
    pub trust: TrustRootArg,

    /// The artifact: a file path, or `sha256:<64 hex digits>` when no such file exists.
    /// For an in-toto (DSSE) bundle, a subject of the statement.
    #[arg(value_name = "FILE_OR_DIGEST")]
    pub artifact: String,
}

pub fn run(args: ConformanceArgs) -> anyhow::Result<Outcome> {
    run_command(args.command)
}

pub fn run_protocol(command: ProtocolCommand) -> anyhow::Result<Outcome> {
    run_command(match command {
        ProtocolCommand::SignBundle(a) => ConformanceCommand::SignBundle(a),
        ProtocolCommand::VerifyBundle(a) => ConformanceCommand::VerifyBundle(a),
    })
}

fn run_command(command: ConformanceCommand) -> anyhow::Result<Outcome> {
    match command {
        ConformanceCommand::SignBundle(a) => sign(a),
        ConformanceCommand::VerifyBundle(a) => verify(a),
    }
}

/// How the positional argument of `verify-bundle` is read: a path wins; otherwise a
/// `sha256:` digest (the protocol: "a path, or a digest if it is not an existing path").
#[derive(Debug, Clone, PartialEq, Eq)]
enum ArtifactArgument {
    File(PathBuf),
    Digest(Sha256Digest),
}

impl ArtifactArgument {
    fn parse(arg: &str) -> anyhow::Result<Self> {
        let path = Path::new(arg);
        if path.exists() || !arg.contains(':') {
            return Ok(ArtifactArgument::File(path.to_path_buf()));
        }
        let digest = arg
            .parse()
            .with_context(|| format!("{arg:?} is neither an existing file nor a digest"))?;
        Ok(ArtifactArgument::Digest(digest))
    }
}

/// The trust root as every command chooses it, except that `--staging` (an explicit flag)
/// comes before the environment, the cache and the embedded production root.
fn trust_root(trust: &TrustRootArg, staging: bool) -> anyhow::Result<Arc<TrustRoot>> {
    if staging && trust.trusted_root.is_none() {
        return Ok(Arc::new(TrustRoot::staging()?));
    }
    trust.load()
}

fn verify(args: VerifyBundleArgs) -> anyhow::Result<Outcome> {
    let limits = Limits::default();
    let trust = trust_root(&args.trust, args.staging)?;
    let signer = match (
        &args.key,
        args.certificate_identity,
        args.certificate_oidc_issuer,
    ) {
        (Some(path), _, _) => {
            let pem = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read public key {}", path.display()))?;
            ExpectedSigner::Key(BundleKey::from_pem(path.display().to_string(), &pem)?)
        }
        (None, Some(subject), Some(issuer)) => ExpectedSigner::identity(subject, issuer),
        // clap enforces one of the two forms; this is the fallback, not a path users take.
        _ => bail!("give --certificate-identity and --certificate-oidc-issuer, or --key"),
    };
    let bundle = SigstoreBundle::from_file(&args.bundle, &limits)?;
    let artifact = ArtifactArgument::parse(&args.artifact)?;
    let artifact = match &artifact {
        ArtifactArgument::File(path) => BundleArtifact::File(path),
        ArtifactArgument::Digest(digest) => BundleArtifact::Digest(*digest),
    };
    match BundleVerifier::new(&trust)
        .with_limits(limits)
        .verify(&bundle, artifact, &signer)
    {
        Ok(verified) => {
            super::output::print_report(&format!(
                "verified {}: {verified}\n",
                args.bundle.display()
            ))?;
            Ok(Outcome::Success)
        }
        Err(e) if e.is_input_error() => Err(e.into()),
        Err(e) => {
            // The reason first: it is what a reader (and the suite's log) needs.
            eprintln!("verification failed: {}", crate::error::Chain(&e));
            eprintln!(
                "  bundle {}; expected {signer}; trusted root {}",
                args.bundle.display(),
                trust.origin()
            );
            Ok(Outcome::VerificationFailed)
        }
    }
}

fn sign(args: SignBundleArgs) -> anyhow::Result<Outcome> {
    let limits = Limits::default();
    let trust = trust_root(&args.trust, args.staging)?;
    let services = match (&args.signing_config, args.staging) {
        (Some(path), _) => BundleServices::from_signing_config_file(path)?,
        (None, true) => BundleServices::staging()?,
        (None, false) => BundleServices::public_good()?,
    };
    // A blob is hashed as it is read, in constant memory: an artifact of any size (a
    // release binary, a tarball) is signed by its SHA-256, as cosign sign-blob does. An
    // in-toto statement is parsed, so it is read whole, within the input bound.
    let statement;
    let payload = if args.in_toto {
        statement = read_input(&args.file, limits.max_input_bytes)?;
        BundlePayload::InTotoStatement(&statement)
    } else {
        let digest = std::fs::File::open(&args.file)
            .and_then(Sha256Digest::of_reader)
            .with_context(|| format!("cannot read {}", args.file.display()))?;
        BundlePayload::BlobDigest(digest)
    };
    // Before signing, so neither costs a Fulcio certificate and a Rekor entry: an existing
    // bundle is refused, and the temporary file the bundle is written to is created
    // beside it (the directory is writable). The bundle itself appears only complete, by
    // a rename that never replaces a file; on any error the temporary file is removed.
    if args.bundle.symlink_metadata().is_ok() {
        bail!(
            "cannot create bundle {}: it already exists",
            args.bundle.display()
        );
    }
    let dir = super::output::parent_dir(&args.bundle);
    let mut out = tempfile::Builder::new()
        .prefix(".mansign-")
        .suffix(".tmp")
        .tempfile_in(&dir)
        .with_context(|| format!("cannot create bundle {}", args.bundle.display()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let signed = runtime.block_on(sign_bundle(
        &args.identity_token,
        &services,
        payload,
        &trust,
    ));
    let bundle = signed.map_err(|e| anyhow::Error::new(e).context(services.describe()))?;
    out.write_all(bundle.to_json_pretty()?.as_bytes())
        .and_then(|()| out.as_file().sync_all())
        .with_context(|| format!("cannot write bundle {}", args.bundle.display()))?;
    super::output::set_readable(out.path());
    out.persist_noclobber(&args.bundle)
        .map_err(|e| e.error)
        .with_context(|| format!("cannot create bundle {}", args.bundle.display()))?;
    super::output::print_report(&format!(
        "OK: signed {} into {} ({})\n",
        args.file.display(),
        args.bundle.display(),
        bundle.media_type()
    ))?;
    Ok(Outcome::Success)
}

fn read_input(path: &Path, limit: usize) -> anyhow::Result<Vec<u8>> {
    use std::io::Read as _;
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1))
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if bytes.len() > limit {
        bail!("{} is larger than the {limit}-byte limit", path.display());
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn existing_path_is_read_as_a_file_even_if_it_looks_like_a_digest() {
        let dir = tempfile::tempdir().unwrap();
        let name = format!("sha256:{}", "0".repeat(64));
        let path = dir.path().join(&name);
        std::fs::write(&path, b"x").unwrap();
        let arg = path.to_str().unwrap();
        assert_eq!(
            ArtifactArgument::parse(arg).unwrap(),
            ArtifactArgument::File(path.clone())
        );
    }

    #[test]
    fn missing_path_with_sha256_prefix_is_a_digest() {
        let arg = format!("sha256:{}", "ab".repeat(32));
        assert_eq!(
            ArtifactArgument::parse(&arg).unwrap(),
            ArtifactArgument::Digest(Sha256Digest::new([0xab; 32]))
        );
    }

    #[test]
    fn missing_path_with_bad_digest_is_refused() {
        assert!(ArtifactArgument::parse("sha256:xyz").is_err());
    }
}
