//! Reading the configuration: defaults, every option, and errors that name their key.

use std::time::Duration;

use mcpl_host::config::*;
use mcpl_lanes::UriPolicy;

fn error(json: &str) -> String {
    Config::from_slice("mcpl.json", json.as_bytes())
        .unwrap_err()
        .to_string()
}

#[test]
fn a_config_users_know_reads_with_defaults() {
    let config = Config::from_slice(
        "mcpl.json",
        br#"{"mcpServers": {
            "b": {"command": "node", "args": ["x.js"], "env": {"K": "v"}, "type": "stdio"},
            "a": {"command": "python3", "mcpl": {"budget": 800, "uris": "credential-free",
                  "timeoutMs": 250, "maxMessageBytes": 4096, "maxConcurrentCalls": 2, "fetch": {"origin": "https://f.example", "token": "t"}}}}}"#,
    )
    .unwrap();
    let names: Vec<&str> = config
        .servers
        .iter()
        .map(|s| s.launch.name.as_str())
        .collect();
    assert_eq!(names, ["b", "a"], "the file's order is kept");
    assert_eq!(config.servers[0].launch.args, ["x.js"]);
    assert_eq!(config.servers[0].options, ServerOptions::default());
    assert!(config.servers[0].options.withhold_credential_urls);
    let a = &config.servers[1].options;
    assert_eq!(a.budget, 800);
    assert_eq!(a.uri_policy, UriPolicy::CredentialFree);
    assert_eq!(a.timeout, Duration::from_millis(250));
    assert_eq!(a.max_message_bytes, 4096);
    assert_eq!(a.max_concurrent_calls, 2);
    assert_eq!(config.servers[0].options.max_message_bytes, 64 << 20);
    assert_eq!(a.fetch.origin.as_deref(), Some("https://f.example"));
    assert_eq!(a.fetch.max_bytes, DEFAULT_FETCH_MAX_BYTES);
    assert_eq!(config.context_window, DEFAULT_CONTEXT_WINDOW);
    assert_eq!(config.defer_tools_percent, DEFAULT_DEFER_TOOLS_PERCENT);
}

#[test]
fn the_share_tools_may_take_is_a_percent() {
    let read = |value: &str| {
        let text =
            format!(r#"{{"mcpServers": {{}}, "mcpl": {{"deferToolsAbovePercent": {value}}}}}"#);
        Config::from_slice("mcpl.json", text.as_bytes())
    };
    assert_eq!(read("100").unwrap().defer_tools_percent, 100);
    assert_eq!(read("1").unwrap().defer_tools_percent, 1);
    for wrong in ["0", "101"] {
        assert_eq!(
            read(wrong).unwrap_err().to_string(),
            "mcpl.json: mcpl.deferToolsAbovePercent: must be from 1 to 100"
        );
    }
}

#[test]
fn withholding_unclaimed_credential_urls_is_a_server_option() {
    let config = Config::from_slice(
        "mcpl.json",
        br#"{"mcpServers": {"a": {"command": "x", "mcpl": {"withholdCredentialUrls": false}}}}"#,
    )
    .unwrap();
    assert!(!config.servers[0].options.withhold_credential_urls);
}

#[test]
fn a_stdio_server_inherits_the_minimal_environment_unless_its_options_say_more() {
    let config = Config::from_slice(
        "mcpl.json",
        br#"{"mcpServers": {
            "absent": {"command": "x", "env": {"K": "v"}},
            "off": {"command": "x", "mcpl": {"inheritEnv": false}},
            "named": {"command": "x", "mcpl": {"inheritEnv": ["MEMORY_FILE_PATH", "LANG"]}},
            "all": {"command": "x", "mcpl": {"inheritEnv": true}}}}"#,
    )
    .unwrap();
    let inherit: Vec<&InheritEnv> = config
        .servers
        .iter()
        .map(|s| &s.launch.inherit_env)
        .collect();
    assert_eq!(
        inherit,
        [
            &InheritEnv::Minimal,
            &InheritEnv::Minimal,
            &InheritEnv::Named(vec!["MEMORY_FILE_PATH".to_owned(), "LANG".to_owned()]),
            &InheritEnv::All,
        ]
    );
    assert_eq!(config.servers[0].launch.env["K"], "v");
    // The official SDKs' list on Unix (getDefaultEnvironment in the TypeScript SDK).
    if !cfg!(windows) {
        assert_eq!(
            DEFAULT_INHERITED_ENV,
            ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"]
        );
    }
}

