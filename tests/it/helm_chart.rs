//! `charts/mansign/`: `helm lint`, `helm template` goldens for the value sets of
//! `charts/mansign/ci/`, the schema and the templates refusing bad values, the README's
//! values table against `values.schema.json`, and the one-source-of-truth check: the chart
//! with default values renders the objects of `kubectl kustomize deploy/` (and with
//! cert-manager those of `deploy/overlays/cert-manager`), with only the differences that
//! charts/mansign/README.md lists; and `helm install` into a real kube-apiserver
//! (`scripts/cluster.sh`, tests/it/common/cluster.rs), where the chart's webhook configuration,
//! pointed at the real `mansign admission serve` on loopback (`webhook.url`), admits signed
//! PolicyExceptions and denies tampered ones, and `helm uninstall` removes it.
//!
//! helm is built from `helm.sh/helm/v3` (`scripts/ops-tools.sh`); kubectl must be on PATH as
//! for tests/it/deploy.rs. A missing tool fails these tests.
//!
//! After an intended chart change, regenerate the goldens with
//! `MANSIGN_BLESS=1 cargo test --test it helm_chart::` and review the diff.

use crate::common;

use common::cluster::Cluster;
use common::ops_tools::ops_tools;
use common::pki::Pki;
use common::strings;
use common::webhook::Webhook;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const REPO: &str = env!("CARGO_MANIFEST_DIR");
const NAMESPACE: &str = "mansign-system";

fn chart() -> PathBuf {
    Path::new(REPO).join("charts/mansign")
}

/// helm with its configuration, cache and data homes in a fresh directory: no repository,
/// plugin or setting of the machine changes what it renders.
fn helm(home: &Path) -> Command {
    let mut cmd = Command::new(&ops_tools().helm);
    cmd.env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_DATA_HOME", home.join("data"))
        .env_remove("KUBECONFIG")
        .env_remove("HELM_NAMESPACE");
    cmd
}

/// `helm template mansign charts/mansign -n mansign-system ARGS...`.
fn template(args: &[&str]) -> Output {
    let home = tempfile::tempdir().unwrap();
    helm(home.path())
        .args(["template", "mansign"])
        .arg(chart())
        .args(["--namespace", NAMESPACE])
        .args(args)
        .output()
        .expect("run helm template")
}

fn rendered_text(args: &[&str]) -> String {
    let out = template(args);
    assert!(
        out.status.success(),
        "helm template {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn parse(text: &str) -> Vec<Value> {
    common::parse_objects(text)
}

/// The value sets: the defaults, and each `charts/mansign/ci/NAME-values.yaml` (the
/// chart-testing convention), as (NAME, helm arguments).
fn value_sets() -> Vec<(String, Vec<String>)> {
    let mut sets = vec![("default".to_string(), Vec::new())];
    let mut files: Vec<PathBuf> = std::fs::read_dir(chart().join("ci"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for f in files {
        let file_name = f.file_name().unwrap().to_str().unwrap().to_string();
        let name = file_name
            .strip_suffix("-values.yaml")
            .unwrap_or_else(|| panic!("charts/mansign/ci/{file_name}: not NAME-values.yaml"));
        sets.push((
            name.to_string(),
            vec!["-f".to_string(), f.display().to_string()],
        ));
    }
    assert!(
        sets.len() >= 4,
        "the defaults and at least three ci/ value sets"
    );
    sets
}

fn args(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

// ---------------------------------------------------------------------------------------
// lint and goldens
// ---------------------------------------------------------------------------------------

#[test]
fn helm_lint_passes_strictly_for_every_value_set() {
    let home = tempfile::tempdir().unwrap();
    for (name, set) in value_sets() {
        common::output_ok(
            helm(home.path())
                .args(["lint", "--strict", "--namespace", NAMESPACE])
                .arg(chart())
                .args(&set),
            &format!("helm lint --strict ({name})"),
        );
    }
}

#[test]
fn helm_lint_fails_on_a_broken_chart() {
    // The lint above can fail: a copy of the chart with a template error does not pass.
    let home = tempfile::tempdir().unwrap();
    let copy = home.path().join("mansign");
    common::copy_dir(&chart(), &copy);
    let service = copy.join("templates/service.yaml");
    let text = std::fs::read_to_string(&service).unwrap();
    std::fs::write(
        &service,
        text.replace(
            "{{ include \"mansign.fullname\" . }}",
            "{{ include \"mansign.fullname\" . ",
        ),
    )
    .unwrap();
    let out = helm(home.path())
        .args(["lint", "--strict"])
        .arg(&copy)
        .output()
        .unwrap();
    assert!(!out.status.success(), "lint passed a broken template");
}

fn golden_dir() -> PathBuf {
    Path::new(REPO).join("tests/golden/helm")
}

#[test]
fn helm_template_matches_the_golden_file_of_every_value_set() {
    let bless = std::env::var_os("MANSIGN_BLESS").is_some_and(|v| v == "1");
    for (name, set) in value_sets() {
        let actual = rendered_text(&args(&set));
        let path = golden_dir().join(format!("{name}.yaml"));
        if bless {
            std::fs::create_dir_all(golden_dir()).unwrap();
            std::fs::write(&path, &actual).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "tests/golden/helm/{name}.yaml: {e} (MANSIGN_BLESS=1 cargo test --test it helm_chart:: writes it)"
            )
        });
        assert_eq!(
            actual, expected,
            "tests/golden/helm/{name}.yaml differs (MANSIGN_BLESS=1 regenerates it)"
        );
    }
}

#[test]
fn every_golden_file_belongs_to_a_value_set() {
    let names: Vec<String> = value_sets().into_iter().map(|(n, _)| n).collect();
    for entry in std::fs::read_dir(golden_dir()).unwrap() {
        let file = entry.unwrap().file_name().to_string_lossy().into_owned();
        let stem = file.strip_suffix(".yaml").unwrap_or(&file);
        assert!(
            names.iter().any(|n| n == stem),
            "tests/golden/helm/{file} has no value set in charts/mansign/ci/"
        );
    }
}

// ---------------------------------------------------------------------------------------
// What every value set renders
// ---------------------------------------------------------------------------------------

fn find<'a>(objects: &'a [Value], kind: &str) -> Vec<&'a Value> {
    objects.iter().filter(|o| o["kind"] == kind).collect()
}

