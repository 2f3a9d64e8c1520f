//! Kubernetes documents that several tests write with other values, built from one text:
//! the Deployment `web`. Included as `common::fixtures`, or on its own with `#[path]`.
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
