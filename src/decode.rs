//! Typed decoding: [`FromValue`] for single values, [`FromRow`] for whole rows, and the
//! [`SqlRow`] view that both the materialised [`crate::CustomDbRow`] and the drivers' own rows implement.

use std::borrow::Cow;

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use rust_decimal::Decimal;
use uuid::Uuid;

use crate::error::{DecodeError, ErrorKind, Result, SqlMiddlewareDbError};
use crate::value::{RowValues, ValueRef, parse_timestamp, parse_timestamptz};

/// Read access to one result row, by index or by name.
///
/// Implemented by [`crate::CustomDbRow`] and by each backend's driver row, so a [`FromRow`]
/// decodes straight from the driver without materialising a [`crate::ResultSet`].
pub trait SqlRow {
    /// Number of columns.
    fn column_count(&self) -> usize;
    /// The name of column `idx`.
    fn column_name(&self, idx: usize) -> Option<&str>;
    /// The index of the column called `name` (exact, then ASCII case-insensitive).
    fn column_index(&self, name: &str) -> Option<usize>;
    /// A borrowed view of the value at `idx`.
    fn value_ref(&self, idx: usize) -> Result<ValueRef<'_>>;

    /// Decodes one column (by name or index) into `T`, with a typed error naming the column.
    #[inline]
    fn get<T: FromValue>(&self, column: impl ColumnRef) -> Result<T>
    where
        Self: Sized,
    {
        let idx = column.index_in(self)?;
        let value = self.value_ref(idx)?;
        T::from_value(value).map_err(|e| e.at_column(self.column_name(idx).unwrap_or("?")))
    }
}

/// Something that names a column: a `usize` index or a `&str` name.
pub trait ColumnRef {
    /// Resolves to an index in `row`, or a [`ErrorKind::ColumnNotFound`] error.
    fn index_in<R: SqlRow + ?Sized>(&self, row: &R) -> Result<usize>;
}

impl ColumnRef for usize {
    #[inline]
    fn index_in<R: SqlRow + ?Sized>(&self, row: &R) -> Result<usize> {
        if *self < row.column_count() {
            Ok(*self)
        } else {
            Err(column_out_of_range(*self, row.column_count()))
        }
    }
}

impl ColumnRef for &str {
    fn index_in<R: SqlRow + ?Sized>(&self, row: &R) -> Result<usize> {
        row.column_index(self).ok_or_else(|| {
            let names: Vec<&str> = (0..row.column_count())
                .filter_map(|i| row.column_name(i))
                .collect();
            SqlMiddlewareDbError::new(
                ErrorKind::ColumnNotFound,
                format!(
                    "no column named `{self}` in this result; its columns are: {}",
                    names.join(", ")
                ),
            )
        })
    }
}

impl ColumnRef for &String {
    fn index_in<R: SqlRow + ?Sized>(&self, row: &R) -> Result<usize> {
        self.as_str().index_in(row)
    }
}

pub(crate) fn column_out_of_range(idx: usize, len: usize) -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        ErrorKind::ColumnNotFound,
        format!("column index {idx} is out of range; this result has {len} column(s)"),
    )
}

/// Conversion from one result value into a Rust type.
pub trait FromValue: Sized {
    /// Converts `value`, or says which kind was found instead.
    fn from_value(value: ValueRef<'_>) -> std::result::Result<Self, DecodeError>;
}

/// Conversion from a whole row into a Rust type. Implemented for tuples (by position) and by users:
///
/// ```
/// use sql_middleware::prelude::*;
///
/// struct User { id: i64, name: String }
///
/// impl FromRow for User {
///     fn from_row<R: SqlRow>(row: &R) -> Result<Self, SqlMiddlewareDbError> {
///         Ok(User { id: row.get("id")?, name: row.get("name")? })
///     }
/// }
/// ```
pub trait FromRow: Sized {
    /// Builds `Self` from `row`.
    fn from_row<R: SqlRow>(row: &R) -> Result<Self>;
}

fn mismatch<T>(
    expected: &'static str,
    found: &ValueRef<'_>,
) -> std::result::Result<T, DecodeError> {
    Err(DecodeError::new(expected, found.kind_name()))
}

impl FromValue for i64 {
    #[inline]
    fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
        match v {
            ValueRef::Int(i) => Ok(i),
            ValueRef::Bool(b) => Ok(i64::from(b)),
            other => mismatch("i64", &other),
        }
    }
}

