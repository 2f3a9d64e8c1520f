//! Operating the webhook: the alerting rules and the Grafana dashboard of `deploy/monitoring/`
//! against what a running `mansign admission serve` exports at `/metrics`, and the rules
//! (and every dashboard query) through the checks of `promtool check rules` (`rulecheck`,
//! tests/ops/rulecheck, built by `scripts/ops-tools.sh`).
//!
//! A missing tool fails these tests; they never skip.

use crate::common;

use common::ops_tools::ops_tools;
use common::{key_pair, write};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const REPO: &str = env!("CARGO_MANIFEST_DIR");

fn rules_file() -> PathBuf {
    Path::new(REPO).join("deploy/monitoring/mansign-alerts.yaml")
}

fn dashboard() -> Value {
    let text =
        std::fs::read_to_string(Path::new(REPO).join("deploy/monitoring/grafana-dashboard.json"))
            .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// `rulecheck FILE`: (success, stdout + stderr).
fn rulecheck(file: &Path) -> (bool, String) {
    let out = Command::new(&ops_tools().rulecheck)
        .arg(file)
        .output()
        .unwrap();
    (out.status.success(), common::all_output(&out))
}

// ---------------------------------------------------------------------------------------
// Expressions
// ---------------------------------------------------------------------------------------

/// Every alert expression of the rules file, named by its alert.
fn rule_expressions() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(rules_file()).unwrap();
    let docs =
        mansign::manifest::parse_documents(&text, &mansign::limits::Limits::default()).unwrap();
    let mut out = Vec::new();
    for group in docs[0].1["groups"].as_array().unwrap() {
        for rule in group["rules"].as_array().unwrap() {
            let name = rule["alert"].as_str().unwrap().to_string();
            out.push((name, rule["expr"].as_str().unwrap().to_string()));
        }
    }
    assert!(out.len() >= 8, "the rules file has its alerts");
    out
}

/// Grafana's variables replaced by values Prometheus accepts.
fn substitute(expr: &str) -> String {
    expr.replace("$__rate_interval", "5m").replace("$job", ".*")
}

/// Every query of the dashboard (panels, rows' panels, template variables), named.
fn dashboard_expressions() -> Vec<(String, String)> {
    fn panels(list: &Value, out: &mut Vec<(String, String)>) {
        for p in list.as_array().into_iter().flatten() {
            for t in p["targets"].as_array().into_iter().flatten() {
                let title = format!("panel {:?} {}", p["title"], t["refId"]);
                out.push((title, substitute(t["expr"].as_str().unwrap())));
            }
            panels(&p["panels"], out);
        }
    }
    let d = dashboard();
    let mut out = Vec::new();
    panels(&d["panels"], &mut out);
    for v in d["templating"]["list"].as_array().unwrap() {
        if let Some(q) = v["query"]["query"].as_str() {
            // label_values(METRIC, LABEL) is Grafana's; its metric is checked as a selector.
            let inner = q
                .strip_prefix("label_values(")
                .and_then(|r| r.split_once(','))
                .map_or(q, |(m, _)| m);
            out.push((format!("variable {}", v["name"]), inner.to_string()));
        }
    }
    assert!(out.len() >= 15, "the dashboard has its queries");
    out
}

/// A label matcher of a selector: label, operator (`=`, `!=`, `=~`, `!~`), value.
type Matcher = (String, String, String);

/// What a PromQL expression names: metrics with their label matchers, and the labels of
/// `by`/`without`/`on`/`ignoring` clauses. A small lexer: strings are skipped, identifiers
/// read; enough for the expressions this repository writes (rulecheck parses them fully).
#[derive(Debug, Default)]
struct Names {
    /// metric -> [(label, operator, value)]
    metrics: Vec<(String, Vec<Matcher>)>,
    grouping: BTreeSet<String>,
}

