//! The reference fetcher's tests, in one binary: MCPL's conformance vectors through the runner
//! `mcpl conformance` uses, references bound to the servers that delivered them, and
//! adversarial servers on loopback.

mod conformance;
