//! Bounds on untrusted input, in one place.
//!
//! Every decoder in mansign takes a [`Limits`] and refuses input that exceeds one of them
//! with an error naming the limit. The defaults are sized for Kubernetes: the API server
//! caps the total size of an object's annotations at 256 KiB, so anything larger cannot
//! have come from a real object and is refused early.

/// Bounds applied while reading manifests, annotations and signed messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Largest decompressed signed message (M), in bytes. Default 4 MiB: far above what
    /// fits into 256 KiB of gzip-compressed annotations for real manifests, far below what
    /// a gzip bomb would expand to.
    pub max_message_bytes: usize,
    /// Largest single annotation value, in bytes. Default 256 KiB (the API server's limit
    /// for all annotations of one object together).
    pub max_annotation_bytes: usize,
    /// Most documents in one signed message or one input file. Default 1000.
    pub max_documents: usize,
    /// Largest input file (or stdin) read for signing or verification. Default 32 MiB.
    pub max_input_bytes: usize,
    /// Largest single document (object) of an input or a signed message, in bytes. Default
    /// 3 MiB, the Kubernetes API server's request limit: a larger object cannot be applied.
    /// Refused before the document is parsed.
    pub max_document_bytes: usize,
    /// Largest flow collection (`[...]`, `{...}`) of a YAML document, in bytes. Default
    /// 256 KiB. The YAML parser holds a flow collection's tokens (about 175 bytes each) until
    /// it ends, so this bounds its memory to about 45 MB; larger data reads fine written in
    /// block style, or with the whole document as JSON (`docs/design.md`, "YAML").
    pub max_flow_collection_bytes: usize,
    /// Most nodes (keys, values, and every use of an alias, which costs what it expands to)
    /// in one document. Default 250,000: a 3 MiB CustomResourceDefinition has about
    /// 100,000; see `BENCHMARKS.md` for the memory this bounds.
    pub max_document_nodes: usize,
    /// Most nodes in one input stream or signed message, all documents together. Default
    /// 1,000,000 (about 110 MB of parsed documents), which keeps any 32 MiB input within
    /// 1 s and 256 MiB (`BENCHMARKS.md`); real manifest files need a small fraction (a
    /// 3.5 MiB bundle of CustomResourceDefinitions about 150,000).
    pub max_stream_nodes: usize,
    /// Most signature sets (`signature`, `signature_1`, ...) read from one object. Default 32.
    pub max_signature_sets: usize,
    /// Most entries in a legacy tar.gz message. Default 1000.
    pub max_tar_entries: usize,
    /// Deepest nesting of maps and lists accepted in a document. Default 64.
    pub max_depth: usize,
    /// Largest total size of an object's annotations (keys and values), in bytes. Default
    /// 256 KiB: the API server refuses an object whose annotations exceed it
    /// (`TotalAnnotationSizeLimitB`), so a bigger one cannot be a real object; refusing it
    /// first bounds everything decoded from the signature annotations.
    pub max_annotations_total_bytes: usize,
    /// Largest decompressed certificate or Rekor bundle annotation, in bytes. Default 64 KiB:
    /// real ones are a few KiB.
    pub max_signature_material_bytes: usize,
    /// Largest total of an object's decompressed certificates and Rekor bundles, in bytes.
    /// Default 1 MiB (32 sets of real material take about 200 KiB).
    pub max_signature_material_total_bytes: usize,
    /// Most signature checks (one signature set against one attestor) run for one object.
    /// Default 256: a policy of 8 entries against the 32 sets an object may carry. Each
    /// check runs at most once per object; past the budget the object is refused.
    pub max_signature_checks: usize,
    /// Most transparency-log entries in one standard Sigstore bundle (`verify-bundle`).
    /// Default 32, sigstore-go's bound (GHSA-cq38-jh5f-37mq): a real bundle has one, and
    /// each costs a SET or an inclusion proof and checkpoint check. Refused before any
    /// cryptography.
    pub max_bundle_tlog_entries: usize,
    /// Most RFC 3161 timestamps in one standard Sigstore bundle. Default 32 (sigstore-go's
    /// bound, as above); each costs a TSA chain and signature check.
    pub max_bundle_timestamps: usize,
}

