//! mcpl-host's public API: the configuration, MCPL's answers and the scripted model.

mod config;
mod mcpl;
mod model;
