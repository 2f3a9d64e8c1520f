//! Certificates from annotations.

/// The DER of the first certificate in a `certificate` annotation's PEM. Further blocks
/// are never used: intermediates come from the trust root or the policy, not from the
/// object. The text must be PEM blocks only ([`crate::keys::pem_blocks`]: no block without
/// its END line, no stray text). The error is the reason, for the caller's error type.
pub(super) fn first_certificate_der(pem_text: &str) -> Result<Vec<u8>, String> {
    let blocks = crate::keys::pem_blocks(pem_text).map_err(|e| format!("not PEM: {e}"))?;
    let first = blocks.into_iter().next().ok_or("no PEM block")?;
    if first.tag() != "CERTIFICATE" {
        return Err(format!("PEM block is {}, not CERTIFICATE", first.tag()));
    }
    Ok(first.into_contents())
}
