//! [`ToValue`]: how a Rust value becomes a parameter, for the crate's own types and yours, and the
//! [`params!`](crate::params) macro that binds a list of them.

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc};
use rust_decimal::Decimal;
use uuid::Uuid;

use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::interval::Interval;
use crate::value::RowValues;

/// A Rust value that can be bound as a statement parameter.
///
/// Implemented for the types the crate knows (integers, floats, `bool`, text, bytes, chrono's
/// dates and times, `Uuid`, `Decimal`, `serde_json::Value`, [`crate::Json`], [`crate::Interval`],
/// with the `time` feature the `time` crate's types), for `Option<T>` (`None` is `NULL`) and for
/// references. Implement it for your own types to bind them directly:
///
/// ```
/// use sql_middleware::prelude::*;
///
/// /// Cents, stored as an integer column.
/// struct Money(i64);
///
/// impl ToValue for Money {
///     fn to_value(&self) -> Result<RowValues, SqlMiddlewareDbError> {
///         Ok(RowValues::Int(self.0))
///     }
/// }
///
/// # fn main() -> Result<(), SqlMiddlewareDbError> {
/// let price = Money(1_999);
/// let params = sql_middleware::params![7_i64, &price, "book", None::<String>]?;
/// assert_eq!(params[1], RowValues::Int(1_999));
/// assert_eq!(params[3], RowValues::Null);
/// # Ok(()) }
/// ```
///
/// A conversion that cannot be made (a value the crate's types cannot hold, a serialiser error)
/// returns an [`ErrorKind::ParameterType`] error; the message names the Rust type, never the value.
pub trait ToValue {
    /// The parameter for this value.
    fn to_value(&self) -> Result<RowValues>;
}

/// Collects the conversions of a [`params!`](crate::params) list: the array of values, or the
/// first error. Not called directly.
#[doc(hidden)]
pub fn collect_params<const N: usize>(items: [Result<RowValues>; N]) -> Result<[RowValues; N]> {
    if let Some(pos) = items.iter().position(std::result::Result::is_err) {
        let mut items = items;
        let err = std::mem::replace(&mut items[pos], Ok(RowValues::Null));
        return Err(match err {
            Err(e) => e,
            Ok(_) => param_error("a parameter", "could not be converted"),
        });
    }
    Ok(items.map(|r| r.unwrap_or(RowValues::Null)))
}

/// Builds the parameters of one statement from values of any [`ToValue`] type:
/// `params![a, b, c]` is a `Result<[RowValues; 3], SqlMiddlewareDbError>`.
///
/// ```
/// # use sql_middleware::prelude::*;
/// # async fn demo(conn: &mut MiddlewarePoolConnection) -> Result<(), SqlMiddlewareDbError> {
/// let name = String::from("alice");
/// conn.query("INSERT INTO users (id, name, score) VALUES ($1, $2, $3)")
///     .params(&sql_middleware::params![1_i64, &name, Some(2.5_f64)]?)
///     .dml()
///     .await?;
/// # Ok(()) }
/// ```
#[macro_export]
macro_rules! params {
    () => {
        ::core::result::Result::<[$crate::RowValues; 0], $crate::SqlMiddlewareDbError>::Ok([])
    };
    ($($value:expr),+ $(,)?) => {
        $crate::__params_collect([$($crate::ToValue::to_value(&$value)),+])
    };
}

pub(crate) fn param_error(rust_type: &str, why: &str) -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        ErrorKind::ParameterType,
        format!("a {rust_type} parameter {why}"),
    )
}

impl ToValue for RowValues {
    #[inline]
    fn to_value(&self) -> Result<RowValues> {
        Ok(self.clone())
    }
}

impl<T: ToValue + ?Sized> ToValue for &T {
    #[inline]
    fn to_value(&self) -> Result<RowValues> {
        (**self).to_value()
    }
}

impl<T: ToValue + ?Sized> ToValue for Box<T> {
    #[inline]
    fn to_value(&self) -> Result<RowValues> {
        (**self).to_value()
    }
}

impl<T: ToValue> ToValue for Option<T> {
    #[inline]
    fn to_value(&self) -> Result<RowValues> {
        match self {
            Some(v) => v.to_value(),
            None => Ok(RowValues::Null),
        }
    }
}

/// The types whose `From` conversion into [`RowValues`] cannot fail.
macro_rules! to_value_by_from {
    ($($t:ty),* $(,)?) => {$(
        impl ToValue for $t {
            #[inline]
            fn to_value(&self) -> Result<RowValues> {
                Ok(RowValues::from(self.clone()))
            }
        }
    )*};
}
to_value_by_from!(
    i64,
    i32,
    i16,
    i8,
    u32,
    u16,
    u8,
    f64,
    f32,
    bool,
    String,
    NaiveDateTime,
    NaiveDate,
    NaiveTime,
    Uuid,
    Decimal,
    Vec<u8>,
    serde_json::Value,
    Interval,
);

