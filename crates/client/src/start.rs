//! Starting servers side by side, each within its own timeout, so a slow server delays nobody;
//! and listing a server's tools, and its skills when it offers the skills extension, page by
//! page, within bounds a hostile server cannot stretch.

use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Value, json};

use crate::{CallError, Connection, Launch, Limits, RpcError, ServerRequests};

/// The most `tools/list` pages read from one server.
pub const MAX_TOOL_PAGES: usize = 1000;
/// The most tools kept from one server.
pub const MAX_TOOLS: usize = 10_000;
/// The skills extension (SEP-2640): the client declares it, and lists the skills of a server
/// that declares it with `skills/list`.
pub const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";
/// The most `skills/list` pages read from one server.
pub const MAX_SKILL_PAGES: usize = 100;
/// The most skills kept from one server.
pub const MAX_LISTED_SKILLS: usize = 1000;

/// A server started: its connection, the tools it listed, and the error that ended its listing
/// early, if one did (the tools listed before it are kept).
#[derive(Debug)]
#[non_exhaustive]
pub struct Started {
    /// The connection.
    pub connection: Connection,
    /// The tools, as the server listed them.
    pub tools: Vec<Value>,
    /// Why the listing stopped early.
    pub listing_error: Option<CallError>,
    /// The skills it listed (`skills/list` entries, unchecked), when it offers the skills
    /// extension. A failed listing keeps the skills listed before it, and is logged.
    pub skills: Vec<Value>,
}

/// Starts each server on a thread of its own and lists its tools, each within its own
/// `limits.timeout`; the results come back in the launches' order. The servers' own requests
/// meanwhile are answered by `host`, one at a time.
pub fn start_all<H: ServerRequests + Send>(
    launches: &[(Launch, Limits)],
    host: &Mutex<H>,
) -> Vec<Result<Started, CallError>> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = launches
            .iter()
            .map(|(launch, limits)| {
                scope.spawn(move || {
                    let mut host = Locked(host);
                    let mut connection = Connection::start(launch, *limits, &mut host)?;
                    let (tools, listing_error) = connection.list_tools(limits.timeout, &mut host);
                    let mut skills = Vec::new();
                    if connection.offers_skills() {
                        let (listed, error) = connection.list_skills(limits.timeout, &mut host);
                        if let Some(error) = error {
                            tracing::warn!(server = %launch.name, %error, "skills/list failed");
                        }
                        skills = listed;
                    }
                    Ok(Started {
                        connection,
                        tools,
                        listing_error,
                        skills,
                    })
                })
            })
            .collect();
        handles
            .into_iter()
            .zip(launches)
            .map(|(handle, (launch, _))| {
                handle.join().unwrap_or_else(|_| {
                    Err(CallError::Http {
                        server: launch.name.clone(),
                        method: "initialize".to_owned(),
                        detail: "its start failed inside mcpl".to_owned(),
                    })
                })
            })
            .collect()
    })
}

/// A host shared by threads (a turn's calls to several servers, or servers starting side by
/// side): each request answered under the lock.
pub struct Locked<'h, H>(pub &'h Mutex<H>);

impl<H: ServerRequests> ServerRequests for Locked<'_, H> {
    fn answer(&mut self, server: &str, method: &str, params: &Value) -> Result<Value, RpcError> {
        let mut host = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        host.answer(server, method, params)
    }
}

impl Connection {
    /// Lists the server's tools page by page. A listing stops, keeping the tools listed so far,
    /// with a warning, when a `nextCursor` repeats, after [`MAX_TOOL_PAGES`] pages, or at
    /// [`MAX_TOOLS`] tools; a failed page ends it with the server's error.
    pub fn list_tools(
        &mut self,
        timeout: Duration,
        host: &mut dyn ServerRequests,
    ) -> (Vec<Value>, Option<CallError>) {
        self.list_pages(
            "tools/list",
            "tools",
            (MAX_TOOL_PAGES, MAX_TOOLS),
            timeout,
            host,
        )
    }

    /// Lists the server's skills page by page (`skills/list`), within [`MAX_SKILL_PAGES`] pages
    /// and [`MAX_LISTED_SKILLS`] skills, as [`Connection::list_tools`] lists tools.
    pub fn list_skills(
        &mut self,
        timeout: Duration,
        host: &mut dyn ServerRequests,
    ) -> (Vec<Value>, Option<CallError>) {
        let bounds = (MAX_SKILL_PAGES, MAX_LISTED_SKILLS);
        self.list_pages("skills/list", "skills", bounds, timeout, host)
    }

    /// The items under `key` of each page `method` answers, within `(pages, items)`.
    fn list_pages(
        &mut self,
        method: &str,
        key: &str,
        (max_pages, max_items): (usize, usize),
        timeout: Duration,
        host: &mut dyn ServerRequests,
    ) -> (Vec<Value>, Option<CallError>) {
        let name = self.name().to_owned();
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = std::collections::HashSet::new();
        for page in 1..=max_pages {
            let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
            let result = match self.request(method, params, timeout, host) {
                Ok(result) => result,
                Err(error) => return (items, Some(error)),
            };
            let listed = result.get(key).and_then(Value::as_array);
            let room = max_items - items.len();
            let listed: Vec<&Value> = listed.into_iter().flatten().collect();
            items.extend(listed.iter().take(room).map(|&t| t.clone()));
            if listed.len() > room {
                tracing::warn!(server = %name, "more than {max_items} {key}; listing stopped with the first {max_items}");
                return (items, None);
            }
            cursor = result
                .get("nextCursor")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let Some(next) = &cursor else {
                return (items, None);
            };
            if !seen.insert(next.clone()) {
                tracing::warn!(server = %name, pages = page, "{method} repeated a nextCursor; listing stopped with the {key} listed so far");
                return (items, None);
            }
        }
        tracing::warn!(server = %name, "{method} gave more than {max_pages} pages; listing stopped with the {key} listed so far");
        (items, None)
    }
}
