//! Why a key could not be read or written: one variant per reason.

/// The PEM parser's error, as the last cause of [`KeyError::InvalidPem`]: the `pem` crate's
/// text already includes its own cause (`invalid data: Invalid symbol 37, offset 0.`) and
/// also returns that cause as its `source()`, which a chain printer would show twice.
#[derive(Debug)]
pub struct PemSyntax(pub pem::PemError);

impl std::fmt::Display for PemSyntax {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for PemSyntax {}

/// Why a key (a cosign key file or a PEM public key) could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    #[error("not valid PEM")]
    InvalidPem {
        #[source]
        source: PemSyntax,
    },
    #[error("no PEM block found")]
    NoPemBlock,
    #[error(
        "PEM block {block} ({label}) has no END line: a truncated list of keys is refused, \
         not read as fewer keys"
    )]
    UnterminatedPemBlock { block: usize, label: String },
    #[error(
        "text outside the PEM blocks (after block {after_block}): {found:?}; only PEM blocks \
         and whitespace are read"
    )]
    TextOutsidePemBlock { after_block: usize, found: String },
    #[error("expected exactly one PEM block, found {count}")]
    MultiplePemBlocks { count: usize },
    #[error("PEM block is labelled {found:?}, expected {expected}")]
    WrongPemLabel {
        found: String,
        expected: &'static str,
    },
    #[error("encrypted private key is not a valid cosign JSON envelope")]
    InvalidEnvelopeJson {
        #[source]
        source: serde_json::Error,
    },
    #[error("field {field} of the encrypted private key is not valid base64")]
    InvalidBase64 {
        field: &'static str,
        #[source]
        source: base64::DecodeError,
    },
    #[error("unsupported key derivation function {0:?} (only \"scrypt\" is supported)")]
    UnsupportedKdf(String),
    #[error("unsupported cipher {0:?} (only \"nacl/secretbox\" is supported)")]
    UnsupportedCipher(String),
    #[error(
        "invalid scrypt parameters N={n}, r={r}, p={p}: N must be a power of two \
         greater than 1 and below 2^(16*r), and r and p must be positive"
    )]
    InvalidScryptParams { n: u64, r: u64, p: u64 },
    #[error(
        "scrypt parameters N={n}, r={r}, p={p} are too expensive (limits: N <= 2^20, \
         r*p <= 64, N*r*p <= 2^23); refusing to derive a key from this file"
    )]
    ScryptParamsTooExpensive { n: u64, r: u64, p: u64 },
    #[error("scrypt salt is {len} bytes, expected {expected}")]
    BadSaltLength { len: usize, expected: usize },
    #[error("secretbox nonce is {len} bytes, expected {expected}")]
    BadNonceLength { len: usize, expected: usize },
    #[error("ciphertext is {len} bytes, shorter than the {tag_len}-byte authentication tag")]
    CiphertextTooShort { len: usize, tag_len: usize },
    #[error("wrong password for the encrypted private key (or the key file was modified)")]
    WrongPassword,
    #[error("decrypted private key is not valid PKCS#8")]
    InvalidPrivateKey {
        #[source]
        source: pkcs8::Error,
    },
    #[error("invalid public key")]
    InvalidPublicKey {
        #[source]
        source: spki::Error,
    },
    #[error("unsupported key type {algorithm}; only ECDSA P-256 keys are supported")]
    UnsupportedKeyType { algorithm: String },
    #[error("the operating system's random number generator failed")]
    Randomness {
        #[source]
        source: rand_core::Error,
    },
    #[error("could not generate a P-256 private key from the random bytes drawn")]
    KeyGeneration,
    #[error("encoding the private key as PKCS#8 failed")]
    EncodePrivateKey {
        #[source]
        source: pkcs8::Error,
    },
    #[error("encoding the public key as SubjectPublicKeyInfo failed")]
    EncodePublicKey {
        #[source]
        source: spki::Error,
    },
    #[error("encrypting the private key failed")]
    Encrypt,
    #[error("serializing the encrypted private key envelope failed")]
    EncodeEnvelope {
        #[source]
        source: serde_json::Error,
    },
}
