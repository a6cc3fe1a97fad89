//! Converting [`RowValues`] to Turso values. Turso stores SQLite's five storage classes, so
//! every kind maps exactly as on the SQLite backend (see [`RowValues`]).

use turso::Value;

use crate::error::Result;
use crate::sqlite_family::storable::check_storable;
use crate::sqlite_family::text_form::{
    array_text, date_text, time_text, timestamp_text, timestamptz_text,
};
use crate::value::RowValues;

/// Converts every parameter (Turso's API takes owned values).
pub(crate) fn to_values(params: &[RowValues]) -> Result<Vec<Value>> {
    params
        .iter()
        .enumerate()
        .map(|(i, v)| to_value(i, v))
        .collect()
}

/// Converts parameter `i` (0-based, for the error message).
pub(crate) fn to_value(i: usize, v: &RowValues) -> Result<Value> {
    check_storable(i, v)?;
    Ok(match v {
        RowValues::Null => Value::Null,
        RowValues::Int(i) => Value::Integer(*i),
        RowValues::Float(f) => Value::Real(*f),
        RowValues::Text(s) => Value::Text(s.clone()),
        RowValues::Bool(b) => Value::Integer(i64::from(*b)),
        RowValues::Timestamp(t) => Value::Text(timestamp_text(t)),
        RowValues::TimestampTz(t) => Value::Text(timestamptz_text(t)),
        RowValues::Date(d) => Value::Text(date_text(d)),
        RowValues::Uuid(u) => Value::Text(u.hyphenated().to_string()),
        RowValues::Numeric(d) => Value::Text(d.to_string()),
        RowValues::Blob(b) => Value::Blob(b.clone()),
        RowValues::JSON(j) => Value::Text(j.to_string()),
        RowValues::Time(t) => Value::Text(time_text(t)),
        RowValues::Interval(i) => Value::Text(i.to_string()),
        RowValues::Array(items) => Value::Text(array_text(items)),
    })
}
