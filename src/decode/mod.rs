//! Typed decoding: [`FromValue`] for single values, [`FromRow`] for whole rows, and the
//! [`SqlRow`] view that both the materialised [`crate::CustomDbRow`] and the drivers' own rows implement.

use rust_decimal::Decimal;

use crate::error::{DecodeError, ErrorKind, Result, SqlMiddlewareDbError};
use crate::value::ValueRef;

mod numbers;
pub(crate) mod taking;
mod values;

pub(crate) use taking::decode_taking;

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

    /// Decodes one column as [`get`](Self::get) does, but may move the value out of the row
    /// instead of copying it, where the row owns it (a MySQL text value becomes the `String`
    /// without a copy). A column taken so may not be read again: in the rows the crate hands
    /// to [`FromRow::from_row_taking`], a second read is a [`ErrorKind::ColumnNotFound`] error
    /// on every backend. Rows that hold nothing to move (every other backend's, and
    /// [`crate::CustomDbRow`]) read the value as `get` does.
    #[inline]
    fn take<T: FromValue>(&mut self, column: impl ColumnRef) -> Result<T>
    where
        Self: Sized,
    {
        self.get(column)
    }

    /// `T::from_row(self)`: what [`FromRow::from_row_taking`] does by default. Not meant to be
    /// called or overridden; the crate's own wrapper around a fetched row overrides it to hand
    /// `from_row` the backend's row itself, so that a `FromRow` that never takes pays nothing
    /// for the wrapper.
    #[doc(hidden)]
    #[inline]
    fn decode_in_place<T: FromRow>(&self) -> Result<T>
    where
        Self: Sized,
    {
        T::from_row(self)
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

    /// Builds `Self` from a row that is dropped afterwards, which the crate calls whenever it
    /// decodes a row it fetched. It may read each column once with [`SqlRow::take`], which moves
    /// a value out of the row where the row owns it instead of copying it. The default calls
    /// [`from_row`](Self::from_row); the tuples and `#[derive(FromRow)]` read each column with
    /// `take` (a derived struct with a `flatten` field, or with two fields of one column name,
    /// keeps the default). An implementation that reads a column twice must keep the default.
    #[inline]
    fn from_row_taking<R: SqlRow>(row: &mut R) -> Result<Self> {
        row.decode_in_place()
    }
}

/// `x`, read from `v`, which holds nothing to free (a number or a boolean): `v` is forgotten
/// rather than dropped, which keeps the enum's drop glue (owned text, JSON, arrays) off the
/// decoders' hot arms, where it is not always inlined.
#[inline(always)]
fn read_plain<T>(v: ValueRef<'_>, x: T) -> T {
    debug_assert!(matches!(
        v,
        ValueRef::Null | ValueRef::Int(_) | ValueRef::Float(_) | ValueRef::Bool(_)
    ));
    std::mem::forget(v);
    x
}

fn mismatch<T>(
    expected: &'static str,
    found: &ValueRef<'_>,
) -> std::result::Result<T, DecodeError> {
    Err(DecodeError::new(expected, found.kind_name()))
}

macro_rules! tuple_from_row {
    ($($name:ident : $idx:tt),+) => {
        impl<$($name: FromValue),+> FromRow for ($($name,)+) {
            fn from_row<R: SqlRow>(row: &R) -> Result<Self> {
                Ok(($(row.get::<$name>($idx)?,)+))
            }

            #[inline]
            fn from_row_taking<R: SqlRow>(row: &mut R) -> Result<Self> {
                Ok(($(row.take::<$name>($idx)?,)+))
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

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use rust_decimal::Decimal;

    use super::*;
    use crate::CustomDbRow;
    use crate::results::Columns;
    use crate::value::RowValues;
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
            (
                "-0.0000000000000000000000000001",
                "-0.0000000000000000000000000001",
            ),
            (
                "79228162514264337593543950335",
                "79228162514264337593543950335",
            ),
            // Trailing zeros past 28 places: only those are dropped.
            (
                "1.500000000000000000000000000000",
                "1.5000000000000000000000000000",
            ),
            (
                "12345678901234567890.500000000000000000000000000000",
                "12345678901234567890.500000000",
            ),
            (
                "7.000000000000000000000000000000",
                "7.0000000000000000000000000000",
            ),
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
