//! Whether the certificate Fulcio issued names the identity the token holds: a Fulcio (or
//! something posing as it) that answers with a certificate for our key but another SAN or
//! issuer would make every signature of the run verify as someone else. The check runs
//! when the certificate arrives, before anything is signed or uploaded.
//!
//! Fulcio derives the SAN from the token's claims by issuer type (sigstore/fulcio
//! `config/identity/config.yaml` at 001376a50932, `subject-alternative-name-template` of
//! each CI provider, and `pkg/identity/*`): the `email` claim for email issuers, the `sub`
//! claim for URI and SPIFFE issuers, and a URI built from CI claims for GitHub Actions
//! (`https://github.com/{job_workflow_ref}`), GitLab (`https://{ci_config_ref_uri}`),
//! Buildkite (`https://buildkite.com/{organization_slug}/{pipeline_slug}`), CircleCI,
//! Codefresh and Kubernetes service accounts
//! (`https://kubernetes.io/namespaces/{namespace}/serviceaccounts/{name}`). The issuer extension is the token's `iss`, or for Sigstore's Dex
//! (`issuer-claim: $.federated_claims.connector_id`) the upstream issuer it names.
//!
//! Which type Fulcio assigns an issuer is its configuration, not the token's; so every
//! identity the token's claims can yield is accepted, and nothing else: a Fulcio can only
//! pick among identities the token itself states.

use serde_json::Value;

/// The identities a token's claims can yield in a Fulcio certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TokenIdentities {
    /// Possible SANs, in the order they are named in messages.
    pub subjects: Vec<String>,
    /// Possible issuer extensions.
    pub issuers: Vec<String>,
}

