//! mcpl's own rules through the public API: JWTs of any header, PEM keys, auth headers.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcpl_redact::formats::credentials_in;

/// The withheld parts of `text`, each with its rule.
fn withheld(text: &str) -> Vec<(&str, &'static str)> {
    credentials_in(text)
        .into_iter()
        .map(|f| (&text[f.start..f.end], f.rule))
        .collect()
}

/// The withheld parts of `text` alone.
fn parts(text: &str) -> Vec<&str> {
    withheld(text).into_iter().map(|(p, _)| p).collect()
}

fn jwt(header: &str) -> String {
    let payload = r#"{"sub":"1234567890","name":"mcpl test","iat":1516239022}"#;
    format!(
        "{}.{}.{}",
        URL_SAFE_NO_PAD.encode(header),
        URL_SAFE_NO_PAD.encode(payload),
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
    )
}

#[test]
fn a_jwt_is_found_whatever_its_header_starts_with() {
    for header in [
        r#"{"alg":"HS256","typ":"JWT"}"#,
        r#"{ "alg": "HS256" }"#,
        "{\n  \"alg\": \"RS256\"\n}",
        "{\r\n\"alg\":\"ES256\"}",
        r#" {"alg":"none"}"#,
        "\t{\"alg\":\"PS256\"}",
        "\n{\"alg\":\"EdDSA\"}",
    ] {
        let token = jwt(header);
        let text = format!("token: {token} (expires soon)");
        assert_eq!(parts(&text), [token.as_str()], "header {header:?}");
    }
}

#[test]
fn a_jwt_glued_to_a_word_is_found_from_its_header() {
    let token = jwt("{ \"alg\": \"HS256\" }");
    let text = format!("session_{token}");
    assert_eq!(parts(&text), [token.as_str()]);
}

