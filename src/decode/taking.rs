//! The row the crate hands to [`FromRow::from_row_taking`]: it remembers which columns were
//! taken, so that reading one again is the same typed error on every backend, whether or not
//! the backend's row moved the value out (only MySQL's does).

use super::{ColumnRef, FromRow, FromValue, SqlRow};
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::value::ValueRef;

/// Decodes `row`, a backend's view of a row it gives up, with [`FromRow::from_row_taking`].
/// The view (a few references) is moved into the wrapper, so reading it costs no extra load.
#[inline]
pub(crate) fn decode_taking<T: FromRow, R: SqlRow>(row: R) -> Result<T> {
    T::from_row_taking(&mut Taking::new(row))
}

/// The error of a column read after [`SqlRow::take`] took it.
pub(crate) fn column_taken(name: Option<&str>) -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        ErrorKind::ColumnNotFound,
        format!(
            "column `{}` was already taken out of this row; a `from_row_taking` reads each column once",
            name.unwrap_or("?")
        ),
    )
}

/// A backend's row and the columns taken from it: columns 0 to 62 as bits 0 to 62, later ones
/// listed in `more`, with bit 63 set once the list has one. So `taken == 0` says, in one
/// compare, that nothing was taken, and a `from_row` (which never takes) pays only that.
struct Taking<R> {
    row: R,
    taken: u64,
    more: Vec<usize>,
}

/// The bit that says `Taking::more` lists a column.
const MORE: u64 = 1 << 63;

impl<R: SqlRow> Taking<R> {
    #[inline]
    fn new(row: R) -> Self {
        Taking {
            row,
            taken: 0,
            more: Vec::new(),
        }
    }

    #[inline]
    fn was_taken(&self, idx: usize) -> bool {
        if idx < 63 {
            self.taken & (1 << idx) != 0
        } else {
            self.taken & MORE != 0 && self.more.contains(&idx)
        }
    }

    /// Marks column `idx` taken, or says it already was.
    #[inline]
    fn mark(&mut self, idx: usize) -> Result<()> {
        self.check(idx)?;
        if idx < 63 {
            self.taken |= 1 << idx;
        } else {
            self.taken |= MORE;
            self.more.push(idx);
        }
        Ok(())
    }

    #[inline]
    fn check(&self, idx: usize) -> Result<()> {
        if self.was_taken(idx) {
            return Err(column_taken(self.row.column_name(idx)));
        }
        Ok(())
    }
}

impl<R: SqlRow> SqlRow for Taking<R> {
    #[inline]
    fn column_count(&self) -> usize {
        self.row.column_count()
    }

    #[inline]
    fn column_name(&self, idx: usize) -> Option<&str> {
        self.row.column_name(idx)
    }

    #[inline]
    fn column_index(&self, name: &str) -> Option<usize> {
        self.row.column_index(name)
    }

