//! `expiresAt`: an RFC 3339 timestamp, read by hand; anything else counts as expired.

use std::time::{SystemTime, UNIX_EPOCH};

/// Whether a claimed expiry has passed at `now`. An expiry that does not parse as RFC 3339
/// counts as passed: the fetcher fails closed.
pub(crate) fn has_passed(expires_at: &str, now: SystemTime) -> bool {
    let Some(expiry) = parse_rfc3339(expires_at) else {
        return true;
    };
    let now = match now.duration_since(UNIX_EPOCH) {
        Ok(since) => i128::from(since.as_secs()) * 1_000_000_000 + i128::from(since.subsec_nanos()),
        Err(before) => -(before.duration().as_nanos() as i128),
    };
    expiry <= now
}

/// Nanoseconds since the Unix epoch for an RFC 3339 `date-time`
/// (`2026-05-01T12:00:00Z`, `2026-05-01t12:00:00.5+02:00`), or `None`.
fn parse_rfc3339(text: &str) -> Option<i128> {
    let b = text.as_bytes();
    if b.len() < 20 {
        return None;
    }
    let year = digits(b, 0, 4)?;
    let month = digits(b, 5, 2)?;
    let day = digits(b, 8, 2)?;
    let hour = digits(b, 11, 2)?;
    let minute = digits(b, 14, 2)?;
    let second = digits(b, 17, 2)?;
    if b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't') || b[13] != b':' {
        return None;
    }
    if b[16] != b':'
        || !(1..=12).contains(&month)
        || day == 0
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut at = 19;
    let mut nanos: i128 = 0;
    if b.get(at) == Some(&b'.') {
        at += 1;
        let start = at;
        while at < b.len() && b[at].is_ascii_digit() {
            if at - start < 9 {
                nanos = nanos * 10 + i128::from(b[at] - b'0');
            }
            at += 1;
        }
        let read = at - start;
        if read == 0 {
            return None;
        }
        for _ in read..9 {
            nanos *= 10;
        }
    }
    let offset_seconds: i64 = match &b[at..] {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let hours = digits(&[*h1, *h2], 0, 2)?;
            let minutes = digits(&[*m1, *m2], 0, 2)?;
            if hours > 23 || minutes > 59 {
                return None;
            }
            let offset = i64::from(hours * 3600 + minutes * 60);
            if *sign == b'+' { offset } else { -offset }
        }
        _ => return None,
    };
    let days = days_from_civil(i64::from(year), month, day);
    let seconds =
        days * 86_400 + i64::from(hour) * 3600 + i64::from(minute) * 60 + i64::from(second)
            - offset_seconds;
    Some(i128::from(seconds) * 1_000_000_000 + nanos)
}

fn digits(b: &[u8], at: usize, len: usize) -> Option<u32> {
    let slice = b.get(at..at + len)?;
    slice.iter().try_fold(0u32, |n, &c| {
        c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
    })
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month = i64::from(month);
    let day_of_year =
        (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(seconds: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(seconds)
    }

    #[rstest::rstest]
    #[case("1970-01-01T00:00:00Z", Some(0))]
    #[case("2000-03-01T00:00:00Z", Some(951_868_800 * 1_000_000_000))]
    #[case("1970-01-01t01:00:00.25+01:00", Some(250_000_000))]
    #[case("1969-12-31T23:59:59-00:00", Some(-1_000_000_000))]
    #[case("not-a-date", None)]
    #[case("2026-02-30T00:00:00Z", None)]
    #[case("2026-01-01 00:00:00Z", None)]
    #[case("2026-01-01T00:00:00", None)]
    #[case("2026-01-01T24:00:00Z", None)]
    #[case("2026-01-01T00:00:00.Z", None)]
    #[case("2026-01-01T00:00:00+0100", None)]
    #[case(
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        None
    )]
    fn timestamps_read_as_rfc_3339_says(#[case] text: &str, #[case] nanos: Option<i128>) {
        assert_eq!(parse_rfc3339(text), nanos);
    }

    #[test]
    fn expiry_fails_closed() {
        assert!(has_passed("not-a-date", at(0)));
        assert!(has_passed("1970-01-01T00:00:10Z", at(10)));
        assert!(!has_passed("1970-01-01T00:00:10Z", at(9)));
        assert!(!has_passed("2999-01-01T00:00:00Z", SystemTime::now()));
    }
}
