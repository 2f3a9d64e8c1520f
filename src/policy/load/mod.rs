//! Loading policy files into a [`PolicySet`]: each document read with the manifest reader,
//! then handed to its format's loader (`mansign/` for `ManifestPolicy`, `kyverno/` for
//! `ClusterPolicy`/`Policy`); `context.rs` holds what both formats build with.

pub(in crate::policy) mod context;

use self::context::{LoadContext, LoadOptions, PolicyError, read_documents};
use crate::policy::key_ref::ResolvedKeys;
use crate::policy::model::{Location, PolicySet};
use crate::policy::{kyverno, mansign, typed};
use serde_json::Value;
use std::cell::RefCell;
use std::path::Path;

/// Loads a policy file (several documents allowed, both formats may be mixed).
pub fn load_file(path: &Path, options: &LoadOptions) -> Result<PolicySet, PolicyError> {
    load_file_with_keys(path, options, &ResolvedKeys::default())
}

/// [`load_file`] with the values of the Kubernetes key references the policies name
/// ([`PolicySet::key_references`]): a reference `keys` holds no usable value for leaves
/// its rule unresolved
/// ([`PolicyRule::unresolved_keys`](crate::policy::PolicyRule::unresolved_keys)); the load
/// itself succeeds.
pub fn load_file_with_keys(
    path: &Path,
    options: &LoadOptions,
    keys: &ResolvedKeys,
) -> Result<PolicySet, PolicyError> {
    let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    load_str_with_keys(&path.display().to_string(), &text, &base, options, keys)
}

/// Loads policy documents held in memory. `origin` names them in errors; relative paths in
/// mansign policies (`keys.path`, `keyless.trustedRoot`, `certificates.certPath`,
/// `certificates.certChainPath`) are read from `base_dir`.
pub fn load_str(
    origin: &str,
    text: &str,
    base_dir: &Path,
    options: &LoadOptions,
) -> Result<PolicySet, PolicyError> {
    load_str_with_keys(origin, text, base_dir, options, &ResolvedKeys::default())
}

