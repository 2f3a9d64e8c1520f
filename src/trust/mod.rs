//! Trust roots: which Fulcio CAs, Rekor logs and CT logs a verification trusts.
