//! Everything else a column holds: booleans, text, bytes, dates and times, UUIDs, JSON,
//! intervals, arrays, and `Option` for `NULL`.

use std::borrow::Cow;

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use rust_decimal::Decimal;
use uuid::Uuid;

use super::{FromValue, mismatch, read_plain};
use crate::error::DecodeError;
use crate::value::{RowValues, ValueRef, parse_timestamp, parse_timestamptz};

impl FromValue for bool {
    #[inline]
    fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
        match v {
            ValueRef::Bool(b) => Ok(read_plain(v, b)),
            ValueRef::Int(0) => Ok(read_plain(v, false)),
            ValueRef::Int(1) => Ok(read_plain(v, true)),
            other => mismatch("bool", &other),
        }
    }
}

impl FromValue for String {
    #[inline]
    fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
        match v {
            ValueRef::Text(s) => Ok(s.into_owned()),
            ValueRef::Uuid(u) => Ok(u.hyphenated().to_string()),
            ValueRef::Numeric(d) => Ok(d.to_string()),
            ValueRef::JSON(j) => Ok(j.to_string()),
            other => mismatch("String", &other),
        }
    }
}

impl FromValue for Vec<u8> {
    fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
        match v {
            ValueRef::Blob(b) => Ok(b.to_vec()),
            other => mismatch("Vec<u8>", &other),
        }
    }
}

impl FromValue for NaiveDateTime {
    fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
        match v {
            ValueRef::Timestamp(t) => Ok(t),
            ValueRef::Date(d) => Ok(d.and_time(chrono::NaiveTime::MIN)),
            ValueRef::Text(s) => {
                parse_timestamp(&s).ok_or(DecodeError::new("NaiveDateTime", "unparsable Text"))
            }
            other => mismatch("NaiveDateTime", &other),
        }
    }
}

impl FromValue for DateTime<Utc> {
    fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
        match v {
            ValueRef::TimestampTz(t) => Ok(t),
            ValueRef::Timestamp(t) => Ok(t.and_utc()),
            ValueRef::Text(s) => {
                parse_timestamptz(&s).ok_or(DecodeError::new("DateTime<Utc>", "unparsable Text"))
            }
            other => mismatch("DateTime<Utc>", &other),
        }
    }
}

impl FromValue for NaiveDate {
    fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
        match v {
            ValueRef::Date(d) => Ok(d),
            ValueRef::Text(s) => NaiveDate::parse_from_str(&s, "%Y-%m-%d")
                .map_err(|_| DecodeError::new("NaiveDate", "unparsable Text")),
            other => mismatch("NaiveDate", &other),
        }
    }
}

impl FromValue for Uuid {
    fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
        match v {
            ValueRef::Uuid(u) => Ok(u),
            ValueRef::Text(s) => {
                Uuid::parse_str(&s).map_err(|_| DecodeError::new("Uuid", "unparsable Text"))
            }
            ValueRef::Blob(b) => {
                Uuid::from_slice(b).map_err(|_| DecodeError::new("Uuid", "Blob not 16 bytes"))
            }
            other => mismatch("Uuid", &other),
        }
    }
}

impl FromValue for serde_json::Value {
    fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
        match v {
            ValueRef::JSON(j) => Ok(j.into_owned()),
            ValueRef::Text(s) => serde_json::from_str(&s)
                .map_err(|_| DecodeError::new("serde_json::Value", "unparsable Text")),
            other => mismatch("serde_json::Value", &other),
        }
    }
}

impl FromValue for NaiveTime {
    fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
        match v {
            ValueRef::Time(t) => Ok(t),
            ValueRef::Text(s) => {
                crate::value::parse_time(&s).ok_or(DecodeError::new("NaiveTime", "unparsable Text"))
            }
            other => mismatch("NaiveTime", &other),
        }
    }
}

impl FromValue for crate::Interval {
    fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
        match v {
            ValueRef::Interval(i) => Ok(i),
            ValueRef::Text(s) => s
                .parse()
                .map_err(|_| DecodeError::new("Interval", "unparsable Text")),
            // MySQL has no interval type: a span is a `TIME`, which reads as a time of day
            // when it is one.
            ValueRef::Time(t) => {
                use chrono::Timelike;
                Ok(crate::Interval {
                    months: 0,
                    days: 0,
                    microseconds: i64::from(t.num_seconds_from_midnight()) * 1_000_000
                        + i64::from(t.nanosecond() / 1_000),
                })
            }
            other => mismatch("Interval", &other),
        }
    }
}

/// Arrays decode element by element into `Vec<T>` for these element types (`Vec<u8>` is a
/// blob, not an array).
macro_rules! vec_from_array {
    ($($t:ty),*) => {$(
        impl FromValue for Vec<$t> {
            fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
                match v {
                    ValueRef::Array(items) => items
                        .iter()
                        .map(|x| <$t>::from_value(x.as_value_ref()))
                        .collect(),
                    other => mismatch(concat!("Vec<", stringify!($t), ">"), &other),
                }
            }
        }
    )*};
}
vec_from_array!(
    RowValues,
    i64,
    i32,
    i16,
    f64,
    f32,
    bool,
    String,
    Decimal,
    Uuid,
    NaiveDate,
    NaiveDateTime,
    Option<i64>,
    Option<i32>,
    Option<f64>,
    Option<bool>,
    Option<String>
);

impl FromValue for RowValues {
    fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
        Ok(v.to_owned_value())
    }
}

impl<T: FromValue> FromValue for Option<T> {
    fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
        match v {
            ValueRef::Null => Ok(None),
            other => T::from_value(other).map(Some),
        }
    }
}

impl FromValue for Cow<'static, str> {
    fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
        String::from_value(v).map(Cow::Owned)
    }
}
