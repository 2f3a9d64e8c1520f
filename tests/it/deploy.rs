//! `deploy/`: the kustomize base and the cert-manager overlay render with the real `kubectl`
//! (a missing kubectl fails these tests), and the rendered objects fit together: the webhook
//! calls the Service at `/validate`, the Service reaches the pods, the deadline is below the
//! webhook timeout, the pods are locked down, the certificate lands where the pods read it.

use crate::common;

use common::strings;
use serde_json::Value;
use std::path::Path;

/// `kubectl kustomize DIR`, parsed into objects.
fn render(dir: &str) -> Vec<Value> {
    common::kustomize(dir)
}

fn one<'a>(objects: &'a [Value], kind: &str) -> &'a Value {
    let found: Vec<&Value> = objects.iter().filter(|o| o["kind"] == kind).collect();
    assert_eq!(found.len(), 1, "exactly one {kind}");
    found[0]
}

/// Every version each PolicyException kind is served in by Kyverno v1.19.0
/// (kyverno/kyverno config/crds/kyverno/kyverno.io_policyexceptions.yaml and
/// config/crds/policies.kyverno.io/policies.kyverno.io_policyexceptions.yaml, `served: true`).
const POLICY_EXCEPTION_VERSIONS: &[(&str, &str)] = &[
    ("kyverno.io", "v2"),
    ("kyverno.io", "v2beta1"),
    ("policies.kyverno.io", "v1"),
    ("policies.kyverno.io", "v1beta1"),
    ("policies.kyverno.io", "v1alpha1"),
];

/// Namespaces an exception may be created in (Kyverno reads exceptions from all of them),
/// the system ones first.
const NAMESPACES: &[&str] = &[
    "kube-system",
    "mansign-system",
    "kyverno",
    "kube-public",
    "kube-node-lease",
    "default",
    "team-a",
    "team-b",
];

/// The webhook registration sends every PolicyException of both kinds, every served
/// version, from every namespace, on CREATE and UPDATE.
fn check_webhook_covers_every_policy_exception(vwc: &Value) {
    let listed = |list: &Value, value: &str| {
        list.as_array()
            .is_some_and(|l| l.iter().any(|v| v == value || v == "*"))
    };
    for hook in vwc["webhooks"].as_array().unwrap() {
        for selector in ["namespaceSelector", "objectSelector"] {
            let s = &hook[selector];
            assert!(
                s.is_null()
                    || (s["matchExpressions"].as_array().is_none_or(Vec::is_empty)
                        && s["matchLabels"].as_object().is_none_or(|m| m.is_empty())),
                "{selector} exempts some PolicyExceptions: {s}"
            );
        }
        assert!(
            hook["matchConditions"].is_null(),
            "matchConditions exempt some"
        );
        let rules = hook["rules"].as_array().unwrap();
        for (group, version) in POLICY_EXCEPTION_VERSIONS {
            assert!(
                rules.iter().any(|r| listed(&r["apiGroups"], group)
                    && listed(&r["apiVersions"], version)
                    && listed(&r["resources"], "policyexceptions")
                    && listed(&r["operations"], "CREATE")
                    && listed(&r["operations"], "UPDATE")
                    && (r["scope"].is_null() || r["scope"] == "*" || r["scope"] == "Namespaced")),
                "{group}/{version} policyexceptions are not sent to the webhook: {rules:?}"
            );
        }
    }
}

/// An unsigned PolicyException of one group and version in one namespace.
fn unsigned_exception(group: &str, version: &str, namespace: &str) -> Value {
    serde_json::json!({
        "apiVersion": format!("{group}/{version}"),
        "kind": "PolicyException",
        "metadata": {"name": "let-me-in", "namespace": namespace},
        "spec": {"exceptions": [{"policyName": "*", "ruleNames": ["*"]}],
                 "match": {"any": [{"resources": {"kinds": ["*"]}}]}},
    })
}

/// The AdmissionReview the API server sends for creating `object`.
fn create_review(object: &Value) -> Vec<u8> {
    let api = object["apiVersion"].as_str().unwrap();
    common::mallory_creates_exception(
        "00000000-0000-4000-8000-000000000021",
        object,
        api.split_once('/').unwrap(),
        &object["metadata"]["name"],
        &object["metadata"]["namespace"],
    )
}

