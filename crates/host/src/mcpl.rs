//! MCPL on an MCP connection: what the host answers when a server sends `push/event` or
//! `channels/incoming`, and how it reads `context/beforeInference` answers.
//!
//! [`Lanes`] holds the conversation's [`Session`] (the registry, the image ledger, the route,
//! each server's policy) and the messages waiting for the next inference, and implements
//! [`ServerRequests`]:
//!
//! - `push/event`: visibly empty content is refused with JSON-RPC -32602 and
//!   `data.field = "payload.content"`; only then is the `eventId` checked, so a refused event
//!   never burns its id; a repeated id is acknowledged (`accepted: true, reason: "duplicate"`)
//!   and not shown twice; otherwise the content is projected on the push lane, its references
//!   registered with the delivering server, and the message queued for the next inference.
//!   An image over the route's per-image limits is scaled to fit first ([`Session::scaling`]),
//!   as a tool result's is.
//! - `channels/incoming`: one result per message; an empty message is refused alone with
//!   `reason: "empty_content"` while its siblings are accepted.
//!
//! Injections from `context/beforeInference` are read by [`Lanes::injections`].
//!
//! Nothing a server sends grows without bound: at most [`MAX_QUEUED_PER_SERVER`] messages per
//! server wait for the next inference (the rest are dropped and counted, and the model is told
//! how many with [`unseen_events`]), at most [`MAX_SEEN_EVENTS`] event ids per server are kept
//! for spotting repeats, and at most [`MAX_ANSWERED`] answers are kept for the report.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use mcpl_lanes::{
    ChannelRefusal, MessageView, Projector, PushRefusal, ServerName, is_visibly_empty,
};
use mcpl_session::Session;
use serde_json::{Value, json};

use mcpl_client::{RpcError, ServerRequests};
use mcpl_encode::conversation::Content;

/// JSON-RPC's "invalid params" code: the answer to a push event whose content is visibly empty
/// and to a `channels/incoming` without a messages array.
pub const INVALID_PARAMS: i64 = -32602;

/// The `data.field` of a push event's refusal: where the visibly empty content was.
pub const PUSH_CONTENT_FIELD: &str = "payload.content";

/// The JSON-RPC error a push event the push lane refuses ([`PushRefusal`]) is answered with.
pub fn push_refusal_error() -> RpcError {
    RpcError {
        code: INVALID_PARAMS,
        message: PushRefusal::MESSAGE.to_owned(),
        data: Some(json!({"field": PUSH_CONTENT_FIELD})),
    }
}

/// The most messages (push events and channel messages) one server may have waiting for the
/// next inference; more are dropped and counted.
pub const MAX_QUEUED_PER_SERVER: usize = 64;
/// The most event ids kept per server for spotting repeated `eventId`s; the oldest go first.
pub const MAX_SEEN_EVENTS: usize = 4096;
/// The most answers [`Lanes::answered`] keeps.
pub const MAX_ANSWERED: usize = 1024;

/// What the model is told when messages from `server` were dropped before it saw them.
pub fn unseen_events(server: &str, count: u64) -> String {
    format!(
        "[mcpl: {count} push events and channel messages from server {server} were not shown: \
         more than {MAX_QUEUED_PER_SERVER} were waiting]"
    )
}

/// The event ids seen lately, per server, with the oldest forgotten first.
#[derive(Debug, Default)]
struct SeenEvents {
    by_server: HashMap<String, (HashSet<String>, VecDeque<String>)>,
}

impl SeenEvents {
    /// Records `id` for `server`; false when it was seen already.
    fn insert(&mut self, server: &str, id: &str) -> bool {
        let (ids, order) = self.by_server.entry(server.to_owned()).or_default();
        if ids.contains(id) {
            return false;
        }
        if order.len() >= MAX_SEEN_EVENTS
            && let Some(oldest) = order.pop_front()
        {
            ids.remove(&oldest);
        }
        ids.insert(id.to_owned());
        order.push_back(id.to_owned());
        true
    }
}

/// Where a queued message came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A `push/event`.
    PushEvent,
    /// A `channels/incoming` message.
    ChannelMessage,
}

impl Origin {
    /// The lane's name, as `mcpl project --lane` spells it.
    pub fn lane(self) -> &'static str {
        match self {
            Origin::PushEvent => "push",
            Origin::ChannelMessage => "channel",
        }
    }
}

