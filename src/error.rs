//! Printing an error with its causes.
//!
//! Every error of this crate says only its own step in its `Display` (`{path}: cannot read`)
//! and leaves the cause to [`std::error::Error::source`], the way `rustls` and `std::io`
//! do. Whoever prints an error for a person (the CLI, a webhook's deny message, a JSON
//! `error` field) prints the whole chain, each cause once: [`chain`] or [`Chain`].
//!
//! ```
//! use std::error::Error;
//! let err = mansign::trust::TrustRoot::from_file("/nonexistent/trusted_root.json").unwrap_err();
//! assert!(err.source().is_some()); // the I/O error
//! assert!(!err.to_string().contains("No such file")); // the step only
//! assert!(mansign::error::chain(&err).contains(": No such file")); // step: cause
//! ```

use std::error::Error;
use std::fmt;

/// An error and its causes, displayed as `step: cause: cause`, each cause once.
#[derive(Clone, Copy)]
pub struct Chain<'a>(pub &'a (dyn Error + 'a));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut cause = self.0.source();
        while let Some(e) = cause {
            write!(f, ": {e}")?;
            cause = e.source();
        }
        Ok(())
    }
}

impl fmt::Debug for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// `error` and its causes as one line: `step: cause: cause`, each cause once.
pub fn chain(error: &(dyn Error + '_)) -> String {
    Chain(error).to_string()
}

#[cfg(test)]
mod tests {
    //! Every error of the crate that has a cause: its own message does not repeat the
    //! cause, and [`chain`] shows each cause once. Values come from the real failing call
    //! where one is at hand (a missing file, bad PEM, bad YAML), else from a real cause.
    use super::*;
    use crate::Limits;
    use crate::signing::Attempts;
    use std::path::PathBuf;

    const MISSING: &str = "/nonexistent/mansign-error-test";

    fn io_error() -> std::io::Error {
        std::fs::read(MISSING).unwrap_err()
    }

    fn reqwest_error() -> reqwest::Error {
        reqwest::Client::new().get("not a url").build().unwrap_err()
    }

    fn attempts() -> Attempts {
        Attempts {
            made: 3,
            refused_wait: None,
        }
    }

    /// The causes of `e` below it, outermost first.
    fn causes(e: &(dyn Error + 'static)) -> Vec<String> {
        let mut out = Vec::new();
        let mut cause = e.source();
        while let Some(c) = cause {
            out.push(c.to_string());
            cause = c.source();
        }
        out
    }

    #[track_caller]
    fn says_its_step_only(e: &(dyn Error + 'static)) {
        let own = e.to_string();
        let causes = causes(e);
        assert!(!causes.is_empty(), "{own}: has no source");
        for cause in &causes {
            assert!(
                !own.contains(cause.as_str()),
                "{own:?} repeats its cause {cause:?}"
            );
        }
        let printed = chain(e);
        assert_eq!(
            printed,
            std::iter::once(own.clone())
                .chain(causes.iter().cloned())
                .collect::<Vec<_>>()
                .join(": ")
        );
        for cause in &causes {
            assert_eq!(
                printed.matches(cause.as_str()).count(),
                1,
                "{printed:?} does not show {cause:?} exactly once"
            );
        }
    }

    #[test]
    fn every_error_with_a_cause_leaves_it_to_source() {
        use crate::signing::{
            BodyError, FulcioError, GitHubTokenError, KeylessError, RekorError, SignError,
            TokenError, sign_in::SignInError,
        };
        let limits = Limits::default();
        let errors: Vec<Box<dyn Error + 'static>> = vec![
            // Real failing calls.
            Box::new(crate::trust::TrustRoot::from_file(MISSING).unwrap_err()),
            Box::new(crate::keys::KeyError::InvalidPem {
                source: crate::keys::PemSyntax(pem::parse("not PEM").unwrap_err()),
            }),
            Box::new(
                crate::keys::decrypt_private_key(
                    "-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\nbm90IGpzb24=\n\
                     -----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n",
                    b"pw",
                )
                .unwrap_err(),
            ),
            Box::new(crate::manifest::parse_message(b"a: [", &limits).unwrap_err()),
            Box::new(
                crate::manifest::load_reader(
                    crate::manifest::Source::Named("in.yaml".into()),
                    PathBuf::from("in.yaml"),
                    &b"a: [\n"[..],
                    &limits,
                )
                .unwrap_err(),
            ),
            Box::new(crate::manifest::load_inputs(&[PathBuf::from(MISSING)], &limits).unwrap_err()),
            Box::new(crate::policy::load_file(MISSING.as_ref(), &Default::default()).unwrap_err()),
            // Real causes, one value per error type.
            Box::new(crate::admission::server::ServeError::Listen {
                address: "127.0.0.1:1".parse().unwrap(),
                source: io_error(),
            }),
            Box::new(crate::conformance::BundleError::Read {
                what: "bundle",
                path: MISSING.into(),
                source: io_error(),
            }),
            Box::new(crate::conformance::BundleSignError::SelfCheck {
                trust_root: "public-good".into(),
                source: crate::conformance::BundleError::Read {
                    what: "bundle",
                    path: MISSING.into(),
                    source: io_error(),
                },
            }),
            Box::new(crate::policy::test_suite::SuiteError::Read {
                path: MISSING.into(),
                source: io_error(),
            }),
            Box::new(crate::policy::PolicyError::TrustRoot {
                at: crate::policy::Location {
                    origin: "p.yaml".into(),
                    document: 1,
                    field: "spec.roots".into(),
                },
                source: crate::trust::TrustRoot::from_file(MISSING).unwrap_err(),
            }),
            Box::new(SignError::Tlog {
                message: 0,
                source: RekorError::Connection {
                    url: "https://rekor.example".into(),
                    attempts: attempts(),
                    source: reqwest_error(),
                },
            }),
            Box::new(SignError::Runtime(io_error())),
            Box::new(KeylessError::Rekor {
                message: 1,
                source: RekorError::Body(BodyError::Read(reqwest_error())),
            }),
            Box::new(KeylessError::Runtime(io_error())),
            Box::new(FulcioError::Unreachable {
                url: "https://fulcio.example".into(),
                attempts: attempts(),
                source: reqwest_error(),
            }),
            Box::new(FulcioError::HttpClient(reqwest_error())),
            Box::new(GitHubTokenError::Connection {
                attempts: attempts(),
                source: reqwest_error(),
            }),
            Box::new(GitHubTokenError::Body(BodyError::Read(reqwest_error()))),
            Box::new(RekorError::HttpClient(reqwest_error())),
            Box::new(SignInError::Listener(io_error())),
            Box::new(SignInError::HttpClient(reqwest_error())),
            Box::new(TokenError::ReadFile {
                path: MISSING.into(),
                source: io_error(),
            }),
            Box::new(TokenError::Runtime(io_error())),
            Box::new(TokenError::SignIn {
                issuer: "https://oauth2.sigstore.dev/auth".into(),
                source: SignInError::Listener(io_error()),
            }),
            Box::new(crate::trust::update::TrustUpdateError::ReadRoot {
                path: MISSING.into(),
                source: io_error(),
            }),
            Box::new(crate::trust::update::TrustUpdateError::Write {
                path: MISSING.into(),
                source: io_error(),
            }),
            // The errors that were strings (issue 38, item 2), from real failing calls.
            Box::new(
                crate::manifest::signed_at_of(&serde_json::json!({"metadata": {"annotations": {
                    crate::manifest::SIGNED_AT_ANNOTATION: "yesterday"
                }}}))
                .unwrap_err(),
            ),
            Box::new(
                crate::manifest::parse_expires("9999-12-31", jiff::Timestamp::now()).unwrap_err(),
            ),
            Box::new(
                crate::policy::KeyReference::new(
                    crate::policy::KeyObject::Secret,
                    "ns",
                    "s",
                    crate::policy::COSIGN_PUB,
                )
                .unwrap()
                .value_in(&serde_json::json!({"data": {"cosign.pub": "%%"}}))
                .unwrap_err(),
            ),
            Box::new(crate::policy::KeyValueError::Unreadable {
                reference: crate::policy::KeyReference::new(
                    crate::policy::KeyObject::ConfigMap,
                    "ns",
                    "keys",
                    "production",
                )
                .unwrap(),
                origin: "kubeconfig k, context c".into(),
                source: Box::new(crate::kube::KubeError::Status {
                    code: 403,
                    message: "forbidden".into(),
                }),
            }),
            Box::new(
                crate::verify::TrustedKey::from_pem(
                    "k",
                    "-----BEGIN PUBLIC KEY-----\n%%\n-----END PUBLIC KEY-----\n",
                )
                .unwrap_err(),
            ),
        ];
        for e in &errors {
            says_its_step_only(e.as_ref());
        }
    }

    #[test]
    fn a_cause_that_repeats_words_of_an_earlier_message_is_still_printed() {
        // The old CLI printer dropped a cause whose text appeared in the output already:
        // here the cause `cannot read` would have vanished after `p.yaml: cannot read`.
        #[derive(Debug, thiserror::Error)]
        #[error("p.yaml: cannot read")]
        struct Outer(#[source] Inner);
        #[derive(Debug, thiserror::Error)]
        #[error("cannot read")]
        struct Inner;
        assert_eq!(chain(&Outer(Inner)), "p.yaml: cannot read: cannot read");
    }
}
