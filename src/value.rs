//! [`RowValues`], the one value type for parameters and results, and its borrowed view [`ValueRef`].

use std::borrow::Cow;

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use rust_decimal::Decimal;
use uuid::Uuid;

use crate::interval::Interval;

/// A parameter or a result cell, the same on every backend.
///
/// How each kind is stored and read back:
///
/// | kind | PostgreSQL | SQLite / Turso storage | read back from SQLite / Turso as |
/// |---|---|---|---|
/// | `Null` | `NULL` of the parameter's type | `NULL` | `Null` |
/// | `Int` | `int2`/`int4`/`int8` (range-checked), or `float4`/`float8`/`numeric` when declared so | `INTEGER` | `Int` (`Bool` if the column is declared `BOOL`/`BOOLEAN`) |
/// | `Float` | `float8`, `float4` when exactly representable, `numeric` | `REAL` (NaN is rejected: SQLite would store NULL) | `Float` |
/// | `Text` | `text`, `varchar`, `char`, `name`, `json`/`jsonb` (parsed), `uuid`/`numeric`/dates (parsed) | `TEXT` | `Text` |
/// | `Bool` | `bool` | `INTEGER` 0/1 | `Bool` when declared `BOOL`/`BOOLEAN`, else `Int` |
/// | `Timestamp` | `timestamp`, `date` when the time is midnight | `TEXT` `YYYY-MM-DD HH:MM:SS[.f]` | `Timestamp` when declared `TIMESTAMP`/`DATETIME`, else `Text` |
/// | `TimestampTz` | `timestamptz` | `TEXT` RFC 3339 with `+00:00` | `TimestampTz` when declared `TIMESTAMPTZ`, else `Text` |
/// | `Date` | `date`, `timestamp`/`timestamptz` at midnight | `TEXT` `YYYY-MM-DD` | `Date` when declared `DATE`, else `Text` |
/// | `Uuid` | `uuid` | `TEXT` hyphenated | `Uuid` when declared `UUID`, else `Text` |
/// | `Numeric` | `numeric` | `TEXT` exact decimal | `Numeric` when the declared type starts with `NUMERIC`/`DECIMAL` (see below) |
/// | `Blob` | `bytea` | `BLOB` | `Blob` |
/// | `JSON` | `json`, `jsonb` | `TEXT` (serialised) | `JSON` when declared `JSON`/`JSONB`, else `Text` |
/// | `Time` | `time` | `TEXT` `HH:MM:SS[.f]` | `Time` when declared `TIME`, else `Text` |
/// | `Interval` | `interval` | `TEXT` ISO 8601 (`P14M3DT4.5S`) | `Interval` when declared `INTERVAL`, else `Text` |
/// | `Array` | one-dimensional arrays of the scalar types above | `TEXT` JSON array | `Array` when declared `ARRAY` (or `…[]` on SQLite; Turso keeps `T[]` for its own STRICT arrays), else `Text` |
///
/// More Postgres types, read and bound through the kinds above: `money` as `Numeric` (two
/// decimal places, the `C` locale's); `inet`/`cidr`, `timetz`, `citext` and enums as `Text`
/// (bound from `Text` in the server's own text form); a domain as its base type. An array round-trips on SQLite and Turso exactly when its elements are `Int`,
/// `Float`, `Text`, `Bool` or `Null`; other elements come back as their text form.
///
/// SQLite has no exact decimal type. A column declared `NUMERIC` or `DECIMAL` has *numeric
/// affinity*: SQLite stores number-like text as INTEGER or REAL, keeping 15 significant digits
/// and dropping trailing zeros; it reads back as `Numeric`, but only that precise. To keep every
/// digit and the scale, declare the column with TEXT affinity and a decimal prefix, e.g.
/// `amount DECIMAL_TEXT`: the text is stored as written and read back as an exact `Numeric`.
/// `JSON` columns have numeric affinity too; a JSON number reads back as the same `JSON` number.
///
/// Aggregates come back in the engine's own type: on Postgres `count` is `bigint`, `sum` of
/// `int2`/`int4` is `bigint`, `sum` of `int8` and `avg` of any integer or `numeric` are
/// `numeric`; on SQLite and Turso they are `Int` or `Float` (a `NUMERIC` column's values are
/// stored as numbers, so its aggregates are too). [`crate::FromValue`] decodes numbers by value,
/// so `i64`, `f64` and `Decimal` read them alike on every backend (see its table).
///
/// Typed decoding ([`crate::FromValue`]) accepts the stored form too: a `NaiveDateTime` decodes
/// from a timestamp text, a `Uuid` from text or a 16-byte blob, and so on, whatever the declared type.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RowValues {
    /// SQL `NULL`.
    Null,
    /// A 64-bit signed integer.
    Int(i64),
    /// A 64-bit float.
    Float(f64),
    /// UTF-8 text.
    Text(String),
    /// A boolean.
    Bool(bool),
    /// A timestamp without time zone.
    Timestamp(NaiveDateTime),
    /// A timestamp with time zone, normalised to UTC.
    TimestampTz(DateTime<Utc>),
    /// A calendar date.
    Date(NaiveDate),
    /// A UUID.
    Uuid(Uuid),
    /// An exact decimal number.
    Numeric(Decimal),
    /// Raw bytes.
    Blob(Vec<u8>),
    /// A JSON document.
    JSON(serde_json::Value),
    /// A time of day without time zone.
    Time(NaiveTime),
    /// A Postgres `interval`.
    Interval(Interval),
    /// A one-dimensional array (Postgres arrays; JSON text on SQLite and Turso).
    Array(Vec<RowValues>),
}

