//! Kyverno CLI test suites (`kyverno-test.yaml`) for manifest rules: `mansign policy test`.
//!
//! The format is the Kyverno CLI's `cli.kyverno.io/v1alpha1` `Test` (kyverno v1.19.0,
//! `cmd/cli/kubectl-kyverno/apis/v1alpha1/test.go` and `test_result.go`): `policies` and
//! `resources` (paths relative to the suite's directory) and `results`, each naming a
//! `policy`, a `rule`, the `resources` it is about and the expected `result`. The results
//! are checked as `kyverno test` checks them (`cmd/cli/kubectl-kyverno/commands/test/
//! output.go`), so a team's suite for its manifest rules runs unchanged:
//!
//! * a result's resources are found by `name` or `namespace/name` among the suite's
//!   resources (`kind` is not used to find them, as in Kyverno);
//! * a result without `rule` checks every rule of the policy that applies;
//! * a resource none of the named rules applies to passes as `Excluded`;
//! * a policy no suite file defines fails as `Not found`;
//! * a refusal is `error` where Kyverno reports one ([`kyverno_result`]): when a signature
//!   did not verify with an entry's key or certificate and the set did not reach its count
//!   (Kyverno's signature check returns an error there); every other refusal (unsigned, no
//!   signature, changed since signing, a valid signature by a signer not allowed) is
//!   `fail`. Both deny under `Enforce`.
//!
//! Where mansign is stricter (docs/compatibility.md, "policy test"): the untyped suite
//! format is refused (Kyverno 1.19 refuses it too), so are fields that have no meaning for
//! manifest rules (variables, values, exceptions, payloads, ...), an unknown `result`
//! value, a listed resource the suite does not have (Kyverno then checks *every* resource
//! against the result), a rule the policy does not have (Kyverno: `Excluded`, a pass), two
//! resources with the same identity, and a directory without suites.
//!
//! Everything is read within [`Limits`]; a bad suite is refused as a whole, naming the file,
//! the document and the field.

use super::load::context::read_documents;
use super::{LoadOptions, PolicyError, PolicySet, load_str, typed};
use crate::limits::Limits;
use crate::manifest::{Document, ManifestError, ObjectIdentity, load_inputs};
use crate::verify::{Attempt, EntryFailureReason, Rejection, SetFailure};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The suite file name `kyverno test` looks for (its `--file-name` default).
pub const DEFAULT_FILE_NAME: &str = "kyverno-test.yaml";

/// The API version and kind of a suite document.
pub const API_VERSION: &str = "cli.kyverno.io/v1alpha1";
pub const KIND: &str = "Test";

/// Most suite files under the directories given.
pub const MAX_SUITE_FILES: usize = 1000;
/// Deepest directory level searched for suite files.
pub const MAX_WALK_DEPTH: usize = 32;
/// Most result rows over a whole run (results x resources they name).
pub const MAX_ROWS: usize = 100_000;

/// Why suites cannot be run. Every variant names the file; documents and fields where
/// they apply.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SuiteError {
    #[error("{path}: cannot read")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: larger than {limit} bytes")]
    TooLarge { path: PathBuf, limit: usize },
    /// The suite document is wrong: the field path and why.
    #[error("{path}: document {document}: {reason}")]
    Invalid {
        path: PathBuf,
        document: usize,
        reason: String,
    },
    #[error("{path}: document {document}: policies")]
    Policy {
        path: PathBuf,
        document: usize,
        #[source]
        source: Box<PolicyError>,
    },
    #[error("{path}: document {document}: resources")]
    Resources {
        path: PathBuf,
        document: usize,
        #[source]
        source: Box<ManifestError>,
    },
    #[error("no {file_name} under {}", .dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", "))]
    NoSuites {
        file_name: String,
        dirs: Vec<PathBuf>,
    },
    #[error("{what}: more than {limit}; refused")]
    TooMany { what: String, limit: usize },
}

/// Settings for a run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SuiteOptions {
    /// The suite file name searched for in directories (`--file-name`).
    pub file_name: String,
    /// How the suites' policies are loaded (trust root, limits).
    pub load: LoadOptions,
}