/// A policy file covers every PolicyException: offline, a rule applies to an unsigned one of
/// each kind, version and namespace (and fails it); in the webhook, it is denied.
fn check_policy_covers_every_policy_exception(name: &str, text: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.yaml");
    std::fs::write(&path, text).unwrap();
    let set = mansign::policy::load_file(&path, &mansign::policy::LoadOptions::default())
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let reviewer = mansign::admission::Reviewer::new(
        set.clone(),
        mansign::admission::ReviewOptions::default(),
    );
    for (group, version) in POLICY_EXCEPTION_VERSIONS {
        for ns in NAMESPACES {
            let object = unsigned_exception(group, version, ns);
            let offline = set
                .verify_object(&object, &mansign::policy::RequestContext::default())
                .unwrap();
            assert!(
                !offline.rules.is_empty() && !offline.is_verified(),
                "{name}: {group}/{version} PolicyException in {ns}: offline {offline}"
            );
            let reviewed = reviewer.review(&create_review(&object));
            assert_eq!(
                reviewed.decision.outcome,
                mansign::admission::Outcome::Denied,
                "{name}: {group}/{version} PolicyException in {ns}: {}",
                reviewed.decision.message
            );
        }
    }
}

#[test]
fn the_webhook_and_every_shipped_policy_cover_both_policy_exception_kinds_everywhere() {
    for dir in ["deploy", "deploy/overlays/cert-manager"] {
        let objects = render(dir);
        check_webhook_covers_every_policy_exception(one(
            &objects,
            "ValidatingWebhookConfiguration",
        ));
        let text = one(&objects, "ConfigMap")["data"]["policy.yaml"]
            .as_str()
            .unwrap();
        check_policy_covers_every_policy_exception(&format!("{dir} ConfigMap"), text);
    }
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/policy");
    let mut checked = 0;
    for entry in std::fs::read_dir(&examples).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let text = std::fs::read_to_string(&path).unwrap();
            check_policy_covers_every_policy_exception(&path.display().to_string(), &text);
            checked += 1;
        }
    }
    assert!(checked >= 3, "every example policy: found {checked}");
}

#[test]
fn the_shipped_policy_would_have_let_the_newer_policy_exception_through() {
    // The ConfigMap's selector before this change: only kyverno.io. A policies.kyverno.io
    // exception was "no policy rule applies" (allowed).
    let old = one(&render("deploy"), "ConfigMap")["data"]["policy.yaml"]
        .as_str()
        .unwrap()
        .replace(
            "kinds: [kyverno.io/*/PolicyException, policies.kyverno.io/*/PolicyException]",
            "kinds: [kyverno.io/*/PolicyException]",
        );
    let set = mansign::policy::load_str("old", &old, Path::new("."), &Default::default()).unwrap();
    let reviewer =
        mansign::admission::Reviewer::new(set, mansign::admission::ReviewOptions::default());
    let object = unsigned_exception("policies.kyverno.io", "v1", "default");
    assert_eq!(
        reviewer.review(&create_review(&object)).decision.outcome,
        mansign::admission::Outcome::NotMatched
    );
}

