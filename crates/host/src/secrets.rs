//! The secrets the host holds, registered with the session so that no server string carries
//! one back to the model, the spill or a log: the credentials in mcpl's own environment, every
//! header and `env` value a server's config names, and each token an authorizer sends.

use std::sync::Arc;

use mcpl_client::{Launch, Recorded, Transport};
use mcpl_redact::{Secrets, is_secret_name};

/// Registers the value of every variable of mcpl's own environment whose name says it holds a
/// secret (`ANTHROPIC_API_KEY`, `AWS_SECRET_ACCESS_KEY`, `GITHUB_TOKEN`, ...).
pub(crate) fn register_environment(
    secrets: &Secrets,
    vars: impl Iterator<Item = (String, String)>,
) {
    for (name, value) in vars {
        if is_secret_name(&name) {
            secrets.insert(&value);
        }
    }
}

/// Registers what a server's config holds (each `env` value and header value, and each word of
/// one), and gives back its launch with an authorizer that registers every token it sends.
pub(crate) fn register_server(secrets: &Secrets, launch: &Launch) -> Launch {
    let mut launch = launch.clone();
    for value in launch.env.values() {
        secrets.insert(value);
    }
    if let Transport::Http(dial) | Transport::Ws(dial) = &mut launch.transport {
        for (_, value) in &dial.headers {
            secrets.insert(value);
            value.split_whitespace().for_each(|word| {
                secrets.insert(word);
            });
        }
        if let Some(inner) = dial.authorizer.take() {
            let sink = secrets.clone();
            let record = Arc::new(move |value: &str| {
                sink.insert(value);
            });
            dial.authorizer = Some(Arc::new(Recorded::new(inner, record)));
        }
    }
    launch
}
