//! Making room in a conversation that would pass the context window (decision 0011): the
//! oldest tool results are cleared first, each to a one-line notice naming the spill file that
//! holds it; then, should that not be enough, the oldest whole rounds go. The latest round is
//! never touched. Pure: the caller prices text and writes spill files.

use crate::conversation::{Content, Message, ToolOutput};

/// How every cleared tool result's notice begins, so a result cleared once is not cleared again.
const CLEARED: &str = "[tool result cleared to fit the context window; ";

/// `[tool result cleared to fit the context window; <reference>]`: what a cleared tool result
/// becomes in history, where `reference` names its spill as the host's notice wording does
/// (`the whole result is in <path>`, or `read it with read_result("<id>")`). The one place the
/// notice is worded.
pub fn cleared_notice(reference: &str) -> String {
    format!("{CLEARED}{reference}]")
}

/// What making room did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Room {
    /// The estimated tokens freed.
    pub freed: u64,
    /// Tool results cleared.
    pub cleared: usize,
    /// Whole earlier rounds removed.
    pub rounds_removed: usize,
}

/// Whether a tool output was already cleared.
fn is_cleared(output: &ToolOutput) -> bool {
    output.stored.starts_with(CLEARED)
}

/// The index of the latest tool results in `history`, which making room never touches.
fn latest_results(history: &[Message]) -> Option<usize> {
    history
        .iter()
        .rposition(|m| matches!(m, Message::ToolResults(_)))
}

/// Clears the latest round's tool results, in call order, until `excess` estimated tokens are
/// freed, as [`clear_oldest_results`] clears older ones: the last resort before a request would
/// overflow the window, so that what servers sent never ends a run.
pub fn clear_latest_results(
    history: &mut [Message],
    excess: u64,
    price: &dyn Fn(&str) -> u64,
    spill: &mut dyn FnMut(&ToolOutput) -> Option<String>,
) -> Room {
    let Some(latest) = latest_results(history) else {
        return Room::default();
    };
    clear_results(&mut history[latest..=latest], excess, price, spill)
}

/// Clears the oldest tool results (every one before the latest round's), oldest first and in
/// call order, until `excess` estimated tokens are freed. Each is replaced by
/// [`cleared_notice`] with the reference `spill` gives for it (to the spill it was written to,
/// or one written now); one for which `spill` gives none is kept, so nothing is lost.
pub fn clear_oldest_results(
    history: &mut [Message],
    excess: u64,
    price: &dyn Fn(&str) -> u64,
    spill: &mut dyn FnMut(&ToolOutput) -> Option<String>,
) -> Room {
    let Some(latest) = latest_results(history) else {
        return Room::default();
    };
    clear_results(&mut history[..latest], excess, price, spill)
}

/// Clears the tool results in `messages`, in order, until `excess` estimated tokens are freed.
fn clear_results(
    messages: &mut [Message],
    excess: u64,
    price: &dyn Fn(&str) -> u64,
    spill: &mut dyn FnMut(&ToolOutput) -> Option<String>,
) -> Room {
    let mut room = Room::default();
    for message in messages {
        let Message::ToolResults(outputs) = message else {
            continue;
        };
        for output in outputs {
            if room.freed >= excess {
                return room;
            }
            if is_cleared(output) {
                continue;
            }
            let Some(path) = spill(output) else {
                continue;
            };
            let notice = cleared_notice(&path);
            let (before, after) = (price(&output.stored), price(&notice));
            if after >= before {
                continue;
            }
            room.freed += before - after;
            room.cleared += 1;
            output.stored = notice;
            output.live = None;
        }
    }
    room
}