/// A borrowed view of one value, used by decoding so that reading a row does not copy text or bytes.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ValueRef<'a> {
    /// SQL `NULL`.
    Null,
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// Text, borrowed from the row (or owned when decoding produced it, as for a Postgres
    /// `inet` in its text form).
    Text(Cow<'a, str>),
    /// A boolean.
    Bool(bool),
    /// A timestamp without time zone.
    Timestamp(NaiveDateTime),
    /// A timestamp with time zone.
    TimestampTz(DateTime<Utc>),
    /// A date.
    Date(NaiveDate),
    /// A UUID.
    Uuid(Uuid),
    /// An exact decimal.
    Numeric(Decimal),
    /// Borrowed bytes.
    Blob(&'a [u8]),
    /// A JSON document (borrowed from a [`RowValues`], or owned when decoded from the wire).
    JSON(Cow<'a, serde_json::Value>),
    /// A time of day.
    Time(NaiveTime),
    /// A Postgres `interval`.
    Interval(Interval),
    /// An array (borrowed from a [`RowValues`], or owned when decoded).
    Array(Cow<'a, [RowValues]>),
}

impl RowValues {
    /// A borrowed view of this value.
    pub fn as_value_ref(&self) -> ValueRef<'_> {
        match self {
            RowValues::Null => ValueRef::Null,
            RowValues::Int(v) => ValueRef::Int(*v),
            RowValues::Float(v) => ValueRef::Float(*v),
            RowValues::Text(v) => ValueRef::Text(Cow::Borrowed(v)),
            RowValues::Bool(v) => ValueRef::Bool(*v),
            RowValues::Timestamp(v) => ValueRef::Timestamp(*v),
            RowValues::TimestampTz(v) => ValueRef::TimestampTz(*v),
            RowValues::Date(v) => ValueRef::Date(*v),
            RowValues::Uuid(v) => ValueRef::Uuid(*v),
            RowValues::Numeric(v) => ValueRef::Numeric(*v),
            RowValues::Blob(v) => ValueRef::Blob(v),
            RowValues::JSON(v) => ValueRef::JSON(Cow::Borrowed(v)),
            RowValues::Time(v) => ValueRef::Time(*v),
            RowValues::Interval(v) => ValueRef::Interval(*v),
            RowValues::Array(v) => ValueRef::Array(Cow::Borrowed(v)),
        }
    }

    /// True for [`RowValues::Null`].
    pub fn is_null(&self) -> bool {
        matches!(self, RowValues::Null)
    }

    /// The integer, if this is an `Int`.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            RowValues::Int(v) => Some(*v),
            _ => None,
        }
    }

    /// The float, if this is a `Float` (or an `Int`, widened).
    pub fn as_float(&self) -> Option<f64> {
        match self {
            RowValues::Float(v) => Some(*v),
            RowValues::Int(v) => Some(*v as f64),
            _ => None,
        }
    }

    /// The text, if this is a `Text`.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            RowValues::Text(v) => Some(v),
            _ => None,
        }
    }

    /// The boolean, if this is a `Bool` (or an `Int` 0/1, as SQLite stores booleans).
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            RowValues::Bool(v) => Some(*v),
            RowValues::Int(0) => Some(false),
            RowValues::Int(1) => Some(true),
            _ => None,
        }
    }

    /// The bytes, if this is a `Blob`.
    pub fn as_blob(&self) -> Option<&[u8]> {
        match self {
            RowValues::Blob(v) => Some(v),
            _ => None,
        }
    }

    /// The timestamp, if this is a `Timestamp`.
    pub fn as_timestamp(&self) -> Option<NaiveDateTime> {
        match self {
            RowValues::Timestamp(v) => Some(*v),
            _ => None,
        }
    }

    /// The JSON document, if this is `JSON`.
    pub fn as_json(&self) -> Option<&serde_json::Value> {
        match self {
            RowValues::JSON(v) => Some(v),
            _ => None,
        }
    }

    /// A short name of this value's kind, used in error messages.
    pub fn kind_name(&self) -> &'static str {
        self.as_value_ref().kind_name()
    }
}

