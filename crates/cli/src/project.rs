//! `mcpl project`: one lane's projection of one input, as the contract in `docs/cli.md` says.

use std::borrow::Cow;

use mcpl_budget::{
    Bound, Fitted, LocalSpillStore, PricedRoute, Pricer, SpillStore, fit_detached, fit_tool_result,
    fit_tool_result_copies,
};
use mcpl_classify::ResultView;
use mcpl_encode::Encoder;
use mcpl_encode::conversation::ToolOutput;
use mcpl_host::mcpl::{INVALID_PARAMS, PUSH_CONTENT_FIELD, push_refusal_error};
use mcpl_lanes::{
    ChannelRefusal, DetachedCopies, ImageLedger, MessageView, Projector, PushRefusal, Registry,
    RouteId, ServerName, ToolResult, UriPolicy,
};
use serde::Serialize;
use serde_json::{Value, json};

use crate::input::Document;

/// The lanes `--lane` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// A tool result's live and stored copies.
    ToolResult,
    /// A push event's content.
    Push,
    /// A channel message's content.
    Channel,
    /// A system-position injection.
    InjectionSystem,
    /// A `beforeUser` or `afterUser` injection.
    InjectionUser,
    /// A script's view of a tool result.
    Script,
}

impl Lane {
    /// Every lane, with the name `--lane` takes.
    pub const ALL: [(&'static str, Lane); 6] = [
        ("tool-result", Lane::ToolResult),
        ("push", Lane::Push),
        ("channel", Lane::Channel),
        ("injection-system", Lane::InjectionSystem),
        ("injection-user", Lane::InjectionUser),
        ("script", Lane::Script),
    ];

    /// The lane's name.
    pub fn name(self) -> &'static str {
        Lane::ALL
            .iter()
            .find(|(_, lane)| *lane == self)
            .map_or("tool-result", |(name, _)| name)
    }
}

/// What `mcpl project` was asked to do.
#[derive(Debug, Clone)]
pub struct Request {
    /// The lane.
    pub lane: Lane,
    /// The route.
    pub route: RouteId,
    /// The tool-result budget in estimated tokens.
    pub budget: u64,
    /// Where a result over budget would be spilled.
    pub spill_dir: Option<std::path::PathBuf>,
    /// The delivering server's name.
    pub server: String,
    /// Whether credential-free uris may be shown.
    pub uri_policy: UriPolicy,
}

/// The command's output object.
#[derive(Debug, Clone, Serialize)]
pub struct Projection {
    /// The lane's name.
    pub lane: &'static str,
    /// The route's name.
    pub route: &'static str,
    /// Exactly what the route's API takes at that place.
    pub live: Value,
    /// A user message's content, where the route moves images out of a tool result.
    pub follow_up: Value,
    /// The stored copy, or the text the lane keeps in history.
    pub stored: String,
    /// The live copy's price on this route, in estimated tokens.
    pub estimated_tokens: u64,
    /// The stored copy's price, in estimated tokens: what every later request carries. On the
    /// tool-result lane it is fitted to the budget as the live copy is.
    pub stored_estimated_tokens: u64,
    /// The spill file and its attachments, when the result was cut.
    pub spill: Value,
    /// What the command noticed or could not do, one line each.
    pub diagnostics: Vec<String>,
    /// When the lane refused the content: the answer the host sends the server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refusal: Option<Value>,
}

/// Why a projection cannot be made from this input.
#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    /// A document this lane cannot find its content in.
    #[error("{source_name}: no {lane} content found: {found}")]
    UnknownShape {
        /// Where the input came from.
        source_name: String,
        /// The lane's name.
        lane: &'static str,
        /// What the document held instead.
        found: String,
    },
}

/// Projects a document on the requested lane and route.
pub fn project(document: &Document, request: &Request) -> Result<Projection, ProjectError> {
    project_scaled(document, request, None)
}