crate::setters::setters! {
    /// Setters for callers outside the crate (the struct is `#[non_exhaustive]`).
    SuiteOptions {
        /// Sets `file_name`.
        with_file_name => file_name: String,
        /// Sets `load`.
        with_load => load: LoadOptions,
    }
}

impl Default for SuiteOptions {
    fn default() -> Self {
        SuiteOptions {
            file_name: DEFAULT_FILE_NAME.into(),
            load: LoadOptions::default(),
        }
    }
}

/// An expected (or, for a checked rule, actual) result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    Fail,
    Error,
    Skip,
    Warn,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Error => "error",
            Outcome::Skip => "skip",
            Outcome::Warn => "warn",
        }
    }

    fn parse(s: &str) -> Option<Outcome> {
        Some(match s {
            "pass" => Outcome::Pass,
            "fail" => Outcome::Fail,
            "error" => Outcome::Error,
            "skip" => Outcome::Skip,
            "warn" => Outcome::Warn,
            _ => return None,
        })
    }
}

/// One checked expectation: a table row of `kyverno test`.
#[derive(Debug, Clone)]
pub struct Row {
    /// 1-based, per suite document.
    pub id: usize,
    pub policy: String,
    pub rule: String,
    /// `apiVersion/kind/namespace/name` (no namespace segment for cluster-scoped objects).
    pub resource: String,
    pub expected: Outcome,
    /// What mansign decided for the rule (`None`: excluded, or the policy was not found).
    pub actual: Option<Outcome>,
    /// True when the expectation is met.
    pub passed: bool,
    /// `Ok`, `Excluded`, `Not found`, or `Want X, got Y`.
    pub reason: String,
    /// mansign's verdict for the rule, in words (why it refused, or who signed).
    pub message: String,
}

/// The rows of one suite document.
#[derive(Debug, Clone)]
pub struct SuiteRun {
    pub path: PathBuf,
    /// 1-based document of the suite file.
    pub document: usize,
    /// `metadata.name`.
    pub name: String,
    pub policies: usize,
    pub resources: usize,
    pub rows: Vec<Row>,
}

/// Every suite of a run.
#[derive(Debug, Clone, Default)]
pub struct SuiteReport {
    pub suites: Vec<SuiteRun>,
    /// Notes from the policy loader (skipped non-manifest rules, ...).
    pub notes: Vec<String>,
}

impl SuiteReport {
    fn rows(&self) -> impl Iterator<Item = &Row> {
        self.suites.iter().flat_map(|s| &s.rows)
    }

    /// Rows whose expectation is met (`kyverno test` counts `Excluded` rows as passed).
    pub fn passed(&self) -> usize {
        self.rows().filter(|r| r.passed).count()
    }

    pub fn failed(&self) -> usize {
        self.rows().filter(|r| !r.passed).count()
    }

    /// True when every expectation is met.
    pub fn is_success(&self) -> bool {
        self.failed() == 0
    }