/// Checks shared by the base and the overlay; returns nothing, panics naming the problem.
fn check_base(objects: &[Value]) {
    let ns = one(objects, "Namespace")["metadata"]["name"]
        .as_str()
        .unwrap();
    assert_eq!(ns, "mansign-system");
    for o in objects {
        let kind = o["kind"].as_str().unwrap();
        if !matches!(kind, "Namespace" | "ValidatingWebhookConfiguration") {
            assert_eq!(
                o["metadata"]["namespace"], ns,
                "{kind} in the webhook's namespace"
            );
        }
    }
    one(objects, "ServiceAccount");
    one(objects, "ConfigMap");

    // The webhook.
    let vwc = one(objects, "ValidatingWebhookConfiguration");
    let hooks = vwc["webhooks"].as_array().unwrap();
    assert_eq!(hooks.len(), 1);
    let hook = &hooks[0];
    assert_eq!(hook["failurePolicy"], "Fail");
    assert_eq!(hook["sideEffects"], "None");
    assert_eq!(strings(&hook["admissionReviewVersions"]), ["v1"]);
    let timeout = hook["timeoutSeconds"].as_u64().unwrap();
    assert!((1..=30).contains(&timeout));
    let service_ref = &hook["clientConfig"]["service"];
    assert_eq!(service_ref["path"], "/validate");
    assert_eq!(service_ref["namespace"], ns);
    check_webhook_covers_every_policy_exception(vwc);

    // The Service it calls exists and reaches the pods' HTTPS port.
    let service = one(objects, "Service");
    assert_eq!(service["metadata"]["name"], service_ref["name"]);
    let port = service["spec"]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["port"] == service_ref["port"])
        .expect("the webhook's port is a Service port");
    let deployment = one(objects, "Deployment");
    let pod = &deployment["spec"]["template"];
    let labels = pod["metadata"]["labels"].as_object().unwrap();
    let selects = |selector: &Value| {
        selector
            .as_object()
            .unwrap()
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
    };
    assert!(selects(&service["spec"]["selector"]));
    assert!(selects(&deployment["spec"]["selector"]["matchLabels"]));
    let container = &pod["spec"]["containers"][0];
    let container_port = &container["ports"][0];
    assert!(
        port["targetPort"] == container_port["name"]
            || port["targetPort"] == container_port["containerPort"]
    );

    // The pods.
    assert_eq!(deployment["spec"]["replicas"], 3);
    let pod_security = &pod["spec"]["securityContext"];
    assert_eq!(pod_security["runAsNonRoot"], true);
    assert!(pod_security["runAsUser"].as_u64().unwrap() > 0);
    let security = &container["securityContext"];
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(strings(&security["capabilities"]["drop"]), ["ALL"]);
    for r in ["requests", "limits"] {
        assert!(
            container["resources"][r]["memory"].is_string(),
            "{r}.memory"
        );
        assert!(container["resources"][r]["cpu"].is_string(), "{r}.cpu");
    }
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(container["livenessProbe"]["httpGet"]["scheme"], "HTTPS");
    let spread = pod["spec"]["topologySpreadConstraints"].as_array().unwrap();
    assert!(
        spread
            .iter()
            .any(|c| c["topologyKey"] == "kubernetes.io/hostname")
    );
    let args = strings(&container["args"]);
    assert_eq!(&args[..2], ["admission", "serve"]);
    let arg = |name: &str| {
        args.iter()
            .find_map(|a| a.strip_prefix(&format!("--{name}=")))
            .unwrap_or_else(|| panic!("--{name} missing"))
    };
    let deadline: u64 = arg("deadline").strip_suffix('s').unwrap().parse().unwrap();
    assert!(
        deadline < timeout,
        "deadline {deadline}s below timeoutSeconds {timeout}"
    );
    let grace: u64 = arg("shutdown-grace")
        .strip_suffix('s')
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        grace
            < pod["spec"]["terminationGracePeriodSeconds"]
                .as_u64()
                .unwrap()
    );
    assert!(arg("listen").ends_with(&format!(":{}", container_port["containerPort"])));

    // The files the arguments name are mounted, the policy from the ConfigMap.
    let mounts = container["volumeMounts"].as_array().unwrap();
    let volumes = pod["spec"]["volumes"].as_array().unwrap();
    let volume_for = |file: &str| {
        let mount = mounts
            .iter()
            .find(|m| file.starts_with(m["mountPath"].as_str().unwrap()))
            .unwrap_or_else(|| panic!("{file} is not on a mounted volume"));
        volumes
            .iter()
            .find(|v| v["name"] == mount["name"])
            .unwrap()
            .clone()
    };
    let policy = volume_for(arg("policy"));
    assert_eq!(
        policy["configMap"]["name"],
        one(objects, "ConfigMap")["metadata"]["name"]
    );
    let tls = volume_for(arg("tls-cert"));
    assert_eq!(tls, volume_for(arg("tls-key")));
    assert!(tls["secret"]["secretName"].is_string());

    let pdb = one(objects, "PodDisruptionBudget");
    assert!(selects(&pdb["spec"]["selector"]["matchLabels"]));
    assert!(pdb["spec"]["minAvailable"].as_u64().unwrap() < 3);
}

