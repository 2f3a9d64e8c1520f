//! Kyverno's own trust settings (`keyless.roots`, `rekor`, `ctlog`) against the selected
//! trust root: accepted when they name what the root already trusts (narrowing it, or adding
//! nothing), refused otherwise. A bare CA list or log key is not a trust root: it lacks the
//! other keys and every validity window.

use super::schema::{CtlogSpec, RekorSpec};
use crate::policy::load::context::{invalid, non_empty, unsupported};
use crate::policy::{Location, PolicyError};
use crate::trust::{RestrictError, TrustRoot};

/// DER blocks of a PEM text with the given tag (`CERTIFICATE`, `PUBLIC KEY`), at most
/// [`MAX_PEM_BLOCKS`]; anything else is invalid.
fn pem_ders(text: &str, tag: &str, at: &Location) -> Result<Vec<Vec<u8>>, PolicyError> {
    let blocks =
        crate::keys::pem_blocks(text.trim()).map_err(|e| invalid(at, format!("not PEM: {e}")))?;
    if blocks.is_empty() {
        return Err(invalid(at, format!("no PEM {tag} found")));
    }
    if blocks.len() > MAX_PEM_BLOCKS {
        return Err(invalid(
            at,
            format!("more than {MAX_PEM_BLOCKS} PEM blocks"),
        ));
    }
    blocks
        .into_iter()
        .enumerate()
        .map(|(i, b)| {
            if b.tag() == tag {
                Ok(b.into_contents())
            } else {
                Err(invalid(
                    at,
                    format!("PEM block {} is {:?}, expected {tag:?}", i + 1, b.tag()),
                ))
            }
        })
        .collect()
}

/// Bound on the PEM blocks of one `roots` / `pubkey` value.
const MAX_PEM_BLOCKS: usize = 16;

/// The transparency logs whose keys a Kyverno entry may name.
#[derive(Clone, Copy)]
enum Log {
    Rekor,
    Ct,
}

/// A log key (`rekor.pubkey`, `ctlog.pubkey` at `field`): accepted when every key of the PEM
/// text is the key of such a log of the trust root, else refused.
fn check_log_key(
    text: &str,
    field: &Location,
    trust: &TrustRoot,
    log: Log,
) -> Result<(), PolicyError> {
    let keys = pem_ders(text, "PUBLIC KEY", field)?;
    let known = |k: &Vec<u8>| match log {
        Log::Rekor => trust.has_rekor_key(k),
        Log::Ct => trust.has_ctlog_key(k),
    };
    if keys.iter().all(known) {
        return Ok(());
    }
    let refusal = match log {
        Log::Rekor => format!(
            "this Rekor key is not a log of the trust root ({}); a Rekor key outside                      a trust root is not supported: pass a trusted_root.json                      (--trusted-root, or keyless.trustedRoot in a ManifestPolicy) that lists                      the log",
            trust.origin()
        ),
        Log::Ct => format!(
            "this CT log key is not a CT log of the trust root ({}); CT log keys                          outside a trust root are not supported: pass a trusted_root.json                          (--trusted-root)",
            trust.origin()
        ),
    };
    Err(unsupported(field, refusal))
}

/// `rekor`: `url` is not contacted (mansign verifies offline). `pubkey` is accepted only
/// when it is the key of a Rekor log of the trust root (it then says nothing new);
/// any other key is refused: a log key outside a trust root has no validity window.
pub(super) fn check_rekor(
    rekor: &Option<RekorSpec>,
    at: &Location,
    trust: &TrustRoot,
) -> Result<(), PolicyError> {
    if let Some(r) = rekor
        && let Some(text) = non_empty(&r.pubkey)
    {
        check_log_key(text, &at.at("rekor.pubkey"), trust, Log::Rekor)?;
    }
    Ok(())
}

/// `ctlog`: `pubkey` is accepted only when it is the key of a CT log of the trust root;
/// `tsaCertChain` is refused (put timestamp authorities in a trust root).
pub(super) fn check_ctlog(
    ctlog: &Option<CtlogSpec>,
    at: &Location,
    trust: &TrustRoot,
) -> Result<(), PolicyError> {
    if let Some(c) = ctlog {
        if let Some(text) = non_empty(&c.pubkey) {
            check_log_key(text, &at.at("ctlog.pubkey"), trust, Log::Ct)?;
        }
        if non_empty(&c.tsa_cert_chain).is_some() {
            return Err(unsupported(
                &at.at("ctlog.tsaCertChain"),
                "CT log and TSA keys outside a trust root are not supported; pass a                  trusted_root.json (--trusted-root)",
            ));
        }
    }
    Ok(())
}

/// `keyless.roots`: accepted only when every certificate is a CA certificate of the selected
/// trust root; the entry's chain check is then narrowed to those authorities. Anything else
/// is refused: bare CA certificates are not a trust root (no Rekor or CT log keys).
pub(crate) fn roots_trust(
    text: &str,
    at: &Location,
    selected: &TrustRoot,
) -> Result<TrustRoot, PolicyError> {
    let ders = pem_ders(text, "CERTIFICATE", at)?;
    selected
        .restricted_to_certificates(&ders)
        .map_err(|e| match e {
            RestrictError::NotInRoot { index } => unsupported(
                at,
                format!(
                    "certificate {} is not a certificate authority of the trust root ({}); a \
                     bare list of CA certificates is not a trust root (mansign also needs the \
                     Rekor and CT log keys): use a mansign ManifestPolicy with \
                     keyless.trustedRoot, or --trusted-root",
                    index + 1,
                    selected.origin()
                ),
            ),
            other => invalid(at, other.to_string()),
        })
}
