//! `mansign verify`

use super::args::{ReportFormatArg, TrustRootArg};
use super::outcome::Outcome;
use super::verify_hints::LiveObjectHint;
use super::verify_report::StreamedReport;
use crate::annotations::AnnotationDomain;
use crate::kube::KubeClient;
use crate::limits::Limits;
use crate::manifest::{
    FluxKustomization, GitopsBindings, GroupKind, IgnoreFields, IgnoreProfile, IgnoreProfiles,
    InputSelection, Tolerances, check_argocd_application, check_argocd_installation_id,
    parse_duration, unbound_gitops_keys,
};
use crate::policy::{
    KeyValueError, LoadOptions, RequestContext, ResolvedKeys, given_claims,
    load_file as load_policy_file, load_file_with_keys,
};
use crate::trust::TrustRoot;
use crate::verify::{
    Attestor, CheckFailure, Claim, IdentityPolicy, IdentityPolicyError, KeylessAttestor, Rejection,
    TrustedKey, Verifier,
};
use anyhow::{Context, bail};
use clap::Args;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Signed manifest file, directory (recursive: every .yaml, .yml and .json file, hidden
    /// ones included, as `kubectl apply -R` reads them; any other file in it is an error
    /// unless excluded), glob pattern or `-` for stdin. Repeatable, and several paths may
    /// follow one `-f` (an unquoted `-f signed/*.yaml` expanded by the shell).
    #[arg(short = 'f', long = "filename", value_name = "PATH", num_args = 1..)]
    pub inputs: Vec<PathBuf>,

    /// Paths without `-f` (`mansign verify signed/`), read as `-f` reads them.
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Objects read by the caller (`verify-resource`) instead of `-f` and the paths.
    #[arg(skip)]
    pub preloaded: Option<Vec<crate::manifest::ManifestFile>>,

    /// Leave out files or directories below a directory argument, matched as .gitignore
    /// patterns are: without a `/`, a name at any depth (`*.md`, `README.md`); with a
    /// leading or inner `/`, from the argument down (`/kustomization.yaml`, `docs/**`); a
    /// trailing `/` for directories only (`generated/`). Repeatable. Whatever is left
    /// out is not verified: exclude only what is not applied to the cluster.
    #[arg(long = "exclude", value_name = "GLOB")]
    pub exclude: Vec<String>,

    /// Accepted for kubectl's habit (`kubectl apply -R -f DIR`) and changes nothing:
    /// directories are always read recursively.
    #[arg(short = 'R', long = "recursive")]
    pub recursive: bool,

    /// Policy file: mansign `ManifestPolicy` and/or Kyverno `ClusterPolicy`/`Policy`
    /// documents with `validate.manifests` rules (docs/policy.md). Every rule that
    /// matches an object must pass; an object no rule matches is not verified. Signers,
    /// ignore fields and annotation domain then come from the policy.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with_all = [
            "keys", "certificate_identity", "certificate_identity_regexp",
            "certificate_oidc_issuer", "certificate_oidc_issuer_regexp",
            "certificate_github_workflow_repository", "certificate_github_workflow_ref",
            "certificate_github_workflow_trigger", "certificate_github_workflow_sha",
            "certificate_github_workflow_name", "insecure_any_identity", "ignore_profile",
            "status_kinds", "argocd_applications", "argocd_installation_ids",
            "flux_kustomizations",
            "allow_digest_pinning", "bind_namespaces", "annotation_domain",
            "ignore_fields",
        ]
    )]
    pub policy: Option<PathBuf>,

    /// Differences tolerated for live objects (`kubectl get -o yaml` output, or what a
    /// GitOps tool applied), a comma-separated list of profiles: `none` (`verify`'s default),
    /// `kubernetes` (server-populated metadata, the status of kinds with a status
    /// subresource, server-assigned fields, exact defaults, and a
    /// last-applied-configuration that holds the signed manifest; anchored), `argocd` (Argo
    /// CD's instance label, installation-id annotation and a tracking-id annotation naming
    /// the object itself), `flux` (Flux's two kustomize-controller labels),
    /// `kyverno-compat` (Kyverno's defaults with its unanchored matching; migration only,
    /// over-matches). Example: `kubernetes,argocd`.
    #[arg(long, default_value_t = IgnoreProfiles::NONE, value_name = "PROFILE[,PROFILE]",
          value_hint = clap::ValueHint::Other,
          value_parser = |s: &str| s.parse::<IgnoreProfiles>())]
    pub ignore_profile: IgnoreProfiles,

    /// With `--ignore-profile kubernetes`: a custom kind whose `status` is a subresource
    /// (`Kind.group`, e.g. `Certificate.cert-manager.io`), ignored like the status of
    /// built-in kinds. Repeatable. For any other custom kind, `status` is compared.
    #[arg(long = "status-kind", value_name = "KIND.GROUP",
          value_parser = |s: &str| GroupKind::parse(s))]
    pub status_kinds: Vec<GroupKind>,

    /// With `--ignore-profile argocd`: the Argo CD application the object belongs to, as
    /// Argo CD writes it (`<namespace>_<name>` for an application outside Argo CD's
    /// namespace). Repeatable. An added instance label or tracking-id must name a listed
    /// application, and both the same one. Without it the instance label is not tolerated
    /// on any kind (a label is a selector input), and a tracking-id may name any
    /// application.
    #[arg(long = "argocd-application", value_name = "NAME",
          value_parser = |s: &str| check_argocd_application(s).map(|()| s.to_string()))]
    pub argocd_applications: Vec<String>,

    /// With `--ignore-profile argocd`: an accepted value of the
    /// `argocd.argoproj.io/installation-id` annotation (Argo CD's `installationID`).
    /// Repeatable. Without it the annotation is not tolerated.
    #[arg(long = "argocd-installation-id", value_name = "ID",
          value_parser = |s: &str| check_argocd_installation_id(s).map(|()| s.to_string()))]
    pub argocd_installation_ids: Vec<String>,

    /// With `--ignore-profile flux`: the Flux Kustomization (`namespace/name`) that may own
    /// the object. Repeatable. Added `kustomize.toolkit.fluxcd.io/name` and `/namespace`
    /// labels must together name a listed one. Without it the labels are not tolerated on
    /// any kind (a label is a selector input).
    #[arg(long = "flux-kustomization", value_name = "NS/NAME",
          value_parser = |s: &str| FluxKustomization::parse(s))]
    pub flux_kustomizations: Vec<FluxKustomization>,

    /// Accept container images pinned to a digest after signing (`x:tag` signed,
    /// `x:tag@sha256:<digest>` found), and no other image change. The digest itself cannot
    /// be checked offline (the runtime ignores the tag), so pair this with image signature
    /// verification of that repository (e.g. Kyverno verifyImages, which pins the digest).
    #[arg(long)]
    pub allow_digest_pinning: bool,

    /// A field whose differences are tolerated, for a one-off without a policy file:
    /// `metadata.labels["argocd.argoproj.io/instance"]`, `spec.replicas`,
    /// `spec.template.spec.containers[*].image` (anchored; the syntax of docs/policy.md,
    /// "Field paths"). Repeatable. Whatever it names is not checked.
    #[arg(long = "ignore-field", value_name = "PATH")]
    pub ignore_fields: Vec<String>,

    /// Accept a document signed without a namespace in this namespace. Repeatable. A
    /// signed namespace is never rebound.
    #[arg(long = "bind-namespace", value_name = "NAMESPACE")]
    pub bind_namespaces: Vec<String>,

    /// Reject signatures older than this (`90s`, `30m`, `4h`, `7d`), measured from the signed
    /// time `mansign.dev/signed-at` (inside the signature), bounded by the transparency-log
    /// time where there is one; a key signature without a signed time is rejected (a log
    /// time alone does not date it), a keyless one without it is dated by its log time.
    #[arg(long, value_name = "DURATION")]
    pub max_age: Option<String>,

    /// Trusted public key (PEM, `cosign.pub`). Repeatable, or comma-separated; a
    /// signature made by any one of them is accepted.
    #[arg(short = 'k', long = "key", value_name = "FILE", value_delimiter = ',')]
    pub keys: Vec<PathBuf>,

    /// Keyless: the certificate subject (SAN email or URI) must equal this value, e.g.
    /// `https://github.com/org/repo/.github/workflows/sign.yaml@refs/heads/main`.
    #[arg(long, value_name = "IDENTITY", help_heading = "Keyless identity")]
    pub certificate_identity: Option<String>,

    /// Keyless: the certificate subject must match this regex. Anchored, unlike cosign's:
    /// the whole subject must match, not a part of it, so
    /// `https://github.com/acme/.*/\.github/workflows/sign\.yaml@refs/heads/main` accepts
    /// the sign workflow of every acme repository on main and nothing longer.
    #[arg(long, value_name = "REGEX", help_heading = "Keyless identity")]
    pub certificate_identity_regexp: Option<String>,

    /// Keyless: the OIDC issuer in the certificate must equal this URL, e.g.
    /// `https://token.actions.githubusercontent.com`.
    #[arg(long, value_name = "URL", help_heading = "Keyless identity")]
    pub certificate_oidc_issuer: Option<String>,

    /// Keyless: the OIDC issuer must match this regex (anchored, unlike cosign's: the
    /// whole issuer must match).
    #[arg(long, value_name = "REGEX", help_heading = "Keyless identity")]
    pub certificate_oidc_issuer_regexp: Option<String>,

    /// Keyless: the GitHub workflow repository (`owner/name`) in the certificate.
    #[arg(long, value_name = "OWNER/NAME", help_heading = "Keyless identity")]
    pub certificate_github_workflow_repository: Option<String>,

    /// Keyless: the GitHub workflow ref in the certificate, e.g. `refs/heads/main`.
    #[arg(long, value_name = "REF", help_heading = "Keyless identity")]
    pub certificate_github_workflow_ref: Option<String>,

    /// Keyless: the event that triggered the GitHub workflow, e.g. `push`.
    #[arg(long, value_name = "EVENT", help_heading = "Keyless identity")]
    pub certificate_github_workflow_trigger: Option<String>,

    /// Keyless: the commit SHA the GitHub workflow ran on.
    #[arg(long, value_name = "SHA", help_heading = "Keyless identity")]
    pub certificate_github_workflow_sha: Option<String>,

    /// Keyless: the GitHub workflow name.
    #[arg(long, value_name = "NAME", help_heading = "Keyless identity")]
    pub certificate_github_workflow_name: Option<String>,

    /// Accept a keyless signature from any identity of any issuer. Insecure: only for
    /// testing, or when something else checks the signer.
    #[arg(long, help_heading = "Keyless identity")]
    pub insecure_any_identity: bool,

    /// With --policy: accept keyless policy entries without an issuer (Kyverno policies
    /// often have none). The subject is still required, each such entry is warned about
    /// once, and every result it accepts says "issuer not checked". Insecure; `mansign
    /// policy convert` pins issuers instead.
    #[arg(long)]
    pub insecure_any_issuer: bool,

    /// With --policy: the kubeconfig for reading the Secrets and ConfigMaps the policy
    /// names as key sources (`k8s://NS/NAME`, Kyverno configMap context entries, a
    /// ManifestPolicy's secretRef/configMapRef). Default: $KUBECONFIG, else
    /// ~/.kube/config (in a pod: its service account). Read only when the policy names one.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context for reading the cluster (default: the current context).
    #[arg(long, value_name = "CONTEXT")]
    pub context: Option<String>,

    /// Read the cluster as this user (impersonation, as kubectl's --as; replaces the
    /// kubeconfig user's `as`).
    #[arg(long = "as", value_name = "USER")]
    pub as_user: Option<String>,

    /// With --as: a group to impersonate (repeatable).
    #[arg(long = "as-group", value_name = "GROUP")]
    pub as_groups: Vec<String>,

    #[command(flatten)]
    pub trust: TrustRootArg,

    #[command(flatten)]
    pub format: ReportFormatArg,

    /// Print the verified documents on stdout, as one YAML stream, and the report on
    /// stderr; when any document fails, print nothing on stdout. For a pipeline that must
    /// apply exactly what was verified (the Argo CD plugin in deploy/argocd-cmp/).
    #[arg(long)]
    pub print_verified: bool,

    /// Annotation domain of the signature annotations.
    #[arg(long, default_value = AnnotationDomain::DEFAULT, value_name = "DOMAIN")]
    pub annotation_domain: String,
}

