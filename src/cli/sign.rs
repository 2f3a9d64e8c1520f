//! `mansign sign`
//!
//! Key-based with `--key`, keyless otherwise: an OIDC identity token (flag, environment,
//! CI, or an interactive sign-in) buys one Fulcio certificate for the run, and every
//! signature is logged in Rekor. Nothing is written until every signature exists (and,
//! with a trust root, verified); inputs are removed (`--remove-input`) only after every
//! output was written.
//!
//! The run is the library's ([`crate::signing::tree`]): its first pass reads every input
//! and decides the outputs before a token is spent (the keyless signer is made after it);
//! its second signs, verifies and stages them window by window, so a tree of 100,000 files
//! is never in memory at once. This file turns flags into a [`SignTree`] and prints the
//! report (`sign_report.rs`).

use super::args::{ReportFormat, TrustRootArg, output_path};
use super::outcome::Outcome;
use crate::annotations::AnnotationDomain;
use crate::conformance::{
    BundleArtifact, BundleKey, BundleVerifier, ExpectedSigner, SigstoreBundle,
};
use crate::limits::Limits;
use crate::manifest::InputSelection;
use crate::signing::sign_in::{DEFAULT_OIDC_CLIENT_ID, DEFAULT_OIDC_ISSUER};
use crate::signing::token::{DEFAULT_AUDIENCE, acquire_token_blocking};
use crate::signing::tree::{
    BoxedCause, BundleCheck, BundleSigner, RunSigner, SignTree, TreeOutput, refuse_tree_beside,
};
use crate::signing::{
    AmbientEnvironment, DEFAULT_FULCIO_URL, DEFAULT_REKOR_URL, KeySigner, KeylessOptions,
    KeylessSigner, RekorOptions, RetryObserver, Secret, SignInOptions, SignInPrompt, SignOptions,
    SignScope, TlogUploadingSigner, TokenOptions,
};
use crate::trust::TrustRoot;
use anyhow::{Context, bail};
use clap::Args;
use clap::builder::TypedValueParser as _;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Debug, Args)]
pub struct SignArgs {
    /// Manifest file, directory (recursive: every .yaml, .yml and .json file, hidden ones
    /// included, as `kubectl apply -R` reads them; any other file in it is an error unless
    /// excluded), glob pattern (`"unsigned/*.yaml"`) or `-` for stdin. Repeatable, and
    /// several paths may follow one `-f` (an unquoted glob expanded by the shell).
    #[arg(short = 'f', long = "filename", value_name = "PATH", num_args = 1..,
          required_unless_present = "paths")]
    pub inputs: Vec<PathBuf>,

    /// Paths without `-f` (`mansign sign unsigned/ -o signed/`), read as `-f` reads them.
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Leave out files or directories below a directory argument, matched as .gitignore
    /// patterns are: without a `/`, a name at any depth (`*.md`, `README.md`); with a
    /// leading or inner `/`, from the argument down (`/kustomization.yaml`, `docs/**`); a
    /// trailing `/` for directories only (`generated/`). Repeatable.
    #[arg(long = "exclude", value_name = "GLOB")]
    pub exclude: Vec<String>,

    /// Accepted for kubectl's habit (`kubectl apply -R -f DIR`) and changes nothing:
    /// directories are always read recursively.
    #[arg(short = 'R', long = "recursive")]
    pub recursive: bool,

    /// Where the signed manifests go (verify's `-o` is its report format; here that is
    /// `--format`): a file, a directory (`DIR/`, created; each file keeps its path below
    /// its directory argument or below the fixed part of its glob pattern, a file argument
    /// its name) or `-` for stdout. Default, for one input file only: `<input>.signed`
    /// beside it (kubectl-sigstore's default), stdout for stdin; a directory, several
    /// inputs or a glob pattern matching several files need `-o` (`-o signed/`).
    #[arg(short = 'o', long = "output", value_name = "PATH",
          value_parser = output_path("for a JSON report use --format json"))]
    pub output: Option<String>,

    /// cosign private key file (`ENCRYPTED SIGSTORE/COSIGN PRIVATE KEY`). Password from
    /// COSIGN_PASSWORD, else a prompt on a terminal. Without --key, signing is keyless.
    #[arg(short = 'k', long = "key", value_name = "FILE")]
    pub key: Option<PathBuf>,

    /// What one signature covers: each document on its own, or the whole file
    /// (kubectl-sigstore's shape: one message, the same annotations on every document).
    #[arg(long, default_value_t = SignScope::Document, value_name = "SCOPE",
          value_parser = clap::builder::PossibleValuesParser::new(["document", "file"])
              .map(|s| s.parse::<SignScope>().unwrap_or_default()))]
    pub scope: SignScope,

    /// Add a further signature set (`signature_N`...) to already signed manifests instead
    /// of replacing existing signatures. The message must be unchanged.
    #[arg(short = 'A', long)]
    pub append: bool,

    /// Signed expiry: a duration (`90s`, `30m`, `4h`, `7d`), a date (`2026-12-31`: the end
    /// of that day, UTC) or an RFC 3339 time. Written
    /// into each document as `mansign.dev/expires` before signing; verification rejects
    /// the document after that time.
    #[arg(long, value_name = "DURATION|DATE|TIME")]
    pub expires: Option<String>,

    /// Annotation domain of the signature annotations.
    #[arg(long, default_value = AnnotationDomain::DEFAULT, value_name = "DOMAIN")]
    pub annotation_domain: String,

    /// Log each signature in Rekor and write the `bundle` annotation. Default: on for
    /// keyless signing (required there), off with --key.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub tlog_upload: Option<bool>,

    /// Also write, per signature, a Sigstore bundle (v0.3 JSON) and the signed message M it
    /// is over into DIR: `<output file name>.<document>.sigstore.json` and
    /// `<output file name>.<document>.message` (without `.<document>` with --scope file).
    /// `cosign verify-blob` and `sigstore verify identity` check the pair as is.
    #[arg(long, value_name = "DIR")]
    pub bundle_out: Option<PathBuf>,

    /// Delete the input files once every output was written (never on error, never an
    /// input that is also an output). An input whose bytes changed since they were signed
    /// fails the run before anything is written, and is kept.
    #[arg(long)]
    pub remove_input: bool,

    // Each new logged signature is verified against the trust root before anything is
    // written: signing against another Sigstore instance needs its root.
    #[command(flatten)]
    pub trust: TrustRootArg,

    /// Print where the identity token came from, the certificate and the log entries.
    #[arg(short = 'v', long)]
    pub verbose: bool,

    /// Report format: `text` (a summary on stderr) or `json` (one object on stdout: files
    /// written, documents, signer, log indexes, bundles; schema in docs/cli.md). Not with
    /// `-o -`, whose stdout carries the manifests.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text, value_name = "FORMAT")]
    pub format: ReportFormat,

    /// Time allowed for one request to Fulcio, Rekor or a CI token endpoint, in seconds,
    /// its answer's body included; a request that takes longer, or whose answer breaks off,
    /// is retried (3 attempts in all, like server errors). Each retry is said on stderr (the
    /// first of each service; with -v every one).
    #[arg(long, default_value_t = 30, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub timeout: u64,

    #[command(flatten)]
    pub keyless: KeylessArgs,
}

