//! Column listing for the SQLite family: names, and a hint per column derived once from its
//! declared type, which says how a stored value is widened back to the kind it was written as
//! (SQLite and Turso store dates, UUIDs, decimals and JSON as text, booleans as integers).

use std::borrow::Cow;
use std::sync::Arc;

use rust_decimal::Decimal;
use rust_decimal::prelude::FromPrimitive;

use crate::results::Columns;
use crate::value::{ValueRef, parse_timestamp, parse_timestamptz};

/// How a column's stored values are read back, from its declared type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ColumnHint {
    Plain,
    Bool,
    Timestamp,
    TimestampTz,
    Date,
    Uuid,
    Numeric,
    Json,
    Time,
    Interval,
    Array,
}

impl ColumnHint {
    /// Maps a declared column type (`decltype`) to a hint. Unknown types stay plain.
    pub(crate) fn from_decltype(decl: Option<&str>) -> Self {
        let Some(decl) = decl else {
            return ColumnHint::Plain;
        };
        let d = decl.trim().to_ascii_uppercase();
        match d.as_str() {
            "BOOL" | "BOOLEAN" => ColumnHint::Bool,
            "TIMESTAMP" | "DATETIME" => ColumnHint::Timestamp,
            "TIMESTAMPTZ" | "TIMESTAMP WITH TIME ZONE" => ColumnHint::TimestampTz,
            "DATE" => ColumnHint::Date,
            "UUID" => ColumnHint::Uuid,
            "JSON" | "JSONB" => ColumnHint::Json,
            "TIME" => ColumnHint::Time,
            "INTERVAL" => ColumnHint::Interval,
            "ARRAY" => ColumnHint::Array,
            _ if d.ends_with("[]") => ColumnHint::Array,
            _ if d.starts_with("NUMERIC") || d.starts_with("DECIMAL") => ColumnHint::Numeric,
            _ => ColumnHint::Plain,
        }
    }

    /// SQLite gives `NUMERIC` and `JSON` columns numeric affinity, so number-like text comes
    /// back as an integer or a real: read it back as the declared kind.
    #[inline]
    pub(crate) fn widen_int(self, i: i64) -> ValueRef<'static> {
        if self == ColumnHint::Plain {
            return ValueRef::Int(i);
        }
        self.widen_int_by_hint(i)
    }

    fn widen_int_by_hint(self, i: i64) -> ValueRef<'static> {
        match (self, i) {
            (ColumnHint::Bool, 0) => ValueRef::Bool(false),
            (ColumnHint::Bool, 1) => ValueRef::Bool(true),
            (ColumnHint::Numeric, _) => ValueRef::Numeric(Decimal::from(i)),
            (ColumnHint::Json, _) => ValueRef::JSON(Cow::Owned(serde_json::Value::from(i))),
            _ => ValueRef::Int(i),
        }
    }

    /// See [`ColumnHint::widen_int`].
    #[inline]
    pub(crate) fn widen_real(self, f: f64) -> ValueRef<'static> {
        if self == ColumnHint::Plain {
            return ValueRef::Float(f);
        }
        self.widen_real_by_hint(f)
    }

    fn widen_real_by_hint(self, f: f64) -> ValueRef<'static> {
        let widened = match self {
            ColumnHint::Numeric => Decimal::from_f64(f).map(ValueRef::Numeric),
            ColumnHint::Json => serde_json::Number::from_f64(f)
                .map(|n| ValueRef::JSON(Cow::Owned(serde_json::Value::Number(n)))),
            _ => None,
        };
        widened.unwrap_or(ValueRef::Float(f))
    }

    /// Text stored for a date, UUID, decimal or JSON column, read back as that kind; text that
    /// does not parse stays text.
    #[inline]
    pub(crate) fn widen_text(self, s: &str) -> ValueRef<'_> {
        if matches!(self, ColumnHint::Plain | ColumnHint::Bool) {
            return ValueRef::Text(Cow::Borrowed(s));
        }
        self.widen_text_by_hint(s)
    }

    fn widen_text_by_hint(self, s: &str) -> ValueRef<'_> {
        let widened = match self {
            ColumnHint::Plain | ColumnHint::Bool => None,
            ColumnHint::Timestamp => parse_timestamp(s).map(ValueRef::Timestamp),
            ColumnHint::TimestampTz => parse_timestamptz(s).map(ValueRef::TimestampTz),
            ColumnHint::Date => chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
                .ok()
                .map(ValueRef::Date),
            ColumnHint::Uuid => uuid::Uuid::parse_str(s).ok().map(ValueRef::Uuid),
            // Exactly, or not at all (the text is kept): a `Decimal` would round past 28 places.
            ColumnHint::Numeric => crate::decode::exact_decimal(s).map(ValueRef::Numeric),
            ColumnHint::Json => serde_json::from_str(s)
                .ok()
                .map(|j| ValueRef::JSON(Cow::Owned(j))),
            ColumnHint::Time => crate::value::parse_time(s).map(ValueRef::Time),
            ColumnHint::Interval => s.parse().ok().map(ValueRef::Interval),
            ColumnHint::Array => crate::sqlite_family::text_form::array_from_text(s)
                .map(|items| ValueRef::Array(Cow::Owned(items))),
        };
        widened.unwrap_or(ValueRef::Text(Cow::Borrowed(s)))
    }
}

