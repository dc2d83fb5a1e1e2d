//! mcpl-host's public API: the configuration and the scripted model.

mod config;
mod model;