#[test]
fn every_value_set_gates_both_policyexception_kinds_in_every_namespace() {
    for (name, set) in value_sets() {
        let objects = parse(&rendered_text(&args(&set)));
        let vwc = find(&objects, "ValidatingWebhookConfiguration");
        assert_eq!(vwc.len(), 1, "{name}");
        let hooks = vwc[0]["webhooks"].as_array().unwrap();
        assert_eq!(hooks.len(), 1, "{name}");
        let hook = &hooks[0];
        assert!(
            hook.get("namespaceSelector").is_none() && hook.get("objectSelector").is_none(),
            "{name}: no namespace or object is exempt: {hook}"
        );
        let rules = hook["rules"].as_array().unwrap();
        let mut groups: Vec<&str> = rules
            .iter()
            .flat_map(|r| strings(&r["apiGroups"]))
            .collect();
        groups.sort();
        assert_eq!(groups, ["kyverno.io", "policies.kyverno.io"], "{name}");
        for rule in rules {
            assert_eq!(
                strings(&rule["apiVersions"]),
                ["*"],
                "{name}: every version"
            );
            assert_eq!(strings(&rule["resources"]), ["policyexceptions"], "{name}");
            assert!(strings(&rule["operations"]).contains(&"CREATE"), "{name}");
            assert!(strings(&rule["operations"]).contains(&"UPDATE"), "{name}");
        }
        // The service it calls is the chart's, and its deadline is above the server's.
        let service = find(&objects, "Service");
        assert_eq!(service.len(), 1);
        assert_eq!(
            hook["clientConfig"]["service"]["name"],
            service[0]["metadata"]["name"]
        );
        let deployment = find(&objects, "Deployment")[0];
        let pod = &deployment["spec"]["template"]["spec"];
        // The token only for policies that read keys from the cluster (keyReferences).
        let reads_keys = name == "key-references";
        assert_eq!(pod["automountServiceAccountToken"], reads_keys, "{name}");
        let container = &pod["containers"][0];
        let deadline = strings(&container["args"])
            .into_iter()
            .find_map(|a| a.strip_prefix("--deadline="))
            .expect("--deadline");
        let deadline_ms: u64 = deadline.strip_suffix('s').unwrap().parse::<u64>().unwrap() * 1000;
        assert!(
            deadline_ms < hook["timeoutSeconds"].as_u64().unwrap() * 1000,
            "{name}"
        );
        for sa in find(&objects, "ServiceAccount") {
            assert_eq!(sa["automountServiceAccountToken"], false, "{name}");
        }
        assert!(find(&objects, "ClusterRole").is_empty(), "{name}");
        assert_eq!(find(&objects, "Role").is_empty(), !reads_keys, "{name}");
    }
}