#[test]
fn an_unsigned_jwt_and_a_jwe_are_found_whole() {
    let unsigned = format!("{}.e30.", URL_SAFE_NO_PAD.encode(r#"{ "alg": "none" }"#));
    assert_eq!(parts(&format!("t={unsigned} ")), [unsigned.as_str()]);
    let jwe = format!(
        "{}.OKOawDo13gRp2ojaHV7LFpZcgV7T6DVZKTyKOMTYUmKoTCVJRgckCL9kiMT03JGe.48V1_ALb6US04U3b.5eym8TW_c8SuK0ltJ3rpYIzOeDQz7TALvtu6UG9oMo4vpzs9tX_EFShS8iB7j6ji.XFBoMYUZodetZdvTiFvSkQ",
        URL_SAFE_NO_PAD.encode(r#"{"alg":"RSA-OAEP","enc":"A256GCM"}"#)
    );
    assert_eq!(parts(&jwe), [jwe.as_str()]);
    let direct = format!(
        "{}..48V1_ALb6US04U3b.5eym8TW_c8SuK0ltJ3rpYIzOeDQz7TALvtu6UG9oMo4.XFBoMYUZodetZdvTiFvSkQ",
        URL_SAFE_NO_PAD.encode(r#"{"alg":"dir","enc":"A256GCM"}"#)
    );
    assert_eq!(parts(&format!("jwe {direct}.")), [direct.as_str()]);
}

#[test]
fn dotted_names_that_are_not_jwts_are_left_alone() {
    for text in [
        "see docs.example.com/getting.started for more",
        "use std::collections::hash_map.entry.or_insert",
        "crate mcpl_lanes.registry.route_for_server_name",
        "version 1.2.3 and 10.0.0.1",
        "exampleheader.example.example",
        "abcdefghijklmnop.qrstuvwxyz.abc",
    ] {
        assert!(parts(text).is_empty(), "{text:?}: {:?}", parts(text));
    }
}

const KEY_BODY: &str =
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDAC4AWkdwKYSd8\nKs14IReLcYgADhoXk56ZzXI=";

#[test]
fn a_pem_private_key_is_withheld_from_begin_to_end() {
    let key = format!("-----BEGIN PRIVATE KEY-----\n{KEY_BODY}\n-----END PRIVATE KEY-----");
    let text = format!("key file:\n{key}\nthat was it");
    assert_eq!(parts(&text), [key.as_str()]);
}

#[test]
fn a_pem_key_in_a_json_string_is_withheld_whole() {
    let body = KEY_BODY.replace('\n', "\\n");
    let key = format!("-----BEGIN RSA PRIVATE KEY-----\\n{body}\\n-----END RSA PRIVATE KEY-----");
    let text = format!(r#"{{"private_key": "{key}\n", "type": "service_account"}}"#);
    let found = withheld(&text);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].0.starts_with("-----BEGIN RSA PRIVATE KEY-----"));
    assert!(found[0].0.ends_with("-----END RSA PRIVATE KEY-----"));
}

#[test]
fn encrypted_openssh_and_pgp_keys_are_withheld() {
    for (begin, end) in [
        (
            "-----BEGIN ENCRYPTED PRIVATE KEY-----",
            "-----END ENCRYPTED PRIVATE KEY-----",
        ),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----",
            "-----END OPENSSH PRIVATE KEY-----",
        ),
        (
            "-----BEGIN PGP PRIVATE KEY BLOCK-----",
            "-----END PGP PRIVATE KEY BLOCK-----",
        ),
        (
            "-----BEGIN EC PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,3F17F5316E2BAC89\n",
            "-----END EC PRIVATE KEY-----",
        ),
    ] {
        let key = format!("{begin}\n{KEY_BODY}\n{end}");
        assert_eq!(parts(&format!("> {key}\n")), [key.as_str()], "{begin}");
    }
}

#[test]
fn a_pem_key_cut_short_is_withheld_to_the_end_of_its_body() {
    let text = format!("-----BEGIN PRIVATE KEY-----\n{KEY_BODY}\"}}, \"next\": 1");
    let found = parts(&text);
    assert_eq!(found.len(), 1);
    assert!(found[0].ends_with("ZzXI="), "{found:?}");
}

#[test]
fn a_pem_line_named_in_prose_is_not_a_key() {
    let text = "The file must start with `-----BEGIN PRIVATE KEY-----` (PKCS#8).";
    assert!(
        withheld(text)
            .iter()
            .all(|(_, rule)| *rule != "mcpl-pem-private-key")
    );
}

#[test]
fn auth_header_values_are_withheld_and_their_names_kept() {
    let cases = [
        (
            "Authorization: Bearer abc123def456ghi789",
            "abc123def456ghi789",
        ),
        (
            "authorization: bearer abc123def456ghi789",
            "abc123def456ghi789",
        ),
        (
            "AUTHORIZATION:Basic dXNlcjpwYXNzd29yZA==",
            "dXNlcjpwYXNzd29yZA==",
        ),
        (
            "Proxy-Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l",
            "YWxhZGRpbjpvcGVuc2VzYW1l",
        ),
        ("X-Api-Key: 9f8e7d6c5b4a39281706", "9f8e7d6c5b4a39281706"),
        ("x-api-key:9f8e7d6c5b4a39281706", "9f8e7d6c5b4a39281706"),
        ("api-key: 9f8e7d6c5b4a39281706", "9f8e7d6c5b4a39281706"),
        (
            "X-Goog-Api-Key: 9f8e7d6c5b4a39281706",
            "9f8e7d6c5b4a39281706",
        ),
        (
            "Authorization: Token tok_9f8e7d6c5b4a3928",
            "tok_9f8e7d6c5b4a3928",
        ),
        (
            r#"{"headers": {"Authorization": "Bearer abc123def456ghi789"}}"#,
            "abc123def456ghi789",
        ),
        (
            r#"{\"Authorization\": \"Bearer abc123def456ghi789\"}"#,
            "abc123def456ghi789",
        ),
        (
            "curl -H 'X-API-KEY: 9f8e7d6c5b4a39281706' https://x",
            "9f8e7d6c5b4a39281706",
        ),
    ];
    for (text, secret) in cases {
        assert_eq!(parts(text), [secret], "{text:?}");
    }
}

#[test]
fn auth_header_placeholders_are_left_alone() {
    for text in [
        "Authorization: Bearer $TOKEN",
        "Authorization: Bearer <token>",
        "Authorization: Basic ${CREDENTIALS}",
        "X-Api-Key: {{ api_key }}",
        "the Authorization header is sent once",
    ] {
        assert!(parts(text).is_empty(), "{text:?}: {:?}", parts(text));
    }
}

#[test]
fn known_tokens_are_found_in_a_server_reply() {
    let reply = r#"{"content":[{"type":"text","text":"GITHUB_TOKEN=ghp_R8qBeg7MXoLtWz69h1u2k6EmIxYpEY4Wv5jW\nAWS_ACCESS_KEY_ID=AKIAZ4DSXIVNQ7HBKT3M\nOPENAI_API_KEY=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\n"}]}"#;
    let found = withheld(reply);
    let rules: Vec<_> = found.iter().map(|(_, r)| *r).collect();
    assert_eq!(
        rules,
        ["github-pat", "aws-access-token", "openai-api-key"],
        "{found:?}"
    );
    assert!(found[0].0.starts_with("ghp_") && found[2].0.starts_with("sk-proj-"));
}

#[test]
fn findings_are_sorted_apart_and_on_character_boundaries() {
    let token = jwt(r#"{"alg":"HS256"}"#);
    let text =
        format!("é Authorization: Bearer {token} ü ghp_R8qBeg7MXoLtWz69h1u2k6EmIxYpEY4Wv5jW ß");
    let found = credentials_in(&text);
    assert_eq!(found.len(), 2, "{found:?}");
    for pair in found.windows(2) {
        assert!(pair[0].end <= pair[1].start);
    }
    for f in &found {
        assert!(text.is_char_boundary(f.start) && text.is_char_boundary(f.end));
    }
}

#[test]
fn rule_ids_are_listed_once_each() {
    let ids: Vec<_> = mcpl_redact::formats::rule_ids().collect();
    assert_eq!(ids.len(), mcpl_redact::formats::rule_count());
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), ids.len());
    for own in ["mcpl-jwt", "mcpl-pem-private-key", "mcpl-http-auth-header"] {
        assert!(ids.contains(&own));
    }
}

#[test]
fn auth_header_names_in_code_are_left_alone() {
    for text in [
        r#"let authorization = request.header("authorization");"#,
        "Authorization: Negotiate",
        "X-Api-Key: YOUR_API_KEY_HERE",
    ] {
        assert!(parts(text).is_empty(), "{text:?}: {:?}", parts(text));
    }
}

#[test]
fn odd_and_hostile_inputs_end_without_panic() {
    let dashes = format!("{}.ab.cd", "a-".repeat(200_000));
    let begins = "-----BEGIN PRIVATE KEY-----\n".repeat(20_000);
    let one_line = "key=Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB; ".repeat(20_000);
    let headers = "Authorization: Bearer ".repeat(40_000);
    let mut prefixes = String::new();
    let token = jwt(r#"{"alg":"HS256"}"#);
    for cut in 0..token.len() {
        prefixes.push_str(&token[..cut]);
        prefixes.push('\n');
    }
    for text in [
        "",
        "\n",
        "é",
        "-----BEGIN",
        &dashes,
        &begins,
        &one_line,
        &headers,
        &prefixes,
    ] {
        let found = credentials_in(text);
        assert!(found.iter().all(|f| f.start < f.end && f.end <= text.len()));
    }
}
