//! `mcpl project`: one lane's projection of one input, as the contract says.

use rstest::rstest;
use serde_json::{Value, json};

use super::{fixture_base64, mcpl};

fn project(args: &[&str], input: &Value) -> Value {
    let mut all = vec!["project"];
    all.extend_from_slice(args);
    let output = mcpl(&all, input.to_string().as_bytes());
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let value: Value = serde_json::from_slice(&output.stdout).unwrap();
    for key in [
        "lane",
        "route",
        "live",
        "follow_up",
        "stored",
        "estimated_tokens",
        "stored_estimated_tokens",
        "spill",
        "diagnostics",
    ] {
        assert!(value.get(key).is_some(), "no {key} in {value}");
    }
    assert!(value["estimated_tokens"].is_u64());
    assert!(value["stored_estimated_tokens"].is_u64());
    value
}

fn image_result() -> Value {
    json!({"content": [
        {"type": "text", "text": "A chart:"},
        {"type": "image", "mimeType": "image/jpeg", "data": fixture_base64("image.png")},
        {"type": "resource_link", "uri": "demo://resource/dynamic/text/1", "name": "notes.txt", "mimeType": "text/plain"},
    ]})
}

#[test]
fn the_tool_result_lane_on_anthropic_is_a_tool_result_content_array() {
    let out = project(&[], &image_result());
    assert_eq!(out["lane"], "tool-result");
    assert_eq!(out["route"], "anthropic");
    assert_eq!(out["follow_up"], Value::Null);
    assert_eq!(out["spill"], Value::Null);
    let live = out["live"].as_array().unwrap();
    assert_eq!(live.len(), 3);
    assert_eq!(live[0], json!({"type": "text", "text": "A chart:"}));
    // The media type is what the bytes say, not the label.
    assert_eq!(
        live[1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": fixture_base64("image.png")}})
    );
    let stub = live[2]["text"].as_str().unwrap();
    assert!(
        stub.ends_with(
            "] notes.txt — text/plain claimed — from tool result — fetch with fetch_reference"
        ),
        "{stub}"
    );
    let stored = out["stored"].as_str().unwrap();
    assert!(
        stored.starts_with("A chart:\n[image: image/png, 167B, ref img_"),
        "{stored}"
    );
    assert!(!stored.contains("demo://"));
    // The same input gives the same output, ids and refs included.
    assert_eq!(project(&[], &image_result()), out);
}

/// What every route's API takes for the same result: Anthropic content blocks, an OpenAI tool
/// message's text with the image moved to a follow-up user message, a Responses
/// `function_call_output` list, Gemini's function response and `inline_data` parts, and text.
#[test]
fn every_route_projects_a_tool_result_in_its_own_shape() {
    let png = fixture_base64("image.png");
    let data_url = format!("data:image/png;base64,{png}");
    let pointer = "[image 1 of this result is shown after the tool results]";
    let header = "Images from the tool results above:";
    let label = "Image 1 of the result of call call_1 (tool):";
    let mut prices = Vec::new();
    for route in [
        "anthropic",
        "openai-chat",
        "openai-responses",
        "gemini",
        "text-only",
    ] {
        let out = project(&["--route", route], &image_result());
        assert_eq!(out["route"], route);
        let stored = out["stored"].as_str().unwrap();
        let stub = stored.lines().last().unwrap();
        assert!(stub.ends_with("fetch with fetch_reference"), "{stub}");
        let live = &out["live"];
        match route {
            "anthropic" => {
                assert_eq!(live[1]["source"]["data"], png);
                assert_eq!(out["follow_up"], Value::Null);
            }
            "openai-chat" => {
                assert_eq!(
                    live.as_str().unwrap(),
                    format!("A chart:\n{pointer}\n{stub}")
                );
                assert_eq!(
                    out["follow_up"],
                    json!([
                        {"type": "text", "text": header},
                        {"type": "text", "text": label},
                        {"type": "image_url", "image_url": {"url": data_url, "detail": "low"}},
                    ])
                );
            }
            "openai-responses" => {
                assert_eq!(
                    live,
                    &json!([
                        {"type": "input_text", "text": "A chart:"},
                        {"type": "input_image", "image_url": data_url, "detail": "low"},
                        {"type": "input_text", "text": stub},
                    ])
                );
                assert_eq!(out["follow_up"], Value::Null);
            }
            "gemini" => {
                assert_eq!(
                    live,
                    &json!([
                        {"functionResponse": {"id": "call_1", "name": "tool", "response": {"output":
                            format!("A chart:\n{pointer}\n{stub}")}}},
                        {"text": header},
                        {"text": label},
                        {"inline_data": {"mime_type": "image/png", "data": png}},
                    ])
                );
                assert_eq!(out["follow_up"], Value::Null);
            }
            _ => {
                assert_eq!(live, &out["stored"]);
                assert!(!out.to_string().contains(&png));
                assert_eq!(out["follow_up"], Value::Null);
            }
        }
        prices.push(out["estimated_tokens"].as_u64().unwrap());
    }
    // The same parts, the 16 x 12 image priced by each route's rule: Anthropic one 28 px patch,
    // gpt-5.4 one 32 px patch at 1.2, Gemini 3 a fixed 1,120; where the route moves the image
    // out of the tool result (openai-chat, gemini), the text around it is priced with it.
    let moved = mcpl_budget::MOVED_IMAGE_OVERHEAD;
    assert_eq!(prices[2], prices[0] + 1, "{prices:?}");
    assert_eq!(prices[1], prices[2] + moved, "{prices:?}");
    assert_eq!(prices[3], prices[0] + 1119 + moved, "{prices:?}");
}

fn push_with_audio() -> Value {
    json!({"payload": {"content": [
        {"type": "text", "text": "listen"},
        {"type": "audio", "mimeType": "audio/wav", "data": fixture_base64("tone.wav")},
    ]}})
}

/// A user message's content on each route: the WAV native where the route takes audio (Chat
/// Completions and Gemini), its marker elsewhere.
#[rstest]
#[case("anthropic", json!({"type": "text", "text": "[audio: audio/wav, ~4KB]"}))]
#[case("openai-chat", json!({"type": "input_audio",
    "input_audio": {"data": fixture_base64("tone.wav"), "format": "wav"}}))]
