//! What an agent host keeps for one conversation with MCP and MCPL servers, and every lane's
//! content as the model should see it: fitted to its budget, images scaled to the route's
//! limits, secrets and hidden uris withheld, and encoded for the route.
//!
//! One [`Session`] per conversation. It owns the reference registry, the image ledger (with the
//! uris the session hides), each server's [`ServerPolicy`], the route, the pricer and its
//! correction, the scaler, the spill store and the fetcher. A tool result takes three names:
//!
//! ```
//! use mcpl_session::{RouteId, Session};
//! use serde_json::json;
//!
//! let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg==";
//! let result = json!({"content": [
//!     {"type": "text", "text": "The chart:"},
//!     {"type": "image", "data": png, "mimeType": "image/png"},
//! ]});
//!
//! let mut session = Session::new(RouteId::Anthropic);
//! let shown = session.tool_result("charts", &result);
//! assert_eq!(shown.content, json!([
//!     {"type": "text", "text": "The chart:"},
//!     {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}},
//! ]));
//! assert!(shown.tokens <= mcpl_session::DEFAULT_BUDGET);
//! ```
//!
//! `shown.content` is what goes in the `content` of Anthropic's `tool_result` block (the
//! content of an OpenAI tool message, the `output` of a `function_call_output`, the parts of a
//! Gemini `functionResponse`). A host that keeps a conversation with `mcpl-encode` takes
//! [`Shown::answering`] for its history. Two routes need the call too: a Chat Completions tool
//! message is text only, so a result's images go in one user message after the turn's tool
//! messages (`session.encoder().follow_up(&outputs)`), and a Gemini `functionResponse` names
//! its function (`session.encoder().tool_result(&shown.answering(id, name))`).
//!
//! Messages take one method each: [`Session::push_event`], [`Session::channel_message`],
//! [`Session::injection`] and [`Session::system_injection`]. The host tools are
//! [`Session::host_tools`] and [`Session::call_host_tool`]; the skills servers list
//! ([`Session::add_skills`]) are loaded on demand by [`Session::skill_tool`], `load_skill`.
//!
//! A host on rmcp, the official Rust MCP SDK, takes the `rmcp` feature: its module `rmcp`
//! reads tool results whole, past what rmcp's types drop, and converts rmcp's typed results
//! (`examples/rmcp-host/` in the repository is a host built on it).
//!
//! Nothing here starts a runtime or blocks on one: a session is plain data and blocking calls
//! (the spill store's writes, the fetcher's reads), safe to use and drop inside any tokio
//! runtime. A host on tokio calls it from `spawn_blocking` when a store or fetch may be slow.

mod declared;
mod host_tools;
mod message;
#[cfg(feature = "rmcp")]
pub mod rmcp;
mod skills;
pub mod toolset;

use std::collections::{BTreeMap, HashMap};

use mcpl_budget::{Bound, Correction, Fitted, Pricer, fit_tool_result};
use mcpl_lanes::{ImageLedger, Projector, Registry, ResultView, ServerName, ToolResult};
use mcpl_scale::{Fit, Scaler};
use serde_json::Value;

pub use declared::{
    Audience, MAX_RESULT_SIZE_KEY, SCHEMA_ERRORS, TOKENS_PER_CHAR, chars_to_tokens, schema_errors,
};
pub use host_tools::{
    FETCH_REFERENCE, FETCH_REFERENCE_DESCRIPTION, FETCHED_READ_LIMIT, READ_RESULT,
    READ_RESULT_DESCRIPTION, READ_RESULT_MIN_TOKENS,
};
// What a host sets a session up with, so a host needs this crate alone for it.
pub use mcpl_budget::{
    DEFAULT_BUDGET, DEFAULT_MESSAGE_BUDGET, DEFAULT_TOOL_BUDGET_CEILING, LocalSpillStore,
    PricedRoute, Spill, SpillError, SpillNotice, SpillStore,
};
pub use mcpl_encode::Encoder;
pub use mcpl_encode::conversation::{ToolOutput, ToolSpec};
pub use mcpl_fetch::{FetchOptions, Fetcher, NoResources, ResourceReader, Saved};
pub use mcpl_lanes::{RouteId, UriPolicy};
pub use message::{HeldText, ShownMessage};
pub use skills::{
    LOAD_SKILL, MAX_SKILL_FILE_BYTES, MAX_SKILL_FILES, MAX_SKILLS, SKILL_INDEX_CHARS,
};
pub use toolset::{SEARCH_TOOLS, SEARCH_TOOLS_DESCRIPTION};

