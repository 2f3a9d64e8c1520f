//! Certificates from annotations.

use crate::memo::{Last, remembered};
use std::cell::RefCell;

thread_local! {
    /// The PEM text this thread read last and its first certificate's DER ([`crate::memo`]).
    static LAST: Last<String, Vec<u8>> = const { RefCell::new(None) };
}

/// The DER of the first certificate in a `certificate` annotation's PEM. Further blocks
/// are never used: intermediates come from the trust root or the policy, not from the
/// object. The text must be PEM blocks only ([`crate::keys::pem_blocks`]: no block without
/// its END line, no stray text). The error is the reason, for the caller's error type.
pub(super) fn first_certificate_der(pem_text: &str) -> Result<Vec<u8>, String> {
    remembered(
        &LAST,
        |text| text == pem_text,
        || pem_text.to_owned(),
        || read_first_certificate_der(pem_text),
    )
}

fn read_first_certificate_der(pem_text: &str) -> Result<Vec<u8>, String> {
    let blocks = crate::keys::pem_blocks(pem_text).map_err(|e| format!("not PEM: {e}"))?;
    let first = blocks.into_iter().next().ok_or("no PEM block")?;
    if first.tag() != "CERTIFICATE" {
        return Err(format!("PEM block is {}, not CERTIFICATE", first.tag()));
    }
    Ok(first.into_contents())
}

#[cfg(test)]
mod tests {
    use super::*;

    const CERT: &str = "-----BEGIN CERTIFICATE-----\nAAEC\n-----END CERTIFICATE-----\n";

    #[test]
    fn a_remembered_text_reads_as_it_did_and_others_are_read_afresh() {
        assert_eq!(first_certificate_der(CERT), Ok(vec![0, 1, 2]));
        assert_eq!(first_certificate_der(CERT), Ok(vec![0, 1, 2]));
        // One byte more (a stray text after the block) is a different text, read and refused.
        let stray = format!("{CERT}x");
        assert!(first_certificate_der(&stray).is_err());
        assert_eq!(
            first_certificate_der(&CERT.replace("CERTIFICATE", "PUBLIC KEY")),
            Err("PEM block is PUBLIC KEY, not CERTIFICATE".to_string())
        );
        // A refusal is not remembered: the certificate before it is still read right.
        assert_eq!(first_certificate_der(CERT), Ok(vec![0, 1, 2]));
        assert_eq!(
            first_certificate_der(&CERT.replace("AAEC", "AAED")),
            Ok(vec![0, 1, 3])
        );
    }
}