/// A message a server sent that waits for the next inference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queued {
    /// The server that sent it.
    pub server: String,
    /// How it came.
    pub origin: Origin,
    /// Its id: the push event's `eventId`, or the channel message's `messageId`.
    pub id: Option<String>,
    /// What the model sees on the round it lands.
    pub parts: Vec<Content>,
    /// What history keeps.
    pub stored: String,
    /// What happened on the way (an image that could not be scaled), one line each.
    pub diagnostics: Vec<String>,
}

/// What one server request came to, for the host's report.
#[derive(Debug, Clone, PartialEq)]
pub struct Answered {
    /// The server that asked.
    pub server: String,
    /// The method.
    pub method: String,
    /// The answer: a result, or an error object.
    pub answer: Result<Value, Value>,
}

/// Injections one round carries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Injections {
    /// Text appended to the system prompt, one entry per injection.
    pub system: Vec<String>,
    /// Parts placed before the latest user message's content.
    pub before_user: Vec<Content>,
    /// Parts placed after it.
    pub after_user: Vec<Content>,
    /// Each `beforeUser` and `afterUser` injection on its own, in order: its parts (which
    /// `before_user` and `after_user` hold, joined) and the text it stands for. A host holds
    /// each to its server's message budget, as a push event is held.
    pub user: Vec<UserInjection>,
    /// What could not be used, one line each.
    pub diagnostics: Vec<String>,
}

/// One `beforeUser` or `afterUser` injection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserInjection {
    /// Whether it goes after the latest user message's content, else before it.
    pub after: bool,
    /// What the model sees.
    pub parts: Vec<Content>,
    /// Its text, each image, document or audio clip as its placeholder line.
    pub stored: String,
}

impl Injections {
    /// Sets `before_user` and `after_user` from `user`, as each injection is now.
    pub fn place_user(&mut self) {
        self.before_user.clear();
        self.after_user.clear();
        for injection in &self.user {
            let side = if injection.after {
                &mut self.after_user
            } else {
                &mut self.before_user
            };
            side.extend(injection.parts.iter().cloned());
        }
    }
}

/// The host's lane state, shared by every server.
#[derive(Debug)]
pub struct Lanes {
    /// The conversation's session: the registry, the image ledger, each server's policy, the
    /// route, the scaler, the spill store and the fetcher.
    pub session: Session,
    seen_events: SeenEvents,
    /// Messages waiting for the next inference, in arrival order.
    pub queued: Vec<Queued>,
    /// Messages dropped per server because too many were waiting, since the last
    /// [`Lanes::take_dropped`].
    dropped: BTreeMap<String, u64>,
    /// The first [`MAX_ANSWERED`] server requests answered, in order.
    pub answered: Vec<Answered>,
    deferred: Vec<(String, Accepted<Value>)>,
}

/// Content a server request delivered and the host accepted: borrowed from the request while it
/// is projected at once, owned while it waits for the registry.
#[derive(Debug, Clone, PartialEq)]
struct Accepted<C> {
    origin: Origin,
    id: Option<String>,
    content: C,
}

/// The host's answers while the registry is lent to the fetcher: the same answers [`Lanes`]
/// gives (they depend only on emptiness and event ids), with the accepted content kept for
/// [`Lanes::project_deferred`].
#[derive(Debug)]
pub struct Deferring<'l> {
    seen_events: &'l mut SeenEvents,
    deferred: &'l mut Vec<(String, Accepted<Value>)>,
    dropped: &'l mut BTreeMap<String, u64>,
    answered: &'l mut Vec<Answered>,
}

impl ServerRequests for Deferring<'_> {
    fn answer(&mut self, server: &str, method: &str, params: &Value) -> Result<Value, RpcError> {
        let (answer, accepted) = verdict(self.seen_events, server, method, params);
        for a in accepted {
            let waiting = self.deferred.iter().filter(|(s, _)| s == server).count();
            if waiting >= MAX_QUEUED_PER_SERVER {
                *self.dropped.entry(server.to_owned()).or_default() += 1;
                continue;
            }
            let owned = Accepted {
                origin: a.origin,
                id: a.id,
                content: a.content.clone(),
            };
            self.deferred.push((server.to_owned(), owned));
        }
        record(self.answered, server, method, &answer);
        answer
    }
}

fn record(
    answered: &mut Vec<Answered>,
    server: &str,
    method: &str,
    answer: &Result<Value, RpcError>,
) {
    if answered.len() >= MAX_ANSWERED {
        return;
    }
    answered.push(Answered {
        server: server.to_owned(),
        method: method.to_owned(),
        answer: answer.clone().map_err(|error| {
            let mut object = json!({"code": error.code, "message": error.message});
            if let Some(data) = error.data {
                object["data"] = data;
            }
            object
        }),
    });
}

