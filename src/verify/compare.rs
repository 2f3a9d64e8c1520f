//! Step 5 of verification: the object against the document that was signed.
//!
//! Both sides are compared without their signature annotations, under the verifier's
//! ignore fields and tolerances (see `manifest::diff` for what equality means). One rule
//! lives here because it needs both the comparison and the annotation codec:
//! `kubectl.kubernetes.io/last-applied-configuration`. `kubectl apply` writes the manifest
//! it applied into that annotation and computes the next apply's deletions from it, so a
//! tampered value changes what the cluster does later. It is accepted only when the
//! profiles allow it and its content, parsed, verifies against the signed document under
//! the same ignore fields and tolerances as the object itself (so a client-side apply of
//! the signed manifest passes, and a last-applied that differs in any other way is a
//! difference). "The same tolerances" includes the GitOps profiles: Argo CD's client-side
//! apply records the manifest *with* its tracking label and annotations, so under
//! `kubernetes,argocd` those keys are accepted inside the annotation exactly as on the
//! object, and nowhere else.
//!
//! The content is read the way kubectl writes it, a JSON object, with the manifest reader's
//! bounds (size, nesting, node count; duplicate keys refused, as kubectl's Go decoder would
//! silently keep the last one): anything else is a difference, never an error.

use crate::annotations::{
    AnnotationDomain, strip_signature_annotations, without_signature_annotations,
};
use crate::limits::Limits;
use crate::manifest::{
    CompareError, Comparison, Difference, IgnoreFields, LAST_APPLIED_ANNOTATION, ObjectIdentity,
    Step, Tolerances, compare, parse_documents,
};
use serde_json::Value;

/// What may differ between an object and its signed document.
pub(super) struct CompareRules<'a> {
    pub ignore: &'a IgnoreFields,
    pub tolerances: &'a Tolerances,
    pub domain: &'a AnnotationDomain,
    pub identity: &'a ObjectIdentity,
    /// Bounds for reading the last-applied content.
    pub limits: &'a Limits,
}

/// Compares `object` with `signed_doc` (see the module docs).
pub(super) fn compare_with_signed(
    signed_doc: &Value,
    object: &Value,
    rules: &CompareRules<'_>,
) -> Result<Comparison, CompareError> {
    let expected = without_signature_annotations(signed_doc, rules.domain);
    let actual = without_signature_annotations(object, rules.domain);
    let base = |object: &Value, d: &Difference<'_>| {
        rules.ignore.ignores(d.path)
            || rules
                .tolerances
                .tolerates(rules.identity, &expected, object, d)
    };
    compare(&expected, &actual, &|d| {
        base(&actual, d)
            || (is_last_applied(d.path) && last_applied_verifies(d, &expected, rules, &base))
    })
}