impl VerifyArgs {
    /// The cluster these flags name (`--kubeconfig`, `--context`, `--as`, `--as-group`).
    pub(super) fn cluster_access(&self) -> crate::kube::ClusterAccess {
        let impersonate = (self.as_user.is_some() || !self.as_groups.is_empty()).then(|| {
            crate::kube::Impersonation {
                user: self.as_user.clone(),
                groups: self.as_groups.clone(),
                ..Default::default()
            }
        });
        crate::kube::ClusterAccess {
            kubeconfig: self.kubeconfig.clone(),
            context: self.context.clone(),
            impersonate,
        }
    }
}

/// `mansign verify`'s flags, resolved once: every flag is checked (the annotation domain,
/// `--max-age`, `--exclude`, the combinations of `--policy`, `--key`, the identity flags,
/// `--insecure-any-issuer`, the GitOps bindings and `--ignore-field`) before anything is
/// read: no trust root, key, policy, cluster or input. [`Check::build`] then reads what the
/// settings name, and [`Check::run`] verifies without checking a flag again.
pub struct VerifySettings {
    /// The flags as given, for the values used as they are.
    pub args: VerifyArgs,
    pub domain: AnnotationDomain,
    pub max_age: Option<jiff::SignedDuration>,
    pub selection: InputSelection,
    pub requirement: Requirement,
}

