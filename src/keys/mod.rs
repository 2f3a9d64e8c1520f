//! Keys: cosign key files (the password-encrypted private key `cosign.key` and the PKIX
//! public key `cosign.pub`), public-key parsing and fingerprints.
//!
//! This module sits below both signing and verification: `signing` decrypts and uses
//! private keys, `verify` and `policy` parse trusted public keys, and neither imports the
//! other for it.
//!
//! # Format
//!
//! This follows what cosign writes and reads (cosign `pkg/cosign/keys.go`, which
//! encrypts with sigstore's `pkg/encrypted` package):
//!
//! * The private key file is one PEM block labelled `ENCRYPTED SIGSTORE PRIVATE KEY`
//!   (older cosign releases wrote `ENCRYPTED COSIGN PRIVATE KEY`; both are read, the
//!   first is written). Its body is a JSON envelope:
//!
//!   ```json
//!   {"kdf":{"name":"scrypt","params":{"N":32768,"r":8,"p":1},"salt":"<base64>"},
//!    "cipher":{"name":"nacl/secretbox","nonce":"<base64>"},
//!    "ciphertext":"<base64>"}
//!   ```
//!
//!   The secretbox key is `scrypt(password, salt, N, r, p)` truncated to 32 bytes, the
//!   plaintext is the PKCS#8 DER encoding of the private key, and all binary fields
//!   are standard base64 with padding (Go's encoding of `[]byte` in JSON).
//! * The public key file is a `PUBLIC KEY` PEM block holding a DER
//!   SubjectPublicKeyInfo.
//!
//! # Guarantees
//!
//! * Only ECDSA P-256 keys are accepted; anything else is
//!   [`KeyError::UnsupportedKeyType`], naming the algorithm found.
//! * The scrypt parameters in a key file are honoured, but bounded (see
//!   [`MAX_SCRYPT_N`], [`MAX_SCRYPT_R_TIMES_P`], [`MAX_SCRYPT_WORK`]) *before* any
//!   key derivation runs, so a hostile key file cannot make us spend minutes of CPU
//!   or gigabytes of memory.
//! * A wrong password is reported as [`KeyError::WrongPassword`], distinct from
//!   every kind of malformed file.
//! * The derived symmetric key and the decrypted PKCS#8 DER are zeroized when dropped.
//! * No function here panics on malformed input.

mod encrypted_key;
mod error;
mod pem_text;
mod public_key;
#[cfg(test)]
mod tests;

pub use encrypted_key::{
    GeneratedKeyPair, LEGACY_COSIGN_PRIVATE_KEY_LABEL, MAX_SCRYPT_N, MAX_SCRYPT_R_TIMES_P,
    MAX_SCRYPT_WORK, SIGSTORE_PRIVATE_KEY_LABEL, decrypt_private_key, encrypt_private_key,
    generate_key_pair,
};
pub use error::{KeyError, PemSyntax};
pub(crate) use pem_text::pem_blocks;
pub use public_key::{
    PUBLIC_KEY_LABEL, parse_public_key_pem, public_key_fingerprint, public_key_pem,
    spki_fingerprint,
};
