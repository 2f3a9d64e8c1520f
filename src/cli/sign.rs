//! `mansign sign`
//!
//! Key-based with `--key`, keyless otherwise: an OIDC identity token (flag, environment,
//! CI, or an interactive sign-in) buys one Fulcio certificate for the run, and every
//! signature is logged in Rekor. Nothing is written until every signature exists (and,
//! with a trust root, verified); inputs are removed (`--remove-input`) only after every
//! output was written.

use super::Outcome;
use super::args::{ReportFormat, TrustRootArg, output_path};
use super::output::{Target, write_all};
use crate::annotations::{AnnotationDomain, extract};
use crate::limits::Limits;
use crate::manifest::{InputSelection, ManifestFile, Source, load_inputs_with, to_yaml};
use crate::signing::sign_in::{DEFAULT_OIDC_CLIENT_ID, DEFAULT_OIDC_ISSUER};
use crate::signing::token::{DEFAULT_AUDIENCE, acquire_token_blocking};
use crate::signing::{
    AmbientEnvironment, DEFAULT_FULCIO_URL, DEFAULT_REKOR_URL, KeySigner, KeylessOptions,
    KeylessSigner, RekorOptions, Secret, SignInOptions, SignInPrompt, SignOptions, SignScope,
    Signer, TlogUploadingSigner, TokenOptions, sign_files,
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

    /// Leave out files or directories of a directory argument whose path below it matches
    /// this glob (`kustomization.yaml`, `docs/**`, `**/*.md`). Repeatable.
    #[arg(long = "exclude", value_name = "GLOB")]
    pub exclude: Vec<String>,

    /// Where the signed manifests go (verify's `-o` is its report format; here that is
    /// `--format`): a file, a directory (`DIR/`, created; each file keeps its path below
    /// its directory argument or below the fixed part of its glob pattern, a file argument
    /// its name) or `-` for stdout. Default: `<input>.signed` next to each input, stdout
    /// for stdin.
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
    /// input that is also an output).
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

    /// Time allowed for one request to Fulcio or Rekor, in seconds; a request that takes
    /// longer is retried (3 attempts in all, like server errors).
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

/// The signer of this run.
enum RunSigner {
    Key(KeySigner),
    KeyWithTlog(TlogUploadingSigner<KeySigner>),
    Keyless(Box<KeylessSigner>),
}

impl RunSigner {
    fn as_dyn(&self) -> &dyn Signer {
        match self {
            RunSigner::Key(s) => s,
            RunSigner::KeyWithTlog(s) => s,
            RunSigner::Keyless(s) => s.as_ref(),
        }
    }

    /// Sigstore bundles (JSON) of the signed messages, in message order.
    fn bundles(&self) -> Vec<String> {
        match self {
            RunSigner::Key(_) => Vec::new(),
            RunSigner::KeyWithTlog(s) => s.bundles(),
            RunSigner::Keyless(s) => s
                .last_batch()
                .map(|b| b.signatures.into_iter().map(|s| s.bundle_json).collect())
                .unwrap_or_default(),
        }
    }

    fn log_indexes(&self) -> Vec<i64> {
        match self {
            RunSigner::Key(_) => Vec::new(),
            RunSigner::KeyWithTlog(s) => s.log_indexes(),
            RunSigner::Keyless(s) => s
                .last_batch()
                .map(|b| b.signatures.iter().map(|s| s.log_index).collect())
                .unwrap_or_default(),
        }
    }
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

pub fn run(args: SignArgs) -> anyhow::Result<Outcome> {
    let domain = AnnotationDomain::new(&args.annotation_domain).map_err(anyhow::Error::msg)?;
    let limits = Limits::default();
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
    let trust = trust_root(&args, tlog_upload)?;
    if args.format == ReportFormat::Json && args.output.as_deref() == Some("-") {
        bail!(
            "--format json prints the report on stdout; with it, write the manifests to files (not `-o -`)"
        );
    }
    if let Some(key) = &args.key {
        super::verify_hints::refuse_secret_reference(key)?;
    }

    // Inputs and outputs first: a bad path must not cost an identity token.
    let selection = InputSelection::with_excludes(&args.exclude).map_err(anyhow::Error::msg)?;
    let inputs: Vec<PathBuf> = args.inputs.iter().chain(&args.paths).cloned().collect();
    let mut files = load_inputs_with(&inputs, &selection, &limits)?;
    let targets = plan_targets(&files, args.output.as_deref())?;
    let bundle_paths = match &args.bundle_out {
        Some(dir) => Some(plan_bundles(dir, &files, &targets, args.scope)?),
        None => None,
    };
    let options = SignOptions {
        scope: args.scope,
        append: args.append,
        domain: domain.clone(),
        limits,
        expires_at: args
            .expires
            .as_deref()
            .map(|spec| crate::manifest::parse_expires(spec, jiff::Timestamp::now()))
            .transpose()
            .map_err(anyhow::Error::msg)?,
        signed_at: None,
    };
    let rekor = RekorOptions {
        url: args.keyless.rekor_url.clone(),
        timeout: std::time::Duration::from_secs(args.timeout),
        ..RekorOptions::default()
    };

    let signer = match &args.key {
        Some(key_path) => {
            let key = load_key(key_path)?;
            if tlog_upload {
                let pem = public_key_pem(&key)?;
                RunSigner::KeyWithTlog(TlogUploadingSigner::new(key, pem, rekor))
            } else {
                RunSigner::Key(key)
            }
        }
        None => RunSigner::Keyless(Box::new(keyless_signer(&args, rekor)?)),
    };

    // A long batch takes a while (a Rekor entry per signature): say what is going on, on
    // a terminal only (a CI log gets the summary).
    let documents: usize = files.iter().map(|f| f.documents.len()).sum();
    let long_batch = documents >= LONG_BATCH && std::io::stderr().is_terminal();
    if long_batch {
        eprintln!(
            "signing {documents} document(s) in {} file(s){}...",
            files.len(),
            if tlog_upload {
                " (one Rekor entry per signature)"
            } else {
                ""
            }
        );
    }
    let summary = sign_files(&mut files, signer.as_dyn(), &options)?;
    if long_batch && trust.is_some() {
        eprintln!(
            "signed; verifying the {} new signature(s) before writing...",
            summary.signatures
        );
    }

    if let Some(trust) = &trust {
        let checked = self_verify(&files, &domain, &limits, trust, &signer)?;
        if args.verbose && checked > 0 {
            // With --scope file one signature covers every document of a file: count
            // signatures as the summary does, and the documents they were read back from.
            eprintln!(
                "verified {} new signature(s), read back from {checked} document(s), against {}",
                summary.signatures,
                trust.origin()
            );
        }
    }

    let mut outputs: Vec<(Target, String)> = files
        .iter()
        .zip(&targets)
        .map(|(f, t)| (t.clone(), render(f)))
        .collect();
    if let Some(paths) = bundle_paths {
        let bundles = signer.bundles();
        if bundles.len() != paths.len() || summary.messages.len() != paths.len() {
            bail!(
                "--bundle-out: {} Sigstore bundle(s) and {} message(s) for {} signature(s) \
                 (bundles need --tlog-upload)",
                bundles.len(),
                summary.messages.len(),
                paths.len()
            );
        }
        for ((files, json), message) in paths.into_iter().zip(bundles).zip(&summary.messages) {
            // M is YAML text built by mansign's emitter, so always UTF-8.
            let message = String::from_utf8(message.clone())
                .context("--bundle-out: a signed message is not UTF-8 text")?;
            outputs.push((Target::File(files.bundle), json + "\n"));
            outputs.push((Target::File(files.message), message));
        }
    }
    let shown: Vec<String> = targets.iter().map(show_target).collect();
    let bundle_files: Vec<String> = outputs
        .iter()
        .skip(files.len())
        .filter_map(|(t, _)| match t {
            Target::File(p) => Some(p.display().to_string()),
            Target::Stdout => None,
        })
        .collect();
    write_all(outputs)?;

    // Every file on its own line only when asked (-v; `--format json` lists them too):
    // 300 files would otherwise be one 7 KB line.
    if args.verbose {
        for (f, shown) in files.iter().zip(&shown) {
            eprintln!(
                "signed {} -> {} ({} document(s))",
                f.source,
                shown,
                f.documents.len()
            );
        }
    }
    if args.verbose {
        if let RunSigner::Keyless(k) = &signer
            && let Some(cert) = k.last_batch().and_then(|b| b.certificate)
        {
            eprintln!(
                "certificate for {} from issuer {}, valid until {}",
                cert.identity.as_deref().unwrap_or("<no subject>"),
                cert.issuer.as_deref().unwrap_or("<no issuer>"),
                cert.not_after
            );
        }
        let idx = signer.log_indexes();
        if !idx.is_empty() {
            let list: Vec<String> = idx.iter().map(i64::to_string).collect();
            eprintln!("Rekor log indexes: {}", list.join(", "));
        }
    }
    eprintln!(
        "signed {} document(s) in {} file(s) with {} signature(s) -> {}",
        summary.documents,
        summary.files,
        summary.signatures,
        where_written(&targets, &shown, args.verbose)
    );

    if args.remove_input {
        remove_inputs(&files, &targets, args.verbose)?;
    }
    if args.format == ReportFormat::Json {
        let report = super::sign_report::SignReport {
            files: &files,
            written: &shown,
            summary: &summary,
            signer: super::sign_report::signer_json(
                args.key.as_deref(),
                match &signer {
                    RunSigner::Keyless(k) => k.last_batch().and_then(|b| b.certificate),
                    _ => None,
                },
            ),
            log_indexes: signer.log_indexes(),
            bundle_files,
        };
        super::output::print_report(&report.to_json_text())?;
    }
    Ok(Outcome::Success)
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

fn keyless_signer(args: &SignArgs, rekor: RekorOptions) -> anyhow::Result<KeylessSigner> {
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
            ..KeylessOptions::default()
        },
    ))
}