#[case("openai-responses", json!({"type": "input_text", "text": "[audio: audio/wav, ~4KB]"}))]
#[case("gemini", json!({"inline_data": {"mime_type": "audio/wav", "data": fixture_base64("tone.wav")}}))]
fn every_route_projects_a_push_event_in_its_own_shape(#[case] route: &str, #[case] audio: Value) {
    let out = project(&["--lane", "push", "--route", route], &push_with_audio());
    assert_eq!(out["live"][1], audio);
    assert_eq!(out["stored"], "listen\n[audio: audio/wav, ~4KB]");
}

#[test]
fn text_only_projects_a_push_event_as_its_stored_text() {
    let out = project(
        &["--lane", "push", "--route", "text-only"],
        &push_with_audio(),
    );
    assert_eq!(out["live"], "listen\n[audio: audio/wav, ~4KB]");
}

#[test]
fn text_only_sends_the_stored_copy() {
    let out = project(&["--route", "text-only"], &image_result());
    assert_eq!(out["route"], "text-only");
    assert_eq!(out["live"], out["stored"]);
}

#[test]
fn credential_free_uris_show_only_when_asked() {
    let out = project(&["--show-uris", "credential-free"], &image_result());
    assert!(
        out["stored"]
            .as_str()
            .unwrap()
            .contains("— demo://resource/dynamic/text/1 —")
    );
    let secret = json!({"content": [{"type": "resource_link", "uri": "https://a.example.com/x?token=s3cret", "name": "x"}]});
    let out = project(&["--show-uris", "credential-free"], &secret);
    assert!(!out.to_string().contains("s3cret"));
}

#[test]
fn an_empty_push_is_refused_and_a_full_one_is_a_user_message() {
    let empty = json!({"jsonrpc": "2.0", "id": 4, "method": "push/event",
        "params": {"featureSet": "f", "eventId": "e1", "payload": {"content": [{"type": "text", "text": "  "}]}}});
    let out = project(&["--lane", "push"], &empty);
    assert_eq!(out["live"], Value::Null);
    assert_eq!(
        out["refusal"],
        json!({"code": -32602, "message": "push event content is visibly empty", "data": {"field": "payload.content"}})
    );
    let full = json!({"featureSet": "f", "eventId": "e2", "payload": {"content": [
        {"type": "text", "text": "deploy finished"},
        {"type": "image", "mimeType": "image/png", "data": fixture_base64("static.gif")}]}});
    let out = project(&["--lane", "push"], &full);
    assert_eq!(out["live"][1]["source"]["media_type"], "image/gif");
    assert!(out.get("refusal").is_none());
}

