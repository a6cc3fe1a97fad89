//! Values the SQLite family would store as something else, refused before binding.

use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::value::RowValues;

/// Rejects values SQLite and Turso would silently change: NaN would be stored as NULL, a
/// non-finite float in an array has no JSON form, and a JSON document that is one integer
/// beyond `i64` would be stored as a float by a `JSON` column's numeric affinity.
#[inline]
pub(crate) fn check_storable(idx: usize, value: &RowValues) -> Result<()> {
    match value {
        RowValues::Array(_)
        | RowValues::Float(_)
        | RowValues::JSON(serde_json::Value::Number(_)) => check_storable_slow(idx, value),
        _ => Ok(()),
    }
}

fn check_storable_slow(idx: usize, value: &RowValues) -> Result<()> {
    match value {
        RowValues::Array(items) => {
            if items
                .iter()
                .any(|v| matches!(v, RowValues::Float(f) if !f.is_finite()))
            {
                return Err(SqlMiddlewareDbError::new(
                    ErrorKind::ParameterType,
                    format!(
                        "parameter ${}: an array stored in SQLite or Turso is JSON text, which has no NaN or infinity",
                        idx + 1
                    ),
                ));
            }
            items.iter().try_for_each(|v| check_storable(idx, v))
        }
        RowValues::JSON(serde_json::Value::Number(n)) if n.is_u64() && !n.is_i64() => {
            Err(SqlMiddlewareDbError::new(
                ErrorKind::ParameterType,
                format!(
                    "parameter ${}: a JSON document that is one integer above i64::MAX would be stored as a float (a JSON column's numeric affinity); bind it as text in a TEXT column",
                    idx + 1
                ),
            ))
        }
        RowValues::Float(f) if f.is_nan() => Err(SqlMiddlewareDbError::new(
            ErrorKind::ParameterType,
            format!(
                "parameter ${}: NaN cannot be stored in SQLite or Turso (it would become NULL); bind RowValues::Null instead",
                idx + 1
            ),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_is_refused_with_its_position() {
        let e = check_storable(2, &RowValues::Float(f64::NAN)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ParameterType);
        assert!(e.to_string().contains("$3"), "{e}");
        assert!(check_storable(0, &RowValues::Float(1.5)).is_ok());
        assert!(check_storable(0, &RowValues::Null).is_ok());
        let big = RowValues::JSON(serde_json::json!(u64::MAX));
        assert_eq!(
            check_storable(0, &big).unwrap_err().kind(),
            ErrorKind::ParameterType
        );
        assert!(check_storable(0, &RowValues::JSON(serde_json::json!(i64::MIN))).is_ok());
        assert!(check_storable(0, &RowValues::JSON(serde_json::json!({"n": u64::MAX}))).is_ok());
    }
}
