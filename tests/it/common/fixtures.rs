//! Documents that several tests write with other values, built from one text: the
//! Deployment `web` and a one-key ManifestPolicy. Included as `common::fixtures`, or on its own with `#[path]`.
#![allow(dead_code)]

/// A one-container Deployment `web` in `namespace` running `image`, as YAML text;
/// `metadata_extra` (whole lines indented two spaces, e.g. `"  labels:\n    app: web\n"`)
/// goes at the end of its metadata.
pub fn web_deployment(namespace: &str, metadata_extra: &str, image: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: {namespace}
{metadata_extra}spec:
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
      - name: web
        image: {image}
"
    )
}

/// A ManifestPolicy `name` for `kinds` (a flow list's items, e.g. `v1/Service`) that
/// trusts the public key file `key`; `spec_extra` (whole lines indented two spaces, e.g.
/// `"  ignoreProfile: kubernetes\n"`) goes between its match and its attestors.
pub fn key_policy(name: &str, kinds: &str, spec_extra: &str, key: &std::path::Path) -> String {
    format!(
        "apiVersion: mansign.dev/v1alpha1\nkind: ManifestPolicy\nmetadata:\n  name: {name}\nspec:\n  match:\n    kinds: [{kinds}]\n{spec_extra}  attestors:\n  - entries:\n    - keys:\n        path: {}\n",
        key.display()
    )
}