/// Flags of keyless signing.
#[derive(Debug, Args)]
#[command(next_help_heading = "Keyless signing")]
pub struct KeylessArgs {
    /// OIDC identity token, or `@FILE` (or the path of an existing file, as cosign takes
    /// it) to read it from a file. Default: SIGSTORE_ID_TOKEN,
    /// then CI credentials (GitHub Actions, GitLab, Buildkite, CircleCI), then an
    /// interactive sign-in.
    #[arg(long, value_name = "TOKEN|@FILE", value_parser = parse_secret, conflicts_with = "key")]
    pub identity_token: Option<Secret>,

    /// Audience the token must be issued for (and requested from CI token endpoints).
    #[arg(long, default_value = DEFAULT_AUDIENCE, value_name = "AUD")]
    pub oidc_audience: String,

    /// OIDC issuer for the interactive sign-in (endpoints found by OIDC discovery).
    #[arg(long, default_value = DEFAULT_OIDC_ISSUER, value_name = "URL")]
    pub oidc_issuer: String,

    /// OAuth client ID for the interactive sign-in.
    #[arg(long, default_value = DEFAULT_OIDC_CLIENT_ID, value_name = "ID")]
    pub oidc_client_id: String,

    /// Do not open a browser for the sign-in: print the URL to open instead.
    #[arg(long, conflicts_with = "key")]
    pub no_browser: bool,

