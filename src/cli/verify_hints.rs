//! What `mansign verify` adds around the library for people with cosign and kubectl
//! habits: positional paths, `--ignore-field`, a refusal that explains `k8s://` keys, and the
//! hint that a failed document looks like a live object.

use crate::limits::Limits;
use crate::manifest::{
    INPUT_WINDOW, IgnoreFields, IgnoreProfile, InputSelection, ManifestFile, Tolerances,
    visit_inputs_with,
};
use crate::policy::mansign_field_pattern;
use crate::verify::{Verdict, Verifier};
use std::path::{Path, PathBuf};

/// The files to verify, handed to `visit` a window at a time (at most
/// [`INPUT_WINDOW`] files, in input order; see `manifest::visit_inputs_with`): what
/// `verify-resource` read (one window), else every input (the `-f` values, then the
/// positional paths); none at all is a usage error.
pub fn visit(
    preloaded: Option<&Vec<ManifestFile>>,
    flagged: &[PathBuf],
    positional: &[PathBuf],
    selection: &InputSelection,
    limits: &Limits,
    visit: impl FnMut(Vec<ManifestFile>) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut visit = visit;
    if let Some(files) = preloaded {
        return visit(files.clone());
    }
    let inputs: Vec<PathBuf> = flagged.iter().chain(positional).cloned().collect();
    if inputs.is_empty() {
        anyhow::bail!("nothing to verify: give -f PATH (or paths) of the signed manifests");
    }
    visit_inputs_with(&inputs, selection, limits, INPUT_WINDOW, visit)
}

/// `--ignore-field` values as patterns, in the syntax of a `ManifestPolicy`. A path written
/// the Kyverno way (`metadata.labels.app.kubernetes.io/name`) would match nothing here, so
/// it is refused with the spelling that does.
pub fn ignore_fields(fields: &[String]) -> anyhow::Result<IgnoreFields> {
    let patterns = fields
        .iter()
        .map(|f| mansign_field_pattern(f).map_err(|e| anyhow::anyhow!("--ignore-field: {e}")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(IgnoreFields(patterns))
}

/// `sign --key k8s://ns/name` or `sign --key awskms://...` (cosign key references) would
/// otherwise fail as a missing file; the advice is for signing, not for verifying.
pub fn refuse_signing_key_reference(path: &Path) -> anyhow::Result<()> {
    let text = path.to_string_lossy();
    if let Some((scheme, _)) = text.split_once("://")
        && !path.exists()
    {
        if scheme == "k8s" {
            anyhow::bail!(
                "--key {text}: sign --key reads a cosign private key file, not a k8s:// \
                 reference; export the Secret's key (e.g. `kubectl get secret -n NS NAME -o \
                 jsonpath='{{.data.cosign\\.key}}' | base64 -d > cosign.key`, its password in \
                 COSIGN_PASSWORD) and pass that file, or sign keylessly (no --key)"
            );
        }
        anyhow::bail!(
            "--key {text}: {scheme}:// keys (KMS, hardware) cannot sign here: sign --key reads \
             a cosign private key file (`mansign generate-key-pair`), or sign keylessly (no --key)"
        );
    }
    Ok(())
}

/// `--key k8s://ns/name` (a cosign key reference) would otherwise fail as a missing file.
pub fn refuse_secret_reference(path: &Path) -> anyhow::Result<()> {
    let text = path.to_string_lossy();
    if let Some((scheme, _)) = text.split_once("://")
        && !path.exists()
    {
        anyhow::bail!(
            "--key {text}: {scheme}:// key references are not read by --key (nor KMS keys); \
             a policy can name a Secret (`keys: {{publicKeys: k8s://NS/NAME}}`, read with \
             `verify --policy FILE --kubeconfig ...`), or export the public key to a PEM file \
             (e.g. `kubectl get secret -n NS NAME -o jsonpath='{{.data.cosign\\.pub}}' | \
             base64 -d > cosign.pub`) and pass that file"
        );
    }
    Ok(())
}

/// When documents failed only because of differences that `--ignore-profile kubernetes`
/// tolerates (server-populated fields), they are most likely live objects read with
/// `kubectl get`: say so on stderr, once, at the end of the run. Only the tolerances change
/// for the second look, never the signers. Fed window by window ([`LiveObjectHint::add`]).
pub struct LiveObjectHint {
    /// Documents that failed on their differences so far.
    failed_on_diff: usize,
    /// Whether every one of them verifies with the kubernetes profile.
    all_live: bool,
}

impl Default for LiveObjectHint {
    fn default() -> Self {
        LiveObjectHint {
            failed_on_diff: 0,
            all_live: true,
        }
    }
}

impl LiveObjectHint {
    /// Looks at the documents of one window (`files`) and their verdict.
    pub fn add(&mut self, verifier: &Verifier, files: &[ManifestFile], verdict: &Verdict) {
        let failed_on_diff: Vec<_> = verdict
            .documents
            .iter()
            .filter(|d| matches!(&d.result, Err(r) if r.check() == "diff"))
            .collect();
        if failed_on_diff.is_empty() {
            return;
        }
        self.failed_on_diff += failed_on_diff.len();
        if !self.all_live {
            return;
        }
        let tolerant = verifier.clone().with_tolerances(Tolerances {
            profiles: IgnoreProfile::Kubernetes.into(),
            ..verifier.tolerances().clone()
        });
        self.all_live = files
            .iter()
            .flat_map(|f| &f.documents)
            .filter(|doc| {
                failed_on_diff
                    .iter()
                    .any(|d| d.origin.as_ref() == Some(&doc.origin))
            })
            .all(|doc| tolerant.verify_document(doc).is_verified());
    }

    /// Prints the hint if it applies.
    pub fn print(&self) {
        if self.failed_on_diff > 0 && self.all_live {
            eprintln!(
                "hint: every difference of the failed document(s) is a field the API server \
                 populates: this looks like a live object (`kubectl get -o yaml`); try \
                 `--ignore-profile kubernetes`"
            );
        }
    }
}
