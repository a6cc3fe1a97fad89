//! Reading mysql_async rows by each column's type in the result's metadata (the binary
//! protocol's), never by its name.
//!
//! | MySQL | value |
//! |---|---|
//! | `TINYINT` … `BIGINT`, `YEAR` (signed, or unsigned up to `i64::MAX`) | `Int` |
//! | `BIGINT UNSIGNED` (and unsigned results such as `BIT_OR`) above `i64::MAX` | `Numeric` |
//! | `DECIMAL` | `Numeric` when a `Decimal` holds its value exactly (a 96-bit mantissa, at most 28 decimal places: trailing zeros past those are dropped, as few as need be); otherwise `Text`, the server's exact digits |
//! | `FLOAT`, `DOUBLE` | `Float`; a `FLOAT` is widened exactly, as Postgres widens a `float4` (0.1 stored in a `FLOAT` reads as 0.10000000149011612, the `f32` it is) |
//! | `DATE` | `Date` |
//! | `DATETIME`, `TIMESTAMP` | `Timestamp` |
//! | `TIME` from 00:00 to 24:00 | `Time`; negative or longer: `Interval` |
//! | `CHAR`, `VARCHAR`, `TEXT`s, `ENUM`, `SET` | `Text` |
//! | `BINARY`, `VARBINARY`, `BLOB`s, `GEOMETRY` | `Blob` |
//! | `BIT(n)` | `Int` (`Numeric` above `i64::MAX`); sent as bits, or as decimal text by the expressions the server flags `BINARY` (`MIN`, `MAX`, `IFNULL`, …), read as what they mean |
//! | `JSON` (MySQL) | `JSON`; on MariaDB `JSON` is `LONGTEXT`: `Text` |
//!
//! Nothing is rounded: a `DECIMAL` too wide for `Numeric` (say `0.000000000000000000000000000001`
//! in a `DECIMAL(65,30)`) reads as its text, which decodes into `String` digit for digit and
//! into `Decimal` not at all (a [`ErrorKind::TypeMismatch`]).
//!
//! A zero date (`0000-00-00`, or a zero month or day) is a [`ErrorKind::TypeMismatch`] error:
//! no date type of Rust holds it.

use std::borrow::Cow;

use chrono::{NaiveDate, NaiveTime};
use mysql_async::consts::{ColumnFlags, ColumnType};
use mysql_async::{Column, Row, Value};
use rust_decimal::Decimal;

use crate::decode::{ColumnRef, FromValue, SqlRow};
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::results::Columns;
use crate::value::{RowValues, ValueRef};

/// The character set number of binary strings.
const BINARY: u16 = 63;

/// The names of a statement's columns.
pub(crate) fn columns_of(cols: &[Column]) -> Columns {
    Columns::new(cols.iter().map(|c| c.name_str().into_owned()).collect())
}

fn bad(columns: &Columns, idx: usize, why: &str) -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        ErrorKind::TypeMismatch,
        format!("column `{}`: {why}", columns.name(idx).unwrap_or("?")),
    )
}

/// Whether a string column holds bytes rather than text.
#[inline]
fn is_binary(col: &Column) -> bool {
    col.character_set() == BINARY
        && !col
            .flags()
            .intersects(ColumnFlags::ENUM_FLAG | ColumnFlags::SET_FLAG)
}

fn date(y: u16, m: u8, d: u8) -> Option<NaiveDate> {
    NaiveDate::from_ymd_opt(i32::from(y), u32::from(m), u32::from(d))
}

fn time_of_day(h: u8, m: u8, s: u8, us: u32) -> Option<NaiveTime> {
    NaiveTime::from_hms_micro_opt(u32::from(h), u32::from(m), u32::from(s), us)
}

/// An unsigned value: `Int` when it fits, else `Numeric`.
#[inline]
fn unsigned<'a>(u: u64) -> ValueRef<'a> {
    match i64::try_from(u) {
        Ok(i) => ValueRef::Int(i),
        Err(_) => ValueRef::Numeric(Decimal::from(u)),
    }
}

