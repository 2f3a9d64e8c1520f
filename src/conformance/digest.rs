//! `sha256:<hex>` artifact digests, the form cosign, the sigstore-conformance suite and OCI
//! use.

use sha2::{Digest as _, Sha256};
use std::fmt;
use std::str::FromStr;

/// Why a `sha256:<hex>` digest argument was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DigestError {
    #[error("a digest needs an algorithm prefix: expected sha256:<64 hex digits>")]
    MissingAlgorithm,
    #[error("digest algorithm {0:?} is not supported: expected sha256:<64 hex digits>")]
    UnsupportedAlgorithm(String),
    #[error("a sha256 digest has 64 hex digits, not {0}")]
    WrongLength(usize),
    #[error("a sha256 digest is hexadecimal; found a character that is not a hex digit")]
    NotHex,
}

/// A SHA-256 artifact digest, written `sha256:<64 hex digits>` (the form cosign, the
/// sigstore-conformance suite and OCI use).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sha256Digest([u8; 32]);

impl Sha256Digest {
    pub const fn new(bytes: [u8; 32]) -> Self {
        Sha256Digest(bytes)
    }

    /// The digest of `data`.
    pub fn of(data: &[u8]) -> Self {
        Sha256Digest(Sha256::digest(data).into())
    }

    /// The digest of everything `reader` yields, read to its end in constant memory (an
    /// artifact of any size: a release binary, a tarball).
    pub fn of_reader(mut reader: impl std::io::Read) -> std::io::Result<Self> {
        let mut hasher = Sha256::new();
        std::io::copy(&mut reader, &mut hasher)?;
        Ok(Sha256Digest(hasher.finalize().into()))
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl FromStr for Sha256Digest {
    type Err = DigestError;

    fn from_str(s: &str) -> Result<Self, DigestError> {
        let Some((algorithm, hex_digits)) = s.split_once(':') else {
            return Err(DigestError::MissingAlgorithm);
        };
        if !algorithm.eq_ignore_ascii_case("sha256") {
            // Only the prefix is echoed, and only a short one: the rest may be anything.
            let shown: String = algorithm.chars().take(16).collect();
            return Err(DigestError::UnsupportedAlgorithm(shown));
        }
        if !hex_digits.is_ascii() {
            return Err(DigestError::NotHex);
        }
        if hex_digits.len() != 64 {
            return Err(DigestError::WrongLength(hex_digits.len()));
        }
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(hex_digits, &mut bytes).map_err(|_| DigestError::NotHex)?;
        Ok(Sha256Digest(bytes))
    }
}

impl fmt::Display for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", hex::encode(self.0))
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// The SHA-256 of the conformance fixture `a.txt` (also used by the `sign` tests).
    pub(crate) const A_TXT_SHA256: &str =
        "a0cfc71271d6e278e57cd332ff957c3f7043fdda354c4cbb190a30d56efa01bf";

    /// [`A_TXT_SHA256`] as a digest.
    pub(crate) fn a_txt_digest() -> Sha256Digest {
        format!("sha256:{A_TXT_SHA256}").parse().unwrap()
    }

    #[test]
    fn digest_parses_sha256_prefix_and_hex() {
        let d = a_txt_digest();
        assert_eq!(hex::encode(d.as_bytes()), A_TXT_SHA256);
        assert_eq!(d.to_string(), format!("sha256:{A_TXT_SHA256}"));
    }

    #[test]
    fn digest_accepts_uppercase_hex() {
        let upper = format!("sha256:{}", A_TXT_SHA256.to_uppercase());
        assert_eq!(upper.parse::<Sha256Digest>().unwrap(), a_txt_digest());
    }

    #[test]
    fn digest_of_bytes_matches_parsed_form() {
        let empty = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        assert_eq!(Sha256Digest::of(b""), empty.parse().unwrap());
    }

    #[test]
    fn digest_without_algorithm_is_refused() {
        assert_eq!(
            A_TXT_SHA256.parse::<Sha256Digest>(),
            Err(DigestError::MissingAlgorithm)
        );
    }

    #[test]
    fn digest_with_other_algorithm_is_refused() {
        assert_eq!(
            format!("sha512:{A_TXT_SHA256}").parse::<Sha256Digest>(),
            Err(DigestError::UnsupportedAlgorithm("sha512".into()))
        );
    }

    #[test]
    fn digest_of_wrong_length_is_refused() {
        assert_eq!(
            "sha256:abcd".parse::<Sha256Digest>(),
            Err(DigestError::WrongLength(4))
        );
    }

    #[test]
    fn digest_with_non_hex_digit_is_refused() {
        let bad = format!("sha256:{}g", &A_TXT_SHA256[..63]);
        assert_eq!(bad.parse::<Sha256Digest>(), Err(DigestError::NotHex));
    }

    #[test]
    fn digest_with_multibyte_characters_does_not_panic() {
        let bad = format!("sha256:{}é", &A_TXT_SHA256[..62]);
        assert!(bad.parse::<Sha256Digest>().is_err());
    }
}