/// [`project`] for a caller that gives the document up: a tool result's images over a limit are
/// scaled in place first, so each one's old base64 is freed as soon as its scaled one replaces
/// it rather than held to the end beside a scaled copy of the result. The same output.
pub fn project_owned(
    mut document: Document,
    request: &Request,
) -> Result<Projection, ProjectError> {
    if request.lane != Lane::ToolResult {
        return project(&document, request);
    }
    // The body `unwrap_jsonrpc` gives, mutably.
    let key = document.value.get("jsonrpc").and_then(|_| {
        ["result", "params"]
            .into_iter()
            .find(|key| document.value.get(key).is_some())
    });
    let body = match key {
        Some(key) => document.value.get_mut(key),
        None => Some(&mut document.value),
    };
    let mut diagnostics = Vec::new();
    if let Some(body) = body {
        let priced = PricedRoute::of(request.route);
        let fit = mcpl_scale::Fit::for_route(&priced.lanes, &request.route.request_limits());
        mcpl_scale::Scaler::default().scale_result_in_place(
            body,
            &priced.lanes,
            fit,
            &mut diagnostics,
        );
    }
    let (projecting, output) = project_scaled_step(&document, request, Some(diagnostics))?;
    // The result, its images scaled, is freed before the output is encoded.
    drop(document);
    Ok(projecting.finish(request, output))
}

/// [`project`], its tool result's images already scaled when `scaled` holds what scaling said.
fn project_scaled(
    document: &Document,
    request: &Request,
    scaled: Option<Vec<String>>,
) -> Result<Projection, ProjectError> {
    let (projecting, output) = project_scaled_step(document, request, scaled)?;
    Ok(projecting.finish(request, output))
}

/// [`project_scaled`] up to encoding, so that a caller that owns the document frees it first.
fn project_scaled_step(
    document: &Document,
    request: &Request,
    scaled: Option<Vec<String>>,
) -> Result<(Projecting, LaneOutput), ProjectError> {
    let source = Source {
        fingerprint: document.fingerprint,
        lone_surrogates_replaced: document.lone_surrogates_replaced,
    };
    let mut projecting = Projecting::new(&source, request);
    let output = projecting.with(request, |projector, pricer, diagnostics| {
        let unknown = |lane: Lane| ProjectError::UnknownShape {
            source_name: document.source_name.clone(),
            lane: lane.name(),
            found: crate::input::describe_shape(&document.value),
        };
        lane_output(
            &document.value,
            request,
            projector,
            pricer,
            diagnostics,
            unknown,
            scaled,
        )
    })?;
    Ok((projecting, output))
}

/// Projects a tool result read straight from the input's bytes ([`ResultView`]) on the
/// tool-result lane: the same output as [`project`] on the same bytes parsed into a `Value`,
/// without a `Value` tree for the blocks, once [`scale_view`] has scaled the view's images and
/// `scaled` holds what it said. `fingerprint` and `lone_surrogates_replaced` are the input's,
/// as [`Document`] has them.
pub fn project_view(
    view: &ResultView<'_>,
    fingerprint: u64,
    lone_surrogates_replaced: usize,
    scaled: Vec<String>,
    request: &Request,
) -> Result<Projection, ProjectError> {
    let step = project_view_step(view, fingerprint, lone_surrogates_replaced, scaled, request);
    Ok(step.finish(request))
}