/// `keyReferences`: per namespace one Role granting get/list/watch on exactly the named
/// Secrets and ConfigMaps (resourceNames), bound to the webhook's ServiceAccount; nothing
/// else is readable.
#[test]
fn key_references_grant_read_access_to_exactly_the_named_objects() {
    let set = value_sets()
        .into_iter()
        .find(|(n, _)| n == "key-references")
        .expect("charts/mansign/ci/key-references-values.yaml");
    let objects = parse(&rendered_text(&args(&set.1)));
    // (namespace, [(resource, resourceNames, verbs)])
    type Grant = (String, Vec<String>, Vec<String>);
    let mut roles: Vec<(String, Vec<Grant>)> = find(&objects, "Role")
        .into_iter()
        .map(|r| {
            let rules = r["rules"]
                .as_array()
                .unwrap()
                .iter()
                .map(|rule| {
                    assert_eq!(strings(&rule["apiGroups"]), [""]);
                    let resources = strings(&rule["resources"]);
                    assert_eq!(resources.len(), 1);
                    (
                        resources[0].to_string(),
                        strings(&rule["resourceNames"])
                            .into_iter()
                            .map(String::from)
                            .collect(),
                        strings(&rule["verbs"])
                            .into_iter()
                            .map(String::from)
                            .collect(),
                    )
                })
                .collect();
            (
                r["metadata"]["namespace"].as_str().unwrap().to_string(),
                rules,
            )
        })
        .collect();
    roles.sort();
    let verbs = || vec!["get".to_string(), "list".into(), "watch".into()];
    assert_eq!(
        roles,
        vec![
            (
                "cosign-system".to_string(),
                vec![
                    ("secrets".to_string(), vec!["release".to_string()], verbs()),
                    (
                        "configmaps".to_string(),
                        vec!["extra-keys".to_string()],
                        verbs()
                    ),
                ]
            ),
            (
                "platform".to_string(),
                vec![(
                    "configmaps".to_string(),
                    vec!["signing-keys".to_string()],
                    verbs()
                )]
            ),
        ]
    );
    let sa = find(&objects, "ServiceAccount")[0]["metadata"]["name"].clone();
    let bindings = find(&objects, "RoleBinding");
    assert_eq!(bindings.len(), 2);
    for b in bindings {
        assert_eq!(b["roleRef"]["kind"], "Role");
        assert_eq!(b["subjects"][0]["kind"], "ServiceAccount");
        assert_eq!(b["subjects"][0]["name"], sa);
        assert_eq!(b["subjects"][0]["namespace"], "mansign-system");
    }
}

#[test]
fn the_policy_a_value_set_writes_loads_as_a_mansign_policy() {
    let mut loaded = 0;
    for (name, set) in value_sets() {
        let objects = parse(&rendered_text(&args(&set)));
        for cm in find(&objects, "ConfigMap") {
            for (key, text) in cm["data"].as_object().unwrap() {
                let origin = format!("{name}: ConfigMap {} {key}", cm["metadata"]["name"]);
                let policies = mansign::policy::load_str(
                    &origin,
                    text.as_str().unwrap(),
                    Path::new(REPO),
                    &mansign::policy::LoadOptions::default(),
                )
                .unwrap_or_else(|e| panic!("{origin}: {e}"));
                assert!(!policies.rules.is_empty(), "{origin}: no rule");
                loaded += 1;
            }
        }
    }
    assert!(
        loaded >= 2,
        "the default and own-certificate sets write a policy"
    );
}

#[test]
fn webhook_url_points_the_configuration_at_a_webhook_outside_the_cluster() {
    let url = "https://webhook.example.com:8443/validate";
    let objects = parse(&rendered_text(&[
        "--set",
        &format!("webhook.url={url}"),
        "--set",
        "tls.caBundle=QUJD",
    ]));
    let vwc = find(&objects, "ValidatingWebhookConfiguration");
    let client = &vwc[0]["webhooks"][0]["clientConfig"];
    assert_eq!(
        client,
        &serde_json::json!({"url": url, "caBundle": "QUJD"}),
        "a URL replaces the service reference"
    );
    // Without it, the chart's Service (the default, as deploy/ does).
    let objects = parse(&rendered_text(&[]));
    let vwc = find(&objects, "ValidatingWebhookConfiguration");
    let client = &vwc[0]["webhooks"][0]["clientConfig"];
    assert!(client.get("url").is_none(), "{client}");
    assert_eq!(client["service"]["name"], "mansign-webhook");
}

