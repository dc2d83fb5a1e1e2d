//! A bounded reader of Server-Sent Events, as the Streamable HTTP transport receives them.

use std::io::BufRead;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

/// What one event carried.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Event {
    /// An event's data, its lines joined with `\n`.
    Data(Vec<u8>),
    /// An event whose data passed the limit; the rest of it was dropped. Its first bytes.
    TooLong(Vec<u8>),
}

/// Where a stream stopped, for resuming it.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct StreamEnd {
    /// The last event id the stream gave (`id:`), for `Last-Event-ID`.
    pub(crate) last_event_id: Option<String>,
    /// The reconnection time the stream asked for (`retry:`).
    pub(crate) retry: Option<Duration>,
    /// Whether the callback stopped the reading (rather than the stream ending).
    pub(crate) stopped: bool,
    /// The longest one event may take from its first data line to its end: a server that drips
    /// an event, or never ends it, is cut there. `None`: no bound (a call's own deadline holds).
    pub(crate) event_time: Option<Duration>,
    /// Whether the reading stopped because an event passed `event_time`.
    pub(crate) slow_event: bool,
}

/// How many bytes of an event over the limit are kept to tell whose it is.
const HEAD_BYTES: usize = 1024;
/// How long one field line (other than `data:`) may be.
const FIELD_BYTES: usize = 4096;

/// Reads events until the stream ends or `on_event` breaks, keeping at most `limit` bytes of an
/// event's data: past it, [`Event::TooLong`] is given once and the rest dropped. Comment lines,
/// unknown fields and events without data are skipped; `id` and `retry` are kept in `end`.
pub(crate) fn read_events(
    mut reader: impl BufRead,
    limit: usize,
    end: &mut StreamEnd,
    mut on_event: impl FnMut(Event) -> ControlFlow<()>,
) {
    let mut data: Vec<u8> = Vec::new();
    let mut has_data = false;
    let mut too_long = false;
    let mut line: Vec<u8> = Vec::new();
    let mut started: Option<Instant> = None;
    end.slow_event = false;
    loop {
        if let (Some(started), Some(bound)) = (started, end.event_time)
            && started.elapsed() > bound
        {
            end.slow_event = true;
            return;
        }
        line.clear();
        // A data line is kept up to what is left of the limit (plus room to see it is over).
        let room = limit.saturating_sub(data.len()) + 16;
        let read = match crate::read_capped_line(&mut reader, &mut line, room.max(FIELD_BYTES)) {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        let cut = read > line.len();
        let text = trim_line_end(&line);
        if text.is_empty() {
            if has_data {
                let event = if too_long {
                    Event::TooLong(std::mem::take(&mut data))
                } else {
                    Event::Data(std::mem::take(&mut data))
                };
                has_data = false;
                too_long = false;
                started = None;
                if on_event(event).is_break() {
                    end.stopped = true;
                    return;
                }
            }
            data.clear();
            continue;
        }
        if text.starts_with(b":") {
            continue;
        }
        let (field, value) = match memchr::memchr(b':', text) {
            Some(at) => {
                let value = &text[at + 1..];
                (&text[..at], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (text, &b""[..]),
        };
        match field {
            b"data" => {
                if too_long {
                    continue;
                }
                if has_data {
                    data.push(b'\n');
                }
                started.get_or_insert_with(Instant::now);
                has_data = true;
                data.extend_from_slice(value);
                if cut || data.len() > limit {
                    too_long = true;
                    data.truncate(HEAD_BYTES);
                }
            }
            b"id" if !value.contains(&0) && !cut => {
                end.last_event_id = Some(String::from_utf8_lossy(value).into_owned());
            }
            b"retry" => {
                if let Some(ms) = std::str::from_utf8(value)
                    .ok()
                    .and_then(|v| v.parse::<u64>().ok())
                {
                    end.retry = Some(Duration::from_millis(ms));
                }
            }
            _ => {}
        }
    }
    if has_data {
        let event = if too_long {
            Event::TooLong(data)
        } else {
            Event::Data(data)
        };
        if on_event(event).is_break() {
            end.stopped = true;
        }
    }
}

fn trim_line_end(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gives its lines one at a time, `pause` apart, as a dripping server does.
    struct Drip {
        lines: std::vec::IntoIter<&'static [u8]>,
        pause: Duration,
    }

    impl std::io::Read for Drip {
        fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
            let Some(line) = self.lines.next() else {
                return Ok(0);
            };
            std::thread::sleep(self.pause);
            buffer[..line.len()].copy_from_slice(line);
            Ok(line.len())
        }
    }

    #[test]
    fn an_event_that_takes_longer_than_its_bound_is_cut() {
        let lines: Vec<&'static [u8]> = vec![&b"data: 1\n"[..], b"\n", b"data: a\n"]
            .into_iter()
            .chain(std::iter::repeat_n(&b"data: b\n"[..], 50))
            .collect();
        let reader = std::io::BufReader::with_capacity(
            16,
            Drip {
                lines: lines.into_iter(),
                pause: Duration::from_millis(10),
            },
        );
        let mut end = StreamEnd {
            event_time: Some(Duration::from_millis(100)),
            ..StreamEnd::default()
        };
        let mut events = Vec::new();
        read_events(reader, 1 << 20, &mut end, |event| {
            events.push(event);
            ControlFlow::Continue(())
        });
        // The first event ended in time; the second dripped past its bound and was cut.
        assert_eq!(events, [Event::Data(b"1".to_vec())]);
        assert!(end.slow_event);
    }

    fn read(input: &str, limit: usize) -> (Vec<Event>, StreamEnd) {
        let mut events = Vec::new();
        let mut end = StreamEnd::default();
        read_events(
            std::io::BufReader::with_capacity(5, input.as_bytes()),
            limit,
            &mut end,
            |event| {
                events.push(event);
                ControlFlow::Continue(())
            },
        );
        (events, end)
    }

    #[test]
    fn events_ids_and_retry_are_read() {
        let (events, end) = read(
            "id: e-1\nretry: 500\ndata: \n\n: a comment\nevent: message\nid: e-2\ndata: {\"a\":\ndata: 1}\r\n\r\ndata:x",
            1000,
        );
        assert_eq!(
            events,
            [
                Event::Data(b"".to_vec()),
                Event::Data(b"{\"a\":\n1}".to_vec()),
                Event::Data(b"x".to_vec())
            ]
        );
        assert_eq!(end.last_event_id.as_deref(), Some("e-2"));
        assert_eq!(end.retry, Some(Duration::from_millis(500)));
        assert!(!end.stopped);
    }

    #[test]
    fn an_event_over_the_limit_is_reported_once_and_the_next_read() {
        let long = "y".repeat(10_000);
        let input = format!("data: {{\"id\":7,{long}\ndata: {long}\n\ndata: ok\n\n");
        let (events, _) = read(&input, 100);
        assert_eq!(events.len(), 2);
        let Event::TooLong(head) = &events[0] else {
            panic!("not too long")
        };
        assert!(head.starts_with(b"{\"id\":7,") && head.len() <= HEAD_BYTES);
        assert_eq!(events[1], Event::Data(b"ok".to_vec()));
    }

    #[test]
    fn the_callback_stops_the_reading() {
        let mut end = StreamEnd::default();
        let mut seen = 0;
        read_events("data: 1\n\ndata: 2\n\n".as_bytes(), 100, &mut end, |_| {
            seen += 1;
            ControlFlow::Break(())
        });
        assert_eq!(seen, 1);
        assert!(end.stopped);
    }
}