/// Removes the oldest whole rounds (an assistant turn, its tool results, and the messages
/// after them up to the next assistant turn) after the first message, never the latest round,
/// until `excess` estimated tokens are freed. For when clearing results was not enough.
pub fn remove_oldest_rounds(
    history: &mut Vec<Message>,
    excess: u64,
    price: &dyn Fn(&str) -> u64,
) -> Room {
    let mut room = Room::default();
    while room.freed < excess {
        let Some(latest) = latest_results(history) else {
            break;
        };
        // The latest round starts at the assistant turn before its results.
        let latest_turn = history[..latest]
            .iter()
            .rposition(|m| matches!(m, Message::Assistant { .. }))
            .unwrap_or(latest);
        let Some(start) = history[1..latest_turn]
            .iter()
            .position(|m| matches!(m, Message::Assistant { .. }))
            .map(|i| i + 1)
        else {
            break;
        };
        let end = history[start + 1..]
            .iter()
            .position(|m| matches!(m, Message::Assistant { .. }))
            .map_or(history.len(), |i| start + 1 + i);
        if end > latest_turn {
            break;
        }
        for message in history.drain(start..end) {
            room.freed += message_price(&message, price);
        }
        room.rounds_removed += 1;
    }
    room
}

/// A message's text as history prices it.
fn message_price(message: &Message, price: &dyn Fn(&str) -> u64) -> u64 {
    match message {
        Message::User(content) => content
            .iter()
            .map(|part| match part {
                Content::Text(text) => price(text),
                Content::Image { .. } | Content::Audio { .. } | Content::Document { .. } => 0,
            })
            .sum(),
        Message::Assistant { text, .. } => price(text),
        Message::ToolResults(outputs) => outputs.iter().map(|o| price(&o.stored)).sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(n: usize, stored: &str) -> ToolOutput {
        ToolOutput {
            call_id: format!("c{n}"),
            name: "t".to_owned(),
            stored: stored.to_owned(),
            live: None,
            is_error: false,
        }
    }

    fn history(rounds: usize) -> Vec<Message> {
        let mut history = vec![Message::User(vec![Content::Text("go".to_owned())])];
        for n in 0..rounds {
            history.push(Message::Assistant {
                text: format!("round {n}"),
                tool_calls: Vec::new(),
            });
            history.push(Message::ToolResults(vec![
                output(2 * n, &"x".repeat(400)),
                output(2 * n + 1, &"y".repeat(400)),
            ]));
        }
        history
    }

    fn price(text: &str) -> u64 {
        text.len() as u64 / 4
    }

    #[test]
    fn the_oldest_results_are_cleared_first_and_the_latest_round_never() {
        let mut h = history(3);
        let mut spilled = Vec::new();
        let room = clear_oldest_results(&mut h, 150, &price, &mut |o| {
            spilled.push(o.call_id.clone());
            Some(format!("the whole result is in /spill/{}.txt", o.call_id))
        });
        assert_eq!(spilled, ["c0", "c1"]);
        assert_eq!(room.cleared, 2);
        let Message::ToolResults(first) = &h[2] else {
            panic!()
        };
        assert_eq!(
            first[0].stored,
            "[tool result cleared to fit the context window; the whole result is in /spill/c0.txt]"
        );
        // However much is asked, the latest round's results stay.
        let room = clear_oldest_results(&mut h, u64::MAX, &price, &mut |o| Some(o.call_id.clone()));
        assert_eq!(room.cleared, 2);
        let Message::ToolResults(latest) = &h[6] else {
            panic!()
        };
        assert!(latest.iter().all(|o| o.stored.len() == 400));
        // A result with no spill is kept.
        let mut h = history(2);
        let room = clear_oldest_results(&mut h, u64::MAX, &price, &mut |_| None);
        assert_eq!(room, Room::default());
    }

    #[test]
    fn whole_rounds_go_oldest_first_after_the_prompt() {
        let mut h = history(4);
        let room = remove_oldest_rounds(&mut h, 250, &price);
        assert_eq!(room.rounds_removed, 2);
        assert_eq!(h.len(), 1 + 2 * 2);
        assert!(matches!(&h[1], Message::Assistant { text, .. } if text == "round 2"));
        // The prompt and the latest round stay whatever is asked.
        let room = remove_oldest_rounds(&mut h, u64::MAX, &price);
        assert_eq!(room.rounds_removed, 1);
        assert_eq!(h.len(), 3);
        assert!(matches!(&h[1], Message::Assistant { text, .. } if text == "round 3"));
    }
}
