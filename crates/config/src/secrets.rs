//! The secrets the host holds, registered with the session so that no server string carries
//! one back to the model, the spill or a log: the credentials in mcpl's own environment, every
//! header and `env` value a server's config names, and each token an authorizer sends.

use std::sync::Arc;

use mcpl_auth::OAuthOptions;
use mcpl_client::{Launch, Recorded, Transport};
use mcpl_redact::{Secrets, is_secret_name};

/// Registers the value of every variable of mcpl's own environment whose name says it holds a
/// secret (`ANTHROPIC_API_KEY`, `AWS_SECRET_ACCESS_KEY`, `GITHUB_TOKEN`, ...).
pub fn register_environment(secrets: &Secrets, vars: impl Iterator<Item = (String, String)>) {
    for (name, value) in vars {
        if is_secret_name(&name) {
            secrets.insert(&value);
        }
    }
}

/// Registers a server's OAuth client secret or private key, when its config gives one.
pub fn register_oauth(secrets: &Secrets, oauth: Option<&OAuthOptions>) {
    let found = oauth.map_or_else(Vec::new, |oauth| oauth.identity.secrets());
    for secret in found {
        secrets.insert(secret.expose());
        // A key's body, line by line, is what an echo would show.
        for line in secret.expose().lines() {
            secrets.insert(line);
        }
    }
}

/// Registers what a server's config holds (each `env` value and header value, and each word of
/// one), and gives back its launch with an authorizer that registers every token it sends.
pub fn register_server(secrets: &Secrets, launch: &Launch) -> Launch {
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

#[cfg(test)]
mod tests {
    use super::*;
    use mcpl_client::{BearerToken, Dial};

    #[test]
    fn a_token_the_host_sends_and_its_config_headers_are_withheld_when_echoed() {
        let secrets = Secrets::new();
        let url = url::Url::parse("https://mcp.example/mcp").unwrap();
        let dial = Dial::new(url.clone())
            .with_headers(vec![(
                "X-Team-Key".to_owned(),
                "Key tm4k9Q2x7ZpL3vB8".to_owned(),
            )])
            .with_authorizer(Some(Arc::new(BearerToken::new(
                &url,
                "bT0k3n8xQ2m7ZpL4vR9w",
            ))));
        let launch = Launch::new("", Transport::Http(dial));
        let launch = register_server(&secrets, &launch);
        let Transport::Http(dial) = &launch.transport else {
            panic!("the transport is kept");
        };
        // The token is learnt when it is sent, as a refreshed OAuth token would be.
        assert_eq!(
            secrets.redact("echo bT0k3n8xQ2m7ZpL4vR9w"),
            "echo bT0k3n8xQ2m7ZpL4vR9w"
        );
        let sent = dial.authorizer.as_ref().and_then(|a| a.authorization(&url));
        assert_eq!(sent.as_deref(), Some("Bearer bT0k3n8xQ2m7ZpL4vR9w"));
        for echoed in [
            "you sent bT0k3n8xQ2m7ZpL4vR9w",
            "BT0K3N8X-Q2M7-ZPL4-VR9W",
            "team tm4k9Q2x7ZpL3vB8",
        ] {
            let shown = secrets.redact(echoed);
            assert!(
                shown.contains(mcpl_redact::WITHHELD_SECRET),
                "{echoed}: {shown}"
            );
        }
    }

    #[test]
    fn a_workload_identity_assertion_is_withheld_when_echoed() {
        let secrets = Secrets::new();
        let mut oauth = OAuthOptions::default();
        oauth.identity = mcpl_auth::ClientIdentity::JwtBearer {
            client_id: "c".to_owned(),
            assertion: "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ3b3JrbG9hZCJ9.c2lnbmF0dXJl".into(),
        };
        oauth.offline_access = false;
        oauth.headless = true;
        oauth.timeout = std::time::Duration::from_secs(1);
        register_oauth(&secrets, Some(&oauth));
        let shown =
            secrets.redact("echo: eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ3b3JrbG9hZCJ9.c2lnbmF0dXJl");
        assert!(!shown.contains("c2lnbmF0dXJl"), "{shown}");
    }

    #[test]
    fn an_oauth_client_secret_is_withheld_when_echoed() {
        let secrets = Secrets::new();
        let mut oauth = OAuthOptions::default();
        oauth.identity = mcpl_auth::ClientIdentity::ClientCredentials {
            client_id: "c".to_owned(),
            credential: mcpl_auth::ClientCredential::Secret("cS3cr3t9x2k7q4m8w1z".into()),
        };
        oauth.offline_access = false;
        oauth.headless = true;
        oauth.timeout = std::time::Duration::from_secs(1);
        register_oauth(&secrets, Some(&oauth));
        assert!(
            secrets
                .redact("the server said cS3cr3t9x2k7q4m8w1z")
                .contains("[withheld")
        );
    }

    #[test]
    fn the_environment_gives_its_secret_named_values_only() {
        let secrets = Secrets::new();
        let vars = [
            ("ANTHROPIC_API_KEY", "sk-ant-k9Q2x7ZpL3vB8m4t"),
            ("HOME", "/home/q7k2x9z4m8w1"),
            ("PWD", "/work/a8f3k2j9x7q1"),
        ];
        register_environment(
            &secrets,
            vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        assert!(
            secrets
                .redact("key SK-ANT-K9Q2X7ZPL3VB8M4T")
                .contains("[withheld")
        );
        assert_eq!(secrets.redact("home q7k2x9z4m8w1"), "home q7k2x9z4m8w1");
        assert_eq!(secrets.redact("in a8f3k2j9x7q1"), "in a8f3k2j9x7q1");
    }
}