macro_rules! narrow_int {
    ($($t:ty),*) => {$(
        impl FromValue for $t {
            fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
                match v {
                    ValueRef::Int(i) => <$t>::try_from(i)
                        .map_err(|_| DecodeError::new(stringify!($t), "Int out of range")),
                    ValueRef::Bool(b) => Ok(<$t>::from(b)),
                    other => mismatch(stringify!($t), &other),
                }
            }
        }
    )*};
}
narrow_int!(i32, i16, i8, u64, u32, u16, u8);

impl FromValue for f64 {
    #[inline]
    fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
        match v {
            ValueRef::Float(f) => Ok(f),
            ValueRef::Int(i) => Ok(i as f64),
            other => mismatch("f64", &other),
        }
    }
}

impl FromValue for f32 {
    fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
        match v {
            ValueRef::Float(f) => Ok(f as f32),
            ValueRef::Int(i) => Ok(i as f32),
            other => mismatch("f32", &other),
        }
    }
}

impl FromValue for bool {
    #[inline]
    fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
        match v {
            ValueRef::Bool(b) => Ok(b),
            ValueRef::Int(0) => Ok(false),
            ValueRef::Int(1) => Ok(true),
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

impl FromValue for Decimal {
    fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
        match v {
            ValueRef::Numeric(d) => Ok(d),
            ValueRef::Int(i) => Ok(Decimal::from(i)),
            ValueRef::Text(s) => s
                .parse::<Decimal>()
                .map_err(|_| DecodeError::new("Decimal", "unparsable Text")),
            other => mismatch("Decimal", &other),
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

macro_rules! tuple_from_row {
    ($($name:ident : $idx:tt),+) => {
        impl<$($name: FromValue),+> FromRow for ($($name,)+) {
            fn from_row<R: SqlRow>(row: &R) -> Result<Self> {
                Ok(($(row.get::<$name>($idx)?,)+))
            }
        }
    };
}
tuple_from_row!(A: 0);
tuple_from_row!(A: 0, B: 1);
tuple_from_row!(A: 0, B: 1, C: 2);
tuple_from_row!(A: 0, B: 1, C: 2, D: 3);
tuple_from_row!(A: 0, B: 1, C: 2, D: 3, E: 4);
tuple_from_row!(A: 0, B: 1, C: 2, D: 3, E: 4, F: 5);
tuple_from_row!(A: 0, B: 1, C: 2, D: 3, E: 4, F: 5, G: 6);
tuple_from_row!(A: 0, B: 1, C: 2, D: 3, E: 4, F: 5, G: 6, H: 7);
tuple_from_row!(A: 0, B: 1, C: 2, D: 3, E: 4, F: 5, G: 6, H: 7, I: 8);
tuple_from_row!(A: 0, B: 1, C: 2, D: 3, E: 4, F: 5, G: 6, H: 7, I: 8, J: 9);
tuple_from_row!(A: 0, B: 1, C: 2, D: 3, E: 4, F: 5, G: 6, H: 7, I: 8, J: 9, K: 10);
tuple_from_row!(A: 0, B: 1, C: 2, D: 3, E: 4, F: 5, G: 6, H: 7, I: 8, J: 9, K: 10, L: 11);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CustomDbRow;
    use crate::results::Columns;
    use std::sync::Arc;

    fn row() -> CustomDbRow {
        CustomDbRow::new(
            Arc::new(Columns::new(vec![
                "id".into(),
                "name".into(),
                "maybe".into(),
            ])),
            vec![
                RowValues::Int(7),
                RowValues::Text("x".into()),
                RowValues::Null,
            ],
        )
    }

    #[test]
    fn tuple_and_named_access() {
        let r = row();
        let (id, name, maybe): (i64, String, Option<i64>) = FromRow::from_row(&r).unwrap();
        assert_eq!((id, name.as_str(), maybe), (7, "x", None));
        assert_eq!(r.try_get::<String>("NAME").unwrap(), "x");
    }

    #[test]
    fn errors_name_the_column() {
        let r = row();
        let e = r.try_get::<i64>("maybe").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TypeMismatch);
        assert!(e.message().contains("`maybe`"), "{e}");
        let e = r.try_get::<i64>("name").unwrap_err();
        assert!(
            e.message().contains("`name`") && e.message().contains("Text"),
            "{e}"
        );
        let e = r.try_get::<i64>("nope").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ColumnNotFound);
        let e = r.try_get::<i64>(9).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ColumnNotFound);
        assert_eq!(
            i8::from_value(ValueRef::Int(300)).unwrap_err().found,
            "Int out of range"
        );
    }
}