    /// A table per suite, as `kyverno test` prints it (without colours), the reason for
    /// each failed row, and the summary line.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for suite in &self.suites {
            let _ = writeln!(
                out,
                "Test {} ({}, document {}): {} {} and {} {}",
                suite.name,
                suite.path.display(),
                suite.document,
                suite.policies,
                plural(suite.policies, "policy", "policies"),
                suite.resources,
                plural(suite.resources, "resource", "resources"),
            );
            let header = ["ID", "POLICY", "RULE", "RESOURCE", "RESULT", "REASON"];
            let cells: Vec<[String; 6]> = suite
                .rows
                .iter()
                .map(|r| {
                    [
                        r.id.to_string(),
                        r.policy.clone(),
                        r.rule.clone(),
                        r.resource.clone(),
                        if r.passed { "Pass" } else { "Fail" }.to_string(),
                        r.reason.clone(),
                    ]
                })
                .collect();
            let mut widths = header.map(str::len);
            for row in &cells {
                for (w, c) in widths.iter_mut().zip(row) {
                    *w = (*w).max(c.chars().count());
                }
            }
            let mut line = |cols: &[String]| {
                let text: Vec<String> = cols
                    .iter()
                    .zip(widths)
                    .map(|(c, w)| format!("{c:<w$}"))
                    .collect();
                let _ = writeln!(out, "  {}", text.join("  ").trim_end());
            };
            line(&header.map(String::from));
            for row in &cells {
                line(row);
            }
            for r in suite
                .rows
                .iter()
                .filter(|r| !r.passed && !r.message.is_empty())
            {
                let _ = writeln!(out, "  {}: {}", r.id, r.message);
            }
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "Test Summary: {} tests passed and {} tests failed",
            self.passed(),
            self.failed()
        );
        out
    }

    /// JSON form (docs/cli.md, "policy test").
    pub fn to_json(&self) -> Value {
        json!({
            "passed": self.passed(),
            "failed": self.failed(),
            "suites": self.suites.iter().map(|s| json!({
                "path": s.path.display().to_string(),
                "document": s.document,
                "name": s.name,
                "results": s.rows.iter().map(|r| json!({
                    "id": r.id,
                    "policy": r.policy,
                    "rule": r.rule,
                    "resource": r.resource,
                    "result": if r.passed { "pass" } else { "fail" },
                    "reason": r.reason,
                    "expected": r.expected.as_str(),
                    "actual": r.actual.map(Outcome::as_str),
                    "message": r.message,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        })
    }
}

fn plural<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

/// A suite document (the fields of kyverno v1.19.0's `v1alpha1.Test`; unknown fields are
/// refused, as Kyverno's strict decoding refuses them).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[expect(
    dead_code,
    reason = "the fields of UNSUPPORTED_FIELDS are here to be known, not unknown; the check \
              refuses them from the document"
)]
struct TestDocument {
    api_version: Option<String>,
    kind: Option<String>,
    #[serde(default)]
    metadata: Option<Value>,
    name: Option<String>,
    #[serde(default)]
    policies: Vec<String>,
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    results: Vec<TestResult>,
    // Fields of the format that have no meaning for manifest rules: refused when set
    // (UNSUPPORTED_FIELDS).
    json_payload: Option<Value>,
    json_payloads: Option<Value>,
    http_payloads: Option<Value>,
    envoy_payloads: Option<Value>,
    target_resources: Option<Value>,
    variables: Option<Value>,
    param_resources: Option<Value>,
    userinfo: Option<Value>,
    values: Option<Value>,
    exceptions: Option<Value>,
    context: Option<Value>,
    cluster_resources: Option<Value>,
    api_call_responses: Option<Value>,
    global_context_entries: Option<Value>,
}

/// The fields of [`TestDocument`] that have no meaning for manifest rules, as a suite
/// names them: refused when set (not null).
const UNSUPPORTED_FIELDS: [&str; 14] = [
    "jsonPayload",
    "jsonPayloads",
    "httpPayloads",
    "envoyPayloads",
    "targetResources",
    "variables",
    "paramResources",
    "userinfo",
    "values",
    "exceptions",
    "context",
    "clusterResources",
    "apiCallResponses",
    "globalContextEntries",
];

/// One expected result (kyverno v1.19.0's `v1alpha1.TestResult`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct TestResult {
    policy: Option<String>,
    #[serde(default)]
    rule: String,
    result: Option<String>,
    /// Read but not used to find resources, as in Kyverno.
    #[serde(default, rename = "kind")]
    _kind: String,
    #[serde(default)]
    resources: Vec<String>,
    operation: Option<String>,
    #[serde(default)]
    is_validating_admission_policy: bool,
    #[serde(default)]
    is_mutating_admission_policy: bool,
    #[serde(default)]
    is_validating_policy: bool,
    #[serde(default)]
    is_deleting_policy: bool,
    #[serde(default)]
    is_image_validating_policy: bool,
    #[serde(default)]
    is_generating_policy: bool,
    #[serde(default)]
    is_mutating_policy: bool,
    patched_resources: Option<Value>,
    generated_resource: Option<Value>,
    generated_resources: Option<Value>,
    clone_source_resource: Option<Value>,
    #[serde(default)]
    fail_on_missing_resources: bool,
    resource_specs: Option<Value>,
}

/// The suite files under `paths`: a directory is searched recursively for files named
/// `file_name` (as `kyverno test DIR` does, in name order); a file is a suite itself.
pub fn find_suites(paths: &[PathBuf], file_name: &str) -> Result<Vec<PathBuf>, SuiteError> {
    let mut found = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|source| SuiteError::Read {
            path: path.clone(),
            source,
        })?;
        if meta.is_dir() {
            walk(path, file_name, 0, &mut found)?;
        } else {
            push_bounded(&mut found, path.clone())?;
        }
    }
    if found.is_empty() {
        return Err(SuiteError::NoSuites {
            file_name: file_name.into(),
            dirs: paths.to_vec(),
        });
    }
    Ok(found)
}

