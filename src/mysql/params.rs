//! Converting [`RowValues`] to mysql_async values for the binary protocol.
//!
//! MySQL has no boolean, UUID, array or interval type: a `Bool` binds as 0/1 (`BOOLEAN` is
//! `TINYINT(1)`), a `Uuid` as its 36-character text (for a `BINARY(16)` column bind
//! `uuid.as_bytes()` as a blob), a `TimestampTz` as its UTC `DATETIME` (the wing's sessions run
//! in UTC), a `Numeric` and a `JSON` value as their text, an `Interval` as a `TIME` when it has
//! no months and fits MySQL's ±838:59:59. Arrays and other intervals are a
//! [`ErrorKind::ParameterType`] error.
//!
//! A value the server would store as another value is refused here, before anything is sent,
//! with [`ErrorKind::ParameterType`]: a date outside MySQL's years 0000–9999 (the server would
//! store the zero date), a time or timestamp finer than a microsecond or on a leap second (the
//! server keeps microseconds and has no leap seconds), and a `TimestampTz` while the session's
//! `time_zone` is not UTC (a `TIMESTAMP` column would store another instant).

use chrono::{Datelike, NaiveDate, NaiveDateTime, NaiveTime, Timelike};
use mysql_async::Value;

use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::value::RowValues;

/// MySQL's largest `TIME`, in microseconds: 838:59:59.
const TIME_MAX_MICROS: i64 = (838 * 3600 + 59 * 60 + 59) * 1_000_000;

/// Converts every parameter, in the order the statement's `?` placeholders take them
/// (`order[k]` is the parameter the k-th `?` binds; `None`: in order). `utc`: the session's
/// time zone is UTC.
pub(crate) fn to_values(
    params: &[RowValues],
    order: Option<&[u16]>,
    utc: bool,
) -> Result<Vec<Value>> {
    match order {
        None => params
            .iter()
            .enumerate()
            .map(|(i, v)| to_value(i, v, utc))
            .collect(),
        Some(order) => order
            .iter()
            .map(|&i| to_value(usize::from(i), &params[usize::from(i)], utc))
            .collect(),
    }
}

fn bad(i: usize, why: &str) -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        ErrorKind::ParameterType,
        format!("parameter ${} cannot be bound on MySQL: {why}", i + 1),
    )
}

/// MySQL's year, when `year` is one (chrono's years run far beyond 0000–9999, which the server
/// would store as the zero date).
fn year(i: usize, year: i32) -> Result<u16> {
    match u16::try_from(year) {
        Ok(y) if y <= 9999 => Ok(y),
        _ => Err(bad(i, "MySQL's dates run from year 0000 to 9999")),
    }
}

/// The microseconds of a time of day, when it has no finer digits and is no leap second.
fn micros(i: usize, nanos: u32) -> Result<u32> {
    if nanos >= 1_000_000_000 {
        return Err(bad(i, "MySQL has no leap seconds"));
    }
    if nanos % 1_000 != 0 {
        return Err(bad(
            i,
            "MySQL keeps times to the microsecond; round the value first (chrono's `trunc_subsecs(6)`)",
        ));
    }
    Ok(nanos / 1_000)
}

fn date(i: usize, d: &NaiveDate) -> Result<Value> {
    Ok(Value::Date(
        year(i, d.year())?,
        d.month() as u8,
        d.day() as u8,
        0,
        0,
        0,
        0,
    ))
}

fn datetime(i: usize, t: &NaiveDateTime) -> Result<Value> {
    Ok(Value::Date(
        year(i, t.year())?,
        t.month() as u8,
        t.day() as u8,
        t.hour() as u8,
        t.minute() as u8,
        t.second() as u8,
        micros(i, t.nanosecond())?,
    ))
}

fn time(i: usize, t: &NaiveTime) -> Result<Value> {
    Ok(Value::Time(
        false,
        0,
        t.hour() as u8,
        t.minute() as u8,
        t.second() as u8,
        micros(i, t.nanosecond())?,
    ))
}

/// A span of microseconds as a MySQL `TIME` (days carried into hours by the server).
pub(crate) fn time_span(micros: i64) -> Option<Value> {
    if micros.unsigned_abs() > TIME_MAX_MICROS as u64 {
        return None;
    }
    let neg = micros < 0;
    let abs = micros.unsigned_abs();
    let (secs, us) = (abs / 1_000_000, (abs % 1_000_000) as u32);
    let (days, rest) = (secs / 86_400, secs % 86_400);
    Some(Value::Time(
        neg,
        days as u32,
        (rest / 3600) as u8,
        (rest / 60 % 60) as u8,
        (rest % 60) as u8,
        us,
    ))
}