#[test]
fn an_empty_channel_message_is_refused_alone() {
    let incoming = json!({"messages": [{"channelId": "c", "messageId": "m1", "content": []}]});
    let out = project(&["--lane", "channel"], &incoming);
    assert_eq!(
        out["refusal"],
        json!({"accepted": false, "reason": "empty_content"})
    );
    let message = json!({"content": [{"type": "resource", "uri": "https://x.example.com/f?sig=1", "name": "f.txt"}]});
    let out = project(&["--lane", "channel"], &message);
    assert!(
        out["stored"]
            .as_str()
            .unwrap()
            .contains("attachment on channel message")
    );
}

#[test]
fn injections_take_strings_and_positions() {
    let answer = json!({"jsonrpc": "2.0", "id": 9, "result": {"contextInjections": [
        {"position": "system", "content": "Be brief."},
        {"position": "beforeUser", "content": [{"type": "image", "mimeType": "image/png", "data": fixture_base64("image.png")}]},
        {"position": "system", "content": [{"type": "audio", "mimeType": "audio/wav", "data": fixture_base64("tone.wav")}]}]}});
    let out = project(&["--lane", "injection-system"], &answer);
    assert_eq!(
        out["live"],
        "Be brief.\n[audio block not shown: the system prompt carries text only.]"
    );
    assert_eq!(out["stored"], out["live"]);
    let out = project(&["--lane", "injection-user"], &answer);
    assert_eq!(out["live"][0]["type"], "image");
    let out = project(
        &["--lane", "injection-user"],
        &json!({"content": "plain text injection"}),
    );
    assert_eq!(
        out["live"],
        json!([{"type": "text", "text": "plain text injection"}])
    );
}

#[test]
fn the_script_lane_gives_blocks_with_their_data() {
    let out = project(&["--lane", "script"], &image_result());
    assert_eq!(out["live"]["content"][1]["mimeType"], "image/png");
    assert_eq!(
        out["live"]["content"][1]["data"],
        fixture_base64("image.png")
    );
    let stored: Value = serde_json::from_str(out["stored"].as_str().unwrap()).unwrap();
    assert_eq!(stored, out["live"]);
}

#[test]
fn lone_surrogates_are_mended_and_said() {
    let output = mcpl(
        &["project"],
        br#"{"content": [{"type": "text", "text": "cut \ud83d here"}]}"#,
    );
    assert_eq!(output.status.code(), Some(0));
    let out: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(out["stored"], "cut \u{FFFD} here");
    assert!(
        out["diagnostics"][0]
            .as_str()
            .unwrap()
            .contains("surrogate")
    );
}

#[test]
fn the_stored_copy_of_3000_tiny_images_is_fitted_to_the_budget_too() {
    let dir = std::env::temp_dir().join(format!("mcpl-cli-stored-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let tiny = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg==";
    let blocks: Vec<Value> = (0..3000)
        .map(|_| json!({"type": "image", "mimeType": "image/png", "data": tiny}))
        .collect();
    let input = json!({"content": blocks});
    let out = project(
        &["--budget", "1000", "--spill-dir", dir.to_str().unwrap()],
        &input,
    );
    let live = out["estimated_tokens"].as_u64().unwrap();
    let stored = out["stored_estimated_tokens"].as_u64().unwrap();
    assert!(live <= 1000, "{live}");
    assert!(stored <= 1000, "{stored}");
    assert!(stored > 500, "the stored copy keeps what fits: {stored}");
    let text = out["stored"].as_str().unwrap();
    assert!(text.contains(" tokens omitted ("), "{text}");
    assert!(text.contains(out["spill"]["path"].as_str().unwrap()));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_result_over_budget_is_fitted_and_spilled() {
    let dir = std::env::temp_dir().join(format!("mcpl-cli-spill-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let big = json!({"content": [
        {"type": "text", "text": "a line of the log\n".repeat(2000)},
        {"type": "image", "mimeType": "image/png", "data": fixture_base64("image.png")},
        {"type": "text", "text": "the last line\n".repeat(3)},
    ]});
    let out = project(
        &["--budget", "300", "--spill-dir", dir.to_str().unwrap()],
        &big,
    );
    assert!(out["estimated_tokens"].as_u64().unwrap() <= 300, "{out}");
    let stored = out["stored"].as_str().unwrap();
    assert!(stored.contains(" tokens omitted ("), "{stored}");
    assert!(stored.contains("; the full result is in "), "{stored}");
    let spill = &out["spill"];
    let path = spill["path"].as_str().unwrap();
    assert!(stored.contains(path));
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains("the last line") && text.contains("a line of the log"));
    let attachments = spill["attachments"].as_array().unwrap();
    assert_eq!(attachments.len(), 1);
    assert_eq!(
        std::fs::read(attachments[0].as_str().unwrap()).unwrap(),
        mcpl_testkit::fixture("image.png")
    );
    // The image, small enough, stays in the live copy at its place at the end.
    let live = out["live"].as_array().unwrap();
    assert_eq!(live[live.len() - 2]["type"], "image");
    std::fs::remove_dir_all(&dir).unwrap();

    // Without a spill folder, a result over budget keeps its content and says why.
    let out = project(&["--budget", "300"], &big);
    assert!(out["estimated_tokens"].as_u64().unwrap() > 300);
    assert_eq!(out["spill"], Value::Null);
    assert!(
        out["diagnostics"]
            .to_string()
            .contains("no spill store is set")
    );
    assert!(!out["stored"].as_str().unwrap().contains("tokens omitted"));
}

#[rstest]
#[case(&["project"], "42", "mcpl: stdin: no tool-result content found")]
#[case(&["project", "--lane", "push"], "{\"x\": 1}", "mcpl: stdin: no push content found")]
#[case(&["project"], "{", "mcpl: stdin: not JSON")]
fn unusable_projections_exit_2_with_one_line(
    #[case] args: &[&str],
    #[case] input: &str,
    #[case] message: &str,
) {
    let output = mcpl(args, input.as_bytes());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.starts_with(message), "{stderr}");
    assert_eq!(stderr.lines().count(), 1);
}