/// How the session treats one server's content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerPolicy {
    /// The most estimated tokens one tool result may cost.
    pub budget: u64,
    /// The most estimated tokens one push event, channel message or injection may cost.
    pub message_budget: u64,
    /// Whether the server's credential-free uris may be shown.
    pub uri_policy: UriPolicy,
    /// Whether credential-shaped urls no block claims are withheld too (on by default).
    pub withhold_credential_urls: bool,
}

impl Default for ServerPolicy {
    /// [`DEFAULT_BUDGET`], [`DEFAULT_MESSAGE_BUDGET`], and every uri hidden.
    fn default() -> ServerPolicy {
        ServerPolicy {
            budget: DEFAULT_BUDGET,
            message_budget: DEFAULT_MESSAGE_BUDGET,
            uri_policy: UriPolicy::Hidden,
            withhold_credential_urls: true,
        }
    }
}

impl ServerPolicy {
    /// This policy with a tool result budget of `tokens`.
    #[must_use]
    pub fn with_budget(mut self, tokens: u64) -> ServerPolicy {
        self.budget = tokens;
        self
    }

    /// This policy with a message budget of `tokens`.
    #[must_use]
    pub fn with_message_budget(mut self, tokens: u64) -> ServerPolicy {
        self.message_budget = tokens;
        self
    }

    /// This policy withholding, or not, the credential-shaped urls no block claims.
    #[must_use]
    pub fn with_credential_urls_withheld(mut self, on: bool) -> ServerPolicy {
        self.withhold_credential_urls = on;
        self
    }

    /// This policy with `policy` for the server's uris.
    #[must_use]
    pub fn with_uri_policy(mut self, policy: UriPolicy) -> ServerPolicy {
        self.uri_policy = policy;
        self
    }
}

/// A tool result as the model gets it, and what the host should know about it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Shown {
    /// The result encoded for the route, for its place in the request: the `content` of an
    /// Anthropic `tool_result` block, and so on. On Gemini a `functionResponse` names its call:
    /// encode [`Shown::answering`] with [`Session::encoder`] there.
    pub content: Value,
    /// Both copies: the live one for this round, the stored one for history. Its call id and
    /// name are empty; [`Shown::answering`] sets them.
    pub output: ToolOutput,
    /// What it costs, in estimated tokens: the live copy's price, or the stored copy's.
    pub tokens: u64,
    /// Where the whole is when the result was cut.
    pub spill: Option<Spill>,
    /// Why the whole could not be kept, when it was cut and could not be spilled.
    pub unsaved: Option<String>,
    /// For `fetch_reference`: where the host saved the payload. The model is not told.
    pub saved: Option<Saved>,
    /// What happened on the way, one line each, for the host's log.
    pub diagnostics: Vec<String>,
    /// The blocks meant for the user alone, as the user is shown them, redacted and bounded
    /// (`annotations.audience` of `["user"]`; see [`Session::declared_result`]).
    pub for_user: Vec<String>,
}

impl Shown {
    /// Whether the model reads it as an error.
    pub fn is_error(&self) -> bool {
        self.output.is_error
    }

    /// The result answering the call `call_id` to the tool the model knows as `name`, as a
    /// conversation's history keeps it.
    pub fn answering(&self, call_id: &str, name: &str) -> ToolOutput {
        let mut output = self.output.clone();
        call_id.clone_into(&mut output.call_id);
        name.clone_into(&mut output.name);
        output
    }
}

/// One conversation's state, and every lane through it. See the crate's documentation.
pub struct Session {
    route: &'static PricedRoute,
    encoder: Encoder,
    registry: Registry,
    ledger: ImageLedger,
    default_policy: ServerPolicy,
    policies: BTreeMap<String, ServerPolicy>,
    scaling: Option<Fit>,
    scaler: Scaler,
    correction: Correction,
    spill: Result<Box<dyn SpillStore + Send>, String>,
    /// The budget of the server each spill came from: a `read_result` part is never given more.
    spill_budgets: HashMap<String, u64>,
    fetcher: Result<Fetcher, String>,
    /// What the servers declared of their tools, and the tools' own budgets.
    declarations: declared::Declarations,
    /// The skills the servers listed, loaded on demand by `load_skill`.
    skills: skills::Skills,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("route", &self.route.id())
            .field("default_policy", &self.default_policy)
            .field("policies", &self.policies)
            .field("scaling", &self.scaling)
            .field("correction", &self.correction)
            .field("spill", &self.spill.as_ref().map(|_| "store"))
            .field("fetcher", &self.fetcher.as_ref().map(Fetcher::folder))
            .finish_non_exhaustive()
    }
}

