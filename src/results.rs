//! Query results: [`ResultSet`], [`CustomDbRow`] and the per-statement column index.

use std::sync::Arc;

use crate::decode::{ColumnRef, FromRow, FromValue, SqlRow};
use crate::error::Result;
use crate::value::{RowValues, ValueRef};

/// The columns of one statement's result: their names, in order.
///
/// Built once per prepared statement and shared by every row through an `Arc`, so a row never
/// copies column names and a name lookup always answers for *this* result's columns.
#[derive(Debug, PartialEq)]
pub struct Columns {
    names: Box<[Box<str>]>,
}

impl Columns {
    pub(crate) fn new(names: Vec<String>) -> Self {
        Self {
            names: names.into_iter().map(String::into_boxed_str).collect(),
        }
    }

    /// Number of columns.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// True when the statement returns no columns (DML without `RETURNING`).
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The name of column `idx`.
    pub fn name(&self, idx: usize) -> Option<&str> {
        self.names.get(idx).map(|n| &**n)
    }

    /// Column names in order.
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> {
        self.names.iter().map(|n| &**n)
    }

    /// The index of the column called `name`: an exact match first, then an ASCII
    /// case-insensitive one (SQL folds unquoted identifiers).
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.names
            .iter()
            .position(|n| &**n == name)
            .or_else(|| self.names.iter().position(|n| n.eq_ignore_ascii_case(name)))
    }
}

/// One row of a [`ResultSet`]: values in column order plus the shared column index.
#[derive(Debug, Clone, PartialEq)]
pub struct CustomDbRow {
    columns: Arc<Columns>,
    values: Vec<RowValues>,
}

impl CustomDbRow {
    /// Builds a row. `values` must have one entry per column.
    pub fn new(columns: Arc<Columns>, values: Vec<RowValues>) -> Self {
        debug_assert_eq!(columns.len(), values.len());
        Self { columns, values }
    }

    /// The value of the column called `name`, or `None` when this result has no such column.
    pub fn get(&self, name: &str) -> Option<&RowValues> {
        self.columns.index_of(name).map(|i| &self.values[i])
    }

    /// The value at `idx`, or `None` when out of range.
    pub fn get_by_index(&self, idx: usize) -> Option<&RowValues> {
        self.values.get(idx)
    }

    /// Decodes one column (by name or index) into `T`, with a typed error naming the column.
    pub fn try_get<T: FromValue>(&self, column: impl ColumnRef) -> Result<T> {
        SqlRow::get(self, column)
    }

    /// The column index shared by every row of the result.
    pub fn columns(&self) -> &Arc<Columns> {
        &self.columns
    }

    /// Column names in order.
    pub fn column_names(&self) -> impl ExactSizeIterator<Item = &str> {
        self.columns.names()
    }

    /// All values in column order.
    pub fn values(&self) -> &[RowValues] {
        &self.values
    }

    /// Takes the values out of the row.
    pub fn into_values(self) -> Vec<RowValues> {
        self.values
    }
}

/// Decoded values and their columns, borrowed: the [`SqlRow`] view of a [`CustomDbRow`] and of
/// a backend row already decoded into a buffer (Turso's).
pub(crate) struct ValuesRow<'a> {
    pub(crate) values: &'a [RowValues],
    pub(crate) columns: &'a Columns,
}

impl<'a> ValuesRow<'a> {
    fn view(&self) -> ValuesRow<'a> {
        ValuesRow {
            values: self.values,
            columns: self.columns,
        }
    }

    fn value_at(&self, idx: usize) -> Result<ValueRef<'a>> {
        self.values
            .get(idx)
            .map(RowValues::as_value_ref)
            .ok_or_else(|| crate::decode::column_out_of_range(idx, self.values.len()))
    }
}

impl CustomDbRow {
    fn view(&self) -> ValuesRow<'_> {
        ValuesRow {
            values: &self.values,
            columns: &self.columns,
        }
    }
}

/// [`SqlRow`] for types whose `view()` gives their [`ValuesRow`].
macro_rules! sql_row_by_view {
    ($($t:ty),*) => {$(
        impl SqlRow for $t {
            fn column_count(&self) -> usize {
                self.view().values.len()
            }

            fn column_name(&self, idx: usize) -> Option<&str> {
                self.view().columns.name(idx)
            }

            fn column_index(&self, name: &str) -> Option<usize> {
                self.view().columns.index_of(name)
            }

            fn value_ref(&self, idx: usize) -> Result<ValueRef<'_>> {
                self.view().value_at(idx)
            }
        }
    )*};
}

sql_row_by_view!(ValuesRow<'_>, CustomDbRow);

/// The materialised result of a statement.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultSet {
    /// The rows, in the order the engine returned them.
    pub results: Vec<CustomDbRow>,
    /// Rows changed by DML (`INSERT`/`UPDATE`/`DELETE`, also with `RETURNING`). Zero for a plain `SELECT`.
    pub rows_affected: u64,
    columns: Arc<Columns>,
}

impl ResultSet {
    pub(crate) fn with_capacity(columns: Arc<Columns>, rows: usize) -> Self {
        Self {
            results: Vec::with_capacity(rows),
            rows_affected: 0,
            columns,
        }
    }

    pub(crate) fn push_values(&mut self, values: Vec<RowValues>) {
        self.results
            .push(CustomDbRow::new(Arc::clone(&self.columns), values));
    }

    /// The column index of this result.
    pub fn columns(&self) -> &Arc<Columns> {
        &self.columns
    }

    /// Column names in order.
    pub fn column_names(&self) -> impl ExactSizeIterator<Item = &str> {
        self.columns.names()
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.results.len()
    }

    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.results.is_empty()
    }

    /// Iterates over the rows.
    pub fn iter(&self) -> std::slice::Iter<'_, CustomDbRow> {
        self.results.iter()
    }

    /// Decodes every row into `T`.
    pub fn decode<T: crate::FromRow>(&self) -> Result<Vec<T>> {
        self.results.iter().map(T::from_row).collect()
    }
}

impl<'a> IntoIterator for &'a ResultSet {
    type Item = &'a CustomDbRow;
    type IntoIter = std::slice::Iter<'a, CustomDbRow>;

    fn into_iter(self) -> Self::IntoIter {
        self.results.iter()
    }
}

impl IntoIterator for ResultSet {
    type Item = CustomDbRow;
    type IntoIter = std::vec::IntoIter<CustomDbRow>;

    fn into_iter(self) -> Self::IntoIter {
        self.results.into_iter()
    }
}

/// A row of any backend, copied into an owned [`CustomDbRow`] with its own column list.
impl FromRow for CustomDbRow {
    fn from_row<R: SqlRow>(row: &R) -> Result<Self> {
        let n = row.column_count();
        let names = (0..n)
            .map(|i| row.column_name(i).unwrap_or_default().to_owned())
            .collect();
        let values = (0..n)
            .map(|i| row.value_ref(i).map(|v| v.to_owned_value()))
            .collect::<Result<Vec<_>>>()?;
        Ok(CustomDbRow::new(Arc::new(Columns::new(names)), values))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_prefers_exact_then_case_insensitive() {
        let cols = Columns::new(vec!["Id".into(), "id".into(), "NAME".into()]);
        assert_eq!(cols.index_of("id"), Some(1));
        assert_eq!(cols.index_of("Id"), Some(0));
        assert_eq!(cols.index_of("name"), Some(2));
        assert_eq!(cols.index_of("missing"), None);
    }
}
