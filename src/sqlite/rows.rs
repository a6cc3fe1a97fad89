//! Reading rusqlite rows: materialising a [`ResultSet`] and a zero-copy [`SqlRow`] view for
//! typed decoding.

use std::borrow::Cow;
use std::sync::Arc;

use rusqlite::types::ValueRef as SqliteRef;

use crate::decode::{ColumnRef, FromValue, SqlRow};
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::results::ResultSet;
use crate::sqlite_family::columns::{ColumnHint, Described};
use crate::value::{RowValues, ValueRef};

/// Column names and hints of a prepared rusqlite statement, computed once per statement.
pub(crate) fn describe(stmt: &rusqlite::Statement<'_>) -> Described {
    let cols = stmt.columns();
    Described::new(cols.iter().map(|c| (c.name(), c.decl_type())))
}

fn invalid_utf8(desc: &Described, idx: usize) -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        ErrorKind::TypeMismatch,
        format!(
            "column `{}` holds text that is not valid UTF-8; read it as a blob (CAST(col AS BLOB))",
            desc.columns.name(idx).unwrap_or("?")
        ),
    )
}

/// Converts one SQLite value, widened by the column's declared type. Always inlined, with
/// [`SqliteRow::value_ref`]: a `FromValue` matches the value it returns at once, so the
/// optimiser can drop the `ValueRef` in between (about 17 instructions per column read).
#[inline(always)]
pub(crate) fn value_ref<'a>(
    raw: SqliteRef<'a>,
    hint: ColumnHint,
    desc: &Described,
    idx: usize,
) -> Result<ValueRef<'a>> {
    with_value(raw, hint, desc, idx, |v| v)
}

/// [`value_ref`] handed to `f`: an `f` that matches the value (a `FromValue`) is compiled in
/// where the value is made, with no `ValueRef` copied out through a `Result` before it is
/// matched (about 5 instructions per column). Only text that is not UTF-8 fails here.
#[inline(always)]
fn with_value<'a, R>(
    raw: SqliteRef<'a>,
    hint: ColumnHint,
    desc: &Described,
    idx: usize,
    f: impl FnOnce(ValueRef<'a>) -> R,
) -> Result<R> {
    let value = match raw {
        SqliteRef::Null => ValueRef::Null,
        SqliteRef::Integer(i) => hint.widen_int(i),
        SqliteRef::Real(x) => hint.widen_real(x),
        SqliteRef::Text(bytes) => match std::str::from_utf8(bytes) {
            Ok(s) => hint.widen_text(s),
            Err(_) => return Err(invalid_utf8(desc, idx)),
        },
        SqliteRef::Blob(b) => ValueRef::Blob(b),
    };
    Ok(f(value))
}

/// A rusqlite row seen through [`SqlRow`], with the statement's shared columns.
pub(crate) struct SqliteRow<'r, 's> {
    pub(crate) row: &'r rusqlite::Row<'s>,
    pub(crate) desc: &'r Described,
}

impl SqliteRow<'_, '_> {
    /// Column `idx` as rusqlite holds it; an index past the last column is a typed error.
    #[inline(always)]
    fn raw(&self, idx: usize) -> Result<SqliteRef<'_>> {
        self.row
            .get_ref(idx)
            .map_err(|_| crate::decode::column_out_of_range(idx, self.desc.len()))
    }
}

impl SqlRow for SqliteRow<'_, '_> {
    #[inline]
    fn column_count(&self) -> usize {
        self.desc.len()
    }

    fn column_name(&self, idx: usize) -> Option<&str> {
        self.desc.columns.name(idx)
    }

    fn column_index(&self, name: &str) -> Option<usize> {
        self.desc.columns.index_of(name)
    }

    #[inline(always)]
    fn value_ref(&self, idx: usize) -> Result<ValueRef<'_>> {
        value_ref(self.raw(idx)?, self.desc.hint(idx), self.desc, idx)
    }

    /// [`SqlRow::get`], with `T`'s conversion compiled into each kind of value (see
    /// [`with_value`]).
    #[inline(always)]
    fn get<T: FromValue>(&self, column: impl ColumnRef) -> Result<T> {
        let idx = column.index_in(self)?;
        with_value(
            self.raw(idx)?,
            self.desc.hint(idx),
            self.desc,
            idx,
            T::from_value,
        )?
        .map_err(|e| e.at_column(self.column_name(idx).unwrap_or("?")))
    }
}

/// Materialises every row of `rows` into a [`ResultSet`]. At the first row `now` tells whether
/// the statement's columns are still `desc` (see `SqliteStmt::columns_now`); the second value
/// is the fresh columns, if any.
pub(crate) fn collect(
    rows: &mut rusqlite::Rows<'_>,
    desc: &Arc<Described>,
    now: impl FnOnce(&rusqlite::Statement<'_>) -> Option<Arc<Described>>,
) -> Result<(ResultSet, Option<Arc<Described>>)> {
    let mut out: Option<ResultSet> = None;
    let mut fresh: Option<Arc<Described>> = None;
    let mut now = Some(now);
    while let Some(row) = rows.next().map_err(super::error::map_err)? {
        let rs = out.get_or_insert_with(|| {
            fresh = now.take().and_then(|f| f(row.as_ref()));
            let d = fresh.as_ref().unwrap_or(desc);
            ResultSet::with_capacity(Arc::clone(&d.columns), 1)
        });
        let d = fresh.as_deref().unwrap_or(desc);
        let n = d.len();
        let mut values = Vec::with_capacity(n);
        for idx in 0..n {
            let raw = row.get_ref(idx).map_err(super::error::map_err)?;
            let v = value_ref(raw, d.hint(idx), d, idx)?;
            values.push(owned(v));
        }
        rs.push_values(values);
    }
    Ok(match out {
        Some(rs) => (rs, fresh),
        None => (ResultSet::with_capacity(Arc::clone(&desc.columns), 0), None),
    })
}

/// A value read through a [`ValueRef`], owned for a [`ResultSet`] (JSON parsed from text is
/// moved, not cloned).
fn owned(v: ValueRef<'_>) -> RowValues {
    match v {
        ValueRef::JSON(Cow::Owned(j)) => RowValues::JSON(j),
        other => other.to_owned_value(),
    }
}