fn push_bounded(found: &mut Vec<PathBuf>, path: PathBuf) -> Result<(), SuiteError> {
    if found.len() >= MAX_SUITE_FILES {
        return Err(SuiteError::TooMany {
            what: "suite files".into(),
            limit: MAX_SUITE_FILES,
        });
    }
    found.push(path);
    Ok(())
}

fn walk(
    dir: &Path,
    file_name: &str,
    depth: usize,
    found: &mut Vec<PathBuf>,
) -> Result<(), SuiteError> {
    if depth > MAX_WALK_DEPTH {
        return Err(SuiteError::TooMany {
            what: format!("{}: directory levels", dir.display()),
            limit: MAX_WALK_DEPTH,
        });
    }
    let read = |source| SuiteError::Read {
        path: dir.to_path_buf(),
        source,
    };
    let mut entries = std::fs::read_dir(dir)
        .map_err(read)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(read)?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        // Symbolic links to directories are not followed (no loops).
        let kind = entry.file_type().map_err(read)?;
        if kind.is_dir() {
            walk(&entry.path(), file_name, depth + 1, found)?;
        } else if entry.file_name() == file_name {
            push_bounded(found, entry.path())?;
        }
    }
    Ok(())
}

/// Reads a file of at most `limits.max_input_bytes` as UTF-8.
fn read_bounded(path: &Path, limits: &Limits) -> Result<String, SuiteError> {
    let read = |source| SuiteError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read)?;
    let mut bytes = Vec::new();
    file.take(limits.max_input_bytes as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(read)?;
    if bytes.len() > limits.max_input_bytes {
        return Err(SuiteError::TooLarge {
            path: path.to_path_buf(),
            limit: limits.max_input_bytes,
        });
    }
    String::from_utf8(bytes).map_err(|e| {
        read(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
        ))
    })
}

/// Runs every suite under `paths` (see [`find_suites`]). A suite that cannot be run
/// refuses the whole run: no partial report.
pub fn run_suites(paths: &[PathBuf], options: &SuiteOptions) -> Result<SuiteReport, SuiteError> {
    let files = find_suites(paths, &options.file_name)?;
    let mut report = SuiteReport::default();
    let mut rows = 0;
    for file in files {
        let text = read_bounded(&file, &options.load.limits)?;
        let documents =
            read_documents(&text, &options.load.limits).map_err(|(document, reason)| {
                SuiteError::Invalid {
                    path: file.clone(),
                    document,
                    reason,
                }
            })?;
        for (position, value) in documents {
            let run = run_document(
                &file,
                position + 1,
                &value,
                options,
                rows,
                &mut report.notes,
            )?;
            rows += run.rows.len();
            report.suites.push(run);
        }
    }
    Ok(report)
}

/// The policies of a suite: the manifest rules, and every policy name and rule name its
/// files define (manifest rules or not).
struct SuitePolicies {
    set: PolicySet,
    /// Policy name -> every rule name of it, from the documents as written.
    defined: BTreeMap<String, Vec<String>>,
    count: usize,
}