/// Parameters as a builder's `Debug` shows them: each placeholder with its value's kind, never
/// the value (a password or token bound as a parameter must not reach the logs).
pub(crate) struct ParamKinds<'a>(pub(crate) &'a [RowValues]);

impl std::fmt::Debug for ParamKinds<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        struct Kind(usize, &'static str);
        impl std::fmt::Debug for Kind {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "${} {}", self.0, self.1)
            }
        }
        f.debug_list()
            .entries(
                self.0
                    .iter()
                    .enumerate()
                    .map(|(i, v)| Kind(i + 1, v.kind_name())),
            )
            .finish()
    }
}

impl ValueRef<'_> {
    /// A short name of this value's kind, used in error messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            ValueRef::Null => "NULL",
            ValueRef::Int(_) => "Int",
            ValueRef::Float(_) => "Float",
            ValueRef::Text(_) => "Text",
            ValueRef::Bool(_) => "Bool",
            ValueRef::Timestamp(_) => "Timestamp",
            ValueRef::TimestampTz(_) => "TimestampTz",
            ValueRef::Date(_) => "Date",
            ValueRef::Uuid(_) => "Uuid",
            ValueRef::Numeric(_) => "Numeric",
            ValueRef::Blob(_) => "Blob",
            ValueRef::JSON(_) => "JSON",
            ValueRef::Time(_) => "Time",
            ValueRef::Interval(_) => "Interval",
            ValueRef::Array(_) => "Array",
        }
    }

    /// Copies this view into an owned [`RowValues`].
    pub fn to_owned_value(&self) -> RowValues {
        match self {
            ValueRef::Null => RowValues::Null,
            ValueRef::Int(v) => RowValues::Int(*v),
            ValueRef::Float(v) => RowValues::Float(*v),
            ValueRef::Text(v) => RowValues::Text(v.as_ref().to_owned()),
            ValueRef::Bool(v) => RowValues::Bool(*v),
            ValueRef::Timestamp(v) => RowValues::Timestamp(*v),
            ValueRef::TimestampTz(v) => RowValues::TimestampTz(*v),
            ValueRef::Date(v) => RowValues::Date(*v),
            ValueRef::Uuid(v) => RowValues::Uuid(*v),
            ValueRef::Numeric(v) => RowValues::Numeric(*v),
            ValueRef::Blob(v) => RowValues::Blob(v.to_vec()),
            ValueRef::JSON(v) => RowValues::JSON(v.as_ref().clone()),
            ValueRef::Time(v) => RowValues::Time(*v),
            ValueRef::Interval(v) => RowValues::Interval(*v),
            ValueRef::Array(v) => RowValues::Array(v.to_vec()),
        }
    }
}