#[test]
fn inherit_env_of_another_shape_is_an_error_naming_its_key() {
    let expected = "true, false or an array of environment variable names";
    for (value, found) in [
        (r#""HOME""#, r#"string "HOME""#),
        ("1", "integer `1`"),
        (r#"{"HOME": true}"#, "map"),
    ] {
        assert_eq!(
            error(&format!(
                r#"{{"mcpServers": {{"s": {{"command": "x", "mcpl": {{"inheritEnv": {value}}}}}}}}}"#
            )),
            format!(
                "mcpl.json: mcpServers.s.mcpl.inheritEnv: invalid type: {found}, expected {expected}"
            ),
            "{value}"
        );
    }
    assert_eq!(
        error(r#"{"mcpServers": {"s": {"command": "x", "mcpl": {"inheritEnv": ["HOME", 2]}}}}"#),
        "mcpl.json: mcpServers.s.mcpl.inheritEnv[1]: invalid type: integer `2`, expected a string"
    );
    assert_eq!(
        error(r#"{"mcpServers": {"s": {"command": "x", "mcpl": {"inheritEnv": ["A=B"]}}}}"#),
        "mcpl.json: mcpServers.s.mcpl.inheritEnv[0]: \"A=B\" is not an environment variable name"
    );
    assert_eq!(
        error(r#"{"mcpServers": {"s": {"command": "x", "mcpl": {"inheritEnv": [""]}}}}"#),
        "mcpl.json: mcpServers.s.mcpl.inheritEnv[0]: \"\" is not an environment variable name"
    );
    assert_eq!(
        error(
            r#"{"mcpServers": {"r": {"url": "http://x.example", "mcpl": {"inheritEnv": true}}}}"#
        ),
        "mcpl.json: mcpServers.r.mcpl.inheritEnv: only a stdio server takes it"
    );
}

#[test]
fn every_error_names_its_key() {
    assert_eq!(
        error(r#"{"mcpServers": {"files": {"command": "x", "args": ["a", 2]}}}"#),
        "mcpl.json: mcpServers.files.args[1]: invalid type: integer `2`, expected a string"
    );
    assert!(
        error(r#"{"mcpServers": {"files": {"command": "x", "mcpl": {"budegt": 5}}}}"#)
            .starts_with("mcpl.json: mcpServers.files.mcpl.budegt: unknown field `budegt`"),
    );
    assert!(
        error(r#"{"mcpServers": {"files": {"args": []}}}"#)
            .starts_with("mcpl.json: mcpServers.files: missing field `command`"),
    );
    assert_eq!(
        error(r#"{"mcpServers": {"files": {"command": " "}}}"#),
        "mcpl.json: mcpServers.files.command: is empty"
    );
    assert!(error(r#"{"servers": {}}"#).starts_with("mcpl.json: servers: unknown field `servers`"));
    assert!(
        error(r#"{"mcpServers": {"f": {"command": "x", "mcpl": {"uris": "all"}}}}"#)
            .starts_with("mcpl.json: mcpServers.f.mcpl.uris: unknown variant `all`")
    );
    assert!(
        error(
            r#"{"mcpServers": {"f": {"command": "x", "mcpl": {"fetch": {"origin": "ftp://x"}}}}}"#
        )
        .starts_with("mcpl.json: mcpServers.f.mcpl.fetch.origin:")
    );
    assert!(
        error(r#"{"mcpServers": {"f": {"command": "x", "type": "sse"}}}"#)
            .starts_with("mcpl.json: mcpServers.f.type: unknown variant `sse`")
    );
    assert_eq!(
        error(r#"{"mcpServers": {"f": {"command": "x", "mcpl": {"maxMessageBytes": 0}}}}"#),
        "mcpl.json: mcpServers.f.mcpl.maxMessageBytes: must be at least 1"
    );
    assert_eq!(
        error(r#"{"mcpServers": {"f": {"command": "x", "mcpl": {"maxConcurrentCalls": 0}}}}"#),
        "mcpl.json: mcpServers.f.mcpl.maxConcurrentCalls: must be at least 1"
    );
    assert!(error("{").starts_with("mcpl.json: (top): EOF while parsing"));
}

#[test]
fn dialed_servers_read_their_url_headers_and_token_with_env_expanded() {
    // Cargo sets CARGO_PKG_NAME for the tests it runs: a variable known to be set (edition
    // 2024's `set_var` is unsafe, which the workspace forbids).
    assert_eq!(std::env::var("CARGO_PKG_NAME").as_deref(), Ok("mcpl-host"));
    let config = Config::from_slice(
        "mcpl.json",
        br#"{"mcpServers": {
            "remote": {"type": "http", "url": "https://mcp.example/${CARGO_PKG_NAME}/mcp",
                       "headers": {"X-Team": "team-${CARGO_PKG_NAME}"},
                       "mcpl": {"tokenEnv": "CARGO_PKG_NAME",
                                "roots": [{"uri": "file:///work", "name": "work"}]}},
            "alias": {"type": "streamable-http", "url": "http://127.0.0.1:8080/mcp"},
            "mcpl": {"url": "wss://mcpl.example:8443/ws", "mcpl": {"token": "${CARGO_PKG_NAME}"}},
            "local": {"command": "x", "protocol": "modern"}}}"#,
    )
    .unwrap();
    let remote = &config.servers[0];
    let Transport::Http(dial) = &remote.launch.transport else {
        panic!("not http: {:?}", remote.launch.transport)
    };
    assert_eq!(dial.url.as_str(), "https://mcp.example/mcpl-host/mcp");
    assert_eq!(
        dial.headers,
        [("X-Team".to_owned(), "team-mcpl-host".to_owned())]
    );
    let authorizer = dial.authorizer.as_ref().unwrap();
    assert_eq!(
        authorizer.authorization(&dial.url).as_deref(),
        Some("Bearer mcpl-host")
    );
    let elsewhere = url::Url::parse("https://other.example/mcp").unwrap();
    assert_eq!(
        authorizer.authorization(&elsewhere),
        None,
        "its origin only"
    );
    assert_eq!(remote.launch.protocol, Protocol::Modern);
    assert_eq!(remote.launch.roots[0].uri, "file:///work");
    // The fetcher binds to the dialed origin, with the server's token.
    assert_eq!(
        remote.options.fetch.origin.as_deref(),
        Some("https://mcp.example")
    );
    assert_eq!(remote.options.fetch.token.as_deref(), Some("mcpl-host"));
    assert!(matches!(
        config.servers[1].launch.transport,
        Transport::Http(_)
    ));
    let ws = &config.servers[2];
    assert!(
        matches!(ws.launch.transport, Transport::Ws(_)),
        "from the scheme"
    );
    assert_eq!(ws.launch.protocol, Protocol::Legacy);
    assert_eq!(
        ws.options.fetch.origin.as_deref(),
        Some("https://mcpl.example:8443")
    );
    assert_eq!(config.servers[3].launch.transport, Transport::Stdio);
    assert_eq!(config.servers[3].launch.protocol, Protocol::Modern);
    assert_eq!(config.servers[3].launch.roots, []);
}

#[test]
fn dialed_server_errors_name_their_key() {
    assert_eq!(
        error(r#"{"mcpServers": {"r": {"type": "http"}}}"#),
        "mcpl.json: mcpServers.r.url: is missing"
    );
    assert_eq!(
        error(r#"{"mcpServers": {"r": {"type": "ws", "url": "https://x.example"}}}"#),
        "mcpl.json: mcpServers.r.url: is not a ws or wss url"
    );
    assert_eq!(
        error(r#"{"mcpServers": {"r": {"url": "http://x.example", "command": "node"}}}"#),
        "mcpl.json: mcpServers.r.command: a dialed server has none (ws speaks MCP 2024-11-05 with MCPL, http modern MCP)"
    );
    assert_eq!(
        error(r#"{"mcpServers": {"r": {"url": "http://x.example", "protocol": "legacy"}}}"#),
        "mcpl.json: mcpServers.r.protocol: a dialed server has none (ws speaks MCP 2024-11-05 with MCPL, http modern MCP)"
    );
    assert_eq!(
        error(r#"{"mcpServers": {"r": {"url": "http://x.example/${MCPL_TEST_UNSET_VARIABLE}"}}}"#),
        "mcpl.json: mcpServers.r.url: ${MCPL_TEST_UNSET_VARIABLE} is not set"
    );
    assert_eq!(
        error(
            r#"{"mcpServers": {"r": {"url": "http://x.example", "headers": {"Authorization": "Bearer ${MCPL_TEST_UNSET_VARIABLE}"}}}}"#
        ),
        "mcpl.json: mcpServers.r.headers.Authorization: ${MCPL_TEST_UNSET_VARIABLE} is not set"
    );
    assert_eq!(
        error(
            r#"{"mcpServers": {"r": {"url": "http://x.example", "mcpl": {"tokenEnv": "MCPL_TEST_UNSET_VARIABLE"}}}}"#
        ),
        "mcpl.json: mcpServers.r.mcpl.tokenEnv: MCPL_TEST_UNSET_VARIABLE is not set"
    );
    assert_eq!(
        error(
            r#"{"mcpServers": {"r": {"url": "http://x.example", "mcpl": {"fetch": {"origin": "http://y.example"}}}}}"#
        ),
        "mcpl.json: mcpServers.r.mcpl.fetch.origin: a dialed server's fetch origin is its url"
    );
    assert_eq!(
        error(r#"{"mcpServers": {"r": {"command": "x", "mcpl": {"token": "t"}}}}"#),
        "mcpl.json: mcpServers.r.mcpl.token: only a dialed server (http or ws) takes it"
    );
    assert!(
        error(r#"{"mcpServers": {"r": {"url": "http://x.example", "type": "sse"}}}"#)
            .starts_with("mcpl.json: mcpServers.r.type: unknown variant `sse`")
    );
}

#[test]
fn a_dialed_server_authorizes_with_oauth_unless_told_not_to() {
    let config = Config::from_slice(
        "mcpl.json",
        br#"{"mcpServers": {
            "default": {"url": "https://a.example/mcp"},
            "fixed": {"url": "https://b.example/mcp", "mcpl": {"token": "t"}},
            "off": {"url": "https://c.example/mcp", "mcpl": {"oauth": false}},
            "set": {"url": "https://d.example/mcp", "mcpl": {"oauth": {
                "clientId": "${CARGO_PKG_NAME}", "clientSecret": "${CARGO_PKG_NAME}",
                "scopes": ["read"], "redirect": "headless", "timeoutSeconds": 5}}},
            "local": {"command": "x"}}}"#,
    )
    .unwrap();
    let oauth: Vec<_> = config
        .servers
        .iter()
        .map(|s| s.options.oauth.clone())
        .collect();
    assert_eq!(oauth[0], Some(mcpl_auth::OAuthOptions::default()));
    assert_eq!(oauth[1], None, "a fixed token is not renewed");
    assert_eq!(oauth[2], None);
    let set = oauth[3].clone().unwrap();
    assert_eq!(
        set.identity,
        mcpl_auth::ClientIdentity::PreRegistered {
            client_id: "mcpl-host".to_owned(),
            client_secret: Some("mcpl-host".into()),
            issuer: None,
        }
    );
    assert!(set.headless);
    assert_eq!(set.timeout, Duration::from_secs(5));
    assert_eq!(set.scopes, ["read"]);
    assert_eq!(oauth[4], None);
}

#[test]
fn oauth_errors_name_their_key() {
    for (json, expected) in [
        (
            r#"{"mcpServers": {"r": {"command": "x", "mcpl": {"oauth": false}}}}"#,
            "mcpl.json: mcpServers.r.mcpl.oauth: only a dialed server (http or ws) takes it",
        ),
        (
            r#"{"mcpServers": {"r": {"url": "http://x.example", "mcpl": {"token": "t", "oauth": {}}}}}"#,
            "mcpl.json: mcpServers.r.mcpl.oauth: give token (or tokenEnv) or oauth, not both",
        ),
        (
            r#"{"mcpServers": {"r": {"url": "http://x.example", "mcpl": {"oauth": {"clientId": "c", "clientSecret": "${MCPL_TEST_UNSET_VARIABLE}"}}}}}"#,
            "mcpl.json: mcpServers.r.mcpl.oauth.clientSecret: ${MCPL_TEST_UNSET_VARIABLE} is not set",
        ),
        (
            r#"{"mcpServers": {"r": {"url": "http://x.example", "mcpl": {"oauth": {"clientCredentials": {"clientId": "c"}}}}}}"#,
            "mcpl.json: mcpServers.r.mcpl.oauth.clientCredentials: give clientSecret or privateKeyFile (one of them)",
        ),
    ] {
        assert_eq!(error(json), expected);
    }
    assert!(
        error(r#"{"mcpServers": {"r": {"url": "http://x.example", "mcpl": {"oauth": {"scope": "x"}}}}}"#)
            .starts_with("mcpl.json: mcpServers.r.mcpl.oauth.scope: unknown field `scope`"),
    );
    assert!(
        error(r#"{"mcpServers": {"r": {"url": "http://x.example", "mcpl": {"oauth": {"redirect": "browser"}}}}}"#)
            .starts_with("mcpl.json: mcpServers.r.mcpl.oauth.redirect: unknown variant `browser`"),
    );
}

#[test]
fn spills_go_to_the_local_folder_with_read_result_notices_unless_the_config_says_otherwise() {
    let config = Config::from_slice("mcpl.json", br#"{"mcpServers": {}}"#).unwrap();
    assert_eq!(config.spill_store, SpillStoreConfig::Local);
    assert_eq!(config.spill_notice, mcpl_budget::SpillNotice::ReadResult);
    assert_eq!(config.spill_ttl_hours, None);
    let config = Config::from_slice(
        "mcpl.json",
        br#"{"mcpServers": {}, "mcpl": {"spillNotice": "path", "spillTtlHours": 24,
             "spillStore": {"type": "s3", "bucket": "b", "prefix": "p/", "endpoint": "http://127.0.0.1:9"}}}"#,
    )
    .unwrap();
    assert_eq!(config.spill_notice, mcpl_budget::SpillNotice::Path);
    assert_eq!(config.spill_ttl_hours, Some(24));
    assert_eq!(
        config.spill_store,
        SpillStoreConfig::S3(
            S3Location::new("b")
                .with_prefix("p/")
                .with_endpoint("http://127.0.0.1:9")
        )
    );
}

#[test]
fn a_credential_in_the_spill_store_is_refused_by_name() {
    assert_eq!(
        error(
            r#"{"mcpServers": {}, "mcpl": {"spillStore": {"type": "s3", "bucket": "b",
                "secretAccessKey": "x"}}}"#
        ),
        "mcpl.json: mcpl.spillStore.secretAccessKey: credentials never go in the configuration \
         file: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, in the environment"
    );
    assert_eq!(
        error(r#"{"mcpServers": {}, "mcpl": {"spillStore": {"type": "ftp"}}}"#),
        "mcpl.json: mcpl.spillStore.type: must be \"local\" or \"s3\""
    );
    assert_eq!(
        error(r#"{"mcpServers": {}, "mcpl": {"spillNotice": "url"}}"#),
        "mcpl.json: mcpl.spillNotice: unknown variant `url`, expected `read_result` or `path` at line 1 column 48"
    );
}