// ---------------------------------------------------------------------------------------
// Bad values
// ---------------------------------------------------------------------------------------

/// Renders with `--set`/`--set-json` arguments that must be refused; returns helm's error.
fn refused(set: &[&str]) -> String {
    let out = template(set);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "helm template {set:?} rendered: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    stderr
}

#[test]
fn the_schema_refuses_bad_values() {
    // (a value given with `--set`, a word helm's schema error must contain)
    let set: &[(&str, &str)] = &[
        ("replicaCount=3", "replicaCount"),
        ("replicas=0", "replicas"),
        ("replicas=three", "replicas"),
        ("webhook.failurePolicy=Allow", "failurePolicy"),
        ("webhook.timeoutSeconds=31", "timeoutSeconds"),
        ("webhook.timeoutSeconds=0", "timeoutSeconds"),
        ("server.deadline=8 seconds", "deadline"),
        ("tls.caBundle=not base64!", "caBundle"),
        ("tls.certManager.enable=true", "enable"),
        ("tls.certManager.issuerRef.kind=Issuer", "issuerRef"),
        ("image.digest=latest", "digest"),
        ("podSecurityContext.runAsNonRoot=false", "runAsNonRoot"),
        (
            "securityContext.allowPrivilegeEscalation=true",
            "allowPrivilegeEscalation",
        ),
        ("namePrefix=Mansign", "namePrefix"),
        ("serviceMonitor.interval=soon", "interval"),
        // The API server calls webhooks over https only, without query, fragment or user.
        ("webhook.url=http://127.0.0.1:8443/validate", "url"),
        ("webhook.url=https://127.0.0.1:8443/validate?x=1", "url"),
        (
            "webhook.url=https://user@webhook.example:8443/validate",
            "url",
        ),
    ];
    // The same for a value given with `--set-json`.
    let set_json: &[(&str, &str)] = &[
        ("webhook.operations=[\"DELETE\"]", "operations"),
        ("webhook.operations=[\"UPDATE\"]", "operations"),
        // Without UPDATE an admitted exception could be edited unchecked.
        ("webhook.operations=[\"CREATE\"]", "operations"),
        (
            "policy.documents=[{\"kind\":\"ManifestPolicy\"}]",
            "apiVersion",
        ),
    ];
    let cases = set
        .iter()
        .map(|case| ("--set", case))
        .chain(set_json.iter().map(|case| ("--set-json", case)));
    for (flag, &(value, word)) in cases {
        let args = [flag, value];
        let error = refused(&args);
        assert!(
            error.contains("schema") && error.contains(word),
            "helm template {args:?}: the error names neither the schema nor {word}: {error}"
        );
    }
}

#[test]
fn the_templates_refuse_values_that_do_not_fit_together() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--set", "server.deadline=10s"],
            "server.deadline (10s) must be below webhook.timeoutSeconds (10 s)",
        ),
        (
            &["--set", "server.deadline=12000ms"],
            "must be below webhook.timeoutSeconds",
        ),
        (
            &["--set", "podDisruptionBudget.minAvailable=3"],
            "podDisruptionBudget.minAvailable (3) must be below replicas (3)",
        ),
        (
            &[
                "--set",
                "tls.certManager.enabled=true",
                "--set",
                "tls.caBundle=QUJD",
            ],
            "tls.caBundle and tls.certManager.enabled are exclusive",
        ),
        (
            &["--set-json", "policy.documents=[]"],
            "the webhook needs a policy",
        ),
        // Ignore admits unverified writes while the webhook is unreachable: only when
        // acknowledged.
        (
            &["--set", "webhook.failurePolicy=Ignore"],
            "set webhook.failOpenAcknowledged=true to accept that",
        ),
        (
            &[
                "--set",
                "webhook.failurePolicy=Ignore",
                "--set",
                "webhook.failOpenAcknowledged=false",
            ],
            "webhook.failurePolicy Ignore admits every PolicyException write UNVERIFIED",
        ),
        // The templates hold without the schema too.
        (
            &[
                "--skip-schema-validation",
                "--set-json",
                "webhook.operations=[\"CREATE\"]",
            ],
            "must list CREATE and UPDATE",
        ),
    ];
    for (set, message) in cases {
        let error = refused(set);
        assert!(
            error.contains(message),
            "helm template {set:?}: expected {message:?}, got {error}"
        );
    }
    // The same values one step inside the bounds render.
    rendered_text(&["--set", "server.deadline=9999ms"]);
    rendered_text(&["--set", "podDisruptionBudget.minAvailable=2"]);
    let acknowledged = parse(&rendered_text(&[
        "--set",
        "webhook.failurePolicy=Ignore",
        "--set",
        "webhook.failOpenAcknowledged=true",
    ]));
    let vwc = find(&acknowledged, "ValidatingWebhookConfiguration");
    assert_eq!(vwc[0]["webhooks"][0]["failurePolicy"], "Ignore");
}