/// [`project_view`] in two steps, so that a caller can free the view and the bytes it borrows
/// between them: this one projects the copies; when they stand without the view
/// ([`ToolResultCopies::detach`]), pricing, cutting and spilling them waits for
/// [`ViewStep::finish`], else it is done here. A result of many small blocks is then held once,
/// as its stored copy, while it is priced, cut and spilled.
///
/// [`ToolResultCopies::detach`]: mcpl_lanes::ToolResultCopies::detach
pub fn project_view_step(
    view: &ResultView<'_>,
    fingerprint: u64,
    lone_surrogates_replaced: usize,
    mut scaled: Vec<String>,
    request: &Request,
) -> ViewStep {
    let source = Source {
        fingerprint,
        lone_surrogates_replaced,
    };
    let mut projecting = Projecting::new(&source, request);
    let step = projecting.with(request, |projector, pricer, diagnostics| {
        // What scaling said comes first, as on the `Value` path.
        diagnostics.append(&mut scaled);
        let result = ToolResult::from_view(view);
        let copies = projector.tool_result(&result);
        match copies.detach(&result) {
            Ok(detached) => Step::Detached(detached),
            Err(copies) => Step::Output(Box::new(fitted_output(
                request,
                pricer,
                diagnostics,
                |store| {
                    fit_tool_result_copies(
                        projector,
                        &result,
                        copies,
                        pricer,
                        request.budget,
                        store,
                    )
                },
            ))),
        }
    });
    ViewStep { projecting, step }
}

/// What [`project_view_step`] made: borrows nothing of the view.
pub struct ViewStep {
    projecting: Projecting,
    step: Step,
}

enum Step {
    /// The lane's output, made whole.
    Output(Box<LaneOutput>),
    /// Copies to price, cut and spill.
    Detached(DetachedCopies),
}

impl ViewStep {
    /// The projection: the detached copies priced, cut and spilled, when they were.
    pub fn finish(mut self, request: &Request) -> Projection {
        let output = match self.step {
            Step::Output(output) => *output,
            Step::Detached(copies) => {
                self.projecting
                    .with(request, |projector, pricer, diagnostics| {
                        fitted_output(request, pricer, diagnostics, |store| {
                            fit_detached(projector, copies, pricer, request.budget, store)
                        })
                    })
            }
        };
        self.projecting.finish(request, output)
    }
}

/// Scales the images of a tool result read from bytes that `mcpl run` would scale on the
/// request's route, where they stand in the view, as [`project`] scales the same result's
/// `Value` (decision 0161). `is_object` says whether the bytes were an object (an array's
/// images are not scaled). What scaling said, for [`project_view`].
pub fn scale_view(view: &mut ResultView<'_>, is_object: bool, request: &Request) -> Vec<String> {
    let priced = PricedRoute::of(request.route);
    let fit = mcpl_scale::Fit::for_route(&priced.lanes, &request.route.request_limits());
    let mut diagnostics = Vec::new();
    mcpl_scale::Scaler::default().scale_result_view(
        view,
        is_object,
        &priced.lanes,
        fit,
        &mut diagnostics,
    );
    diagnostics
}

/// What the input a projection is made from contributes besides its content.
struct Source {
    fingerprint: u64,
    lone_surrogates_replaced: usize,
}

/// What a lane made: the live copy and the follow-up message, the stored copy, the live copy's
/// price, and the spill.
struct LaneOutput {
    shown: Shown,
    stored: String,
    tokens: u64,
    spill: Value,
    refusal: Option<Value>,
}

/// The live copy and the follow-up message, encoded for the route, or a tool result's output
/// still to encode: it is encoded last, once what it was made from is freed (a scaled image's
/// base64 is then held twice at most, as the output and as its encoding).
enum Shown {
    Encoded { live: Value, follow_up: Value },
    Tool(ToolOutput),
}

type Lane3 = (Value, String, u64);

/// A projection being made: what the route prices, the registry and ledger the input seeds, and
/// the diagnostics so far. A lane runs in one or more steps through [`Projecting::with`].
struct Projecting {
    priced: &'static PricedRoute,
    registry: Registry,
    ledger: ImageLedger,
    server: ServerName,
    diagnostics: Vec<String>,
}