/// Verifies every signature set this run added, from the signed documents themselves
/// (what a verifier will read): full Sigstore verification for keyless sets, SET and
/// entry consistency for key sets logged in Rekor. Returns how many were checked.
fn self_verify(
    files: &[ManifestFile],
    domain: &AnnotationDomain,
    limits: &Limits,
    trust: &TrustRoot,
    signer: &RunSigner,
) -> anyhow::Result<usize> {
    let key_der = match signer {
        RunSigner::KeyWithTlog(s) => Some(
            p256::pkcs8::DecodePublicKey::from_public_key_pem(s.public_key_pem())
                .map(|k: p256::PublicKey| {
                    p256::pkcs8::EncodePublicKey::to_public_key_der(&k)
                        .map(|d| d.as_bytes().to_vec())
                })
                .context("cannot re-read our own public key")?
                .context("cannot encode our own public key")?,
        ),
        RunSigner::Key(_) => return Ok(0),
        RunSigner::Keyless(_) => None,
    };
    let mut checked = 0;
    for file in files {
        for doc in &file.documents {
            let signed = extract(&doc.value, domain, limits)
                .with_context(|| format!("{}: reading back the new signature", doc.origin))?;
            // With --append the new set is the last one; the others were there before.
            let Some(set) = signed.sets.last() else {
                bail!("{}: no signature after signing", doc.origin);
            };
            match &key_der {
                None => {
                    crate::verify::verify_certificate_set(trust, &signed.message, set)
                        .with_context(|| {
                            format!(
                                "{}: the new signature does not verify against {}; nothing was written (signing against another Sigstore instance? pass its --trusted-root)",
                                doc.origin,
                                trust.origin()
                            )
                        })?;
                }
                Some(der) => {
                    crate::verify::verify_key_set_with_bundle(trust, &signed.message, set, der)
                        .with_context(|| {
                            format!(
                                "{}: the new signature's Rekor entry does not verify against {}; nothing was written (signing against another Sigstore instance? pass its --trusted-root)",
                                doc.origin,
                                trust.origin()
                            )
                        })?;
                }
            }
            checked += 1;
        }
    }
    Ok(checked)
}