/// A `DECIMAL`'s text as `Numeric` when a [`Decimal`] holds its value exactly (trailing zeros
/// past 28 places dropped, as few as need be), else as the text itself: never rounded.
#[inline]
fn decimal(s: &str) -> ValueRef<'_> {
    match crate::decode::exact_decimal(s) {
        Some(d) => ValueRef::Numeric(d),
        None => ValueRef::Text(Cow::Borrowed(s)),
    }
}

/// A `BIT` value. A column of a table sends its bits, most significant byte first. Some
/// expressions of type `BIT` (`MIN`, `MAX`, `IFNULL`, `COALESCE`, `IF`, `GREATEST`, a scalar
/// subquery, …) are sent as their decimal text instead, by MySQL and MariaDB alike (MySQL bug
/// 63457): the column then carries the `BINARY` flag, which a table's `BIT` column does not.
/// A single byte below `2^n` of a `BIT(n)` with `n <= 5` cannot be a digit's text, so it is
/// read as bits whatever the flag (servers have sent those too).
fn bit<'a>(b: &[u8], col: &Column) -> std::result::Result<ValueRef<'a>, &'static str> {
    let n = col.column_length();
    let small_bits = n <= 5 && b.len() == 1 && u32::from(b[0]) < (1 << n);
    if col.flags().contains(ColumnFlags::BINARY_FLAG) && !small_bits {
        return std::str::from_utf8(b)
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .map(unsigned)
            .ok_or("an unreadable BIT value");
    }
    if b.len() > 8 {
        return Err("a BIT value wider than 64 bits");
    }
    Ok(unsigned(
        b.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x)),
    ))
}

/// A `TIME` value: a time of day when it is one, else a signed span.
fn time<'a>(neg: bool, days: u32, h: u8, m: u8, s: u8, us: u32) -> ValueRef<'a> {
    if !neg && days == 0 {
        if let Some(t) = time_of_day(h, m, s, us) {
            return ValueRef::Time(t);
        }
    }
    let secs = i64::from(days) * 86_400 + i64::from(h) * 3600 + i64::from(m) * 60 + i64::from(s);
    let micros = secs * 1_000_000 + i64::from(us);
    ValueRef::Interval(crate::Interval {
        months: 0,
        days: 0,
        microseconds: if neg { -micros } else { micros },
    })
}

/// A borrowed view of `v`, read as column `col` (number `idx` of `columns`, for errors).
pub(crate) fn value_ref<'a>(
    v: &'a Value,
    col: &Column,
    idx: usize,
    columns: &Columns,
) -> Result<ValueRef<'a>> {
    Ok(match v {
        Value::NULL => ValueRef::Null,
        Value::Int(i) => ValueRef::Int(*i),
        Value::UInt(u) => unsigned(*u),
        Value::Double(f) => ValueRef::Float(*f),
        // Exactly the stored value, as Postgres widens a `float4`.
        Value::Float(f) => ValueRef::Float(f64::from(*f)),
        Value::Date(y, mo, d, h, mi, s, us) => {
            let Some(day) = date(*y, *mo, *d) else {
                return Err(bad(
                    columns,
                    idx,
                    "a zero or invalid date (such as 0000-00-00) has no Rust value",
                ));
            };
            match col.column_type() {
                ColumnType::MYSQL_TYPE_DATE | ColumnType::MYSQL_TYPE_NEWDATE => ValueRef::Date(day),
                _ => match time_of_day(*h, *mi, *s, *us) {
                    Some(t) => ValueRef::Timestamp(day.and_time(t)),
                    None => return Err(bad(columns, idx, "an invalid time of day")),
                },
            }
        }
        Value::Time(neg, days, h, m, s, us) => time(*neg, *days, *h, *m, *s, *us),
        Value::Bytes(b) => bytes(b, col, idx, columns)?,
    })
}