impl Projecting {
    fn new(source: &Source, request: &Request) -> Projecting {
        let mut diagnostics = Vec::new();
        if source.lone_surrogates_replaced > 0 {
            diagnostics.push(format!(
                "{} lone UTF-16 surrogate escape(s) in the input became U+FFFD",
                source.lone_surrogates_replaced
            ));
        }
        Projecting {
            priced: PricedRoute::of(request.route),
            // The same input gives the same ids and refs, so the command's output repeats
            // exactly.
            registry: Registry::with_seed(source.fingerprint),
            ledger: ImageLedger::with_seed(source.fingerprint.rotate_left(17)),
            server: ServerName::new(request.server.clone()),
            diagnostics,
        }
    }

    /// Runs one step of a lane with the projection's projector and pricer.
    fn with<T>(
        &mut self,
        request: &Request,
        step: impl FnOnce(&mut Projector<'_>, Pricer<'_>, &mut Vec<String>) -> T,
    ) -> T {
        let pricer = Pricer::new(&Bound, self.priced);
        let mut projector = Projector::new(
            &mut self.registry,
            &mut self.ledger,
            &self.priced.lanes,
            &self.server,
            request.uri_policy,
        );
        step(&mut projector, pricer, &mut self.diagnostics)
    }

    fn finish(self, request: &Request, output: LaneOutput) -> Projection {
        let Projecting {
            priced,
            registry,
            ledger,
            diagnostics,
            ..
        } = self;
        // The ledger holds each image shown; it is not read again.
        drop((registry, ledger));
        let (live, follow_up) = match output.shown {
            Shown::Encoded { live, follow_up } => (live, follow_up),
            Shown::Tool(output) => {
                let encoder = Encoder::new(request.route);
                let live = encoder.tool_result(&output);
                let follow_up = encoder.follow_up(std::slice::from_ref(&output));
                (live, follow_up)
            }
        };
        let pricer = Pricer::new(&Bound, priced);
        let stored_tokens = text_tokens(pricer, &output.stored);
        Projection {
            lane: request.lane.name(),
            route: priced.lanes.name(),
            live,
            follow_up,
            stored: output.stored,
            estimated_tokens: output.tokens,
            stored_estimated_tokens: stored_tokens,
            spill: output.spill,
            diagnostics,
            refusal: output.refusal,
        }
    }
}

/// A tool result fitted to the budget (spilled first when a folder is given), both copies
/// encoded for the route.
fn tool_result_output(
    result: &ToolResult<'_>,
    request: &Request,
    projector: &mut Projector<'_>,
    pricer: Pricer<'_>,
    diagnostics: &mut Vec<String>,
) -> LaneOutput {
    fitted_output(request, pricer, diagnostics, |store| {
        fit_tool_result(projector, result, pricer, request.budget, store)
    })
}

/// The lane's output of a tool result `fit` fits to the budget, given the spill store when a
/// folder is given.
fn fitted_output<'a>(
    request: &Request,
    pricer: Pricer<'_>,
    diagnostics: &mut Vec<String>,
    fit: impl FnOnce(Option<&mut dyn SpillStore>) -> Fitted<'a>,
) -> LaneOutput {
    let mut store = match &request.spill_dir {
        Some(dir) => match LocalSpillStore::new(dir) {
            Ok(store) => Some(store),
            Err(error) => {
                diagnostics.push(error.to_string());
                None
            }
        },
        None => None,
    };
    let fitted = fit(store.as_mut().map(|s| s as &mut dyn SpillStore));
    diagnostics.extend(fitted.diagnostics.iter().cloned());
    if fitted.copies.is_error {
        diagnostics.push("the server marked this result an error (isError)".to_owned());
    }
    let spill = fitted.spill.as_ref().map_or(
        Value::Null,
        |s| json!({"path": s.path, "attachments": s.attachments}),
    );
    let tokens = fitted
        .price
        .unwrap_or_else(|| text_tokens(pricer, &fitted.copies.stored));
    // `mcpl project` projects a result without a call: it answers `call_1` to `tool`.
    let output = ToolOutput::from_copies("call_1", "tool", &fitted.copies);
    LaneOutput {
        shown: Shown::Tool(output),
        stored: fitted.copies.stored.into_owned(),
        tokens,
        spill,
        refusal: None,
    }
}

