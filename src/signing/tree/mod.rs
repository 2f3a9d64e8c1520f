//! Signing a tree of manifests, all or nothing: what `mansign sign` does, as a library.
//!
//! A [`SignTree`] names the inputs (files, directories, glob patterns, `-` for stdin), where
//! the signed manifests go ([`TreeOutput`]: beside the input, a directory mirroring the
//! inputs, one file, or stdout), the [`SignOptions`](crate::signing::SignOptions), and
//! what is checked; [`SignTree::sign`] signs with a [`RunSigner`] (a key, a key whose
//! signatures are logged in Rekor, or keyless) and returns a [`TreeReport`]: the counts,
//! the certificates, every file written, every log index. It fails with a [`TreeError`]
//! whose `Display` says its own step; [`crate::error::chain`] prints it with its causes.
//!
//! What a run guarantees:
//!
//! * **Inputs first.** [`SignTree::plan`] reads and parses every input and checks every
//!   output (clashes, a directory in an output's place, a tree without an output) before
//!   anything is signed: a bad file does not cost an identity token (make the keyless
//!   signer after the plan, as `mansign sign` does).
//! * **All or nothing.** Outputs are staged in temporary files beside their targets and
//!   renamed into place only once every window was signed, verified and staged; a failure
//!   anywhere removes what was staged and writes nothing.
//! * **Verified before written.** With [`SignTree::verify_against`], every new signature is
//!   read back from the signed documents and verified against the trust root (full
//!   Sigstore verification for keyless sets; the log entry for a logged key), and every
//!   `--bundle-out` bundle is checked by the [`BundleCheck`] given.
//! * **What was signed is what was read.** The second pass refuses a window whose files
//!   changed since the first pass, to the byte; `remove_inputs` keeps an input whose bytes
//!   changed since they were signed.
//! * **Bounded memory.** Files are signed in windows (at most 128 files and, unless one
//!   file holds more, 1,024 documents: one signer call each); listings (staged files, the
//!   report) are kept in temporary storage, in memory up to a bound, then in a temporary
//!   file. A run of 100,000 files is never in memory at once.
//! * **Interruptions.** With [`SignTree::watch_interrupts`] (the CLI), SIGINT, SIGTERM and
//!   SIGHUP remove what was staged and end the process; a commit that began runs to its
//!   end first.
//!
//! Parsing each input once: a run of one window (at most 128 files) keeps its files and
//! reads nothing twice. A run of several windows whose files total at most 2 MiB and 8,192
//! documents keeps its parsed files too; its second pass finds each window again and
//! hashes its files' bytes again (a file added, removed, renamed or changed by a byte since
//! the first pass fails the run before that window is signed), without parsing them. A
//! bigger run keeps a 32-byte digest per window of 128 files, not the files, and its second
//! pass reads and parses each window again (its digest must match), so that its memory
//! does not grow with its size. Stdin, which cannot be read twice, is always kept. (The
//! budget and its measurements: `plan.rs`.)
//!
//! Sign a directory with a key, without a transparency log (nothing on the network):
//!
//! ```
//! use mansign::keys;
//! use mansign::signing::KeySigner;
//! use mansign::signing::tree::{RunSigner, SignTree, Target, TreeOutput};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let unsigned = dir.path().join("unsigned");
//! std::fs::create_dir(&unsigned)?;
//! std::fs::write(
//!     unsigned.join("cm.yaml"),
//!     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n",
//! )?;
//!
//! // A cosign key pair made on the spot; `decrypt_private_key` reads a `cosign.key` as well.
//! let pair = keys::generate_key_pair(b"password")?;
//! let key = keys::decrypt_private_key(&pair.private_key_pem, b"password")?;
//! let signer = RunSigner::from(KeySigner::new(key));
//!
//! let signed = dir.path().join("signed");
//! let mut report = SignTree::new([unsigned])
//!     .output(TreeOutput::Dir(signed.clone()))
//!     .sign(&signer)?;
//! assert_eq!((report.files(), report.documents(), report.signatures()), (1, 1, 1));
//! for file in report.written()? {
//!     assert_eq!(file?.output, Target::File(signed.join("cm.yaml")));
//! }
//! let text = std::fs::read_to_string(signed.join("cm.yaml"))?;
//! assert!(text.contains("cosign.sigstore.dev/signature"));
//! # Ok(())
//! # }
//! ```
//!
//! Files, each importing only the ones listed before it (this file only declares and
//! re-exports):
//!
//! | file | what |
//! |---|---|
//! | `error.rs` | [`TreeError`] |
//! | `spill.rs` | text and path lists kept in memory up to a bound, then in a temporary file |
//! | `interrupt.rs` | SIGINT/SIGTERM/SIGHUP: remove the staged files, exit |
//! | `staging.rs` | [`Target`]; staged outputs, renamed into place all at once |
//! | `plan.rs` | the first pass and the windows of the second; [`TreeOutput`], [`BundleFiles`]; `remove_inputs` |
//! | `report.rs` | [`TreeReport`] |
//! | `run.rs` | [`RunSigner`], [`BundleCheck`]; signing, verifying and staging each window |
//! | `sign_tree.rs` | [`SignTree`], [`PlannedTree`] |

mod error;
mod interrupt;
mod plan;
mod report;
mod run;
mod sign_tree;
pub(crate) mod spill;
pub(crate) mod staging;

pub use error::{BoxedCause, TreeError};
pub use plan::{BundleFiles, TreeOutput};
pub use report::{Records, TreeReport, WrittenFile};
pub use run::{BundleCheck, BundleSigner, RunSigner};
#[cfg(feature = "cli")]
pub(crate) use sign_tree::refuse_tree_beside;
pub use sign_tree::{PlannedTree, SignTree};
pub use staging::Target;