/// Setters, one per field, for callers outside the crate: the struct is `#[non_exhaustive]`,
/// so it is built from [`Limits::default()`] and these, never as a literal.
impl Limits {
    /// Sets `max_message_bytes`.
    pub const fn with_max_message_bytes(mut self, value: usize) -> Self {
        self.max_message_bytes = value;
        self
    }
    /// Sets `max_annotation_bytes`.
    pub const fn with_max_annotation_bytes(mut self, value: usize) -> Self {
        self.max_annotation_bytes = value;
        self
    }
    /// Sets `max_documents`.
    pub const fn with_max_documents(mut self, value: usize) -> Self {
        self.max_documents = value;
        self
    }
    /// Sets `max_input_bytes`.
    pub const fn with_max_input_bytes(mut self, value: usize) -> Self {
        self.max_input_bytes = value;
        self
    }
    /// Sets `max_document_bytes`.
    pub const fn with_max_document_bytes(mut self, value: usize) -> Self {
        self.max_document_bytes = value;
        self
    }
    /// Sets `max_flow_collection_bytes`.
    pub const fn with_max_flow_collection_bytes(mut self, value: usize) -> Self {
        self.max_flow_collection_bytes = value;
        self
    }
    /// Sets `max_document_nodes`.
    pub const fn with_max_document_nodes(mut self, value: usize) -> Self {
        self.max_document_nodes = value;
        self
    }
    /// Sets `max_stream_nodes`.
    pub const fn with_max_stream_nodes(mut self, value: usize) -> Self {
        self.max_stream_nodes = value;
        self
    }
    /// Sets `max_signature_sets`.
    pub const fn with_max_signature_sets(mut self, value: usize) -> Self {
        self.max_signature_sets = value;
        self
    }
    /// Sets `max_tar_entries`.
    pub const fn with_max_tar_entries(mut self, value: usize) -> Self {
        self.max_tar_entries = value;
        self
    }
    /// Sets `max_depth`.
    pub const fn with_max_depth(mut self, value: usize) -> Self {
        self.max_depth = value;
        self
    }
    /// Sets `max_annotations_total_bytes`.
    pub const fn with_max_annotations_total_bytes(mut self, value: usize) -> Self {
        self.max_annotations_total_bytes = value;
        self
    }
    /// Sets `max_signature_material_bytes`.
    pub const fn with_max_signature_material_bytes(mut self, value: usize) -> Self {
        self.max_signature_material_bytes = value;
        self
    }
    /// Sets `max_signature_material_total_bytes`.
    pub const fn with_max_signature_material_total_bytes(mut self, value: usize) -> Self {
        self.max_signature_material_total_bytes = value;
        self
    }
    /// Sets `max_signature_checks`.
    pub const fn with_max_signature_checks(mut self, value: usize) -> Self {
        self.max_signature_checks = value;
        self
    }
    /// Sets `max_bundle_tlog_entries`.
    pub const fn with_max_bundle_tlog_entries(mut self, value: usize) -> Self {
        self.max_bundle_tlog_entries = value;
        self
    }
    /// Sets `max_bundle_timestamps`.
    pub const fn with_max_bundle_timestamps(mut self, value: usize) -> Self {
        self.max_bundle_timestamps = value;
        self
    }
}

impl Limits {
    /// The documented defaults.
    pub const DEFAULT: Limits = Limits {
        max_message_bytes: 4 * 1024 * 1024,
        max_annotation_bytes: 256 * 1024,
        max_documents: 1000,
        max_input_bytes: 32 * 1024 * 1024,
        max_document_bytes: 3 * 1024 * 1024,
        max_flow_collection_bytes: 256 * 1024,
        max_document_nodes: 250_000,
        max_stream_nodes: 1_000_000,
        max_signature_sets: 32,
        max_tar_entries: 1000,
        max_depth: 64,
        max_annotations_total_bytes: 256 * 1024,
        max_signature_material_bytes: 64 * 1024,
        max_signature_material_total_bytes: 1024 * 1024,
        max_signature_checks: 256,
        max_bundle_tlog_entries: 32,
        max_bundle_timestamps: 32,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Self::DEFAULT
    }
}