fn names(expr: &str) -> Names {
    let chars: Vec<char> = expr.chars().collect();
    let mut names = Names::default();
    let mut i = 0;
    let ident_start = |c: char| c.is_ascii_alphabetic() || c == '_' || c == ':';
    let ident_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    // Moves `i` past the characters that `keep` accepts; returns them.
    let take = |i: &mut usize, keep: &dyn Fn(char) -> bool| -> String {
        let start = *i;
        while *i < chars.len() && keep(chars[*i]) {
            *i += 1;
        }
        chars[start..*i].iter().collect()
    };
    let skip_ws = |i: &mut usize| {
        take(i, &|c: char| c.is_whitespace());
    };
    let read_string = |i: &mut usize| -> String {
        let quote = chars[*i];
        *i += 1;
        let mut s = String::new();
        while *i < chars.len() && chars[*i] != quote {
            if chars[*i] == '\\' {
                *i += 1;
            }
            if *i < chars.len() {
                s.push(chars[*i]);
            }
            *i += 1;
        }
        *i += 1;
        s
    };
    while i < chars.len() {
        let c = chars[i];
        if c == '"' || c == '\'' || c == '`' {
            read_string(&mut i);
            continue;
        }
        if c == '[' {
            // a range or subquery duration
            while i < chars.len() && chars[i] != ']' {
                i += 1;
            }
            i += 1;
            continue;
        }
        if !ident_start(c) || (i > 0 && (chars[i - 1].is_ascii_digit() || chars[i - 1] == '.')) {
            i += 1;
            continue;
        }
        let word = take(&mut i, &ident_char);
        let mut j = i;
        skip_ws(&mut j);
        if matches!(word.as_str(), "by" | "without" | "on" | "ignoring")
            && chars.get(j) == Some(&'(')
        {
            j += 1;
            let close = chars[j..].iter().position(|&c| c == ')').unwrap() + j;
            let inner: String = chars[j..close].iter().collect();
            for label in inner.split(',').map(str::trim).filter(|l| !l.is_empty()) {
                names.grouping.insert(label.to_string());
            }
            i = close + 1;
            continue;
        }
        if !word.starts_with("mansign_") {
            continue;
        }
        let mut matchers = Vec::new();
        if chars.get(j) == Some(&'{') {
            j += 1;
            loop {
                skip_ws(&mut j);
                if chars.get(j) == Some(&'}') {
                    j += 1;
                    break;
                }
                let label = take(&mut j, &ident_char);
                skip_ws(&mut j);
                let op = take(&mut j, &|c: char| matches!(c, '=' | '!' | '~'));
                skip_ws(&mut j);
                assert!(
                    !label.is_empty() && matches!(chars.get(j), Some('"' | '\'' | '`')),
                    "cannot read the matchers of {word} in {expr}"
                );
                let value = read_string(&mut j);
                matchers.push((label, op, value));
                skip_ws(&mut j);
                if chars.get(j) == Some(&',') {
                    j += 1;
                }
            }
            i = j;
        }
        names.metrics.push((word, matchers));
    }
    names
}

// ---------------------------------------------------------------------------------------
// A running server
// ---------------------------------------------------------------------------------------

struct Server {
    child: Child,
    port: u16,
    ca: reqwest::Certificate,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `mansign admission serve` on a free loopback port with a certificate from a test
/// CA and a policy that verifies ConfigMaps signed by a fresh key; returns the server, a
/// signed ConfigMap and an unsigned one.
fn start_server() -> (Server, Value, Value) {
    let dir = tempfile::tempdir().unwrap();
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    write(dir.path(), "tls.crt", &cert.pem());
    write(dir.path(), "tls.key", &key.serialize_pem());
    let (signing_key, public_key) = key_pair(dir.path(), "release");
    let policy = write(
        dir.path(),
        "policy.yaml",
        &common::fixtures::key_policy("configmaps", "ConfigMap", "", &public_key),
    );
    let object = |name: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: team-a\ndata:\n  value: \"1\"\n"
        )
    };
    let unsigned = write(dir.path(), "unsigned.yaml", &object("unsigned"));
    let to_sign = write(dir.path(), "app.yaml", &object("app"));
    common::sign_with_key(&to_sign, &signing_key);
    let read = |p: &Path| {
        let text = std::fs::read_to_string(p).unwrap();
        mansign::manifest::parse_documents(&text, &mansign::limits::Limits::default())
            .unwrap()
            .remove(0)
            .1
    };
    let signed = read(&dir.path().join("app.yaml.signed"));
    let unsigned = read(&unsigned);

    let stderr = dir.path().join("stderr.log");
    let child = Command::new(env!("CARGO_BIN_EXE_mansign"))
        .args(["admission", "serve", "--listen", "127.0.0.1:0"])
        .arg("--tls-cert")
        .arg(dir.path().join("tls.crt"))
        .arg("--tls-key")
        .arg(dir.path().join("tls.key"))
        .arg("--policy")
        .arg(&policy)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let mut server = Server {
        child,
        port: 0,
        ca: reqwest::Certificate::from_pem(ca_cert.pem().as_bytes()).unwrap(),
        _dir: dir,
    };
    server.port = common::webhook::wait_listening(&mut server.child, &stderr, "the server");
    (server, signed, unsigned)
}

