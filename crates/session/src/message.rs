//! The message lanes: push events, channel messages and context injections, each held to its
//! server's message budget.

use mcpl_budget::{CutError, SpillStore, cut_with, write_text_spill};
use mcpl_encode::LimitTexts;
use mcpl_encode::conversation::Content;
use mcpl_lanes::{
    ChannelRefusal, LiveCopy, MessageView, PushRefusal, ServerName, ToolResultCopies,
};
use serde_json::Value;

use crate::{Session, Spill};

/// A server's message as the model gets it: a user message's content.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ShownMessage {
    /// The message's content encoded for the route.
    pub content: Value,
    /// Its parts, as a conversation kept with `mcpl-encode` holds them.
    pub parts: Vec<Content>,
    /// The text history keeps in its place after this round.
    pub stored: String,
    /// What happened on the way, one line each, for the host's log.
    pub diagnostics: Vec<String>,
}

/// A text held to a budget it was over: what goes instead, and where the whole is.
#[derive(Debug)]
#[non_exhaustive]
pub struct HeldText {
    /// The head, the notice and the tail; why not, when not even the notice fits.
    pub text: Result<String, CutError>,
    /// The spill holding the whole, or why it could not be written.
    pub spill: Result<Spill, String>,
}

impl Session {
    /// A push event's `payload.content` from `server`, as the model gets it, or its refusal
    /// when it is visibly empty (a host answers the server with JSON-RPC -32602).
    pub fn push_event(
        &mut self,
        server: &str,
        content: &Value,
    ) -> Result<ShownMessage, PushRefusal> {
        self.message(server, content, "push event", |projector, content| {
            projector.push(content)
        })
    }

    /// A channel message's `content` from `server`, as the model gets it, or its refusal when
    /// it is visibly empty.
    pub fn channel_message(
        &mut self,
        server: &str,
        content: &Value,
    ) -> Result<ShownMessage, ChannelRefusal> {
        self.message(server, content, "channel message", |projector, content| {
            projector.channel_message(content)
        })
    }

    /// A `beforeUser` or `afterUser` context injection's `content` from `server`.
    pub fn injection(&mut self, server: &str, content: &Value) -> ShownMessage {
        let shown: Result<_, std::convert::Infallible> =
            self.message(server, content, "injected", |projector, content| {
                Ok(projector.injection_user(content))
            });
        match shown {
            Ok(shown) => shown,
        }
    }

    /// A `system` context injection's `content` from `server`: the text a host appends to its
    /// system prompt, held to the server's message budget.
    pub fn system_injection(&mut self, server: &str, content: &Value) -> String {
        let name = ServerName::new(server);
        let text = self.projector(&name).injection_system(content);
        let mut text = text;
        let budget = self.held_budget(self.policy(server).message_budget, &mut Vec::new());
        self.hold_system_text(&mut text, budget);
        text
    }

    /// Holds a `system` injection's text to `budget`: over it, the text is spilled whole and
    /// cut head and tail, or, when not even the notice fits, one line says it was left out.
    /// True when it was over.
    pub fn hold_system_text(&mut self, text: &mut String, budget: u64) -> bool {
        if self.pricer().text.count_within(text, budget).is_some() {
            return false;
        }
        let held = self.hold_text(text, budget, "the whole");
        *text = match (held.text, held.spill) {
            (Ok(cut), _) => cut,
            (Err(_), Ok(spill)) => format!("[left out: {}]", spill.reference()),
            (Err(_), Err(_)) => "[left out: over its budget]".to_owned(),
        };
        true
    }

