//! The requests the server sends the host on its own initiative: MCPL `push/event` and
//! `channels/incoming`.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::media;

/// The feature set every push event names.
pub(crate) const FEATURE_SET: &str = "demo";
/// The event sent twice, to see the host deduplicate it.
pub(crate) const EVENT_ID: &str = "evt-1";
/// The event whose content is visibly empty, to see the host refuse it.
pub(crate) const EMPTY_EVENT_ID: &str = "evt-empty";
/// The channel every message arrives on.
pub(crate) const CHANNEL_ID: &str = "demo-channel";

/// One request to send, with its params (the id is the server's to give).
pub(crate) enum Outgoing {
    /// A `push/event`.
    PushEvent(Value),
    /// A `channels/incoming`.
    ChannelIncoming(Value),
}

/// What `push-events` sends, in order: `evt-1`, `evt-1` again, `evt-empty`, then one
/// `channels/incoming` with three messages (`m2` visibly empty).
pub(crate) fn burst(timestamp: &str) -> Vec<Outgoing> {
    let event = json!({
        "featureSet": FEATURE_SET,
        "eventId": EVENT_ID,
        "timestamp": timestamp,
        "payload": {"content": [
            {"type": "text", "text": "Build 42 finished: all 318 tests passed."},
            {"type": "image", "mimeType": "image/png", "data": media::base64(media::PNG)},
            {
                "type": "resource",
                "uri": "https://files.demo.example/builds/42/log.txt?token=demo-secret-build",
                "name": "build-42.log",
                "mimeType": "text/plain",
                "sizeBytes": 10240,
                "disposition": "ref",
            },
        ]},
    });
    let empty = json!({
        "featureSet": FEATURE_SET,
        "eventId": EMPTY_EVENT_ID,
        "timestamp": timestamp,
        "payload": {"content": [{"type": "text", "text": "   "}]},
    });
    let message = |id: &str, content: Value| {
        json!({
            "channelId": CHANNEL_ID,
            "messageId": id,
            "author": {"id": "u1", "name": "Ada"},
            "timestamp": timestamp,
            "content": content,
        })
    };
    let messages = json!({"messages": [
        message("m1", json!([{"type": "text", "text": "Ada: the deploy is green."}])),
        message("m2", json!([{"type": "text", "text": ""}])),
        message("m3", json!([
            {"type": "text", "text": "Ada: here is the dashboard."},
            {"type": "image", "mimeType": "image/png", "data": media::base64(media::PNG)},
        ])),
    ]});
    vec![
        Outgoing::PushEvent(event.clone()),
        Outgoing::PushEvent(event),
        Outgoing::PushEvent(empty),
        Outgoing::ChannelIncoming(messages),
    ]
}

/// The wall clock as RFC 3339 in UTC, to the second (`2025-01-31T09:05:00Z`).
pub(crate) fn now_rfc3339() -> String {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    rfc3339(seconds)
}

/// Seconds since the Unix epoch as RFC 3339 in UTC, by Howard Hinnant's `civil_from_days`.
fn rfc3339(seconds: u64) -> String {
    let days = (seconds / 86_400) as i64;
    let of_day = seconds % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_738_314_300), "2025-01-31T09:05:00Z");
        assert_eq!(rfc3339(4_107_542_399), "2100-02-28T23:59:59Z");
    }
}
