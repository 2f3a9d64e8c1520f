//! mansign: sign Kubernetes YAML manifests with Sigstore and verify them.
//!
//! The crate is a library first; the `mansign` binary is a thin shell over it.
//! Data flow (see `docs/design.md`):
//!
//! * sign: files -> [`manifest::load_inputs`] -> message M -> [`signing::Signer`] ->
//!   [`annotations::SignatureSet`] -> [`annotations::embed`] -> write; a whole tree, window by
//!   window and all or nothing, as `mansign sign` does: [`signing::tree::SignTree`]
//! * verify: object -> [`annotations::extract`] -> signature sets -> [`verify`] (crypto +
//!   identity) -> manifest diff (signed document vs object) -> [`verify::Verdict`]
//! * policies: [`policy::load_file`] (mansign `ManifestPolicy`, Kyverno `validate.manifests`)
//!   -> rules that match the object -> the same pipeline with an attestor-set requirement ->
//!   [`policy::PolicyVerdict`]
//!
//! Verify a file with a cosign public key, the way `mansign verify -f FILE --key cosign.pub`
//! does:
//!
//! ```
//! use mansign::manifest::load_inputs;
//! use mansign::verify::{Attestor, TrustedKey, Verifier};
//!
//! fn verify(path: &std::path::Path, pubkey_pem: &str) -> Result<bool, Box<dyn std::error::Error>> {
//!     let key = TrustedKey::from_pem("cosign.pub", pubkey_pem)?;
//!     let verifier = Verifier::new(vec![Attestor::Key(key)]);
//!     let files = load_inputs(&[path.to_path_buf()], &mansign::Limits::default())?;
//!     let verdict = verifier.verify_documents(files.iter().flat_map(|f| &f.documents));
//!     for document in &verdict.documents {
//!         println!("{document}"); // who signed, or the first failed check and why
//!     }
//!     Ok(verdict.is_verified())
//! }
//! ```
//!
//! Sign in memory with a key pair:
//!
//! ```
//! use mansign::manifest::{Source, load_reader};
//! use mansign::keys;
//! use mansign::signing::{KeySigner, SignOptions, sign_files};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let pair = keys::generate_key_pair(b"password")?;
//! let key = keys::decrypt_private_key(&pair.private_key_pem, b"password")?;
//! let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n";
//! let limits = mansign::Limits::default();
//! let mut files = vec![load_reader(Source::Named("a.yaml".into()), "a.yaml".into(), yaml.as_bytes(), &limits)?];
//! sign_files(&mut files, &KeySigner::new(key), &SignOptions::default())?;
//! let annotations = files[0].documents[0].annotations().expect("signed");
//! assert!(annotations.contains_key("cosign.sigstore.dev/signature"));
//! # Ok(())
//! # }
//! ```

//! Embed the verifier in an async program (an admission controller, an operator): build
//! without the command line (`mansign = { version = "…", default-features = false }`),
//! share one verifier behind an `Arc`, and run verifications on a bounded blocking pool.
//! Trust and policy are passed explicitly; the library reads no environment or files of
//! its own.
//!
//! ```no_run
//! use mansign::trust::TrustRoot;
//! use mansign::verify::{
//!     Attestor, BlockingVerifications, IdentityPolicy, KeylessAttestor, Verifier,
//! };
//! use std::sync::Arc;
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//!     let trust = Arc::new(TrustRoot::from_file("trusted_root.json")?);
//!     let identity = IdentityPolicy::builder()
//!         .issuer("https://token.actions.githubusercontent.com")
//!         .subject("https://github.com/org/policies/.github/workflows/sign.yaml@refs/heads/main")
//!         .build()?;
//!     let verifier = Arc::new(Verifier::new(vec![Attestor::Keyless(KeylessAttestor::new(
//!         trust, identity,
//!     ))]));
//!     let pool = BlockingVerifications::per_cpu();
//!     let object: serde_json::Value = serde_json::from_slice(&std::fs::read("object.json")?)?;
//!     let v = verifier.clone();
//!     let verdict = pool.run(move || v.verify_object(&object)).await??;
//!     match &verdict.result {
//!         Ok(_) => println!("allowed: {verdict}"),
//!         // A stable code for metrics and logs, a message for people.
//!         Err(rejection) => println!("denied [{}]: {rejection}", rejection.code()),
//!     }
//!     // Re-applied objects skip the signature checks (bounded cache, per requirement).
//!     println!("cache: {:?}", verifier.cache().stats());
//!     Ok(())
//! }
//! ```

#![forbid(unsafe_code)]

pub mod admission;
pub mod annotations;
#[cfg(feature = "cli")]
pub mod cli;
pub mod conformance;
pub mod error;
pub mod keys;
pub mod kube;
pub mod limits;
pub mod manifest;
mod memo;
pub mod parallel;
pub mod policy;
mod setters;
pub mod signing;
pub mod trust;
pub mod verify;

pub use limits::Limits;