// ---------------------------------------------------------------------------------------
// README
// ---------------------------------------------------------------------------------------

/// (key, type, description) of every leaf of the schema: a node with properties and
/// `additionalProperties: false` is a section whose keys are listed; any other node is a
/// value of its own (objects such as `resources` are passed through whole).
fn schema_leaves(node: &Value, path: &str, out: &mut Vec<(String, String, String)>) {
    if let (Some(props), Some(false)) = (
        node["properties"].as_object(),
        node["additionalProperties"].as_bool(),
    ) {
        for (key, child) in props {
            let p = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            schema_leaves(child, &p, out);
        }
        return;
    }
    let field = |name: &str| {
        node[name]
            .as_str()
            .unwrap_or_else(|| panic!("values.schema.json: {path} has no {name}"))
            .to_string()
    };
    out.push((path.to_string(), field("type"), field("description")));
}

#[test]
fn the_readme_values_table_says_what_the_schema_says() {
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(chart().join("values.schema.json")).unwrap())
            .unwrap();
    let mut expected = Vec::new();
    schema_leaves(&schema, "", &mut expected);
    let readme = std::fs::read_to_string(chart().join("README.md")).unwrap();
    let table: Vec<(String, String, String)> = readme
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.strip_prefix("| `")?.splitn(3, " | ").collect();
            let [key, kind, description] = cells[..] else {
                return None;
            };
            Some((
                key.strip_suffix('`')?.to_string(),
                kind.to_string(),
                description.strip_suffix(" |")?.to_string(),
            ))
        })
        .collect();
    for row in &expected {
        assert!(
            table.contains(row),
            "charts/mansign/README.md: no row `| `{}` | {} | {} |`",
            row.0,
            row.1,
            row.2
        );
    }
    for row in &table {
        assert!(
            expected.contains(row),
            "charts/mansign/README.md: row for `{}` is not in values.schema.json (or differs)",
            row.0
        );
    }
    assert!(expected.len() > 30, "the walk found the schema's keys");
}

// ---------------------------------------------------------------------------------------
// One source of truth with deploy/
// ---------------------------------------------------------------------------------------

/// `kubectl kustomize DIR` (as tests/it/deploy.rs renders deploy/).
fn kustomize(dir: &str) -> Vec<Value> {
    common::kustomize(dir)
}

/// Labels the chart adds on top of deploy/'s (charts/mansign/README.md, "Labels").
const HELM_LABELS: [&str; 4] = [
    "app.kubernetes.io/instance",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/version",
    "helm.sh/chart",
];

/// Removes [`HELM_LABELS`] from every label map and selector, and reads each ConfigMap's
/// policy file as YAML (helm writes the same documents without deploy/'s comments).
fn normalize(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                if (key == "labels" || key == "matchLabels" || key == "selector")
                    && let Value::Object(labels) = child
                {
                    for l in HELM_LABELS {
                        labels.remove(l);
                    }
                }
                normalize(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalize),
        _ => {}
    }
}

