//! A small agent host over mcpl's libraries: the configuration, MCPL's answers to servers, the
//! [`model::Model`] trait with a scripted model and HTTP backends, and the inference loop.
//!
//! The loop ([`host_loop::Host`]) starts each configured server through `mcpl-client`, offers
//! their tools to a model, and sends every tool result, push event, channel message and context
//! injection through `mcpl-classify`, `mcpl-lanes` and `mcpl-budget` before `mcpl-encode`
//! writes the provider's request. References are fetched with `mcpl-fetch`, and a cut result's
//! spill is read back with the `read_result` tool, from any `mcpl_budget::SpillStore`.
//!
//! This crate knows processes only through `mcpl-client` and HTTP only through `mcpl-fetch` and
//! `mcpl-model`'s provider backends (the `http` feature); it has no command line, logger or demo
//! server.

/// The configuration: `mcpl-config`, re-exported.
pub use mcpl_config as config;
pub mod host_loop;
pub mod mcpl;
mod mistakes;
/// The `Model` trait, the scripted model and the HTTP backends: `mcpl-model`, re-exported.
pub use mcpl_model as model;
/// The provider HTTP backends (`mcpl_model::http`), behind the `http` feature.
#[cfg(feature = "http")]
pub use mcpl_model::http;