/// [`load_str`] with the values of the policies' key references (see
/// [`load_file_with_keys`]).
pub fn load_str_with_keys(
    origin: &str,
    text: &str,
    base_dir: &Path,
    options: &LoadOptions,
    keys: &ResolvedKeys,
) -> Result<PolicySet, PolicyError> {
    let mut ctx = LoadContext {
        options,
        base_dir,
        default_trust: options.trust_root.clone(),
        document_any_issuer: false,
        named_files: RefCell::new(Vec::new()),
        keys,
        key_references: Vec::new(),
        unresolved: Vec::new(),
        notes: Vec::new(),
        config_maps: Default::default(),
    };
    let mut set = PolicySet::default();
    // The manifest reader: kubectl's stream rules, both YAML readings, budgets. A policy is
    // applied to the cluster with kubectl too, so it must read the same way.
    let documents = read_documents(text, &options.limits).map_err(|(document, reason)| {
        PolicyError::Syntax {
            origin: origin.into(),
            document,
            reason,
        }
    })?;
    for (position, value) in documents {
        let document = position + 1;
        let syntax = |reason: String| PolicyError::Syntax {
            origin: origin.into(),
            document,
            reason,
        };
        let field = |name: &str| {
            value
                .get(name)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let (api_version, kind) = (field("apiVersion"), field("kind"));
        let loc = Location {
            origin: origin.into(),
            document,
            field: String::new(),
        };
        let loaded = match (api_version.as_str(), kind.as_str()) {
            (mansign::API_VERSION, mansign::KIND) => {
                let doc: mansign::ManifestPolicyDocument =
                    typed::from_value(&value).map_err(syntax)?;
                mansign::load(doc, &loc, &mut ctx)?
            }
            ("kyverno.io/v1" | "kyverno.io/v2beta1", "ClusterPolicy" | "Policy") => {
                kyverno::refuse_variables(&value, &loc)?;
                let doc: kyverno::KyvernoPolicyDocument =
                    typed::from_value(&value).map_err(syntax)?;
                kyverno::load(doc, &loc, &mut ctx)?
            }
            _ => {
                return Err(PolicyError::UnknownKind {
                    origin: origin.into(),
                    document,
                    api_version,
                    kind,
                });
            }
        };
        set.extend(loaded);
    }
    if set.rules.is_empty() {
        return Err(PolicyError::NoRules {
            origin: origin.into(),
        });
    }
    set.extend(PolicySet {
        named_files: ctx.named_files.into_inner(),
        key_references: ctx.key_references,
        ..PolicySet::default()
    });
    Ok(set)
}

#[cfg(test)]
mod tests {
    /// The webhook shares one policy set across its worker threads (and swaps it on reload).
    #[test]
    fn policy_sets_can_be_shared_across_threads() {
        fn shareable<T: Send + Sync + 'static>(_: &T) {}
        shareable(&super::PolicySet::default());
        shareable(&super::LoadOptions::default());
    }

    const KYVERNO_RULE: &str = concat!(
        "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: p}\nspec:\n",
        "  rules:\n  - name: r\n    match: {any: [{resources: {kinds: [ConfigMap]}}]}\n",
        "    validate:\n      manifests:\n        attestors:\n        - entries:\n",
    );
    const MANIFEST_POLICY: &str = concat!(
        "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata: {name: p}\n",
        "spec:\n  attestors:\n  - entries:\n",
    );

    /// `count: 0` is each format's own: every entry in Kyverno, refused in a
    /// `ManifestPolicy` (nested sets too).
    #[test]
    fn a_zero_count_means_every_entry_in_kyverno_and_is_refused_in_a_manifest_policy() {
        let keyless = "{keyless: {subject: a@example.com, issuer: https://issuer.example}}";
        let load = |text: String| {
            super::load_str(
                "p.yaml",
                &text,
                std::path::Path::new("."),
                &super::LoadOptions::default(),
            )
        };
        let kyverno = format!(
            "{}          - attestor: {{count: 0, entries: [{keyless}]}}\n",
            KYVERNO_RULE.replace("- entries:\n", "- count: 0\n          entries:\n")
        );
        let set = load(kyverno).unwrap();
        assert_eq!(set.rules.len(), 1);
        for (case, text, at) in [
            (
                "top level",
                format!("{MANIFEST_POLICY}    - {keyless}\n")
                    .replace("- entries:", "- count: 0\n    entries:"),
                "spec.attestors[0]: ",
            ),
            (
                "nested",
                format!("{MANIFEST_POLICY}    - attestor: {{count: 0, entries: [{keyless}]}}\n"),
                "spec.attestors[0].entries[0].attestor: ",
            ),
        ] {
            let err = load(text).unwrap_err().to_string();
            assert!(
                err.contains(&format!("{at}count must be at least 1")),
                "{case}: {err}"
            );
        }
    }

    /// The shared attestor-set builder keeps each format's wording: an entry with no kind
    /// or two is refused where it is (nested sets too), naming the kinds in the format's
    /// order.
    #[test]
    fn an_entry_of_no_kind_or_two_kinds_is_refused_in_the_formats_wording() {
        let kyverno = "an entry needs exactly one of keys, certificates, keyless, attestor";
        let mansign = "an entry needs exactly one of keys, keyless, certificates, attestor";
        for (case, text, at, words) in [
            (
                "kyverno, no kind",
                format!("{KYVERNO_RULE}          - {{}}\n"),
                "spec.rules[0].validate.manifests.attestors[0].entries[0]: ",
                kyverno,
            ),
            (
                "kyverno, two kinds in a nested set",
                format!(
                    "{KYVERNO_RULE}          - attestor:\n              entries:\n{}",
                    "              - {keys: {publicKeys: x}, keyless: {issuer: https://issuer.example}}\n"
                ),
                "spec.rules[0].validate.manifests.attestors[0].entries[0].attestor.entries[0]: ",
                kyverno,
            ),
            (
                "ManifestPolicy, no kind",
                format!("{MANIFEST_POLICY}    - {{}}\n"),
                "spec.attestors[0].entries[0]: ",
                mansign,
            ),
            (
                "ManifestPolicy, two kinds in a nested set",
                format!(
                    "{MANIFEST_POLICY}    - attestor:\n        entries:\n{}",
                    "        - {keys: {path: a.pub}, certificates: {cert: x}}\n"
                ),
                "spec.attestors[0].entries[0].attestor.entries[0]: ",
                mansign,
            ),
        ] {
            let err = super::load_str(
                "p.yaml",
                &text,
                std::path::Path::new("."),
                &super::LoadOptions::default(),
            )
            .unwrap_err()
            .to_string();
            assert!(err.contains(&format!("{at}{words}")), "{case}: {err}");
        }
    }
}