/// Why the session has no spill store until one is set.
const NO_SPILL_STORE: &str = "no spill store is set (Session::with_spill_store)";
/// Why the session has no fetcher until one is set.
const NO_FETCHER: &str = "no fetcher is set (Session::with_fetcher)";

impl Session {
    /// A session for the route `id`, priced as [`PricedRoute::of`] prices it, with every server
    /// on [`ServerPolicy::default`], images scaled to the route's limits, no spill store (a cut
    /// result says its whole could not be kept) and no fetcher.
    pub fn new(id: RouteId) -> Session {
        Session::for_route(PricedRoute::of(id))
    }

    /// A session for a priced route: a model's own image pricing, say.
    pub fn for_route(route: &'static PricedRoute) -> Session {
        let id = route.id();
        Session {
            route,
            encoder: Encoder::new(id),
            registry: Registry::new(),
            ledger: ImageLedger::new(),
            default_policy: ServerPolicy::default(),
            policies: BTreeMap::new(),
            scaling: Some(Fit::for_route(&route.lanes, &id.request_limits())),
            scaler: Scaler::default(),
            correction: Correction::NONE,
            spill: Err(NO_SPILL_STORE.to_owned()),
            spill_budgets: HashMap::new(),
            fetcher: Err(NO_FETCHER.to_owned()),
            declarations: declared::Declarations::default(),
            skills: skills::Skills::default(),
        }
    }

    /// This session with `store` keeping the whole of what is cut.
    #[must_use]
    pub fn with_spill_store(mut self, store: impl SpillStore + Send + 'static) -> Session {
        self.spill = Ok(Box::new(store));
        self
    }

    /// Sets the spill store, or why there is none (said in every cut result's diagnostics).
    pub fn set_spill_store(&mut self, store: Result<Box<dyn SpillStore + Send>, String>) {
        self.spill = store;
    }

    /// This session with `fetcher` fetching references: `fetch_reference` is offered, and
    /// small references are fetched as their results arrive.
    #[must_use]
    pub fn with_fetcher(mut self, fetcher: Fetcher) -> Session {
        self.fetcher = Ok(fetcher);
        self
    }

    /// Sets the fetcher, or why there is none (said by `fetch_reference`).
    pub fn set_fetcher(&mut self, fetcher: Result<Fetcher, String>) {
        self.fetcher = fetcher;
    }

    /// This session with `policy` for every server not given its own.
    #[must_use]
    pub fn with_default_policy(mut self, policy: ServerPolicy) -> Session {
        self.default_policy = policy;
        self
    }

    /// This session with `policy` for the server named `server`.
    #[must_use]
    pub fn with_server(mut self, server: &str, policy: ServerPolicy) -> Session {
        self.set_server(server, policy);
        self
    }

    /// Sets the policy of the server named `server`.
    pub fn set_server(&mut self, server: &str, policy: ServerPolicy) {
        self.registry
            .hidden_mut()
            .set_scan(&ServerName::new(server), policy.withhold_credential_urls);
        self.policies.insert(server.to_owned(), policy);
    }

    /// This session with `encoder` writing what the model reads: a route's encoder with raised
    /// limits, say. Its route must be this session's.
    #[must_use]
    pub fn with_encoder(mut self, encoder: Encoder) -> Session {
        debug_assert_eq!(encoder.route().id(), self.route.id(), "the encoder's route");
        self.encoder = encoder;
        self
    }

    /// This session scaling images over `fit` before a lane reads them; `None` leaves every
    /// image as sent (one over the route's limits then goes as its marker).
    #[must_use]
    pub fn with_scaling(mut self, fit: Option<Fit>) -> Session {
        self.scaling = fit;
        self
    }

    /// Sets what images must fit to go natively; `None` turns scaling off.
    pub fn set_scaling(&mut self, fit: Option<Fit>) {
        self.scaling = fit;
    }

    /// This session with its registry and ledger: to go on with a conversation's references
    /// and images. The servers' credential scans set so far carry over.
    #[must_use]
    pub fn with_state(mut self, registry: Registry, ledger: ImageLedger) -> Session {
        self.registry = registry;
        self.ledger = ledger;
        for (server, policy) in &self.policies {
            self.registry.hidden_mut().set_scan(
                &ServerName::new(server.as_str()),
                policy.withhold_credential_urls,
            );
        }
        self
    }