/// Who must have signed, as the flags say it (nothing read yet).
pub enum Requirement {
    /// `--policy FILE`: the policy decides (the signer and tolerance flags are not read).
    Policy(PathBuf),
    /// The command-line signers, with the GitOps bindings and ignore fields of the flags.
    Flags {
        signers: FlagSigners,
        gitops: GitopsBindings,
        ignore_fields: IgnoreFields,
    },
}

/// The command-line signers.
pub enum FlagSigners {
    /// `--key FILE`..., none of them a `k8s://`-style reference.
    Keys(Vec<PathBuf>),
    /// Keyless: the identity the `--certificate-*` flags require.
    Keyless(IdentityPolicy),
}

impl TryFrom<VerifyArgs> for VerifySettings {
    type Error = anyhow::Error;

    fn try_from(args: VerifyArgs) -> anyhow::Result<VerifySettings> {
        let domain = AnnotationDomain::new(&args.annotation_domain)?;
        let max_age = args
            .max_age
            .as_deref()
            .map(parse_duration)
            .transpose()
            .map_err(|e| anyhow::anyhow!("--max-age: {e}"))?;
        let selection = InputSelection::with_excludes(&args.exclude).map_err(anyhow::Error::msg)?;
        let requirement = match &args.policy {
            Some(path) => Requirement::Policy(path.clone()),
            None => flag_requirement(&args)?,
        };
        Ok(VerifySettings {
            args,
            domain,
            max_age,
            selection,
            requirement,
        })
    }
}

