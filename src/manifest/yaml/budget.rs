//! The node budget of a stream: every key, value and use of an alias costs one node (an
//! alias costs the nodes it expands to), counted per document and per stream as the document
//! is read, so memory stays bounded whatever the input (`Limits::max_document_nodes`,
//! `Limits::max_stream_nodes`).

use crate::limits::Limits;

/// Which budget ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exceeded {
    Document,
    Stream,
}

/// Nodes spent so far.
#[derive(Debug, Clone)]
pub(crate) struct Budget {
    pub(crate) max_document: usize,
    pub(crate) max_stream: usize,
    document: usize,
    stream: usize,
}

impl Budget {
    pub(crate) fn new(limits: &Limits) -> Self {
        Budget {
            max_document: limits.max_document_nodes,
            max_stream: limits.max_stream_nodes,
            document: 0,
            stream: 0,
        }
    }

    pub(crate) fn start_document(&mut self) {
        self.document = 0;
    }

    /// Spends `n` nodes, or says which budget they would exceed (nothing is spent then).
    pub(crate) fn charge(&mut self, n: usize) -> Result<(), Exceeded> {
        let document = self.document.saturating_add(n);
        let stream = self.stream.saturating_add(n);
        if document > self.max_document {
            return Err(Exceeded::Document);
        }
        if stream > self.max_stream {
            return Err(Exceeded::Stream);
        }
        self.document = document;
        self.stream = stream;
        Ok(())
    }

    /// The limit that `Exceeded` names.
    pub(crate) fn limit(&self, which: Exceeded) -> usize {
        match which {
            Exceeded::Document => self.max_document,
            Exceeded::Stream => self.max_stream,
        }
    }
}

/// The same mapping without the spare room its growth left (a one-entry map holds four
/// slots): entries are moved, not copied. Lists call `shrink_to_fit`; `serde_json::Map` has
/// no such method.
pub(crate) fn exact(
    map: serde_json::Map<String, serde_json::Value>,
) -> serde_json::Map<String, serde_json::Value> {
    let mut out = serde_json::Map::with_capacity(map.len());
    out.extend(map);
    out
}