    /// Takes a provider's count of a request: `reported` input tokens for one estimated at
    /// `estimated`. Later budgets are held so they hold by the provider's count too.
    pub fn observe_usage(&mut self, estimated: u64, reported: u64) {
        self.correction.observe(estimated, reported);
    }

    /// Sets the correction later budgets are held by.
    pub fn set_correction(&mut self, correction: Correction) {
        self.correction = correction;
    }

    /// The correction budgets are held by.
    pub fn correction(&self) -> Correction {
        self.correction
    }

    /// The priced route.
    pub fn route(&self) -> &'static PricedRoute {
        self.route
    }

    /// The encoder for the route.
    pub fn encoder(&self) -> Encoder {
        self.encoder
    }

    /// The pricer: text by [`Bound`], an upper bound of o200k, and media by the route.
    pub fn pricer(&self) -> Pricer<'static> {
        Pricer::new(&Bound, self.route)
    }

    /// The policy of the server named `server`.
    pub fn policy(&self, server: &str) -> ServerPolicy {
        self.policies
            .get(server)
            .copied()
            .unwrap_or(self.default_policy)
    }

    /// The reference registry.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The reference registry, to register or look up references.
    pub fn registry_mut(&mut self) -> &mut Registry {
        &mut self.registry
    }

    /// The image ledger.
    pub fn ledger(&self) -> &ImageLedger {
        &self.ledger
    }

    /// The spill store, or why there is none.
    pub fn spill_store(&mut self) -> Result<&mut (dyn SpillStore + Send), &str> {
        match &mut self.spill {
            Ok(store) => Ok(&mut **store),
            Err(why) => Err(why),
        }
    }

    /// The fetcher, or why there is none.
    pub fn fetcher(&mut self) -> Result<&mut Fetcher, &str> {
        match &mut self.fetcher {
            Ok(fetcher) => Ok(fetcher),
            Err(why) => Err(why),
        }
    }

    /// What images must fit to go natively; `None` when scaling is off.
    pub fn scaling(&self) -> Option<Fit> {
        self.scaling
    }

    /// A projector for content `server` delivered, under the server's uri policy: the lanes
    /// this session has no method for (a script's result, a server's own text).
    pub fn projector<'s>(&'s mut self, server: &'s ServerName) -> Projector<'s> {
        let uri_policy = self.policy(server.as_str()).uri_policy;
        Projector::new(
            &mut self.registry,
            &mut self.ledger,
            &self.route.lanes,
            server,
            uri_policy,
        )
    }

    /// A server's own words (an error message, say) as the model may read them: every secret
    /// and hidden uri withheld.
    pub fn server_text(&mut self, server: &str, text: &str) -> String {
        let name = ServerName::new(server);
        self.projector(&name).server_text(text)
    }

    /// A budget held by the provider's correction: what a result is fitted to so that it costs
    /// at most `budget` by the provider's count too. Said in `diagnostics` when it is less.
    pub fn held_budget(&self, budget: u64, diagnostics: &mut Vec<String>) -> u64 {
        let held = self.correction.budget(budget);
        if held < budget {
            let milli = self.correction.milli();
            diagnostics.push(format!(
                "fitted to {held} estimated tokens: the provider counts {}.{:03} times the estimate, so the budget of {budget} holds by its count",
                milli / 1000,
                milli % 1000
            ));
        }
        held
    }

    /// A tool result `server` sent, as the model gets it, within the server's budget.
    pub fn tool_result(&mut self, server: &str, result: &Value) -> Shown {
        let mut diagnostics = Vec::new();
        let budget = self.held_budget(self.policy(server).budget, &mut diagnostics);
        let mut shown = self.tool_result_within(server, result, budget);
        diagnostics.append(&mut shown.diagnostics);
        shown.diagnostics = diagnostics;
        shown
    }

    /// A tool result `server` sent, as the model gets it, within `budget` estimated tokens (the
    /// host's own: what is left of the context window, say). Images over the route's limits
    /// are scaled first; small references are fetched when a fetcher is set; the result is cut
    /// and its whole spilled when it is over.
    pub fn tool_result_within(&mut self, server: &str, result: &Value, budget: u64) -> Shown {
        let mut diagnostics = Vec::new();
        // Images over a per-image limit are scaled before anything reads the result, so the
        // lanes, the price and both copies see what is sent.
        let scaled = self.scaling.and_then(|fit| {
            self.scaler
                .scale_result(result, &self.route.lanes, fit, &mut diagnostics)
        });
        let result = scaled.as_ref().unwrap_or(result);
        // The one reader: the `Value`'s strings are borrowed, not copied (decision 0128).
        let read = ResultView::of_value(result);
        self.tool_result_read(server, &read, result.is_object(), budget, diagnostics)
    }

    /// A tool result `server` sent, as the JSON text of its `result` (the bytes a client read),
    /// within `budget`: what [`Session::tool_result_within`] gives for the same result parsed
    /// as a host reads messages (`mcpl_classify::parse_json_repaired`), read straight from the
    /// bytes without a `Value` (decision 0128). Its images over the route's limits are scaled
    /// where they stand in the view (decision 0161). A result that only a repair other than a
    /// lone surrogate's makes JSON takes the `Value` path. Fails only on bytes no repair makes
    /// JSON.
    pub fn tool_result_bytes_within(
        &mut self,
        server: &str,
        bytes: &[u8],
        budget: u64,
    ) -> Result<Shown, serde_json::Error> {
        let mut mended = Vec::new();
        if let Some((mut view, is_object)) = self.view_of(bytes, &mut mended) {
            let mut diagnostics = Vec::new();
            self.scale_view(&mut view, is_object, &mut diagnostics);
            return Ok(self.tool_result_read(server, &view, is_object, budget, diagnostics));
        }
        let (value, _) = mcpl_classify::parse_json_repaired(bytes)?;
        Ok(self.tool_result_within(server, &value, budget))
    }

    /// A result's bytes as the one reader reads them, and whether they are an object; `None`
    /// where the `Value` path must take them: bytes only a repair other than a lone
    /// surrogate's makes JSON. `mended` holds the bytes a lone surrogate was mended in.
    pub(crate) fn view_of<'b>(
        &self,
        bytes: &'b [u8],
        mended: &'b mut Vec<u8>,
    ) -> Option<(ResultView<'b>, bool)> {
        let (view, _) = mcpl_classify::parse_view_mending(bytes, mended).ok()?;
        let is_object = mcpl_classify::first_json_byte(bytes) == Some(b'{');
        Some((view, is_object))
    }

    /// Scales each image of a result read from bytes that is over the route's limits where it
    /// stands, followed by its notice: what [`Scaler::scale_result`] does to the same result's
    /// `Value` (decision 0161).
    pub(crate) fn scale_view(
        &self,
        view: &mut ResultView<'_>,
        is_object: bool,
        diagnostics: &mut Vec<String>,
    ) {
        if let Some(fit) = self.scaling {
            self.scaler
                .scale_result_view(view, is_object, &self.route.lanes, fit, diagnostics);
        }
    }

    /// A result as the one reader read it, through the lanes and the fit.
    pub(crate) fn tool_result_read(
        &mut self,
        server: &str,
        read: &ResultView<'_>,
        is_object: bool,
        budget: u64,
        mut diagnostics: Vec<String>,
    ) -> Shown {
        let parsed = ToolResult::from_view(read);
        let name = ServerName::new(server);
        if is_object {
            self.eager_fetch(&name, &parsed);
        }
        let mut shown = self.fit(&name, &parsed, budget, true);
        if let Some(spill) = &shown.spill {
            self.spill_budgets
                .insert(spill.id.as_str().to_owned(), self.policy(server).budget);
        }
        diagnostics.append(&mut shown.diagnostics);
        shown.diagnostics = diagnostics;
        shown
    }

    /// Projects and fits a parsed result on the tool-result lanes, spilling through the store
    /// when `spill` says so. Without a store a result over budget is cut all the same, and its
    /// notice says the whole could not be kept; without `spill` it is kept whole (a part read
    /// back from a spill, or a host tool's own words).
    fn fit(
        &mut self,
        server: &ServerName,
        parsed: &ToolResult<'_>,
        budget: u64,
        spill: bool,
    ) -> Shown {
        let pricer = self.pricer();
        let uri_policy = self.policy(server.as_str()).uri_policy;
        let mut projector = Projector::new(
            &mut self.registry,
            &mut self.ledger,
            &self.route.lanes,
            server,
            uri_policy,
        );
        let mut unavailable;
        let store = match (&mut self.spill, spill) {
            (_, false) => None,
            (Ok(store), true) => Some(&mut **store as &mut dyn SpillStore),
            (Err(why), true) => {
                unavailable = Unavailable(why.clone());
                Some(&mut unavailable as &mut dyn SpillStore)
            }
        };
        let fitted = fit_tool_result(&mut projector, parsed, pricer, budget, store);
        self.shown(fitted)
    }

    /// A fitted result, encoded for the route.
    fn shown(&self, fitted: Fitted<'_>) -> Shown {
        let tokens = fitted
            .price
            .unwrap_or_else(|| self.pricer().text.count(&fitted.copies.stored));
        let output = ToolOutput::from_copies("", "", &fitted.copies);
        Shown {
            content: self.encoder.tool_result(&output),
            output,
            tokens,
            spill: fitted.spill,
            unsaved: fitted.unsaved,
            saved: None,
            diagnostics: fitted.diagnostics,
            for_user: Vec::new(),
        }
    }

    /// Registers the references at the top of a result, and fetches the small ones at once so
    /// their stubs say they were saved. A failed call's references are neither.
    fn eager_fetch(&mut self, server: &ServerName, result: &ToolResult<'_>) {
        let Ok(fetcher) = &mut self.fetcher else {
            return;
        };
        if result.is_error {
            return;
        }
        let ids: Vec<_> = result
            .references()
            .map(|reference| self.registry.register(&reference, server).id.clone())
            .collect();
        if !ids.is_empty() {
            fetcher.eager(&mut self.registry, &ids);
        }
    }
}

