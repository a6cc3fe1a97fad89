//! Reading Turso rows: values are widened by the declared column type, as on SQLite.

use crate::error::Result;
use crate::sqlite_family::columns::Described;
use crate::value::{RowValues, ValueRef};

/// Column names and hints of a prepared Turso statement, computed once per statement.
pub(crate) fn describe(stmt: &turso::Statement) -> Described {
    let cols = stmt.columns();
    Described::new(cols.iter().map(|c| (c.name(), c.decl_type())))
}

/// Converts one Turso row into owned values (Turso hands out owned values anyway).
pub(crate) fn row_values(row: &turso::Row, desc: &Described) -> Result<Vec<RowValues>> {
    let mut values = Vec::with_capacity(desc.len().min(row.column_count()));
    fill_row_values(row, desc, &mut values)?;
    Ok(values)
}

/// [`row_values`] into a reused buffer (cleared first): typed decoding needs the values only
/// until the row is decoded, so it borrows them from a buffer of the connection's.
pub(crate) fn fill_row_values(
    row: &turso::Row,
    desc: &Described,
    values: &mut Vec<RowValues>,
) -> Result<()> {
    values.clear();
    let n = desc.len().min(row.column_count());
    for idx in 0..n {
        let v = row.get_value(idx).map_err(super::error::map_err)?;
        let hint = desc.hint(idx);
        values.push(match v {
            turso::Value::Null => RowValues::Null,
            turso::Value::Integer(i) => hint.widen_int(i).to_owned_value(),
            turso::Value::Real(f) => hint.widen_real(f).to_owned_value(),
            turso::Value::Text(s) => match hint.widen_text(&s) {
                ValueRef::Text(_) => RowValues::Text(s),
                ValueRef::JSON(std::borrow::Cow::Owned(j)) => RowValues::JSON(j),
                other => other.to_owned_value(),
            },
            turso::Value::Blob(b) => RowValues::Blob(b),
        });
    }
    Ok(())
}

/// A decoded Turso row seen through [`SqlRow`](crate::decode::SqlRow).
pub(crate) use crate::results::ValuesRow as TursoRow;