/// The signers, bindings and ignore fields of the flags (no `--policy`), each checked.
fn flag_requirement(args: &VerifyArgs) -> anyhow::Result<Requirement> {
    if args.insecure_any_issuer {
        bail!(
            "--insecure-any-issuer applies to policy files (--policy); on the command line \
             name the issuer with --certificate-oidc-issuer"
        );
    }
    let signers = if args.keys.is_empty() {
        FlagSigners::Keyless(identity_policy(args)?)
    } else {
        if has_identity_flags(args) {
            bail!(
                "--certificate-* and --insecure-any-identity apply to keyless verification; \
                 do not combine them with --key"
            );
        }
        for path in &args.keys {
            super::verify_hints::refuse_secret_reference(path)?;
        }
        FlagSigners::Keys(args.keys.clone())
    };
    if args.ignore_profile.contains(IgnoreProfile::KyvernoCompat) {
        eprintln!(
            "warning: --ignore-profile kyverno-compat matches fields as unanchored regexes \
             (e.g. `status` also hides `data.status`); use it only to migrate Kyverno policies"
        );
    }
    let gitops = gitops_bindings(args)?;
    for key in unbound_gitops_keys(args.ignore_profile, &gitops) {
        eprintln!(
            "note: {} is not bound; add {} to accept yours",
            key.what, key.flag
        );
    }
    let ignore_fields = super::verify_hints::ignore_fields(&args.ignore_fields)?;
    Ok(Requirement::Flags {
        signers,
        gitops,
        ignore_fields,
    })
}

