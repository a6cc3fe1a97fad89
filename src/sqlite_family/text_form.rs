//! The text forms in which SQLite and Turso store timestamps and dates, written digit by digit.
//!
//! They are exactly chrono's `%Y-%m-%d %H:%M:%S%.f`, `%Y-%m-%dT%H:%M:%S%.f%:z` (UTC) and
//! `%Y-%m-%d`, but without interpreting a format string on every call: binding a timestamp is
//! on the hot path of every insert. Years outside 0000–9999 and leap seconds fall back to
//! chrono's formatter, so every value still gets chrono's exact text.

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, NaiveTime, Timelike, Utc};

/// Appends `v` in decimal, zero-padded to `width` digits.
fn push_padded(s: &mut String, v: u32, width: usize) {
    let mut buf = [0u8; 10];
    let mut i = buf.len();
    let mut v = v;
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for _ in (buf.len() - i)..width {
        s.push('0');
    }
    s.extend(buf[i..].iter().map(|&b| char::from(b)));
}

/// `YYYY-MM-DD`; `false` (nothing written) for a year outside 0000–9999.
fn push_date(s: &mut String, d: &NaiveDate) -> bool {
    let Ok(year) = u32::try_from(d.year()) else {
        return false;
    };
    if year > 9999 {
        return false;
    }
    push_padded(s, year, 4);
    s.push('-');
    push_padded(s, d.month(), 2);
    s.push('-');
    push_padded(s, d.day(), 2);
    true
}

/// `HH:MM:SS` and the fraction as chrono's `%.f` prints it (none, or 3, 6 or 9 digits);
/// `false` (nothing written) for a leap second.
fn push_time(s: &mut String, t: &NaiveTime) -> bool {
    let nanos = t.nanosecond();
    if nanos >= 1_000_000_000 {
        return false;
    }
    push_padded(s, t.hour(), 2);
    s.push(':');
    push_padded(s, t.minute(), 2);
    s.push(':');
    push_padded(s, t.second(), 2);
    if nanos != 0 {
        s.push('.');
        if nanos % 1_000_000 == 0 {
            push_padded(s, nanos / 1_000_000, 3);
        } else if nanos % 1_000 == 0 {
            push_padded(s, nanos / 1_000, 6);
        } else {
            push_padded(s, nanos, 9);
        }
    }
    true
}

/// Date and time joined by `sep`, or `None` where chrono must format it.
fn datetime(ts: &NaiveDateTime, sep: char, extra: usize) -> Option<String> {
    let mut s = String::with_capacity(29 + extra);
    (push_date(&mut s, &ts.date()) && {
        s.push(sep);
        push_time(&mut s, &ts.time())
    })
    .then_some(s)
}

/// The text form used to store a timestamp in SQLite and Turso: `2024-01-02 03:04:05.123456`.
pub fn timestamp_text(ts: &NaiveDateTime) -> String {
    datetime(ts, ' ', 0).unwrap_or_else(|| ts.format("%Y-%m-%d %H:%M:%S%.f").to_string())
}

/// The text form used to store a UTC timestamp in SQLite and Turso (RFC 3339 for years
/// 0000–9999; chrono's `%Y` adds a sign outside them, which parses back):
/// `2024-01-02T03:04:05.123456+00:00`.
pub fn timestamptz_text(ts: &DateTime<Utc>) -> String {
    match datetime(&ts.naive_utc(), 'T', 6) {
        Some(mut s) => {
            s.push_str("+00:00");
            s
        }
        None => ts.format("%Y-%m-%dT%H:%M:%S%.f%:z").to_string(),
    }
}

/// The text form used to store a date in SQLite and Turso: `2024-01-02`.
pub fn date_text(d: &NaiveDate) -> String {
    let mut s = String::with_capacity(10);
    if push_date(&mut s, d) {
        s
    } else {
        d.format("%Y-%m-%d").to_string()
    }
}

