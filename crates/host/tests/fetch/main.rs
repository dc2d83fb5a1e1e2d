//! The reference fetcher's tests, in one binary: MCPL's conformance vectors through the runner
//! `mcpl conformance` uses, references bound to the servers that delivered them, resources read
//! through `resources/read`, eager fetches, and adversarial servers on loopback.

mod adversarial;
mod binding;
mod conformance;
mod eager;
mod resources;
mod support;