pub fn run(settings: VerifySettings) -> anyhow::Result<Outcome> {
    let check = Check::build(&settings)?;
    check.run(&settings)
}

/// What a run checks, built from the resolved flags: the trust root, keys and policy are
/// read before any input is, so that `verify-resource` reports a policy or key it cannot
/// read before it asks the cluster for anything.
pub enum Check {
    /// `--policy`: the policy decides who must have signed each object.
    Policy(crate::policy::PolicySet),
    /// The command-line signers, tolerances and ignore fields; with `--key`, why the trust
    /// root could not be loaded, if it could not (see `needs_trust_root`).
    Flags(Box<Verifier>, Option<String>),
}

/// True when a document failed only because a key-signed set carries a Rekor bundle and
/// no trust root was loaded to check it: a key-only run loads the root when it needs it,
/// and that document needed it (issue 39 item 15).
fn needs_trust_root(verdict: &crate::verify::DocumentVerdict) -> bool {
    match &verdict.result {
        Err(Rejection::NoTrustedSignature { attempts }) => attempts
            .iter()
            .any(|a| a.failure == CheckFailure::BundleWithoutTrustRoot),
        _ => false,
    }
}

impl Check {
    /// Reads what the settings name: the trust root, then the policy, or the keys.
    pub fn build(settings: &VerifySettings) -> anyhow::Result<Check> {
        let args = &settings.args;
        let limits = Limits::default();
        let (signers, gitops, ignore_fields) = match &settings.requirement {
            Requirement::Policy(path) => {
                let trust = args.trust.load()?;
                return Ok(Check::Policy(load_policy(
                    args,
                    path,
                    trust,
                    limits,
                    settings.max_age,
                )?));
            }
            Requirement::Flags {
                signers,
                gitops,
                ignore_fields,
            } => (signers, gitops, ignore_fields),
        };
        // With `--key` (and no policy) the trust root only checks Rekor bundles, so a root
        // that cannot be loaded fails such a run only when a signature carries one
        // (`Check::run`); every other run needs it and fails here.
        let attestors = match signers {
            FlagSigners::Keyless(identity) => {
                vec![Attestor::Keyless(KeylessAttestor::new(
                    args.trust.load()?,
                    identity.clone(),
                ))]
            }
            FlagSigners::Keys(paths) => {
                let (trust, root_error) = match args.trust.load() {
                    Ok(trust) => (Some(trust), None),
                    Err(e) => (None, Some(format!("{e:#}"))),
                };
                let mut attestors = Vec::new();
                for path in paths {
                    let pem = std::fs::read_to_string(path)
                        .with_context(|| format!("{}: cannot read key", path.display()))?;
                    let mut key = TrustedKey::from_pem(path.display().to_string(), &pem)
                        .with_context(|| format!("{}: not a usable public key", path.display()))?;
                    if let Some(trust) = &trust {
                        key = key.with_trust_root(trust.clone());
                    }
                    attestors.push(Attestor::Key(key));
                }
                return Ok(Check::Flags(
                    Box::new(flag_verifier(attestors, settings, gitops, ignore_fields)),
                    root_error,
                ));
            }
        };
        Ok(Check::Flags(
            Box::new(flag_verifier(attestors, settings, gitops, ignore_fields)),
            None,
        ))
    }