fn lane_output(
    document: &Value,
    request: &Request,
    projector: &mut Projector<'_>,
    pricer: Pricer<'_>,
    diagnostics: &mut Vec<String>,
    unknown: impl Fn(Lane) -> ProjectError,
    scaled: Option<Vec<String>>,
) -> Result<LaneOutput, ProjectError> {
    let body = unwrap_jsonrpc(document);
    let mut refusal = None;
    let plain = |(live, stored, tokens): Lane3, refusal| LaneOutput {
        shown: Shown::Encoded {
            live,
            follow_up: Value::Null,
        },
        stored,
        tokens,
        spill: Value::Null,
        refusal,
    };
    let output: Lane3 = match request.lane {
        Lane::ToolResult => {
            let result = tool_result_value(body).ok_or_else(|| unknown(Lane::ToolResult))?;
            // Images over a per-image limit are scaled as `mcpl run` scales them by default
            // (unless `project_owned` scaled them in place already).
            let scaled = match scaled {
                Some(said) => {
                    diagnostics.extend(said);
                    None
                }
                None => {
                    let priced = PricedRoute::of(request.route);
                    let fit =
                        mcpl_scale::Fit::for_route(&priced.lanes, &request.route.request_limits());
                    mcpl_scale::Scaler::default().scale_result(
                        result,
                        &priced.lanes,
                        fit,
                        diagnostics,
                    )
                }
            };
            let result = scaled.as_ref().unwrap_or(result);
            let read = mcpl_lanes::ResultView::of_value(result);
            return Ok(tool_result_output(
                &ToolResult::from_view(&read),
                request,
                projector,
                pricer,
                diagnostics,
            ));
        }
        Lane::Push => {
            let content = push_content(body).ok_or_else(|| unknown(Lane::Push))?;
            let content = scale_message(content, request, diagnostics);
            match projector.push(&content) {
                Ok(view) => message_output(pricer, view),
                Err(PushRefusal) => {
                    diagnostics.push(format!(
                        "push event refused: {} (JSON-RPC {INVALID_PARAMS}, data.field {PUSH_CONTENT_FIELD})",
                        PushRefusal::MESSAGE,
                    ));
                    let error = push_refusal_error();
                    refusal = Some(json!({
                        "code": error.code,
                        "message": error.message,
                        "data": error.data,
                    }));
                    (Value::Null, String::new(), 0)
                }
            }
        }
        Lane::Channel => {
            let content = channel_content(body).ok_or_else(|| unknown(Lane::Channel))?;
            let content = scale_message(content, request, diagnostics);
            match projector.channel_message(&content) {
                Ok(view) => message_output(pricer, view),
                Err(ChannelRefusal) => {
                    diagnostics.push(format!(
                        "channel message refused: its content is visibly empty ({})",
                        ChannelRefusal::REASON
                    ));
                    refusal = Some(json!({"accepted": false, "reason": ChannelRefusal::REASON}));
                    (Value::Null, String::new(), 0)
                }
            }
        }
        Lane::InjectionUser => {
            let content = injection_content(body, &["beforeUser", "afterUser"])
                .ok_or_else(|| unknown(Lane::InjectionUser))?;
            message_output(pricer, projector.injection_user(&content))
        }
        Lane::InjectionSystem => {
            let content = injection_content(body, &["system"])
                .ok_or_else(|| unknown(Lane::InjectionSystem))?;
            let text = projector.injection_system(&content);
            let tokens = text_tokens(pricer, &text);
            (Value::String(text.clone()), text, tokens)
        }
        Lane::Script => {
            let result = tool_result_value(body).ok_or_else(|| unknown(Lane::Script))?;
            let view = projector.script_result(result);
            let text = serde_json::to_string(&view).unwrap_or_default();
            let tokens = text_tokens(pricer, &text);
            (view, text, tokens)
        }
    };
    Ok(plain(output, refusal))
}

