//! `mansign verify-resource KIND[/NAME]` (and `kubectl mansign verify-resource`): verifies
//! live objects, with the `kubernetes` ignore profile by default, one line per object;
//! every `verify` flag applies.
//!
//! The objects are read through mansign's own client (`kube/`), the same way into the
//! cluster as `verify --policy`'s key references and the webhook's: `KIND` resolved by API
//! discovery, the objects read up to the input size limit, no further.
//!
//! Deprecated, kept for one release: `--kubectl PROGRAM` (or `MANSIGN_KUBECTL`) still reads
//! through `kubectl get -o json` instead, run as a child process with a fixed argument list
//! (no shell); the resource, namespace and context are checked first so none of them can be
//! read as a kubectl flag.

use super::outcome::Outcome;
use super::verify::{VerifyArgs, VerifySettings};
use crate::kube::{KubeClient, KubeError, Scope};
use crate::limits::Limits;
use crate::manifest::{Source, load_reader};
use anyhow::{Context, bail};
use clap::Args;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Most bytes of kubectl's stderr kept for an error message.
const MAX_STDERR_BYTES: u64 = 16 * 1024;

#[derive(Debug, Args)]
pub struct VerifyResourceArgs {
    /// What to read, as `kubectl get` takes it: `deployments`, `deployment/web`,
    /// `policyexceptions.kyverno.io/backup`.
    #[arg(value_name = "KIND[/NAME]")]
    pub resource: String,

    /// Namespace of the objects (default: the context's namespace).
    #[arg(
        short = 'n',
        long,
        value_name = "NAMESPACE",
        conflicts_with = "all_namespaces"
    )]
    pub namespace: Option<String>,

    /// Read the objects of every namespace.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,

    /// Deprecated: read the objects by running this kubectl (`kubectl get -o json`) instead
    /// of through mansign's own client. Without it, mansign reads the cluster itself, the
    /// same way as `verify --policy` (kubeconfig, context, exec plugins, proxy).
    #[arg(long, env = "MANSIGN_KUBECTL", value_name = "PROGRAM")]
    pub kubectl: Option<PathBuf>,

    #[command(flatten)]
    pub verify: VerifyArgs,
}

/// `mansign verify-resource`'s flags, resolved once: files refused, the kubectl argument
/// list built and checked (even when mansign reads the cluster itself), every verify flag
/// resolved ([`VerifySettings`]) and `--as` refused with `--kubectl`, before the trust root,
/// keys, policy or the cluster are read.
pub struct VerifyResourceSettings {
    /// `KIND[/NAME]`.
    pub resource: String,
    pub namespace: Option<String>,
    pub all_namespaces: bool,
    /// Deprecated `--kubectl PROGRAM`, with the arguments it is run with.
    pub kubectl: Option<(PathBuf, Vec<String>)>,
    pub verify: VerifySettings,
}

impl TryFrom<VerifyResourceArgs> for VerifyResourceSettings {
    type Error = anyhow::Error;

    fn try_from(args: VerifyResourceArgs) -> anyhow::Result<VerifyResourceSettings> {
        if !args.verify.inputs.is_empty() || !args.verify.paths.is_empty() {
            bail!("verify-resource reads objects from the cluster; use `mansign verify` for files");
        }
        let kubectl_args = kubectl_arguments(&args)?;
        let VerifyResourceArgs {
            resource,
            namespace,
            all_namespaces,
            kubectl,
            verify,
        } = args;
        let verify = VerifySettings::try_from(verify)?;
        if kubectl.is_some() && (verify.args.as_user.is_some() || !verify.args.as_groups.is_empty())
        {
            bail!("--as and --as-group are not passed to --kubectl; drop --kubectl");
        }
        Ok(VerifyResourceSettings {
            resource,
            namespace,
            all_namespaces,
            kubectl: kubectl.map(|program| (program, kubectl_args)),
            verify,
        })
    }
}