/// The answer to one server request, and the content it accepts. A visibly empty push is
/// refused before its `eventId` is looked at, so a refusal never burns the id; a repeated id is
/// acknowledged as a duplicate and accepts nothing new; each channel message is answered alone.
fn verdict<'p>(
    seen_events: &mut SeenEvents,
    server: &str,
    method: &str,
    params: &'p Value,
) -> (Result<Value, RpcError>, Vec<Accepted<&'p Value>>) {
    match method {
        "push/event" => {
            let Some(content) = params.pointer("/payload/content") else {
                return (Err(push_refusal_error()), Vec::new());
            };
            if is_visibly_empty(content) {
                return (Err(push_refusal_error()), Vec::new());
            }
            let event_id = params
                .get("eventId")
                .and_then(Value::as_str)
                .map(str::to_owned);
            if let Some(id) = &event_id
                && !seen_events.insert(server, id)
            {
                return (
                    Ok(json!({"accepted": true, "reason": "duplicate"})),
                    Vec::new(),
                );
            }
            let accepted = Accepted {
                origin: Origin::PushEvent,
                id: event_id,
                content,
            };
            (Ok(json!({"accepted": true})), vec![accepted])
        }
        "channels/incoming" => {
            let Some(messages) = params.get("messages").and_then(Value::as_array) else {
                let error = RpcError {
                    code: INVALID_PARAMS,
                    message: "channels/incoming needs a messages array".to_owned(),
                    data: Some(json!({"field": "messages"})),
                };
                return (Err(error), Vec::new());
            };
            let mut results = Vec::with_capacity(messages.len());
            let mut accepted = Vec::new();
            for message in messages {
                let message_id = message.get("messageId").cloned().unwrap_or(Value::Null);
                let content = message.get("content").unwrap_or(&Value::Null);
                if is_visibly_empty(content) {
                    results.push(json!({
                        "messageId": message_id,
                        "accepted": false,
                        "reason": ChannelRefusal::REASON,
                    }));
                } else {
                    accepted.push(Accepted {
                        origin: Origin::ChannelMessage,
                        id: message_id.as_str().map(str::to_owned),
                        content,
                    });
                    results.push(json!({"messageId": message_id, "accepted": true}));
                }
            }
            (Ok(json!({"results": results})), accepted)
        }
        "ping" => (Ok(json!({})), Vec::new()),
        _ => (Err(RpcError::method_not_found(method)), Vec::new()),
    }
}

impl Lanes {
    /// Lane state around a session.
    pub fn new(session: Session) -> Lanes {
        Lanes {
            session,
            seen_events: SeenEvents::default(),
            queued: Vec::new(),
            dropped: BTreeMap::new(),
            answered: Vec::new(),
            deferred: Vec::new(),
        }
    }

    /// A projector for content `server` delivered.
    pub fn projector<'h>(&'h mut self, server: &'h ServerName) -> Projector<'h> {
        self.session.projector(server)
    }

    /// Answers a server request, and projects what it accepted at once.
    fn answer_and_project(
        &mut self,
        server: &str,
        method: &str,
        params: &Value,
    ) -> Result<Value, RpcError> {
        let (answer, accepted) = verdict(&mut self.seen_events, server, method, params);
        for accepted in accepted {
            self.project_accepted(server, accepted);
        }
        answer
    }

    /// Projects what a request accepted on its lane (registering its references with `server`)
    /// and queues it for the next inference.
    fn project_accepted(&mut self, server: &str, accepted: Accepted<&Value>) {
        if self.queue_full(server) {
            *self.dropped.entry(server.to_owned()).or_default() += 1;
            return;
        }
        let name = ServerName::new(server);
        // Images over the route's per-image limits are scaled before the lane reads them, as a
        // tool result's are, so both copies say so; one that cannot be decoded is left to the
        // lane, which shows its marker.
        let mut diagnostics = Vec::new();
        let scaled = self
            .session
            .scale_message(accepted.content, &mut diagnostics);
        let content = scaled.as_ref().unwrap_or(accepted.content);
        let view = match accepted.origin {
            Origin::PushEvent => self.projector(&name).push(content).ok(),
            Origin::ChannelMessage => self.projector(&name).channel_message(content).ok(),
        };
        if let Some(view) = view {
            let what = match accepted.origin {
                Origin::PushEvent => "push event",
                Origin::ChannelMessage => "channel message",
            };
            let diagnostics = diagnostics
                .into_iter()
                .map(|line| format!("{what} from {server}: {line}"))
                .collect();
            self.queue(server, accepted.origin, accepted.id, view, diagnostics);
        }
    }

