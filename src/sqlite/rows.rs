//! Reading rusqlite rows: materialising a [`ResultSet`] and a zero-copy [`SqlRow`] view for typed decoding.

use std::sync::Arc;

use rusqlite::types::ValueRef as SqliteRef;

use crate::decode::SqlRow;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::results::{ColumnHint, Columns};
use crate::value::{RowValues, ValueRef};

/// Column names and hints of a prepared rusqlite statement, computed once per statement.
pub(crate) fn columns_of(stmt: &rusqlite::Statement<'_>) -> Columns {
    let cols = stmt.columns();
    let names = cols.iter().map(|c| c.name().to_owned()).collect();
    let hints = cols
        .iter()
        .map(|c| ColumnHint::from_decltype(c.decl_type()))
        .collect();
    Columns::new(names, hints)
}

fn invalid_utf8(columns: &Columns, idx: usize) -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        ErrorKind::TypeMismatch,
        format!(
            "column `{}` holds text that is not valid UTF-8; read it as a blob (CAST(col AS BLOB))",
            columns.name(idx).unwrap_or("?")
        ),
    )
}

/// Converts one SQLite value, widened by the column's declared type.
pub(crate) fn value_ref<'a>(
    raw: SqliteRef<'a>,
    hint: ColumnHint,
    columns: &Columns,
    idx: usize,
) -> Result<ValueRef<'a>> {
    Ok(match raw {
        SqliteRef::Null => ValueRef::Null,
        SqliteRef::Integer(i) => hint.widen_int(i),
        SqliteRef::Real(f) => hint.widen_real(f),
        SqliteRef::Text(bytes) => {
            let s = std::str::from_utf8(bytes).map_err(|_| invalid_utf8(columns, idx))?;
            hint.widen_text(s)
        }
        SqliteRef::Blob(b) => ValueRef::Blob(b),
    })
}

/// Fresh columns when SQLite re-prepared `stmt` (after a schema change) since `cached` was read
/// (`reprepares` is the statement's re-prepare count at that time); `None` while `cached` holds.
pub(crate) fn changed_columns(
    stmt: &rusqlite::Statement<'_>,
    cached: &Columns,
    reprepares: i32,
) -> Option<Arc<Columns>> {
    let now = stmt.get_status(rusqlite::StatementStatus::RePrepare);
    (now != reprepares || stmt.column_count() != cached.len()).then(|| Arc::new(columns_of(stmt)))
}

/// A rusqlite row seen through [`SqlRow`], with the statement's shared columns.
pub(crate) struct SqliteRow<'r, 's> {
    pub(crate) row: &'r rusqlite::Row<'s>,
    pub(crate) columns: &'r Columns,
}

impl SqlRow for SqliteRow<'_, '_> {
    fn column_count(&self) -> usize {
        self.columns.len()
    }

    fn column_name(&self, idx: usize) -> Option<&str> {
        self.columns.name(idx)
    }

    fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.index_of(name)
    }

    fn value_ref(&self, idx: usize) -> Result<ValueRef<'_>> {
        let raw = self
            .row
            .get_ref(idx)
            .map_err(|_| crate::decode::column_out_of_range(idx, self.columns.len()))?;
        value_ref(raw, self.columns.hint(idx), self.columns, idx)
    }
}

/// Materialises every row of `rows` into a [`ResultSet`](crate::ResultSet). At the first row
/// the statement is checked for a re-prepare; the second value is the fresh columns, if any.
pub(crate) fn collect(
    rows: &mut rusqlite::Rows<'_>,
    columns: &Arc<Columns>,
    reprepares: i32,
) -> Result<(crate::ResultSet, Option<Arc<Columns>>)> {
    let mut out: Option<crate::ResultSet> = None;
    let mut fresh = None;
    while let Some(row) = rows.next().map_err(super::error::map_err)? {
        let rs = out.get_or_insert_with(|| {
            fresh = changed_columns(row.as_ref(), columns, reprepares);
            crate::ResultSet::with_capacity(Arc::clone(fresh.as_ref().unwrap_or(columns)), 1)
        });
        let cols = rs.columns();
        let n = cols.len();
        let mut values = Vec::with_capacity(n);
        for idx in 0..n {
            let raw = row.get_ref(idx).map_err(super::error::map_err)?;
            let v = value_ref(raw, cols.hint(idx), cols, idx)?;
            values.push(owned(v));
        }
        rs.push_values(values);
    }
    Ok(match out {
        Some(rs) => (rs, fresh),
        None => (
            crate::ResultSet::with_capacity(Arc::clone(columns), 0),
            None,
        ),
    })
}

fn owned(v: ValueRef<'_>) -> RowValues {
    match v {
        ValueRef::JSON(std::borrow::Cow::Owned(j)) => RowValues::JSON(j),
        other => other.to_owned_value(),
    }
}