/// A statement's columns as the SQLite family reads them: the shared [`Columns`] every row and
/// result set points to, and one hint per column.
#[derive(Debug, PartialEq)]
pub(crate) struct Described {
    pub(crate) columns: Arc<Columns>,
    hints: Box<[ColumnHint]>,
}

impl Described {
    /// Lists `(name, declared type)` pairs, in column order.
    pub(crate) fn new<'a>(cols: impl Iterator<Item = (&'a str, Option<&'a str>)>) -> Self {
        let (names, hints): (Vec<String>, Vec<ColumnHint>) = cols
            .map(|(name, decl)| (name.to_owned(), ColumnHint::from_decltype(decl)))
            .unzip();
        Self {
            columns: Arc::new(Columns::new(names)),
            hints: hints.into_boxed_slice(),
        }
    }

    /// Number of columns.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.hints.len()
    }

    /// The hint of column `idx` (plain when out of range).
    #[inline]
    pub(crate) fn hint(&self, idx: usize) -> ColumnHint {
        self.hints.get(idx).copied().unwrap_or(ColumnHint::Plain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_types_become_hints() {
        assert_eq!(
            ColumnHint::from_decltype(Some(" boolean ")),
            ColumnHint::Bool
        );
        assert_eq!(
            ColumnHint::from_decltype(Some("NUMERIC(10,2)")),
            ColumnHint::Numeric
        );
        assert_eq!(ColumnHint::from_decltype(Some("jsonb")), ColumnHint::Json);
        assert_eq!(
            ColumnHint::from_decltype(Some("VARCHAR(3)")),
            ColumnHint::Plain
        );
        assert_eq!(ColumnHint::from_decltype(None), ColumnHint::Plain);
    }

    #[test]
    fn stored_forms_widen_back() {
        assert_eq!(ColumnHint::Bool.widen_int(1), ValueRef::Bool(true));
        assert_eq!(ColumnHint::Bool.widen_int(7), ValueRef::Int(7));
        assert_eq!(
            ColumnHint::Numeric.widen_int(3),
            ValueRef::Numeric(Decimal::from(3))
        );
        assert_eq!(ColumnHint::Plain.widen_real(0.5), ValueRef::Float(0.5));
        assert_eq!(
            ColumnHint::Date.widen_text("not a date"),
            ValueRef::Text(Cow::Borrowed("not a date"))
        );
        assert!(matches!(
            ColumnHint::Uuid.widen_text("67e55044-10b1-426f-9247-bb680e5fe0c8"),
            ValueRef::Uuid(_)
        ));
    }

    #[test]
    fn described_lists_names_and_hints() {
        let d = Described::new([("id", Some("INTEGER")), ("ok", Some("BOOL"))].into_iter());
        assert_eq!(d.len(), 2);
        assert_eq!(d.columns.name(1), Some("ok"));
        assert_eq!(d.hint(1), ColumnHint::Bool);
        assert_eq!(d.hint(9), ColumnHint::Plain);
    }
}