fn comparable(mut objects: Vec<Value>) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for o in &mut objects {
        normalize(o);
        if o["kind"] == "ConfigMap" {
            let data = o["data"].as_object_mut().unwrap();
            for value in data.values_mut() {
                let docs = parse(value.as_str().unwrap());
                *value = Value::Array(docs);
            }
        }
        let id = format!(
            "{} {}/{}",
            o["kind"].as_str().unwrap(),
            o["metadata"]["namespace"].as_str().unwrap_or(""),
            o["metadata"]["name"].as_str().unwrap()
        );
        out.push((id, o.clone()));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The chart rendered with `set` equals `kubectl kustomize dir`, but for the differences
/// charts/mansign/README.md lists; on failure, every object that differs is named.
fn renders_like_deploy(set: &[&str], dir: &str) {
    let mut deploy = kustomize(dir);
    // deploy/ creates the namespace; the chart is installed into it (--create-namespace).
    let namespaces: Vec<Value> = deploy
        .iter()
        .filter(|o| o["kind"] == "Namespace")
        .cloned()
        .collect();
    assert_eq!(namespaces.len(), 1, "{dir} creates one Namespace");
    assert_eq!(namespaces[0]["metadata"]["name"], NAMESPACE);
    deploy.retain(|o| o["kind"] != "Namespace");
    let chart = comparable(parse(&rendered_text(set)));
    let deploy = comparable(deploy);
    let ids = |v: &[(String, Value)]| v.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>();
    assert_eq!(
        ids(&chart),
        ids(&deploy),
        "helm template {set:?} and kubectl kustomize {dir} render different objects"
    );
    let mut differences = Vec::new();
    for ((id, c), (_, d)) in chart.iter().zip(&deploy) {
        if c != d {
            differences.push(format!(
                "{id}:\n  chart:   {}\n  deploy/: {}",
                serde_json::to_string(c).unwrap(),
                serde_json::to_string(d).unwrap()
            ));
        }
    }
    assert!(
        differences.is_empty(),
        "helm template {set:?} and kubectl kustomize {dir} differ:\n{}",
        differences.join("\n")
    );
}

#[test]
fn the_chart_with_default_values_renders_what_deploy_renders() {
    renders_like_deploy(&[], "deploy");
}

#[test]
fn the_chart_with_cert_manager_renders_what_the_cert_manager_overlay_renders() {
    renders_like_deploy(
        &["--set", "tls.certManager.enabled=true"],
        "deploy/overlays/cert-manager",
    );
}

#[test]
fn the_deploy_comparison_notices_a_changed_field() {
    // The comparison above can fail: a changed value is found and named.
    let chart = comparable(parse(&rendered_text(&["--set", "replicas=4"])));
    let mut deploy = kustomize("deploy");
    deploy.retain(|o| o["kind"] != "Namespace");
    let deploy = comparable(deploy);
    let differing: Vec<&str> = chart
        .iter()
        .zip(&deploy)
        .filter(|((_, c), (_, d))| c != d)
        .map(|((id, _), _)| id.as_str())
        .collect();
    assert!(
        differing.contains(&"Deployment mansign-system/mansign-webhook"),
        "{differing:?}"
    );
}

// ---------------------------------------------------------------------------------------
// Installed into a real API server
// ---------------------------------------------------------------------------------------

/// `kubectl ARGS [-f -]` against `cluster`; prints what was applied and the verdict.
fn kubectl_reported(cluster: &Cluster, what: &str, args: &[&str], stdin: Option<&str>) -> Output {
    let out = match stdin {
        Some(doc) => cluster.kubectl_stdin(args, doc),
        None => cluster.kubectl(args),
    };
    let (verdict, detail) = if out.status.success() {
        ("ADMITTED", &out.stdout)
    } else {
        ("DENIED/FAILED", &out.stderr)
    };
    eprintln!(
        "{what}: kubectl {} -> {verdict}: {}",
        args.join(" "),
        String::from_utf8_lossy(detail).trim()
    );
    out
}

/// Fails unless the chart's webhook refused `out` with mansign's `[code]`.
fn assert_denied_by_chart_webhook(out: &Output, code: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && err
                .contains("admission webhook \"policyexceptions.mansign.dev\" denied the request")
            && err.contains(&format!("[{code}]")),
        "expected the chart's webhook to deny with [{code}]: {err}"
    );
}

/// The chart installed with `helm install` into a real kube-apiserver (scripts/cluster.sh,
/// issue 25 §1): no kubelet runs there, so the webhook runs outside the cluster
/// (`webhook.url`), with TLS from an existing Secret (`tls.existingSecret`, `tls.caBundle`)
/// and the policy the chart wrote into its ConfigMap, both read back from the API server.
/// The chart's ValidatingWebhookConfiguration then admits signed PolicyExceptions of both
/// kinds and denies tampered ones; `helm uninstall` removes the chart's objects.
/// Runs `cmd` (helm against the cluster), shows its output and fails the test unless it
/// succeeds; `what` names the command.
fn helm_ok(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap();
    eprintln!(
        "{what}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{what} failed");
}

/// The names (`kind/name`) of the objects of `kinds` in the release namespace that carry
/// the release's instance label.
fn of_the_release(cluster: &Cluster, kinds: &str) -> String {
    cluster.kubectl_ok(&[
        "get",
        kinds,
        "-n",
        NAMESPACE,
        "-l",
        "app.kubernetes.io/instance=mansign",
        "-o",
        "name",
    ])
}