    /// Scales a message's images, projects it on its lane and holds it to the message budget.
    fn message<R>(
        &mut self,
        server: &str,
        content: &Value,
        what: &str,
        lane: impl for<'v> FnOnce(
            &mut mcpl_lanes::Projector<'_>,
            &'v Value,
        ) -> Result<MessageView<'v>, R>,
    ) -> Result<ShownMessage, R> {
        let mut diagnostics = Vec::new();
        let scaled = self.scale_message(content, &mut diagnostics);
        let content = scaled.as_ref().unwrap_or(content);
        let name = ServerName::new(server);
        let view = lane(&mut self.projector(&name), content)?;
        let mut parts: Vec<Content> = view.parts.iter().map(Content::from_part).collect();
        let mut stored = view.stored;
        let budget = self.held_budget(self.policy(server).message_budget, &mut diagnostics);
        diagnostics.extend(self.hold_message(&mut parts, &mut stored, budget, what));
        Ok(ShownMessage {
            content: self.encoder.message_content(&parts),
            parts,
            stored,
            diagnostics,
        })
    }

    /// A message's content with its images over the route's limits scaled; `None` when scaling
    /// is off or no image needed it. What could not be scaled is said in `diagnostics`.
    pub fn scale_message(&self, content: &Value, diagnostics: &mut Vec<String>) -> Option<Value> {
        self.scaling.and_then(|fit| {
            self.scaler
                .scale_message(content, &self.route.lanes, fit, diagnostics)
        })
    }

    /// Holds a server's message (`what`: a push event, a channel message, an injection) to
    /// `budget`, and says what it did. Its parts go as they are when they fit with each image,
    /// document and audio clip priced at the most the request's limits can make of it, so
    /// whatever the limits later do, the message stays within the budget. Else its stored text
    /// goes (each image as its placeholder) when that fits; else the stored text is spilled
    /// whole and cut head and tail, as a result is. When the spill cannot be written the text
    /// is cut all the same, and its notice says the whole could not be kept.
    pub fn hold_message(
        &mut self,
        parts: &mut Vec<Content>,
        stored: &mut String,
        budget: u64,
        what: &str,
    ) -> Vec<String> {
        let pricer = self.pricer();
        // Each text is read only until the budget is spent.
        let live_fits = parts
            .iter()
            .try_fold(0u64, |spent, part| {
                let left = budget.checked_sub(spent)?;
                let price = match part {
                    Content::Text(text) => pricer.text.count_within(text, left)?,
                    native => LimitTexts::ceiling(pricer, native)?,
                };
                (price <= left).then_some(spent + price)
            })
            .is_some();
        let mut diagnostics = Vec::new();
        if pricer.text.count_within(stored, budget).is_some() {
            if !live_fits {
                // The live copy alone was over: its images go as their placeholders.
                *parts = vec![Content::Text(stored.clone())];
                diagnostics.push(format!(
                    "the {what} message's images were over its budget of {budget} estimated tokens: sent as their placeholders"
                ));
            }
            return diagnostics;
        }
        let held = self.hold_text(stored, budget, "the whole message");
        let text = match held.text {
            Ok(text) => {
                diagnostics.push(match &held.spill {
                    Ok(spill) => format!(
                        "the {what} message was over its budget of {budget} estimated tokens: cut, and spilled as {}",
                        spill.id
                    ),
                    Err(error) => format!(
                        "the {what} message was over its budget of {budget} estimated tokens: cut, and its spill could not be written ({error})"
                    ),
                });
                text
            }
            Err(error) => {
                // Not even the notice fits: the message is left out, and said to be.
                diagnostics.push(format!("the {what} message was left out: {error}"));
                match &held.spill {
                    Ok(spill) => format!(
                        "[a {what} message was left out: {error}; {}]",
                        spill.reference()
                    ),
                    Err(_) => format!("[a {what} message was left out: {error}]"),
                }
            }
        };
        *parts = vec![Content::Text(text.clone())];
        *stored = text;
        diagnostics
    }

    /// `text`, over `budget`, spilled whole (a text spill `read_result` reads back) and cut head
    /// and tail to it, the notice naming the spill, or saying the whole could not be kept when
    /// the spill could not be written (`unsaved` names what was not kept).
    pub fn hold_text(&mut self, text: &str, budget: u64, unsaved: &str) -> HeldText {
        let copies =
            ToolResultCopies::new(text.into(), Default::default(), LiveCopy::Stored, false);
        let pricer = self.pricer();
        let spill = match &mut self.spill {
            Ok(store) => write_text_spill(text, &mut **store as &mut dyn SpillStore)
                .map_err(|e| e.to_string()),
            Err(why) => Err(why.clone()),
        };
        let cut = match &spill {
            Ok(spill) => cut_with(&copies, pricer, budget, &|o| spill.omission_notice(o)),
            Err(_) => cut_with(&copies, pricer, budget, &|o| {
                format!("[… {o}; {unsaved} could not be kept]")
            }),
        };
        HeldText {
            text: cut.map(|cut| {
                cut.map_or_else(|| text.to_owned(), |(fitted, _)| fitted.stored.into_owned())
            }),
            spill,
        }
    }
}