pub fn run(mut settings: VerifyResourceSettings) -> anyhow::Result<Outcome> {
    // The trust root, keys and policy are read before the cluster is asked for anything.
    let check = super::verify::Check::build(&settings.verify)?;
    let limits = Limits::default();
    let Some((kubectl, kubectl_args)) = &settings.kubectl else {
        let (shown, bytes) = read_cluster(&settings, &limits)?;
        let file = load_reader(
            Source::Named(shown),
            PathBuf::from("cluster.json"),
            bytes.as_slice(),
            &limits,
        )?;
        settings.verify.args.preloaded = Some(vec![file]);
        return check.run(&settings.verify);
    };
    eprintln!(
        "warning: --kubectl / MANSIGN_KUBECTL is deprecated: verify-resource reads the cluster \
         itself (the same way as verify --policy); drop the option to do so"
    );
    let shown = format!("kubectl {}", kubectl_args.join(" "));
    let bytes = run_kubectl(kubectl, kubectl_args, limits.max_input_bytes)
        .with_context(|| shown.clone())?;
    if is_empty_list(&bytes) {
        bail!("{shown}: no objects found");
    }
    let file = load_reader(
        Source::Named(shown.clone()),
        PathBuf::from("kubectl.json"),
        bytes.as_slice(),
        &limits,
    )?;
    settings.verify.args.preloaded = Some(vec![file]);
    check.run(&settings.verify)
}

/// Reads the objects through mansign's client: the label of what was read (the server and
/// the URL path) and the objects as JSON, one object or a `List`, at most the input limit.
fn read_cluster(
    settings: &VerifyResourceSettings,
    limits: &Limits,
) -> anyhow::Result<(String, Vec<u8>)> {
    let (kind, name) = match settings.resource.split_once('/') {
        Some((kind, name)) => (kind, Some(name)),
        None => (settings.resource.as_str(), None),
    };
    let config = settings
        .verify
        .args
        .cluster_access()
        .config(limits)
        .map_err(|reason| anyhow::anyhow!("no cluster access: {reason}"))?;
    let scope = match (&settings.namespace, settings.all_namespaces) {
        (_, true) => Scope::AllNamespaces,
        (Some(ns), false) => Scope::Namespace(ns.clone()),
        (None, false) => Scope::Namespace(
            config
                .namespace
                .clone()
                .unwrap_or_else(|| "default".to_string()),
        ),
    };
    let client = KubeClient::new(&config, limits)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let limit = limits.max_input_bytes;
    let at = || format!("{} ({})", client.server(), client.origin());
    let (path, objects) = runtime
        .block_on(async {
            let resource = client.resolve(kind, limits.max_document_bytes).await?;
            client.read_objects(&resource, &scope, name, limit).await
        })
        .map_err(|e| match e {
            KubeError::TooLarge { limit } => {
                anyhow::anyhow!(
                    "{}: output larger than {limit} bytes: select fewer objects",
                    at()
                )
            }
            e => anyhow::Error::new(e).context(at()),
        })?;
    let shown = format!("{}{path}", client.server());
    if objects.is_empty() {
        bail!("{shown}: no objects found");
    }
    let value = match (name, objects.as_slice()) {
        (Some(_), [one]) => one.clone(),
        _ => serde_json::json!({"apiVersion": "v1", "kind": "List", "items": objects}),
    };
    let bytes = serde_json::to_vec(&value)?;
    if bytes.len() > limit {
        bail!("{shown}: output larger than {limit} bytes: select fewer objects");
    }
    Ok((shown, bytes))
}

/// `[--context C] get RESOURCE -o json [-n NS | -A]`, each part checked first.
fn kubectl_arguments(args: &VerifyResourceArgs) -> anyhow::Result<Vec<String>> {
    let resource = &args.resource;
    let well_formed = !resource.is_empty()
        && !resource.starts_with('-')
        && resource.split('/').count() <= 2
        && resource.split('/').all(|p| !p.is_empty())
        && resource
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '/'));
    if !well_formed {
        bail!("{resource:?}: not a KIND or KIND/NAME (letters, digits, `.`, `-`, `_`, `:`)");
    }
    let mut out = Vec::new();
    if let Some(context) = &args.verify.context {
        if context.is_empty() || context.starts_with('-') || context.chars().any(char::is_control) {
            bail!("--context {context:?}: not a context name");
        }
        out.push(format!("--context={context}"));
    }
    if let Some(kubeconfig) = &args.verify.kubeconfig {
        out.push(format!("--kubeconfig={}", kubeconfig.display()));
    }
    out.extend(["get".into(), resource.clone(), "-o".into(), "json".into()]);
    if let Some(ns) = &args.namespace {
        let label = !ns.is_empty()
            && ns.len() <= 63
            && !ns.starts_with('-')
            && ns
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !label {
            bail!("--namespace {ns:?}: not a namespace name (RFC 1123 label)");
        }
        out.push(format!("--namespace={ns}"));
    }
    if args.all_namespaces {
        out.push("--all-namespaces".into());
    }
    Ok(out)
}