impl TokenIdentities {
    /// From the token's claims (its JWT payload) and its `iss`.
    pub fn from_claims(claims: &Value, iss: &str) -> Self {
        let text = |name: &str| {
            claims
                .get(name)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        };
        let mut subjects: Vec<String> = Vec::new();
        let mut add = |s: String| {
            if !subjects.contains(&s) {
                subjects.push(s);
            }
        };
        if let Some(email) = text("email") {
            add(email.to_string());
        }
        if let Some(sub) = text("sub") {
            add(sub.to_string());
        }
        if let Some(workflow) = text("job_workflow_ref") {
            add(format!("https://github.com/{workflow}"));
        }
        if let Some(config) = text("ci_config_ref_uri") {
            add(format!("https://{config}"));
        }
        if let (Some(org), Some(pipeline)) = (text("organization_slug"), text("pipeline_slug")) {
            add(format!("https://buildkite.com/{org}/{pipeline}"));
        }
        if let (Some(project), Some(definition)) = (
            text("oidc.circleci.com/project-id"),
            text("oidc.circleci.com/pipeline-definition-id"),
        ) {
            add(format!(
                "https://circleci.com/api/v2/projects/{project}/pipeline-definitions/{definition}"
            ));
        }
        if let (Some(account), Some(pipeline), Some(account_id), Some(pipeline_id)) = (
            text("account_name"),
            text("pipeline_name"),
            text("account_id"),
            text("pipeline_id"),
        ) {
            let platform = text("platform_url").unwrap_or("https://g.codefresh.io");
            add(format!(
                "{platform}/{account}/{pipeline}:{account_id}/{pipeline_id}"
            ));
        }
        // Kubernetes service account tokens (pkg/identity/kubernetes/principal.go).
        if let (Some(namespace), Some(account)) = (
            claims
                .pointer("/kubernetes.io/namespace")
                .and_then(Value::as_str),
            claims
                .pointer("/kubernetes.io/serviceaccount/name")
                .and_then(Value::as_str),
        ) {
            add(format!(
                "https://kubernetes.io/namespaces/{namespace}/serviceaccounts/{account}"
            ));
        }
        let mut issuers = vec![iss.to_string()];
        if let Some(upstream) = claims
            .pointer("/federated_claims/connector_id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty() && *s != iss)
        {
            issuers.push(upstream.to_string());
        }
        TokenIdentities { subjects, issuers }
    }

    /// Whether a certificate with this SAN and issuer extension is for this token.
    pub fn admits(&self, san: Option<&str>, issuer: Option<&str>) -> bool {
        san.is_some_and(|s| self.subjects.iter().any(|t| t == s))
            && issuer.is_some_and(|i| self.issuers.iter().any(|t| t == i))
    }

    /// `a, b or c`, for messages.
    pub fn describe(list: &[String]) -> String {
        match list {
            [] => "nothing".to_string(),
            [one] => one.clone(),
            [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_plain_token_yields_its_email_or_subject_and_its_issuer() {
        let ids = TokenIdentities::from_claims(
            &json!({"sub": "s-1", "email": "me@example.com"}),
            "https://issuer",
        );
        assert!(ids.admits(Some("me@example.com"), Some("https://issuer")));
        assert!(ids.admits(Some("s-1"), Some("https://issuer")));
        assert!(!ids.admits(Some("other@example.com"), Some("https://issuer")));
        assert!(!ids.admits(Some("s-1"), Some("https://evil")));
        assert!(!ids.admits(None, Some("https://issuer")));
        assert!(!ids.admits(Some("s-1"), None));
    }

    #[test]
    fn ci_tokens_yield_the_uri_fulcio_builds_from_their_claims() {
        let github = TokenIdentities::from_claims(
            &json!({"sub": "repo:org/r:ref:refs/heads/main",
                    "job_workflow_ref": "org/r/.github/workflows/sign.yaml@refs/heads/main"}),
            "https://token.actions.githubusercontent.com",
        );
        assert!(github.admits(
            Some("https://github.com/org/r/.github/workflows/sign.yaml@refs/heads/main"),
            Some("https://token.actions.githubusercontent.com")
        ));
        let gitlab = TokenIdentities::from_claims(
            &json!({"sub": "project_path:g/p", "ci_config_ref_uri": "gitlab.com/g/p//.gitlab-ci.yml@refs/heads/main"}),
            "https://gitlab.com",
        );
        assert!(gitlab.admits(
            Some("https://gitlab.com/g/p//.gitlab-ci.yml@refs/heads/main"),
            Some("https://gitlab.com")
        ));
        let buildkite = TokenIdentities::from_claims(
            &json!({"sub": "x", "organization_slug": "o", "pipeline_slug": "p"}),
            "https://agent.buildkite.com",
        );
        let pod = TokenIdentities::from_claims(
            &json!({"sub": "system:serviceaccount:ci:signer",
                    "kubernetes.io": {"namespace": "ci", "serviceaccount": {"name": "signer"}}}),
            "https://kubernetes.default.svc",
        );
        assert!(pod.admits(
            Some("https://kubernetes.io/namespaces/ci/serviceaccounts/signer"),
            Some("https://kubernetes.default.svc")
        ));
        assert!(buildkite.admits(
            Some("https://buildkite.com/o/p"),
            Some("https://agent.buildkite.com")
        ));
    }

    #[test]
    fn sigstores_dex_names_the_upstream_issuer() {
        let ids = TokenIdentities::from_claims(
            &json!({"sub": "x", "email": "me@example.com",
                    "federated_claims": {"connector_id": "https://github.com/login/oauth"}}),
            "https://oauth2.sigstore.dev/auth",
        );
        assert!(ids.admits(
            Some("me@example.com"),
            Some("https://github.com/login/oauth")
        ));
        assert!(!ids.admits(Some("me@example.com"), Some("https://accounts.google.com")));
    }

    #[test]
    fn describes_alternatives_in_prose() {
        assert_eq!(TokenIdentities::describe(&["a".into()]), "a");
        assert_eq!(
            TokenIdentities::describe(&["a".into(), "b".into(), "c".into()]),
            "a, b or c"
        );
    }
}