    #[inline]
    fn value_ref(&self, idx: usize) -> Result<ValueRef<'_>> {
        if self.taken != 0 {
            self.check(idx)?;
        }
        self.row.value_ref(idx)
    }

    // The backend's own `get` and `take`, which may be faster than the defaults. The backend's
    // `get` is called once, with the column as given: it is inlined, and a second copy of it
    // (or a second bounds check) in every `from_row` costs more than the check. The column is
    // resolved here only when something was taken.
    #[inline]
    fn get<T: FromValue>(&self, column: impl ColumnRef) -> Result<T> {
        if self.taken != 0 {
            self.check(column.index_in(self)?)?;
        }
        self.row.get(column)
    }

    #[inline]
    fn take<T: FromValue>(&mut self, column: impl ColumnRef) -> Result<T> {
        let idx = column.index_in(self)?;
        self.mark(idx)?;
        self.row.take(idx)
    }

    /// A `from_row` reads the backend's row itself while nothing was taken: it can take
    /// nothing, so no read of it needs the check.
    #[inline]
    fn decode_in_place<T: FromRow>(&self) -> Result<T> {
        if self.taken == 0 {
            T::from_row(&self.row)
        } else {
            T::from_row(self)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::results::{Columns, CustomDbRow};
    use crate::value::RowValues;

    fn row(n: usize) -> CustomDbRow {
        let names = (0..n).map(|i| format!("c{i}")).collect();
        let values = (0..n).map(|i| RowValues::Text(format!("v{i}"))).collect();
        CustomDbRow::new(Arc::new(Columns::new(names)), values)
    }

    /// Takes column `twice` a second time, after taking every column once.
    #[derive(Debug)]
    struct Twice<const N: usize, const TWICE: usize>(Vec<String>);

    impl<const N: usize, const TWICE: usize> FromRow for Twice<N, TWICE> {
        fn from_row<R: SqlRow>(row: &R) -> Result<Self> {
            let mut v: Vec<String> = (0..N).map(|i| row.get(i)).collect::<Result<_>>()?;
            v.push(row.get(TWICE)?);
            Ok(Twice(v))
        }

        fn from_row_taking<R: SqlRow>(row: &mut R) -> Result<Self> {
            let mut v: Vec<String> = (0..N).map(|i| row.take(i)).collect::<Result<_>>()?;
            v.push(row.take(TWICE)?);
            Ok(Twice(v))
        }
    }

    /// A second read of any column, in either list of taken columns, is the typed error, by
    /// `take`, `get` or `value_ref`; a `from_row` reads a column twice as before.
    #[test]
    fn a_column_taken_twice_is_a_typed_error_wherever_it_is() {
        let r = row(70);
        let e = decode_taking::<Twice<70, 3>, _>(r.clone()).expect_err("taken twice");
        assert_eq!(e.kind(), ErrorKind::ColumnNotFound);
        assert!(e.to_string().contains("`c3` was already taken"), "{e}");
        let e = decode_taking::<Twice<70, 66>, _>(r.clone()).expect_err("taken twice");
        assert!(e.to_string().contains("`c66` was already taken"), "{e}");
        let e = decode_taking::<Twice<70, 63>, _>(r.clone()).expect_err("taken twice");
        assert!(e.to_string().contains("`c63` was already taken"), "{e}");
        let e = decode_taking::<Twice<70, 62>, _>(r.clone()).expect_err("taken twice");
        assert!(e.to_string().contains("`c62` was already taken"), "{e}");
        let e = decode_taking::<Twice<70, 64>, _>(r.clone()).expect_err("taken twice");
        assert!(e.to_string().contains("`c64` was already taken"), "{e}");
        assert_eq!(
            Twice::<70, 64>::from_row(&r).expect("read twice").0[70],
            "v64"
        );
        // Only a column past the bits taken: the others still read, that one does not.
        let mut t = Taking::new(r.clone());
        assert_eq!(t.take::<String>(65).unwrap(), "v65");
        assert_eq!(t.get::<String>(66).unwrap(), "v66");
        assert_eq!(t.get::<String>(1).unwrap(), "v1");
        assert_eq!(t.take::<String>(63).unwrap(), "v63");
        assert!(t.get::<String>(65).is_err());
        assert!(t.value_ref(63).is_err());
        // Reads after a take, by `get` and `value_ref`.
        let mut t = Taking::new(r.clone());
        assert_eq!(t.take::<String>(1).unwrap(), "v1");
        assert_eq!(t.take::<String>(65).unwrap(), "v65");
        for idx in [1, 65] {
            assert!(t.get::<String>(idx).is_err());
            assert!(t.value_ref(idx).is_err());
            assert!(t.take::<String>(idx).is_err());
        }
        assert_eq!(t.get::<String>("c2").unwrap(), "v2");
        assert_eq!(t.get::<String>("c2").unwrap(), "v2");
        assert_eq!(t.take::<String>("c2").unwrap(), "v2");
        assert!(t.get::<String>("c2").is_err());
    }

    #[test]
    fn tuples_take_each_column_once() {
        let r = row(3);
        let (a, b, c): (String, String, String) = decode_taking(r.clone()).unwrap();
        assert_eq!((a.as_str(), b.as_str(), c.as_str()), ("v0", "v1", "v2"));
        // Out of range is still the range error, not a taken one.
        let e = decode_taking::<(String, String, String, String), _>(r.clone())
            .expect_err("4 columns of 3");
        assert!(e.to_string().contains("out of range"), "{e}");
    }
}