fn is_last_applied(path: &[Step<'_>]) -> bool {
    matches!(
        path,
        [Step::Key("metadata"), Step::Key("annotations"), Step::Key(k)] if *k == LAST_APPLIED_ANNOTATION
    )
}

/// The annotation was added or changed, and what it holds is the signed document.
fn last_applied_verifies(
    d: &Difference<'_>,
    expected: &Value,
    rules: &CompareRules<'_>,
    base: &dyn Fn(&Value, &Difference<'_>) -> bool,
) -> bool {
    if !rules.tolerances.tolerates_last_applied() {
        return false;
    }
    let Some(Value::String(text)) = d.actual else {
        return false;
    };
    let Some(mut applied) = read_last_applied(text, rules.limits) else {
        return false;
    };
    strip_signature_annotations(&mut applied, rules.domain);
    // The inner comparison does not accept a nested last-applied: kubectl never writes one.
    compare(expected, &applied, &|d| base(&applied, d)).is_ok_and(|c| c.is_equal())
}

/// The annotation's content as kubectl writes it: one JSON object (compact, possibly
/// newline-terminated), within the annotation and document bounds. `None` for anything else.
fn read_last_applied(text: &str, limits: &Limits) -> Option<Value> {
    // The API server caps all annotations together at this size; a larger value is no
    // object's, and refusing it first bounds the parse.
    if text.len() > limits.max_annotations_total_bytes || !text.trim_start().starts_with('{') {
        return None;
    }
    let mut documents = parse_documents(text, limits).ok()?;
    match documents.pop() {
        Some((_, applied @ Value::Object(_))) if documents.is_empty() => Some(applied),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{GitopsBindings, IgnoreProfile, IgnoreProfiles};
    use serde_json::json;

    /// The Argo CD application the tracked objects below belong to.
    fn bound_to_app() -> GitopsBindings {
        GitopsBindings {
            argocd_applications: vec!["app".into()],
            ..GitopsBindings::default()
        }
    }

    fn id() -> ObjectIdentity {
        ObjectIdentity::of(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "ns"}})).unwrap()
    }

    fn run(signed: &Value, object: &Value, profile: impl Into<IgnoreProfiles>) -> Vec<String> {
        run_bound(signed, object, profile, GitopsBindings::default())
    }

    fn run_bound(
        signed: &Value,
        object: &Value,
        profile: impl Into<IgnoreProfiles>,
        gitops: GitopsBindings,
    ) -> Vec<String> {
        let tolerances = Tolerances {
            profiles: profile.into(),
            gitops,
            ..Tolerances::default()
        };
        let rules = CompareRules {
            ignore: &IgnoreFields::none(),
            tolerances: &tolerances,
            domain: &AnnotationDomain::default(),
            identity: &id(),
            limits: &Limits::default(),
        };
        compare_with_signed(signed, object, &rules).unwrap().paths()
    }

    fn signed() -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "x", "namespace": "ns",
                            "annotations": {"cosign.sigstore.dev/message": "m", "cosign.sigstore.dev/signature": "s"}},
               "data": {"a": "1"}})
    }

    fn with_last_applied(applied: &Value) -> Value {
        let mut object = signed();
        object["metadata"]["annotations"][LAST_APPLIED_ANNOTATION] =
            Value::String(applied.to_string());
        object
    }

    const LAST_APPLIED_PATH: &str =
        "metadata.annotations[\"kubectl.kubernetes.io/last-applied-configuration\"]";

    #[test]
    fn last_applied_holding_the_signed_manifest_is_accepted() {
        // kubectl writes the manifest it applied, signature annotations included.
        let object = with_last_applied(&signed());
        assert!(run(&signed(), &object, IgnoreProfile::Kubernetes).is_empty());
    }

    #[test]
    fn last_applied_that_differs_is_a_difference() {
        let mut applied = signed();
        applied["data"]["b"] = json!("2"); // the next apply would keep b as "applied"
        let object = with_last_applied(&applied);
        assert_eq!(
            run(&signed(), &object, IgnoreProfile::Kubernetes),
            [LAST_APPLIED_PATH]
        );
        let mut applied = signed();
        applied["data"].as_object_mut().unwrap().remove("a"); // the next apply would not delete a field the manifest drops
        let object = with_last_applied(&applied);
        assert_eq!(
            run(&signed(), &object, IgnoreProfile::Kubernetes),
            [LAST_APPLIED_PATH]
        );
    }

    #[test]
    fn last_applied_that_is_not_json_or_not_an_object_is_a_difference() {
        for text in ["not json", "[]", "\"x\"", "{\"metadata\": "] {
            let mut object = signed();
            object["metadata"]["annotations"][LAST_APPLIED_ANNOTATION] = json!(text);
            assert_eq!(
                run(&signed(), &object, IgnoreProfile::Kubernetes),
                [LAST_APPLIED_PATH],
                "{text}"
            );
        }
    }

    #[test]
    fn last_applied_is_a_plain_annotation_without_the_kubernetes_profile() {
        let object = with_last_applied(&signed());
        assert_eq!(
            run(&signed(), &object, IgnoreProfile::None),
            [LAST_APPLIED_PATH]
        );
    }

    fn argocd_tracked(mut v: Value) -> Value {
        v["metadata"]["labels"] = json!({"app.kubernetes.io/instance": "app"});
        v["metadata"]["annotations"]["argocd.argoproj.io/tracking-id"] =
            json!("app:/ConfigMap:ns/x");
        v
    }

    #[test]
    fn argocd_client_side_apply_passes_only_with_the_argocd_profile() {
        // Argo CD's last-applied holds the manifest plus its tracking metadata.
        let applied = argocd_tracked(signed());
        let mut object = argocd_tracked(signed());
        object["metadata"]["annotations"][LAST_APPLIED_ANNOTATION] =
            Value::String(format!("{applied}\n"));
        let both: IgnoreProfiles = "kubernetes,argocd".parse().unwrap();
        assert!(run_bound(&signed(), &object, both, bound_to_app()).is_empty());
        // Unbound, the instance label (a selector input) is tolerated nowhere, the
        // last-applied annotation included (issue 21 item 6).
        let diffs = run(&signed(), &object, both);
        assert!(
            diffs.contains(&"metadata.labels.app.kubernetes.io/instance".to_string())
                || diffs
                    .iter()
                    .any(|d| d.contains("app.kubernetes.io/instance")),
            "{diffs:?}"
        );
        let diffs = run(&signed(), &object, IgnoreProfile::Kubernetes);
        assert!(diffs.contains(&LAST_APPLIED_PATH.to_string()), "{diffs:?}");
        // A tracking key the object does not carry is still judged inside the annotation:
        // the argocd profile accepts it there only where it would accept it on the object.
        let mut applied = argocd_tracked(signed());
        applied["metadata"]["annotations"]["argocd.argoproj.io/tracking-id"] =
            json!("app:/ConfigMap:ns/other");
        let mut object = argocd_tracked(signed());
        object["metadata"]["annotations"][LAST_APPLIED_ANNOTATION] =
            Value::String(applied.to_string());
        assert_eq!(
            run_bound(&signed(), &object, both, bound_to_app()),
            [LAST_APPLIED_PATH]
        );
    }

    #[test]
    fn last_applied_is_read_within_bounds_and_as_one_json_object() {
        let deep = format!(
            "{{\"a\":{}1{}}}",
            "[".repeat(Limits::default().max_depth + 1),
            "]".repeat(Limits::default().max_depth + 1)
        );
        let exact = signed().to_string();
        let duplicate = exact.replacen("{", "{\"kind\":\"Secret\",", 1);
        let two = format!("{exact}{exact}");
        let yaml = "apiVersion: v1\nkind: ConfigMap\n".to_string();
        let huge = format!(
            "{}{}",
            exact,
            " ".repeat(Limits::default().max_annotations_total_bytes)
        );
        for text in [deep, duplicate, two, yaml, huge] {
            let mut object = signed();
            object["metadata"]["annotations"][LAST_APPLIED_ANNOTATION] = json!(text);
            assert_eq!(
                run(&signed(), &object, IgnoreProfile::Kubernetes),
                [LAST_APPLIED_PATH],
                "{}",
                &text[..text.len().min(80)]
            );
        }
    }

    #[test]
    fn last_applied_may_not_nest_another_last_applied() {
        let inner = with_last_applied(&signed());
        let object = with_last_applied(&inner);
        assert_eq!(
            run(&signed(), &object, IgnoreProfile::Kubernetes),
            [LAST_APPLIED_PATH]
        );
    }
}
