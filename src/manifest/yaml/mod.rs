//! The YAML reader and writer: streams cut as kubectl cuts them (stream), the flow-collection
//! pre-scan (scan), the event reader (events) and the JSON document reader (json) under one
//! node budget (budget), scalars resolved as YAML 1.2 and as kubectl's YAML 1.1 (scalar),
//! errors with locations (error), and the emitter (write). Imports nothing else of
//! `manifest` (docs/design.md, "YAML").

pub(super) mod budget;
mod elide;
pub(super) mod error;
mod events;
mod json;
pub(super) mod read;
mod scalar;
mod scan;
mod stream;
pub(super) mod write;