/// Runs kubectl and returns its stdout, at most `limit` bytes; a larger output, a failure
/// to start it or a non-zero exit is an error (with kubectl's own message).
fn run_kubectl(program: &PathBuf, args: &[String], limit: usize) -> anyhow::Result<Vec<u8>> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {}", program.display()))?;
    let stderr = child.stderr.take().map(|mut e| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = (&mut e).take(MAX_STDERR_BYTES).read_to_end(&mut text);
            // Drain the rest so kubectl never blocks on a full pipe.
            let _ = std::io::copy(&mut e, &mut std::io::sink());
            text
        })
    });
    let mut bytes = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        stdout
            .take(limit as u64 + 1)
            .read_to_end(&mut bytes)
            .context("cannot read kubectl's output")?;
    }
    if bytes.len() > limit {
        let _ = child.kill();
        let _ = child.wait();
        bail!("output larger than {limit} bytes: select fewer objects");
    }
    let status = child.wait().context("kubectl did not finish")?;
    let stderr = stderr
        .and_then(|h| h.join().ok())
        .map(|t| String::from_utf8_lossy(&t).trim().to_string())
        .unwrap_or_default();
    if !status.success() {
        bail!("failed ({status}): {stderr}");
    }
    Ok(bytes)
}

/// A `List` with no items (`kubectl get KIND` where there is none).
fn is_empty_list(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(bytes).is_ok_and(|v| {
        v.get("kind").and_then(|k| k.as_str()) == Some("List")
            && v.get("items")
                .and_then(|i| i.as_array())
                .is_none_or(Vec::is_empty)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        resource: VerifyResourceArgs,
    }

    fn resolve(flags: &[&str]) -> anyhow::Result<VerifyResourceSettings> {
        let args =
            Flags::try_parse_from(std::iter::once("verify-resource").chain(flags.iter().copied()))
                .expect("the flags parse")
                .resource;
        VerifyResourceSettings::try_from(args)
    }

    /// A conflict is refused by the resolve step itself, before the trust root (named, and
    /// missing), the key or the cluster is read, and before kubectl could run.
    #[test]
    fn conflicting_verify_resource_flags_are_refused_before_anything_is_read() {
        let base = [
            "--key",
            "/nonexistent/k.pub",
            "--trusted-root",
            "/nonexistent/root.json",
            "--kubeconfig",
            "/nonexistent/kubeconfig",
        ];
        for (flags, error) in [
            (
                vec![
                    "configmaps",
                    "--kubectl",
                    "/nonexistent/kubectl",
                    "--as",
                    "bob",
                ],
                "--as and --as-group are not passed to --kubectl",
            ),
            (
                vec!["configmaps", "-f", "x.yaml"],
                "use `mansign verify` for files",
            ),
            (vec!["a/b/c"], "not a KIND or KIND/NAME"),
            (
                vec!["configmaps", "-n", "Not_A_Namespace"],
                "not a namespace name",
            ),
            (
                vec!["configmaps", "--certificate-identity", "a@example.com"],
                "do not combine them with --key",
            ),
        ] {
            let all: Vec<&str> = flags.clone().into_iter().chain(base).collect();
            let err = resolve(&all).err().map(|e| format!("{e:#}"));
            assert!(
                err.as_deref().is_some_and(|e| e.contains(error)),
                "{flags:?}: {err:?}"
            );
        }
        let settings = resolve(
            &["configmaps", "--kubectl", "/nonexistent/kubectl", "-A"]
                .into_iter()
                .chain(base)
                .collect::<Vec<_>>(),
        )
        .expect("resolves");
        let (_, kubectl_args) = settings.kubectl.expect("--kubectl kept");
        assert!(kubectl_args.contains(&"--all-namespaces".to_string()));
    }
}