/// The text form used to store a time of day in SQLite and Turso: `03:04:05.123456`.
pub(crate) fn time_text(t: &NaiveTime) -> String {
    t.format("%H:%M:%S%.f").to_string()
}

/// Writes `v`'s stored text form into `out` (cleared first), for the kinds SQLite and Turso
/// store as text made from the value: timestamps, dates, times, UUIDs, decimals, JSON,
/// intervals and arrays. Returns `false` (and leaves `out` empty) for the kinds bound as
/// themselves. The text is exactly what the `*_text` functions return, without allocating
/// once `out` has grown: a bulk load reuses one buffer for every value.
#[cfg(feature = "sqlite")]
pub(crate) fn write_text_form(out: &mut String, v: &crate::value::RowValues) -> bool {
    use crate::value::RowValues as V;
    use std::fmt::Write;
    out.clear();
    match v {
        V::Timestamp(t) => {
            if !(push_date(out, &t.date()) && {
                out.push(' ');
                push_time(out, &t.time())
            }) {
                out.clear();
                let _ = write!(out, "{}", t.format("%Y-%m-%d %H:%M:%S%.f"));
            }
        }
        V::TimestampTz(t) => {
            let n = t.naive_utc();
            if push_date(out, &n.date()) && {
                out.push('T');
                push_time(out, &n.time())
            } {
                out.push_str("+00:00");
            } else {
                out.clear();
                let _ = write!(out, "{}", t.format("%Y-%m-%dT%H:%M:%S%.f%:z"));
            }
        }
        V::Date(d) => {
            if !push_date(out, d) {
                let _ = write!(out, "{}", d.format("%Y-%m-%d"));
            }
        }
        V::Time(t) => {
            let _ = write!(out, "{}", t.format("%H:%M:%S%.f"));
        }
        V::Uuid(u) => {
            let mut buf = uuid::Uuid::encode_buffer();
            out.push_str(u.hyphenated().encode_lower(&mut buf));
        }
        V::Numeric(d) => {
            let _ = write!(out, "{d}");
        }
        V::JSON(j) => {
            let _ = write!(out, "{j}");
        }
        V::Interval(i) => {
            let _ = write!(out, "{i}");
        }
        V::Array(items) => out.push_str(&array_text(items)),
        V::Null | V::Int(_) | V::Float(_) | V::Text(_) | V::Bool(_) | V::Blob(_) => return false,
    }
    true
}

/// An element of an array as JSON: numbers, strings, booleans and null as themselves, other
/// kinds as their stored text form.
fn element_json(v: &crate::value::RowValues) -> serde_json::Value {
    use crate::value::RowValues as V;
    use serde_json::Value as J;
    match v {
        V::Null => J::Null,
        V::Int(i) => J::from(*i),
        V::Float(f) => serde_json::Number::from_f64(*f).map_or(J::Null, J::Number),
        V::Text(s) => J::String(s.clone()),
        V::Bool(b) => J::Bool(*b),
        V::Timestamp(t) => J::String(timestamp_text(t)),
        V::TimestampTz(t) => J::String(timestamptz_text(t)),
        V::Date(d) => J::String(date_text(d)),
        V::Uuid(u) => J::String(u.hyphenated().to_string()),
        V::Numeric(d) => J::String(d.to_string()),
        V::Blob(b) => J::Array(b.iter().map(|x| J::from(*x)).collect()),
        V::JSON(j) => j.clone(),
        V::Time(t) => J::String(time_text(t)),
        V::Interval(i) => J::String(i.to_string()),
        V::Array(items) => J::Array(items.iter().map(element_json).collect()),
    }
}

/// The text form used to store an array in SQLite and Turso: a JSON array.
pub(crate) fn array_text(items: &[crate::value::RowValues]) -> String {
    serde_json::Value::Array(items.iter().map(element_json).collect()).to_string()
}

