//! Typed decoding: [`FromValue`] for single values, [`FromRow`] for whole rows, and the
//! [`SqlRow`] view that both the materialised [`crate::CustomDbRow`] and the drivers' own rows implement.

use std::borrow::Cow;

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use rust_decimal::Decimal;
use rust_decimal::prelude::FromPrimitive;
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
///
/// Numbers decode by value, not by the engine's type for them, so the same code reads an
/// aggregate on every backend (Postgres gives `sum(bigint)` and `avg` as `numeric`, SQLite and
/// Turso an integer or a real):
///
/// | into | from |
/// |---|---|
/// | `i8`…`i64`, `u8`…`u64`, `i128`, `u128` | `Int` and `Bool` (0/1); a `Numeric` with no fractional part (`7.00` is 7). A fractional `Numeric`, or a value out of the type's range, is an [`crate::ErrorKind::TypeMismatch`] that says which |
/// | `f64`, `f32` | `Float`, `Int`, any `Numeric` (the nearest float, as Postgres's `::float8` cast gives it); a finite `Float` beyond `f32`'s range is a `TypeMismatch` |
/// | [`Decimal`] | `Numeric`, `Int`, a finite `Float` (without its binary noise: `0.1` is `0.1`, as a SQLite `NUMERIC` column reads back), `Text` holding a decimal whose value a `Decimal` holds exactly (trailing zeros past 28 places dropped; more significant digits than that are a `TypeMismatch`, never rounded) |
///
/// A `Float` never decodes into an integer type, and `Text` never into a number type other than
/// `Decimal`: SQLite returns text for `min`/`max` of a column with TEXT affinity (such as
/// `DECIMAL_TEXT`), and those compare as text. `NULL` decodes only into `Option<_>`, so `sum`,
/// `avg`, `min` and `max` over no rows read as `None`.
///
/// ```
/// use sql_middleware::prelude::*;
///
/// # async fn demo(conn: &mut MiddlewarePoolConnection) -> Result<(), SqlMiddlewareDbError> {
/// // The same line on SQLite, Turso and Postgres.
/// let (n, total, mean): (i64, Option<i64>, Option<f64>) = conn
///     .query("SELECT count(*), sum(amount), avg(amount) FROM orders")
///     .one()
///     .await?;
/// # Ok(())
/// # }
/// ```
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
            ValueRef::Numeric(d) => numeric_to_int(d, "i64"),
            other => mismatch("i64", &other),
        }
    }
}

/// An integral `Numeric` as an integer type: a fractional value and one out of the type's
/// range are typed errors that say which. Kept out of line so the `Int` arm stays as cheap as
/// before.
#[cold]
#[inline(never)]
fn numeric_to_int<T: TryFrom<i128>>(
    d: Decimal,
    expected: &'static str,
) -> std::result::Result<T, DecodeError> {
    if !d.is_integer() {
        return Err(DecodeError::new(expected, "Numeric with a fractional part"));
    }
    // Integral, so truncating drops only zeros; a 96-bit mantissa always fits in i128.
    T::try_from(d.as_i128()).map_err(|_| DecodeError::new(expected, "Numeric out of range"))
}

/// 10^0 ..= 10^22: the powers of ten a double holds exactly.
const EXACT_POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// A `Numeric` as the nearest `f64`, as PostgreSQL's own `numeric::float8` cast gives it.
///
/// Mantissas up to 2^53 with up to 22 decimal places are one correctly rounded division of two
/// exact doubles; anything else goes through the decimal text, which the standard parser
/// rounds correctly too.
#[cold]
#[inline(never)]
fn numeric_to_f64(d: Decimal) -> f64 {
    const EXACT_MANTISSA: u128 = 1 << 53;
    let m = d.mantissa().unsigned_abs();
    let scale = d.scale() as usize;
    let magnitude = if m <= EXACT_MANTISSA && scale < EXACT_POW10.len() {
        m as f64 / EXACT_POW10[scale]
    } else {
        // A decimal's text is always a valid float literal.
        d.abs().to_string().parse::<f64>().unwrap_or(f64::NAN)
    };
    if d.is_sign_negative() {
        -magnitude
    } else {
        magnitude
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
                    ValueRef::Numeric(d) => numeric_to_int(d, stringify!($t)),
                    other => mismatch(stringify!($t), &other),
                }
            }
        }
    )*};
}
narrow_int!(i32, i16, i8, u64, u32, u16, u8, u128);