impl ToValue for str {
    #[inline]
    fn to_value(&self) -> Result<RowValues> {
        Ok(RowValues::Text(self.to_owned()))
    }
}

impl ToValue for [u8] {
    #[inline]
    fn to_value(&self) -> Result<RowValues> {
        Ok(RowValues::Blob(self.to_vec()))
    }
}

impl ToValue for std::borrow::Cow<'_, str> {
    #[inline]
    fn to_value(&self) -> Result<RowValues> {
        Ok(RowValues::Text(self.as_ref().to_owned()))
    }
}

/// A timestamp in any zone is bound as the same instant in UTC.
impl<Tz: TimeZone> ToValue for DateTime<Tz> {
    #[inline]
    fn to_value(&self) -> Result<RowValues> {
        Ok(RowValues::TimestampTz(self.with_timezone(&Utc)))
    }
}

/// Unsigned and 128-bit integers: an `Int` when the value fits in `i64`, otherwise an exact
/// `Numeric` (a `numeric`/`DECIMAL` column takes it; an integer column refuses it with
/// [`ErrorKind::ParameterType`]). Beyond `Decimal`'s 96 bits the conversion itself fails.
macro_rules! to_value_wide_int {
    ($($t:ty),*) => {$(
        impl ToValue for $t {
            fn to_value(&self) -> Result<RowValues> {
                if let Ok(i) = i64::try_from(*self) {
                    return Ok(RowValues::Int(i));
                }
                i128::try_from(*self)
                    .ok()
                    .and_then(|wide| Decimal::try_from_i128_with_scale(wide, 0).ok())
                    .map(RowValues::Numeric)
                    .ok_or_else(|| param_error(stringify!($t), "is beyond a Decimal's 96 bits"))
            }
        }
    )*};
}

to_value_wide_int!(u64, usize, isize, i128, u128);

/// Arrays bind element by element (`Vec<u8>` and `[u8]` are bytes, not arrays).
macro_rules! to_value_array {
    ($($t:ty),* $(,)?) => {$(
        impl ToValue for [$t] {
            fn to_value(&self) -> Result<RowValues> {
                self.iter()
                    .map(ToValue::to_value)
                    .collect::<Result<Vec<_>>>()
                    .map(RowValues::Array)
            }
        }
        impl ToValue for Vec<$t> {
            fn to_value(&self) -> Result<RowValues> {
                self.as_slice().to_value()
            }
        }
    )*};
}
to_value_array!(
    RowValues,
    i64,
    i32,
    i16,
    f64,
    f32,
    bool,
    String,
    &str,
    Decimal,
    Uuid,
    NaiveDate,
    NaiveDateTime,
    Option<i64>,
    Option<i32>,
    Option<f64>,
    Option<bool>,
    Option<String>,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_type_binds_as_its_kind() {
        assert_eq!(5_i32.to_value().unwrap(), RowValues::Int(5));
        assert_eq!("a".to_value().unwrap(), RowValues::Text("a".into()));
        assert_eq!(None::<i64>.to_value().unwrap(), RowValues::Null);
        assert_eq!(Some(1.5_f64).to_value().unwrap(), RowValues::Float(1.5));
        assert_eq!(
            [1_u8, 2][..].to_value().unwrap(),
            RowValues::Blob(vec![1, 2])
        );
        assert_eq!(
            vec![1_i64, 2].to_value().unwrap(),
            RowValues::Array(vec![RowValues::Int(1), RowValues::Int(2)])
        );
        let at = chrono::FixedOffset::east_opt(3600)
            .unwrap()
            .with_ymd_and_hms(2024, 1, 1, 1, 0, 0)
            .unwrap();
        assert_eq!(
            at.to_value().unwrap(),
            RowValues::TimestampTz(Utc.with_ymd_and_hms(2024, 1, 1, 0, 0, 0).unwrap())
        );
    }

    #[test]
    fn wide_integers_stay_exact() {
        assert_eq!(7_u64.to_value().unwrap(), RowValues::Int(7));
        assert_eq!(
            u64::MAX.to_value().unwrap(),
            RowValues::Numeric(Decimal::from(u64::MAX))
        );
        assert_eq!(
            i128::MIN.to_value().unwrap_err().kind(),
            ErrorKind::ParameterType
        );
        assert_eq!(
            u128::MAX.to_value().unwrap_err().kind(),
            ErrorKind::ParameterType
        );
        assert_eq!(
            (-3_isize).to_value().unwrap(),
            RowValues::Int(-3),
            "isize fits"
        );
    }

    #[test]
    fn params_macro_reports_the_first_error() {
        let ok = params![1_i64, "x", None::<bool>].unwrap();
        assert_eq!(ok.len(), 3);
        let err = params![1_i64, u128::MAX, "x"].unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ParameterType);
        assert!(err.message().contains("u128"), "{err}");
        let empty = params![].unwrap();
        assert!(empty.is_empty());
    }
}