    /// Reads the inputs (`-f`, the paths, or the objects `verify-resource` read) and
    /// verifies them, a window of files at a time (each window's documents on every core),
    /// so that memory does not grow with the number of files; the report is printed at
    /// the end, as one, and not at all when an input cannot be read.
    pub fn run(&self, settings: &VerifySettings) -> anyhow::Result<Outcome> {
        let args = &settings.args;
        let limits = Limits::default();
        let selection = &settings.selection;
        let mut report = StreamedReport::new(args.format.output, args.print_verified);
        let mut hint = LiveObjectHint::default();
        super::verify_hints::visit(
            args.preloaded.as_ref(),
            &args.inputs,
            &args.paths,
            selection,
            &limits,
            |files| match self {
                Check::Policy(policy) => {
                    let verdict = policy.verify_documents(
                        files.iter().flat_map(|f| &f.documents),
                        &RequestContext::default(),
                    );
                    report.add(
                        &files,
                        &verdict.objects,
                        ToString::to_string,
                        |o| o.is_verified(),
                        |o| o.to_json(),
                    )
                }
                Check::Flags(verifier, root_error) => {
                    let verdict =
                        verifier.verify_documents(files.iter().flat_map(|f| &f.documents));
                    if let Some(root_error) = root_error
                        && let Some(v) = verdict.documents.iter().find(|v| needs_trust_root(v))
                    {
                        let place = match &v.origin {
                            Some(o) => format!("{o}: {}", v.object),
                            None => v.object.to_string(),
                        };
                        bail!(
                            "{place}: its signature carries a Rekor bundle, which is checked \
                             against the trust root, and the trust root cannot be loaded: \
                             {root_error}"
                        );
                    }
                    if args.ignore_profile.is_none() {
                        hint.add(verifier, &files, &verdict);
                    }
                    report.add(
                        &files,
                        &verdict.documents,
                        ToString::to_string,
                        |d| d.is_verified(),
                        |d| d.to_json(),
                    )
                }
            },
        )?;
        hint.print();
        Ok(if report.finish()? {
            Outcome::Success
        } else {
            Outcome::VerificationFailed
        })
    }
}

/// Acceptances a `verify` run remembers per requirement. A run reads each file once, so
/// the cache only answers for an object signed alike more than once in the run; the
/// webhook's default (16,384 entries, for a cluster re-applying the same objects) would
/// fill with objects never seen again, and a run's memory would grow with its number of
/// files up to that bound (BENCHMARKS.md, "Scale").
const RUN_CACHE_ENTRIES: usize = 1024;

fn run_cache() -> Arc<crate::verify::VerificationCache> {
    Arc::new(crate::verify::VerificationCache::new(RUN_CACHE_ENTRIES))
}

/// The verifier of the command-line signers, with the flags' tolerances and ignore fields.
fn flag_verifier(
    attestors: Vec<Attestor>,
    settings: &VerifySettings,
    gitops: &GitopsBindings,
    ignore_fields: &IgnoreFields,
) -> Verifier {
    let args = &settings.args;
    let mut verifier = Verifier::new(attestors)
        .with_cache(run_cache())
        .with_domain(settings.domain.clone())
        .with_limits(Limits::default())
        .with_tolerances(Tolerances {
            profiles: args.ignore_profile,
            digest_pinning: args.allow_digest_pinning,
            namespace_binding: args.bind_namespaces.clone(),
            status_kinds: args.status_kinds.clone(),
            gitops: gitops.clone(),
            admission: None,
        })
        .with_ignore_fields(ignore_fields.clone());
    if let Some(max_age) = settings.max_age {
        verifier = verifier.with_max_age(max_age);
    }
    verifier
}