/// What `--bundle-out` writes for one signature: the Sigstore bundle, and beside it the
/// signed message M (the bundle's artifact).
struct BundleFiles {
    /// `<name>.sigstore.json`
    bundle: PathBuf,
    /// `<name>.message`
    message: PathBuf,
}

/// Bundle and message paths in `dir`, one pair per signed message, decided before anything
/// is signed. They are named after the output file name only, so inputs with the same name
/// in different directories would share a bundle file and one would silently replace the
/// other: that is refused here, before a token or certificate is spent.
fn plan_bundles(
    dir: &Path,
    files: &[ManifestFile],
    targets: &[Target],
    scope: SignScope,
) -> anyhow::Result<Vec<BundleFiles>> {
    let mut seen = std::collections::HashSet::new();
    let mut planned = Vec::new();
    for name in bundle_names(files, targets, scope) {
        let bundle = dir.join(format!("{name}.sigstore.json"));
        if !seen.insert(bundle.clone()) {
            bail!(
                "--bundle-out: two signatures would be written to {} (bundles are named after \
                 the output file name); sign files with the same name in separate runs",
                bundle.display()
            );
        }
        planned.push(BundleFiles {
            bundle,
            message: dir.join(format!("{name}.message")),
        });
    }
    Ok(planned)
}

/// The name stem of each signature's bundle and message, in the order `sign_files` builds
/// messages: `<output file name>.<document number, from 1>`, or `<output file name>` with
/// `--scope file`.
fn bundle_names(files: &[ManifestFile], targets: &[Target], scope: SignScope) -> Vec<String> {
    let mut names = Vec::new();
    for (file, target) in files.iter().zip(targets) {
        let base = match target {
            Target::File(p) => p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "output".to_string()),
            Target::Stdout => match &file.source {
                Source::File(p) => p
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "stdout".to_string()),
                _ => "stdout".to_string(),
            },
        };
        match scope {
            SignScope::Document => {
                // Numbered from 1, as documents are everywhere else.
                for i in 1..=file.documents.len() {
                    names.push(format!("{base}.{i}"));
                }
            }
            SignScope::File => names.push(base),
        }
    }
    names
}

