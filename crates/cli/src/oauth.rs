//! OAuth for `mcpl run`'s dialed servers: [`OAuth`], the bridge that makes mcpl-auth's
//! `OAuthClient` a transport's `Authorizer` (the one place both crates are known), and
//! [`authorize`], which gives each server the config asks it for its client, with the person's
//! step shown on standard error or in a browser (`--open-browser`).

use std::error::Error;
use std::sync::Arc;

use mcpl_auth::{AuthError, OAuthClient, ShowUrl};
use mcpl_client::Authorizer;
use mcpl_host::config::{Config, Transport};
use url::Url;

/// One server's OAuth client as its transport's [`Authorizer`].
#[derive(Debug)]
pub struct OAuth(pub OAuthClient);

impl Authorizer for OAuth {
    fn authorization(&self, url: &Url) -> Option<String> {
        self.0.authorization(url)
    }

    fn request_headers(&self, method: &str, url: &Url) -> Vec<(String, String)> {
        self.0.request_headers(method, url)
    }

    fn on_nonce(&self, url: &Url, nonce: &str) -> bool {
        self.0.on_nonce(url, nonce)
    }

    fn on_challenge(
        &self,
        url: &Url,
        status: u16,
        www_authenticate: Option<&str>,
    ) -> Result<bool, Box<dyn Error + Send + Sync>> {
        self.0.on_challenge(url, status, www_authenticate)
    }
}

/// How the authorization url reaches the person.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presenter {
    /// `mcpl: authorize <server>: <url>` on standard error.
    Print,
    /// A browser opened on it (`xdg-open`, or `open` on macOS); printed when that fails.
    OpenBrowser,
}

/// The program that opens a url in the person's browser.
pub const BROWSER_OPENER: &str = if cfg!(target_os = "macos") {
    "open"
} else {
    "xdg-open"
};

/// A server's OAuth client could not be made (its token file could not be read).
#[derive(Debug, thiserror::Error)]
#[error("mcpServers.{server}.mcpl.oauth: {source}")]
pub struct AuthorizeError {
    /// The server's name.
    pub server: String,
    /// Why.
    pub source: AuthError,
}

/// Gives every dialed server whose config asks for OAuth (the default with no fixed token) an
/// [`OAuth`] authorizer.
pub fn authorize(config: &mut Config, presenter: Presenter) -> Result<(), AuthorizeError> {
    for server in &mut config.servers {
        let Some(oauth) = &server.options.oauth else {
            continue;
        };
        let (Transport::Http(dial) | Transport::Ws(dial)) = &mut server.launch.transport else {
            continue;
        };
        let name = server.launch.name.clone();
        let auth_config = oauth.auth_config(show(name.clone(), presenter));
        let client =
            OAuthClient::new(dial.url.clone(), auth_config).map_err(|source| AuthorizeError {
                server: name,
                source,
            })?;
        dial.authorizer = Some(Arc::new(OAuth(client)));
    }
    Ok(())
}

/// Shows `server`'s authorization url as `presenter` says.
fn show(server: String, presenter: Presenter) -> ShowUrl {
    Arc::new(move |url: &Url| {
        if presenter == Presenter::OpenBrowser {
            match open_browser(url) {
                Ok(()) => return Ok(()),
                Err(error) => eprintln!("mcpl: cannot run {BROWSER_OPENER}: {error}"),
            }
        }
        eprintln!("mcpl: authorize {server}: {url}");
        Ok(())
    })
}

fn open_browser(url: &Url) -> std::io::Result<()> {
    let mut child = std::process::Command::new(BROWSER_OPENER)
        .arg(url.as_str())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    // Reaped on its own thread: the opener returns at once, the browser lives on.
    std::thread::spawn(move || child.wait());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_dialed_server_that_asks_gets_an_oauth_authorizer() {
        let mut config = Config::from_slice(
            "mcpl.json",
            br#"{"mcpServers": {
                "a": {"url": "http://127.0.0.1:9/mcp"},
                "b": {"url": "http://127.0.0.1:9/mcp", "mcpl": {"token": "t"}},
                "c": {"url": "http://127.0.0.1:9/mcp", "mcpl": {"oauth": false}},
                "d": {"command": "x"}}}"#,
        )
        .unwrap();
        authorize(&mut config, Presenter::Print).unwrap();
        let authorizer = |i: usize| match &config.servers[i].launch.transport {
            Transport::Http(dial) => Some((dial.url.clone(), dial.authorizer.clone())),
            _ => None,
        };
        // No grant yet: the first request goes without, and its 401 starts the authorization.
        let (url, oauth) = authorizer(0).unwrap();
        assert_eq!(oauth.unwrap().authorization(&url), None);
        let (url, fixed) = authorizer(1).unwrap();
        assert_eq!(
            fixed.unwrap().authorization(&url).as_deref(),
            Some("Bearer t")
        );
        assert!(authorizer(2).unwrap().1.is_none(), "oauth: false");
        assert!(authorizer(3).is_none());
    }
}