/// A value the server sent as bytes, read by its column's type.
fn bytes<'a>(b: &'a [u8], col: &Column, idx: usize, columns: &Columns) -> Result<ValueRef<'a>> {
    use ColumnType as T;
    let text = || std::str::from_utf8(b).map_err(|_| bad(columns, idx, NOT_UTF8));
    Ok(match col.column_type() {
        T::MYSQL_TYPE_NEWDECIMAL | T::MYSQL_TYPE_DECIMAL => decimal(text()?),
        T::MYSQL_TYPE_JSON => {
            let s = text()?;
            match serde_json::from_str(s) {
                Ok(j) => ValueRef::JSON(Cow::Owned(j)),
                Err(_) => ValueRef::Text(Cow::Borrowed(s)),
            }
        }
        T::MYSQL_TYPE_BIT => bit(b, col).map_err(|why| bad(columns, idx, why))?,
        // The text protocol's numbers (a server-side prepared statement never sends these).
        T::MYSQL_TYPE_TINY
        | T::MYSQL_TYPE_SHORT
        | T::MYSQL_TYPE_INT24
        | T::MYSQL_TYPE_LONG
        | T::MYSQL_TYPE_LONGLONG
        | T::MYSQL_TYPE_YEAR => {
            let s = text()?;
            match s.parse::<i64>() {
                Ok(i) => ValueRef::Int(i),
                Err(_) => match s.parse::<u64>() {
                    Ok(u) => unsigned(u),
                    Err(_) => return Err(bad(columns, idx, "an unreadable integer")),
                },
            }
        }
        // A `FLOAT` is read as the `f32` it is, then widened, as the binary protocol's is.
        T::MYSQL_TYPE_FLOAT => match text()?.parse::<f32>() {
            Ok(f) => ValueRef::Float(f64::from(f)),
            Err(_) => return Err(bad(columns, idx, "an unreadable number")),
        },
        T::MYSQL_TYPE_DOUBLE => match text()?.parse::<f64>() {
            Ok(f) => ValueRef::Float(f),
            Err(_) => return Err(bad(columns, idx, "an unreadable number")),
        },
        _ if is_binary(col) => ValueRef::Blob(b),
        _ => ValueRef::Text(Cow::Borrowed(text()?)),
    })
}

/// Owned values of one row, taking the row's buffers where the value is text or bytes.
pub(crate) fn row_values(row: Row, columns: &Columns) -> Result<Vec<RowValues>> {
    let cols = row.columns();
    let values = row.unwrap_raw();
    let mut out = Vec::with_capacity(values.len());
    for (idx, (v, col)) in values.into_iter().zip(cols.iter()).enumerate() {
        let v = v.unwrap_or(Value::NULL);
        out.push(match v {
            Value::Bytes(b) if plain_text(col) => RowValues::Text(owned_text(b, columns, idx)?),
            Value::Bytes(b) if !needs_reading(col) => RowValues::Blob(b),
            v => value_ref(&v, col, idx, columns)?.to_owned_value(),
        });
    }
    Ok(out)
}

/// What a text value that is not UTF-8 says.
const NOT_UTF8: &str = "the text is not valid UTF-8";

/// A text value's own buffer as a `String`: checked, not copied.
#[inline]
fn owned_text(b: Vec<u8>, columns: &Columns, idx: usize) -> Result<String> {
    String::from_utf8(b).map_err(|_| bad(columns, idx, NOT_UTF8))
}

/// Whether a column's bytes are text, read as they are.
#[inline]
fn plain_text(col: &Column) -> bool {
    !needs_reading(col) && !is_binary(col)
}