fn review(uid: &str, object: &Value) -> String {
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "resource": {"group": "", "version": "v1", "resource": "configmaps"},
            "requestKind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "requestResource": {"group": "", "version": "v1", "resource": "configmaps"},
            "name": object["metadata"]["name"],
            "namespace": "team-a",
            "operation": "CREATE",
            "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
            "object": object,
            "oldObject": null,
            "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}
        }
    })
    .to_string()
}

/// A scrape of `/metrics` after an allowed, a denied, a repeated (cached) and a refused
/// (HTTP error) request: series name -> label name -> values seen.
type Scrape = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

fn scrape_after_traffic() -> (Scrape, String) {
    let (server, signed, unsigned) = start_server();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let text = runtime.block_on(async {
        let client = reqwest::Client::builder()
            .tls_certs_only([server.ca.clone()])
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap();
        let url = |path: &str| format!("https://127.0.0.1:{}{path}", server.port);
        let post = |body: String, content_type: &'static str| {
            client
                .post(url("/validate"))
                .header("content-type", content_type)
                .body(body)
                .send()
        };
        for (uid, object) in [("a", &signed), ("b", &signed), ("c", &unsigned)] {
            let r = post(review(uid, object), "application/json").await.unwrap();
            assert_eq!(r.status(), 200);
        }
        let r = post("{}".into(), "text/plain").await.unwrap();
        assert_eq!(r.status(), 415);
        client
            .get(url("/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    });
    let mut scrape = Scrape::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let name_end = line.find(['{', ' ']).unwrap();
        let labels = scrape.entry(line[..name_end].to_string()).or_default();
        if let Some(rest) = line[name_end..].strip_prefix('{') {
            let body = &rest[..rest.rfind('}').unwrap()];
            for pair in body.split("\",") {
                let (k, v) = pair.split_once("=\"").unwrap();
                labels
                    .entry(k.to_string())
                    .or_default()
                    .insert(v.trim_end_matches('"').to_string());
            }
        }
    }
    (scrape, text)
}

/// Labels Prometheus adds to every series of a Kubernetes target (the ServiceMonitor's or
/// kubernetes_sd's target labels), which the server itself does not export.
const TARGET_LABELS: [&str; 7] = [
    "job",
    "instance",
    "namespace",
    "pod",
    "service",
    "container",
    "endpoint",
];

/// The reason codes the HTTP layer answers with (string literals of routes.rs); a scrape
/// in a test cannot produce all of them (a 503 needs a review past its deadline).
fn http_reason_codes() -> String {
    std::fs::read_to_string(Path::new(REPO).join("src/admission/server/routes.rs")).unwrap()
}

/// Checks one expression against the scrape; returns what is wrong.
fn check_expression(what: &str, expr: &str, scrape: &Scrape, problems: &mut Vec<String>) {
    let found = names(expr);
    if found.metrics.is_empty() {
        problems.push(format!("{what}: names no mansign_ metric: {expr}"));
    }
    let mut all_labels: BTreeSet<&str> = TARGET_LABELS.into_iter().collect();
    for (metric, matchers) in &found.metrics {
        let Some(labels) = scrape.get(metric) else {
            problems.push(format!("{what}: {metric} is not exported"));
            continue;
        };
        all_labels.extend(labels.keys().map(String::as_str));
        for (label, op, value) in matchers {
            if TARGET_LABELS.contains(&label.as_str()) {
                continue;
            }
            let Some(values) = labels.get(label) else {
                problems.push(format!("{what}: {metric} has no label {label}"));
                continue;
            };
            if op != "=" {
                continue;
            }
            let known = if label == "reason" && metric == "mansign_admission_requests_total" {
                values.contains(value) || http_reason_codes().contains(&format!("\"{value}\""))
            } else {
                values.contains(value)
            };
            if !known {
                problems.push(format!(
                    "{what}: {metric}{{{label}=\"{value}\"}}: the server exports {label} values {values:?}"
                ));
            }
        }
    }
    for label in &found.grouping {
        if !all_labels.contains(label.as_str()) {
            problems.push(format!(
                "{what}: groups by {label}, which no metric it uses has"
            ));
        }
    }
}

// ---------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------

#[test]
fn the_dashboard_and_the_rules_name_only_metrics_and_labels_the_server_exports() {
    let (scrape, text) = scrape_after_traffic();
    let mut problems = Vec::new();
    let mut used = BTreeSet::new();
    for (what, expr) in rule_expressions()
        .into_iter()
        .chain(dashboard_expressions())
    {
        check_expression(&what, &expr, &scrape, &mut problems);
        used.extend(names(&expr).metrics.into_iter().map(|(m, _)| m));
    }
    assert!(
        problems.is_empty(),
        "{}\n\nscrape:\n{text}",
        problems.join("\n")
    );
    // What the issue asks the dashboard and rules to cover is covered.
    for metric in [
        "mansign_admission_requests_total",
        "mansign_admission_request_duration_seconds_bucket",
        "mansign_config_last_reload_failed",
        "mansign_tls_certificate_not_after_timestamp_seconds",
        "mansign_verification_cache_lookups_total",
    ] {
        assert!(used.contains(metric), "nothing uses {metric}");
    }
}

#[test]
fn the_metric_check_refuses_names_the_server_does_not_export() {
    let (scrape, _) = scrape_after_traffic();
    let cases = [
        "rate(mansign_admission_requests_totl[5m])",
        "sum by (verdict) (rate(mansign_admission_request_duration_seconds[5m]))",
        "mansign_admission_requests_total{verdict=\"rejected\"}",
        "mansign_admission_requests_total{reason=\"no-such-reason\"}",
        "mansign_config_last_reload_failed{part=\"tls\"}",
        "sum by (phase) (mansign_admission_requests_total)",
        "up == 0",
    ];
    for expr in cases {
        let mut problems = Vec::new();
        check_expression("case", expr, &scrape, &mut problems);
        assert!(!problems.is_empty(), "{expr} passed the check");
    }
}

#[test]
fn the_alerting_rules_pass_the_rule_checker() {
    let (ok, output) = rulecheck(&rules_file());
    assert!(
        ok,
        "rulecheck deploy/monitoring/mansign-alerts.yaml:\n{output}"
    );
    assert!(output.contains("SUCCESS"), "{output}");
}

#[test]
fn every_dashboard_query_parses_as_promql() {
    // The queries, as recording rules of a rule file: rulecheck parses each expression.
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("groups:\n- name: dashboard\n  rules:\n");
    for (i, (_, expr)) in dashboard_expressions().iter().enumerate() {
        text.push_str(&format!(
            "  - record: dashboard:query_{i}\n    expr: {}\n",
            serde_json::to_string(expr).unwrap()
        ));
    }
    let file = write(dir.path(), "dashboard-rules.yaml", &text);
    let (ok, output) = rulecheck(&file);
    assert!(ok, "{output}\n{text}");
}

#[test]
fn the_rule_checker_refuses_broken_rule_files() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "bad-promql",
            "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: sum(rate(x[5m])\n",
        ),
        (
            "unknown-field",
            "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up == 0\n    severity: page\n",
        ),
        (
            "record-and-alert",
            "groups:\n- name: g\n  rules:\n  - alert: A\n    record: a:b\n    expr: up\n",
        ),
        (
            "duplicate-group",
            "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up\n- name: g\n  rules:\n  - alert: B\n    expr: up\n",
        ),
        (
            "duplicate-rule",
            "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up\n  - alert: A\n    expr: up == 0\n",
        ),
        (
            "bad-template",
            "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up\n    annotations:\n      summary: '{{ $value | nosuchfunc }}'\n",
        ),
    ];
    for (name, text) in cases {
        let file = write(dir.path(), &format!("{name}.yaml"), text);
        let (ok, output) = rulecheck(&file);
        assert!(!ok, "rulecheck accepted {name}: {output}");
    }
}
