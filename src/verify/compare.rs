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
//! difference).

use crate::annotations::{AnnotationDomain, strip_signature_annotations};
use crate::manifest::{
    CompareError, Comparison, Difference, IgnoreFields, LAST_APPLIED_ANNOTATION, ObjectIdentity,
    Step, Tolerances, compare,
};
use serde_json::Value;

/// What may differ between an object and its signed document.
pub(super) struct CompareRules<'a> {
    pub ignore: &'a IgnoreFields,
    pub tolerances: &'a Tolerances,
    pub domain: &'a AnnotationDomain,
    pub identity: &'a ObjectIdentity,
}

/// Compares `object` with `signed_doc` (see the module docs).
pub(super) fn compare_with_signed(
    signed_doc: &Value,
    object: &Value,
    rules: &CompareRules<'_>,
) -> Result<Comparison, CompareError> {
    let mut expected = signed_doc.clone();
    let mut actual = object.clone();
    strip_signature_annotations(&mut expected, rules.domain);
    strip_signature_annotations(&mut actual, rules.domain);
    let base = |d: &Difference<'_>| {
        rules.ignore.ignores(d.path) || rules.tolerances.tolerates(rules.identity, &expected, d)
    };
    compare(&expected, &actual, &|d| {
        base(d) || (is_last_applied(d.path) && last_applied_verifies(d, &expected, rules, &base))
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
    base: &dyn Fn(&Difference<'_>) -> bool,
) -> bool {
    if !rules.tolerances.tolerates_last_applied() {
        return false;
    }
    let Some(Value::String(text)) = d.actual else {
        return false;
    };
    let Ok(mut applied) = serde_json::from_str::<Value>(text) else {
        return false;
    };
    if !applied.is_object() {
        return false;
    }
    strip_signature_annotations(&mut applied, rules.domain);
    // The inner comparison does not accept a nested last-applied: kubectl never writes one.
    compare(expected, &applied, base).is_ok_and(|c| c.is_equal())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::IgnoreProfile;
    use serde_json::json;

    fn id() -> ObjectIdentity {
        ObjectIdentity::of(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "ns"}})).unwrap()
    }

    fn run(signed: &Value, object: &Value, profile: IgnoreProfile) -> Vec<String> {
        let tolerances = Tolerances {
            profile,
            ..Tolerances::default()
        };
        let rules = CompareRules {
            ignore: &IgnoreFields::none(),
            tolerances: &tolerances,
            domain: &AnnotationDomain::default(),
            identity: &id(),
        };
        compare_with_signed(signed, object, &rules)
            .unwrap()
            .diffs
            .iter()
            .map(|d| d.path.to_string())
            .collect()
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