    /// Splits the lane state for a reference fetch: the session for the fetcher, and a host
    /// that answers the servers' requests meanwhile exactly as [`Lanes`] would, keeping what it
    /// accepted until [`Lanes::project_deferred`] (projection needs the session).
    pub fn split_for_fetch(&mut self) -> (&mut Session, Deferring<'_>) {
        (
            &mut self.session,
            Deferring {
                seen_events: &mut self.seen_events,
                deferred: &mut self.deferred,
                dropped: &mut self.dropped,
                answered: &mut self.answered,
            },
        )
    }

    /// Projects and queues what was accepted while the registry was lent out.
    pub fn project_deferred(&mut self) {
        for (server, accepted) in std::mem::take(&mut self.deferred) {
            let borrowed = Accepted {
                origin: accepted.origin,
                id: accepted.id,
                content: &accepted.content,
            };
            self.project_accepted(&server, borrowed);
        }
    }

    /// Messages dropped per server since the last call, because too many were waiting.
    pub fn take_dropped(&mut self) -> BTreeMap<String, u64> {
        std::mem::take(&mut self.dropped)
    }

    /// Whether `server` has as many messages waiting as it may; what it sends next is dropped.
    fn queue_full(&self, server: &str) -> bool {
        self.queued.iter().filter(|q| q.server == server).count() >= MAX_QUEUED_PER_SERVER
    }

    fn queue(
        &mut self,
        server: &str,
        origin: Origin,
        id: Option<String>,
        view: MessageView<'_>,
        diagnostics: Vec<String>,
    ) {
        self.queued.push(Queued {
            server: server.to_owned(),
            origin,
            id,
            parts: view.parts.iter().map(Content::from_part).collect(),
            stored: view.stored,
            diagnostics,
        });
    }

    /// The injections in one server's `context/beforeInference` answer, projected on their
    /// lanes and registered with that server. An injection this host cannot place is skipped
    /// with a diagnostic; the others are kept.
    pub fn injections(&mut self, server: &str, answer: &Value, into: &mut Injections) {
        let Some(list) = answer.get("contextInjections").and_then(Value::as_array) else {
            if !answer.is_null() && answer.get("contextInjections").is_some() {
                into.diagnostics.push(format!(
                    "{server}: contextInjections is not an array; no injection used"
                ));
            }
            return;
        };
        let name = ServerName::new(server);
        for (index, injection) in list.iter().enumerate() {
            let content = injection.get("content").unwrap_or(&Value::Null);
            match injection.get("position").and_then(Value::as_str) {
                Some("system") => {
                    let text = self.projector(&name).injection_system(content);
                    if !text.is_empty() {
                        into.system.push(text);
                    }
                }
                Some(position @ ("beforeUser" | "afterUser")) => {
                    // Images over the route's limits are scaled before the lane reads them, as
                    // a push event's are, so they are priced as they are sent.
                    let mut lines = Vec::new();
                    let scaled = self.session.scale_message(content, &mut lines);
                    into.diagnostics.extend(lines.into_iter().map(|line| {
                        format!("{server}: contextInjections[{index}]: {line}")
                    }));
                    let content = scaled.as_ref().unwrap_or(content);
                    let view = self.projector(&name).injection_user(content);
                    into.user.push(UserInjection {
                        after: position == "afterUser",
                        parts: view.parts.iter().map(Content::from_part).collect(),
                        stored: view.stored,
                    });
                }
                other => into.diagnostics.push(format!(
                    "{server}: contextInjections[{index}] has position {}; positions are system, beforeUser, afterUser",
                    other.map_or_else(|| "(none)".to_owned(), |p| format!("{p:?}"))
                )),
            }
        }
        into.place_user();
    }
}

impl ServerRequests for Lanes {
    fn answer(&mut self, server: &str, method: &str, params: &Value) -> Result<Value, RpcError> {
        let answer = self.answer_and_project(server, method, params);
        record(&mut self.answered, server, method, &answer);
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_are_remembered_up_to_a_bound() {
        let mut seen = SeenEvents::default();
        assert!(seen.insert("s", "first"));
        assert!(!seen.insert("s", "first"));
        assert!(seen.insert("t", "first"), "ids are per server");
        for n in 0..MAX_SEEN_EVENTS {
            seen.insert("s", &n.to_string());
        }
        assert!(seen.insert("s", "first"), "the oldest was forgotten");
        assert_eq!(seen.by_server["s"].0.len(), MAX_SEEN_EVENTS);
    }
}
