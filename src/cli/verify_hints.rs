//! What `mansign verify` adds around the library for people with cosign and kubectl
//! habits: positional paths, `--ignore-field`, a refusal that explains `k8s://` keys, and the
//! hint that a failed document looks like a live object.

use crate::limits::Limits;
use crate::manifest::{
    IgnoreFields, IgnoreProfile, InputSelection, ManifestFile, Tolerances, load_inputs_with,
};
use crate::policy::mansign_field_pattern;
use crate::verify::{Verdict, Verifier};
use std::path::{Path, PathBuf};

/// The files to verify: what `verify-resource` read, else every input (the `-f` values,
/// then the positional paths); none at all is a usage error.
pub fn load(
    preloaded: Option<&Vec<ManifestFile>>,
    flagged: &[PathBuf],
    positional: &[PathBuf],
    selection: &InputSelection,
    limits: &Limits,
) -> anyhow::Result<Vec<ManifestFile>> {
    if let Some(files) = preloaded {
        return Ok(files.clone());
    }
    let inputs: Vec<PathBuf> = flagged.iter().chain(positional).cloned().collect();
    if inputs.is_empty() {
        anyhow::bail!("nothing to verify: give -f PATH (or paths) of the signed manifests");
    }
    Ok(load_inputs_with(&inputs, selection, limits)?)
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
/// `kubectl get`: say so on stderr, once. Only the tolerances change for the second look,
/// never the signers.
pub fn live_object_hint(verifier: &Verifier, files: &[ManifestFile], verdict: &Verdict) {
    let failed_on_diff: Vec<_> = verdict
        .documents
        .iter()
        .filter(|d| matches!(&d.result, Err(r) if r.check() == "diff"))
        .collect();
    if failed_on_diff.is_empty() {
        return;
    }
    let tolerant = verifier.clone().with_tolerances(Tolerances {
        profiles: IgnoreProfile::Kubernetes.into(),
        ..verifier.tolerances().clone()
    });
    let all_live = files
        .iter()
        .flat_map(|f| &f.documents)
        .filter(|doc| {
            failed_on_diff
                .iter()
                .any(|d| d.origin.as_ref() == Some(&doc.origin))
        })
        .all(|doc| tolerant.verify_document(doc).is_verified());
    if all_live {
        eprintln!(
            "hint: every difference of the failed document(s) is a field the API server \
             populates: this looks like a live object (`kubectl get -o yaml`); try \
             `--ignore-profile kubernetes`"
        );
    }
}