/// Reads an array back from its stored JSON text (`None` when the text is not a JSON array).
pub(crate) fn array_from_text(s: &str) -> Option<Vec<crate::value::RowValues>> {
    fn value(j: serde_json::Value) -> crate::value::RowValues {
        use crate::value::RowValues as V;
        use serde_json::Value as J;
        match j {
            J::Null => V::Null,
            J::Bool(b) => V::Bool(b),
            J::Number(n) => n
                .as_i64()
                .map_or_else(|| V::Float(n.as_f64().unwrap_or(f64::NAN)), V::Int),
            J::String(s) => V::Text(s),
            J::Array(items) => V::Array(items.into_iter().map(value).collect()),
            obj @ J::Object(_) => V::JSON(obj),
        }
    }
    match serde_json::from_str(s).ok()? {
        serde_json::Value::Array(items) => Some(items.into_iter().map(value).collect()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn chrono_forms(ts: &NaiveDateTime) -> (String, String, String) {
        (
            ts.format("%Y-%m-%d %H:%M:%S%.f").to_string(),
            ts.and_utc().format("%Y-%m-%dT%H:%M:%S%.f%:z").to_string(),
            ts.date().format("%Y-%m-%d").to_string(),
        )
    }

    fn ours(ts: &NaiveDateTime) -> (String, String, String) {
        (
            timestamp_text(ts),
            timestamptz_text(&ts.and_utc()),
            date_text(&ts.date()),
        )
    }

    #[test]
    fn edges_match_chrono() {
        let cases = [
            (2024, 2, 29, 23, 59, 58, 123_456_789),
            (2024, 1, 2, 3, 4, 5, 0),
            (2024, 1, 2, 3, 4, 5, 120_000_000),
            (2024, 1, 2, 3, 4, 5, 123_000),
            (2024, 1, 2, 3, 4, 5, 1),
            (0, 1, 1, 0, 0, 0, 0),
            (9999, 12, 31, 23, 59, 59, 999_999_999),
            (10_000, 1, 1, 0, 0, 0, 0),
            (-1, 6, 15, 12, 0, 0, 500_000_000),
            (2016, 12, 31, 23, 59, 59, 1_500_000_000), // a leap second
        ];
        for (y, mo, d, h, mi, s, n) in cases {
            let ts = NaiveDate::from_ymd_opt(y, mo, d)
                .and_then(|d| d.and_hms_nano_opt(h, mi, s, n))
                .unwrap();
            assert_eq!(ours(&ts), chrono_forms(&ts), "{ts:?}");
        }
    }

    proptest! {
        #[test]
        fn every_datetime_matches_chrono(
            days in -800_000_i64..4_000_000,
            secs in 0_u32..86_400,
            nanos in prop_oneof![Just(0_u32), 0_u32..1000, (0_u32..1000).prop_map(|m| m * 1_000_000), (0_u32..1_000_000).prop_map(|u| u * 1000), 0_u32..2_000_000_000],
        ) {
            let base = NaiveDate::from_ymd_opt(1, 1, 1).unwrap();
            let Some(date) = base.checked_add_signed(chrono::Duration::days(days)) else {
                return Ok(());
            };
            let Some(time) = NaiveTime::from_num_seconds_from_midnight_opt(secs, nanos) else {
                return Ok(());
            };
            let ts = date.and_time(time);
            prop_assert_eq!(ours(&ts), chrono_forms(&ts));
        }
    }

    #[test]
    fn timestamp_text_round_trips() {
        use crate::value::{parse_timestamp, parse_timestamptz};
        let ts = NaiveDate::from_ymd_opt(2024, 2, 29)
            .unwrap()
            .and_hms_nano_opt(23, 59, 58, 123_456_789)
            .unwrap();
        assert_eq!(parse_timestamp(&timestamp_text(&ts)), Some(ts));
        let tz = ts.and_utc();
        assert_eq!(parse_timestamptz(&timestamptz_text(&tz)), Some(tz));
        assert_eq!(
            parse_timestamp("2024-01-02"),
            NaiveDate::from_ymd_opt(2024, 1, 2)
                .unwrap()
                .and_hms_opt(0, 0, 0)
        );
    }
}
