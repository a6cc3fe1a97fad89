//! Query results: [`ResultSet`], [`CustomDbRow`] and the per-statement column index.

use std::sync::Arc;

use crate::decode::{ColumnRef, FromValue, SqlRow};
use crate::error::Result;
use crate::value::{RowValues, ValueRef};

/// How SQLite and Turso results of a column are widened, derived once from its declared type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ColumnHint {
    Plain,
    Bool,
    Timestamp,
    TimestampTz,
    Date,
    Uuid,
    Numeric,
    Json,
}

impl ColumnHint {
    /// Maps a declared column type (`decltype`) to a hint. Unknown types stay plain.
    #[cfg_attr(not(any(feature = "sqlite", feature = "turso")), allow(dead_code))]
    pub(crate) fn from_decltype(decl: Option<&str>) -> Self {
        let Some(decl) = decl else {
            return ColumnHint::Plain;
        };
        let d = decl.trim().to_ascii_uppercase();
        match d.as_str() {
            "BOOL" | "BOOLEAN" => ColumnHint::Bool,
            "TIMESTAMP" | "DATETIME" => ColumnHint::Timestamp,
            "TIMESTAMPTZ" | "TIMESTAMP WITH TIME ZONE" => ColumnHint::TimestampTz,
            "DATE" => ColumnHint::Date,
            "UUID" => ColumnHint::Uuid,
            "JSON" | "JSONB" => ColumnHint::Json,
            _ if d.starts_with("NUMERIC") || d.starts_with("DECIMAL") => ColumnHint::Numeric,
            _ => ColumnHint::Plain,
        }
    }

    /// SQLite stores dates, UUIDs, decimals and JSON as text; the declared type says how to read them back.
    /// SQLite gives `NUMERIC` and `JSON` columns numeric affinity, so number-like text comes back
    /// as an integer or a real: read it back as the declared kind.
    #[cfg_attr(not(any(feature = "sqlite", feature = "turso")), allow(dead_code))]
    pub(crate) fn widen_int(self, i: i64) -> ValueRef<'static> {
        match (self, i) {
            (ColumnHint::Bool, 0) => ValueRef::Bool(false),
            (ColumnHint::Bool, 1) => ValueRef::Bool(true),
            (ColumnHint::Numeric, _) => ValueRef::Numeric(rust_decimal::Decimal::from(i)),
            (ColumnHint::Json, _) => {
                ValueRef::JSON(std::borrow::Cow::Owned(serde_json::Value::from(i)))
            }
            _ => ValueRef::Int(i),
        }
    }

    /// See [`ColumnHint::widen_int`].
    #[cfg_attr(not(any(feature = "sqlite", feature = "turso")), allow(dead_code))]
    pub(crate) fn widen_real(self, f: f64) -> ValueRef<'static> {
        use rust_decimal::prelude::FromPrimitive;
        let widened = match self {
            ColumnHint::Numeric => rust_decimal::Decimal::from_f64(f).map(ValueRef::Numeric),
            ColumnHint::Json => serde_json::Number::from_f64(f)
                .map(|n| ValueRef::JSON(std::borrow::Cow::Owned(serde_json::Value::Number(n)))),
            _ => None,
        };
        widened.unwrap_or(ValueRef::Float(f))
    }

    #[cfg(any(feature = "sqlite", feature = "turso"))]
    pub(crate) fn widen_text(self, s: &str) -> ValueRef<'_> {
        let widened = match self {
            ColumnHint::Plain | ColumnHint::Bool => None,
            ColumnHint::Timestamp => crate::value::parse_timestamp(s).map(ValueRef::Timestamp),
            ColumnHint::TimestampTz => {
                crate::value::parse_timestamptz(s).map(ValueRef::TimestampTz)
            }
            ColumnHint::Date => chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
                .ok()
                .map(ValueRef::Date),
            ColumnHint::Uuid => uuid::Uuid::parse_str(s).ok().map(ValueRef::Uuid),
            ColumnHint::Numeric => s.parse().ok().map(ValueRef::Numeric),
            ColumnHint::Json => serde_json::from_str(s)
                .ok()
                .map(|j| ValueRef::JSON(std::borrow::Cow::Owned(j))),
        };
        widened.unwrap_or(ValueRef::Text(s))
    }
}

/// The columns of one statement's result: names (in order) and decoding hints.
///
/// Built once per prepared statement and shared by every row through an `Arc`, so a row never
/// copies column names and a name lookup always answers for *this* result's columns.
#[derive(Debug, PartialEq)]
pub struct Columns {
    names: Box<[Box<str>]>,
    hints: Box<[ColumnHint]>,
}

impl Columns {
    pub(crate) fn new(names: Vec<String>, hints: Vec<ColumnHint>) -> Self {
        debug_assert_eq!(names.len(), hints.len());
        Self {
            names: names.into_iter().map(String::into_boxed_str).collect(),
            hints: hints.into_boxed_slice(),
        }
    }

    pub(crate) fn plain(names: Vec<String>) -> Self {
        let hints = vec![ColumnHint::Plain; names.len()];
        Self::new(names, hints)
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

    #[cfg_attr(not(any(feature = "sqlite", feature = "turso")), allow(dead_code))]
    pub(crate) fn hint(&self, idx: usize) -> ColumnHint {
        self.hints.get(idx).copied().unwrap_or(ColumnHint::Plain)
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
    pub rows_affected: usize,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_prefers_exact_then_case_insensitive() {
        let cols = Columns::plain(vec!["Id".into(), "id".into(), "NAME".into()]);
        assert_eq!(cols.index_of("id"), Some(1));
        assert_eq!(cols.index_of("Id"), Some(0));
        assert_eq!(cols.index_of("name"), Some(2));
        assert_eq!(cols.index_of("missing"), None);
    }

    #[test]
    fn hints_from_decltype() {
        assert_eq!(ColumnHint::from_decltype(Some("boolean")), ColumnHint::Bool);
        assert_eq!(
            ColumnHint::from_decltype(Some("NUMERIC(10,2)")),
            ColumnHint::Numeric
        );
        assert_eq!(ColumnHint::from_decltype(Some("TEXT")), ColumnHint::Plain);
        assert_eq!(ColumnHint::from_decltype(None), ColumnHint::Plain);
    }
}