/// Converts parameter `i` (0-based, for the error message); `utc`: the session's time zone is
/// UTC.
pub(crate) fn to_value(i: usize, v: &RowValues, utc: bool) -> Result<Value> {
    Ok(match v {
        RowValues::Null => Value::NULL,
        RowValues::Int(n) => Value::Int(*n),
        RowValues::Float(f) if !f.is_finite() => {
            // MySQL has no NaN or infinity: the server would store a wrong number.
            return Err(bad(i, "MySQL has no NaN or infinite floating-point value"));
        }
        RowValues::Float(f) => Value::Double(*f),
        RowValues::Text(s) => Value::Bytes(s.as_bytes().to_vec()),
        RowValues::Bool(b) => Value::Int(i64::from(*b)),
        RowValues::Timestamp(t) => datetime(i, t)?,
        RowValues::TimestampTz(_) if !utc => {
            return Err(bad(
                i,
                "the session's time_zone is not UTC, so a TIMESTAMP column would store another instant; bind a Timestamp in the session's zone, or SET time_zone = '+00:00'",
            ));
        }
        RowValues::TimestampTz(t) => datetime(i, &t.naive_utc())?,
        RowValues::Date(d) => date(i, d)?,
        RowValues::Uuid(u) => Value::Bytes(u.hyphenated().to_string().into_bytes()),
        RowValues::Numeric(d) => Value::Bytes(d.to_string().into_bytes()),
        RowValues::Blob(b) => Value::Bytes(b.clone()),
        RowValues::JSON(j) => Value::Bytes(j.to_string().into_bytes()),
        RowValues::Time(t) => time(i, t)?,
        RowValues::Interval(iv) => {
            if iv.months != 0 {
                return Err(bad(
                    i,
                    "MySQL has no interval type, and an interval with months is no TIME",
                ));
            }
            let micros = i64::from(iv.days)
                .checked_mul(86_400_000_000)
                .and_then(|d| d.checked_add(iv.microseconds));
            match micros.and_then(time_span) {
                Some(t) => t,
                None => return Err(bad(i, "the interval is beyond TIME's ±838:59:59")),
            }
        }
        RowValues::Array(_) => return Err(bad(i, "MySQL has no array type")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_become_times_and_too_long_ones_are_refused() {
        assert_eq!(
            time_span(-1_500_000),
            Some(Value::Time(true, 0, 0, 0, 1, 500_000))
        );
        assert_eq!(
            time_span(26 * 3_600_000_000),
            Some(Value::Time(false, 1, 2, 0, 0, 0))
        );
        assert_eq!(time_span(TIME_MAX_MICROS + 1), None);
        let iv = crate::Interval {
            months: 1,
            days: 0,
            microseconds: 0,
        };
        assert_eq!(
            to_value(0, &RowValues::Interval(iv), true)
                .unwrap_err()
                .kind(),
            ErrorKind::ParameterType
        );
        assert_eq!(
            to_value(2, &RowValues::Array(vec![]), true)
                .unwrap_err()
                .kind(),
            ErrorKind::ParameterType
        );
    }

    #[test]
    fn values_the_server_would_change_are_refused() {
        let at = |y, nano| {
            RowValues::Timestamp(
                NaiveDate::from_ymd_opt(y, 1, 1)
                    .unwrap()
                    .and_hms_nano_opt(23, 59, 59, nano)
                    .unwrap(),
            )
        };
        for v in [
            at(10_000, 0),
            at(-1, 0),
            at(2024, 1),
            at(2024, 1_500_000_000),
        ] {
            assert_eq!(
                to_value(0, &v, true).unwrap_err().kind(),
                ErrorKind::ParameterType,
                "{v:?}"
            );
        }
        assert!(to_value(0, &at(0, 0), true).is_ok());
        assert!(to_value(0, &at(9999, 999_999_000), true).is_ok());
        let tz = RowValues::TimestampTz(chrono::DateTime::from_timestamp(0, 0).unwrap());
        assert!(to_value(0, &tz, true).is_ok());
        assert_eq!(
            to_value(0, &tz, false).unwrap_err().kind(),
            ErrorKind::ParameterType
        );
    }

    #[test]
    fn reordered_parameters_bind_by_position() {
        let p = [RowValues::Int(1), RowValues::Int(2)];
        let v = to_values(&p, Some(&[1, 0, 1]), true).unwrap();
        assert_eq!(v, vec![Value::Int(2), Value::Int(1), Value::Int(2)]);
    }
}