/// Whether a column's bytes are read as something other than text or a blob.
#[inline]
fn needs_reading(col: &Column) -> bool {
    use ColumnType as T;
    !matches!(
        col.column_type(),
        T::MYSQL_TYPE_VARCHAR
            | T::MYSQL_TYPE_VAR_STRING
            | T::MYSQL_TYPE_STRING
            | T::MYSQL_TYPE_ENUM
            | T::MYSQL_TYPE_SET
            | T::MYSQL_TYPE_TINY_BLOB
            | T::MYSQL_TYPE_MEDIUM_BLOB
            | T::MYSQL_TYPE_LONG_BLOB
            | T::MYSQL_TYPE_BLOB
            | T::MYSQL_TYPE_GEOMETRY
    )
}

/// A mysql_async row seen through [`SqlRow`], decoded in place. The row is the caller's to
/// give up: [`SqlRow::take`] moves a text value out of it instead of copying it.
pub(crate) struct MyRow<'a> {
    pub(crate) row: &'a mut Row,
    pub(crate) columns: &'a Columns,
}

impl SqlRow for MyRow<'_> {
    #[inline]
    fn column_count(&self) -> usize {
        self.row.len()
    }

    fn column_name(&self, idx: usize) -> Option<&str> {
        self.columns.name(idx)
    }

    fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.index_of(name)
    }

    #[inline]
    fn value_ref(&self, idx: usize) -> Result<ValueRef<'_>> {
        let Some(v) = self.row.as_ref(idx) else {
            return Err(if idx < self.row.len() {
                crate::decode::taking::column_taken(self.columns.name(idx))
            } else {
                crate::decode::column_out_of_range(idx, self.row.len())
            });
        };
        value_ref(v, &self.row.columns_ref()[idx], idx, self.columns)
    }

    /// Text is moved out of the row: mysql_async hands each value over in a buffer of its own,
    /// which becomes the `String` as it is. Everything else is read in place, as `get` does.
    #[inline]
    fn take<T: FromValue>(&mut self, column: impl ColumnRef) -> Result<T> {
        let idx = column.index_in(self)?;
        let text = matches!(self.row.as_ref(idx), Some(Value::Bytes(_)))
            && plain_text(&self.row.columns_ref()[idx]);
        if !text {
            return self.get(idx);
        }
        let Some(Value::Bytes(b)) = self.row.take::<Value, usize>(idx) else {
            return Err(crate::decode::taking::column_taken(self.columns.name(idx)));
        };
        let s = owned_text(b, self.columns, idx)?;
        T::from_value(ValueRef::Text(Cow::Owned(s)))
            .map_err(|e| e.at_column(self.columns.name(idx).unwrap_or("?")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_beyond_a_day_or_negative_are_spans() {
        assert!(matches!(time(false, 0, 13, 5, 0, 0), ValueRef::Time(_)));
        match time(true, 1, 2, 0, 0, 5) {
            ValueRef::Interval(i) => assert_eq!(i.microseconds, -(26 * 3_600_000_000 + 5)),
            other => panic!("{other:?}"),
        }
        assert!(matches!(unsigned(u64::MAX), ValueRef::Numeric(_)));
        assert!(matches!(unsigned(7), ValueRef::Int(7)));
    }

    /// `v` read as a column of type `ty`.
    fn read(v: Value, ty: ColumnType) -> RowValues {
        let columns = Columns::new(vec!["c".into()]);
        value_ref(&v, &Column::new(ty), 0, &columns)
            .expect("readable")
            .to_owned_value()
    }

    #[test]
    fn decimals_are_numeric_only_when_exact_else_their_text() {
        let dec = |s: &str| {
            let bytes = Value::Bytes(s.as_bytes().to_vec());
            read(bytes, ColumnType::MYSQL_TYPE_NEWDECIMAL)
        };
        // Exact: every digit and the scale survive; trailing zeros past what a Decimal holds
        // are dropped, only those.
        for (s, want) in [
            ("0.00", "0.00"),
            ("-12.50", "-12.50"),
            (
                "12345678901234567890.12345678",
                "12345678901234567890.12345678",
            ),
            (
                "0.0000000000000000000000000001",
                "0.0000000000000000000000000001",
            ),
            (
                "-79228162514264337593543950335",
                "-79228162514264337593543950335",
            ),
            ("18446744073709551615", "18446744073709551615"),
            (
                "1.500000000000000000000000000000",
                "1.5000000000000000000000000000",
            ),
            (
                "42.0000000000000000000000000000",
                "42.000000000000000000000000000",
            ),
        ] {
            match dec(s) {
                RowValues::Numeric(d) => assert_eq!(d.to_string(), want),
                other => panic!("{s}: {other:?}"),
            }
        }
        // Beyond a Decimal (more than 28 places, or a mantissa past 96 bits, that are not
        // zeros): the text itself, never a rounded number.
        for s in [
            "1.500000000000000000000000000001",
            "0.00000000000000000000000000001",
            "9999999999999999999999999999.9",
            "-79228162514264337593543950336",
            "99999999999999999999999999999999999.999999999999999999999999999999",
        ] {
            match dec(s) {
                RowValues::Text(t) => assert_eq!(t, s),
                other => panic!("{s}: {other:?}"),
            }
        }
    }

    #[test]
    fn bits_are_read_as_bits_or_as_the_decimal_text_the_server_flags() {
        let columns = Columns::new(vec!["c".into()]);
        let read = |b: &[u8], len: u32, flags: ColumnFlags| {
            let col = Column::new(ColumnType::MYSQL_TYPE_BIT)
                .with_column_length(len)
                .with_flags(flags);
            value_ref(&Value::Bytes(b.to_vec()), &col, 0, &columns).map(|v| v.to_owned_value())
        };
        let column = ColumnFlags::UNSIGNED_FLAG;
        let expression = ColumnFlags::UNSIGNED_FLAG | ColumnFlags::BINARY_FLAG;
        // A table's column: the bits, most significant byte first.
        assert_eq!(read(&[0x31], 8, column).unwrap(), RowValues::Int(49));
        assert_eq!(read(&[0x01, 0x00], 9, column).unwrap(), RowValues::Int(256));
        assert_eq!(
            read(&[0xff; 8], 64, column).unwrap(),
            RowValues::Numeric(Decimal::from(u64::MAX))
        );
        // `MAX(bit_column)` and the like: the decimal text, flagged BINARY.
        assert_eq!(read(b"1", 1, expression).unwrap(), RowValues::Int(1));
        assert_eq!(read(b"200", 8, expression).unwrap(), RowValues::Int(200));
        assert_eq!(
            read(b"18446744073709551615", 64, expression).unwrap(),
            RowValues::Numeric(Decimal::from(u64::MAX))
        );
        // A byte no digit's text can be, in a BIT(n <= 5): the bits.
        assert_eq!(read(&[0x03], 5, expression).unwrap(), RowValues::Int(3));
        // Neither: a typed error, not a guess.
        assert!(read(b"x", 8, expression).is_err());
        assert!(read(&[0; 9], 64, column).is_err());
    }

    #[test]
    fn floats_widen_exactly() {
        for f in [
            0.1f32,
            -f32::from_bits(1),
            f32::MIN_POSITIVE,
            f32::MAX,
            16_777_216.0,
        ] {
            match read(Value::Float(f), ColumnType::MYSQL_TYPE_FLOAT) {
                RowValues::Float(x) => assert_eq!(x.to_bits(), f64::from(f).to_bits(), "{f}"),
                other => panic!("{f}: {other:?}"),
            }
        }
        // The text protocol's FLOAT is the same f32, widened.
        match read(Value::Bytes(b"0.1".to_vec()), ColumnType::MYSQL_TYPE_FLOAT) {
            RowValues::Float(x) => assert_eq!(x, f64::from(0.1f32)),
            other => panic!("{other:?}"),
        }
    }
}
