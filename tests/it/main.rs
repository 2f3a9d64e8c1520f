//! mansign's integration tests: one test crate (`autotests = false` in Cargo.toml), one module
//! per subject, so the dependency tree is linked once and `common` compiled once.
//! `cargo test --test it MODULE::` runs one subject; `cargo nextest run -E 'test(/^MODULE::/)'`
//! does the same under nextest (groups and timeouts in `.config/nextest.toml`).

mod common;

mod admission_api_server;
mod admission_review;
mod admission_server;
mod advisories;
mod apiserver_admission;
mod apiserver_defaults;
mod apiserver_failures;
mod apiserver_keys;
mod bad_input;
mod bundle_bounds;
mod certificate_attestor;
mod certificate_cache;
mod ci_lint;
mod citations;
mod cli_polish;
mod conformance;
mod deploy;
mod docs_examples;
mod examples;
mod freshness;
mod fulcio_chain_validity;
mod github_action;
mod gitops;
mod gitops_bindings;
mod helm_chart;
mod ignore_profiles;
mod interop_k8s_manifest_sigstore;
mod keyless_attacks;
mod keyless_sign;
mod keyless_verify;
mod kubectl_plugin;
mod kyverno_cel_route;
mod kyverno_in_the_loop;
mod layering;
mod legacy_rekord_sct;
mod migrating_doc;
mod no_panic_on_hostile_input;
mod one_rule_walk;
mod operations;
mod parallel_verification;
mod peers_kubectl_sigstore;
mod peers_kyverno;
mod pem_key_lists;
mod policy_explain;
mod policy_key_references;
mod policy_kyverno;
mod policy_migration;
mod policy_selection;
mod policy_test;
mod release;
mod resource_bounds;
mod review_verify_path;
mod sign_faults;
mod sign_verify_keys;
mod sign_windows;
mod tamper_matrix;
mod trust_update;
mod verification_cache;
mod warm_cold;
mod yaml_oracle;
mod yaml_readings;