/// A push event's or channel message's content with its images over a per-image limit scaled,
/// as `mcpl run` scales them by default.
fn scale_message<'v>(
    content: Cow<'v, Value>,
    request: &Request,
    diagnostics: &mut Vec<String>,
) -> Cow<'v, Value> {
    let priced = PricedRoute::of(request.route);
    let fit = mcpl_scale::Fit::for_route(&priced.lanes, &request.route.request_limits());
    match mcpl_scale::Scaler::default().scale_message(&content, &priced.lanes, fit, diagnostics) {
        Some(scaled) => Cow::Owned(scaled),
        None => content,
    }
}

fn message_output(pricer: Pricer<'_>, view: MessageView<'_>) -> (Value, String, u64) {
    // A part the route cannot price (none that the built routes send) counts as its history text.
    let tokens = pricer
        .parts(&view.parts)
        .unwrap_or_else(|_| text_tokens(pricer, &view.stored));
    (
        Encoder::new(pricer.route.id()).message_parts(&view.parts),
        view.stored,
        tokens,
    )
}

fn text_tokens(pricer: Pricer<'_>, text: &str) -> u64 {
    pricer.text.count(text)
}

/// A JSON-RPC message's `result` or `params`; any other document as it is.
fn unwrap_jsonrpc(document: &Value) -> &Value {
    if document.get("jsonrpc").is_some() {
        document
            .get("result")
            .or_else(|| document.get("params"))
            .unwrap_or(document)
    } else {
        document
    }
}

/// A tool result: a content array, a `CallToolResult`, or a single block.
fn tool_result_value(body: &Value) -> Option<&Value> {
    match body {
        Value::Array(_) => Some(body),
        Value::Object(object)
            if object.contains_key("content") || mcpl_lanes::is_content_block(body) =>
        {
            Some(body)
        }
        _ => None,
    }
}

/// A push event's content: `payload.content` of its params, an object's `content`, a content
/// array, or a single block.
fn push_content(body: &Value) -> Option<Cow<'_, Value>> {
    match body.get("payload") {
        Some(payload) => payload.get("content").map(Cow::Borrowed),
        None => message_content(body),
    }
}

/// A channel message's content: its `content`, or the one message of `channels/incoming` params.
fn channel_content(body: &Value) -> Option<Cow<'_, Value>> {
    match body.get("messages").and_then(Value::as_array) {
        Some(messages) if messages.len() == 1 => messages[0].get("content").map(Cow::Borrowed),
        Some(_) => None,
        None => message_content(body),
    }
}

fn message_content(body: &Value) -> Option<Cow<'_, Value>> {
    match body {
        Value::Array(_) => Some(Cow::Borrowed(body)),
        _ if mcpl_lanes::is_content_block(body) => Some(Cow::Owned(json!([body]))),
        Value::Object(object) => object.get("content").map(Cow::Borrowed),
        _ => None,
    }
}

/// An injection's content: an object's `content` (a string or an array), the injections of a
/// `context/beforeInference` answer at the given positions joined in order, a content array, or
/// a plain string.
fn injection_content<'v>(body: &'v Value, positions: &[&str]) -> Option<Cow<'v, Value>> {
    if let Some(injections) = body.get("contextInjections").and_then(Value::as_array) {
        let mut blocks = Vec::new();
        for injection in injections {
            let position = injection.get("position").and_then(Value::as_str);
            if !position.is_some_and(|p| positions.contains(&p)) {
                continue;
            }
            match injection.get("content") {
                Some(Value::String(text)) => blocks.push(json!({"type": "text", "text": text})),
                Some(Value::Array(items)) => blocks.extend(items.iter().cloned()),
                _ => {}
            }
        }
        return Some(Cow::Owned(Value::Array(blocks)));
    }
    match body {
        Value::String(_) => Some(Cow::Borrowed(body)),
        _ => message_content(body),
    }
}
