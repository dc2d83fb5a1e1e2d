//! The reference fetcher's tests, in one binary: resources read through `resources/read`, eager
//! fetches, and adversarial servers on loopback. (References bound to the servers that
//! delivered them are tested in `mcpl-host`, whose lanes register them; the conformance vectors
//! in `mcpl-cli`, whose runner `mcpl conformance` uses.)

mod adversarial;
mod eager;
mod folders;
mod origins;
mod resources;
pub mod support;