/// The store a session without one spills to: every write fails with why there is none, so a
/// result over budget is cut all the same and says its whole could not be kept.
struct Unavailable(String);

impl Unavailable {
    fn error(&self, name: &str) -> mcpl_budget::SpillError {
        mcpl_budget::SpillError::Write {
            path: name.to_owned(),
            error: std::io::Error::other(self.0.clone()),
        }
    }
}

impl SpillStore for Unavailable {
    fn put(&mut self, name: &str, _bytes: &[u8]) -> Result<String, mcpl_budget::SpillError> {
        Err(self.error(name))
    }

    fn remove(&mut self, _name: &str) {}

    fn ready(&self) -> Result<(), mcpl_budget::SpillError> {
        Err(self.error("spill"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpl_classify::{BlockView, ContentView};

    #[test]
    fn a_session_can_move_to_another_thread() {
        fn sendable<T: Send>() {}
        sendable::<Session>();
    }

    #[test]
    fn an_image_to_scale_is_scaled_in_the_view_read_from_bytes() {
        use base64::Engine as _;
        // A PNG 2,000 px wide, over a fit of 1,568 px a side: the one reader reads its result,
        // and the image is scaled where it stands, its notice after it (decision 0161).
        let png = mcpl_testkit::SplitMix64(5).png(2_000, 3);
        let data = base64::engine::general_purpose::STANDARD.encode(&png);
        let bytes = format!(
            r#"{{"content":[{{"type":"text","text":"before"}},{{"type":"image","data":"{data}","mimeType":"image/png","_meta":{{"k":[1]}}}}]}}"#
        );
        let session =
            Session::new(RouteId::Anthropic).with_scaling(Some(Fit::new(1_568, 5_242_880)));
        let mut mended = Vec::new();
        let (mut view, is_object) = session
            .view_of(bytes.as_bytes(), &mut mended)
            .expect("the one reader reads a result with an image to scale");
        let mut diagnostics = Vec::new();
        session.scale_view(&mut view, is_object, &mut diagnostics);
        assert_eq!(diagnostics, Vec::<String>::new());
        let Some(ContentView::Blocks(blocks)) = &view.content else {
            panic!("the content is blocks: {view:?}");
        };
        assert_eq!(blocks.len(), 3, "the text, the image and its notice");
        let mcpl_classify::Block::InlineImage(media) = blocks[1].classify() else {
            panic!("the second block is an image: {:?}", blocks[1]);
        };
        let scaled = media.dimensions.expect("a PNG's size is read");
        assert_eq!((scaled.width, scaled.height), (1_568, 2));
        assert!(matches!(&blocks[2], BlockView::Text(notice) if notice.contains("scaled")));
        // A bare array is not scaled, as the `Value` path does not scale it.
        let array = format!(r#"[{{"type":"image","data":"{data}","mimeType":"image/png"}}]"#);
        let (mut view, is_object) = session
            .view_of(array.as_bytes(), &mut mended)
            .expect("an array reads");
        session.scale_view(&mut view, is_object, &mut diagnostics);
        assert!(matches!(&view.content, Some(ContentView::Blocks(blocks)) if blocks.len() == 1));
    }
}