#[test]
fn the_base_renders_and_fits_together() {
    let objects = render("deploy");
    check_base(&objects);
    assert!(
        objects
            .iter()
            .all(|o| o["apiVersion"] != "cert-manager.io/v1")
    );
}

#[test]
fn the_cert_manager_overlay_issues_the_certificate_the_pods_mount() {
    let objects = render("deploy/overlays/cert-manager");
    check_base(&objects);
    let vwc = one(&objects, "ValidatingWebhookConfiguration");
    let inject = vwc["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
        .as_str()
        .expect("cainjector annotation");
    let (cert_ns, cert_name) = inject.split_once('/').unwrap();
    let certificate = objects
        .iter()
        .find(|o| o["kind"] == "Certificate" && o["metadata"]["name"] == cert_name)
        .expect("the injected Certificate exists");
    assert_eq!(certificate["metadata"]["namespace"], cert_ns);
    // It covers the Service's DNS name and lands in the Secret the pods mount.
    let service = one(&objects, "Service");
    let dns = format!(
        "{}.{}.svc",
        service["metadata"]["name"].as_str().unwrap(),
        service["metadata"]["namespace"].as_str().unwrap()
    );
    assert!(strings(&certificate["spec"]["dnsNames"]).contains(&dns.as_str()));
    let deployment = one(&objects, "Deployment");
    let secrets: Vec<&Value> = deployment["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.get("secret"))
        .collect();
    assert!(
        secrets
            .iter()
            .any(|s| s["secretName"] == certificate["spec"]["secretName"])
    );
    // Its issuer exists in the same namespace.
    let issuer = &certificate["spec"]["issuerRef"];
    assert!(objects.iter().any(|o| o["kind"] == issuer["kind"]
        && o["metadata"]["name"] == issuer["name"]
        && o["metadata"]["namespace"] == cert_ns));
}

#[test]
fn the_example_policy_in_the_configmap_loads() {
    let objects = render("deploy");
    let text = one(&objects, "ConfigMap")["data"]["policy.yaml"]
        .as_str()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.yaml");
    std::fs::write(&path, text).unwrap();
    let set = mansign::policy::load_file(&path, &mansign::policy::LoadOptions::default()).unwrap();
    assert_eq!(set.rules.len(), 1);
}

/// `deploy/overlays/key-references`: the base plus get/list/watch on exactly the named key
/// sources (resourceNames) and the token mounted; the base itself has no Role and no token.
#[test]
fn the_key_references_overlay_grants_only_the_named_objects_and_mounts_the_token() {
    let token = |objects: &[Value]| {
        one(objects, "Deployment")["spec"]["template"]["spec"]["automountServiceAccountToken"]
            .clone()
    };
    let base = render("deploy");
    assert_eq!(token(&base), Value::Bool(false));
    assert!(base.iter().all(|o| !matches!(
        o["kind"].as_str(),
        Some("Role" | "ClusterRole" | "RoleBinding")
    )));
    let objects = render("deploy/overlays/key-references");
    assert_eq!(token(&objects), Value::Bool(true));
    let role = one(&objects, "Role");
    assert_eq!(
        role["rules"],
        serde_json::json!([{"apiGroups": [""], "resources": ["secrets"],
                            "resourceNames": ["release"], "verbs": ["get", "list", "watch"]}])
    );
    let binding = one(&objects, "RoleBinding");
    assert_eq!(
        binding["metadata"]["namespace"],
        role["metadata"]["namespace"]
    );
    assert_eq!(binding["roleRef"]["name"], role["metadata"]["name"]);
    assert_eq!(
        binding["subjects"],
        serde_json::json!([{"kind": "ServiceAccount", "name": "mansign-webhook",
                            "namespace": "mansign-system"}])
    );
    assert!(objects.iter().all(|o| o["kind"] != "ClusterRole"));
}