#[test]
fn helm_install_into_a_real_api_server_admits_signed_and_denies_tampered_exceptions() {
    let cluster = Cluster::start();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("helm");
    let kubeconfig = cluster.kubeconfig().to_str().unwrap().to_string();

    cluster.create_kyverno_crds();
    cluster.kubectl_ok(&["create", "namespace", "team-a"]);

    // The serving certificate in a Secret of the release namespace (tls.existingSecret).
    let pki = Pki::new();
    let (cert, key) = pki.issue("mansign-webhook");
    let cert_file = common::write(dir.path(), "issued.crt", &cert);
    let key_file = common::write(dir.path(), "issued.key", &key);
    cluster.kubectl_ok(&["create", "namespace", NAMESPACE]);
    cluster.kubectl_ok(&[
        "create",
        "secret",
        "tls",
        "webhook-serving-cert",
        "-n",
        NAMESPACE,
        "--cert",
        cert_file.to_str().unwrap(),
        "--key",
        key_file.to_str().unwrap(),
    ]);

    // The webhook will listen on this port (chosen now: the URL is a value of the chart).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("https://127.0.0.1:{port}/validate");
    let (signing_key, public_key) = common::key_pair(dir.path(), "release");
    let values = serde_json::json!({
        "webhook": {"url": url},
        "tls": {"existingSecret": "webhook-serving-cert", "caBundle": pki.ca_bundle()},
        "policy": {"documents": [{
            "apiVersion": "mansign.dev/v1alpha1",
            "kind": "ManifestPolicy",
            "metadata": {"name": "signed-policy-exceptions"},
            "spec": {
                "match": {"kinds": ["kyverno.io/*/PolicyException", "policies.kyverno.io/*/PolicyException"]},
                "ignoreProfile": "kubernetes",
                "attestors": [{"entries": [{"keys": {
                    "publicKeys": std::fs::read_to_string(&public_key).unwrap()
                }}]}],
            },
        }]},
    });
    let values_file = common::write(dir.path(), "values.json", &values.to_string());
    helm_ok(
        helm(&home)
            .args(["install", "mansign"])
            .arg(chart())
            .args(["--namespace", NAMESPACE, "--kubeconfig", &kubeconfig, "-f"])
            .arg(&values_file),
        &format!(
            "helm install mansign charts/mansign -n {NAMESPACE} -f values.json (webhook.url {url}, tls.existingSecret webhook-serving-cert)"
        ),
    );
    let installed = of_the_release(
        &cluster,
        "deployment,service,serviceaccount,configmap,poddisruptionbudget,validatingwebhookconfiguration",
    );
    eprintln!("installed by the chart:\n{installed}");
    for object in [
        "deployment.apps/mansign-webhook",
        "service/mansign-webhook",
        "serviceaccount/mansign-webhook",
        "configmap/mansign-policy",
        "poddisruptionbudget.policy/mansign-webhook",
        "validatingwebhookconfiguration.admissionregistration.k8s.io/mansign-webhook",
    ] {
        assert!(
            installed.lines().any(|l| l == object),
            "{object} not installed"
        );
    }
    let vwc: Value = serde_json::from_str(&cluster.kubectl_ok(&[
        "get",
        "validatingwebhookconfiguration",
        "mansign-webhook",
        "-o",
        "json",
    ]))
    .unwrap();
    assert_eq!(
        vwc["webhooks"][0]["clientConfig"],
        serde_json::json!({"url": url, "caBundle": pki.ca_bundle()})
    );

    // The webhook runs with what the API server now holds: the chart's policy ConfigMap and
    // the Secret's certificate and key.
    let serving = dir.path().join("serving");
    std::fs::create_dir_all(&serving).unwrap();
    let policy_text = cluster.kubectl_ok(&[
        "get",
        "configmap",
        "mansign-policy",
        "-n",
        NAMESPACE,
        "-o",
        "jsonpath={.data.policy\\.yaml}",
    ]);
    eprintln!("the policy the chart rendered (ConfigMap mansign-policy):\n{policy_text}");
    let policy = common::write(&serving, "policy.yaml", &policy_text);
    let secret: Value = serde_json::from_str(&cluster.kubectl_ok(&[
        "get",
        "secret",
        "webhook-serving-cert",
        "-n",
        NAMESPACE,
        "-o",
        "json",
    ]))
    .unwrap();
    for name in ["tls.crt", "tls.key"] {
        use base64::Engine as _;
        let data = base64::engine::general_purpose::STANDARD
            .decode(secret["data"][name].as_str().unwrap())
            .unwrap();
        std::fs::write(serving.join(name), data).unwrap();
    }
    let webhook = Webhook::start(&serving, &[policy], port);

    // Until the API server reaches the webhook, failurePolicy Fail refuses every write;
    // an unsigned exception denied by mansign shows the path works.
    let unsigned = std::fs::read_to_string(common::fixture(
        "cluster/signed-set/policyexception-kyverno.yaml",
    ))
    .unwrap()
    .replace("namespace: stored", "namespace: team-a");
    let start = std::time::Instant::now();
    loop {
        let out = cluster.kubectl_stdin(&["create", "--dry-run=server", "-f", "-"], &unsigned);
        if String::from_utf8_lossy(&out.stderr).contains("[not-signed]") {
            break;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "the API server did not reach the chart's webhook: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            webhook.log()
        );
        std::thread::sleep(std::time::Duration::from_millis(250));
    }

    for (file, resource) in [
        (
            "policyexception-kyverno.yaml",
            "policyexceptions.kyverno.io/backup-host-path",
        ),
        (
            "policyexception-policies.yaml",
            "policyexceptions.policies.kyverno.io/backup-host-path-cel",
        ),
    ] {
        let text = std::fs::read_to_string(common::fixture(&format!("cluster/signed-set/{file}")))
            .unwrap()
            .replace("namespace: stored", "namespace: team-a");
        // `kubectl apply` of `doc`, the `state` (unsigned, tampered, signed) of `file`.
        let apply = |state: &str, doc: &str| {
            kubectl_reported(
                &cluster,
                &format!("{file} {state}"),
                &["apply", "-f", "-"],
                Some(doc),
            )
        };
        assert_denied_by_chart_webhook(&apply("unsigned", &text), "not-signed");

        let input = common::write(dir.path(), file, &text);
        let signed_file = dir.path().join(format!("signed-{file}"));
        common::with_key("sign", &[], &input, &signing_key)
            .arg("-o")
            .arg(&signed_file)
            .assert()
            .success();
        let signed = std::fs::read_to_string(&signed_file).unwrap();
        // The same signature over a widened exception: another policy is excepted.
        let tampered = signed.replace("disallow-host-path", "require-signed-images");
        assert_ne!(signed, tampered);
        assert_denied_by_chart_webhook(&apply("tampered", &tampered), "modified");
        let out = cluster.kubectl(&["get", resource, "-n", "team-a"]);
        assert!(!out.status.success(), "{resource} stored after a denial");

        let out = apply("signed", &signed);
        assert!(
            out.status.success(),
            "the chart's webhook denied a signed exception: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let name = cluster.kubectl_ok(&[
            "get",
            resource,
            "-n",
            "team-a",
            "-o",
            "jsonpath={.metadata.name}",
        ]);
        assert_eq!(Some(name.as_str()), resource.split('/').nth(1), "stored");
    }

    // helm uninstall removes what the chart installed; the Secret (not the chart's) stays.
    helm_ok(
        helm(&home)
            .args(["uninstall", "mansign", "--namespace", NAMESPACE])
            .args(["--kubeconfig", &kubeconfig]),
        "helm uninstall mansign",
    );
    let left = of_the_release(
        &cluster,
        "deployment,service,serviceaccount,configmap,poddisruptionbudget,validatingwebhookconfiguration,secret",
    );
    assert_eq!(left.trim(), "", "left behind by helm uninstall: {left}");
    let releases = cluster.kubectl_ok(&["get", "secrets", "-n", NAMESPACE, "-o", "name"]);
    assert_eq!(
        releases.trim(),
        "secret/webhook-serving-cert",
        "only the Secret the chart did not create remains (no Helm release record)"
    );
    // No webhook left: the API server no longer asks mansign (its webhook list follows
    // the configuration's deletion through a watch, so this may take a moment).
    let unsigned = unsigned.replace("name: backup-host-path", "name: after-uninstall");
    let start = std::time::Instant::now();
    loop {
        let out = cluster.kubectl_stdin(&["create", "--dry-run=server", "-f", "-"], &unsigned);
        if out.status.success() {
            kubectl_reported(
                &cluster,
                "unsigned after helm uninstall",
                &["create", "--dry-run=server", "-f", "-"],
                Some(&unsigned),
            );
            break;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "an exception is still refused after helm uninstall: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    drop(webhook);
}
