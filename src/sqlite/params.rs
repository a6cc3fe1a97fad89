//! Binding [`RowValues`] to rusqlite statements without copying text or bytes.

use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use rusqlite::{Statement, ToSql};

use crate::error::{Result, SqlMiddlewareDbError};
use crate::sqlite_family::storable::check_storable;
use crate::sqlite_family::text_form::{
    array_text, date_text, time_text, timestamp_text, timestamptz_text,
};
use crate::value::RowValues;

/// A borrowed [`RowValues`] as a rusqlite parameter. Text and blobs are bound by reference.
pub(crate) struct SqliteParam<'a>(pub(crate) &'a RowValues);

impl ToSql for SqliteParam<'_> {
    #[inline]
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self.0 {
            RowValues::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            RowValues::Int(i) => ToSqlOutput::Borrowed(ValueRef::Integer(*i)),
            RowValues::Float(f) => ToSqlOutput::Borrowed(ValueRef::Real(*f)),
            RowValues::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            RowValues::Bool(b) => ToSqlOutput::Borrowed(ValueRef::Integer(i64::from(*b))),
            RowValues::Timestamp(t) => ToSqlOutput::Owned(Value::Text(timestamp_text(t))),
            RowValues::TimestampTz(t) => ToSqlOutput::Owned(Value::Text(timestamptz_text(t))),
            RowValues::Date(d) => ToSqlOutput::Owned(Value::Text(date_text(d))),
            RowValues::Uuid(u) => ToSqlOutput::Owned(Value::Text(u.hyphenated().to_string())),
            RowValues::Numeric(d) => ToSqlOutput::Owned(Value::Text(d.to_string())),
            RowValues::Blob(b) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
            RowValues::JSON(j) => ToSqlOutput::Owned(Value::Text(j.to_string())),
            RowValues::Time(t) => ToSqlOutput::Owned(Value::Text(time_text(t))),
            RowValues::Interval(i) => ToSqlOutput::Owned(Value::Text(i.to_string())),
            RowValues::Array(items) => ToSqlOutput::Owned(Value::Text(array_text(items))),
        })
    }
}

/// Checks the count and binds every parameter (1-based) to `stmt`. An integer or a text is
/// bound as itself, without the checks and the conversion the other kinds go through.
#[inline]
pub(crate) fn bind_all(stmt: &mut Statement<'_>, params: &[RowValues]) -> Result<()> {
    let expected = stmt.parameter_count();
    if expected != params.len() {
        return Err(SqlMiddlewareDbError::parameter_count(
            expected,
            params.len(),
        ));
    }
    for (i, value) in params.iter().enumerate() {
        match value {
            RowValues::Int(v) => stmt.raw_bind_parameter(i + 1, *v),
            RowValues::Text(s) => stmt.raw_bind_parameter(i + 1, s.as_str()),
            other => {
                check_storable(i, other)?;
                stmt.raw_bind_parameter(i + 1, SqliteParam(other))
            }
        }
        .map_err(super::error::map_err)?;
    }
    Ok(())
}