/// `verify --policy`: the policy file, with `--max-age` tightening each rule's own.
fn load_policy(
    args: &VerifyArgs,
    path: &std::path::Path,
    trust: Arc<TrustRoot>,
    limits: Limits,
    max_age: Option<jiff::SignedDuration>,
) -> anyhow::Result<crate::policy::PolicySet> {
    let options = LoadOptions {
        trust_root: Some(trust),
        limits,
        insecure_any_issuer: args.insecure_any_issuer,
    };
    let mut policy = load_policy_file(path, &options)?;
    if !policy.key_references.is_empty() {
        // Public keys named by reference are read from the cluster once, then the policy
        // is loaded with them; any reference without a usable value is an error.
        let keys = read_key_references(path, &policy.key_references, args)?;
        policy = load_file_with_keys(path, &options, &keys)?;
        let unresolved = policy.unresolved_keys();
        if !unresolved.is_empty() {
            bail!("{}", unresolved.join("\n"));
        }
    }
    if let Some(max_age) = max_age {
        // The flag can only tighten a policy's own maxAge, never loosen it.
        for rule in &mut policy.rules {
            let effective = rule.verifier.max_age().map_or(max_age, |p| p.min(max_age));
            rule.verifier = rule.verifier.clone().with_max_age(effective);
        }
    }
    for rule in &mut policy.rules {
        rule.verifier = rule.verifier.clone().with_cache(run_cache());
    }
    for note in policy.notes.iter().chain(&policy.offline_notes()) {
        eprintln!("note: {note}");
    }
    Ok(policy)
}

/// Reads the Secrets and ConfigMaps `references` name through `--kubeconfig`/`--context`
/// (the library's API reader, as the webhook reads them: no kubectl needed). Without cluster
/// access, an error naming the references; a missing object or data key is recorded as the
/// reference's reason (reported by the load that follows, with the policy location).
fn read_key_references(
    path: &std::path::Path,
    references: &[crate::policy::KeyReference],
    args: &VerifyArgs,
) -> anyhow::Result<ResolvedKeys> {
    let limits = Limits::default();
    let names = references
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let access = args.cluster_access();
    let client = access
        .config(&limits)
        .and_then(|c| KubeClient::new(&c, &limits))
        .map_err(|reason| {
            anyhow::anyhow!(
                "{}: the policy reads public keys from the cluster ({names}), but there is no \
                 cluster access: {reason}; pass --kubeconfig FILE (and --context NAME)",
                path.display()
            )
        })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut keys = ResolvedKeys::new();
    for reference in references {
        let read = runtime.block_on(client.get(
            &reference.namespace,
            reference.object.resource(),
            &reference.name,
        ));
        let value = match read {
            Ok(Some(object)) => reference.value_in(&object),
            Ok(None) => Err(KeyValueError::Missing {
                reference: reference.clone(),
                watched: false,
            }),
            Err(source) => Err(KeyValueError::Unreadable {
                reference: reference.clone(),
                origin: client.origin().to_string(),
                source: Box::new(source),
            }),
        };
        keys.insert(reference.clone(), value);
    }
    Ok(keys)
}

/// The cosign-style identity flags as a policy; refuses a policy without an issuer or
/// without an identity unless `--insecure-any-identity`.
fn identity_policy(args: &VerifyArgs) -> anyhow::Result<IdentityPolicy> {
    let exact = [
        (Claim::Subject, &args.certificate_identity),
        (Claim::Issuer, &args.certificate_oidc_issuer),
        (
            Claim::GithubWorkflowRepository,
            &args.certificate_github_workflow_repository,
        ),
        (
            Claim::GithubWorkflowRef,
            &args.certificate_github_workflow_ref,
        ),
        (
            Claim::GithubWorkflowTrigger,
            &args.certificate_github_workflow_trigger,
        ),
        (
            Claim::GithubWorkflowSha,
            &args.certificate_github_workflow_sha,
        ),
        (
            Claim::GithubWorkflowName,
            &args.certificate_github_workflow_name,
        ),
    ];
    let regex = [
        (Claim::Subject, &args.certificate_identity_regexp),
        (Claim::Issuer, &args.certificate_oidc_issuer_regexp),
    ];
    let mut b = given_claims(IdentityPolicy::builder(), &exact, &regex);
    if args.insecure_any_identity {
        b = b.insecure_any_identity();
    }
    b.build().map_err(|e| match e {
        IdentityPolicyError::MissingIssuer => anyhow::anyhow!(
            "keyless verification (no --key) needs --certificate-oidc-issuer or \
             --certificate-oidc-issuer-regexp; use --insecure-any-identity to accept any issuer"
        ),
        IdentityPolicyError::MissingIdentity => anyhow::anyhow!(
            "keyless verification (no --key) needs --certificate-identity or \
             --certificate-identity-regexp or --certificate-github-workflow-repository (the \
             other --certificate-github-workflow-* claims are shared by every repository and \
             name nobody); use --insecure-any-identity to accept any identity"
        ),
        other => anyhow::Error::new(other),
    })
}