    /// How long the interactive sign-in waits for the person (browser redirect, device
    /// approval), in seconds.
    #[arg(long, default_value_t = 300, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub sign_in_timeout: u64,

    /// Fulcio base URL.
    #[arg(long, env = "SIGSTORE_FULCIO_URL", default_value = DEFAULT_FULCIO_URL, value_name = "URL")]
    pub fulcio_url: String,

    /// Rekor (v1) base URL; also used by --key with --tlog-upload.
    #[arg(long, env = "SIGSTORE_REKOR_URL", default_value = DEFAULT_REKOR_URL, value_name = "URL")]
    pub rekor_url: String,
}

/// A token, `@FILE`, or — as cosign reads `--identity-token` — the path of an existing file
/// (a JWT is never a file name, so nothing is read twice).
fn parse_secret(s: &str) -> Result<Secret, std::convert::Infallible> {
    if !s.starts_with('@') && Path::new(s).is_file() {
        return Ok(Secret::new(format!("@{s}")));
    }
    Ok(Secret::new(s))
}

/// Shows the sign-in URL or device code on stderr (stdout may carry the output).
struct StderrPrompt;

impl SignInPrompt for StderrPrompt {
    fn authorization_url(&self, url: &str, browser_opened: bool) {
        if browser_opened {
            eprintln!("A browser was opened to sign in. If it did not open, visit:");
        } else {
            eprintln!("To sign in, open this URL in a browser:");
        }
        eprintln!("{url}");
    }

    fn device_code(&self, verification_uri: &str, user_code: &str, complete: Option<&str>) {
        eprintln!("To sign in, visit {verification_uri} and enter the code {user_code}");
        if let Some(c) = complete {
            eprintln!("or open {c}");
        }
    }
}

/// `mansign sign`'s flags, resolved once: every flag checked (combinations, the annotation
/// domain, `--exclude` patterns, `--key` references, a tree without `-o`) and the defaults
/// that depend on others decided, before any key, token, trust root or input is read.
/// [`run`] does the work without checking a flag again.
pub struct SignSettings {
    /// The flags as given, for the values used as they are.
    pub args: SignArgs,
    pub domain: AnnotationDomain,
    /// Signatures are logged in Rekor (`--tlog-upload`; keyless: always).
    pub tlog_upload: bool,
    /// `-f` and the bare paths, in order.
    pub inputs: Vec<PathBuf>,
    pub selection: InputSelection,
}

impl TryFrom<SignArgs> for SignSettings {
    type Error = anyhow::Error;

    fn try_from(args: SignArgs) -> anyhow::Result<SignSettings> {
        let domain = AnnotationDomain::new(&args.annotation_domain)?;
        let tlog_upload = check_flags(&args)?;
        let inputs: Vec<PathBuf> = args.inputs.iter().chain(&args.paths).cloned().collect();
        if args.output.is_none() {
            refuse_tree_without_output(&inputs)?;
        }
        let selection = InputSelection::with_excludes(&args.exclude).map_err(anyhow::Error::msg)?;
        Ok(SignSettings {
            args,
            domain,
            tlog_upload,
            inputs,
            selection,
        })
    }
}

