//! Data-driven cases: each folder in `tests/cases/` holds `input.json` (a tool result; its
//! content is also what the push, channel and injection lanes receive) and one snapshot per
//! lane. `input.json` may instead be `{"options": {"show_uris": "credential-free"}, "result":
//! ...}`. Adding a case is adding a folder.

use std::path::Path;

use mcpl_lanes::UriPolicy;
use serde_json::Value;

use crate::{AllLanes, Host, summarise_data};

/// The data of every inline block that also claims a disposition or a uri: withheld, so shown
/// nowhere.
fn withheld_data(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(object) => {
            let inline = object.get("data").and_then(Value::as_str);
            if let Some(data) = inline
                && (object.contains_key("disposition")
                    || object.get("uri").is_some_and(Value::is_string))
                && data.len() >= 8
            {
                out.push(data.to_owned());
            }
            // An embedded resource that claims a disposition is withheld whole.
            if object.contains_key("disposition")
                && let Some(Value::Object(inner)) = object.get("resource")
            {
                for key in ["text", "blob"] {
                    if let Some(Value::String(contents)) = inner.get(key)
                        && contents.len() >= 8
                    {
                        out.push(contents.clone());
                    }
                }
            }
            object.values().for_each(|v| withheld_data(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| withheld_data(v, out)),
        _ => {}
    }
}

/// No uri of a block in `scope`, even where a server also wrote it into its own text, in any
/// output; under the opt-in, no uri marked never or carrying a credential.
fn check_uris(scope: &Value, policy: UriPolicy, outputs: &[String]) {
    let uris = mcpl_lanes::block_uris(scope);
    let hidden = mcpl_lanes::HiddenUris::of(&[scope], policy);
    for uri in &uris {
        let searchable = uri.chars().count() >= mcpl_lanes::REDACT_MIN_CHARS;
        if !searchable || hidden.shows(uri) {
            continue;
        }
        for output in outputs {
            assert!(
                !output.contains(uri.as_str()),
                "uri {uri} shown in {output}"
            );
        }
    }
}

/// Checks what every case must hold, whatever its snapshots say, and returns all its lanes.
fn check(result: &Value, policy: UriPolicy) -> AllLanes {
    let mut host = Host::new();
    let lanes = host.all_lanes(result, policy);
    let content = result.get("content").cloned().unwrap_or(Value::Null);
    for (scope, outputs) in [
        (result, lanes.result_texts()),
        (&content, lanes.message_texts()),
    ] {
        check_uris(scope, policy, &outputs);
    }
    let mut withheld = Vec::new();
    withheld_data(result, &mut withheld);
    for data in &withheld {
        for output in lanes.result_texts().iter().chain(&lanes.message_texts()) {
            assert!(!output.contains(data.as_str()), "withheld data shown");
        }
    }

    // The stored copy is the same string every time it is made.
    let again = host.all_lanes(result, policy);
    assert_eq!(again.stored, lanes.stored, "the stored copy is stable");

    // The script view given its own output again gives the same blocks.
    let twice = host
        .on(&mcpl_lanes::Route::ANTHROPIC, policy)
        .script_result(&lanes.script);
    assert_eq!(twice, lanes.script, "the script view is idempotent");

    // One shown thing per block, in order, on the lanes that show blocks one by one.
    if let Some(Value::Array(blocks)) = result.get("content") {
        let content = Value::Array(blocks.clone());
        let mut lanes_now = host.on(&mcpl_lanes::Route::ANTHROPIC, policy);
        if let Ok(view) = lanes_now.push(&content) {
            assert_eq!(view.parts.len(), blocks.len(), "one push part per block");
        }
        let view = lanes_now.injection_user(&content);
        assert_eq!(
            view.parts.len(),
            blocks.len(),
            "one injection part per block"
        );
        assert_eq!(
            lanes.script["content"].as_array().map(Vec::len),
            Some(blocks.len()),
            "one script block per block"
        );
    }
    lanes
}

fn run_case(dir: &Path) {
    let input_path = dir.join("input.json");
    let text = std::fs::read_to_string(&input_path)
        .unwrap_or_else(|e| panic!("{}: {e}", input_path.display()));
    let mut input: Value = serde_json::from_str(&text).unwrap();
    mcpl_testkit::expand_fixtures(&mut input);
    let (result, policy) = match input.get("result") {
        Some(result) if input.get("options").is_some() => {
            let policy = match input["options"]["show_uris"].as_str() {
                Some("credential-free") => UriPolicy::CredentialFree,
                _ => UriPolicy::Hidden,
            };
            (result.clone(), policy)
        }
        _ => (input.clone(), UriPolicy::Hidden),
    };
    let lanes = check(&result, policy);
    let script = serde_json::to_string_pretty(&summarise_data(&lanes.script)).unwrap();
    let field = match &lanes.script_field {
        Some((pointer, value)) => format!(
            "{pointer}\n{}",
            serde_json::to_string_pretty(&summarise_data(value)).unwrap()
        ),
        None => "(no such field)".to_owned(),
    };
    insta::with_settings!({
        snapshot_path => dir,
        prepend_module_to_snapshot => false,
        omit_expression => true,
        input_file => &input_path,
    }, {
        insta::assert_snapshot!("tool-result-stored", lanes.stored);
        insta::assert_snapshot!("tool-result-live-anthropic", lanes.live_anthropic);
        insta::assert_snapshot!("tool-result-live-text-only", lanes.live_text_only);
        insta::assert_snapshot!("push", lanes.push);
        insta::assert_snapshot!("channel", lanes.channel);
        insta::assert_snapshot!("injection-user", lanes.injection_user);
        insta::assert_snapshot!("injection-system", lanes.injection_system);
        insta::assert_snapshot!("script-whole", script);
        insta::assert_snapshot!("script-field", field);
    });
}

#[test]
fn cases() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 20, "only {} cases", dirs.len());
    for dir in dirs {
        run_case(&dir);
    }
}