fn has_identity_flags(args: &VerifyArgs) -> bool {
    [
        &args.certificate_identity,
        &args.certificate_identity_regexp,
        &args.certificate_oidc_issuer,
        &args.certificate_oidc_issuer_regexp,
        &args.certificate_github_workflow_repository,
        &args.certificate_github_workflow_ref,
        &args.certificate_github_workflow_trigger,
        &args.certificate_github_workflow_sha,
        &args.certificate_github_workflow_name,
    ]
    .iter()
    .any(|v| v.is_some())
        || args.insecure_any_identity
}

/// The GitOps bindings of the flags; a binding for a profile not selected is a usage error
/// (it would silently do nothing).
fn gitops_bindings(args: &VerifyArgs) -> anyhow::Result<GitopsBindings> {
    let profiles = args.ignore_profile;
    let argocd = !args.argocd_applications.is_empty() || !args.argocd_installation_ids.is_empty();
    if argocd && !profiles.contains(IgnoreProfile::Argocd) {
        anyhow::bail!(
            "--argocd-application and --argocd-installation-id need --ignore-profile argocd"
        );
    }
    if !args.flux_kustomizations.is_empty() && !profiles.contains(IgnoreProfile::Flux) {
        anyhow::bail!("--flux-kustomization needs --ignore-profile flux");
    }
    Ok(GitopsBindings {
        argocd_applications: args.argocd_applications.clone(),
        argocd_installation_ids: args.argocd_installation_ids.clone(),
        flux_kustomizations: args.flux_kustomizations.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        verify: VerifyArgs,
    }

    fn resolve(flags: &[&str]) -> anyhow::Result<VerifySettings> {
        let args = Flags::try_parse_from(std::iter::once("verify").chain(flags.iter().copied()))
            .expect("the flags parse")
            .verify;
        VerifySettings::try_from(args)
    }

    /// A conflict is refused by the resolve step itself: the input, key, policy and trust
    /// root named do not exist, so any read would fail with another error.
    #[test]
    fn conflicting_verify_flags_are_refused_before_anything_is_read() {
        let missing = [
            "-f",
            "/nonexistent/in.yaml",
            "--trusted-root",
            "/nonexistent/root.json",
        ];
        for (flags, error) in [
            (
                vec![
                    "--key",
                    "/nonexistent/k.pub",
                    "--certificate-identity",
                    "a@example.com",
                ],
                "do not combine them with --key",
            ),
            (
                vec!["--insecure-any-issuer", "--key", "/nonexistent/k.pub"],
                "--insecure-any-issuer applies to policy files",
            ),
            (
                vec!["--certificate-identity", "a@example.com"],
                "needs --certificate-oidc-issuer",
            ),
            (
                vec![
                    "--key",
                    "/nonexistent/k.pub",
                    "--flux-kustomization",
                    "ns/name",
                ],
                "--flux-kustomization needs --ignore-profile flux",
            ),
            (
                vec!["--key", "k8s://ns/name"],
                "key references are not read by --key",
            ),
            (
                vec!["--policy", "/nonexistent/p.yaml", "--max-age", "soon"],
                "--max-age",
            ),
        ] {
            let all: Vec<&str> = missing.iter().copied().chain(flags.clone()).collect();
            let err = resolve(&all).err().map(|e| format!("{e:#}"));
            assert!(
                err.as_deref().is_some_and(|e| e.contains(error)),
                "{flags:?}: {err:?}"
            );
        }
        // With --policy the signer flags are the policy's business: it resolves.
        let all: Vec<&str> = missing
            .iter()
            .copied()
            .chain(["--policy", "/nonexistent/p.yaml"])
            .collect();
        let settings = resolve(&all).expect("resolves");
        assert!(matches!(settings.requirement, Requirement::Policy(_)));
    }
}
