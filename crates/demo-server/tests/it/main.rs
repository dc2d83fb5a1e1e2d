//! The demo server's binary, spoken to over pipes as a host would.

mod client;
mod failures;
mod protocol;
mod push;
mod remote;
mod tools;