/// Parses the stored text forms of timestamps (space or `T` separator, optional fraction).
pub(crate) fn parse_timestamp(s: &str) -> Option<NaiveDateTime> {
    const FORMATS: [&str; 4] = [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M",
    ];
    FORMATS
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(s, f).ok())
        .or_else(|| {
            NaiveDate::parse_from_str(s, "%Y-%m-%d")
                .ok()
                .and_then(|d| d.and_hms_opt(0, 0, 0))
        })
}

/// Parses a time of day, `HH:MM[:SS[.f]]`.
pub(crate) fn parse_time(s: &str) -> Option<NaiveTime> {
    NaiveTime::parse_from_str(s, "%H:%M:%S%.f")
        .or_else(|_| NaiveTime::parse_from_str(s, "%H:%M"))
        .ok()
}

/// Parses RFC 3339 (or a zone-less timestamp, taken as UTC).
pub(crate) fn parse_timestamptz(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f%:z")
        .or_else(|_| DateTime::parse_from_rfc3339(s))
        .map(|d| d.with_timezone(&Utc))
        .ok()
        .or_else(|| {
            DateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f%#z")
                .ok()
                .map(|d| d.with_timezone(&Utc))
        })
        .or_else(|| parse_timestamp(s).map(|t| t.and_utc()))
}

macro_rules! from_impls {
    ($($t:ty => $variant:ident $(as $cast:ty)?),* $(,)?) => {
        $(impl From<$t> for RowValues {
            fn from(v: $t) -> Self {
                RowValues::$variant(v $(as $cast)?)
            }
        })*
    };
}

from_impls!(
    i64 => Int,
    i32 => Int as i64,
    i16 => Int as i64,
    i8 => Int as i64,
    u32 => Int as i64,
    u16 => Int as i64,
    u8 => Int as i64,
    f64 => Float,
    f32 => Float as f64,
    bool => Bool,
    String => Text,
    NaiveDateTime => Timestamp,
    DateTime<Utc> => TimestampTz,
    NaiveDate => Date,
    Uuid => Uuid,
    Decimal => Numeric,
    Vec<u8> => Blob,
    serde_json::Value => JSON,
    NaiveTime => Time,
    Interval => Interval,
);

impl RowValues {
    /// An array of `items` (`RowValues::Array`): `RowValues::array([1, 2, 3])`.
    pub fn array<T: Into<RowValues>>(items: impl IntoIterator<Item = T>) -> Self {
        RowValues::Array(items.into_iter().map(Into::into).collect())
    }
}

impl From<&str> for RowValues {
    fn from(v: &str) -> Self {
        RowValues::Text(v.to_owned())
    }
}

impl From<&String> for RowValues {
    fn from(v: &String) -> Self {
        RowValues::Text(v.clone())
    }
}

impl From<&[u8]> for RowValues {
    fn from(v: &[u8]) -> Self {
        RowValues::Blob(v.to_vec())
    }
}

impl<T: Into<RowValues>> From<Option<T>> for RowValues {
    fn from(v: Option<T>) -> Self {
        v.map_or(RowValues::Null, Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_impls_pick_the_right_kind() {
        assert_eq!(RowValues::from(5_i32), RowValues::Int(5));
        assert_eq!(RowValues::from("a"), RowValues::Text("a".into()));
        assert_eq!(RowValues::from(None::<i64>), RowValues::Null);
        assert_eq!(RowValues::from(Some(1.5_f64)), RowValues::Float(1.5));
        assert_eq!(RowValues::from(true).as_bool(), Some(true));
    }
}