#[rstest]
fn an_unknown_lane_or_route_exits_2(#[values("--lane", "--route")] option: &str) {
    let output = mcpl(&["project", option, "nowhere"], b"[]");
    assert_eq!(output.status.code(), Some(2));
}

/// Issue 13's cases through the built command, on every lane and route: a label holding the
/// signed uri with a NUL, a right-to-left override or a NEL inside; the uri in other spellings;
/// an unclaimed signed url; and `never` in upper case under `--show-uris credential-free`.
#[test]
fn no_spelling_of_a_secret_reaches_any_lane_or_route() {
    let signed = "https://files.example.com/reports/q3.pdf?token=SECRETTOKEN123";
    let mut blocks = vec![json!({"type": "resource_link", "uri": signed, "name": "report"})];
    for mark in ["\u{0}", "\u{202e}", "\u{85}"] {
        let spelled = signed.replace("token", &format!("tok{mark}en"));
        blocks.push(json!({"type": "resource_link", "uri": signed, "name": spelled}));
        blocks.push(json!({"type": "text", "text": format!("see {spelled}")}));
    }
    for spelled in [
        signed.replace('/', "\\/"),
        signed.replace('=', "\\u003d"),
        signed.to_uppercase(),
        signed.replace('?', "%3F"),
        "https://sig.example.com/o?X-Amz-Signature=SECRETTOKEN123".to_owned(),
    ] {
        blocks.push(json!({"type": "text", "text": format!("see {spelled}")}));
    }
    let plain = "https://files.example.com/reports/never.pdf";
    blocks.push(json!({"type": "resource", "uri": plain, "name": "n", "disposition": "NEVER"}));
    blocks.push(json!({"type": "resource_link", "uri": format!("{plain}/"), "name": "again"}));
    let input = json!({"content": blocks});
    for (lane, _) in mcpl_cli::project::Lane::ALL {
        for route in [
            "anthropic",
            "openai-chat",
            "openai-responses",
            "gemini",
            "text-only",
        ] {
            let out = project(
                &[
                    "--lane",
                    lane,
                    "--route",
                    route,
                    "--show-uris",
                    "credential-free",
                ],
                &input,
            );
            let shown = out.to_string().to_lowercase();
            assert!(!shown.contains("secrettoken123"), "{lane} {route}: {out}");
            assert!(!shown.contains("never.pdf"), "{lane} {route}: {out}");
        }
    }
}