fn load_policies(
    path: &Path,
    document: usize,
    dir: &Path,
    names: &[String],
    options: &SuiteOptions,
) -> Result<SuitePolicies, SuiteError> {
    let invalid = |reason: String| SuiteError::Invalid {
        path: path.to_path_buf(),
        document,
        reason,
    };
    let mut files = Vec::new();
    for (i, name) in names.iter().enumerate() {
        if name.contains("://") {
            return Err(invalid(format!(
                "policies[{i}]: {name:?}: only local files are read (no URLs or git \
                 repositories)"
            )));
        }
        let full = dir.join(name);
        if full.is_dir() {
            let mut inside = Vec::new();
            collect_yaml(&full, 0, &mut inside)
                .map_err(|e| invalid(format!("policies[{i}]: {}: {e}", full.display())))?;
            files.extend(inside);
        } else {
            files.push(full);
        }
        if files.len() > MAX_SUITE_FILES {
            return Err(invalid(format!(
                "policies: more than {MAX_SUITE_FILES} policy files"
            )));
        }
    }
    let mut out = SuitePolicies {
        set: PolicySet::default(),
        defined: BTreeMap::new(),
        count: 0,
    };
    for file in files {
        let text = read_bounded(&file, &options.load.limits)
            .map_err(|e| invalid(format!("policies: {}", crate::error::Chain(&e))))?;
        let policy_error = |source| SuiteError::Policy {
            path: path.to_path_buf(),
            document,
            source: Box::new(source),
        };
        let origin = file.display().to_string();
        let base = file.parent().map(Path::to_path_buf).unwrap_or_default();
        // The names as written, manifest rules or not.
        let raw = read_documents(&text, &options.load.limits).map_err(|(document, reason)| {
            policy_error(PolicyError::Syntax {
                origin: origin.clone(),
                document,
                reason,
            })
        })?;
        for (_, value) in &raw {
            let name = value["metadata"]["name"].as_str().unwrap_or_default();
            let rules: Vec<String> = value["spec"]["rules"]
                .as_array()
                .map(|rules| {
                    rules
                        .iter()
                        .filter_map(|r| r["name"].as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            out.defined
                .entry(name.to_string())
                .or_default()
                .extend(rules);
            out.count += 1;
        }
        match load_str(&origin, &text, &base, &options.load) {
            Ok(set) => out.set.extend(set),
            // A file of policies without manifest rules: their rules are not mansign's to
            // run; a result naming one is refused below.
            Err(PolicyError::NoRules { .. }) => {}
            Err(e) => return Err(policy_error(e)),
        }
    }
    if out.set.rules.is_empty() {
        return Err(policy_error_no_rules(path, document));
    }
    Ok(out)
}

fn policy_error_no_rules(path: &Path, document: usize) -> SuiteError {
    SuiteError::Policy {
        path: path.to_path_buf(),
        document,
        source: Box::new(PolicyError::NoRules {
            origin: "the suite's policies".into(),
        }),
    }
}

/// The YAML and JSON files under a policy directory, in name order; at most
/// [`MAX_SUITE_FILES`] files over [`MAX_WALK_DEPTH`] levels.
fn collect_yaml(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if depth > MAX_WALK_DEPTH {
        return Err(std::io::Error::other(format!(
            "more than {MAX_WALK_DEPTH} directory levels"
        )));
    }
    let mut entries = std::fs::read_dir(dir)?.collect::<Result<Vec<_>, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let kind = entry.file_type()?;
        let path = entry.path();
        if kind.is_dir() {
            collect_yaml(&path, depth + 1, out)?;
        } else if path
            .extension()
            .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
        {
            if out.len() >= MAX_SUITE_FILES {
                return Err(std::io::Error::other(format!(
                    "more than {MAX_SUITE_FILES} policy files"
                )));
            }
            out.push(path);
        }
    }
    Ok(())
}

/// `apiVersion/kind/namespace/name`, as `kyverno test` names a resource.
fn resource_name(id: &ObjectIdentity) -> String {
    let api_version = if id.group.is_empty() {
        id.version.clone()
    } else {
        format!("{}/{}", id.group, id.version)
    };
    match &id.namespace {
        Some(ns) => format!("{api_version}/{}/{ns}/{}", id.kind, id.name),
        None => format!("{api_version}/{}/{}", id.kind, id.name),
    }
}

fn run_document(
    path: &Path,
    document: usize,
    value: &Value,
    options: &SuiteOptions,
    rows_before: usize,
    notes: &mut Vec<String>,
) -> Result<SuiteRun, SuiteError> {
    let invalid = |reason: String| SuiteError::Invalid {
        path: path.to_path_buf(),
        document,
        reason,
    };
    let test: TestDocument = typed::from_value(value).map_err(invalid)?;
    // Kyverno 1.19 refuses these too ("uses a deprecated schema").
    if test.api_version.is_none() || test.kind.is_none() || test.name.is_some() {
        return Err(invalid(format!(
            "the untyped suite format (no apiVersion/kind, or a top-level `name`) is \
             refused, as kyverno test 1.19 refuses it: add `apiVersion: {API_VERSION}` and \
             `kind: {KIND}`, and move `name` to `metadata.name`"
        )));
    }
    let (api_version, kind) = (
        test.api_version.as_deref().unwrap_or_default(),
        test.kind.as_deref().unwrap_or_default(),
    );
    if api_version != API_VERSION || kind != KIND {
        return Err(invalid(format!(
            "{api_version} {kind} is not a suite (expected {API_VERSION} {KIND})"
        )));
    }
    let set = |field: &str| value.get(field).is_some_and(|v| !v.is_null());
    if let Some(field) = UNSUPPORTED_FIELDS.into_iter().find(|f| set(f)) {
        return Err(invalid(format!(
            "{field}: not supported: mansign runs manifest verification rules, which read \
             only the resource and its signatures (remove the field, or run this suite with \
             kyverno test)"
        )));
    }
    if test.policies.is_empty() {
        return Err(invalid("policies: no policy files listed".into()));
    }
    if test.resources.is_empty() {
        return Err(invalid("resources: no resource files listed".into()));
    }
    let name = test
        .metadata
        .as_ref()
        .and_then(|m| m["name"].as_str())
        .unwrap_or_default()
        .to_string();
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let policies = load_policies(path, document, &dir, &dedup(&test.policies), options)?;
    notes.extend(policies.set.notes.iter().cloned());

    // The resources, each verified once under every rule that applies.
    let mut resource_paths = Vec::new();
    for (i, r) in dedup(&test.resources).iter().enumerate() {
        if r.contains("://") {
            return Err(invalid(format!(
                "resources[{i}]: {r:?}: only local files are read (no URLs)"
            )));
        }
        resource_paths.push(dir.join(r));
    }
    let files = load_inputs(&resource_paths, &options.load.limits).map_err(|source| {
        SuiteError::Resources {
            path: path.to_path_buf(),
            document,
            source: Box::new(source),
        }
    })?;
    let documents: Vec<&Document> = files.iter().flat_map(|f| &f.documents).collect();
    if documents.len() > options.load.limits.max_documents {
        return Err(SuiteError::TooMany {
            what: format!("{}: document {document}: resources", path.display()),
            limit: options.load.limits.max_documents,
        });
    }
    let mut seen = HashSet::new();
    for d in &documents {
        if !seen.insert(d.identity.clone()) {
            return Err(invalid(format!(
                "resources: {} appears twice (Kyverno tests one of them and warns); keep one",
                d.identity
            )));
        }
    }
    let verdicts = policies
        .set
        .verify_documents(documents.iter().copied(), &Default::default());

    let mut rows = Vec::new();
    for (i, result) in test.results.iter().enumerate() {
        let at = |field: &str| format!("results[{i}].{field}");
        let Some(policy) = result.policy.as_deref().filter(|p| !p.is_empty()) else {
            return Err(invalid(format!("{}: required", at("policy"))));
        };
        let Some(expected_text) = result.result.as_deref() else {
            return Err(invalid(format!(
                "{}: required (pass, fail, error or skip)",
                at("result")
            )));
        };
        let expected = Outcome::parse(expected_text).ok_or_else(|| {
            invalid(format!(
                "{}: {expected_text:?} is not a result (pass, fail, error, skip or warn)",
                at("result")
            ))
        })?;
        let other_kind = [
            (
                "isValidatingAdmissionPolicy",
                result.is_validating_admission_policy,
            ),
            (
                "isMutatingAdmissionPolicy",
                result.is_mutating_admission_policy,
            ),
            ("isValidatingPolicy", result.is_validating_policy),
            ("isDeletingPolicy", result.is_deleting_policy),
            ("isImageValidatingPolicy", result.is_image_validating_policy),
            ("isGeneratingPolicy", result.is_generating_policy),
            ("isMutatingPolicy", result.is_mutating_policy),
            ("patchedResources", result.patched_resources.is_some()),
            ("generatedResource", result.generated_resource.is_some()),
            ("generatedResources", result.generated_resources.is_some()),
            (
                "cloneSourceResource",
                result.clone_source_resource.is_some(),
            ),
            ("failOnMissingResources", result.fail_on_missing_resources),
            ("resourceSpecs", result.resource_specs.is_some()),
        ];
        if let Some((field, _)) = other_kind.iter().find(|(_, set)| *set) {
            return Err(invalid(format!(
                "{}: not supported: mansign checks the results of manifest verification \
                 rules only",
                at(field)
            )));
        }
        match result.operation.as_deref() {
            None | Some("CREATE") | Some("UPDATE") => {}
            Some(other) => {
                return Err(invalid(format!(
                    "{}: {other:?} is not supported (CREATE or UPDATE: a manifest rule checks \
                     the object sent)",
                    at("operation")
                )));
            }
        }
        // `namespace/name` of a namespaced Policy: Kyverno compares the name only.
        let policy_name = policy.rsplit('/').next().unwrap_or(policy);
        let known = policies.defined.contains_key(policy_name);
        let manifest_rules: Vec<&str> = policies
            .set
            .rules
            .iter()
            .filter(|r| r.policy == policy_name)
            .map(|r| r.rule.as_str())
            .collect();
        if known && manifest_rules.is_empty() {
            return Err(invalid(format!(
                "{}: {policy:?} has no manifest verification rule; mansign runs manifest \
                 rules only",
                at("policy")
            )));
        }
        if known && !result.rule.is_empty() && !manifest_rules.contains(&result.rule.as_str()) {
            let other = policies.defined[policy_name].contains(&result.rule);
            return Err(invalid(format!(
                "{}: policy {policy_name:?} has no manifest verification rule {:?}{} (its \
                 manifest rules: {}); Kyverno would report every resource as passed \
                 (Excluded)",
                at("rule"),
                result.rule,
                if other {
                    " (it is a rule of another type, which mansign does not run)"
                } else {
                    ""
                },
                manifest_rules.join(", ")
            )));
        }

        // Which resources: by name or namespace/name; none listed, all of them.
        let mut selected: Vec<usize> = Vec::new();
        for (j, wanted) in result.resources.iter().enumerate() {
            let parts: Vec<&str> = wanted.split('/').collect();
            let before = selected.len();
            for (k, d) in documents.iter().enumerate() {
                let id = &d.identity;
                let hit = match parts.as_slice() {
                    [name] => *name == id.name,
                    [ns, name] => {
                        *name == id.name && *ns == id.namespace.as_deref().unwrap_or_default()
                    }
                    _ => false,
                };
                if hit {
                    selected.push(k);
                }
            }
            if selected.len() == before {
                return Err(invalid(format!(
                    "{}: {wanted:?} names no resource of the suite (Kyverno would then check \
                     the result against every resource)",
                    at(&format!("resources[{j}]"))
                )));
            }
        }
        if result.resources.is_empty() {
            selected = (0..documents.len()).collect();
        }

        for k in selected {
            // Bounded as the rows are made (results x resources can be large).
            if rows_before + rows.len() > MAX_ROWS {
                return Err(too_many_rows());
            }
            let verdict = &verdicts.objects[k];
            let resource = resource_name(&documents[k].identity);
            let mut push = |rule: &str, actual: Option<Outcome>, reason: String, message| {
                let passed = reason == "Ok" || reason == "Excluded";
                rows.push(Row {
                    id: rows.len() + 1,
                    policy: policy.to_string(),
                    rule: rule.to_string(),
                    resource: resource.clone(),
                    expected,
                    actual,
                    passed,
                    reason,
                    message,
                });
            };
            if !known {
                push(
                    &result.rule,
                    None,
                    "Not found".into(),
                    format!("no policy named {policy_name:?} in the suite's policies"),
                );
                continue;
            }
            let checked: Vec<_> = verdict
                .rules
                .iter()
                .filter(|r| {
                    r.policy == policy_name && (result.rule.is_empty() || r.rule == result.rule)
                })
                .collect();
            if checked.is_empty() {
                let message = if result.rule.is_empty() {
                    format!("no rule of {policy_name:?} applies to this resource")
                } else {
                    format!("rule {:?} does not apply to this resource", result.rule)
                };
                push(&result.rule, None, "Excluded".into(), message);
                continue;
            }
            for r in checked {
                let (actual, message) = match &r.verdict.result {
                    Ok(ok) => (Outcome::Pass, format!("verified ({})", ok.signer)),
                    Err(e) => (kyverno_result(e), format!("FAILED [{}] {e}", e.check())),
                };
                let reason = if actual == expected {
                    "Ok".to_string()
                } else {
                    format!("Want {}, got {}", expected.as_str(), actual.as_str())
                };
                push(&r.rule, Some(actual), reason, message);
            }
        }
    }
    if rows_before + rows.len() > MAX_ROWS {
        return Err(too_many_rows());
    }
    Ok(SuiteRun {
        path: path.to_path_buf(),
        document,
        name,
        policies: policies.count,
        resources: documents.len(),
        rows,
    })
}

fn too_many_rows() -> SuiteError {
    SuiteError::TooMany {
        what: "result rows (results x the resources they name)".into(),
        limit: MAX_ROWS,
    }
}

/// Kyverno drops repeated paths.
fn dedup(items: &[String]) -> Vec<String> {
    let mut seen = HashSet::new();
    items
        .iter()
        .filter(|i| seen.insert(i.as_str()))
        .cloned()
        .collect()
}

/// The result Kyverno reports for a refusal of a manifest rule: `error` when a signature
/// did not verify cryptographically with an entry of a set that did not reach its count
/// (kyverno v1.19.0 `pkg/engine/handlers/validation/validate_manifest.go`: an entry whose
/// signature check returns an error makes the set's verdict an error), `fail` otherwise.
pub fn kyverno_result(rejection: &Rejection) -> Outcome {
    let errored = match rejection {
        Rejection::NoTrustedSignature { attempts } => cryptographic(attempts),
        Rejection::AttestorSetNotSatisfied(set) => set_errored(set),
        _ => false,
    };
    if errored {
        Outcome::Error
    } else {
        Outcome::Fail
    }
}

/// An attempt failed on the cryptography (not on the signer's identity or age).
fn cryptographic(attempts: &[Attempt]) -> bool {
    attempts.iter().any(|a| a.failure.stage() == 1)
}

fn set_errored(set: &SetFailure) -> bool {
    set.failures.iter().any(|f| match &f.reason {
        EntryFailureReason::Attempts(attempts) => cryptographic(attempts),
        EntryFailureReason::Nested(nested) => set_errored(nested),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each field with no meaning for manifest rules is a known field, refused when set;
    /// set to null it is not set (the run goes on to the next check).
    #[test]
    fn unsupported_fields_are_refused_when_set_and_not_when_null() {
        let run = |field: &str, value: &str| {
            let text = format!(
                r#"{{"apiVersion": "{API_VERSION}", "kind": "{KIND}", "metadata": {{"name": "t"}}, "{field}": {value}}}"#
            );
            let document: Value = serde_json::from_str(&text).unwrap();
            let path = Path::new("kyverno-test.yaml");
            let options = SuiteOptions::default();
            run_document(path, 1, &document, &options, 0, &mut Vec::new())
                .unwrap_err()
                .to_string()
        };
        for field in UNSUPPORTED_FIELDS {
            let err = run(field, "{}");
            assert!(
                err.contains(&format!("{field}: not supported")),
                "{field}: {err}"
            );
            let err = run(field, "null");
            assert!(
                err.contains("policies: no policy files listed"),
                "{field}: {err}"
            );
        }
    }
}