/// Batches of at least this many documents announce themselves on a terminal.
const LONG_BATCH: usize = 20;

/// Outputs listed by name in the summary line at most; more are summarised as a count and
/// the directory they were written to.
const LISTED_OUTPUTS: usize = 3;

/// Where a run wrote, for the summary line: the outputs themselves when there are few,
/// else their count and the directory that holds them all (`-v` and `--format json` list
/// every one).
fn where_written(targets: &[Target], shown: &[String], verbose: bool) -> String {
    if shown.len() <= LISTED_OUTPUTS {
        return shown.join(", ");
    }
    let files: Vec<&Path> = targets
        .iter()
        .filter_map(|t| match t {
            Target::File(p) => Some(p.as_path()),
            Target::Stdout => None,
        })
        .collect();
    let more = if verbose {
        "listed above"
    } else {
        "-v or --format json lists them"
    };
    if files.len() != targets.len() {
        return format!("{} outputs, to files and stdout ({more})", shown.len());
    }
    let dir = common_dir(&files);
    let dir = if dir.as_os_str().is_empty() {
        ".".to_string()
    } else {
        format!("{}/", dir.display())
    };
    format!("{} files in {dir} ({more})", files.len())
}

/// The deepest directory that holds every file (empty: the current directory).
fn common_dir(files: &[&Path]) -> PathBuf {
    let mut common: Option<PathBuf> = None;
    for file in files {
        let parent = file.parent().unwrap_or(Path::new(""));
        common = Some(match common {
            None => parent.to_path_buf(),
            Some(c) => c
                .components()
                .zip(parent.components())
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| a)
                .collect(),
        });
    }
    common.unwrap_or_default()
}

fn show_target(t: &Target) -> String {
    match t {
        Target::Stdout => "<stdout>".to_string(),
        Target::File(p) => p.display().to_string(),
    }
}

/// Deletes the input files (after every output was written). An input that is also an
/// output is kept.
fn remove_inputs(files: &[ManifestFile], targets: &[Target], verbose: bool) -> anyhow::Result<()> {
    let outputs: Vec<PathBuf> = targets
        .iter()
        .filter_map(|t| match t {
            Target::File(p) => Some(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())),
            Target::Stdout => None,
        })
        .collect();
    for file in files {
        let Source::File(path) = &file.source else {
            continue;
        };
        let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
        if outputs.contains(&canonical) {
            continue;
        }
        std::fs::remove_file(path)
            .with_context(|| format!("{}: signed, but cannot remove the input", path.display()))?;
        if verbose {
            eprintln!("removed {}", path.display());
        }
    }
    Ok(())
}

/// The output text of a file: its documents as YAML, separated by `---`; a `.json` input
/// stays JSON (one pretty-printed object per document, a JSON stream kubectl reads).
pub fn render(file: &ManifestFile) -> String {
    if file.is_json() {
        return file
            .documents
            .iter()
            .map(|d| {
                let mut text =
                    serde_json::to_string_pretty(&d.value).unwrap_or_else(|_| "{}".into());
                text.push('\n');
                text
            })
            .collect();
    }
    file.documents
        .iter()
        .map(|d| to_yaml(&d.value))
        .collect::<Vec<_>>()
        .join("---\n")
}

/// Decides where each file goes before anything is signed, so a bad `-o` fails early.
fn plan_targets(files: &[ManifestFile], output: Option<&str>) -> anyhow::Result<Vec<Target>> {
    match output {
        None => Ok(files
            .iter()
            .map(|f| match &f.source {
                Source::File(p) => {
                    let mut s = p.clone().into_os_string();
                    s.push(".signed");
                    Target::File(PathBuf::from(s))
                }
                _ => Target::Stdout,
            })
            .collect()),
        Some("-") => Ok(vec![Target::Stdout; files.len()]),
        Some(o) if o.ends_with('/') || std::path::Path::new(o).is_dir() => {
            let dir = PathBuf::from(o);
            let mut seen = std::collections::HashSet::new();
            let mut targets = Vec::new();
            for f in files {
                let t = dir.join(&f.relative_path);
                if !seen.insert(t.clone()) {
                    bail!(
                        "two inputs would be written to {}: sign them in separate runs or pass their directory",
                        t.display()
                    );
                }
                targets.push(Target::File(t));
            }
            Ok(targets)
        }
        Some(o) => {
            if files.len() != 1 {
                bail!(
                    "-o {o}: {} input files but one output file; use a directory (`-o DIR/`)",
                    files.len()
                );
            }
            Ok(vec![Target::File(PathBuf::from(o))])
        }
    }
}