pub fn run(settings: SignSettings) -> anyhow::Result<Outcome> {
    let SignSettings {
        args,
        domain,
        tlog_upload,
        inputs,
        selection,
    } = settings;
    let trust = trust_root(&args, tlog_upload)?;
    let options = SignOptions {
        scope: args.scope,
        append: args.append,
        domain,
        limits: Limits::default(),
        expires_at: args
            .expires
            .as_deref()
            .map(|spec| crate::manifest::parse_expires(spec, jiff::Timestamp::now()))
            .transpose()
            .map_err(anyhow::Error::new)?,
        signed_at: None,
    };
    let mut tree = SignTree::new(inputs)
        .selection(selection)
        .output(
            args.output
                .as_deref()
                .map(TreeOutput::from_flag)
                .unwrap_or_default(),
        )
        .options(options)
        .remove_inputs(args.remove_input)
        .watch_interrupts(true);
    if let Some(dir) = &args.bundle_out {
        tree = tree.bundle_out(dir).bundle_check(VerifyBundle);
    }
    if let Some(trust) = &trust {
        tree = tree.verify_against(trust.clone());
    }

    // Inputs and outputs first: a bad path or file must not cost an identity token.
    let plan = tree.plan()?;
    let signer = run_signer(&args, tlog_upload)?;

    // A long batch takes a while (a Rekor entry per signature): say what is going on, on
    // a terminal only (a CI log gets the summary).
    let documents = plan.documents();
    if documents >= LONG_BATCH && std::io::stderr().is_terminal() {
        eprintln!(
            "signing {documents} document(s) in {} file(s){}{}...",
            plan.files(),
            if tlog_upload {
                " (one Rekor entry per signature)"
            } else {
                ""
            },
            if trust.is_some() {
                ", each verified before anything is written"
            } else {
                ""
            }
        );
    }
    // One signing time for every window of the run, taken now that the signer is ready (a
    // sign-in may take minutes).
    let mut report = plan.sign(&signer)?;
    super::sign_report::print(&mut report, args.verbose)?;
    if args.format == ReportFormat::Json {
        let signer = super::sign_report::signer_json(
            args.key.as_deref(),
            report.certificates().first().cloned(),
        );
        super::sign_report::print_json(&mut report, signer)?;
    }
    Ok(Outcome::Success)
}

/// `--bundle-out`'s check of each bundle before anything is written: as `mansign
/// verify-bundle` (and sigstore-python, cosign verify-blob) will read it, every check of
/// [`BundleVerifier::verify`], from the JSON text that is written.
struct VerifyBundle;

impl BundleCheck for VerifyBundle {
    fn check(
        &self,
        trust: &TrustRoot,
        limits: &Limits,
        bundle_json: &str,
        message: &[u8],
        signer: &BundleSigner,
    ) -> Result<(), BoxedCause> {
        let expected = match signer {
            BundleSigner::Key { public_key_pem } => ExpectedSigner::Key(BundleKey::from_pem(
                "the signing key's public key",
                public_key_pem,
            )?),
            BundleSigner::Identity { subject, issuer } => {
                ExpectedSigner::identity(subject.as_str(), issuer.as_str())
            }
        };
        let bundle = SigstoreBundle::from_json(bundle_json)?;
        BundleVerifier::new(trust).with_limits(*limits).verify(
            &bundle,
            BundleArtifact::Bytes(message),
            &expected,
        )?;
        Ok(())
    }
}