/// Two uris used as keys of structured content keep their values, in the stored copy and in
/// the spill file, each under its own placeholder.
#[test]
fn uri_keys_keep_their_values_in_the_spill() {
    let dir = std::env::temp_dir().join(format!("mcpl-cli-keys-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (a, b) = (
        "https://files.example.com/a?token=ONE111",
        "https://files.example.com/b?token=TWO222",
    );
    let input = json!({
        "content": [
            {"type": "resource_link", "uri": a, "name": "a"},
            {"type": "resource_link", "uri": b, "name": "b"},
            {"type": "text", "text": "a long log line\n".repeat(800)},
        ],
        "structuredContent": {a: {"rows": 111}, b: {"rows": 222}},
    });
    let out = project(
        &["--budget", "300", "--spill-dir", dir.to_str().unwrap()],
        &input,
    );
    let spill = std::fs::read_to_string(out["spill"]["path"].as_str().unwrap()).unwrap();
    assert!(
        spill.contains(r#"{"[withheld link 1]":{"rows":111},"[withheld link 2]":{"rows":222}}"#),
        "{spill}"
    );
    assert!(!spill.contains("ONE111") && !spill.contains("TWO222"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A projection's JSON with each spill id (random) in it replaced by `ID`.
fn without_spill_ids(projection: &impl serde::Serialize) -> String {
    let text = serde_json::to_string(projection).unwrap();
    let prefix = mcpl_budget::SPILL_ID_PREFIX;
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find(prefix) {
        out.push_str(&rest[..at]);
        out.push_str("ID");
        let id = &rest[at + prefix.len()..];
        let len = id
            .bytes()
            .take(mcpl_budget::SPILL_ID_LENGTH)
            .take_while(u8::is_ascii_lowercase)
            .count();
        rest = &id[len..];
    }
    out.push_str(rest);
    out
}

/// A plain tool result is read straight from its bytes; the output is what the same bytes parsed
/// into a `Value` give, on every route, fitted to a budget that cuts and to one that does not,
/// spilled or not, for every lanes case, a result with lone surrogates and one with an image to
/// scale, which is scaled in the view (decision 0161). Copies that stand
/// without the view are priced, cut and spilled after it (`project_view_step`), as the command
/// does, and give the same output.
#[test]
fn a_result_read_from_bytes_projects_as_its_value_does() {
    use mcpl_cli::input::{fingerprint, parse_document};
    use mcpl_cli::project::{
        Lane, Request, project, project_owned, project_view, project_view_step, scale_view,
    };
    let cases = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../lanes/tests/cases");
    let mut inputs: Vec<Vec<u8>> = std::fs::read_dir(cases)
        .unwrap()
        .filter_map(|entry| std::fs::read(entry.unwrap().path().join("input.json")).ok())
        .map(|bytes| {
            let mut value: Value = serde_json::from_slice(&bytes).unwrap();
            mcpl_testkit::expand_fixtures(&mut value);
            serde_json::to_vec(&value).unwrap()
        })
        .collect();
    inputs.push(br#"{"content":[{"type":"text","text":"a\ud800b"}],"isError":true}"#.to_vec());
    inputs.push(image_result().to_string().into_bytes());
    let mut compared = 0;
    let mut scaled = 0;
    for bytes in &inputs {
        let (mended, replaced) = mcpl_classify::mend_lone_surrogates(bytes);
        let Ok(original) = mcpl_classify::ResultView::parse(&mended) else {
            continue;
        };
        if original.content.is_none() {
            continue;
        }
        let document = parse_document("stdin", bytes).unwrap();
        let spill = std::env::temp_dir().join(format!("mcpl-view-spill-{}", std::process::id()));
        for (route, budget, spill_dir) in mcpl_lanes::RouteId::ALL.into_iter().flat_map(|route| {
            [(40, None), (100_000, None), (40, Some(spill.clone()))]
                .map(|(budget, dir)| (route, budget, dir))
        }) {
            {
                let request = Request {
                    lane: Lane::ToolResult,
                    route,
                    budget,
                    spill_dir,
                    server: "demo".to_owned(),
                    uri_policy: mcpl_lanes::UriPolicy::Hidden,
                };
                let from_value = project(&document, &request).unwrap();
                // Scaling in place first gives the same projection.
                assert_eq!(
                    without_spill_ids(&project_owned(document.clone(), &request).unwrap()),
                    without_spill_ids(&from_value),
                    "{route:?} {budget}"
                );
                // The view's images are scaled where they stand (decision 0161).
                let mut view = original.clone();
                let is_object = bytes.trim_ascii_start().first() == Some(&b'{');
                let said = scale_view(&mut view, is_object, &request);
                if view != original {
                    // (A cut beside a spill's longer notice may leave the scaling's out.)
                    assert!(
                        request.spill_dir.is_some()
                            || serde_json::to_string(&from_value)
                                .unwrap()
                                .contains("[image above scaled from "),
                        "{route:?}"
                    );
                    scaled += 1;
                }
                let from_bytes =
                    project_view(&view, fingerprint(bytes), replaced, said.clone(), &request)
                        .unwrap();
                assert_eq!(
                    without_spill_ids(&from_bytes),
                    without_spill_ids(&from_value),
                    "{route:?} {budget}"
                );
                let step = project_view_step(&view, fingerprint(bytes), replaced, said, &request);
                assert_eq!(
                    without_spill_ids(&step.finish(&request)),
                    without_spill_ids(&from_value),
                    "{route:?} {budget}"
                );
                compared += 1;
            }
        }
    }
    let _ = std::fs::remove_dir_all(
        std::env::temp_dir().join(format!("mcpl-view-spill-{}", std::process::id())),
    );
    assert!(compared > 100, "{compared}");
    // The large image of `image_result` is scaled on every image route.
    assert!(scaled > 0, "{scaled}");
}

/// `mcpl project` gives its parsed document up to `project_owned`, which scales a tool result's
/// images in place: the output is `project`'s, for a plain result, one inside a JSON-RPC
/// response, and another lane.
#[test]
fn scaling_in_place_projects_as_scaling_a_copy_does() {
    use base64::Engine as _;
    use mcpl_cli::input::parse_document;
    use mcpl_cli::project::{Lane, Request, project, project_owned};
    // A PNG grown past Anthropic's 5 MiB per image.
    let png = base64::engine::general_purpose::STANDARD
        .encode(mcpl_testkit::grown_png("image.png", 6 * 1024 * 1024));
    let result = json!({"content": [
        {"type": "text", "text": "The dashboard:"},
        {"type": "image", "mimeType": "image/png", "data": png},
    ], "isError": false});
    let wrapped = json!({"jsonrpc": "2.0", "id": 1, "result": result});
    let push = json!({"eventId": "e1", "payload": {"content": result["content"]}});
    for (lane, input) in [
        (Lane::ToolResult, result.clone()),
        (Lane::ToolResult, wrapped),
        (Lane::Push, push),
    ] {
        let document = parse_document("stdin", input.to_string().as_bytes()).unwrap();
        let request = Request {
            lane,
            route: mcpl_lanes::RouteId::Anthropic,
            budget: 100_000,
            spill_dir: None,
            server: "demo".to_owned(),
            uri_policy: mcpl_lanes::UriPolicy::Hidden,
        };
        let expected = serde_json::to_string(&project(&document, &request).unwrap()).unwrap();
        assert!(expected.contains("[image above scaled from "), "{lane:?}");
        let owned = serde_json::to_string(&project_owned(document, &request).unwrap()).unwrap();
        assert_eq!(owned, expected);
    }
}

#[test]
fn push_and_channel_images_over_a_limit_are_scaled_as_run_scales_them() {
    use base64::Engine as _;
    // A PNG grown past Anthropic's 5 MiB per image.
    let png = base64::engine::general_purpose::STANDARD
        .encode(mcpl_testkit::grown_png("image.png", 6 * 1024 * 1024));
    let blocks = json!([
        {"type": "text", "text": "The dashboard:"},
        {"type": "image", "mimeType": "image/png", "data": png},
    ]);
    let push = json!({"eventId": "e1", "payload": {"content": blocks}});
    let channel = json!({"messages": [{"messageId": "m1", "content": blocks}]});
    for (lane, input) in [("push", push), ("channel", channel)] {
        let out = project(&["--lane", lane], &input);
        let notice = "[image above scaled from 16×12 px, ~6.0MB to 16×12 px, ";
        let stored = out["stored"].as_str().unwrap();
        assert!(
            stored.starts_with("The dashboard:\n[image: image/png, "),
            "{lane}: {stored}"
        );
        assert!(stored.contains(notice), "{lane}: {stored}");
        assert!(
            stored.ends_with("its base64 was over 5242880 characters]"),
            "{lane}: {stored}"
        );
        // The image goes natively, scaled, with the same line after it.
        let live = out["live"].as_array().unwrap();
        assert_eq!(live[1]["type"], "image", "{lane}");
        assert!(live[1]["source"]["data"].as_str().unwrap().len() < 1_000);
        assert!(
            live[2]["text"].as_str().unwrap().starts_with(notice),
            "{lane}"
        );
    }
}