impl FromValue for i128 {
    fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
        match v {
            ValueRef::Int(i) => Ok(i128::from(i)),
            ValueRef::Bool(b) => Ok(i128::from(b)),
            ValueRef::Numeric(d) => numeric_to_int(d, "i128"),
            other => mismatch("i128", &other),
        }
    }
}

impl FromValue for f64 {
    #[inline]
    fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
        match v {
            ValueRef::Float(f) => Ok(f),
            ValueRef::Int(i) => Ok(i as f64),
            ValueRef::Numeric(d) => Ok(numeric_to_f64(d)),
            other => mismatch("f64", &other),
        }
    }
}

impl FromValue for f32 {
    fn from_value(v: ValueRef<'_>) -> std::result::Result<Self, DecodeError> {
        match v {
            ValueRef::Float(f) => {
                let narrowed = f as f32;
                if narrowed.is_infinite() && f.is_finite() {
                    return Err(DecodeError::new("f32", "Float out of range"));
                }
                Ok(narrowed)
            }
            ValueRef::Int(i) => Ok(i as f32),
            // Every decimal is within f32's range (the largest is about 7.9e28).
            ValueRef::Numeric(d) => Ok(numeric_to_f32(d)),
            other => mismatch("f32", &other),
        }
    }
}

/// A `Numeric` as the nearest `f32` (see [`numeric_to_f64`]; going through `f64` could round
/// twice).
#[cold]
#[inline(never)]
fn numeric_to_f32(d: Decimal) -> f32 {
    const EXACT_MANTISSA: u128 = 1 << 24;
    const EXACT_POW10: [f32; 11] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10];
    let m = d.mantissa().unsigned_abs();
    let scale = d.scale() as usize;
    let magnitude = if m <= EXACT_MANTISSA && scale < EXACT_POW10.len() {
        m as f32 / EXACT_POW10[scale]
    } else {
        d.abs().to_string().parse::<f32>().unwrap_or(f32::NAN)
    };
    if d.is_sign_negative() {
        -magnitude
    } else {
        magnitude
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
            // As SQLite reads a REAL stored in a NUMERIC column: without the binary noise
            // (0.1 decodes as 0.1, not 0.1000000000000000055...).
            ValueRef::Float(f) => float_to_decimal(f),
            ValueRef::Text(s) => decimal_from_text(&s),
            other => mismatch("Decimal", &other),
        }
    }
}

/// The [`Decimal`] that holds the decimal text `s` exactly, value for value: every nonzero
/// digit kept, and as much of the scale as fits (trailing zeros past 28 decimal places, or past
/// a full 96-bit mantissa, are dropped, as few as need be). `None` when a `Decimal` cannot hold
/// the value (more significant digits than that), or `s` is no plain decimal: never rounded.
#[inline]
pub(crate) fn exact_decimal(s: &str) -> Option<Decimal> {
    match Decimal::from_str_exact(s) {
        Ok(d) => Some(d),
        Err(_) => exact_decimal_trimmed(s),
    }
}

/// [`exact_decimal`] of a text with more digits than a `Decimal` holds as written.
#[cold]
#[inline(never)]
fn exact_decimal_trimmed(s: &str) -> Option<Decimal> {
    let (int, frac) = s.split_once('.')?;
    let digits = frac.trim_end_matches('0');
    if digits.len() == frac.len() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut d = if digits.is_empty() {
        Decimal::from_str_exact(int)
    } else {
        Decimal::from_str_exact(&format!("{int}.{digits}"))
    }
    .ok()?;
    // Widening the scale never rounds: it stops where the mantissa is full.
    d.rescale(frac.len().min(28) as u32);
    Some(d)
}