/// Refuses flags that do not go together; returns whether signatures are logged in Rekor.
fn check_flags(args: &SignArgs) -> anyhow::Result<bool> {
    let keyless = args.key.is_none();
    let tlog_upload = args.tlog_upload.unwrap_or(keyless);
    if keyless && !tlog_upload {
        bail!(
            "keyless signing needs the transparency log: without a Rekor entry nobody can \
             verify the short-lived certificate later (drop --tlog-upload=false, or sign with --key)"
        );
    }
    if args.bundle_out.is_some() && !tlog_upload {
        bail!("--bundle-out needs --tlog-upload (a Sigstore bundle carries the Rekor entry)");
    }
    if args.format == ReportFormat::Json && args.output.as_deref() == Some("-") {
        bail!(
            "--format json prints the report on stdout; with it, write the manifests to files (not `-o -`)"
        );
    }
    if let Some(key) = &args.key {
        super::verify_hints::refuse_signing_key_reference(key)?;
    }
    Ok(tlog_upload)
}

/// Without `-o`, one file is signed to `FILE.signed` beside it, as kubectl-sigstore does
/// (`mansign verify -f FILE.signed` and `kubectl apply -f FILE.signed` read a file they are
/// named); a directory, several inputs, or a glob pattern matching several files (refused
/// in the plan) need `-o` ([`refuse_tree_beside`]). Refused before any key, token or trust
/// root is read.
fn refuse_tree_without_output(inputs: &[PathBuf]) -> anyhow::Result<()> {
    Ok(refuse_tree_beside(inputs)?)
}

/// The run's signer: the key (its signatures logged in Rekor with `--tlog-upload`), or a
/// keyless signer with an identity token (acquired here, after the inputs were read).
fn run_signer(args: &SignArgs, tlog_upload: bool) -> anyhow::Result<RunSigner> {
    let on_retry = retry_lines(args.verbose);
    let rekor = RekorOptions {
        url: args.keyless.rekor_url.clone(),
        timeout: std::time::Duration::from_secs(args.timeout),
        on_retry: on_retry.clone(),
        ..RekorOptions::default()
    };
    Ok(match &args.key {
        Some(key_path) => {
            let key = load_key(key_path)?;
            if tlog_upload {
                let pem = public_key_pem(&key)?;
                RunSigner::KeyWithTlog(TlogUploadingSigner::new(key, pem, rekor))
            } else {
                RunSigner::Key(key)
            }
        }
        None => RunSigner::Keyless(Box::new(keyless_signer(args, rekor, on_retry)?)),
    })
}

/// What a run says of retried requests on stderr: with `-v`, every retry
/// (`fulcio: attempt 1 of 3 failed after 30.0 s (timed out); retrying in 1.0 s`); without
/// it, the first retry of each service, so that three timeouts in a row are never a silent
/// minute and a half.
fn retry_lines(verbose: bool) -> RetryObserver {
    let told = std::sync::Mutex::new(std::collections::HashSet::new());
    RetryObserver::new(move |event| {
        if verbose {
            eprintln!("{event}");
        } else if told.lock().is_ok_and(|mut told| told.insert(event.service)) {
            eprintln!("{event} (-v shows every retry)");
        }
    })
}

fn load_key(key_path: &Path) -> anyhow::Result<KeySigner> {
    let key_pem = std::fs::read_to_string(key_path)
        .with_context(|| format!("{}: cannot read key", key_path.display()))?;
    let password = super::password::read("Enter password for private key: ")?;
    let key = crate::keys::decrypt_private_key(&key_pem, password.as_bytes())
        .with_context(|| format!("{}: cannot load private key", key_path.display()))?;
    Ok(KeySigner::new(key))
}

fn public_key_pem(key: &KeySigner) -> anyhow::Result<String> {
    use p256::pkcs8::{EncodePublicKey, LineEnding};
    key.verifying_key()
        .to_public_key_pem(LineEnding::LF)
        .context("cannot encode the public key")
}

