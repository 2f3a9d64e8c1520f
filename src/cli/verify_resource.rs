//! `mansign verify-resource KIND[/NAME]` (and `kubectl mansign verify-resource`): verifies
//! live objects read with `kubectl get -o json`, with the `kubernetes` ignore profile by
//! default, one line per object; every `verify` flag applies.
//!
//! kubectl is run as a child process with a fixed argument list (no shell); the resource,
//! namespace and context are checked first so none of them can be read as a kubectl flag,
//! and its output is read up to the input size limit, no further.

use super::Outcome;
use super::verify::VerifyArgs;
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

    /// The kubectl program. Default: `kubectl` on PATH.
    #[arg(
        long,
        env = "MANSIGN_KUBECTL",
        default_value = "kubectl",
        value_name = "PROGRAM"
    )]
    pub kubectl: PathBuf,

    #[command(flatten)]
    pub verify: VerifyArgs,
}

pub fn run(mut args: VerifyResourceArgs) -> anyhow::Result<Outcome> {
    if !args.verify.inputs.is_empty() || !args.verify.paths.is_empty() {
        bail!("verify-resource reads objects from the cluster; use `mansign verify` for files");
    }
    let kubectl_args = kubectl_arguments(&args)?;
    // Every verify flag is checked (trust root, keys, identity, policy) before the cluster
    // is asked for anything.
    let check = super::verify::Check::from_flags(&args.verify)?;
    let limits = Limits::default();
    let shown = format!("kubectl {}", kubectl_args.join(" "));
    let bytes = run_kubectl(&args.kubectl, &kubectl_args, limits.max_input_bytes)
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
    args.verify.preloaded = Some(vec![file]);
    check.run(&args.verify)
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