/// A decimal written as text, exactly or not at all (see [`exact_decimal`]): more significant
/// digits than a `Decimal` holds are an error, never a rounded number. Scientific notation is
/// read when its digits fit.
#[cold]
#[inline(never)]
fn decimal_from_text(s: &str) -> std::result::Result<Decimal, DecodeError> {
    if let Some(d) = exact_decimal(s) {
        return Ok(d);
    }
    if let Some((base, _)) = s.split_once(['e', 'E']) {
        // Scientific notation, when its digits fit (the exponent then only moves the point).
        if Decimal::from_str_exact(base).is_ok() {
            return Decimal::from_scientific(s)
                .map_err(|_| DecodeError::new("Decimal", "Text beyond Decimal's range"));
        }
        return Err(DecodeError::new("Decimal", "unparsable Text"));
    }
    let unsigned = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (int, frac) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    let number = int.len() + frac.len() > 0
        && int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit());
    Err(DecodeError::new(
        "Decimal",
        if number {
            "Text with more digits than a Decimal holds"
        } else {
            "unparsable Text"
        },
    ))
}

#[cold]
#[inline(never)]
fn float_to_decimal(f: f64) -> std::result::Result<Decimal, DecodeError> {
    if !f.is_finite() {
        return Err(DecodeError::new("Decimal", "non-finite Float"));
    }
    Decimal::from_f64(f).ok_or(DecodeError::new("Decimal", "Float out of range"))
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

    fn num(s: &str) -> ValueRef<'static> {
        ValueRef::Numeric(s.parse().unwrap())
    }

    #[test]
    fn integral_numeric_decodes_into_integers() {
        assert_eq!(i64::from_value(num("42")), Ok(42));
        assert_eq!(i64::from_value(num("-42")), Ok(-42));
        // Scale does not matter, only the value: 7.000 is the integer 7.
        assert_eq!(i64::from_value(num("7.000")), Ok(7));
        assert_eq!(i32::from_value(num("-7.00")), Ok(-7));
        assert_eq!(u8::from_value(num("255.0")), Ok(255));
        // Negative zero is zero, for signed and unsigned types alike.
        assert_eq!(i64::from_value(num("-0")), Ok(0));
        assert_eq!(u64::from_value(num("-0.00")), Ok(0));
        assert_eq!(i64::from_value(num("9223372036854775807")), Ok(i64::MAX));
        assert_eq!(i64::from_value(num("-9223372036854775808")), Ok(i64::MIN));
        assert_eq!(u64::from_value(num("18446744073709551615")), Ok(u64::MAX));
        // The largest decimal fits the 128-bit types.
        assert_eq!(
            i128::from_value(ValueRef::Numeric(Decimal::MIN)),
            Ok(-79_228_162_514_264_337_593_543_950_335)
        );
        assert_eq!(
            u128::from_value(ValueRef::Numeric(Decimal::MAX)),
            Ok(79_228_162_514_264_337_593_543_950_335)
        );
        assert_eq!(
            i128::from_value(num("18446744073709551614")),
            Ok(18_446_744_073_709_551_614)
        );
        assert_eq!(i128::from_value(ValueRef::Int(-3)), Ok(-3));
        assert_eq!(u128::from_value(ValueRef::Int(3)), Ok(3));
        assert_eq!(Option::<i64>::from_value(num("5")), Ok(Some(5)));
    }

    #[test]
    fn fractional_or_out_of_range_numeric_is_a_typed_error() {
        let e = i64::from_value(num("2.5")).unwrap_err();
        assert_eq!(
            (e.expected, e.found),
            ("i64", "Numeric with a fractional part")
        );
        // The smallest fraction a decimal holds still counts.
        let e = i64::from_value(num("1.0000000000000000000000000001")).unwrap_err();
        assert_eq!(e.found, "Numeric with a fractional part");
        let e = u64::from_value(num("-0.5")).unwrap_err();
        assert_eq!(e.found, "Numeric with a fractional part");

        let e = i64::from_value(num("9223372036854775808")).unwrap_err();
        assert_eq!((e.expected, e.found), ("i64", "Numeric out of range"));
        let e = i64::from_value(num("-9223372036854775809")).unwrap_err();
        assert_eq!(e.found, "Numeric out of range");
        let e = u64::from_value(num("-1")).unwrap_err();
        assert_eq!((e.expected, e.found), ("u64", "Numeric out of range"));
        let e = i8::from_value(num("128.00")).unwrap_err();
        assert_eq!((e.expected, e.found), ("i8", "Numeric out of range"));
        let e = u128::from_value(num("-1")).unwrap_err();
        assert_eq!(e.found, "Numeric out of range");

        // Through a row, the error names the column and says which.
        let r = CustomDbRow::new(
            Arc::new(Columns::new(vec!["total".into()])),
            vec![RowValues::Numeric("12.5".parse().unwrap())],
        );
        let e = r.try_get::<i64>("total").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TypeMismatch);
        assert!(
            e.message().contains("`total`") && e.message().contains("fractional"),
            "{e}"
        );
    }

    #[test]
    fn any_numeric_decodes_into_the_nearest_float() {
        for text in [
            "0",
            "0.1",
            "-0.1",
            "2.5",
            "1.005",
            "123456789.123456789",
            "9007199254740993",
            "18446744073709551614",
            "-79228162514264337593543950335",
            "0.0000000000000000000000000001",
            "3.1415926535897932384626433833",
        ] {
            let want: f64 = text.parse().unwrap();
            assert_eq!(f64::from_value(num(text)), Ok(want), "{text} as f64");
            let want: f32 = text.parse().unwrap();
            assert_eq!(f32::from_value(num(text)), Ok(want), "{text} as f32");
        }
        // Scale does not change the value.
        assert_eq!(f64::from_value(num("2.50000")), Ok(2.5));
        let neg_zero = f64::from_value(num("-0")).unwrap();
        assert_eq!(neg_zero, 0.0);
        assert_eq!(Option::<f64>::from_value(num("1.5")), Ok(Some(1.5)));
    }

    #[test]
    fn decimal_text_decodes_exactly_or_not_at_all() {
        let text = |s: &'static str| Decimal::from_value(ValueRef::Text(Cow::Borrowed(s)));
        for (s, want) in [
            ("12.50", "12.50"),
            ("-0.0000000000000000000000000001", "-0.0000000000000000000000000001"),
            ("79228162514264337593543950335", "79228162514264337593543950335"),
            // Trailing zeros past 28 places: only those are dropped.
            (
                "1.500000000000000000000000000000",
                "1.5000000000000000000000000000",
            ),
            (
                "12345678901234567890.500000000000000000000000000000",
                "12345678901234567890.500000000",
            ),
            ("7.000000000000000000000000000000", "7.0000000000000000000000000000"),
            ("1.5e3", "1500"),
        ] {
            assert_eq!(text(s).map(|d| d.to_string()), Ok(want.to_owned()), "{s}");
        }
        for (s, why) in [
            (
                "1.2345678901234567890123456789012",
                "Text with more digits than a Decimal holds",
            ),
            (
                "79228162514264337593543950336",
                "Text with more digits than a Decimal holds",
            ),
            (
                "0.00000000000000000000000000001",
                "Text with more digits than a Decimal holds",
            ),
            ("NaN", "unparsable Text"),
            ("Infinity", "unparsable Text"),
            ("", "unparsable Text"),
            ("1.2.3", "unparsable Text"),
        ] {
            assert_eq!(text(s).unwrap_err().found, why, "{s}");
        }
    }

    #[test]
    fn floats_and_decimals_cross_checked() {
        assert_eq!(
            Decimal::from_value(ValueRef::Float(0.1)),
            Ok("0.1".parse().unwrap())
        );
        assert_eq!(
            Decimal::from_value(ValueRef::Float(-2.25)),
            Ok("-2.25".parse().unwrap())
        );
        assert_eq!(
            Decimal::from_value(ValueRef::Float(f64::NAN))
                .unwrap_err()
                .found,
            "non-finite Float"
        );
        assert_eq!(
            Decimal::from_value(ValueRef::Float(1e30))
                .unwrap_err()
                .found,
            "Float out of range"
        );
        assert_eq!(
            f32::from_value(ValueRef::Float(1e300)).unwrap_err().found,
            "Float out of range"
        );
        assert_eq!(
            f32::from_value(ValueRef::Float(f64::INFINITY)),
            Ok(f32::INFINITY)
        );
        // The fast paths are unchanged.
        assert_eq!(i64::from_value(ValueRef::Int(-5)), Ok(-5));
        assert_eq!(f64::from_value(ValueRef::Int(3)), Ok(3.0));
        assert_eq!(f64::from_value(ValueRef::Float(0.5)), Ok(0.5));
        assert_eq!(
            i64::from_value(ValueRef::Float(1.0)).unwrap_err().found,
            "Float"
        );
    }
}