/// The trust root every new logged signature is verified against before anything is
/// written: `--trusted-root`, else the root verification would use (the cached one from
/// `mansign trust update`, else the embedded public-good root). Signing against a private
/// Sigstore therefore needs `--trusted-root`: a signature nobody can verify is an error.
fn trust_root(args: &SignArgs, logged: bool) -> anyhow::Result<Option<Arc<TrustRoot>>> {
    if args.trust.trusted_root.is_none() && !logged {
        return Ok(None);
    }
    Ok(Some(args.trust.load()?))
}

fn keyless_signer(
    args: &SignArgs,
    rekor: RekorOptions,
    on_retry: RetryObserver,
) -> anyhow::Result<KeylessSigner> {
    let k = &args.keyless;
    let token_options = TokenOptions {
        identity_token: k.identity_token.clone(),
        audience: k.oidc_audience.clone(),
        sign_in: SignInOptions {
            issuer: k.oidc_issuer.clone(),
            client_id: k.oidc_client_id.clone(),
            open_browser: !k.no_browser,
            terminal: std::io::stdin().is_terminal(),
            timeout: std::time::Duration::from_secs(k.sign_in_timeout),
        },
        timeout: std::time::Duration::from_secs(args.timeout),
        on_retry: on_retry.clone(),
        ..TokenOptions::default()
    };
    let token = acquire_token_blocking(
        &token_options,
        &AmbientEnvironment::from_process(),
        &StderrPrompt,
    )
    .context("no usable identity token")?;
    if args.verbose {
        eprintln!(
            "identity token from {} (issuer {}, subject {}, expires {})",
            token.source(),
            token.issuer(),
            token.subject(),
            token.expiration()
        );
        eprintln!("Fulcio {}, Rekor {}", k.fulcio_url, k.rekor_url);
    }
    Ok(KeylessSigner::new(
        token,
        KeylessOptions {
            fulcio_url: k.fulcio_url.clone(),
            rekor,
            timeout: std::time::Duration::from_secs(args.timeout),
            on_retry,
            ..KeylessOptions::default()
        },
    ))
}

/// Batches of at least this many documents announce themselves on a terminal.
const LONG_BATCH: usize = 20;

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        sign: SignArgs,
    }

    fn resolve(flags: &[&str]) -> anyhow::Result<SignSettings> {
        let args = Flags::try_parse_from(std::iter::once("sign").chain(flags.iter().copied()))
            .expect("the flags parse")
            .sign;
        SignSettings::try_from(args)
    }

    /// A conflict is refused by the resolve step itself: the input, the key file and the
    /// trust root named do not exist, so any read would fail with another error.
    #[test]
    fn conflicting_sign_flags_are_refused_before_anything_is_read() {
        let missing = [
            "-f",
            "/nonexistent/in.yaml",
            "--trusted-root",
            "/nonexistent/root.json",
        ];
        for (flags, error) in [
            (
                vec!["--tlog-upload=false"],
                "keyless signing needs the transparency log",
            ),
            (
                vec!["--key", "/nonexistent/cosign.key", "--bundle-out", "b/"],
                "--bundle-out needs --tlog-upload",
            ),
            (
                vec![
                    "--key",
                    "/nonexistent/cosign.key",
                    "--format",
                    "json",
                    "-o",
                    "-",
                ],
                "--format json prints the report on stdout",
            ),
            (vec!["--key", "k8s://ns/name"], "not a k8s:// reference"),
            (vec!["-o", "-", "--exclude", "a/**/**/b["], "--exclude"),
        ] {
            let all: Vec<&str> = missing.iter().copied().chain(flags.clone()).collect();
            let err = resolve(&all).err().map(|e| format!("{e:#}"));
            assert!(
                err.as_deref().is_some_and(|e| e.contains(error)),
                "{flags:?}: {err:?}"
            );
        }
        // The same flags without the conflict resolve (nothing is read yet).
        let settings = resolve(&missing).expect("resolves");
        assert!(settings.tlog_upload);
        assert_eq!(settings.inputs, [PathBuf::from("/nonexistent/in.yaml")]);
    }
}
