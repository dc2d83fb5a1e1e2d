//! Token prices, head/tail spill with attachments, and the window projection.
//!
//! Not built yet: this crate will price text and images per route, fit a tool result to a
//! budget in estimated tokens, and write the whole result to a spill file through a storage
//! trait before anything is cut. It does no I/O other than spill files.
